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
