"""The engine: sessions, prompts, compaction and the rest, behind one object.

Faces (the language server, the command line) call the engine's methods and receive its
events through their `Host`. The engine knows nothing of LSP. Database work runs on one
worker thread, so the event loop that serves the editor never waits on the disk.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from seri_lsp.agent import AgentLoop
from seri_lsp.cancel import CancelScope, TaskCancelled
from seri_lsp.compaction import NOT_ENOUGH, CompactionFailed, CompactionResult, Compactor
from seri_lsp.conversation import Conversation
from seri_lsp.errors import Busy, InvalidArgument
from seri_lsp.events import Compacted, SessionChanged
from seri_lsp.host import Host
from seri_lsp.legacy import ImportReport, find_pending, import_files
from seri_lsp.messages import tokens_for_chars
from seri_lsp.profile import DB_NAME, ensure_profile_root
from seri_lsp.prompt_files import freeze
from seri_lsp.provider import Provider
from seri_lsp.sessions import SessionInfo, SessionStore
from seri_lsp.settings import SUBAGENT_MAX_TURNS, Settings
from seri_lsp.slash import SlashCommand, parse_slash, usage
from seri_lsp.store import Database
from seri_lsp.tools import Toolbox, ToolOutcome, WriteGate
from seri_lsp.workspace import PathDenied, Workspace

T = TypeVar("T")


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
        self.workspace = Workspace(workspace_roots)
        self.host = host
        self.db = db
        self.store = SessionStore(db)
        self.provider = Provider(settings.provider)
        self.compactor = Compactor(self)
        self.conversation: Conversation | None = None
        self.last_import: ImportReport | None = None
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seri-db")
        self._running: CancelScope | None = None
        self._gates: dict[str, WriteGate] = {}
        self._max_turns_flag = max_turns_flag
        self._budgets_set_here: set[str] = set()

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

    async def io(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run blocking (database or file) work on the engine's worker thread."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    async def start(self) -> None:
        """What happens once the face is connected: legacy import, then resume on open."""
        await self.import_legacy()
        if self.settings.resume_on_open:
            await self.continue_session()

    async def close(self) -> None:
        """Stop any task and release the provider connection and the database."""
        if self._running is not None:
            self._running.cancel()
        await self.provider.aclose()
        self._executor.shutdown(wait=True)
        self.db.close()

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

    def default_max_turns(self) -> int:
        """The turn budget for sessions that have not set their own."""
        return self._max_turns_flag or self.settings.max_turns

    def session_wire(self, info: SessionInfo) -> dict[str, Any]:
        """A session as the contract sends it (maxTurns: the budget in force)."""
        wire = info.to_wire(self.default_max_turns())
        if self._max_turns_flag is not None and info.id not in self._budgets_set_here:
            wire["maxTurns"] = self._max_turns_flag
        return wire

    async def new_session(self) -> dict[str, Any]:
        """Start a new, empty session in this project and open it."""
        self._ensure_idle()
        info = await self.io(self.store.create, self.project)
        return await self._open(info, "new")

    async def clear(self) -> dict[str, Any]:
        """`/clear`: a new session; the old one stays in the store, untouched."""
        self._ensure_idle()
        info = await self.io(self.store.create, self.project)
        return await self._open(info, "cleared")

    async def continue_session(self) -> dict[str, Any] | None:
        """Open the project's most recently touched session, if there is one."""
        self._ensure_idle()
        info = await self.io(self.store.latest, self.project)
        if info is None:
            return None
        return await self._open(info, "continued")

    async def resume_session(self, session_id: str) -> dict[str, Any]:
        """Open a session by id (or unique id prefix); UnknownSession if none matches."""
        self._ensure_idle()
        info = await self.io(self.store.resolve, session_id)
        return await self._open(info, "resumed")

    async def list_sessions(self, limit: int | None, all_projects: bool) -> list[dict[str, Any]]:
        """Sessions, most recently touched first: this project's, or every project's."""
        project = None if all_projects else self.project
        infos = await self.io(self.store.list, project, limit)
        return [self.session_wire(info) for info in infos]

    async def session_view(self, session_id: str | None) -> dict[str, Any]:
        """A session with its messages, token usage and path lists (the open one by default)."""
        conversation = self.conversation
        if session_id is not None:
            info = await self.io(self.store.resolve, session_id)
            if conversation is not None and conversation.id == info.id:
                info = conversation.info
            else:
                conversation = None
        elif conversation is not None:
            info = conversation.info
        else:
            return {
                "session": None,
                "messages": [],
                "usage": {
                    "estimateTokens": 0,
                    "contextWindow": await self.provider.context_window(),
                },
                "paths": {"read": [], "modified": []},
            }
        if conversation is not None:
            info = await self.io(self.store.get, info.id)
            messages = conversation.messages
            estimate = conversation.estimate_tokens()
        else:
            messages = await self.io(self.store.messages, info.id)
            frozen = await self.io(freeze, self.workspace.root, self.profile_root)
            chars = frozen.chars + sum(message.chars for message in messages)
            estimate = max(info.last_input_tokens or 0, tokens_for_chars(chars))
        paths = await self.io(self.store.paths, info.id)
        return {
            "session": self.session_wire(info),
            "messages": [message.to_wire() for message in messages],
            "usage": {
                "estimateTokens": estimate,
                "contextWindow": await self.provider.context_window(),
            },
            "paths": paths.to_wire(),
        }

    async def set_max_turns(self, n: int) -> dict[str, Any]:
        """Change the turn budget for the rest of the open session (persisted with it)."""
        conversation = await self._ensure_conversation()
        conversation.info = await self.io(self.store.set_max_turns, conversation.id, n)
        self._budgets_set_here.add(conversation.id)
        return {"maxTurns": n, "session": self.session_wire(conversation.info)}

    def max_turns_for(self, conversation: Conversation) -> int:
        """The turn budget in force for a conversation."""
        stored = conversation.info.max_turns
        if stored is not None and (
            self._max_turns_flag is None or conversation.id in self._budgets_set_here
        ):
            return stored
        return self.default_max_turns()

    async def _open(self, info: SessionInfo, reason: str) -> dict[str, Any]:
        current = self.conversation
        if current is not None and current.id == info.id:
            # Still open in this process: its frozen prompt stays as it was.
            current.info = await self.io(self.store.touch, info.id)
            return self._announce(current.info, reason)
        messages = await self.io(self.store.messages, info.id)
        fired = await self.io(self.store.fired_rules, info.id)
        frozen = await self.io(freeze, self.workspace.root, self.profile_root)
        info = await self.io(self.store.touch, info.id)
        conversation = Conversation(self, info, messages, frozen, fired)
        self.conversation = conversation
        await conversation.record_event(
            "opened", {"reason": reason, "promptFiles": frozen.hashes()}
        )
        return self._announce(info, reason)

    def _announce(self, info: SessionInfo, reason: str) -> dict[str, Any]:
        wire = self.session_wire(info)
        self.host.emit(SessionChanged(wire, reason))
        return wire

    async def _ensure_conversation(self) -> Conversation:
        if self.conversation is None:
            await self.new_session()
        assert self.conversation is not None
        return self.conversation

    def _ensure_idle(self) -> None:
        if self._running is not None:
            raise Busy("A task is running; wait for it to end or cancel it (seri.cancel) first.")

    # --- prompts and tasks ----------------------------------------------------------

    async def prompt(self, text: str) -> dict[str, Any]:
        """Run a user prompt as a task, or the slash command it holds."""
        command = parse_slash(text)
        if command is not None:
            return await self._slash(command)
        self._ensure_idle()
        conversation = await self._ensure_conversation()
        scope = self._begin(conversation)
        try:
            loop = AgentLoop(
                self,
                conversation,
                self._toolbox(conversation, self._gate(conversation)),
                max_turns=lambda: self.max_turns_for(conversation),
            )
            outcome = await loop.run(text)
        finally:
            self._end(scope)
        if outcome.status == "max_turns" and outcome.error:
            self.host.show("warning", outcome.error)
        elif outcome.status == "failed" and outcome.error:
            self.host.show("error", outcome.error)
        return {**outcome.to_wire(), "sessionId": conversation.id}

    def cancel(self) -> bool:
        """Stop the running task (or manual compaction); False if nothing was running."""
        if self._running is None:
            return False
        self._running.cancel()
        return True

    def _begin(self, conversation: Conversation) -> CancelScope:
        scope = CancelScope()
        conversation.scope = scope
        self._running = scope
        return scope

    def _end(self, scope: CancelScope) -> None:
        if self._running is scope:
            self._running = None

    async def _slash(self, command: SlashCommand) -> dict[str, Any]:
        name, argument = command.name, command.argument
        if name == "compact":
            result = await self.compact(argument or None)
            return {"status": "done", "command": name, **result.to_wire()}
        if name == "clear":
            return {"status": "done", "command": name, "session": await self.clear()}
        if name == "continue":
            return {"status": "done", "command": name, "session": await self.continue_session()}
        if name == "resume":
            if not argument:
                raise InvalidArgument("text", "/resume needs a session id: /resume ID")
            session = await self.resume_session(argument.split()[0])
            return {"status": "done", "command": name, "session": session}
        if name == "max-turns":
            if not argument.isdigit() or int(argument) < 1:
                raise InvalidArgument(
                    "text", f"/max-turns needs a positive whole number, got {argument!r}"
                )
            result = await self.set_max_turns(int(argument))
            return {"status": "done", "command": name, **result}
        raise InvalidArgument(
            "text", f"Unknown command /{name}. Commands: {usage()}. Nothing was sent to the model."
        )

    # --- compaction -----------------------------------------------------------------

    async def compact(self, focus: str | None) -> CompactionResult:
        """Compact the open session now, without waiting for the 50% trigger."""
        self._ensure_idle()
        conversation = self.conversation
        plan = self.compactor.plan(conversation) if conversation is not None else None
        if conversation is None or plan is None:
            self.host.show("info", NOT_ENOUGH)
            return CompactionResult(False, 0, NOT_ENOUGH)
        scope = self._begin(conversation)
        try:
            return await self.compactor.compact(conversation, plan, trigger="manual", focus=focus)
        except CompactionFailed as exc:
            message = f"Compaction failed: {exc}."
            await conversation.record_event(
                "compaction_failed", {"trigger": "manual", "error": str(exc)}
            )
            self.host.show("error", message)
            return CompactionResult(False, 0, message)
        except TaskCancelled:
            return CompactionResult(False, 0, "Compaction cancelled; nothing changed.")
        finally:
            self._end(scope)

    def emit_compacted(self, conversation: Conversation, trigger: str, evicted: int) -> None:
        """Tell the face a compaction happened."""
        self.host.emit(Compacted(conversation.id, trigger, evicted))

    def normalize_tool_path(self, raw: str) -> str | None:
        """A tool-call path as the session's path lists show it (None: outside)."""
        try:
            return self.workspace.resolve(raw).display
        except PathDenied:
            return None

    # --- tools ------------------------------------------------------------------------

    def _gate(self, conversation: Conversation) -> WriteGate:
        gate = self._gates.get(conversation.id)
        if gate is None:
            gate = WriteGate(self.settings.write_permission, self.host)
            self._gates[conversation.id] = gate
        return gate

    def _toolbox(
        self, conversation: Conversation, gate: WriteGate, *, subagents: bool = True
    ) -> Toolbox:
        async def run_subagent(prompt: str) -> ToolOutcome:
            return await self._run_subagent(conversation, gate, prompt)

        async def propose_memory(text: str) -> ToolOutcome:
            return await self._propose_memory(conversation, text)

        return Toolbox(
            self.workspace,
            self.host,
            gate,
            subagent=run_subagent if subagents else None,
            remember=propose_memory,
        )

    async def _run_subagent(
        self, parent: Conversation, gate: WriteGate, prompt: str
    ) -> ToolOutcome:
        info = await self.io(self.store.create, parent.info.project, parent_id=parent.id)
        frozen = await self.io(freeze, self.workspace.root, self.profile_root, "subagent")
        child = Conversation(self, info, [], frozen, set())
        child.scope = parent.scope
        await child.record_event("opened", {"reason": "subagent", "parentId": parent.id})
        loop = AgentLoop(
            self,
            child,
            self._toolbox(child, gate, subagents=False),
            max_turns=lambda: SUBAGENT_MAX_TURNS,
        )
        outcome = await loop.run(prompt)
        paths = await self.io(self.store.paths, child.id)
        if outcome.status == "done":
            content = outcome.final_text or "(the subagent finished without a final answer)"
        elif outcome.status == "max_turns":
            last = next((m.content for m in reversed(child.messages) if m.role == "assistant"), "")
            content = (
                f"The subagent used its whole budget of {SUBAGENT_MAX_TURNS} turns without a "
                f"final answer (session {child.id}). Its last message: {last or '(none)'}"
            )
        else:
            content = f"The subagent {outcome.status}: {outcome.error} (session {child.id})"
        return ToolOutcome(
            content,
            is_error=outcome.status != "done",
            read=paths.read,
            modified=paths.modified,
        )

    async def _propose_memory(self, conversation: Conversation, text: str) -> ToolOutcome:
        target = conversation.frozen.memory_path or self.profile_root / "memory.md"
        line = " ".join(text.split())
        answer = await self.host.ask(
            f"seri wants to remember for this project: “{line}” (saved to {target})",
            ["Remember", "Don't remember"],
        )
        approved = answer == "Remember"
        await conversation.record_event("memory", {"text": line, "approved": approved})
        if not approved:
            return ToolOutcome("The user did not approve this memory; nothing was saved.")
        await self.io(_append_memory, target, line)
        return ToolOutcome(
            f"Saved to {target}. It reaches the prompt from the next session open, not now."
        )


def _append_memory(path: Path, line: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    existing = path.read_text(encoding="utf-8") if path.exists() else ""
    prefix = "" if not existing or existing.endswith("\n") else "\n"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"{prefix}- {line}\n")
