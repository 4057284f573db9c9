// What a click in the transcript does: stop a running command, copy a code block, fork from a message, open the
// fork's original, show a compaction's recap, retry a failed prompt, open a file or a
// link. Everything it asks for goes to the extension, except where the view scrolls.

import type { FromWebview } from '../chat/webviewProtocol';

export interface TranscriptActions {
  post(message: FromWebview): void;
  /** Bring recap `recapId` (0: any recap) into view, reading earlier pages as needed. */
  showRecap(recapId: number): void;
  /** Follow the newest output again. */
  toBottom(): void;
}

/** Handle the clicks in `box` (the transcript) with `actions`. */
export function handleTranscriptClicks(box: HTMLElement, actions: TranscriptActions): void {
  box.addEventListener('click', (event) => {
    const target = event.target as HTMLElement;
    const stopTool = target.closest<HTMLButtonElement>('.tool-stop');
    if (stopTool) {
      // In the row's summary: stop the command without folding the row.
      event.preventDefault();
      const callId = stopTool.closest<HTMLElement>('.tool')?.dataset.callId;
      if (callId && !stopTool.disabled) {
        stopTool.disabled = true;
        stopTool.textContent = 'Stopping…';
        actions.post({ type: 'stopTool', callId });
      }
      return;
    }
    const copy = target.closest('.code-copy');
    if (copy) {
      const code = copy.closest('.code-block')?.querySelector('code');
      actions.post({ type: 'copy', text: code?.textContent ?? '' });
      copy.textContent = 'Copied';
      setTimeout(() => (copy.textContent = 'Copy'), 1200);
      return;
    }
    const insert = target.closest('.code-insert');
    if (insert) {
      const code = insert.closest('.code-block')?.querySelector('code');
      actions.post({ type: 'insertCode', text: code?.textContent ?? '' });
      return;
    }
    const apply = target.closest('.code-apply');
    if (apply) {
      const block = apply.closest<HTMLElement>('.code-block');
      const code = block?.querySelector('code');
      actions.post({ type: 'applyCode', text: code?.textContent ?? '', path: block?.dataset.file });
      return;
    }
    const rewind = target.closest<HTMLButtonElement>('.rewind-here');
    if (rewind?.dataset.messageId) {
      actions.post({ type: 'rewindTo', id: Number(rewind.dataset.messageId) });
      return;
    }
    const fork = target.closest<HTMLButtonElement>('.fork-here');
    if (fork?.dataset.messageId) {
      actions.post({ type: 'fork', id: Number(fork.dataset.messageId) });
      return;
    }
    const original = target.closest<HTMLButtonElement>('.fork-original');
    if (original?.dataset.sessionId) {
      actions.post({ type: 'resume', sessionId: original.dataset.sessionId });
      return;
    }
    const showRecap = target.closest<HTMLButtonElement>('.notice-show-recap');
    if (showRecap) {
      actions.showRecap(Number(showRecap.dataset.recapId) || 0);
      return;
    }
    if (target.closest('.open-compacted')) {
      actions.post({ type: 'openCompacted' });
      return;
    }
    const retry = target.closest<HTMLButtonElement>('.notice-retry');
    if (retry?.dataset.noticeId) {
      retry.disabled = true;
      actions.post({ type: 'retry', id: Number(retry.dataset.noticeId) });
      actions.toBottom();
      return;
    }
    const file = target.closest<HTMLElement>('.file-link');
    if (file && (file.dataset.file ?? file.dataset.path)) {
      event.preventDefault();
      const line = file.dataset.line ? Number(file.dataset.line) : undefined;
      actions.post({ type: 'openFile', path: (file.dataset.file ?? file.dataset.path)!, line });
      return;
    }
    const link = target.closest('a');
    if (link) {
      event.preventDefault();
      const href = link.getAttribute('href');
      if (href && /^[a-z][\w+.-]*:/i.test(href)) {
        actions.post({ type: 'openLink', href });
      } else if (href && !href.startsWith('#')) {
        // A link written to a relative path (`[the app](src/app.py#L3)`) is a file.
        const [path, fragment] = href.split('#');
        const line = /^L?(\d+)/.exec(fragment ?? '')?.[1];
        actions.post({ type: 'openFile', path: decodeURIComponent(path), line: line ? Number(line) : undefined });
      }
    }
  });
}
