// The status bar item: context use of the open session, a spinner while a task runs; its
// tooltip adds where compaction starts and what the session's model calls cost.

import * as vscode from 'vscode';

import { ChatModel } from './chat/model';
import { sessionTitle } from './chat/promptText';
import { cacheSentence, contextPercent, formatTokens, spendSentence } from './format';
import { Commands, STATUS_ITEM_ID } from './ids';

export class ContextStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly unsubscribe: () => void;

  constructor(private readonly model: ChatModel) {
    this.item = vscode.window.createStatusBarItem(STATUS_ITEM_ID, vscode.StatusBarAlignment.Right, 100);
    this.item.name = 'Seri Context';
    this.item.command = Commands.openChat;
    this.unsubscribe = model.onDidChange((change) => {
      if (change.kind === 'reset' || change.kind === 'state' || change.kind === 'questions') {
        this.update();
      }
    });
    this.update();
    this.item.show();
  }

  /** What the item shows now (read by the tests). */
  get text(): string {
    return this.item.text;
  }

  get tooltip(): string {
    const tooltip = this.item.tooltip;
    return typeof tooltip === 'string' ? tooltip : (tooltip?.value ?? '');
  }

  private update(): void {
    const model = this.model;
    const state = model.state;
    if (state === 'missing' || state === 'failed') {
      this.item.text = '$(warning) Seri';
      this.item.tooltip =
        state === 'missing' ? 'Seri: the seri-lsp server was not found. Click to open the chat.' : 'Seri: the server did not start.';
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
      return;
    }
    const question = model.openQuestions[0];
    if (question) {
      // A task waits for the user: say so where they look, whatever the chat shows.
      this.item.text = '$(bell-dot) Seri: approve?';
      this.item.tooltip = `Seri is waiting for your approval: ${question.params.message} Click to open the chat.`;
      this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.warningBackground');
      return;
    }
    this.item.backgroundColor = undefined;
    const usage = model.currentUsage;
    const session = model.currentSession;
    const icon = model.running ? '$(loading~spin)' : '$(comment-discussion)';
    if (state !== 'running') {
      this.item.text = `${icon} Seri`;
      this.item.tooltip = {
        starting: 'Seri: starting the server…',
        stopped: 'Seri: the server is stopped.',
        noFolder: 'Seri: open a folder to chat with seri about it.',
      }[state];
      return;
    }
    if (!usage || !session) {
      this.item.text = `${icon} Seri`;
      this.item.tooltip = 'Seri: no session open yet. Click to open the chat.';
      return;
    }
    const percent = contextPercent(usage.estimateTokens, usage.contextWindow);
    this.item.text = `${icon} ${percent}%`;
    const title = sessionTitle(session.title);
    const lines = [
      `Seri context: ${formatTokens(usage.estimateTokens)} / ${formatTokens(usage.contextWindow)} tokens (${percent}%)`,
    ];
    if (usage.compactAt !== undefined) {
      lines.push(
        `Compaction starts at ${formatTokens(usage.compactAt)} tokens (${contextPercent(usage.compactAt, usage.contextWindow)}%)`,
      );
    }
    lines.push(`Session: ${title}`);
    const spend = spendSentence(session.spend);
    if (spend) {
      lines.push(spend);
    }
    const cache = cacheSentence(session.spend);
    if (cache) {
      lines.push(cache);
    }
    if (model.running) {
      lines.push('A task is running.');
    }
    lines.push('Click to open the chat.');
    this.item.tooltip = lines.join('\n');
  }

  dispose(): void {
    this.unsubscribe();
    this.item.dispose();
  }
}
