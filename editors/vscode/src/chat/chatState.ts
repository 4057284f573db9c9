// The chat's state as the views see it: what a snapshot holds (notices, questions, the
// queue, what the task waits for), the changes the model announces, and how the model
// reaches the server. Types only; shared by the extension and the webview bundle.

import type { ApproveParams, ContextBreakdown, PromptContext, Session, SlashCommand, StatusParams, Usage, WireMessage } from '../protocol';
import type { ForkOrigin } from './fork';
import type { ReportView } from './reports';

/** How the model reaches the server: `workspace/executeCommand` with one argument. */
export interface ServerLink {
  execute<T>(command: string, args?: object): Promise<T>;
}

/**
 * `missing`: no server command could be found; `failed`: it did not start or it died;
 * `noFolder`: the window has no folder, so there is no project to hold sessions.
 */
export type ServerState = 'starting' | 'running' | 'stopped' | 'missing' | 'failed' | 'noFolder';

export interface ChatSnapshot {
  serverState: ServerState;
  session: Session | null;
  messages: WireMessage[];
  hasMore: boolean;
  streaming: string;
  /** What each running command (`run` call) printed so far, its tail, by tool call id. */
  toolOutputs: Record<string, string>;
  running: boolean;
  usage: Usage | null;
  notices: Notice[];
  /** What the running task waits for (`seri/status`); null when not told. */
  activity: Activity | null;
  /** Questions the task waits on, oldest first. */
  questions: Question[];
  /** Prompts sent while a task ran, sent in order once it ends. */
  queued: QueuedPrompt[];
  /** What fills the open session's context, by part; null until the server said. */
  context: ContextBreakdown | null;
  /** The session the open one was forked from; null when it is no fork. */
  forkOrigin: ForkOrigin | null;
  /** The slash commands the running server advertises; none while no server runs. */
  slashCommands: SlashCommand[];
}

/** A line the chat shows without storing it: how a task ended, a refused command. */
export interface Notice {
  id: number;
  level: 'info' | 'warning' | 'error';
  text: string;
  /** The id of the last message when the notice was raised; it is shown after it. */
  afterId: number | null;
  /** The prompt a Retry button sends again (a failed task's, a refused one's). */
  retry?: PromptRequest;
  /**
   * A report (`/cost`, `/context`): its figures laid out to fit the chat (a ReportView),
   * or, from a server that sent only text, the aligned lines as they are (true).
   */
  report?: true | ReportView;
  /** A compaction's notice: the recap (a button shows it) and its Read/Modified lists. */
  compaction?: { recapId?: number; read: string[]; modified: string[] };
  /** Says how a task ended: the stored `turnEnded` of the same message is not shown too. */
  turnEnd?: boolean;
}

/** What a notice may carry besides its text. */
export type NoticeExtras = Pick<Notice, 'retry' | 'report' | 'compaction' | 'turnEnd'>;

/** What the chat input sends: the text and what the user attached. */
export interface PromptRequest {
  text: string;
  context?: PromptContext[];
}

export interface QueuedPrompt extends PromptRequest {
  id: number;
}

/** A `seri/approve` question on screen until it is answered or withdrawn. */
export interface Question {
  id: number;
  params: ApproveParams;
}

export type Activity = Omit<StatusParams, 'sessionId'>;

/** The part of a CancellationToken the model needs (no `vscode` import here). */
export interface Cancellation {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): { dispose(): void };
}

export type ChatChange =
  /** `reveal: 'recap'`: a compaction happened, show its recap. */
  | { kind: 'reset'; reveal?: 'recap' }
  | { kind: 'append'; message: WireMessage }
  | { kind: 'prepend'; messages: WireMessage[]; hasMore: boolean }
  | { kind: 'streaming'; text: string }
  /** Running command `callId` printed `text`. */
  | { kind: 'toolOutput'; callId: string; text: string }
  | { kind: 'notice'; notice: Notice }
  | { kind: 'state' }
  /** The input's text was set; `context`: attachments that come back with it. */
  | { kind: 'input'; text: string; context?: PromptContext[] }
  /** The open questions changed (the state with them); `asked` is a new one. */
  | { kind: 'questions'; asked?: Question }
  /** Scroll to message `messageId` (earlier pages read as needed) and highlight it. */
  | { kind: 'reveal'; messageId: number };
