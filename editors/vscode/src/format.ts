// Small formatting rules shared by the status bar, the QuickPick and the chat page.

import type { CompactedParams, RewindResult, Spend } from './protocol';

/** `estimateTokens / contextWindow` as a whole percentage (at least 1 once anything is used). */
export function contextPercent(estimateTokens: number, contextWindow: number): number {
  if (contextWindow <= 0 || estimateTokens <= 0) {
    return 0;
  }
  return Math.max(1, Math.round((estimateTokens * 100) / contextWindow));
}

export function formatTokens(tokens: number): string {
  return tokens.toLocaleString('en-US');
}

/** A token count in a few characters: 740, 9.1k, 128k, 1.2M. */
export function shortTokens(tokens: number): string {
  if (tokens < 1000) {
    return String(Math.round(tokens));
  }
  if (tokens < 10_000) {
    return `${(tokens / 1000).toFixed(1).replace(/\.0$/, '')}k`;
  }
  if (tokens < 1_000_000) {
    return `${Math.round(tokens / 1000)}k`;
  }
  return `${(tokens / 1_000_000).toFixed(1).replace(/\.0$/, '')}M`;
}

export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** A cost in USD as the server's `/cost` writes it: `$0.0123`, `$1.50`. */
export function money(cost: number): string {
  return cost >= 1
    ? `$${cost.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`
    : `$${cost.toFixed(4)}`;
}

/** A session's spend in a few words: its cost, else its tokens; '' before any model call. */
export function spendWords(spend: Spend | undefined): string {
  if (!spend || spend.calls <= 0 || (spend.cost === null && spend.inputTokens + spend.outputTokens === 0)) {
    return ''; // nothing called yet, or a provider that reports neither cost nor tokens
  }
  return spend.cost !== null ? money(spend.cost) : `${formatTokens(spend.inputTokens + spend.outputTokens)} tokens`;
}

/**
 * The spend in a sentence, for tooltips: "Spend: $0.0213 over 9 model calls (48,210 input
 * tokens, 40,960 of them cached; 1,830 output)."; '' before any model call.
 */
export function spendSentence(spend: Spend | undefined): string {
  const words = spendWords(spend);
  if (!spend || !words) {
    return '';
  }
  const cached = spend.cachedInputTokens > 0 ? `, ${formatTokens(spend.cachedInputTokens)} of them cached` : '';
  const counts = `${formatTokens(spend.inputTokens)} input tokens${cached}; ${formatTokens(spend.outputTokens)} output`;
  const noCost = spend.cost === null ? ' The provider reported no cost.' : '';
  return `Spend: ${words} over ${plural(spend.calls, 'model call')} (${counts}).${noCost}`;
}

/**
 * The share of the input the provider read from its prompt cache, in whole percent; null
 * before any input, and for a provider that reported no cache read or write.
 */
export function cachePercent(spend: Spend | undefined): number | null {
  if (!spend || spend.inputTokens <= 0 || (spend.cachedInputTokens <= 0 && (spend.cacheWriteTokens ?? 0) <= 0)) {
    return null;
  }
  return Math.round((spend.cachedInputTokens * 100) / spend.inputTokens);
}

/**
 * The cache beside the spend in the chat's narrow header: "cache 85%" (`cacheSentence` on
 * hover says of what); '' when `cachePercent` is null.
 */
export function cacheWords(spend: Spend | undefined): string {
  const percent = cachePercent(spend);
  return percent === null ? '' : `cache ${percent}%`;
}

/**
 * The cache in a sentence, for tooltips: "Prompt cache: 85% of the input read from it
 * (40,960 of 48,210 tokens); 6,144 tokens written to it."; '' when `cachePercent` is null.
 */
export function cacheSentence(spend: Spend | undefined): string {
  const percent = cachePercent(spend);
  if (!spend || percent === null) {
    return '';
  }
  const read = `${percent}% of the input read from it (${formatTokens(spend.cachedInputTokens)} of ${formatTokens(spend.inputTokens)} tokens)`;
  const written = spend.cacheWriteTokens ? `; ${formatTokens(spend.cacheWriteTokens)} tokens written to it` : '';
  return `Prompt cache: ${read}${written}.`;
}

const COMPACTED_BY: Record<CompactedParams['trigger'], string> = {
  auto: 'Context compacted automatically',
  manual: 'Context compacted',
  overflow: 'Context compacted (the request was too long for the model)',
};

/**
 * What a compaction did, in numbers: "Context compacted automatically: 48 → 7 messages,
 * 70,120 → 18,340 tokens." (a server that sends no figures: how many were summarised).
 */
export function compactionSummary(params: CompactedParams): string {
  const head = COMPACTED_BY[params.trigger] ?? COMPACTED_BY.manual;
  const { messagesBefore, messagesAfter, tokensBefore, tokensAfter } = params;
  if (messagesBefore === undefined || messagesAfter === undefined || tokensBefore === undefined || tokensAfter === undefined) {
    return `${head}: ${plural(params.evicted, 'message')} summarised into a recap.`;
  }
  return `${head}: ${formatTokens(messagesBefore)} → ${formatTokens(messagesAfter)} messages, ${formatTokens(tokensBefore)} → ${formatTokens(tokensAfter)} tokens.`;
}

/** "3 minutes ago", "yesterday", "2 weeks ago". */
export function relativeTime(iso: string, now: number = Date.now()): string {
  const then = Date.parse(iso);
  if (Number.isNaN(then)) {
    return iso;
  }
  const format = new Intl.RelativeTimeFormat('en', { numeric: 'auto' });
  const steps: [number, Intl.RelativeTimeFormatUnit][] = [
    [60, 'second'],
    [60, 'minute'],
    [24, 'hour'],
    [7, 'day'],
    [4.35, 'week'],
    [12, 'month'],
    [Number.POSITIVE_INFINITY, 'year'],
  ];
  let value = (now - then) / 1000;
  for (const [size, unit] of steps) {
    if (Math.abs(value) < size) {
      return format.format(-Math.round(value), unit);
    }
    value /= size;
  }
  return iso;
}

/**
 * The heading of a `kind: "check"` message: "Checks failed: tests, lint", the names read
 * from the server's text, which has one "NAME: `COMMAND` ..." line per failing check (and
 * each check's output in a fence, skipped: it may hold such lines too).
 */
export function checksHeading(content: string): string {
  const names: string[] = [];
  let fence = ''; // the fence of the check output being skipped, if any
  for (const line of content.split('\n')) {
    const opener = /^`{3,}/.exec(line)?.[0];
    if (fence) {
      fence = line.trimEnd() === fence ? '' : fence;
    } else if (opener) {
      fence = opener;
    } else {
      const name = /^([^`:]+): `/.exec(line)?.[1];
      if (name) {
        names.push(name.trim());
      }
    }
  }
  return names.length > 0 ? `Checks failed: ${names.join(', ')}` : 'Checks failed';
}

/** What a running task waits for (`seri/status`), in the words of the chat's working line. */
export interface ActivityLine {
  state: string;
  detail?: string;
  attempt?: number;
  maxAttempts?: number;
  delay?: number;
}

/**
 * The working line: "Waiting for the model…", "Retry 1/4 in 2 s: HTTP 503: busy",
 * "Running edit src/app.py…", "Waiting for your approval". A question on screen wins over
 * the state the server last sent, which may lag behind it. `retrySent`: the retry's
 * delay is over, its call is in flight (the server says nothing new until it ends).
 */
export function describeActivity(activity: ActivityLine | null, waitingForApproval = false, retrySent = false): string {
  if (waitingForApproval || activity?.state === 'approval') {
    // The question's card says what about.
    return 'Waiting for your approval';
  }
  const detail = activity?.detail ? oneLine(activity.detail) : '';
  switch (activity?.state) {
    case 'model':
      return 'Waiting for the model…';
    case 'retrying': {
      const count = activity.attempt !== undefined && activity.maxAttempts !== undefined ? ` ${activity.attempt}/${activity.maxAttempts}` : '';
      if (retrySent) {
        return `Waiting for the model (retry${count})…`;
      }
      const delay = activity.delay !== undefined ? ` in ${Math.max(1, Math.round(activity.delay))} s` : '';
      return `Retry${count}${delay}${detail ? `: ${detail}` : ''}`;
    }
    case 'tool':
      if (detail.startsWith('run ')) {
        return `Running \`${detail.slice(4)}\`…`; // the command line, not "run" twice
      }
      return detail ? `Running ${detail}…` : 'Running a tool…';
    case 'compacting':
      return 'Compacting the conversation…';
    case 'checks':
      return detail ? `Running the checks (${detail})…` : 'Running the checks…';
    default:
      return 'Working…';
  }
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** The server's command names in its messages, and the palette commands that do the same. */
const EDITOR_COMMANDS: [RegExp, string][] = [
  [/\bseri\.cancel\b/g, 'Seri: Stop'],
  [/\bseri\.session\.list\b/g, 'Seri: Resume Session...'],
  [/\bseri\.session\.new\b/g, 'Seri: New Session'],
  [/\bseri\.compact\b/g, 'Seri: Compact Context...'],
  [/\bseri\.rewind\b/g, 'Seri: Rewind...'],
  [/\bseri\.clear\b/g, 'Seri: Clear Conversation'],
  [/\bseri\.maxTurns\b/g, 'Seri: Set Max Turns...'],
];

/**
 * A server message as a VS Code user reads it: "cancel it (seri.cancel) first" names the
 * palette command instead, "cancel it (“Seri: Stop”) first".
 */
export function inEditorWords(message: string): string {
  return EDITOR_COMMANDS.reduce((text, [name, command]) => text.replace(name, `“${command}”`), message);
}

/** The files a rewind left alone or could not restore, in one sentence each; '' if none. */
export function rewindProblems(result: Partial<RewindResult>): string {
  const parts: string[] = [];
  if (result.conflicts && result.conflicts.length > 0) {
    parts.push(`Left alone, changed since seri wrote them: ${result.conflicts.join(', ')}.`);
  }
  for (const failure of result.failed ?? []) {
    parts.push(`Could not restore ${failure.path}: ${failure.reason}.`);
  }
  return parts.join(' ');
}
