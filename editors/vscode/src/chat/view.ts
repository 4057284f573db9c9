// The chat view: a webview view that renders the ChatModel and sends what the user types.
// The model lives in the extension, so the view rebuilds itself from it whenever its
// webview is created again (shown after being hidden, or after a window reload, when the
// model itself was rebuilt from the server).

import * as crypto from 'crypto';
import * as path from 'path';
import * as vscode from 'vscode';

import { ChatChange, ChatModel } from './model';
import { FromWebview, MenuAction, ToWebview } from './webviewProtocol';
import { Commands } from '../ids';
import { projectFolder } from '../settings';
import { describe } from '../server';

const MENU_COMMANDS: Record<MenuAction, string> = {
  new: Commands.newSession,
  resume: Commands.resumeSession,
  continue: Commands.continueSession,
  clear: Commands.clear,
  compact: Commands.compact,
  maxTurns: Commands.setMaxTurns,
  rewind: Commands.rewind,
};

export class ChatViewProvider implements vscode.WebviewViewProvider, vscode.Disposable {
  private view: vscode.WebviewView | undefined;
  private ready = false;
  // The extension set the input while the webview was not there to take it.
  private inputPending = false;
  private readonly unsubscribe: () => void;
  private viewDisposables: vscode.Disposable[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly model: ChatModel,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.unsubscribe = model.onDidChange((change) => this.forward(change));
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

  /** Put the cursor in the chat input (after "Seri: Open Chat"). */
  focusInput(): void {
    this.post({ type: 'focusInput' });
  }

  private forward(change: ChatChange): void {
    if (!this.ready) {
      // The webview asks for a full snapshot when it is ready; the input comes after it.
      this.inputPending ||= change.kind === 'input';
      return;
    }
    switch (change.kind) {
      case 'reset':
        this.post({ type: 'reset', snapshot: this.model.snapshot() });
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
      case 'notice':
        this.post({ type: 'notice', notice: change.notice });
        break;
      case 'input':
        this.post({ type: 'setInput', text: change.text });
        break;
      case 'state': {
        const { messages: _m, notices: _n, streaming: _s, ...state } = this.model.snapshot();
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
          break;
        case 'draft':
          this.model.noteDraft(message.text);
          break;
        case 'send':
          await this.send(message.text);
          break;
        case 'stop':
          await vscode.commands.executeCommand(Commands.stop);
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
          await this.openFile(message.path);
          break;
        case 'copy':
          await vscode.env.clipboard.writeText(message.text);
          break;
      }
    } catch (error) {
      this.log.error(`Chat view: ${describe(error)}`);
      this.model.addNotice('error', describe(error));
    }
  }

  private async send(raw: string): Promise<void> {
    const text = raw.trim();
    if (!text) {
      return;
    }
    if (text === '/resume') {
      // Without an id, pick one like "Seri: Resume Session..." does.
      await vscode.commands.executeCommand(Commands.resumeSession);
      return;
    }
    if (text === '/rewind') {
      // Without a count, pick the prompt like "Seri: Rewind..." does.
      await vscode.commands.executeCommand(Commands.rewind);
      return;
    }
    await this.model.send(text);
  }

  private async openFile(relative: string): Promise<void> {
    const folder = projectFolder();
    if (!folder) {
      return;
    }
    const target = vscode.Uri.file(path.resolve(folder.uri.fsPath, relative));
    const inside = path.relative(folder.uri.fsPath, target.fsPath);
    if (inside.startsWith('..') || path.isAbsolute(inside)) {
      return;
    }
    await vscode.window.showTextDocument(target, { preview: true });
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

  dispose(): void {
    this.unsubscribe();
    this.viewDisposables.forEach((d) => d.dispose());
  }
}
