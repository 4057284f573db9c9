// Sessions on the wire: a session, its spend and usage, a page of it, search hits, an
// export and an import.

import type { WireMessage } from './messages';

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
  /** The model its next turn uses: its own choice, else the `provider.model` setting (older servers omit it). */
  model?: string | null;
}

/** One of the provider's models (`seri.models`), with its context window when listed. */
export interface ModelEntry {
  id: string;
  contextWindow?: number;
}

/** `seri.models`: the provider's models and the open session's model. */
export interface ModelList {
  models: ModelEntry[];
  current: string;
  /** Why the list is empty: it could not be read. */
  error?: string;
}

/** `seri.session.model`: the session with its new model, and the window read for it. */
export interface ModelChoice {
  session: Session;
  model: string;
  contextWindow: number | null;
  /** The model was not checked: the provider's list could not be read. */
  warning?: string;
}

/** A session's spend on model calls (`seri.session.usage` totals, `session.spend`). */
export interface Spend {
  /** As the provider bills them, the cached ones included. */
  inputTokens: number;
  /** Read from the provider's prompt cache (among the input tokens). */
  cachedInputTokens: number;
  /** Written to the provider's prompt cache (among the input tokens); absent from a server before it was reported. */
  cacheWriteTokens?: number;
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

/** `seri.session.fork`: the fork (now open) and the id of the last message it copied. */
export interface ForkResult {
  session: Session;
  forkedAt: number;
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

/** `seri.session.delete`: what was deleted, and the session opened in place of the open one when that was it. */
export interface DeleteResult {
  deleted: {
    sessionId: string;
    title: string;
    /** Counted with its subagents' sessions, which go with it. */
    subagentSessions: number;
    messages: number;
    checkpoints: number;
    recordings: number;
  };
  session: Session | null;
}

/** `seri.session.import`: the new session (not opened), or the one made by an earlier import. */
export interface ImportResult {
  session: Session;
  alreadyImported?: boolean;
}

/** Messages fetched per page of history. */
export const PAGE_SIZE = 200;
