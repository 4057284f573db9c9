// The keys of the `seri.*` settings this extension reads, each written once; package.json
// contributes the same settings (a unit test holds the two together). No `vscode` import.

export const SECTION = 'seri';

/** The settings under `seri.` that say how the server is found and started. */
export const ServerSetting = {
  command: 'server.command',
  useBundled: 'server.useBundled',
  python: 'server.python',
} as const;

/**
 * The settings sent as initialization options, each at the place its key names
 * (`provider.baseUrl` is `provider.baseUrl` in the options).
 */
export const OPTION_SETTINGS = [
  'provider.baseUrl',
  'provider.model',
  'provider.contextWindow',
  'provider.keepTokens',
  'provider.reasoningEffort',
  'provider.promptCache',
  'provider.cacheTtl',
  'permissions.write',
  'permissions.mcp',
  'permissions.mcpTools',
  'mcp.startupTimeout',
  'mcp.toolTimeout',
  'maxTurns',
  'resumeOnOpen',
  'profileRoot',
] as const;

/**
 * `permissions.commands`: sent as well, but split by the level that sets it (the user's
 * allow rules apart from the workspace's, see commandRules.ts).
 */
export const COMMAND_RULES_SETTING = 'permissions.commands';

/**
 * `mcpServers`: sent as well, the user's servers apart from the workspace's, which wait
 * for the user's consent (see commandRules.ts).
 */
export const MCP_SERVERS_SETTING = 'mcpServers';

/** The language client's trace of the messages (read by vscode-languageclient itself, live). */
export const TRACE_SETTING = 'trace.server';

/** The settings whose change offers a restart: all but tracing, which is live. */
export const STARTUP_SETTINGS = [
  ...new Set(['server', ...[...OPTION_SETTINGS, COMMAND_RULES_SETTING, MCP_SERVERS_SETTING].map((key) => key.split('.')[0])]),
];

/** The full id of a setting under `seri.`, as the Settings editor opens it. */
export function settingId(key: string): string {
  return `${SECTION}.${key}`;
}
