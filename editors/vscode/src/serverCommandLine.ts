// Finding the server's command line when no carried server is used: the setting, else
// `seri-lsp` on PATH, else `python3 -m seri_lsp`; and checking that it runs.

import { execFile, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';

/** How the server is started, or why it cannot be. */
export type ServerCommandLine =
  | { found: true; command: string; args: string[]; origin: 'setting' | 'path' | 'python' | 'bundled' }
  | { found: false; tried: string[] };

/**
 * The server's command line: `seri.server.command`, else `seri-lsp` on PATH, else
 * `python3 -m seri_lsp` when that Python has the package.
 */
export function findServer(configured: string[], env: NodeJS.ProcessEnv = process.env): ServerCommandLine {
  if (configured.length > 0) {
    const [command, ...args] = configured;
    if (findExecutable(command, env)) {
      return { found: true, command, args, origin: 'setting' };
    }
    return { found: false, tried: [configured.join(' ')] };
  }
  const onPath = findExecutable('seri-lsp', env);
  if (onPath) {
    return { found: true, command: onPath, args: [], origin: 'path' };
  }
  const python = findExecutable('python3', env);
  if (python) {
    const probe = spawnSync(python, ['-c', 'import importlib.util, sys; sys.exit(importlib.util.find_spec("seri_lsp") is None)'], {
      env,
      timeout: 10_000,
    });
    if (probe.status === 0) {
      return { found: true, command: python, args: ['-m', 'seri_lsp'], origin: 'python' };
    }
  }
  return { found: false, tried: ['seri-lsp (on PATH)', 'python3 -m seri_lsp'] };
}

/** How long `COMMAND --version` may take before the command counts as not working. */
const PROBE_TIMEOUT_MS = 5_000;

/**
 * Run the found command with `--version`: a command that exists but cannot run the server
 * (a Python without the package, a broken venv) fails here, once, instead of crashing
 * the language client several times. Returns why it failed, or undefined when it works.
 */
export function probeServer(
  found: Extract<ServerCommandLine, { found: true }>,
  env: NodeJS.ProcessEnv,
  cwd: string | undefined,
): Promise<string | undefined> {
  // Off the extension host's thread: the probe starts a Python process.
  return new Promise((resolve) => {
    execFile(
      found.command,
      [...found.args, '--version'],
      { env, cwd, timeout: PROBE_TIMEOUT_MS, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (!error) {
          resolve(undefined);
        } else if (error.killed) {
          resolve(`no answer within ${PROBE_TIMEOUT_MS / 1000} s`);
        } else if (typeof error.code === 'number') {
          const lastLine = (stderr || stdout || '').trim().split('\n').at(-1);
          resolve(lastLine || `exit ${error.code}`);
        } else {
          resolve(error.message);
        }
      },
    );
  });
}

function findExecutable(command: string, env: NodeJS.ProcessEnv): string | undefined {
  const isFile = (candidate: string): boolean => {
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return fs.statSync(candidate).isFile();
    } catch {
      return false;
    }
  };
  if (command.includes('/') || command.includes(path.sep)) {
    return isFile(command) ? command : undefined;
  }
  const extensions = process.platform === 'win32' ? (env.PATHEXT ?? '.EXE;.CMD;.BAT').split(';') : [''];
  for (const dir of (env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    for (const extension of extensions) {
      const candidate = path.join(dir, command + extension);
      if (isFile(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}
