"""Figures about the server process: start-up, resume, `seri.session.get`, memory.

The real server (`python -m seri_lsp`) is driven over its stdio by `bench.lsp`, a client
that does almost nothing, against a profile holding a 10,000-message session and a
100-message one in one project (imported from legacy files before the server starts).
"""

from __future__ import annotations

import compileall
import json
import os
import sqlite3
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import seri_lsp
from bench.history import write_legacy_file
from bench.lsp import LspProcess
from bench.measure import Figure, interleaved, ratio_figure
from seri_lsp.profile import DB_NAME
from seri_lsp.store.database import Database
from seri_lsp.store.legacy import find_pending, import_files
from seri_lsp.store.sessions import SessionStore

BARE_SERVER = Path(__file__).resolve().parent / "bare_server.py"
BIG, SMALL = 10_000, 100
BIG_ID, SMALL_ID = "bench-big-session", "bench-small-session"
# Settings that keep the server off the network: a fixed context window, no retries.
OPTIONS: dict[str, Any] = {
    "provider": {
        "baseUrl": "http://127.0.0.1:9/v1",
        "model": "bench/model",
        "apiKey": "bench",
        "contextWindow": 128_000,
    },
}


@dataclass
class Setup:
    root: Path
    profile: Path
    project: Path
    empty: Path
    big_jsonl: Path

    @property
    def db(self) -> Path:
        return self.profile / DB_NAME


def prepare(root: Path) -> Setup:
    """A profile with the two sessions, their project, and an empty project.

    seri-lsp's modules are byte-compiled first, as installing the package does (the
    baseline's pygls and lsprotocol were, by pip): a start that compiled its sources
    (PYTHONDONTWRITEBYTECODE, a fresh checkout) would time the compiler.
    """
    compileall.compile_dir(Path(seri_lsp.__file__).parent, quiet=1)
    profile, project, empty = root / "profile", root / "project", root / "empty"
    for folder in (profile, project, empty):
        folder.mkdir(parents=True, exist_ok=True)
    legacy = profile / "sessions"
    big = write_legacy_file(legacy / f"{BIG_ID}.jsonl", BIG_ID, project, BIG)
    write_legacy_file(legacy / f"{SMALL_ID}.jsonl", SMALL_ID, project, SMALL)
    db = Database.open(profile / DB_NAME)
    try:
        store = SessionStore(db)
        pending, _ = find_pending(profile, store)
        import_files(pending, store)
    finally:
        db.close()
    return Setup(root, profile, Path(os.path.realpath(project)), Path(os.path.realpath(empty)), big)


def server_env() -> dict[str, str]:
    """This environment without the developer's own seri or provider settings."""
    return {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("SERI_") and key != "OPENROUTER_API_KEY"
    }


def seri(setup: Setup, workspace: Path, options: dict[str, Any] | None = None) -> LspProcess:
    """A started and initialized seri-lsp process."""
    command = [sys.executable, "-m", "seri_lsp", "--profile-root", str(setup.profile)]
    server = LspProcess(command, server_env())
    server.initialize(workspace, {**OPTIONS, **(options or {})})
    return server


def bare(workspace: Path) -> LspProcess:
    server = LspProcess([sys.executable, str(BARE_SERVER)], server_env())
    server.initialize(workspace)
    return server


# --- start-up ------------------------------------------------------------------------


def start_up(setup: Setup, repetitions: int) -> Figure:
    """Process start to the first command answered, against a bare pygls server."""

    def ours() -> float:
        server = seri(setup, setup.empty)
        server.command("seri.session.list")
        took = time.perf_counter() - server.started
        server.close()
        return took

    def baseline() -> float:
        server = bare(setup.empty)
        server.command("bare.list")
        took = time.perf_counter() - server.started
        server.close()
        return took

    ours()  # the first start compiles nothing twice and warms the disk cache
    mine, theirs = interleaved(ours, baseline, repetitions)
    return ratio_figure(
        "server start to first command answered / a bare pygls server",
        mine,
        theirs,
        unit="s",
        limit=1.15,
    )


# --- resume and session.get ------------------------------------------------------------


def read_jsonl(path: Path) -> float:
    """The baseline for resume: read and json-decode every line of the history's JSONL."""
    started = time.perf_counter()
    with path.open("rb") as handle:
        records = [json.loads(line) for line in handle]
    assert len(records) == BIG + 1
    return time.perf_counter() - started


def raw_get(conn: sqlite3.Connection, session_id: str, limit: int | None) -> float:
    """The baseline for session.get: SELECT, decode the JSON columns, encode the list."""
    started = time.perf_counter()
    columns = "id, created_at, role, content, thinking, tool_calls, tool_call_id, kind, recap,"
    sql = f"SELECT {columns} is_error FROM messages WHERE session_id = ? ORDER BY seq"
    if limit is None:
        rows = conn.execute(sql, (session_id,)).fetchall()
    else:
        rows = conn.execute(sql + " DESC LIMIT ?", (session_id, limit)).fetchall()
        rows.reverse()
    messages = []
    for row in rows:
        message: dict[str, Any] = {
            "id": row[0],
            "createdAt": row[1],
            "role": row[2],
            "content": row[3],
        }
        if row[4]:
            message["thinking"] = row[4]
        if row[5]:
            message["tool_calls"] = json.loads(row[5])
        if row[6] is not None:
            message["tool_call_id"] = row[6]
        if row[7]:
            message["kind"] = row[7]
        if row[8]:
            message["recap"] = json.loads(row[8])
        if row[9]:
            message["isError"] = True
        messages.append(message)
    encoded = json.dumps({"messages": messages}).encode()
    assert encoded
    return time.perf_counter() - started


def history_figures(setup: Setup, repetitions: int) -> list[Figure]:
    """Resume (10,000 vs 100 messages, and vs the JSONL), session.get all and limit 100."""
    server = seri(setup, setup.project, {"resumeOnOpen": False})
    conn = sqlite3.connect(f"file:{setup.db}?mode=ro", uri=True)
    try:

        def resume(session_id: str, after: str) -> float:
            # A resume always switches sessions here (one already open costs nothing):
            # the other session is opened first, untimed.
            server.command("seri.session.resume", {"sessionId": after})
            return server.command("seri.session.resume", {"sessionId": session_id})[1]

        def resume_big() -> float:
            return resume(BIG_ID, SMALL_ID)

        def resume_small() -> float:
            return resume(SMALL_ID, BIG_ID)

        # Two loops: reading the JSONL (in this process) disturbs whatever is timed
        # right after it, so it is kept out of the comparison of the two resumes.
        resume_big(), resume_small()  # warm the caches
        big, small = interleaved(resume_big, resume_small, repetitions)
        big_again, jsonl = interleaved(resume_big, lambda: read_jsonl(setup.big_jsonl), repetitions)
        figures = [
            ratio_figure(
                f"seri.session.resume of a {BIG:,}-message session / of a {SMALL}-message one",
                big,
                small,
                unit="s",
                limit=1.5,
            ),
            ratio_figure(
                "the same / reading and json-decoding the JSONL of that history",
                big_again,
                jsonl,
                unit="s",
                limit=0.2,
            ),
        ]
        # As a client sees it: the session opened afresh (its history not loaded), then
        # one `seri.session.get`, timed from the request to the last byte of its answer.
        # Each timed read follows a resume of the other session and of this one
        # (untimed), so none is served from a history an earlier read loaded.
        for limit, name, target in (
            (100, "seri.session.get {limit: 100} of that session", 3.0),
            (None, f"seri.session.get of all {BIG:,} messages", 1.2),
        ):
            args = {} if limit is None else {"limit": limit}

            def ours(args: dict[str, Any] = args, expected: int = limit or BIG) -> float:
                resume(BIG_ID, SMALL_ID)
                result, took = server.command("seri.session.get", args)
                assert len(result["messages"]) == expected, len(result["messages"])
                return took

            def baseline(limit: int | None = limit) -> float:
                return raw_get(conn, BIG_ID, limit)

            reps = repetitions if limit is None else repetitions * 3
            mine, theirs = interleaved(ours, baseline, reps)
            what = "raw SELECT + decode + JSON encode of " + (
                "them" if limit is None else f"its newest {limit}"
            )
            figures.append(ratio_figure(f"{name} / {what}", mine, theirs, unit="s", limit=target))
        return figures
    finally:
        conn.close()
        server.close()


# --- memory ------------------------------------------------------------------------------


def memory(setup: Setup, repetitions: int) -> list[Figure]:
    """Peak resident memory after resuming the big session and reading it, against bare pygls.

    The figure: what the editors do. `seri.session.resume` of the 10,000-message
    session, then `seri.session.get {limit: 200}` (the newest page), then each earlier
    page on demand (`{limit: 200, before: <its oldest id>}`) back to the first message,
    all 10,000 read; the server's peak resident memory (VmHWM) then, against a bare
    pygls server's after its first answer. For comparison, not a target: one
    `seri.session.get` of all 10,000 at once (what the issue measured before paging
    existed), which loads the history into the server.
    """
    whole, paged, theirs = [], [], []
    for _ in range(repetitions):
        server = seri(setup, setup.project, {"resumeOnOpen": False})
        server.command("seri.session.resume", {"sessionId": BIG_ID})
        args: dict[str, Any] = {"limit": 200}
        read = 0
        while True:
            page, _ = server.command("seri.session.get", args)
            read += len(page["messages"])
            if not page["hasMore"]:
                break
            args = {"limit": 200, "before": page["messages"][0]["id"]}
        assert read == BIG, read
        paged.append(server.peak_rss_kib() / 1024)
        server.close()
        server = bare(setup.project)
        server.command("bare.list")
        theirs.append(server.peak_rss_kib() / 1024)
        server.close()
        server = seri(setup, setup.project, {"resumeOnOpen": False})
        server.command("seri.session.resume", {"sessionId": BIG_ID})
        server.command("seri.session.get")
        whole.append(server.peak_rss_kib() / 1024)
        server.close()
    name = f"peak memory after resuming and reading {BIG:,} messages"
    return [
        ratio_figure(
            f"{name} (newest page of 200, then earlier pages on demand, as the editors"
            " read) / bare pygls",
            paged,
            theirs,
            unit="MiB",
            limit=1.5,
        ),
        ratio_figure(
            f"{name} in one seri.session.get of all / bare pygls",
            whole,
            theirs,
            unit="MiB",
            limit=1.5,
        ),
    ]
