"""The store's worker thread: blocking database work, off the event loop.

One thread runs every database call in the order they were made, so the event loop
that serves the editor never waits on the disk and the single SQLite connection is
never used concurrently. A call hands its function over a queue and gets its answer
back through the loop's own thread-safe callback: one hop each way and nothing more
(no executor futures chained to asyncio ones), since a turn of the agent makes a few.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_Job = tuple[asyncio.AbstractEventLoop, asyncio.Future[Any], Callable[[], Any]]


class Worker:
    """Runs blocking calls on one background thread; `await worker(fn, *args)`."""

    def __init__(self, name: str = "seri-db") -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()
        self._closed = False

    def __call__(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> asyncio.Future[T]:
        """Run `fn(*args, **kwargs)` on the worker thread; await the answer.

        The call is queued at once, in order, even if its answer is awaited later.
        """
        if self._closed:
            raise RuntimeError("the database worker has shut down")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put((loop, future, functools.partial(fn, *args, **kwargs)))
        return future

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            loop, future, call = job
            try:
                result = call()
            except BaseException as exc:  # handed to the caller, whatever it is
                _answer(loop, future, None, exc)
            else:
                _answer(loop, future, result, None)

    def shutdown(self) -> None:
        """Finish queued work and stop the thread."""
        if not self._closed:
            self._closed = True
            self._jobs.put(None)
            self._thread.join()


def _answer(
    loop: asyncio.AbstractEventLoop,
    future: asyncio.Future[Any],
    result: Any,
    error: BaseException | None,
) -> None:
    # A closed loop (RuntimeError): nobody waits for this answer any more.
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(_settle, future, result, error)


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is None:
        future.set_result(result)
    else:
        future.set_exception(error)
