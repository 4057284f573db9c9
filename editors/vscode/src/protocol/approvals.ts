// `seri/approve`: the questions a task waits on (a write, a memory line, the checks, a
// command, an MCP tool call), and whether a workspace's MCP servers may start.

interface ApproveBase {
  /** The top-level session whose task asks (a subagent's question carries its parent's); null for none (`mcpServers`). */
  sessionId: string | null;
  message: string;
  choices: string[];
}

/** A write the task waits to be allowed, with the change to review. */
export interface WriteQuestion extends ApproveBase {
  kind: 'write';
  tool: string;
  path: string;
  action: 'create' | 'overwrite' | 'edit';
  line?: number;
  /** The text now (the open buffer's); null for a new file; absent when too large. */
  current?: string | null;
  proposed?: string;
  oldText?: string;
  newText?: string;
  tooLarge?: boolean;
}

export interface MemoryQuestion extends ApproveBase {
  kind: 'memory';
  text: string;
  path: string;
}

export interface ChecksQuestion extends ApproveBase {
  kind: 'checks';
  cwd: string;
  checks: { name: string; command: string }[];
}

/** A command line the task waits to run (the `run` tool), with why it is asked. */
export interface CommandQuestion extends ApproveBase {
  kind: 'command';
  command: string;
  /** Workspace-relative, `.` for the root. */
  cwd: string;
  /** The line's simple commands, as the rules see them. */
  parts?: string[];
  /** The parts no allow rule matched. */
  unmatched?: string[];
  /** The patterns an "allow for this session" choice would add. */
  patterns?: string[];
  /** Why it is asked (the line could not be parsed, say). */
  reason?: string;
}

/** A call to an MCP server's tool (`permissions.mcp` is `ask`), with its arguments. */
export interface McpToolQuestion extends ApproveBase {
  kind: 'mcp';
  server: string;
  tool: string;
  arguments: Record<string, unknown>;
}

/** Whether the workspace's own MCP servers may start (asked at start-up, no session). */
export interface McpServersQuestion extends ApproveBase {
  kind: 'mcpServers';
  /** Each server with its command line (or URL). */
  servers: { name: string; transport: 'stdio' | 'http'; command: string }[];
}

/** `seri/approve` params: a question a task waits on (docs/protocol.md, Approvals). */
export type ApproveParams = WriteQuestion | MemoryQuestion | ChecksQuestion | CommandQuestion | McpToolQuestion | McpServersQuestion;

export interface ApproveResult {
  choice: string;
  /** A Deny's reason, for the model. */
  note?: string;
}
