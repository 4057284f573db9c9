"""Import of `sessions/*.jsonl` files left by an older release.

Each file becomes one session that keeps its legacy id, so `--resume <id>` still finds
it. The files are only ever read. A file is imported once, keyed by (path, size, mtime),
across restarts and across server processes sharing the profile. A bad line is skipped,
counted and reported with its line number; the rest of the file is kept. No line, and no
file, stops the import or the start-up that runs it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import reprlib
import sqlite3
import sys
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from stat import S_ISREG
from typing import Any

from seri_lsp.errors import StoreBusy
from seri_lsp.limits import lone_surrogate
from seri_lsp.store.database import format_time, utc_now
from seri_lsp.store.messages import MODIFY_TOOLS, READ_TOOLS, ROLES, chars_of
from seri_lsp.store.sessions import (
    NewMessage,
    SessionStore,
    insert_new_messages,
    make_title,
    note_paths,
)

LEGACY_DIR = "sessions"

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[int, int, str], None]

_IMPORTED_SQL = "SELECT 1 FROM legacy_imports WHERE path = ? AND size = ? AND mtime_ns = ?"
_MAX_INT64 = 2**63 - 1  # the largest integer SQLite holds
# The file is read as UTF-8 (bad bytes replaced), so a lone surrogate can only come from a
# `\\uD800`-`\\uDFFF` escape: a line without one needs no look at each of its strings.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
# A value quoted in a reason is cut short: a line may hold megabytes.
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = _SHORT.maxlong = 60


@dataclass(frozen=True)
class SkippedLine:
    """A line of a legacy file that could not be imported, and why."""

    line: int
    reason: str


@dataclass
class FileReport:
    """What happened to one legacy file."""

    path: str
    outcome: str  # imported | conflict | failed
    session_id: str | None = None
    messages: int = 0
    skipped_lines: list[SkippedLine] = field(default_factory=list)
    reason: str | None = None  # why it was not imported


@dataclass(frozen=True)
class ImportSummary:
    """What one import run did: files imported, files seen before, bad lines skipped,
    and each new file's report."""

    imported: int
    already_imported: int
    skipped_lines: int
    files: list[FileReport]


@dataclass
class ImportReport:
    """The outcome of one import run: only files seen for the first time appear."""

    files: list[FileReport] = field(default_factory=list)
    already_imported: int = 0

    @property
    def skipped_lines(self) -> int:
        """Bad lines skipped over all files of this run."""
        return sum(len(report.skipped_lines) for report in self.files)

    def summary(self) -> ImportSummary:
        """The report as the `seri.legacy.import` command answers it."""
        return ImportSummary(
            imported=sum(1 for f in self.files if f.outcome == "imported"),
            already_imported=self.already_imported,
            skipped_lines=self.skipped_lines,
            files=self.files,
        )

    def summary_lines(self) -> list[str]:
        """Human-readable lines for logs: one per file with problems."""
        lines = []
        for report in self.files:
            if report.outcome != "imported":
                lines.append(f"Legacy file {report.path} was not imported: {report.reason}")
            for skipped in report.skipped_lines:
                lines.append(
                    f"Legacy file {report.path} line {skipped.line} skipped: {skipped.reason}"
                )
        return lines


class _BadLine(ValueError):
    pass


def find_pending(profile_root: Path, store: SessionStore) -> tuple[list[Path], int]:
    """Legacy files not yet imported in their current state, and how many were."""
    folder = profile_root / LEGACY_DIR
    if not folder.is_dir():
        return [], 0
    pending, already = [], 0
    for path in sorted(folder.glob("*.jsonl")):
        try:
            stat = path.stat()
        except OSError:
            pending.append(path)  # import_files reports why it cannot be read
            continue
        if not _utf8_name(path):
            pending.append(path)  # cannot be looked up; import_files reports it
        elif _already_imported(store, path, stat):
            already += 1
        else:
            pending.append(path)
    return pending, already


def import_files(
    paths: list[Path], store: SessionStore, progress: ProgressCallback | None = None
) -> ImportReport:
    """Import the given legacy files; never writes to them.

    A file that cannot be read or stored, or that meets an unexpected error, is reported
    and the others still import; a busy database (StoreBusy) stops the run, to be retried
    at the next start, and so does an interrupt (a BaseException that is not an Exception).
    """
    report = ImportReport()
    for index, path in enumerate(paths):
        shown = _shown_path(path)
        if progress is not None:
            progress(index, len(paths), Path(shown).name)
        try:
            file_report = _import_file(path, store)
        except StoreBusy:
            raise
        except OSError as exc:
            # Not recorded: the file is tried again once it can be read.
            reason = f"it cannot be read ({exc.strerror or exc})"
            file_report = FileReport(path=shown, outcome="failed", reason=reason)
        except (sqlite3.Error, ValueError) as exc:
            file_report = _record_failure(path, store, f"it could not be stored ({exc})")
        except Exception as exc:
            # A fault of ours (the lines are checked one by one before this), so not
            # recorded: the file never changes, and a record would keep it out for good;
            # unrecorded, it is reported and tried again at each start, and a fixed
            # release imports it.
            logger.exception("Importing the legacy file %s failed", shown)
            reason = f"an unexpected error stopped it ({_describe(exc)}); the server log says more"
            file_report = FileReport(path=shown, outcome="failed", reason=reason)
        if file_report is None:
            report.already_imported += 1
        else:
            report.files.append(file_report)
    return report


def _utf8_name(path: Path) -> bool:
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes of the name, as surrogate escapes
        return False
    return True


def _shown_path(path: Path) -> str:
    """The path as text that can be logged and sent (bad bytes of its name escaped)."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _key(path: Path, stat: os.stat_result) -> tuple[str, int, int]:
    """The (path, size, mtime) a version of a file is known by in `legacy_imports`."""
    # A file dated after 2262 has an mtime in ns beyond SQLite's integers: kept at the limit.
    return str(path), stat.st_size, min(stat.st_mtime_ns, _MAX_INT64)


def _already_imported(store: SessionStore, path: Path, stat: os.stat_result) -> bool:
    return store.db.query_one(_IMPORTED_SQL, _key(path, stat)) is not None


def _file_time(stat: os.stat_result) -> str:
    """The file's mtime as a store timestamp, or now when it is no usable date."""
    try:
        return format_time(datetime.fromtimestamp(stat.st_mtime, UTC))
    except (OverflowError, ValueError, OSError):  # a year beyond 1-9999
        return utc_now()


def _import_file(path: Path, store: SessionStore) -> FileReport | None:
    if not _utf8_name(path):
        # Not recorded (the database holds text, and this name is not): tried again once
        # the file is renamed.
        reason = "its name is not valid UTF-8; rename it to import it"
        return FileReport(path=_shown_path(path), outcome="failed", reason=reason)
    stat = path.stat()
    if not S_ISREG(stat.st_mode):
        # A FIFO would block the import (and the database thread) forever.
        return FileReport(path=str(path), outcome="failed", reason="it is not a regular file")
    header, messages, skipped, last_input_tokens, paths = _parse_file(path)
    report = FileReport(path=str(path), outcome="imported", skipped_lines=skipped)
    key = _key(path, stat)
    with store.db.transaction() as tx:
        # Another server process may have imported it since we looked.
        if tx.execute(_IMPORTED_SQL, key).fetchone():
            return None
        if header is None:
            report.outcome = "failed"
            report.reason = "it has no valid session line"
        elif tx.execute("SELECT 1 FROM sessions WHERE id = ?", (header["id"],)).fetchone():
            report.outcome = "conflict"
            report.session_id = header["id"]
            report.reason = f"a session with id {_shown(header['id'])} is already in the store"
        else:
            updated = _file_time(stat)
            title = next((make_title(m[1]) for m in messages if m[0] == "user" and m[1]), "")
            store.create(
                header["cwd"],
                session_id=header["id"],
                title=title,
                created_at=header["created"] or updated,
                updated_at=updated,
                conn=tx,
            )
            # One timestamp for the file's messages (the legacy lines carry none).
            insert_new_messages(tx, header["id"], messages, utc_now())
            note_paths(tx, header["id"], paths.read, paths.modified)
            tx.execute(
                "UPDATE sessions SET last_input_tokens = ? WHERE id = ?",
                (last_input_tokens, header["id"]),
            )
            report.session_id = header["id"]
            report.messages = len(messages)
        tx.execute(
            "INSERT INTO legacy_imports"
            " (path, size, mtime_ns, session_id, skipped_lines, outcome, imported_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                *key,
                report.session_id,
                len(skipped),
                report.outcome,
                utc_now(),
            ),
        )
    return report


class _PathLists:
    """The paths an imported history's tool calls read and modified, as the session's
    path lists show them (relative to the project; one outside it is left out), noted
    as the file's messages are read.

    A call counts when a tool result answers it (by id, among the calls of the assistant
    message just before); legacy files do not say whether it failed.
    """

    def __init__(self) -> None:
        self.project = ""
        self.read: list[str] = []
        self.modified: list[str] = []
        self._pending: dict[str, tuple[str, str]] = {}  # the last assistant's calls by id

    def note(self, role: str, calls: list[dict[str, str]], call_id: str | None) -> None:
        if role == "assistant":
            self._pending = {}
            for call in calls:
                name = call["name"]
                if name in READ_TOOLS or name in MODIFY_TOOLS:
                    path = _project_path(call["arguments"], self.project)
                    if path is not None:
                        self._pending.setdefault(call["id"], (name, path))
        elif call_id is not None and call_id in self._pending:
            name, path = self._pending.pop(call_id)
            (self.modified if name in MODIFY_TOOLS else self.read).append(path)


def _project_path(arguments: str, project: str) -> str | None:
    """A call's `path` argument relative to the project, with / separators (None: none,
    or outside the project)."""
    try:
        raw = json.loads(arguments).get("path")
    except (ValueError, RecursionError, AttributeError):
        return None
    if not isinstance(raw, str) or not raw.strip() or "\x00" in raw:
        return None
    if lone_surrogate(raw) is not None:  # the store holds UTF-8 text, which this is not
        return None
    full = os.path.normpath(os.path.join(project, raw))
    base = project.rstrip(os.sep) + os.sep
    if not full.startswith(base):  # outside, or the project folder itself
        return None
    relative = full[len(base) :]
    return relative if os.sep == "/" else relative.replace(os.sep, "/")


def _record_failure(path: Path, store: SessionStore, reason: str) -> FileReport:
    """Remember that this version of the file failed, so it is reported once, not at
    every start (an edited file is a new version and is tried again)."""
    # Reported all the same when it cannot be recorded; then it is tried again next start.
    with suppress(OSError, sqlite3.Error):
        key = _key(path, path.stat())
        with store.db.transaction() as tx:
            tx.execute(
                "INSERT OR IGNORE INTO legacy_imports"
                " (path, size, mtime_ns, session_id, skipped_lines, outcome, imported_at)"
                " VALUES (?, ?, ?, NULL, 0, 'failed', ?)",
                (*key, utc_now()),
            )
    return FileReport(path=str(path), outcome="failed", reason=reason)


def _parse_file(
    path: Path,
) -> tuple[dict[str, Any] | None, list[NewMessage], list[SkippedLine], int | None, _PathLists]:
    header: dict[str, Any] | None = None
    paths = _PathLists()
    messages: list[NewMessage] = []
    skipped: list[SkippedLine] = []
    last_input_tokens: int | None = None
    logged = False
    # Reading the file is outside the per-line `try`: an OSError fails the whole file.
    with path.open("r", encoding="utf-8", errors="replace") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.isspace():  # (a line read is never empty; isspace copies nothing)
                continue
            try:
                try:
                    record = json.loads(raw)
                except json.JSONDecodeError as exc:
                    raise _BadLine(f"invalid JSON ({exc.msg})") from None
                except ValueError:
                    # Not a JSONDecodeError: Python refuses to convert an integer that long.
                    limit = sys.get_int_max_str_digits()
                    raise _BadLine(f"invalid JSON (a number of more than {limit} digits)") from None
                if not isinstance(record, dict):
                    raise _BadLine("not a JSON object")
                bad = lone_surrogate(record) if _SURROGATE_ESCAPE.search(raw) else None
                if bad is not None:
                    raise _BadLine(
                        f"text that is not valid Unicode (a lone surrogate escape, {bad})"
                    )
                kind = record.get("type")
                if header is None:
                    if kind != "session":
                        raise _BadLine("expected the session line first")
                    header = _parse_header(record)
                    paths.project = header["cwd"]
                    continue
                if kind == "session":
                    raise _BadLine("a second session line")
                if kind != "message":
                    raise _BadLine(f"unknown type {_shown(kind)}")
                message, tokens, calls = _parse_message(record)
                messages.append(message)
                paths.note(message[0], calls, message[4])
                if tokens is not None:
                    last_input_tokens = tokens
            except RecursionError:
                skipped.append(SkippedLine(number, "JSON nested too deeply"))
            except _BadLine as exc:
                skipped.append(SkippedLine(number, str(exc)))
            except Exception as exc:
                # The last safety net: a line nobody foresaw is skipped, never the file.
                if not logged:  # one traceback per file is enough to find the fault
                    logger.exception("Reading line %d of the legacy file %s failed", number, path)
                    logged = True
                reason = f"an unexpected error while reading it ({_describe(exc)})"
                skipped.append(SkippedLine(number, reason))
    return header, messages, skipped, last_input_tokens, paths


def _parse_header(record: dict[str, Any]) -> dict[str, Any]:
    session_id = record.get("id")
    if not isinstance(session_id, str) or not session_id.strip():
        raise _BadLine("the session line has no id")
    cwd = record.get("cwd")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        raise _BadLine("the session line has no absolute cwd")
    if "\0" in cwd:  # no path holds one (os.path.realpath refuses it)
        raise _BadLine("the session line's cwd contains a NUL character")
    return {"id": session_id, "cwd": os.path.realpath(cwd), "created": _parse_time(record)}


def _parse_time(record: dict[str, Any]) -> str | None:
    created = record.get("created")
    if not isinstance(created, str):
        return None
    try:
        return format_time(datetime.fromisoformat(created.replace("Z", "+00:00")))
    except (ValueError, OverflowError):  # not a date, or one that leaves years 1-9999 in UTC
        return None


def _parse_message(
    record: dict[str, Any],
) -> tuple[NewMessage, int | None, list[dict[str, str]]]:
    """A message line as the row it becomes (no Message object: an import makes many),
    its token count and its tool calls."""
    role = record.get("role")
    if not isinstance(role, str) or role not in ROLES:
        raise _BadLine(f"unknown role {_shown(role)}")
    content = record.get("content")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise _BadLine("content is not a string")
    thinking = record.get("thinking")
    if thinking is not None and not isinstance(thinking, str):
        raise _BadLine("thinking is not a string")
    raw_calls = record.get("tool_calls")
    if raw_calls is None:
        raw_calls = []
    if not isinstance(raw_calls, list):
        raise _BadLine(f"tool_calls is not a list (it is {_shown(raw_calls)})")
    calls = [_parse_tool_call(call) for call in raw_calls]
    if calls and role != "assistant":
        raise _BadLine("only assistant messages may carry tool_calls")
    tool_call_id = record.get("tool_call_id")
    if role == "tool" and tool_call_id is None:
        raise _BadLine("a tool message without tool_call_id")
    if tool_call_id is not None and not isinstance(tool_call_id, str):
        raise _BadLine(f"tool_call_id is not a string (it is {_shown(tool_call_id)})")
    tokens = _input_tokens(record.get("usage"))
    thinking = thinking or None
    arguments = (call["arguments"] for call in calls)
    message: NewMessage = (
        role,
        content,
        thinking,
        json.dumps(calls) if calls else None,
        tool_call_id if role == "tool" else None,
        None,
        None,
        0,
        chars_of(content, thinking, arguments),
    )
    return message, tokens, calls


def _input_tokens(usage: Any) -> int | None:
    """`usage.input_tokens`: a token count, or None when the line gives no usable one.

    A count is bookkeeping, not the conversation: one of the wrong shape is ignored and
    the message kept (the next model call bills the history afresh)."""
    value = usage.get("input_tokens") if isinstance(usage, dict) else None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= _MAX_INT64:
        return None
    return value


def _parse_tool_call(call: Any) -> dict[str, str]:
    """A tool call as stored: {id, name, arguments} (the arguments as JSON text)."""
    if not isinstance(call, dict):
        raise _BadLine("a tool call is not an object")
    call_id, name, arguments = call.get("id"), call.get("name"), call.get("arguments")
    if not isinstance(call_id, str) or not isinstance(name, str):
        raise _BadLine("a tool call lacks its id or name")
    # As a provider sends them: JSON text, or an object (none at all is an empty one).
    if arguments is None:
        arguments = "{}"
    elif isinstance(arguments, dict):
        arguments = json.dumps(arguments)
    elif not isinstance(arguments, str):
        raise _BadLine(
            f"the arguments of tool call {_shown(call_id)} are neither JSON text nor an object"
            f" (they are {_shown(arguments)})"
        )
    return {"id": call_id, "name": name, "arguments": arguments}


def _shown(value: Any) -> str:
    """A value of a line as a reason quotes it, cut short."""
    return _SHORT.repr(value)


def _describe(exc: Exception) -> str:
    """An unexpected exception in a few words: its kind and message, shortened."""
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 200 else text[:199] + "…"
