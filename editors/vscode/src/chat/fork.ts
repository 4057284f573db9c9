// Where a fork's copied conversation ends in the transcript. A fork copies its parent's
// messages with their times, and is created after all of them; what it stores later (a
// recap of its own included, which comes first) is newer than the fork itself. No
// `vscode` import: the webview bundle uses it too.

import type { Session, WireMessage } from '../protocol';

/** The session a fork was forked from, as the chat names it. */
export interface ForkOrigin {
  id: string;
  /** Its title; null when it could not be read (deleted, or another server's). */
  title: string | null;
}

/**
 * The id of the last message, among `messages` (oldest first), that the fork `session`
 * copied from its parent: the last one not newer than the fork. Null for a session that
 * is no fork, and when none of the copied messages is among those shown.
 */
export function lastCopied(session: Session | null, messages: readonly WireMessage[]): number | null {
  if (!session || session.forkedAt === null || session.forkedAt === undefined) {
    return null;
  }
  const forked = Date.parse(session.createdAt);
  let last: number | null = null;
  for (const message of messages) {
    if (Date.parse(message.createdAt) <= forked) {
      last = message.id;
    }
  }
  return last;
}
