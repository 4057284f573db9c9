// What the palette commands work with: the server, the chat model, and opening the chat.

import type { ChatModel } from '../chat/model';
import type { SeriServer } from '../server';

export interface CommandContext {
  server: SeriServer;
  model: ChatModel;
  /** Show the chat and put the cursor in its input. */
  openChat(): Promise<void>;
}
