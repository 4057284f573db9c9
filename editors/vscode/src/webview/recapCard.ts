// The recap that stands for a compacted part of the conversation, as a card: goal,
// progress, blockers, next steps, and the files read and modified.

import { dividerText } from '../chat/compactedRecord';
import type { Recap, WireMessage } from '../protocol';
import { Icons, h, icon } from './dom';
import { forkButton, forkable } from './forkAction';
import { renderMarkdown } from './markdown';

/** A recap message as its card (its text as it is, from a server that sent no fields). */
export function renderRecap(message: WireMessage): HTMLElement {
  const recap: Recap | undefined = message.recap;
  const card = h('section', { class: 'row recap', 'data-id': String(message.id), 'aria-label': 'Recap', ...forkable(message) });
  if (recap) {
    // What the recap replaced, and a button that opens the record of those turns.
    card.append(
      h(
        'div',
        { class: 'compaction-divider', role: 'separator', 'aria-label': dividerText(recap) },
        h('span', { class: 'compaction-divider-text' }, dividerText(recap)),
        h(
          'button',
          { class: 'open-compacted secondary', type: 'button', title: 'Open the recorded tool calls, results and edits of the compacted turns' },
          'Show what happened',
        ),
      ),
    );
  }
  card.append(forkButton(message.id));
  // (How many messages it replaced: the divider says.)
  card.append(h('div', { class: 'recap-head' }, icon(Icons.recap), h('span', { class: 'recap-title' }, 'Conversation compacted')));
  if (!recap) {
    const body = h('div', { class: 'markdown' });
    body.innerHTML = renderMarkdown(message.content);
    card.append(body);
    return card;
  }
  const fields: [string, string][] = [
    ['Goal', recap.goal],
    ['Progress', recap.progress],
    ['Blockers', recap.blockers],
    ['Next steps', recap.nextSteps],
  ];
  const list = h('dl', { class: 'recap-fields' });
  for (const [label, value] of fields) {
    const body = h('dd', { class: 'markdown' });
    body.innerHTML = renderMarkdown(value.trim() || '(none)');
    list.append(h('dt', {}, label), body);
  }
  card.append(list);
  for (const [label, paths] of [
    ['Read', recap.read],
    ['Modified', recap.modified],
  ] as const) {
    if (paths.length > 0) {
      card.append(
        h(
          'div',
          { class: 'recap-paths' },
          h('span', { class: 'recap-paths-label' }, `${label}:`),
          ...paths.map((p) => h('a', { class: 'chip file-link', href: '#', 'data-path': p, title: `Open ${p}` }, p)),
        ),
      );
    }
  }
  return card;
}
