"""The MCP servers of one language server: started in the background, their tools
listed, their tools called, restarted after a crash, stopped with the language server.

Each server runs in its own asyncio task, which holds the SDK's transport and session
open until the server is stopped or fails. Nothing here ever raises into a task: a
server that cannot start is `failed` with the reason (and its stderr's last lines), and
a call to a server that is not ready is answered with an error result.

The SDK (`mcp`) is imported only inside the tasks, when a server is started (it costs
about a second and 40 MB: docs/performance.md#the-mcp-sdk).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import os
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Literal

from seri_lsp.mcp.config import HttpServer, ServerConfig, StdioServer

if TYPE_CHECKING:  # (the SDK itself is imported only when a server starts)
    from mcp.client.session import MessageHandlerFnT

log = logging.getLogger(__name__)

Status = Literal["starting", "ready", "failed", "stopped", "awaiting consent"]
# What happened to a server that its users may need to know: it became ready, or it
# announced a changed tool list (and its tools were listed again).
Change = Literal["ready", "tools changed"]
# Restarts after a crash, per server and language-server session, before it is failed.
MAX_RESTARTS = 3
# How much of a server's stderr is kept for the reason it failed.
STDERR_LINES = 10
# How long a stopped server's task is given to end on its own: the SDK stops a stdio
# server in steps (its stdin closed, then TERM, then KILL, about 2 s each) that a cancel
# would cut short, leaving the server running and the task waiting on its output.
STOP_SECONDS = 10.0


@dataclass(frozen=True)
class McpTool:
    """One tool a server offers: its name there, its description and input schema."""

    server: str
    name: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True)
class CallOutcome:
    """A tool call's answer as text for the model; `is_error`: an error result."""

    text: str
    is_error: bool = False


@dataclass
class ServerState:
    """What is known of one server now (`seri.info`)."""

    config: ServerConfig
    status: Status = "starting"
    reason: str | None = None
    tools: tuple[McpTool, ...] = ()
    restarts: int = 0
    session: Any = None  # the SDK's ClientSession while ready
    task: asyncio.Task[None] | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)  # set: ready or failed
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    stderr: IO[str] | None = None
    deadline: float = 0.0  # (loop time) when a start still under way has failed
    starting: asyncio.Timeout | None = None  # the start's timeout, while it is under way

    def stderr_tail(self) -> str:
        if self.stderr is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self.stderr.flush()
            self.stderr.seek(0)
            lines = self.stderr.read().splitlines()[-STDERR_LINES:]
            self.stderr.seek(0, os.SEEK_END)
            return "\n".join(lines)
        return ""


class McpManager:
    """Starts, tracks, calls and stops the configured MCP servers."""

    def __init__(
        self,
        servers: Sequence[ServerConfig],
        *,
        startup_timeout: float = 15.0,
        tool_timeout: float = 120.0,
    ) -> None:
        self.startup_timeout = startup_timeout
        self.tool_timeout = tool_timeout
        self.states: dict[str, ServerState] = {s.name: ServerState(s) for s in servers}
        # Told of each server's changes (seri_lsp/mcp/servers.py tells the user).
        self.on_change: Callable[[ServerState, Change], None] | None = None
        self._relisting: set[asyncio.Task[None]] = set()

    # --- life cycle ----------------------------------------------------------------

    def start_all(self, held: frozenset[str] = frozenset()) -> None:
        """Start every server in the background (returns at once), but those `held`,
        which wait for the user's consent."""
        for state in self.states.values():
            if state.config.name in held:
                state.status = "awaiting consent"
            else:
                self._start(state)

    def _start(self, state: ServerState) -> None:
        state.status, state.reason, state.tools, state.session = "starting", None, (), None
        state.ready = asyncio.Event()
        state.stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        state.deadline = loop.time() + self.startup_timeout
        state.task = loop.create_task(self._run(state), name=f"mcp server {state.config.name}")

    def start_held(self, names: Sequence[str]) -> None:
        """Start those of `names` awaiting consent (the user agreed)."""
        for name in names:
            state = self.states[name]
            if state.status == "awaiting consent":
                self._start(state)

    async def hold(self, names: Sequence[str]) -> None:
        """Stop `names` until the user agrees again (consent revoked)."""
        for name in names:
            state = self.states[name]
            await self._stop(state)
            state.status, state.reason, state.tools = "awaiting consent", None, ()

    async def restart(self, name: str) -> None:
        """Stop the server `name` (if running) and start it again, its restarts forgiven."""
        state = self.states[name]
        await self._stop(state)
        state.restarts = 0
        self._start(state)

    async def wait_started(self, timeout: float | None = None) -> list[str]:
        """Wait until no server is starting (at most `timeout`, by default a little past
        the last one's deadline, so that it has failed by then); the names of those
        still starting after it."""
        loop = asyncio.get_running_loop()
        end = None if timeout is None else loop.time() + timeout
        while starting := [s for s in self.states.values() if s.status == "starting"]:
            # (a deadline moves once the SDK is imported: see `_run`)
            limit = self._until_last_deadline() + 1
            if end is not None:
                limit = min(limit, end - loop.time())
            if limit <= 0:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*(s.ready.wait() for s in starting)), limit)
            if end is None and self._until_last_deadline() <= 0:
                break
        return [s.config.name for s in self.states.values() if s.status == "starting"]

    def _until_last_deadline(self) -> float:
        now = asyncio.get_running_loop().time()
        starting = [s.deadline for s in self.states.values() if s.status == "starting"]
        return max([0.0, *(deadline - now for deadline in starting)])

    def starting(self) -> list[str]:
        """The servers still starting (what a first turn waits for)."""
        return [s.config.name for s in self.states.values() if s.status == "starting"]

    async def stop_all(self) -> None:
        await asyncio.gather(*(self._stop(state) for state in self.states.values()))

    async def _stop(self, state: ServerState) -> None:
        """Stop one server and wait, a bounded time, for its task to end: a start under
        way ends at once (its timeout moved to now), and the SDK then stops the server
        in its own steps, which are waited for rather than cancelled."""
        task = state.task
        state.stop.set()
        if state.starting is not None:
            with contextlib.suppress(RuntimeError):  # (it has just expired)
                state.starting.reschedule(asyncio.get_running_loop().time())
        if task is not None and not task.done():
            await asyncio.wait([task], timeout=STOP_SECONDS)
            if not task.done():
                task.cancel()
                await asyncio.wait([task], timeout=1)
            if not task.done():  # (its process ends with ours: orphan_guard.py)
                log.warning("MCP server %s did not stop in time", state.config.name)
        if state.status in ("starting", "ready"):
            state.status = "stopped"
        state.session = None

    async def _run(self, state: ServerState) -> None:
        """Hold one server open: connect, hand-shake, list its tools, then wait to be
        stopped. Any failure marks it failed with the reason."""
        try:
            async with contextlib.AsyncExitStack() as stack:
                # The SDK, only now and off the event loop (module docstring); the
                # server's own start-up timeout counts from when it is imported (a
                # loaded machine takes seconds over it, which are not the server's).
                await asyncio.to_thread(importlib.import_module, "mcp")
                from mcp import ClientSession

                loop = asyncio.get_running_loop()
                state.deadline = loop.time() + self.startup_timeout
                if state.stop.is_set():
                    return  # (stopped while the SDK was imported)
                try:
                    # Spawning or connecting, then the handshake.
                    async with asyncio.timeout_at(state.deadline) as state.starting:
                        read, write = await self._connect(state, stack)
                        session = await stack.enter_async_context(
                            ClientSession(read, write, message_handler=self._messages(state))
                        )
                        await self._handshake(state, session)
                except TimeoutError:
                    if not state.stop.is_set():
                        self._fail(
                            state,
                            f"did not finish its handshake within {self.startup_timeout:g} s",
                        )
                    return
                finally:
                    state.starting = None
                state.session = session
                state.status = "ready"
                state.ready.set()
                self._changed(state, "ready")
                await state.stop.wait()
        except asyncio.CancelledError:
            raise
        except BaseException as error:  # (the SDK raises exception groups from anyio)
            self._fail(state, _describe(error))
        finally:
            state.session = None
            state.ready.set()
            if state.stderr is not None:
                with contextlib.suppress(OSError):
                    state.stderr.close()

    async def _handshake(self, state: ServerState, session: Any) -> None:
        await session.initialize()
        await self._list_tools(state, session)

    def _messages(self, state: ServerState) -> MessageHandlerFnT:
        """The session's handler of what the server sends unasked: a changed tool list
        is listed again, in a task of its own (the handler must not wait on the
        session it is called from)."""

        async def handle(message: Any) -> None:
            from mcp import types

            if isinstance(message, types.ToolListChangedNotification):
                task = asyncio.get_running_loop().create_task(self._relist(state))
                self._relisting.add(task)
                task.add_done_callback(self._relisting.discard)

        return handle

    async def _relist(self, state: ServerState) -> None:
        session = state.session
        if state.status != "ready" or session is None:
            return
        try:
            await asyncio.wait_for(self._list_tools(state, session), self.tool_timeout)
        except asyncio.CancelledError:
            raise
        except BaseException as error:
            log.info(
                "MCP server %s: listing its changed tools failed: %s", state.config.name, error
            )
            return
        self._changed(state, "tools changed")

    def _changed(self, state: ServerState, change: Change) -> None:
        if self.on_change is not None:
            try:
                self.on_change(state, change)
            except Exception:
                log.exception("MCP server %s: telling of its change failed", state.config.name)

    async def _list_tools(self, state: ServerState, session: Any) -> None:
        """List the server's tools (every page) into `state.tools`, sorted."""
        tools: list[McpTool] = []
        cursor = None
        while True:
            from mcp.types import PaginatedRequestParams

            params = PaginatedRequestParams(cursor=cursor) if cursor else None
            listed = await session.list_tools(params=params)
            tools += [
                McpTool(
                    state.config.name,
                    tool.name,
                    tool.description or "",
                    dict(tool.input_schema or {"type": "object"}),
                )
                for tool in listed.tools
            ]
            cursor = listed.next_cursor
            if not cursor:
                break
        state.tools = tuple(sorted(tools, key=lambda tool: tool.name))

    async def _connect(self, state: ServerState, stack: contextlib.AsyncExitStack) -> Any:
        spec = state.config.spec
        if isinstance(spec, StdioServer):
            from mcp.client.stdio import StdioServerParameters, stdio_client

            # (closed when the server's task ends, in _run)
            state.stderr = tempfile.TemporaryFile(  # noqa: SIM115
                "w+", encoding="utf-8", errors="replace"
            )
            params = StdioServerParameters(
                command=sys.executable,
                # Through the guard, so that the server dies with us (orphan_guard.py).
                args=["-m", "seri_lsp.mcp.orphan_guard", spec.command, *spec.args],
                env=dict(spec.env) if spec.env else None,
                cwd=spec.cwd,
            )
            streams = await stack.enter_async_context(stdio_client(params, errlog=state.stderr))
        else:
            assert isinstance(spec, HttpServer)
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            client = await stack.enter_async_context(
                httpx2.AsyncClient(headers=dict(spec.headers or {}), timeout=30)
            )
            streams = await stack.enter_async_context(
                streamable_http_client(spec.url, http_client=client)
            )
        return streams[0], streams[1]

    def _fail(self, state: ServerState, reason: str) -> None:
        tail = state.stderr_tail()
        state.status = "failed"
        state.reason = reason + (f"; its stderr ended with:\n{tail}" if tail else "")
        state.session = None
        state.ready.set()
        log.info("MCP server %s failed: %s", state.config.name, state.reason)

    # --- calls ---------------------------------------------------------------------

    async def call(self, server: str, tool: str, arguments: Mapping[str, Any]) -> CallOutcome:
        """Call `tool` of `server`; never raises (but is cancellable: the SDK then sends
        the server `notifications/cancelled`)."""
        state = self.states.get(server)
        if state is None:
            return CallOutcome(f"There is no MCP server {server!r}.", True)
        session = state.session
        if state.status != "ready" or session is None:
            why = f" ({state.reason})" if state.reason else ""
            return CallOutcome(
                f"MCP server {server!r} is not available: it is {state.status}{why}.", True
            )
        try:
            result = await asyncio.wait_for(
                session.call_tool(tool, dict(arguments)), self.tool_timeout
            )
        except TimeoutError:
            return CallOutcome(
                f"The MCP tool {tool} of {server!r} did not answer within "
                f"{self.tool_timeout:g} s (mcp.toolTimeout); the call was cancelled.",
                True,
            )
        except asyncio.CancelledError:
            raise
        except BaseException as error:
            if not _connection_lost(error):
                return CallOutcome(
                    f"The MCP tool {tool} of {server!r} failed: {_describe(error)}", True
                )
            now = await self._crashed(state)
            return CallOutcome(
                f"The MCP server {server!r} failed during the call to {tool}: "
                f"{_describe(error)}. "
                + (
                    "It is being started again."
                    if now == "starting"
                    else f"It is {now}: {state.reason}"
                ),
                True,
            )
        return CallOutcome(result_text(result), bool(result.is_error))

    async def _crashed(self, state: ServerState) -> Status:
        """After a call lost the connection: close what is left of it and start the
        server again, or mark it failed after MAX_RESTARTS restarts."""
        tail = state.stderr_tail()
        await self._stop(state)
        if state.restarts >= MAX_RESTARTS:
            state.stderr = None
            self._fail(state, f"crashed {MAX_RESTARTS + 1} times; not started again")
            if tail:
                state.reason = f"{state.reason}; its stderr ended with:\n{tail}"
            return state.status
        state.restarts += 1
        self._start(state)
        return state.status


def result_text(result: Any) -> str:
    """A CallToolResult as text: text content as is, anything else described by its type
    and size (never dropped silently)."""
    parts: list[str] = []
    for item in result.content:
        kind = getattr(item, "type", "unknown")
        if kind == "text":
            parts.append(item.text)
        elif kind in ("image", "audio"):
            size = len(item.data) * 3 // 4 - item.data[-2:].count("=")
            parts.append(f"[{kind} content: {item.mime_type}, {size:,} bytes, not shown]")
        elif kind == "resource":
            resource = item.resource
            text = getattr(resource, "text", None)
            if text is not None:
                parts.append(f"[resource {resource.uri}]\n{text}")
            else:
                size = len(getattr(resource, "blob", "") or "") * 3 // 4
                parts.append(f"[resource {resource.uri}: {size:,} bytes of binary, not shown]")
        elif kind == "resource_link":
            parts.append(f"[resource link {item.uri}]")
        else:
            parts.append(f"[{kind} content, not shown]")
    if not parts and getattr(result, "structured_content", None) is not None:
        import json

        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def _connection_lost(error: BaseException) -> bool:
    """Whether a call's exception means the server is gone (not a JSON-RPC error)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    from mcp.shared.exceptions import MCPError
    from mcp.types import CONNECTION_CLOSED

    if isinstance(error, MCPError):
        return error.code == CONNECTION_CLOSED
    return True


def _describe(error: BaseException) -> str:
    """An exception (or anyio's exception group) in a phrase."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error) or type(error).__name__
    return f"{type(error).__name__}: {text}" if str(error) else text
