// Finding, starting and restarting the seri-lsp server, and talking to it.

import { execFile, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import {
  ClientCapabilities,
  CloseAction,
  ErrorAction,
  ExecuteCommandRequest,
  FeatureState,
  LanguageClient,
  LanguageClientOptions,
  MessageType,
  ServerOptions,
  ShowMessageNotification,
  ShowMessageParams,
  State,
  StaticFeature,
} from 'vscode-languageclient/node';

import { ApiKeyStore } from './apiKey';
import { BundledServer } from './bundledServer';
import { NoPython } from './pythons';
import { ChatModel, ServerLink } from './chat/model';
import { applyEdit, saveEditedDocuments } from './edits';
import { ExtensionSettings, InitializationOptions, projectFolder, readSettings } from './settings';
import { Notification, ServerRequest } from './protocol';
import { readSlashCommands } from './slashCommands';

export const INSTALL_HINT =
  'Turn `seri.server.useBundled` back on to use the server this extension carries, or install ' +
  'seri-lsp from a checkout with `pipx install .` so that `seri-lsp` is on PATH, or point the ' +
  'setting `seri.server.command` at it.';

/** How the server is started, or why it cannot be. */
export type ServerCommandLine =
  | { found: true; command: string; args: string[]; origin: 'setting' | 'path' | 'python' | 'bundled' }
  | { found: false; tried: string[] };

/**
 * The server's command line: `seri.server.command`, else `seri-lsp` on PATH, else
 * `python3 -m seri_lsp` when that Python has the package.
 */
export function findServer(configured: string[], env: NodeJS.ProcessEnv = process.env): ServerCommandLine {
  if (configured.length > 0) {
    const [command, ...args] = configured;
    if (findExecutable(command, env)) {
      return { found: true, command, args, origin: 'setting' };
    }
    return { found: false, tried: [configured.join(' ')] };
  }
  const onPath = findExecutable('seri-lsp', env);
  if (onPath) {
    return { found: true, command: onPath, args: [], origin: 'path' };
  }
  const python = findExecutable('python3', env);
  if (python) {
    const probe = spawnSync(python, ['-c', 'import importlib.util, sys; sys.exit(importlib.util.find_spec("seri_lsp") is None)'], {
      env,
      timeout: 10_000,
    });
    if (probe.status === 0) {
      return { found: true, command: python, args: ['-m', 'seri_lsp'], origin: 'python' };
    }
  }
  return { found: false, tried: ['seri-lsp (on PATH)', 'python3 -m seri_lsp'] };
}

/** How long `COMMAND --version` may take before the command counts as not working. */
const PROBE_TIMEOUT_MS = 5_000;

/**
 * Run the found command with `--version`: a command that exists but cannot run the server
 * (a Python without the package, a broken venv) fails here, once, instead of crashing
 * the language client several times. Returns why it failed, or undefined when it works.
 */
export function probeServer(
  found: Extract<ServerCommandLine, { found: true }>,
  env: NodeJS.ProcessEnv,
  cwd: string | undefined,
): Promise<string | undefined> {
  // Off the extension host's thread: the probe starts a Python process.
  return new Promise((resolve) => {
    execFile(
      found.command,
      [...found.args, '--version'],
      { env, cwd, timeout: PROBE_TIMEOUT_MS, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (!error) {
          resolve(undefined);
        } else if (error.killed) {
          resolve(`no answer within ${PROBE_TIMEOUT_MS / 1000} s`);
        } else if (typeof error.code === 'number') {
          const lastLine = (stderr || stdout || '').trim().split('\n').at(-1);
          resolve(lastLine || `exit ${error.code}`);
        } else {
          resolve(error.message);
        }
      },
    );
  });
}

function findExecutable(command: string, env: NodeJS.ProcessEnv): string | undefined {
  const isFile = (candidate: string): boolean => {
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return fs.statSync(candidate).isFile();
    } catch {
      return false;
    }
  };
  if (command.includes('/') || command.includes(path.sep)) {
    return isFile(command) ? command : undefined;
  }
  const extensions = process.platform === 'win32' ? (env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';') : [''];
  for (const dir of (env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    for (const extension of extensions) {
      const candidate = path.join(dir, command + extension);
      if (isFile(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}

/** The running server as the rest of the extension sees it. */
export class SeriServer implements ServerLink, vscode.Disposable {
  private client: LanguageClient | undefined;
  // The start in progress: a second start() joins it, stop() waits for it.
  private starting: Promise<void> | undefined;
  private started: { settings: ExtensionSettings; env: NodeJS.ProcessEnv } | undefined;
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
    return this.started?.settings.initializationOptions;
  }

  get isRunning(): boolean {
    return this.client?.state === State.Running;
  }

  /** True when the settings (or the key) now differ from those the server started with. */
  async differsFromRunning(): Promise<boolean> {
    if (!this.started) {
      return true;
    }
    const settings = readSettings();
    const env = await this.apiKeys.serverEnvironment();
    return (
      JSON.stringify(settings) !== JSON.stringify(this.started.settings) ||
      env.SERI_API_KEY !== this.started.env.SERI_API_KEY
    );
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
      initializationOptions: settings.initializationOptions,
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
    this.started = { settings, env };
    this.disposables.push(
      client.onNotification(Notification.sessionChanged, (params) => this.model.sessionChanged(params)),
      client.onNotification(Notification.message, (params) => this.model.message(params)),
      client.onNotification(Notification.delta, (params) => this.model.delta(params)),
      client.onNotification(Notification.compacted, (params) => this.model.compacted(params)),
      client.onNotification(Notification.turnEnded, (params) => this.model.turnEnded(params)),
      client.onNotification(Notification.status, (params) => this.model.status(params)),
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
        void vscode.commands.executeCommand('workbench.action.openSettings', 'seri.server.python');
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
          void vscode.commands.executeCommand('workbench.action.openSettings', 'seri.server.command');
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

/**
 * Announces `experimental.seri.approvals`: the server then asks its questions (a write,
 * a memory line, running the checks) with `seri/approve`, which the chat shows as cards
 * with the change to review, rather than with `window/showMessageRequest` (a toast).
 */
class ChatApprovals implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    const experimental = (capabilities.experimental ?? {}) as Record<string, unknown>;
    capabilities.experimental = { ...experimental, seri: { approvals: true } };
  }

  initialize(): void {}

  getState(): FeatureState {
    return { kind: 'static' };
  }

  clear(): void {}
}

/** Restart after a crash, three times in three minutes at most, then say so once. */
class ServerErrorHandler {
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

export function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
