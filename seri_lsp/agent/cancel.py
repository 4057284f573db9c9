"""Cancelling a running task promptly without tearing its bookkeeping.

Only the waits that may take long (a provider request, a tool call, a question to the
user) run inside the scope; a cancel interrupts those and nothing else, so the task's
own database writes always complete and it can store what was said so far.
A subagent shares its parent's scope, so one cancel stops the whole tree.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")


class TaskCancelled(Exception):
    """The user cancelled the running task."""


class CancelScope:
    """The cancellable waits of one task."""

    def __init__(self) -> None:
        self.requested = False
        # The cancel came from seri stopping, not from the user: the task is interrupted.
        self.stopping = False
        self._inflight: set[asyncio.Future[Any]] = set()

    def cancel(self, *, stopping: bool = False) -> None:
        """Stop the task: interrupt what it is waiting on now and refuse new waits.
        `stopping`: because seri stops (the task ends `interrupted`, not `cancelled`); the
        first cancel's reason stands."""
        if not self.requested:
            self.stopping = stopping
        self.requested = True
        for future in list(self._inflight):
            future.cancel()

    def check(self) -> None:
        """Raise TaskCancelled if a cancel was requested."""
        if self.requested:
            raise TaskCancelled

    async def run(self, awaitable: Awaitable[T]) -> T:
        """Await `awaitable`, interrupted (TaskCancelled) if the task is cancelled."""
        if self.requested:
            if asyncio.iscoroutine(awaitable):
                awaitable.close()
            raise TaskCancelled
        future = asyncio.ensure_future(awaitable)
        self._inflight.add(future)
        try:
            return await future
        except asyncio.CancelledError:
            if self.requested and future.cancelled():
                raise TaskCancelled from None
            future.cancel()
            raise
        finally:
            self._inflight.discard(future)
