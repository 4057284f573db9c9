// The palette commands that open, start, pick, rename and fork sessions, and set the
// open session's turn budget.

import * as vscode from 'vscode';

import { sessionTitle } from '../chat/promptText';
import { plural, relativeTime, spendWords } from '../format';
import { ForkResult, ServerCommand, Session } from '../protocol';
import type { CommandContext } from './commandContext';
import { pickWithDelete, SessionPickItem } from './deleteSession';

/** A session title as the server takes it: one line of 1..200 characters. */
export function titleProblem(value: string): string | undefined {
  const title = value.trim();
  if (!title) {
    return 'A title needs at least one character.';
  }
  if (/[\u0000-\u001f\u007f]/.test(title)) {
    return 'A title is one line: no line breaks or tabs.';
  }
  return title.length > 200 ? `At most 200 characters (this is ${title.length}).` : undefined;
}

export async function newSession(ctx: CommandContext): Promise<Session> {
  const { session } = await ctx.server.execute<{ session: Session }>(ServerCommand.sessionNew);
  await ctx.openChat();
  return session;
}

export async function continueSession(ctx: CommandContext): Promise<Session | null> {
  const { session } = await ctx.server.execute<{ session: Session | null }>(ServerCommand.sessionContinue);
  if (session === null) {
    void vscode.window.showInformationMessage('Seri: this project has no earlier session.');
  }
  await ctx.openChat();
  return session;
}

/** Resume `sessionId`, or the session picked from the project's sessions. */
export async function resumeSession(ctx: CommandContext, sessionId?: string): Promise<Session | undefined> {
  let id = sessionId;
  if (id === undefined) {
    id = (await pickSession(ctx))?.id;
    if (id === undefined) {
      return undefined;
    }
  }
  const { session } = await ctx.server.execute<{ session: Session }>(ServerCommand.sessionResume, { sessionId: id });
  await ctx.openChat();
  return session;
}

/**
 * The QuickPick of this project's sessions: title, relative date, message count; each
 * with a delete button (`deleteSession.ts`).
 */
export async function pickSession(
  ctx: CommandContext,
  title = 'Seri: Resume Session',
  placeHolder = 'Pick a session of this project to continue',
): Promise<Session | undefined> {
  return pickWithDelete(ctx, () => sessionItems(ctx), { title, placeHolder });
}

/** This project's sessions as QuickPick items, the open one said to be so. */
async function sessionItems(ctx: CommandContext): Promise<SessionPickItem[]> {
  const { sessions } = await ctx.server.execute<{ sessions: Session[] }>(ServerCommand.sessionList, { limit: 100 });
  const current = ctx.model.currentSession?.id;
  return sessions.map(
    (session): SessionPickItem => ({
      label: sessionTitle(session.title),
      description: [relativeTime(session.updatedAt), plural(session.messageCount, 'message'), spendWords(session.spend)]
        .filter(Boolean)
        .join(' · '),
      // Titles, ages and spend: an id means nothing to a person (the tooltip of the chat's title has it).
      detail: session.id === current ? 'Open now' : undefined,
      session,
    }),
  );
}

export async function clear(ctx: CommandContext): Promise<Session> {
  const { session } = await ctx.server.execute<{ session: Session }>(ServerCommand.clear);
  await ctx.openChat();
  return session;
}

/** Give the open session a title of the user's (asked for, the current one to edit). */
export async function renameSession(ctx: CommandContext, title?: string): Promise<Session | undefined> {
  let chosen = title;
  if (chosen === undefined) {
    const current = ctx.model.currentSession;
    chosen = await vscode.window.showInputBox({
      title: 'Seri: Rename Session',
      prompt: 'The session’s title (one line, at most 200 characters)',
      value: current ? sessionTitle(current.title) : '',
      validateInput: titleProblem,
    });
    if (chosen === undefined) {
      return undefined;
    }
  }
  // The chat's header follows from seri/sessionChanged (reason `renamed`).
  const { session } = await ctx.server.execute<{ session: Session }>(ServerCommand.sessionRename, { title: chosen.trim() });
  return session;
}

/**
 * Fork the open session at message `messageId` (default: its last message): a new
 * session holding the conversation up to there opens in the chat; the original stays.
 */
export async function forkSession(ctx: CommandContext, messageId?: number): Promise<ForkResult> {
  const result = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'Seri: forking' }, () =>
    ctx.model.fork(messageId),
  );
  await ctx.openChat();
  return result;
}

export async function setMaxTurns(ctx: CommandContext, n?: number): Promise<number | undefined> {
  let turns = n;
  if (turns === undefined) {
    const answer = await vscode.window.showInputBox({
      title: 'Seri: Set Max Turns',
      prompt: 'Model calls allowed per task in this session',
      value: String(ctx.model.currentSession?.maxTurns ?? ''),
      validateInput: (value) => (/^\s*[1-9]\d*\s*$/.test(value) ? undefined : 'A whole number of at least 1'),
    });
    if (answer === undefined) {
      return undefined;
    }
    turns = Number(answer.trim());
  }
  const result = await ctx.server.execute<{ maxTurns: number; session?: Session }>(ServerCommand.maxTurns, { n: turns });
  void ctx.model.refreshUsage();
  void vscode.window.showInformationMessage(`Seri: at most ${result.maxTurns} turns per task in this session.`);
  return result.maxTurns;
}
