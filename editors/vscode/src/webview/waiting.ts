// What waits at the end of the transcript: the questions the task waits on (cards with
// their choices; a write's has "Review changes", which opens VS Code's diff editor, and
// a note a Deny sends to the model), and the prompts queued while a task runs. Both are
// drawn by id, so that a redraw keeps a note being typed; the notes are kept in the
// page's saved state too, so that a view drawn again (hidden and shown, reloaded) has
// them.

import type { QueuedPrompt, Question } from '../chat/chatState';
import { mentionLabel } from '../chat/promptText';
import type { FromWebview } from '../chat/webviewProtocol';
import { plural } from '../format';
import type { CommandQuestion, WriteQuestion } from '../protocol';
import { Icons, h, icon } from './dom';
import { renderHunk } from './hunkView';

type Post = (message: FromWebview) => void;

/** Where the notes typed into Deny fields are kept, by question id. */
export interface NoteDrafts {
  get(id: number): string;
  set(id: number, text: string): void;
}

/**
 * Keep `container`'s children to one element per item, by id, in the items' order. An
 * element already in its place is left there: taken out and put back, it would lose the
 * focus, and what is typed next into a note would go nowhere.
 */
function sync<T extends { id: number }>(container: HTMLElement, items: readonly T[], render: (item: T) => HTMLElement): void {
  const existing = new Map<string, HTMLElement>();
  for (const child of [...container.children] as HTMLElement[]) {
    existing.set(child.dataset.itemId ?? '', child);
  }
  items.forEach((item, index) => {
    const element = existing.get(String(item.id)) ?? render(item);
    element.dataset.itemId = String(item.id);
    const current = container.children[index];
    if (current !== element) {
      container.insertBefore(element, current ?? null);
    }
  });
  while (container.children.length > items.length) {
    container.lastElementChild?.remove();
  }
  container.hidden = items.length === 0;
}

/** Sent by a question's card answered while the focus was in it (the page moves the focus on). */
export const ANSWERED = 'seri-answered';

/** `project`: the open session's folder, for showing the paths in it short. */
export function renderQuestions(container: HTMLElement, questions: readonly Question[], project: string, post: Post, notes: NoteDrafts): void {
  sync(container, questions, (question) => renderQuestion(question, project, post, notes));
}

/** A path inside the project as relative to it, others as they are. */
function shortPath(file: string, project: string): string {
  const root = project.replace(/[\\/]+$/, '');
  if (root && file === root) {
    return 'the project folder';
  }
  return root && (file.startsWith(`${root}/`) || file.startsWith(`${root}\\`)) ? file.slice(root.length + 1) : file;
}

export function renderQueue(container: HTMLElement, queued: readonly QueuedPrompt[], post: Post): void {
  sync(container, queued, (prompt) =>
    h(
      'div',
      { class: 'row queued', 'data-queued-id': String(prompt.id) },
      h(
        'div',
        { class: 'bubble' },
        h('div', { class: 'queued-label', title: 'Sent when the running task ends' }, 'Queued'),
        h('div', { class: 'queued-text' }, prompt.text),
        prompt.context && prompt.context.length > 0
          ? h('div', { class: 'chips' }, ...prompt.context.map((entry) => h('span', { class: 'chip' }, mentionLabel(entry))))
          : null,
      ),
      button('Remove from the queue', () => post({ type: 'unqueue', id: prompt.id }), 'icon-button queued-remove', icon(Icons.close)),
    ),
  );
}

function renderQuestion(question: Question, project: string, post: Post, notes: NoteDrafts): HTMLElement {
  const params = question.params;
  const card = h('section', { class: `row question question-${params.kind}`, role: 'alert', 'aria-label': params.message, 'data-question-id': String(question.id) });
  const answer = (choice: string, note?: string): void => {
    const focused = card.contains(document.activeElement);
    card.classList.add('answered');
    card.querySelectorAll('button, input').forEach((element) => ((element as HTMLButtonElement).disabled = true));
    post({ type: 'answer', id: question.id, choice, note });
    if (focused) {
      card.dispatchEvent(new Event(ANSWERED, { bubbles: true })); // a disabled control keeps no focus
    }
  };
  card.append(h('div', { class: 'question-head' }, icon(Icons.question), h('span', { class: 'question-title' }, ...title(question))));
  let withNote = false;
  if (params.kind === 'write') {
    card.append(writeDetails(params));
    const hunk = renderHunk(params);
    if (hunk) {
      card.append(hunk);
    }
    if (params.proposed !== undefined) {
      card.append(h('div', { class: 'question-review' }, button('Review changes', () => post({ type: 'review', id: question.id }), 'secondary review', icon(Icons.diff))));
    }
    withNote = true;
  } else if (params.kind === 'memory') {
    card.append(h('blockquote', { class: 'question-quote' }, params.text), h('div', { class: 'question-detail' }, `in ${shortPath(params.path, project)}`));
  } else if (params.kind === 'command') {
    card.append(...commandDetails(params));
    withNote = true;
  } else if (params.kind === 'mcp') {
    // The arguments exactly as they would be sent, in monospace (no markdown).
    card.append(h('pre', { class: 'question-arguments', 'aria-label': 'Arguments' }, JSON.stringify(params.arguments, null, 2)));
  } else if (params.kind === 'mcpServers') {
    card.append(h('ul', { class: 'question-servers' }, ...params.servers.map((server) => h('li', {}, h('strong', {}, server.name), ' ', h('code', {}, server.command)))));
  } else if (params.kind === 'checks') {
    card.append(
      h('div', { class: 'question-detail' }, `in ${shortPath(params.cwd, project)}`),
      h('ul', { class: 'question-checks' }, ...params.checks.map((check) => h('li', {}, h('strong', {}, check.name), ' ', h('code', {}, check.command)))),
    );
  }
  const deny = withNote ? params.choices.find((choice) => /^deny$/i.test(choice)) : undefined;
  card.append(
    h(
      'div',
      { class: 'question-choices' },
      ...params.choices
        .filter((choice) => choice !== deny)
        .map((choice, index) => button(choice, () => answer(choice), index === 0 ? 'primary' : 'secondary')),
    ),
  );
  if (deny) {
    // A Deny can say why: the note goes back to the model with the refusal.
    const note = h('input', { class: 'question-note', type: 'text', placeholder: 'Why not? (optional)', 'aria-label': 'A note for seri, sent with Deny', maxlength: '2000' });
    note.value = notes.get(question.id);
    note.addEventListener('input', () => notes.set(question.id, note.value));
    note.addEventListener('keydown', (event) => {
      if (event.key === 'Enter') {
        event.preventDefault();
        answer(deny, note.value);
      }
    });
    card.append(h('div', { class: 'question-deny' }, note, button(deny, () => answer(deny, note.value), 'secondary')));
  }
  return card;
}

/** "seri wants to edit src/app.py", the path a link to the file. */
function title(question: Question): (Node | string)[] {
  const params = question.params;
  if (params.kind === 'write') {
    // A file that exists is a link to it; a new one is only its name.
    const file =
      params.action === 'create'
        ? h('span', { class: 'question-path' }, params.path)
        : h('a', { class: 'file-link question-path', href: '#', 'data-path': params.path, 'data-line': String(params.line ?? 1), title: `Open ${params.path}` }, params.path);
    return ['seri wants to ', params.action, ' ', file];
  }
  if (params.kind === 'memory') {
    return ['seri wants to remember for this project:'];
  }
  if (params.kind === 'checks') {
    return ['seri wants to run the checks'];
  }
  if (params.kind === 'command') {
    return ['seri wants to run a command'];
  }
  if (params.kind === 'mcp') {
    return ['seri wants to call ', h('code', {}, params.tool), ' of the MCP server ', h('strong', {}, params.server)];
  }
  if (params.kind === 'mcpServers') {
    return [params.message.replace(/:.*$/s, ':')];
  }
  return [(params as { message: string }).message];
}

/**
 * A command question: the line exactly as it would run and its folder, in monospace (no
 * markdown), then why it is asked: the parts no rule allows, or the server's reason.
 */
function commandDetails(params: CommandQuestion): HTMLElement[] {
  const nodes: HTMLElement[] = [
    h('pre', { class: 'question-line', 'aria-label': 'Command' }, params.command),
    h('div', { class: 'question-detail question-cwd' }, 'in ', h('code', {}, params.cwd === '' || params.cwd === '.' ? '.' : params.cwd), params.cwd === '' || params.cwd === '.' ? ' (the workspace root)' : ''),
  ];
  const unmatched = (params.unmatched ?? []).filter((part) => part !== params.command);
  if (unmatched.length > 0 && (params.parts?.length ?? 0) > 1) {
    nodes.push(
      h(
        'div',
        { class: 'question-detail question-unmatched' },
        unmatched.length === 1 ? 'No rule allows this part: ' : 'No rule allows these parts: ',
        ...unmatched.flatMap((part, index) => [index > 0 ? ', ' : '', h('code', {}, part)]),
      ),
    );
  }
  if (params.reason) {
    nodes.push(h('div', { class: 'question-detail question-reason' }, params.reason));
  }
  return nodes;
}

function writeDetails(params: WriteQuestion): HTMLElement {
  const parts: string[] = [];
  if (params.action === 'create' && params.proposed !== undefined) {
    parts.push(`new file, ${plural(lineCount(params.proposed), 'line')}`);
  } else if (params.action === 'edit' && params.oldText !== undefined && params.newText !== undefined) {
    parts.push(`line ${params.line ?? 1}`, `−${lineCount(params.oldText)} +${lineCount(params.newText)}`);
  } else if (params.current !== undefined && params.current !== null && params.proposed !== undefined) {
    parts.push(`${plural(lineCount(params.current), 'line')} → ${plural(lineCount(params.proposed), 'line')}`);
  }
  if (params.tooLarge) {
    parts.push('too large to review here');
  }
  return h('div', { class: 'question-detail' }, parts.join(' · '));
}

function lineCount(text: string): number {
  if (text === '') {
    return 0;
  }
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

/** A button; an `icon-button` shows only its icon (the label is its tooltip). */
function button(label: string, onClick: () => void, className: string, glyph?: SVGSVGElement): HTMLButtonElement {
  const iconOnly = className.split(' ').includes('icon-button');
  const element = h('button', { class: className, type: 'button', title: label, 'aria-label': label }, glyph, iconOnly ? null : label);
  element.addEventListener('click', onClick);
  return element;
}
