"""How long the server waits for something that may never come, and shortening it in tests.

A wait that ends a stuck exchange (an editor that never answers, a model list that
trickles, a search that backtracks forever) has a default fit for real use, seconds long.
A test that proves the wait ends would sit through it; `SERI_TEST_WAITS` (for tests
only, not a setting) shortens named waits in the process it is given to:

    SERI_TEST_WAITS="EDITOR_ANSWER_SECONDS=0.5,MODELS_SECONDS=0.3"

Each name is that of the `Wait` constant that holds the wait (`seri_lsp/agent/rewind.py`'s
`EDITOR_ANSWER_SECONDS`, ...), read when the wait starts, never when its module is
imported: a process forked from one that imported it (the tests' warm process) reads
its own environment.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import NamedTuple

WAITS_ENV = "SERI_TEST_WAITS"


class Wait(NamedTuple):
    """One named wait and its default in seconds."""

    name: str
    default: float

    def seconds(self) -> float:
        """The default, or what `SERI_TEST_WAITS` gives this wait now."""
        return wait_seconds(self.name, self.default)


def wait_seconds(name: str, default: float, env: Mapping[str, str] = os.environ) -> float:
    """`default`, or the seconds `SERI_TEST_WAITS` gives `name`."""
    given = env.get(WAITS_ENV, "").strip()
    if not given:
        return default
    for entry in given.split(","):
        key, equals, value = entry.partition("=")
        if key.strip() != name:
            continue
        try:
            seconds = float(value) if equals else math.nan
        except ValueError:
            seconds = math.nan
        if not (math.isfinite(seconds) and seconds > 0):
            raise ValueError(
                f"{WAITS_ENV} gives {name} {value.strip()!r}; it takes a positive number "
                f"of seconds, as in {WAITS_ENV}={name}=0.5"
            )
        return seconds
    return default
