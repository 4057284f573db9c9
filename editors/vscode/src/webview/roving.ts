// One tab stop per message for its actions: the buttons on a row (Rewind to here, Fork
// from here, a code block's Copy, Insert, Apply) form one roving group. Tab reaches the
// group's current button and Tab again leaves the message; the arrow keys, Home and End
// move within it.

const BUTTONS = ':scope > .row-actions button, .code-actions button';

/** The rows of `box` that hold action buttons. */
function groups(box: HTMLElement): HTMLElement[] {
  return [...box.querySelectorAll<HTMLElement>('.row')].filter((row) => row.querySelector('.row-actions, .code-actions'));
}

function buttonsOf(row: HTMLElement): HTMLButtonElement[] {
  return [...row.querySelectorAll<HTMLButtonElement>(BUTTONS)];
}

/** Give each row's buttons one tab stop: the one last used, else the first. */
function settle(box: HTMLElement): void {
  for (const row of groups(box)) {
    const buttons = buttonsOf(row);
    const current = buttons.find((button) => button.tabIndex === 0 && button.dataset.roving === 'current') ?? buttons[0];
    for (const button of buttons) {
      button.tabIndex = button === current ? 0 : -1;
      button.dataset.roving = button === current ? 'current' : '';
    }
  }
}

const MOVES: Record<string, (index: number, count: number) => number> = {
  ArrowRight: (i, n) => (i + 1) % n,
  ArrowDown: (i, n) => (i + 1) % n,
  ArrowLeft: (i, n) => (i - 1 + n) % n,
  ArrowUp: (i, n) => (i - 1 + n) % n,
  Home: () => 0,
  End: (_i, n) => n - 1,
};

/** Keep the transcript's action buttons one tab stop per message, as rows come and go. */
export function rovingActions(box: HTMLElement): void {
  let pending = false;
  new MutationObserver(() => {
    if (!pending) {
      pending = true;
      requestAnimationFrame(() => {
        pending = false;
        settle(box);
      });
    }
  }).observe(box, { childList: true, subtree: true });
  settle(box);
  box.addEventListener('keydown', (event) => {
    const button = (event.target as HTMLElement).closest<HTMLButtonElement>('.row-actions button, .code-actions button');
    const move = MOVES[event.key];
    const row = button?.closest<HTMLElement>('.row');
    if (!button || !move || !row) {
      return;
    }
    const buttons = buttonsOf(row);
    const index = buttons.indexOf(button);
    if (index < 0) {
      return;
    }
    event.preventDefault();
    const next = buttons[move(index, buttons.length)];
    for (const other of buttons) {
      other.tabIndex = other === next ? 0 : -1;
      other.dataset.roving = other === next ? 'current' : '';
    }
    next.focus();
  });
}
