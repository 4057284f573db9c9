// Every `seri.*` setting is read here, and nowhere else.

import * as os from 'os';
import * as path from 'path';
import * as vscode from 'vscode';

export const SECTION = 'seri';

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
  permissions?: { write?: 'allow' | 'ask' | 'deny' };
  maxTurns?: number;
  resumeOnOpen?: boolean;
  profileRoot?: string;
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

  const provider = dropUndefined({
    baseUrl: set<string>('provider.baseUrl'),
    model: set<string>('provider.model'),
    contextWindow: set<number>('provider.contextWindow'),
    keepTokens: set<number>('provider.keepTokens'),
    reasoningEffort: set<string>('provider.reasoningEffort'),
    promptCache: set<'auto' | 'on' | 'off'>('provider.promptCache'),
    cacheTtl: set<'5m' | '1h'>('provider.cacheTtl'),
  });
  const write = set<'allow' | 'ask' | 'deny'>('permissions.write');
  const profileRoot = set<string>('profileRoot');
  const options: InitializationOptions = dropUndefined({
    provider: Object.keys(provider).length > 0 ? provider : undefined,
    permissions: write !== undefined ? { write } : undefined,
    maxTurns: set<number>('maxTurns'),
    resumeOnOpen: set<boolean>('resumeOnOpen'),
    profileRoot: profileRoot !== undefined ? expandHome(profileRoot, folder) : undefined,
  });
  const command = config.get<unknown>('server.command');
  const python = config.get<unknown>('server.python');
  return {
    serverCommand: Array.isArray(command) ? command.filter((part): part is string => typeof part === 'string') : [],
    useBundled: config.get<unknown>('server.useBundled') !== false,
    serverPython: typeof python === 'string' ? expandHome(python.trim(), folder) : '',
    initializationOptions: options,
  };
}

/** True when a change touches a setting the server is started with (tracing is live). */
export function affectsServer(event: vscode.ConfigurationChangeEvent): boolean {
  return event.affectsConfiguration(SECTION) && !onlyTrace(event);
}

function onlyTrace(event: vscode.ConfigurationChangeEvent): boolean {
  const startup = [
    'server',
    'provider',
    'permissions',
    'maxTurns',
    'resumeOnOpen',
    'profileRoot',
  ];
  return !startup.some((key) => event.affectsConfiguration(`${SECTION}.${key}`));
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

function dropUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
