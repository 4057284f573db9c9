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

  test('Apply to File with a block that names no file asks for the path, shows the diff, then writes it', async () => {
    const api = await activated();
    const folder = vscode.workspace.workspaceFolders![0].uri.fsPath;
    const target = path.join(folder, 'asked_for.py');
    fs.rmSync(target, { force: true });
    const window = vscode.window as unknown as Record<string, unknown>;
    const saved = { showInputBox: window.showInputBox, showInformationMessage: window.showInformationMessage };
    const asked: (vscode.InputBoxOptions | undefined)[] = [];
    const offered: string[] = [];
    let diffTitle = '';
    window.showInputBox = async (options?: vscode.InputBoxOptions) => {
      asked.push(options);
      return 'asked_for.py';
    };
    window.showInformationMessage = async (message: string) => {
      offered.push(message);
      const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
      diffTitle = tab?.input instanceof vscode.TabInputTextDiff ? tab.label : '';
      return 'Apply';
    };
    let applied = false;
    try {
      applied = await api.chatView.code.apply('def asked():\n    return 1\n');
    } finally {
      Object.assign(window, saved);
    }
    assert.strictEqual(applied, true);
    assert.strictEqual(asked.length, 1);
    assert.strictEqual(asked[0]?.title, 'Seri: Apply Code to File');
    assert.deepStrictEqual(offered, ['Seri: create asked_for.py with the code block?']);
    assert.strictEqual(diffTitle, 'asked_for.py ↔ code block from the chat', 'the diff shown while asking');
    assert.strictEqual(fs.readFileSync(target, 'utf8'), 'def asked():\n    return 1\n');
  });

  test('Apply to File with a block that shows one function replaces that function and keeps the rest of the file', async () => {
    const api = await activated();
    const before = [
      'import re',
      '',
      '',
      'def title(post):',
      '    return post["title"].strip()',
      '',
      '',
      'def slugify(text):',
      '    text = text.lower()',
      '    return re.sub(r"[^a-z0-9]+", "-", text)',
      '',
      '',
      'def tags(post):',
      '    return post["tags"][0]',
      '',
    ].join('\n');
    const fixed = 'def slugify(text, sep="-"):\n    text = text.lower().strip()\n    return re.sub(r"[^a-z0-9]+", sep, text).strip(sep)\n';
    const editor = await editorWith('fragment.py', before);
    const window = vscode.window as unknown as Record<string, unknown>;
    const saved = { showInformationMessage: window.showInformationMessage };
    const offered: string[] = [];
    let shown = '';
    window.showInformationMessage = async (message: string) => {
      offered.push(message);
      const tab = vscode.window.tabGroups.activeTabGroup.activeTab;
      if (tab?.input instanceof vscode.TabInputTextDiff) {
        shown = (await vscode.workspace.openTextDocument(tab.input.modified)).getText();
      }
      return 'Apply';
    };
    let applied = false;
    try {
      applied = await api.chatView.code.apply(fixed, 'fragment.py');
    } finally {
      Object.assign(window, saved);
    }
    const after = before.replace('def slugify(text):\n    text = text.lower()\n    return re.sub(r"[^a-z0-9]+", "-", text)\n', fixed);
    assert.strictEqual(applied, true);
    assert.deepStrictEqual(offered, ['Seri: apply the code block to fragment.py (lines 8-10)?']);
    assert.strictEqual(shown, after, 'the diff shows the merged file, not the block alone');
    assert.strictEqual(editor.document.getText(), after);
    assert.strictEqual(fs.readFileSync(editor.document.uri.fsPath, 'utf8'), after);
    assert.ok(after.includes('def title(post):') && after.includes('def tags(post):'), 'the rest of the file survives');

    // One undo takes the whole apply back.
    await vscode.window.showTextDocument(editor.document);
    await vscode.commands.executeCommand('undo');
    assert.strictEqual(editor.document.getText(), before);
  });

  test('Apply to File refuses a path outside the workspace, saying why, and writes nothing', async () => {
    const api = await activated();
    const window = vscode.window as unknown as Record<string, unknown>;
    const saved = { showErrorMessage: window.showErrorMessage };
    const errors: string[] = [];
    window.showErrorMessage = async (message: string) => {
      errors.push(message);
      return undefined;
    };
    let applied = true;
    try {
      applied = await api.chatView.code.apply('x = 1\n', '../outside.py');
    } finally {
      Object.assign(window, saved);
    }
    assert.strictEqual(applied, false);
    assert.strictEqual(errors.length, 1);
    assert.match(errors[0], /^Seri: Cannot apply the code block: the (absolute )?path .* is outside the workspace/);
  });
});
