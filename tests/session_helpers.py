"""Helpers for the tests of finding, naming and carrying sessions (issue 24)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pytest_lsp import LanguageClient

from seri_lsp.lsp.protocol import REQUEST_FAILED
from seri_lsp.store.migrations import MIGRATIONS
from tests.harness import command


async def search(client: LanguageClient, query: str, **args: Any) -> dict[str, Any]:
    """`seri.session.search` with the query and any other arguments."""
    return await command(client, "seri.session.search", {"query": query, **args})


async def found(client: LanguageClient, query: str, **args: Any) -> list[str]:
    """The snippets a search finds, best first."""
    return [hit["snippet"] for hit in (await search(client, query, **args))["hits"]]


async def invalid(client: LanguageClient, name: str, args: Any) -> tuple[str, str]:
    """Run a command that must answer InvalidParams; returns its message and field."""
    with pytest.raises(JsonRpcInvalidParams) as caught:
        await command(client, name, args)
    return caught.value.message, caught.value.data["field"]


async def refused(client: LanguageClient, name: str, args: dict[str, Any]) -> str:
    """Run a command that must answer RequestFailed; returns its message."""
    with pytest.raises(JsonRpcException) as caught:
        await command(client, name, args)
    assert caught.value.code == REQUEST_FAILED, caught.value
    return caught.value.message


def older_database(profile_root: Path, last_migration: int) -> sqlite3.Connection:
    """A seri.db as a release that knew migrations up to `last_migration` left it (the
    profile root made), open for the test to fill; the test commits and closes it."""
    profile_root.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(profile_root / "seri.db")
    conn.execute(
        "CREATE TABLE schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    for version, name, migration in MIGRATIONS:
        if version <= last_migration:
            migration(conn)
            conn.execute(
                "INSERT INTO schema_migrations VALUES (?, ?, '2025-01-01T00:00:00.000000Z')",
                (version, name),
            )
    return conn


def assert_index_agrees(profile_root: Path) -> None:
    """The search index holds exactly the stored messages (but glob rules), is whole (FTS5's
    own integrity check), and has nothing left to backfill."""
    conn = sqlite3.connect(profile_root / "seri.db")
    try:
        conn.execute("INSERT INTO message_search (message_search) VALUES ('integrity-check')")
        indexed = {row[0] for row in conn.execute("SELECT rowid FROM message_search")}
        stored = {
            row[0] for row in conn.execute("SELECT id FROM messages WHERE kind IS NOT 'rule'")
        }
        backfilled, backfill_to, stale = conn.execute(
            "SELECT backfilled, backfill_to, stale FROM search_index"
        ).fetchone()
    finally:
        conn.close()
    assert indexed == stored
    assert (backfilled >= backfill_to, stale) == (True, 0)
