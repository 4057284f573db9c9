// The palette commands (category "Seri"); their ids are in ids.ts.

import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';
import { ResponseError } from 'vscode-languageclient/node';

import { ApiKeyStore } from './apiKey';
import { bufferContext, editorForAttaching, selectionContext } from './attachments';
import { ChatModel, rewindProblems } from './chat/model';
import { Proposals } from './chat/proposals';
import { sessionTitle } from './chat/promptText';
import type { ChatViewProvider } from './chat/view';
import { formatTokens, inEditorWords, plural, relativeTime, spendWords } from './format';
import { Commands, FOCUS_CHAT } from './ids';
import {
  Checkpoint,
  CheckpointList,
  CompactResult,
  ExportResult,
  ForkResult,
  ImportResult,
  PromptContext,
  RestoreMode,
  RewindRequest,
  RewindResult,
  SearchHit,
  ServerCommand,
  Session,
  TrajectoryState,
} from './protocol';
import { describe } from './errors';
import { SeriServer } from './server';
import { projectFolder } from './settings';
import { EXPORT_FILTERS, exportName, formatFor, readBundle, redactionWords, writeWhole } from './sessionFiles';
import { SessionSearch } from './sessionSearch';

export interface SessionPickItem extends vscode.QuickPickItem {
  session: Session;
}

export interface CheckpointPickItem extends vscode.QuickPickItem {
  checkpoint: Checkpoint;
}

export interface RestorePickItem extends vscode.QuickPickItem {
  restore: RestoreMode;
}

const RESTORE_ITEMS: RestorePickItem[] = [
  { label: 'Conversation and files', description: 'go back to before this prompt', restore: 'both' },
  { label: 'Conversation only', description: 'keep the files as they are', restore: 'conversation' },
  { label: 'Files only', description: 'keep the conversation', restore: 'files' },
];

const RESTORED: Record<RestoreMode, string> = {
  both: 'the conversation and files',
  conversation: 'the conversation',
  files: 'files',
};

/** Where the trajectory toggle comes from, in words. */
const TRAJECTORY_SOURCES: Record<TrajectoryState['source'], string> = {
  env: "set by SERI_TRAJECTORY_ENABLED in the server's environment",
  profile: "stored in the profile's config.json",
  default: 'the default',
};

function onOff(state: TrajectoryState): string {
  return `${state.enabled ? 'on' : 'off'} (${TRAJECTORY_SOURCES[state.source] ?? state.source})`;
}

/** A session title as the server takes it: one line of 1..200 characters. */
export function titleProblem(value: string): string | undefined {
  const title = value.trim();
  if (!title) {
    return 'A title needs at least one character.';
  }
  if (/[\u0000-\u001f\u007f]/.test(title)) {
    return 'A title is one line: no line breaks or tabs.';
  }
  return title.length > 200 ? `At most 200 characters (this is ${title.length}).` : undefined;
}

export const OPEN_FOLDER = 'Open Its Folder';
export const OPEN_HERE = 'Open Here Anyway';
export const OVERWRITE = 'Overwrite';
export const LEAVE_ALONE = 'Leave Them Alone';

export class CommandHandlers {
  constructor(
    private readonly server: SeriServer,
    private readonly model: ChatModel,
    private readonly apiKeys: ApiKeyStore,
    private readonly log: vscode.LogOutputChannel,
    private readonly chatView: ChatViewProvider,
    private readonly proposals: Proposals,
  ) {}

  register(): vscode.Disposable[] {
    const entries: [string, (...args: never[]) => unknown][] = [
      [Commands.openChat, () => this.openChat()],
      [Commands.newSession, () => this.newSession()],
      [Commands.continueSession, () => this.continueSession()],
      [Commands.resumeSession, (sessionId?: string) => this.resumeSession(sessionId)],
      [Commands.searchSessions, (query?: string, allProjects?: boolean) => this.searchSessions(query, allProjects)],
      [Commands.renameSession, (title?: string) => this.renameSession(title)],
      [Commands.exportSession, (target?: vscode.Uri) => this.exportSession(target)],
      [Commands.importSession, (source?: vscode.Uri) => this.importSession(source)],
      [Commands.forkSession, (messageId?: number) => this.forkSession(messageId)],
      // From the chat's context menu: the message's `data-vscode-context`.
      [Commands.forkFromHere, (context?: { messageId?: number }) => this.forkSession(context?.messageId)],
      [Commands.compact, (focus?: string) => this.compact(focus)],
      [Commands.clear, () => this.clear()],
      [Commands.setMaxTurns, (n?: number) => this.setMaxTurns(n)],
      [Commands.rewind, (request?: RewindRequest) => this.rewind(request)],
      [Commands.toggleTrajectory, (enabled?: boolean) => this.toggleTrajectory(enabled)],
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

  async newSession(): Promise<Session> {
    const { session } = await this.server.execute<{ session: Session }>(ServerCommand.sessionNew);
    await this.openChat();
    return session;
  }

  async continueSession(): Promise<Session | null> {
    const { session } = await this.server.execute<{ session: Session | null }>(ServerCommand.sessionContinue);
    if (session === null) {
      void vscode.window.showInformationMessage('Seri: this project has no earlier session.');
    }
    await this.openChat();
    return session;
  }

  /** Resume `sessionId`, or the session picked from the project's sessions. */
  async resumeSession(sessionId?: string): Promise<Session | undefined> {
    let id = sessionId;
    if (id === undefined) {
      id = (await this.pickSession())?.id;
      if (id === undefined) {
        return undefined;
      }
    }
    const { session } = await this.server.execute<{ session: Session }>(ServerCommand.sessionResume, { sessionId: id });
    await this.openChat();
    return session;
  }

  /**
   * Search what the sessions hold (a QuickPick that searches as the user types, starting
   * from `query`) and open the hit picked: its session resumed, the chat scrolled to its
   * message. A hit of another project is not opened here unless the user says so.
   */
  async searchSessions(query?: string, allProjects?: boolean): Promise<SearchHit | undefined> {
    const hit = await new SessionSearch(this.server, (projectPath) => this.isThisProject(projectPath)).pick(query, allProjects);
    if (!hit) {
      return undefined;
    }
    if (!this.isThisProject(hit.projectPath)) {
      const answer = await vscode.window.showWarningMessage(
        `Seri: “${sessionTitle(hit.title)}” belongs to another project, ${hit.projectPath}. Its tools would work in the folder open here; open its own folder to go on with it.`,
        OPEN_FOLDER,
        OPEN_HERE,
      );
      if (answer === OPEN_FOLDER) {
        await vscode.commands.executeCommand('vscode.openFolder', vscode.Uri.file(hit.projectPath), { forceNewWindow: true });
        return hit;
      }
      if (answer !== OPEN_HERE) {
        return undefined;
      }
    }
    await this.server.execute<{ session: Session }>(ServerCommand.sessionResume, { sessionId: hit.sessionId });
    await this.openChat();
    await this.model.reveal(hit.sessionId, hit.messageId);
    return hit;
  }

  /** Whether `projectPath` (a session's project) is the folder open in this window. */
  private isThisProject(projectPath: string): boolean {
    const folder = projectFolder()?.uri.fsPath;
    const real = (p: string): string => {
      try {
        return fs.realpathSync(p);
      } catch {
        return path.resolve(p);
      }
    };
    return folder !== undefined && (folder === projectPath || real(folder) === real(projectPath));
  }

  /** Give the open session a title of the user's (asked for, the current one to edit). */
  async renameSession(title?: string): Promise<Session | undefined> {
    let chosen = title;
    if (chosen === undefined) {
      const current = this.model.currentSession;
      chosen = await vscode.window.showInputBox({
        title: 'Seri: Rename Session',
        prompt: 'The session’s title (one line, at most 200 characters)',
        value: current ? sessionTitle(current.title) : '',
        validateInput: titleProblem,
      });
      if (chosen === undefined) {
        return undefined;
      }
    }
    // The chat's header follows from seri/sessionChanged (reason `renamed`).
    const { session } = await this.server.execute<{ session: Session }>(ServerCommand.sessionRename, { title: chosen.trim() });
    return session;
  }

  /**
   * Save the open session to a file (asked for): `.md` a transcript for people, `.json` a
   * bundle to import elsewhere; says how many secrets were redacted. Undefined when
   * cancelled.
   */
  async exportSession(target?: vscode.Uri): Promise<ExportResult | undefined> {
    const session = this.model.currentSession;
    if (!session) {
      void vscode.window.showInformationMessage('Seri: no session is open to export; resume one first.');
      return undefined;
    }
    let uri = target;
    if (uri === undefined) {
      const folder = projectFolder()?.uri;
      uri = await vscode.window.showSaveDialog({
        title: 'Seri: Export Session',
        saveLabel: 'Export',
        defaultUri: folder ? vscode.Uri.joinPath(folder, exportName(sessionTitle(session.title), 'md')) : undefined,
        filters: EXPORT_FILTERS,
      });
      if (uri === undefined) {
        return undefined;
      }
    }
    const name = path.posix.basename(uri.path);
    const format = formatFor(name);
    if (format === undefined) {
      throw new Error(`${name} names no format: export to a .md file (a transcript to read) or a .json file (a bundle to import).`);
    }
    const result = await this.server.execute<ExportResult>(ServerCommand.sessionExport, { sessionId: session.id, format });
    await writeWhole(uri, result.text);
    const what = format === 'json' ? 'as a bundle' : 'as a transcript';
    void vscode.window.showInformationMessage(`Seri: exported “${sessionTitle(session.title)}” to ${name} ${what}; ${redactionWords(result.redactions)}.`);
    return result;
  }

  /**
   * Import a session bundle (a `.json` export, asked for) as a new session of this
   * project, and open it in the chat. Undefined when cancelled.
   */
  async importSession(source?: vscode.Uri): Promise<ImportResult | undefined> {
    let uri = source;
    if (uri === undefined) {
      const picked = await vscode.window.showOpenDialog({
        title: 'Seri: Import Session',
        openLabel: 'Import',
        canSelectMany: false,
        defaultUri: projectFolder()?.uri,
        filters: { 'Seri session bundle': ['json'] },
      });
      uri = picked?.[0];
      if (uri === undefined) {
        return undefined;
      }
    }
    const text = await readBundle(uri);
    const result = await this.server.execute<ImportResult>(ServerCommand.sessionImport, { text });
    await this.server.execute<{ session: Session }>(ServerCommand.sessionResume, { sessionId: result.session.id });
    await this.openChat();
    const title = sessionTitle(result.session.title);
    void vscode.window.showInformationMessage(
      result.alreadyImported
        ? `Seri: ${path.posix.basename(uri.path)} was imported before: opened “${title}”, the session it made then.`
        : `Seri: imported “${title}” as a new session of this project (${plural(result.session.messageCount, 'message')}).`,
    );
    return result;
  }

  /**
   * Fork the open session at message `messageId` (default: its last message): a new
   * session holding the conversation up to there opens in the chat; the original stays.
   */
  async forkSession(messageId?: number): Promise<ForkResult> {
    const result = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'Seri: forking' }, () =>
      this.model.fork(messageId),
    );
    await this.openChat();
    return result;
  }

  /** The QuickPick of this project's sessions: title, relative date, message count. */
  async pickSession(): Promise<Session | undefined> {
    const { sessions } = await this.server.execute<{ sessions: Session[] }>(ServerCommand.sessionList, { limit: 100 });
    const current = this.model.currentSession?.id;
    const items = sessions.map(
      (session): SessionPickItem => ({
        label: sessionTitle(session.title),
        description: [relativeTime(session.updatedAt), plural(session.messageCount, 'message'), spendWords(session.spend)]
          .filter(Boolean)
          .join(' · '),
        detail: session.id === current ? `${session.id} (open now)` : session.id,
        session,
      }),
    );
    const picked = await vscode.window.showQuickPick(items, {
      title: 'Seri: Resume Session',
      placeHolder: 'Pick a session of this project to continue',
      matchOnDescription: true,
      matchOnDetail: true,
    });
    return picked?.session;
  }

  /** Compact now; `focus` (else asked for) steers the recap. */
  async compact(focus?: string): Promise<CompactResult | undefined> {
    let words = focus;
    if (words === undefined) {
      words = await vscode.window.showInputBox({
        title: 'Seri: Compact Context',
        prompt: 'Focus words for the recap (optional): what must it keep?',
        placeHolder: 'e.g. the parser decisions and the failing test',
      });
      if (words === undefined) {
        return undefined;
      }
    }
    const args = words.trim() ? { focus: words.trim() } : {};
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: 'Seri: compacting' },
      () => this.server.execute<CompactResult>(ServerCommand.compact, args),
    );
    if (result.compacted) {
      const tokens =
        result.tokensBefore !== undefined && result.tokensAfter !== undefined
          ? ` (${formatTokens(result.tokensBefore)} → ${formatTokens(result.tokensAfter)} tokens)`
          : '';
      void vscode.window.showInformationMessage(`Seri: compacted ${plural(result.evicted, 'message')} into a recap${tokens}.`);
    } else {
      // The server shows the same words; an identical notification is shown once.
      void vscode.window.showInformationMessage(result.message ?? 'Nothing was compacted.');
    }
    return result;
  }

  async clear(): Promise<Session> {
    const { session } = await this.server.execute<{ session: Session }>(ServerCommand.clear);
    await this.openChat();
    return session;
  }

  async setMaxTurns(n?: number): Promise<number | undefined> {
    let turns = n;
    if (turns === undefined) {
      const answer = await vscode.window.showInputBox({
        title: 'Seri: Set Max Turns',
        prompt: 'Model calls allowed per task in this session',
        value: String(this.model.currentSession?.maxTurns ?? ''),
        validateInput: (value) => (/^\s*[1-9]\d*\s*$/.test(value) ? undefined : 'A whole number of at least 1'),
      });
      if (answer === undefined) {
        return undefined;
      }
      turns = Number(answer.trim());
    }
    const result = await this.server.execute<{ maxTurns: number; session?: Session }>(ServerCommand.maxTurns, { n: turns });
    void this.model.refreshUsage();
    void vscode.window.showInformationMessage(`Seri: at most ${result.maxTurns} turns per task in this session.`);
    return result.maxTurns;
  }

  /**
   * Go back to before a prompt. With `request.steps` it rewinds at once; without, the user
   * picks the prompt (QuickPick over `seri.checkpoints`), then what to restore, and, when
   * files were changed since seri wrote them, whether to overwrite them. The removed
   * prompt goes back into the chat input; files left alone or not restored are listed in
   * a warning. Undefined when the user cancelled.
   */
  async rewind(request?: RewindRequest): Promise<RewindResult | undefined> {
    let chosen = request;
    if (chosen?.steps === undefined) {
      chosen = await this.pickRewind();
      if (chosen === undefined) {
        return undefined;
      }
    }
    const restore = chosen.restore ?? 'both';
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: 'Seri: rewinding' },
      () => this.server.execute<RewindResult>(ServerCommand.rewind, { ...chosen }),
    );
    if (typeof result.prompt === 'string') {
      this.model.returnRewound(result.prompt);
      await this.openChat();
    }
    const restored = result.restoredFiles.length > 0 ? `; restored ${result.restoredFiles.join(', ')}` : '';
    // A file that could not be put back keeps the conversation: only files were rewound.
    const done = result.conversationKept === true ? 'files' : restore;
    void vscode.window.showInformationMessage(
      `Seri: rewound ${plural(result.rewound, 'prompt')} (${RESTORED[done]})${restored}.`,
    );
    const problems = rewindProblems(result);
    if (problems) {
      const hint =
        result.conflicts.length > 0 && restore === 'files'
          ? ` Rewind the files again and choose “${OVERWRITE}” to replace them.`
          : '';
      void vscode.window.showWarningMessage(`Seri: ${problems}${hint}`);
    }
    return result;
  }

  /** The pickers of "Seri: Rewind...": which prompt, what to restore, whether to overwrite. */
  private async pickRewind(): Promise<RewindRequest | undefined> {
    const { checkpoints, retired } = await this.server.execute<CheckpointList>(ServerCommand.checkpoints);
    if (checkpoints.length === 0) {
      if (retired) {
        void vscode.window.showWarningMessage(
          'Seri: this session’s checkpoints were retired (seri keeps them for the 20 most recently used sessions of a project); its conversation is intact.',
        );
      } else {
        void vscode.window.showInformationMessage('Seri: there is nothing to rewind in this session.');
      }
      return undefined;
    }
    const items = checkpoints.map(
      (checkpoint): CheckpointPickItem => ({
        label: checkpoint.prompt || '(empty prompt)',
        description: `${relativeTime(checkpoint.createdAt)} · ${
          checkpoint.files.length > 0 ? checkpoint.files.join(', ') : 'no files changed'
        }`,
        detail:
          checkpoint.conflicts.length > 0 ? `$(warning) changed since seri wrote them: ${checkpoint.conflicts.join(', ')}` : undefined,
        checkpoint,
      }),
    );
    const picked = await vscode.window.showQuickPick(items, {
      title: 'Seri: Rewind',
      placeHolder: 'Go back to before which prompt? (newest first)',
      matchOnDescription: true,
    });
    if (!picked) {
      return undefined;
    }
    const checkpoint = picked.checkpoint;
    const restore = await vscode.window.showQuickPick(RESTORE_ITEMS, {
      title: `Seri: Rewind to before “${checkpoint.prompt}”`,
      placeHolder: 'Restore what?',
    });
    if (!restore) {
      return undefined;
    }
    const chosen: RewindRequest = { steps: checkpoint.steps, restore: restore.restore };
    if (checkpoint.conflicts.length > 0 && restore.restore !== 'conversation') {
      const answer = await vscode.window.showWarningMessage(
        `${plural(checkpoint.conflicts.length, 'file')} changed since seri wrote them: ${checkpoint.conflicts.join(', ')}. Overwrite them with their content from before the prompt?`,
        { modal: true, detail: `“${LEAVE_ALONE}” restores the other files and lists these.` },
        OVERWRITE,
        LEAVE_ALONE,
      );
      if (answer === undefined) {
        return undefined;
      }
      chosen.force = answer === OVERWRITE;
    }
    return chosen;
  }

  /**
   * Show whether runs are recorded, then turn recording the other way (or to `enabled`),
   * saying where the result comes from. The server's warning (SERI_TRAJECTORY_ENABLED in
   * its environment overrides the stored toggle) is shown as a warning.
   */
  async toggleTrajectory(enabled?: boolean): Promise<TrajectoryState> {
    let target = enabled;
    let current: TrajectoryState | undefined;
    if (target === undefined) {
      current = await this.server.execute<TrajectoryState>(ServerCommand.trajectory);
      target = !current.enabled;
    }
    const result = await this.server.execute<TrajectoryState>(ServerCommand.trajectory, { enabled: target });
    // The server's sentence says what is in force and why (the variable, config.json).
    let message = `Seri: ${result.message ?? `Trajectory recording is ${onOff(result)}.`}`;
    if (current && current.enabled !== result.enabled) {
      message += ` It was ${onOff(current)}.`;
    }
    void vscode.window.showInformationMessage(message);
    if (result.warning) {
      void vscode.window.showWarningMessage(`Seri: ${result.warning}`);
    }
    return result;
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
