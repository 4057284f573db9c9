// Messages between the chat view's webview and the extension. Shared by both bundles.

import type { ChatSnapshot, Notice } from './model';
import type { WireMessage } from '../protocol';

/** Extension to webview. */
export type ToWebview =
  | { type: 'reset'; snapshot: ChatSnapshot }
  | { type: 'append'; message: WireMessage }
  | { type: 'prepend'; messages: WireMessage[]; hasMore: boolean }
  | { type: 'streaming'; text: string }
  | { type: 'notice'; notice: Notice }
  | { type: 'state'; snapshot: Omit<ChatSnapshot, 'messages' | 'notices' | 'streaming'> }
  | { type: 'focusInput' }
  | { type: 'setInput'; text: string };

/** Header menu entries; each runs the palette command of the same name. */
export type MenuAction = 'new' | 'resume' | 'continue' | 'clear' | 'compact' | 'maxTurns' | 'rewind';

/** Webview to extension. */
export type FromWebview =
  | { type: 'ready'; draft?: string }
  | { type: 'draft'; text: string }
  | { type: 'send'; text: string }
  | { type: 'stop' }
  | { type: 'menu'; action: MenuAction }
  | { type: 'loadOlder' }
  | { type: 'openLink'; href: string }
  | { type: 'openFile'; path: string }
  | { type: 'copy'; text: string };
