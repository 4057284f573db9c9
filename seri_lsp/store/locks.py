"""One session, one window: an OS file lock per open session.

A seri process that opens a session holds an exclusive lock on
`<profile>/locks/<session>.lock` until it opens another session or closes. The lock is
filelock's (`flock` on Linux and macOS, `LockFileEx` on Windows): the operating system
drops it when the process dies, `kill -9` included, so there is no heartbeat and
nothing stale to clean up, and a dead holder's session is simply taken over.

Beside the lock, `<session>.holder` names the holder (pid, host, start time) so that a
refusal can name it: written (privately, atomically) once the lock is taken, removed
before it is let go. A holder record left by a process that died is replaced by the
next holder. The lock file itself stays on Linux and macOS (removing a lock file others
may have open invites two holders) and goes with its lock on Windows.
"""

from __future__ import annotations

import contextlib
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
from typing import TYPE_CHECKING

from seri_lsp.store.database import utc_now

if TYPE_CHECKING:
    from filelock import BaseFileLock

LOCK_DIR = "locks"
LOCK_SUFFIX = ".lock"
HOLDER_SUFFIX = ".holder"

# Session ids are UUIDs, but legacy ids may be any text: anything unsafe as a file name
# is hashed.
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
# A refused acquirer waits this long (tries x pause) for the holder to name itself.
_HOLDER_READ_TRIES = 20
_HOLDER_READ_PAUSE = 0.01


@dataclass(frozen=True)
class Holder:
    """The process that holds a session's lock, as its holder record names it."""

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
        self._held: dict[str, BaseFileLock] = {}
        self._mutex = threading.Lock()

    def held(self) -> set[str]:
        """Ids of the sessions this process holds."""
        with self._mutex:
            return set(self._held)

    def acquire(self, session_id: str) -> Holder | None:
        """Take the session's lock: None when it is now ours, else who holds it."""
        from filelock import FileLock, Timeout  # only when a session opens

        with self._mutex:
            if session_id in self._held:
                return None
            self._ensure_folder()
            # Shared by the threads of this process (the worker takes, the loop releases).
            lock = FileLock(self._path(session_id, LOCK_SUFFIX), mode=0o600, thread_local=False)
            try:
                lock.acquire(blocking=False)
            except Timeout:
                return self._wait_for_holder(session_id)
            record = {"pid": os.getpid(), "host": socket.gethostname(), "since": utc_now()}
            try:
                _write_record(self._path(session_id, HOLDER_SUFFIX), json.dumps(record))
            except BaseException:
                lock.release()
                raise
            self._held[session_id] = lock
            return None

    def open_elsewhere(self, session_ids: Iterable[str]) -> set[str]:
        """Which of these sessions another live seri process may have open.

        Read-only (no lock is taken, so no acquirer is ever misled): a session counts as
        open elsewhere when its holder record names a live process on this host, another
        host, or nobody readable. A record left by a killed process whose pid is gone
        does not count.
        """
        mine = self.held()
        found = set()
        for session_id in session_ids:
            if session_id in mine:
                continue
            try:
                data = self._path(session_id, HOLDER_SUFFIX).read_bytes()
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
            lock = self._held.pop(session_id, None)
            if lock is None:
                return
            try:
                self._path(session_id, HOLDER_SUFFIX).unlink(missing_ok=True)
            finally:
                lock.release()

    def forget(self, session_id: str) -> None:
        """Let a deleted session go, and remove its lock file: nobody can open it again,
        so no second holder can come of it (one that tries finds no session)."""
        with self._mutex:
            lock = self._held.pop(session_id, None)
            if lock is None:
                return
            try:
                self._path(session_id, HOLDER_SUFFIX).unlink(missing_ok=True)
                # Windows removes it with its lock, and refuses while it is held.
                with contextlib.suppress(OSError):
                    self._path(session_id, LOCK_SUFFIX).unlink()
            finally:
                lock.release()

    def release_all(self) -> None:
        """Let every held session go (the engine is closing)."""
        for session_id in self.held():
            self.release(session_id)

    def _wait_for_holder(self, session_id: str) -> Holder:
        """Who holds a lock we could not take. The holder writes its record just after
        taking the lock: a missing record, or one a dead process left, is read again for
        a moment before the refusal names nobody (or that one)."""
        path = self._path(session_id, HOLDER_SUFFIX)
        holder = Holder(None, None, None)
        for _ in range(_HOLDER_READ_TRIES):
            try:
                data = path.read_bytes()
            except OSError:
                data = b""
            if data:
                holder = _parse_holder(data)
                if _names_live_process(data):
                    break
            time.sleep(_HOLDER_READ_PAUSE)
        return holder

    def _path(self, session_id: str, suffix: str) -> Path:
        name = session_id
        if not _SAFE_NAME.fullmatch(name):
            import hashlib  # only when needed: not at start-up

            digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass"))
            name = f"sha256-{digest.hexdigest()}"
        return self.folder / f"{name}{suffix}"

    def _ensure_folder(self) -> None:
        self.folder.mkdir(mode=0o700, exist_ok=True)
        if os.name == "posix" and stat.S_IMODE(self.folder.lstat().st_mode) != 0o700:
            self.folder.chmod(0o700)


def _write_record(path: Path, text: str) -> None:
    """Put a holder record in place whole (readers never see half of one), private
    (0600) from its first byte. Not flushed to the disk: after a crash the lock is gone
    too, and a missing record only means a refusal names nobody."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _parse_holder(data: bytes) -> Holder:
    try:
        record = json.loads(data)
    except ValueError:
        return Holder(None, None, None)
    if not isinstance(record, dict):
        return Holder(None, None, None)
    pid, host, since = record.get("pid"), record.get("host"), record.get("since")
    return Holder(
        pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
        host if isinstance(host, str) else None,
        since if isinstance(since, str) else None,
    )


def _names_live_process(data: bytes) -> bool:
    """Whether a holder record may belong to a live process (when unsure: yes)."""
    holder = _parse_holder(data)
    if holder.pid is None or holder.host != socket.gethostname():
        return True
    return process_may_live(holder.pid)


def process_may_live(pid: int) -> bool:
    """Whether a process of this host may still run (when unsure: yes).

    POSIX asks the kernel with signal 0. Windows has no such probe (`os.kill` there ends
    the process), so a pid there always may live.
    """
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
