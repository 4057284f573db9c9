// What happened before a compaction: the divider above a recap says what the recap
// replaced (from its `recap` object, so the same live and on reopen), and its button
// opens the record of those turns (`seri.trajectory.get {compacted: true}`) as a
// read-only markdown document. Shared by the extension and the webview bundle.

import { plural } from '../format';
import type { Recap, RecordedEvent, TrajectoryRecord } from '../protocol';

/** `12 earlier messages compacted · 5 tool calls · 70,120 → 18,340 tokens`. */
export function dividerText(recap: Recap): string {
  const parts = [`${plural(recap.evicted, 'earlier message')} compacted`];
  if (recap.toolCalls) {
    parts.push(plural(recap.toolCalls, 'tool call'));
  }
  if (typeof recap.tokensBefore === 'number' && typeof recap.tokensAfter === 'number') {
    const after = recap.tokensAfter;
    parts.push(`${recap.tokensBefore.toLocaleString('en-US')} → ${after.toLocaleString('en-US')} token${after === 1 ? '' : 's'}`);
  }
  return parts.join(' · ');
}

function text(value: unknown): string {
  if (typeof value === 'string') {
    return value;
  }
  if (value && typeof value === 'object' && (value as { elided?: unknown }).elided) {
    return `(elided: ${String((value as { originalBytes?: unknown }).originalBytes)} bytes)`;
  }
  return JSON.stringify(value);
}

/** A fence longer than any run of backticks in `body`. */
function fenced(body: string): string {
  const longest = Math.max(2, ...(body.match(/`+/g) ?? []).map((run) => run.length));
  const fence = '`'.repeat(longest + 1);
  return `${fence}\n${body}\n${fence}`;
}

function eventLines(event: RecordedEvent): string[] {
  const d = event.data ?? {};
  switch (event.kind) {
    case 'task_started':
      return ['', `## Prompt (${event.createdAt})`, '', fenced(text(d.prompt ?? ''))];
    case 'tool_call':
      return ['', `**→ ${text(d.name)}** \`${text(d.id)}\``, '', fenced(text(d.arguments))];
    case 'tool_result':
      return ['', `**← ${text(d.name)}${d.isError ? ' failed' : ''}** \`${text(d.id)}\``, '', fenced(text(d.content ?? ''))];
    case 'edit':
      return ['', `Edit \`${text(d.path)}\`: ${text(d.outcome)}${d.reason ? ` (${text(d.reason)})` : ''}`];
    case 'denial':
      return ['', `Denied ${text(d.tool)} \`${text(d.path)}\`: ${text(d.reason)}`];
    case 'task_ended':
      return ['', `Task ${text(d.status)} after ${plural(Number(d.turns) || 0, 'turn')}${d.error ? `: ${text(d.error)}` : ''}`];
    case 'compaction':
      return ['', `---`, '', `**Compacted here** (${text(d.trigger)}): ${plural(Number(d.evicted) || 0, 'message')}`];
    case 'usage':
    case 'opened':
    case 'checkpoint':
      return [];
    default:
      return ['', `${event.kind}: \`${JSON.stringify(d)}\``];
  }
}

/** The record as a markdown document: prompts, tool calls and results, edits, as recorded. */
export function recordDocument(record: TrajectoryRecord): string {
  if (record.events.length === 0) {
    return [
      '# Before the compaction',
      '',
      'Nothing was recorded of the turns this recap replaced (recording was off then, or the session is a fork or an import: its recordings stay with its source).',
      '',
    ].join('\n');
  }
  const lines = [
    '# Before the compaction',
    '',
    `The record of session \`${record.sessionId ?? ''}\`: the turns the recap replaced, as recorded. The model no longer sees them.`,
  ];
  for (const event of record.events) {
    lines.push(...eventLines(event));
  }
  return lines.join('\n') + '\n';
}
