// The files of "Seri: Export Session..." and "Seri: Import Session...": which format a
// file's name asks for, writing it whole or not at all, reading a bundle back.

import * as path from 'path';
import * as vscode from 'vscode';

import type { ExportFormat } from './protocol';
import { plural } from './format';

/** The largest bundle the server imports (and the largest LSP message it reads). */
export const MAX_BUNDLE_BYTES = 64 * 1024 * 1024;

/** The save dialog's choices, by the extension that picks the format. */
export const EXPORT_FILTERS: Record<string, string[]> = {
  'Markdown transcript': ['md'],
  'Seri session bundle (JSON, can be imported)': ['json'],
};

/** The format a file name asks for: `.json` a bundle, `.md` (or `.markdown`) a transcript. */
export function formatFor(fileName: string): ExportFormat | undefined {
  const extension = path.extname(fileName).toLowerCase();
  if (extension === '.json') {
    return 'json';
  }
  if (extension === '.md' || extension === '.markdown') {
    return 'markdown';
  }
  return undefined;
}

/** A file name made of a session's title: `Fix the login bug.md`. */
export function exportName(title: string, extension: 'md' | 'json'): string {
  const name = title
    .replace(/[\\/:*?"<>|\u0000-\u001f]+/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 80)
    .trim();
  return `${name || 'seri-session'}.${extension}`;
}

/** "no secret was found to redact", "2 secrets were replaced by [redacted]". */
export function redactionWords(redactions: number): string {
  if (redactions === 0) {
    return 'no secret was found to redact';
  }
  return `${plural(redactions, 'secret')} ${redactions === 1 ? 'was' : 'were'} replaced by [redacted]`;
}

/**
 * Write `text` to `target` whole: into a file beside it first, then renamed over it, so a
 * failure leaves the old file (or none) rather than half of the new one.
 */
export async function writeWhole(target: vscode.Uri, text: string): Promise<void> {
  const folder = vscode.Uri.joinPath(target, '..');
  const partial = vscode.Uri.joinPath(folder, `.${path.posix.basename(target.path)}.${process.pid}.partial`);
  await vscode.workspace.fs.writeFile(partial, new TextEncoder().encode(text));
  try {
    await vscode.workspace.fs.rename(partial, target, { overwrite: true });
  } catch (error) {
    await vscode.workspace.fs.delete(partial).then(undefined, () => undefined);
    throw error;
  }
}

/** A bundle's text, refused in the user's words when it is too large or not UTF-8. */
export async function readBundle(source: vscode.Uri): Promise<string> {
  const name = path.posix.basename(source.path);
  const { size } = await vscode.workspace.fs.stat(source);
  if (size > MAX_BUNDLE_BYTES) {
    throw new Error(`${name} is ${(size / 1024 / 1024).toFixed(1)} MiB; a session bundle can be at most 64 MiB.`);
  }
  const bytes = await vscode.workspace.fs.readFile(source);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new Error(`${name} is not UTF-8 text, so it is not a seri session bundle (export one with “Seri: Export Session...” as .json).`);
  }
}
