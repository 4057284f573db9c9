import * as assert from 'assert';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';

import { Commands } from '../../ids';
import type { ExportResult, ImportResult, Session } from '../../protocol';
import { activated, provider, sessionView, stubWindow, waitFor } from './helpers';

const KEY = `sk-${'0123456789'.repeat(3)}`;

suite('Rename, export and import', () => {
  let folder: string;

  suiteSetup(async () => {
    folder = fs.mkdtempSync(path.join(os.tmpdir(), 'seri-export-'));
    await provider.reset();
    const api = await activated();
    await vscode.commands.executeCommand(Commands.newSession);
    await provider.script({ text: 'The lexer reads characters and makes tokens.', usage: 200 });
    assert.strictEqual((await api.model.send(`How does the lexer work? My key is ${KEY}.`)).status, 'done');
  });

  suiteTeardown(() => fs.rmSync(folder, { recursive: true, force: true }));

  test('Rename Session... gives the open session the title, and the chat shows it', async () => {
    const api = await activated();
    const session = await vscode.commands.executeCommand<Session>(Commands.renameSession, '  The lexer, explained  ');
    assert.strictEqual(session?.title, 'The lexer, explained');
    await waitFor(() => api.model.currentSession?.title === 'The lexer, explained', 'the chat’s session to carry the title');
  });

  test('Rename Session... with a title of two lines says why the server refused it', async () => {
    const api = await activated();
    const stub = stubWindow([]);
    try {
      assert.strictEqual(await vscode.commands.executeCommand(Commands.renameSession, 'one\ntwo'), undefined);
    } finally {
      stub.restore();
    }
    assert.strictEqual(stub.errors.length, 1, `one error (${stub.errors.join(' | ')})`);
    assert.match(stub.errors[0], /^Seri: .*title/i);
    assert.strictEqual(api.model.currentSession?.title, 'The lexer, explained');
  });

  test('Export Session... to a .md file writes the transcript, the key redacted', async () => {
    const target = vscode.Uri.file(path.join(folder, 'lexer.md'));
    const stub = stubWindow([]);
    let result: ExportResult | undefined;
    try {
      result = await vscode.commands.executeCommand<ExportResult>(Commands.exportSession, target);
    } finally {
      stub.restore();
    }
    assert.strictEqual(result?.format, 'markdown');
    const text = fs.readFileSync(target.fsPath, 'utf8');
    assert.match(text, /^# The lexer, explained/);
    assert.match(text, /## You/);
    assert.ok(!text.includes(KEY), 'the key is not in the file');
    assert.deepStrictEqual(stub.infos, ['Seri: exported “The lexer, explained” to lexer.md as a transcript; 1 secret was replaced by [redacted].']);
    assert.deepStrictEqual(
      fs.readdirSync(folder).filter((name) => name.endsWith('.partial')),
      [],
      'no partial file is left',
    );
  });

  test('Export Session... to a file of another extension says which ones it takes, and writes nothing', async () => {
    const target = vscode.Uri.file(path.join(folder, 'lexer.txt'));
    const stub = stubWindow([]);
    try {
      assert.strictEqual(await vscode.commands.executeCommand(Commands.exportSession, target), undefined);
    } finally {
      stub.restore();
    }
    assert.deepStrictEqual(stub.errors, [
      'Seri: lexer.txt names no format: export to a .md file (a transcript to read) or a .json file (a bundle to import).',
    ]);
    assert.ok(!fs.existsSync(target.fsPath));
  });

  test('Import Session... opens a new session with the bundle’s conversation; a second import opens the same one', async () => {
    const api = await activated();
    const source = api.model.currentSession!;
    const bundle = vscode.Uri.file(path.join(folder, 'lexer.json'));
    const stub = stubWindow([]);
    let first: ImportResult | undefined;
    let second: ImportResult | undefined;
    try {
      assert.strictEqual((await vscode.commands.executeCommand<ExportResult>(Commands.exportSession, bundle))?.format, 'json');
      first = await vscode.commands.executeCommand<ImportResult>(Commands.importSession, bundle);
      assert.ok(first, `the import (${stub.errors.join(' | ')})`);
      await waitFor(() => api.model.currentSession?.id === first!.session.id, 'the chat to open the imported session');
      second = await vscode.commands.executeCommand<ImportResult>(Commands.importSession, bundle);
    } finally {
      stub.restore();
    }
    assert.notStrictEqual(first.session.id, source.id);
    await waitFor(() => api.model.snapshot().messages.length === 2, 'the imported conversation');
    assert.deepStrictEqual(
      api.model.snapshot().messages.map((m) => m.role),
      ['user', 'assistant'],
    );
    assert.strictEqual((await sessionView(api, source.id)).messages.length, 2, 'the source is unchanged');
    assert.strictEqual(second?.session.id, first.session.id);
    assert.strictEqual(second?.alreadyImported, true);
    // The source is in this project under the bundle's title, so the import is marked.
    assert.match(stub.infos.at(-1) ?? '', /lexer\.json was imported before: opened “The lexer, explained \(imported\)”/);
  });

  test('Import Session... of a file that is no bundle says what is wrong, and opens nothing', async () => {
    const api = await activated();
    const open = api.model.currentSession?.id;
    const notes = path.join(folder, 'notes.json');
    fs.writeFileSync(notes, '{"format": "notes"}');
    const stub = stubWindow([]);
    try {
      assert.strictEqual(await vscode.commands.executeCommand(Commands.importSession, vscode.Uri.file(notes)), undefined);
    } finally {
      stub.restore();
    }
    assert.strictEqual(stub.errors.length, 1);
    assert.match(stub.errors[0], /^Seri: This is not a seri session bundle that can be imported: /);
    assert.strictEqual(api.model.currentSession?.id, open);
  });
});
