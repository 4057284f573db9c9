// The change a write question asks about, as diff lines for the approval card: an edit's
// replaced text and its replacement, a new file's lines, or an overwrite's changed lines
// (the lines both versions share at the start and the end left out). No DOM: unit-tested.

import type { WriteQuestion } from '../protocol';

export interface HunkLine {
  sign: '-' | '+' | ' ';
  text: string;
}

function lines(text: string): string[] {
  if (text === '') {
    return [];
  }
  const split = text.split('\n');
  return text.endsWith('\n') ? split.slice(0, -1) : split;
}

/** The lines of the change `params` proposes; empty when the question carries no text. */
export function hunkLines(params: WriteQuestion): HunkLine[] {
  if (params.action === 'edit' && params.oldText !== undefined && params.newText !== undefined) {
    return [...lines(params.oldText).map((text): HunkLine => ({ sign: '-', text })), ...lines(params.newText).map((text): HunkLine => ({ sign: '+', text }))];
  }
  if (params.proposed === undefined) {
    return [];
  }
  const after = lines(params.proposed);
  if (params.current === undefined || params.current === null) {
    return after.map((text) => ({ sign: '+', text }));
  }
  const before = lines(params.current);
  let start = 0;
  while (start < before.length && start < after.length && before[start] === after[start]) {
    start++;
  }
  let end = 0;
  while (end < before.length - start && end < after.length - start && before[before.length - 1 - end] === after[after.length - 1 - end]) {
    end++;
  }
  return [
    ...before.slice(start, before.length - end).map((text): HunkLine => ({ sign: '-', text })),
    ...after.slice(start, after.length - end).map((text): HunkLine => ({ sign: '+', text })),
  ];
}
