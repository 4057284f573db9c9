"""Which session this process has open, and the turn budget in force for it.

Opening a session freezes its prompt files once and reads none of its messages (they
wait for the first prompt, `Conversation.load`); reopening the session that is already
open keeps that frozen prompt. Every change of the open session
is announced to the face (`SessionChanged`).

One session, one window: the open session is held with an OS file lock (`store/locks`),
so a second seri process cannot open it too. Opening a session another process holds is
refused (`SessionHeld`, naming its pid); continuing picks the project's most recent
session that nobody else holds. Switching sessions lets the previous one go; closing
lets every one go, and the kernel does it if the process dies. A subagent's child
session lives inside its parent's task and takes no lock of its own.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from seri_lsp.context.breakdown import apportion, history_parts
from seri_lsp.context.compaction import compaction_threshold, keep_budget
from seri_lsp.context.conversation import Conversation
from seri_lsp.context.fork import fork_point, fork_title
from seri_lsp.context.prompt_files import FrozenPrompt, freeze
from seri_lsp.errors import InvalidArgument, SeriError, SessionHeld
from seri_lsp.events import SessionChanged
from seri_lsp.host import Host, Level
from seri_lsp.store import spend
from seri_lsp.store.deletion import Deletion, SubagentSession, delete_session
from seri_lsp.store.locks import Holder, SessionLocks
from seri_lsp.store.messages import EncodedMessages, Message, tokens_for_chars
from seri_lsp.store.sessions import Session, SessionInfo, SessionPaths, SessionStore
from seri_lsp.store.spend import KINDS, SpendTotals
from seri_lsp.store.worker import Worker
from seri_lsp.trajectory.recording import Recordings

Note = tuple[Level, str]  # a log line: (level, text)


@dataclass(frozen=True)
class SessionView:
    """`seri.session.get`'s answer: a session (None: none is open), its messages (a page
    of them, oldest first), whether older ones exist, its token usage and its paths."""

    session: Session | None
    messages: list[dict[str, Any]] | EncodedMessages
    has_more: bool
    usage: dict[str, Any]
    paths: SessionPaths


@dataclass(frozen=True)
class Deleted:
    """`seri.session.delete`'s answer: what was deleted, and the session opened in place
    of the deleted one when it was the open one (None otherwise)."""

    deleted: Deletion
    session: Session | None


class SessionManager:
    """Opens, lists and describes the sessions of one project."""

    def __init__(
        self,
        *,
        project: str,
        store: SessionStore,
        locks: SessionLocks,
        io: Worker,
        host: Host,
        workspace_root: Callable[[], Path | None],
        profile_root: Path,
        context_window: Callable[[], Awaitable[int]],
        window_source: Callable[[], str],
        recordings: Recordings,
        default_max_turns: int,
        max_turns_flag: int | None = None,
        on_open: Callable[[SessionInfo], Awaitable[None]] | None = None,
        default_model: Callable[[], str] | None = None,
    ) -> None:
        self.project = project
        self.store = store
        self.locks = locks
        self.io = io
        self.host = host
        self.workspace_root = workspace_root
        self.profile_root = profile_root
        self.context_window = context_window
        # Where the window came from, once `context_window()` has given it.
        self.window_source = window_source
        self.recordings = recordings
        self.conversation: Conversation | None = None
        # Switches of the open session happen one at a time, so each lets go of exactly
        # the session it replaced.
        self._switching = asyncio.Lock()
        self._default_max_turns = default_max_turns
        self._max_turns_flag = max_turns_flag
        self._budgets_set_here: set[str] = set()
        # Told after every open (a touch of the session): checkpoint retention.
        self._on_open = on_open
        # The `provider.model` setting: the model of a session that chose none.
        self._default_model = default_model

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
            self._max_turns_flag is None or conversation.session_id in self._budgets_set_here
        ):
            return stored
        return self.default_max_turns()

    def session(self, info: SessionInfo) -> Session:
        """A session as the contract shows it (max_turns: the budget in force)."""
        default_model = self._default_model() if self._default_model is not None else None
        session = info.session(self.default_max_turns(), default_model)
        if self._max_turns_flag is not None and info.id not in self._budgets_set_here:
            # The command line's budget wins over the session's own until one is set here.
            return replace(session, max_turns=self._max_turns_flag)
        return session

    async def set_max_turns(self, n: int) -> dict[str, Any]:
        """Change the turn budget for the rest of the open session (persisted with it)."""
        conversation = await self.ensure_open()
        conversation.info = await self.io(self.store.set_max_turns, conversation.session_id, n)
        self._budgets_set_here.add(conversation.session_id)
        await conversation.record_event("budget", {"maxTurns": n})
        return {"maxTurns": n, "session": self.session(conversation.info)}

    async def rename(self, session_id: str | None, title: str) -> Session:
        """Give a session (the open one, started if none is, when `session_id` is None)
        the user's title. Renaming the open session is announced (reason `renamed`)."""
        if session_id is None:
            target = (await self.ensure_open()).session_id
        else:
            target = (await self.io(self.store.resolve, session_id)).id
        info = await self.io(self.store.rename, target, title)
        conversation = self.conversation
        if conversation is not None and conversation.session_id == info.id:
            conversation.info = replace(conversation.info, title=info.title)
            return self._announce(conversation.info, "renamed", None)
        return self.session(info)

    def model_chosen(self, info: SessionInfo) -> Session:
        """The open session chose its model (`seri.session.model`): announced with reason
        `model`; the conversation and the rest stay as they were."""
        return self._announce(info, "model", None)

    # --- opening --------------------------------------------------------------------------

    async def new(self, reason: str = "new") -> Session:
        """Start a new, empty session in this project and open it."""
        async with self._switching:
            return await self._new(reason)

    async def _new(
        self, reason: str = "new", *, note: Callable[[str], Note] | None = None
    ) -> Session:
        # Locked before its row exists, so no other process can continue it first.
        session_id = str(uuid.uuid4())
        await self._acquire(session_id)
        try:
            info = await self.io(self.store.create, self.project, session_id=session_id)
        except BaseException:
            self.locks.release(session_id)
            raise
        return await self._open(
            info, reason, new=True, note=None if note is None else note(session_id)
        )

    async def continue_latest(self, *, or_new: bool = False) -> Session | None:
        """Open the project's most recently touched session that no other process holds.

        None when the project has no session. When every one is open in another seri
        process: a new session with `or_new` (resume on open, `run --continue`), else
        SessionHeld naming the holder of the most recent. The log says which.
        """
        async with self._switching:
            return await self._continue_latest(or_new)

    async def _continue_latest(self, or_new: bool) -> Session | None:
        candidates = await self.io(self.store.recent_ids, self.project)
        if not candidates:
            self.host.log(
                "info",
                "No earlier session in this project; a new one starts with the first prompt.",
            )
            return None
        skipped: tuple[str, Holder] | None = None
        free: str | None = None
        for candidate in candidates:
            holder = await self.io(self.locks.acquire, candidate)
            if holder is None:
                free = candidate
                break
            skipped = skipped or (candidate, holder)
        if free is None:
            assert skipped is not None
            latest, latest_holder = skipped
            why = (
                f"open in another seri process (the most recent, {latest}, in "
                f"{latest_holder.describe()})"
            )
            if not or_new:
                raise SessionHeld(
                    latest,
                    latest_holder.describe(),
                    f"Every session of this project is {why}; close one there, or start a new "
                    "session.",
                )
            return await self._new(
                note=lambda new_id: (
                    "warning",
                    f"Started a new session {new_id}: every session of this project is {why}.",
                )
            )
        session_id = free
        try:
            info = await self.io(self.store.get, session_id)
        except BaseException:
            self._release_unless_open(session_id)
            raise
        note: Note
        if skipped is None:
            note = ("info", f"Continued session {session_id}, the project's latest.")
        else:
            note = (
                "info",
                f"Continued session {session_id}, the latest not open in another seri process "
                f"(session {skipped[0]} is open in {skipped[1].describe()}).",
            )
        return await self._open(info, "continued", note=note)

    async def resume(self, session_id: str) -> Session:
        """Open a session by id (or unique id prefix).

        UnknownSession if none matches, SessionHeld if another seri process has it open.
        """
        async with self._switching:
            info = await self.io(self.store.resolve, session_id)
            return await self._open(info, "resumed")

    async def fork(self, session_id: str | None, message_id: int | None) -> dict[str, Any]:
        """Copy a session (the open one by default) up to a message (default: its last)
        into a new session, and open the fork (`forked`). The fork point moves forward
        over a tool call's results (`context.fork`); `forkedAt` is where it really is.

        The source is only read (it may be open here or in another process): its
        messages, path lists, spend and checkpoints stay as they were.
        """
        async with self._switching:
            source = await self._subject(session_id)
            if source is None:
                raise SeriError(
                    "No session is open to fork; give sessionId (seri.session.list lists them)."
                )
            # Locked before its row exists, so no other process can continue it first.
            fork_id = str(uuid.uuid4())
            await self._acquire(fork_id)
            try:
                info, forked_at = await self.io(
                    self.store.fork,
                    source,
                    fork_id,
                    point=lambda outline: fork_point(outline, message_id, source),
                    title=fork_title,
                )
            except BaseException:
                self.locks.release(fork_id)
                raise
            note: Note = ("info", f"Forked session {source} at message {forked_at}: {fork_id}.")
            session = await self._open(info, "forked", note=note)
            return {"session": session, "forkedAt": forked_at}

    async def delete(self, session_id: str, ensure_idle: Callable[[], None]) -> Deleted:
        """Delete a session (by id or unique prefix) and its subagents' sessions, with
        everything stored for them (`store/deletion.py`), in one transaction.

        The open session only while no task runs (`ensure_idle` raises Busy), and then a
        new, empty session is opened in its place (announced, reason `new`); a session
        another seri process has open is refused (SessionHeld).
        """
        async with self._switching:
            target = await self.io(self.store.resolve, session_id)
            if target.parent_id is not None:
                raise SubagentSession(target.id, target.parent_id)
            conversation = self.conversation
            is_open = conversation is not None and conversation.session_id == target.id
            if is_open:
                ensure_idle()
            else:
                # Held while it is deleted, so no other process opens it meanwhile.
                await self._acquire(target.id)
            try:
                deletion = await self.io(delete_session, self.store.db, target.id)
            except BaseException:
                self._release_unless_open(target.id)
                raise
            if is_open:
                assert conversation is not None
                self.recordings.finish(conversation)
                self.conversation = None
            self.locks.forget(target.id)
            note: Note = ("info", f"Deleted session {target.id} ({target.title or 'untitled'}).")
            if not is_open:
                self.host.log(*note)
                return Deleted(deletion, None)
            return Deleted(deletion, await self._new(note=lambda new_id: note))

    async def _subject(self, session_id: str | None) -> str | None:
        """The id of the session a command is about: the one given (id or unique prefix),
        else the open one (None: none is open)."""
        if session_id is not None:
            return (await self.io(self.store.resolve, session_id)).id
        return self.conversation.session_id if self.conversation is not None else None

    async def ensure_open(self) -> Conversation:
        """The open conversation, starting a new session if none is open."""
        async with self._switching:
            if self.conversation is None:
                await self._new()
            assert self.conversation is not None
            return self.conversation

    def close(self) -> None:
        """Let every held session go (the engine is closing)."""
        if self.conversation is not None:
            self.recordings.finish(self.conversation)
        self.locks.release_all()

    async def _acquire(self, session_id: str) -> None:
        holder = await self.io(self.locks.acquire, session_id)
        if holder is not None:
            raise SessionHeld(session_id, holder.describe())

    def _release_unless_open(self, session_id: str) -> None:
        if self.conversation is None or self.conversation.session_id != session_id:
            self.locks.release(session_id)

    async def _open(
        self, info: SessionInfo, reason: str, *, new: bool = False, note: Note | None = None
    ) -> Session:
        """Open `info` in this process and announce it. `note`, a log line saying why this
        session, goes out just before the announcement, so a client has it in hand when
        the change arrives."""
        current = self.conversation
        if current is not None and current.session_id == info.id:
            # Still open in this process: its frozen prompt (and recording) stay as they were.
            current.info = await self.io(self.store.touch, info.id)
            await self._opened(current.info)
            return self._announce(current.info, reason, note)
        await self._acquire(info.id)
        try:
            # No message is read: the history waits for the first prompt or view. A turn
            # left running by a process that died is marked interrupted first.
            await self.io(self.store.close_interrupted_turn, info.id)
            fired = await self.io(self.store.fired_rules, info.id)
            frozen = await self.io(freeze, self.workspace_root(), self.profile_root)
            info = await self.io(self.store.touch, info.id)
        except BaseException:
            self.locks.release(info.id)
            raise
        self._warn_about(frozen.warnings)
        conversation = Conversation(
            info,
            frozen,
            fired,
            store=self.store,
            io=self.io,
            emit=self.host.emit,
            messages=[] if new else None,  # a new session's history is known: empty
        )
        self.conversation = conversation
        if current is not None:
            self.recordings.finish(current)
            self.locks.release(current.session_id)
        await self.recordings.start(
            conversation, reason=reason, max_turns=self.max_turns_for(conversation)
        )
        await conversation.record_event(
            "opened", {"reason": reason, "promptFiles": frozen.hashes()}
        )
        # Retention (checkpoints; recordings, with this session's recording already in
        # progress, so it is kept).
        await self._opened(info)
        return self._announce(info, reason, note)

    async def _opened(self, info: SessionInfo) -> None:
        """Retention at every session open: recordings (the one in progress is kept),
        then whatever else the engine keeps per session (checkpoints)."""
        await self.recordings.prune()
        if self._on_open is not None:
            await self._on_open(info)

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

    def _announce(self, info: SessionInfo, reason: str, note: Note | None) -> Session:
        if note is not None:
            self.host.log(*note)
        wire = self.session(info)
        self.host.emit(SessionChanged(wire, reason))
        return wire

    # --- reading --------------------------------------------------------------------------

    async def recent(self, limit: int | None, all_projects: bool) -> list[Session]:
        """Sessions, most recently touched first: this project's, or every project's."""
        project = None if all_projects else self.project
        infos = await self.io(self.store.recent, project, limit)
        return [self.session(info) for info in infos]

    async def page(
        self, project: str | None, offset: int, limit: int, *, with_messages: bool = False
    ) -> tuple[list[Session], bool]:
        """One page of the sessions of `project` (every project's when None), most
        recently touched first, and whether more follow it; with `with_messages`, only
        sessions that hold a message."""
        infos = await self.io(
            lambda: self.store.recent(project, limit + 1, offset, with_messages=with_messages)
        )
        return [self.session(info) for info in infos[:limit]], len(infos) > limit

    async def view(
        self,
        session_id: str | None,
        *,
        limit: int | None = None,
        before: int | None = None,
        encoded: bool = False,
    ) -> SessionView:
        """A session with its messages, token usage and path lists (the open one by default).

        With `limit`, only the newest `limit` messages, and with `before` only those that
        come before that message (InvalidArgument when it is not one of the session's);
        `hasMore` says whether older messages exist (always false without `limit`). With
        `encoded`, the messages come as EncodedMessages (for a face that writes JSON).
        """
        conversation = self.conversation
        if session_id is not None:
            info = await self.io(self.store.resolve, session_id)
            if conversation is not None and conversation.session_id == info.id:
                info = conversation.info
            else:
                conversation = None
        elif conversation is not None:
            info = conversation.info
        else:
            if before is not None:
                raise _not_a_message(before, None)
            return SessionView(None, [], False, await self._usage(0), SessionPaths((), ()))
        messages: list[dict[str, Any]] | EncodedMessages
        if conversation is not None and conversation.loaded:
            # A history in memory (a task read it) is served from there; one not loaded
            # comes straight from the store, a page or all of it, and stays unloaded.
            info, paths = await self.io(self._fresh_info_and_paths, info.id)
            loaded, has_more = page(conversation.messages, limit, before, info.id)
            messages = [message.to_wire() for message in loaded]
            if encoded:
                messages = EncodedMessages.of(messages)
            estimate = conversation.estimate_tokens()
        elif conversation is not None:
            info, messages, has_more, paths = await self.io(
                self._read_open, info.id, limit, before, encoded
            )
            estimate = conversation.estimate_tokens()
        else:
            root = self.workspace_root()
            messages, has_more, chars, paths = await self.io(
                self._read_stored, info.id, limit, before, root, encoded
            )
            estimate = max(info.last_input_tokens or 0, tokens_for_chars(chars))
        return SessionView(
            self.session(info), messages, has_more, await self._usage(estimate), paths
        )

    async def usage(self, session_id: str | None) -> dict[str, Any]:
        """What a session (the open one by default) has spent on model calls: its totals
        (its subagents' included), split by what the calls were for, and the share of
        input tokens the provider served from its cache (null before any input)."""
        subject = await self._subject(session_id)
        if subject is None:
            totals, by_kind = SpendTotals(), {kind: SpendTotals() for kind in KINDS}
        else:
            totals, by_kind = await self.io(spend.usage, self.store.db, subject)
        rate = totals.cached_input_tokens / totals.input_tokens if totals.input_tokens else None
        return {
            "sessionId": subject,
            "totals": totals,
            "byKind": by_kind,
            "calls": totals.calls,
            "cacheHitRate": rate,
        }

    async def context(self, session_id: str | None, keep_tokens: int) -> dict[str, Any]:
        """What fills a session's context (the open one by default): the local estimate
        split into parts (`context.breakdown`) that add up to `localTokens`, the count the
        compaction trigger uses, beside the window, where compaction starts and the
        estimate the trigger compares with it, and the keep budget in force (`keepTokens`,
        at most a quarter of the window) beside the setting. With no session open: what a new one
        starts with (its system message)."""
        subject = await self._subject(session_id)
        conversation = self.conversation
        if conversation is not None and conversation.session_id == subject:
            await conversation.load()
            frozen, messages = conversation.frozen, conversation.messages
            billed, chars = conversation.last_billed, conversation.chars
        else:
            info, messages, frozen = await self.io(self._stored_history, subject)
            billed = info.last_input_tokens if info is not None else None
            chars = info.total_chars if info is not None else 0
        local = tokens_for_chars(frozen.chars + chars)
        window = await self.context_window()
        return {
            "sessionId": subject,
            "contextWindow": window,
            "compactAt": compaction_threshold(window),
            "keepTokens": keep_budget(keep_tokens, window),
            "keepTokensSetting": keep_tokens,
            "estimateTokens": max(billed or 0, local),
            "lastBilledTokens": billed,
            "localTokens": local,
            "parts": apportion([*frozen.parts, *history_parts(messages)]),
        }

    def _stored_history(
        self, session_id: str | None
    ) -> tuple[SessionInfo | None, list[Message], FrozenPrompt]:
        """A session that is not open here (None: no session): its row, its messages and
        the prompt it would freeze if opened now (on the database thread, in one go)."""
        frozen = freeze(self.workspace_root(), self.profile_root)
        if session_id is None:
            return None, [], frozen
        return self.store.get(session_id), self.store.messages(session_id), frozen

    async def _usage(self, estimate: int) -> dict[str, Any]:
        """The context use as views report it: the window and where it came from
        (`setting`, `provider` or `default`); compaction starts at `compactAt` tokens
        (half the window, SPEC 4)."""
        window = await self.context_window()
        return {
            "estimateTokens": estimate,
            "contextWindow": window,
            "contextWindowSource": self.window_source(),
            "compactAt": compaction_threshold(window),
        }

    # On the database thread, in one go: each trip there costs as much as a small read.

    def _fresh_info_and_paths(self, session_id: str) -> tuple[SessionInfo, SessionPaths]:
        return self.store.get(session_id), self.store.paths(session_id)

    def _read_open(
        self, session_id: str, limit: int | None, before: int | None, encoded: bool
    ) -> tuple[SessionInfo, list[dict[str, Any]] | EncodedMessages, bool, SessionPaths]:
        """The open session (not loaded): its row, a page of it, and its paths."""
        messages, has_more = self._page(session_id, limit, before, encoded)
        return self.store.get(session_id), messages, has_more, self.store.paths(session_id)

    def _read_stored(
        self,
        session_id: str,
        limit: int | None,
        before: int | None,
        root: Path | None,
        encoded: bool,
    ) -> tuple[list[dict[str, Any]] | EncodedMessages, bool, int, SessionPaths]:
        """A page of a session that is not open, its character total, and its paths."""
        messages, has_more = self._page(session_id, limit, before, encoded)
        _, total_chars = self.store.totals(session_id)
        frozen = freeze(root, self.profile_root)
        return messages, has_more, frozen.chars + total_chars, self.store.paths(session_id)

    def _page(
        self, session_id: str, limit: int | None, before: int | None, encoded: bool
    ) -> tuple[list[dict[str, Any]] | EncodedMessages, bool]:
        before_seq = None
        if before is not None:
            before_seq = self.store.message_seq(session_id, before)
            if before_seq is None:
                raise _not_a_message(before, session_id)
        if encoded:
            return self.store.encoded_page(session_id, limit, before_seq)
        return self.store.wire_page(session_id, limit, before_seq)


def page(
    messages: Sequence[Message], limit: int | None, before: int | None, session_id: str
) -> tuple[Sequence[Message], bool]:
    """The newest `limit` of `messages` (all without a limit) that come before message
    `before` (when given), and whether older ones exist."""
    end = len(messages)
    if before is not None:
        # Pages are asked from the newest backwards: look from the end.
        end = next((i for i in range(end - 1, -1, -1) if messages[i].id == before), -1)
        if end < 0:
            raise _not_a_message(before, session_id)
    start = 0 if limit is None else max(0, end - limit)
    return messages[start:end], start > 0


def _not_a_message(before: int, session_id: str | None) -> InvalidArgument:
    if session_id is None:
        return InvalidArgument(
            "before", "before must be the id of a message of the open session; none is open"
        )
    return InvalidArgument(
        "before",
        f"before must be the id of a message of session {session_id}; {before} is not one "
        "(give the id of the oldest message you have)",
    )
