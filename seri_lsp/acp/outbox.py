"""Session updates go to the client one at a time, in the order they were made.

The engine reports what happens synchronously (`Host.emit`); the outbox queues each
update and one task sends them in order. Before a response that must follow its updates
(a prompt's stop reason, the end of a `session/load` replay, a permission question about
a tool call) the face waits for the queue to drain.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acp.interfaces import Client

    from seri_lsp.acp.transcript import Update

logger = logging.getLogger(__name__)


class Outbox:
    """The ordered queue of one connection's session updates."""

    def __init__(self) -> None:
        self._client: Client | None = None
        self._queue: asyncio.Queue[tuple[str, Update]] = asyncio.Queue()
        self._pump: asyncio.Task[None] | None = None

    def connect(self, client: Client) -> None:
        """The client the updates go to."""
        self._client = client

    def put(self, session_id: str, update: Update) -> None:
        """Queue an update for the client."""
        self._queue.put_nowait((session_id, update))
        if self._pump is None:
            self._pump = asyncio.get_running_loop().create_task(self._send_all())

    async def flush(self) -> None:
        """Wait until every update queued so far has been sent."""
        await self._queue.join()

    async def close(self) -> None:
        """Stop sending (the connection is gone)."""
        if self._pump is not None:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump

    async def _send_all(self) -> None:
        while True:
            session_id, update = await self._queue.get()
            try:
                if self._client is not None:
                    await self._client.session_update(session_id=session_id, update=update)
            except Exception as exc:  # the client went away; nothing is waiting for this
                logger.debug("A session update was not delivered: %s", exc)
            finally:
                self._queue.task_done()
