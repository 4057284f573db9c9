// "Seri: Export Session..." and "Seri: Import Session...": a session to a file (a
// transcript to read, or a bundle) and a bundle back as a new session.

import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';

import { sessionTitle } from '../chat/promptText';
import { plural } from '../format';
import { ExportResult, ImportResult, ServerCommand, Session } from '../protocol';
import { EXPORT_FILTERS, exportName, formatFor, readBundle, redactionWords, writeWhole } from '../sessionFiles';
import { projectFolder } from '../settings';
import type { CommandContext } from './commandContext';

/**
 * Save the open session to a file (asked for): `.md` a transcript for people, `.json` a
 * bundle to import elsewhere; says how many secrets were redacted. Undefined when
 * cancelled.
 */
export async function exportSession(ctx: CommandContext, target?: vscode.Uri): Promise<ExportResult | undefined> {
  const session = ctx.model.currentSession;
  if (!session) {
    void vscode.window.showInformationMessage('Seri: no session is open to export; resume one first.');
    return undefined;
  }
  let uri = target;
  if (uri === undefined) {
    uri = await vscode.window.showSaveDialog({
      title: 'Seri: Export Session',
      saveLabel: 'Export',
      defaultUri: vscode.Uri.joinPath(startFolder(), exportName(sessionTitle(session.title), 'md')),
      filters: EXPORT_FILTERS,
    });
    if (uri === undefined) {
      return undefined;
    }
  }
  const name = path.posix.basename(uri.path);
  const format = formatFor(name);
  if (format === undefined) {
    throw new Error(`${name} names no format: export to a .md file (a transcript to read) or a .json file (a bundle to import).`);
  }
  const result = await ctx.server.execute<ExportResult>(ServerCommand.sessionExport, { sessionId: session.id, format });
  await writeWhole(uri, result.text);
  const what = format === 'json' ? 'as a bundle' : 'as a transcript';
  void vscode.window.showInformationMessage(`Seri: exported “${sessionTitle(session.title)}” to ${name} ${what}; ${redactionWords(result.redactions)}.`);
  return result;
}

/** Where the file dialogs start: the project's folder, else the user's home (never `/`). */
function startFolder(): vscode.Uri {
  return projectFolder()?.uri ?? vscode.Uri.file(os.homedir());
}

/**
 * Import a session bundle (a `.json` export, asked for) as a new session of this
 * project, and open it in the chat. Undefined when cancelled.
 */
export async function importSession(ctx: CommandContext, source?: vscode.Uri): Promise<ImportResult | undefined> {
  let uri = source;
  if (uri === undefined) {
    const picked = await vscode.window.showOpenDialog({
      title: 'Seri: Import Session',
      openLabel: 'Import',
      canSelectMany: false,
      defaultUri: startFolder(),
      filters: { 'Seri session bundle': ['json'] },
    });
    uri = picked?.[0];
    if (uri === undefined) {
      return undefined;
    }
  }
  const text = await readBundle(uri);
  const result = await ctx.server.execute<ImportResult>(ServerCommand.sessionImport, { text });
  await ctx.server.execute<{ session: Session }>(ServerCommand.sessionResume, { sessionId: result.session.id });
  await ctx.openChat();
  const title = sessionTitle(result.session.title);
  void vscode.window.showInformationMessage(
    result.alreadyImported
      ? `Seri: ${path.posix.basename(uri.path)} was imported before: opened “${title}”, the session it made then.`
      : `Seri: imported “${title}” as a new session of this project (${plural(result.session.messageCount, 'message')}).`,
  );
  return result;
}
