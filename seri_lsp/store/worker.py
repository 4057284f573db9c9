"""The store's worker thread: blocking database work, off the event loop.

One thread runs every database call in order, so the event loop that serves the editor
never waits on the disk and the single SQLite connection is never used concurrently.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class Worker:
    """Runs blocking calls on one background thread; `await worker(fn, *args)`."""

    def __init__(self, name: str = "seri-db") -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)

    async def __call__(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn(*args, **kwargs)` on the worker thread and wait for its result."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, functools.partial(fn, *args, **kwargs))

    def shutdown(self) -> None:
        """Finish queued work and stop the thread."""
        self._executor.shutdown(wait=True)
