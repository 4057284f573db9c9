import * as assert from 'assert';
import * as vscode from 'vscode';

import { Commands, EXTENSION_ID } from '../../ids';
import { activated, waitFor } from './helpers';

suite('Activation', () => {
  test('activates with the folder open and starts the server', async () => {
    const extension = vscode.extensions.getExtension(EXTENSION_ID);
    assert.ok(extension);
    // onStartupFinished: active without any command having run.
    await waitFor(() => extension.isActive, 'the extension to activate by itself', 30_000);
    const api = await activated();
    assert.strictEqual(api.model.state, 'running');
    assert.strictEqual(api.server.isRunning, true);
  });

  test('palette commands sit beside the server commands without colliding', async () => {
    await activated();
    const registered = await vscode.commands.getCommands(true);
    for (const id of Object.values(Commands)) {
      assert.ok(registered.includes(id), `${id} is registered`);
      assert.ok(!id.startsWith('seri.'), `${id} cannot collide with a server command`);
    }
    // The language client registered the server's own commands.
    for (const id of ['seri.prompt', 'seri.compact', 'seri.clear', 'seri.session.get', 'seri.cancel']) {
      assert.ok(registered.includes(id), `${id} (from the server) is registered`);
    }
  });

  test('every palette command is contributed under the Seri category', () => {
    const contributed: { command: string; title: string; category: string }[] =
      vscode.extensions.getExtension(EXTENSION_ID)!.packageJSON.contributes.commands;
    const byId = new Map(contributed.map((c) => [c.command, c]));
    for (const id of Object.values(Commands)) {
      assert.strictEqual(byId.get(id)?.category, 'Seri', id);
    }
    const titles = contributed.map((c) => c.title);
    for (const title of [
      'Open Chat',
      'New Session',
      'Continue Last Session',
      'Resume Session...',
      'Fork Session',
      'Fork from Here',
      'Compact Context...',
      'Clear Conversation',
      'Set Max Turns...',
      'Rewind...',
      'Toggle Trajectory Recording',
      'Stop',
      'Set API Key',
    ]) {
      assert.ok(titles.includes(title), title);
    }
  });

  test('the status bar shows the context use once a session is open', async () => {
    const api = await activated();
    await vscode.commands.executeCommand(Commands.newSession);
    await waitFor(() => /\d+%/.test(api.statusBar.text), 'a percentage in the status bar');
    assert.match(api.statusBar.tooltip, /tokens/);
    assert.match(api.statusBar.tooltip, /Session: /);
    // Where automatic compaction starts: half the window.
    const usage = api.model.currentUsage!;
    assert.strictEqual(usage.compactAt, Math.ceil(usage.contextWindow / 2));
    assert.match(api.statusBar.tooltip, /Compaction starts at [\d,]+ tokens \(50%\)/);
  });
});
