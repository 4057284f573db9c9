"""What each process of test_store_busy_and_broken's race does: wait for the others, then open a
new profile's seri.db. A module of its own, so that a spawned process imports the store
and nothing of the test suite's (pytest, pytest-lsp, lsprotocol)."""

from __future__ import annotations

from pathlib import Path
from threading import Barrier

from seri_lsp.store.database import Database

_together: Barrier | None = None


def wait_together(barrier: Barrier) -> None:
    """The pool's initializer: the barrier that every opening waits at."""
    global _together
    _together = barrier


def open_and_close(path: str) -> str:
    """Open and close `path` as soon as every process is ready to; "ok", or the error."""
    assert _together is not None
    _together.wait(timeout=60)
    try:
        Database.open(Path(path)).close()
    except Exception as exc:  # reported back to the test
        return f"{type(exc).__name__}: {exc}"
    return "ok"
