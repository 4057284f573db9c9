// Deleting sessions: **Seri: Delete Session** and the delete button on each item of the
// session pickers, each after a modal confirmation. The server deletes the session with
// everything stored for it (`seri.session.delete`); when it was the open one, the server
// opens a new session and the chat follows its `seri/sessionChanged`.

import * as vscode from 'vscode';

import { sessionTitle } from '../chat/promptText';
import { describe } from '../errors';
import { inEditorWords, plural } from '../format';
import { DeleteResult, ServerCommand, Session } from '../protocol';
import type { CommandContext } from './commandContext';

export interface SessionPickItem extends vscode.QuickPickItem {
  session: Session;
}

/** The button on each session of a picker. */
export const DELETE_BUTTON: vscode.QuickInputButton = {
  iconPath: new vscode.ThemeIcon('trash'),
  tooltip: 'Delete Session…',
};

/** The modal question before a deletion; true when the user chose Delete. */
export async function confirmDelete(session: Session, isOpen: boolean): Promise<boolean> {
  const what = `${plural(session.messageCount, 'message')}, its checkpoints, recordings and subagents’ sessions are deleted for good.`;
  const detail = isOpen ? `${what} A new session opens in its place.` : what;
  const choice = await vscode.window.showWarningMessage(
    `Delete the session “${sessionTitle(session.title)}”?`,
    { modal: true, detail },
    'Delete',
  );
  return choice === 'Delete';
}

/** Delete `session` once the user confirms; undefined when they did not. */
export async function deleteAfterConfirming(ctx: CommandContext, session: Session): Promise<DeleteResult | undefined> {
  if (!(await confirmDelete(session, session.id === ctx.model.currentSession?.id))) {
    return undefined;
  }
  const result = await ctx.server.execute<DeleteResult>(ServerCommand.sessionDelete, { sessionId: session.id });
  const opened = result.session ? ' A new session is open.' : '';
  void vscode.window.showInformationMessage(`Seri: deleted the session “${sessionTitle(result.deleted.title)}”.${opened}`);
  return result;
}

/**
 * **Seri: Delete Session**: the session `sessionId`, or the one picked from the project's
 * sessions, after a modal confirmation.
 */
export async function deleteSession(
  ctx: CommandContext,
  pick: (title: string, placeHolder: string) => Promise<Session | undefined>,
  sessionId?: string,
): Promise<DeleteResult | undefined> {
  let session: Session | null | undefined;
  if (sessionId === undefined) {
    session = await pick('Seri: Delete Session', 'Pick a session of this project to delete');
  } else {
    const view = await ctx.server.execute<{ session: Session | null }>(ServerCommand.sessionGet, { sessionId, limit: 1 });
    session = view.session;
  }
  return session ? deleteAfterConfirming(ctx, session) : undefined;
}

/**
 * A QuickPick of sessions whose items each carry a delete button: the item's session is
 * deleted after a modal confirmation and the list read again (`items`). Resolves to the
 * session picked, or undefined when the picker is dismissed.
 */
export async function pickWithDelete(
  ctx: CommandContext,
  items: () => Promise<SessionPickItem[]>,
  options: { title: string; placeHolder: string },
): Promise<Session | undefined> {
  const withButtons = (listed: SessionPickItem[]): SessionPickItem[] => listed.map((item) => ({ ...item, buttons: [DELETE_BUTTON] }));
  const first = withButtons(await items());
  return new Promise((resolve) => {
    const pick = vscode.window.createQuickPick<SessionPickItem>();
    pick.title = options.title;
    pick.placeholder = options.placeHolder;
    pick.matchOnDescription = true;
    pick.matchOnDetail = true;
    pick.items = first;
    pick.onDidAccept(() => {
      resolve(pick.selectedItems[0]?.session);
      pick.hide();
    });
    pick.onDidHide(() => {
      resolve(undefined);
      pick.dispose();
    });
    pick.onDidTriggerItemButton(async ({ item }) => {
      // The modal takes the focus: the picker stays open meanwhile.
      pick.ignoreFocusOut = true;
      try {
        if (await deleteAfterConfirming(ctx, item.session)) {
          pick.busy = true;
          pick.items = withButtons(await items());
        }
      } catch (error) {
        void vscode.window.showErrorMessage(`Seri: ${inEditorWords(describe(error))}`);
      } finally {
        pick.busy = false;
        pick.ignoreFocusOut = false;
      }
    });
    pick.show();
  });
}
