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
  chunkSize?: number;
  chunkDelay?: number;
  stallAfter?: number;
  error?: number;
  body?: unknown;
}

export interface ProviderLog {
  requests: { messages: { role: string; content: string | null }[]; tools?: unknown[] }[];
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
