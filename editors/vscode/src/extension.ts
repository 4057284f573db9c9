// Entry point: wires the server, the chat model, the chat view, the status bar and the
// palette commands, and restarts the server (after asking) when its settings change.

import * as vscode from 'vscode';

import { ApiKeyStore } from './apiKey';
import { BundledServer } from './bundledServer';
import { ChatModel } from './chat/model';
import { Proposals } from './chat/proposals';
import { ChatViewProvider } from './chat/view';
import { CommandHandlers } from './commands';
import { CHAT_VIEW_ID, Commands, RUNNING_CONTEXT } from './ids';
import { SeriServer } from './server';
import { SessionMemory } from './sessionMemory';
import { affectsServer } from './settings';
import { ContextStatusBar } from './statusBar';
import { WorkspaceFiles } from './workspaceFiles';

/** What `activate` returns: the parts, for the integration tests and other extensions. */
export interface SeriExtensionApi {
  model: ChatModel;
  server: SeriServer;
  chatView: ChatViewProvider;
  statusBar: ContextStatusBar;
  commands: CommandHandlers;
  /** Fires with the offer's text whenever a settings change offers a restart. */
  onDidOfferRestart: vscode.Event<string>;
}

let server: SeriServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<SeriExtensionApi> {
  const log = vscode.window.createOutputChannel('Seri', { log: true });
  const model = new ChatModel();
  const apiKeys = new ApiKeyStore(context.secrets);
  const bundled = new BundledServer(context.extensionPath, context.globalStorageUri.fsPath, log);
  server = new SeriServer(model, apiKeys, log, bundled);
  const files = new WorkspaceFiles();
  const proposals = new Proposals(model);
  const chatView = new ChatViewProvider(context.extensionUri, model, log, files, proposals);
  const statusBar = new ContextStatusBar(model);
  const commands = new CommandHandlers(server, model, apiKeys, log, chatView, proposals);
  let running = false;
  const unsubscribe = model.onDidChange(() => {
    if (model.running !== running) {
      running = model.running;
      void vscode.commands.executeCommand('setContext', RUNNING_CONTEXT, running);
    }
  });
  const restartOffers = new vscode.EventEmitter<string>();
  const memory = new SessionMemory(model, context.workspaceState, log);

  context.subscriptions.push(
    log,
    server,
    files,
    proposals,
    { dispose: unsubscribe },
    chatView,
    statusBar,
    restartOffers,
    memory,
    server.onDidLoad(() => server && memory.restore(server)),
    vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, chatView),
    ...commands.register(),
    vscode.workspace.onDidChangeWorkspaceFolders(() => {
      if (model.state === 'noFolder') {
        void server?.start();
      }
    }),
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (!affectsServer(event) || !server) {
        return;
      }
      // The provider settings apply from the next prompt; only the others need a restart.
      await server.sendSettings();
      if (!(await server.differsFromRunning())) {
        return;
      }
      const offer = 'Seri settings changed. Restart the server to use them?';
      restartOffers.fire(offer);
      const choice = await vscode.window.showInformationMessage(offer, 'Restart Server');
      if (choice === 'Restart Server') {
        await vscode.commands.executeCommand(Commands.restartServer);
      }
    }),
  );

  // Not awaited: activation must not wait for the server (a missing one only notifies).
  void server.start();
  return { model, server, chatView, statusBar, commands, onDidOfferRestart: restartOffers.event };
}

export async function deactivate(): Promise<void> {
  // Stop the server before the extension host goes, so that its session lock is free for
  // the next window (a reload resumes the same session).
  await server?.stop();
  server = undefined;
}
