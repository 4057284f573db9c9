"""One ACP session's transcript: seri's messages and events as `session/update`s.

Live, a prompt's reply streams as `agent_message_chunk`s (its thinking as
`agent_thought_chunk`s); each tool call the model asks for appears as a `tool_call`
(pending), turns `in_progress` when it starts and ends with a `tool_call_update`
(completed or failed) carrying its result, and a diff when it changed a file. The
user's own prompt is not echoed (the client shows it). A compaction, a rule that came
into force, any other message seri writes for the model, and what seri tells the user
appear as notes: agent message chunks of their own (`messageId`), marked
`_meta.seri.kind`.

Replayed (`session/load`), the stored conversation comes back in order: the recap of a
compacted session first (as a note), the user's messages, the model's thinking and
replies, and every tool call with its status and result. A call that never got its
result (the process was killed while it ran or waited for an answer) is closed as
failed, "no result: interrupted", where the next message starts or at the end, as the
requests to the model close it.

Only the ACP session's own seri session is shown; a subagent's conversation stays in its
child session and appears through the `task` call's result.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AvailableCommandsUpdate,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    UserMessageChunk,
)

from seri_lsp.acp.toolcalls import (
    Locate,
    ToolContent,
    change_content,
    change_location,
    present,
    replayed_change,
    text_content,
)
from seri_lsp.context.pairing import INTERRUPTED
from seri_lsp.events import (
    Compacted,
    Delta,
    Event,
    FileChange,
    FileChanged,
    MessageStored,
    SessionChanged,
    ThinkingDelta,
    ToolOutput,
    ToolStarted,
)
from seri_lsp.store.messages import ToolCall

Update = (
    AgentMessageChunk
    | AgentThoughtChunk
    | UserMessageChunk
    | ToolCallStart
    | ToolCallProgress
    | AvailableCommandsUpdate
)


# A message seri wrote for the model is shown up to this many characters.
NOTE_CHARS = 4000
# A running command's live output is shown up to its last this many characters.
LIVE_OUTPUT_CHARS = 30_000


def _nowhere(path: str) -> str | None:
    return None


class Transcript:
    """Turns one ACP session's seri events and messages into session updates."""

    def __init__(self) -> None:
        self.locate: Locate = _nowhere
        self.root: str | None = None  # the seri session this ACP session shows
        self.running: str | None = None  # the ACP id of the tool call running now
        self._ids: dict[str, str] = {}  # model call id -> ACP tool call id
        self._calls: dict[str, ToolCall] = {}  # ACP tool call id -> the call
        self._changes: dict[str, FileChange] = {}  # model call id -> what it changed
        self._open: dict[str, str] = {}  # calls with no result yet: model id -> ACP id
        self._output_so_far: dict[str, str] = {}  # a running command's output: ACP id -> text
        self._recap: dict[str, Any] | None = None
        self._streamed_text = False
        self._streamed_thinking = False
        self._reply = _new_id("reply")

    def restarted(self) -> Transcript:
        """A transcript for the same session that the client shows afresh (a reload)."""
        fresh = Transcript()
        fresh.locate, fresh.root = self.locate, self.root
        return fresh

    # --- live ------------------------------------------------------------------------

    def on_event(self, event: Event) -> list[Update]:
        """The updates a live engine event makes (none for other sessions' events)."""
        if isinstance(event, SessionChanged):
            self.root = event.session.id
            return []
        if getattr(event, "session_id", None) != self.root:
            return []
        if isinstance(event, Delta):
            return self._delta(event)
        if isinstance(event, ThinkingDelta):
            self._streamed_thinking = True
            return [_thought(event.text, self._reply)]
        if isinstance(event, ToolStarted):
            return self._started(event.call)
        if isinstance(event, FileChanged):
            self._changes[event.call_id] = event.change
            return []
        if isinstance(event, ToolOutput):
            return self._output(event)
        if isinstance(event, MessageStored):
            return self._stored(event.message.to_wire())
        if isinstance(event, Compacted):
            return self._compacted(event)
        return []

    def _delta(self, event: Delta) -> list[Update]:
        if event.reset:
            if not self._streamed_text:
                return []
            # ACP cannot take back streamed text: say so, and stream the retry anew.
            self._streamed_text = False
            self._reply = _new_id("reply")
            return self.note("The reply broke off; seri asked the model again.", "retry")
        self._streamed_text = True
        return [_agent(event.text, self._reply)]

    def _stored(self, message: dict[str, Any]) -> list[Update]:
        role = message["role"]
        if role == "assistant":
            updates: list[Update] = []
            if message.get("thinking") and not self._streamed_thinking:
                updates.append(_thought(message["thinking"], self._reply))
            if message.get("content") and not self._streamed_text:
                updates.append(_agent(message["content"], self._reply))
            self._streamed_text = self._streamed_thinking = False
            self._reply = _new_id("reply")
            return updates + self._calls_asked(message)
        if role == "tool":
            return self._result(message, live=True)
        if message.get("kind") == "recap":
            self._recap = message  # shown with the compaction that made it
            return []
        if message.get("kind"):
            return self._seri_message(message)
        return []  # the user's prompt: the client shows it already

    def _compacted(self, event: Compacted) -> list[Update]:
        recap, self._recap = self._recap, None
        text = (
            f"**Context compacted** ({event.trigger}): {event.evicted} earlier messages were "
            "replaced by this recap, which the model now reads instead "
            f"({event.messages_before} → {event.messages_after} messages, about "
            f"{event.tokens_before:,} → {event.tokens_after:,} tokens)."
        )
        if recap is not None:
            text += "\n\n" + recap["content"]
        return self.note(text, "compaction")

    def _started(self, call: ToolCall) -> list[Update]:
        acp_id = self._ids.get(call.id)
        if acp_id is None:
            return []
        if call.name != "task":
            self.running = acp_id
        return [
            ToolCallProgress(
                session_update="tool_call_update", tool_call_id=acp_id, status="in_progress"
            )
        ]

    def _output(self, event: ToolOutput) -> list[Update]:
        """A running command's output: the call's content, its last `LIVE_OUTPUT_CHARS`
        (a tool call update's content replaces the one before)."""
        acp_id = self._ids.get(event.tool_call_id)
        if acp_id is None:
            return []
        text = self._output_so_far.get(acp_id, "") + event.text
        text = text[-LIVE_OUTPUT_CHARS:]
        self._output_so_far[acp_id] = text
        return [
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=acp_id,
                content=[text_content(text)],
            )
        ]

    # --- replay ----------------------------------------------------------------------

    def replay(self, messages: Iterable[dict[str, Any]]) -> list[Update]:
        """A stored conversation (`seri.session.get` wire messages) as updates, in order."""
        updates: list[Update] = []
        for message in messages:
            role, kind = message["role"], message.get("kind")
            message_id = f"seri-message-{message.get('id')}"
            if role != "tool":
                updates += self._interrupted()
            if kind == "recap":
                recap = message.get("recap") or {}
                evicted = recap.get("evicted")
                count = f"{evicted} earlier messages" if evicted else "its earlier part"
                text = (
                    f"**This session was compacted**: {count} are summarised in this recap, "
                    "which the model reads instead.\n\n" + message["content"]
                )
                updates += self.note(text, "recap")
            elif kind:
                updates += self._seri_message(message)
            elif role == "user":
                updates.append(
                    UserMessageChunk(
                        session_update="user_message_chunk",
                        content=_text(message["content"]),
                        message_id=message_id,
                    )
                )
            elif role == "assistant":
                if message.get("thinking"):
                    updates.append(_thought(message["thinking"], message_id))
                if message.get("content"):
                    updates.append(_agent(message["content"], message_id))
                updates += self._calls_asked(message)
            elif role == "tool":
                updates += self._result(message, live=False)
        return updates + self._interrupted()

    def _interrupted(self) -> list[Update]:
        """Close the calls still open: their results never came, and none will."""
        open_calls, self._open = self._open, {}
        for call_id in open_calls:
            del self._ids[call_id]  # a stray result after this is not shown
        return [
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=acp_id,
                status="failed",
                content=[text_content(INTERRUPTED)],
            )
            for acp_id in open_calls.values()
        ]

    # --- shared ----------------------------------------------------------------------

    def note(self, text: str, kind: str) -> list[Update]:
        """A visible note in the transcript, as a message of its own."""
        return [
            AgentMessageChunk(
                session_update="agent_message_chunk",
                content=_text(f"\n\n{text.strip()}\n\n"),
                message_id=_new_id("note"),
                field_meta={"seri": {"kind": kind}},
            )
        ]

    def call_for_question(self) -> tuple[str, ToolCall] | None:
        """The tool call running now (whose permission a question asks), if any."""
        if self.running is None:
            return None
        return self.running, self._calls[self.running]

    def _calls_asked(self, message: dict[str, Any]) -> list[Update]:
        updates: list[Update] = []
        for wire in message.get("tool_calls") or []:
            call = ToolCall(wire["id"], wire["name"], wire["arguments"])
            acp_id = self._unique_id(call.id)
            self._ids[call.id] = acp_id
            self._open[call.id] = acp_id
            self._calls[acp_id] = call
            shown = present(call, self.locate)
            updates.append(
                ToolCallStart(
                    session_update="tool_call",
                    tool_call_id=acp_id,
                    title=shown.title,
                    kind=shown.kind,
                    status="pending",
                    locations=shown.locations or None,
                    raw_input=shown.raw_input,
                )
            )
        return updates

    def _result(self, message: dict[str, Any], *, live: bool) -> list[Update]:
        call_id = message.get("tool_call_id") or ""
        acp_id = self._ids.get(call_id)
        if acp_id is None:
            return []
        self._open.pop(call_id, None)
        if self.running == acp_id:
            self.running = None
        call = self._calls[acp_id]
        failed = bool(message.get("isError"))
        content: list[ToolContent] = []
        locations = None
        change = self._changes.pop(call_id, None)
        if change is not None:
            content.append(change_content(change))
            locations = [change_location(change)]
        elif not live and not failed:
            diff = replayed_change(call, message["content"], self.locate)
            if diff is not None:
                content.append(diff)
        if message["content"]:
            content.append(text_content(message["content"]))
        return [
            ToolCallProgress(
                session_update="tool_call_update",
                tool_call_id=acp_id,
                status="failed" if failed else "completed",
                content=content,
                locations=locations,
            )
        ]

    def _seri_message(self, message: dict[str, Any]) -> list[Update]:
        """A user-role message seri wrote itself (a rule that came into force, ...)."""
        kind = message["kind"]
        if kind == "rule":
            first = message["content"].split("\n", 1)[0].rstrip(":")
            return self.note(f"{first}; the model now follows it.", kind)
        text = message["content"]
        if len(text) > NOTE_CHARS:
            text = text[:NOTE_CHARS] + " …"
        return self.note(text, kind)

    def _unique_id(self, call_id: str) -> str:
        # Models reuse ids such as call_0 across turns; ACP ids must stay unique.
        acp_id = call_id or "call"
        number = 1
        while acp_id in self._calls:
            number += 1
            acp_id = f"{call_id}~{number}"
        return acp_id


def _new_id(kind: str) -> str:
    return f"seri-{kind}-{uuid.uuid4().hex[:12]}"


def _text(text: str) -> TextContentBlock:
    return TextContentBlock(type="text", text=text)


def _agent(text: str, message_id: str) -> AgentMessageChunk:
    return AgentMessageChunk(
        session_update="agent_message_chunk", content=_text(text), message_id=message_id
    )


def _thought(text: str, message_id: str) -> AgentThoughtChunk:
    return AgentThoughtChunk(
        session_update="agent_thought_chunk", content=_text(text), message_id=message_id
    )
