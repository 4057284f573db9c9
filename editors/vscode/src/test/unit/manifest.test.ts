// What package.json contributes is what the extension uses: a setting or a palette command
// added to one and not the other fails here.

import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';

import { Commands } from '../../ids';
import { COMMAND_RULES_SETTING, MCP_SERVERS_SETTING, OPTION_SETTINGS, STARTUP_SETTINGS, ServerSetting, TRACE_SETTING, settingId } from '../../settingKeys';

/** The extension's package.json: the first above the compiled test. */
function manifest(): { contributes: { configuration: unknown; commands: { command: string }[] } } {
  let folder = __dirname;
  while (!fs.existsSync(path.join(folder, 'package.json'))) {
    folder = path.dirname(folder);
  }
  return JSON.parse(fs.readFileSync(path.join(folder, 'package.json'), 'utf8'));
}

/** The setting ids under `contributes.configuration` (one section or several). */
function contributedSettings(): string[] {
  const configuration = manifest().contributes.configuration;
  const sections = (Array.isArray(configuration) ? configuration : [configuration]) as { properties: Record<string, unknown> }[];
  return sections.flatMap((section) => Object.keys(section.properties));
}

suite('package.json', () => {
  test('every contributed command is registered from ids.ts, and every palette command is contributed', () => {
    const contributed = manifest().contributes.commands.map((entry) => entry.command);
    assert.deepStrictEqual([...contributed].sort(), Object.values(Commands).sort());
  });

  test('every contributed setting is read by the extension, and every one read is contributed', () => {
    const read = [...Object.values(ServerSetting), ...OPTION_SETTINGS, COMMAND_RULES_SETTING, MCP_SERVERS_SETTING, TRACE_SETTING].map(settingId);
    assert.deepStrictEqual([...contributedSettings()].sort(), [...read].sort());
  });

  test('a change to any setting but tracing offers a restart', () => {
    const startup = (id: string): boolean => STARTUP_SETTINGS.some((key) => id === settingId(key) || id.startsWith(`${settingId(key)}.`));
    for (const id of contributedSettings()) {
      assert.strictEqual(startup(id), id !== settingId(TRACE_SETTING), id);
    }
  });
});
