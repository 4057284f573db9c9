// The palette commands (category "Seri"): each id (in ids.ts) registered with its
// handler, a refusal from the server shown as a notification. The commands that take
// more than a call live in the modules beside this one, one per concern.

import * as vscode from 'vscode';
import { ResponseError } from 'vscode-languageclient/node';

import { ApiKeyStore } from '../apiKey';
import { bufferContext, editorForAttaching, selectionContext } from '../attachments';
import { ChatModel } from '../chat/model';
import { Proposals } from '../chat/proposals';
import type { ChatViewProvider } from '../chat/view';
import { describe } from '../errors';
import { inEditorWords } from '../format';
import { Commands, FOCUS_CHAT } from '../ids';
import { PromptContext, RewindRequest } from '../protocol';
import { SeriServer } from '../server';
import type { CommandContext } from './commandContext';
import { compact } from './compact';
import { exportSession, importSession } from './exportImport';
import { rewind } from './rewind';
import { searchSessions } from './search';
import { deleteSession } from './deleteSession';
import { clear, continueSession, forkSession, newSession, pickSession, renameSession, resumeSession, setMaxTurns } from './sessions';
import { toggleTrajectory } from './trajectory';
import { selectModel } from './model';
import { mcpServers } from './mcp';

export class CommandHandlers {
  private readonly context: CommandContext;

  constructor(
    private readonly server: SeriServer,
    private readonly model: ChatModel,
    private readonly apiKeys: ApiKeyStore,
    private readonly log: vscode.LogOutputChannel,
    private readonly chatView: ChatViewProvider,
    private readonly proposals: Proposals,
  ) {
    this.context = { server, model, openChat: () => this.openChat() };
  }

  register(): vscode.Disposable[] {
    const context = this.context;
    const entries: [string, (...args: never[]) => unknown][] = [
      [Commands.openChat, () => this.openChat()],
      [Commands.newSession, () => newSession(context)],
      [Commands.continueSession, () => continueSession(context)],
      [Commands.resumeSession, (sessionId?: string) => resumeSession(context, sessionId)],
      [Commands.searchSessions, (query?: string, allProjects?: boolean) => searchSessions(context, query, allProjects)],
      [Commands.renameSession, (title?: string) => renameSession(context, title)],
      [Commands.deleteSession, (sessionId?: string) => deleteSession(context, (title, hint) => pickSession(context, title, hint), sessionId)],
      [Commands.exportSession, (target?: vscode.Uri) => exportSession(context, target)],
      [Commands.importSession, (source?: vscode.Uri) => importSession(context, source)],
      [Commands.forkSession, (messageId?: number) => forkSession(context, messageId)],
      // From the chat's context menu: the message's `data-vscode-context`.
      [Commands.forkFromHere, (menuContext?: { messageId?: number }) => forkSession(context, menuContext?.messageId)],
      [Commands.compact, (focus?: string) => compact(context, focus)],
      [Commands.clear, () => clear(context)],
      [Commands.setMaxTurns, (n?: number) => setMaxTurns(context, n)],
      [Commands.selectModel, (model?: string) => selectModel(context, model)],
      [Commands.mcpServers, (name?: string) => mcpServers(context, name)],
      [Commands.rewind, (request?: RewindRequest) => rewind(context, request)],
      [Commands.toggleTrajectory, (enabled?: boolean) => toggleTrajectory(context, enabled)],
      [Commands.stop, () => this.stop()],
      [Commands.setApiKey, (key?: string) => this.setApiKey(key)],
      [Commands.restartServer, () => this.restartServer()],
      [Commands.showLog, () => this.log.show()],
      [Commands.sendSelection, () => this.sendSelection()],
      [Commands.allowProposal, (uri?: vscode.Uri) => this.answerProposal(uri, 'Allow')],
      [Commands.denyProposal, (uri?: vscode.Uri) => this.answerProposal(uri, 'Deny')],
    ];
    return entries.map(([id, handler]) =>
      vscode.commands.registerCommand(id, (...args: never[]) => this.guard(() => handler(...args))),
    );
  }

  async openChat(): Promise<void> {
    await vscode.commands.executeCommand(FOCUS_CHAT);
    this.chatView.focusInput();
  }

  /**
   * Attach the editor's selection (its path, lines and text) to the next prompt, or the
   * file when nothing is selected, and open the chat to write it. Returns what was attached.
   */
  async sendSelection(): Promise<PromptContext[]> {
    const editor = editorForAttaching();
    if (!editor) {
      void vscode.window.showInformationMessage('Seri: open a file and select the lines to send to the chat.');
      return [];
    }
    const selected = selectionContext(editor);
    const context = selected.length > 0 ? selected : [bufferContext(editor.document)];
    this.chatView.attach(context);
    await this.openChat();
    return context;
  }

  /** Allow or Deny from the title bar of a proposal's diff. */
  answerProposal(uri: vscode.Uri | undefined, choice: 'Allow' | 'Deny'): boolean {
    const id = this.proposals.questionOf(uri ?? vscode.window.activeTextEditor?.document.uri);
    return id !== undefined && this.model.answer(id, choice);
  }

  async stop(): Promise<boolean> {
    const cancelled = await this.model.stop();
    if (!cancelled) {
      void vscode.window.showInformationMessage('Seri: no task is running.');
    }
    return cancelled;
  }

  /** Save (or, given an empty key, remove) the API key, then restart the server with it. */
  async setApiKey(key?: string): Promise<boolean> {
    let value = key;
    if (value === undefined) {
      const stored = await this.apiKeys.stored();
      value = await vscode.window.showInputBox({
        title: 'Seri: Set API Key',
        prompt: stored
          ? "The provider's API key, kept in VS Code's secret storage. Leave empty to remove the stored key."
          : "The provider's API key, kept in VS Code's secret storage (never in settings).",
        password: true,
        ignoreFocusOut: true,
      });
      if (value === undefined) {
        return false;
      }
    }
    value = value.trim();
    if (value) {
      await this.apiKeys.store(value);
    } else {
      await this.apiKeys.remove();
    }
    const what = value ? 'API key saved' : 'Stored API key removed';
    if (this.model.running) {
      const choice = await vscode.window.showInformationMessage(
        `Seri: ${what}. The server uses it once restarted, which stops the running task.`,
        'Restart Now',
      );
      if (choice === 'Restart Now') {
        await this.server.restart();
      }
      return true;
    }
    await this.server.restart();
    void vscode.window.showInformationMessage(`Seri: ${what}; the server restarted with it.`);
    return true;
  }

  async restartServer(): Promise<void> {
    await this.server.restart();
  }

  /** Run a command, turning a refusal from the server into a notification. */
  private async guard<T>(run: () => T | Promise<T>): Promise<T | undefined> {
    try {
      return await run();
    } catch (error) {
      const message = inEditorWords(error instanceof ResponseError ? error.message : describe(error));
      this.log.error(message);
      void vscode.window.showErrorMessage(`Seri: ${message}`);
      return undefined;
    }
  }
}
