"""Every request carries whole tool-call pairs, whatever the stored history holds.

Providers reject a `tool` message whose call is absent and an assistant tool call with
no result. The compaction cut never splits a pair, but a crash or a kill mid-tool can
leave a call unanswered, and old imports can hold strays. So the outgoing list is
checked and repaired before every send: a missing result becomes an explicit
"no result: interrupted" tool message, and an orphaned result is dropped.

The check runs as the history grows (`PairedHistory.add`, one message at a time), not
over the whole history before each call: a request costs the same at the 10th message
as at the 10,000th. `PairedHistory` can also keep each message's request JSON, encoded
once, so a request body is put together from pieces that are already encoded.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from seri_lsp.store.messages import Message

INTERRUPTED = "no result: interrupted"


class PairedHistory:
    """A history as requests carry it, repaired message by message.

    `add` takes the stored messages in conversation order. `request()` answers what the
    next request carries (with the results of calls still open closed as interrupted)
    and every repair that took, for the log: the same as `repair_tool_pairs` over the
    whole history, at the cost of the messages added since.
    """

    def __init__(
        self,
        messages: Iterable[Message] = (),
        *,
        encode: Callable[[Message], bytes] | None = None,
    ) -> None:
        self.kept: list[Message] = []
        # With `encode`: each kept message's request JSON, encoded when it was added.
        self.encoded: list[bytes] = []
        self._encode = encode
        self._open: dict[str, str] = {}  # calls of the last assistant message: id -> name
        self._repairs: list[str] = []  # the repairs inside the history so far
        for message in messages:
            self.add(message)

    def add(self, message: Message) -> None:
        """The next stored message."""
        if message.role == "tool":
            if message.tool_call_id in self._open:
                del self._open[message.tool_call_id]
                self._keep(message)
            else:
                self._repairs.append(
                    f"dropped a tool result for unknown call {message.tool_call_id!r}"
                )
            return
        for result, repair in self._closing():
            self._keep(result)
            self._repairs.append(repair)
        self._open.clear()
        self._keep(message)
        if message.role == "assistant":
            self._open.update((call.id, call.name) for call in message.tool_calls)

    def request(self) -> tuple[list[Message], list[str]]:
        """The messages the next request carries, and the repairs they needed."""
        closing = self._closing()
        return self.kept + [m for m, _ in closing], self._repairs + [r for _, r in closing]

    def encoded_request(self) -> tuple[list[bytes], list[str]]:
        """`request()` as encoded JSON pieces (needs `encode`)."""
        assert self._encode is not None
        closing = self._closing()
        pieces = self.encoded + [self._encode(m) for m, _ in closing]
        return pieces, self._repairs + [r for _, r in closing]

    def _keep(self, message: Message) -> None:
        self.kept.append(message)
        if self._encode is not None:
            self.encoded.append(self._encode(message))

    def _closing(self) -> list[tuple[Message, str]]:
        """An interrupted result for every call of the last assistant message still open."""
        return [
            (
                Message(role="tool", content=INTERRUPTED, tool_call_id=call_id, is_error=True),
                f"added the missing result of {name} call {call_id!r}",
            )
            for call_id, name in self._open.items()
        ]


def repair_tool_pairs(messages: Sequence[Message]) -> tuple[list[Message], list[str]]:
    """Return the messages with every call answered and every result matched.

    The second value lists the repairs made, for the log.
    """
    return PairedHistory(messages).request()
