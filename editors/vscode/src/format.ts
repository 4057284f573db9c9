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
