// What a code block of a reply offers besides Copy: Insert at Cursor (into the text
// editor used last, since the chat has the focus when its button is pressed) and Apply to
// File: the block as the file's new content, shown in VS Code's diff editor (the file as
// it is on the left, the block on the right) and written only once the user applies it,
// as a write the task asks about is reviewed.

import * as path from 'path';
import * as vscode from 'vscode';

import { projectFolder } from '../settings';

export const APPLY_SCHEME = 'seri-apply';
export const APPLY = 'Apply';

export class CodeActions implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private lastEditor: vscode.TextEditor | undefined = vscode.window.activeTextEditor;
  private readonly texts = new Map<string, string>();
  private serial = 0;
  private readonly disposables: vscode.Disposable[];

  constructor() {
    this.disposables = [
      vscode.window.onDidChangeActiveTextEditor((editor) => {
        if (editor && editor.document.uri.scheme !== APPLY_SCHEME) {
          this.lastEditor = editor;
        }
      }),
      vscode.workspace.registerTextDocumentContentProvider(APPLY_SCHEME, this),
    ];
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }

  /** The text editor to insert into: the last one used that is still open. */
  private target(): vscode.TextEditor | undefined {
    const visible = vscode.window.visibleTextEditors.filter((editor) => editor.document.uri.scheme !== APPLY_SCHEME);
    if (this.lastEditor && visible.some((editor) => editor.document === this.lastEditor?.document)) {
      return visible.find((editor) => editor === this.lastEditor) ?? visible.find((editor) => editor.document === this.lastEditor?.document);
    }
    return visible[0];
  }

  /** Insert `text` at the cursor (replacing the selections) of the last active editor. */
  async insert(text: string): Promise<void> {
    const editor = this.target();
    if (!editor) {
      void vscode.window.showWarningMessage('Seri: no text editor is open to insert the code into; open a file first.');
      return;
    }
    await vscode.window.showTextDocument(editor.document, { viewColumn: editor.viewColumn, preserveFocus: false });
    await editor.edit((edit) => {
      for (const selection of editor.selections) {
        edit.replace(selection, insertion(text, selection));
      }
    });
  }

  /**
   * Offer `text` as the whole new content of `file` (asked for when the block names
   * none): a diff to look at, then Apply writes it through the editor (undo works).
   * True when it was applied.
   */
  async apply(text: string, file?: string): Promise<boolean> {
    const folder = projectFolder();
    const named =
      file ??
      (await vscode.window.showInputBox({
        title: 'Seri: Apply Code to File',
        prompt: 'The file the code block replaces (workspace-relative; a new file is created)',
        value: this.relative(this.target()?.document.uri),
        ignoreFocusOut: true,
      }));
    if (!named?.trim() || !folder) {
      return false;
    }
    const uri = path.isAbsolute(named) ? vscode.Uri.file(named) : vscode.Uri.joinPath(folder.uri, named.trim());
    let exists = true;
    try {
      await vscode.workspace.fs.stat(uri);
    } catch {
      exists = false;
    }
    const proposed = vscode.Uri.from({ scheme: APPLY_SCHEME, path: uri.path, query: `n=${++this.serial}` });
    this.texts.set(proposed.toString(), text);
    let left = uri;
    if (!exists) {
      left = vscode.Uri.from({ scheme: APPLY_SCHEME, path: uri.path, query: `n=${this.serial}&empty` });
      this.texts.set(left.toString(), '');
    }
    const name = path.basename(uri.path);
    await vscode.commands.executeCommand('vscode.diff', left, proposed, `${name} ↔ code block from the chat`, { preview: true });
    const answer = await vscode.window.showInformationMessage(
      exists ? `Seri: replace ${named} with the code block?` : `Seri: create ${named} with the code block?`,
      APPLY,
      'Discard',
    );
    await this.closeDiff(proposed);
    this.texts.delete(proposed.toString());
    this.texts.delete(left.toString());
    if (answer !== APPLY) {
      return false;
    }
    const edit = new vscode.WorkspaceEdit();
    if (exists) {
      const document = await vscode.workspace.openTextDocument(uri);
      edit.replace(uri, new vscode.Range(0, 0, document.lineCount, 0), text);
    } else {
      edit.createFile(uri, { ignoreIfExists: true });
      edit.insert(uri, new vscode.Position(0, 0), text);
    }
    const applied = await vscode.workspace.applyEdit(edit);
    if (applied) {
      await (await vscode.workspace.openTextDocument(uri)).save();
    }
    return applied;
  }

  private relative(uri: vscode.Uri | undefined): string {
    return uri && uri.scheme === 'file' ? vscode.workspace.asRelativePath(uri, false) : '';
  }

  private async closeDiff(proposed: vscode.Uri): Promise<void> {
    const tabs = vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .filter((tab) => tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.toString() === proposed.toString());
    if (tabs.length > 0) {
      await vscode.window.tabGroups.close(tabs, true);
    }
  }

  dispose(): void {
    this.disposables.forEach((disposable) => disposable.dispose());
  }
}

/**
 * The block's text as it goes in at `selection`: as it is at the start of a line (its
 * lines go above the rest), without its final newline elsewhere, which would otherwise
 * split the line the cursor is in.
 */
function insertion(text: string, selection: vscode.Selection): string {
  if (selection.start.character === 0) {
    return text;
  }
  return text.replace(/\r?\n$/, '');
}
