import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';

import { activated } from './helpers';

suite('Code block actions', () => {
  async function editorWith(name: string, text: string): Promise<vscode.TextEditor> {
    const folder = vscode.workspace.workspaceFolders![0].uri.fsPath;
    const file = path.join(folder, name);
    fs.writeFileSync(file, text);
    const editor = await vscode.window.showTextDocument(vscode.Uri.file(file));
    return editor;
  }

  test('Insert at Cursor mid-line puts the code in the line, with no stray newline splitting it', async () => {
    const api = await activated();
    const editor = await editorWith('insert_mid.py', 'result = compute(value)\nnext_line()\n');
    const at = new vscode.Position(0, 'result = '.length);
    editor.selection = new vscode.Selection(at, at);
    await api.chatView.code.insert('other(value) + \n');
    assert.strictEqual(editor.document.getText(), 'result = other(value) + compute(value)\nnext_line()\n');
  });

  test('Insert at Cursor at the start of a line inserts the block as it is, lines above it', async () => {
    const api = await activated();
    const editor = await editorWith('insert_start.py', 'def main():\n    pass\n');
    const at = new vscode.Position(0, 0);
    editor.selection = new vscode.Selection(at, at);
    await api.chatView.code.insert('import os\n');
    assert.strictEqual(editor.document.getText(), 'import os\ndef main():\n    pass\n');
  });
});
