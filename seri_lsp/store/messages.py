"""Conversation messages in the OpenAI chat shape, with their character counts.

The character count of a message (text, thinking, and the JSON of its tool arguments or
its tool result) is computed once, stored with it, and summed incrementally, so a token
estimate never re-reads the history. A recap (the user message that stands for a
compacted prefix) carries its structured fields beside its text.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

# The four fields of a recap, and how its text heads them.
FIELDS = ("goal", "progress", "blockers", "next_steps")
HEADINGS = {
    "goal": "Goal",
    "progress": "Progress",
    "blockers": "Blockers",
    "next_steps": "Next steps",
}

Role = Literal["user", "assistant", "tool"]
ROLES: tuple[Role, ...] = ("user", "assistant", "tool")
# How attachments an editor sent with a prompt begin, after its own words (see
# seri_lsp.context.attachments): a line of mentions, then blocks of attached text.
MENTIONS_START = "\n\nAttached: @"
BLOCK_START = "\n\n<context "


def prompt_words(text: str) -> str:
    """A stored prompt's own words: what comes before the attachments written into it."""
    for marker in (MENTIONS_START, BLOCK_START):
        end = text.find(marker)
        if end > 0:
            text = text[:end]
    return text


# The tools whose `path` argument a session's path lists (and a recap's) show.
READ_TOOLS = frozenset({"read_file"})
MODIFY_TOOLS = frozenset({"write_file", "edit"})
# A `run` result ends with the files the command changed, under this heading (written by
# `agent/snapshots.describe`, read back for compaction's Modified list).
COMMAND_CHANGES_HEADING = "Files changed by the command"
_COMMAND_CHANGE_KINDS = ("created: ", "changed: ", "deleted: ")


def command_changed_paths(content: str) -> tuple[str, ...]:
    """The paths a `run` result lists as changed by its command (its last listing)."""
    at = content.rfind("\n" + COMMAND_CHANGES_HEADING + " (")
    if at < 0:
        return ()
    paths: list[str] = []
    for line in content[at:].splitlines()[2:]:
        entry = line.removeprefix("  ")
        if entry == line:
            break
        kind = next((k for k in _COMMAND_CHANGE_KINDS if entry.startswith(k)), None)
        if kind is None:
            kind = "changed (too large to keep for rewind): "
            if not entry.startswith(kind):
                break
        paths.append(entry[len(kind) :])
    return tuple(paths)


@dataclass(frozen=True)
class ToolCall:
    """One function call requested by the model; `arguments` is the JSON text it sent."""

    id: str
    name: str
    arguments: str

    def parsed_arguments(self) -> dict[str, Any] | None:
        """The arguments as an object, or None when the model sent invalid JSON."""
        try:
            value = json.loads(self.arguments or "{}")
        except (ValueError, RecursionError):
            # Not JSON (JSONDecodeError), a number of more than 4,300 digits (ValueError),
            # nested too deep: all invalid arguments.
            return None
        return value if isinstance(value, dict) else None

    def to_wire(self) -> dict[str, str]:
        """The flat shape used on the LSP wire and in legacy files."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


# How a turn (one user prompt's task) ended: as `seri/turnEnded` says it, and
# `interrupted` when seri stopped (or died) before the turn did.
TurnStatus = Literal["done", "max_turns", "cancelled", "failed", "interrupted"]
TURN_STATUSES: tuple[TurnStatus, ...] = get_args(TurnStatus)


# What an interrupted turn says: seri stopped (the editor quit, a signal) while the turn
# ran, and it stored what had come so far; or the process died, found at the next open.
INTERRUPTED_BY_STOP = (
    "The reply was cut off: seri stopped before this turn ended (the editor closed or the "
    "server was stopped). Send a prompt to go on."
)
INTERRUPTED_BY_EXIT = (
    "The reply was cut off: seri stopped before this turn ended (the server exited or was "
    "killed). Send a prompt to go on."
)


@dataclass(frozen=True)
class TurnEnd:
    """How a turn ended, kept on the last message it left: its status, and the words the
    user was shown about it (None for a turn that ended normally)."""

    status: TurnStatus
    error: str | None = None


@dataclass(frozen=True)
class Message:
    """A stored (or about to be stored) message of a session; `turn_end` on the last
    message a turn left says how that turn ended."""

    role: Role
    content: str = ""
    thinking: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    kind: str | None = None
    recap: Recap | None = None
    is_error: bool = False
    turn_end: TurnEnd | None = None
    id: int | None = None
    seq: int | None = None
    created_at: str | None = None
    chars: int = field(default=-1)

    def __post_init__(self) -> None:
        if self.chars < 0:
            object.__setattr__(self, "chars", count_chars(self))

    @property
    def is_recap(self) -> bool:
        """True for the user message that stands for a compacted prefix."""
        return self.kind == "recap"

    def stored(self, *, id: int, seq: int, created_at: str) -> Message:
        """This message as it reads back after being written."""
        return replace(self, id=id, seq=seq, created_at=created_at)

    def to_wire(self) -> dict[str, Any]:
        """The message as `seri.session.get` and `seri/message` send it."""
        return wire_message(
            self.id,
            self.created_at,
            self.role,
            self.content,
            self.thinking,
            [call.to_wire() for call in self.tool_calls],
            self.tool_call_id,
            self.kind,
            self.recap.to_json() if self.recap is not None else None,
            self.is_error,
            self.turn_end,
        )

    def to_provider(self) -> dict[str, Any]:
        """The message as an OpenAI-compatible chat completions request carries it."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.role == "assistant":
            if self.tool_calls:
                out["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    }
                    for call in self.tool_calls
                ]
                if not self.content:
                    out["content"] = None
            if self.thinking:
                out["reasoning"] = self.thinking
        if self.role == "tool":
            out["tool_call_id"] = self.tool_call_id
        return out


# Messages encoded together into one piece of an EncodedMessages array.
ENCODE_BATCH = 512


@dataclass(frozen=True)
class EncodedMessages:
    """Wire messages already encoded as one JSON array, in pieces: each piece holds
    several messages, separated as `json.dumps` separates list items, without the
    brackets. A face that writes JSON writes the pieces as they are; a long history is
    then held once, as bytes, instead of as objects and again as their encoding."""

    pieces: tuple[bytes, ...]
    count: int

    @classmethod
    def of(cls, messages: Sequence[dict[str, Any]]) -> EncodedMessages:
        """Encode wire messages."""
        builder = EncodedMessagesBuilder()
        for start in range(0, len(messages), ENCODE_BATCH):
            builder.add(list(messages[start : start + ENCODE_BATCH]))
        return builder.done()


class EncodedMessagesBuilder:
    """Builds EncodedMessages batch by batch."""

    def __init__(self) -> None:
        self._pieces: list[bytes] = []
        self._count = 0

    def add(self, batch: list[dict[str, Any]]) -> None:
        """Encode one batch of wire messages (in order)."""
        if batch:
            self._pieces.append(json.dumps(batch)[1:-1].encode("utf-8"))
            self._count += len(batch)

    def done(self) -> EncodedMessages:
        """The messages added so far, encoded."""
        return EncodedMessages(tuple(self._pieces), self._count)


def wire_message(
    id: int | None,
    created_at: str | None,
    role: str,
    content: str,
    thinking: str | None,
    tool_calls: list[dict[str, str]],
    tool_call_id: str | None,
    kind: str | None,
    recap: dict[str, object] | None,
    is_error: bool | int,
    turn_end: TurnEnd | None = None,
) -> dict[str, Any]:
    """A message as the wire carries it (`tool_calls` and `recap` in their wire forms):
    the one place that says which fields a message shows, from a `Message` or straight
    from its stored row."""
    wire: dict[str, Any] = {"id": id, "createdAt": created_at, "role": role, "content": content}
    if thinking:
        wire["thinking"] = thinking
    if tool_calls:
        wire["tool_calls"] = tool_calls
    if tool_call_id is not None:
        wire["tool_call_id"] = tool_call_id
    if kind:
        wire["kind"] = kind
    if recap is not None:
        wire["recap"] = recap
    if is_error:
        wire["isError"] = True
    if turn_end is not None:
        ended: dict[str, str] = {"status": turn_end.status}
        if turn_end.error:
            ended["error"] = turn_end.error
        wire["turnEnded"] = ended
    return wire


# One encoder, built once: json.dumps builds a new one at every call given options.
_REQUEST_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def request_json(value: Any) -> bytes:
    """`value` encoded as a request body carries it: UTF-8 JSON, compact (non-ASCII
    characters as themselves, no NaN)."""
    return _REQUEST_ENCODER.encode(value).encode("utf-8")


def count_chars(message: Message) -> int:
    """Characters that count toward the token estimate for this message."""
    arguments = (call.arguments for call in message.tool_calls)
    return chars_of(message.content, message.thinking, arguments)


def chars_of(content: str, thinking: str | None, arguments: Iterable[str] = ()) -> int:
    """Characters that count toward the estimate: text, thinking, tool-call arguments."""
    return len(content) + len(thinking or "") + sum(map(len, arguments))


def tokens_for_chars(chars: int) -> int:
    """The local token estimate: ceil(chars / 4)."""
    return -(-chars // 4)


@dataclass(frozen=True)
class Recap:
    """A structured recap; `render()` gives the text the model sees."""

    goal: str
    progress: str
    blockers: str
    next_steps: str
    read: tuple[str, ...] = field(default=())
    modified: tuple[str, ...] = field(default=())
    evicted: int = 0
    # What the chat's divider tells of the compacted part (not sent to the model): the
    # tool calls it held (earlier recaps' included) and the estimated tokens before and
    # after the latest compaction (None: a recap stored before they were kept).
    tool_calls: int = 0
    tokens_before: int | None = None
    tokens_after: int | None = None

    def render(self) -> str:
        """The recap message text: the four fields, then the Read and Modified lines."""
        parts = [
            "This is a recap of the earlier part of this session, which was compacted.",
        ]
        for name in FIELDS:
            value = getattr(self, name).strip() or "(none)"
            parts.append(f"{HEADINGS[name]}:\n{value}")
        path_lines = []
        if self.read:
            path_lines.append("Read: " + ", ".join(self.read))
        if self.modified:
            path_lines.append("Modified: " + ", ".join(self.modified))
        if path_lines:
            parts.append("\n".join(path_lines))
        return "\n\n".join(parts)

    def to_json(self) -> dict[str, object]:
        """The structured form stored beside the message."""
        return {
            "goal": self.goal,
            "progress": self.progress,
            "blockers": self.blockers,
            "nextSteps": self.next_steps,
            "read": list(self.read),
            "modified": list(self.modified),
            "evicted": self.evicted,
            "toolCalls": self.tool_calls,
            "tokensBefore": self.tokens_before,
            "tokensAfter": self.tokens_after,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Recap:
        """Rebuild a recap from its stored structured form."""
        return cls(
            goal=str(data.get("goal", "")),
            progress=str(data.get("progress", "")),
            blockers=str(data.get("blockers", "")),
            next_steps=str(data.get("nextSteps", "")),
            read=tuple(str(p) for p in data.get("read", []) or []),
            modified=tuple(str(p) for p in data.get("modified", []) or []),
            evicted=int(data.get("evicted", 0) or 0),
            tool_calls=int(data.get("toolCalls", 0) or 0),
            tokens_before=_count_or_none(data.get("tokensBefore")),
            tokens_after=_count_or_none(data.get("tokensAfter")),
        )


def _count_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
