"""The ACP agent: the protocol's requests as engine calls.

One connection (one editor) may hold several ACP sessions, one per `session/new`,
`session/load`, `session/resume` or `session/fork`, each with its own `cwd`. Each ACP
session is served by an engine of its own: its project and workspace folder are the
session's `cwd`, it holds the lock of the seri session it has open (so no other seri
process, LSP or ACP, can open that session meanwhile), and it runs its tasks
independently of the others.
All the engines share the profile root, `seri.db` and the settings.

An ACP session's id is the id of the seri session it was created with or loaded as
(the id or prefix the client gave). `/clear` (and `/resume`, `/continue`) switch the seri
session behind it; the ACP id stays, and the note in the transcript names the new seri
session. `session/load` (or `session/resume`) of a seri session open here behind another
ACP id moves that engine to the id the client now names, and loading the session a
`/clear` left moves the engine that left it to its new session's id first: each seri
session is served once, under the id the client last opened it by. `session/fork` opens
a new ACP session on a fork of the seri session another one shows (the fork's id); `/fork`
typed in a session switches it to the fork, as `/clear` does to a new session.

Settings come from the profile's `config.json` and the environment, as for the language
server; ACP has no initialization options, but settings given in `initialize`'s
`_meta.seri` (the same shape as `config.json`) win over `config.json`, and
`_meta.seri.profileRoot` picks the profile root after `--profile-root`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    FileSystemCapabilities,
    ForkSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionForkCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionResponse,
    StopReason,
)

from seri_lsp import __version__
from seri_lsp.acp.commands import available_commands, command_note
from seri_lsp.acp.errors import acp_errors
from seri_lsp.acp.host import AcpHost
from seri_lsp.acp.mcp import client_servers
from seri_lsp.acp.outbox import Outbox
from seri_lsp.acp.prompt import ContentBlock, prompt_text
from seri_lsp.engine import Engine, PromptOutcome
from seri_lsp.errors import Busy, InvalidArgument
from seri_lsp.host import Host, Level
from seri_lsp.limits import (
    MAX_MESSAGE_ID,
    MAX_PROMPT_CHARS,
    check_session_id,
    check_text,
    check_whole_number,
)
from seri_lsp.lsp.wire import to_wire
from seri_lsp.profile import resolve_profile_root
from seri_lsp.settings import Settings, load_settings
from seri_lsp.slash import SlashAnswer
from seri_lsp.store.sessions import Session

logger = logging.getLogger(__name__)

# How a task's status reads as an ACP stop reason. A failed task (the provider failed,
# the store was busy, an internal error) ends with `refusal`: the turn cannot go on; the
# reason is shown in the transcript and sent in `_meta.seri.error`.
STOP_REASONS: dict[str, StopReason] = {
    "done": "end_turn",
    "max_turns": "max_turn_requests",
    "cancelled": "cancelled",
    "interrupted": "cancelled",  # the agent stopped while the task ran
    "failed": "refusal",
}
SESSIONS_PAGE = 100
# The longest cwd taken (PATH_MAX on Linux).
MAX_CWD_CHARS = 4096
# How long a task may take to wind down when the client goes away in the middle of it.
CANCEL_GRACE = 10.0
# The session config option that chooses the model, and how long session/new waits for
# the provider's model list to offer its choices.
MODEL_OPTION = "model"
MODEL_LIST_WAIT = 5.0


@dataclass(frozen=True)
class AgentOptions:
    """What the command line said about the agent."""

    profile_root: str | None = None
    max_turns: int | None = None


@dataclass
class AcpSession:
    """One ACP session: the engine that serves it, and its host."""

    id: str
    project: Path
    engine: Engine
    host: AcpHost
    task: asyncio.Future[PromptOutcome | SlashAnswer] | None = None
    # How many session/cancel came; a prompt is cancelled by one that came after it.
    cancels: int = 0
    # The cancel count as each prompt not yet handled arrived, in the order they came.
    arrivals: deque[int] = field(default_factory=deque)
    # Done once the last prompt queued so far has ended (prompts run one at a time, in
    # order): the next prompt waits for it.
    tail: asyncio.Future[None] | None = None


class _Notices(Host):
    """The host of the connection's catalogue engine: it keeps what it would tell the user."""

    def __init__(self) -> None:
        self.shown: list[str] = []

    def log(self, level: Level, message: str) -> None:
        logger.log(logging.WARNING if level in ("error", "warning") else logging.INFO, message)

    def show(self, level: Level, message: str) -> None:
        self.log(level, message)
        self.shown.append(message)


async def project_folder(cwd: object) -> Path:
    """A session's `cwd` as its project: canonical, absolute, an existing folder.

    Following its links reads the disk, so that is done on a thread."""
    if not isinstance(cwd, str) or not cwd.strip():
        raise InvalidArgument("cwd", "cwd is required: the project folder, as an absolute path.")
    check_text("cwd", cwd, MAX_CWD_CHARS)
    if "\x00" in cwd:
        raise InvalidArgument("cwd", f"cwd must not hold a NUL character, got {cwd!r}.")
    if not Path(cwd).is_absolute():
        raise InvalidArgument("cwd", f"cwd must be an absolute path, got {cwd!r}.")
    real, is_dir = await asyncio.to_thread(_real_folder, cwd)
    if not is_dir:
        raise InvalidArgument("cwd", f"cwd {cwd!r} is not a folder.")
    return real


def _real_folder(path: str) -> tuple[Path, bool]:
    real = Path(os.path.realpath(path))
    return real, real.is_dir()


class SeriAgent:
    """seri behind one ACP connection."""

    def __init__(self, options: AgentOptions) -> None:
        self.options = options
        self._client: Client | None = None
        self._outbox = Outbox()
        self._fs: FileSystemCapabilities | None = None
        self._sessions: dict[str, AcpSession] = {}
        self._profile_root: Path | None = None
        self._opening = asyncio.Lock()  # session/load and session/resume, one at a time
        self._settings = Settings()
        self._catalog: Engine | None = None
        self._problems: list[str] = []

    def on_connect(self, conn: Client) -> None:
        self._client = conn
        self._outbox.connect(conn)

    # --- initialization --------------------------------------------------------------

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self._fs = client_capabilities.fs if client_capabilities is not None else None
        meta = kwargs.get("seri")
        problems = []
        if meta is not None and not isinstance(meta, dict):
            problems.append("_meta.seri in initialize must be an object of settings; ignored.")
            meta = None
        with acp_errors():
            await self._configure(meta, problems)
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(
                    embedded_context=True, image=False, audio=False
                ),
                session_capabilities=SessionCapabilities(
                    fork=SessionForkCapabilities(),
                    list=SessionListCapabilities(),
                    resume=SessionResumeCapabilities(),
                    close=SessionCloseCapabilities(),
                ),
            ),
            auth_methods=[],
            agent_info=Implementation(name="seri-lsp", title="seri", version=__version__),
        )

    async def _configure(self, meta: dict[str, Any] | None, problems: list[str]) -> None:
        """Resolve the profile root and settings, open the store, import legacy sessions."""
        if self._catalog is not None:
            return  # settings hold for the connection
        root = resolve_profile_root(self.options.profile_root, (meta or {}).get("profileRoot"))
        settings, setting_problems = load_settings(root, meta)
        notices = _Notices()
        catalog = Engine.open(
            profile_root=root,
            settings=settings,
            project=os.path.realpath(os.getcwd()),
            workspace_roots=[],
            host=notices,
        )
        self._profile_root, self._settings, self._catalog = root, settings, catalog
        await catalog.import_legacy()
        self._problems = problems + setting_problems + notices.shown
        for problem in self._problems:
            logger.warning(problem)

    async def _ready(self) -> Engine:
        if self._catalog is None:  # a client that skipped initialize
            await self._configure(None, [])
        assert self._catalog is not None
        return self._catalog

    # --- sessions --------------------------------------------------------------------

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        with acp_errors():
            project = await project_folder(cwd)
            session = await self._open(
                project, lambda engine: engine.new_session(), mcp_servers=mcp_servers
            )
        self._greet(session)
        # The client learns the session id from this response; its updates follow it.
        # (Read first: the updates held till the answer must not go out while it waits.)
        options = await self._config_options(session)
        asyncio.get_running_loop().call_soon(session.host.release, session.id)
        return NewSessionResponse(session_id=session.id, config_options=options)

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[Any] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse:
        # One load or resume at a time: a second load of the same session waits for the
        # first to have it open, then replays it (instead of finding it "held").
        with acp_errors():
            async with self._opening:
                full_id = await self._full_id(session_id)
                session = self._showing(full_id)
                if session is None:
                    session = await self._open_as(session_id, full_id, cwd, mcp_servers)
                elif session.task is not None:
                    raise Busy(f"Session {session_id} is running a task; wait for it or cancel it.")
                else:
                    self._rekey(session, session_id)
                    session.host.hold()
                    session.host.transcript = session.host.transcript.restarted()
                # The conversation first (a compacted session's recap leads), then notes.
                early = session.host.take_held()
                view = await session.engine.session_view(None)
                assert isinstance(view.messages, list)  # not asked for encoded messages
                session.host.send(session.host.transcript.replay(view.messages))
                session.host.send(early)
                self._greet(session)
        session.host.release(session.id)
        await session.host.flush()
        return LoadSessionResponse(config_options=await self._config_options(session))

    async def resume_session(
        self,
        cwd: str,
        session_id: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> ResumeSessionResponse:
        with acp_errors():
            async with self._opening:
                full_id = await self._full_id(session_id)
                session = self._showing(full_id)
                if session is None:
                    session = await self._open_as(session_id, full_id, cwd, mcp_servers)
                    self._greet(session)
                    asyncio.get_running_loop().call_soon(session.host.release, session.id)
                else:
                    self._rekey(session, session_id)
        return ResumeSessionResponse()

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[Any] | None = None,
        **kwargs: Any,
    ) -> ForkSessionResponse:
        """A new ACP session on a fork of `session_id`: the seri session an ACP session of
        this connection shows (after a /clear there, the one it moved to), else the seri
        session of that id or prefix, copied to its last message (`_meta.seri.messageId`:
        to that one). The client sends its next prompts to the new id; the source goes on
        as it was."""
        with acp_errors():
            meta = kwargs.get("seri")
            message_id = meta.get("messageId") if isinstance(meta, dict) else None
            if message_id is not None:
                message_id = check_whole_number(
                    "_meta.seri.messageId", message_id, 1, MAX_MESSAGE_ID
                )
            async with self._opening:
                here = self._sessions.get(session_id)
                shown = here.host.transcript.root if here is not None else None
                source = shown or await self._full_id(session_id)
                project = await project_folder(cwd)
                forked: dict[str, Any] = {}

                async def fork(engine: Engine) -> Session:
                    forked.update(await engine.fork_session(source, message_id))
                    return forked["session"]

                session = await self._open(project, fork, mcp_servers=mcp_servers)
        self._greet(session)
        asyncio.get_running_loop().call_soon(session.host.release, session.id)
        return ForkSessionResponse(
            session_id=session.id,
            field_meta={"seri": {"parentId": source, "forkedAt": forked["forkedAt"]}},
        )

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        with acp_errors():
            catalog = await self._ready()
            project = str(await project_folder(cwd)) if cwd is not None else None
            offset = _offset(cursor)
            # Only sessions with a message: a client's picker (CodeCompanion's /resume)
            # shows each by its title, which an empty session has not got yet.
            page, more = await catalog.sessions_page(
                project, offset, SESSIONS_PAGE, with_messages=True
            )
        return ListSessionsResponse(
            sessions=[
                SessionInfo(
                    session_id=s.id,
                    cwd=s.project,
                    title=s.title or f"Untitled session of {s.created_at[:16]}",
                    updated_at=s.updated_at,
                    field_meta={
                        "seri": {
                            "createdAt": s.created_at,
                            "messageCount": s.message_count,
                            "parentId": s.parent_id,
                            "spend": to_wire(s.spend),
                        }
                    },
                )
                for s in page
            ],
            next_cursor=str(offset + SESSIONS_PAGE) if more else None,
        )

    # --- the model, a session config option (`seri.session.model`) -------------------------

    async def _config_options(self, session: AcpSession) -> list[Any] | None:
        """The session's config options: the model (`category: "model"`), its choices the
        provider's models. None when the list cannot be read in time or prompts are
        refused (a wrong provider setting): then `/model NAME` still takes an id."""
        try:
            listed = await asyncio.wait_for(session.engine.models(), MODEL_LIST_WAIT)
        except Exception:  # (a provider that is wrong or slow: no option, no failure)
            logger.info("no model list for the model option", exc_info=True)
            return None
        choices = [
            SessionConfigSelectOption(
                value=entry.id,
                name=entry.id,
                description=(
                    f"{entry.context_window:,} tokens of context" if entry.context_window else None
                ),
            )
            for entry in listed.models
        ]
        if listed.current not in {entry.id for entry in listed.models}:
            choices.insert(0, SessionConfigSelectOption(value=listed.current, name=listed.current))
        return [
            SessionConfigOptionSelect(
                id=MODEL_OPTION,
                name="Model",
                description="The model of this session from its next turn",
                category="model",
                current_value=listed.current,
                options=choices,
                type="select",
            )
        ]

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse | None:
        """`session/set_config_option`: the model (as `seri.session.model` of the seri
        session the ACP session shows) is the one option."""
        with acp_errors():
            session = self._session(session_id)
            if config_id != MODEL_OPTION:
                raise InvalidArgument(
                    "configId", f"No config option {config_id!r}; there is model."
                )
            if not isinstance(value, str):
                raise InvalidArgument("value", "The model option takes a model id.")
            await session.engine.set_session_model(None, value)
            options = await self._config_options(session)
        return SetSessionConfigOptionResponse(config_options=options or [])

    async def close_session(self, session_id: str, **kwargs: Any) -> None:
        with acp_errors():
            session = self._session(session_id)
            del self._sessions[session_id]
            await self._shut(session)

    # --- prompts -----------------------------------------------------------------------

    async def prompt(
        self, prompt: list[ContentBlock], session_id: str, **kwargs: Any
    ) -> PromptResponse:
        """Run a prompt; one sent while another runs in the session waits for it (and
        those before it), in the order they came. A session/cancel ends the running
        prompt and every one waiting."""
        with acp_errors():
            session = self._session(session_id)
            # `received` noted the cancel count when this request arrived: a session/cancel
            # sent after it counts, even one handled before this handler runs.
            mark = session.arrivals.popleft() if session.arrivals else session.cancels
            previous, mine = session.tail, asyncio.get_running_loop().create_future()
            session.tail = mine
            try:
                response = await self._prompt_in_turn(session, prompt, mark, previous)
            finally:
                # One refused early (an empty prompt) still ends after those before it.
                if previous is None or previous.done():
                    mine.set_result(None)
                else:
                    previous.add_done_callback(lambda _: mine.set_result(None))
        return response

    async def _prompt_in_turn(
        self,
        session: AcpSession,
        prompt: list[ContentBlock],
        mark: int,
        previous: asyncio.Future[None] | None,
    ) -> PromptResponse:
        # Resource links are shown relative to the project: their links are followed
        # (the disk is read) on a thread.
        text = await asyncio.to_thread(prompt_text, prompt, session.project)
        text = check_text("prompt", text, MAX_PROMPT_CHARS)
        if not text:
            raise InvalidArgument("prompt", "The prompt is empty; say what to do.")
        if previous is not None:
            await asyncio.shield(previous)  # the prompts before this one have ended
        session = self._session(session.id)  # still open after the wait
        if session.cancels != mark:
            return PromptResponse(stop_reason="cancelled")
        session.host.shown.clear()
        task = asyncio.ensure_future(session.engine.prompt(text))
        session.task = task
        try:
            # Shielded: if the client goes away mid-task, the task still ends in order.
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            session.engine.cancel()
            await asyncio.wait({task}, timeout=CANCEL_GRACE)
            raise
        finally:
            session.task = None
        if isinstance(result, SlashAnswer):
            note = command_note(result)
            if note and note not in session.host.shown:  # not said twice
                session.host.note(note, "command")
        stop: StopReason = (
            "cancelled" if session.cancels != mark else STOP_REASONS.get(result.status, "end_turn")
        )
        await session.host.flush()
        outcome: dict[str, Any] = {"status": result.status}
        if isinstance(result, SlashAnswer):
            outcome["command"] = result.command
        else:
            outcome["turns"] = result.turns
            if result.error:
                outcome["error"] = result.error
        return PromptResponse(stop_reason=stop, field_meta={"seri": outcome})

    def received(self, message: dict[str, Any]) -> None:
        """A message from the client, as it arrives, before it is dispatched (in order:
        requests run concurrently once dispatched). A prompt's cancel count is noted here,
        so a session/cancel sent after it cancels it however the two handlers interleave."""
        if message.get("method") != "session/prompt":
            return
        params = message.get("params")
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        session = self._sessions.get(session_id) if isinstance(session_id, str) else None
        if session is not None:
            session.arrivals.append(session.cancels)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        session = self._sessions.get(session_id)
        if session is None:
            logger.info("session/cancel for unknown session %s ignored", session_id)
            return
        session.cancels += 1
        if not session.engine.cancel() and session.task is not None:
            # The prompt's task is still starting (its session opening): it is cancelled
            # as soon as it runs.
            await _cancel_once_running(session, session.task)

    # --- the connection ends -------------------------------------------------------------

    async def close(self) -> None:
        """Stop every task and let every session go (the client has gone)."""
        sessions, self._sessions = list(self._sessions.values()), {}
        for session in sessions:
            await self._shut(session)
        if self._catalog is not None:
            await self._catalog.close()
        await self._outbox.close()

    # --- helpers ---------------------------------------------------------------------------

    def _session(self, session_id: str) -> AcpSession:
        session = self._sessions.get(session_id)
        if session is None:
            raise InvalidArgument(
                "sessionId",
                f"Unknown session id {session_id!r}: this connection has no such session; "
                "create one with session/new or open one with session/load.",
            )
        return session

    async def _open(
        self,
        project: Path,
        opener: Callable[[Engine], Awaitable[Session | None]],
        session_id: str | None = None,
        mcp_servers: list[Any] | None = None,
    ) -> AcpSession:
        """A new engine for `project`, opened on a seri session by `opener`, with the
        MCP servers the client passed started for it (in the background)."""
        await self._ready()
        assert self._client is not None and self._profile_root is not None
        host = AcpHost(self._client, self._outbox, self._fs)
        engine = Engine.open(
            profile_root=self._profile_root,
            settings=self._settings,
            project=str(project),
            workspace_roots=[project],
            host=host,
            max_turns_flag=self.options.max_turns,
        )
        host.attach(engine.workspace)
        try:
            opened = await opener(engine)
            assert opened is not None
            session = AcpSession(session_id or opened.id, project, engine, host)
            self._make_room(session.id)  # once the session is open, not before it failed
        except BaseException:
            await engine.close()
            raise
        self._sessions[session.id] = session
        servers, problems = client_servers(mcp_servers)
        for problem in problems:
            host.show("warning", problem)
        await engine.mcp.start_client(servers)
        return session

    async def _full_id(self, requested: str) -> str:
        """The id of the seri session `requested` names (its id or a unique prefix)."""
        check_session_id("sessionId", requested)
        catalog = await self._ready()
        info = await catalog.io(catalog.store.resolve, requested)
        return info.id

    def _showing(self, full_id: str) -> AcpSession | None:
        """The ACP session of this connection whose engine has seri session `full_id` open
        (under its own id, or another one after a /clear or /resume there)."""
        for session in self._sessions.values():
            if session.host.transcript.root == full_id:
                return session
        return None

    async def _open_as(
        self, acp_id: str, full_id: str, cwd: str, mcp_servers: list[Any] | None = None
    ) -> AcpSession:
        """A new engine on seri session `full_id`, as ACP session `acp_id` (the id the
        client asked for, by which it goes on naming the session)."""
        project = await project_folder(cwd)
        return await self._open(
            project, lambda engine: engine.resume_session(full_id), acp_id, mcp_servers
        )

    def _rekey(self, session: AcpSession, acp_id: str) -> None:
        """Serve `session` as ACP session `acp_id` from now on.

        The client opens what `session/list` offers by the seri id; after a /clear the
        engine that has it open is still known by the ACP id it started with, so it moves
        to the id the client now uses (its updates follow).
        """
        if session.id == acp_id:
            return
        if session.task is not None:
            raise Busy(f"Session {session.id} is running a task; wait for it or cancel it.")
        self._make_room(acp_id)
        del self._sessions[session.id]
        session.id = acp_id
        if session.host.session_id is not None:
            session.host.session_id = acp_id
        self._sessions[acp_id] = session

    def _make_room(self, acp_id: str) -> None:
        """Free the ACP id `acp_id`: an ACP session known by it that shows another seri
        session (after a /clear there) moves to that session's own id."""
        occupant = self._sessions.get(acp_id)
        if occupant is None:
            return
        shown = occupant.host.transcript.root
        assert shown is not None and shown != acp_id
        self._rekey(occupant, shown)

    def _greet(self, session: AcpSession) -> None:
        """The slash commands, and the first session's notice of settings problems."""
        session.host.send([available_commands()])
        problems, self._problems = self._problems, []
        for problem in problems:
            session.host.note(problem, "warning")

    async def _shut(self, session: AcpSession) -> None:
        if session.task is not None:
            session.engine.cancel()
            with contextlib.suppress(Exception):
                await asyncio.wait({session.task}, timeout=CANCEL_GRACE)
        await session.engine.close()


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    # Only what `nextCursor` gives: ASCII digits, small enough for SQLite's OFFSET.
    if not (cursor.isascii() and cursor.isdigit() and len(cursor) <= 18):
        raise InvalidArgument("cursor", f"Unknown cursor {cursor!r}; pass a nextCursor as given.")
    return int(cursor)


async def _cancel_once_running(session: AcpSession, task: asyncio.Future[Any]) -> None:
    """Cancel the engine's task as soon as it has started, unless it ended first."""
    while not task.done():
        if session.engine.cancel():
            return
        await asyncio.sleep(0.01)
