// The chat view: a webview view that renders the ChatModel and sends what the user types.
// The model lives in the extension, so the view rebuilds itself from it whenever its
// webview is created again (shown after being hidden, or after a window reload, when the
// model itself was rebuilt from the server).

import * as crypto from 'crypto';
import * as path from 'path';
import * as vscode from 'vscode';

import { recordDocument } from './compactedRecord';
import { ChatModel } from './model';
import type { ChatChange } from './chatState';
import { CodeActions } from './codeActions';
import { Proposals } from './proposals';
import { FromWebview, MenuAction, ToWebview } from './webviewProtocol';
import { bufferContext, editorForAttaching, selectionContext } from '../attachments';
import { inEditorWords } from '../format';
import { Commands, FOCUS_CHAT } from '../ids';
import type { PromptContext } from '../protocol';
import { describe } from '../errors';
import { projectFolder } from '../settings';
import { WorkspaceFiles } from '../workspaceFiles';

/** The documents that show the record of compacted turns (read-only). */
const RECORD_SCHEME = 'seri-record';

/** The confirming button of "Rewind to here". */
export const REWIND = 'Rewind';

const MENU_COMMANDS: Record<MenuAction, string> = {
  new: Commands.newSession,
  resume: Commands.resumeSession,
  search: Commands.searchSessions,
  rename: Commands.renameSession,
  export: Commands.exportSession,
  import: Commands.importSession,
  continue: Commands.continueSession,
  clear: Commands.clear,
  compact: Commands.compact,
  maxTurns: Commands.setMaxTurns,
  model: Commands.selectModel,
  rewind: Commands.rewind,
  fork: Commands.forkSession,
};

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private ready = false;
  // The extension set the input while the webview was not there to take it.
  private inputPending = false;
  // Attachments made while the webview was not there (Send Selection to Chat opens it).
  private attachPending: PromptContext[] = [];
  private focusPending = false;
  // A message to scroll to once the webview is there (a search hit opened the chat).
  private revealPending: number | undefined;
  private readonly unsubscribe: () => void;
  private viewDisposables: vscode.Disposable[] = [];
  /** The code blocks' Insert at Cursor and Apply to File (tests drive them too). */
  readonly code: CodeActions;

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly model: ChatModel,
    private readonly log: vscode.LogOutputChannel,
    private readonly files: WorkspaceFiles,
    private readonly proposals: Proposals,
  ) {
    this.unsubscribe = model.onDidChange((change) => this.forward(change));
    this.code = new CodeActions((file, text) => model.mergeCode(file, text));
  }

  /** True while the chat is on screen (read by the tests). */
  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  /** True once the webview has loaded its script and received the model. */
  get rendered(): boolean {
    return this.ready && this.visible;
  }

  resolveWebviewView(view: vscode.WebviewView): void {
    this.viewDisposables.forEach((d) => d.dispose());
    this.view = view;
    this.ready = false;
    const webviewRoot = vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview');
    view.webview.options = { enableScripts: true, localResourceRoots: [webviewRoot] };
    view.webview.html = this.html(view.webview, webviewRoot);
    this.viewDisposables = [
      view.webview.onDidReceiveMessage((message: FromWebview) => this.receive(message)),
      view.onDidChangeVisibility(() => {
        // A hidden webview is torn down; it says `ready` again when shown.
        if (!view.visible) {
          this.ready = false;
        }
      }),
      view.onDidDispose(() => {
        if (this.view === view) {
          this.view = undefined;
          this.ready = false;
        }
      }),
    ];
  }

  /** Put the cursor in the chat input (after "Seri: Open Chat"), also once a new webview is ready. */
  focusInput(): void {
    if (this.ready) {
      this.post({ type: 'focusInput' });
    } else {
      this.focusPending = true;
    }
  }

  /** Attach files or lines to the next prompt: chips in the input, sent with it. */
  attach(context: PromptContext[]): void {
    if (this.ready) {
      this.post({ type: 'attach', context });
    } else {
      this.attachPending.push(...context);
    }
  }

  private forward(change: ChatChange): void {
    if (change.kind === 'questions' && change.asked && !this.visible) {
      // A question nobody sees blocks the task: show the chat, leaving the focus where it is.
      void vscode.commands.executeCommand(FOCUS_CHAT, { preserveFocus: true });
    }
    if (!this.ready) {
      // The webview asks for a full snapshot when it is ready; the input comes after it.
      if (change.kind === 'input') {
        this.inputPending = true;
        this.attachPending.push(...(change.context ?? []));
      } else if (change.kind === 'reveal') {
        this.revealPending = change.messageId;
      }
      return;
    }
    switch (change.kind) {
      case 'reset':
        this.post({ type: 'reset', snapshot: this.model.snapshot(), reveal: change.reveal });
        break;
      case 'append':
        this.post({ type: 'append', message: change.message });
        break;
      case 'prepend':
        this.post({ type: 'prepend', messages: change.messages, hasMore: change.hasMore });
        break;
      case 'streaming':
        this.post({ type: 'streaming', text: change.text });
        break;
      case 'toolOutput':
        this.post({ type: 'toolOutput', callId: change.callId, text: change.text });
        break;
      case 'notice':
        this.post({ type: 'notice', notice: change.notice });
        break;
      case 'input':
        this.post({ type: 'setInput', text: change.text, context: change.context });
        break;
      case 'reveal':
        this.post({ type: 'reveal', messageId: change.messageId });
        break;
      case 'questions':
      case 'state': {
        const { messages: _m, notices: _n, streaming: _s, toolOutputs: _t, ...state } = this.model.snapshot();
        this.post({ type: 'state', snapshot: state });
        break;
      }
    }
  }

  private async receive(message: FromWebview): Promise<void> {
    try {
      switch (message.type) {
        case 'ready':
          this.ready = true;
          this.post({ type: 'reset', snapshot: this.model.snapshot() });
          if (this.inputPending) {
            this.inputPending = false;
            this.post({ type: 'setInput', text: this.model.input });
          } else {
            this.model.noteDraft(message.draft ?? '');
          }
          if (this.attachPending.length > 0) {
            this.post({ type: 'attach', context: this.attachPending.splice(0) });
          }
          if (this.focusPending) {
            this.focusPending = false;
            this.post({ type: 'focusInput' });
          }
          if (this.revealPending !== undefined) {
            this.post({ type: 'reveal', messageId: this.revealPending });
            this.revealPending = undefined;
          }
          break;
        case 'draft':
          this.model.noteDraft(message.text);
          break;
        case 'send':
          await this.send(message.text, message.context);
          break;
        case 'stop':
          await vscode.commands.executeCommand(Commands.stop);
          break;
        case 'stopTool':
          await this.model.stopTool(message.callId);
          break;
        case 'menu':
          await vscode.commands.executeCommand(MENU_COMMANDS[message.action]);
          break;
        case 'loadOlder':
          await this.model.loadOlder();
          break;
        case 'openLink':
          if (/^(https?|mailto):/i.test(message.href)) {
            await vscode.env.openExternal(vscode.Uri.parse(message.href, true));
          }
          break;
        case 'openFile':
          await this.openFile(message.path, message.line);
          break;
        case 'copy':
          await vscode.env.clipboard.writeText(message.text);
          break;
        case 'answer':
          this.model.answer(message.id, message.choice, message.note);
          break;
        case 'review':
          if (!(await this.proposals.review(message.id))) {
            this.model.addNotice('warning', 'That change can no longer be reviewed: its question was answered or withdrawn.');
          }
          break;
        case 'unqueue':
          this.model.unqueue(message.id);
          break;
        case 'retry':
          await this.model.retry(message.id);
          break;
        case 'insertCode':
          await this.code.insert(message.text);
          break;
        case 'applyCode':
          await this.code.apply(message.text, message.path);
          break;
        case 'rewindTo':
          await this.rewindTo(message.id);
          break;
        case 'fork':
          await this.model.fork(message.id);
          this.focusInput();
          break;
        case 'resume':
          await vscode.commands.executeCommand(Commands.resumeSession, message.sessionId);
          break;
        case 'openCompacted':
          await this.openCompacted();
          break;
        case 'findFiles':
          this.post({ type: 'files', seq: message.seq, paths: await this.files.find(message.query) });
          break;
        case 'resolvePaths': {
          const found = await Promise.all(message.paths.map(async (p) => [p, (await this.files.resolve(p)) ?? null] as const));
          this.post({ type: 'resolvedPaths', resolved: Object.fromEntries(found) });
          break;
        }
        case 'attach': {
          const context = this.editorContext(message.what);
          if (context.length > 0) {
            this.post({ type: 'attach', context });
          }
          break;
        }
      }
    } catch (error) {
      this.log.error(`Chat view: ${describe(error)}`);
      this.model.addNotice('error', inEditorWords(describe(error)));
    }
  }

  private async send(raw: string, attached: PromptContext[]): Promise<void> {
    const text = raw.trim();
    if (!text) {
      return;
    }
    // A command the server marks `picker`, typed bare, opens the palette command's
    // picker (`/resume`: the sessions, `/model`: the models, `/rewind`: the prompts).
    const bare = /^\/([a-z][a-z-]*)$/.exec(text)?.[1];
    const picker = bare !== undefined ? this.model.slashCommand(bare) : undefined;
    if (picker?.picker && Object.hasOwn(MENU_COMMANDS, picker.name)) {
      await vscode.commands.executeCommand(MENU_COMMANDS[picker.name as MenuAction]);
      return;
    }
    // `#selection` / `#buffer` left in the text (typed, then sent at once) attach too.
    const words = new Set([...text.matchAll(/(?:^|\s)#(selection|buffer)\b/g)].map((match) => match[1] as 'selection' | 'buffer'));
    const context = [...attached, ...[...words].flatMap((word) => this.editorContext(word))];
    await this.model.submit({ text, context: context.length > 0 ? context : undefined });
  }

  /** `#selection` or `#buffer`, from the editor the user means; a notice when there is none. */
  private editorContext(what: 'selection' | 'buffer'): PromptContext[] {
    const editor = editorForAttaching();
    if (!editor) {
      this.model.addNotice('warning', `No editor to attach #${what} from: open a file first.`);
      return [];
    }
    if (what === 'buffer') {
      return [bufferContext(editor.document)];
    }
    const selected = selectionContext(editor);
    if (selected.length === 0) {
      this.model.addNotice('warning', 'Nothing is selected in the editor: select the lines to attach first (or use #buffer for the whole file).');
    }
    return selected;
  }

  /** Open a workspace file at a line: as written, or the one a bare name stands for. */
  private async openFile(written: string, line?: number): Promise<void> {
    const folder = projectFolder();
    const file = await this.files.resolve(written);
    if (!folder || file === undefined) {
      this.model.addNotice('warning', `No file ${written} in this workspace.`);
      return;
    }
    const target = vscode.Uri.file(path.join(folder.uri.fsPath, file));
    const position = new vscode.Position(Math.max(0, (line ?? 1) - 1), 0);
    await vscode.window.showTextDocument(target, {
      preview: true,
      selection: line ? new vscode.Range(position, position) : undefined,
    });
  }

  private post(message: ToWebview): void {
    void this.view?.webview.postMessage(message);
  }

  private html(webview: vscode.Webview, root: vscode.Uri): string {
    const nonce = crypto.randomBytes(16).toString('base64');
    const script = webview.asWebviewUri(vscode.Uri.joinPath(root, 'main.js'));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(root, 'main.css'));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `font-src ${webview.cspSource}`,
      // Markdown images are off and icons are inline SVG: no remote or data: images.
      `img-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
    ].join('; ');
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}">
<title>Seri Chat</title>
</head>
<body>
<div id="app"></div>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
  }

  /**
   * The record of the turns the recap replaced, as a read-only markdown document (a
   * `seri-record:` document: nothing to save, read afresh each time it is opened).
   */
  private async openCompacted(): Promise<void> {
    const record = await this.model.compactedRecord();
    if (!this.records) {
      const texts = new Map<string, string>();
      const changed = new vscode.EventEmitter<vscode.Uri>();
      this.records = { texts, changed };
      this.recordProvider = vscode.workspace.registerTextDocumentContentProvider(RECORD_SCHEME, {
        onDidChange: changed.event,
        provideTextDocumentContent: (uri) => texts.get(uri.toString()) ?? '',
      });
    }
    const uri = vscode.Uri.from({ scheme: RECORD_SCHEME, path: `/Before the compaction ${(record.sessionId ?? '').slice(0, 8)}.md` });
    this.records.texts.set(uri.toString(), recordDocument(record));
    this.records.changed.fire(uri);
    const document = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(document, 'markdown');
    await vscode.window.showTextDocument(document, { preview: true });
  }

  private records?: { texts: Map<string, string>; changed: vscode.EventEmitter<vscode.Uri> };
  private recordProvider?: vscode.Disposable;

  /** "Rewind to here" on a prompt: after a confirmation, back to before it (files too). */
  private async rewindTo(id: number): Promise<void> {
    const answer = await vscode.window.showWarningMessage(
      'Rewind to before this prompt?',
      {
        modal: true,
        detail:
          'This prompt and everything after it leave the conversation, and the files its tasks changed go back to how they were. The prompt returns to the input to edit and send again.',
      },
      REWIND,
    );
    if (answer === REWIND) {
      await vscode.commands.executeCommand(Commands.rewind, { messageId: id, restore: 'both' });
      this.focusInput();
    }
  }

  dispose(): void {
    this.code.dispose();
    this.recordProvider?.dispose();
    this.records?.changed.dispose();
    this.unsubscribe();
    this.viewDisposables.forEach((d) => d.dispose());
  }
}
