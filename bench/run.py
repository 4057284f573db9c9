"""Print every performance figure as a ratio against its baseline, measured in this run.

    python -m bench            # the full run: under a minute on 2 cores
    python -m bench --quick    # fewer repetitions, for a quick look
    python bench/run.py        # the same as python -m bench

Each figure runs ours and its baseline alternately, the order swapped each repetition,
and reports the ratio of the medians with the spread of the per-repetition ratios (the
machine's noise). Ratios, not times, are what hold from one machine to another. The
figures and their baselines:

- connections: the TCP connections the scripted provider accepted during a task of 21
  model calls (20 file reads and an answer), from a fresh engine; then a later task's.
- tool turn: engine time per model call of that task, the provider's time left out,
  against the same turns done bare with the same httpx client, keeping the read and
  writes off the event loop as seri must (see `bench/engine.py`); and, with no target,
  httpx's own CPU time per streamed call. Then the same task by an engine that keeps no
  search index (as on a SQLite without FTS5), in wall time and, for comparison, in CPU
  time of the process.
- start-up: process start to the answer of the first command (`seri.session.list`, in
  a project without sessions, the profile's database already made) against a bare
  pygls server answering its one command (`bench/bare_server.py`).
- resume: `seri.session.resume` of a 10,000-message session against a 100-message one,
  and against reading and json-decoding the history's JSONL file.
- session.get: of the 10,000-message session, as a client sees it (request to the last
  byte of the answer), just after the session was opened: `{limit: 100}`, and all of
  it, against raw SELECT + decode + JSON encode of the same messages.
- import: legacy import of 31 files of 2,000 messages (31 MB) against raw json.loads +
  executemany (and an INSERT ... SELECT into the search index), as a throughput.
- memory: peak RSS of the server after resuming the 10,000-message session and reading
  it as the editors do (the newest page of 200, then each earlier page on demand, back
  to the first message) against a bare pygls server's after its first answer; and after
  one `seri.session.get` of all 10,000.
- search: `seri.session.search` round trip over 100,000 messages in 1,000 sessions
  against the raw FTS5 query of the same words (`bench/search.py`).
- cache: `bench/cache.py`, the share of a long task's input tokens a provider that caches
  as Anthropic does reads from its cache (200k and 24k windows), against the
  longest-common-prefix share, and the input cost against no cache.
- snapshot: `bench/snapshot.py`, the workspace snapshot before a `run` command that
  changes nothing, 10,000 files, against `git status` on the same tree (adds <= 150 ms).
- estimate: `bench/estimate.py`, the pre-call token estimate against re-counting.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import cache, engine, estimate, search, server, snapshot
from bench.measure import Figure, render

FULL = {
    "start": 31,
    "history": 15,
    "memory": 3,
    "turn": 41,
    "import": 11,
    "search": 31,
    "snapshot": 21,
}
QUICK = {"start": 5, "history": 3, "memory": 1, "turn": 3, "import": 3, "search": 5, "snapshot": 5}
FIGURES = [
    "turn",
    "start",
    "history",
    "import",
    "memory",
    "search",
    "cache",
    "estimate",
    "snapshot",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument(
        "--only",
        choices=FIGURES,
        action="append",
        help="run only these figures (repeatable)",
    )
    args = parser.parse_args(argv)
    reps = QUICK if args.quick else FULL
    wanted = set(args.only or FIGURES)
    figures: list[Figure] = []
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="seri-bench-") as folder:
        root = Path(folder)
        if wanted & {"start", "history", "memory"}:
            step("preparing a profile with a 10,000-message session")
            setup = server.prepare(root)
        if "turn" in wanted:
            step(f"tool turns ({reps['turn']} tasks of 21 model calls each side)")
            figures += engine.tool_turn_figures(root, reps["turn"])
        if "start" in wanted:
            step(f"start-up ({reps['start']} starts each side)")
            figures.append(server.start_up(setup, reps["start"]))
        if "history" in wanted:
            step(f"resume and seri.session.get ({reps['history']} rounds)")
            figures += server.history_figures(setup, reps["history"])
        if "import" in wanted:
            step(f"legacy import ({reps['import']} imports of 31 MB each side)")
            figures.append(engine.import_figure(root, reps["import"]))
        if "memory" in wanted:
            step(f"peak memory ({reps['memory']} processes each side)")
            figures += server.memory(setup, reps["memory"])
        if "search" in wanted:
            step(f"search over 100,000 messages ({reps['search']} rounds of 6 queries)")
            figures += search.search_figures(root, reps["search"])
        if "snapshot" in wanted:
            step(f"snapshot before a command, 10,000 files ({reps['snapshot']} rounds)")
            figures += snapshot.snapshot_figures(root, reps["snapshot"])
        if "cache" in wanted:
            step("prompt cache (a 60-tool-turn task with a 200k and a 24k window)")
            figures += cache.cache_figures(root)
    print()
    print(render(figures))
    print("\nmedians of interleaved repetitions; spread: lowest-highest per-repetition ratio")
    if "estimate" in wanted:
        print("\npre-call token estimate (bench/estimate.py): running totals vs re-counting")
        print(estimate.render(estimate.rows()))
    print(f"\n{time.perf_counter() - began:.0f} s in all")
    return 0 if all(figure.met is not False for figure in figures) else 1


def step(text: str) -> None:
    print(f"... {text}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
