"""Bounds on what an editor, a user or the command line may ask for.

Shared by the faces (command arguments, command-line flags) and the engine (slash
commands, settings), so every way in refuses the same values with the same words: an
`InvalidArgument` naming the field, the value and the range.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from seri_lsp.errors import InvalidArgument

# A turn budget: seri.maxTurns {n}, /max-turns N, --max-turns N, the maxTurns setting.
MAX_TURNS = 10_000
# How many sessions seri.session.list {limit} may ask for.
MAX_LIST_LIMIT = 10_000
# How many messages one page of seri.session.get {limit} may hold.
MAX_PAGE_LIMIT = 10_000
# A message id (seri.session.get {before}): SQLite's largest integer.
MAX_MESSAGE_ID = 2**63 - 1
# A session id (or id prefix) as given to resume/get/show.
MAX_SESSION_ID_CHARS = 200
# The text of one prompt (seri.prompt {text}, `seri-lsp run PROMPT`).
MAX_PROMPT_CHARS = 4_000_000
# The focus words of a manual compaction (seri.compact {focus}).
MAX_FOCUS_CHARS = 10_000
# How many prompts one rewind may go back (seri.rewind {steps}, /rewind N).
MAX_REWIND_STEPS = 10_000
# A word picked from a few (seri.rewind {restore}).
MAX_CHOICE_CHARS = 100
# A session's title (seri.session.rename {title}, /rename TITLE).
MAX_TITLE_CHARS = 200
# A model id (`seri.session.model`).
MAX_MODEL_CHARS = 300
# A file path a command names (`seri.code.merge`).
MAX_PATH_CHARS = 4_096
# What a search may hold (seri.session.search {query}), and how many hits one page has
# (`limit`, 50 unless told) and may skip (`offset`).
MAX_QUERY_CHARS = 1_000
MAX_SEARCH_LIMIT = 200
DEFAULT_SEARCH_LIMIT = 50
MAX_SEARCH_OFFSET = 100_000
# What seri.session.export {format} (and `seri-lsp export --format`) can write.
EXPORT_FORMATS = ("markdown", "json")
# An exported session to import (seri.session.import {text}, `seri-lsp import FILE`), in
# bytes of UTF-8.
MAX_BUNDLE_BYTES = 64 * 1024 * 1024

# Plain ASCII digits: str.isdigit() and int() also accept "²" or "٣".
_DIGITS = re.compile(r"[0-9]+")
_SHOWN_CHARS = 40
# Control characters (tabs and line feeds among them) and line or paragraph separators.
_NOT_IN_A_TITLE = frozenset({"Cc", "Zl", "Zp"})


def check_text(field: str, value: str, max_chars: int) -> str:
    """`value` if it is valid Unicode text of at most `max_chars` characters."""
    if len(value) > max_chars:
        raise InvalidArgument(
            field, f"{field} is {len(value):,} characters long; at most {max_chars:,} are allowed"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        char = value[exc.start]
        raise InvalidArgument(
            field,
            f"{field} holds a lone surrogate (U+{ord(char):04X}) at character {exc.start}; "
            "send valid Unicode text",
        ) from None
    return value


def clean_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (a valid pair is joined)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def lone_surrogate(value: Any) -> str | None:
    """The first lone surrogate in a JSON value (keys included), escaped (`\\ud83d`), or None.

    Such text decodes from JSON (`"\\ud83d"`) but cannot be stored or sent as UTF-8.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                return item[exc.start].encode("ascii", "backslashreplace").decode("ascii")
    return None


def check_title(field: str, value: str) -> str:
    """A session title: one line of 1 to MAX_TITLE_CHARS characters, surrounding spaces
    dropped."""
    title = check_text(field, value.strip(), MAX_TITLE_CHARS)
    if not title:
        raise InvalidArgument(
            field, f"The title is empty; give one line of 1 to {MAX_TITLE_CHARS} characters"
        )
    if any(unicodedata.category(char) in _NOT_IN_A_TITLE for char in title):
        raise InvalidArgument(
            field,
            f"The title must be one line of text, without line breaks, tabs or control "
            f"characters; got {shorten(title)!r}",
        )
    return title


def check_session_id(field: str, value: str) -> str:
    """A session id or id prefix that can be looked up."""
    if not value.strip():
        raise InvalidArgument(field, f"{field} must not be empty")
    return check_text(field, value, MAX_SESSION_ID_CHARS)


def check_whole_number(field: str, value: object, minimum: int, maximum: int) -> int:
    """A JSON number that is a whole number within [minimum, maximum]."""
    number: object = value
    if isinstance(value, float) and value.is_integer():
        number = int(value)
    if isinstance(number, int) and not isinstance(number, bool) and minimum <= number <= maximum:
        return number
    raise InvalidArgument(
        field,
        f"{field} must be a whole number from {minimum} to {maximum:,}, got {describe(value)}",
    )


def parse_whole_number(field: str, text: str, minimum: int, maximum: int, label: str = "") -> int:
    """Typed digits (`/max-turns 20`, `--max-turns 20`) as a number within [minimum, maximum]."""
    name = label or field
    stripped = text.strip()
    if _DIGITS.fullmatch(stripped) and len(stripped) <= len(str(maximum)):
        value = int(stripped)
        if minimum <= value <= maximum:
            return value
    raise InvalidArgument(
        field, f"{name} needs a whole number from {minimum} to {maximum:,}, got {shorten(text)!r}"
    )


def describe(value: object) -> str:
    """A JSON value in a few words, for an error message (long values cut short)."""
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"a boolean ({'true' if value else 'false'})"
    if isinstance(value, int):
        digits = len(str(abs(value))) if abs(value) < 10**60 else None
        if digits is None:
            return "a number with more than 60 digits"
        return f"a number ({value})"
    if isinstance(value, float):
        if value != value:
            return "not a number (NaN)"
        if value in (float("inf"), float("-inf")):
            return "a number too large to use"
        return f"a number ({value!r})"
    if isinstance(value, str):
        return f"a string ({shorten(value)!r})"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def shorten(text: str) -> str:
    """At most a few dozen characters of `text`, for messages."""
    if len(text) <= _SHOWN_CHARS:
        return text
    return f"{text[:_SHOWN_CHARS]}… ({len(text):,} characters)"
