"""Reading a reply: server-sent events chunk by chunk (text, thinking, tool-call pieces,
the finish reason, usage), or a body read whole, into a `Reply`.

Provider text enters the engine only through a `Reply` or an error message, and both
replace lone surrogates (`"\\ud83d"` in a JSON string) by U+FFFD, so nothing the model
says can break the database or the wire. Nothing grows without bound: a streamed line
over MAX_LINE_BYTES, or a body read whole over MAX_BODY_BYTES, ends the call. A reply is
read to the end of its body (after `[DONE]`, briefly), so its connection goes back to
the pool.
"""

from __future__ import annotations

import asyncio
import json
import math
import uuid
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from seri_lsp.agent.provider.errors import (
    MalformedReply,
    ProviderError,
    ProviderHTTPError,
    StreamTruncated,
    malformed,
    stream_error,
    unexpected,
)
from seri_lsp.limits import clean_text
from seri_lsp.store.messages import ToolCall

# The largest token count kept from a provider's usage report (SQLite's integer range).
MAX_TOKEN_COUNT = 2**63 - 1
# After `[DONE]`, how long the rest of a reply's body may take to arrive; a body that
# does not end by then is dropped with its connection (the reply is complete anyway).
FINISH_BODY_SECONDS = 1.0
# A streamed line (one event's data), and a body read whole, are at most this big.
MAX_LINE_BYTES = 8 * 1024 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class Usage:
    """What the provider billed for one response: tokens (input as billed, the cached
    ones included), and the cost in USD when it says (OpenRouter's `usage.cost`).

    `cached_input_tokens` were read from the provider's prompt cache and
    `cache_write_tokens` written to it, both among the input tokens."""

    input_tokens: int | None
    output_tokens: int | None
    cached_input_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost: float | None = None
    cache_write_tokens: int | None = None


@dataclass
class Reply:
    """A reply as it accumulates; after a cancel it holds what was said so far."""

    content: str = ""
    thinking: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    finish_reason: str | None = None

    def reset(self) -> None:
        """Forget a failed attempt's partial reply before retrying."""
        self.content, self.thinking, self.tool_calls = "", "", []
        self.usage, self.finish_reason = None, None


DeltaCallback = Callable[[str], None]


# --- the body's bytes and lines --------------------------------------------------------


async def read_body(response: httpx.Response) -> bytes:
    """A body read whole, at most MAX_BODY_BYTES (MalformedReply beyond)."""
    parts: list[bytes] = []
    size = 0
    async for data in response.aiter_bytes():
        size += len(data)
        if size > MAX_BODY_BYTES:
            raise _over_limit("The provider's reply is larger than", MAX_BODY_BYTES)
        parts.append(data)
    return b"".join(parts)


async def _lines(response: httpx.Response) -> AsyncGenerator[str, None]:
    """The body's lines (ended by LF, CRLF or CR, as server-sent events are), each
    decoded as UTF-8 with undecodable bytes replaced, without its line break; a line
    over MAX_LINE_BYTES ends the call (MalformedReply) instead of growing without bound."""
    held: list[bytes] = []  # the start of a line not yet ended
    size = 0
    async for data in response.aiter_bytes():
        if b"\n" not in data and b"\r" not in data:
            held.append(data)
            size += len(data)
            if size > MAX_LINE_BYTES:
                raise _line_too_long()
            continue
        if held:
            held.append(data)
            data, held = b"".join(held), []
        lines = data.splitlines(keepends=True)
        last = lines[-1]
        # A line not yet ended waits; so does one ended by CR, the LF may follow.
        if last.endswith(b"\r") or not last.endswith(b"\n"):
            held.append(lines.pop())
        size = len(held[0]) if held else 0
        for line in lines:
            if len(line) > MAX_LINE_BYTES + 2:
                raise _line_too_long()
            yield line.rstrip(b"\r\n").decode("utf-8", "replace")
        if size > MAX_LINE_BYTES:
            raise _line_too_long()
    for line in b"".join(held).splitlines():
        yield line.decode("utf-8", "replace")


def _line_too_long() -> MalformedReply:
    return _over_limit("The provider sent a line of its reply stream longer than", MAX_LINE_BYTES)


def _over_limit(what: str, limit: int) -> MalformedReply:
    size = f"{limit // 2**20} MiB" if limit % 2**20 == 0 else f"{limit:,} bytes"
    return MalformedReply(f"{what} {size}; seri stops reading there.")


async def finish_body(rest: AsyncGenerator[str, None]) -> None:
    """Read what follows `[DONE]` to the end of the body, so the connection is reused.

    A body that does not end within FINISH_BODY_SECONDS, or ends badly, is left: closing
    the response then drops its connection, and the next call opens a new one.
    """
    try:
        async with asyncio.timeout(FINISH_BODY_SECONDS):
            async for _ in rest:
                pass
    except (TimeoutError, httpx.HTTPError, ProviderError):
        pass
    finally:
        await rest.aclose()


# --- the reply's shape -----------------------------------------------------------------


_Json = TypeVar("_Json", dict[str, Any], list[Any], str)
_EXPECTED: dict[type, str] = {dict: "an object", list: "an array", str: "a string"}


def _as(value: Any, where: str, empty: _Json) -> _Json:
    """`value` if it is of `empty`'s JSON type (a string as sent, lone surrogates
    included: callers clean it), `empty` if it is missing (null)."""
    if value is None:
        return empty
    if not isinstance(value, type(empty)):
        raise unexpected(where, _EXPECTED[type(empty)], value)
    return value


def _arguments(value: Any, where: str) -> str:
    """Tool-call arguments: JSON text, or (as some servers send them) an object."""
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return _as(value, where, "")


def _call_parts(call: dict[str, Any], where: str) -> tuple[str, str, str]:
    """A tool call's (id, name, arguments) as sent, or the pieces of them a stream chunk
    carries (`call` is already known to be an object)."""
    function = _as(call.get("function"), f"{where}.function", {})
    return (
        _as(call.get("id"), f"{where}.id", ""),
        _as(function.get("name"), f"{where}.function.name", ""),
        _arguments(function.get("arguments"), f"{where}.function.arguments"),
    )


def _tool_call(call_id: str, name: str, arguments: str) -> ToolCall:
    """A whole tool call, cleaned; one the provider gave no id gets one."""
    return ToolCall(
        id=clean_text(call_id) or f"call_{uuid.uuid4().hex}",
        name=clean_text(name),
        arguments=clean_text(arguments) or "{}",
    )


def _finish_reason(choice: dict[str, Any], where: str) -> str | None:
    reason = choice.get("finish_reason")
    if reason is None:
        return None
    reason = clean_text(_as(reason, f"{where}.finish_reason", ""))
    if reason == "error":
        raise ProviderHTTPError(
            'The provider reported an error mid-reply (finish_reason "error").', 502
        )
    return reason or None


def _reply_object(text: str | bytes, what: str, not_json: str, reply: Reply) -> dict[str, Any]:
    """A reply (or a stream chunk of one) as the JSON object it must be (`not_json` says
    what it was otherwise); an error it carries is raised, its usage kept in `reply`."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        shown = text[:200].decode("utf-8", "replace") if isinstance(text, bytes) else text[:200]
        raise malformed(f"{not_json} ({shown!r})") from exc
    if not isinstance(data, dict):
        raise unexpected(what, "a JSON object", data)
    if data.get("error") is not None:
        raise stream_error(data)
    if isinstance(data.get("usage"), dict):
        reply.usage = _usage(data["usage"])
    return data


def _usage(data: dict[str, Any]) -> Usage:
    def number(key: str, within: dict[str, Any] = data) -> int | None:
        value = within.get(key)
        if isinstance(value, bool) or not isinstance(value, int):
            return None
        # A count the store can keep (SQLite integers are 64-bit); anything else is noise.
        return value if 0 <= value <= MAX_TOKEN_COUNT else None

    def details(*keys: str) -> dict[str, Any]:
        """The first of these objects that the usage holds (OpenAI's names, then the
        Responses API's)."""
        return next((data[key] for key in keys if isinstance(data.get(key), dict)), {})

    def first(*counts: int | None) -> int | None:
        return next((count for count in counts if count is not None), None)

    cost = data.get("cost")
    if isinstance(cost, bool) or not isinstance(cost, int | float) or not 0 <= cost < math.inf:
        cost = None
    # The cache's reads and writes: in the input's details (OpenAI, OpenRouter), else at
    # the top level under Anthropic's names (as LiteLLM passes them on).
    input_details = details("prompt_tokens_details", "input_tokens_details")
    return Usage(
        input_tokens=number("prompt_tokens") or number("input_tokens"),
        output_tokens=number("completion_tokens") or number("output_tokens"),
        cached_input_tokens=first(
            number("cached_tokens", input_details), number("cache_read_input_tokens")
        ),
        reasoning_tokens=number(
            "reasoning_tokens", details("completion_tokens_details", "output_tokens_details")
        ),
        cost=float(cost) if cost is not None else None,
        cache_write_tokens=first(
            number("cache_write_tokens", input_details), number("cache_creation_input_tokens")
        ),
    )


# --- a streamed reply ------------------------------------------------------------------


class _Pieces:
    """Streamed text pieces, cleaned; a surrogate pair split over two chunks is mended."""

    def __init__(self) -> None:
        self._held = ""

    def feed(self, piece: str) -> str:
        piece, self._held = self._held + piece, ""
        if piece and "\ud800" <= piece[-1] <= "\udbff":
            piece, self._held = piece[:-1], piece[-1]
        return clean_text(piece)

    def flush(self) -> str:
        held, self._held = self._held, ""
        return clean_text(held)


async def read_stream(
    response: httpx.Response,
    reply: Reply,
    on_delta: DeltaCallback | None,
    on_thinking: DeltaCallback | None = None,
) -> AsyncGenerator[str, None]:
    """Read a streamed reply into `reply`; returns the lines after `[DONE]`, unread."""
    calls: dict[int, dict[str, str]] = {}
    content, thinking = _Pieces(), _Pieces()
    finished = False

    def add_content(text: str) -> None:
        if text:
            reply.content += text
            if on_delta is not None:
                on_delta(text)

    def add_thinking(text: str) -> None:
        if text:
            reply.thinking += text
            if on_thinking is not None:
                on_thinking(text)

    lines = _lines(response)
    async for line in lines:
        if not line.startswith("data:"):
            continue  # keep-alive comments (": ...") and other SSE fields
        payload = line[5:].strip()
        if payload == "[DONE]":
            finished = True
            break
        chunk = _reply_object(payload, "a stream chunk", "a chunk that is not JSON", reply)
        for number, choice in enumerate(_as(chunk.get("choices"), "choices", [])):
            where = f"choices[{number}]"
            choice = _as(choice, where, {})
            delta = _as(choice.get("delta"), f"{where}.delta", {})
            add_content(content.feed(_as(delta.get("content"), f"{where}.delta.content", "")))
            for name in ("reasoning", "reasoning_content"):
                piece = _as(delta.get(name), f"{where}.delta.{name}", "")
                add_thinking(thinking.feed(piece))
            for position, call in enumerate(
                _as(delta.get("tool_calls"), f"{where}.delta.tool_calls", [])
            ):
                _add_call_piece(calls, call, f"{where}.delta.tool_calls[{position}]")
            reason = _finish_reason(choice, where)
            if reason:
                reply.finish_reason = reason
                finished = True
    if not finished:
        raise StreamTruncated(
            "The reply broke off: the connection closed mid-reply. Try again.",
            detail="the stream ended with no finish_reason and no [DONE]",
        )
    add_content(content.flush())
    add_thinking(thinking.flush())
    reply.tool_calls = [
        _tool_call(slot["id"], slot["name"], slot["args"]) for _, slot in sorted(calls.items())
    ]
    return lines


def _add_call_piece(calls: dict[int, dict[str, str]], call: Any, where: str) -> None:
    call = _as(call, where, {})
    index = call.get("index", 0)
    if isinstance(index, bool) or not isinstance(index, int):
        raise unexpected(f"{where}.index", "a whole number", index)
    call_id, name, arguments = _call_parts(call, where)
    slot = calls.setdefault(index, {"id": "", "name": "", "args": ""})
    slot["id"] = call_id or slot["id"]
    slot["name"] += name
    slot["args"] += arguments


# --- a reply read whole ----------------------------------------------------------------


def read_whole(raw: bytes, reply: Reply) -> None:
    """Read a reply sent whole (`provider.stream` off) into `reply`."""
    data = _reply_object(raw, "the reply", "the reply is not JSON", reply)
    choices = _as(data.get("choices"), "choices", [])
    if not choices:
        raise ProviderHTTPError(
            "The provider's reply held no choices.", 502, raw.decode("utf-8", "replace")
        )
    choice = _as(choices[0], "choices[0]", {})
    message = _as(choice.get("message"), "choices[0].message", {})
    reasoning = message.get("reasoning") or message.get("reasoning_content")
    content = _as(message.get("content"), "choices[0].message.content", "")
    thinking = _as(reasoning, "choices[0].message.reasoning", "")
    tool_calls = []
    for index, call in enumerate(
        _as(message.get("tool_calls"), "choices[0].message.tool_calls", [])
    ):
        where = f"choices[0].message.tool_calls[{index}]"
        tool_calls.append(_tool_call(*_call_parts(_as(call, where, {}), where)))
    reply.finish_reason = _finish_reason(choice, "choices[0]")
    reply.content, reply.thinking = clean_text(content), clean_text(thinking)
    reply.tool_calls = tool_calls
