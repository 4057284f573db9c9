// Shared by the integration suites: the extension's API, waiting, and the control API of
// the scripted provider (tests/provider_control.py) that pytest started.

import * as assert from 'assert';
import * as vscode from 'vscode';

import type { SeriExtensionApi } from '../../extension';
import { EXTENSION_ID } from '../../ids';
import type { SessionView } from '../../protocol';

export async function activated(): Promise<SeriExtensionApi> {
  const extension = vscode.extensions.getExtension<SeriExtensionApi>(EXTENSION_ID);
  assert.ok(extension, `${EXTENSION_ID} is installed`);
  const api = await extension.activate();
  await waitFor(() => api.model.state === 'running', 'the server to run', 30_000);
  return api;
}

/** Poll until `check()` is truthy; fails naming `what`. */
export async function waitFor<T>(check: () => T | Promise<T>, what: string, timeoutMs = 15_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) {
      return value as NonNullable<T>;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The server's own view of the open session (or of `sessionId`). */
export function sessionView(api: SeriExtensionApi, sessionId?: string): Promise<SessionView> {
  return api.server.execute<SessionView>('seri.session.get', sessionId ? { sessionId } : {});
}

export interface Reply {
  text?: string;
  calls?: [string, string, object][];
  usage?: number;
  /** The call's cost in USD (with `usage`), as OpenRouter reports it. */
  cost?: number;
  /** Input tokens read from and written to the prompt cache (with `usage`), as OpenRouter reports them. */
  cached?: number;
  cacheWrite?: number;
  chunkSize?: number;
  chunkDelay?: number;
  stallAfter?: number;
  error?: number;
  body?: unknown;
}

export interface ProviderLog {
  requests: { model?: string; messages: { role: string; content: string | null }[]; tools?: unknown[]; tool_choice?: unknown }[];
  headers: Record<string, string>[];
}

function controlUrl(): string {
  const url = process.env.SERI_TEST_CONTROL_URL;
  assert.ok(url, 'SERI_TEST_CONTROL_URL is set (run these tests through pytest)');
  return url;
}

async function call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
  const response = await fetch(`${controlUrl()}${path}`, {
    method,
    headers: { 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  assert.strictEqual(response.status, 200, `${method} ${path}: ${await response.clone().text()}`);
  return response.json();
}

/** The scripted provider, driven over HTTP. */
export const provider = {
  script: (...replies: Reply[]) => call('POST', '/script', replies),
  log: () => call('GET', '/requests') as Promise<ProviderLog>,
  release: () => call('POST', '/release', null),
  reset: () => call('POST', '/reset', null),
};

/** A reply long enough for compaction to have something to shrink. */
export function longText(topic: string): string {
  return `${topic}: ` + 'the parser reads tokens and builds a tree; '.repeat(12);
}

/** Set (or with `undefined`, remove) a workspace setting under `seri.`. */
export async function setSetting(key: string, value: unknown): Promise<void> {
  await vscode.workspace.getConfiguration('seri').update(key, value, vscode.ConfigurationTarget.Workspace);
}

/** Restart the server and wait until the chat model has loaded from it. */
export async function restart(api: SeriExtensionApi): Promise<void> {
  await vscode.commands.executeCommand('seri-vscode.restartServer');
  await waitFor(() => api.model.state === 'running', 'the restarted server to run', 30_000);
  await api.model.load();
}

/** What a stubbed `vscode.window` was asked, and how to put the real one back. */
export interface WindowStub {
  quickPicks: { items: vscode.QuickPickItem[]; options?: vscode.QuickPickOptions }[];
  /** Modal questions: the message, its detail and its buttons. */
  questions: { message: string; detail?: string; buttons: string[] }[];
  warnings: string[];
  infos: string[];
  errors: string[];
  restore(): void;
}

type Choose = (items: vscode.QuickPickItem[]) => vscode.QuickPickItem | undefined;

/**
 * Answer QuickPicks and modal questions programmatically, as a user would pick, and
 * record the notifications: `pick` answers the QuickPicks in order, `answer` the modal
 * warnings (a button's title, or undefined for Cancel). The extension's code runs as it
 * does for a user; only the workbench's widgets are replaced. Always `restore()`.
 */
export function stubWindow(pick: Choose[], answer: (string | undefined)[] = []): WindowStub {
  const window = vscode.window as unknown as Record<string, unknown>;
  const saved = {
    showQuickPick: window.showQuickPick,
    showWarningMessage: window.showWarningMessage,
    showInformationMessage: window.showInformationMessage,
    showErrorMessage: window.showErrorMessage,
  };
  const stub: WindowStub = {
    quickPicks: [],
    questions: [],
    warnings: [],
    infos: [],
    errors: [],
    restore: () => Object.assign(window, saved),
  };
  const buttons = (rest: unknown[]): string[] => rest.filter((item): item is string => typeof item === 'string');
  window.showQuickPick = async (items: vscode.QuickPickItem[] | Thenable<vscode.QuickPickItem[]>, options?: vscode.QuickPickOptions) => {
    const resolved = await items;
    stub.quickPicks.push({ items: resolved, options });
    const choose = pick.shift();
    assert.ok(choose, `an unexpected QuickPick: ${options?.title ?? ''}`);
    return choose(resolved);
  };
  window.showWarningMessage = async (message: string, ...rest: unknown[]) => {
    const options = rest[0] as vscode.MessageOptions | undefined;
    if (typeof options === 'object' && options?.modal) {
      stub.questions.push({ message, detail: options.detail, buttons: buttons(rest) });
      return answer.shift();
    }
    stub.warnings.push(message);
    return undefined;
  };
  window.showInformationMessage = async (message: string) => {
    stub.infos.push(message);
    return undefined;
  };
  window.showErrorMessage = async (message: string) => {
    stub.errors.push(message);
    return undefined;
  };
  return stub;
}
