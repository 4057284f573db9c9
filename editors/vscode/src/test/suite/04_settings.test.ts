import * as assert from 'assert';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';

import { Commands } from '../../ids';
import type { Session } from '../../protocol';
import { activated, provider, restart, setSetting, stubWindow, waitFor } from './helpers';

suite('Settings', () => {
  suiteTeardown(async () => {
    for (const key of ['provider.contextWindow', 'provider.model', 'resumeOnOpen', 'server.command', 'server.python', 'maxTurns']) {
      await setSetting(key, undefined);
    }
    const api = await activated();
    await restart(api);
  });

  test('settings the user set are the initialization options; unset ones are left out', async () => {
    const api = await activated();
    const options = api.server.initializationOptions!;
    assert.strictEqual(options.provider?.baseUrl, process.env.SERI_TEST_PROVIDER_URL);
    assert.strictEqual(options.provider?.model, 'test/model');
    // From the workspace's .vscode/settings.json.
    assert.strictEqual(options.provider?.keepTokens, 40);
    assert.deepStrictEqual(options.permissions, { write: 'allow' });
    assert.strictEqual(options.profileRoot, process.env.SERI_TEST_PROFILE_ROOT);
    assert.ok(!('maxTurns' in options), 'maxTurns is not set, so not sent');
    assert.ok(!('resumeOnOpen' in options), 'resumeOnOpen is not set, so not sent');
    assert.ok(!('contextWindow' in (options.provider ?? {})), 'contextWindow is not set, so not sent');
  });

  test('a changed provider setting reaches the running server: the next prompt uses it, no restart', async () => {
    const api = await activated();
    const before = api.server.initializationOptions;
    let offers = 0;
    const subscription = api.onDidOfferRestart(() => offers++);
    try {
      await vscode.commands.executeCommand(Commands.newSession);
      await setSetting('provider.model', 'other/model');
      await waitFor(() => api.server.providerSettings?.model === 'other/model', 'the setting to be sent');
      await provider.script({ text: 'Answered by the model the settings name now.' });
      assert.strictEqual((await api.model.send('Which model?')).status, 'done');
      const log = await provider.log();
      assert.strictEqual(log.requests[log.requests.length - 1].model, 'other/model');
      assert.strictEqual(api.server.initializationOptions, before, 'the same server, not restarted');
      assert.strictEqual(offers, 0, 'no restart offered for a provider setting');
    } finally {
      subscription.dispose();
      await setSetting('provider.model', undefined);
    }
  });

  test('changing a setting offers a restart, and the restarted server uses it', async () => {
    const api = await activated();
    const offered = new Promise<string>((resolve) => {
      const subscription = api.onDidOfferRestart((offer) => {
        subscription.dispose();
        resolve(offer);
      });
    });
    await setSetting('provider.contextWindow', 6000);
    await setSetting('maxTurns', 33);
    assert.match(await offered, /Restart/);
    await restart(api);
    assert.strictEqual(api.server.initializationOptions?.provider?.contextWindow, 6000);
    assert.strictEqual(api.server.initializationOptions?.maxTurns, 33);
    await waitFor(() => api.model.currentUsage?.contextWindow === 6000, 'the server to use the new window');
    const session = await api.server.execute<{ session: Session }>('seri.session.new', {});
    assert.strictEqual(session.session.maxTurns, 33);
  });

  test('with resumeOnOpen off the window reopens the session it showed, and Continue opens the latest', async () => {
    const api = await activated();
    const shown = await vscode.commands.executeCommand<Session>(Commands.newSession);
    await waitFor(() => api.model.currentSession?.id === shown.id, 'the model to show the new session');
    await setSetting('resumeOnOpen', false);
    await restart(api);
    assert.strictEqual(api.server.initializationOptions?.resumeOnOpen, false);
    // The server opened none: the window's memory reopened it.
    await waitFor(() => api.model.currentSession?.id === shown.id, 'the window to reopen its session');
    const latest = (await api.server.execute<{ sessions: Session[] }>('seri.session.list', {})).sessions[0];
    const session = await vscode.commands.executeCommand<Session | null>(Commands.continueSession);
    assert.strictEqual(session?.id, latest?.id);
    await waitFor(() => api.model.currentSession?.id === (latest?.id ?? shown.id), 'the model to show the latest session');
  });

  test('Restart Server keeps seri.profileRoot; a session the server cannot reopen is said in the chat', async () => {
    const api = await activated();
    const first = await api.server.execute<{ profileRoot: string }>('seri.info', {});
    await restart(api);
    // The restarted server got the same settings as the first start.
    assert.strictEqual(api.server.initializationOptions?.profileRoot, process.env.SERI_TEST_PROFILE_ROOT);
    assert.strictEqual((await api.server.execute<{ profileRoot: string }>('seri.info', {})).profileRoot, first.profileRoot);

    const shown = await vscode.commands.executeCommand<Session>(Commands.newSession);
    await waitFor(() => api.model.currentSession?.id === shown.id, 'the model to show the new session');
    // Another profile, where that session does not exist: the window cannot reopen it.
    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'seri-other-profile-'));
    try {
      await setSetting('resumeOnOpen', false);
      await setSetting('profileRoot', elsewhere);
      await restart(api);
      const info = await api.server.execute<{ profileRoot: string }>('seri.info', {});
      assert.strictEqual(info.profileRoot, fs.realpathSync(elsewhere));
      await waitFor(
        () => api.model.snapshot().notices.some((n) => n.text.includes(shown.id.slice(0, 8)) && /could not be reopened/.test(n.text)),
        'the chat to say the session could not be reopened',
      );
      const notice = api.model.snapshot().notices.find((n) => /could not be reopened/.test(n.text))!;
      assert.strictEqual(notice.level, 'error');
      assert.match(notice.text, /Unknown session id/);
    } finally {
      await setSetting('profileRoot', undefined);
      await setSetting('resumeOnOpen', undefined);
      await restart(api);
    }
  });

  test('a server command that exists but cannot run gives one notification with the install hint', async () => {
    const api = await activated();
    const window = stubWindow([]);
    try {
      await setSetting('server.command', ['/bin/sh', '-c', 'echo "No module named seri_lsp" >&2; exit 1']);
      await vscode.commands.executeCommand(Commands.restartServer);
      await waitFor(() => api.model.state === 'missing', 'the extension to find the command broken');
      await new Promise((resolve) => setTimeout(resolve, 1000));
      assert.strictEqual(window.errors.length, 1, window.errors.join('\n'));
      assert.match(window.errors[0], /--version` failed: No module named seri_lsp/);
      assert.match(window.errors[0], /pipx install/);
    } finally {
      window.restore();
      await setSetting('server.command', undefined);
    }
    await restart(api);
    assert.strictEqual(api.model.state, 'running');
  });

  test('no Python for the carried server gives one notification naming what was tried, with the setting', async () => {
    const api = await activated();
    const window = stubWindow([]);
    try {
      // No command of its own: the server this extension carries, with a Python that is not there.
      await setSetting('server.command', []);
      await setSetting('server.python', '/nonexistent/bin/python3');
      await vscode.commands.executeCommand(Commands.restartServer);
      await waitFor(() => api.model.state === 'missing', 'the extension to find no Python');
      await new Promise((resolve) => setTimeout(resolve, 1000));
      assert.strictEqual(window.errors.length, 1, window.errors.join('\n'));
      assert.match(window.errors[0], /^Seri needs Python 3\.11 to 3\.\d+ to run its server and found none/);
      assert.match(window.errors[0], /seri\.server\.python \(\/nonexistent\/bin\/python3\): not found or does not run/);
      assert.match(window.errors[0], /Install Python from python\.org .* or set `seri\.server\.python`/);
    } finally {
      window.restore();
      await setSetting('server.python', undefined);
      await setSetting('server.command', undefined);
    }
    await restart(api);
    assert.strictEqual(api.model.state, 'running');
  });

  test('overlapping starts make one server, and a stop during a start leaves none running', async () => {
    const api = await activated();
    await api.server.stop();
    const first = api.server.start();
    assert.strictEqual(api.server.start(), first, 'the second start joins the first');
    await api.server.stop();
    await first;
    assert.strictEqual(api.server.isRunning, false, 'the start did not outlive the stop');
    assert.strictEqual(api.model.state, 'stopped');
    await restart(api);
    assert.strictEqual(api.model.state, 'running');
  });

  test('a missing server gives one clear notification and a warning in the status bar', async () => {
    const api = await activated();
    await setSetting('server.command', ['/nonexistent/bin/seri-lsp']);
    await vscode.commands.executeCommand(Commands.restartServer);
    await waitFor(() => api.model.state === 'missing', 'the extension to find no server');
    assert.match(api.statusBar.text, /\$\(warning\)/);
    await setSetting('server.command', undefined);
    await restart(api);
    assert.strictEqual(api.model.state, 'running');
  });
});
