// `seri.permissions.commands` as the server reads it: the user's own allow rules apart from
// the workspace's. A workspace's settings (.vscode/settings.json, folder settings) come
// with the project, so its allow rules go as `workspaceAllow`, which the server uses only
// once the user agreed to them; deny rules from anywhere go as `deny`. No `vscode` import.

/** `permissions.commands` in the initialization options. */
export interface CommandRulesOption {
  allow?: string[];
  deny?: string[];
  workspaceAllow?: string[];
}

/** The levels of the setting, as `WorkspaceConfiguration.inspect` gives them. */
export interface InspectedRules {
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/** The patterns a level lists under `key` (`allow`, `deny`); anything but text is left out. */
function patterns(level: unknown, key: 'allow' | 'deny'): string[] {
  if (typeof level !== 'object' || level === null) {
    return [];
  }
  const list = (level as Record<string, unknown>)[key];
  return Array.isArray(list) ? list.filter((item): item is string => typeof item === 'string') : [];
}

/** The option to send, or undefined where no level sets a rule. */
export function commandRulesOption(inspected: InspectedRules | undefined): CommandRulesOption | undefined {
  if (!inspected) {
    return undefined;
  }
  const workspaceLevels = [inspected.workspaceValue, inspected.workspaceFolderValue];
  const allow = patterns(inspected.globalValue, 'allow');
  const workspaceAllow = [...new Set(workspaceLevels.flatMap((level) => patterns(level, 'allow')))];
  const deny = [...new Set([inspected.globalValue, ...workspaceLevels].flatMap((level) => patterns(level, 'deny')))];
  const option: CommandRulesOption = {};
  if (allow.length > 0) {
    option.allow = allow;
  }
  if (deny.length > 0) {
    option.deny = deny;
  }
  if (workspaceAllow.length > 0) {
    option.workspaceAllow = workspaceAllow;
  }
  return Object.keys(option).length > 0 ? option : undefined;
}

/** The MCP server entries a level sets (an object of entries by name), if any. */
function servers(level: unknown): Record<string, unknown> {
  return typeof level === 'object' && level !== null && !Array.isArray(level) ? (level as Record<string, unknown>) : {};
}

/**
 * `seri.mcpServers` split the same way: the user's servers go as `mcpServers` and start
 * at once; a workspace's (.vscode/settings.json, folder settings come with the project)
 * go as `workspaceMcpServers`, which the server starts only once the user agreed, as it
 * does the workspace's `.mcp.json`. A folder's entry wins over the workspace's.
 */
export function mcpServersOption(inspected: InspectedRules | undefined): {
  mcpServers?: Record<string, unknown>;
  workspaceMcpServers?: Record<string, unknown>;
} {
  const user = servers(inspected?.globalValue);
  const workspace = { ...servers(inspected?.workspaceValue), ...servers(inspected?.workspaceFolderValue) };
  return {
    ...(Object.keys(user).length > 0 ? { mcpServers: user } : {}),
    ...(Object.keys(workspace).length > 0 ? { workspaceMcpServers: workspace } : {}),
  };
}
