// Seri: MCP Servers: the configured MCP servers (`seri.info`'s `mcpServers`) in a
// QuickPick with their status, origin, tool count and why one failed; choosing one
// offers to restart it (`seri.mcp.restart`), and for the workspace's own servers (which
// start once the user agreed) to start them, asking again, or to revoke the agreement
// (`seri.mcp.consent`).

import * as vscode from 'vscode';

import { McpConsented, McpRestarted, McpServerInfo, McpStatus, ServerCommand, ServerInfo } from '../protocol';
import type { CommandContext } from './commandContext';

export interface McpPickItem extends vscode.QuickPickItem {
  server: string;
}

const ICONS: Record<McpStatus, string> = {
  ready: '$(pass)',
  starting: '$(loading~spin)',
  failed: '$(error)',
  stopped: '$(circle-slash)',
  'awaiting consent': '$(question)',
};

/** One row per server, in the server's order: its status, origin, tools and reason. */
export function mcpItems(servers: readonly McpServerInfo[]): McpPickItem[] {
  return servers.map((entry) => ({
    label: `${ICONS[entry.status] ?? ''} ${entry.name}`.trim(),
    description: [
      entry.status,
      `${entry.origin} (${entry.configuredIn})`,
      entry.transport,
      `${entry.tools} ${entry.tools === 1 ? 'tool' : 'tools'}`,
    ].join(' · '),
    // A reason may hold stderr's last lines: one line here.
    detail: entry.reason?.replace(/\s*\n\s*/g, ' | '),
    server: entry.name,
  }));
}

export const RESTART = 'Restart';
export const ALLOW_WORKSPACE = 'Start the Workspace’s Servers…';
export const REVOKE_WORKSPACE = 'Revoke Consent for the Workspace’s Servers';

/** What can be done with a server: restart it; for the workspace's own, consent. */
export function mcpActions(entry: McpServerInfo): vscode.QuickPickItem[] {
  if (entry.status === 'awaiting consent') {
    return [{ label: ALLOW_WORKSPACE, description: 'asks whether this workspace’s MCP servers may start (.mcp.json, its settings)' }];
  }
  const actions: vscode.QuickPickItem[] = [{ label: RESTART, description: `stop ${entry.name} and start it again` }];
  if (entry.origin === 'workspace') {
    actions.push({ label: REVOKE_WORKSPACE, description: 'stops them; the next start asks again' });
  }
  return actions;
}

/**
 * List the MCP servers; the one chosen (or `name`, given) is offered a restart (or, for
 * the workspace's servers, consent). Answers the name of the server restarted, or
 * undefined when none was.
 */
export async function mcpServers(ctx: CommandContext, name?: string): Promise<string | undefined> {
  let chosen = name;
  if (chosen === undefined) {
    const info = await ctx.server.execute<ServerInfo>(ServerCommand.info);
    const servers = info.mcpServers ?? [];
    if (servers.length === 0) {
      void vscode.window.showInformationMessage(
        'Seri: no MCP servers are configured (the seri.mcpServers setting, the workspace’s .mcp.json, or the profile’s mcp.json).',
      );
      return undefined;
    }
    const picked = await vscode.window.showQuickPick(mcpItems(servers), {
      title: 'Seri: MCP Servers',
      placeHolder: 'Choose a server to restart it',
      matchOnDescription: true,
      matchOnDetail: true,
    });
    if (picked === undefined) {
      return undefined;
    }
    const entry = servers.find((server) => server.name === picked.server);
    if (entry === undefined) {
      return undefined;
    }
    const action = await vscode.window.showQuickPick(mcpActions(entry), {
      title: `Seri: MCP server ${picked.server} (${entry.status})`,
    });
    if (action?.label === ALLOW_WORKSPACE || action?.label === REVOKE_WORKSPACE) {
      await workspaceConsent(ctx, action.label === REVOKE_WORKSPACE);
      return undefined;
    }
    if (action?.label !== RESTART) {
      return undefined;
    }
    chosen = picked.server;
  }
  const result = await ctx.server.execute<McpRestarted>(ServerCommand.mcpRestart, { name: chosen });
  void vscode.window.showInformationMessage(
    `Seri: MCP server ${result.restarted} is starting again; its tools reach the sessions started after it is ready.`,
  );
  return result.restarted;
}

/**
 * Ask again whether the workspace's servers may start (the question shows in the chat,
 * which opens for it), or revoke the answer kept; says what came of it.
 */
async function workspaceConsent(ctx: CommandContext, revoke: boolean): Promise<void> {
  const result = await ctx.server.execute<McpConsented>(ServerCommand.mcpConsent, revoke ? { revoke: true } : {});
  const workspace = result.servers.filter((server) => server.origin === 'workspace').map((server) => server.name);
  if (revoke) {
    void vscode.window.showInformationMessage(
      `Seri: consent revoked; this workspace’s MCP servers (${workspace.join(', ')}) are stopped and are asked about at the next start.`,
    );
  } else if (result.answer === 'Allow') {
    void vscode.window.showInformationMessage(`Seri: this workspace’s MCP servers (${workspace.join(', ')}) are starting.`);
  }
}
