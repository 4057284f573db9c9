// The user's prompt as a row: the words typed, with paths linked, and what was attached
// as chips.

import { ContextBlock, Mention, mentionLabel, splitPrompt } from '../chat/promptText';
import type { WireMessage } from '../protocol';
import { Icons, h, icon } from './dom';
import { forkButton, forkable } from './forkAction';
import { textWithPaths } from './paths';

/** The user's prompt: their words, then what they attached as chips (text folded in). */
export function renderPrompt(message: WireMessage): HTMLElement {
  const { text, mentions, blocks } = splitPrompt(message.content);
  const bubble = h('div', { class: 'bubble' }, h('div', { class: 'prompt-text' }, ...textWithPaths(text)));
  if (mentions.length > 0 || blocks.length > 0) {
    bubble.append(h('div', { class: 'chips prompt-attachments' }, ...mentions.map(mentionChip), ...blocks.map(blockChip)));
  }
  return h('div', { class: 'row user', 'data-id': String(message.id), 'data-role': 'user', ...forkable(message) }, forkButton(message.id, true), bubble);
}

function mentionChip(mention: Mention): HTMLElement {
  return h(
    'span',
    { class: 'chip attachment path-candidate', 'data-path': mention.path, 'data-line': mention.startLine?.toString() },
    icon(Icons.file),
    mentionLabel(mention),
  );
}

/** Attached text: a chip that opens to show it. */
function blockChip(block: ContextBlock): HTMLElement {
  return h(
    'details',
    { class: 'context-block' },
    h('summary', { class: 'chip attachment', title: `Attached text of ${mentionLabel(block)}` }, icon(Icons.snippet), mentionLabel(block)),
    h('pre', { class: 'context-text' }, block.text),
  );
}
