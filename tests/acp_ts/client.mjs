// Drives `seri-lsp acp` from the official ACP TypeScript SDK's client, as an editor
// built on it would: initialize, a new session, a prompt whose tool call reads a file
// through the client's fs, a cancelled prompt, the session list, a load that replays the
// conversation, a session with a client-passed MCP server whose tool the model calls,
// and a disconnect after which the agent must exit 0.
//
// node client.mjs SDK_DIR WORKSPACE -- AGENT_COMMAND...
// Prints one JSON line per step ({"step": ..., ...}) for tests/test_acp_typescript.py.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';

const [sdkDir, workspace, separator, command, ...args] = process.argv.slice(2);
if (separator !== '--' || !command) {
  throw new Error('usage: client.mjs SDK_DIR WORKSPACE -- AGENT_COMMAND...');
}
const entry = createRequire(path.join(sdkDir, 'index.js')).resolve('@agentclientprotocol/sdk');
const acp = await import(pathToFileURL(entry).href);

const say = (step, fields = {}) => console.log(JSON.stringify({ step, ...fields }));
const updates = [];
const reads = [];
const buffers = new Map([[path.join(workspace, 'notes.txt'), 'unsaved notes in the editor\n']]);

const agentProcess = spawn(command, args, { cwd: workspace, stdio: ['pipe', 'pipe', 'inherit'] });
const exited = new Promise((resolve) => agentProcess.on('exit', (code, signal) => resolve({ code, signal })));
const stream = acp.ndJsonStream(Writable.toWeb(agentProcess.stdin), Readable.toWeb(agentProcess.stdout));

const app = acp
  .client({ name: 'seri-ts-sdk-test' })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params);
  })
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    reads.push(params.path);
    return { content: buffers.get(params.path) ?? '' };
  })
  .onRequest(acp.methods.client.fs.writeTextFile, ({ params }) => {
    buffers.set(params.path, params.content);
    return {};
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => ({
    outcome: { outcome: 'selected', optionId: params.options[0].optionId },
  }));

const texts = (sessionId, kind) =>
  updates
    .filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === kind)
    .map((u) => u.update.content?.text ?? '')
    .join('');

await app.connectWith(stream, async (ctx) => {
  const info = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } },
    clientInfo: { name: 'seri-ts-sdk-test', version: '1' },
  });
  say('initialize', { name: info.agentInfo?.name, loadSession: info.agentCapabilities?.loadSession });

  const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd: workspace, mcpServers: [] });
  say('new', { sessionId });

  const read = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: 'text', text: 'read notes.txt' }],
  });
  const calls = updates.filter((u) => u.sessionId === sessionId && u.update.sessionUpdate === 'tool_call');
  say('prompt', { stopReason: read.stopReason, reads, toolCalls: calls.length, reply: texts(sessionId, 'agent_message_chunk') });

  const running = ctx.request(acp.methods.agent.session.prompt, {
    sessionId,
    prompt: [{ type: 'text', text: 'take your time' }],
  });
  await new Promise((resolve) => setTimeout(resolve, 500));
  await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
  say('cancel', { stopReason: (await running).stopReason });

  const listed = await ctx.request(acp.methods.agent.session.list, { cwd: workspace });
  say('list', { sessions: listed.sessions.map((s) => ({ sessionId: s.sessionId, title: s.title })) });

  updates.length = 0;
  await ctx.request(acp.methods.agent.session.load, { sessionId, cwd: workspace, mcpServers: [] });
  say('load', { user: texts(sessionId, 'user_message_chunk'), agent: texts(sessionId, 'agent_message_chunk') });

  // A session with an MCP server of the client's (SERI_TEST_MCP_SERVER: [command, ...args]).
  const [mcpCommand, ...mcpArgs] = JSON.parse(process.env.SERI_TEST_MCP_SERVER ?? '[]');
  if (mcpCommand) {
    const mcp = await ctx.request(acp.methods.agent.session.new, {
      cwd: workspace,
      mcpServers: [{ name: 'tsmcp', command: mcpCommand, args: mcpArgs, env: [] }],
    });
    const answer = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId: mcp.sessionId,
      prompt: [{ type: 'text', text: 'call the echo tool' }],
    });
    const mcpCalls = updates.filter((u) => u.sessionId === mcp.sessionId && u.update.sessionUpdate === 'tool_call');
    say('mcp', {
      stopReason: answer.stopReason,
      toolCalls: mcpCalls.map((u) => u.update.title),
      reply: texts(mcp.sessionId, 'agent_message_chunk'),
    });
  }
});

// The SDK's disconnect: both of the agent's pipes closed.
agentProcess.stdin.end();
agentProcess.stdout.destroy();
say('exit', await exited);
