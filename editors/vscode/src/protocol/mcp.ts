// `seri.info`'s `mcpServers` rows, `seri.mcp.restart` and `seri.mcp.consent` (docs/protocol.md "MCP servers").

export type McpStatus = 'starting' | 'ready' | 'failed' | 'stopped' | 'awaiting consent';

/** One configured MCP server as `seri.info` lists it. */
export interface McpServerInfo {
  name: string;
  /** The file or setting it was configured in. */
  configuredIn: string;
  origin: 'workspace' | 'profile' | 'settings';
  transport: 'stdio' | 'http';
  status: McpStatus;
  /** The number of its tools. */
  tools: number;
  /** Why it failed (or waits), when it did. */
  reason?: string;
}

/** The part of `seri.info`'s answer this extension reads. */
export interface ServerInfo {
  mcpServers?: McpServerInfo[];
}

export interface McpRestarted {
  restarted: string;
}

/** `seri.mcp.consent`'s answer: asked again (`answer`) or revoked (`revoked`). */
export interface McpConsented {
  answer?: string | null;
  revoked?: boolean;
  servers: McpServerInfo[];
}
