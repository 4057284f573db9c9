// "Fork from Here" on a message's row: a button on hover, and an entry of the view's
// context menu.

import type { WireMessage } from '../protocol';
import { Icons, h, icon } from './dom';

/** Where the view's context menu offers "Fork from Here" (`webview/context` in package.json). */
export function forkable(message: WireMessage): Record<string, string> {
  return { 'data-vscode-context': JSON.stringify({ webviewSection: 'message', messageId: message.id }) };
}

/** The hover action of a prompt, a reply or a recap. */
export function forkButton(id: number): HTMLElement {
  return h(
    'div',
    { class: 'row-actions' },
    h(
      'button',
      {
        class: 'icon-button fork-here',
        type: 'button',
        'data-message-id': String(id),
        title: 'Fork from here: continue in a new session holding the conversation up to this message (this one stays as it is)',
        'aria-label': 'Fork from here',
      },
      icon(Icons.fork),
    ),
  );
}
