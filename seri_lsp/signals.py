"""Stopping on SIGINT (Ctrl-C) and SIGTERM (the editor or the terminal going away).

Every face reacts to both the same way: a callback on the event loop, where it may
cancel, stop or tell. Where the loop cannot handle signals (not the main thread,
Windows), nothing is installed and the default behaviour stays.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable


def on_stop_signals(callback: Callable[[str], object]) -> None:
    """Call `callback` with the signal's name ("SIGINT", "SIGTERM") on the running loop
    at each SIGINT or SIGTERM."""
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, callback, signal.Signals(signum).name)
