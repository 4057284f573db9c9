"""Which failed calls are sent again, and when.

429 and 5xx answers, and connections that failed before any byte of a reply arrived,
are retried with exponential backoff and full jitter, honouring `Retry-After`, at most
`provider.maxRetries` times; every other failure (401 and 403 included) ends the call.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from seri_lsp.agent.provider.errors import ConnectionFailed, ProviderHTTPError
from seri_lsp.settings import ProviderSettings

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 520, 522, 524, 529})

T = TypeVar("T")


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


RetryCallback = Callable[[RetryNotice], Awaitable[None]]


async def retrying(
    attempt: Callable[[], Awaitable[T]],
    settings: ProviderSettings,
    on_retry: RetryCallback | None,
) -> T:
    """What `attempt()` returns, awaited again after a failure worth retrying (up to
    `settings.max_retries` times). `on_retry` is awaited before each retry's wait."""
    retries = 0
    while True:
        try:
            return await attempt()
        except (ProviderHTTPError, ConnectionFailed) as exc:
            status, retry_after = None, None  # a failed connection: no answer at all
            if isinstance(exc, ProviderHTTPError):
                status, retry_after = exc.status, exc.retry_after
            retryable = status is None or status in RETRY_STATUSES
            if not retryable or retries >= settings.max_retries:
                raise
            retries += 1
            delay = retry_delay(settings, retries, retry_after)
            if on_retry is not None:
                await on_retry(RetryNotice(retries, status, delay, str(exc)))
            await asyncio.sleep(delay)


def retry_delay(settings: ProviderSettings, attempt: int, retry_after: float | None) -> float:
    """Seconds to wait before retry number `attempt` (from 1)."""
    if retry_after is not None:
        return min(retry_after, settings.retry_max_delay)
    base = settings.retry_base_delay * (2 ** (attempt - 1))
    capped = min(base, settings.retry_max_delay)
    # Full jitter keeps two windows that failed together from retrying together.
    return random.uniform(capped / 2, capped)
