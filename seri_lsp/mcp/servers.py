"""The engine's MCP part: the configured servers read and started when the language
server starts, the tool list fixed per session at its first turn, `seri.info`'s rows.

The workspace's `.mcp.json` servers are not started until the user agreed to them
(consent is not yet asked: they stay `awaiting consent`); the profile's and the editor's
servers start at once, in the background.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seri_lsp.host import Host
from seri_lsp.mcp.config import Origin, ServerConfig, load_servers
from seri_lsp.mcp.manager import McpManager, ServerState
from seri_lsp.mcp.tools import McpAgentTool, McpGate, agent_tools
from seri_lsp.settings import Settings

log = logging.getLogger(__name__)


class McpServers:
    """One language server's MCP servers, and each session's fixed list of their tools."""

    def __init__(self, profile_root: Path, settings: Settings, host: Host) -> None:
        self.profile_root = profile_root
        self.settings = settings
        self.host = host
        self.manager: McpManager | None = None
        self.gate = McpGate(host, settings.mcp_permission, settings.mcp_tool_permissions)
        self.problems: list[str] = []
        # Session id -> the MCP tools it was offered at its first turn.
        self._fixed: dict[str, list[McpAgentTool]] = {}
        self._watch: asyncio.Task[None] | None = None

    async def start(self, workspace_root: Path | None) -> None:
        """Read the configuration and start the servers in the background (returns once
        they are launched, never waiting for one to be ready)."""
        servers, problems = await asyncio.to_thread(
            load_servers, workspace_root, self.profile_root, self.settings.mcp_servers
        )
        self.problems = problems
        for problem in problems:
            self.host.show("warning", problem)
        if not servers:
            return
        self.manager = McpManager(
            servers,
            startup_timeout=self.settings.mcp_startup_timeout,
            tool_timeout=self.settings.mcp_tool_timeout,
        )
        held = frozenset(s.name for s in servers if s.origin is Origin.WORKSPACE)
        self.manager.start_all(held)

    def start_client(self, servers: Sequence[ServerConfig]) -> None:
        """Start the servers an ACP client passed for its session, in the background
        (no consent: the user configured them in the client). One that fails to start
        is told once (`host.show`); it never fails the session. A name already here
        keeps the server already here."""
        if not servers:
            return
        if self.manager is None:
            self.manager = McpManager(
                [],
                startup_timeout=self.settings.mcp_startup_timeout,
                tool_timeout=self.settings.mcp_tool_timeout,
            )
        started: list[ServerState] = []
        for config in servers:
            if config.name in self.manager.states:
                self.host.show(
                    "warning",
                    f"MCP server {config.name!r} from the client is not started: "
                    "a server of that name is already configured.",
                )
                continue
            state = self.manager.states[config.name] = ServerState(config)
            self.manager._start(state)  # (one server, as start_all starts each)
            started.append(state)
        if started:
            self._watch = asyncio.get_running_loop().create_task(self._tell_failed(started))

    async def _tell_failed(self, states: list[ServerState]) -> None:
        await asyncio.gather(*(state.ready.wait() for state in states))
        for state in states:
            if state.status == "failed":
                self.host.show(
                    "warning",
                    f"MCP server {state.config.name!r} from the client did not start: "
                    f"{state.reason}. Its tools are not offered in this session.",
                )

    async def prepare(self, session_id: str) -> None:
        """Before a session's first turn: wait for the servers still starting (each at
        most until its start-up timeout), then fix the session's list of tools."""
        if session_id in self._fixed:
            return
        if self.manager is not None and self.manager.starting():
            log.info("First turn waits for MCP servers: %s", ", ".join(self.manager.starting()))
            await self.manager.wait_started()
        self._fixed[session_id] = (
            agent_tools(self.manager, self.gate, session_id) if self.manager else []
        )

    def for_session(self, session_id: str) -> Sequence[McpAgentTool]:
        """The MCP tools the session was offered ([] before `prepare`)."""
        return self._fixed.get(session_id, [])

    async def restart(self, name: str) -> None:
        if self.manager is None or name not in self.manager.states:
            raise KeyError(name)
        await self.manager.restart(name)

    async def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        if self.manager is not None:
            await self.manager.stop_all()

    def info(self) -> list[dict[str, Any]]:
        """Each server for `seri.info`: name, where configured, transport, status (with
        the reason it failed), its tool count."""
        if self.manager is None:
            return []
        rows = []
        for state in self.manager.states.values():
            config = state.config
            row: dict[str, Any] = {
                "name": config.name,
                "configuredIn": config.source,
                "origin": config.origin.value,
                "transport": config.spec.transport,
                "status": state.status,
                "tools": len(state.tools),
            }
            if state.reason:
                row["reason"] = state.reason
            rows.append(row)
        return rows
