import * as assert from 'assert';
import * as vscode from 'vscode';

import { Commands } from '../../ids';
import type { ForkResult } from '../../protocol';
import { activated, provider, sessionView, waitFor } from './helpers';

suite('Forks and spend', () => {
  suiteSetup(async () => {
    await provider.reset();
    await vscode.commands.executeCommand(Commands.newSession);
  });

  test('the status bar’s tooltip and the chat say what the session spent', async () => {
    const api = await activated();
    await provider.script({ text: 'The parser is recursive descent.', usage: 300, cost: 0.0125 });
    assert.strictEqual((await api.model.send('How does the parser work?')).status, 'done');
    await waitFor(() => api.statusBar.tooltip.includes('Spend: $0.0125 over 1 model call'), `the spend in the tooltip (${api.statusBar.tooltip})`);
    assert.strictEqual(api.model.currentSession?.spend?.cost, 0.0125);
    await provider.script({ text: 'Tokens come from the lexer.', usage: 400 });
    assert.strictEqual((await api.model.send('And the tokens?')).status, 'done');
    await waitFor(() => api.statusBar.tooltip.includes('Spend: $0.0125 over 2 model calls'), `the spend of both calls (${api.statusBar.tooltip})`);
  });

  test('Fork from Here (the chat’s context menu) forks at the message it was given', async () => {
    const api = await activated();
    const source = api.model.currentSession!;
    const firstReply = api.model.snapshot().messages.find((m) => m.role === 'assistant')!;
    // What the context menu passes: the message's data-vscode-context and the view's id.
    const context = { webview: 'seri-vscode.chat', webviewSection: 'message', messageId: firstReply.id };
    const result = await vscode.commands.executeCommand<ForkResult>(Commands.forkFromHere, context);
    assert.ok(result, 'the fork');
    assert.strictEqual(result.forkedAt, firstReply.id);
    await waitFor(() => api.model.currentSession?.id === result.session.id, 'the chat to show the fork');
    await waitFor(() => api.model.snapshot().messages.length === 2, 'the fork’s two messages');
    assert.deepStrictEqual(
      api.model.snapshot().messages.map((m) => m.content),
      ['How does the parser work?', 'The parser is recursive descent.'],
    );
    assert.strictEqual(api.model.currentSession?.parentId, source.id);
    await waitFor(() => api.model.snapshot().forkOrigin?.title, 'the fork’s origin to be named');
    assert.deepStrictEqual(api.model.snapshot().forkOrigin, { id: source.id, title: 'How does the parser work?' });
    // A fork starts its spend at zero; the source keeps its own.
    assert.strictEqual(api.model.currentSession?.spend?.calls, 0);
    assert.strictEqual((await sessionView(api, source.id)).session?.spend?.calls, 2);
  });

  test('Seri: Fork Session forks at the last message', async () => {
    const api = await activated();
    const source = api.model.currentSession!;
    const result = await vscode.commands.executeCommand<ForkResult>(Commands.forkSession);
    assert.ok(result, 'the fork');
    await waitFor(() => api.model.currentSession?.id === result.session.id, 'the chat to show the fork');
    await waitFor(() => api.model.snapshot().messages.length === 2, 'the copy of both messages');
    assert.strictEqual(api.model.currentSession?.parentId, source.id);
    // A fork of the fork made above: numbered, not marked twice.
    assert.strictEqual(result.session.title, 'How does the parser work? (fork 2)');
  });

  test('the tooltip says what the prompt cache read and wrote, beside the spend', async () => {
    const api = await activated();
    // The fork's spend starts at zero: its only call is this one.
    await provider.script({ text: 'The lexer is hand-written.', usage: 1000, cost: 0.001, cached: 850, cacheWrite: 100 });
    assert.strictEqual((await api.model.send('Who wrote the lexer?')).status, 'done');
    await waitFor(
      () => api.statusBar.tooltip.includes('Prompt cache: 85% of the input read from it (850 of 1,000 tokens); 100 tokens written to it.'),
      `the cache in the tooltip (${api.statusBar.tooltip})`,
    );
    assert.strictEqual(api.model.currentSession?.spend?.cacheWriteTokens, 100);
  });
});
