import * as assert from 'assert';
import * as vscode from 'vscode';

import type { ChatChange } from '../../chat/chatState';
import { Commands } from '../../ids';
import { activated, longText, provider, sessionView, waitFor } from './helpers';

suite('Notifications reach the chat model', () => {
  suiteSetup(async () => {
    await provider.reset();
    await vscode.commands.executeCommand(Commands.newSession);
  });

  test('a prompt streams in, shows its tool call and ends with the stored reply', async () => {
    const api = await activated();
    const changes: ChatChange[] = [];
    const stop = api.model.onDidChange((change) => changes.push(change));
    const answer = 'The app prints hello. ' + 'It has one line. '.repeat(6);
    await provider.script(
      { calls: [['call-1', 'read_file', { path: 'src/app.py' }]], usage: 120 },
      { text: answer, chunkSize: 6, chunkDelay: 0.01, usage: 160 },
    );
    const result = await api.model.send('What does src/app.py do?');
    stop();
    assert.strictEqual(result.status, 'done');

    const streamed = changes.filter((c) => c.kind === 'streaming' && c.text !== '');
    assert.ok(streamed.length > 2, `several deltas streamed (${streamed.length})`);
    const snapshot = api.model.snapshot();
    const tail = snapshot.messages.slice(-4);
    assert.deepStrictEqual(
      tail.map((m) => m.role),
      ['user', 'assistant', 'tool', 'assistant'],
    );
    assert.strictEqual(tail[1].tool_calls?.[0].name, 'read_file');
    assert.strictEqual(tail[2].tool_call_id, 'call-1');
    assert.match(tail[2].content, /print\("hello"\)/);
    assert.strictEqual(tail[3].content, answer);
    assert.strictEqual(snapshot.streaming, '');
    assert.strictEqual(snapshot.running, false);
    const stored = await sessionView(api);
    assert.deepStrictEqual(
      snapshot.messages.map((m) => m.id),
      stored.messages.map((m) => m.id),
    );
    await waitFor(() => (api.model.currentUsage?.estimateTokens ?? 0) >= 160, 'the usage to refresh');
  });

  test('a subagent’s messages stay out of the open session', async () => {
    const api = await activated();
    await provider.script(
      { calls: [['call-task', 'task', { prompt: 'Count the files under src' }]] },
      { text: 'There is one file.' },
      { text: longText('Done: src holds one file') },
    );
    const before = api.model.snapshot().messages.length;
    const result = await api.model.send('How many files are in src?');
    assert.strictEqual(result.status, 'done');
    const messages = api.model.snapshot().messages;
    assert.ok(!messages.some((m) => m.role === 'user' && m.content === 'Count the files under src'));
    assert.deepStrictEqual(
      messages.slice(before).map((m) => m.role),
      ['user', 'assistant', 'tool', 'assistant'],
    );
    const stored = await sessionView(api);
    assert.deepStrictEqual(
      messages.map((m) => m.id),
      stored.messages.map((m) => m.id),
    );
  });

  test('a failed task leaves a notice in the chat', async () => {
    const api = await activated();
    await provider.script({ error: 400, body: { error: { message: 'the model is unavailable' } } });
    const result = await api.model.send('Try again');
    assert.strictEqual(result.status, 'failed');
    const notice = api.model.snapshot().notices.at(-1);
    assert.strictEqual(notice?.level, 'error');
    assert.match(notice?.text ?? '', /failed/);
  });

  test('the chat view renders the model once opened', async () => {
    const api = await activated();
    await vscode.commands.executeCommand(Commands.openChat);
    await waitFor(() => api.chatView.rendered, 'the chat page to load and receive the model', 20_000);
  });
});
