"""Stopping on SIGINT (Ctrl-C) and SIGTERM (the editor or the terminal going away).

Every face reacts to both the same way: a callback on the event loop, where it may
cancel, stop or tell. The loop's own signal handlers serve where it has them (Linux,
macOS); where it has none (Windows' proactor loop), a plain `signal.signal` handler hands
the signal to the loop, and Windows' Ctrl-Break (SIGBREAK) counts too. Off the main
thread nothing is installed and the default behaviour stays.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable


def on_stop_signals(callback: Callable[[str], object]) -> None:
    """Call `callback` with the signal's name ("SIGINT", "SIGTERM") on the running loop
    at each SIGINT or SIGTERM (and SIGBREAK where there is one)."""
    loop = asyncio.get_running_loop()
    names = ("SIGINT", "SIGTERM", "SIGBREAK")
    for signum in [getattr(signal, name) for name in names if hasattr(signal, name)]:
        name = signal.Signals(signum).name
        try:
            loop.add_signal_handler(signum, callback, name)
        except NotImplementedError:

            def hand_over(_signum: int, _frame: object, name: str = name) -> None:
                loop.call_soon_threadsafe(callback, name)

            with contextlib.suppress(ValueError):  # not the main thread
                signal.signal(signum, hand_over)
        except RuntimeError:
            pass  # not the main thread
