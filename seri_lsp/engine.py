"""The engine: the one object the faces (language server, command line) call.

It wires the parts together and delegates: which session is open to the
`SessionManager` (`context/`), running prompts and compactions to `Tasks` (`agent/`),
the durable record to the store (`store/`). Faces receive its events through their
`Host`. The engine knows nothing of LSP. Database work runs on one worker thread, so the
event loop that serves the editor never waits on the disk.

The agent (tools, compaction, the provider and its HTTP client) is imported and built at
the first task, not when the engine opens: a server that is started, lists sessions or
shows one and is closed again never loads it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from seri_lsp import __version__
from seri_lsp.agent.workspace import PathDenied, Workspace
from seri_lsp.context.attachments import Attachment, with_attachments
from seri_lsp.context.compaction import keep_note
from seri_lsp.context.session_manager import Deleted, SessionManager, SessionView
from seri_lsp.errors import InvalidArgument, SeriError, SettingsBlocked
from seri_lsp.host import Host
from seri_lsp.limits import (
    DEFAULT_SEARCH_LIMIT,
    EXPORT_FORMATS,
    MAX_MESSAGE_ID,
    MAX_PAGE_LIMIT,
    MAX_PROMPT_CHARS,
    MAX_SEARCH_LIMIT,
    MAX_SEARCH_OFFSET,
    MAX_TURNS,
    check_session_id,
    check_text,
    check_title,
    check_whole_number,
    parse_whole_number,
    shorten,
)
from seri_lsp.model_choice import ModelChoice, ModelList
from seri_lsp.profile import DB_NAME, ensure_profile_root
from seri_lsp.settings import ProviderSettings, Settings
from seri_lsp.slash import SlashAnswer, SlashCommand, SlashHandlers, parse_slash, usage
from seri_lsp.store import search
from seri_lsp.store.database import Database, StoreError
from seri_lsp.store.legacy import ImportReport, find_pending, import_files
from seri_lsp.store.locks import SessionLocks
from seri_lsp.store.sessions import Session, SessionInfo, SessionStore
from seri_lsp.store.trajectories import Trajectory, TrajectoryStore
from seri_lsp.store.worker import Worker
from seri_lsp.trajectory.recording import Recordings, public_url

if TYPE_CHECKING:
    from seri_lsp.agent.checkpoints import CheckpointKeeper
    from seri_lsp.agent.code_merge import CodeMerge
    from seri_lsp.agent.provider import Provider
    from seri_lsp.agent.rewind import Checkpoints, Rewinder
    from seri_lsp.agent.tasks import Tasks
    from seri_lsp.context.compaction import CompactionResult
    from seri_lsp.export.bundle import Exported, Imported
    from seri_lsp.mcp.servers import McpServers
    from seri_lsp.store.checkpoints import CheckpointStore


@dataclass(frozen=True)
class PromptOutcome:
    """How a prompt's task ended, as `seri.prompt` answers it: `status` is "done",
    "failed", "cancelled" or "max_turns"; `error` says why it did not finish."""

    status: str
    turns: int
    error: str | None
    session_id: str


class Engine:
    """One profile, one project, at most one open session and one running task."""

    def __init__(
        self,
        *,
        profile_root: Path,
        settings: Settings,
        project: str,
        workspace_roots: list[Path],
        host: Host,
        db: Database,
        max_turns_flag: int | None = None,
    ) -> None:
        self.profile_root = profile_root
        self.settings = settings
        self.project = project
        self.host = host
        self.db = db
        self.io = Worker()
        self.store = SessionStore(db)
        self.workspace = Workspace(workspace_roots)
        self._roots_changing = asyncio.Lock()
        self._provider: Provider | None = None
        # The model the open session chose over the `provider.model` setting (None: none).
        self._session_model: str | None = None
        self._tasks: Tasks | None = None
        self._checkpoints: CheckpointKeeper | None = None
        self._rewinder: Rewinder | None = None
        self._locks = SessionLocks(profile_root)
        self._checkpoint_store: CheckpointStore | None = None
        self.recordings = Recordings(
            store=TrajectoryStore(db),
            sessions=self.store,
            io=self.io,
            host=host,
            profile_root=profile_root,
            settings=settings,
            locks=self._locks,
            known_context_window=self._known_context_window,
        )
        self.sessions = SessionManager(
            project=project,
            store=self.store,
            locks=self._locks,
            io=self.io,
            host=host,
            workspace_root=lambda: self.workspace.root,
            profile_root=profile_root,
            context_window=self._context_window,
            window_source=self._window_source,
            recordings=self.recordings,
            default_max_turns=settings.max_turns,
            max_turns_flag=max_turns_flag,
            on_open=self._session_opened,
            default_model=lambda: self.settings.provider.model,
        )
        self._mcp: McpServers | None = None  # (made, and its modules imported, when used)
        self.last_import: ImportReport | None = None
        # Indexing the messages stored before the search index was made (once per
        # profile): started after the legacy import, awaited by a search.
        self._indexing: asyncio.Future[None] | None = None

    @property
    def mcp(self) -> McpServers:
        """The MCP servers (imported at first use: the fork-warmed process and a start
        that has none configured do not pay for the agent's tool modules)."""
        if self._mcp is None:
            from seri_lsp.mcp.servers import McpServers

            self._mcp = McpServers(self.profile_root, self.settings, self.host)
        return self._mcp

    @property
    def provider(self) -> Provider:
        """The model provider, made at its first use (no HTTP client until a call)."""
        if self._provider is None:
            from seri_lsp.agent.provider import Provider

            self._provider = Provider(self._session_provider(), log=self.host.log)
        return self._provider

    @property
    def tasks(self) -> Tasks:
        """What runs prompts and compactions, made (and imported) at the first one."""
        if self._tasks is None:
            from seri_lsp.agent.tasks import Tasks
            from seri_lsp.context.compaction import Compactor

            compactor = Compactor(self._session_provider(), self.host, self.workspace.normalize)
            self._tasks = Tasks(
                provider=self.provider,
                compactor=compactor,
                host=self.host,
                workspace=self.workspace,
                store=self.store,
                io=self.io,
                profile_root=self.profile_root,
                write_permission=self.settings.write_permission,
                checkpoints=self.checkpoints,
                recordings=self.recordings,
                checks=self.settings.checks,
                run_permission=self.settings.run_permission,
                run_shell=self.settings.run_shell,
                command_rules=self.settings.command_rules,
                locks=self._locks,
                external=self.mcp,
            )
        return self._tasks

    @property
    def checkpoint_store(self) -> CheckpointStore:
        """The checkpoints in seri.db (made at the first session open, task or rewind)."""
        if self._checkpoint_store is None:
            from seri_lsp.store.checkpoints import CheckpointStore

            self._checkpoint_store = CheckpointStore(self.db)
        return self._checkpoint_store

    @property
    def checkpoints(self) -> CheckpointKeeper:
        """Takes and keeps the tasks' checkpoints; made (with the tools) at first use."""
        if self._checkpoints is None:
            from seri_lsp.agent.checkpoints import CheckpointKeeper

            self._checkpoints = CheckpointKeeper(
                store=self.checkpoint_store,
                io=self.io,
                host=self.host,
                project=self.project,
                in_use=self._session_in_use,
            )
        return self._checkpoints

    def _session_in_use(self, session_id: str) -> bool:
        """Whether a session is open here or in another live seri process."""
        locks = self._locks
        return session_id in locks.held() or bool(locks.open_elsewhere([session_id]))

    @property
    def rewinder(self) -> Rewinder:
        """Rewinds the open session (`agent/rewind.py`), made at the first rewind or list."""
        if self._rewinder is None:
            from seri_lsp.agent.rewind import Rewinder

            self._rewinder = Rewinder(
                store=self.checkpoint_store,
                sessions=self.sessions,
                tasks=self.tasks,
                workspace=self.workspace,
                host=self.host,
                io=self.io,
            )
        return self._rewinder

    async def _session_opened(self, info: SessionInfo) -> None:
        """At every session open: its model in use from the next call, checkpoint
        retention."""
        self._use_model(info.model)
        await self.checkpoints.retain()

    def _session_provider(self) -> ProviderSettings:
        """The provider settings of the open session: the editor's, with the model the
        session chose (`seri.session.model`) when it chose one."""
        provider = self.settings.provider
        if self._session_model and self._session_model != provider.model:
            return dataclasses.replace(provider, model=self._session_model)
        return provider

    def _use_model(self, model: str | None) -> None:
        """Use the open session's model from the next model call on (a new context
        window for it; the request body is otherwise the same)."""
        self._session_model = model
        self._reconfigure()

    def _reconfigure(self) -> None:
        """Hand the open session's provider settings to the provider and the compactor
        (made later, they read them then)."""
        provider = self._session_provider()
        if self._provider is not None and self._provider.settings != provider:
            self._provider.reconfigure(provider)
        if self._tasks is not None:
            self._tasks.compactor.settings = provider

    def _known_context_window(self) -> int | None:
        """The window if it is known without asking the provider (None: not yet)."""
        if self._provider is None:
            return self.settings.provider.context_window
        return self._provider.known_context_window()

    async def _context_window(self) -> int:
        """The model's context window: a setting, else the provider's model list."""
        if self.settings.provider.context_window is not None:
            return self.settings.provider.context_window
        return await self.provider.context_window()

    def _window_source(self) -> str:
        """Where `_context_window` found the window: `setting`, `provider` (its model
        list) or `default`."""
        if self.settings.provider.context_window is not None:
            return "setting"
        return self.provider.window_source

    def _ensure_idle(self) -> None:
        """Raise Busy if a task is running (none can before the first)."""
        if self._tasks is not None:
            self._tasks.ensure_idle()

    @classmethod
    def open(
        cls,
        *,
        profile_root: Path,
        settings: Settings,
        project: str,
        workspace_roots: list[Path],
        host: Host,
        max_turns_flag: int | None = None,
    ) -> Engine:
        """Open the profile's store (StoreError if it cannot be used) and build the engine.

        `max_turns_flag` is `--max-turns` from the command line: it wins over the
        settings and over a budget stored with a session, until `/max-turns` (or
        `seri.maxTurns`) sets one in this process.
        """
        try:
            project.encode("utf-8")
        except UnicodeEncodeError:
            shown = project.encode("utf-8", "backslashreplace").decode("utf-8")
            raise StoreError(
                f"The project folder {shown} has a name that is not valid UTF-8, so its "
                "sessions cannot be stored. Rename the folder, or open another one."
            ) from None
        ensure_profile_root(profile_root)
        db = Database.open(profile_root / DB_NAME)
        return cls(
            profile_root=profile_root,
            settings=settings,
            project=project,
            workspace_roots=workspace_roots,
            host=host,
            db=db,
            max_turns_flag=max_turns_flag,
        )

    async def start(self) -> None:
        """What happens once the face is connected: legacy import, then resume on open."""
        self.mcp.begin(self.workspace.root, self.project)  # (in the background: never waits)
        await self.import_legacy()
        self._start_indexing()
        if self.settings.resume_on_open:
            await self.continue_session(or_new=True)

    async def close(self) -> None:
        """Stop any task and the indexing; release the provider connection, the database
        and the sessions."""
        if self._indexing is not None and not self._indexing.done():
            self._indexing.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._indexing
        if self._tasks is not None:
            await self._tasks.close()
        if self._mcp is not None:
            await self._mcp.close()
        if self._provider is not None:
            await self._provider.aclose()
        self.io.shutdown()
        self.db.close()
        # Only now, with every write done, may another process open our sessions.
        self.sessions.close()

    async def set_workspace_roots(self, folders: list[str]) -> None:
        """The editor's workspace folders changed (all of them, as paths); the project
        keeps its place first. Their links are followed on a thread; changes take effect
        in the order they came, however long one's disk takes."""
        async with self._roots_changing:
            roots = await asyncio.to_thread(lambda: [Path(os.path.realpath(f)) for f in folders])
            project = Path(self.project)
            self.workspace.set_roots(
                [project] + [root for root in roots if root != project], real=True
            )

    # --- legacy import --------------------------------------------------------------

    async def import_legacy(self) -> ImportReport:
        """Import legacy `sessions/*.jsonl` files not imported before, reporting progress."""
        pending, already = await self.io(find_pending, self.profile_root, self.store)
        if not pending:
            report = ImportReport(already_imported=already)
            self.last_import = report
            return report
        loop = asyncio.get_running_loop()
        async with self.host.progress("seri: importing legacy sessions") as progress:

            def on_progress(done: int, total: int, name: str) -> None:
                loop.call_soon_threadsafe(
                    progress.report, f"{done + 1}/{total} {name}", done * 100 // total
                )

            report = await self.io(import_files, pending, self.store, on_progress)
        report.already_imported += already
        imported = sum(1 for f in report.files if f.outcome == "imported")
        self.host.log("info", f"Imported {imported} legacy session(s) from {self.profile_root}.")
        for line in report.summary_lines():
            self.host.log("warning", line)
        if report.skipped_lines or imported < len(report.files):
            self.host.show(
                "warning",
                f"Imported {imported} legacy session(s); skipped {report.skipped_lines} bad "
                "line(s). The log lists each file and line.",
            )
        self.last_import = report
        return report

    # --- sessions -------------------------------------------------------------------

    async def new_session(self) -> Session:
        """Start a new, empty session in this project and open it."""
        self._ensure_idle()
        return await self.sessions.new()

    async def clear(self) -> Session:
        """`/clear`: a new session; the old one stays in the store, untouched."""
        self._ensure_idle()
        return await self.sessions.new("cleared")

    async def continue_session(self, *, or_new: bool = False) -> Session | None:
        """Open the project's most recently touched session no other process holds.

        None when the project has none; when all are held elsewhere, a new session with
        `or_new`, else SessionHeld naming the holder.
        """
        self._ensure_idle()
        return await self.sessions.continue_latest(or_new=or_new)

    async def resume_session(self, session_id: str) -> Session:
        """Open a session by id (or unique id prefix).

        UnknownSession if none matches; SessionHeld if another seri process has it open.
        """
        check_session_id("sessionId", session_id)
        self._ensure_idle()
        return await self.sessions.resume(session_id)

    async def fork_session(self, session_id: str | None, message_id: int | None) -> dict[str, Any]:
        """Fork a session (the open one by default) at a message (default: its last) and
        open the fork: `{session, forkedAt}`."""
        if session_id is not None:
            check_session_id("sessionId", session_id)
        if message_id is not None:
            check_whole_number("messageId", message_id, 1, MAX_MESSAGE_ID)
        self._ensure_idle()
        return await self.sessions.fork(session_id, message_id)

    async def session_usage(self, session_id: str | None) -> dict[str, Any]:
        """What a session (the open one by default) spent on model calls."""
        if session_id is not None:
            check_session_id("sessionId", session_id)
        return await self.sessions.usage(session_id)

    async def session_context(self, session_id: str | None) -> dict[str, Any]:
        """What fills a session's context window (the open one's by default), by part."""
        if session_id is not None:
            check_session_id("sessionId", session_id)
        answer = await self.sessions.context(session_id, self.settings.provider.keep_tokens)
        await self.mcp.loaded()
        answer["parts"] += self.mcp.context_parts(answer["sessionId"])
        return answer

    async def list_sessions(self, limit: int | None, all_projects: bool) -> list[Session]:
        """Sessions, most recently touched first: this project's, or every project's."""
        return await self.sessions.recent(limit, all_projects)

    async def sessions_page(
        self, project: str | None, offset: int, limit: int, *, with_messages: bool = False
    ) -> tuple[list[Session], bool]:
        """A page of the sessions of any `project` (every project's when None), most
        recently touched first, and whether more follow (only sessions that hold a
        message with `with_messages`: ACP's list, whose pickers show titles)."""
        return await self.sessions.page(project, offset, limit, with_messages=with_messages)

    async def session_view(
        self,
        session_id: str | None,
        *,
        limit: int | None = None,
        before: int | None = None,
        encoded: bool = False,
    ) -> SessionView:
        """A session with its messages, token usage and path lists (the open one by default).

        With `limit`, only the newest `limit` messages (before message `before` when
        given); `hasMore` says whether older ones exist. With `encoded`, the messages
        come already encoded as JSON (`EncodedMessages`), for a face that writes JSON.
        """
        if session_id is not None:
            check_session_id("sessionId", session_id)
        if limit is not None:
            check_whole_number("limit", limit, 1, MAX_PAGE_LIMIT)
        if before is not None:
            check_whole_number("before", before, 1, MAX_MESSAGE_ID)
        return await self.sessions.view(session_id, limit=limit, before=before, encoded=encoded)

    async def info(self) -> dict[str, Any]:
        """What this server knows of its set-up (`seri.info`, for `:checkhealth`): its
        version, the profile and its database, the project, the provider (whether a key
        is set, never the key; `problems`: the wrong settings that refuse prompts), the
        model's context window with where it came from, and `notes` on the set-up when
        there are any (a `keepTokens` the window cuts)."""
        provider = self.settings.provider
        tokens = await self._context_window()
        info: dict[str, Any] = {
            "version": __version__,
            "profileRoot": str(self.profile_root),
            "databasePath": str(self.db.path),
            "project": self.project,
            "provider": {
                "baseUrl": provider.base_url,
                "model": provider.model,
                "apiKeySet": provider.api_key is not None,
                "apiKeySource": provider.api_key_source,
            },
            "contextWindow": {"tokens": tokens, "source": self._window_source()},
        }
        await self.mcp.loaded()
        info["mcpServers"] = self.mcp.info()
        if provider.blocking:
            info["provider"]["problems"] = list(provider.blocking)
        note = keep_note(provider.keep_tokens, tokens)
        if note is not None:
            info["notes"] = [note]
        return info

    async def set_max_turns(self, n: int) -> dict[str, Any]:
        """Change the turn budget for the rest of the open session (persisted with it)."""
        check_whole_number("n", n, 1, MAX_TURNS)
        return await self.sessions.set_max_turns(n)

    # --- finding, naming and carrying sessions -----------------------------------------

    async def search(
        self,
        query: str,
        *,
        all_projects: bool = False,
        limit: int = DEFAULT_SEARCH_LIMIT,
        offset: int = 0,
    ) -> search.SearchPage:
        """The messages of this project's sessions (every project's with `all_projects`)
        that match `query`, best first: `{hits, hasMore}` (`store/search.py` says what is
        searched and how a query reads). SearchUnavailable without FTS5."""
        expression = search.parse_query(query)
        check_whole_number("limit", limit, 1, MAX_SEARCH_LIMIT)
        check_whole_number("offset", offset, 0, MAX_SEARCH_OFFSET)
        if self.db.search_unavailable is not None:
            raise search.SearchUnavailable(self.db.search_unavailable)
        if expression is None:  # only quotes: no word to look for
            return search.SearchPage([], False)
        await self.index_backlog()
        project = None if all_projects else self.project
        hits, more = await self.io(search.search, self.db, expression, project, limit, offset)
        return search.SearchPage(hits, more)

    async def index_backlog(self) -> None:
        """Index what was stored before the search index was made, reporting progress:
        once per profile (at start-up, or at the first search)."""
        self._start_indexing()
        assert self._indexing is not None
        await asyncio.shield(self._indexing)

    def _start_indexing(self) -> None:
        indexing = self._indexing
        if indexing is None or (
            indexing.done() and (indexing.cancelled() or indexing.exception() is not None)
        ):
            self._indexing = asyncio.ensure_future(self._index_backlog())
            self._indexing.add_done_callback(self._indexing_ended)

    def _indexing_ended(self, indexing: asyncio.Future[None]) -> None:
        if not indexing.cancelled() and indexing.exception() is not None:
            # A search waiting for it answers the error; the next one tries again.
            self.host.log(
                "warning", f"Indexing the sessions for search failed: {indexing.exception()}"
            )

    async def _index_backlog(self) -> None:
        start = await self.io(search.backlog, self.db)
        if start.finished:
            return
        async with self.host.progress("seri: indexing sessions for search") as progress:
            while not (done := await self.io(search.index_some, self.db)).finished:
                percentage = done.percentage(start.done)
                progress.report(f"{percentage}%", percentage)
        self.host.log("info", "The sessions stored before are indexed for search.")

    async def rename_session(self, session_id: str | None, title: str) -> Session:
        """Give a session (the open one by default) the user's title, kept from now on."""
        if session_id is not None:
            check_session_id("sessionId", session_id)
        return await self.sessions.rename(session_id, check_title("title", title))

    async def delete_session(self, session_id: str) -> Deleted:
        """Delete a session (by id or unique prefix) with its subagents' sessions and all
        their rows (`store/deletion.py`): `{deleted, session}`, `session` the new one
        opened when the open session was deleted. The open session is refused while a
        task runs (Busy), one open in another seri process too (SessionHeld)."""
        check_session_id("sessionId", session_id)
        return await self.sessions.delete(session_id, self._ensure_idle)

    async def merge_code(self, path: str, block: str) -> CodeMerge:
        """Where a code block from a reply goes in `path` (`seri.code.merge`, Apply to
        File): the file's new text, read from the editor's open document or the disk."""
        from seri_lsp.agent.code_merge import merge_into  # (only for Apply)

        try:
            target = await asyncio.to_thread(self.workspace.resolve, path)
        except PathDenied as exc:
            raise InvalidArgument("path", f"Cannot apply the code block: {exc}.") from None
        open_text = self.host.document_text(target.real)
        try:
            return await asyncio.to_thread(
                merge_into, target.real, target.display, open_text, block
            )
        except ValueError as exc:
            raise SeriError(str(exc)) from None

    async def models(self) -> ModelList:
        """The provider's models (`GET /models`, read now, with their context windows)
        and the model of the open session's next turn. A list that cannot be read is
        an empty one with `error` saying why (the editor may still take a typed id)."""
        self._refuse_if_blocked()
        current = self._session_provider().model
        found = await self.provider.models()
        if found is None:
            return ModelList([], current, self._no_list())
        return ModelList(found, current)

    def _no_list(self) -> str:
        url = public_url(self.settings.provider.base_url)
        return f"The model list of {url} could not be read"

    async def set_session_model(self, session_id: str | None, model: str | None) -> ModelChoice:
        """Choose the model of a session (the open one by default, started if none is)
        from its next turn, kept with it (a resume uses it); None goes back to the
        `provider.model` setting. A model the provider's list does not hold is refused;
        when the list cannot be read, the model is taken with a warning. Refused while
        the open session runs a task (Busy)."""
        if session_id is not None:
            check_session_id("sessionId", session_id)
        if model is not None:
            model = model.strip()
            if not model:
                raise InvalidArgument(
                    "model", "model must be a model id, or null for the setting's"
                )
        self._refuse_if_blocked()
        # Another session's id is checked before the provider is asked.
        other = None if session_id is None else await self.io(self.store.resolve, session_id)
        warning = None
        if model is not None and model != self.settings.provider.model:
            found = await self.provider.models()
            if found is None:
                warning = (
                    f"{self._no_list()}, so {model!r} is not checked: a wrong id fails at the "
                    "next prompt."
                )
                self.host.log("warning", warning)
            elif model not in {entry.id for entry in found}:
                near = [entry.id for entry in found if model.lower() in entry.id.lower()][:5]
                hint = f" Did you mean: {', '.join(near)}?" if near else ""
                raise InvalidArgument(
                    "model",
                    f"{public_url(self.settings.provider.base_url)} does not list the model "
                    f"{model!r} "
                    f"(seri.models lists the {len(found)} it offers).{hint}",
                )
        open_id = self.sessions.conversation.session_id if self.sessions.conversation else None
        target = (await self.sessions.ensure_open()).session_id if other is None else other.id
        is_open = target == open_id or other is None
        if is_open:
            self._ensure_idle()
        chosen = None if model == self.settings.provider.model else model
        info = await self.io(self.store.set_model, target, chosen)
        window = None
        if is_open and self.sessions.conversation is not None:
            conversation = self.sessions.conversation
            conversation.info = dataclasses.replace(conversation.info, model=info.model)
            await conversation.record_event("model", {"model": info.model})
            self._use_model(info.model)
            window = await self._context_window()
            session = self.sessions.model_chosen(conversation.info)
        else:
            session = self.sessions.session(info)
        return ModelChoice(session, session.model or self.settings.provider.model, window, warning)

    async def export_session(self, session_id: str | None, export_format: str) -> Exported:
        """A session (the open one by default) as `{format, text, redactions}`: a JSON
        bundle or a markdown transcript with no absolute path of the workspace and no
        secret (`export/bundle.py`)."""
        from seri_lsp.export.bundle import export_session
        from seri_lsp.export.redaction import configured_secrets

        if export_format not in EXPORT_FORMATS:
            raise InvalidArgument(
                "format",
                f'format must be "markdown" or "json", got {shorten(str(export_format))!r}',
            )
        if session_id is not None:
            check_session_id("sessionId", session_id)
            target = (await self.io(self.store.resolve, session_id)).id
        elif self.sessions.conversation is not None:
            target = self.sessions.conversation.session_id
        else:
            raise InvalidArgument(
                "sessionId", "No session is open; give the sessionId of the session to export"
            )
        secrets = configured_secrets(self.settings.provider.api_key)
        return await self.io(export_session, self.store, target, export_format, secrets)

    async def import_session(self, text: str) -> Imported:
        """A new session of this project holding an exported bundle's conversation:
        `{session, alreadyImported}` (the session made the first time when this bundle
        was imported here before). A bad bundle is refused and nothing is written."""
        from seri_lsp.export.bundle import Imported, import_bundle, read_bundle

        bundle = await asyncio.to_thread(read_bundle, text)
        info, made = await self.io(import_bundle, self.store, bundle, self.project)
        return Imported(self.sessions.session(info), already_imported=not made)

    # --- recordings (trajectories) ---------------------------------------------------

    async def trajectory(self, enabled: bool | None) -> dict[str, Any]:
        """Whether runs are recorded and why; with `enabled`, store the toggle in the
        profile's config.json and apply it to the open session at once."""
        conversation = self.sessions.conversation
        budget = self.sessions.max_turns_for(conversation) if conversation else None
        return await self.recordings.answer(enabled, conversation, budget)

    async def trajectory_get(
        self, session_id: str | None, trajectory_id: str | None = None, compacted: bool = False
    ) -> Trajectory:
        """A recording (header and events): the open session's by default; `compacted`:
        the session's record up to its latest compaction (the chat's divider opens it)."""
        if session_id is not None:
            check_session_id("sessionId", session_id)
        if trajectory_id is not None:
            check_session_id("trajectoryId", trajectory_id)
        return await self.recordings.get(
            session_id=session_id,
            trajectory_id=trajectory_id,
            conversation=self.sessions.conversation,
            compacted=compacted,
        )

    # --- prompts, compaction, cancel --------------------------------------------------

    async def prompt(
        self, text: str, attachments: Sequence[Attachment] = ()
    ) -> PromptOutcome | SlashAnswer:
        """Run a user prompt as a task, or the slash command it holds; what the editor
        attached (files, selections) is written into the prompt."""
        check_text("text", text, MAX_PROMPT_CHARS)
        command = parse_slash(text)
        if command is not None:
            return await self._slash(command)
        if attachments:
            text = with_attachments(text, attachments, PurePath(self.project))
            check_text("context", text, MAX_PROMPT_CHARS)
        self._refuse_if_blocked()
        self.tasks.ensure_idle()
        conversation = await self.sessions.ensure_open()
        outcome = await self.tasks.run_prompt(
            conversation, text, lambda: self.sessions.max_turns_for(conversation)
        )
        # The task is over and the user reads its answer: a good moment to fold the
        # write-ahead log into the database, which SQLite would otherwise do inside one
        # of the next task's commits. Queued, not awaited.
        self.io(self.db.checkpoint)
        if outcome.status == "max_turns" and outcome.error:
            self.host.show("warning", outcome.error)
        elif outcome.status == "failed" and outcome.error:
            self.host.show("error", outcome.error)
        return PromptOutcome(outcome.status, outcome.turns, outcome.error, conversation.session_id)

    async def compact(self, focus: str | None) -> CompactionResult:
        """Compact the open session now, without waiting for the 50% trigger."""
        self._refuse_if_blocked()
        return await self.tasks.compact(self.sessions.conversation, focus)

    def _refuse_if_blocked(self) -> None:
        """Refuse work for the model while a setting that decides where it goes is wrong
        (before anything is stored: the prompt never becomes a turn)."""
        blocked = self.settings.provider.blocked()
        if blocked is not None:
            raise SettingsBlocked(blocked)

    def set_provider_settings(self, provider: ProviderSettings) -> None:
        """Use new provider settings from the next model call on (the editor changed its
        settings: `workspace/didChangeConfiguration`). A call under way finishes with the
        ones it started with."""
        self.settings = dataclasses.replace(self.settings, provider=provider)
        self.recordings.settings = self.settings
        if self._provider is not None:
            self._provider.reconfigure(self._session_provider())
        if self._tasks is not None:
            self._tasks.compactor.settings = self._session_provider()

    def cancel(self, *, stopping: bool = False) -> bool:
        """Stop the running task (or manual compaction); False if nothing was running.
        `stopping`: because the server stops (the task ends `interrupted`)."""
        return self._tasks is not None and self._tasks.cancel(stopping=stopping)

    def stop_tool(self, session_id: str, tool_call_id: str) -> bool:
        """Stop one running `run` command (the task goes on): `seri.tool.stop`."""
        from seri_lsp.agent.commands import RunningCommands

        running = self._tasks.commands if self._tasks is not None else RunningCommands()
        return running.stop(session_id, tool_call_id)

    # --- checkpoints ------------------------------------------------------------------

    async def rewind(
        self,
        *,
        steps: int = 1,
        restore: str = "both",
        force: bool = False,
        message_id: int | None = None,
        check: bool = False,
    ) -> dict[str, Any]:
        """Go back `steps` prompts: the conversation, the files, or both (`agent/rewind.py`).

        `restore` is "both", "conversation" or "files"; `force` overwrites files changed
        since by something else. `message_id` (a prompt's): back to just before it.
        `check`: only say which files it would leave alone, changing nothing.
        """
        from seri_lsp.agent.rewind import RewindRequest

        return await self.rewinder.rewind(RewindRequest(steps, restore, force, message_id, check))

    async def checkpoints_of(self, session_id: str | None) -> Checkpoints:
        """What can be rewound in a session (the open one by default), newest first."""
        return await self.rewinder.checkpoints(session_id)

    # --- slash commands (declared in slash.py; a handler each) ------------------------

    _slash_handlers: SlashHandlers[Engine] = SlashHandlers()

    async def _slash(self, command: SlashCommand) -> SlashAnswer:
        name, argument = command.name, command.argument
        handler = self._slash_handlers.get(name)
        if handler is None:
            raise InvalidArgument(
                "text",
                f"Unknown command /{shorten(name)}. Commands: {usage()}. "
                "Nothing was sent to the model.",
            )
        return SlashAnswer(name, await handler(self, argument))

    @_slash_handlers.handles("compact")
    async def _slash_compact(self, argument: str) -> CompactionResult:
        return await self.compact(argument or None)

    @_slash_handlers.handles("clear")
    async def _slash_clear(self, argument: str) -> dict[str, Any]:
        return {"session": await self.clear()}

    @_slash_handlers.handles("continue")
    async def _slash_continue(self, argument: str) -> dict[str, Any]:
        return {"session": await self.continue_session()}

    @_slash_handlers.handles("resume")
    async def _slash_resume(self, argument: str) -> dict[str, Any]:
        if not argument:
            raise InvalidArgument("text", "/resume needs a session id: /resume ID")
        return {"session": await self.resume_session(argument.split()[0])}

    @_slash_handlers.handles("fork")
    async def _slash_fork(self, argument: str) -> dict[str, Any]:
        self._no_words("fork", argument)
        return await self.fork_session(None, None)

    @_slash_handlers.handles("cost")
    async def _slash_cost(self, argument: str) -> dict[str, Any]:
        from seri_lsp.context.reports import cost_text

        self._no_words("cost", argument)
        result = await self.session_usage(None)
        return self._report(cost_text(result), result)

    @_slash_handlers.handles("context")
    async def _slash_context(self, argument: str) -> dict[str, Any]:
        from seri_lsp.context.reports import context_text

        self._no_words("context", argument)
        result = await self.session_context(None)
        return self._report(context_text(result), result)

    @staticmethod
    def _no_words(name: str, argument: str) -> None:
        if argument:
            raise InvalidArgument(
                "text", f"/{name} takes no words after it, got {shorten(argument)!r}"
            )

    def _report(self, text: str, result: dict[str, Any]) -> dict[str, Any]:
        # Typed in the chat, the answer is for the user to read.
        self.host.show_report(text)
        return {"text": text, **result}

    @_slash_handlers.handles("rewind")
    async def _slash_rewind(self, argument: str) -> dict[str, Any]:
        from seri_lsp.agent.rewind import parse_rewind

        return await self.rewinder.rewind(parse_rewind(argument))

    @_slash_handlers.handles("rename")
    async def _slash_rename(self, argument: str) -> dict[str, Any]:
        if not argument:
            raise InvalidArgument("text", "/rename needs a title: /rename TITLE")
        return {"session": await self.sessions.rename(None, check_title("text", argument))}

    @_slash_handlers.handles("max-turns")
    async def _slash_max_turns(self, argument: str) -> dict[str, Any]:
        turns = parse_whole_number("text", argument, 1, MAX_TURNS, label="/max-turns")
        return await self.set_max_turns(turns)

    @_slash_handlers.handles("model")
    async def _slash_model(self, argument: str) -> dict[str, Any]:
        from seri_lsp.context.reports import model_choice_text, model_list_text

        if not argument:
            listed = await self.models()
            return self._report(
                model_list_text(listed),
                {"model": listed.current, "models": listed.models}
                | ({"error": listed.error} if listed.error else {}),
            )
        if len(argument.split()) > 1:
            raise InvalidArgument("text", f"/model takes one model id, got {shorten(argument)!r}")
        chosen = await self.set_session_model(None, None if argument == "default" else argument)
        return self._report(
            model_choice_text(chosen),
            {
                "model": chosen.model,
                "contextWindow": chosen.context_window,
                "session": chosen.session,
            }
            | ({"warning": chosen.warning} if chosen.warning else {}),
        )

    @_slash_handlers.handles("trajectory")
    async def _slash_trajectory(self, argument: str) -> dict[str, Any]:
        words = {"": None, "on": True, "off": False}
        if argument.lower() not in words:
            raise InvalidArgument(
                "text", f"/trajectory takes on or off (or nothing), got {shorten(argument)!r}"
            )
        result = await self.trajectory(words[argument.lower()])
        # Typed in the chat, the answer is for the user to read.
        self.host.show("info", f"seri: {result['message']}")
        if result.get("warning"):
            self.host.show("warning", f"seri: {result['warning']}")
        return result
