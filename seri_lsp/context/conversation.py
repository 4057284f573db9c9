"""An open session: its history in memory, its frozen prompt, its running totals.

Opening a session reads its messages once; from then on every change goes to the store
and to this in-memory copy together, and the character total is kept incrementally, so
the token estimate before each model call costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from seri_lsp.context.prompt_files import FrozenPrompt
from seri_lsp.context.recording import Recorder
from seri_lsp.events import Event, MessageStored
from seri_lsp.store.messages import Message, tokens_for_chars
from seri_lsp.store.sessions import SessionInfo, SessionStore
from seri_lsp.store.worker import Worker


class Conversation:
    """A session opened in this process.

    It writes through `store` on the `io` worker thread and tells the face about every
    stored message through `emit`.
    """

    def __init__(
        self,
        info: SessionInfo,
        messages: list[Message],
        frozen: FrozenPrompt,
        fired_rules: set[str],
        *,
        store: SessionStore,
        io: Worker,
        emit: Callable[[Event], None],
        recorder: Recorder | None = None,
    ) -> None:
        self.info = info
        self.messages = messages
        self.frozen = frozen
        self.fired_rules = fired_rules
        self.chars = sum(message.chars for message in messages)
        self.last_billed: int | None = info.last_input_tokens
        # Messages appended since the last compaction was committed (on open: everything
        # the recap does not stand for). A compaction needs at least one, so compacting
        # can never repeat itself without the conversation having moved on.
        self.appended_since_compaction = sum(1 for m in messages if not m.is_recap)
        self._store = store
        self._io = io
        self._emit = emit
        # The session's recording in progress in this process (None: recording is off).
        self.recorder = recorder

    @property
    def id(self) -> str:
        return self.info.id

    def estimate_tokens(self) -> int:
        """max(last billed input tokens, ceil(chars / 4)) over what the next call sends."""
        local = tokens_for_chars(self.frozen.chars + self.chars)
        return max(self.last_billed or 0, local)

    def system_message(self) -> dict[str, Any]:
        """The frozen system message, identical on every request of this open session."""
        return {"role": "system", "content": self.frozen.system}

    async def append(self, message: Message) -> Message:
        """Store a message at the end of the session and tell the face."""
        stored = await self._io(self._store.append, self.id, message)
        self.messages.append(stored)
        self.chars += stored.chars
        self.appended_since_compaction += 1
        self._emit(MessageStored(self.id, stored))
        return stored

    async def replace_prefix(self, replaced: Sequence[Message], recap: Message) -> Message:
        """Commit a compaction: the recap replaces the earlier recap and the evicted."""
        stored = await self._io(self._store.replace_prefix, self.id, replaced, recap)
        gone = {message.id for message in replaced}
        self.messages = [stored, *(m for m in self.messages if m.id not in gone)]
        self.chars += stored.chars - sum(message.chars for message in replaced)
        # The billed count described the history before the cut; it no longer applies.
        self.last_billed = None
        self.appended_since_compaction = 0
        self._emit(MessageStored(self.id, stored))
        return stored

    def forget_from(self, seq: int, *, last_billed: int | None, fired_rules: set[str]) -> None:
        """A rewind removed the messages from position `seq` on (already in the store).

        The running totals follow: the character count, the billed count and the glob
        rules delivered go back to what they were before the removed prompt.
        """
        kept = [m for m in self.messages if m.seq is None or m.seq < seq]
        removed = len(self.messages) - len(kept)
        self.messages = kept
        self.chars = sum(message.chars for message in kept)
        self.last_billed = last_billed
        self.fired_rules = set(fired_rules)
        self.appended_since_compaction = max(0, self.appended_since_compaction - removed)

    async def record_event(self, kind: str, data: dict[str, Any]) -> None:
        """Record a non-message happening (retry, denial, usage, ...) in the session's
        recording in progress; nothing is written when recording is off."""
        if self.recorder is not None:
            await self.recorder.record(kind, data)

    async def note_context_window(self, window: int) -> None:
        """The model's context window is known now (the recording's header wants it)."""
        if self.recorder is not None:
            await self.recorder.note_context_window(window)

    async def record_usage(
        self, purpose: str, input_tokens: int | None, output_tokens: int | None
    ) -> None:
        """Record billed tokens; a turn's input count becomes the new estimate floor."""
        if purpose == "turn" and input_tokens is not None:
            self.last_billed = input_tokens
            await self._io(self._store.set_last_input_tokens, self.id, input_tokens)
        await self.record_event(
            "usage",
            {"purpose": purpose, "inputTokens": input_tokens, "outputTokens": output_tokens},
        )

    async def add_paths(self, read: Iterable[str], modified: Iterable[str]) -> None:
        """Note the paths a tool read or modified, for the session's path lists."""
        await self._io(self._store.add_paths, self.id, tuple(read), tuple(modified))

    async def mark_rule_fired(self, rule: str) -> None:
        """Remember that a glob rule was delivered, so it arrives only once per session."""
        self.fired_rules.add(rule)
        await self._io(self._store.mark_rule_fired, self.id, rule)

    async def paths(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(read, modified) paths of this session's tools."""
        paths = await self._io(self._store.paths, self.id)
        return paths.read, paths.modified
