"""Full-text search over what the sessions hold: an FTS5 index in `seri.db`.

What is found: prompts and the assistant's text, the names and arguments of its tool
calls (their values: `{"path": "src/auth/login.py"}` is found as `src/auth/login.py`),
tool results, check results and recaps. Not the thinking, nor a glob rule's text (the
same rule in every session that fired it). A message a compaction evicted is gone from
the index as it is gone from the session; its recap is there.

The index, `message_search`, is an FTS5 table with the unicode61 tokenizer (case and
diacritics folded): one row per message, keyed by the message's id, holding its
searchable text (so a snippet needs nothing else). unicode61 splits `src/auth/login.py`
into src, auth, login, py, and the query makes a path-like word a phrase, so it matches
as written, and `login.py` alone matches it too. The trigram tokenizer would also find
parts of words, but on 100,000 messages its index was 2.2 times larger and took 5 times
as long to write (docs/search.md).

TEMP triggers, installed on the connection of every process that has FTS5 when it opens
the database, keep the index in step with `messages`: a message's row is written by the
statement that stores the message, so in its transaction (a kill at any moment leaves
the two in agreement), and deleted with it (compaction, rewind). Messages are never
updated.

The index is derived data, not schema (no migration makes it), because a SQLite without
FTS5 cannot make it. A process that has FTS5 makes it when the profile has none and then
fills it, in batches, with the messages stored before (`index_some`, the backfill). A
process without FTS5 works as before, but its writes are not indexed: it marks the index
stale when it opens the profile, and the next process with FTS5 builds it again.
`SERI_FTS5=off` makes a process behave as one without FTS5 (for tests and the bench).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from seri_lsp.errors import InvalidArgument, SeriError
from seri_lsp.limits import MAX_QUERY_CHARS, check_text, clean_text

if TYPE_CHECKING:
    from seri_lsp.store.database import Database

FTS5_ENV = "SERI_FTS5"
# Messages the backfill indexes per transaction (a batch takes tens of milliseconds, so
# the work of a turn waits at most that long between two batches).
BACKFILL_BATCH = 2_000
# The longest snippet a hit carries, in characters, markers included.
SNIPPET_CHARS = 200
# How many words (tokens) FTS5 puts in a snippet before it is cut to SNIPPET_CHARS.
_SNIPPET_TOKENS = 24
# FTS5 marks the matches with these (they cannot occur in the indexed text, which has them
# replaced); the snippet shows «» instead, and a «» of the text itself as single angle
# quotation marks.
_OPEN, _CLOSE = "\x02", "\x03"
_MARKS = re.compile("[\x02\x03]")
# Control characters in a query separate words, as in the text.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

# A message's searchable text (`search_text`), in SQL: only a message with tool calls
# needs Python (to decode its arguments); the others are their text, which SQLite's
# replace() clears of the snippet markers much faster than a call into Python would.
_TEXT = (
    "CASE WHEN {row}.tool_calls IS NULL"
    " THEN replace(replace({row}.content, char(2), ' '), char(3), ' ')"
    " ELSE seri_search_text({row}.content, {row}.tool_calls) END"
)
_TRIGGERS = (
    "CREATE TEMP TRIGGER IF NOT EXISTS seri_index_message AFTER INSERT ON main.messages"
    " WHEN new.kind IS NOT 'rule'"
    " BEGIN INSERT INTO message_search (rowid, text)"
    f" VALUES (new.id, {_TEXT.format(row='new')}); END",
    "CREATE TEMP TRIGGER IF NOT EXISTS seri_unindex_message AFTER DELETE ON main.messages"
    " BEGIN DELETE FROM message_search WHERE rowid = old.id; END",
)


class SearchUnavailable(SeriError):
    """This process cannot search: its SQLite has no FTS5 (or `SERI_FTS5=off`)."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            f"Search is not available: {reason}. Everything else works as before; a "
            "seri-lsp whose Python has FTS5 in its SQLite (most builds do) indexes the "
            "sessions when it opens this profile."
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
    for trigger in _TRIGGERS:
        conn.execute(trigger)
    return None


def _fts5_missing(conn: sqlite3.Connection) -> str | None:
    if os.environ.get(FTS5_ENV, "").strip().lower() == "off":
        return f"{FTS5_ENV}=off is set"
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.seri_fts5_probe USING fts5(text)")
    except sqlite3.OperationalError:
        return f"this Python's SQLite ({sqlite3.sqlite_version}) was built without FTS5"
    conn.execute("DROP TABLE temp.seri_fts5_probe")
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


# --- the backfill ---------------------------------------------------------------------


@dataclass(frozen=True)
class Backlog:
    """How far the backfill has come: message ids up to `done` of those up to `total`
    (ids, not counts: enough for a percentage)."""

    done: int
    total: int

    @property
    def finished(self) -> bool:
        return self.done >= self.total

    def percentage(self, start: int) -> int:
        """Percent of the work from `start` (the `done` when it began) to the end."""
        if self.total <= start:
            return 100
        return (self.done - start) * 100 // (self.total - start)


def backlog(db: Database) -> Backlog:
    """Where the backfill stands (finished when there is no index to fill)."""
    if db.search_unavailable is not None:
        return Backlog(0, 0)
    row = db.query_one("SELECT backfilled, backfill_to FROM search_index")
    return Backlog(row[0], row[1]) if row is not None else Backlog(0, 0)


def index_some(db: Database, limit: int = BACKFILL_BATCH) -> Backlog:
    """Index the next `limit` messages of the backfill, in one transaction."""
    if db.search_unavailable is not None:
        return Backlog(0, 0)
    with db.transaction() as tx:
        row = tx.execute("SELECT backfilled, backfill_to, stale FROM search_index").fetchone()
        if row is None or row[2] or row[0] >= row[1]:
            return Backlog(row[0], row[1]) if row is not None else Backlog(0, 0)
        done, total, _ = row
        last = tx.execute(
            "SELECT MAX(id) FROM (SELECT id FROM messages WHERE id > ? AND id <= ?"
            " ORDER BY id LIMIT ?)",
            (done, total, limit),
        ).fetchone()[0]
        last = total if last is None else last
        tx.execute(
            f"INSERT INTO message_search (rowid, text) SELECT m.id, {_TEXT.format(row='m')}"
            " FROM messages m WHERE m.id > ? AND m.id <= ? AND m.kind IS NOT 'rule'",
            (done, last),
        )
        tx.execute("UPDATE search_index SET backfilled = ?", (last,))
    return Backlog(last, total)


def index_backlog(db: Database) -> Iterator[Backlog]:
    """Index every message the backfill still owes, a batch at a time; yields after each."""
    while not (progress := index_some(db)).finished:
        yield progress
    yield progress


# --- the query ------------------------------------------------------------------------


def parse_query(query: str) -> str | None:
    """The MATCH expression for a search as typed (`match_expression`), after the checks
    every face makes: InvalidArgument `query` when it is blank or too long."""
    check_text("query", query, MAX_QUERY_CHARS)
    if not query.strip():
        raise InvalidArgument("query", "The search is empty; type the words to look for")
    return match_expression(query)


def match_expression(query: str) -> str | None:
    """The FTS5 MATCH expression for what a person typed; None when it holds no words.

    Words must all match, in any order; `"quoted phrases"` match as phrases; the last
    word matches as a prefix (search as you type); a path-like word (`src/auth/login.py`)
    matches as written. Every word is passed to FTS5 as a quoted string, so nothing typed
    is syntax: stray quotes, `*`, `-`, `AND`, `NEAR`, `column:` are text.
    """
    terms: list[str] = []
    last_is_word = False
    text = _CONTROL.sub(" ", query)
    at, end = 0, len(text)
    while at < end:
        if text[at].isspace():
            at += 1
            continue
        if text[at] == '"':
            close = text.find('"', at + 1)
            if close > at:
                terms.append(text[at + 1 : close])
                last_is_word = False
                at = close + 1
                continue
            at += 1  # a quote that closes nothing is text, and text the tokenizer skips
            continue
        start = at
        while at < end and not text[at].isspace():
            at += 1
        terms.append(text[start:at])
        last_is_word = True
    quoted = ['"' + term.replace('"', '""') + '"' for term in terms if term.strip()]
    if not quoted:
        return None
    if last_is_word and terms[-1].strip():
        quoted[-1] += "*"
    return " ".join(quoted)


@dataclass(frozen=True)
class SearchHit:
    """A message that matched, with what a client needs to show it and to open it there."""

    session_id: str
    title: str
    message_id: int
    role: str
    kind: str | None
    snippet: str
    created_at: str
    project: str
    # Messages of the session that come after this one in the conversation: with
    # `seri.session.get {sessionId, limit: messagesAfter + 1}` the page starts with it.
    messages_after: int

    def to_wire(self) -> dict[str, Any]:
        """A hit of `seri.session.search`."""
        wire: dict[str, Any] = {
            "sessionId": self.session_id,
            "title": self.title,
            "messageId": self.message_id,
            "role": self.role,
            "snippet": self.snippet,
            "createdAt": self.created_at,
            "projectPath": self.project,
            "messagesAfter": self.messages_after,
        }
        if self.kind:
            wire["kind"] = self.kind
        return wire


_SEARCH = f"""
    SELECT f.rowid, snippet(message_search, 0, char(2), char(3), '…', {_SNIPPET_TOKENS}),
        m.session_id, m.role, m.kind, m.created_at, s.title, s.project,
        (SELECT COUNT(*) FROM messages later
            WHERE later.session_id = m.session_id AND later.seq > m.seq)
    FROM message_search f
    JOIN messages m ON m.id = f.rowid
    JOIN sessions s ON s.id = m.session_id
    WHERE message_search MATCH ? AND s.parent_id IS NULL {{project}}
    ORDER BY f.rank LIMIT ? OFFSET ?
"""
_SEARCH_ALL = _SEARCH.format(project="")
_SEARCH_PROJECT = _SEARCH.format(project="AND s.project = ?")


def search(
    db: Database, expression: str, project: str | None, limit: int, offset: int = 0
) -> tuple[list[SearchHit], bool]:
    """The best `limit` hits for a MATCH expression (`match_expression`) after the first
    `offset`, best first, in `project`'s top-level sessions (every project's when None),
    and whether more follow. SearchUnavailable when this process cannot search."""
    if db.search_unavailable is not None:
        raise SearchUnavailable(db.search_unavailable)
    params: list[Any] = [expression]
    if project is not None:
        params.append(project)
    sql = _SEARCH_ALL if project is None else _SEARCH_PROJECT
    rows = db.query_tuples(sql, [*params, limit + 1, offset])
    hits = [
        SearchHit(
            session_id=session_id,
            title=title,
            message_id=message_id,
            role=role,
            kind=kind,
            snippet=shown_snippet(snippet or ""),
            created_at=created_at,
            project=project_path,
            messages_after=after,
        )
        for (
            message_id,
            snippet,
            session_id,
            role,
            kind,
            created_at,
            title,
            project_path,
            after,
        ) in rows[:limit]
    ]
    return hits, len(rows) > limit


def shown_snippet(raw: str) -> str:
    """A snippet as a hit shows it: one line, the matches marked «like this», at most
    SNIPPET_CHARS characters around the first match (… where it was cut)."""
    # str.replace: str.translate is ten times slower, and a search shows 50 snippets.
    text = raw.replace("«", "\u2039").replace("»", "\u203a")
    text = text.replace(_OPEN, "«").replace(_CLOSE, "»")
    text = " ".join(text.split())
    if len(text) <= SNIPPET_CHARS:
        return text
    first = max(text.find("«"), 0)
    start = max(0, min(first - SNIPPET_CHARS // 4, len(text) - SNIPPET_CHARS + 2))
    lead = "…" if start > 0 and not text.startswith("…", start) else ""
    room = SNIPPET_CHARS - len(lead) - 2  # a closing » and a trailing … may follow
    piece = text[start : start + room]
    if piece.count("«") > piece.count("»"):
        piece += "»"
    tail = "…" if start + room < len(text) and not piece.endswith("…") else ""
    return lead + piece + tail
