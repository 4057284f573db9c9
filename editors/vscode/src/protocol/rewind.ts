// Checkpoints and rewinds: going back to before a prompt.

import type { Session } from './sessions';

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
  /** A prompt's id: back to just before it (the chat's "Rewind to here"). */
  messageId?: number;
  restore?: RestoreMode;
  force?: boolean;
  /** Only name the files it would leave alone (`conflicts`), changing nothing. */
  check?: boolean;
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
