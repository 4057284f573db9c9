"""Figures about engine time, measured in-process: the tool turn, connections, the import.

The tool turn runs a real task through `Engine.prompt` against the scripted provider of
the tests (`tests/scripted_provider.py`, on 127.0.0.1, in a process of its own so its
threads do not compete with the engine for the interpreter lock): 20 turns that each
read a file, then a final answer, 21 model calls. The model's time is what the provider
spends writing its replies (`busy_seconds`); it is left out of ours and of the baseline
alike. The baseline compares like with like: it replays the very request bodies the
engine sent (the same history) as one streamed request each through the same httpx
client seri makes (`seri_lsp.agent.connection.make_client`) on a kept-alive
connection, runs the tool (reads the file) and INSERTs and COMMITs each step's row (the
reply, the tool result) with raw sqlite3 on a database of the same schema and settings,
with the row's search index entry in the same transaction (what the store must keep;
the import's baseline indexes too), keeping that blocking work off the event loop as
seri must (`asyncio.to_thread`). Without a target, the same comparison with neither side
keeping an index. Also with no target: httpx's own CPU time per streamed call (the
request sent, the reply's lines read), the provider's process left out. And the cost of
the search index: the same task by an engine that keeps none (as on a SQLite without
FTS5) on a profile of its own, in wall time and, for comparison, in CPU time of the
process.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from bench.history import SOURCE, write_legacy_file
from bench.measure import Figure, interleaved, ratio_figure
from bench.provider_process import CALLS, ProviderProcess
from seri_lsp.agent.connection import make_client
from seri_lsp.engine import Engine
from seri_lsp.host import Host
from seri_lsp.profile import DB_NAME
from seri_lsp.settings import load_settings
from seri_lsp.slash import SlashAnswer
from seri_lsp.store.database import Database, utc_now
from seri_lsp.store.legacy import find_pending, import_files
from seri_lsp.store.search_index import FTS5_ENV
from seri_lsp.store.sessions import SessionStore


class ToolTurn:
    """The engine and the bare client, each against the same scripted provider.

    With `search_index=False` the engine behaves as on a SQLite without FTS5: no search
    index is kept (`SERI_FTS5=off` while it opens its own profile), for the figure of
    what the index costs a turn; it shares `provider` with the engine it is compared to.
    """

    def __init__(
        self,
        root: Path,
        *,
        search_index: bool = True,
        provider: ProviderProcess | None = None,
    ) -> None:
        self.root = root
        self.profile = root / ("engine-profile" if search_index else "engine-profile-no-index")
        self.workspace = root / "engine-workspace"
        (self.workspace / "src").mkdir(parents=True, exist_ok=True)
        (self.workspace / "src" / "app.py").write_text(SOURCE)
        self.provider = provider or ProviderProcess()
        self._owns_provider = provider is None
        options = {
            "provider": {
                "baseUrl": self.provider.base_url,
                "model": self.provider.model,
                "apiKey": "bench",
                "contextWindow": 1_000_000,
                "timeout": 60,
            },
            "maxTurns": 100,
            "resumeOnOpen": False,
        }
        settings, problems = load_settings(self.profile, options)
        assert not problems, problems
        with _environment(FTS5_ENV, None if search_index else "off"):
            self.engine = Engine.open(
                profile_root=self.profile,
                settings=settings,
                project=str(self.workspace.resolve()),
                workspace_roots=[self.workspace.resolve()],
                host=Host(),
            )
        assert (self.engine.db.search_unavailable is None) is search_index
        self.bodies: list[dict[str, Any]] = []
        self.cpu = 0.0
        self.first_task_connections = -1
        self.connections = -1
        self.bare_db = self._bare_database()
        self.bare_client: Any = None

    def _bare_database(self) -> sqlite3.Connection:
        folder = self.root / f"bare-{self.profile.name}"
        folder.mkdir(parents=True, exist_ok=True)
        Database.open(folder / DB_NAME).close()  # seri's schema
        # Used from a thread too (the comparison that keeps blocking work off the loop).
        conn = sqlite3.connect(folder / DB_NAME, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        now = utc_now()
        conn.execute(
            "INSERT INTO sessions (id, project, created_at, updated_at) VALUES ('bare', '/', ?, ?)",
            (now, now),
        )
        self.bare_seq = 0
        return conn

    async def ours(self) -> float:
        """Engine time of one task (21 model calls), the model's time left out."""
        await self.engine.new_session()
        self.provider.script()
        connections, busy, _ = self.provider.stats()
        started, cpu_started = time.perf_counter(), time.process_time()
        outcome = await self.engine.prompt("Why does every handler answer 200?")
        took = time.perf_counter() - started
        # The CPU the task took in this process, every thread of it (the provider runs in
        # a process of its own): what the engine did, whatever else ran on the machine.
        self.cpu = time.process_time() - cpu_started
        assert not isinstance(outcome, SlashAnswer), outcome
        assert outcome.status == "done" and outcome.turns == CALLS, outcome
        now_connections, now_busy, requests = self.provider.stats()
        self.connections = now_connections - connections
        if self.first_task_connections < 0:
            self.first_task_connections = self.connections
            self.bodies = requests
        return took - (now_busy - busy)

    async def _client(self) -> Any:
        """The httpx client seri makes for this provider, its connection open."""
        if self.bare_client is None:
            headers = {"Authorization": "Bearer bench"}
            made = make_client(self.provider.base_url, headers=headers, connect_timeout=15)
            self.bare_client = made.http
            await self.bare_client.get("models")  # the connection is open and kept alive
        return self.bare_client

    async def baseline(self, *, indexed: bool = True) -> float:
        """The same task done bare, the model's time left out: the same httpx client, the
        read and the writes on a thread (`asyncio.to_thread`), not on the event loop.
        `indexed`: each row also goes into the search index in its transaction, as the
        product must keep it (and as the import's baseline does)."""

        async def insert(*row: str | None) -> None:
            await asyncio.to_thread(self._insert, *row, indexed=indexed)

        async def read() -> str:
            return await asyncio.to_thread((self.workspace / "src" / "app.py").read_text)

        client = await self._client()
        self.provider.script()
        _, busy, _ = self.provider.stats()
        started = time.perf_counter()
        await insert("user", "Why does every handler answer 200?", None, None)
        for body in self.bodies:
            calls: list[dict[str, Any]] = []
            text = ""
            async with client.stream("POST", "chat/completions", json=body) as reply:
                async for line in reply.aiter_lines():
                    if not line.startswith("data: ") or line == "data: [DONE]":
                        continue
                    chunk = json.loads(line[6:])
                    for choice in chunk["choices"]:
                        delta = choice["delta"]
                        text += delta.get("content") or ""
                        calls += delta.get("tool_calls") or []
            ids = [call["id"] for call in calls if call.get("id")]
            await insert("assistant", text, json.dumps(calls) if calls else None, None)
            for call_id in ids:
                await insert("tool", await read(), None, call_id)
        took = time.perf_counter() - started
        _, now_busy, _ = self.provider.stats()
        return took - (now_busy - busy)

    async def httpx_cpu(self) -> float:
        """httpx's own CPU time per streamed call: the task's requests sent and their
        replies' lines read, nothing else done (the provider runs in its own process)."""
        client = await self._client()
        self.provider.script()
        started = time.process_time()
        for body in self.bodies:
            async with client.stream("POST", "chat/completions", json=body) as reply:
                async for _ in reply.aiter_lines():
                    pass
        return (time.process_time() - started) / len(self.bodies)

    def _insert(
        self, role: str, content: str, calls: str | None, call_id: str | None, *, indexed: bool
    ) -> None:
        self.bare_seq += 1
        self.bare_db.execute("BEGIN IMMEDIATE")
        row = self.bare_db.execute(
            "INSERT INTO messages (session_id, seq, role, content, tool_calls, tool_call_id,"
            " chars, created_at) VALUES ('bare', ?, ?, ?, ?, ?, ?, ?)",
            (self.bare_seq, role, content, calls, call_id, len(content), utc_now()),
        ).lastrowid
        if indexed:
            self.bare_db.execute(
                "INSERT INTO message_search (rowid, text) VALUES (?, ?)",
                (row, f"{content} {calls or ''}"),
            )
        self.bare_db.execute("COMMIT")

    async def close(self) -> None:
        if self.bare_client is not None:
            await self.bare_client.aclose()
        await self.engine.close()
        self.bare_db.close()
        if self._owns_provider:
            self.provider.stop()


@contextlib.contextmanager
def _environment(name: str, value: str | None) -> Iterator[None]:
    """`name` set to `value` (unset when None) for the duration of the block."""
    before = os.environ.pop(name, None)
    if value is not None:
        os.environ[name] = value
    try:
        yield
    finally:
        os.environ.pop(name, None)
        if before is not None:
            os.environ[name] = before


def tool_turn_figures(root: Path, repetitions: int) -> list[Figure]:
    """The connections of one task, and engine time per tool turn against the bare turn."""

    async def run() -> list[Figure]:
        bench = ToolTurn(root)
        unindexed = ToolTurn(root, search_index=False, provider=bench.provider)
        try:
            await bench.ours()  # the first task: connections counted, bodies recorded
            await unindexed.ours()
            await bench.baseline()
            sides: dict[str, Callable[[], Awaitable[float]]] = {
                "ours": bench.ours,
                "bare": bench.baseline,
                "ours without the search index": unindexed.ours,
                "bare without the search index": lambda: bench.baseline(indexed=False),
            }
            times: dict[str, list[float]] = {name: [] for name in sides}
            # The CPU each engine's task took (the bare turn's is not compared).
            cpu_of = {"ours": bench, "ours without the search index": unindexed}
            engine_cpu: dict[str, list[float]] = {name: [] for name in cpu_of}
            order = list(sides)
            for index in range(repetitions):
                # Each side goes first, second, third and last equally often.
                shift = index % len(order)
                for name in order[shift:] + order[:shift]:
                    times[name].append(await sides[name]() / CALLS)
                    if name in cpu_of:
                        engine_cpu[name].append(cpu_of[name].cpu / CALLS)
            await bench.ours()
            later = bench.connections
            cpu = statistics.median([await bench.httpx_cpu() for _ in range(5)])
        finally:
            await unindexed.close()
            await bench.close()
        opened = bench.first_task_connections
        connections = Figure(
            f"model calls that open a new TCP connection (a task of {CALLS} calls)",
            opened,
            CALLS,
            "",
            "1 per task, then reused",
            opened <= 1 and later == 0,
            text=f"{opened} of {CALLS} (a later task: {later})",
        )
        turn = ratio_figure(
            "engine time per tool turn, model time excluded / the same turn done bare (the"
            " same httpx client, its read and writes off the event loop, each row indexed"
            " for search in its transaction)",
            times["ours"],
            times["bare"],
            unit="s",
            limit=1.2,
        )
        unindexed_turn = ratio_figure(
            "(no target) the same, neither side keeping a search index",
            times["ours without the search index"],
            times["bare without the search index"],
            unit="s",
            limit=1.2,
        )
        httpx_cpu = Figure(
            "(no target) httpx's own CPU time per streamed model call",
            cpu,
            0,
            "s",
            "-",
            None,
            text=f"{cpu * 1000:.2f} ms",
        )
        indexed = ratio_figure(
            "engine time per tool turn with the search index kept / without it (no FTS5)",
            times["ours"],
            times["ours without the search index"],
            unit="s",
            limit=1.15,
        )
        # The same in CPU time, which a busy machine disturbs far less than the wall clock.
        indexed_cpu = ratio_figure(
            "(no target) the same in CPU time of the engine's process",
            engine_cpu["ours"],
            engine_cpu["ours without the search index"],
            unit="s",
            limit=1.15,
        )
        return [
            connections,
            turn,
            untargeted(unindexed_turn),
            httpx_cpu,
            indexed,
            untargeted(indexed_cpu),
        ]

    return asyncio.run(run())


def untargeted(figure: Figure) -> Figure:
    """A ratio shown for scale: the same figure with no target to meet."""
    return Figure(**{**figure.__dict__, "target": "-", "met": None})


# --- legacy import ---------------------------------------------------------------------

# 31 files of 2,000 messages: 62,000 messages, 31 MB of JSONL.
IMPORT_FILES, IMPORT_MESSAGES = 31, 2_000


def import_figure(root: Path, repetitions: int) -> Figure:
    """Legacy import throughput against raw json.loads + executemany (and one INSERT ...
    SELECT into the search index, as the import indexes what it stores): 31 files of
    2,000 messages (31 MB)."""
    sources = root / "import-sources"
    project = root / "import-project"
    project.mkdir(parents=True, exist_ok=True)
    files = [
        write_legacy_file(sources / f"s{n}.jsonl", f"import-{n}", project, IMPORT_MESSAGES)
        for n in range(IMPORT_FILES)
    ]

    def fresh_profile() -> Path:
        folder = Path(tempfile.mkdtemp(prefix="import-", dir=root))
        (folder / "sessions").mkdir()
        for path in files:
            shutil.copy2(path, folder / "sessions" / path.name)
        Database.open(folder / DB_NAME).close()
        return folder

    def ours() -> float:
        folder = fresh_profile()
        db = Database.open(folder / DB_NAME)
        try:
            store = SessionStore(db)
            started = time.perf_counter()
            pending, _ = find_pending(folder, store)
            report = import_files(pending, store)
            took = time.perf_counter() - started
        finally:
            db.close()
            shutil.rmtree(folder)
        assert sum(f.messages for f in report.files) == IMPORT_FILES * IMPORT_MESSAGES
        return took

    def baseline() -> float:
        folder = fresh_profile()
        conn = sqlite3.connect(folder / DB_NAME, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        try:
            started = time.perf_counter()
            for path in sorted((folder / "sessions").glob("*.jsonl")):
                with path.open("rb") as handle:
                    records = [json.loads(line) for line in handle]
                session = records[0]["id"]
                now = utc_now()
                rows = [
                    (
                        session,
                        seq,
                        r["role"],
                        r.get("content") or "",
                        json.dumps(r["tool_calls"]) if r.get("tool_calls") else None,
                        r.get("tool_call_id"),
                        len(r.get("content") or ""),
                        now,
                    )
                    for seq, r in enumerate(records[1:], start=1)
                ]
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(
                    "INSERT INTO sessions (id, project, created_at, updated_at)"
                    " VALUES (?, ?, ?, ?)",
                    (session, records[0]["cwd"], now, now),
                )
                conn.executemany(
                    "INSERT INTO messages (session_id, seq, role, content, tool_calls,"
                    " tool_call_id, chars, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    rows,
                )
                # The import indexes what it stores for search: so does the baseline.
                conn.execute(
                    "INSERT INTO message_search (rowid, text) SELECT id,"
                    " content || ' ' || COALESCE(tool_calls, '') FROM messages"
                    " WHERE session_id = ?",
                    (session,),
                )
                conn.execute("COMMIT")
            took = time.perf_counter() - started
        finally:
            conn.close()
            shutil.rmtree(folder)
        return took

    total = IMPORT_FILES * IMPORT_MESSAGES
    ours()
    mine, theirs = interleaved(ours, baseline, repetitions)
    return ratio_figure(
        "legacy import throughput / raw json.loads + executemany + FTS5 INSERT ... SELECT",
        [total / took for took in mine],
        [total / took for took in theirs],
        unit="msg/s",
        limit=0.7,
        higher_is_better=True,
    )
