// The chat model against a scripted ServerLink: what the chat shows for each sequence
// of results and notifications, including the ones today's server does not send yet
// (`seri/delta` with `reset`, paged `seri.session.get`).

import * as assert from 'assert';

import { ChatModel } from '../../chat/model';
import type { ChatChange, ServerLink } from '../../chat/chatState';
import type { ApproveParams, PromptResult, Session, SessionView, WireMessage } from '../../protocol';

function session(id: string, title = ''): Session {
  return { id, project: '/p', title, createdAt: '2025-01-01T00:00:00Z', updatedAt: '2025-01-01T00:00:00Z', maxTurns: 500, messageCount: 0 };
}

function message(id: number, role: WireMessage['role'], content: string, extra: Partial<WireMessage> = {}): WireMessage {
  return { id, createdAt: '2025-01-01T00:00:00Z', role, content, ...extra };
}

function view(open: Session | null, messages: WireMessage[], extra: Partial<SessionView> = {}): SessionView {
  return { session: open, messages, usage: { estimateTokens: 100, contextWindow: 1000 }, paths: { read: [], modified: [] }, ...extra };
}

/** A server that answers `seri.session.get` from a function and records every call. */
class FakeServer implements ServerLink {
  calls: { command: string; args: object }[] = [];
  /** The reads of the session (`seri.session.get`), not of what fills its context. */
  get reads(): { command: string; args: object }[] {
    return this.calls.filter((c) => c.command === 'seri.session.get');
  }
  constructor(private readonly answer: (command: string, args: Record<string, unknown>) => unknown) {}
  async execute<T>(command: string, args: object = {}): Promise<T> {
    this.calls.push({ command, args });
    return this.answer(command, args as Record<string, unknown>) as T;
  }
}

/** A server that pages `all` as `seri.session.get {limit, before}` does. */
function pagingServer(open: Session, all: WireMessage[]): FakeServer {
  return new FakeServer((_command, args) => {
    const before = typeof args.before === 'number' ? args.before : Infinity;
    const older = all.filter((m) => m.id < before);
    const page = older.slice(-(args.limit as number));
    return view(open, page, { hasMore: older.length > page.length });
  });
}

suite('ChatModel', () => {
  const open = session('s1', 'Parser work');

  test('loads the newest page of the open session when the server attaches', async () => {
    const server = new FakeServer(() => view(open, [message(1, 'user', 'hi'), message(2, 'assistant', 'hello')]));
    const model = new ChatModel();
    await model.attach(server);
    assert.deepStrictEqual(server.calls[0], { command: 'seri.session.get', args: { limit: 200 } });
    const snapshot = model.snapshot();
    assert.strictEqual(snapshot.session?.id, 's1');
    assert.deepStrictEqual(snapshot.messages.map((m) => m.id), [1, 2]);
    assert.strictEqual(snapshot.hasMore, false);
    assert.strictEqual(snapshot.serverState, 'running');
  });

  test('holds back the server’s own message of a failure the chat shows, once', async () => {
    const model = new ChatModel();
    await model.attach(new FakeServer(() => view(open, [])));
    const error = 'The provider answered HTTP 503: overloaded';
    model.turnEnded({ sessionId: 'child', status: 'failed', turns: 0, error: 'a subagent’s' });
    model.turnEnded({ sessionId: 's1', status: 'failed', turns: 0, error });
    assert.strictEqual(model.showsInChat('a subagent’s'), false);
    assert.strictEqual(model.showsInChat('Settings: something else'), false);
    assert.strictEqual(model.showsInChat(error), true);
    assert.strictEqual(model.showsInChat(error), false);
  });

  test('keeps a running command’s output (its tail) until its result arrives, and stops just it', async () => {
    const server = new FakeServer((command) => (command === 'seri.tool.stop' ? { stopped: true } : view(open, [])));
    const model = new ChatModel();
    await model.attach(server);
    const changes: ChatChange[] = [];
    model.onDidChange((change) => changes.push(change));
    model.toolOutput({ sessionId: 'child', toolCallId: 'c9', text: 'a subagent’s' });
    model.toolOutput({ sessionId: 's1', toolCallId: 'r1', text: 'line1\n' });
    model.toolOutput({ sessionId: 's1', toolCallId: 'r1', text: 'line2\n' });
    assert.deepStrictEqual(model.snapshot().toolOutputs, { r1: 'line1\nline2\n' });
    assert.deepStrictEqual(
      changes.filter((c) => c.kind === 'toolOutput'),
      [
        { kind: 'toolOutput', callId: 'r1', text: 'line1\n' },
        { kind: 'toolOutput', callId: 'r1', text: 'line2\n' },
      ],
    );
    model.toolOutput({ sessionId: 's1', toolCallId: 'r1', text: 'x'.repeat(70_000) });
    const kept = model.snapshot().toolOutputs.r1;
    assert.ok(kept.length === 64_000 && kept.endsWith('xxx'), `the tail is kept (${kept.length})`);

    assert.strictEqual(await model.stopTool('r1'), true);
    assert.deepStrictEqual(server.calls.at(-1), { command: 'seri.tool.stop', args: { sessionId: 's1', toolCallId: 'r1' } });

    model.message({ sessionId: 's1', message: message(7, 'tool', 'stopped by the user\nline1', { tool_call_id: 'r1', isError: true }) });
    assert.deepStrictEqual(model.snapshot().toolOutputs, {});
  });

  // The chat showed a tool result without its call ("tool result {}") when the call's
  // message arrived during the first read of the session, before the chat knew which
  // session was open, and the read's page had been taken before that message was stored.
  test('messages that arrive while a page is read wait for it, even before the chat knows the open session', async () => {
    const reads: ((answer: SessionView) => void)[] = [];
    const server = new FakeServer((command) => (command === 'seri.session.get' ? new Promise<SessionView>((resolve) => reads.push(resolve)) : {}));
    const model = new ChatModel(0);
    const changes: ChatChange[] = [];
    model.onDidChange((change) => changes.push(change));
    const call = { id: 'c1', name: 'read_file', arguments: '{"path":"src/app.py"}' };
    const attached = model.attach(server);
    // Stored after the server took the page it is about to send.
    model.message({ sessionId: 's1', message: message(2, 'assistant', '', { tool_calls: [call] }) });
    reads.shift()!(view(open, [message(1, 'user', 'What does src/app.py do?')]));
    await attached;
    model.message({ sessionId: 's1', message: message(3, 'tool', 'print("hello")', { tool_call_id: 'c1' }) });
    assert.deepStrictEqual(model.snapshot().messages.map((m) => m.id), [1, 2, 3]);
    const appended = changes.flatMap((c) => (c.kind === 'append' ? [c.message.id] : []));
    assert.deepStrictEqual(appended, [2, 3], 'the call is shown before its result');
  });

  test('a read that showed the session before a switch does not drop the new session’s messages', async () => {
    const reads: ((answer: SessionView) => void)[] = [];
    const server = new FakeServer((command) => (command === 'seri.session.get' ? new Promise<SessionView>((resolve) => reads.push(resolve)) : {}));
    const model = new ChatModel(0);
    const attached = model.attach(server);
    const fresh = session('s2', 'New');
    // A new session opens while the first read is under way: a second read follows it.
    model.sessionChanged({ session: fresh, reason: 'new' });
    reads.shift()!(view(open, [message(1, 'user', 'old')]));
    await settle();
    // Between the two reads the chat shows s1 again; s2's messages must wait, not vanish.
    model.message({ sessionId: 's2', message: message(5, 'user', 'new prompt') });
    model.message({ sessionId: 's2', message: message(6, 'assistant', 'new reply') });
    reads.shift()!(view(fresh, [message(5, 'user', 'new prompt')]));
    await attached;
    assert.strictEqual(model.snapshot().session?.id, 's2');
    assert.deepStrictEqual(model.snapshot().messages.map((m) => m.id), [5, 6]);
  });

  test('a message that arrives after a later one is shown in its place, not after it', async () => {
    const model = new ChatModel(0);
    await model.attach(new FakeServer(() => view(open, [message(1, 'user', 'look')])));
    const changes: ChatChange[] = [];
    model.onDidChange((change) => changes.push(change));
    const call = { id: 'c1', name: 'read_file', arguments: '{}' };
    model.message({ sessionId: 's1', message: message(3, 'tool', 'result', { tool_call_id: 'c1' }) });
    model.message({ sessionId: 's1', message: message(2, 'assistant', '', { tool_calls: [call] }) });
    assert.deepStrictEqual(model.snapshot().messages.map((m) => m.id), [1, 2, 3]);
    // The view is drawn again from the snapshot, where the call comes before its result.
    assert.deepStrictEqual(changes.filter((c) => c.kind === 'append' || c.kind === 'reset').map((c) => c.kind), ['append', 'reset']);
  });

  test('shows only the open session’s messages', async () => {
    const model = new ChatModel();
    await model.attach(new FakeServer(() => view(open, [])));
    model.message({ sessionId: 'child', message: message(5, 'user', 'subagent prompt') });
    model.message({ sessionId: 's1', message: message(6, 'user', 'mine') });
    assert.deepStrictEqual(model.snapshot().messages.map((m) => m.content), ['mine']);
  });

  test('streams deltas, drops them on reset, and clears them when the reply is stored', async () => {
    const model = new ChatModel();
    await model.attach(new FakeServer(() => view(open, [])));
    model.delta({ sessionId: 's1', text: 'Hel' });
    model.delta({ sessionId: 's1', text: 'lo' });
    assert.strictEqual(model.snapshot().streaming, 'Hello');
    assert.strictEqual(model.running, true);
    model.delta({ sessionId: 's1', text: 'Retry', reset: true });
    assert.strictEqual(model.snapshot().streaming, 'Retry');
    model.delta({ sessionId: 'other', text: 'ignored' });
    assert.strictEqual(model.snapshot().streaming, 'Retry');
    model.message({ sessionId: 's1', message: message(3, 'assistant', 'Retry done') });
    assert.strictEqual(model.snapshot().streaming, '');
    model.turnEnded({ sessionId: 's1', status: 'done', turns: 1 });
    assert.strictEqual(model.running, false);
  });

  test('the stored reply clears the streamed copy in the view too', async () => {
    const model = new ChatModel();
    await model.attach(new FakeServer(() => view(open, [])));
    const changes: ChatChange[] = [];
    model.onDidChange((change) => changes.push(change));
    model.delta({ sessionId: 's1', text: 'Hello' });
    changes.length = 0;
    model.message({ sessionId: 's1', message: message(3, 'assistant', 'Hello') });
    assert.deepStrictEqual(changes, [
      { kind: 'streaming', text: '' },
      { kind: 'append', message: message(3, 'assistant', 'Hello') },
    ]);
  });

  test('a stored reply with nothing streamed sends no streaming change', async () => {
    const model = new ChatModel();
    await model.attach(new FakeServer(() => view(open, [])));
    const changes: ChatChange[] = [];
    model.onDidChange((change) => changes.push(change));
    model.message({ sessionId: 's1', message: message(3, 'assistant', 'Hello') });
    assert.deepStrictEqual(changes.map((c) => c.kind), ['append']);
  });

  test('the usage is refreshed, debounced, after each stored reply and the first prompt', async () => {
    const titled = session('s1', 'Fix the parser');
    const server = new FakeServer((_command, args) =>
      args.limit === 1 ? view(titled, [], { usage: { estimateTokens: 700, contextWindow: 1000 } }) : view(session('s1'), []),
    );
    const model = new ChatModel(10);
    await model.attach(server);
    const usageReads = (): number => server.calls.filter((c) => (c.args as { limit?: number }).limit === 1).length;
    const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 40));

    model.message({ sessionId: 's1', message: message(1, 'user', 'Fix the parser') });
    await settle();
    assert.strictEqual(usageReads(), 1, 'the first prompt: the new title shows during the task');
    assert.strictEqual(model.currentSession?.title, 'Fix the parser');
    assert.strictEqual(model.currentUsage?.estimateTokens, 700);

    model.message({ sessionId: 's1', message: message(2, 'assistant', 'Reading', { tool_calls: [] }) });
    model.message({ sessionId: 's1', message: message(3, 'tool', 'file text', { tool_call_id: 'c1' }) });
    model.message({ sessionId: 's1', message: message(4, 'assistant', 'Done') });
    await settle();
    assert.strictEqual(usageReads(), 2, 'two replies close together: one read');

    model.message({ sessionId: 's1', message: message(5, 'user', 'And the lexer?') });
    model.message({ sessionId: 's1', message: message(6, 'user', 'Checks failed', { kind: 'check' }) });
    model.message({ sessionId: 'child', message: message(7, 'assistant', 'a subagent reply') });
    await settle();
    assert.strictEqual(usageReads(), 2, 'later prompts, checks and other sessions: no read');
  });

  test('a pending usage refresh is dropped when the server goes away', async () => {
    const server = new FakeServer(() => view(open, []));
    const model = new ChatModel(10);
    await model.attach(server);
    model.message({ sessionId: 's1', message: message(1, 'assistant', 'Hi') });
    model.detach('stopped');
    await new Promise((resolve) => setTimeout(resolve, 40));
    assert.strictEqual(server.reads.length, 1, 'only the load at attach');
  });

  test('a session change clears the transcript and loads the new session', async () => {
    let current: Session = open;
    const model = new ChatModel();
    const server = new FakeServer(() => view(current, current.id === 's1' ? [message(1, 'user', 'old')] : [message(9, 'user', 'new')]));
    await model.attach(server);
    const changes: ChatChange[] = [];
    model.onDidChange((change) => changes.push(change));
    current = session('s2', 'Other');
    model.sessionChanged({ session: current, reason: 'resumed' });
    assert.deepStrictEqual(model.snapshot().messages, []);
    await model.load();
    assert.deepStrictEqual(model.snapshot().messages.map((m) => m.content), ['new']);
    assert.ok(changes.some((c) => c.kind === 'reset'));
  });

  test('a rename of the open session changes its title and keeps the pages read', async () => {
    const all = Array.from({ length: 250 }, (_, i) => message(i + 1, i % 2 ? 'assistant' : 'user', `m${i + 1}`));
    const server = pagingServer(open, all);
    const model = new ChatModel();
    await model.attach(server);
    await model.loadOlder();
    const changes: ChatChange[] = [];
    model.onDidChange((change) => changes.push(change));
    const reads = server.reads.length;
    model.sessionChanged({ session: { ...open, title: 'The parser, renamed' }, reason: 'renamed' });
    assert.strictEqual(server.reads.length, reads, 'nothing read again');
    assert.strictEqual(model.currentSession?.title, 'The parser, renamed');
    assert.strictEqual(model.snapshot().messages.length, 250, 'the earlier page is still there');
    assert.deepStrictEqual(changes, [{ kind: 'state' }]);
  });

  test('a message asked for is revealed once the resumed session’s page is read', async () => {
    let current: Session = open;
    let release: (value: SessionView) => void = () => undefined;
    const held = new Promise<SessionView>((resolve) => (release = resolve));
    const model = new ChatModel();
    const server: FakeServer = new FakeServer((): unknown => {
      const reads = server.reads.length;
      return reads === 1 ? view(open, []) : reads === 2 ? held : view(current, [message(9, 'assistant', 'found')]);
    });
    await model.attach(server);
    const changes: ChatChange[] = [];
    model.onDidChange((change) => changes.push(change));
    current = session('s2', 'Other');
    model.sessionChanged({ session: current, reason: 'resumed' });
    const revealed = model.reveal('s2', 9);
    await Promise.resolve();
    assert.ok(!changes.some((c) => c.kind === 'reveal'), 'not before the page is read');
    release(view(current, [message(9, 'assistant', 'found')]));
    assert.strictEqual(await revealed, true);
    assert.deepStrictEqual(changes.at(-1), { kind: 'reveal', messageId: 9 });
    assert.strictEqual(await model.reveal('s1', 3), false, 'another session is open');
  });

  test('messages that arrive while a page loads are kept once, in order', async () => {
    let release: (value: SessionView) => void = () => undefined;
    const first = new Promise<SessionView>((resolve) => (release = resolve));
    const stored = [message(1, 'user', 'first'), message(2, 'assistant', 'in both')];
    const model = new ChatModel();
    const server: FakeServer = new FakeServer((): unknown => (server.reads.length === 1 ? first : view(open, stored)));
    const attached = model.attach(server);
    model.sessionChanged({ session: open, reason: 'continued' });
    model.message({ sessionId: 's1', message: message(2, 'assistant', 'in both') });
    model.message({ sessionId: 's1', message: message(3, 'user', 'only arrived') });
    release(view(open, stored));
    await attached;
    assert.deepStrictEqual(model.snapshot().messages.map((m) => m.id), [1, 2, 3]);
  });

  test('a recap (after a compaction) reloads the session', async () => {
    let messages = [message(1, 'user', 'a'), message(2, 'assistant', 'b')];
    const model = new ChatModel();
    const server = new FakeServer(() => view(open, messages));
    await model.attach(server);
    messages = [message(7, 'user', 'recap', { kind: 'recap' }), message(2, 'assistant', 'b')];
    model.message({ sessionId: 's1', message: messages[0] });
    model.compacted({ sessionId: 's1', trigger: 'manual', evicted: 1 });
    await model.load();
    assert.deepStrictEqual(model.snapshot().messages.map((m) => m.id), [7, 2]);
  });

  test('pages back through history while the server says there is more', async () => {
    const all = Array.from({ length: 450 }, (_, i) => message(i + 1, i % 2 ? 'assistant' : 'user', `m${i + 1}`));
    const server = pagingServer(open, all);
    const model = new ChatModel();
    await model.attach(server);
    assert.strictEqual(model.snapshot().messages.length, 200);
    assert.strictEqual(model.snapshot().hasMore, true);
    await model.loadOlder();
    assert.deepStrictEqual(server.reads.at(-1)?.args, { sessionId: 's1', limit: 200, before: 251 });
    assert.strictEqual(model.snapshot().messages[0].id, 51);
    await model.loadOlder();
    const snapshot = model.snapshot();
    assert.deepStrictEqual(snapshot.messages.map((m) => m.id), all.map((m) => m.id));
    assert.strictEqual(snapshot.hasMore, false);
    await model.loadOlder();
    assert.strictEqual(server.reads.length, 3, 'no request once everything is shown');
  });

  test('a page holding the recap, numbered after the messages it kept, is shown', async () => {
    // Conversation order: the recap (id 90) first, then the kept messages 40 to 45.
    const all = [message(90, 'user', 'recap', { kind: 'recap' }), ...[40, 41, 42, 43, 44, 45].map((id) => message(id, 'user', `m${id}`))];
    const server = new FakeServer((_command, args) => {
      const end = typeof args.before === 'number' ? all.findIndex((m) => m.id === args.before) : all.length;
      const start = Math.max(0, end - (args.limit as number));
      return view(open, all.slice(start, end), { hasMore: start > 0 });
    });
    const model = new ChatModel();
    const real = server.execute.bind(server);
    server.execute = <T>(command: string, args: object = {}) => real<T>(command, { ...args, limit: 3 });
    await model.attach(server);
    assert.deepStrictEqual(model.snapshot().messages.map((m) => m.id), [43, 44, 45]);
    await model.loadOlder();
    await model.loadOlder();
    assert.deepStrictEqual(model.snapshot().messages.map((m) => m.id), [90, 40, 41, 42, 43, 44, 45]);
    assert.strictEqual(model.snapshot().hasMore, false);
  });

  test('a server that ignores paging (no hasMore) is read whole, once', async () => {
    const server = new FakeServer(() => view(open, [message(1, 'user', 'a')]));
    const model = new ChatModel();
    await model.attach(server);
    await model.loadOlder();
    assert.strictEqual(server.reads.length, 1);
  });

  test('how a task ended shows as a notice; slash commands add none', async () => {
    const server = new FakeServer((command) =>
      command === 'seri.prompt' ? { status: 'failed', error: 'provider down', turns: 0 } : view(open, []),
    );
    const model = new ChatModel();
    await model.attach(server);
    await model.send('hi');
    assert.deepStrictEqual(model.snapshot().notices.map((n) => [n.level, n.text]), [['error', 'The task failed: provider down']]);
    assert.strictEqual(model.running, false);
  });

  test('/rewind typed in the chat puts the prompt back in the input and notes what was left alone', async () => {
    const rewound = {
      status: 'done',
      command: 'rewind',
      session: open,
      rewound: 2,
      prompt: 'Rename foo\nin every file',
      restoredFiles: ['a.py'],
      conflicts: ['b.py'],
      failed: [{ path: 'c.py', reason: 'it is a folder now' }],
    };
    const model = new ChatModel();
    await model.attach(new FakeServer((command) => (command === 'seri.prompt' ? rewound : view(open, []))));
    const inputs: string[] = [];
    model.onDidChange((change) => change.kind === 'input' && inputs.push(change.text));
    await model.send('/rewind 2');
    assert.deepStrictEqual(inputs, ['Rename foo\nin every file']);
    assert.strictEqual(model.input, 'Rename foo\nin every file');
    assert.deepStrictEqual(model.snapshot().notices.map((n) => [n.level, n.text]), [
      ['warning', 'Left alone, changed since seri wrote them: b.py. Could not restore c.py: it is a folder now.'],
    ]);
  });

  test('a rewound prompt is added after an unsent draft, which is kept', async () => {
    const model = new ChatModel();
    await model.attach(new FakeServer(() => view(open, [])));
    model.noteDraft('half-typed');
    model.returnRewound('Rename foo');
    assert.strictEqual(model.input, 'half-typed\n\nRename foo');
    assert.deepStrictEqual(model.snapshot().notices.map((n) => n.text), ['The rewound prompt is back in the input, after your unsent draft.']);
    model.noteDraft('');
    model.returnRewound('Rename bar');
    assert.strictEqual(model.input, 'Rename bar', 'an empty input simply takes the prompt');
  });

  test('results from a server that went away are ignored', async () => {
    let release: (value: SessionView) => void = () => undefined;
    const model = new ChatModel();
    const attached = model.attach(new FakeServer(() => new Promise<SessionView>((resolve) => (release = resolve))));
    model.detach('stopped');
    release(view(open, [message(1, 'user', 'stale')]));
    await attached;
    assert.strictEqual(model.snapshot().messages.length, 0);
    assert.strictEqual(model.state, 'stopped');
  });

  // --- questions, what a task waits for, the queue, retries -----------------------------

  test('a question is shown until answered, and the answer (with a Deny’s note) goes back', async () => {
    const model = new ChatModel();
    await model.attach(new FakeServer(() => view(open, [])));
    const asked = model.ask(writeQuestion());
    const [question] = model.snapshot().questions;
    assert.strictEqual(question.params.kind, 'write');
    assert.strictEqual(model.answer(question.id, 'Sure'), false, 'only the choices offered');
    assert.strictEqual(model.answer(question.id, 'Deny', '  keep the spaces '), true);
    assert.deepStrictEqual(await asked, { choice: 'Deny', note: 'keep the spaces' });
    assert.deepStrictEqual(model.snapshot().questions, []);
    assert.deepStrictEqual(model.snapshot().notices.map((n) => n.text), ['“Deny”: edit src/app.py (keep the spaces).']);
    assert.strictEqual(model.answer(question.id, 'Allow'), false, 'answered once');
  });

  test('the line kept after a command is answered names the command once, in one sentence', async () => {
    const model = new ChatModel();
    await model.attach(new FakeServer(() => view(open, [])));
    const command = 'for i in $(seq 1 3); do echo $i; done';
    const asked = model.ask({
      kind: 'command',
      sessionId: 's1',
      message: `seri wants to run \`${command}\` in the workspace root.`,
      choices: ['Allow once', 'Deny'],
      command,
      cwd: '.',
    });
    const [question] = model.snapshot().questions;
    assert.strictEqual(model.answer(question.id, 'Allow once'), true);
    await asked;
    const other = model.ask({ kind: 'command', sessionId: 's1', message: 'seri wants to run `ls` in src.', choices: ['Deny'], command: 'ls', cwd: 'src' });
    model.answer(model.snapshot().questions[0].id, 'Deny', 'no');
    await other;
    assert.deepStrictEqual(model.snapshot().notices.map((n) => n.text), [`“Allow once”: run \`${command}\` in the workspace root.`, '“Deny”: run `ls` in src (no).']);
  });

  test('a /compact typed in the chat that has nothing to compact says why in the chat, not in a toast', async () => {
    const why = 'Not enough history to compact: the newest 4,000 tokens are kept as they are';
    let shown: boolean | undefined;
    let model: ChatModel | undefined = undefined;
    const server = new FakeServer((command, args) => {
      if (command === 'seri.prompt' && args.text === '/compact') {
        // The server's own message arrives before its answer.
        shown = model!.showsInChat(why);
        return { status: 'done', command: 'compact', compacted: false, evicted: 0, message: why };
      }
      return view(open, []);
    });
    model = new ChatModel();
    await model.attach(server);
    await model.submit({ text: '/compact' });
    assert.strictEqual(shown, true, 'the toast is held back');
    assert.deepStrictEqual(model.snapshot().notices.map((n) => n.text), [why]);
    assert.strictEqual(model.showsInChat(why), false, 'only while the /compact runs');
  });

  test('a question withdrawn by the server (its task was cancelled) goes away unanswered', async () => {
    const model = new ChatModel();
    await model.attach(new FakeServer(() => view(open, [])));
    const token = new FakeCancellation();
    const changes: ChatChange[] = [];
    model.onDidChange((change) => changes.push(change));
    const asked = model.ask(writeQuestion(), token);
    assert.ok(changes.some((c) => c.kind === 'questions' && c.asked !== undefined), 'a new question is announced');
    token.cancel();
    assert.strictEqual(await asked, null);
    assert.deepStrictEqual(model.snapshot().questions, []);
    assert.deepStrictEqual(model.snapshot().notices, []);
  });

  test('the questions of a server that went away are dropped', async () => {
    const model = new ChatModel();
    await model.attach(new FakeServer(() => view(open, [])));
    const asked = model.ask(writeQuestion());
    model.detach('stopped');
    assert.strictEqual(await asked, null);
    assert.deepStrictEqual(model.snapshot().questions, []);
  });

  test('what the open session’s task waits for is kept until the task ends', async () => {
    const model = new ChatModel();
    await model.attach(new FakeServer(() => view(open, [])));
    model.status({ sessionId: 'child', state: 'tool', detail: 'read_file a.py' });
    assert.strictEqual(model.snapshot().activity, null, 'a subagent’s status is its own');
    model.status({ sessionId: 's1', state: 'retrying', detail: '503', attempt: 1, maxAttempts: 4, delay: 2 });
    assert.deepStrictEqual(model.snapshot().activity, { state: 'retrying', detail: '503', attempt: 1, maxAttempts: 4, delay: 2 });
    assert.strictEqual(model.running, true);
    model.turnEnded({ sessionId: 's1', status: 'done', turns: 1 });
    assert.strictEqual(model.snapshot().activity, null);
    assert.strictEqual(model.running, false);
  });

  test('a prompt sent while a task runs is queued, then sent when it ends; one taken back is not', async () => {
    const server = new PromptServer();
    const model = new ChatModel();
    await model.attach(server);
    const first = model.submit({ text: 'first', context: [{ path: 'a.py' }] });
    await model.submit({ text: 'second' });
    await model.submit({ text: 'never mind' });
    assert.deepStrictEqual(model.snapshot().queued.map((q) => q.text), ['second', 'never mind']);
    model.unqueue(model.snapshot().queued[1].id);
    server.finish('done');
    await first;
    await settle();
    assert.deepStrictEqual(server.prompts, [{ text: 'first', context: [{ path: 'a.py' }] }, { text: 'second' }]);
    assert.deepStrictEqual(model.snapshot().queued, []);
    server.finish('done');
    await settle();
    assert.strictEqual(model.running, false);
  });

  test('after a Stop, queued prompts come back to the input, after the draft, with their attachments', async () => {
    const server = new PromptServer();
    const model = new ChatModel();
    await model.attach(server);
    const inputs: ChatChange[] = [];
    model.onDidChange((change) => change.kind === 'input' && inputs.push(change));
    const first = model.submit({ text: 'first' });
    await model.submit({ text: 'second', context: [{ path: 'b.py', startLine: 2, endLine: 3, text: 'x\ny' }] });
    model.noteDraft('a draft');
    server.finish('cancelled');
    await first;
    assert.deepStrictEqual(server.prompts.map((p) => p.text), ['first']);
    assert.deepStrictEqual(inputs, [
      { kind: 'input', text: 'a draft\n\nsecond', context: [{ path: 'b.py', startLine: 2, endLine: 3, text: 'x\ny' }] },
    ]);
    assert.ok(model.snapshot().notices.some((n) => n.text === 'The queued prompt is back in the input.'));
  });

  test('a failed task says why, and its Retry sends the prompt again, once', async () => {
    const server = new PromptServer();
    const model = new ChatModel();
    await model.attach(server);
    const sent = model.submit({ text: 'hello', context: [{ path: 'a.py' }] });
    server.finish('failed', 'The provider answered HTTP 400: too long');
    await sent;
    const [notice] = model.snapshot().notices;
    assert.strictEqual(notice.level, 'error');
    assert.strictEqual(notice.text, 'The task failed: The provider answered HTTP 400: too long');
    assert.deepStrictEqual(notice.retry, { text: 'hello', context: [{ path: 'a.py' }] });
    const again = model.retry(notice.id);
    await model.retry(notice.id);
    server.finish('done');
    await again;
    assert.deepStrictEqual(server.prompts.map((p) => p.text), ['hello', 'hello']);
  });

  test('a Retry rewinds a failed prompt that stored nothing, and keeps the work of one that did', async () => {
    const server = new PromptServer();
    const model = new ChatModel();
    await model.attach(server);
    const failOnce = async (text: string, stored: WireMessage[]): Promise<void> => {
      const sent = model.submit({ text });
      stored.forEach((m) => model.message({ sessionId: 's1', message: m }));
      server.finish('failed', 'HTTP 503');
      await sent;
      const notice = model.snapshot().notices.at(-1)!;
      const again = model.retry(notice.id);
      await settle();
      server.finish('done');
      await again;
    };
    await failOnce('hello', [message(1, 'user', 'hello')]);
    assert.deepStrictEqual(server.commands, ['seri.prompt', 'seri.rewind', 'seri.prompt']);
    server.commands = [];
    const call = { id: 'c1', name: 'read_file', arguments: '{"path":"a.py"}' };
    await failOnce('look', [message(2, 'user', 'look'), message(3, 'assistant', '', { tool_calls: [call] })]);
    assert.deepStrictEqual(server.commands, ['seri.prompt', 'seri.prompt']);
  });

  test('a refused prompt is shown in the editor’s words, with a Retry', async () => {
    const model = new ChatModel();
    await model.attach(
      new FakeServer((command) => {
        if (command === 'seri.prompt') {
          throw new Error('A task is running; wait for it to end or cancel it (seri.cancel) first.');
        }
        return view(open, []);
      }),
    );
    await model.submit({ text: 'hi' });
    const [notice] = model.snapshot().notices;
    assert.strictEqual(notice.text, 'A task is running; wait for it to end or cancel it (“Seri: Stop”) first.');
    assert.deepStrictEqual(notice.retry, { text: 'hi' });
  });

  test('after a compaction the user asked for, the page with the recap is drawn with the recap revealed', async () => {
    let messages = [message(1, 'user', 'a'), message(2, 'assistant', 'b')];
    const model = new ChatModel();
    await model.attach(new FakeServer(() => view(open, messages)));
    const resets: ChatChange[] = [];
    model.onDidChange((change) => change.kind === 'reset' && resets.push(change));
    messages = [message(7, 'user', 'recap', { kind: 'recap' }), message(2, 'assistant', 'b')];
    model.compacted({ sessionId: 's1', trigger: 'manual', evicted: 1 });
    await model.load();
    assert.deepStrictEqual(resets[0], { kind: 'reset', reveal: 'recap' });
    await model.load();
    assert.deepStrictEqual(resets.slice(1), resets.slice(1).map(() => ({ kind: 'reset' })), 'revealed once');
  });

  test('an automatic compaction leaves the view where it is, and says what it did in numbers', async () => {
    let messages = [message(1, 'user', 'a'), message(2, 'assistant', 'b')];
    const model = new ChatModel();
    await model.attach(new FakeServer(() => view(open, messages)));
    const resets: ChatChange[] = [];
    model.onDidChange((change) => change.kind === 'reset' && resets.push(change));
    messages = [message(7, 'user', 'recap', { kind: 'recap' }), message(2, 'assistant', 'b')];
    model.compacted({
      sessionId: 's1',
      trigger: 'auto',
      evicted: 1,
      messagesBefore: 48,
      messagesAfter: 7,
      tokensBefore: 70120,
      tokensAfter: 18340,
      read: ['src/app.py'],
      modified: [],
      recapId: 7,
    });
    await model.load();
    assert.deepStrictEqual(resets, resets.map(() => ({ kind: 'reset' })));
    const [notice] = model.snapshot().notices;
    assert.strictEqual(notice.text, 'Context compacted automatically: 48 → 7 messages, 70,120 → 18,340 tokens.');
    assert.deepStrictEqual(notice.compaction, { recapId: 7, read: ['src/app.py'], modified: [] });
    assert.strictEqual(notice.afterId, 2, 'shown where the compaction happened');
  });
});

suite('ChatModel: forks, reports and the context', () => {
  const open = session('s1', 'Parser work');
  const breakdown = {
    sessionId: 's1',
    contextWindow: 1000,
    compactAt: 500,
    keepTokens: 100,
    estimateTokens: 120,
    lastBilledTokens: null,
    localTokens: 120,
    parts: [{ kind: 'user', name: 'user text', tokens: 120 }],
  };

  test('what fills the context is read with the session, and again with the usage', async () => {
    const server = new FakeServer((command) => (command === 'seri.session.context' ? breakdown : view(open, [])));
    const model = new ChatModel();
    await model.attach(server);
    await waitUntil(() => model.snapshot().context !== null);
    assert.deepStrictEqual(model.snapshot().context, breakdown);
    const asked = server.calls.filter((c) => c.command === 'seri.session.context');
    assert.deepStrictEqual(asked.map((c) => c.args), [{ sessionId: 's1' }]);
    await model.refreshUsage();
    assert.strictEqual(server.calls.filter((c) => c.command === 'seri.session.context').length, 2);
  });

  test('a breakdown of another session, or none at all (an older server), leaves the bar plain', async () => {
    let answer: unknown = { ...breakdown, sessionId: 'other' };
    const model = new ChatModel();
    await model.attach(
      new FakeServer((command) => {
        if (command !== 'seri.session.context') {
          return view(open, []);
        }
        if (answer instanceof Error) {
          throw answer;
        }
        return answer;
      }),
    );
    await model.refreshContext();
    assert.strictEqual(model.snapshot().context, null);
    answer = new Error('Unknown command seri.session.context');
    await model.refreshContext();
    assert.strictEqual(model.snapshot().context, null);
  });

  test('/cost prints its report in the chat at once, also while a task runs, and the server’s copy is held back', async () => {
    const text = 'Spend: $0.0213 over 9 model calls.\nInput 48,210 tokens.';
    const prompts: string[] = [];
    const model = new ChatModel();
    let showsWhileAsked: boolean | undefined;
    await model.attach(
      new FakeServer((command, args) => {
        if (command !== 'seri.prompt') {
          return view(open, []);
        }
        prompts.push(String(args.text));
        showsWhileAsked = model.showsInChat(text); // the server's showMessage comes first
        return { status: 'done', command: 'cost', text, totals: {} };
      }),
    );
    model.delta({ sessionId: 's1', text: 'a task streams' });
    assert.ok(model.running);
    await model.submit({ text: '/cost' });
    assert.deepStrictEqual(prompts, ['/cost'], 'sent, not queued');
    assert.strictEqual(showsWhileAsked, true);
    assert.strictEqual(model.showsInChat(text), false, 'only while it is asked');
    const notice = model.snapshot().notices.at(-1)!;
    assert.strictEqual(notice.text, text);
    assert.strictEqual(notice.report, true);
  });

  test('/context prints its report and redraws the bar from its figures', async () => {
    const model = new ChatModel();
    await model.attach(
      new FakeServer((command) =>
        command === 'seri.prompt' ? { status: 'done', command: 'context', text: 'Context: 120 of 1,000 tokens', ...breakdown } : view(open, []),
      ),
    );
    await model.submit({ text: '/Context ' });
    assert.strictEqual(model.snapshot().notices.at(-1)?.text, 'Context: 120 of 1,000 tokens');
    assert.deepStrictEqual(model.snapshot().context?.parts, breakdown.parts);
  });

  test('a fork is asked at the message given (else at the last), and its origin is named', async () => {
    const parent = session('p1', 'Parser work');
    const fork: Session = { ...session('f1', 'Parser work (fork)'), parentId: 'p1', forkedAt: 2 };
    let current: Session = parent;
    const server = new FakeServer((command, args) => {
      if (command === 'seri.session.fork') {
        current = fork;
        model.sessionChanged({ session: fork, reason: 'forked' });
        return { session: fork, forkedAt: 2 };
      }
      if (command === 'seri.session.get' && args.sessionId === 'p1') {
        return view(parent, []);
      }
      return view(current, []);
    });
    const model = new ChatModel();
    await model.attach(server);
    assert.strictEqual(model.snapshot().forkOrigin, null);
    const result = await model.fork(2);
    assert.deepStrictEqual(result, { session: fork, forkedAt: 2 });
    await waitUntil(() => model.snapshot().forkOrigin?.title);
    assert.deepStrictEqual(model.snapshot().forkOrigin, { id: 'p1', title: 'Parser work' });
    assert.strictEqual(model.currentSession?.id, 'f1');
    await model.fork();
    const forks = server.calls.filter((c) => c.command === 'seri.session.fork').map((c) => c.args);
    assert.deepStrictEqual(forks, [{ messageId: 2 }, {}]);
  });
});

async function waitUntil(check: () => unknown): Promise<void> {
  for (let i = 0; i < 100 && !check(); i++) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  assert.ok(check(), 'timed out');
}

function writeQuestion(): ApproveParams {
  return {
    sessionId: 's1',
    kind: 'write',
    message: 'seri wants to edit src/app.py.',
    choices: ['Allow', 'Allow for this session', 'Deny'],
    tool: 'edit',
    path: 'src/app.py',
    action: 'edit',
    line: 1,
    current: 'a\n',
    proposed: 'b\n',
    oldText: 'a',
    newText: 'b',
  };
}

class FakeCancellation {
  isCancellationRequested = false;
  private readonly listeners: (() => void)[] = [];
  onCancellationRequested(listener: () => void): { dispose(): void } {
    this.listeners.push(listener);
    return { dispose: () => undefined };
  }
  cancel(): void {
    this.isCancellationRequested = true;
    this.listeners.forEach((listener) => listener());
  }
}

/** A server whose tasks end when the test says (`finish`), recording each prompt. */
class PromptServer implements ServerLink {
  prompts: { text: string; context?: unknown }[] = [];
  /** Every command but the reads of the session and of what fills its context. */
  commands: string[] = [];
  private pending: ((result: PromptResult) => void)[] = [];
  async execute<T>(command: string, args: object = {}): Promise<T> {
    if (command !== 'seri.session.get' && command !== 'seri.session.context') {
      this.commands.push(command);
    }
    if (command !== 'seri.prompt') {
      return view(session('s1', 'Parser work'), []) as T;
    }
    this.prompts.push(args as { text: string });
    return new Promise<PromptResult>((resolve) => this.pending.push(resolve)) as Promise<T>;
  }
  finish(status: PromptResult['status'], error?: string): void {
    this.pending.shift()?.({ status, turns: 1, ...(error ? { error } : {}) });
  }
}

function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 10));
}
