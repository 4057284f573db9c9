import * as assert from 'assert';
import * as vscode from 'vscode';

import { ALLOW_WORKSPACE, REVOKE_WORKSPACE } from '../../commands/mcp';
import { Commands } from '../../ids';
import { McpServerInfo, ServerCommand, ServerInfo } from '../../protocol';
import { activated, stubWindow, waitFor } from './helpers';

// The integration workspace's own settings configure two MCP servers
// (tests/test_vscode.py): `probe`, our test server, and `broken`, a command that does not
// exist. Being the workspace's, they start once the user agreed; the test profile keeps
// that agreement already (the UI lane's `mcp` scenario answers the question in the chat).
suite('Seri: MCP Servers', () => {
  async function servers(): Promise<McpServerInfo[]> {
    const api = await activated();
    return (await api.server.execute<ServerInfo>(ServerCommand.info)).mcpServers ?? [];
  }

  async function settled(): Promise<McpServerInfo[]> {
    let rows: McpServerInfo[] = [];
    await waitFor(async () => {
      rows = await servers();
      return rows.length === 2 && rows.every((row) => row.status !== 'starting');
    }, 'both MCP servers to be started or failed');
    return rows;
  }

  test('the settings reach the server, and the pick shows each server’s status, origin, tools and reason', async () => {
    await settled();
    const stub = stubWindow([() => undefined]);
    try {
      assert.strictEqual(await vscode.commands.executeCommand(Commands.mcpServers), undefined);
    } finally {
      stub.restore();
    }
    const picked = stub.quickPicks[0];
    assert.strictEqual(picked.options?.title, 'Seri: MCP Servers');
    const rows = Object.fromEntries(picked.items.map((item) => [item.label.replace(/^\$\([^)]*\) /, ''), item]));
    assert.deepStrictEqual(Object.keys(rows).sort(), ['broken', 'probe']);
    assert.match(rows.probe.label, /^\$\(pass\) probe$/);
    assert.match(rows.probe.description ?? '', /^ready · workspace \(the workspace's mcpServers setting\) · stdio · 7 tools$/);
    assert.strictEqual(rows.probe.detail, undefined);
    assert.match(rows.broken.label, /^\$\(error\) broken$/);
    assert.match(rows.broken.description ?? '', /^failed · workspace .* · stdio · 0 tools$/);
    assert.ok(rows.broken.detail && rows.broken.detail.length > 0, 'the failure’s reason is shown');
  });

  test('choosing a server offers Restart, which restarts it', async () => {
    await settled();
    const stub = stubWindow([(items) => items.find((item) => item.label.endsWith(' probe')), (items) => items.find((item) => item.label === 'Restart')]);
    let restarted: string | undefined;
    try {
      restarted = await vscode.commands.executeCommand<string>(Commands.mcpServers);
    } finally {
      stub.restore();
    }
    assert.strictEqual(restarted, 'probe');
    assert.match(stub.quickPicks[1].options?.title ?? '', /MCP server probe \(ready\)/);
    assert.ok(stub.infos.some((info) => /MCP server probe is starting again/.test(info)), stub.infos.join(' | '));
    await waitFor(async () => (await servers()).find((row) => row.name === 'probe')?.status === 'ready', 'probe to be ready again');
  });

  test('revoking consent stops the workspace’s servers; starting them asks again in the chat, and Allow starts them', async () => {
    const api = await activated();
    await settled();
    const probe = (items: vscode.QuickPickItem[]) => items.find((item) => item.label.endsWith(' probe'));
    const revoke = stubWindow([probe, (items) => items.find((item) => item.label === REVOKE_WORKSPACE)]);
    try {
      await vscode.commands.executeCommand(Commands.mcpServers);
    } finally {
      revoke.restore();
    }
    assert.deepStrictEqual(
      revoke.quickPicks[1].items.map((item) => item.label),
      ['Restart', REVOKE_WORKSPACE],
    );
    assert.ok(revoke.infos.some((info) => /consent revoked.*probe/.test(info)), revoke.infos.join(' | '));
    assert.deepStrictEqual(
      (await servers()).map((row) => row.status),
      ['awaiting consent', 'awaiting consent'],
    );

    const allow = stubWindow([probe, (items) => items.find((item) => item.label === ALLOW_WORKSPACE)]);
    try {
      const running = vscode.commands.executeCommand(Commands.mcpServers);
      // The question is a card in the chat, naming each server with its command line.
      const question = await waitFor(
        () => api.model.openQuestions.find((q) => q.params.kind === 'mcpServers'),
        'the consent question in the chat',
      );
      assert.match(question.params.message, /broken \(`\/nonexistent\/seri-mcp-server`\); probe \(`.*seri_test_server\.py`\)/);
      assert.deepStrictEqual(question.params.choices, ['Allow', 'Not now', 'Never for this project']);
      assert.ok(api.model.answer(question.id, 'Allow'));
      await running;
    } finally {
      allow.restore();
    }
    assert.deepStrictEqual(
      allow.quickPicks[1].items.map((item) => item.label),
      [ALLOW_WORKSPACE],
    );
    assert.ok(allow.infos.some((info) => /MCP servers \(broken, probe\) are starting/.test(info)), allow.infos.join(' | '));
    await settled();
    assert.strictEqual((await servers()).find((row) => row.name === 'probe')?.status, 'ready');
  });
});
