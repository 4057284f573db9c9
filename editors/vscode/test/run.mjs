#!/usr/bin/env node
// Runs the extension's tests: unit suites in Node, integration suites inside the real
// extension host, and UI scenarios in the real workbench (code-server driven by
// Playwright through Debian's Chromium). It installs what is missing first, saying so:
// Chromium (apt), code-server (npm, into a cache outside the repository) and the
// extension's node modules (npm ci, kept in that cache for the next clean clone).
//
//   node test/run.mjs --config CONFIG.json [--suites unit,integration,ui] [--shared DIR]
//
// With --shared, runs of the same test session share DIR: the first to get there installs
// what is missing and packages the .vsix, under a lock, and the others use that .vsix
// (tests/test_vscode.py runs its UI scenarios in three lanes at once, each its own run).
//
// CONFIG is written by tests/test_vscode.py, which also starts the scripted provider and
// seeds the workspaces; see `readConfig` for its fields. Exit code 0 when every suite
// passed; results for each suite are written to <workDir>/results/<suite>.json.

import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const EXTENSION_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CODE_SERVER_VERSION = '4.100.3';
// Debian's headless Chromium (the engine of `chromium`, without its browser window):
// about a fifth less CPU for the same scenarios, and a smaller package.
const CHROMIUM = '/usr/bin/chromium-headless-shell';
const require = createRequire(import.meta.url);

const started = Date.now();
const say = (message) => console.log(`[vscode-tests ${((Date.now() - started) / 1000).toFixed(1)}s] ${message}`);

function parseArgs(argv) {
  const args = { suites: ['unit', 'integration', 'ui'] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--config') {
      args.config = argv[++i];
    } else if (argv[i] === '--suites') {
      args.suites = argv[++i].split(',');
    } else if (argv[i] === '--shared') {
      args.shared = argv[++i];
    } else {
      throw new Error(`unknown argument ${argv[i]}`);
    }
  }
  return args;
}

/**
 * The run's configuration: serverCommand (argv of the language server), python (the
 * Python that builds the carried server's wheels), providerUrl
 * and controlUrl (the scripted provider and its control API), profileRoot, workDir (a
 * fresh temporary folder for code-server, Chromium and results), workspaces (folder per
 * name: integration, stored, tools, compact, resume) and ui (what the UI scenarios
 * expect to see).
 */
function readConfig(file) {
  const config = JSON.parse(fs.readFileSync(file, 'utf8'));
  for (const key of ['serverCommand', 'providerUrl', 'controlUrl', 'profileRoot', 'workDir', 'workspaces']) {
    if (!config[key]) {
      throw new Error(`${file} lacks ${key}`);
    }
  }
  return config;
}

// --- installing what is missing ----------------------------------------------------

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status ?? result.signal})`);
  }
}

/** `run`, without waiting: the promise settles when the command has ended. */
function runBeside(command, args, options = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: 'inherit', ...options });
    child.on('error', reject);
    child.on('exit', (code, signal) =>
      code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} failed (exit ${code ?? signal})`)),
    );
  });
}

function onPath(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

function cacheDir() {
  const base = process.env.SERI_TEST_CACHE ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'seri-vscode-test');
  return base;
}

function codeServerDir() {
  return path.join(cacheDir(), `code-server-${CODE_SERVER_VERSION}`);
}

function codeServerBin() {
  return path.join(codeServerDir(), 'node_modules', '.bin', 'code-server');
}

function codeServerInstalled() {
  return fs.existsSync(path.join(codeServerDir(), '.installed')) && fs.existsSync(codeServerBin());
}

function aptInstall(packages, why) {
  const missing = packages.filter((p) => spawnSync('dpkg', ['-s', p], { stdio: 'ignore' }).status !== 0);
  if (missing.length === 0) {
    return;
  }
  if (!onPath('apt-get') || process.getuid?.() !== 0) {
    throw new Error(`The VS Code tests need ${missing.join(', ')} (${why}). Install them, e.g. sudo apt-get install -y ${missing.join(' ')}`);
  }
  say(`installing ${missing.join(', ')} with apt-get (${why}; one time, ~300 MB)`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  run('apt-get', ['update', '-q'], { env });
  run('apt-get', ['install', '-y', '-q', ...missing], { env });
}

/** @vscode/ripgrep downloads a binary during code-server's install; give it Debian's. */
function seedRipgrep() {
  const arch = { x64: 'x86_64', arm64: 'aarch64' }[process.arch];
  if (!arch) {
    return;
  }
  const cache = path.join(os.tmpdir(), 'vscode-ripgrep-cache-1.15.11');
  const tarball = path.join(cache, `ripgrep-v13.0.0-10-${arch}-unknown-linux-musl.tar.gz`);
  if (fs.existsSync(tarball)) {
    return;
  }
  const staging = fs.mkdtempSync(path.join(os.tmpdir(), 'seri-rg-'));
  fs.copyFileSync('/usr/bin/rg', path.join(staging, 'rg'));
  fs.mkdirSync(cache, { recursive: true });
  run('tar', ['-C', staging, '-czf', tarball, 'rg']);
  fs.rmSync(staging, { recursive: true, force: true });
}

/** What apt must bring for the workbench: Chromium, and what code-server's install builds with. */
function workbenchPackages() {
  return ['chromium-headless-shell', ...(codeServerInstalled() ? [] : ['libkrb5-dev', 'ripgrep'])];
}

/** Installs code-server if it is missing (after `workbenchPackages`), beside other work. */
async function ensureCodeServer() {
  if (codeServerInstalled()) {
    return;
  }
  seedRipgrep();
  const dir = codeServerDir();
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  say(`installing code-server ${CODE_SERVER_VERSION} from npm into ${dir} (one time, ~1 min, ~300 MB)`);
  const t0 = Date.now();
  await runBeside('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--unsafe-perm', '--loglevel', 'error', `code-server@${CODE_SERVER_VERSION}`], {
    cwd: dir,
    env: { ...process.env, npm_config_yes: 'true' },
  });
  fs.writeFileSync(path.join(dir, '.installed'), `${CODE_SERVER_VERSION}\n`);
  say(`code-server installed in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}

/**
 * What the extension's node modules are made from: the lock file, the platform and
 * Node's module ABI (esbuild's binary is per platform).
 */
function nodeModulesKey() {
  const lock = fs.readFileSync(path.join(EXTENSION_DIR, 'package-lock.json'));
  const hash = createHash('sha256').update(lock).digest('hex').slice(0, 16);
  return `${hash}-${process.platform}-${process.arch}-abi${process.versions.modules}`;
}

/** The node modules a key stands for, as `npm ci` made them once (kept: a few keys). */
function cachedNodeModules(key) {
  return path.join(cacheDir(), `node-modules-${key}`);
}

/**
 * editors/vscode/node_modules as the lock file says. A clean clone copies them from the
 * cache outside the repository (a few seconds) instead of `npm ci` (twenty); `npm ci`
 * fills the cache the first time, and the three keys used last are kept.
 */
function ensureNodeModules() {
  const key = nodeModulesKey();
  const modules = path.join(EXTENSION_DIR, 'node_modules');
  const stamp = path.join(modules, '.seri-modules-key');
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === key) {
    return;
  }
  const cached = cachedNodeModules(key);
  fs.rmSync(modules, { recursive: true, force: true });
  if (fs.existsSync(path.join(cached, '.seri-modules-key'))) {
    say(`copying the extension's node modules from ${cached}`);
    run('cp', ['-a', cached, modules]);
    fs.utimesSync(cached, new Date(), new Date());
    return;
  }
  say('installing the extension\'s node modules (npm ci in editors/vscode)');
  run('npm', ['ci', '--no-audit', '--no-fund', '--loglevel', 'error'], { cwd: EXTENSION_DIR });
  fs.writeFileSync(stamp, key);
  storeNodeModules(modules, cached);
}

/** Copy node_modules into the cache (whole or not at all), and drop all but the newest keys. */
function storeNodeModules(modules, cached) {
  const staging = `${cached}.${process.pid}.tmp`;
  try {
    fs.mkdirSync(path.dirname(cached), { recursive: true });
    run('cp', ['-a', modules, staging]);
    fs.renameSync(staging, cached);
  } catch (error) {
    // Another run stored the same key first, or the cache cannot be written: the copy
    // in editors/vscode is all this run needs.
    if (error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') {
      say(`could not cache the node modules (${error.message}); the next run installs them again`);
    }
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
  }
  const kept = fs
    .readdirSync(cacheDir())
    .filter((name) => /^node-modules-[^.]+$/.test(name))
    .map((name) => path.join(cacheDir(), name))
    .sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
  for (const old of kept.slice(3)) {
    fs.rmSync(old, { recursive: true, force: true });
  }
}

// --- building ------------------------------------------------------------------------

function packageVsix(vsix, python) {
  say('packaging the extension with the server it carries (npm run package: the wheels, then vsce package)');
  run('node', [path.join(EXTENSION_DIR, 'scripts', 'package.mjs'), '--out', vsix], {
    cwd: EXTENSION_DIR,
    env: { ...process.env, ...(python ? { PYTHON: python } : {}) },
  });
}

/** Type-checks the chat page and compiles the test suites, beside other work. */
async function compileTests() {
  const bin = (name) => path.join(EXTENSION_DIR, 'node_modules', '.bin', name);
  say('type-checking the chat page and compiling the test suites (tsc)');
  await Promise.all([
    runBeside(bin('tsc'), ['-p', 'src/webview', '--noEmit'], { cwd: EXTENSION_DIR }),
    runBeside(bin('tsc'), ['-p', 'tsconfig.test.json'], { cwd: EXTENSION_DIR }),
  ]);
}

/**
 * Installs what is missing and packages the .vsix into workDir. With `shared`, under a
 * lock there: the first run packages into `shared` and later ones copy its .vsix. What
 * does not wait on the rest runs beside it: code-server's install (a minute on a new
 * machine) beside the extension's node modules and the packaging, and the test suites'
 * compile beside the packaging.
 */
async function prepare({ shared, suites }, workDir, wantsWorkbench, python) {
  const compiles = suites.includes('unit') || suites.includes('integration');
  let compiled = Promise.resolve();
  const build = async (built) => {
    if (wantsWorkbench) {
      aptInstall(workbenchPackages(), "the browser that drives the workbench, and what code-server's install builds with");
    }
    const codeServer = wantsWorkbench ? ensureCodeServer() : Promise.resolve();
    try {
      ensureNodeModules();
      if (compiles) {
        compiled = compileTests();
        compiled.catch(() => undefined); // awaited below; not an unhandled rejection meanwhile
      }
      if (fs.existsSync(built)) {
        say('using the .vsix another run of this test session packaged');
      } else {
        packageVsix(built, python);
      }
    } finally {
      await codeServer;
    }
  };
  const vsix = path.join(workDir, 'seri-vscode.vsix');
  if (!shared) {
    await build(vsix);
  } else {
    await withLock(path.join(shared, 'lock'), async () => {
      const built = path.join(shared, 'seri-vscode.vsix');
      await build(built);
      fs.copyFileSync(built, vsix);
    });
  }
  await compiled;
  return vsix;
}

/** Runs `work` holding the lock folder `dir`; a lock whose holder died is taken over. */
async function withLock(dir, work) {
  fs.mkdirSync(path.dirname(dir), { recursive: true });
  const holderFile = path.join(dir, 'pid');
  for (let waited = 0; ; waited++) {
    try {
      fs.mkdirSync(dir);
      fs.writeFileSync(holderFile, String(process.pid));
      break;
    } catch (error) {
      if (error.code !== 'EEXIST') {
        throw error;
      }
    }
    const holder = Number(fs.existsSync(holderFile) ? fs.readFileSync(holderFile, 'utf8') : NaN);
    if (holder && !alive(holder)) {
      fs.rmSync(dir, { recursive: true, force: true });
      continue;
    }
    if (waited % 50 === 0) {
      say(`waiting for the run that holds ${dir} (installing or packaging)`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  try {
    return await work();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return error.code === 'EPERM';
  }
}

// --- suites --------------------------------------------------------------------------

function readResults(resultsDir, suite) {
  const file = path.join(resultsDir, `${suite}.json`);
  return fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')).tests : [];
}

function report(suite, tests) {
  for (const test of tests) {
    say(`${suite}: ${test.state.toUpperCase()} ${test.title}${test.state === 'failed' ? `\n${indent(test.error ?? '')}` : ''}`);
  }
  const passed = tests.filter((t) => t.state === 'passed').length;
  const failed = tests.filter((t) => t.state === 'failed').length;
  say(`${suite}: ${passed} passed, ${failed} failed`);
  return failed === 0 && passed > 0;
}

function indent(text) {
  return text
    .split('\n')
    .slice(0, 12)
    .map((line) => `      ${line}`)
    .join('\n');
}

async function runUnit(resultsDir) {
  process.env.SERI_TEST_RESULTS_DIR = resultsDir;
  const { runSuites } = require(path.join(EXTENSION_DIR, 'out', 'test', 'index.js'));
  try {
    await runSuites(path.join(EXTENSION_DIR, 'out', 'test', 'unit'), 'unit');
  } catch {
    // The results file says which failed.
  }
  return report('unit', readResults(resultsDir, 'unit'));
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** code-server with its own user data, extensions and config: nothing of the user's. */
async function startCodeServer(config, vsix, resultsDir) {
  const dirs = {
    user: path.join(config.workDir, 'code-server', 'user'),
    extensions: path.join(config.workDir, 'code-server', 'extensions'),
    xdg: path.join(config.workDir, 'code-server', 'xdg'),
  };
  Object.values(dirs).forEach((dir) => fs.mkdirSync(dir, { recursive: true }));
  const settingsFile = path.join(dirs.user, 'User', 'settings.json');
  fs.mkdirSync(path.dirname(settingsFile), { recursive: true });
  fs.writeFileSync(
    settingsFile,
    JSON.stringify(
      {
        'workbench.startupEditor': 'none',
        'workbench.tips.enabled': false,
        'security.workspace.trust.enabled': false,
        'telemetry.telemetryLevel': 'off',
        'extensions.ignoreRecommendations': true,
        'update.mode': 'none',
        'seri.provider.baseUrl': config.providerUrl,
        'seri.provider.model': 'test/model',
        'seri.permissions.write': 'allow',
      },
      null,
      2,
    ),
  );
  // Machine-scoped settings (a command, a folder on the machine) are read from the remote
  // machine's settings in a code-server window, as they would be over SSH.
  const machineSettings = path.join(dirs.user, 'Machine', 'settings.json');
  fs.mkdirSync(path.dirname(machineSettings), { recursive: true });
  fs.writeFileSync(
    machineSettings,
    JSON.stringify({ 'seri.server.command': config.serverCommand, 'seri.profileRoot': config.profileRoot }, null, 2),
  );
  const common = ['--user-data-dir', dirs.user, '--extensions-dir', dirs.extensions];
  say('installing the .vsix into code-server');
  run(codeServerBin(), [...common, '--install-extension', vsix], { stdio: ['ignore', 'ignore', 'inherit'] });

  // The developer's own provider settings must not reach the server under test.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !/^(SERI_|OPENROUTER_API_KEY$|VSCODE_)/.test(key)),
  );
  // No seri-lsp on PATH: a window without a server command of its own uses the carried one.
  env.PATH = withoutSeriLsp(env.PATH ?? '');
  Object.assign(env, {
    XDG_CONFIG_HOME: dirs.xdg,
    SERI_TEST_CONTROL_URL: config.controlUrl,
    SERI_TEST_PROVIDER_URL: config.providerUrl,
    SERI_TEST_PROFILE_ROOT: config.profileRoot,
    SERI_TEST_RESULTS_DIR: resultsDir,
    SERI_TEST_USER_SETTINGS: settingsFile,
  });
  if (process.env.SERI_TEST_GREP) {
    env.SERI_TEST_GREP = process.env.SERI_TEST_GREP;
  }
  const port = await freePort();
  const log = fs.openSync(path.join(config.workDir, 'code-server.log'), 'w');
  const child = spawn(
    codeServerBin(),
    [
      '--bind-addr',
      `127.0.0.1:${port}`,
      '--auth',
      'none',
      '--disable-telemetry',
      '--disable-update-check',
      '--disable-workspace-trust',
      ...common,
    ],
    { env, detached: true, stdio: ['ignore', log, log] },
  );
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      const response = await fetch(`${url}/healthz`);
      if (response.ok) {
        break;
      }
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      throw new Error(`code-server did not start; see ${path.join(config.workDir, 'code-server.log')}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  say(`code-server ${CODE_SERVER_VERSION} listening on ${url}`);
  return {
    url,
    port,
    async stop() {
      // code-server, its extension hosts and the seri servers they started, as a group.
      const signal = (name) => {
        try {
          process.kill(-child.pid, name);
        } catch {
          // already gone
        }
      };
      signal('SIGTERM');
      const exited = new Promise((resolve) => child.once('exit', resolve));
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
      signal('SIGKILL');
    },
  };
}

/** PATH without its folders that hold a seri-lsp (a developer's virtual environment). */
function withoutSeriLsp(searchPath) {
  return searchPath
    .split(path.delimiter)
    .filter((folder) => folder && !fs.existsSync(path.join(folder, 'seri-lsp')))
    .join(path.delimiter);
}

async function launchBrowser(workDir) {
  const { chromium } = require(path.join(EXTENSION_DIR, 'node_modules', 'playwright-core'));
  return chromium.launchPersistentContext(path.join(workDir, 'chromium'), {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 860 },
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Run src/test/suite inside the extension host of a workbench opened on `folder`. */
async function runIntegration(browser, server, folder, resultsDir, screenshots) {
  const remote = (p) => `vscode-remote://127.0.0.1:${server.port}${p}`;
  const payload = JSON.stringify([
    ['extensionDevelopmentPath', remote(EXTENSION_DIR)],
    ['extensionTestsPath', remote(path.join(EXTENSION_DIR, 'out', 'test', 'index.js'))],
  ]);
  const page = await browser.newPage();
  let exitCode;
  const exited = new Promise((resolve) => {
    page.exposeFunction('codeAutomationExit', (code) => {
      exitCode = code;
      resolve();
    });
  });
  await page.exposeFunction('codeAutomationLog', (type, args) => {
    if (process.env.SERI_TEST_VERBOSE) {
      say(`extension host ${type}: ${JSON.stringify(args).slice(0, 400)}`);
    }
  });
  say('integration: running the suites inside the extension host');
  await page.goto(`${server.url}/?folder=${encodeURIComponent(folder)}&payload=${encodeURIComponent(payload)}`);
  const timeout = new Promise((resolve) => setTimeout(resolve, 6 * 60_000));
  await Promise.race([exited, timeout]);
  await page.screenshot({ path: path.join(screenshots, 'integration-end.png') }).catch(() => undefined);
  await closePage(page);
  const log = path.join(resultsDir, 'integration.log');
  if (exitCode === undefined) {
    say(`integration: no exit code within 6 minutes${fs.existsSync(log) ? `; log:\n${fs.readFileSync(log, 'utf8')}` : ''}`);
  }
  const tests = readResults(resultsDir, 'integration');
  if (tests.length === 0 && fs.existsSync(log)) {
    say(`integration: no results; log:\n${fs.readFileSync(log, 'utf8')}`);
  }
  return report('integration', tests) && exitCode === 0;
}

/** Navigating away lets the workbench end its extension host (and the seri server). */
async function closePage(page) {
  await page.goto('about:blank', { timeout: 10_000 }).catch(() => undefined);
  await page.close().catch(() => undefined);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const config = args.config ? readConfig(args.config) : undefined;
  const wantsWorkbench = args.suites.some((s) => s !== 'unit');
  if (wantsWorkbench && !config) {
    throw new Error('--config is needed for the integration and UI suites (tests/test_vscode.py writes it)');
  }
  const workDir = config?.workDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'seri-vscode-'));
  const resultsDir = path.join(workDir, 'results');
  const screenshots = path.join(workDir, 'screenshots');
  fs.mkdirSync(resultsDir, { recursive: true });
  fs.mkdirSync(screenshots, { recursive: true });

  const vsix = await prepare(args, workDir, wantsWorkbench, config?.python);
  let ok = true;
  if (args.suites.includes('unit')) {
    ok = (await runUnit(resultsDir)) && ok;
  }
  if (!wantsWorkbench) {
    return ok;
  }
  let server;
  let browser;
  try {
    server = await startCodeServer(config, vsix, resultsDir);
    browser = await launchBrowser(workDir);
    if (args.suites.includes('integration')) {
      ok = (await runIntegration(browser, server, config.workspaces.integration, resultsDir, screenshots)) && ok;
    }
    if (args.suites.includes('ui')) {
      const { runScenarios } = await import('./ui.mjs');
      const tests = await runScenarios({ browser, server, config, screenshots, say, closePage });
      fs.writeFileSync(path.join(resultsDir, 'ui.json'), JSON.stringify({ tests }, null, 2));
      ok = report('ui', tests) && ok;
    }
  } finally {
    await browser?.close().catch(() => undefined);
    await server?.stop();
  }
  return ok;
}

main().then(
  (ok) => {
    say(ok ? 'all suites passed' : 'some suites failed');
    process.exit(ok ? 0 : 1);
  },
  (error) => {
    say(`error: ${error?.stack ?? error}`);
    process.exit(2);
  },
);
