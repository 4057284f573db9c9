// A notice in the transcript (not stored): how a task ended, a refused command, a
// report, or what a compaction did, with its Retry or Show recap button.

import type { Notice } from '../chat/chatState';
import { plural } from '../format';
import { Icons, h, icon } from './dom';
import { renderReport } from './reportCard';

// Paths a compaction notice lists before "and N more".
const NOTICE_PATHS = 8;

/** The row of `notice`. */
export function renderNotice(notice: Notice): HTMLElement {
  const attributes = { role: notice.level === 'error' ? 'alert' : 'status', 'data-notice-id': String(notice.id) };
  if (notice.report === true) {
    // From a server that sent only its text: aligned columns and text bars, as written.
    return h('div', { class: 'row notice notice-report', ...attributes }, h('pre', { class: 'report-text' }, notice.text));
  }
  if (notice.report) {
    return renderReport(notice.report, attributes);
  }
  const row = h(
    'div',
    { class: `row notice notice-${notice.level}`, ...attributes },
    h('span', { class: 'notice-text' }, notice.text),
    notice.retry
      ? h('button', { class: 'notice-retry secondary', type: 'button', title: 'Send the prompt again', 'data-notice-id': String(notice.id) }, 'Retry')
      : null,
  );
  const compaction = notice.compaction;
  if (compaction) {
    row.classList.add('notice-compaction');
    row.prepend(icon(Icons.recap));
    row.append(
      h(
        'button',
        { class: 'notice-show-recap secondary', type: 'button', 'data-recap-id': String(compaction.recapId ?? ''), title: 'Scroll to the recap' },
        'Show recap',
      ),
    );
    for (const [label, paths] of [
      ['Read', compaction.read],
      ['Modified', compaction.modified],
    ] as const) {
      if (paths.length > 0) {
        const more = paths.length - NOTICE_PATHS;
        row.append(
          h(
            'div',
            { class: 'recap-paths notice-paths' },
            h('span', { class: 'recap-paths-label' }, `${label}:`),
            ...paths.slice(0, NOTICE_PATHS).map((p) => h('a', { class: 'chip file-link', href: '#', 'data-path': p, title: `Open ${p}` }, p)),
            more > 0 ? h('span', { class: 'recap-paths-label' }, `and ${plural(more, 'more')}`) : null,
          ),
        );
      }
    }
  }
  return row;
}
