// Seri: MCP Servers: the configured MCP servers (`seri.info`'s `mcpServers`) in a
// QuickPick with their status, origin, tool count and why one failed; choosing one
// offers to restart it (`seri.mcp.restart`).

import * as vscode from 'vscode';

import { McpRestarted, McpServerInfo, McpStatus, ServerCommand, ServerInfo } from '../protocol';
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

/**
 * List the MCP servers; the one chosen (or `name`, given) is offered a restart. Answers
 * the name of the server restarted, or undefined when none was.
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
    const action = await vscode.window.showQuickPick([{ label: RESTART, description: `stop ${picked.server} and start it again` }], {
      title: `Seri: MCP server ${picked.server} (${entry?.status ?? 'unknown'})`,
    });
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
