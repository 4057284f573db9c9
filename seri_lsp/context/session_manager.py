"""Which session this process has open, and the turn budget in force for it.

Opening a session reads its messages and freezes its prompt files once; reopening the
session that is already open keeps that frozen prompt. Every change of the open session
is announced to the face (`SessionChanged`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from seri_lsp.context.conversation import Conversation
from seri_lsp.context.prompt_files import freeze
from seri_lsp.events import SessionChanged
from seri_lsp.host import Host
from seri_lsp.store.messages import tokens_for_chars
from seri_lsp.store.sessions import SessionInfo, SessionStore
from seri_lsp.store.worker import Worker


class SessionManager:
    """Opens, lists and describes the sessions of one project."""

    def __init__(
        self,
        *,
        project: str,
        store: SessionStore,
        io: Worker,
        host: Host,
        workspace_root: Callable[[], Path | None],
        profile_root: Path,
        context_window: Callable[[], Awaitable[int]],
        default_max_turns: int,
        max_turns_flag: int | None = None,
    ) -> None:
        self.project = project
        self.store = store
        self.io = io
        self.host = host
        self.workspace_root = workspace_root
        self.profile_root = profile_root
        self.context_window = context_window
        self.conversation: Conversation | None = None
        self._default_max_turns = default_max_turns
        self._max_turns_flag = max_turns_flag
        self._budgets_set_here: set[str] = set()

    # --- the turn budget ----------------------------------------------------------------

    def default_max_turns(self) -> int:
        """The turn budget for sessions that have not set their own."""
        return self._max_turns_flag or self._default_max_turns

    def max_turns_for(self, conversation: Conversation) -> int:
        """The turn budget in force for a conversation.

        `--max-turns` wins over a budget stored with the session, until `/max-turns` (or
        `seri.maxTurns`) sets one in this process.
        """
        stored = conversation.info.max_turns
        if stored is not None and (
            self._max_turns_flag is None or conversation.id in self._budgets_set_here
        ):
            return stored
        return self.default_max_turns()

    def wire(self, info: SessionInfo) -> dict[str, Any]:
        """A session as the contract sends it (maxTurns: the budget in force)."""
        wire = info.to_wire(self.default_max_turns())
        if self._max_turns_flag is not None and info.id not in self._budgets_set_here:
            wire["maxTurns"] = self._max_turns_flag
        return wire

    async def set_max_turns(self, n: int) -> dict[str, Any]:
        """Change the turn budget for the rest of the open session (persisted with it)."""
        conversation = await self.ensure_open()
        conversation.info = await self.io(self.store.set_max_turns, conversation.id, n)
        self._budgets_set_here.add(conversation.id)
        return {"maxTurns": n, "session": self.wire(conversation.info)}

    # --- opening --------------------------------------------------------------------------

    async def new(self, reason: str = "new") -> dict[str, Any]:
        """Start a new, empty session in this project and open it."""
        info = await self.io(self.store.create, self.project)
        return await self._open(info, reason)

    async def continue_latest(self) -> dict[str, Any] | None:
        """Open the project's most recently touched session, if there is one."""
        info = await self.io(self.store.latest, self.project)
        if info is None:
            return None
        return await self._open(info, "continued")

    async def resume(self, session_id: str) -> dict[str, Any]:
        """Open a session by id (or unique id prefix); UnknownSession if none matches."""
        info = await self.io(self.store.resolve, session_id)
        return await self._open(info, "resumed")

    async def ensure_open(self) -> Conversation:
        """The open conversation, starting a new session if none is open."""
        if self.conversation is None:
            await self.new()
        assert self.conversation is not None
        return self.conversation

    async def _open(self, info: SessionInfo, reason: str) -> dict[str, Any]:
        current = self.conversation
        if current is not None and current.id == info.id:
            # Still open in this process: its frozen prompt stays as it was.
            current.info = await self.io(self.store.touch, info.id)
            return self._announce(current.info, reason)
        messages = await self.io(self.store.messages, info.id)
        fired = await self.io(self.store.fired_rules, info.id)
        frozen = await self.io(freeze, self.workspace_root(), self.profile_root)
        self._warn_about(frozen.warnings)
        info = await self.io(self.store.touch, info.id)
        conversation = Conversation(
            info, messages, frozen, fired, store=self.store, io=self.io, emit=self.host.emit
        )
        self.conversation = conversation
        await conversation.record_event(
            "opened", {"reason": reason, "promptFiles": frozen.hashes()}
        )
        return self._announce(info, reason)

    def _warn_about(self, warnings: tuple[str, ...]) -> None:
        """Prompt files skipped at open (a link out of the workspace, a FIFO, ...): each in
        the log, and once to the user."""
        for warning in warnings:
            self.host.log("warning", warning)
        if len(warnings) == 1:
            self.host.show("warning", f"seri: {warnings[0]}")
        elif warnings:
            self.host.show(
                "warning",
                f"seri skipped {len(warnings)} prompt files (AGENTS.md, rules, memory); "
                "the log says which and why.",
            )

    def _announce(self, info: SessionInfo, reason: str) -> dict[str, Any]:
        wire = self.wire(info)
        self.host.emit(SessionChanged(wire, reason))
        return wire

    # --- reading --------------------------------------------------------------------------

    async def list(self, limit: int | None, all_projects: bool) -> list[dict[str, Any]]:
        """Sessions, most recently touched first: this project's, or every project's."""
        project = None if all_projects else self.project
        infos = await self.io(self.store.list, project, limit)
        return [self.wire(info) for info in infos]

    async def view(self, session_id: str | None) -> dict[str, Any]:
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
                "usage": {"estimateTokens": 0, "contextWindow": await self.context_window()},
                "paths": {"read": [], "modified": []},
            }
        if conversation is not None:
            info = await self.io(self.store.get, info.id)
            messages = conversation.messages
            estimate = conversation.estimate_tokens()
        else:
            messages = await self.io(self.store.messages, info.id)
            frozen = await self.io(freeze, self.workspace_root(), self.profile_root)
            chars = frozen.chars + sum(message.chars for message in messages)
            estimate = max(info.last_input_tokens or 0, tokens_for_chars(chars))
        paths = await self.io(self.store.paths, info.id)
        return {
            "session": self.wire(info),
            "messages": [message.to_wire() for message in messages],
            "usage": {"estimateTokens": estimate, "contextWindow": await self.context_window()},
            "paths": paths.to_wire(),
        }
