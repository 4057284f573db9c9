"""What the engine tells its faces while it works.

Each event is a small typed value; the LSP face picks the notification method and
turns the value into its camelCase payload (`seri_lsp.lsp.wire`), the terminal face
prints. Some events (thinking as it streams, a tool call starting, a file a tool
changed) carry more than the LSP contract names: a face that has no use for them
ignores them.
"""

from __future__ import annotations

from dataclasses import dataclass

from seri_lsp.store.messages import Message, ToolCall
from seri_lsp.store.sessions import Session


@dataclass(frozen=True)
class SessionChanged:
    """The open session changed: new, continued, resumed, cleared, rewound or renamed."""

    session: Session
    reason: str


@dataclass(frozen=True)
class MessageStored:
    """A message was written to a session."""

    session_id: str
    message: Message


@dataclass(frozen=True)
class Delta:
    """A piece of the model's reply while it streams.

    `reset` (with empty text) says: drop what this reply has streamed so far, the
    provider is being asked again (a retry) and the reply starts over.
    """

    session_id: str
    text: str
    reset: bool = False


@dataclass(frozen=True)
class ThinkingDelta:
    """A piece of the model's thinking (reasoning) while it streams."""

    session_id: str
    text: str


@dataclass(frozen=True)
class ToolStarted:
    """A tool call is about to run (its result arrives later as a stored tool message)."""

    session_id: str
    call: ToolCall


@dataclass(frozen=True)
class ToolOutput:
    """Output a running tool call (`run`) printed since the last one, for the editor to
    show live (batched: a few a second at most)."""

    session_id: str
    tool_call_id: str
    text: str


@dataclass(frozen=True)
class FileChange:
    """A file a tool changed: its absolute path, its text before (None: it was created)
    and after, and the 1-based line where the change starts."""

    path: str
    old_text: str | None
    new_text: str
    line: int = 1


@dataclass(frozen=True)
class FileChanged:
    """A tool call changed a file (emitted before the call's result is stored)."""

    session_id: str
    call_id: str
    change: FileChange


@dataclass(frozen=True)
class Compacted:
    """A prefix of the session was replaced by a recap: how many messages went, the
    session's messages and estimated tokens before and after, the recap's Read and
    Modified lists, and the recap message's id (for an editor to open it)."""

    session_id: str
    trigger: str
    evicted: int
    messages_before: int
    messages_after: int
    tokens_before: int
    tokens_after: int
    read: tuple[str, ...]
    modified: tuple[str, ...]
    recap_id: int | None


@dataclass(frozen=True)
class TurnEnded:
    """A task (one user prompt) ended; `error` says why when it failed or ran out of turns."""

    session_id: str
    status: str
    turns: int
    error: str | None = None


@dataclass(frozen=True)
class Activity:
    """What a running task waits for now, for the editor's "working" line.

    `state` is one of `model` (a model call is in flight; `attempt` > 1 after a retry),
    `retrying` (a model call failed and is tried again after `delay` seconds: `attempt`
    of `maxAttempts`, `detail` the error), `tool` (a tool runs; `detail` names it and
    its target), `approval` (the user is asked; `detail` says what for), `compacting`
    and `checks`. The task's end is `TurnEnded`.
    """

    session_id: str
    state: str
    detail: str = ""
    attempt: int | None = None
    max_attempts: int | None = None
    delay: float | None = None


Event = (
    SessionChanged
    | MessageStored
    | Delta
    | ThinkingDelta
    | ToolStarted
    | ToolOutput
    | FileChanged
    | Compacted
    | TurnEnded
    | Activity
)
