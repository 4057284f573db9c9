"""The tools' disk work, done on threads of their own so the event loop never waits.

Everything here is blocking and bounded: a file is opened only after `os.stat` says it
is a regular file (a FIFO, a device or a socket would block or never end), and it is
opened non-blocking, so one swapped in between cannot block either. Sizes are capped
and long work checks a `Stop` (a cancel, or a time budget) as it goes.

`ToolThreads` runs these functions off the event loop, on a pool apart from the
store's database worker; cancelling the awaiting task stops the work at its next check.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from seri_lsp import files
from seri_lsp.files import atomic_write_bytes

T = TypeVar("T")

# read_file returns a whole file up to this size; bigger ones are read in line ranges.
MAX_READ_BYTES = 256 * 1024
# No one read_file result (a line range included) is longer than this.
MAX_READ_CHARS = 256 * 1024
# write_file and edit hold the whole file in memory; they refuse bigger ones.
MAX_EDIT_BYTES = 16 * 1024 * 1024
# The total line count of a file is said when counting it is this cheap.
MAX_COUNT_BYTES = 64 * 1024 * 1024
MAX_LIST_ENTRIES = 500
MAX_LIST_SCAN = 10_000
BINARY_SNIFF = 8192
_CHUNK = 1024 * 1024


class DiskError(Exception):
    """The disk work cannot be done; the message (for the model) says why."""


class Stopped(Exception):
    """The work was cancelled (nobody waits for its result any more)."""


class Stop:
    """Tells long disk work to stop: a cancel from the loop, or a deadline."""

    def __init__(self, budget: float | None = None) -> None:
        self._cancel = threading.Event()
        self.deadline = None if budget is None else time.monotonic() + budget

    def cancel(self) -> None:
        """Called from the event loop when the awaiting task is cancelled."""
        self._cancel.set()

    def remaining(self) -> float | None:
        """Seconds left in the budget (None: no budget)."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    def expired(self) -> bool:
        """Whether the time budget has run out."""
        return self.deadline is not None and time.monotonic() >= self.deadline

    def check(self) -> None:
        """Raise Stopped if cancelled (the budget is the caller's to watch)."""
        if self._cancel.is_set():
            raise Stopped


class ToolThreads:
    """The threads the tools' disk work runs on (not the event loop, not the DB worker)."""

    def __init__(self, workers: int = 4) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="seri-tool")

    async def run(self, work: Callable[..., T], *args: Any, budget: float | None = None) -> T:
        """Run `work(*args, stop=Stop)` on a tool thread; a cancel stops it at its next check."""
        stop = Stop(budget)
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self._pool, functools.partial(work, *args, stop=stop))
        try:
            return await future
        except asyncio.CancelledError:
            stop.cancel()
            raise

    def shutdown(self) -> None:
        """Start no more work; running work ends at its next check or soon after."""
        self._pool.shutdown(wait=False, cancel_futures=True)


# --- opening files safely ---------------------------------------------------------------


def not_regular(display: str, mode: int) -> DiskError:
    """The refusal of something that is not a regular file."""
    if stat.S_ISDIR(mode):
        return DiskError(f"{display} is a folder; use list_dir.")
    return DiskError(
        f"{display} is {files.kind_of(mode)}, not a regular file; the tools read and write "
        "only regular files."
    )


def open_regular(path: Path, display: str) -> tuple[int, os.stat_result]:
    """Open a regular file for reading without ever blocking; DiskError for anything else."""
    try:
        return files.open_regular(path)
    except files.NotRegularFile as exc:
        raise not_regular(display, exc.mode) from None


def size_text(size: int) -> str:
    """A byte count for people: 812 bytes, 14.2 KiB, 3.1 MiB."""
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / (1024 * 1024):.1f} MiB"


def _is_binary(head: bytes) -> bool:
    return b"\x00" in head[:BINARY_SNIFF]


def line_count(fd: int, size: int, stop: Stop) -> int | None:
    """The number of lines of an open file (None when too big to count cheaply)."""
    if size > MAX_COUNT_BYTES:
        return None
    newlines, last = 0, b""
    os.lseek(fd, 0, os.SEEK_SET)
    while True:
        stop.check()
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            break
        newlines += chunk.count(b"\n")
        last = chunk
    return newlines + (1 if last and not last.endswith(b"\n") else 0)


def text_line_count(text: str) -> int:
    """The number of lines of a text, counted as `line_count` counts a file's."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


# --- read_file ----------------------------------------------------------------------------


@dataclass(frozen=True)
class LineRange:
    """Which lines read_file returns: from `offset` (1-based), at most `limit` of them."""

    offset: int = 1
    limit: int | None = None


def too_big(display: str, size: str, lines: int | None) -> DiskError:
    """The refusal of a whole read, offering line ranges instead."""
    counted = f", {lines} lines" if lines is not None else ""
    return DiskError(
        f"{display} is too big to read whole ({size}{counted}; read_file returns at most "
        f"{size_text(MAX_READ_BYTES)} at once). Read it in parts with offset (the first "
        "line, 1-based) and limit (how many lines), e.g. offset=1, limit=2000, or grep "
        "for what you need."
    )


def read_whole(path: Path, display: str, *, stop: Stop) -> str:
    """A whole text file, if it is small enough; DiskError (offering line ranges) if not."""
    try:
        fd, info = open_regular(path, display)
    except FileNotFoundError:
        raise DiskError(f"{display} does not exist.") from None
    try:
        if info.st_size > MAX_READ_BYTES:
            raise too_big(display, size_text(info.st_size), line_count(fd, info.st_size, stop))
        data = read_upto(fd, MAX_READ_BYTES + 1)
    finally:
        os.close(fd)
    return _decode(data, display)


def read_current(path: Path, display: str, *, stop: Stop) -> str | None:
    """The text of a file about to be changed (None if there is none yet)."""
    data = read_current_bytes(path, display, stop=stop)
    return None if data is None else _decode(data, display)


def read_current_bytes(path: Path, display: str, *, stop: Stop) -> bytes | None:
    """The bytes of a file about to be changed or restored (None if there is none);
    DiskError when it is no regular file or too big for the write tools."""
    if not os.path.lexists(path):
        return None
    fd, info = open_regular(path, display)
    try:
        if info.st_size > MAX_EDIT_BYTES:
            raise DiskError(
                f"{display} is too big to change with these tools ({size_text(info.st_size)}; "
                f"the limit is {size_text(MAX_EDIT_BYTES)})."
            )
        return read_upto(fd, MAX_EDIT_BYTES + 1, stop)
    finally:
        os.close(fd)


def read_range(path: Path, display: str, lines: LineRange, *, stop: Stop) -> str:
    """Lines `offset` .. `offset + limit - 1` of a file, streamed (never loaded whole)."""
    fd, info = open_regular(path, display)
    try:
        head = os.read(fd, BINARY_SNIFF)
        if _is_binary(head):
            raise DiskError(f"{display} is a binary file, not text.")
        os.lseek(fd, 0, os.SEEK_SET)  # (seek and read, not pread: Windows has no pread)
        with os.fdopen(os.dup(fd), "rb") as handle:
            picked = _pick(_file_lines(handle, display, stop), lines)
        total = line_count(fd, info.st_size, stop)
    finally:
        os.close(fd)
    return _range_text(display, lines, picked, total)


def range_of_text(text: str, display: str, lines: LineRange) -> str:
    """The same line range, taken from text already in memory (an editor buffer)."""
    picked = _pick(_text_lines(text), lines)
    return _range_text(display, lines, picked, text_line_count(text))


@dataclass
class _Picked:
    lines: list[str]
    last: int  # the number of the last line picked
    cut_at: int | None  # the first line left out for the result cap
    lines_seen: int | None  # every line of the text, when it was read to its end


def _pick(numbered: Iterator[tuple[int, Callable[[], str]]], lines: LineRange) -> _Picked:
    picked: list[str] = []
    chars = 0
    last = lines.offset - 1
    number = 0
    for number, text_of in numbered:
        if number < lines.offset:
            continue
        text = text_of()
        if picked and chars + len(text) > MAX_READ_CHARS:
            return _Picked(picked, last, number, None)
        if len(text) > MAX_READ_CHARS:
            cut = f" [line {number} cut after {MAX_READ_CHARS} characters]\n"
            text = text[:MAX_READ_CHARS] + cut
        picked.append(text)
        chars += len(text)
        last = number
        if lines.limit is not None and len(picked) >= lines.limit:
            return _Picked(picked, last, None, None)
    return _Picked(picked, last, None, number)


def _range_text(display: str, lines: LineRange, picked: _Picked, total: int | None) -> str:
    if total is None:
        total = picked.lines_seen
    if not picked.lines:
        size = f", which has {total} lines" if total is not None else ""
        raise DiskError(f"offset {lines.offset} is past the end of {display}{size}.")
    body = "".join(picked.lines)
    if not body.endswith("\n"):
        body += "\n"
    of = f" of {total}" if total is not None else ""
    note = f"[{display}: lines {lines.offset}-{picked.last}{of}"
    if picked.cut_at is not None:
        note += (
            f"; stopped at the {size_text(MAX_READ_CHARS)} result limit, "
            f"go on with offset={picked.cut_at}"
        )
    elif total is None:
        note += f"; more may follow from offset={picked.last + 1}"
    elif picked.last < total:
        note += f"; go on with offset={picked.last + 1}"
    return body + note + "]"


def _file_lines(handle: Any, display: str, stop: Stop) -> Iterator[tuple[int, Callable[[], str]]]:
    """The lines of a binary file, numbered, decoded only when asked for."""
    number = 0
    while True:
        stop.check()
        raw = handle.readline(MAX_READ_CHARS + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_READ_CHARS and not raw.endswith(b"\n"):
            # An overlong line: keep its start, skip the rest without holding it.
            while True:
                stop.check()
                rest = handle.readline(_CHUNK)
                if not rest or rest.endswith(b"\n"):
                    break
            yield number, functools.partial(raw.decode, "utf-8", "replace")
        else:
            yield number, functools.partial(_decode, raw, display, line=number)


def _text_lines(text: str) -> Iterator[tuple[int, Callable[[], str]]]:
    start, number = 0, 0
    while start < len(text):
        end = text.find("\n", start)
        end = len(text) if end == -1 else end + 1
        number += 1
        yield number, functools.partial(str.__getitem__, text, slice(start, end))
        start = end


def read_upto(fd: int, limit: int, stop: Stop | None = None) -> bytes:
    """At most `limit` bytes from an open file, checking `stop` between chunks."""
    parts = []
    total = 0
    while total < limit:
        if stop is not None:
            stop.check()
        chunk = os.read(fd, min(_CHUNK, limit - total))
        if not chunk:
            break
        parts.append(chunk)
        total += len(chunk)
    return b"".join(parts)


def _decode(data: bytes, display: str, *, line: int | None = None) -> str:
    if line is None and _is_binary(data):
        raise DiskError(f"{display} is a binary file, not text.")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = f" (line {line})" if line is not None else ""
        raise DiskError(f"{display} is not a UTF-8 text file{where}.") from exc


# --- list_dir -----------------------------------------------------------------------------


def list_folder(path: Path, display: str, *, stop: Stop) -> str:
    """The entries of a folder (folders end with '/'), at most MAX_LIST_ENTRIES shown."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise DiskError(f"{display} does not exist.") from None
    if not stat.S_ISDIR(info.st_mode):
        raise DiskError(f"{display} is not a folder.")
    entries: list[str] = []
    more = False
    with os.scandir(path) as scan:
        for entry in scan:
            stop.check()
            if len(entries) >= MAX_LIST_SCAN:
                more = True
                break
            is_dir = False
            with contextlib.suppress(OSError):
                is_dir = entry.is_dir()
            entries.append(entry.name + ("/" if is_dir else ""))
    entries.sort()
    shown = entries[:MAX_LIST_ENTRIES]
    if more:
        shown.append(
            f"[more than {MAX_LIST_SCAN} entries; these are the first by name among the "
            f"{MAX_LIST_SCAN} read; grep or a narrower folder finds the rest]"
        )
    elif len(entries) > len(shown):
        shown.append(f"[{len(entries) - len(shown)} more entries not shown]")
    return "\n".join(shown) if shown else "(empty folder)"


# --- writing ------------------------------------------------------------------------------


def write_file(path: Path, data: bytes, *, stop: Stop) -> None:
    """Create or replace a file atomically (its folders are created as needed)."""
    make_parents(path, stop=stop)
    atomic_write_bytes(path, data)


def make_parents(path: Path, *, stop: Stop) -> None:
    """Create the folders a new file at `path` needs."""
    path.parent.mkdir(parents=True, exist_ok=True)
