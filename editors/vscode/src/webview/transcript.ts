// The transcript: messages as rows. Tool calls are collapsible rows inside the assistant
// message that made them, with their result (from the matching `tool` message) inside;
// a recap is a card of its own; loaded rules and failing checks handed back to the model
// are folded blocks, not the user's words. Prompts, replies and recaps offer "Fork from
// here" (a button on hover, and the view's context menu through `data-vscode-context`).

import type { Notice } from '../chat/model';
import { ContextBlock, Mention, mentionLabel, splitPrompt } from '../chat/promptText';
import type { Recap, ToolCall, WireMessage } from '../protocol';
import { checksHeading, plural } from '../format';
import { Icons, h, icon } from './dom';
import { renderMarkdown } from './markdown';
import { textWithPaths } from './paths';

/** The short description of a tool call: `edit src/app.py`, `grep TODO in src`. */
export function describeCall(call: ToolCall): { target: string; path?: string } {
  let args: Record<string, unknown> = {};
  try {
    const parsed: unknown = JSON.parse(call.arguments || '{}');
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
      args = parsed as Record<string, unknown>;
    }
  } catch {
    return { target: '' };
  }
  const text = (key: string): string => (typeof args[key] === 'string' ? (args[key] as string) : '');
  switch (call.name) {
    case 'read_file':
    case 'write_file':
    case 'edit':
      return { target: text('path'), path: text('path') || undefined };
    case 'list_dir':
      return { target: text('path') || '.' };
    case 'grep':
      return { target: text('path') ? `${text('pattern')} in ${text('path')}` : text('pattern') };
    case 'task':
      return { target: oneLine(text('prompt'), 80) };
    case 'remember':
      return { target: oneLine(text('text'), 80) };
    default:
      return { target: oneLine(call.arguments, 80) };
  }
}

function oneLine(text: string, limit: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > limit ? `${line.slice(0, limit - 1)}…` : line;
}

export class Transcript {
  private messages: WireMessage[] = [];
  private notices: Notice[] = [];
  private readonly results = new Map<string, WireMessage>();
  private readonly callRows = new Map<string, HTMLElement>();
  // Which tool rows the user opened, so a re-render keeps them open.
  private readonly openRows = new Set<string>();

  constructor(private readonly root: HTMLElement) {}

  get count(): number {
    return this.messages.length;
  }

  /** The messages shown, oldest first. */
  get shown(): readonly WireMessage[] {
    return this.messages;
  }

  /**
   * The line after a fork's copied messages (after message `afterId`), naming the session
   * they were copied from (`origin`, whose id `originId` opens it); none for null.
   */
  markFork(afterId: number | null, origin: string, originId: string): void {
    this.root.querySelector(':scope > .fork-mark')?.remove();
    const row = afterId === null ? null : this.rowOf(afterId);
    if (!row) {
      return;
    }
    row.after(
      h(
        'div',
        { class: 'row fork-mark', role: 'note', id: 'fork-mark' },
        icon(Icons.fork),
        h('span', { class: 'fork-text' }, `Forked from ${origin}: the messages above are a copy. The original is unchanged.`),
        h('button', { class: 'fork-original link-button', type: 'button', 'data-session-id': originId, title: 'Resume the session this one was forked from' }, 'Open the original'),
      ),
    );
  }

  /** The row that shows message `id` (a tool result's: its call's reply). */
  private rowOf(id: number): HTMLElement | null {
    return this.callRowOf(id)?.closest<HTMLElement>('.row.assistant') ?? this.root.querySelector<HTMLElement>(`:scope > [data-id="${id}"]`);
  }

  /**
   * The element that shows message `id`, to scroll to: a tool result's tool row (opened,
   * so the result shows), else the message's row; null when it is not loaded.
   */
  rowFor(id: number): HTMLElement | null {
    const call = this.callRowOf(id);
    if (call) {
      (call as HTMLDetailsElement).open = true;
      return call;
    }
    return this.rowOf(id);
  }

  /** The tool row of tool result `id`, when its call is shown. */
  private callRowOf(id: number): HTMLElement | undefined {
    const message = this.messages.find((m) => m.id === id);
    return message?.role === 'tool' && message.tool_call_id ? this.callRows.get(message.tool_call_id) : undefined;
  }

  reset(messages: WireMessage[], notices: Notice[]): void {
    this.messages = [...messages];
    this.notices = [...notices];
    this.render();
  }

  prepend(messages: WireMessage[]): void {
    this.messages = [...messages, ...this.messages];
    this.render();
  }

  append(message: WireMessage): void {
    this.messages.push(message);
    if (message.role === 'tool' && message.tool_call_id && this.callRows.has(message.tool_call_id)) {
      this.results.set(message.tool_call_id, message);
      this.refreshCall(message.tool_call_id);
      return;
    }
    const row = this.renderMessage(message);
    if (row) {
      this.root.append(row);
    }
  }

  addNotice(notice: Notice): void {
    this.notices.push(notice);
    this.root.append(renderNotice(notice));
  }

  private render(): void {
    this.results.clear();
    this.callRows.clear();
    const calls = new Set<string>();
    for (const message of this.messages) {
      message.tool_calls?.forEach((call) => calls.add(call.id));
      if (message.role === 'tool' && message.tool_call_id) {
        this.results.set(message.tool_call_id, message);
      }
    }
    const rows: Node[] = this.notices.filter((n) => n.afterId === null).map(renderNotice);
    for (const message of this.messages) {
      // A result shows inside its call's row; one whose call is not loaded stands alone.
      const attached = message.role === 'tool' && message.tool_call_id !== undefined && calls.has(message.tool_call_id);
      if (!attached) {
        const row = this.renderMessage(message);
        if (row) {
          rows.push(row);
        }
      }
      for (const notice of this.notices) {
        if (notice.afterId === message.id) {
          rows.push(renderNotice(notice));
        }
      }
    }
    this.root.replaceChildren(...rows);
  }

  private renderMessage(message: WireMessage): HTMLElement | null {
    if (message.kind === 'recap') {
      return renderRecap(message);
    }
    if (message.role === 'user') {
      if (message.kind === 'check') {
        return renderChecks(message);
      }
      if (message.kind === 'rule') {
        return h(
          'details',
          { class: 'row rule', 'data-id': String(message.id) },
          h('summary', {}, 'Rule loaded for this session'),
          h('div', { class: 'rule-text' }, message.content),
        );
      }
      return renderPrompt(message);
    }
    if (message.role === 'assistant') {
      const row = h('div', { class: 'row assistant', 'data-id': String(message.id), 'data-role': 'assistant', ...forkable(message) });
      row.append(forkButton(message.id));
      if (message.thinking) {
        const thinking = h('details', { class: 'thinking' }, h('summary', {}, 'Thinking'));
        const body = h('div', { class: 'markdown' });
        body.innerHTML = renderMarkdown(message.thinking);
        thinking.append(body);
        row.append(thinking);
      }
      if (message.content) {
        const body = h('div', { class: 'markdown' });
        body.innerHTML = renderMarkdown(message.content);
        row.append(body);
      }
      for (const call of message.tool_calls ?? []) {
        const toolRow = this.renderCall(call);
        this.callRows.set(call.id, toolRow);
        row.append(toolRow);
      }
      return row;
    }
    // A tool result whose call is not shown (older page, or compacted away).
    return renderToolRow(
      { id: message.tool_call_id ?? '', name: 'tool result', arguments: '{}' },
      message,
      false,
    );
  }

  private renderCall(call: ToolCall): HTMLElement {
    const row = renderToolRow(call, this.results.get(call.id), this.openRows.has(call.id));
    row.addEventListener('toggle', () => {
      if ((row as HTMLDetailsElement).open) {
        this.openRows.add(call.id);
      } else {
        this.openRows.delete(call.id);
      }
    });
    return row;
  }

  private refreshCall(callId: string): void {
    const old = this.callRows.get(callId);
    const call = this.messages.flatMap((m) => m.tool_calls ?? []).find((c) => c.id === callId);
    if (!old || !call) {
      return;
    }
    const fresh = this.renderCall(call);
    this.callRows.set(callId, fresh);
    old.replaceWith(fresh);
  }
}

function renderToolRow(call: ToolCall, result: WireMessage | undefined, open: boolean): HTMLElement {
  const { target, path } = describeCall(call);
  const status = result === undefined ? 'pending' : result.isError ? 'error' : 'ok';
  const statusIcon =
    status === 'pending'
      ? h('span', { class: 'spinner', 'aria-label': 'running' })
      : icon(status === 'error' ? Icons.error : Icons.check, `icon status-${status}`);
  const targetNode = path
    ? h('a', { class: 'tool-target file-link', href: '#', 'data-path': path, title: `Open ${path}` }, target)
    : h('span', { class: 'tool-target' }, target);
  const summary = h(
    'summary',
    {},
    icon(Icons.chevron, 'icon chevron'),
    statusIcon,
    h('span', { class: 'tool-name' }, call.name),
    // Read as one line ("edit src/app.py") when copied or read aloud, not "editsrc/app.py".
    ' ',
    targetNode,
    status === 'error' ? h('span', { class: 'tool-failed' }, 'failed') : null,
  );
  const body = h('div', { class: 'tool-body' }, ...renderArguments(call));
  body.append(h('div', { class: 'tool-label' }, 'Result'));
  body.append(
    h(
      'pre',
      { class: `tool-output${result?.isError ? ' error' : ''}` },
      result === undefined ? 'Running…' : result.content || '(empty)',
    ),
  );
  return h(
    'details',
    { class: `row tool status-${status}`, 'data-call-id': call.id, 'data-tool': call.name, open: open || undefined },
    summary,
    body,
  );
}

function renderArguments(call: ToolCall): Node[] {
  let args: Record<string, unknown> | undefined;
  try {
    const parsed: unknown = JSON.parse(call.arguments || '{}');
    args = parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : undefined;
  } catch {
    args = undefined;
  }
  if (call.name === 'tool result') {
    return [];
  }
  if (!args) {
    return [h('div', { class: 'tool-label' }, 'Arguments'), h('pre', { class: 'tool-args' }, call.arguments)];
  }
  if (call.name === 'edit') {
    return [
      h('div', { class: 'tool-label' }, 'Replace'),
      h('pre', { class: 'tool-args diff-old' }, String(args.old_text ?? '')),
      h('div', { class: 'tool-label' }, 'With'),
      h('pre', { class: 'tool-args diff-new' }, String(args.new_text ?? '')),
    ];
  }
  if (call.name === 'write_file') {
    return [h('div', { class: 'tool-label' }, 'Content'), h('pre', { class: 'tool-args' }, String(args.content ?? ''))];
  }
  return [h('div', { class: 'tool-label' }, 'Arguments'), h('pre', { class: 'tool-args' }, JSON.stringify(args, null, 2))];
}

/** Failing checks the server handed back to the model: folded, the output inside. */
function renderChecks(message: WireMessage): HTMLElement {
  const body = h('div', { class: 'markdown check-text' });
  body.innerHTML = renderMarkdown(message.content);
  return h(
    'details',
    { class: 'row check', 'data-id': String(message.id), 'data-kind': 'check' },
    h('summary', {}, icon(Icons.error, 'icon status-error'), checksHeading(message.content)),
    body,
  );
}

/** Where the view's context menu offers "Fork from Here" (`webview/context` in package.json). */
function forkable(message: WireMessage): Record<string, string> {
  return { 'data-vscode-context': JSON.stringify({ webviewSection: 'message', messageId: message.id }) };
}

/** The hover action of a prompt, a reply or a recap. */
function forkButton(id: number): HTMLElement {
  return h(
    'div',
    { class: 'row-actions' },
    h(
      'button',
      {
        class: 'icon-button fork-here',
        type: 'button',
        'data-message-id': String(id),
        title: 'Fork from here: continue in a new session holding the conversation up to this message (this one stays as it is)',
        'aria-label': 'Fork from here',
      },
      icon(Icons.fork),
    ),
  );
}

function renderRecap(message: WireMessage): HTMLElement {
  const recap: Recap | undefined = message.recap;
  const card = h('section', { class: 'row recap', 'data-id': String(message.id), 'aria-label': 'Recap', ...forkable(message) });
  card.append(forkButton(message.id));
  const evicted = recap?.evicted;
  card.append(
    h(
      'div',
      { class: 'recap-head' },
      icon(Icons.recap),
      h('span', { class: 'recap-title' }, 'Conversation compacted'),
      evicted ? h('span', { class: 'recap-count' }, `${evicted} earlier message${evicted === 1 ? '' : 's'} summarised`) : null,
    ),
  );
  if (!recap) {
    const body = h('div', { class: 'markdown' });
    body.innerHTML = renderMarkdown(message.content);
    card.append(body);
    return card;
  }
  const fields: [string, string][] = [
    ['Goal', recap.goal],
    ['Progress', recap.progress],
    ['Blockers', recap.blockers],
    ['Next steps', recap.nextSteps],
  ];
  const list = h('dl', { class: 'recap-fields' });
  for (const [label, value] of fields) {
    const body = h('dd', { class: 'markdown' });
    body.innerHTML = renderMarkdown(value.trim() || '(none)');
    list.append(h('dt', {}, label), body);
  }
  card.append(list);
  for (const [label, paths] of [
    ['Read', recap.read],
    ['Modified', recap.modified],
  ] as const) {
    if (paths.length > 0) {
      card.append(
        h(
          'div',
          { class: 'recap-paths' },
          h('span', { class: 'recap-paths-label' }, `${label}:`),
          ...paths.map((p) => h('a', { class: 'chip file-link', href: '#', 'data-path': p, title: `Open ${p}` }, p)),
        ),
      );
    }
  }
  return card;
}

/** The user's prompt: their words, then what they attached as chips (text folded in). */
function renderPrompt(message: WireMessage): HTMLElement {
  const { text, mentions, blocks } = splitPrompt(message.content);
  const bubble = h('div', { class: 'bubble' }, h('div', { class: 'prompt-text' }, ...textWithPaths(text)));
  if (mentions.length > 0 || blocks.length > 0) {
    bubble.append(h('div', { class: 'chips prompt-attachments' }, ...mentions.map(mentionChip), ...blocks.map(blockChip)));
  }
  return h('div', { class: 'row user', 'data-id': String(message.id), 'data-role': 'user', ...forkable(message) }, forkButton(message.id), bubble);
}

function mentionChip(mention: Mention): HTMLElement {
  return h(
    'span',
    { class: 'chip attachment path-candidate', 'data-path': mention.path, 'data-line': mention.startLine?.toString() },
    icon(Icons.file),
    mentionLabel(mention),
  );
}

/** Attached text: a chip that opens to show it. */
function blockChip(block: ContextBlock): HTMLElement {
  return h(
    'details',
    { class: 'context-block' },
    h('summary', { class: 'chip attachment', title: `Attached text of ${mentionLabel(block)}` }, icon(Icons.snippet), mentionLabel(block)),
    h('pre', { class: 'context-text' }, block.text),
  );
}

// Paths a compaction notice lists before "and N more".
const NOTICE_PATHS = 8;

function renderNotice(notice: Notice): HTMLElement {
  const attributes = { role: notice.level === 'error' ? 'alert' : 'status', 'data-notice-id': String(notice.id) };
  if (notice.report) {
    // `/cost`, `/context`: aligned columns and text bars, as the server wrote them.
    return h('div', { class: 'row notice notice-report', ...attributes }, h('pre', { class: 'report-text' }, notice.text));
  }
  const row = h(
    'div',
    { class: `row notice notice-${notice.level}`, ...attributes },
    h('span', { class: 'notice-text' }, notice.text),
    notice.retry
      ? h('button', { class: 'notice-retry secondary', type: 'button', title: 'Send the prompt again', 'data-notice-id': String(notice.id) }, 'Retry')
      : null,
  );
  const compaction = notice.compaction;
  if (compaction) {
    row.classList.add('notice-compaction');
    row.prepend(icon(Icons.recap));
    row.append(
      h(
        'button',
        { class: 'notice-show-recap secondary', type: 'button', 'data-recap-id': String(compaction.recapId ?? ''), title: 'Scroll to the recap' },
        'Show recap',
      ),
    );
    for (const [label, paths] of [
      ['Read', compaction.read],
      ['Modified', compaction.modified],
    ] as const) {
      if (paths.length > 0) {
        const more = paths.length - NOTICE_PATHS;
        row.append(
          h(
            'div',
            { class: 'recap-paths notice-paths' },
            h('span', { class: 'recap-paths-label' }, `${label}:`),
            ...paths.slice(0, NOTICE_PATHS).map((p) => h('a', { class: 'chip file-link', href: '#', 'data-path': p, title: `Open ${p}` }, p)),
            more > 0 ? h('span', { class: 'recap-paths-label' }, `and ${plural(more, 'more')}`) : null,
          ),
        );
      }
    }
  }
  return row;
}
