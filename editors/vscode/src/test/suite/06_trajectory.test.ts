import * as assert from 'assert';
import * as vscode from 'vscode';

import { Commands } from '../../ids';
import type { TrajectoryState } from '../../protocol';
import { activated, restart, stubWindow } from './helpers';

suite('Trajectory recording', () => {
  suiteTeardown(async () => {
    if (process.env.SERI_TRAJECTORY_ENABLED !== undefined) {
      delete process.env.SERI_TRAJECTORY_ENABLED;
      await restart(await activated());
    }
  });

  async function toggle(enabled?: boolean): Promise<{ result: TrajectoryState; infos: string[]; warnings: string[] }> {
    const ui = stubWindow([]);
    try {
      const result = await vscode.commands.executeCommand<TrajectoryState>(Commands.toggleTrajectory, enabled);
      return { result, infos: ui.infos, warnings: ui.warnings };
    } finally {
      ui.restore();
    }
  }

  const onOff = (enabled: boolean): string => (enabled ? 'on' : 'off');

  test('Toggle Trajectory Recording turns it the other way and says where both states come from', async () => {
    const api = await activated();
    const before = await api.server.execute<TrajectoryState>('seri.trajectory', {});
    assert.strictEqual(before.warning, undefined);
    const was = before.source === 'default' ? 'the default' : "stored in the profile's config.json";

    const first = await toggle();
    const { message, ...state } = first.result;
    assert.deepStrictEqual(state, { enabled: !before.enabled, source: 'profile', stored: !before.enabled });
    assert.match(message ?? '', new RegExp(`^Trajectory recording is ${onOff(!before.enabled)} \\(set in .*config\\.json\\)\\.`));
    assert.deepStrictEqual(first.infos, [`Seri: ${message} It was ${onOff(before.enabled)} (${was}).`]);
    assert.deepStrictEqual(first.warnings, []);

    const back = await toggle();
    assert.strictEqual(back.result.enabled, before.enabled);
    assert.strictEqual(back.result.source, 'profile');
    assert.deepStrictEqual(back.warnings, []);
    const now = await api.server.execute<TrajectoryState>('seri.trajectory', {});
    assert.strictEqual(now.enabled, before.enabled);
    assert.strictEqual(now.stored, before.enabled);
  });

  test('with SERI_TRAJECTORY_ENABLED in the server’s environment, the variable wins and a warning says so', async () => {
    const api = await activated();
    process.env.SERI_TRAJECTORY_ENABLED = 'true';
    await restart(api);
    const shown = await api.server.execute<TrajectoryState>('seri.trajectory', {});
    assert.strictEqual(shown.enabled, true);
    assert.strictEqual(shown.source, 'env');

    const { result, infos, warnings } = await toggle();
    assert.strictEqual(result.enabled, true, 'the variable keeps it on');
    assert.strictEqual(result.source, 'env');
    assert.strictEqual(result.stored, false, 'the toggle is stored all the same');
    assert.match(result.message ?? '', /^Trajectory recording is on \(SERI_TRAJECTORY_ENABLED=true in the environment/);
    assert.deepStrictEqual(infos, [`Seri: ${result.message}`]);
    assert.match(result.warning ?? '', /SERI_TRAJECTORY_ENABLED=true in the environment overrides/);
    assert.deepStrictEqual(warnings, [`Seri: ${result.warning}`]);

    // Turned on explicitly: stored, the same as the variable, nothing to warn about.
    const on = await toggle(true);
    assert.strictEqual(on.result.stored, true);
    assert.strictEqual(on.result.warning, undefined);
    assert.deepStrictEqual(on.warnings, []);
  });
});
