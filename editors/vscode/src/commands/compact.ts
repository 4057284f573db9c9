// "Seri: Compact Context": compact now, with focus words for the recap.

import * as vscode from 'vscode';

import { CompactResult, ServerCommand } from '../protocol';
import type { CommandContext } from './commandContext';

/** Compact now; `focus` (else asked for) steers the recap. */
export async function compact(ctx: CommandContext, focus?: string): Promise<CompactResult | undefined> {
  let words = focus;
  if (words === undefined) {
    words = await vscode.window.showInputBox({
      title: 'Seri: Compact Context',
      prompt: 'Focus words for the recap (optional): what must it keep?',
      placeHolder: 'e.g. the parser decisions and the failing test',
    });
    if (words === undefined) {
      return undefined;
    }
  }
  const args = words.trim() ? { focus: words.trim() } : {};
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Window, title: 'Seri: compacting' },
    () => ctx.server.execute<CompactResult>(ServerCommand.compact, args),
  );
  if (result.compacted) {
    // The chat's notice says what it did (in numbers, with the recap): shown there, once,
    // rather than also in a toast.
    await ctx.openChat();
  } else {
    // The server shows the same words; an identical notification is shown once.
    void vscode.window.showInformationMessage(result.message ?? 'Nothing was compacted.');
  }
  return result;
}
