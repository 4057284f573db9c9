"""The model provider: OpenAI-compatible chat completions, through httpx.

OpenRouter is the default base URL. Replies stream as server-sent events; `usage` is read
from every response. Errors are typed so the agent loop can tell them apart:

- ContextTooLong: the provider refused the request as too long (compaction handles it);
- ProviderHTTPError: any other refusal; 429 and 5xx are first retried with backoff and
  jitter, honouring `Retry-After`, a bounded number of times (401 and 403 never are);
- ConnectionFailed: the connection failed before any byte of a reply arrived; retried
  as 5xx are;
- ProviderTimeout: the reply did not finish within `provider.timeout` seconds, a deadline
  over the whole attempt (keep-alive comments and trickled bytes do not extend it);
- ProviderUnreachable, StreamTruncated, MalformedReply, MissingApiKey: the turn fails
  and the message says what happened and, where the user can act, what to do.

Provider text enters the engine only through a `Reply` or an error message, and both
replace lone surrogates (`"\\ud83d"` in a JSON string) by U+FFFD, so nothing the model
says can break the database or the wire.

One client serves every call (`connection.py`: httpx, one `AsyncClient` per provider
configuration, kept alive across turns and tasks): a reply is read to the end of its
body (after `[DONE]`, briefly), so its connection goes back to the pool and the next
call skips the TCP and TLS handshakes. A call whose connection fails before any reply
byte arrived (refused, reset, closed by a gateway just as it was reused) is sent again
within the retry budget. Nothing grows without bound: a streamed line over
MAX_LINE_BYTES, or a body read whole over MAX_BODY_BYTES, ends the call. Nothing is
built before it is needed: the client (and its TLS context) is made at the first call.
"""

from __future__ import annotations

import asyncio
import email.utils
import ipaddress
import json
import math
import random
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlparse

import httpx

from seri_lsp import __version__
from seri_lsp.agent.connection import (
    BadBaseUrl,
    BadProxy,
    Client,
    connect_failure,
    make_client,
)
from seri_lsp.limits import clean_text
from seri_lsp.settings import API_KEY_ENV, DEFAULT_CONTEXT_WINDOW, ProviderSettings
from seri_lsp.store.messages import ToolCall, request_json
from seri_lsp.waits import wait_seconds

MODELS_RETRY_SECONDS = 300.0
# The whole /models answer must arrive within this (it only sizes the window).
MODELS_SECONDS = wait_seconds("MODELS_SECONDS", 5.0)
# The largest token count kept from a provider's usage report (SQLite's integer range).
MAX_TOKEN_COUNT = 2**63 - 1
# After `[DONE]`, how long the rest of a reply's body may take to arrive; a body that
# does not end by then is dropped with its connection (the reply is complete anyway).
FINISH_BODY_SECONDS = 1.0
# A streamed line (one event's data), and a body read whole, are at most this big.
MAX_LINE_BYTES = 8 * 1024 * 1024
MAX_BODY_BYTES = 64 * 1024 * 1024
# Where the context window came from (`seri.session.get`'s `usage.contextWindowSource`).
WindowSource = Literal["setting", "provider", "default"]
# The fields of a model-list entry that give its context window: OpenRouter's, LiteLLM's,
# vLLM's.
WINDOW_FIELDS = ("context_length", "max_input_tokens", "max_model_len")
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 520, 522, 524, 529})
_TOO_LONG_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "prompt is too long",
    "too many tokens",
    "request too large",
)
# Host names that stay on this machine or the local network: no API key is needed there.
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa")
_SHARED_ADDRESS_SPACE = ipaddress.ip_network("100.64.0.0/10")  # carrier-grade NAT, Tailscale
_JSON_BODY = {"Content-Type": "application/json"}


def is_local_url(url: str) -> bool:
    """Whether `url` points at this machine or a private network (no API key expected)."""
    host = (urlparse(url).hostname or "").rstrip(".")
    if not host:
        return False
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host == "localhost" or host.endswith(_LOCAL_SUFFIXES) or "." not in host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return (
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or address in _SHARED_ADDRESS_SPACE
    )


def _key_hint() -> str:
    return "set provider.apiKey in the settings, or " + " / ".join(API_KEY_ENV)


class ProviderError(Exception):
    """The provider could not produce a reply; the message says what happened."""

    def __init__(self, message: str) -> None:
        super().__init__(clean_text(message))


class ContextTooLong(ProviderError):
    """The provider rejected the request because it does not fit the context window."""


class ProviderHTTPError(ProviderError):
    """The provider answered with an error status."""

    def __init__(
        self, message: str, status: int, body: str = "", retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = clean_text(body)
        self.retry_after = retry_after


class ProviderTimeout(ProviderError):
    """The provider did not finish its reply in time."""


class ProviderUnreachable(ProviderError):
    """The provider could not be reached at all."""


class ConnectionFailed(ProviderUnreachable):
    """The connection failed before any byte of a reply arrived: sending the request
    again is safe, so it is retried."""


class StreamTruncated(ProviderError):
    """The reply stream ended before the reply was complete."""


class MalformedReply(ProviderError):
    """The provider's reply is not shaped like a chat completion."""


class MissingApiKey(ProviderError):
    """No API key is set for a provider that is not on this machine or network."""


@dataclass(frozen=True)
class Usage:
    """What the provider billed for one response: tokens (input as billed, the cached
    ones included), and the cost in USD when it says (OpenRouter's `usage.cost`)."""

    input_tokens: int | None
    output_tokens: int | None
    cached_input_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost: float | None = None

    def to_json(self) -> dict[str, int | None]:
        return {"inputTokens": self.input_tokens, "outputTokens": self.output_tokens}


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


@dataclass(frozen=True)
class RetryNotice:
    """One retry about to happen, for the session's record."""

    attempt: int
    status: int | None  # None: the connection failed before any reply
    delay: float
    error: str

    def to_json(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "status": self.status,
            "delay": round(self.delay, 3),
            "error": self.error,
        }


DeltaCallback = Callable[[str], None]
RetryCallback = Callable[[RetryNotice], Awaitable[None]]


class Provider:
    """A client for one OpenAI-compatible endpoint and model.

    `log` (if given) receives one line when the context window in use is settled or
    changes, saying where it came from.
    """

    def __init__(
        self, settings: ProviderSettings, log: Callable[[str, str], None] | None = None
    ) -> None:
        self.settings = settings
        self._log = log
        self._connection: Client | None = None
        self._connecting: asyncio.Lock | None = None
        self._context_window: int | None = settings.context_window
        self._window_source: WindowSource = "setting" if settings.context_window else "default"
        self._window_field = ""  # the model list's field that gave the window
        self._window_logged: tuple[int, str] | None = None
        self._models_retry_at = 0.0
        # Encoded request bodies around their messages, by the tools offered.
        self._frames: dict[tuple[int, ...], tuple[bytes, bytes, tuple[Any, ...]]] = {}

    async def _client(self) -> Client:
        """The HTTP client with its connection pool, made at the first call (off the
        event loop: the TLS context reads certificate files). A base URL or a proxy that
        cannot be used is a ProviderUnreachable naming it."""
        if self._connection is None:
            if self._connecting is None:
                self._connecting = asyncio.Lock()
            async with self._connecting:
                if self._connection is None:
                    self._connection = await asyncio.to_thread(self._make_client)
        return self._connection

    def _make_client(self) -> Client:
        url = self.settings.base_url
        try:
            # Only connecting has its own timeout; `provider.timeout` is a deadline over
            # each whole attempt (see `_attempt`), so a stream that keeps the connection
            # busy with keep-alive comments or single bytes cannot outlive it.
            return make_client(url, headers=self._headers(), connect_timeout=self._connect_seconds)
        except BadBaseUrl as exc:
            raise ProviderUnreachable(
                f"provider.baseUrl {clean_text(url)!r} is not a URL seri can call: {exc}. "
                "Correct it in the settings."
            ) from exc
        except BadProxy as exc:
            raise ProviderUnreachable(f"Could not reach the provider at {url}: {exc}.") from exc

    @property
    def _connect_seconds(self) -> float:
        return min(self.settings.timeout, 15.0)

    def _headers(self) -> dict[str, str]:
        headers = {
            "User-Agent": f"seri-lsp/{__version__}",
            "Accept-Encoding": "identity",
            "HTTP-Referer": "https://github.com/seriora/seri-lsp",
            "X-Title": "seri",
        }
        if self.settings.api_key:
            headers["Authorization"] = f"Bearer {self.settings.api_key}"
        return headers

    @property
    def is_openrouter(self) -> bool:
        """Whether the base URL is OpenRouter's (it spells reasoning effort its own way)."""
        return (urlparse(self.settings.base_url).hostname or "").endswith("openrouter.ai")

    @property
    def missing_key(self) -> str | None:
        """Why a call cannot be sent for want of an API key; None when it can."""
        if self.settings.api_key or is_local_url(self.settings.base_url):
            return None
        return f"No API key for {self.settings.base_url}: {_key_hint()} in the environment."

    def request_body(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None
    ) -> dict[str, Any]:
        """The exact JSON body sent for a completion."""
        body: dict[str, Any] = {"model": self.settings.model, "messages": list(messages)}
        if tools:
            body["tools"] = list(tools)
        body.update(self.settings.sampling)
        if self.settings.reasoning_effort:
            if self.is_openrouter:
                body["reasoning"] = {"effort": self.settings.reasoning_effort}
            else:
                body["reasoning_effort"] = self.settings.reasoning_effort
        if self.settings.provider is not None:
            body["provider"] = self.settings.provider
        body["stream"] = self.settings.stream
        if self.settings.stream:
            body["stream_options"] = {"include_usage": True}
        return body

    def encode_body(
        self,
        messages: Sequence[dict[str, Any] | bytes],
        tools: Sequence[dict[str, Any]] | None,
    ) -> bytes:
        """The body `request_body` describes, encoded as compact UTF-8 JSON. A message
        given as bytes is already encoded; everything around the messages is encoded
        once for a given set of tools and kept."""
        key = tuple(id(tool) for tool in tools or ())
        frame = self._frames.get(key)
        if frame is None:
            encoded = request_json(self.request_body([], tools))
            marker = b'"messages":[]'
            assert encoded.count(marker) == 1
            head, tail = encoded.split(marker)
            if len(self._frames) >= 8:
                self._frames.clear()
            # The tools are kept with their frame, so no other object can take their ids.
            frame = (head + b'"messages":[', b"]" + tail, tuple(tools or ()))
            self._frames[key] = frame
        pieces = [m if isinstance(m, bytes) else request_json(m) for m in messages]
        return b"".join((frame[0], b",".join(pieces), frame[1]))

    async def complete(
        self,
        messages: Sequence[dict[str, Any] | bytes],
        tools: Sequence[dict[str, Any]] | None = None,
        *,
        reply: Reply | None = None,
        on_delta: DeltaCallback | None = None,
        on_retry: RetryCallback | None = None,
        on_thinking: DeltaCallback | None = None,
    ) -> Reply:
        """Send one chat completion and return the model's reply.

        `reply` (if given) is filled as the stream arrives, so a caller that cancels
        this coroutine still has the text received so far. `on_delta` and `on_thinking`
        receive the reply's text and its thinking as they stream. `on_retry` is awaited
        before a failed attempt is retried, so the caller can drop what that attempt
        streamed.
        """
        if self.missing_key is not None:
            # A provider on the internet refuses a call without a key anyway; saying so
            # before sending names the setting instead of the provider's own wording.
            raise MissingApiKey(self.missing_key)
        body = self.encode_body(messages, tools)
        attempt = 0
        while True:
            target = reply if reply is not None else Reply()
            target.reset()
            try:
                return await self._attempt(body, target, on_delta, on_thinking)
            except (ProviderHTTPError, ConnectionFailed) as exc:
                status = exc.status if isinstance(exc, ProviderHTTPError) else None
                retryable = status is None or status in RETRY_STATUSES
                if not retryable or attempt >= self.settings.max_retries:
                    raise
                attempt += 1
                retry_after = exc.retry_after if isinstance(exc, ProviderHTTPError) else None
                delay = self._retry_delay(attempt, retry_after)
                if on_retry is not None:
                    await on_retry(RetryNotice(attempt, status, delay, str(exc)))
                await asyncio.sleep(delay)

    def _retry_delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.settings.retry_max_delay)
        base = self.settings.retry_base_delay * (2 ** (attempt - 1))
        capped = min(base, self.settings.retry_max_delay)
        # Full jitter keeps two windows that failed together from retrying together.
        return random.uniform(capped / 2, capped)

    async def _attempt(
        self,
        body: bytes,
        reply: Reply,
        on_delta: DeltaCallback | None,
        on_thinking: DeltaCallback | None = None,
    ) -> Reply:
        client = await self._client()
        url = self.settings.base_url
        answered = False
        try:
            async with (
                asyncio.timeout(self.settings.timeout) as deadline,
                client.http.stream(
                    "POST", "chat/completions", content=body, headers=_JSON_BODY
                ) as response,
            ):
                answered = True
                if response.status_code >= 400:
                    text = (await _read_body(response)).decode("utf-8", "replace")
                    raise self._http_error(response, text)
                if self.settings.stream:
                    rest = await _read_stream(response, reply, on_delta, on_thinking)
                    # The reply is complete: the deadline no longer applies to it, and
                    # the body's end lets the connection serve the next call.
                    deadline.reschedule(None)
                    await _finish_body(rest)
                else:
                    _read_whole(await _read_body(response), reply)
        except TimeoutError as exc:
            raise self._timed_out(answered) from exc
        except httpx.ConnectTimeout as exc:
            raise ConnectionFailed(
                f"Could not reach the provider at {url}: no connection within "
                f"{self._connect_seconds:g} seconds."
            ) from exc
        except httpx.TimeoutException as exc:  # not expected: only connecting has a limit
            raise self._timed_out(answered) from exc
        except httpx.ProxyError as exc:
            raise ProviderUnreachable(
                f"Could not reach the provider at {url}: the proxy at {client.proxy} refused "
                f"the connection to {client.origin} ({_reason(exc)})."
            ) from exc
        except httpx.ConnectError as exc:
            reason, retryable = connect_failure(exc, client.origin, client.proxy)
            failure = ConnectionFailed if retryable else ProviderUnreachable
            raise failure(f"Could not reach the provider at {url}: {reason}.") from exc
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            if answered:
                raise StreamTruncated(
                    f"The provider closed the stream mid-reply ({_reason(exc)})."
                ) from exc
            # Nothing came back: the request may not even have arrived (a kept-alive
            # connection the server closed just as it was reused), so it is sent again.
            raise ConnectionFailed(
                f"The provider at {url} closed the connection without answering ({_reason(exc)})."
            ) from exc
        except (httpx.LocalProtocolError, UnicodeEncodeError) as exc:
            # Header values (the API key) must be plain ASCII text.
            raise ProviderUnreachable(
                "The request could not be sent: the API key or another provider setting "
                f"holds characters an HTTP header cannot carry ({_reason(exc)}). Check "
                "provider.apiKey."
            ) from exc
        except httpx.TransportError as exc:
            raise ProviderUnreachable(
                f"Could not reach the provider at {url}: {_reason(exc)}."
            ) from exc
        return reply

    def _timed_out(self, answered: bool) -> ProviderTimeout:
        seconds = f"{self.settings.timeout:g}"
        if answered:
            what = f"The provider did not finish its reply within {seconds} seconds"
        else:
            what = (
                f"The provider at {self.settings.base_url} did not answer within {seconds} seconds"
            )
        return ProviderTimeout(
            f"{what} (provider.timeout). Try again, or raise provider.timeout for a slow model."
        )

    def _http_error(self, response: httpx.Response, text: str) -> ProviderError:
        error = _http_error(response, text)
        if response.status_code in (401, 403):
            if not self.settings.api_key:
                advice = f"No API key was sent: {_key_hint()} in the environment."
            else:
                source = self.settings.api_key_source or "provider.apiKey"
                refused = "refused" if response.status_code == 401 else "not allowed this request"
                advice = (
                    f"The API key (from {source}) was {refused}: check it, or {_key_hint()} "
                    "in the environment."
                )
            error = ProviderHTTPError(f"{error} {advice}", response.status_code, text)
        return error

    def known_context_window(self) -> int | None:
        """The window if it is known without asking the provider (None: not yet)."""
        return self._context_window

    @property
    def window_source(self) -> WindowSource:
        """Where the window `context_window()` last gave came from: the `contextWindow`
        setting, the provider's model list, or the default."""
        return self._window_source

    async def context_window(self) -> int:
        """contextWindow from settings, else the provider's model list (OpenRouter's
        `context_length`, LiteLLM's `max_input_tokens`, vLLM's `max_model_len` of the
        configured model), else 128000."""
        if (
            self._context_window is None
            and time.monotonic() >= self._models_retry_at
            and self.missing_key is None
        ):
            found = await self._window_from_models()
            if found is not None:
                self._context_window, self._window_field = found
                self._window_source = "provider" if self._window_field else "default"
        tokens = self._context_window or DEFAULT_CONTEXT_WINDOW
        self._note_window(tokens)
        return tokens

    async def _window_from_models(self) -> tuple[int, str] | None:
        """(window, the field that gave it) for the configured model from `GET /models`;
        (the default, "") when the list does not give it; None when the list cannot be
        read (then it is asked again only after MODELS_RETRY_SECONDS)."""
        try:
            client = await self._client()
            # A deadline for the whole answer, not only for each read: a server that
            # trickles its model list must not hold up the first call.
            async with (
                asyncio.timeout(MODELS_SECONDS),
                client.http.stream("GET", "models") as response,
            ):
                raw = await _read_body(response)
            data = json.loads(raw) if response.status_code == 200 else None
            models = data.get("data", []) if isinstance(data, dict) else None
        except (
            ProviderError,
            httpx.HTTPError,
            TimeoutError,
            ValueError,
            RecursionError,
            UnicodeError,
        ):
            models = None
        if not isinstance(models, list):
            # Unreachable or no model list: the default for now, and asked again only
            # after a while, so an offline editor does not wait on the network at every call.
            self._models_retry_at = time.monotonic() + MODELS_RETRY_SECONDS
            return None
        for model in models:
            if isinstance(model, dict) and model.get("id") == self.settings.model:
                for name in WINDOW_FIELDS:
                    length = model.get(name)
                    if isinstance(length, int) and not isinstance(length, bool) and length > 0:
                        return length, name
                break
        return DEFAULT_CONTEXT_WINDOW, ""

    def _note_window(self, tokens: int) -> None:
        """Log the window in use and its source, once (and again if it changes)."""
        if self._log is None or self._window_logged == (tokens, self._window_source):
            return
        self._window_logged = (tokens, self._window_source)
        where = {
            "setting": "the provider.contextWindow setting",
            "provider": f"the provider's model list ({self._window_field})",
            "default": "the default (the provider's model list did not give one)",
        }[self._window_source]
        self._log(
            "info", f"Context window of {self.settings.model}: {tokens:,} tokens, from {where}."
        )

    async def aclose(self) -> None:
        """Close the HTTP connection pool (if a call ever opened one)."""
        if self._connection is not None:
            await self._connection.http.aclose()


# What an httpx error says in words when it says nothing itself.
_UNSAID = {
    "ReadError": "the connection was reset",
    "WriteError": "the connection broke while the request was sent",
    "RemoteProtocolError": "the connection closed early",
}


def _reason(exc: Exception) -> str:
    """An exception's message, or what its kind means when it has none."""
    name = type(exc).__name__
    return clean_text(str(exc).strip()) or _UNSAID.get(name, name)


def _http_error(response: httpx.Response, text: str) -> ProviderError:
    status = response.status_code
    detail = _error_detail(text)
    lowered = text.lower()
    if status == 413 or (
        status in (400, 422) and any(marker in lowered for marker in _TOO_LONG_MARKERS)
    ):
        return ContextTooLong(f"The provider rejected the request as too long: {detail}")
    return ProviderHTTPError(
        f"The provider answered HTTP {status}: {detail}",
        status,
        text,
        retry_after=_retry_after(response.headers.get("retry-after")),
    )


def _error_detail(text: str) -> str:
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return text.strip()[:500] or "(no body)"
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"] or "(no message)"
        if isinstance(error, str) and error:
            return error
    return text.strip()[:500] or "(no body)"


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())


def _stream_error(data: dict[str, Any]) -> ProviderError:
    """An error object inside a 200 reply (a stream chunk or a whole body)."""
    error = data.get("error")
    if isinstance(error, dict):
        message, code = error.get("message"), error.get("code")
    else:
        message, code = error, None
    message = message if isinstance(message, str) and message else _snippet(error)
    text = json.dumps(data).lower()
    if any(marker in text for marker in _TOO_LONG_MARKERS):
        return ContextTooLong(f"The provider rejected the request as too long: {message}")
    if isinstance(code, str) and code.isdigit():
        code = int(code)
    status = code if isinstance(code, int) and 400 <= code <= 599 else 502
    return ProviderHTTPError(
        f"The provider reported an error mid-reply (status {status}): {message}", status
    )


# --- reading replies -------------------------------------------------------------------


def _snippet(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "…"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _shape(where: str, expected: str, value: Any) -> MalformedReply:
    return MalformedReply(
        f"The provider sent an unexpected reply shape: {where} should be {expected}, "
        f"got {_kind(value)} ({_snippet(value)})."
    )


def _object(value: Any, where: str) -> dict[str, Any]:
    """`value` if it is a JSON object, {} if it is missing (null)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _shape(where, "an object", value)
    return value


def _array(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _shape(where, "an array", value)
    return value


def _string(value: Any, where: str) -> str:
    """A string field as sent (lone surrogates included; callers clean it)."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _shape(where, "a string", value)
    return value


def _arguments(value: Any, where: str) -> str:
    """Tool-call arguments: JSON text, or (as some servers send them) an object."""
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return _string(value, where)


def _finish_reason(choice: dict[str, Any], where: str) -> str | None:
    reason = choice.get("finish_reason")
    if reason is None:
        return None
    reason = clean_text(_string(reason, f"{where}.finish_reason"))
    if reason == "error":
        raise ProviderHTTPError(
            'The provider reported an error mid-reply (finish_reason "error").', 502
        )
    return reason or None


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


async def _read_body(response: httpx.Response) -> bytes:
    """A body read whole, at most MAX_BODY_BYTES (MalformedReply beyond)."""
    parts: list[bytes] = []
    size = 0
    async for data in response.aiter_bytes():
        size += len(data)
        if size > MAX_BODY_BYTES:
            raise MalformedReply(
                f"The provider's reply is larger than {_size(MAX_BODY_BYTES)}; seri stops "
                "reading there."
            )
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
    return MalformedReply(
        f"The provider sent a line of its reply stream longer than {_size(MAX_LINE_BYTES)}; "
        "seri stops reading there."
    )


def _size(limit: int) -> str:
    return f"{limit // 2**20} MiB" if limit % 2**20 == 0 else f"{limit:,} bytes"


async def _finish_body(rest: AsyncGenerator[str, None]) -> None:
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


async def _read_stream(
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
        for number, choice in enumerate(_array(chunk.get("choices"), "choices")):
            where = f"choices[{number}]"
            choice = _object(choice, where)
            delta = _object(choice.get("delta"), f"{where}.delta")
            add_content(content.feed(_string(delta.get("content"), f"{where}.delta.content")))
            for name in ("reasoning", "reasoning_content"):
                piece = _string(delta.get(name), f"{where}.delta.{name}")
                add_thinking(thinking.feed(piece))
            for position, call in enumerate(
                _array(delta.get("tool_calls"), f"{where}.delta.tool_calls")
            ):
                _add_call_piece(calls, call, f"{where}.delta.tool_calls[{position}]")
            reason = _finish_reason(choice, where)
            if reason:
                reply.finish_reason = reason
                finished = True
    if not finished:
        raise StreamTruncated(
            "The provider closed the stream mid-reply: the reply stream ended before the "
            "reply was complete (no finish_reason, no [DONE])."
        )
    add_content(content.flush())
    add_thinking(thinking.flush())
    reply.tool_calls = [
        ToolCall(
            id=clean_text(slot["id"]) or f"call_{uuid.uuid4().hex}",
            name=clean_text(slot["name"]),
            arguments=clean_text(slot["args"]) or "{}",
        )
        for _, slot in sorted(calls.items())
    ]
    return lines


def _add_call_piece(calls: dict[int, dict[str, str]], call: Any, where: str) -> None:
    call = _object(call, where)
    index = call.get("index", 0)
    if isinstance(index, bool) or not isinstance(index, int):
        raise _shape(f"{where}.index", "a whole number", index)
    function = _object(call.get("function"), f"{where}.function")
    slot = calls.setdefault(index, {"id": "", "name": "", "args": ""})
    slot["id"] = _string(call.get("id"), f"{where}.id") or slot["id"]
    slot["name"] += _string(function.get("name"), f"{where}.function.name")
    slot["args"] += _arguments(function.get("arguments"), f"{where}.function.arguments")


def _reply_object(text: str | bytes, what: str, not_json: str, reply: Reply) -> dict[str, Any]:
    """A reply (or a stream chunk of one) as the JSON object it must be (`not_json` says
    what it was otherwise); an error it carries is raised, its usage kept in `reply`."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        shown = text[:200].decode("utf-8", "replace") if isinstance(text, bytes) else text[:200]
        raise MalformedReply(
            f"The provider sent an unexpected reply shape: {not_json} ({shown!r})."
        ) from exc
    if not isinstance(data, dict):
        raise _shape(what, "a JSON object", data)
    if data.get("error") is not None:
        raise _stream_error(data)
    if isinstance(data.get("usage"), dict):
        reply.usage = _usage(data["usage"])
    return data


def _read_whole(raw: bytes, reply: Reply) -> None:
    data = _reply_object(raw, "the reply", "the reply is not JSON", reply)
    choices = _array(data.get("choices"), "choices")
    if not choices:
        raise ProviderHTTPError(
            "The provider's reply held no choices.", 502, raw.decode("utf-8", "replace")
        )
    choice = _object(choices[0], "choices[0]")
    message = _object(choice.get("message"), "choices[0].message")
    reasoning = message.get("reasoning") or message.get("reasoning_content")
    content = _string(message.get("content"), "choices[0].message.content")
    thinking = _string(reasoning, "choices[0].message.reasoning")
    tool_calls = []
    for index, call in enumerate(
        _array(message.get("tool_calls"), "choices[0].message.tool_calls")
    ):
        where = f"choices[0].message.tool_calls[{index}]"
        call = _object(call, where)
        function = _object(call.get("function"), f"{where}.function")
        arguments = _arguments(function.get("arguments"), f"{where}.function.arguments")
        tool_calls.append(
            ToolCall(
                id=clean_text(_string(call.get("id"), f"{where}.id")) or f"call_{uuid.uuid4().hex}",
                name=clean_text(_string(function.get("name"), f"{where}.function.name")),
                arguments=clean_text(arguments) or "{}",
            )
        )
    reply.finish_reason = _finish_reason(choice, "choices[0]")
    reply.content, reply.thinking = clean_text(content), clean_text(thinking)
    reply.tool_calls = tool_calls


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

    cost = data.get("cost")
    if isinstance(cost, bool) or not isinstance(cost, int | float) or not 0 <= cost < math.inf:
        cost = None
    return Usage(
        input_tokens=number("prompt_tokens") or number("input_tokens"),
        output_tokens=number("completion_tokens") or number("output_tokens"),
        cached_input_tokens=number(
            "cached_tokens", details("prompt_tokens_details", "input_tokens_details")
        ),
        reasoning_tokens=number(
            "reasoning_tokens", details("completion_tokens_details", "output_tokens_details")
        ),
        cost=float(cost) if cost is not None else None,
    )
