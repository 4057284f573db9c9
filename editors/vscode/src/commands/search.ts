// "Seri: Search Sessions...": the hit picked opens its session at its message; a hit of
// another project is opened here only when the user says so.

import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';

import { sessionTitle } from '../chat/promptText';
import { SearchHit, ServerCommand, Session } from '../protocol';
import { SessionSearch } from '../sessionSearch';
import { projectFolder } from '../settings';
import type { CommandContext } from './commandContext';

export const OPEN_FOLDER = 'Open Its Folder';
export const OPEN_HERE = 'Open Here Anyway';

/**
 * Search what the sessions hold (a QuickPick that searches as the user types, starting
 * from `query`) and open the hit picked: its session resumed, the chat scrolled to its
 * message. A hit of another project is not opened here unless the user says so.
 */
export async function searchSessions(ctx: CommandContext, query?: string, allProjects?: boolean): Promise<SearchHit | undefined> {
  const hit = await new SessionSearch(ctx.server, isThisProject).pick(query, allProjects);
  if (!hit) {
    return undefined;
  }
  if (!isThisProject(hit.projectPath)) {
    const answer = await vscode.window.showWarningMessage(
      `Seri: “${sessionTitle(hit.title)}” belongs to another project, ${hit.projectPath}. Its tools would work in the folder open here; open its own folder to go on with it.`,
      OPEN_FOLDER,
      OPEN_HERE,
    );
    if (answer === OPEN_FOLDER) {
      await vscode.commands.executeCommand('vscode.openFolder', vscode.Uri.file(hit.projectPath), { forceNewWindow: true });
      return hit;
    }
    if (answer !== OPEN_HERE) {
      return undefined;
    }
  }
  await ctx.server.execute<{ session: Session }>(ServerCommand.sessionResume, { sessionId: hit.sessionId });
  await ctx.openChat();
  await ctx.model.reveal(hit.sessionId, hit.messageId);
  return hit;
}

/** Whether `projectPath` (a session's project) is the folder open in this window. */
function isThisProject(projectPath: string): boolean {
  const folder = projectFolder()?.uri.fsPath;
  const real = (p: string): string => {
    try {
      return fs.realpathSync(p);
    } catch {
      return path.resolve(p);
    }
  };
  return folder !== undefined && (folder === projectPath || real(folder) === real(projectPath));
}
