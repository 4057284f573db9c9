"""One session, one window: an OS file lock per open session.

A seri process that opens a session holds an exclusive `flock` on
`<profile>/locks/<session>.lock` until it opens another session or closes. The kernel
drops the lock when the process dies, `kill -9` included, so there is no heartbeat and
nothing stale to clean up. The file holds the holder's pid, host and start time, so a
refusal can name it.

A lock file is removed by its holder while still locked; an acquirer checks that the
file it locked is still the one at the path (and retries otherwise), so two processes
can never both believe they hold a session.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import socket
import stat
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from seri_lsp.store.database import utc_now

LOCK_DIR = "locks"

# Session ids are UUIDs, but legacy ids may be any text: anything unsafe as a file name
# is hashed.
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_HOLDER_READ_TRIES = 20


@dataclass(frozen=True)
class Holder:
    """The process that holds a session's lock, as its lock file names it."""

    pid: int | None
    host: str | None
    since: str | None

    def describe(self) -> str:
        """`pid 4242` (and the host when it is not this one), for messages."""
        if self.pid is None:
            return "pid unknown"
        text = f"pid {self.pid}"
        if self.host and self.host != socket.gethostname():
            text += f" on {self.host}"
        return text


class SessionLocks:
    """The session locks this process holds, in one profile."""

    def __init__(self, profile_root: Path) -> None:
        self.folder = profile_root / LOCK_DIR
        self._held: dict[str, int] = {}
        self._mutex = threading.Lock()

    def held(self) -> set[str]:
        """Ids of the sessions this process holds."""
        with self._mutex:
            return set(self._held)

    def acquire(self, session_id: str) -> Holder | None:
        """Take the session's lock: None when it is now ours, else who holds it."""
        with self._mutex:
            if session_id in self._held:
                return None
            self._ensure_folder()
            path = self._path(session_id)
            while True:
                fd = _open_lock_file(path)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                        os.close(fd)
                        raise
                    holder = _read_holder(fd)
                    os.close(fd)
                    return holder
                if _still_at(path, fd):
                    break
                # The holder removed the file as we opened it: lock the new one.
                os.close(fd)
            record = {"pid": os.getpid(), "host": socket.gethostname(), "since": utc_now()}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(record).encode(), 0)
            self._held[session_id] = fd
            return None

    def open_elsewhere(self, session_ids: Iterable[str]) -> set[str]:
        """Which of these sessions another live seri process may have open.

        Read-only (no lock is taken, so no acquirer is ever misled): a session counts as
        open elsewhere when its lock file exists and names a live process on this host,
        another host, or nobody readable. A file left by a killed process whose pid is
        gone does not count.
        """
        mine = self.held()
        found = set()
        for session_id in session_ids:
            if session_id in mine:
                continue
            try:
                with open(self._path(session_id), "rb") as handle:
                    data = handle.read(4096)
            except FileNotFoundError:
                continue
            except OSError:
                found.add(session_id)
                continue
            if _names_live_process(data):
                found.add(session_id)
        return found

    def release(self, session_id: str) -> None:
        """Let the session go (nothing happens if this process does not hold it)."""
        with self._mutex:
            fd = self._held.pop(session_id, None)
            if fd is None:
                return
            try:
                os.unlink(self._path(session_id))
            except FileNotFoundError:
                pass
            finally:
                os.close(fd)

    def release_all(self) -> None:
        """Let every held session go (the engine is closing)."""
        for session_id in self.held():
            self.release(session_id)

    def _path(self, session_id: str) -> Path:
        name = session_id
        if not _SAFE_NAME.fullmatch(name):
            import hashlib  # only when needed: not at start-up

            digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass"))
            name = f"sha256-{digest.hexdigest()}"
        return self.folder / f"{name}.lock"

    def _ensure_folder(self) -> None:
        self.folder.mkdir(mode=0o700, exist_ok=True)
        if stat.S_IMODE(self.folder.lstat().st_mode) != 0o700:
            self.folder.chmod(0o700)


def _open_lock_file(path: Path) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != 0o600:
            os.fchmod(fd, 0o600)
    except OSError:
        os.close(fd)
        raise
    return fd


def _still_at(path: Path, fd: int) -> bool:
    """Whether the file we locked is still the one at `path`."""
    try:
        on_disk = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (on_disk.st_dev, on_disk.st_ino) == (mine.st_dev, mine.st_ino)


def _read_holder(fd: int) -> Holder:
    # The holder writes its record just after taking the lock: wait a moment for it.
    for _ in range(_HOLDER_READ_TRIES):
        data = os.pread(fd, 4096, 0)
        if data:
            try:
                record = json.loads(data)
            except ValueError:
                break
            if isinstance(record, dict):
                pid = record.get("pid")
                host, since = record.get("host"), record.get("since")
                return Holder(
                    pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
                    host if isinstance(host, str) else None,
                    since if isinstance(since, str) else None,
                )
            break
        time.sleep(0.01)
    return Holder(None, None, None)


def _names_live_process(data: bytes) -> bool:
    """Whether a lock file's record may belong to a live process (when unsure: yes)."""
    try:
        record = json.loads(data)
    except ValueError:
        return True
    if not isinstance(record, dict):
        return True
    pid, host = record.get("pid"), record.get("host")
    if not isinstance(pid, int) or isinstance(pid, bool) or host != socket.gethostname():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
