"""The search figure: `seri.session.search` over 100,000 messages in 1,000 sessions.

The profile holds 1,000 sessions of 100 messages (made by the legacy import, which
indexes them as it stores them): every four messages a prompt, a reply that reads a file
or greps (a tool call), the tool's result (30 lines of code, 1.2 kB) and an answer. Their
words come from a vocabulary of 8,000 made-up words drawn with a Zipf law, as words of
text are, so some are in most messages and most in few. The queries are what people
type: a common word, a rare word, two words, a phrase, a path, and a word half typed.

Ours is the LSP round trip of `seri.session.search` (the default 50 hits, in the
project), timed from outside the server; the baseline is the raw FTS5 query of the same
MATCH expression (the 50 best by rank, with their snippets) on a sqlite3 connection of
the bench's own, which is all a search must do.
"""

from __future__ import annotations

import json
import random
import sqlite3
import statistics
import sys
import time
from itertools import accumulate
from pathlib import Path

from bench.lsp import LspProcess
from bench.measure import Figure, ratio_figure
from bench.server import OPTIONS, server_env
from seri_lsp.profile import DB_NAME
from seri_lsp.store.database import Database
from seri_lsp.store.legacy import find_pending, import_files
from seri_lsp.store.search import match_expression
from seri_lsp.store.sessions import SessionStore

SESSIONS, MESSAGES = 1_000, 100
VOCABULARY = 8_000
RAW = (
    "SELECT rowid, snippet(message_search, 0, char(2), char(3), '…', 24) FROM message_search"
    " WHERE message_search MATCH ? ORDER BY rank LIMIT 50"
)


class Words:
    """A made-up vocabulary and a Zipf law over it, reproducible from its seed."""

    def __init__(self, seed: int = 24) -> None:
        self.random = random.Random(seed)
        syllables = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]
        found: dict[str, None] = {}
        while len(found) < VOCABULARY:
            found["".join(self.random.choices(syllables, k=self.random.randint(2, 4)))] = None
        self.words = list(found)
        self._weights = list(accumulate(1 / rank for rank in range(1, VOCABULARY + 1)))
        self.paths = [f"src/{self.word()}/{self.word()}.py" for _ in range(2_000)]

    def word(self) -> str:
        return self.random.choices(self.words, cum_weights=self._weights)[0]

    def text(self, count: int) -> str:
        return " ".join(self.random.choices(self.words, cum_weights=self._weights, k=count))

    def code(self) -> str:
        return "\n".join(
            f"    {self.word()}_{self.word()} = {self.word()}({self.word()}, {n})"
            for n in range(30)
        )


def write_history(profile: Path, project: Path, words: Words) -> None:
    """The 1,000 sessions as legacy files in `profile/sessions`."""
    folder = profile / "sessions"
    folder.mkdir(parents=True)
    for number in range(SESSIONS):
        lines = [
            {
                "type": "session",
                "id": f"search-{number}",
                "cwd": str(project),
                "created": "2025-01-01T00:00:00Z",
            }
        ]
        for index in range(MESSAGES):
            exchange, step = divmod(index, 4)
            call_id = f"call_{exchange}"
            if step == 0:
                record = {"role": "user", "content": words.text(words.random.randint(6, 20))}
            elif step == 1:
                if words.random.random() < 0.7:
                    call = ("read_file", {"path": words.random.choice(words.paths)})
                else:
                    call = ("grep", {"pattern": words.word(), "path": "src"})
                record = {
                    "role": "assistant",
                    "content": words.text(6),
                    "tool_calls": [
                        {"id": call_id, "name": call[0], "arguments": json.dumps(call[1])}
                    ],
                }
            elif step == 2:
                record = {"role": "tool", "content": words.code(), "tool_call_id": call_id}
            else:
                record = {"role": "assistant", "content": words.text(words.random.randint(20, 50))}
            lines.append({"type": "message", **record})
        with (folder / f"s{number}.jsonl").open("w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(line) + "\n" for line in lines)


def queries(words: Words) -> dict[str, str]:
    """The searches timed, by what they stand for."""
    by_rank = words.words  # the Zipf law's order: the first is the commonest
    phrase = words.text(40).split()
    return {
        "a common word": by_rank[30],
        "a rare word": by_rank[5_000],
        "two words": f"{by_rank[150]} {by_rank[900]}",
        "a phrase": f'"{phrase[10]} {phrase[11]}"',
        "a path": words.paths[17],
        "a word half typed": by_rank[400][:4],
    }


def search_figures(root: Path, repetitions: int) -> list[Figure]:
    """The round trip against the raw FTS5 query, and the slowest query's round trip."""
    profile, project = root / "search-profile", root / "search-project"
    project.mkdir(parents=True)
    words = Words()
    write_history(profile, project.resolve(), words)
    db = Database.open(profile / DB_NAME)
    try:
        store = SessionStore(db)
        started = time.perf_counter()
        report = import_files(find_pending(profile, store)[0], store)
        took = time.perf_counter() - started
    finally:
        db.close()
    stored = sum(f.messages for f in report.files)
    assert stored == SESSIONS * MESSAGES, stored
    print(f"... {stored:,} messages imported and indexed in {took:.1f} s", file=sys.stderr)

    searches = queries(words)
    command = [sys.executable, "-m", "seri_lsp", "--profile-root", str(profile)]
    server = LspProcess(command, server_env())
    conn = sqlite3.connect(f"file:{profile / DB_NAME}?mode=ro", uri=True)
    try:
        server.initialize(project.resolve(), {**OPTIONS, "resumeOnOpen": False})

        def ours(query: str) -> float:
            result, seconds = server.command("seri.session.search", {"query": query})
            assert result["hits"], query
            return seconds

        def raw(query: str) -> float:
            expression = match_expression(query)
            started = time.perf_counter()
            rows = conn.execute(RAW, (expression,)).fetchall()
            seconds = time.perf_counter() - started
            assert rows, query
            return seconds

        for query in searches.values():  # warm both: caches, the server's first search
            ours(query)
            raw(query)
        mine: dict[str, list[float]] = {name: [] for name in searches}
        theirs: dict[str, list[float]] = {name: [] for name in searches}
        for index in range(repetitions):
            for name, query in searches.items():
                if index % 2 == 0:
                    mine[name].append(ours(query))
                    theirs[name].append(raw(query))
                else:
                    theirs[name].append(raw(query))
                    mine[name].append(ours(query))
    finally:
        conn.close()
        server.close()
    for name, query in searches.items():
        print(
            f"... {name} ({query}): {statistics.median(mine[name]) * 1000:.2f} ms round trip,"
            f" {statistics.median(theirs[name]) * 1000:.2f} ms raw",
            file=sys.stderr,
        )
    rounds_mine = [sum(times[i] for times in mine.values()) for i in range(repetitions)]
    rounds_theirs = [sum(times[i] for times in theirs.values()) for i in range(repetitions)]
    ratio = ratio_figure(
        f"`seri.session.search` round trip over {stored:,} messages in {SESSIONS:,} sessions"
        f" ({len(searches)} queries) / the raw FTS5 query of the same words",
        rounds_mine,
        rounds_theirs,
        unit="s",
        limit=1.5,
    )
    slowest_name = max(mine, key=lambda name: statistics.median(mine[name]))
    slowest = statistics.median(mine[slowest_name])
    absolute = Figure(
        "the slowest of those queries' round trip (median)",
        slowest,
        0.05,
        "s",
        "< 50 ms",
        slowest < 0.05,
        repetitions=repetitions,
        text=f"{slowest * 1000:.1f} ms ({slowest_name})",
    )
    return [ratio, absolute]
