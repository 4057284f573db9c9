// The slash commands the chat suggests: the list the server advertises, read here and
// nowhere else, once per server start. The server declares each command once; a command
// added there shows in the chat's completion with no change to this extension. No
// `vscode` import, so it is testable in plain Node.

import { ServerCommand, SlashCommand } from './protocol';

/** How the list is asked for when the initialize result lacks it. */
export interface CommandsLink {
  execute<T>(command: string, args?: object): Promise<T>;
}

/**
 * The list in an initialize result (`capabilities.experimental.seri.slashCommands`);
 * undefined when it holds none.
 */
export function advertisedSlashCommands(initializeResult: unknown): SlashCommand[] | undefined {
  const listed = field(field(field(field(initializeResult, 'capabilities'), 'experimental'), 'seri'), 'slashCommands');
  return Array.isArray(listed) ? listed.flatMap(slashCommand) : undefined;
}

/**
 * The server's slash commands: from its initialize result, else from `seri.commands`;
 * none from a server that has neither (the chat then suggests no command).
 */
export async function readSlashCommands(initializeResult: unknown, link: CommandsLink): Promise<SlashCommand[]> {
  const advertised = advertisedSlashCommands(initializeResult);
  if (advertised) {
    return advertised;
  }
  try {
    const listed = field(await link.execute<unknown>(ServerCommand.commands), 'commands');
    return Array.isArray(listed) ? listed.flatMap(slashCommand) : [];
  } catch {
    return [];
  }
}

/** One advertised command, as a list of it or of nothing when it lacks a field. */
function slashCommand(entry: unknown): SlashCommand[] {
  const [name, usage, summary, hint, picker] = ['name', 'usage', 'summary', 'argumentHint', 'picker'].map((key) => field(entry, key));
  if (typeof name !== 'string' || typeof usage !== 'string' || typeof summary !== 'string' || name === '') {
    return [];
  }
  return [{ name, usage, summary, ...(typeof hint === 'string' ? { argumentHint: hint } : {}), ...(picker === true ? { picker } : {}) }];
}

function field(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[key] : undefined;
}
