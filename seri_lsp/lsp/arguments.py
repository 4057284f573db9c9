"""Checking command arguments: one JSON object, typed fields, errors that name the field."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seri_lsp.errors import InvalidArgument


def single_object(command: str, arguments: Sequence[Any]) -> dict[str, Any]:
    """The command's one argument object (a missing argument counts as `{}`)."""
    if len(arguments) == 0 or (len(arguments) == 1 and arguments[0] is None):
        return {}
    if len(arguments) > 1:
        raise InvalidArgument(
            "arguments", f"{command} takes one JSON object argument, got {len(arguments)}"
        )
    value = arguments[0]
    if not isinstance(value, dict):
        raise InvalidArgument(
            "arguments", f"{command} takes a JSON object argument, got {_json_type(value)}"
        )
    return value


def required_text(args: dict[str, Any], field: str) -> str:
    """A string field that must be present and not blank."""
    value = args.get(field)
    if not isinstance(value, str) or not value.strip():
        raise InvalidArgument(field, f"{field} must be a non-empty string, got {_describe(value)}")
    return value


def optional_text(args: dict[str, Any], field: str) -> str | None:
    """A string field that may be absent or null."""
    value = args.get(field)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidArgument(field, f"{field} must be a string, got {_describe(value)}")
    return value


def optional_int(args: dict[str, Any], field: str, minimum: int = 1) -> int | None:
    """A whole-number field of at least `minimum` that may be absent or null."""
    value = args.get(field)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise InvalidArgument(
            field, f"{field} must be a whole number of at least {minimum}, got {_describe(value)}"
        )
    return value


def required_int(args: dict[str, Any], field: str, minimum: int = 1) -> int:
    """A whole-number field of at least `minimum` that must be present."""
    value = optional_int(args, field, minimum)
    if value is None:
        raise InvalidArgument(field, f"{field} is required (a whole number of at least {minimum})")
    return value


def optional_bool(args: dict[str, Any], field: str) -> bool | None:
    """A true/false field that may be absent or null."""
    value = args.get(field)
    if value is None or isinstance(value, bool):
        return value
    raise InvalidArgument(field, f"{field} must be true or false, got {_describe(value)}")


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


def _describe(value: Any) -> str:
    if value is None:
        return "nothing"
    return f"{_json_type(value)} ({value!r})" if not isinstance(value, list) else "an array"
