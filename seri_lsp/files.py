"""Writing files so that a crash never loses them, and opening them without blocking.

`atomic_write_bytes` writes the new content to a temporary file next to the target,
flushes it to the disk, and renames it over the target: killed at any instant, the
target holds its old content or its new content, never a mix and never nothing. The
target's permission bits (and, where the process may, its owner) are kept; a new file
gets the usual bits, after the umask. What Windows lacks (setting the bits of an open
file, a folder to flush) is skipped there, not failed: its files have no such bits. A
target the process may not write is refused (PermissionError), as an in-place write
would be. A symbolic link at the target is followed: the file it leads to is replaced,
and the link stays a link. Callers that confine paths resolve them first.

The temporary file is named `.<name>.<random>.seri-tmp`; it is removed when the write
fails, and only a process killed mid-write can leave one behind.

`open_regular` opens a file for reading only if it is a regular file, and never waits:
a FIFO in its place would block the read (and the thread doing it) for ever.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from seri_lsp import faults

TEMP_SUFFIX = ".seri-tmp"
# Opening for reading without waiting (a FIFO), inherited by no child, and on Windows in
# binary mode (without O_BINARY its reads and writes translate line ends).
READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


def atomic_write_bytes(
    path: str | os.PathLike[str], data: bytes, *, mode: int | None = None
) -> None:
    """Replace the content of `path` with `data`, atomically and durably.

    `mode` sets the permission bits; by default an existing target keeps its own and a
    new file gets 0o666 less the umask. The folder must exist.
    """
    target = Path(os.path.realpath(path))
    folder = target.parent
    try:
        current = os.stat(target)
    except FileNotFoundError:
        current = None
    if current is not None and not os.access(target, os.W_OK):
        # Renaming over a read-only file would succeed; honour its protection instead.
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(target))
    if mode is None and current is not None:
        mode = stat.S_IMODE(current.st_mode)
    import secrets  # only when needed: not at start-up

    temp = folder / f".{target.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(temp, flags | getattr(os, "O_BINARY", 0), 0o666)  # the kernel applies the umask
    try:
        with os.fdopen(fd, "wb") as handle:
            half = len(data) // 2
            handle.write(data[:half])
            handle.flush()
            faults.crash_point("files.half_written")
            handle.write(data[half:])
            handle.flush()
            if current is not None and hasattr(os, "fchown"):  # as root, keep the owner
                with contextlib.suppress(OSError):
                    os.fchown(handle.fileno(), current.st_uid, current.st_gid)
            if mode is not None and hasattr(os, "fchmod"):
                os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        faults.crash_point("files.before_rename")
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_folder(folder)


def atomic_write_text(path: str | os.PathLike[str], text: str, *, mode: int | None = None) -> None:
    """Write `text` as UTF-8, atomically; UnicodeEncodeError (file untouched) if it cannot be.

    The whole text is encoded before anything touches the disk, so text that cannot be
    encoded (a lone surrogate) changes nothing.
    """
    atomic_write_bytes(path, text.encode("utf-8"), mode=mode)


def _fsync_folder(folder: Path) -> None:
    """Make the rename itself durable (where the platform allows opening a folder:
    not Windows, whose renames need no such flush)."""
    if os.name == "nt":
        return
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


class NotRegularFile(OSError):
    """The path is something other than a regular file (`kind` says what, in words)."""

    def __init__(self, path: str | os.PathLike[str], mode: int) -> None:
        self.mode = mode
        self.kind = kind_of(mode)
        super().__init__(f"{os.fspath(path)} is {self.kind}, not a regular file")


def open_regular(path: str | os.PathLike[str]) -> tuple[int, os.stat_result]:
    """Open a regular file for reading (links followed) without ever blocking: a file
    descriptor and its stat. NotRegularFile for anything else, also one swapped in
    between the look and the open."""
    info = os.stat(path)
    if not stat.S_ISREG(info.st_mode):
        raise NotRegularFile(path, info.st_mode)
    fd = os.open(path, READ_FLAGS)
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise NotRegularFile(path, info.st_mode)
    return fd, info


def kind_of(mode: int) -> str:
    """What a file is, in words, when it is not a regular file."""
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    return "a special file"
