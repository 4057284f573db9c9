"""What went wrong with a model call, typed and in the user's words.

Errors are typed so the agent loop can tell them apart:

- ContextTooLong: the provider refused the request as too long (compaction handles it);
- ProviderHTTPError: any other refusal (`retry.py` retries 429 and 5xx, never 401 and
  403);
- ConnectionFailed: the connection failed before any byte of a reply arrived (retried
  as 5xx are);
- ProviderTimeout: the reply did not finish within `provider.timeout` seconds;
- ProviderUnreachable, StreamTruncated, MalformedReply, MissingApiKey: the turn fails
  and the message says what happened and, where the user can act, what to do;
- SettingsBlocked: a setting that decides where prompts go is wrong; nothing is sent.

Every message replaces lone surrogates by U+FFFD (`clean_text`), so nothing the
provider says can break the database or the wire.
"""

from __future__ import annotations

import email.utils
import json
import time
from typing import Any

import httpx

from seri_lsp.agent.connection import Client, connect_failure
from seri_lsp.limits import clean_text
from seri_lsp.settings import ProviderSettings

_TOO_LONG_MARKERS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "prompt is too long",
    "too many tokens",
    "request too large",
)
# What an httpx error says in words when it says nothing itself.
_UNSAID = {
    "ReadError": "the connection was reset",
    "WriteError": "the connection broke while the request was sent",
    "RemoteProtocolError": "the connection closed early",
}


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
    """The reply stream ended before the reply was complete. The message is in plain
    words; `detail` says what the wire showed, for the log."""

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = clean_text(detail)


class MalformedReply(ProviderError):
    """The provider's reply is not shaped like a chat completion."""


class MissingApiKey(ProviderError):
    """No API key is set for a provider that is not on this machine or network."""


class SettingsBlocked(ProviderError):
    """A setting that decides where prompts go is wrong (`ProviderSettings.blocking`):
    nothing is sent rather than send it to a default provider."""


def malformed(detail: str) -> MalformedReply:
    """A reply of the wrong shape; `detail` says what was wrong and what came."""
    return MalformedReply(f"The provider sent an unexpected reply shape: {detail}.")


def unexpected(where: str, expected: str, value: Any) -> MalformedReply:
    """The field at `where` should be `expected` and is `value`."""
    return malformed(f"{where} should be {expected}, got {_kind(value)} ({snippet(value)})")


def snippet(value: Any, limit: int = 120) -> str:
    """`value` as JSON, cut at `limit` characters."""
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


def _too_long(detail: str) -> ContextTooLong:
    return ContextTooLong(f"The provider rejected the request as too long: {detail}")


def http_error(response: httpx.Response, text: str, settings: ProviderSettings) -> ProviderError:
    """The error an error status means; `text` is the response's body. A refused key
    (401, 403) says where the key came from and how to change it there."""
    status = response.status_code
    detail = _error_detail(text)
    lowered = text.lower()
    if status == 413 or (
        status in (400, 422) and any(marker in lowered for marker in _TOO_LONG_MARKERS)
    ):
        return _too_long(detail)
    message = f"The provider answered HTTP {status}: {detail}"
    if status not in (401, 403):
        return ProviderHTTPError(
            message, status, text, retry_after=_retry_after(response.headers.get("retry-after"))
        )
    origin = settings.key_origin
    if not settings.api_key or origin is None:
        advice = f"No API key was sent: {settings.key_advice()}."
    else:
        refused = "refused" if status == 401 else "not allowed this request"
        advice = f"The API key (from {origin.where}) was {refused}: {origin.fix}."
    return ProviderHTTPError(f"{message} {advice}", status, text)


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


def stream_error(data: dict[str, Any]) -> ProviderError:
    """An error object inside a 200 reply (a stream chunk or a whole body)."""
    error = data.get("error")
    if isinstance(error, dict):
        message, code = error.get("message"), error.get("code")
    else:
        message, code = error, None
    message = message if isinstance(message, str) and message else snippet(error)
    text = json.dumps(data).lower()
    if any(marker in text for marker in _TOO_LONG_MARKERS):
        return _too_long(message)
    if isinstance(code, str) and code.isdigit():
        code = int(code)
    status = code if isinstance(code, int) and 400 <= code <= 599 else 502
    return ProviderHTTPError(
        f"The provider reported an error mid-reply (status {status}): {message}", status
    )


def call_failure(
    exc: TimeoutError | httpx.TransportError | UnicodeEncodeError,
    *,
    answered: bool,
    client: Client,
    settings: ProviderSettings,
    connect_seconds: float,
) -> ProviderError:
    """What a call that failed on its way (`answered`: after the response's status
    arrived) means: a timeout, a connection that failed (ConnectionFailed when sending
    again may help), a stream cut mid-reply, a setting a header cannot carry."""
    url = settings.base_url
    if isinstance(exc, TimeoutError):
        return _timed_out(settings, answered)
    if isinstance(exc, httpx.ConnectTimeout):
        return ConnectionFailed(
            f"Could not reach the provider at {url}: no connection within "
            f"{connect_seconds:g} seconds."
        )
    if isinstance(exc, httpx.TimeoutException):  # not expected: only connecting has a limit
        return _timed_out(settings, answered)
    if isinstance(exc, httpx.ProxyError):
        return ProviderUnreachable(
            f"Could not reach the provider at {url}: the proxy at {client.proxy} refused "
            f"the connection to {client.origin} ({reason(exc)})."
        )
    if isinstance(exc, httpx.ConnectError):
        why, retryable = connect_failure(exc, client.origin, client.proxy)
        failure = ConnectionFailed if retryable else ProviderUnreachable
        return failure(f"Could not reach the provider at {url}: {why}.")
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
        if answered:
            return StreamTruncated(
                "The reply broke off: the connection closed mid-reply. Try again.",
                detail=reason(exc),
            )
        # Nothing came back: the request may not even have arrived (a kept-alive
        # connection the server closed just as it was reused), so it is sent again.
        return ConnectionFailed(
            f"The provider at {url} closed the connection without answering ({reason(exc)})."
        )
    if isinstance(exc, httpx.LocalProtocolError | UnicodeEncodeError):
        # Header values (the API key) must be plain ASCII text.
        return ProviderUnreachable(
            "The request could not be sent: the API key or another provider setting "
            f"holds characters an HTTP header cannot carry ({reason(exc)}). Check "
            "provider.apiKey."
        )
    return ProviderUnreachable(f"Could not reach the provider at {url}: {reason(exc)}.")


def _timed_out(settings: ProviderSettings, answered: bool) -> ProviderTimeout:
    seconds = f"{settings.timeout:g}"
    if answered:
        what = f"The provider did not finish its reply within {seconds} seconds"
    else:
        what = f"The provider at {settings.base_url} did not answer within {seconds} seconds"
    return ProviderTimeout(
        f"{what} (provider.timeout). Try again, or raise provider.timeout for a slow model."
    )


def reason(exc: Exception) -> str:
    """An exception's message, or what its kind means when it has none."""
    name = type(exc).__name__
    return clean_text(str(exc).strip()) or _UNSAID.get(name, name)
