"""Carrying LSP messages over stdio or TCP, and stopping cleanly.

Messages are framed with `Content-Length` headers; each body goes to
`SeriProtocol.receive`, which answers every request. The server stops when the client
sends `exit`, when its input ends, or on SIGINT (Ctrl-C) or SIGTERM: it cancels the
running task, waits a moment for the requests in flight to be answered, and closes the
store (the SQLite connection, so the WAL is checkpointed) before the process ends.

Standard input is read by a daemon thread with `os.read` on the file descriptor, so a
blocked read never keeps the process from ending (pygls reads it on a pool thread that
the interpreter waits for at exit).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO

from pygls.io_ import StdoutWriter

from seri_lsp.lsp.protocol import MAX_MESSAGE_BYTES, SeriProtocol
from seri_lsp.signals import on_stop_signals

logger = logging.getLogger(__name__)

# How long a stop waits for the requests in flight (a cancelled task storing its end).
DRAIN_SECONDS = 5.0
_HEADER_LIMIT = 1 << 16
# What a pipe to the editor may hold (Linux's limit for unprivileged processes).
PIPE_BYTES = 1 << 20
# How much of a message too large to read is kept, to find its id.
_HEAD_BYTES = 4096


async def read_messages(reader: asyncio.StreamReader, protocol: SeriProtocol) -> None:
    """Read framed messages until the stream ends, handing each body to the protocol."""
    content_length: int | None = None
    while True:
        try:
            line = await reader.readline()
        except (ValueError, asyncio.LimitOverrunError):
            logger.error(
                "A header line longer than %d bytes; closing the connection.", _HEADER_LIMIT
            )
            return
        if not line:
            return
        if line.strip():
            name, _, value = line.decode("ascii", "replace").partition(":")
            if name.strip().lower() == "content-length":
                digits = value.strip()
                if digits.isascii() and digits.isdigit():
                    content_length = int(digits)
                else:
                    logger.warning("Ignoring a bad Content-Length header: %r", line[:100])
            continue
        if content_length is None:
            continue  # a blank line outside a message
        size, content_length = content_length, None
        try:
            if size > MAX_MESSAGE_BYTES:
                # Never buffered whole: its start (for the id) is kept, the rest skipped.
                head = await reader.readexactly(min(size, _HEAD_BYTES))
                await _skip(reader, size - len(head))
                protocol.refuse_too_large(head, size)
                continue
            body = await reader.readexactly(size)
        except asyncio.IncompleteReadError:
            return
        protocol.receive(body)
        # Let the handlers it started run (and answer) before reading on: with input
        # buffered, reading never waits, and a client that keeps sending would otherwise
        # starve the answers to its own earlier requests.
        await asyncio.sleep(0)


async def _skip(reader: asyncio.StreamReader, count: int) -> None:
    """Read and drop `count` bytes, a chunk at a time."""
    while count > 0:
        count -= len(await reader.readexactly(min(count, 1 << 20)))


def _pump(fd: int, loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader) -> None:
    """Copy standard input into `reader` (runs on a daemon thread)."""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            chunk = b""
        try:
            if chunk:
                loop.call_soon_threadsafe(reader.feed_data, chunk)
            else:
                loop.call_soon_threadsafe(reader.feed_eof)
                return
        except RuntimeError:
            return  # the loop is closed: the server has stopped


class Stopper:
    """Why and with which exit status the server stops; the first reason wins."""

    def __init__(self) -> None:
        self.future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.reason = ""

    def stop(self, reason: str, code: int = 0) -> None:
        if not self.future.done():
            self.reason = reason
            self.future.set_result(code)


async def run(
    protocol: SeriProtocol,
    connect: Callable[[Stopper], Awaitable[Any]],
    close: Callable[[], Awaitable[None]],
) -> int:
    """Serve until exit, end of input or a signal; then stop cleanly. Returns the status."""
    stopper = Stopper()
    protocol.on_exit = lambda code: stopper.stop("exit", code)
    on_stop_signals(stopper.stop)

    def served(task: asyncio.Future[Any]) -> None:
        if task.cancelled():
            return
        if (exc := task.exception()) is not None:
            logger.error("seri-lsp cannot serve: %s", exc)
            stopper.stop("the transport failed", 1)
        else:
            stopper.stop("end of input")

    serving = asyncio.ensure_future(connect(stopper))
    serving.add_done_callback(served)
    code = await stopper.future
    logger.info("Stopping (%s).", stopper.reason)
    protocol.stopping()  # requests from now on are answered "shutting down"
    await close()
    serving.cancel()
    with contextlib.suppress(BaseException):
        await serving
    return code


def run_loop(main: Awaitable[int]) -> int:
    """Run `main` on a new event loop without waiting for stray threads at the end.

    `asyncio.run` waits for every thread of the default executor; one stuck in a system
    call (a FIFO, a slow name lookup) would keep a stopped server alive.
    """
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        return loop.run_until_complete(main)
    finally:
        leftover = [task for task in asyncio.all_tasks(loop) if not task.done()]
        for task in leftover:
            task.cancel()
        if leftover:
            loop.run_until_complete(asyncio.wait(leftover, timeout=2))
        loop.run_until_complete(loop.shutdown_asyncgens())
        asyncio.set_event_loop(None)
        loop.close()


def serve_stdio(
    protocol: SeriProtocol,
    close: Callable[[], Awaitable[None]],
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    ready: Callable[[], None] | None = None,
) -> int:
    """Serve on standard input and output; returns the exit status. `ready` is called
    once SIGINT and SIGTERM stop the server cleanly, before the first message is read."""
    out = stdout or sys.stdout.buffer
    widen_pipe(out.fileno())
    protocol.set_writer(StdoutWriter(out))
    fd = (stdin or sys.stdin.buffer).fileno()

    async def connect(stopper: Stopper) -> None:
        if ready is not None:
            ready()
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=_HEADER_LIMIT, loop=loop)
        threading.Thread(
            target=_pump, args=(fd, loop, reader), name="seri-stdin", daemon=True
        ).start()
        await read_messages(reader, protocol)

    return run_loop(run(protocol, connect, close))


def widen_pipe(fd: int) -> None:
    """Let the pipe behind `fd` hold 1 MiB where the system allows it (Linux), so a large
    answer goes out in a few writes instead of one per 64 KiB the editor has read."""
    try:
        import fcntl

        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), PIPE_BYTES)
    except (ImportError, OSError, ValueError):
        pass  # not a pipe, not Linux, or a lower limit: the default size serves


def serve_tcp(
    protocol: SeriProtocol, close: Callable[[], Awaitable[None]], host: str, port: int
) -> int:
    """Serve one client connection on a TCP port; returns the exit status."""

    async def connect(stopper: Stopper) -> None:
        connected: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            if connected.done():
                writer.close()  # one editor per server process
                return
            connected.set_result(None)
            protocol.set_writer(writer)
            try:
                await read_messages(reader, protocol)
            except asyncio.CancelledError:
                pass  # the server is stopping (Python 3.11 logs a cancelled client task)
            finally:
                stopper.stop("the client disconnected")

        server = await asyncio.start_server(on_client, host, port, limit=_HEADER_LIMIT)
        addresses = ", ".join(str(sock.getsockname()) for sock in server.sockets)
        logger.info("Serving LSP on %s", addresses)
        async with server:
            await stopper.future

    return run_loop(run(protocol, connect, close))
