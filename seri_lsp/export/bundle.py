"""Sessions carried to another machine or person: export (a JSON bundle or a markdown
transcript) and import (of a bundle).

The bundle (`{"format": "seri-session", "version": 1, ...}`, docs/bundle.md) holds the
title, the times, the messages in conversation order as `seri.session.get` gives them
(the recap included), the path lists, the usage and the source session's id. It names
the project by its folder's name only: absolute paths inside the workspace are made
relative and secrets redacted (`redaction.py`), in every string of it; absolute paths
elsewhere are kept and listed in `outsidePaths`.

Importing checks the whole bundle before anything is written (its format and version,
the shape of every message, the pairing of tool calls and results, its size), then
writes a new session of the project in one transaction. The bundle's digest is kept:
importing the same bundle again into the same project answers the session made the
first time. The messages keep their times and text; they get new ids. So a session
exported, imported and exported again gives the same bundle, but for the ids.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePath
from typing import Any

from seri_lsp.errors import InvalidArgument
from seri_lsp.export import markdown
from seri_lsp.export.redaction import ExportFilter
from seri_lsp.limits import (
    MAX_BUNDLE_BYTES,
    MAX_TITLE_CHARS,
    check_title,
    lone_surrogate,
    shorten,
)
from seri_lsp.store.database import format_time
from seri_lsp.store.messages import (
    ROLES,
    TURN_STATUSES,
    Message,
    Recap,
    ToolCall,
    TurnEnd,
    chars_of,
    tokens_for_chars,
)
from seri_lsp.store.sessions import Session, SessionInfo, SessionStore, make_title
from seri_lsp.store.trajectories import TrajectoryStore

FORMAT = "seri-session"
VERSION = 1
KINDS = ("recap", "rule", "check")
# The fields of a message that are filtered (secrets, paths); the others (ids, times,
# role, kind, error flag) are seri's own and carry nothing of the user's.
_TEXT_FIELDS = ("content", "thinking")


@dataclass(frozen=True)
class Exported:
    """An export (`seri.session.export`'s answer): its text, in which format, and how
    many secrets it had redacted."""

    format: str
    text: str
    redactions: int


@dataclass(frozen=True)
class Imported:
    """`seri.session.import`'s answer: the session holding the bundle's conversation,
    and whether it was made by an earlier import of the same bundle."""

    session: Session
    already_imported: bool


def export_session(
    store: SessionStore, session_id: str, export_format: str, secrets: list[str | None]
) -> Exported:
    """A stored session as a bundle (`json`) or a transcript (`markdown`), without the
    workspace's absolute paths or any of `secrets` (the configured API keys) or other
    key-shaped text. Reads the store: for the database thread."""
    info = store.get(session_id)
    messages, _ = store.wire_page(session_id, None)
    paths = store.paths(session_id)
    text_filter = ExportFilter(info.project, secrets)
    exported = [_filtered(message, text_filter) for message in messages]
    bundle: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "sessionId": info.id,
        "project": PurePath(info.project).name,
        "title": _title_of(info.title, messages, exported, text_filter),
        "createdAt": info.created_at,
        "updatedAt": info.updated_at,
        "messages": exported,
        "paths": {
            "read": [text_filter.text(path) for path in paths.read],
            "modified": [text_filter.text(path) for path in paths.modified],
        },
        "usage": {
            # Of the messages as exported (a redaction changes their length).
            "estimateTokens": max(info.last_input_tokens or 0, tokens_for_chars(_chars(exported))),
            "lastInputTokens": info.last_input_tokens,
        },
    }
    bundle["outsidePaths"] = sorted(text_filter.outside)
    if export_format == "json":
        text = json.dumps(bundle, ensure_ascii=False, indent=1) + "\n"
    else:
        text = markdown.transcript(bundle, model=_recorded_model(store, session_id))
    return Exported(export_format, text, text_filter.redactions)


def _title_of(
    title: str,
    messages: list[dict[str, Any]],
    exported: list[dict[str, Any]],
    text_filter: ExportFilter,
) -> str:
    """The title, filtered. One made from the first prompt is made again from the prompt as
    exported: cut short, it may end in the middle of a path, which no filter would find."""
    first = next(
        (i for i, m in enumerate(messages) if m["role"] == "user" and not m.get("kind")), None
    )
    if first is not None and title == make_title(messages[first]["content"]):
        return make_title(exported[first]["content"])
    return text_filter.text(title)


def _chars(messages: list[dict[str, Any]]) -> int:
    return sum(
        chars_of(
            message["content"],
            message.get("thinking"),
            (call["arguments"] for call in message.get("tool_calls", ())),
        )
        for message in messages
    )


def _filtered(message: dict[str, Any], text_filter: ExportFilter) -> dict[str, Any]:
    out = dict(message)
    for field in _TEXT_FIELDS:
        if field in out:
            out[field] = text_filter.text(out[field])
    if "tool_calls" in out:
        out["tool_calls"] = [
            {**call, "arguments": text_filter.arguments(call["arguments"])}
            for call in out["tool_calls"]
        ]
    if "turnEnded" in out and "error" in out["turnEnded"]:
        out["turnEnded"] = {
            **out["turnEnded"],
            "error": text_filter.text(out["turnEnded"]["error"]),
        }
    if "recap" in out:
        out["recap"] = {
            key: [text_filter.text(v) for v in value]
            if isinstance(value, list)
            else text_filter.text(value)
            if isinstance(value, str)
            else value
            for key, value in out["recap"].items()
        }
    return out


def _recorded_model(store: SessionStore, session_id: str) -> str | None:
    """The model of the session's latest recording (None: it has none)."""
    recordings = TrajectoryStore(store.db)
    latest = recordings.latest_of(session_id)
    info = recordings.info(latest) if latest is not None else None
    model = info.header.get("model") if info is not None else None
    return model if isinstance(model, str) else None


# --- import -------------------------------------------------------------------------


@dataclass(frozen=True)
class Bundle:
    """A bundle read and checked, ready to be written as a session."""

    digest: str
    title: str
    created_at: str | None
    updated_at: str | None
    messages: list[Message]
    read: list[str]
    modified: list[str]
    last_input_tokens: int | None


class BadBundle(InvalidArgument):
    """The text is not a bundle seri can import; the message says what is wrong."""

    def __init__(self, what: str) -> None:
        super().__init__("text", f"This is not a seri session bundle that can be imported: {what}")


def read_bundle(text: str) -> Bundle:
    """Read and check a bundle's text; BadBundle naming what is wrong. Writes nothing."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_BUNDLE_BYTES:
        raise BadBundle(
            f"it is {size / 2**20:,.1f} MiB; at most {MAX_BUNDLE_BYTES // 2**20} MiB can be "
            "imported"
        )
    if text.lstrip().startswith("#"):
        raise BadBundle(
            "it looks like a markdown transcript, which is for people to read; export the "
            "session with format json to import it"
        )
    try:
        value = json.loads(text)
    except RecursionError:
        raise BadBundle("it is nested too deeply") from None
    except ValueError as exc:
        raise BadBundle(f"it is not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise BadBundle("it is not a JSON object")
    if value.get("format") != FORMAT:
        raise BadBundle(f'its "format" is {_shown(value.get("format"))}, not "{FORMAT}"')
    if value.get("version") != VERSION:
        raise BadBundle(
            f'its "version" is {_shown(value.get("version"))}; this seri-lsp reads version '
            f"{VERSION} (a newer seri-lsp may read it)"
        )
    surrogate = lone_surrogate(value)
    if surrogate is not None:
        raise BadBundle(f"it holds a lone surrogate ({surrogate}), which is not valid Unicode")
    raw_messages = value.get("messages")
    if not isinstance(raw_messages, list):
        raise BadBundle('"messages" must be a list of messages')
    messages = [_message(index, raw) for index, raw in enumerate(raw_messages, start=1)]
    _check_pairing(messages)
    paths = _object(value.get("paths", {}), '"paths"')
    usage = _object(value.get("usage", {}), '"usage"')
    billed = usage.get("lastInputTokens")
    if billed is not None and not _whole(billed):
        raise BadBundle('"usage.lastInputTokens" must be a whole number or null')
    canonical = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return Bundle(
        digest=hashlib.sha256(canonical.encode("utf-8")).hexdigest(),
        title=_title(_string(value.get("title", ""), '"title"')),
        created_at=_time(value.get("createdAt"), '"createdAt"'),
        updated_at=_time(value.get("updatedAt"), '"updatedAt"'),
        messages=messages,
        read=_strings(paths.get("read", []), '"paths.read"'),
        modified=_strings(paths.get("modified", []), '"paths.modified"'),
        last_input_tokens=billed,
    )


def import_bundle(store: SessionStore, bundle: Bundle, project: str) -> tuple[SessionInfo, bool]:
    """Write a checked bundle as a new session of `project`: the session and whether it
    was made now (False: this bundle was imported into this project before, and that
    session is answered)."""
    return store.import_conversation(
        project,
        digest=bundle.digest,
        title=bundle.title,
        created_at=bundle.created_at,
        updated_at=bundle.updated_at,
        messages=bundle.messages,
        read=bundle.read,
        modified=bundle.modified,
        last_input_tokens=bundle.last_input_tokens,
    )


def _message(index: int, raw: Any) -> Message:
    where = f"message {index}"
    if not isinstance(raw, dict):
        raise BadBundle(f"{where} is not a JSON object")
    role = raw.get("role")
    if role not in ROLES:
        raise BadBundle(
            f'{where} has the role {_shown(role)}; it must be "user", "assistant" or "tool"'
        )
    content = _string(raw.get("content", ""), f"{where}: content")
    thinking = raw.get("thinking")
    if thinking is not None:
        _string(thinking, f"{where}: thinking")
    kind = raw.get("kind")
    if kind is not None and (role != "user" or kind not in KINDS):
        raise BadBundle(
            f"{where} has the kind {_shown(kind)}; only a user message has one, and it is "
            f"one of {', '.join(KINDS)}"
        )
    recap = raw.get("recap")
    if recap is not None:
        if kind != "recap":
            raise BadBundle(f'{where} has a "recap" but is not of kind "recap"')
        recap = Recap.from_json(_recap(recap, where))
    calls = raw.get("tool_calls", [])
    if not isinstance(calls, list) or (calls and role != "assistant"):
        raise BadBundle(
            f'{where}: "tool_calls" must be a list, and only an assistant message has one'
        )
    tool_calls = tuple(_call(call, f"{where}, tool call {n}") for n, call in enumerate(calls, 1))
    call_id = raw.get("tool_call_id")
    if (role == "tool") != isinstance(call_id, str):
        raise BadBundle(
            f'{where}: a tool message, and only a tool message, has a "tool_call_id" string'
        )
    is_error = raw.get("isError", False)
    if not isinstance(is_error, bool):
        raise BadBundle(f'{where}: "isError" must be true or false')
    ended = raw.get("turnEnded")
    turn_end = _turn_end(ended, where) if ended is not None else None
    return Message(
        role=role,
        content=content,
        thinking=thinking or None,
        tool_calls=tool_calls,
        tool_call_id=call_id,
        kind=kind,
        recap=recap,
        is_error=is_error,
        turn_end=turn_end,
        created_at=_time(raw.get("createdAt"), f"{where}: createdAt"),
    )


def _turn_end(raw: Any, where: str) -> TurnEnd:
    ended = _object(raw, f'{where}: "turnEnded"')
    status, error = ended.get("status"), ended.get("error")
    if status not in TURN_STATUSES:
        raise BadBundle(
            f"{where}: turnEnded.status is {_shown(status)}; it is one of "
            + ", ".join(TURN_STATUSES)
        )
    if error is not None:
        _string(error, f"{where}: turnEnded.error")
    return TurnEnd(status, error)


def _call(raw: Any, where: str) -> ToolCall:
    if not isinstance(raw, dict):
        raise BadBundle(f"{where} is not a JSON object")
    call_id, name, arguments = (raw.get(key) for key in ("id", "name", "arguments"))
    if (
        isinstance(call_id, str)
        and call_id
        and isinstance(name, str)
        and isinstance(arguments, str)
    ):
        return ToolCall(call_id, name, arguments)
    raise BadBundle(f'{where} must have "id" (not empty), "name" and "arguments" strings')


def _recap(raw: Any, where: str) -> dict[str, object]:
    recap = _object(raw, f'{where}: "recap"')
    for name in ("goal", "progress", "blockers", "nextSteps"):
        _string(recap.get(name, ""), f"{where}: recap.{name}")
    for name in ("read", "modified"):
        _strings(recap.get(name, []), f"{where}: recap.{name}")
    if not _whole(recap.get("evicted", 0)):
        raise BadBundle(f"{where}: recap.evicted must be a whole number")
    if not _whole(recap.get("toolCalls", 0)):
        raise BadBundle(f"{where}: recap.toolCalls must be a whole number")
    for name in ("tokensBefore", "tokensAfter"):
        if recap.get(name) is not None and not _whole(recap[name]):
            raise BadBundle(f"{where}: recap.{name} must be a whole number or null")
    return recap


def _check_pairing(messages: list[Message]) -> None:
    """Every tool result answers, once, a call of the assistant message it follows (a
    call may go unanswered: a task cut short leaves one, as in any stored session)."""
    open_calls: set[str] = set()
    answered: set[str] = set()
    for index, message in enumerate(messages, start=1):
        if message.role != "tool":
            open_calls = {call.id for call in message.tool_calls}
            answered = set()
            if len(open_calls) < len(message.tool_calls):
                raise BadBundle(f"message {index} has two tool calls with the same id")
            continue
        call_id = message.tool_call_id or ""
        if call_id in answered:
            raise BadBundle(f"message {index} answers tool call {_shown(call_id)} a second time")
        if call_id not in open_calls:
            raise BadBundle(
                f"message {index} is the result of tool call {_shown(call_id)}, which the "
                "assistant message before it did not make"
            )
        answered.add(call_id)


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise BadBundle(f"{what} must be a JSON object")
    return value


def _string(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise BadBundle(f"{what} must be a string, not {_shown(value)}")
    return value


def _strings(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise BadBundle(f"{what} must be a list of strings")
    return value


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _title(title: str) -> str:
    """The bundle's title as it was, unless it is not one line of at most 200 characters:
    then made so."""
    try:
        return check_title("title", title) if title else ""
    except InvalidArgument:
        return " ".join(title.split())[:MAX_TITLE_CHARS]


def _time(value: Any, what: str) -> str | None:
    """A time as the store writes them (None: not given)."""
    if value is None:
        return None
    try:
        return format_time(datetime.fromisoformat(_string(value, what)))
    except (ValueError, OverflowError):
        raise BadBundle(f"{what} is {_shown(value)}, not an ISO-8601 time") from None


def _shown(value: Any) -> str:
    if isinstance(value, str):
        return repr(shorten(value))
    return json.dumps(value)[:60] if value is not None else "missing"
