import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';

import type { CheckpointPickItem, RestorePickItem } from '../../commands/rewind';
import { Commands } from '../../ids';
import type { RewindResult } from '../../protocol';
import { activated, provider, sessionView, stubWindow, waitFor } from './helpers';

const byPrompt =
  (prompt: string) =>
  (items: vscode.QuickPickItem[]): vscode.QuickPickItem | undefined =>
    (items as CheckpointPickItem[]).find((item) => item.checkpoint.prompt === prompt);
const restoring =
  (restore: RestorePickItem['restore']) =>
  (items: vscode.QuickPickItem[]): vscode.QuickPickItem | undefined =>
    (items as RestorePickItem[]).find((item) => item.restore === restore);

suite('Rewind', () => {
  const file = (): string => path.join(vscode.workspace.workspaceFolders![0].uri.fsPath, 'src', 'app.py');
  let original = '';

  suiteSetup(async () => {
    await provider.reset();
    await vscode.commands.executeCommand(Commands.newSession);
    original = fs.readFileSync(file(), 'utf8');
  });

  /** The file as VS Code has it (an open document's text, else the disk's). */
  async function text(): Promise<string> {
    return (await vscode.workspace.openTextDocument(file())).getText();
  }

  test('Rewind... picks a prompt, restores its file and puts the prompt back in the chat input', async () => {
    const api = await activated();
    await provider.script(
      { calls: [['e1', 'edit', { path: 'src/app.py', old_text: 'hello', new_text: 'rewound' }]] },
      { text: 'Changed the greeting.' },
    );
    assert.strictEqual((await api.model.send('Greet with rewound\nand nothing else')).status, 'done');
    assert.match(await text(), /rewound/);

    const ui = stubWindow([byPrompt('Greet with rewound'), restoring('both')]);
    let result: RewindResult | undefined;
    try {
      result = await vscode.commands.executeCommand<RewindResult>(Commands.rewind);
    } finally {
      ui.restore();
    }
    assert.strictEqual(result?.rewound, 1);
    const [checkpoints, restore] = ui.quickPicks;
    assert.deepStrictEqual(
      checkpoints.items.map((item) => item.label),
      ['Greet with rewound'],
    );
    assert.match(checkpoints.items[0].description ?? '', /^(now|\d+ seconds? ago) · src\/app\.py$/);
    assert.deepStrictEqual(
      restore.items.map((item) => item.label),
      ['Conversation and files', 'Conversation only', 'Files only'],
    );
    assert.strictEqual(await text(), original, 'the file is back');
    assert.strictEqual(fs.readFileSync(file(), 'utf8'), original, 'on disk too');
    assert.strictEqual(api.model.input, 'Greet with rewound\nand nothing else', 'the whole prompt is in the chat input');
    await waitFor(() => api.model.snapshot().messages.length === 0, 'the rewound exchange to leave the chat');
    assert.strictEqual((await sessionView(api)).messages.length, 0);
    assert.deepStrictEqual(ui.infos, ['Seri: rewound 1 prompt (the conversation and files); restored src/app.py.']);
    assert.deepStrictEqual(ui.warnings, []);
  });

  test('a file changed since is left alone and listed in a warning, then overwritten when asked to; Cancel changes nothing', async () => {
    const api = await activated();
    await provider.script(
      { calls: [['e2', 'edit', { path: 'src/app.py', old_text: 'hello', new_text: 'seri' }]] },
      { text: 'Said seri.' },
    );
    assert.strictEqual((await api.model.send('Say seri')).status, 'done');
    // The user changes the file in the editor and saves it.
    const document = await vscode.workspace.openTextDocument(file());
    const edit = new vscode.WorkspaceEdit();
    edit.replace(document.uri, new vscode.Range(0, 0, document.lineCount, 0), 'print("mine")\n');
    assert.ok(await vscode.workspace.applyEdit(edit));
    assert.ok(await document.save());

    // Cancelled at the question: nothing changes.
    let ui = stubWindow([byPrompt('Say seri'), restoring('both')], [undefined]);
    try {
      assert.strictEqual(await vscode.commands.executeCommand(Commands.rewind), undefined);
    } finally {
      ui.restore();
    }
    assert.strictEqual(ui.questions.length, 1);
    assert.deepStrictEqual(ui.infos, []);
    assert.strictEqual(await text(), 'print("mine")\n');
    assert.ok(api.model.snapshot().messages.some((m) => m.content === 'Said seri.'), 'the conversation is untouched');

    // Files only, leaving the changed file alone.
    const input = api.model.input;
    ui = stubWindow([byPrompt('Say seri'), restoring('files')], ['Leave Them Alone']);
    let result: RewindResult | undefined;
    try {
      result = await vscode.commands.executeCommand<RewindResult>(Commands.rewind);
    } finally {
      ui.restore();
    }
    const offered = ui.quickPicks[0].items[0];
    assert.match(offered.detail ?? '', /changed since seri wrote them: src\/app\.py/);
    assert.strictEqual(ui.questions.length, 1);
    assert.match(ui.questions[0].message, /src\/app\.py/);
    assert.deepStrictEqual(ui.questions[0].buttons, ['Overwrite', 'Leave Them Alone']);
    assert.deepStrictEqual(result?.conflicts, ['src/app.py']);
    assert.strictEqual(ui.warnings.length, 1);
    assert.match(ui.warnings[0], /^Seri: Left alone, changed since seri wrote them: src\/app\.py\./);
    assert.strictEqual(await text(), 'print("mine")\n', 'the changed file is left alone');
    assert.strictEqual(api.model.input, input, 'a files-only rewind brings back no prompt');
    assert.ok(api.model.snapshot().messages.some((m) => m.content === 'Said seri.'), 'the conversation stays');

    // Both, overwriting it.
    ui = stubWindow([byPrompt('Say seri'), restoring('both')], ['Overwrite']);
    try {
      result = await vscode.commands.executeCommand<RewindResult>(Commands.rewind);
    } finally {
      ui.restore();
    }
    assert.deepStrictEqual(result?.conflicts, []);
    assert.deepStrictEqual(result?.restoredFiles, ['src/app.py']);
    assert.deepStrictEqual(ui.warnings, []);
    assert.strictEqual(await text(), original, 'the file is back to before the prompt');
    // Back in the input, after what it held (the earlier rewound prompt, never sent).
    assert.ok(api.model.input.endsWith('Say seri'), api.model.input);
    await waitFor(() => api.model.snapshot().messages.length === 0, 'the chat to be empty again');
  });

  test('a file open in an editor is changed there, unsaved, and rewinding restores its text', async () => {
    const api = await activated();
    const editor = await vscode.window.showTextDocument(vscode.Uri.file(file()));
    await provider.script(
      { calls: [['e3', 'edit', { path: 'src/app.py', old_text: 'hello', new_text: 'in the editor' }]] },
      { text: 'Edited the open file.' },
    );
    assert.strictEqual((await api.model.send('Edit the open file')).status, 'done');
    assert.strictEqual(editor.document.getText(), 'print("in the editor")\n');
    assert.strictEqual(editor.document.isDirty, true, 'the user’s editor keeps the change unsaved');
    assert.strictEqual(fs.readFileSync(file(), 'utf8'), original, 'the disk is left to the user');

    const result = await vscode.commands.executeCommand<RewindResult>(Commands.rewind, { steps: 1 });
    assert.deepStrictEqual(result?.restoredFiles, ['src/app.py']);
    assert.strictEqual(editor.document.getText(), original, 'the editor’s text is back');
    assert.ok(api.model.input.endsWith('Edit the open file'), api.model.input);
    await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
  });

  test('a refusal is shown as the server words it; with nothing to rewind, no QuickPick', async () => {
    const ui = stubWindow([], []);
    try {
      assert.strictEqual(await vscode.commands.executeCommand(Commands.rewind, { steps: 3 }), undefined);
      assert.deepStrictEqual(ui.infos, []);
      assert.strictEqual(ui.errors.length, 1);
      assert.match(ui.errors[0], /^Seri: Cannot rewind 3 prompts: session \S+ has no prompt to rewind\.$/);
      // Nothing left to pick: said so, no QuickPick.
      assert.strictEqual(await vscode.commands.executeCommand(Commands.rewind), undefined);
      assert.deepStrictEqual(ui.infos, ['Seri: there is nothing to rewind in this session.']);
    } finally {
      ui.restore();
    }
  });

  test('Rewind to here asks before overwriting a file changed since: Cancel rewinds nothing, Overwrite puts it back', async () => {
    const api = await activated();
    const before = await text();
    await provider.script({ calls: [['w9', 'write_file', { path: 'src/app.py', content: 'written by seri\n' }]] }, { text: 'Rewrote it.' });
    assert.strictEqual((await api.model.send('Rewrite the app')).status, 'done');
    const id = api.model.snapshot().messages.filter((m) => m.role === 'user').at(-1)!.id;
    const document = await vscode.workspace.openTextDocument(file());
    const edit = new vscode.WorkspaceEdit();
    edit.insert(document.uri, new vscode.Position(0, 0), '# changed by hand\n');
    assert.ok(await vscode.workspace.applyEdit(edit));
    await document.save();

    const rewindHere = async (answer: string | undefined): Promise<{ result?: RewindResult; questions: { message: string; detail?: string; buttons: string[] }[] }> => {
      const ui = stubWindow([], [answer]);
      try {
        const result = await vscode.commands.executeCommand<RewindResult | undefined>(Commands.rewind, { messageId: id, restore: 'both' });
        return { result, questions: ui.questions };
      } finally {
        ui.restore();
      }
    };
    const cancelled = await rewindHere(undefined);
    assert.strictEqual(cancelled.result, undefined, 'Cancel rewinds nothing');
    assert.strictEqual(cancelled.questions.length, 1);
    assert.strictEqual(cancelled.questions[0].message, 'Overwrite 1 file changed since?');
    assert.match(cancelled.questions[0].detail ?? '', /src\/app\.py changed after seri wrote it/);
    assert.deepStrictEqual(cancelled.questions[0].buttons, ['Overwrite']);
    assert.strictEqual(await text(), '# changed by hand\nwritten by seri\n');

    const overwritten = await rewindHere('Overwrite');
    assert.deepStrictEqual(overwritten.result?.conflicts, []);
    assert.deepStrictEqual(overwritten.result?.restoredFiles, ['src/app.py']);
    assert.strictEqual(await text(), before);
  });
});
