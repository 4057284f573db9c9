// Starting and restarting the seri-lsp server, and talking to it.

import * as vscode from 'vscode';
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  MessageType,
  ServerOptions,
  ShowMessageNotification,
  ShowMessageParams,
  State,
} from 'vscode-languageclient/node';

import { ApiKeyStore } from './apiKey';
import { ChatApprovals } from './approvalsCapability';
import { BundledServer } from './bundledServer';
import { NoPython } from './pythons';
import { ChatModel } from './chat/model';
import type { ServerLink } from './chat/chatState';
import { ServerErrorHandler } from './crashPolicy';
import { applyEdit, saveEditedDocuments } from './edits';
import { describe } from './errors';
import { keyStoreOption } from './keyStore';
import { ServerSetting, settingId } from './settingKeys';
import { ExtensionSettings, InitializationOptions, projectFolder, readSettings } from './settings';
import { Notification, ServerRequest } from './protocol';
import { ServerCommandLine, findServer, probeServer } from './serverCommandLine';
import { readSlashCommands } from './slashCommands';

export const INSTALL_HINT =
  'Turn `seri.server.useBundled` back on to use the server this extension carries, or install ' +
  'seri-lsp from a checkout with `pipx install .` so that `seri-lsp` is on PATH, or point the ' +
  'setting `seri.server.command` at it.';

/** The running server as the rest of the extension sees it. */
export class SeriServer implements ServerLink, vscode.Disposable {
  private client: LanguageClient | undefined;
  // The start in progress: a second start() joins it, stop() waits for it.
  private starting: Promise<void> | undefined;
  private started:
    | {
        settings: ExtensionSettings;
        env: NodeJS.ProcessEnv;
        initializationOptions: InitializationOptions;
        /** The provider settings the server uses now: at start, then as last sent. */
        sentProvider: InitializationOptions['provider'];
      }
    | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly stateEmitter = new vscode.EventEmitter<void>();
  /** Fires when the server starts, stops or fails. */
  readonly onDidChangeState = this.stateEmitter.event;
  private readonly loadEmitter = new vscode.EventEmitter<void>();
  /** Fires once the chat model has loaded from a server that just started running. */
  readonly onDidLoad = this.loadEmitter.event;

  constructor(
    private readonly model: ChatModel,
    private readonly apiKeys: ApiKeyStore,
    private readonly log: vscode.LogOutputChannel,
    private readonly bundled: BundledServer,
  ) {}

  /** The initialization options the running server was started with. */
  get initializationOptions(): InitializationOptions | undefined {
    return this.started?.initializationOptions;
  }

  /** The provider settings the running server uses: those it started with, then as last sent. */
  get providerSettings(): InitializationOptions['provider'] {
    return this.started?.sentProvider;
  }

  get isRunning(): boolean {
    return this.client?.state === State.Running;
  }

  /**
   * True when the settings (or the key) now differ from those the server started with,
   * apart from the provider settings it was sent since (see `sendSettings`).
   */
  async differsFromRunning(): Promise<boolean> {
    if (!this.started) {
      return true;
    }
    const settings = readSettings();
    const env = await this.apiKeys.serverEnvironment();
    return (
      JSON.stringify(withoutProvider(settings)) !== JSON.stringify(withoutProvider(this.started.settings)) ||
      JSON.stringify(settings.initializationOptions.provider) !== JSON.stringify(this.started.sentProvider) ||
      env.SERI_API_KEY !== this.started.env.SERI_API_KEY
    );
  }

  /**
   * Send the settings in force to the running server (`workspace/didChangeConfiguration`,
   * `settings` in the shape of the initialization options, in full): it uses the provider
   * settings from the next prompt on. The others still need a restart.
   */
  async sendSettings(): Promise<void> {
    const client = this.client;
    if (!client || !this.started || client.state !== State.Running) {
      return;
    }
    const settings = readSettings();
    const options: InitializationOptions = {
      ...settings.initializationOptions,
      apiKeyStore: keyStoreOption((await this.apiKeys.stored()) !== undefined),
    };
    await client.sendNotification(DidChangeConfigurationNotification.type, { settings: options });
    if (this.client === client && this.started) {
      this.started.sentProvider = settings.initializationOptions.provider;
    }
  }

  /** Start the server unless it runs; overlapping calls share one start. */
  start(): Promise<void> {
    this.starting ??= this.startOnce().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  private async startOnce(): Promise<void> {
    if (this.client) {
      return;
    }
    if (!projectFolder()) {
      // Sessions belong to a project; the extension starts the server once a folder opens.
      this.model.detach('noFolder');
      this.stateEmitter.fire();
      return;
    }
    const settings = readSettings();
    const env = await this.apiKeys.serverEnvironment();
    // The server's messages about the key name where it really came from.
    const initializationOptions: InitializationOptions = {
      ...settings.initializationOptions,
      apiKeyStore: keyStoreOption((await this.apiKeys.stored()) !== undefined),
    };
    const found = await this.locate(settings, env);
    if (!found) {
      return;
    }
    const commandLine = [found.command, ...found.args].join(' ');
    const cwd = projectFolder()?.uri.fsPath;
    const broken = await probeServer(found, env, cwd);
    if (broken) {
      this.reportMissing(`the server command \`${commandLine}\` does not run (\`--version\` failed: ${broken})`);
      return;
    }
    this.log.info(`Starting ${commandLine} (${found.origin})`);
    const serverOptions: ServerOptions = {
      command: found.command,
      args: found.args,
      options: { env, cwd },
    };
    const clientOptions: LanguageClientOptions = {
      // Every file: the tools read unsaved buffers and edit open documents.
      documentSelector: [{ scheme: 'file' }],
      outputChannel: this.log,
      initializationOptions,
      initializationFailedHandler: (error: unknown) => {
        this.log.error(`seri-lsp did not initialize: ${describe(error)}`);
        return false;
      },
      errorHandler: new ServerErrorHandler(this.log),
      middleware: {
        workspace: {
          handleApplyEdit: (params, next) => applyEdit(params, next),
        },
      },
    };
    const client = new LanguageClient('seri', 'Seri', serverOptions, clientOptions);
    client.registerFeature(new ChatApprovals());
    this.client = client;
    this.started = { settings, env, initializationOptions, sentProvider: settings.initializationOptions.provider };
    this.disposables.push(
      client.onNotification(Notification.sessionChanged, (params) => this.model.sessionChanged(params)),
      client.onNotification(Notification.message, (params) => this.model.message(params)),
      client.onNotification(Notification.delta, (params) => this.model.delta(params)),
      client.onNotification(Notification.compacted, (params) => this.model.compacted(params)),
      client.onNotification(Notification.turnEnded, (params) => this.model.turnEnded(params)),
      client.onNotification(Notification.status, (params) => this.model.status(params)),
      client.onNotification(Notification.toolOutput, (params) => this.model.toolOutput(params)),
      // In place of the client's own toasts: a failure the chat shows is not said twice.
      client.onNotification(ShowMessageNotification.type, (params) => this.showMessage(params)),
      client.onRequest(ServerRequest.saveDocuments, (params) => saveEditedDocuments(params)),
      // A question stays in the chat until answered; the server cancels it with its task.
      client.onRequest(ServerRequest.approve, (params, token) => this.model.ask(params, token)),
      client.onDidChangeState((event) => {
        if (this.client !== client) {
          return;
        }
        if (event.newState === State.Running) {
          void this.model.attach(this).then(() => this.client === client && this.loadEmitter.fire());
          // Read again at every start: a restarted server may be a newer one.
          void readSlashCommands(client.initializeResult, this).then((commands) => {
            if (this.client === client && client.state === State.Running) {
              this.model.setSlashCommands(commands);
            }
          });
        } else if (event.newState === State.Starting) {
          this.model.detach('starting');
        } else {
          this.model.detach('stopped');
        }
        this.stateEmitter.fire();
      }),
    );
    this.model.detach('starting');
    try {
      await client.start();
    } catch (error) {
      this.log.error(`seri-lsp did not start: ${describe(error)}`);
      if (this.client === client) {
        this.model.detach('failed');
        this.stateEmitter.fire();
        void vscode.window
          .showErrorMessage(`Seri: the server did not start: ${describe(error)}`, 'Show Log')
          .then((choice) => choice && this.log.show());
      }
    }
  }

  /**
   * The server's command line: `seri.server.command` when set; else the server this
   * extension carries (installed at its first start) unless `seri.server.useBundled` is
   * false or this build carries none; else `seri-lsp` on PATH, or `python3 -m seri_lsp`.
   * Undefined (and said once) when there is none.
   */
  private async locate(
    settings: ExtensionSettings,
    env: NodeJS.ProcessEnv,
  ): Promise<Extract<ServerCommandLine, { found: true }> | undefined> {
    if (settings.serverCommand.length === 0 && settings.useBundled && this.bundled.present) {
      this.model.detach('starting');
      this.stateEmitter.fire();
      try {
        const python = await this.bundled.python(settings.serverPython, projectFolder()?.uri);
        return { found: true, command: python, args: ['-m', 'seri_lsp'], origin: 'bundled' };
      } catch (error) {
        if (error instanceof NoPython) {
          this.reportNoPython(error);
        } else {
          this.reportMissing(`the server this extension carries could not be installed: ${describe(error)}`);
        }
        return undefined;
      }
    }
    const found = findServer(settings.serverCommand, env);
    if (!found.found) {
      this.reportMissing(`the seri-lsp server was not found (tried ${found.tried.join(' and ')})`);
      return undefined;
    }
    return found;
  }

  /** No Python for the carried server: one notification, with the setting to fix it. */
  private reportNoPython(error: NoPython): void {
    this.log.error(error.message);
    this.model.detach('missing');
    this.stateEmitter.fire();
    void vscode.window.showErrorMessage(error.message, 'Open Setting', 'Show Log').then((choice) => {
      if (choice === 'Open Setting') {
        void vscode.commands.executeCommand('workbench.action.openSettings', settingId(ServerSetting.python));
      } else if (choice === 'Show Log') {
        this.log.show();
      }
    });
  }

  /** `window/showMessage` as a toast, unless it says what the chat shows already. */
  private showMessage(params: ShowMessageParams): void {
    if (this.model.showsInChat(params.message)) {
      return;
    }
    if (params.type === MessageType.Error) {
      void vscode.window.showErrorMessage(params.message);
    } else if (params.type === MessageType.Warning) {
      void vscode.window.showWarningMessage(params.message);
    } else {
      void vscode.window.showInformationMessage(params.message);
    }
  }

  /** The missing-server path: one notification with the install hint, `missing` state. */
  private reportMissing(problem: string): void {
    this.log.error(`seri-lsp: ${problem}`);
    this.model.detach('missing');
    this.stateEmitter.fire();
    void vscode.window
      .showErrorMessage(`Seri: ${problem}. ${INSTALL_HINT}`, 'Open Settings', 'Show Log')
      .then((choice) => {
        if (choice === 'Open Settings') {
          void vscode.commands.executeCommand('workbench.action.openSettings', settingId(ServerSetting.command));
        } else if (choice === 'Show Log') {
          this.log.show();
        }
      });
  }

  async stop(): Promise<void> {
    // A start in progress would otherwise leave its client running after this stop.
    await this.starting;
    const client = this.client;
    this.client = undefined;
    this.started = undefined;
    this.disposables.splice(0).forEach((disposable) => disposable.dispose());
    if (client) {
      try {
        if (client.state !== State.Stopped) {
          await client.stop(5000);
        }
      } catch (error) {
        this.log.warn(`Stopping seri-lsp: ${describe(error)}`);
      }
    }
    this.model.detach('stopped');
    this.stateEmitter.fire();
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** Run a `seri.*` command with its one argument object. */
  async execute<T>(command: string, args: object = {}): Promise<T> {
    const client = this.client;
    if (!client || client.state !== State.Running) {
      throw new Error('The seri server is not running. Run "Seri: Restart Server" or see "Seri: Show Server Log".');
    }
    return (await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [args] })) as T;
  }

  dispose(): void {
    void this.stop();
    this.stateEmitter.dispose();
    this.loadEmitter.dispose();
  }
}

/** The settings but the provider's, which the running server takes without a restart. */
function withoutProvider(settings: ExtensionSettings): ExtensionSettings {
  const { provider: _provider, ...others } = settings.initializationOptions;
  return { ...settings, initializationOptions: others };
}
