// What the language client does when the server crashes: restart it, a few times.

import * as vscode from 'vscode';
import { CloseAction, ErrorAction } from 'vscode-languageclient/node';

/** Restart after a crash, three times in three minutes at most, then say so once. */
export class ServerErrorHandler {
  private readonly crashes: number[] = [];

  constructor(private readonly log: vscode.LogOutputChannel) {}

  error(_error: Error, _message: unknown, count: number | undefined) {
    return { action: count !== undefined && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown };
  }

  closed() {
    const now = Date.now();
    this.crashes.push(now);
    while (this.crashes.length > 0 && now - this.crashes[0] > 3 * 60_000) {
      this.crashes.shift();
    }
    if (this.crashes.length <= 3) {
      this.log.warn('seri-lsp exited; restarting it.');
      return { action: CloseAction.Restart, handled: true };
    }
    return {
      action: CloseAction.DoNotRestart,
      message: 'Seri: the server stopped 4 times in 3 minutes and is not restarted. See "Seri: Show Server Log", then run "Seri: Restart Server".',
    };
  }
}
