// What the editor attaches to a prompt (`seri.prompt`'s `context`): the selection (its
// path, lines and text) or the file (its path, and its text when unsaved).

import * as vscode from 'vscode';

import type { PromptContext } from './protocol';
import { relativePath } from './workspaceFiles';

/** The text editor the user means: the active one, else the first visible one (the chat has focus). */
export function editorForAttaching(): vscode.TextEditor | undefined {
  const usable = (editor: vscode.TextEditor | undefined): boolean =>
    editor !== undefined && ['file', 'untitled'].includes(editor.document.uri.scheme);
  const active = vscode.window.activeTextEditor;
  return usable(active) ? active : vscode.window.visibleTextEditors.find(usable);
}

/** The editor's selections (empty ones left out), each with its lines and text. */
export function selectionContext(editor: vscode.TextEditor): PromptContext[] {
  return editor.selections
    .filter((selection) => !selection.isEmpty)
    .map((selection) => {
      // A selection of whole lines ends at the start of the next line: not part of it.
      const end = selection.end.character === 0 && selection.end.line > selection.start.line ? selection.end.line - 1 : selection.end.line;
      return {
        path: documentPath(editor.document),
        startLine: selection.start.line + 1,
        endLine: end + 1,
        text: editor.document.getText(selection),
      };
    });
}

/** The editor's file: its path, and its text when it holds unsaved changes (or was never saved). */
export function bufferContext(document: vscode.TextDocument): PromptContext {
  const unsaved = document.isDirty || document.isUntitled;
  return unsaved ? { path: documentPath(document), text: document.getText() } : { path: documentPath(document) };
}

function documentPath(document: vscode.TextDocument): string {
  if (document.isUntitled) {
    return document.uri.path;
  }
  return relativePath(document.uri) ?? document.uri.fsPath;
}
