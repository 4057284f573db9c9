// The project's files, for the chat: the `@` picker searches them as you type, and a
// path in a reply is matched to the file it names. The list is read once with
// `workspace.findFiles` and read again after files are created or deleted.

import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';

import { rankFiles, resolvePath } from './chat/files';
import { projectFolder } from './settings';

/** Folders nobody attaches files from; `files.exclude` is added to these. */
const SKIPPED = ['**/node_modules/**', '**/.git/**', '**/.venv/**', '**/venv/**', '**/__pycache__/**', '**/.*_cache/**', '**/.tox/**'];
/** The most files listed (a larger project is searched within its first ones). */
const MAX_FILES = 20_000;

export class WorkspaceFiles implements vscode.Disposable {
  private files: Promise<string[]> | undefined;
  private readonly watcher: vscode.FileSystemWatcher;

  constructor() {
    this.watcher = vscode.workspace.createFileSystemWatcher('**/*', false, true, false);
    this.watcher.onDidCreate(() => (this.files = undefined));
    this.watcher.onDidDelete(() => (this.files = undefined));
  }

  /** The files matching what was typed after `@`, best first; open editors' files first among equals. */
  async find(query: string, limit = 30): Promise<string[]> {
    const open = new Set(
      vscode.window.tabGroups.all
        .flatMap((group) => group.tabs)
        .map((tab) => (tab.input instanceof vscode.TabInputText ? relativePath(tab.input.uri) : undefined))
        .filter((p): p is string => p !== undefined),
    );
    return rankFiles(await this.list(), query, limit, open);
  }

  /** The workspace file `candidate` (from a reply) names, relative to the project, if any. */
  async resolve(candidate: string): Promise<string | undefined> {
    const folder = projectFolder();
    if (!folder) {
      return undefined;
    }
    const direct = path.resolve(folder.uri.fsPath, candidate);
    const inside = path.relative(folder.uri.fsPath, direct);
    if (!inside.startsWith('..') && !path.isAbsolute(inside) && (await isFile(direct))) {
      return inside.split(path.sep).join('/');
    }
    return resolvePath(await this.list(), candidate, folder.uri.fsPath);
  }

  private list(): Promise<string[]> {
    const folder = projectFolder();
    if (!folder) {
      return Promise.resolve([]);
    }
    this.files ??= Promise.resolve(
      vscode.workspace.findFiles(new vscode.RelativePattern(folder, '**/*'), `{${excluded().join(',')}}`, MAX_FILES),
    ).then(
      (uris) => uris.map((uri) => relativePath(uri)).filter((p): p is string => p !== undefined),
      () => {
        this.files = undefined;
        return [];
      },
    );
    return this.files;
  }

  dispose(): void {
    this.watcher.dispose();
  }
}

/** `uri` relative to the project folder with `/`, or undefined when it lies outside. */
export function relativePath(uri: vscode.Uri): string | undefined {
  const folder = projectFolder();
  if (!folder || uri.scheme !== 'file') {
    return undefined;
  }
  const relative = path.relative(folder.uri.fsPath, uri.fsPath);
  return relative.startsWith('..') || path.isAbsolute(relative) ? undefined : relative.split(path.sep).join('/');
}

function excluded(): string[] {
  const setting = vscode.workspace.getConfiguration('files').get<Record<string, unknown>>('exclude') ?? {};
  const fromSetting = Object.entries(setting)
    .filter(([, on]) => on === true)
    .map(([glob]) => glob);
  return [...SKIPPED, ...fromSetting];
}

async function isFile(file: string): Promise<boolean> {
  try {
    return (await fs.promises.stat(file)).isFile();
  } catch {
    return false;
  }
}
