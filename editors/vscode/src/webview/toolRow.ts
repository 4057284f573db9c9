// A tool call as a collapsible row: the tool and its target on one line, its arguments
// (an edit as the text replaced and its replacement) and its result inside.

import type { ToolCall, WireMessage } from '../protocol';
import { Icons, h, icon } from './dom';

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
    case 'run':
      return { target: oneLine(text('command'), 80) };
    default:
      return { target: oneLine(call.arguments, 80) };
  }
}

function oneLine(text: string, limit: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > limit ? `${line.slice(0, limit - 1)}…` : line;
}

/**
 * `live`: what a running command (a `run` call with no result yet) printed so far, shown
 * as it comes in a bounded box that scrolls, with a Stop button on the row.
 */
export function renderToolRow(call: ToolCall, result: WireMessage | undefined, open: boolean, live?: string): HTMLElement {
  const { target, path } = describeCall(call);
  const status = toolStatus(result);
  const command = call.name === 'run';
  const statusIcon =
    status === 'pending'
      ? h('span', { class: 'spinner', 'aria-label': 'running' })
      : icon(status === 'error' ? Icons.error : status === 'denied' || status === 'stopped' ? Icons.close : Icons.check, `icon status-${status}`);
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
    status === 'denied' ? h('span', { class: 'tool-denied' }, 'denied') : null,
    status === 'stopped' ? h('span', { class: 'tool-denied' }, 'stopped') : null,
    command && status === 'pending'
      ? h('button', { class: 'tool-stop secondary', type: 'button', title: 'Stop this command (the task goes on)', 'aria-label': 'Stop this command' }, 'Stop')
      : null,
  );
  const body = h('div', { class: 'tool-body' }, ...renderArguments(call));
  if (command && result === undefined) {
    body.append(h('div', { class: 'tool-label' }, 'Output'));
    const output = h('pre', { class: 'tool-output tool-live', role: 'log', 'aria-live': 'off' }, live || '');
    output.dataset.empty = live ? 'false' : 'true';
    body.append(output);
  } else {
    body.append(h('div', { class: 'tool-label' }, command ? 'Output' : 'Result'));
    body.append(
      h(
        'pre',
        { class: `tool-output${status === 'error' ? ' error' : ''}` },
        result === undefined ? 'Running…' : result.content || '(empty)',
      ),
    );
  }
  return h(
    'details',
    { class: `row tool status-${status}`, 'data-call-id': call.id, 'data-tool': call.name, open: open || undefined },
    summary,
    body,
  );
}

/** How the results of calls that were stopped, not failed, start. */
const STOPPED = ['stopped by the user', 'Cancelled: the user stopped', 'Interrupted: seri stopped'];

/**
 * How a call ended: a refused one (the server's result starts `Denied: `, as a denied
 * write's does), a command the user stopped (`stopped by the user`) and a call the
 * task's Stop cut short are the user's choice, not failures, and are drawn in neutral
 * colours.
 */
export function toolStatus(result: WireMessage | undefined): 'pending' | 'ok' | 'error' | 'denied' | 'stopped' {
  if (result === undefined) {
    return 'pending';
  }
  if (!result.isError) {
    return 'ok';
  }
  // Its own Stop, the task's Stop before it finished, or seri stopping while it ran
  // (seri_lsp/agent/loop.py).
  if (STOPPED.some((start) => result.content.startsWith(start))) {
    return 'stopped';
  }
  return result.content.startsWith('Denied: ') || result.content.startsWith('not run (denied)') ? 'denied' : 'error';
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
  if (call.name === 'run') {
    // The command line exactly as it runs, and where.
    const nodes: Node[] = [h('div', { class: 'tool-label' }, 'Command'), h('pre', { class: 'tool-args tool-command' }, String(args.command ?? ''))];
    if (typeof args.cwd === 'string' && args.cwd !== '' && args.cwd !== '.') {
      nodes.push(h('div', { class: 'tool-label' }, 'In'), h('pre', { class: 'tool-args tool-cwd' }, args.cwd));
    }
    return nodes;
  }
  if (call.name === 'write_file') {
    return [h('div', { class: 'tool-label' }, 'Content'), h('pre', { class: 'tool-args' }, String(args.content ?? ''))];
  }
  return [h('div', { class: 'tool-label' }, 'Arguments'), h('pre', { class: 'tool-args' }, JSON.stringify(args, null, 2))];
}
