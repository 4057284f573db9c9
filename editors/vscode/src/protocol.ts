// The seri-lsp wire contract as this extension uses it (docs/protocol.md, SPEC section 7).
// Shared by the extension and the webview bundle: types and constants only.

/** `session` in every result and notification. */
export interface Session {
  id: string;
  project: string;
  title: string;
  createdAt: string;
  updatedAt: string;
  maxTurns: number;
  messageCount: number;
}

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
}

export interface Usage {
  estimateTokens: number;
  contextWindow: number;
}

/** The result of `seri.session.get`; `hasMore` only from servers that page. */
export interface SessionView {
  session: Session | null;
  messages: WireMessage[];
  usage: Usage;
  paths: { read: string[]; modified: string[] };
  hasMore?: boolean;
}

export type TaskStatus = 'done' | 'max_turns' | 'failed' | 'cancelled';

export interface PromptResult {
  status: TaskStatus;
  error?: string;
  turns?: number;
  sessionId?: string;
  /** Set when the text was a slash command. */
  command?: string;
  [field: string]: unknown;
}

export interface CompactResult {
  compacted: boolean;
  evicted: number;
  message?: string;
}

export type SessionChangeReason = 'new' | 'continued' | 'resumed' | 'cleared' | 'rewound';

export interface SessionChangedParams {
  session: Session;
  reason: SessionChangeReason;
}

export interface MessageParams {
  sessionId: string;
  message: WireMessage;
}

export interface DeltaParams {
  sessionId: string;
  text: string;
  /** A retry starts: drop what was streamed so far for the reply in progress. */
  reset?: boolean;
}

export interface CompactedParams {
  sessionId: string;
  trigger: 'auto' | 'manual' | 'overflow';
  evicted: number;
}

export interface TurnEndedParams {
  sessionId: string;
  status: TaskStatus;
  turns: number;
}

/** Server commands (`workspace/executeCommand`), each with one JSON object argument. */
export const ServerCommand = {
  sessionNew: 'seri.session.new',
  sessionContinue: 'seri.session.continue',
  sessionResume: 'seri.session.resume',
  sessionList: 'seri.session.list',
  sessionGet: 'seri.session.get',
  prompt: 'seri.prompt',
  compact: 'seri.compact',
  clear: 'seri.clear',
  maxTurns: 'seri.maxTurns',
  cancel: 'seri.cancel',
} as const;

export const Notification = {
  sessionChanged: 'seri/sessionChanged',
  message: 'seri/message',
  delta: 'seri/delta',
  compacted: 'seri/compacted',
  turnEnded: 'seri/turnEnded',
} as const;

/** Slash commands the server understands, as suggested in the chat input. */
export const SLASH_COMMANDS: readonly { name: string; usage: string; description: string }[] = [
  { name: 'compact', usage: '/compact [focus words]', description: 'Replace older history by a recap' },
  { name: 'clear', usage: '/clear', description: 'Start a new session (the old one is kept)' },
  { name: 'resume', usage: '/resume ID', description: 'Open another session of this project' },
  { name: 'continue', usage: '/continue', description: 'Open the latest session of this project' },
  { name: 'max-turns', usage: '/max-turns N', description: 'Cap model calls per task in this session' },
];

/** Messages fetched per page of history. */
export const PAGE_SIZE = 200;
