// The transcript: messages as rows. Tool calls are collapsible rows inside the assistant
// message that made them, with their result (from the matching `tool` message) inside;
// a recap is a card of its own; loaded rules and failing checks handed back to the model
// are folded blocks, not the user's words. Prompts, replies and recaps offer "Fork from
// here" (a button on hover, and the view's context menu through `data-vscode-context`).

import type { Notice } from '../chat/chatState';
import { placeOf } from '../chat/messageOrder';
import type { ToolCall, WireMessage } from '../protocol';
import { checksHeading } from '../format';
import { Icons, h, icon } from './dom';
import { forkButton, forkable } from './forkAction';
import { renderNotice } from './noticeRow';
import { renderPrompt } from './promptRow';
import { renderRecap } from './recapCard';
import { markdownBody } from './replyBody';
import { renderToolRow } from './toolRow';
import { renderTurnEnd } from './turnEndRow';

/** The tail of a running command's output a row keeps (its result holds the rest). */
const MAX_LIVE_OUTPUT = 64_000;

/**
 * A tool call as shown: its reply's message id and its own id. Some providers number
 * their calls per reply ("call_0" in every turn), so the call id alone is not enough.
 */
type CallKey = string;

function callKey(replyId: number, callId: string): CallKey {
  return `${replyId}/${callId}`;
}

function replyOf(key: CallKey): number {
  return Number(key.slice(0, key.indexOf('/')));
}

export class Transcript {
  private messages: WireMessage[] = [];
  private notices: Notice[] = [];
  // Each call shown, its row and its result; a result goes with the newest call of its
  // id before it.
  private readonly calls = new Map<CallKey, ToolCall>();
  private readonly callRows = new Map<CallKey, HTMLElement>();
  private readonly results = new Map<CallKey, WireMessage>();
  // The newest call of each id (the one a result or a running command's output is for).
  private readonly newestCall = new Map<string, CallKey>();
  // The call each result shown in a call's row belongs to, by the result's message id.
  private readonly resultCall = new Map<number, CallKey>();
  // Which tool rows the user opened, so a re-render keeps them open.
  private readonly openRows = new Set<CallKey>();
  // Running commands' rows the user folded: not opened again for their output.
  private readonly closedRows = new Set<CallKey>();
  // What each running command printed so far (its tail), by call id.
  private liveOutput = new Map<string, string>();

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
    const key = this.resultCall.get(id);
    return key === undefined ? undefined : this.callRows.get(key);
  }

  reset(messages: WireMessage[], notices: Notice[], toolOutputs: Record<string, string> = {}): void {
    this.messages = [...messages];
    this.notices = [...notices];
    this.liveOutput = new Map(Object.entries(toolOutputs));
    this.render();
  }

  /**
   * Running command `callId` printed `text`: add it to its row's output box, which keeps
   * its newest lines in view unless the user scrolled up in it.
   */
  toolOutput(callId: string, text: string): void {
    const output = ((this.liveOutput.get(callId) ?? '') + text).slice(-MAX_LIVE_OUTPUT);
    this.liveOutput.set(callId, output);
    const key = this.newestCall.get(callId);
    const box = key === undefined ? null : (this.callRows.get(key)?.querySelector<HTMLElement>('.tool-live') ?? null);
    if (!box) {
      return;
    }
    const atEnd = box.scrollHeight - box.scrollTop - box.clientHeight < 8;
    box.textContent = output;
    box.dataset.empty = output ? 'false' : 'true';
    if (atEnd) {
      box.scrollTop = box.scrollHeight;
    }
  }

  prepend(messages: WireMessage[]): void {
    this.messages = [...messages, ...this.messages];
    this.render();
  }

  /**
   * Show a message that arrived. Returns true when the transcript was drawn again: one
   * that arrived after a later one goes in its place, and a call whose result is shown
   * already takes that result into its row (never "tool result" on its own).
   */
  append(message: WireMessage): boolean {
    const at = placeOf(this.messages, message.id);
    if (at < this.messages.length || this.hasLooseResults(message)) {
      this.messages.splice(at, 0, message);
      this.render();
      return true;
    }
    this.messages.push(message);
    const key = message.role === 'tool' && message.tool_call_id ? this.newestCall.get(message.tool_call_id) : undefined;
    if (key !== undefined && !this.results.has(key)) {
      this.results.set(key, message);
      this.resultCall.set(message.id, key);
      this.liveOutput.delete(message.tool_call_id!);
      this.refreshCall(key);
      return false;
    }
    const row = this.renderMessage(message);
    if (row) {
      this.root.append(row);
    }
    return false;
  }

  addNotice(notice: Notice): void {
    this.notices.push(notice);
    this.root.append(renderNotice(notice));
  }

  /** Whether results of `message`'s calls are shown on their own (they arrived first). */
  private hasLooseResults(message: WireMessage): boolean {
    const ids = new Set((message.tool_calls ?? []).map((call) => call.id));
    return ids.size > 0 && this.messages.some((m) => m.role === 'tool' && m.tool_call_id !== undefined && ids.has(m.tool_call_id) && !this.resultCall.has(m.id));
  }

  private render(): void {
    this.calls.clear();
    this.callRows.clear();
    this.results.clear();
    this.newestCall.clear();
    this.resultCall.clear();
    // Each result with the newest call of its id before it, in the order stored.
    for (const message of this.messages) {
      for (const call of message.tool_calls ?? []) {
        this.newestCall.set(call.id, callKey(message.id, call.id));
      }
      const key = message.role === 'tool' && message.tool_call_id ? this.newestCall.get(message.tool_call_id) : undefined;
      if (key !== undefined && !this.results.has(key)) {
        this.results.set(key, message);
        this.resultCall.set(message.id, key);
      }
    }
    const rows: Node[] = this.notices.filter((n) => n.afterId === null).map(renderNotice);
    for (const message of this.messages) {
      // A result shows inside its call's row; one whose call is not loaded stands alone.
      if (!this.resultCall.has(message.id)) {
        const row = this.renderMessage(message);
        if (row) {
          rows.push(row);
        }
      }
      const ended = renderTurnEnd(message, this.notices);
      if (ended) {
        rows.push(ended);
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
        thinking.append(markdownBody(message.thinking));
        row.append(thinking);
      }
      if (message.content) {
        row.append(markdownBody(message.content));
      }
      for (const call of message.tool_calls ?? []) {
        const key = callKey(message.id, call.id);
        this.calls.set(key, call);
        const newest = this.newestCall.get(call.id);
        if (newest === undefined || replyOf(newest) < message.id) {
          this.newestCall.set(call.id, key);
        }
        const toolRow = this.renderCall(call, key);
        this.callRows.set(key, toolRow);
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

  private renderCall(call: ToolCall, key: CallKey): HTMLElement {
    const result = this.results.get(key);
    // A running command opens to show its output as it comes, unless the user folded it;
    // once it ends the row stays as the user left it.
    const running = call.name === 'run' && result === undefined;
    const open = this.openRows.has(key) || (running && !this.closedRows.has(key));
    if (open) {
      this.openRows.add(key); // opened for its output: it stays open when it ends
    }
    // Only the newest call of an id is running now: the output is its.
    const output = running && this.newestCall.get(call.id) === key ? this.liveOutput.get(call.id) : undefined;
    const row = renderToolRow(call, result, open, output);
    row.addEventListener('toggle', () => {
      if ((row as HTMLDetailsElement).open) {
        this.openRows.add(key);
        this.closedRows.delete(key);
      } else {
        this.openRows.delete(key);
        this.closedRows.add(key);
      }
    });
    if (running) {
      const box = row.querySelector<HTMLElement>('.tool-live');
      requestAnimationFrame(() => box && (box.scrollTop = box.scrollHeight));
    }
    return row;
  }

  private refreshCall(key: CallKey): void {
    const old = this.callRows.get(key);
    const call = this.calls.get(key);
    if (!old || !call) {
      return;
    }
    const fresh = this.renderCall(call, key);
    this.callRows.set(key, fresh);
    old.replaceWith(fresh);
  }
}

/** Failing checks the server handed back to the model: folded, the output inside. */
function renderChecks(message: WireMessage): HTMLElement {
  const body = markdownBody(message.content, 'check-text');
  return h(
    'details',
    { class: 'row check', 'data-id': String(message.id), 'data-kind': 'check' },
    h('summary', {}, icon(Icons.error, 'icon status-error'), checksHeading(message.content)),
    body,
  );
}
