// The slash commands the chat suggests come from the server: read from its initialize
// result (or `seri.commands`), held by the chat model while that server runs, and
// matched against what is typed after `/`. A fake list stands for the server's.

import * as assert from 'assert';

import { ChatModel } from '../../chat/model';
import type { ServerLink } from '../../chat/chatState';
import type { SessionView, SlashCommand } from '../../protocol';
import { advertisedSlashCommands, readSlashCommands } from '../../slashCommands';
import { slashSuggestions } from '../../webview/slashCompletion';

const LIST: SlashCommand[] = [
  { name: 'compact', usage: '/compact [focus words]', summary: 'Compact the conversation now', argumentHint: 'focus words (optional)' },
  { name: 'clear', usage: '/clear', summary: 'Start a new session' },
  { name: 'context', usage: '/context', summary: 'What fills the context window' },
  { name: 'resume', usage: '/resume ID', summary: 'Open another session', argumentHint: 'session id', picker: true },
  { name: 'zap', usage: '/zap TARGET', summary: 'A command added on the server only', argumentHint: 'what to zap' },
];

function initializeResult(commands: unknown): unknown {
  return { capabilities: { experimental: { seri: { slashCommands: commands } } }, serverInfo: { name: 'seri-lsp' } };
}

/** A server that answers `seri.commands` from `answer` and anything else with an empty session. */
class FakeServer implements ServerLink {
  calls: string[] = [];
  constructor(private readonly answer: () => unknown = () => ({ commands: LIST })) {}
  async execute<T>(command: string): Promise<T> {
    this.calls.push(command);
    if (command === 'seri.commands') {
      return this.answer() as T;
    }
    const empty: SessionView = { session: null, messages: [], usage: { estimateTokens: 0, contextWindow: 1000 }, paths: { read: [], modified: [] } };
    return empty as T;
  }
}

suite('slash commands', () => {
  test('are read from the initialize result, in the server’s order, without asking again', async () => {
    const server = new FakeServer();
    assert.deepStrictEqual(await readSlashCommands(initializeResult(LIST), server), LIST);
    assert.deepStrictEqual(server.calls, []);
  });

  test('are asked for with seri.commands when the initialize result lacks them', async () => {
    const server = new FakeServer();
    assert.strictEqual(advertisedSlashCommands({ capabilities: {} }), undefined);
    assert.deepStrictEqual(await readSlashCommands({ capabilities: {} }, server), LIST);
    assert.deepStrictEqual(server.calls, ['seri.commands']);
  });

  test('are none from a server that advertises none and refuses seri.commands', async () => {
    const server = new FakeServer(() => {
      throw new Error('Unknown command seri.commands');
    });
    assert.deepStrictEqual(await readSlashCommands(undefined, server), []);
  });

  test('entries that lack a name, usage or summary are left out', () => {
    const listed = advertisedSlashCommands(initializeResult([{ name: 'clear' }, 'compact', null, LIST[1], { ...LIST[0], argumentHint: 3 }]));
    assert.deepStrictEqual(listed, [LIST[1], { name: 'compact', usage: LIST[0].usage, summary: LIST[0].summary }]);
  });

  test('the chat model holds the running server’s list, and none before or after it', async () => {
    const model = new ChatModel();
    model.setSlashCommands(LIST);
    assert.deepStrictEqual(model.snapshot().slashCommands, [], 'no list before a server runs');
    await model.attach(new FakeServer());
    assert.deepStrictEqual(model.snapshot().slashCommands, [], 'none until the server’s list is read');
    model.setSlashCommands(LIST);
    assert.deepStrictEqual(model.snapshot().slashCommands, LIST);
    model.detach('stopped');
    assert.deepStrictEqual(model.snapshot().slashCommands, [], 'a stopped server’s list is dropped');
    await model.attach(new FakeServer());
    assert.deepStrictEqual(model.snapshot().slashCommands, [], 'a restarted server’s list is read again');
    model.setSlashCommands(LIST.slice(0, 2));
    assert.deepStrictEqual(model.snapshot().slashCommands.map((c) => c.name), ['compact', 'clear']);
  });

  test('a new list is a state change the chat view passes on', async () => {
    const model = new ChatModel();
    await model.attach(new FakeServer());
    const kinds: string[] = [];
    model.onDidChange((change) => kinds.push(change.kind));
    model.setSlashCommands(LIST);
    assert.deepStrictEqual(kinds, ['state']);
  });

  test('the completion shows usage and summary of the commands the word starts', () => {
    assert.deepStrictEqual(slashSuggestions(LIST, 'c'), [
      { key: '/compact', label: '/compact [focus words]', description: 'Compact the conversation now', insert: '/compact ' },
      { key: '/clear', label: '/clear', description: 'Start a new session', insert: '/clear' },
      { key: '/context', label: '/context', description: 'What fills the context window', insert: '/context' },
    ]);
    assert.deepStrictEqual(slashSuggestions(LIST, 'CL').map((s) => s.key), ['/clear']);
    assert.deepStrictEqual(slashSuggestions(LIST, '').map((s) => s.key), ['/compact', '/clear', '/context', '/resume', '/zap']);
    assert.deepStrictEqual(slashSuggestions(LIST, 'zap')[0].insert, '/zap ', 'a command that takes words leaves a space');
    assert.deepStrictEqual(slashSuggestions([], 'c'), [], 'no list, no suggestions');
  });
});
