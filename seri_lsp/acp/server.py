"""`seri-lsp acp`: the ACP agent on stdin/stdout, until the client hangs up.

The agent stops cleanly, with exit status 0, however the client goes: its stdin ends,
its stdout is closed (the TypeScript SDK closes both), SIGINT, SIGTERM or SIGHUP. Running
tasks are cancelled and stored as such, every session is let go, the store is closed.

Every line the client sends is looked at before the ACP SDK reads it: a line that is not
JSON is answered with a JSON-RPC parse error (-32700), and one that is JSON but not an
object (a number, a batch) with an invalid-request error (-32600), both with `id: null`;
the SDK would skip the first without a word and stop on the second.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import Callable
from typing import Any

from acp import run_agent
from acp.stdio import stdio_streams

from seri_lsp.acp.agent import AgentOptions, SeriAgent
from seri_lsp.signals import on_stop_signals

# The longest line read in one piece (a longer one is read in pieces and joined).
LINE_LIMIT = 50 * 1024 * 1024


def serve(options: AgentOptions) -> int:
    """Serve one ACP client on stdio; returns the exit status."""
    return asyncio.run(_serve(options))


async def _serve(options: AgentOptions) -> int:
    agent = SeriAgent(options)
    stdin, stdout = await stdio_streams(limit=LINE_LIMIT)
    checked = asyncio.StreamReader(limit=LINE_LIMIT)
    gate = asyncio.ensure_future(pass_objects(stdin, checked, stdout, agent.received))
    # The unstable part of the protocol brings session/resume and session/close.
    # SeriAgent is not the full `acp.Agent` protocol: it defines only the methods it
    # serves (acp answers method-not-found for the others, by attribute lookup).
    serving = asyncio.ensure_future(
        run_agent(agent, stdout, checked, use_unstable_protocol=True)  # type: ignore[arg-type]
    )
    on_stop_signals(lambda _signal: serving.cancel())
    _on_hangup(serving.cancel)
    _on_output_gone(stdout, serving.cancel)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await serving
    finally:
        gate.cancel()
        await agent.close()
    return 0


def _on_hangup(stop: Callable[[], object]) -> None:
    """SIGHUP (the terminal or the editor that started the agent went) stops it too."""
    if hasattr(signal, "SIGHUP"):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            asyncio.get_running_loop().add_signal_handler(signal.SIGHUP, stop)


def _on_output_gone(stdout: asyncio.StreamWriter, stop: Callable[[], object]) -> None:
    """Call `stop` when the client closes its end of the agent's stdout.

    The pipe transport notices (it watches the pipe, or a write fails) and tells its
    protocol, whose `connection_lost` the SDK's protocol leaves empty."""
    protocol = stdout.transport.get_protocol()
    earlier = getattr(protocol, "connection_lost", None)

    def connection_lost(exc: BaseException | None) -> None:
        if callable(earlier):
            earlier(exc)
        stop()

    protocol.connection_lost = connection_lost  # type: ignore[method-assign]


async def pass_objects(
    source: asyncio.StreamReader,
    sink: asyncio.StreamReader,
    replies: asyncio.StreamWriter,
    received: Callable[[dict[str, Any]], None],
) -> None:
    """Feed `sink` the lines of `source` that hold a JSON object, telling `received`
    about each in the order they came; answer the others."""
    try:
        while line := await _read_line(source):
            text = line.strip()
            if not text:
                continue
            try:
                message = json.loads(text)
            except (ValueError, RecursionError):
                _answer(replies, -32700, "Parse error: the message is not valid JSON.")
                continue
            if not isinstance(message, dict):
                _answer(
                    replies,
                    -32600,
                    "Invalid Request: a message must be a JSON object (batches are not supported).",
                )
                continue
            received(message)
            sink.feed_data(text + b"\n")
    finally:
        sink.feed_eof()


async def _read_line(source: asyncio.StreamReader) -> bytes:
    """One line (empty at the end of input), however long."""
    chunks: list[bytes] = []
    while True:
        try:
            chunks.append(await source.readuntil(b"\n"))
            return b"".join(chunks)
        except asyncio.LimitOverrunError as exc:
            chunks.append(await source.readexactly(exc.consumed))
        except asyncio.IncompleteReadError as exc:
            chunks.append(exc.partial)
            return b"".join(chunks)


def _answer(replies: asyncio.StreamWriter, code: int, message: str) -> None:
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}
    replies.write(json.dumps(error).encode() + b"\n")
