// Where a message goes among those shown: the one rule the chat model and the webview's
// transcript share, so that what the chat shows never depends on the order in which
// notifications and page reads happened to arrive.

import type { WireMessage } from '../protocol';

/**
 * The index at which message `id` goes in `messages` (oldest first): after the last one
 * numbered below it. Counted from the end, as a page's recap comes first although it is
 * numbered after the messages it kept.
 */
export function placeOf(messages: readonly WireMessage[], id: number): number {
  let index = messages.length;
  while (index > 0 && messages[index - 1].id > id) {
    index--;
  }
  return index;
}
