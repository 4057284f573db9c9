"""The scripted provider of the tests, run in a process of its own for the benchmarks.

In the benchmark's own process its threads would take the interpreter lock from the
engine being timed. Here it runs apart, and the benchmark drives it through a pipe:
`script()` queues one task's replies (20 file reads, then an answer), `stats()` returns
the connections it accepted, the seconds it spent writing chat replies (the model's
time, left out of every figure) and the request bodies it received.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.connection import Connection
from typing import Any

TOOL_TURNS = 20
CALLS = TOOL_TURNS + 1


def _serve(pipe: Connection) -> None:
    from tests.scripted_provider import Calls, ScriptedProvider, Text, usage

    provider = ScriptedProvider().start()
    pipe.send(provider.base_url)
    while True:
        command = pipe.recv()
        if command == "script":
            for turn in range(TOOL_TURNS):
                provider.script(
                    Calls(
                        [(f"c{turn}", "read_file", {"path": "src/app.py"})],
                        usage=usage(1000 + turn),
                    )
                )
            provider.script(Text("The handler answers 200 everywhere.", usage=usage(2000)))
            pipe.send(None)
        elif command == "stats":
            with provider.received:
                requests = provider.requests[-CALLS:]
                pipe.send((provider.connections, provider.busy_seconds, requests))
        else:
            provider.stop()
            pipe.send(None)
            return


class ProviderProcess:
    """The scripted provider in a child process, and the pipe that drives it."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")
        self._pipe, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child,), daemon=True)
        self._process.start()
        self.base_url: str = self._pipe.recv()
        self.model = "test/model"

    def script(self) -> None:
        """Queue one task's replies: 20 file reads, then the answer."""
        self._pipe.send("script")
        self._pipe.recv()

    def stats(self) -> tuple[int, float, list[dict[str, Any]]]:
        """(connections accepted, seconds spent answering, the last task's requests)."""
        self._pipe.send("stats")
        return self._pipe.recv()

    def stop(self) -> None:
        self._pipe.send("stop")
        self._pipe.recv()
        self._process.join(timeout=10)
