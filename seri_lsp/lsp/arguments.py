"""Checking command arguments: one JSON object, typed fields, errors that name the field.

Neovim encodes an empty Lua table as `[]`, so `arguments: []`, `[null]` and `[[]]` all
mean `{}`. Text must be valid Unicode (no lone surrogates) and within its length bound;
numbers must be whole and within their range (`seri_lsp.limits`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seri_lsp.context.attachments import Attachment
from seri_lsp.errors import InvalidArgument
from seri_lsp.limits import MAX_PROMPT_CHARS, check_text, check_whole_number, describe

# What a prompt's `context` may hold: how many attachments, and the longest path.
MAX_ATTACHMENTS = 50
MAX_PATH_CHARS = 4096
MAX_LINE = 100_000_000


def single_object(command: str, arguments: Sequence[Any]) -> dict[str, Any]:
    """The command's one argument object (missing, null or an empty array count as `{}`)."""
    if len(arguments) == 0:
        return {}
    if len(arguments) > 1:
        raise InvalidArgument(
            "arguments", f"{command} takes one JSON object argument, got {len(arguments)}"
        )
    value = arguments[0]
    if value is None or (isinstance(value, list) and not value):
        return {}  # Neovim sends an empty Lua table as []
    if not isinstance(value, dict):
        raise InvalidArgument(
            "arguments", f"{command} takes a JSON object argument, got {describe(value)}"
        )
    return value


def required_text(args: dict[str, Any], field: str, max_chars: int) -> str:
    """A string field that must be present and not blank."""
    value = args.get(field)
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(field, f"{field} must be a non-empty string, got {describe(value)}")
    return check_text(field, value, max_chars)


def optional_text(args: dict[str, Any], field: str, max_chars: int) -> str | None:
    """A string field that may be absent or null."""
    value = args.get(field)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidArgument(field, f"{field} must be a string, got {describe(value)}")
    return check_text(field, value, max_chars)


def optional_int(args: dict[str, Any], field: str, minimum: int, maximum: int) -> int | None:
    """A whole-number field within [minimum, maximum] that may be absent or null."""
    value = args.get(field)
    if value is None:
        return None
    return check_whole_number(field, value, minimum, maximum)


def required_int(args: dict[str, Any], field: str, minimum: int, maximum: int) -> int:
    """A whole-number field within [minimum, maximum] that must be present."""
    value = optional_int(args, field, minimum, maximum)
    if value is None:
        raise InvalidArgument(
            field, f"{field} is required (a whole number from {minimum} to {maximum:,})"
        )
    return value


def optional_bool(args: dict[str, Any], field: str) -> bool | None:
    """A true/false field that may be absent or null."""
    value = args.get(field)
    if value is None or isinstance(value, bool):
        return value
    raise InvalidArgument(field, f"{field} must be true or false, got {describe(value)}")


def attachments(args: dict[str, Any]) -> list[Attachment]:
    """A prompt's `context`: a list of `{path, startLine?, endLine?, text?}` (absent or
    null: none). Errors name the entry's field, e.g. `context[1].endLine`."""
    value = args.get("context")
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidArgument("context", f"context must be a list, got {describe(value)}")
    if len(value) > MAX_ATTACHMENTS:
        raise InvalidArgument(
            "context", f"context holds at most {MAX_ATTACHMENTS} entries, got {len(value)}"
        )
    found = []
    for index, entry in enumerate(value):
        where = f"context[{index}]"
        if not isinstance(entry, dict):
            raise InvalidArgument(where, f"{where} must be an object, got {describe(entry)}")
        path = entry.get("path")
        if not isinstance(path, str) or not path.strip():
            raise InvalidArgument(
                f"{where}.path", f"{where}.path must be a file path, got {describe(path)}"
            )
        check_text(f"{where}.path", path, MAX_PATH_CHARS)
        start = _entry_int(entry, where, "startLine")
        end = _entry_int(entry, where, "endLine")
        if end is not None and (start is None or end < start):
            raise InvalidArgument(
                f"{where}.endLine",
                f"{where}.endLine must come with a startLine and not before it",
            )
        text = entry.get("text")
        if text is not None:
            if not isinstance(text, str):
                raise InvalidArgument(
                    f"{where}.text", f"{where}.text must be a string, got {describe(text)}"
                )
            check_text(f"{where}.text", text, MAX_PROMPT_CHARS)
        found.append(Attachment(path.strip(), start, end, text))
    return found


def _entry_int(entry: dict[str, Any], where: str, field: str) -> int | None:
    value = entry.get(field)
    if value is None:
        return None
    return check_whole_number(f"{where}.{field}", value, 1, MAX_LINE)
