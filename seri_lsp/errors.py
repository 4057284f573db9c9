"""Errors the engine reports to its faces, in the user's words."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

from seri_lsp.profile import DB_NAME

_FULL = "the disk is full (free some space and try again)"
_IO = "the disk reported an input/output error (check the disk, then try again)"
# What the system says, for the errors a user fixes on the disk rather than in seri.
_OS_WORDS = {
    errno.ENOSPC: _FULL,
    errno.EDQUOT: "the disk quota is used up (free some space or raise the quota, and try again)",
    errno.EIO: _IO,
    errno.EROFS: "the file system is read-only (make it writable and try again)",
}
# SQLite's primary result codes, and its own messages for them: the message is matched
# too, for an error without a usable code (a trigger raising the same words).
_SQLITE_WORDS = {sqlite3.SQLITE_FULL: _FULL, sqlite3.SQLITE_IOERR: _IO}
_SQLITE_MESSAGES = {"database or disk is full": _FULL, "disk i/o error": _IO}


class SeriError(Exception):
    """Something the user (or the editor) asked for cannot be done; the message says why."""


class InvalidArgument(SeriError):
    """A command argument is missing, mistyped or out of range."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class UnknownSession(InvalidArgument):
    """No session has the given id."""

    def __init__(self, session_id: str, detail: str = "") -> None:
        message = f"Unknown session id {session_id!r}"
        message += f": {detail}" if detail else "; `seri-lsp sessions --all` lists them."
        super().__init__("sessionId", message)
        self.session_id = session_id


class Busy(SeriError):
    """A task is running and the request would interfere with it."""


class SessionHeld(SeriError):
    """The session is open in another live seri process, which holds its lock."""

    def __init__(self, session_id: str, holder: str, message: str | None = None) -> None:
        super().__init__(
            message
            or f"Session {session_id} is open in another seri process ({holder}); "
            "close it there, or start a new session."
        )
        self.session_id = session_id
        self.holder = holder


class SettingsBlocked(SeriError):
    """A provider setting that decides where prompts go is wrong: prompts are refused
    until it is fixed (`ProviderSettings.blocking` says which and why)."""


class StoreBusy(SeriError):
    """Another process kept `seri.db` locked for writing longer than the busy timeout."""

    def __init__(self) -> None:
        super().__init__("seri.db is busy: another seri process is writing; try again.")


def store_failure_message(exc: BaseException, profile_root: Path | None = None) -> str | None:
    """The user's words for a write that failed on the disk, or None for anything else.

    A full disk, a used-up quota, an I/O error or a read-only file system (an OSError,
    or SQLite's "database or disk is full" and "disk I/O error") is no bug of seri's:
    the faces answer it as a refusal naming the file and what to do, without a
    traceback. `profile_root` names where `seri.db` is, and where to look when the
    system did not say which file it was. The explicit cause chain (`raise ... from`)
    is followed.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, sqlite3.Error):
            words = _sqlite_words(current)
            if words is not None:
                where = f"seri.db at {profile_root / DB_NAME}" if profile_root else DB_NAME
                return f"{where} cannot be written: {words}."
        elif isinstance(current, OSError) and current.errno in _OS_WORDS:
            where = _file_name(current.filename, profile_root)
            return f"{where} cannot be written: {_OS_WORDS[current.errno]}."
        current = current.__cause__
    return None


def _file_name(filename: object, profile_root: Path | None) -> str:
    if isinstance(filename, str | bytes):
        return os.fsdecode(filename)
    # A write() to an open file does not say which file it was.
    if profile_root is not None:
        return f"A file seri writes (in {profile_root} or the workspace)"
    return "A file seri writes"


def _sqlite_words(exc: sqlite3.Error) -> str | None:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in _SQLITE_WORDS:
        return _SQLITE_WORDS[code & 0xFF]
    return _SQLITE_MESSAGES.get(str(exc).strip().lower())
