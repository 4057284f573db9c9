"""An open session: its history in memory, its frozen prompt, its running totals.

Opening a session reads its messages once; from then on every change goes to the store
and to this in-memory copy together, and the character total is kept incrementally, so
the token estimate before each model call costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from seri_lsp.cancel import CancelScope
from seri_lsp.events import MessageStored
from seri_lsp.messages import Message, tokens_for_chars
from seri_lsp.prompt_files import FrozenPrompt
from seri_lsp.provider import RetryNotice, Usage
from seri_lsp.sessions import SessionInfo

if TYPE_CHECKING:
    from seri_lsp.compaction import CompactionPlan
    from seri_lsp.engine import Engine


class Conversation:
    """A session opened in this process."""

    def __init__(
        self,
        engine: Engine,
        info: SessionInfo,
        messages: list[Message],
        frozen: FrozenPrompt,
        fired_rules: set[str],
    ) -> None:
        self.engine = engine
        self.info = info
        self.messages = messages
        self.frozen = frozen
        self.fired_rules = fired_rules
        self.chars = sum(message.chars for message in messages)
        self.last_billed: int | None = info.last_input_tokens
        self.scope = CancelScope()

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
        engine = self.engine
        stored = await engine.io(engine.store.append, self.id, message)
        self.messages.append(stored)
        self.chars += stored.chars
        engine.host.emit(MessageStored(self.id, stored))
        return stored

    async def replace_prefix(self, plan: CompactionPlan, recap: Message) -> Message:
        """Commit a compaction: the recap replaces the earlier recap and the evicted."""
        engine = self.engine
        stored = await engine.io(engine.store.replace_prefix, self.id, plan.replaced, recap)
        gone = {message.id for message in plan.replaced}
        self.messages = [stored, *(m for m in self.messages if m.id not in gone)]
        self.chars += stored.chars - sum(message.chars for message in plan.replaced)
        # The billed count described the history before the cut; it no longer applies.
        self.last_billed = None
        engine.host.emit(MessageStored(self.id, stored))
        return stored

    async def record_event(self, kind: str, data: dict[str, Any]) -> None:
        """Record a non-message happening (retry, denial, usage, ...) with the session."""
        await self.engine.io(self.engine.store.record_event, self.id, kind, data)

    async def record_usage(self, usage: Usage, *, purpose: str) -> None:
        """Record billed tokens; a turn's input count becomes the new estimate floor."""
        if purpose == "turn" and usage.input_tokens is not None:
            self.last_billed = usage.input_tokens
            await self.engine.io(
                self.engine.store.set_last_input_tokens, self.id, usage.input_tokens
            )
        await self.record_event("usage", {"purpose": purpose, **usage.to_json()})

    async def record_retry(self, notice: RetryNotice) -> None:
        """Record a provider retry, and say so in the log."""
        self.engine.host.log(
            "warning",
            f"Provider error ({notice.error}); retry {notice.attempt} in {notice.delay:.1f}s.",
        )
        await self.record_event("retry", notice.to_json())
