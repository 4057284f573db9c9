// Stored messages, prompts with what the user attached, and how a prompt's task ended.

export interface ToolCall {
  id: string;
  name: string;
  /** The JSON text the model sent. */
  arguments: string;
}

export interface Recap {
  goal: string;
  progress: string;
  blockers: string;
  nextSteps: string;
  read: string[];
  modified: string[];
  evicted: number;
  /** The tool calls the recap stands for (earlier recaps' included). */
  toolCalls?: number;
  /** The estimated tokens before and after the latest compaction (null: not kept then). */
  tokensBefore?: number | null;
  tokensAfter?: number | null;
}

/** A stored message, OpenAI field names plus `id`, `createdAt` and seri's extras. */
export interface WireMessage {
  id: number;
  createdAt: string;
  role: 'user' | 'assistant' | 'tool';
  content: string;
  thinking?: string;
  tool_calls?: ToolCall[];
  tool_call_id?: string;
  /** `recap` for the message standing for a compacted prefix, `rule` for a glob rule. */
  kind?: string;
  recap?: Recap;
  isError?: boolean;
  /** On the last message a turn left: how the turn ended (`error`: the words shown then). */
  turnEnded?: TurnEnd;
}

/** `interrupted`: seri stopped (or was killed) before the task ended. */
export type TaskStatus = 'done' | 'max_turns' | 'failed' | 'cancelled' | 'interrupted';

/** How a stored turn ended, as `seri/turnEnded` said it. */
export interface TurnEnd {
  status: TaskStatus;
  error?: string;
}

export interface PromptResult {
  status: TaskStatus;
  error?: string;
  turns?: number;
  sessionId?: string;
  /** Set when the text was a slash command. */
  command?: string;
  [field: string]: unknown;
}

/** What the user attached to a prompt (`seri.prompt`'s `context`): a file, lines, a buffer. */
export interface PromptContext {
  /** Workspace-relative (or absolute outside the project). */
  path: string;
  /** 1-based, inclusive. */
  startLine?: number;
  endLine?: number;
  /** What the editor shows there: a selection, or a buffer with unsaved changes. */
  text?: string;
}
