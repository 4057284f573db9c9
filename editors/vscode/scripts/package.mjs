#!/usr/bin/env node
// Builds the platform-specific .vsix that carries its server: the seri-lsp wheel built
// from this checkout, and the wheels of its dependencies for one platform and every
// Python the extension supports (three of them have native code: regex, pydantic-core
// and PyYAML), plus pip's own wheel to install them with. At first start the extension
// makes a private environment with the user's Python and installs these without network
// access (src/bundledServer.ts).
//
//   npm run package                          # this machine's platform
//   npm run package -- --target win32-x64    # another one (pip downloads its wheels)
//   npm run package -- --out x.vsix
//
// Targets: the keys of PLATFORMS. Needs Python 3.11+ with pip (`$PYTHON`, else python3)
// and the package index for the wheels (pip's cache keeps a second build offline).

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const EXTENSION_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const REPOSITORY = path.resolve(EXTENSION_DIR, '..', '..');
const BUNDLED = path.join(EXTENSION_DIR, 'bundled');
// The Pythons whose wheels are carried; a newer one needs a newer build.
export const PYTHONS = ['3.11', '3.12', '3.13', '3.14'];
// A .vsix larger than this is refused (the marketplace's comfort, the user's download).
// 27.2 MB for linux-x64 since MCP support: the `mcp` SDK's client imports starlette,
// uvicorn, sse-starlette, cryptography and opentelemetry (measured), so their wheels
// (for four Pythons where not abi3) ride along; 19 MB before.
const MAX_VSIX_BYTES = 35 * 1024 * 1024;
// vsce target -> the pip platform tag of its oldest supported system (pip also takes the
// older tags that one implies: manylinux2014 for manylinux_2_17, older macOS releases).
const PLATFORMS = {
  'linux-x64': 'manylinux_2_17_x86_64',
  'linux-arm64': 'manylinux_2_17_aarch64',
  'alpine-x64': 'musllinux_1_2_x86_64',
  'alpine-arm64': 'musllinux_1_2_aarch64',
  'darwin-x64': 'macosx_11_0_x86_64',
  'darwin-arm64': 'macosx_11_0_arm64',
  'win32-x64': 'win_amd64',
  'win32-arm64': 'win_arm64',
};

function parseArgs(argv) {
  const args = { target: `${process.platform}-${process.arch}`, out: undefined };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--target') {
      args.target = argv[++i];
    } else if (argv[i] === '--out') {
      args.out = path.resolve(argv[++i]);
    } else {
      throw new Error(`unknown argument ${argv[i]} (use --target TARGET, --out FILE)`);
    }
  }
  if (!PLATFORMS[args.target]) {
    throw new Error(`no wheels for target ${args.target}; targets: ${Object.keys(PLATFORMS).join(', ')}`);
  }
  return args;
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: ['ignore', 'ignore', 'inherit'], ...options });
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status ?? result.signal})`);
  }
}

function pipArgs(...args) {
  return ['-m', 'pip', ...args, '--disable-pip-version-check', '--quiet'];
}

/** The wheels for one target into bundled/: seri-lsp, its dependencies, pip. */
function bundle(python, target) {
  const started = Date.now();
  const wheels = path.join(BUNDLED, 'wheels');
  fs.rmSync(BUNDLED, { recursive: true, force: true });
  fs.mkdirSync(wheels, { recursive: true });
  console.log(`Building the seri-lsp wheel from ${REPOSITORY}`);
  run(python, pipArgs('wheel', '--no-deps', '--wheel-dir', wheels, REPOSITORY));
  const own = fs.readdirSync(wheels).find((name) => name.startsWith('seri_lsp-'));
  const platform = PLATFORMS[target];
  for (const version of PYTHONS) {
    console.log(`Downloading the dependencies for Python ${version} on ${platform}`);
    const abi = `cp${version.replace('.', '')}`;
    run(
      python,
      pipArgs(
        'download',
        '--only-binary=:all:',
        '--platform',
        platform,
        '--python-version',
        version,
        '--implementation',
        'cp',
        '--abi',
        abi,
        '--abi',
        'abi3',
        '--abi',
        'none',
        '--dest',
        wheels,
        path.join(wheels, own),
      ),
    );
  }
  const pipDir = path.join(BUNDLED, 'pip');
  run(python, pipArgs('download', '--only-binary=:all:', '--no-deps', '--dest', pipDir, 'pip'));
  const names = fs.readdirSync(wheels).sort();
  const manifest = {
    seriLsp: /^seri_lsp-([^-]+)-/.exec(own)[1],
    target,
    pythons: PYTHONS,
    pip: fs.readdirSync(pipDir)[0],
    wheels: names,
    // What the extension compares with the environment it made: any change of wheels
    // makes a new environment.
    id: createHash('sha256')
      .update(names.map((name) => `${name}:${fs.statSync(path.join(wheels, name)).size}`).join('\n'))
      .digest('hex')
      .slice(0, 16),
  };
  fs.writeFileSync(path.join(BUNDLED, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  console.log(`Bundled ${names.length} wheels for ${target} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const python = process.env.PYTHON ?? (process.platform === 'win32' ? 'python' : 'python3');
  bundle(python, args.target);
  const version = JSON.parse(fs.readFileSync(path.join(EXTENSION_DIR, 'package.json'), 'utf8')).version;
  const out = args.out ?? path.join(EXTENSION_DIR, `seri-vscode-${args.target}-${version}.vsix`);
  const vsce = path.join(EXTENSION_DIR, 'node_modules', '.bin', process.platform === 'win32' ? 'vsce.cmd' : 'vsce');
  run(vsce, ['package', '--target', args.target, '--out', out], { cwd: EXTENSION_DIR, shell: process.platform === 'win32' });
  const size = fs.statSync(out).size;
  console.log(`${out}: ${(size / 1024 / 1024).toFixed(1)} MB`);
  if (size > MAX_VSIX_BYTES) {
    throw new Error(`${out} is ${(size / 1024 / 1024).toFixed(1)} MB, over the ${MAX_VSIX_BYTES / 1024 / 1024} MB limit`);
  }
}

try {
  main();
} catch (error) {
  console.error(`package: ${error.message}`);
  process.exit(1);
}
