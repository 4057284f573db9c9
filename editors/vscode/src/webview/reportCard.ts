// `/cost` and `/context` in the transcript, laid out for a narrow sidebar: the report's
// sentences (wrapped like prose), then its rows, each a name that wraps and figures that
// do not; a part of the context has its colour and a bar of its share.

import type { ReportView } from '../chat/reports';
import { BILLED_KIND, COLOURED_KINDS } from '../chat/contextParts';
import { h } from './dom';

function colourClass(kind: string): string {
  return kind === BILLED_KIND ? 'part-billed' : COLOURED_KINDS.has(kind) ? `part-${kind}` : 'part-other';
}

export function renderReport(view: ReportView, attributes: Record<string, string>): HTMLElement {
  const rows = view.rows.map((row) => {
    const name = h('span', { class: 'report-name', title: row.title ?? row.label });
    if (row.kind !== undefined) {
      name.append(h('span', { class: `swatch ${colourClass(row.kind)}` }));
    }
    name.append(row.label);
    const item = h('li', { class: 'report-row', 'data-kind': row.kind }, name, h('span', { class: 'report-value' }, row.value));
    if (row.share !== undefined) {
      const fill = h('span', { class: `share-fill ${colourClass(row.kind ?? '')}` });
      fill.style.width = `${Math.min(100, Math.max(0, row.share * 100)).toFixed(1)}%`;
      item.append(h('span', { class: 'share report-share' }, fill));
    }
    return item;
  });
  return h(
    'div',
    { class: 'row notice notice-report report-card', ...attributes },
    ...view.lines.map((line, index) => h('div', { class: index === 0 ? 'report-line report-head' : 'report-line' }, line)),
    rows.length > 0 ? h('ul', { class: 'report-rows' }, ...rows) : null,
  );
}
