// The slash commands a server advertises.

/**
 * A slash command the server understands, as it advertises them: in its initialize result
 * (`capabilities.experimental.seri.slashCommands`) and in `seri.commands`' answer.
 */
export interface SlashCommand {
  /** Without the slash: `compact`. */
  name: string;
  /** `/compact [focus words]`. */
  usage: string;
  /** What it does, in one sentence. */
  summary: string;
  /** What the words after it are; absent when it takes none. */
  argumentHint?: string;
  /** Typed bare, the editor offers its own picker instead (sessions, models, prompts). */
  picker?: boolean;
}
