// The server is told where this editor keeps the API key, so that its messages about a
// missing or refused key name VS Code's secret storage and the command that sets it.

import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';

import { Commands } from '../../ids';
import { keyStoreOption } from '../../keyStore';

/** The palette title of a command, as a user sees it ("Seri: Set API Key"). */
function paletteTitle(command: string): string {
  let folder = __dirname;
  while (!fs.existsSync(path.join(folder, 'package.json'))) {
    folder = path.dirname(folder);
  }
  const manifest = JSON.parse(fs.readFileSync(path.join(folder, 'package.json'), 'utf8'));
  const entry = manifest.contributes.commands.find((c: { command: string }) => c.command === command);
  return `${entry.category}: ${entry.title}`;
}

suite('apiKeyStore', () => {
  test('names the secret storage and the real palette command that writes it', () => {
    assert.deepStrictEqual(keyStoreOption(true), {
      name: "VS Code's secret storage",
      command: paletteTitle(Commands.setApiKey),
      inUse: true,
    });
    assert.strictEqual(keyStoreOption(false).inUse, false);
  });
});
