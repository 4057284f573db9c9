"""The model provider: OpenAI-compatible chat completions over httpx.

OpenRouter is the default base URL. Replies stream as server-sent events; `usage` is read
from every response. Errors are typed so the agent loop can tell them apart:

- ContextTooLong: the provider refused the request as too long (compaction handles it);
- ProviderHTTPError: any other refusal; 429 and 5xx are first retried with backoff and
  jitter, honouring `Retry-After`, a bounded number of times;
- ProviderTimeout, ProviderUnreachable, StreamTruncated: the turn fails and says so.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import httpx

from seri_lsp import __version__
from seri_lsp.settings import DEFAULT_CONTEXT_WINDOW, ProviderSettings
from seri_lsp.store.messages import ToolCall

MODELS_RETRY_SECONDS = 300.0
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 520, 522, 524, 529})
_TOO_LONG_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "prompt is too long",
    "too many tokens",
    "request too large",
)


class ProviderError(Exception):
    """The provider could not produce a reply; the message says what happened."""


class ContextTooLong(ProviderError):
    """The provider rejected the request because it does not fit the context window."""


class ProviderHTTPError(ProviderError):
    """The provider answered with an error status."""

    def __init__(
        self, message: str, status: int, body: str = "", retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.retry_after = retry_after


class ProviderTimeout(ProviderError):
    """The provider did not answer in time."""


class ProviderUnreachable(ProviderError):
    """The provider could not be reached at all."""


class StreamTruncated(ProviderError):
    """The reply stream ended before the reply was complete."""


@dataclass(frozen=True)
class Usage:
    """Token counts the provider billed for one response."""

    input_tokens: int | None
    output_tokens: int | None

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
    status: int
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
    """A client for one OpenAI-compatible endpoint and model."""

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings
        self._client = httpx.AsyncClient(
            base_url=settings.base_url.rstrip("/") + "/",
            timeout=httpx.Timeout(settings.timeout, connect=min(settings.timeout, 15.0)),
            headers=self._headers(),
        )
        self._context_window: int | None = settings.context_window
        self._models_retry_at = 0.0

    def _headers(self) -> dict[str, str]:
        headers = {
            "User-Agent": f"seri-lsp/{__version__}",
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

    async def complete(
        self,
        messages: Sequence[dict[str, Any]],
        tools: Sequence[dict[str, Any]] | None = None,
        *,
        reply: Reply | None = None,
        on_delta: DeltaCallback | None = None,
        on_retry: RetryCallback | None = None,
    ) -> Reply:
        """Send one chat completion and return the model's reply.

        `reply` (if given) is filled as the stream arrives, so a caller that cancels
        this coroutine still has the text received so far.
        """
        body = self.request_body(messages, tools)
        attempt = 0
        while True:
            target = reply if reply is not None else Reply()
            target.reset()
            try:
                return await self._attempt(body, target, on_delta)
            except ProviderHTTPError as exc:
                if exc.status not in RETRY_STATUSES or attempt >= self.settings.max_retries:
                    raise
                attempt += 1
                delay = self._retry_delay(attempt, exc.retry_after)
                if on_retry is not None:
                    await on_retry(RetryNotice(attempt, exc.status, delay, str(exc)))
                await asyncio.sleep(delay)

    def _retry_delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.settings.retry_max_delay)
        base = self.settings.retry_base_delay * (2 ** (attempt - 1))
        capped = min(base, self.settings.retry_max_delay)
        # Full jitter keeps two windows that failed together from retrying together.
        return random.uniform(capped / 2, capped)

    async def _attempt(
        self, body: dict[str, Any], reply: Reply, on_delta: DeltaCallback | None
    ) -> Reply:
        try:
            async with self._client.stream("POST", "chat/completions", json=body) as response:
                if response.status_code >= 400:
                    text = (await response.aread()).decode("utf-8", "replace")
                    raise _http_error(response, text)
                if body.get("stream"):
                    await _read_stream(response, reply, on_delta)
                else:
                    raw = await response.aread()
                    _read_whole(raw, reply)
        except httpx.TimeoutException as exc:
            raise ProviderTimeout(
                f"The provider at {self.settings.base_url} did not answer within "
                f"{self.settings.timeout:g} seconds ({type(exc).__name__})."
            ) from exc
        except httpx.RemoteProtocolError as exc:
            raise StreamTruncated(
                f"The connection to the provider broke off mid-reply ({exc})."
            ) from exc
        except (httpx.ConnectError, httpx.NetworkError) as exc:
            raise ProviderUnreachable(
                f"Could not reach the provider at {self.settings.base_url}: {exc}."
            ) from exc
        return reply

    async def context_window(self) -> int:
        """contextWindow from settings, else the provider's model list, else 128000."""
        if self._context_window is not None:
            return self._context_window
        if time.monotonic() < self._models_retry_at:
            return DEFAULT_CONTEXT_WINDOW
        try:
            response = await self._client.get("models", timeout=5.0)
            models = response.json().get("data", []) if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            models = None
        if models is None:
            # Unreachable or no model list: use the default, and ask again only after a
            # while, so an offline editor does not wait on the network at every call.
            self._models_retry_at = time.monotonic() + MODELS_RETRY_SECONDS
            return DEFAULT_CONTEXT_WINDOW
        window = DEFAULT_CONTEXT_WINDOW
        for model in models:
            if isinstance(model, dict) and model.get("id") == self.settings.model:
                length = model.get("context_length")
                if isinstance(length, int) and length > 0:
                    window = length
                break
        self._context_window = window
        return window

    async def aclose(self) -> None:
        """Close the HTTP connection pool."""
        await self._client.aclose()


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
            return error["message"]
        if isinstance(error, str):
            return error
    return text.strip()[:500]


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
    error = data.get("error")
    message = error.get("message", "") if isinstance(error, dict) else str(error)
    code = error.get("code") if isinstance(error, dict) else None
    text = json.dumps(data).lower()
    if any(marker in text for marker in _TOO_LONG_MARKERS):
        return ContextTooLong(f"The provider rejected the request as too long: {message}")
    status = code if isinstance(code, int) else 502
    return ProviderHTTPError(f"The provider reported an error mid-reply: {message}", status)


async def _read_stream(
    response: httpx.Response, reply: Reply, on_delta: DeltaCallback | None
) -> None:
    calls: dict[int, dict[str, str]] = {}
    finished = False
    async for line in response.aiter_lines():
        if not line.startswith("data:"):
            continue
        payload = line[5:].strip()
        if payload == "[DONE]":
            finished = True
            break
        try:
            chunk = json.loads(payload)
        except json.JSONDecodeError as exc:
            raise StreamTruncated(
                f"The provider sent an unreadable chunk: {payload[:200]}"
            ) from exc
        if "error" in chunk:
            raise _stream_error(chunk)
        if chunk.get("usage"):
            reply.usage = _usage(chunk["usage"])
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if text:
                reply.content += text
                if on_delta is not None:
                    on_delta(text)
            thinking = delta.get("reasoning") or delta.get("reasoning_content")
            if thinking:
                reply.thinking += thinking
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call.get("index", 0), {"id": "", "name": "", "args": ""})
                function = call.get("function") or {}
                slot["id"] = call.get("id") or slot["id"]
                slot["name"] += function.get("name") or ""
                slot["args"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                reply.finish_reason = choice["finish_reason"]
                finished = True
    if not finished:
        raise StreamTruncated("The reply stream ended before the reply was complete.")
    reply.tool_calls = [
        ToolCall(
            id=slot["id"] or f"call_{index}", name=slot["name"], arguments=slot["args"] or "{}"
        )
        for index, slot in sorted(calls.items())
    ]


def _read_whole(raw: bytes, reply: Reply) -> None:
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise StreamTruncated("The provider's reply was not complete JSON.") from exc
    if "error" in data:
        raise _stream_error(data)
    if data.get("usage"):
        reply.usage = _usage(data["usage"])
    choices = data.get("choices") or []
    if not choices:
        raise ProviderHTTPError("The provider's reply held no choices.", 502, raw.decode())
    message = choices[0].get("message") or {}
    reply.content = message.get("content") or ""
    reply.thinking = message.get("reasoning") or message.get("reasoning_content") or ""
    reply.finish_reason = choices[0].get("finish_reason")
    reply.tool_calls = [
        ToolCall(
            id=call.get("id") or f"call_{index}",
            name=(call.get("function") or {}).get("name", ""),
            arguments=(call.get("function") or {}).get("arguments") or "{}",
        )
        for index, call in enumerate(message.get("tool_calls") or [])
    ]


def _usage(data: dict[str, Any]) -> Usage:
    def number(key: str) -> int | None:
        value = data.get(key)
        return value if isinstance(value, int) else None

    return Usage(
        input_tokens=number("prompt_tokens") or number("input_tokens"),
        output_tokens=number("completion_tokens") or number("output_tokens"),
    )
