// "Fork from Here" on a message's row: a button on hover, and an entry of the view's
// context menu.

import type { WireMessage } from '../protocol';
import { Icons, h, icon } from './dom';

/** Where the view's context menu offers "Fork from Here" (`webview/context` in package.json). */
export function forkable(message: WireMessage): Record<string, string> {
  return { 'data-vscode-context': JSON.stringify({ webviewSection: 'message', messageId: message.id }) };
}

/**
 * The hover actions of a prompt, a reply or a recap: Fork from here, and on a prompt
 * (`rewind`) Rewind to here first.
 */
export function forkButton(id: number, rewind = false): HTMLElement {
  return h(
    'div',
    { class: 'row-actions', role: 'toolbar', 'aria-label': 'Message actions' },
    rewind
      ? h(
          'button',
          {
            class: 'icon-button rewind-here',
            type: 'button',
            'data-message-id': String(id),
            title: 'Rewind to here: the conversation and files go back to before this prompt, which returns to the input to edit and resend',
            'aria-label': 'Rewind to here',
          },
          icon(Icons.rewind),
        )
      : '',
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
