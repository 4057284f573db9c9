"""What the engine tells its faces while it works.

Each event is a small typed value with the camelCase payload the LSP contract sends;
the LSP face picks the notification method, the terminal face prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from seri_lsp.store.messages import Message


@dataclass(frozen=True)
class SessionChanged:
    """The open session changed: new, continued, resumed, cleared (or later rewound)."""

    session: dict[str, Any]
    reason: str

    def to_wire(self) -> dict[str, Any]:
        return {"session": self.session, "reason": self.reason}


@dataclass(frozen=True)
class MessageStored:
    """A message was written to a session."""

    session_id: str
    message: Message

    def to_wire(self) -> dict[str, Any]:
        return {"sessionId": self.session_id, "message": self.message.to_wire()}


@dataclass(frozen=True)
class Delta:
    """A piece of the model's reply while it streams.

    `reset` (with empty text) says: drop what this reply has streamed so far, the
    provider is being asked again (a retry) and the reply starts over.
    """

    session_id: str
    text: str
    reset: bool = False

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"sessionId": self.session_id, "text": self.text}
        if self.reset:
            wire["reset"] = True
        return wire


@dataclass(frozen=True)
class Compacted:
    """A prefix of the session was replaced by a recap."""

    session_id: str
    trigger: str
    evicted: int

    def to_wire(self) -> dict[str, Any]:
        return {"sessionId": self.session_id, "trigger": self.trigger, "evicted": self.evicted}


@dataclass(frozen=True)
class TurnEnded:
    """A task (one user prompt) ended."""

    session_id: str
    status: str
    turns: int

    def to_wire(self) -> dict[str, Any]:
        return {"sessionId": self.session_id, "status": self.status, "turns": self.turns}


Event = SessionChanged | MessageStored | Delta | Compacted | TurnEnded
