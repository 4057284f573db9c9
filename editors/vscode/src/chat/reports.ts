// `/cost` and `/context` laid out for a narrow chat: the server's answer (its figures, not
// its fixed-width text) as a few sentences and a two-column list of named rows, in the
// breakdown's plain words. No DOM and no `vscode` import: unit-tested.

import { formatTokens, money, plural } from '../format';
import type { ContextBreakdown, SessionUsage, Spend } from '../protocol';
import { segments } from './contextParts';

/** One line of a report's list: a name, and its figures (a share of 0..1 draws a bar). */
export interface ReportRow {
  label: string;
  value: string;
  /** The part's kind, for its colour (the context bar's). */
  kind?: string;
  share?: number;
  /** The full name, for a tooltip. */
  title?: string;
}

export interface ReportView {
  /** The report's sentences, first the one that sums it up. */
  lines: string[];
  rows: ReportRow[];
}

/** What each kind of model call was for, in words. */
const CALL_KINDS: Record<string, string> = {
  turn: 'Your tasks',
  compaction: 'Compaction',
  subagent: 'Subagents',
};

/** `/cost`: the spend, the input and output tokens, then a row per kind of call. */
export function costReport(usage: SessionUsage): ReportView {
  const totals = usage.totals;
  const cost = totals.cost === null ? 'no cost reported' : money(totals.cost);
  const lines = [`Spend: ${cost} over ${plural(usage.calls, 'model call')}.`];
  let input = `Input: ${formatTokens(totals.inputTokens)} tokens`;
  if (usage.cacheHitRate !== null) {
    input += `, ${formatTokens(totals.cachedInputTokens)} of them read from the prompt cache (${Math.round(usage.cacheHitRate * 100)}%)`;
    if (totals.cacheWriteTokens) {
      input += `; ${formatTokens(totals.cacheWriteTokens)} written to it`;
    }
  }
  lines.push(`${input}.`);
  const reasoning = totals.reasoningTokens > 0 ? `, ${formatTokens(totals.reasoningTokens)} of them reasoning` : '';
  lines.push(`Output: ${formatTokens(totals.outputTokens)} tokens${reasoning}.`);
  const rows = Object.entries(usage.byKind)
    .filter(([, spend]) => spend.calls > 0)
    .map(([kind, spend]): ReportRow => ({ label: CALL_KINDS[kind] ?? kind, value: kindFigures(spend) }));
  return { lines, rows };
}

function kindFigures(spend: Spend): string {
  const figures = [plural(spend.calls, 'call'), `${formatTokens(spend.inputTokens)} in`, `${formatTokens(spend.outputTokens)} out`];
  if (spend.cost !== null) {
    figures.push(money(spend.cost));
  }
  return figures.join(' · ');
}

/** `/context`: the estimate against the window, then a row per part (the bar's segments). */
export function contextReport(context: ContextBreakdown, project: string): ReportView {
  const window = context.contextWindow;
  const percent = (tokens: number): string => `${window > 0 ? Math.round((tokens * 100) / window) : 0}%`;
  const lines = [
    `Context: ${formatTokens(context.estimateTokens)} of ${formatTokens(window)} tokens (${percent(context.estimateTokens)}).`,
    `Compaction starts at ${formatTokens(context.compactAt)} tokens (${percent(context.compactAt)}).`,
  ];
  const total = Math.max(1, context.estimateTokens);
  const rows = segments(context, project).map(
    (segment): ReportRow => ({
      label: segment.label,
      value: `${formatTokens(segment.tokens)} · ${Math.round((segment.tokens * 100) / total)}%`,
      kind: segment.kind,
      share: segment.tokens / total,
      title: segment.title,
    }),
  );
  return { lines, rows };
}

/** The report of a `/cost` or `/context` answer; undefined when it lacks the figures. */
export function reportView(command: string | undefined, result: Record<string, unknown>, project: string): ReportView | undefined {
  if (command === 'cost' && typeof result.totals === 'object' && result.totals !== null && typeof result.byKind === 'object') {
    return costReport(result as unknown as SessionUsage);
  }
  if (command === 'context' && Array.isArray(result.parts) && typeof result.contextWindow === 'number') {
    return contextReport(result as unknown as ContextBreakdown, project);
  }
  return undefined;
}
