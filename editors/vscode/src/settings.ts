// Every `seri.*` setting is read here, and nowhere else (their keys are in settingKeys.ts).

import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';

import { type CommandRulesOption, commandRulesOption, mcpServersOption } from './commandRules';
import type { KeyStoreOption } from './keyStore';
import { COMMAND_RULES_SETTING, MCP_SERVERS_SETTING, OPTION_SETTINGS, SECTION, STARTUP_SETTINGS, ServerSetting, settingId } from './settingKeys';

/** Initialization options as the server reads them (settings it has not been given are left out). */
export interface InitializationOptions {
  provider?: {
    baseUrl?: string;
    model?: string;
    contextWindow?: number;
    keepTokens?: number;
    reasoningEffort?: string;
    promptCache?: 'auto' | 'on' | 'off';
    cacheTtl?: '5m' | '1h';
  };
  permissions?: {
    write?: 'allow' | 'ask' | 'deny';
    commands?: CommandRulesOption;
    mcp?: 'allow' | 'ask' | 'deny';
    mcpTools?: Record<string, 'allow' | 'ask' | 'deny'>;
  };
  /** MCP servers by name, as in `.mcp.json`: the user's (global) `seri.mcpServers`. */
  mcpServers?: Record<string, unknown>;
  /** The workspace's and folder's `seri.mcpServers`: started once the user agreed. */
  workspaceMcpServers?: Record<string, unknown>;
  mcp?: { startupTimeout?: number; toolTimeout?: number };
  maxTurns?: number;
  resumeOnOpen?: boolean;
  profileRoot?: string;
  /** Where the API key is kept (added at each start, see server.ts): no setting. */
  apiKeyStore?: KeyStoreOption;
}

export interface ExtensionSettings {
  /** `seri.server.command`; empty means "find it" (see server.ts). */
  serverCommand: string[];
  /** `seri.server.useBundled`: start the server the extension carries (default true). */
  useBundled: boolean;
  /** `seri.server.python`: the Python to make the bundled server's environment with. */
  serverPython: string;
  initializationOptions: InitializationOptions;
}

/** The settings in force for the project (the first workspace folder). */
export function readSettings(folder: vscode.WorkspaceFolder | undefined = projectFolder()): ExtensionSettings {
  const config = vscode.workspace.getConfiguration(SECTION, folder?.uri);
  const set = <T>(key: string): T | undefined => {
    // Only settings the user set are sent: an unset one must not hide the profile's
    // config.json or the environment, which the server reads after the options.
    const inspected = config.inspect<T>(key);
    if (!inspected) {
      return undefined;
    }
    const value = inspected.workspaceFolderValue ?? inspected.workspaceValue ?? inspected.globalValue;
    if (value === undefined || value === null || value === '' || value === 0) {
      return undefined;
    }
    return value;
  };

  const options: Record<string, unknown> = {};
  for (const key of OPTION_SETTINGS) {
    const value = set<unknown>(key);
    if (value !== undefined) {
      placeAt(options, key, key === 'profileRoot' && typeof value === 'string' ? expandHome(value, folder) : value);
    }
  }
  const rules = commandRulesOption(config.inspect<unknown>(COMMAND_RULES_SETTING));
  if (rules !== undefined) {
    placeAt(options, COMMAND_RULES_SETTING, rules);
  }
  Object.assign(options, mcpServersOption(config.inspect<unknown>(MCP_SERVERS_SETTING)));
  const command = config.get<unknown>(ServerSetting.command);
  const python = config.get<unknown>(ServerSetting.python);
  return {
    serverCommand: Array.isArray(command) ? command.filter((part): part is string => typeof part === 'string') : [],
    useBundled: config.get<unknown>(ServerSetting.useBundled) !== false,
    serverPython: typeof python === 'string' ? expandHome(python.trim(), folder) : '',
    initializationOptions: options as InitializationOptions,
  };
}

/** True when a change touches a setting the server is started with (tracing is live). */
export function affectsServer(event: vscode.ConfigurationChangeEvent): boolean {
  return event.affectsConfiguration(SECTION) && !onlyTrace(event);
}

function onlyTrace(event: vscode.ConfigurationChangeEvent): boolean {
  return !STARTUP_SETTINGS.some((key) => event.affectsConfiguration(settingId(key)));
}

/** The project: the first workspace folder, as the server sees it. */
export function projectFolder(): vscode.WorkspaceFolder | undefined {
  return vscode.workspace.workspaceFolders?.[0];
}

function expandHome(value: string, folder: vscode.WorkspaceFolder | undefined): string {
  let expanded = value;
  if (expanded === '~' || expanded.startsWith('~/')) {
    expanded = path.join(os.homedir(), expanded.slice(1));
  }
  if (folder && expanded.includes('${workspaceFolder}')) {
    expanded = expanded.split('${workspaceFolder}').join(folder.uri.fsPath);
  }
  return expanded;
}

/** Put `value` into `target` at the dotted `key`, making the objects on the way. */
function placeAt(target: Record<string, unknown>, key: string, value: unknown): void {
  const [head, ...rest] = key.split('.');
  if (rest.length === 0) {
    target[head] = value;
    return;
  }
  const inner = (target[head] ??= {}) as Record<string, unknown>;
  placeAt(inner, rest.join('.'), value);
}
