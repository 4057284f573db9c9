"""Named crash points, so tests can kill the process at an exact moment.

Atomicity claims ("the recap and the deletion commit together or not at all") are only
worth something when a test can stop the process between the two halves. Setting
`SERI_CRASH_AT=<name>` makes the process exit abruptly, without cleanup, when it reaches
the crash point of that name. Unset, a crash point costs one environment lookup.

`SERI_FAIL_AT=<name>` instead raises `InjectedFault` (a bug, as far as the server can
tell) at the fail point of that name, so tests can check how real internal errors are
answered and logged.
"""

from __future__ import annotations

import os

CRASH_EXIT_CODE = 86


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
