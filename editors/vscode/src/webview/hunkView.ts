// The approval card's hunk: the first lines of the change, the rest behind "Show all".

import { HunkLine, hunkLines } from '../chat/hunk';
import { plural } from '../format';
import type { WriteQuestion } from '../protocol';
import { h } from './dom';

/** Lines shown before the card folds the rest. */
export const HUNK_PREVIEW_LINES = 8;

function line(entry: HunkLine): HTMLElement {
  const kind = entry.sign === '-' ? 'hunk-old' : entry.sign === '+' ? 'hunk-new' : 'hunk-same';
  return h('div', { class: `hunk-line ${kind}` }, h('span', { class: 'hunk-sign', 'aria-hidden': 'true' }, entry.sign), entry.text);
}

/** The change as diff lines (null when the question carries none). */
export function renderHunk(params: WriteQuestion): HTMLElement | null {
  const entries = hunkLines(params);
  if (entries.length === 0) {
    return null;
  }
  const block = h('pre', { class: 'hunk', 'aria-label': 'The change' }, ...entries.slice(0, HUNK_PREVIEW_LINES).map(line));
  const rest = entries.slice(HUNK_PREVIEW_LINES);
  if (rest.length === 0) {
    return block;
  }
  const more = h('pre', { class: 'hunk hunk-rest' }, ...rest.map(line));
  return h('div', { class: 'hunk-box' }, block, h('details', { class: 'hunk-more' }, h('summary', {}, `Show ${plural(rest.length, 'more line')}`), more));
}
