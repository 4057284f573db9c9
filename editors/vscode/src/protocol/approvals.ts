// `seri/approve`: the questions a task waits on (a write, a memory line, the checks).

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
