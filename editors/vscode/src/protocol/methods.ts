// The method names: server commands, notifications, and requests to the editor.

/** Server commands (`workspace/executeCommand`), each with one JSON object argument. */
export const ServerCommand = {
  sessionNew: 'seri.session.new',
  sessionContinue: 'seri.session.continue',
  sessionResume: 'seri.session.resume',
  sessionList: 'seri.session.list',
  sessionGet: 'seri.session.get',
  sessionFork: 'seri.session.fork',
  sessionUsage: 'seri.session.usage',
  sessionContext: 'seri.session.context',
  sessionSearch: 'seri.session.search',
  sessionRename: 'seri.session.rename',
  sessionDelete: 'seri.session.delete',
  sessionModel: 'seri.session.model',
  /** The provider's models with their context windows, and the open session's model. */
  models: 'seri.models',
  sessionExport: 'seri.session.export',
  sessionImport: 'seri.session.import',
  prompt: 'seri.prompt',
  compact: 'seri.compact',
  clear: 'seri.clear',
  maxTurns: 'seri.maxTurns',
  cancel: 'seri.cancel',
  /** Stop one running `run` command; the task goes on. */
  toolStop: 'seri.tool.stop',
  rewind: 'seri.rewind',
  checkpoints: 'seri.checkpoints',
  trajectory: 'seri.trajectory',
  /** A recording; `{compacted: true}`: the record of what the session's recap replaced. */
  trajectoryGet: 'seri.trajectory.get',
  /** The slash commands the server understands (also in its initialize result). */
  commands: 'seri.commands',
  /** The server's set-up, with its MCP servers (`mcpServers`). */
  info: 'seri.info',
  /** Stop one MCP server and start it again. */
  mcpRestart: 'seri.mcp.restart',
  /** Ask again whether the workspace's MCP servers may start, or revoke the answer kept. */
  mcpConsent: 'seri.mcp.consent',
  /** Where a code block goes in a file (Apply to File): the file's new text. */
  codeMerge: 'seri.code.merge',
} as const;

export const Notification = {
  sessionChanged: 'seri/sessionChanged',
  message: 'seri/message',
  delta: 'seri/delta',
  compacted: 'seri/compacted',
  turnEnded: 'seri/turnEnded',
  status: 'seri/status',
  /** What a running `run` command printed since the last one. */
  toolOutput: 'seri/toolOutput',
} as const;

/** Requests the server sends to the editor. */
export const ServerRequest = {
  saveDocuments: 'seri/saveDocuments',
  approve: 'seri/approve',
} as const;
