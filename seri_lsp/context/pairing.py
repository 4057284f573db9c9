"""Every request carries whole tool-call pairs, whatever the stored history holds.

Providers reject a `tool` message whose call is absent and an assistant tool call with
no result. The compaction cut never splits a pair, but a crash or a kill mid-tool can
leave a call unanswered, and old imports can hold strays. So the outgoing list is
checked and repaired before every send: a missing result becomes an explicit
"no result: interrupted" tool message, and an orphaned result is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

from seri_lsp.store.messages import Message

INTERRUPTED = "no result: interrupted"


def repair_tool_pairs(messages: Sequence[Message]) -> tuple[list[Message], list[str]]:
    """Return the messages with every call answered and every result matched.

    The second value lists the repairs made, for the log.
    """
    out: list[Message] = []
    repairs: list[str] = []
    open_calls: dict[str, str] = {}

    def close_open_calls() -> None:
        for call_id, name in open_calls.items():
            out.append(
                Message(role="tool", content=INTERRUPTED, tool_call_id=call_id, is_error=True)
            )
            repairs.append(f"added the missing result of {name} call {call_id!r}")
        open_calls.clear()

    for message in messages:
        if message.role == "tool":
            if message.tool_call_id in open_calls:
                del open_calls[message.tool_call_id]
                out.append(message)
            else:
                repairs.append(f"dropped a tool result for unknown call {message.tool_call_id!r}")
            continue
        close_open_calls()
        out.append(message)
        if message.role == "assistant":
            open_calls.update((call.id, call.name) for call in message.tool_calls)
    close_open_calls()
    return out, repairs
