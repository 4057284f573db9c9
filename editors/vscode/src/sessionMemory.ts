// The window's open session, kept across reloads. With `seri.resumeOnOpen` off the server
// starts with no session open, so after a window reload (a new server) the chat would be
// empty; the id is kept in the workspace's state and the session resumed once loaded.

import * as vscode from 'vscode';

import type { ChatModel } from './chat/model';
import type { ServerLink } from './chat/chatState';
import { describe } from './errors';
import { ServerCommand } from './protocol';

const OPEN_SESSION_KEY = 'seri.openSession';

export class SessionMemory implements vscode.Disposable {
  private readonly unsubscribe: () => void;

  constructor(
    private readonly model: ChatModel,
    private readonly state: vscode.Memento,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.unsubscribe = model.onDidChange(() => this.remember());
  }

  /** The id of the session this window showed last, if any. */
  get remembered(): string | undefined {
    return this.state.get<string>(OPEN_SESSION_KEY);
  }

  /** After the model loaded from a new server: reopen the remembered session if none is. */
  async restore(server: ServerLink): Promise<void> {
    const sessionId = this.remembered;
    if (!sessionId || this.model.currentSession !== null) {
      return;
    }
    try {
      await server.execute(ServerCommand.sessionResume, { sessionId });
    } catch (error) {
      // Deleted, open in another window, or in another profile: the chat says so, rather
      // than stand empty with the reason only in the log.
      this.log.warn(`Could not reopen session ${sessionId}: ${describe(error)}`);
      this.model.addNotice(
        'error',
        `The session this window showed (${sessionId.slice(0, 8)}) could not be reopened: ${describe(error)} ` +
          'Pick another with "Seri: Resume Session...", or send a prompt to start a new one.',
      );
    }
  }

  private remember(): void {
    const id = this.model.currentSession?.id;
    if (id && id !== this.remembered) {
      void this.state.update(OPEN_SESSION_KEY, id);
    }
  }

  dispose(): void {
    this.unsubscribe();
  }
}
