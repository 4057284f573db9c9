// The header's context bar: what fills the context window, one coloured segment per part
// (`seri.session.context`), with a mark where automatic compaction starts; hovering or
// clicking it opens the breakdown (each part with its tokens, the window, the compaction
// point). Until the server has said what the parts are, the bar is one plain fill.

import { BILLED_KIND, COLOURED_KINDS, Segment, segments } from '../chat/contextParts';
import type { ContextBreakdown, Usage } from '../protocol';
import { contextPercent, formatTokens } from '../format';
import { h } from './dom';

function colourClass(kind: string): string {
  return kind === BILLED_KIND ? 'part-billed' : COLOURED_KINDS.has(kind) ? `part-${kind}` : 'part-other';
}

function percentOf(tokens: number, whole: number): string {
  return `${Math.min(100, (tokens * 100) / Math.max(1, whole))}%`;
}

/** Draw `shown` into `bar` (a flex row), each segment as wide as its share of `window`. */
function drawSegments(bar: HTMLElement, shown: Segment[], window: number): void {
  bar.replaceChildren(
    ...shown.map((segment) => {
      const element = h('span', {
        class: `segment ${colourClass(segment.kind)}`,
        'data-kind': segment.kind,
        title: `${segment.label}: ${formatTokens(segment.tokens)} tokens`,
      });
      element.style.width = percentOf(segment.tokens, window);
      return element;
    }),
  );
}

export class ContextBar {
  /** The bar in the header: a button that opens the breakdown. */
  readonly meter: HTMLButtonElement;
  /** The breakdown, under the header. */
  readonly details: HTMLElement;
  private readonly fill: HTMLElement;
  private readonly mark: HTMLElement;
  private readonly summary: HTMLElement;
  private readonly bigFill: HTMLElement;
  private readonly bigMark: HTMLElement;
  private readonly list: HTMLElement;
  private readonly notes: HTMLElement;
  // Opened by a click (stays open) or by hovering (closes when the pointer leaves).
  private pinned = false;
  private hoverTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly compactNow: () => void) {
    this.fill = h('span', { class: 'meter-fill', id: 'context-segments' });
    this.mark = h('span', { class: 'meter-mark', id: 'compact-mark' });
    this.meter = h(
      'button',
      { class: 'meter', id: 'context-meter', type: 'button', hidden: true, 'aria-haspopup': 'dialog', 'aria-expanded': 'false', 'aria-controls': 'context-details' },
      this.fill,
      this.mark,
    );
    this.summary = h('div', { class: 'details-summary', id: 'context-summary' });
    this.bigFill = h('span', { class: 'meter-fill' });
    this.bigMark = h('span', { class: 'meter-mark' });
    this.list = h('table', { class: 'details-parts', id: 'context-parts' });
    this.notes = h('div', { class: 'details-notes' });
    const compact = h('button', { class: 'secondary', type: 'button', id: 'context-compact' }, 'Compact now…');
    compact.addEventListener('click', () => {
      this.close();
      this.compactNow();
    });
    this.details = h(
      'div',
      { class: 'context-details', id: 'context-details', role: 'dialog', 'aria-label': 'What fills the context', hidden: true },
      h('div', { class: 'details-title' }, 'What fills the context'),
      this.summary,
      h('div', { class: 'meter big' }, this.bigFill, this.bigMark),
      this.list,
      this.notes,
      h('div', { class: 'details-actions' }, compact),
    );

    this.meter.addEventListener('click', (event) => {
      event.stopPropagation();
      if (this.pinned) {
        this.close();
      } else {
        this.open(true);
      }
    });
    for (const element of [this.meter, this.details]) {
      element.addEventListener('mouseenter', () => {
        clearTimeout(this.hoverTimer);
        if (this.details.hidden) {
          this.hoverTimer = setTimeout(() => this.open(false), 250);
        }
      });
      element.addEventListener('mouseleave', () => {
        clearTimeout(this.hoverTimer);
        if (!this.pinned) {
          this.hoverTimer = setTimeout(() => this.close(), 300);
        }
      });
    }
    this.details.addEventListener('click', (event) => event.stopPropagation());
    document.addEventListener('click', () => this.close());
    document.addEventListener('keydown', (event) => {
      if (event.key === 'Escape' && !this.details.hidden) {
        this.close();
        this.meter.focus();
      }
    });
  }

  /** Draw the use of the open session (`usage`), split into its parts when `context` says them. */
  update(usage: Usage | null, context: ContextBreakdown | null, project: string): void {
    const window = context?.contextWindow ?? usage?.contextWindow ?? 0;
    const estimate = context?.estimateTokens ?? usage?.estimateTokens ?? 0;
    const compactAt = context?.compactAt ?? usage?.compactAt;
    this.meter.hidden = !usage || window <= 0;
    if (this.meter.hidden) {
      this.close();
      return;
    }
    const shown = context ? segments(context, project) : [];
    const drawn: Segment[] = shown.length > 0 ? shown : [{ kind: 'used', label: 'Used', title: '', tokens: estimate }];
    drawSegments(this.fill, drawn, window);
    drawSegments(this.bigFill, drawn, window);
    const where = compactAt !== undefined ? percentOf(compactAt, window) : undefined;
    for (const mark of [this.mark, this.bigMark]) {
      mark.hidden = where === undefined;
      mark.style.left = where ?? '0%';
    }
    const near = compactAt !== undefined && estimate >= compactAt * 0.8;
    this.meter.classList.toggle('near', near);
    const compaction =
      compactAt !== undefined ? ` Compaction starts at ${formatTokens(compactAt)} tokens (${contextPercent(compactAt, window)}%).` : '';
    const used = `${formatTokens(estimate)} of ${formatTokens(window)} tokens used (${contextPercent(estimate, window)}%).`;
    this.meter.setAttribute('aria-label', `${used}${compaction} Show what fills the context.`);
    this.summary.textContent = `${used}${compaction}`;
    this.drawList(shown, estimate);
    this.drawNotes(context);
  }

  private drawList(shown: Segment[], estimate: number): void {
    if (shown.length === 0) {
      this.list.replaceChildren(h('tr', {}, h('td', { class: 'details-empty' }, 'The parts are not known yet.')));
      return;
    }
    this.list.replaceChildren(
      ...shown.map((segment) => {
        const share = h('span', { class: `share-fill ${colourClass(segment.kind)}` });
        share.style.width = percentOf(segment.tokens, estimate);
        return h(
          'tr',
          { class: 'part', 'data-kind': segment.kind },
          h('td', { class: 'part-name', title: segment.title }, h('span', { class: `swatch ${colourClass(segment.kind)}` }), segment.label),
          h('td', { class: 'part-share' }, h('span', { class: 'share' }, share)),
          h('td', { class: 'part-tokens' }, formatTokens(segment.tokens)),
          h('td', { class: 'part-percent' }, `${Math.round((segment.tokens * 100) / Math.max(1, estimate))}%`),
        );
      }),
    );
  }

  private drawNotes(context: ContextBreakdown | null): void {
    const lines: string[] = [];
    if (context) {
      lines.push(
        `Compaction summarises the older messages into a recap; the newest ones (up to ${formatTokens(context.keepTokens)} tokens) stay as they are.`,
      );
    }
    this.notes.replaceChildren(...lines.map((line) => h('div', {}, line)));
  }

  private open(pinned: boolean): void {
    this.pinned = this.pinned || pinned;
    this.details.hidden = false;
    this.meter.setAttribute('aria-expanded', 'true');
  }

  close(): void {
    clearTimeout(this.hoverTimer);
    this.pinned = false;
    this.details.hidden = true;
    this.meter.setAttribute('aria-expanded', 'false');
  }
}
