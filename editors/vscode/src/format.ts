// Small formatting rules shared by the status bar, the QuickPick and the chat page.

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

export function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
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
