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
  /** The session a fork was forked from (or a subagent's parent); null otherwise. */
  parentId?: string | null;
  /** In a fork: the id, in the parent, of the last message it copied. */
  forkedAt?: number | null;
  /** What the session's model calls cost so far (older servers omit it). */
  spend?: Spend;
}

/** A session's spend on model calls (`seri.session.usage` totals, `session.spend`). */
export interface Spend {
  /** As the provider bills them, the cached ones included. */
  inputTokens: number;
  cachedInputTokens: number;
  outputTokens: number;
  reasoningTokens: number;
  /** USD, summed over the calls that reported one; null when none did. */
  cost: number | null;
  calls: number;
}

/** `seri.session.usage`: the totals, by what the calls were for. */
export interface SessionUsage {
  sessionId: string | null;
  totals: Spend;
  byKind: { turn: Spend; compaction: Spend; subagent: Spend };
  calls: number;
  /** cachedInputTokens / inputTokens; null before any input token. */
  cacheHitRate: number | null;
}

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

/** `seri.session.fork`: the fork (now open) and the id of the last message it copied. */
export interface ForkResult {
  session: Session;
  forkedAt: number;
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
  /** The estimate at which automatic compaction starts (half the window); older servers omit it. */
  compactAt?: number;
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

export type SessionChangeReason = 'new' | 'continued' | 'resumed' | 'cleared' | 'rewound' | 'forked' | 'renamed';

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

export interface CompactedParams extends Partial<CompactionFigures> {
  sessionId: string;
  trigger: 'auto' | 'manual' | 'overflow';
  evicted: number;
}

export interface TurnEndedParams {
  sessionId: string;
  status: TaskStatus;
  turns: number;
  /** Why it failed or stopped at its budget. */
  error?: string;
}

/** `seri/status`: what a running task waits for now. */
export interface StatusParams {
  sessionId: string;
  state: 'model' | 'retrying' | 'tool' | 'approval' | 'compacting' | 'checks' | (string & {});
  /** The tool and its target, the retry's reason, what the approval is for, the check's name. */
  detail?: string;
  attempt?: number;
  maxAttempts?: number;
  /** Seconds before the retry. */
  delay?: number;
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

interface ApproveBase {
  /** The top-level session whose task asks (a subagent's question carries its parent's). */
  sessionId: string;
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

/** `seri/approve` params: a question a task waits on (docs/protocol.md, Approvals). */
export type ApproveParams = WriteQuestion | MemoryQuestion | ChecksQuestion;

export interface ApproveResult {
  choice: string;
  /** A Deny's reason, for the model. */
  note?: string;
}

export type RestoreMode = 'both' | 'conversation' | 'files';

/** One entry of `seri.checkpoints`: a prompt the session can go back to before. */
export interface Checkpoint {
  /** What to pass to `seri.rewind` to go back to before this prompt. */
  steps: number;
  /** The prompt's first line, shortened. */
  prompt: string;
  createdAt: string;
  /** Files the prompt's task changed. */
  files: string[];
  /** Files a rewind of `steps` would leave alone (changed since seri wrote them) unless forced. */
  conflicts: string[];
}

export interface CheckpointList {
  checkpoints: Checkpoint[];
  /** The session's checkpoints were retired (only the 20 latest sessions keep them). */
  retired: boolean;
}

export interface RewindRequest {
  steps?: number;
  restore?: RestoreMode;
  force?: boolean;
}

export interface RewindResult {
  session: Session;
  rewound: number;
  /** The earliest removed prompt's whole text (absent for a files-only rewind). */
  prompt?: string;
  restoredFiles: string[];
  conflicts: string[];
  failed?: { path: string; reason: string }[];
  /** True when a file could not be put back, so the conversation was kept (files only). */
  conversationKept?: boolean;
}

/** `seri.trajectory`: whether runs are recorded, and where that comes from. */
export interface TrajectoryState {
  enabled: boolean;
  source: 'env' | 'profile' | 'default';
  /** What the profile's config.json holds (null: nothing). */
  stored?: boolean | null;
  /** A sentence for the user: on or off, and why. */
  message?: string;
  /** Set when SERI_TRAJECTORY_ENABLED in the server's environment overrides the stored toggle. */
  warning?: string;
}

/** One hit of `seri.session.search`: a stored message that matches, and its session. */
export interface SearchHit {
  sessionId: string;
  title: string;
  messageId: number;
  role: 'user' | 'assistant' | 'tool';
  /** `recap` or `check`, when the message has one. */
  kind?: string;
  /** The matching part on one line, each matched word between `«` and `»`; `…` where cut. */
  snippet: string;
  createdAt: string;
  projectPath: string;
  /** Messages of the session after this one (a page of `messagesAfter + 1` starts with it). */
  messagesAfter?: number;
}

export interface SearchResult {
  hits: SearchHit[];
  hasMore: boolean;
}

export type ExportFormat = 'markdown' | 'json';

/** `seri.session.export`: the session as text, with secrets replaced by `[redacted]`. */
export interface ExportResult {
  format: ExportFormat;
  text: string;
  /** How many secrets were replaced. */
  redactions: number;
}

/** `seri.session.import`: the new session (not opened), or the one made by an earlier import. */
export interface ImportResult {
  session: Session;
  alreadyImported?: boolean;
}

/**
 * A slash command the server understands, as it advertises them: in its initialize result
 * (`capabilities.experimental.seri.slashCommands`) and in `seri.commands`' answer.
 */
export interface SlashCommand {
  /** Without the slash: `compact`. */
  name: string;
  /** `/compact [focus words]`. */
  usage: string;
  /** What it does, in one sentence. */
  summary: string;
  /** What the words after it are; absent when it takes none. */
  argumentHint?: string;
}

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
  sessionExport: 'seri.session.export',
  sessionImport: 'seri.session.import',
  prompt: 'seri.prompt',
  compact: 'seri.compact',
  clear: 'seri.clear',
  maxTurns: 'seri.maxTurns',
  cancel: 'seri.cancel',
  rewind: 'seri.rewind',
  checkpoints: 'seri.checkpoints',
  trajectory: 'seri.trajectory',
  /** The slash commands the server understands (also in its initialize result). */
  commands: 'seri.commands',
} as const;

export const Notification = {
  sessionChanged: 'seri/sessionChanged',
  message: 'seri/message',
  delta: 'seri/delta',
  compacted: 'seri/compacted',
  turnEnded: 'seri/turnEnded',
  status: 'seri/status',
} as const;

/** Requests the server sends to the editor. */
export const ServerRequest = {
  saveDocuments: 'seri/saveDocuments',
  approve: 'seri/approve',
} as const;

/** Messages fetched per page of history. */
export const PAGE_SIZE = 200;
