// The header's session menu: a button that opens a list of the session commands; each
// entry runs the palette command of the same name in the extension.

import type { FromWebview, MenuAction } from '../chat/webviewProtocol';
import { Icons, h, icon } from './dom';

/** Each menu entry's label, in the menu's order (every action has one: the type says so). */
const MENU: Record<MenuAction, string> = {
  new: 'New session',
  resume: 'Resume session…',
  search: 'Search sessions…',
  continue: 'Continue last session',
  rename: 'Rename session…',
  compact: 'Compact context…',
  clear: 'Clear conversation',
  maxTurns: 'Set max turns…',
  model: 'Select model…',
  rewind: 'Rewind…',
  fork: 'Fork session',
  export: 'Export session…',
  import: 'Import session…',
};

export class SessionMenu {
  readonly button: HTMLButtonElement;
  readonly menu: HTMLElement;

  constructor(post: (message: FromWebview) => void) {
    this.button = h(
      'button',
      { class: 'icon-button', id: 'session-menu-button', type: 'button', title: 'Session menu', 'aria-label': 'Session menu', 'aria-haspopup': 'menu', 'aria-expanded': 'false' },
      icon(Icons.menu),
    );
    this.menu = h(
      'div',
      { class: 'menu', id: 'session-menu', role: 'menu', hidden: true },
      ...Object.entries(MENU).map(([action, label]) => h('button', { class: 'menu-item', type: 'button', role: 'menuitem', 'data-action': action }, label)),
    );
    const menu = this.menu;
    const menuButton = this.button;
    menuButton.addEventListener('click', (event) => {
      event.stopPropagation();
      menu.hidden = !menu.hidden;
      menuButton.setAttribute('aria-expanded', String(!menu.hidden));
      if (!menu.hidden) {
        menu.querySelector<HTMLButtonElement>('.menu-item')?.focus();
      }
    });
    menu.addEventListener('click', (event) => {
      const item = (event.target as HTMLElement).closest<HTMLElement>('.menu-item');
      if (item?.dataset.action) {
        this.close();
        post({ type: 'menu', action: item.dataset.action as MenuAction });
      }
    });
    menu.addEventListener('keydown', (event) => {
      const items = [...menu.querySelectorAll<HTMLButtonElement>('.menu-item')];
      const index = items.indexOf(document.activeElement as HTMLButtonElement);
      if (event.key === 'Escape') {
        this.close();
        menuButton.focus();
      } else if (event.key === 'ArrowDown' || event.key === 'ArrowUp') {
        event.preventDefault();
        const step = event.key === 'ArrowDown' ? 1 : -1;
        items[(index + step + items.length) % items.length]?.focus();
      }
    });
    document.addEventListener('click', (event) => {
      if (!menu.hidden && !menu.contains(event.target as Node)) {
        this.close();
      }
    });
  }

  /** No session commands while the server does not run. */
  set disabled(disabled: boolean) {
    this.button.disabled = disabled;
  }

  private close(): void {
    this.menu.hidden = true;
    this.button.setAttribute('aria-expanded', 'false');
  }
}
