"""The server's hooks for tests, all in one place: crash points, fail points, the SQL trace.

Atomicity claims ("the recap and the deletion commit together or not at all") are only
worth something when a test can stop the process between the two halves. Setting
`SERI_CRASH_AT=<name>` makes the process exit abruptly, without cleanup, when it reaches
the crash point of that name. Unset, a crash point costs one environment lookup.

`SERI_FAIL_AT=<name>` instead raises `InjectedFault` (a bug, as far as the server can
tell) at the fail point of that name, so tests can check how real internal errors are
answered and logged.

`SERI_TRACE_SQL=<file>` appends every statement the process runs on `seri.db` to that
file, one per line, so a test (or a curious user) can see what an action reads and
writes: that opening a session does not read its messages, for one.

(Shortening the server's long waits in a test, `SERI_TEST_WAITS`, is `waits.py`'s: it
belongs with the waits it shortens.)
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

CRASH_EXIT_CODE = 86
TRACE_SQL_ENV = "SERI_TRACE_SQL"


def crash_point(name: str) -> None:
    """Exit immediately, as a kill would, if the environment names this point."""
    if os.environ.get("SERI_CRASH_AT") == name:
        os._exit(CRASH_EXIT_CODE)


class InjectedFault(RuntimeError):
    """A failure injected by `SERI_FAIL_AT`; stands for a bug in the server."""


def fail_point(name: str) -> None:
    """Raise InjectedFault if the environment names this point."""
    if os.environ.get("SERI_FAIL_AT") == name:
        raise InjectedFault(f"injected fault at {name}")


def sql_tracer() -> Callable[[str], None] | None:
    """A trace callback appending each statement to the file `SERI_TRACE_SQL` names, one
    line each (None when it names none)."""
    given = os.environ.get(TRACE_SQL_ENV)
    if not given:
        return None
    path = Path(given)
    lock = threading.Lock()

    def trace(statement: str) -> None:
        line = " ".join(statement.split()) + "\n"
        with lock, path.open("a", encoding="utf-8", errors="backslashreplace") as handle:
            handle.write(line)

    return trace
