"""Driving `seri-lsp acp` as an ACP editor would: the client side of agent-client-protocol.

`start_acp` starts the real agent process (`python -m seri_lsp acp`), forked from the
test worker's warm process (tests/warm_server.py; `acp.spawn_agent_process` with
`SERI_TEST_FORK=0`), and initializes it. The test `EditorClient` records every
`session/update`, answers `session/request_permission` from a queue of option kinds,
and serves `fs/read_text_file` / `fs/write_text_file` from editor buffers of its own:
a write lands in the buffer (as an editor keeps it, undo included), not on disk, so a
test can tell a write through the editor from a write to the disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    RequestError,
    connect_to_agent,
    spawn_agent_process,
)
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    Implementation,
    InitializeResponse,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TextContentBlock,
    WriteTextFileResponse,
)
from acp.transports import default_environment

from tests.harness import server_env
from tests.warm_server import warm_servers

HOLD = "hold"  # a permission answer that never comes (the user walked away)
TIMEOUT = 20.0


def write_config(profile_root: Path, settings: dict[str, Any]) -> None:
    """The profile's config.json, as a user of an ACP editor sets seri up."""
    profile_root.mkdir(parents=True, exist_ok=True)
    (profile_root / "config.json").write_text(json.dumps(settings), encoding="utf-8")


@dataclass
class PermissionAsked:
    session_id: str
    tool_call: Any
    options: list[Any]


@dataclass
class EditorClient:
    """The editor's side of the connection."""

    fs: bool = True
    updates: list[tuple[str, Any]] = field(default_factory=list)
    answers: deque[str] = field(default_factory=deque)
    questions: list[PermissionAsked] = field(default_factory=list)
    buffers: dict[str, str] = field(default_factory=dict)  # path -> the editor's text
    reads: list[str] = field(default_factory=list)
    writes: list[tuple[str, str]] = field(default_factory=list)
    refuse_writes: bool = False  # the editor answers fs/write_text_file with an error
    wire: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # both ways, in order

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append((session_id, update))

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.questions.append(PermissionAsked(session_id, tool_call, options))
        answer = self.answers.popleft() if self.answers else "cancelled"
        if answer == HOLD:
            await asyncio.Event().wait()
        if answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        option = next(o for o in options if o.kind == answer)
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option.option_id)
        )

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        self.reads.append(path)
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        try:
            return ReadTextFileResponse(content=Path(path).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RequestError(-32002, "Resource not found", {"uri": path}) from None

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self.writes.append((path, content))
        if self.refuse_writes:
            raise RequestError(-32603, "the buffer is read-only")
        self.buffers[path] = content
        return WriteTextFileResponse()

    # --- reading the transcript ------------------------------------------------------

    def of(self, session_id: str, kind: str | None = None) -> list[Any]:
        """The updates of one session (of one `sessionUpdate` kind), in order."""
        return [
            update
            for sid, update in self.updates
            if sid == session_id and (kind is None or update.session_update == kind)
        ]

    def text(self, session_id: str, kind: str = "agent_message_chunk") -> str:
        """The text of a session's message (or thought) chunks, joined."""
        return "".join(u.content.text for u in self.of(session_id, kind))

    def prompts(self, session_id: str) -> list[str]:
        """The text of each user message chunk (a replay's prompts), in order."""
        return [u.content.text for u in self.of(session_id, "user_message_chunk")]

    def notes(self, session_id: str, kind: str | None = None) -> list[str]:
        """The notes seri put in the transcript (of one `_meta.seri.kind`)."""
        found = []
        for update in self.of(session_id, "agent_message_chunk"):
            meta = (update.field_meta or {}).get("seri") or {}
            if "kind" in meta and (kind is None or meta["kind"] == kind):
                found.append(update.content.text)
        return found

    def tool_updates(self, session_id: str, tool_call_id: str) -> list[Any]:
        """The `tool_call` and `tool_call_update`s of one tool call, in order."""
        return [
            u
            for u in self.of(session_id)
            if u.session_update in ("tool_call", "tool_call_update")
            and u.tool_call_id == tool_call_id
        ]

    def received(self, event: Any) -> None:
        """Stream observer: keep every message, sent or received, in order."""
        self.wire.append((event.direction.value, event.message))

    def answer_and_updates(self, method: str) -> tuple[int, list[int]]:
        """Where on the wire the agent answered the last `method` request, and where its
        session updates came."""
        asked = [m["id"] for d, m in self.wire if d == "outgoing" and m.get("method") == method]
        answer = next(
            i
            for i, (d, m) in enumerate(self.wire)
            if d == "incoming" and "method" not in m and m.get("id") == asked[-1]
        )
        updates = [
            i
            for i, (d, m) in enumerate(self.wire)
            if d == "incoming" and m.get("method") == "session/update"
        ]
        return answer, updates

    def forget(self) -> None:
        """Drop what was recorded so far."""
        self.updates.clear()
        self.questions.clear()


@dataclass
class Agent:
    """A running `seri-lsp acp` process and the connection to it."""

    conn: Any
    process: Any
    client: EditorClient
    workspace: Path
    info: InitializeResponse | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    async def new(self, cwd: Path | None = None, **meta: Any) -> str:
        response = await within(self.conn.new_session(cwd=str(cwd or self.workspace), **meta))
        return response.session_id

    async def prompt(self, session_id: str, *blocks: Any) -> Any:
        content = [
            TextContentBlock(type="text", text=b) if isinstance(b, str) else b for b in blocks
        ]
        return await within(self.conn.prompt(session_id=session_id, prompt=content))

    async def load(self, session_id: str, cwd: Path | None = None) -> Any:
        return await within(
            self.conn.load_session(cwd=str(cwd or self.workspace), session_id=session_id)
        )

    async def request(self, method: str, params: Any) -> Any:
        """A raw JSON-RPC request, for params no typed call would send."""
        return await within(self.conn._conn.send_request(method, params))


async def within(awaitable: Any, timeout: float = TIMEOUT) -> Any:
    return await asyncio.wait_for(awaitable, timeout)


async def until(predicate: Callable[[], Any], timeout: float = TIMEOUT) -> Any:
    """Poll until `predicate()` is truthy; returns its value."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (value := predicate()):
        if loop.time() > deadline:
            raise TimeoutError("condition not met in time")
        await asyncio.sleep(0.02)
    return value


@contextlib.asynccontextmanager
async def agent_process(
    client: EditorClient, args: list[str], env: dict[str, str], cwd: Path
) -> AsyncIterator[tuple[ClientSideConnection, Any]]:
    """`python -m seri_lsp ARGS` as `acp.spawn_agent_process` starts an agent (its
    environment on top of the SDK's defaults, its log on the test's stderr), and its
    connection; ended as the SDK ends one: end of input, then SIGTERM, then SIGKILL."""
    warm = warm_servers()
    if warm is None:
        async with spawn_agent_process(
            client,
            sys.executable,
            "-m",
            "seri_lsp",
            *args,
            env=env,
            cwd=cwd,
            transport_kwargs={"stderr": None},  # the agent's log goes to the test's output
            observers=[client.received],
        ) as started:
            yield started
        return
    process = await warm.spawn(args, {**default_environment(), **env}, cwd=cwd, stderr=False)
    conn = connect_to_agent(client, process.stdin, process.stdout, observers=[client.received])
    try:
        yield conn, process
    finally:
        await conn.close()
        with contextlib.suppress(Exception):
            process.stdin.close()
        for stop in (None, process.terminate, process.kill):
            if stop is not None and process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    stop()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 2.0)
                break


@contextlib.asynccontextmanager
async def start_acp(
    profile_root: Path,
    workspace: Path,
    *,
    fs: bool = True,
    args: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    meta: dict[str, Any] | None = None,
    initialize: bool = True,
) -> AsyncIterator[Agent]:
    """`python -m seri_lsp acp` with a temporary profile, initialized as an editor would."""
    client = EditorClient(fs=fs)
    command = ["acp", "--profile-root", str(profile_root), *args]
    async with agent_process(client, command, server_env(env), workspace) as (conn, process):
        agent = Agent(conn, process, client, workspace)
        if initialize:
            capabilities = ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs)
            )
            extra = {"seri": meta} if meta is not None else {}
            agent.info = await within(
                conn.initialize(
                    protocol_version=PROTOCOL_VERSION,
                    client_capabilities=capabilities,
                    client_info=Implementation(name="seri-tests", version="1"),
                    **extra,
                )
            )
        yield agent
