// The chat view's page: header (title, the session's spend, the context bar with what
// fills the context and where compaction starts, session menu), transcript (following
// new output), the questions the task waits on, the queue, and the input. It holds no
// state the extension does not also hold, except the unsent draft and its attachments
// (kept with setState, so they survive the view being hidden and the window being
// reloaded).

import './style.css';

import { lastCopied } from '../chat/fork';
import { sessionTitle } from '../chat/promptText';
import type { FromWebview, HeaderState, MenuAction, ToWebview } from '../chat/webviewProtocol';
import { contextPercent, describeActivity, formatTokens, shortTokens, spendSentence, spendWords } from '../format';
import { Composer, Draft } from './composer';
import { ContextBar } from './contextBar';
import { Icons, h, icon } from './dom';
import { Follower } from './follow';
import { renderMarkdown } from './markdown';
import { PathLinks } from './paths';
import { Transcript } from './transcript';
import { renderQuestions, renderQueue } from './waiting';

interface VsCodeApi {
  postMessage(message: FromWebview): void;
  getState(): PersistedState | undefined;
  setState(state: PersistedState): void;
}

interface PersistedState {
  draft: string;
  chips?: Draft['chips'];
}

declare function acquireVsCodeApi(): VsCodeApi;

const vscode = acquireVsCodeApi();
const post = (message: FromWebview): void => vscode.postMessage(message);

const MENU: { action: MenuAction; label: string }[] = [
  { action: 'new', label: 'New session' },
  { action: 'resume', label: 'Resume session…' },
  { action: 'search', label: 'Search sessions…' },
  { action: 'continue', label: 'Continue last session' },
  { action: 'rename', label: 'Rename session…' },
  { action: 'compact', label: 'Compact context…' },
  { action: 'clear', label: 'Clear conversation' },
  { action: 'maxTurns', label: 'Set max turns…' },
  { action: 'rewind', label: 'Rewind…' },
  { action: 'fork', label: 'Fork session' },
  { action: 'export', label: 'Export session…' },
  { action: 'import', label: 'Import session…' },
];

// --- layout -------------------------------------------------------------------------

const title = h('div', { class: 'title', id: 'session-title' }, 'Seri');
const subtitle = h('span', { class: 'subtitle-text', id: 'context-use' });
const spend = h('span', { class: 'spend', id: 'session-spend', hidden: true });
const contextBar = new ContextBar(() => post({ type: 'menu', action: 'compact' }));
const menuButton = h(
  'button',
  { class: 'icon-button', id: 'session-menu-button', type: 'button', title: 'Session menu', 'aria-label': 'Session menu', 'aria-haspopup': 'menu', 'aria-expanded': 'false' },
  icon(Icons.menu),
);
const menu = h(
  'div',
  { class: 'menu', id: 'session-menu', role: 'menu', hidden: true },
  ...MENU.map((item) => h('button', { class: 'menu-item', type: 'button', role: 'menuitem', 'data-action': item.action }, item.label)),
);
const header = h(
  'header',
  { class: 'header' },
  h('div', { class: 'title-block' }, title, h('div', { class: 'subtitle' }, subtitle, spend), contextBar.meter),
  menuButton,
  menu,
  contextBar.details,
);

const older = h('button', { class: 'older', type: 'button', hidden: true }, 'Load earlier messages');
const rows = h('div', { class: 'rows', id: 'messages' });
const streamingRow = h('div', { class: 'row assistant streaming', id: 'streaming', hidden: true });
const questions = h('div', { class: 'questions', id: 'questions', hidden: true });
const workingText = h('span', { class: 'working-text' }, 'Working…');
const working = h('div', { class: 'row working', id: 'working', hidden: true, role: 'status' }, h('span', { class: 'spinner' }), workingText);
const queue = h('div', { class: 'queue', id: 'queue', hidden: true });
const empty = h('div', { class: 'empty', id: 'empty', hidden: true });
const content = h('div', { class: 'transcript-content' }, older, empty, rows, streamingRow, questions, working, queue);
const transcriptBox = h('main', { class: 'transcript', id: 'transcript', role: 'log', 'aria-live': 'polite' }, content);
const newMessages = h(
  'button',
  { class: 'new-messages', id: 'new-messages', type: 'button', hidden: true, title: 'Scroll to the newest messages' },
  icon(Icons.down),
  'New messages',
);

const follower = new Follower(transcriptBox, content, newMessages);
const paths = new PathLinks(transcriptBox, post);
const composer = new Composer(
  post,
  (draft) => vscode.setState({ draft: draft.text, chips: draft.chips }),
  () => follower.toBottom(),
);

document.getElementById('app')!.append(header, h('div', { class: 'transcript-frame' }, transcriptBox, newMessages), composer.element);
const transcript = new Transcript(rows);

// --- state --------------------------------------------------------------------------

let state: HeaderState | undefined;
let messageCount = 0;
let olderRequested = false;
let streamingText = '';
let streamingFrame = 0;
// A retry's delay: once it is over, its call is in flight.
let retryTimer: ReturnType<typeof setTimeout> | undefined;
let retrySent = false;

function applyHeader(next: HeaderState): void {
  const before = state;
  state = next;
  const session = next.session;
  title.textContent = session ? sessionTitle(session.title) : 'Seri';
  const forkedFrom = next.forkOrigin ? `\nForked from ${originName(next)}` : '';
  title.title = session ? `${sessionTitle(session.title)} (${session.id})${forkedFrom}` : '';
  applyUsage(next);
  spend.textContent = spendWords(session?.spend);
  spend.title = spendSentence(session?.spend);
  spend.hidden = spend.textContent === '';
  const usable = next.serverState === 'running';
  composer.setState(usable, next.running);
  composer.setSlashCommands(next.slashCommands);
  // No forking while a task runs (the server refuses it).
  document.body.classList.toggle('task-running', next.running);
  const origin = (header?: HeaderState): string => JSON.stringify([header?.forkOrigin, header?.session?.createdAt]);
  if (origin(next) !== origin(before)) {
    placeForkMark();
  }
  menuButton.disabled = !usable;
  older.hidden = !next.hasMore;
  renderQuestions(questions, next.questions, session?.project ?? '', post);
  renderQueue(queue, next.queued, post);
  if (next.activity !== before?.activity) {
    clearTimeout(retryTimer);
    retrySent = false;
    if (next.activity?.state === 'retrying' && next.activity.delay !== undefined) {
      retryTimer = setTimeout(() => {
        retrySent = true;
        updateWorking();
      }, next.activity.delay * 1000);
    }
  }
  updateWorking();
  updateEmpty();
  if (next.questions.length > (before?.questions.length ?? 0) || next.queued.length > (before?.queued.length ?? 0)) {
    follower.arrived();
  }
}

/** "12% · 15k / 128k tokens", then the context bar (its parts, the compaction mark). */
function applyUsage(next: HeaderState): void {
  if (!next.usage || !next.session) {
    subtitle.textContent = '';
    contextBar.update(null, null, '');
    return;
  }
  const { estimateTokens, contextWindow } = next.usage;
  const percent = contextPercent(estimateTokens, contextWindow);
  subtitle.textContent = `${percent}% · ${shortTokens(estimateTokens)} / ${shortTokens(contextWindow)} tokens`;
  subtitle.title = `${formatTokens(estimateTokens)} of ${formatTokens(contextWindow)} tokens`;
  contextBar.update(next.usage, next.context, next.session.project);
}

/** “The parent’s title”, or its id when its title could not be read. */
function originName(next: HeaderState): string {
  const origin = next.forkOrigin!;
  return origin.title ? `“${sessionTitle(origin.title)}”` : `session ${origin.id}`;
}

/** After a fork's copied messages: a line saying where they come from. */
function placeForkMark(): void {
  const next = state;
  const after = next?.forkOrigin ? lastCopied(next.session, transcript.shown) : null;
  transcript.markFork(after, after !== null && next ? originName(next) : '', next?.forkOrigin?.id ?? '');
}

function updateWorking(): void {
  const running = state?.running ?? false;
  const asking = (state?.questions.length ?? 0) > 0;
  // While the reply streams, the reply itself shows that work goes on.
  working.hidden = !running || (streamingText !== '' && !asking);
  workingText.textContent = describeActivity(state?.activity ?? null, asking, retrySent);
  workingText.title = workingText.textContent;
  working.classList.toggle('asking', asking);
}

function updateEmpty(): void {
  const serverState = state?.serverState ?? 'starting';
  const messages: Record<string, string> = {
    starting: 'Starting seri-lsp…',
    missing:
      'The seri-lsp server was not found. Install it from a seri-lsp checkout (pipx install .) so that seri-lsp is on PATH, or set seri.server.command; then run “Seri: Restart Server”.',
    failed: 'The seri server did not start. “Seri: Show Server Log” says why; “Seri: Restart Server” tries again.',
    stopped: 'The seri server is stopped. Run “Seri: Restart Server” to start it.',
    noFolder: 'Open a folder to chat with seri about it: sessions belong to a project.',
  };
  let text = messages[serverState];
  if (serverState === 'running') {
    text = messageCount === 0 && !state?.running ? 'No messages yet. Ask seri to do something in this workspace.' : '';
  }
  empty.textContent = text ?? '';
  empty.hidden = !text;
}

function setStreaming(text: string): void {
  const grew = text !== '' && text !== streamingText;
  streamingText = text;
  if (grew) {
    follower.arrived();
  }
  if (streamingFrame) {
    return;
  }
  // Render at most once a frame: deltas arrive faster than markdown needs redrawing.
  streamingFrame = requestAnimationFrame(() => {
    streamingFrame = 0;
    streamingRow.hidden = streamingText === '';
    streamingRow.innerHTML = streamingText ? renderMarkdown(streamingText) : '';
    updateWorking();
    paths.link();
  });
}

window.addEventListener('message', (event: MessageEvent<ToWebview>) => {
  const message = event.data;
  switch (message.type) {
    case 'reset': {
      const { messages, notices, streaming, ...header } = message.snapshot;
      // The same session drawn again keeps the user where they read (the recap, say).
      const keep = state !== undefined && state.session?.id === header.session?.id && !follower.isFollowing;
      const top = transcriptBox.scrollTop;
      messageCount = messages.length;
      olderRequested = false;
      transcript.reset(messages, notices);
      applyHeader(header);
      placeForkMark();
      setStreaming(streaming);
      paths.link();
      const recap = message.reveal === 'recap' ? rows.querySelector<HTMLElement>('.recap') : null;
      if (recap) {
        follower.reveal(recap);
      } else if (keep) {
        follower.restore(top);
      } else {
        follower.toBottom();
      }
      // A message asked for before this session's page was drawn again.
      revealWanted();
      break;
    }
    case 'append':
      messageCount++;
      transcript.append(message.message);
      if (message.message.role === 'tool') {
        paths.forgetMisses();
      }
      paths.link();
      updateEmpty();
      follower.arrived();
      break;
    case 'prepend': {
      const before = transcriptBox.scrollHeight;
      messageCount += message.messages.length;
      transcript.prepend(message.messages);
      placeForkMark();
      transcriptBox.scrollTop += transcriptBox.scrollHeight - before;
      revealWanted();
      paths.link();
      olderRequested = false;
      older.hidden = !message.hasMore;
      if (state) {
        state = { ...state, hasMore: message.hasMore };
      }
      break;
    }
    case 'streaming':
      setStreaming(message.text);
      break;
    case 'notice':
      transcript.addNotice(message.notice);
      follower.arrived();
      break;
    case 'state':
      applyHeader(message.snapshot);
      break;
    case 'focusInput':
      composer.focus();
      break;
    case 'reveal':
      wanted = { id: message.messageId, recap: false };
      revealWanted();
      break;
    case 'setInput':
      composer.setInput(message.text, message.context);
      break;
    case 'attach':
      composer.attach(message.context);
      break;
    case 'files':
      composer.showFiles(message.seq, message.paths);
      break;
    case 'resolvedPaths':
      paths.resolved(message.resolved);
      break;
  }
});

// --- history paging -----------------------------------------------------------------

/**
 * What to bring into view once it is loaded: a recap ("Show recap"; id 0: any recap) or
 * a message (a search hit). Earlier pages are read until it is there.
 */
let wanted: { id: number; recap: boolean } | undefined;

/** Scroll to what is wanted and highlight it briefly, or read the page before first. */
function revealWanted(): void {
  if (wanted === undefined) {
    return;
  }
  const target = wanted.recap
    ? (rows.querySelector<HTMLElement>(`.recap[data-id="${wanted.id}"]`) ?? rows.querySelector<HTMLElement>('.recap'))
    : transcript.rowFor(wanted.id);
  if (target) {
    const block = wanted.recap ? 'start' : 'center';
    wanted = undefined;
    follower.reveal(target, block);
    target.classList.remove('flash');
    void target.offsetWidth; // restart the animation
    target.classList.add('flash');
  } else if (state?.hasMore) {
    requestOlder();
  } else {
    wanted = undefined;
  }
}

function requestOlder(): void {
  if (state?.hasMore && !olderRequested) {
    olderRequested = true;
    post({ type: 'loadOlder' });
  }
}

transcriptBox.addEventListener('scroll', () => {
  if (transcriptBox.scrollTop < 64) {
    requestOlder();
  }
});
older.addEventListener('click', requestOlder);

// --- links, files, code copy, retry ---------------------------------------------------

transcriptBox.addEventListener('click', (event) => {
  const target = event.target as HTMLElement;
  const copy = target.closest('.code-copy');
  if (copy) {
    const code = copy.closest('.code-block')?.querySelector('code');
    post({ type: 'copy', text: code?.textContent ?? '' });
    copy.textContent = 'Copied';
    setTimeout(() => (copy.textContent = 'Copy'), 1200);
    return;
  }
  const fork = target.closest<HTMLButtonElement>('.fork-here');
  if (fork?.dataset.messageId) {
    post({ type: 'fork', id: Number(fork.dataset.messageId) });
    return;
  }
  const original = target.closest<HTMLButtonElement>('.fork-original');
  if (original?.dataset.sessionId) {
    post({ type: 'resume', sessionId: original.dataset.sessionId });
    return;
  }
  const showRecap = target.closest<HTMLButtonElement>('.notice-show-recap');
  if (showRecap) {
    wanted = { id: Number(showRecap.dataset.recapId) || 0, recap: true };
    revealWanted();
    return;
  }
  const retry = target.closest<HTMLButtonElement>('.notice-retry');
  if (retry?.dataset.noticeId) {
    retry.disabled = true;
    post({ type: 'retry', id: Number(retry.dataset.noticeId) });
    follower.toBottom();
    return;
  }
  const file = target.closest<HTMLElement>('.file-link');
  if (file && (file.dataset.file ?? file.dataset.path)) {
    event.preventDefault();
    const line = file.dataset.line ? Number(file.dataset.line) : undefined;
    post({ type: 'openFile', path: (file.dataset.file ?? file.dataset.path)!, line });
    return;
  }
  const link = target.closest('a');
  if (link) {
    event.preventDefault();
    const href = link.getAttribute('href');
    if (href && /^[a-z][\w+.-]*:/i.test(href)) {
      post({ type: 'openLink', href });
    } else if (href && !href.startsWith('#')) {
      // A link written to a relative path (`[the app](src/app.py#L3)`) is a file.
      const [path, fragment] = href.split('#');
      const line = /^L?(\d+)/.exec(fragment ?? '')?.[1];
      post({ type: 'openFile', path: decodeURIComponent(path), line: line ? Number(line) : undefined });
    }
  }
});

// --- session menu -------------------------------------------------------------------

function closeMenu(): void {
  menu.hidden = true;
  menuButton.setAttribute('aria-expanded', 'false');
}

menuButton.addEventListener('click', (event) => {
  event.stopPropagation();
  menu.hidden = !menu.hidden;
  menuButton.setAttribute('aria-expanded', String(!menu.hidden));
  if (!menu.hidden) {
    menu.querySelector<HTMLButtonElement>('.menu-item')?.focus();
  }
});
menu.addEventListener('click', (event) => {
  const item = (event.target as HTMLElement).closest<HTMLElement>('.menu-item');
  if (item?.dataset.action) {
    closeMenu();
    post({ type: 'menu', action: item.dataset.action as MenuAction });
  }
});
menu.addEventListener('keydown', (event) => {
  const items = [...menu.querySelectorAll<HTMLButtonElement>('.menu-item')];
  const index = items.indexOf(document.activeElement as HTMLButtonElement);
  if (event.key === 'Escape') {
    closeMenu();
    menuButton.focus();
  } else if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
    event.preventDefault();
    const step = event.key === 'ArrowDown' ? 1 : -1;
    items[(index + step + items.length) % items.length]?.focus();
  }
});
document.addEventListener('click', (event) => {
  if (!menu.hidden && !menu.contains(event.target as Node)) {
    closeMenu();
  }
});

const saved = vscode.getState();
composer.restore(saved ? { text: saved.draft, chips: saved.chips ?? [] } : undefined);
updateEmpty();
post({ type: 'ready', draft: composer.text });
