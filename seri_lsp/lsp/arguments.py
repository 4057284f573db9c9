"""Checking command arguments: one JSON object, typed fields, errors that name the field.

Neovim encodes an empty Lua table as `[]`, so `arguments: []`, `[null]` and `[[]]` all
mean `{}`. Text must be valid Unicode (no lone surrogates) and within its length bound;
numbers must be whole and within their range (`seri_lsp.limits`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seri_lsp.errors import InvalidArgument
from seri_lsp.limits import check_text, check_whole_number, describe


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
