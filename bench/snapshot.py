"""The snapshot before a `run` command (`seri_lsp/agent/snapshots.py`) against `git status`.

A generated workspace of 10,000 files in 100 folders, a git repository of its own with
everything committed, a `.gitignore` and 500 ignored build files. Ours: the snapshot
taken before a command that changes nothing (the shadow repository already made, as for
every command after a task's first). Baseline: `git status --porcelain` on the same
tree. Target: the snapshot adds at most 150 ms.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import time
from pathlib import Path

from bench.measure import Figure, interleaved
from seri_lsp.agent.snapshots import Snapshots

FILES = 10_000
LIMIT = 0.150  # seconds the snapshot may add


def make_workspace(root: Path) -> Path:
    workspace = root / "snapshot-workspace"
    for index in range(FILES):
        folder = workspace / f"pkg{index % 100:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"module_{index}.py").write_text(f"VALUE = {index}\n" * 20)
    (workspace / ".gitignore").write_text("build/\n*.pyc\n")
    build = workspace / "build"
    build.mkdir()
    for index in range(500):
        (build / f"out_{index}.o").write_bytes(os.urandom(256))
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "all"],
    ):
        subprocess.run(["git", *args], cwd=workspace, env=env, check=True)
    return workspace


def snapshot_figures(root: Path, repetitions: int) -> list[Figure]:
    workspace = make_workspace(root)
    snapshots = Snapshots(root / "snapshots")
    first = asyncio.run(snapshots.before(workspace))  # makes the shadow repository
    assert first.tree is not None, first.note

    def ours() -> float:
        began = time.perf_counter()
        snapshot = asyncio.run(snapshots.before(workspace))
        elapsed = time.perf_counter() - began
        assert snapshot.tree == first.tree, snapshot.note
        return elapsed

    def baseline() -> float:
        began = time.perf_counter()
        subprocess.run(
            ["git", "status", "--porcelain"], cwd=workspace, check=True, capture_output=True
        )
        return time.perf_counter() - began

    mine, theirs = interleaved(ours, baseline, repetitions)
    pairs = [a / b for a, b in zip(mine, theirs, strict=True)]
    median_ours, median_theirs = statistics.median(mine), statistics.median(theirs)
    return [
        Figure(
            "snapshot before a command (10,000 files)",
            median_ours,
            median_theirs,
            "s",
            f"adds <= {LIMIT * 1000:.0f} ms",
            median_ours <= LIMIT,
            (min(pairs), max(pairs)),
            len(mine),
        )
    ]
