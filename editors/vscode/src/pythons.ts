// Finding a Python for the server the extension carries: which to try, in which order,
// and whether one can run the carried wheels. No VS Code API here (unit-tested in Node).

import * as path from 'path';

/** A Python to try: its command line and what it is, in words. */
export interface PythonCandidate {
  argv: string[];
  what: string;
}

/** No usable Python: what was looked for, each with why it did not serve. */
export class NoPython extends Error {
  constructor(
    readonly tried: string[],
    readonly pythons: string[],
  ) {
    super(
      `Seri needs Python ${versionRange(pythons)} to run its server and found none ` +
        `(tried ${tried.join('; ')}). Install Python from python.org (or your system's ` +
        'packages), or set `seri.server.python` to the path of one.',
    );
  }
}

/** "3.11 to 3.14" */
export function versionRange(pythons: string[]): string {
  return pythons.length > 1 ? `${pythons[0]} to ${pythons[pythons.length - 1]}` : pythons.join('');
}

/**
 * The Pythons to try, in order: the `seri.server.python` setting alone when it is set;
 * else the Python extension's selected interpreter, then `python3` and `python` on PATH
 * (on Windows the `py -3` launcher first).
 */
export function pythonCandidates(setting: string, selected: string | undefined, platform: NodeJS.Platform): PythonCandidate[] {
  if (setting) {
    return [{ argv: [setting], what: `seri.server.python (${setting})` }];
  }
  const found: PythonCandidate[] = [];
  if (selected) {
    found.push({ argv: [selected], what: `the Python extension's interpreter (${selected})` });
  }
  const onPath = platform === 'win32' ? [['py', '-3'], ['python'], ['python3']] : [['python3'], ['python']];
  for (const argv of onPath) {
    found.push({ argv, what: `${argv.join(' ')} on PATH` });
  }
  return found;
}

/** The environment's own Python. */
export function environmentPython(envDir: string, platform: NodeJS.Platform): string {
  return platform === 'win32' ? path.join(envDir, 'Scripts', 'python.exe') : path.join(envDir, 'bin', 'python');
}

/** Prints "3.12 cpython" for any Python; the extension reads it. */
export const VERSION_SCRIPT = 'import sys; print("%d.%d %s" % (sys.version_info[0], sys.version_info[1], sys.implementation.name))';

/** Why this Python cannot run the carried wheels, or undefined when it can. */
export function unsuitable(said: string, pythons: string[]): string | undefined {
  const [version, implementation] = said.trim().split(/\s+/);
  if (!version || !/^\d+\.\d+$/.test(version)) {
    return 'does not run';
  }
  if (implementation !== 'cpython') {
    return `${implementation} ${version}, not CPython`;
  }
  if (!pythons.includes(version)) {
    return `Python ${version}; this build of the extension carries wheels for ${versionRange(pythons)}`;
  }
  return undefined;
}
