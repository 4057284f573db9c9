"""Errors the engine reports to its faces, in the user's words."""

from __future__ import annotations


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


class StoreBusy(SeriError):
    """Another process kept `seri.db` locked for writing longer than the busy timeout."""

    def __init__(self) -> None:
        super().__init__("seri.db is busy: another seri process is writing; try again.")
