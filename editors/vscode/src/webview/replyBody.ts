// A reply's text (or its thinking) as the chat draws it. The reply that streams and the
// reply once stored are the same element with the same style (`.markdown`), so that
// nothing moves or changes size when the stream ends.

import { h } from './dom';
import { renderMarkdown } from './markdown';

/** `text` (model-written markdown) rendered in a `.markdown` block; `extra` adds classes. */
export function markdownBody(text: string, extra = ''): HTMLElement {
  const body = h('div', { class: extra ? `markdown ${extra}` : 'markdown' });
  body.innerHTML = renderMarkdown(text);
  return body;
}
