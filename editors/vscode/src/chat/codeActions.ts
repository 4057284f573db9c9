// What a code block of a reply offers besides Copy: Insert at Cursor (into the text
// editor used last, since the chat has the focus when its button is pressed) and Apply to
// File: the server places the block in the file (`seri.code.merge`: a block that shows one
// function replaces that function, not the file), VS Code's diff editor shows the result
// (the file as it is on the left, merged on the right), and it is written only once the
// user applies it, as a write the task asks about is reviewed.

import * as path from 'path';
import * as vscode from 'vscode';

import { describe } from '../errors';
import type { CodeMerge } from '../protocol';
import { projectFolder } from '../settings';

/** Asks the server where `text` goes in `file` (a path the server reads as given). */
export type MergeCode = (file: string, text: string) => Promise<CodeMerge>;

export const APPLY_SCHEME = 'seri-apply';
export const APPLY = 'Apply';

export class CodeActions implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private lastEditor: vscode.TextEditor | undefined = vscode.window.activeTextEditor;
  private readonly texts = new Map<string, string>();
  private serial = 0;
  private readonly disposables: vscode.Disposable[];

  constructor(private readonly mergeCode: MergeCode) {
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
   * Apply `text` to `file` (asked for when the block names none): the server places it
   * (one function of the file replaced, or the whole file, or a new one), a diff shows
   * the result, then Apply writes it through the editor (undo works). True when applied.
   */
  async apply(text: string, file?: string): Promise<boolean> {
    const folder = projectFolder();
    const named =
      file ??
      (await vscode.window.showInputBox({
        title: 'Seri: Apply Code to File',
        prompt: 'The file the code block goes into (workspace-relative; a new file is created)',
        value: this.relative(this.target()?.document.uri),
        ignoreFocusOut: true,
      }));
    if (!named?.trim() || !folder) {
      return false;
    }
    const uri = path.isAbsolute(named) ? vscode.Uri.file(named) : vscode.Uri.joinPath(folder.uri, named.trim());
    let merged: CodeMerge;
    try {
      merged = await this.mergeCode(uri.fsPath, text);
    } catch (error) {
      void vscode.window.showErrorMessage(`Seri: ${describe(error)}`);
      return false;
    }
    const exists = merged.mode !== 'create';
    const proposed = vscode.Uri.from({ scheme: APPLY_SCHEME, path: uri.path, query: `n=${++this.serial}` });
    this.texts.set(proposed.toString(), merged.text);
    let left = uri;
    if (!exists) {
      left = vscode.Uri.from({ scheme: APPLY_SCHEME, path: uri.path, query: `n=${this.serial}&empty` });
      this.texts.set(left.toString(), '');
    }
    const name = path.basename(uri.path);
    await vscode.commands.executeCommand('vscode.diff', left, proposed, `${name} ↔ code block from the chat`, { preview: true });
    if (merged.range) {
      await this.reveal(proposed, merged.range.startLine);
    }
    const answer = await vscode.window.showInformationMessage(question(named.trim(), merged), APPLY, 'Discard');
    await this.closeDiff(proposed);
    this.texts.delete(proposed.toString());
    this.texts.delete(left.toString());
    if (answer !== APPLY) {
      return false;
    }
    const edit = new vscode.WorkspaceEdit();
    if (exists) {
      const document = await vscode.workspace.openTextDocument(uri);
      edit.replace(uri, new vscode.Range(0, 0, document.lineCount, 0), merged.text);
    } else {
      edit.createFile(uri, { ignoreIfExists: true });
      edit.insert(uri, new vscode.Position(0, 0), merged.text);
    }
    const applied = await vscode.workspace.applyEdit(edit);
    if (applied) {
      await (await vscode.workspace.openTextDocument(uri)).save();
    }
    return applied;
  }

  /** Scroll the diff to where the block went in (1-based `line` of the merged text). */
  private async reveal(proposed: vscode.Uri, line: number): Promise<void> {
    const editor = vscode.window.visibleTextEditors.find((shown) => shown.document.uri.toString() === proposed.toString());
    const at = new vscode.Position(Math.max(0, line - 1), 0);
    editor?.revealRange(new vscode.Range(at, at), vscode.TextEditorRevealType.AtTop);
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

/** What the user is asked, saying where the block goes. */
function question(file: string, merged: CodeMerge): string {
  switch (merged.mode) {
    case 'create':
      return `Seri: create ${file} with the code block?`;
    case 'whole':
      return `Seri: replace ${file} with the code block?`;
    case 'append':
      return `Seri: add the code block to the end of ${file}?`;
    case 'fragment': {
      const range = merged.range;
      const lines = !range ? '' : range.startLine === range.endLine ? ` (line ${range.startLine})` : ` (lines ${range.startLine}-${range.endLine})`;
      return `Seri: apply the code block to ${file}${lines}?`;
    }
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
