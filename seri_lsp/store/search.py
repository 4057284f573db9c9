"""Full-text search over what the sessions hold: the backfill of the index
(`search_index.py` keeps it), what a query typed by a person means, and the hits.
How and why: `docs/search.md`.

unicode61 (the index's tokenizer) splits `src/auth/login.py` into src, auth, login, py,
and the query makes each word typed an FTS5 phrase, so a path matches as written and
`login.py` alone matches it too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from seri_lsp.errors import InvalidArgument, SeriError
from seri_lsp.limits import MAX_QUERY_CHARS, check_text
from seri_lsp.store.database import Database
from seri_lsp.store.search_index import INDEXED_TEXT, MARK_CLOSE, MARK_OPEN

# Messages the backfill indexes per transaction (a batch takes tens of milliseconds, so
# the work of a turn waits at most that long between two batches).
BACKFILL_BATCH = 2_000
# The longest snippet a hit carries, in characters, markers included.
SNIPPET_CHARS = 200
# How many words (tokens) FTS5 puts in a snippet before it is cut to SNIPPET_CHARS.
_SNIPPET_TOKENS = 24
# Control characters in a query separate words, as in the text.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class SearchUnavailable(SeriError):
    """This process cannot search: its SQLite has no FTS5 (or `SERI_FTS5=off`)."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            f"Search is not available: {reason}. Everything else works as before; a "
            "seri-lsp whose Python has FTS5 in its SQLite (most builds do) indexes the "
            "sessions when it opens this profile."
        )


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
            f"INSERT INTO message_search (rowid, text) SELECT m.id, {INDEXED_TEXT.format(row='m')}"
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
    """A message that matched, with what a client needs to show it and to open it there
    (`seri.session.search`'s hit)."""

    session_id: str
    title: str
    message_id: int
    role: str
    snippet: str
    created_at: str
    project_path: str
    # Messages of the session that come after this one in the conversation: with
    # `seri.session.get {sessionId, limit: messagesAfter + 1}` the page starts with it.
    # Read from positions (`seq`), not counted: what follows a stored message has no gap
    # in them (a compaction's recap takes the last evicted position, a rewind cuts the
    # tail and the next message takes the next position), and an index gives the last.
    messages_after: int
    kind: str | None = None  # a recap's or a command's message; None: a plain one


@dataclass(frozen=True)
class SearchPage:
    """One page of hits, best first, and whether more follow it."""

    hits: list[SearchHit]
    has_more: bool


_SEARCH = f"""
    SELECT f.rowid, snippet(message_search, 0, char(2), char(3), '…', {_SNIPPET_TOKENS}),
        m.session_id, m.role, m.kind, m.created_at, s.title, s.project,
        (SELECT MAX(last.seq) FROM messages last WHERE last.session_id = m.session_id) - m.seq
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
            project_path=project_path,
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
    # A «» of the text itself shows as single angle quotation marks, so each «» pair is a
    # match. (str.replace: str.translate is ten times slower, and a search shows 50.)
    text = raw.replace("«", "\u2039").replace("»", "\u203a")
    text = text.replace(MARK_OPEN, "«").replace(MARK_CLOSE, "»")
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
