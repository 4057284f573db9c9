// The notifications the server sends while sessions change and tasks run.

import type { CompactionFigures } from './context';
import type { TaskStatus, WireMessage } from './messages';
import type { Session } from './sessions';

export type SessionChangeReason = 'new' | 'continued' | 'resumed' | 'cleared' | 'rewound' | 'forked' | 'renamed' | 'model';

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

/** `seri/toolOutput`: what a running tool call (`run`) printed since the last one. */
export interface ToolOutputParams {
  sessionId: string;
  toolCallId: string;
  text: string;
}
