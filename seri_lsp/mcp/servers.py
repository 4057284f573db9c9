"""The engine's MCP part: the configured servers read and started when the language
server starts, the tool list fixed per session at its first turn, `seri.info`'s rows.

The workspace's `.mcp.json` servers are not started until the user agreed to them: one
question (`seri/approve`, kind `mcpServers`) names each with its command line, asked in
the background at start-up (a task never waits for it). "Allow" is kept per project in
the profile's `mcp-consent.json` (for exactly the servers listed: changed ones are asked
again) and starts them; "Not now" (or no answer) holds until the language server starts
again; "Never for this project" is kept and never asks again. `seri.mcp.consent`
revokes an answer kept (`revoke: true`) or asks again. The profile's and the editor's
servers start at once, in the background.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seri_lsp.agent.command_gate import WorkspaceAgreements
from seri_lsp.events import Activity
from seri_lsp.host import Host, Question
from seri_lsp.mcp.config import Origin, ServerConfig, load_servers
from seri_lsp.mcp.manager import Change, McpManager, ServerState
from seri_lsp.mcp.tools import McpAgentTool, McpGate, agent_tools
from seri_lsp.settings import Settings
from seri_lsp.store.messages import tokens_for_chars

log = logging.getLogger(__name__)

CONSENT_NAME = "mcp-consent.json"
ALLOW, NOT_NOW, NEVER = "Allow", "Not now", "Never for this project"
# What `mcp-consent.json` keeps for a project whose user chose "Never".
_NEVER_MARK = "never"


def consent_lines(configs: Sequence[ServerConfig]) -> tuple[str, ...]:
    """What an "Allow" keeps for a project: each workspace server, sorted by name, with
    its command line (a changed one is asked about again)."""
    return tuple(f"{c.name}: {c.spec.display()}" for c in sorted(configs, key=lambda c: c.name))


def _place(config: ServerConfig) -> str:
    """Where a workspace's server was configured, as the consent question says it."""
    return ".mcp.json" if config.source.endswith(".mcp.json") else "editor settings"


class McpServers:
    """One language server's MCP servers, and each session's fixed list of their tools."""

    def __init__(self, profile_root: Path, settings: Settings, host: Host) -> None:
        self.profile_root = profile_root
        self.settings = settings
        self.host = host
        self.manager: McpManager | None = None
        self.consent = WorkspaceAgreements(profile_root, CONSENT_NAME)
        self.project = ""
        self._asking: asyncio.Task[str | None] | None = None
        self.gate = McpGate(host, settings.mcp_permission, settings.mcp_tool_permissions)
        self.problems: list[str] = []
        # Session id -> the MCP tools it was offered at its first turn.
        self._fixed: dict[str, list[McpAgentTool]] = {}
        self._watch: asyncio.Task[None] | None = None
        self._loading: asyncio.Task[None] | None = None  # `begin`'s start
        # (server, change) already told (`_server_changed`: once each).
        self._told: set[tuple[str, Change]] = set()

    def begin(self, workspace_root: Path | None, project: str = "") -> None:
        """`start` in the background (the language server's start waits for nothing);
        whatever needs the servers waits for it (`loaded`)."""
        self._loading = asyncio.get_running_loop().create_task(
            self.start(workspace_root, project), name="mcp start"
        )

    async def loaded(self) -> None:
        """Wait for `begin`'s start (a failure of it is logged once, never raised)."""
        task = self._loading
        if task is None:
            return
        with contextlib.suppress(Exception):
            await asyncio.shield(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("The MCP servers could not be started: %s", task.exception())
            self._loading = None

    async def start(self, workspace_root: Path | None, project: str = "") -> None:
        """Read the configuration and start the servers in the background (returns once
        they are launched, never waiting for one to be ready); the workspace's servers
        once the user agreed (asked in the background)."""
        self.project = project
        servers, problems = await asyncio.to_thread(
            load_servers,
            workspace_root,
            self.profile_root,
            self.settings.mcp_servers,
            workspace_setting=self.settings.workspace_mcp_servers,
        )
        self.problems = problems
        for problem in problems:
            self.host.show("warning", problem)
        if not servers:
            return
        self.manager = self._new_manager(servers)
        held = frozenset(s.name for s in servers if s.origin is Origin.WORKSPACE)
        answer = await asyncio.to_thread(self._kept_answer) if held else None
        self.manager.start_all(frozenset() if answer == ALLOW else held)
        if held and answer is None:
            self._asking = asyncio.get_running_loop().create_task(
                self._ask_consent(), name="mcp consent"
            )

    def _new_manager(self, servers: Sequence[ServerConfig]) -> McpManager:
        manager = McpManager(
            servers,
            startup_timeout=self.settings.mcp_startup_timeout,
            tool_timeout=self.settings.mcp_tool_timeout,
        )
        manager.on_change = self._server_changed
        return manager

    def _server_changed(self, state: ServerState, change: Change) -> None:
        """A server became ready, or changed its tools, after a session fixed its list
        without them: say once that they are offered from the next session (the
        session's list stays as it is, so its cached prompt prefix holds)."""
        name = state.config.name
        now = sorted(tool.name for tool in state.tools)
        missed = any(
            sorted(tool.tool.name for tool in tools if tool.server == name) != now
            for tools in self._fixed.values()
        )
        if not missed or (name, change) in self._told:
            return
        self._told.add((name, change))
        what = "is ready now" if change == "ready" else "changed its tools"
        self.host.show(
            "info",
            f"MCP server {name!r} {what}: its tools are offered from the next session "
            "(a session keeps the tool list it started with).",
        )

    def _workspace_servers(self) -> list[ServerConfig]:
        if self.manager is None:
            return []
        return [
            s.config for s in self.manager.states.values() if s.config.origin is Origin.WORKSPACE
        ]

    def _consent_lines(self) -> tuple[str, ...]:
        return consent_lines(self._workspace_servers())

    def _kept_answer(self) -> str | None:
        """ALLOW or NEVER where the profile keeps that answer for this project's servers."""
        if self.consent.agreed(self.project, self._consent_lines()):
            return ALLOW
        if self.consent.agreed(self.project, (_NEVER_MARK,)):
            return NEVER
        return None

    async def _ask_consent(self) -> str | None:
        """Ask whether the workspace's servers may start; act on the answer (kept where
        it is "Allow" or "Never"). The answer, None for none."""
        configs = self._workspace_servers()
        listed = "; ".join(f"{c.name} (`{c.spec.display()}`)" for c in configs)
        places = " and ".join(sorted({_place(c) for c in configs}))
        question = Question(
            kind="mcpServers",
            message=(
                f"MCP servers configured in this workspace's {places}: {listed}. "
                "Start them for this project?"
            ),
            choices=(ALLOW, NOT_NOW, NEVER),
            details={
                "servers": [
                    {"name": c.name, "transport": c.spec.transport, "command": c.spec.display()}
                    for c in configs
                ]
            },
        )
        answer = (await self.host.approve(question)).choice
        if answer == ALLOW:
            await asyncio.to_thread(self.consent.agree, self.project, self._consent_lines())
            if self.manager is not None:
                self.manager.start_held([c.name for c in configs])
        elif answer == NEVER:
            await asyncio.to_thread(self.consent.agree, self.project, (_NEVER_MARK,))
        return answer

    async def consent_command(self, revoke: bool) -> dict[str, Any]:
        """`seri.mcp.consent`: revoke the kept answer for this project's servers (and
        stop them), or ask again now; the servers' rows after."""
        await self.loaded()
        names = [c.name for c in self._workspace_servers()]
        if revoke:
            forgotten = await asyncio.to_thread(self.consent.forget, self.project)
            if self.manager is not None:
                await self.manager.hold(names)
            return {"revoked": forgotten, "servers": self.info()}
        answer = None
        if names and self.manager is not None:
            if self._asking is not None and not self._asking.done():
                self._asking.cancel()
            if any(self.manager.states[n].status == "awaiting consent" for n in names):
                self._asking = asyncio.get_running_loop().create_task(self._ask_consent())
                answer = await self._asking
        return {"answer": answer, "servers": self.info()}

    async def start_client(self, servers: Sequence[ServerConfig]) -> None:
        """Start the servers an ACP client passed for its session, in the background
        (no consent: the user configured them in the client). One that fails to start
        is told once (`host.show`); it never fails the session. A name already here
        keeps the server already here."""
        if not servers:
            return
        await self.loaded()
        if self.manager is None:
            self.manager = self._new_manager([])
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
        await self.loaded()
        if self.manager is not None and self.manager.starting():
            names = ", ".join(self.manager.starting())
            log.info("First turn waits for MCP servers: %s", names)
            # (`seri/status` `mcp`: the model call's own status follows when it is sent)
            self.host.emit(Activity(session_id, "mcp", names))
            await self.manager.wait_started()
        self._fixed[session_id] = (
            agent_tools(self.manager, self.gate, session_id) if self.manager else []
        )

    def for_session(self, session_id: str) -> Sequence[McpAgentTool]:
        """The MCP tools the session was offered ([] before `prepare`)."""
        return self._fixed.get(session_id, [])

    def context_parts(self, session_id: str | None) -> list[dict[str, Any]]:
        """The MCP tool definitions sent with every request of the session, one part per
        server (`seri.session.context`): the session's fixed list, or for one that has
        not had its first task, what it would be offered now."""
        if self.manager is None:
            return []
        tools = self._fixed.get(session_id or "")
        if tools is None:
            tools = agent_tools(self.manager)
        chars: dict[str, int] = {}
        for tool in tools:
            size = len(json.dumps(tool.schema, ensure_ascii=False))
            chars[tool.server] = chars.get(tool.server, 0) + size
        return [
            {"kind": "mcpTools", "name": server, "tokens": tokens_for_chars(chars[server])}
            for server in sorted(chars)
        ]

    async def restart(self, name: str) -> None:
        await self.loaded()
        if self.manager is None or name not in self.manager.states:
            raise KeyError(name)
        if self.manager.states[name].status == "awaiting consent":
            return  # (never started before the user agreed)
        await self.manager.restart(name)

    async def close(self) -> None:
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
            with contextlib.suppress(BaseException):
                await self._loading
        if self._asking is not None and not self._asking.done():
            self._asking.cancel()  # (withdraws the question)
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
