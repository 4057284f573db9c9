// What the chat input suggests after `/`: the server's slash commands (as the extension
// passed them on) whose names start with the word typed, in the server's order.

import type { SlashCommand } from '../protocol';

export interface SlashSuggestion {
  /** `/compact`: the text that, typed out in full, Enter sends rather than completes. */
  key: string;
  /** The usage line: `/compact [focus words]`. */
  label: string;
  description: string;
  /** What accepting it puts in the input: the command, and a space when words follow. */
  insert: string;
}

/** The commands `word` (typed after `/`, without it) starts, as suggestions. */
export function slashSuggestions(commands: readonly SlashCommand[], word: string): SlashSuggestion[] {
  const typed = word.toLowerCase();
  return commands
    .filter((command) => command.name.startsWith(typed))
    .map((command) => ({
      key: `/${command.name}`,
      label: command.usage,
      description: command.summary,
      insert: `/${command.name}${command.argumentHint !== undefined ? ' ' : ''}`,
    }));
}
