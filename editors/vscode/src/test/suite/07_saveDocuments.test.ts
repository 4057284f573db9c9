import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';

import { saveEditedDocuments } from '../../edits';
import { projectFolder } from '../../settings';

suite('seri/saveDocuments in the real workbench', () => {
  test('an open document with unsaved edits is written to disk; a closed file counts as saved', async () => {
    const folder = projectFolder()!.uri.fsPath;
    const file = path.join(folder, 'src', 'app.py');
    const original = fs.readFileSync(file, 'utf8');
    const document = await vscode.workspace.openTextDocument(file);
    try {
      const edit = new vscode.WorkspaceEdit();
      edit.insert(document.uri, new vscode.Position(0, 0), '# checked\n');
      assert.ok(await vscode.workspace.applyEdit(edit));
      assert.strictEqual(document.isDirty, true);
      // The server's form of the uris: `file://` and the plain path.
      const open = `file://${file}`;
      const closed = `file://${path.join(folder, 'not-open.txt')}`;
      const result = await saveEditedDocuments({ uris: [open, closed] });
      assert.deepStrictEqual(result.saved, [open, closed]);
      assert.strictEqual(document.isDirty, false);
      assert.strictEqual(fs.readFileSync(file, 'utf8'), `# checked\n${original}`);
    } finally {
      const undo = new vscode.WorkspaceEdit();
      undo.replace(document.uri, new vscode.Range(0, 0, document.lineCount, 0), original);
      await vscode.workspace.applyEdit(undo);
      await document.save();
    }
  });
});
