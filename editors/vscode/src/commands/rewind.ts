// "Seri: Rewind...": back to before a prompt, picked from the session's checkpoints,
// with what to restore and whether to overwrite files changed since seri wrote them.

import * as vscode from 'vscode';

import { plural, relativeTime, rewindProblems } from '../format';
import { Checkpoint, CheckpointList, RestoreMode, RewindRequest, RewindResult, ServerCommand } from '../protocol';
import type { CommandContext } from './commandContext';

export interface CheckpointPickItem extends vscode.QuickPickItem {
  checkpoint: Checkpoint;
}

export interface RestorePickItem extends vscode.QuickPickItem {
  restore: RestoreMode;
}

const RESTORE_ITEMS: RestorePickItem[] = [
  { label: 'Conversation and files', description: 'go back to before this prompt', restore: 'both' },
  { label: 'Conversation only', description: 'keep the files as they are', restore: 'conversation' },
  { label: 'Files only', description: 'keep the conversation', restore: 'files' },
];

const RESTORED: Record<RestoreMode, string> = {
  both: 'the conversation and files',
  conversation: 'the conversation',
  files: 'files',
};

export const OVERWRITE = 'Overwrite';
export const LEAVE_ALONE = 'Leave Them Alone';

/**
 * Go back to before a prompt. With `request.steps` or `request.messageId` it rewinds at once; without, the user
 * picks the prompt (QuickPick over `seri.checkpoints`), then what to restore, and, when
 * files were changed since seri wrote them, whether to overwrite them. The removed
 * prompt goes back into the chat input; files left alone or not restored are listed in
 * a warning. Undefined when the user cancelled.
 */
export async function rewind(ctx: CommandContext, request?: RewindRequest): Promise<RewindResult | undefined> {
  let chosen = request;
  if (chosen?.steps === undefined && chosen?.messageId === undefined) {
    chosen = await pickRewind(ctx);
    if (chosen === undefined) {
      return undefined;
    }
  }
  const restore = chosen.restore ?? 'both';
  if (chosen.messageId !== undefined && chosen.force === undefined && restore !== 'conversation') {
    // "Rewind to here": files changed since are asked about first, while their earlier
    // content is still kept (a rewind that leaves them alone loses it).
    const checked = await ctx.server.execute<RewindResult>(ServerCommand.rewind, { ...chosen, check: true });
    if (checked.conflicts.length > 0) {
      const answer = await vscode.window.showWarningMessage(
        `Overwrite ${plural(checked.conflicts.length, 'file')} changed since?`,
        {
          modal: true,
          detail: `${checked.conflicts.join(', ')} changed after seri wrote ${checked.conflicts.length === 1 ? 'it' : 'them'}. Overwrite puts ${checked.conflicts.length === 1 ? 'it' : 'them'} back to the earlier content too, losing those changes; Cancel rewinds nothing.`,
        },
        OVERWRITE,
      );
      if (answer !== OVERWRITE) {
        return undefined;
      }
      chosen = { ...chosen, force: true };
    }
  }
  const sent = chosen;
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: 'Seri: rewinding' },
    () => ctx.server.execute<RewindResult>(ServerCommand.rewind, { ...sent }),
  );
  if (typeof result.prompt === 'string') {
    ctx.model.returnRewound(result.prompt);
    await ctx.openChat();
  }
  const restored = result.restoredFiles.length > 0 ? `; restored ${result.restoredFiles.join(', ')}` : '';
  // A file that could not be put back keeps the conversation: only files were rewound.
  const done = result.conversationKept === true ? 'files' : restore;
  void vscode.window.showInformationMessage(
    `Seri: rewound ${plural(result.rewound, 'prompt')} (${RESTORED[done]})${restored}.`,
  );
  const problems = rewindProblems(result);
  if (problems) {
    const hint =
      result.conflicts.length > 0 && restore === 'files'
        ? ` Rewind the files again and choose “${OVERWRITE}” to replace them.`
        : '';
    void vscode.window.showWarningMessage(`Seri: ${problems}${hint}`);
  }
  return result;
}

/** The pickers of "Seri: Rewind...": which prompt, what to restore, whether to overwrite. */
export async function pickRewind(ctx: CommandContext): Promise<RewindRequest | undefined> {
  const { checkpoints, retired } = await ctx.server.execute<CheckpointList>(ServerCommand.checkpoints);
  if (checkpoints.length === 0) {
    if (retired) {
      void vscode.window.showWarningMessage(
        'Seri: this session’s checkpoints were retired (seri keeps them for the 20 most recently used sessions of a project); its conversation is intact.',
      );
    } else {
      void vscode.window.showInformationMessage('Seri: there is nothing to rewind in this session.');
    }
    return undefined;
  }
  const items = checkpoints.map(
    (checkpoint): CheckpointPickItem => ({
      label: checkpoint.prompt || '(empty prompt)',
      description: `${relativeTime(checkpoint.createdAt)} · ${
        checkpoint.files.length > 0 ? checkpoint.files.join(', ') : 'no files changed'
      }`,
      detail:
        checkpoint.conflicts.length > 0 ? `$(warning) changed since seri wrote them: ${checkpoint.conflicts.join(', ')}` : undefined,
      checkpoint,
    }),
  );
  const picked = await vscode.window.showQuickPick(items, {
    title: 'Seri: Rewind',
    placeHolder: 'Go back to before which prompt? (newest first)',
    matchOnDescription: true,
  });
  if (!picked) {
    return undefined;
  }
  const checkpoint = picked.checkpoint;
  const restore = await vscode.window.showQuickPick(RESTORE_ITEMS, {
    title: `Seri: Rewind to before “${checkpoint.prompt}”`,
    placeHolder: 'Restore what?',
  });
  if (!restore) {
    return undefined;
  }
  const chosen: RewindRequest = { steps: checkpoint.steps, restore: restore.restore };
  if (checkpoint.conflicts.length > 0 && restore.restore !== 'conversation') {
    const answer = await vscode.window.showWarningMessage(
      `${plural(checkpoint.conflicts.length, 'file')} changed since seri wrote them: ${checkpoint.conflicts.join(', ')}. Overwrite them with their content from before the prompt?`,
      { modal: true, detail: `“${LEAVE_ALONE}” restores the other files and lists these.` },
      OVERWRITE,
      LEAVE_ALONE,
    );
    if (answer === undefined) {
      return undefined;
    }
    chosen.force = answer === OVERWRITE;
  }
  return chosen;
}
