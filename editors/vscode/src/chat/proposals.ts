// A write the task asks about, reviewed in VS Code's own diff editor: the file as it is
// now on the left (an empty document for a new file), the proposed text on the right, a
// read-only virtual document whose path keeps the file's name (so its language is
// highlighted). The diff has Allow and Deny in its title bar; once the question is
// answered or withdrawn, its diff closes.

import * as path from 'path';
import * as vscode from 'vscode';

import { ChatModel } from './model';
import { projectFolder } from '../settings';

export const PROPOSAL_SCHEME = 'seri-proposal';

export class Proposals implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly disposables: vscode.Disposable[];

  constructor(private readonly model: ChatModel) {
    const unsubscribe = model.onDidChange((change) => {
      if (change.kind === 'questions') {
        void this.closeSettled();
      }
    });
    this.disposables = [vscode.workspace.registerTextDocumentContentProvider(PROPOSAL_SCHEME, this), { dispose: unsubscribe }];
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }

  /** Open the diff of write question `id`; false when it is not open or has no text to show. */
  async review(id: number): Promise<boolean> {
    const params = this.model.openQuestions.find((question) => question.id === id)?.params;
    const folder = projectFolder();
    if (params?.kind !== 'write' || params.proposed === undefined || !folder) {
      return false;
    }
    const proposed = this.uri(params.path, id, 'proposed');
    this.texts.set(proposed.toString(), params.proposed);
    let current: vscode.Uri;
    if (params.current === null || params.current === undefined) {
      current = this.uri(params.path, id, 'current');
      this.texts.set(current.toString(), '');
    } else {
      // The file itself: an open editor's text, unsaved changes included, as the server read it.
      current = path.isAbsolute(params.path) ? vscode.Uri.file(params.path) : vscode.Uri.joinPath(folder.uri, params.path);
    }
    const name = path.basename(params.path);
    const title = params.current === null ? `${name} (new file proposed by seri)` : `${name} ↔ seri's proposal`;
    await vscode.commands.executeCommand('vscode.diff', current, proposed, title, { preview: true });
    return true;
  }

  /** The question a proposal document belongs to (for the diff's Allow and Deny). */
  questionOf(uri: vscode.Uri | undefined): number | undefined {
    if (uri?.scheme !== PROPOSAL_SCHEME) {
      return undefined;
    }
    const id = Number(new URLSearchParams(uri.query).get('question'));
    return Number.isInteger(id) ? id : undefined;
  }

  private uri(file: string, id: number, side: 'current' | 'proposed'): vscode.Uri {
    return vscode.Uri.from({ scheme: PROPOSAL_SCHEME, path: `/${file.replace(/^\/+/, '')}`, query: `question=${id}&side=${side}` });
  }

  /** Close the diffs of questions no longer open, and forget their text. */
  private async closeSettled(): Promise<void> {
    const open = new Set(this.model.openQuestions.map((question) => question.id));
    const settled = (uri: vscode.Uri): boolean => {
      const id = this.questionOf(uri);
      return id !== undefined && !open.has(id);
    };
    for (const key of [...this.texts.keys()]) {
      if (settled(vscode.Uri.parse(key))) {
        this.texts.delete(key);
      }
    }
    const tabs = vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .filter((tab) => tab.input instanceof vscode.TabInputTextDiff && settled(tab.input.modified));
    if (tabs.length > 0) {
      await vscode.window.tabGroups.close(tabs, true);
    }
  }

  dispose(): void {
    this.disposables.forEach((disposable) => disposable.dispose());
  }
}
