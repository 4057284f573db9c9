// How a stored turn ended, under the turn's last message (its `turnEnded`): why a prompt
// has no reply (the task failed), that a turn was cancelled, that it stopped at its turn
// budget, or that the reply was cut off when seri stopped. A chat opened again (a restart,
// a resume) shows what the live notices said at the time.

import type { Notice } from '../chat/chatState';
import type { WireMessage } from '../protocol';
import { inEditorWords } from '../format';
import { Icons, h, icon } from './dom';

/**
 * The row after `message` saying how its turn ended; null when it is not a turn's last
 * message, the turn ended normally, or the chat already says it (a notice of the task's
 * end follows the same message).
 */
export function renderTurnEnd(message: WireMessage, notices: readonly Notice[]): HTMLElement | null {
  const ended = message.turnEnded;
  if (!ended || ended.status === 'done' || notices.some((n) => n.turnEnd && n.afterId === message.id)) {
    return null;
  }
  const words = ended.error ? inEditorWords(ended.error) : '';
  const [level, text] =
    ended.status === 'failed'
      ? ['error', `The task failed: ${words || 'no reason given'}`]
      : ended.status === 'max_turns'
        ? ['warning', words || 'The task used its whole turn budget.']
        : ended.status === 'interrupted'
          ? ['warning', words || 'The reply was cut off: seri stopped before this turn ended.']
          : ['info', 'Stopped.'];
  return h(
    'div',
    { class: `row notice notice-${level} turn-end turn-end-${ended.status}`, role: 'note', 'data-ended-id': String(message.id) },
    ended.status === 'interrupted' ? h('span', { class: 'turn-end-cut', 'aria-hidden': 'true' }, '⋯') : level === 'error' ? icon(Icons.error) : null,
    h('span', { class: 'notice-text' }, text),
  );
}
