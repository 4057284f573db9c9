// What fills the context window, and what a compaction did.

/** What a part of the context is (`seri.session.context`'s `parts[].kind`). */
export type ContextPartKind =
  | 'system'
  | 'agents'
  | 'rule'
  | 'memory'
  | 'recap'
  | 'globRules'
  | 'checks'
  | 'user'
  | 'assistant'
  | 'toolCalls'
  | 'toolResult'
  /** An MCP server's tool definitions, sent with every request (`name`: the server). */
  | 'mcpTools'
  | (string & {});

export interface ContextPart {
  kind: ContextPartKind;
  /** A file's path, a tool's name, or what the part is (`user text`). */
  name: string;
  tokens: number;
}

/** `seri.session.context`: what fills the context window, by part. */
export interface ContextBreakdown {
  sessionId: string | null;
  contextWindow: number;
  compactAt: number;
  keepTokens: number;
  /** What the compaction trigger compares with `compactAt`: max(localTokens, lastBilledTokens). */
  estimateTokens: number;
  lastBilledTokens: number | null;
  /** ceil(chars / 4) over the system message and the history; the parts add up to it. */
  localTokens: number;
  parts: ContextPart[];
}

/** What a compaction did, in numbers (`seri/compacted`, and a `seri.compact` that compacted). */
export interface CompactionFigures {
  /** The session's messages before and after (the recap counts as one). */
  messagesBefore: number;
  messagesAfter: number;
  /** The estimate that started it, and the local count after. */
  tokensBefore: number;
  tokensAfter: number;
  /** The recap's Read and Modified lists. */
  read: string[];
  modified: string[];
  /** The recap message's id. */
  recapId: number;
}

export interface CompactResult extends Partial<CompactionFigures> {
  compacted: boolean;
  evicted: number;
  message?: string;
}
