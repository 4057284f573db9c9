// Messages between the chat view's webview and the extension. Shared by both bundles.

import type { ChatSnapshot, Notice } from './chatState';
import type { PromptContext, WireMessage } from '../protocol';

/** What the header, the working line, the question cards and the queue are drawn from. */
export type HeaderState = Omit<ChatSnapshot, 'messages' | 'notices' | 'streaming' | 'toolOutputs'>;

/** Extension to webview. */
export type ToWebview =
  | { type: 'reset'; snapshot: ChatSnapshot; reveal?: 'recap' }
  | { type: 'append'; message: WireMessage }
  | { type: 'prepend'; messages: WireMessage[]; hasMore: boolean }
  | { type: 'streaming'; text: string }
  /** Running command `callId` printed `text`. */
  | { type: 'toolOutput'; callId: string; text: string }
  | { type: 'notice'; notice: Notice }
  | { type: 'state'; snapshot: HeaderState }
  | { type: 'focusInput' }
  /** Scroll to a message (reading earlier pages until it is there) and highlight it. */
  | { type: 'reveal'; messageId: number }
  | { type: 'setInput'; text: string; context?: PromptContext[] }
  /** Attachments for the next prompt (Send Selection to Chat, `#selection`, `#buffer`). */
  | { type: 'attach'; context: PromptContext[] }
  /** The `@` picker's files for query number `seq`. */
  | { type: 'files'; seq: number; paths: string[] }
  /** Which paths in the transcript are workspace files (and which file), null: none. */
  | { type: 'resolvedPaths'; resolved: Record<string, string | null> };

/** Header menu entries; each runs the palette command of the same name. */
export type MenuAction =
  | 'new'
  | 'resume'
  | 'search'
  | 'continue'
  | 'rename'
  | 'clear'
  | 'compact'
  | 'maxTurns'
  | 'model'
  | 'rewind'
  | 'fork'
  | 'export'
  | 'import';

/** Webview to extension. */
export type FromWebview =
  | { type: 'ready'; draft?: string }
  | { type: 'draft'; text: string }
  | { type: 'send'; text: string; context: PromptContext[] }
  | { type: 'stop' }
  /** Stop just this running command (its tool row's Stop); the task goes on. */
  | { type: 'stopTool'; callId: string }
  | { type: 'menu'; action: MenuAction }
  | { type: 'loadOlder' }
  | { type: 'openLink'; href: string }
  /** A workspace file (as resolved, or as written in a link), at a line. */
  | { type: 'openFile'; path: string; line?: number }
  | { type: 'copy'; text: string }
  | { type: 'answer'; id: number; choice: string; note?: string }
  /** Open the diff of a write question's proposal. */
  | { type: 'review'; id: number }
  | { type: 'unqueue'; id: number }
  | { type: 'retry'; id: number }
  /** Open the record of the turns the session's recap replaced (the divider's button). */
  | { type: 'openCompacted' }
  /** Rewind to just before this prompt (Rewind to here), after a confirmation. */
  | { type: 'rewindTo'; id: number }
  /** A code block into the last active editor, at its cursor. */
  | { type: 'insertCode'; text: string }
  /** A code block as the whole new content of a file (the block's, or one asked for), in a diff to approve. */
  | { type: 'applyCode'; text: string; path?: string }
  /** Fork the session at this message (Fork from Here). */
  | { type: 'fork'; id: number }
  /** Open another session of the project (a fork's original). */
  | { type: 'resume'; sessionId: string }
  | { type: 'findFiles'; seq: number; query: string }
  | { type: 'resolvePaths'; paths: string[] }
  | { type: 'attach'; what: 'selection' | 'buffer' };
