// The chat's header: the session's title (and where a fork comes from), its model (a
// button to choose another), the context use
// with its bar, what the session's model calls cost (and the prompt cache's share of the
// input), and the session menu.

import { sessionTitle } from '../chat/promptText';
import type { FromWebview, HeaderState } from '../chat/webviewProtocol';
import { cacheSentence, cacheWords, contextPercent, formatTokens, shortTokens, spendSentence, spendWords } from '../format';
import { ContextBar } from './contextBar';
import { h } from './dom';
import { SessionMenu } from './sessionMenu';

export class Header {
  readonly element: HTMLElement;
  private readonly title = h('div', { class: 'title', id: 'session-title' }, 'Seri');
  private readonly subtitle = h('span', { class: 'subtitle-text', id: 'context-use' });
  // The session's model; a click opens the picker (Seri: Select Model...).
  private readonly model = h('button', { class: 'model-button', id: 'session-model', type: 'button', hidden: true });
  private readonly spend = h('span', { class: 'spend', id: 'session-spend', hidden: true });
  private readonly cache = h('span', { class: 'cache', id: 'session-cache', hidden: true });
  private readonly contextBar: ContextBar;
  private readonly sessionMenu: SessionMenu;

  constructor(post: (message: FromWebview) => void) {
    this.contextBar = new ContextBar(() => post({ type: 'menu', action: 'compact' }));
    this.sessionMenu = new SessionMenu(post);
    this.model.addEventListener('click', () => post({ type: 'menu', action: 'model' }));
    this.element = h(
      'header',
      { class: 'header' },
      h('div', { class: 'title-block' }, this.title, h('div', { class: 'subtitle' }, this.model, this.subtitle, h('span', { class: 'spend-group' }, this.spend, this.cache)), this.contextBar.meter),
      this.sessionMenu.button,
      this.sessionMenu.menu,
      this.contextBar.details,
    );
  }

  update(next: HeaderState): void {
    const session = next.session;
    this.title.textContent = session ? sessionTitle(session.title) : 'Seri';
    const forkedFrom = next.forkOrigin ? `\nForked from ${originName(next)}` : '';
    this.title.title = session ? `${sessionTitle(session.title)} (${session.id})${forkedFrom}` : '';
    this.updateUsage(next);
    const model = session?.model ?? '';
    this.model.textContent = model;
    this.model.title = model ? `Model: ${model} (from the next prompt: click to choose another)` : '';
    this.model.setAttribute('aria-label', model ? `Model ${model}; choose another` : 'Choose a model');
    this.model.hidden = model === '';
    this.model.disabled = next.serverState !== 'running';
    this.spend.textContent = spendWords(session?.spend);
    this.spend.title = spendSentence(session?.spend);
    this.spend.hidden = this.spend.textContent === '';
    // Beside the spend: the share of the input read from the provider's prompt cache.
    this.cache.textContent = this.spend.hidden ? '' : cacheWords(session?.spend);
    this.cache.title = cacheSentence(session?.spend);
    this.cache.hidden = this.cache.textContent === '';
    this.sessionMenu.disabled = next.serverState !== 'running';
  }

  /** "12% · 15k / 128k tokens", then the context bar (its parts, the compaction mark). */
  private updateUsage(next: HeaderState): void {
    if (!next.usage || !next.session) {
      this.subtitle.textContent = '';
      this.contextBar.update(null, null, '');
      return;
    }
    const { estimateTokens, contextWindow } = next.usage;
    const percent = contextPercent(estimateTokens, contextWindow);
    this.subtitle.textContent = `${percent}% · ${shortTokens(estimateTokens)} / ${shortTokens(contextWindow)} tokens`;
    this.subtitle.title = `${formatTokens(estimateTokens)} of ${formatTokens(contextWindow)} tokens`;
    this.contextBar.update(next.usage, next.context, next.session.project);
  }
}

/** “The parent’s title”, or its id when its title could not be read (the state has a fork origin). */
export function originName(next: HeaderState): string {
  const origin = next.forkOrigin!;
  return origin.title ? `“${sessionTitle(origin.title)}”` : `session ${origin.id}`;
}
