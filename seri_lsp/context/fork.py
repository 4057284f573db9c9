"""Forks: where a fork really ends, and what it is called.

A fork copies a session's conversation up to and including a message. Any message may
be asked for, but the copy never splits a model's tool calls from their results: a fork
point on an assistant message with tool calls, on one of their results or on a glob-rule
message moves forward over the rest of the results and over the glob-rule messages those
results delivered (stored in the same step), so the fork ends where the source's
conversation was whole.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from seri_lsp.errors import InvalidArgument, SeriError
from seri_lsp.store.sessions import Outline, marked_title


def fork_point(outline: Sequence[Outline], message_id: int | None, session_id: str) -> int:
    """The index of the last message a fork of `outline` (a session's messages in order)
    copies when asked to fork at `message_id` (None: the last message).

    SeriError for a session without messages; InvalidArgument when `message_id` is not
    one of its messages.
    """
    if not outline:
        raise SeriError(
            f"Session {session_id} has no messages to fork; start a new session instead."
        )
    if message_id is None:
        index = len(outline) - 1
    else:
        found = next((i for i, message in enumerate(outline) if message.id == message_id), None)
        if found is None:
            raise InvalidArgument(
                "messageId",
                f"messageId must be the id of a message of session {session_id}; "
                f"{message_id} is not one (a compaction or a rewind may have removed it)",
            )
        index = found
    if outline[index].role in ("assistant", "tool"):
        while index + 1 < len(outline) and outline[index + 1].role == "tool":
            index += 1
    if outline[index].role == "tool" or outline[index].kind == "rule":
        while index + 1 < len(outline) and outline[index + 1].kind == "rule":
            index += 1
    return index


def fork_title(title: str, by_user: bool, taken: Callable[[str], bool]) -> str:
    """A fork's title: its source's marked "(fork)", numbered when the project has that
    title already ("(fork 2)", ...), so a fork is never listed as its source or as
    another fork is; a title the user gave is kept whole as the base."""
    return marked_title(title, "fork", taken, always=True, by_user=by_user)
