"""The search's query language and snippets, on a real index (a seri.db of a few
messages): whatever a person types is a query FTS5 accepts, and a snippet is one line of
at most 200 characters with its matches marked."""

from __future__ import annotations

import functools
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from seri_lsp.store import search
from seri_lsp.store.database import Database
from seri_lsp.store.messages import Message, ToolCall
from seri_lsp.store.sessions import SessionStore

PROJECT = "/work/app"


@functools.cache
def indexed() -> Database:
    """A seri.db whose one session talks about a login bug, a path and «quotes»."""
    folder = tempfile.mkdtemp(prefix="seri-search-query-")
    db = Database.open(Path(folder) / "seri.db")
    store = SessionStore(db)
    info = store.create(PROJECT)
    call = ToolCall("c1", "read_file", '{"path": "src/auth/login.py"}')
    store.write_step(
        info.id,
        [
            Message(role="user", content="Fix the login bug; the «old» flow is NEAR AND done"),
            Message(role="assistant", content="Reading it.", tool_calls=(call,)),
        ],
    )
    long_result = " ".join(f"word{n}" for n in range(300)) + " needle " + "tail " * 100
    store.append(info.id, Message(role="tool", content=long_result, tool_call_id="c1"))
    return db


def snippets(query: str) -> list[str]:
    expression = search.match_expression(query)
    if expression is None:
        return []
    return [hit.snippet for hit in search.search(indexed(), expression, PROJECT, 50)[0]]


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_whatever_is_typed_is_a_query_fts5_accepts(query: str) -> None:
    snippets(query)  # no sqlite3 error, whatever the text


def test_operators_and_quotes_are_words() -> None:
    # («old» in the text shows in single angle quotation marks: each «» pair is a match.)
    old = "\u2039old\u203a"
    assert snippets("NEAR AND") == [f"Fix the login bug; the {old} flow is «NEAR» «AND» done"]
    assert snippets("login NOT") == []  # NOT is a word to find, and it is not there
    assert snippets('"bug; the"') == [f"Fix the login «bug; the» {old} flow is NEAR AND done"]


def test_a_path_matches_as_written_and_in_part() -> None:
    assert snippets("src/auth/login.py") == ["Reading it. read_file «src/auth/login.py»"]
    assert snippets("login.py") == ["Reading it. read_file src/auth/«login.py»"]
    assert snippets("login.p") == ["Reading it. read_file src/auth/«login.py»"]
    assert snippets("auth/log") == ["Reading it. read_file src/«auth/login».py"]


def test_a_long_snippet_is_cut_around_its_first_match() -> None:
    [snippet] = snippets("needle")
    assert len(snippet) <= search.SNIPPET_CHARS
    assert snippet.startswith("…") and snippet.endswith("…")
    assert "«needle»" in snippet
    assert snippet.index("«needle»") < search.SNIPPET_CHARS // 2


def test_a_cut_never_leaves_a_match_open() -> None:
    marked = "«" + "x" * 300 + "»"
    shown = search.shown_snippet(marked.replace("«", "\x02").replace("»", "\x03"))
    assert len(shown) <= search.SNIPPET_CHARS
    assert shown.count("«") == shown.count("»") == 1


def test_match_expressions() -> None:
    assert search.match_expression("login bug") == '"login" "bug"*'
    assert search.match_expression('"login bug" fix') == '"login bug" "fix"*'
    assert search.match_expression('fix "login bug"') == '"fix" "login bug"'
    assert search.match_expression('say "hi') == '"say" "hi"*'
    assert search.match_expression('a"b') == '"a""b"*'
    assert search.match_expression('""') is None
    assert search.match_expression("  ") is None
