// The server the .vsix carries (bundled/, made by scripts/package.mjs): at the first
// start, a private environment under the extension's global storage, made with a
// Python 3.11+ found on the machine, with the carried wheels installed into it without
// network access. A newer extension (other wheels) replaces that environment.

import { execFile } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as vscode from 'vscode';

import { describe } from './errors';
import { NoPython, PythonCandidate, VERSION_SCRIPT, environmentPython, pythonCandidates, unsuitable } from './pythons';

/** What scripts/package.mjs wrote into bundled/manifest.json. */
interface Manifest {
  seriLsp: string;
  target: string;
  /** The Python versions ("3.12") the carried wheels are for. */
  pythons: string[];
  /** pip's own wheel, in bundled/pip. */
  pip: string;
  /** Changes whenever the carried wheels do. */
  id: string;
}

/** A process's outcome, off the extension host's thread. */
function run(command: string, args: string[], timeout: number): Promise<{ ok: boolean; out: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout, encoding: 'utf8', windowsHide: true }, (error, stdout, stderr) => {
      resolve({ ok: !error, out: error ? `${stderr || stdout || error.message}`.trim() : stdout });
    });
  });
}

/** The interpreter the Python extension has selected for the folder, if it is installed. */
async function selectedInterpreter(folder: vscode.Uri | undefined, log: vscode.LogOutputChannel): Promise<string | undefined> {
  const extension = vscode.extensions.getExtension('ms-python.python');
  if (!extension) {
    return undefined;
  }
  try {
    const api = (await extension.activate()) as {
      environments?: {
        getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
        resolveEnvironment(environment: { path: string }): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
      };
    };
    const environments = api?.environments;
    if (!environments) {
      return undefined;
    }
    const resolved = await environments.resolveEnvironment(environments.getActiveEnvironmentPath(folder));
    return resolved?.executable.uri?.fsPath;
  } catch (error) {
    log.warn(`The Python extension did not say its interpreter: ${describe(error)}`);
    return undefined;
  }
}

/** The server the .vsix carries, installed on demand. */
export class BundledServer {
  private readonly bundled: string;
  private installing: Promise<string> | undefined;

  constructor(
    extensionPath: string,
    private readonly storage: string,
    private readonly log: vscode.LogOutputChannel,
  ) {
    this.bundled = path.join(extensionPath, 'bundled');
  }

  /** Whether this build carries a server (a development build may not). */
  get present(): boolean {
    return fs.existsSync(path.join(this.bundled, 'manifest.json'));
  }

  /**
   * The environment's Python, with seri-lsp installed: made at the first call (and after
   * an update of the extension), reused after. NoPython when no Python serves; an Error
   * saying what failed when the install did.
   */
  python(setting: string, folder: vscode.Uri | undefined): Promise<string> {
    this.installing ??= this.ensure(setting, folder).finally(() => {
      this.installing = undefined;
    });
    return this.installing;
  }

  private async ensure(setting: string, folder: vscode.Uri | undefined): Promise<string> {
    const manifest = JSON.parse(fs.readFileSync(path.join(this.bundled, 'manifest.json'), 'utf8')) as Manifest;
    const envDir = path.join(this.storage, 'server');
    const python = environmentPython(envDir, process.platform);
    if (readMarker(envDir) === manifest.id && (await run(python, ['-c', 'import seri_lsp'], 15_000)).ok) {
      return python;
    }
    const base = await this.findPython(manifest, setting, folder);
    const started = Date.now();
    this.log.info(
      `Installing the seri server ${manifest.seriLsp} that this extension carries into ${envDir}, ` +
        `with ${base.what} (Python ${base.version}), from its wheels without network access`,
    );
    fs.mkdirSync(this.storage, { recursive: true });
    const staging = fs.mkdtempSync(path.join(this.storage, 'server-new-'));
    try {
      await this.step('make the environment', base.argv[0], [...base.argv.slice(1), '-m', 'venv', '--without-pip', staging]);
      const pipWheel = path.join(this.bundled, 'pip', manifest.pip);
      await this.step('install the server', environmentPython(staging, process.platform), [
        path.join(pipWheel, 'pip'),
        'install',
        '--no-index',
        '--find-links',
        path.join(this.bundled, 'wheels'),
        '--no-cache-dir',
        '--disable-pip-version-check',
        '--no-warn-script-location',
        '--quiet',
        `seri-lsp==${manifest.seriLsp}`,
      ]);
      fs.writeFileSync(path.join(staging, MARKER), JSON.stringify({ id: manifest.id, seriLsp: manifest.seriLsp }));
      // The new environment takes the old one's place (another window may have done it).
      fs.rmSync(envDir, { recursive: true, force: true });
      try {
        fs.renameSync(staging, envDir);
      } catch (error) {
        if (readMarker(envDir) !== manifest.id) {
          throw error;
        }
      }
    } finally {
      fs.rmSync(staging, { recursive: true, force: true });
    }
    this.log.info(`Installed the seri server ${manifest.seriLsp} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return python;
  }

  private async findPython(
    manifest: Manifest,
    setting: string,
    folder: vscode.Uri | undefined,
  ): Promise<PythonCandidate & { version: string }> {
    const selected = setting ? undefined : await selectedInterpreter(folder, this.log);
    const tried: string[] = [];
    for (const candidate of pythonCandidates(setting, selected, process.platform)) {
      const said = await run(candidate.argv[0], [...candidate.argv.slice(1), '-c', VERSION_SCRIPT], 15_000);
      const problem = said.ok ? unsuitable(said.out, manifest.pythons) : 'not found or does not run';
      if (!problem) {
        return { ...candidate, version: said.out.trim().split(/\s+/)[0] };
      }
      tried.push(`${candidate.what}: ${problem}`);
    }
    throw new NoPython(tried, manifest.pythons);
  }

  private async step(what: string, command: string, args: string[]): Promise<void> {
    const done = await run(command, args, 5 * 60_000);
    if (!done.ok) {
      throw new Error(`Could not ${what} (${[command, ...args].join(' ')}): ${done.out}`);
    }
  }
}

const MARKER = 'seri-installed.json';

function readMarker(envDir: string): string | undefined {
  try {
    return (JSON.parse(fs.readFileSync(path.join(envDir, MARKER), 'utf8')) as { id?: string }).id;
  } catch {
    return undefined;
  }
}
