"""An open session: its frozen prompt, its running totals, and its history once needed.

Opening a session reads none of its messages. The token estimate comes from running
totals stored with the session (its message count and characters, kept by every
transaction that adds or removes messages), and the history is read from the store
the first time something needs it: `await conversation.load()`, which a task (and a
compaction) calls before it starts. Until then `conversation.messages` raises
`HistoryNotLoaded`, so nothing can read a history that is not there; a view of the
open session reads its page from the store instead. Once loaded, every change goes to
the store and to this in-memory copy together.

Every write is a step (`commit`): the messages of one step of a turn, with its
recording events, the billed token count, the paths its tools touched and the glob
rules it delivered, commit in one transaction; only then are the messages told to the
face (`seri/message`), so a message an editor was shown survives a kill.

What the next request carries is kept as the history grows (`PairedHistory`): every
message checked for whole tool-call pairs and encoded once, so a model call neither
re-checks nor re-encodes the history before it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from seri_lsp import faults
from seri_lsp.context.pairing import PairedHistory
from seri_lsp.context.prompt_files import FrozenPrompt
from seri_lsp.events import Event, MessageStored
from seri_lsp.store.database import STORE_ERRORS
from seri_lsp.store.messages import (
    Message,
    TurnEnd,
    TurnStatus,
    request_json,
    tokens_for_chars,
)
from seri_lsp.store.sessions import SessionInfo, SessionStore
from seri_lsp.store.spend import Spend
from seri_lsp.store.worker import Worker
from seri_lsp.trajectory.recording import Recorder

logger = logging.getLogger(__name__)


class HistoryNotLoaded(RuntimeError):
    """Something read `Conversation.messages` before `await conversation.load()` (a bug)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"The history of session {session_id} is not loaded; await conversation.load() "
            "before reading conversation.messages."
        )


@dataclass
class Step:
    """What one step of a turn stores, in one transaction: its messages (in order), its
    recording events (in order), the billed input-token count of a reply, the paths its
    tools read and modified, the glob rules it delivered (each with the position of its
    message in `messages`), and the spend of the model call it stores the reply of."""

    messages: list[Message] = field(default_factory=list)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    billed: int | None = None
    read: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    rules: list[tuple[str, int]] = field(default_factory=list)
    spend: Spend | None = None
    # Names the step's crash points (`SERI_CRASH_AT=<label>.in_transaction`, `.committed`).
    label: str = "step"
    # A task's prompt: the session's turn runs from here until `Conversation.end_turn`.
    turn_starts: bool = False

    def record(self, kind: str, data: dict[str, Any]) -> None:
        """A recording event of this step."""
        self.events.append((kind, data))

    def deliver(self, rule: str, message: Message) -> None:
        """Deliver a glob rule (its path) in this step, with the message that carries it."""
        self.rules.append((rule, len(self.messages)))
        self.messages.append(message)


def _request_json(message: Message) -> bytes:
    return request_json(message.to_provider())


class Conversation:
    """A session opened in this process.

    It writes through `store` on the `io` worker thread and tells the face about every
    stored message through `emit`. `messages` holds the history when given (a new
    session's: `[]`); None means it is read at the first `load()`.
    """

    def __init__(
        self,
        info: SessionInfo,
        frozen: FrozenPrompt,
        fired_rules: set[str],
        *,
        store: SessionStore,
        io: Worker,
        emit: Callable[[Event], None],
        recorder: Recorder | None = None,
        messages: list[Message] | None = None,
    ) -> None:
        self.info = info
        self.frozen = frozen
        self.fired_rules = fired_rules
        self._messages = messages
        # Running totals of the stored history: they make the estimate, loaded or not.
        self.chars = info.total_chars if messages is None else sum(m.chars for m in messages)
        self.last_billed: int | None = info.last_input_tokens
        # Messages appended since the last compaction was committed (on load: everything
        # the recap does not stand for); None until the history is loaded. A compaction
        # needs at least one, so compacting can never repeat itself without the
        # conversation having moved on.
        self.appended_since_compaction: int | None = None
        if messages is not None:
            self.appended_since_compaction = sum(1 for m in messages if not m.is_recap)
        self._paired: PairedHistory | None = None
        self._system_json: bytes | None = None
        self._loading: asyncio.Lock | None = None
        self._store = store
        self._io = io
        self._emit = emit
        # The session's recording in progress in this process (None: recording is off).
        self.recorder = recorder

    @property
    def session_id(self) -> str:
        return self.info.id

    # --- the history ------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        """Whether the history is in memory (`messages` may be read)."""
        return self._messages is not None

    @property
    def messages(self) -> list[Message]:
        """The history, oldest first; HistoryNotLoaded before `load()`."""
        if self._messages is None:
            raise HistoryNotLoaded(self.session_id)
        return self._messages

    async def load(self) -> list[Message]:
        """Read the history from the store, the first time; after that it costs nothing."""
        if self._messages is None:
            if self._loading is None:
                self._loading = asyncio.Lock()
            async with self._loading:
                if self._messages is None:
                    messages = await self._io(self._store.messages, self.session_id)
                    self._messages = messages
                    self.appended_since_compaction = sum(1 for m in messages if not m.is_recap)
        return self._messages

    def estimate_tokens(self) -> int:
        """max(last billed input tokens, ceil(chars / 4)) over what the next call sends."""
        local = tokens_for_chars(self.frozen.chars + self.chars)
        return max(self.last_billed or 0, local)

    def system_message(self) -> dict[str, Any]:
        """The frozen system message, identical on every request of this open session."""
        return {"role": "system", "content": self.frozen.system}

    def request(self) -> tuple[list[bytes], list[str]]:
        """What the next model call sends: the system message and the history, each as
        encoded request JSON, every tool call answered and every result matched (with
        the repairs that took, for the log). Needs the history loaded."""
        if self._paired is None:
            self._paired = PairedHistory(self.messages, encode=_request_json)
        if self._system_json is None:
            self._system_json = request_json(self.system_message())
        pieces, repairs = self._paired.encoded_request()
        return [self._system_json, *pieces], repairs

    # --- writing ----------------------------------------------------------------------

    async def commit(self, step: Step) -> list[Message]:
        """Store one step in one transaction, then tell the face about its messages."""
        stored = await self._write(step)
        faults.crash_point(f"{step.label}.committed")
        self.chars += sum(message.chars for message in stored)
        if self._messages is not None:
            self._messages.extend(stored)
            assert self.appended_since_compaction is not None
            self.appended_since_compaction += len(stored)
        if self._paired is not None:
            for message in stored:
                self._paired.add(message)
        if step.billed is not None:
            self.last_billed = step.billed
        self.fired_rules.update(rule for rule, _ in step.rules)
        for message in stored:
            self._emit(MessageStored(self.session_id, message))
        return stored

    async def append(self, message: Message) -> Message:
        """Store a message at the end of the session and tell the face."""
        [stored] = await self.commit(Step([message]))
        return stored

    def _write(self, step: Step) -> asyncio.Future[list[Message]]:
        recorder = self.recorder
        also = None
        if recorder is not None and step.events:
            also = recorder.writer([recorder.number(kind, data) for kind, data in step.events])
        return self._io(
            self._store.write_step,
            self.session_id,
            step.messages,
            billed=step.billed,
            read=step.read,
            modified=step.modified,
            rules=step.rules,
            spend=step.spend,
            also=also,
            label=step.label,
            turn_starts=step.turn_starts,
        )

    async def end_turn(self, status: TurnStatus, error: str | None) -> None:
        """Store how the running turn ended, on the last message of the conversation
        (where a reopened chat shows it), and mark no turn running. Best effort: a store
        that fails to take it is logged."""
        try:
            message_id = await self._io(self._store.end_turn, self.session_id, status, error)
        except STORE_ERRORS:
            # The turn's work is stored; only its end's mark is missing (the next open
            # marks it interrupted).
            logger.warning("Could not store how the turn of %s ended", self.session_id)
            return
        if self._messages:
            last = self._messages[-1]
            if last.id == message_id:
                self._messages[-1] = replace(last, turn_end=TurnEnd(status, error))

    async def replace_prefix(self, replaced: Sequence[Message], recap: Message) -> Message:
        """Commit a compaction: the recap replaces the earlier recap and the evicted. A
        glob rule whose message was evicted fires again at its next matching path."""
        messages = self.messages
        stored, self.fired_rules = await self._io(
            self._store.replace_prefix, self.session_id, replaced, recap
        )
        gone = {message.id for message in replaced}
        self._messages = [stored, *(m for m in messages if m.id not in gone)]
        self._paired = None
        self.chars += stored.chars - sum(message.chars for message in replaced)
        # The billed count described the history before the cut; it no longer applies.
        self.last_billed = None
        self.appended_since_compaction = 0
        self._emit(MessageStored(self.session_id, stored))
        return stored

    def forget_from(
        self, seq: int, *, info: SessionInfo, last_billed: int | None, fired_rules: set[str]
    ) -> None:
        """A rewind removed the messages from position `seq` on (already in the store).

        The running totals follow (`info` is the session as the rewind left it): the
        character count, the billed count and the glob rules delivered go back to what
        they were before the removed prompt.
        """
        if self._messages is not None:
            kept = [m for m in self._messages if m.seq is None or m.seq < seq]
            removed = len(self._messages) - len(kept)
            self._messages = kept
            assert self.appended_since_compaction is not None
            self.appended_since_compaction = max(0, self.appended_since_compaction - removed)
        self._paired = None
        self.info = info
        self.chars = info.total_chars
        self.last_billed = last_billed
        self.fired_rules = set(fired_rules)

    # --- recording --------------------------------------------------------------------

    async def record_event(self, kind: str, data: dict[str, Any]) -> None:
        """Record a non-message happening (retry, denial, usage, ...) in the session's
        recording in progress; nothing is written when recording is off."""
        if self.recorder is not None:
            await self.recorder.record(kind, data)

    async def record_event_softly(self, kind: str, data: dict[str, Any]) -> None:
        """`record_event` for the record of work already done (a task's end, a rewind): a
        store that fails to take it is logged, and the work stands as done."""
        try:
            await self.record_event(kind, data)
        except STORE_ERRORS:
            logger.warning(
                "Could not record the %s event of session %s", kind, self.session_id, exc_info=True
            )

    async def note_context_window(self, window: int) -> None:
        """The model's context window is known now (the recording's header wants it)."""
        if self.recorder is not None:
            await self.recorder.note_context_window(window)

    # --- paths ------------------------------------------------------------------------

    async def paths(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(read, modified) paths of this session's tools."""
        paths = await self._io(self._store.paths, self.session_id)
        return paths.read, paths.modified
