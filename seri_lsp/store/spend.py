"""Spend in `seri.db`: what each model call was billed, and each session's totals.

Every model call whose reply arrives is a row of `model_calls`, labelled by what it was
for: `turn` (a turn of a task), `compaction` (a summariser call) or `subagent` (any call
a subagent's session makes). The session's totals are on its row and grow in the same
transaction as the row of the call (for a turn, the transaction that stores its reply);
a subagent's calls grow its parent's totals too. Nothing lowers them: compaction and
rewind delete messages, never calls, and a fork starts at zero.

Everything here is synchronous; the engine runs it on its database thread.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, fields
from typing import Any

from seri_lsp.store.database import Database, utc_now

KINDS = ("turn", "compaction", "subagent")


@dataclass(frozen=True)
class Spend:
    """What one model call was billed, as the provider reported it (None: not reported).

    `input_tokens` as the provider bills them, the cached ones included; `cost` in USD;
    `cache_write_tokens`: the input tokens written to the provider's prompt cache.
    """

    kind: str
    input_tokens: int | None = None
    cached_input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost: float | None = None
    cache_write_tokens: int | None = None


@dataclass(frozen=True)
class SpendTotals:
    """Sums over model calls; `cost` is None when no call reported one."""

    input_tokens: int = 0
    cached_input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cost: float | None = None
    calls: int = 0
    cache_write_tokens: int = 0


# The session row's totals, in SpendTotals' order (`s.` is the sessions table).
TOTALS_COLUMNS = (
    "s.spent_input_tokens, s.spent_cached_input_tokens, s.spent_output_tokens,"
    " s.spent_reasoning_tokens, s.spent_cost, s.model_calls, s.spent_cache_write_tokens"
)
# How many values that is (a session row ends with them).
TOTALS_WIDTH = len(fields(SpendTotals))

# The session and its subagents (and theirs), for the calls behind its totals.
_DOWN = (
    "WITH RECURSIVE down(id) AS (SELECT ? UNION"
    " SELECT s.id FROM sessions s JOIN down ON s.parent_id = down.id)"
)


def record_spend(
    conn: sqlite3.Connection, session_id: str, spend: Spend, message_id: int | None = None
) -> None:
    """Store one call's spend inside an open transaction: its row, and the totals of the
    session and of every session above it. `message_id`: the reply stored with it."""
    conn.execute(
        "INSERT INTO model_calls (session_id, kind, input_tokens, cached_input_tokens,"
        " output_tokens, reasoning_tokens, cost, message_id, created_at, cache_write_tokens)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            session_id,
            spend.kind,
            spend.input_tokens,
            spend.cached_input_tokens,
            spend.output_tokens,
            spend.reasoning_tokens,
            spend.cost,
            message_id,
            utc_now(),
            spend.cache_write_tokens,
        ),
    )
    amounts = (
        spend.input_tokens or 0,
        spend.cached_input_tokens or 0,
        spend.output_tokens or 0,
        spend.reasoning_tokens or 0,
        spend.cost,
        spend.cost,
        spend.cache_write_tokens or 0,
    )
    # The session, then the session above it while there is one: an update by key each
    # (a recursive query cost a turn several times as much, for a chain rarely two long).
    counted: set[str] = set()
    above: str | None = session_id
    while above is not None and above not in counted:
        counted.add(above)
        row = conn.execute(_ADD_SPEND, (*amounts, above)).fetchone()
        above = row[0] if row is not None else None


_ADD_SPEND = (
    "UPDATE sessions SET"
    " spent_input_tokens = spent_input_tokens + ?,"
    " spent_cached_input_tokens = spent_cached_input_tokens + ?,"
    " spent_output_tokens = spent_output_tokens + ?,"
    " spent_reasoning_tokens = spent_reasoning_tokens + ?,"
    " spent_cost = CASE WHEN ? IS NULL THEN spent_cost ELSE COALESCE(spent_cost, 0) + ? END,"
    " model_calls = model_calls + 1,"
    " spent_cache_write_tokens = spent_cache_write_tokens + ?"
    " WHERE id = ? RETURNING parent_id"
)


def totals_from_row(values: tuple[Any, ...]) -> SpendTotals:
    """The totals from the values of `TOTALS_COLUMNS`, in order."""
    return SpendTotals(*values)


def usage(db: Database, session_id: str) -> tuple[SpendTotals, dict[str, SpendTotals]]:
    """A session's totals (its row) and their split by kind (its calls and those of its
    subagents)."""
    row = db.query_one(f"SELECT {TOTALS_COLUMNS} FROM sessions s WHERE s.id = ?", (session_id,))
    by_kind = {
        kind: SpendTotals(*sums)
        for kind, *sums in db.query_tuples(
            f"{_DOWN} SELECT kind, COALESCE(SUM(input_tokens), 0),"
            " COALESCE(SUM(cached_input_tokens), 0), COALESCE(SUM(output_tokens), 0),"
            " COALESCE(SUM(reasoning_tokens), 0), SUM(cost), COUNT(*),"
            " COALESCE(SUM(cache_write_tokens), 0) FROM model_calls"
            " WHERE session_id IN (SELECT id FROM down) GROUP BY kind",
            (session_id,),
        )
    }
    totals = totals_from_row(tuple(row)) if row is not None else SpendTotals()
    return totals, {kind: by_kind.get(kind, SpendTotals()) for kind in KINDS}
