"""Keeping the full-text index of `seri.db` (`message_search`, SQLite FTS5) in step
with the messages; searching it is `search.py`, how and why `docs/search.md`.

What is indexed: prompts and the assistant's text, the names and arguments of its tool
calls (their values: `{"path": "src/auth/login.py"}` is indexed as `src/auth/login.py`),
tool results, check results and recaps. Not the thinking, nor a glob rule's text (the
same rule in every session that fired it). A message a compaction evicted is gone from
the index as it is gone from the session; its recap is there.

The index is an FTS5 table with the unicode61 tokenizer (case and diacritics folded):
one row per message, keyed by the message's id, holding its searchable text (so a
snippet needs nothing else). TEMP triggers, installed on the connection of every process
that has FTS5 when it opens the database (`prepare`), keep it: a message's row is
written by the statement that stores the message, so in its transaction (a kill at any
moment leaves the two in agreement), and deleted with it (compaction, rewind). Messages
are never updated.

The index is derived data, not schema (no migration makes it), because a SQLite without
FTS5 cannot make it. A process that has FTS5 makes it when the profile has none, with
the messages stored before left to the backfill (`search.index_some`). A process without
FTS5 works as before, but its writes are not indexed: it marks the index stale when it
opens the profile, and the next process with FTS5 makes it again. `SERI_FTS5=off` makes
a process behave as one without FTS5 (for tests and the bench).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from seri_lsp.limits import clean_text

FTS5_ENV = "SERI_FTS5"
# FTS5 marks the matches in a snippet with these: they cannot occur in the indexed text,
# which has them replaced by spaces.
MARK_OPEN, MARK_CLOSE = "\x02", "\x03"
_MARKS = re.compile("[\x02\x03]")

# A message's searchable text (`search_text`), in SQL: only a message with tool calls
# needs Python (to decode its arguments); the others are their text, which SQLite's
# replace() clears of the markers much faster than a call into Python would.
INDEXED_TEXT = (
    "CASE WHEN {row}.tool_calls IS NULL"
    " THEN replace(replace({row}.content, char(2), ' '), char(3), ' ')"
    " ELSE seri_search_text({row}.content, {row}.tool_calls) END"
)
# The triggers, and the table whose one row says "not one by one now" (`indexed_after`).
_CONNECTION_SETUP = (
    "CREATE TEMP TABLE IF NOT EXISTS seri_index_later (later INTEGER)",
    "CREATE TEMP TRIGGER IF NOT EXISTS seri_index_message AFTER INSERT ON main.messages"
    " WHEN new.kind IS NOT 'rule' AND NOT EXISTS (SELECT 1 FROM temp.seri_index_later)"
    " BEGIN INSERT INTO message_search (rowid, text)"
    f" VALUES (new.id, {INDEXED_TEXT.format(row='new')}); END",
    "CREATE TEMP TRIGGER IF NOT EXISTS seri_unindex_message AFTER DELETE ON main.messages"
    " BEGIN DELETE FROM message_search WHERE rowid = old.id; END",
)


def prepare(
    conn: sqlite3.Connection,
    transaction: Callable[[], AbstractContextManager[sqlite3.Connection]],
) -> str | None:
    """Set up search on a freshly opened, migrated connection; the reason search cannot
    work in this process, or None when it can.

    With FTS5: the index is made (or made again, when stale) with its backfill pending,
    and the triggers that keep it are installed. Without: an index that exists is marked
    stale, since what this process stores will not be in it.
    """
    missing = _fts5_missing(conn)
    has_index = _has_index(conn)
    if missing is not None:
        if has_index and _state(conn) != "stale":
            with transaction() as tx:
                tx.execute("UPDATE search_index SET stale = 1")
        return missing
    conn.create_function("seri_search_text", 2, search_text, deterministic=True)
    if not has_index or _state(conn) != "ready":
        with transaction() as tx:
            # Looked at again inside the write lock: another process may have made it.
            if not _has_index(tx) or _state(tx) != "ready":
                _make_index(tx)
    for statement in _CONNECTION_SETUP:
        conn.execute(statement)
    return None


@contextmanager
def indexed_after(conn: sqlite3.Connection, where: str, params: Sequence[Any]) -> Iterator[None]:
    """Inside an open transaction: the messages stored in the block are indexed at its
    end, with one statement, not each by its own (FTS5 writes out what it holds at every
    statement of a transaction: one message at a time, thousands of them, make thousands
    of small segments to merge). `where` (on `messages m`) picks them. Without FTS5, the
    block runs as it is."""
    if not _has_trigger(conn):
        yield
        return
    conn.execute("INSERT INTO temp.seri_index_later VALUES (1)")
    try:
        yield
    finally:
        conn.execute("DELETE FROM temp.seri_index_later")
    conn.execute(
        f"INSERT INTO message_search (rowid, text) SELECT m.id, {INDEXED_TEXT.format(row='m')}"
        f" FROM messages m WHERE ({where}) AND m.kind IS NOT 'rule'",
        params,
    )


def _has_trigger(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT 1 FROM temp.sqlite_master WHERE type = 'trigger' AND name = 'seri_index_message'"
    ).fetchone()
    return row is not None


def _fts5_missing(conn: sqlite3.Connection) -> str | None:
    if os.environ.get(FTS5_ENV, "").strip().lower() == "off":
        return f"{FTS5_ENV}=off is set"
    try:
        # FTS5 registers an SQL function `fts5` (through which extensions find its API):
        # asking for it costs a microsecond, making a table to try a millisecond.
        conn.execute("SELECT fts5(NULL)")
    except sqlite3.OperationalError:
        return f"this Python's SQLite ({sqlite3.sqlite_version}) was built without FTS5"
    return None


def _has_index(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = 'message_search'"
    ).fetchone()
    return row is not None


def _state(conn: sqlite3.Connection) -> str:
    """ "ready" (the backfill may still be under way), "stale" or "missing" (no row)."""
    row = conn.execute("SELECT stale FROM search_index").fetchone()
    if row is None:
        return "missing"
    return "stale" if row[0] else "ready"


def _make_index(tx: sqlite3.Connection) -> None:
    """(Re)make the index, empty, with every message stored so far left to the backfill."""
    tx.execute("DROP TABLE IF EXISTS message_search")
    tx.execute(
        "CREATE VIRTUAL TABLE message_search USING fts5("
        " text, tokenize = 'unicode61 remove_diacritics 2')"
    )
    tx.execute("DELETE FROM search_index")
    tx.execute(
        "INSERT INTO search_index (id, backfill_to, backfilled, stale)"
        " SELECT 1, COALESCE(MAX(id), 0), 0, 0 FROM messages"
    )


def search_text(content: str | None, tool_calls: str | None) -> str:
    """What the index holds for a message: its text, then each tool call's name and the
    values of its arguments, one per line. Never raises, and never answers text SQLite
    cannot store (a `\\ud83d` escape in the arguments decodes to a lone surrogate): it
    runs inside the statement that stores the message."""
    try:
        parts = [content or ""]
        for call in json.loads(tool_calls) if tool_calls else ():
            parts.append(str(call.get("name", "")))
            parts.extend(argument_values(str(call.get("arguments", ""))))
        text = "\n".join(part for part in parts if part)
    except Exception:  # stored by seri, so never expected; the message is what matters
        text = content or ""
    return clean_text(_MARKS.sub(" ", text))


def argument_values(arguments: str) -> list[str]:
    """The strings and numbers inside a tool call's JSON arguments, in order (the whole
    text when it is not JSON)."""
    try:
        value = json.loads(arguments)
    except (ValueError, RecursionError):
        return [arguments]
    found: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
        elif isinstance(item, str):
            found.append(item)
        elif isinstance(item, int | float) and not isinstance(item, bool):
            found.append(str(item))
    return found
