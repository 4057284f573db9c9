// Seri: Select Model...: the provider's models (with their context windows) in a
// QuickPick; the pick becomes the open session's model from its next turn.

import * as vscode from 'vscode';

import { shortTokens } from '../format';
import { ModelChoice, ModelEntry, ModelList, ServerCommand } from '../protocol';
import type { CommandContext } from './commandContext';

interface ModelPickItem extends vscode.QuickPickItem {
  model: string;
}

/** The QuickPick's rows: the session's model first (marked), then the provider's order. */
export function modelItems(list: ModelList): ModelPickItem[] {
  const row = (entry: ModelEntry): ModelPickItem => ({
    label: entry.id,
    description: [entry.contextWindow ? `${shortTokens(entry.contextWindow)} context` : '', entry.id === list.current ? 'in use' : '']
      .filter(Boolean)
      .join(' · '),
    model: entry.id,
  });
  const current = list.models.find((entry) => entry.id === list.current) ?? { id: list.current };
  return [row(current), ...list.models.filter((entry) => entry.id !== list.current).map(row)];
}

/**
 * Choose the open session's model: `model` as given, else picked from the provider's
 * list (or typed, when the list could not be read). Answers the model in force, or
 * undefined when nothing was chosen.
 */
export async function selectModel(ctx: CommandContext, model?: string): Promise<string | undefined> {
  let chosen = model;
  if (chosen === undefined) {
    const list = await vscode.window.withProgress({ location: vscode.ProgressLocation.Window, title: 'Seri: reading the models' }, () =>
      ctx.server.execute<ModelList>(ServerCommand.models),
    );
    if (list.error !== undefined && list.models.length === 0) {
      chosen = await vscode.window.showInputBox({
        title: 'Seri: Select Model',
        prompt: `${list.error}. Type a model id (used from the next prompt, not checked).`,
        value: list.current,
      });
    } else {
      const picked = await vscode.window.showQuickPick(modelItems(list), {
        title: 'Seri: Select Model',
        placeHolder: `The model for this session's next prompts (now ${list.current})`,
        matchOnDescription: true,
      });
      chosen = picked?.model;
    }
    if (chosen === undefined || chosen.trim() === '') {
      return undefined;
    }
  }
  const result = await ctx.server.execute<ModelChoice>(ServerCommand.sessionModel, { model: chosen.trim() });
  // The header's model and context window follow from the session read again.
  await ctx.model.refreshUsage();
  if (result.warning) {
    void vscode.window.showWarningMessage(`Seri: ${result.warning}`);
  }
  return result.model;
}
