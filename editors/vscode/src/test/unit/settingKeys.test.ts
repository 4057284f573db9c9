// The settings package.json contributes are the ones the extension reads: a setting added
// to one and not the other fails here.

import * as assert from 'assert';
import * as fs from 'fs';
import * as path from 'path';

import { OPTION_SETTINGS, STARTUP_SETTINGS, ServerSetting, TRACE_SETTING, settingId } from '../../settingKeys';

/** The setting ids under `contributes.configuration` (one section or several). */
function contributedSettings(): string[] {
  // The extension's folder: the first above the compiled test that holds a package.json.
  let folder = __dirname;
  while (!fs.existsSync(path.join(folder, 'package.json'))) {
    folder = path.dirname(folder);
  }
  const manifest = JSON.parse(fs.readFileSync(path.join(folder, 'package.json'), 'utf8'));
  const configuration = manifest.contributes.configuration;
  const sections: { properties: Record<string, unknown> }[] = Array.isArray(configuration) ? configuration : [configuration];
  return sections.flatMap((section) => Object.keys(section.properties));
}

suite('settings', () => {
  test('every contributed setting is read by the extension, and every one read is contributed', () => {
    const read = [...Object.values(ServerSetting), ...OPTION_SETTINGS, TRACE_SETTING].map(settingId);
    assert.deepStrictEqual([...contributedSettings()].sort(), [...read].sort());
  });

  test('a change to any setting but tracing offers a restart', () => {
    const startup = (id: string): boolean => STARTUP_SETTINGS.some((key) => id === settingId(key) || id.startsWith(`${settingId(key)}.`));
    for (const id of contributedSettings()) {
      assert.strictEqual(startup(id), id !== settingId(TRACE_SETTING), id);
    }
  });
});
