// "Seri: Toggle Trajectory Recording": whether runs are recorded, and where that comes from.

import * as vscode from 'vscode';

import { ServerCommand, TrajectoryState } from '../protocol';
import type { CommandContext } from './commandContext';

/** Where the trajectory toggle comes from, in words. */
const TRAJECTORY_SOURCES: Record<TrajectoryState['source'], string> = {
  env: "set by SERI_TRAJECTORY_ENABLED in the server's environment",
  profile: "stored in the profile's config.json",
  default: 'the default',
};

function onOff(state: TrajectoryState): string {
  return `${state.enabled ? 'on' : 'off'} (${TRAJECTORY_SOURCES[state.source] ?? state.source})`;
}

/**
 * Show whether runs are recorded, then turn recording the other way (or to `enabled`),
 * saying where the result comes from. The server's warning (SERI_TRAJECTORY_ENABLED in
 * its environment overrides the stored toggle) is shown as a warning.
 */
export async function toggleTrajectory(ctx: CommandContext, enabled?: boolean): Promise<TrajectoryState> {
  let target = enabled;
  let current: TrajectoryState | undefined;
  if (target === undefined) {
    current = await ctx.server.execute<TrajectoryState>(ServerCommand.trajectory);
    target = !current.enabled;
  }
  const result = await ctx.server.execute<TrajectoryState>(ServerCommand.trajectory, { enabled: target });
  // The server's sentence says what is in force and why (the variable, config.json).
  let message = `Seri: ${result.message ?? `Trajectory recording is ${onOff(result)}.`}`;
  if (current && current.enabled !== result.enabled) {
    message += ` It was ${onOff(current)}.`;
  }
  void vscode.window.showInformationMessage(message);
  if (result.warning) {
    void vscode.window.showWarningMessage(`Seri: ${result.warning}`);
  }
  return result;
}
