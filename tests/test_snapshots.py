"""What a `run` command changed: the shadow-git snapshot, recording it in the task's
checkpoint, and rewinding it with the write tools' conflict rule (real files, real git)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from seri_lsp.agent.checkpoints import TaskCheckpoint
from seri_lsp.agent.disk import ToolThreads
from seri_lsp.agent.rewind import Rewinder, file_plans
from seri_lsp.agent.snapshots import CommandChanges, Snapshots, describe, record_command
from seri_lsp.agent.workspace import Workspace
from seri_lsp.host import Host
from seri_lsp.store.checkpoints import CheckpointStore
from seri_lsp.store.database import Database
from seri_lsp.store.sessions import SessionStore
from seri_lsp.store.worker import Worker

GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=GIT_ENV, check=True, capture_output=True)


def tree_digest(folder: Path) -> dict[str, str]:
    """Every file under `folder` with its content's hash (to see it was left alone)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            found[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "kept.txt").write_text("same\n")
    (root / "changed.txt").write_text("before\n")
    (root / "deleted.bin").write_bytes(b"\xff\xfe\x00binary")
    (root / "latin1.txt").write_bytes("café\n".encode("latin-1"))
    (root / "src").mkdir()
    (root / "src" / "gone.py").write_text("x = 1\n")
    (root / "build").mkdir()
    (root / "build" / "out.o").write_bytes(b"old")
    (root / "link").symlink_to("kept.txt")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start")
    nested = root / "vendor"
    nested.mkdir()
    (nested / "lib.c").write_text("int x;\n")
    git(nested, "init", "-q")
    return root


async def test_a_command_s_created_changed_and_deleted_files_with_their_content_before(
    tmp_path: Path, workspace: Path
) -> None:
    user_git = tree_digest(workspace / ".git")
    snapshots = Snapshots(tmp_path / "profile" / "snapshots")
    snapshot = await snapshots.before(workspace)
    assert snapshot.note is None and snapshot.tree is not None

    (workspace / "changed.txt").write_text("after\n")
    (workspace / "deleted.bin").unlink()
    (workspace / "latin1.txt").write_bytes("naïve\n".encode("latin-1"))
    (workspace / "src" / "gone.py").unlink()
    (workspace / "src" / "gone.py").parent.rmdir()
    (workspace / "new.bin").write_bytes(b"\x00\x01\x02")
    (workspace / "build" / "out.o").write_bytes(b"new")  # ignored
    (workspace / "run.log").write_text("ignored\n")  # ignored
    (workspace / "vendor" / "lib.c").write_text("int y;\n")  # a nested repository
    (workspace / "link").unlink()
    (workspace / "link").symlink_to("changed.txt")  # a symbolic link: left out

    changes = await snapshots.after(snapshot, Workspace([workspace]))
    assert changes.known and changes.note is None
    got = {f.display: (f.before, f.after) for f in changes.files}
    assert got == {
        "changed.txt": (b"before\n", b"after\n"),
        "deleted.bin": (b"\xff\xfe\x00binary", None),
        "latin1.txt": ("café\n".encode("latin-1"), "naïve\n".encode("latin-1")),
        "new.bin": (None, b"\x00\x01\x02"),
        "src/gone.py": (b"x = 1\n", None),
    }
    assert all(f.real == workspace.resolve() / f.display for f in changes.files)
    assert describe(changes) == "\n".join(
        [
            "Files changed by the command (5):",
            "  changed: changed.txt",
            "  deleted: deleted.bin",
            "  changed: latin1.txt",
            "  created: new.bin",
            "  deleted: src/gone.py",
        ]
    )
    # The user's repository is untouched (nothing added to its index or objects).
    assert tree_digest(workspace / ".git") == user_git
    assert not (workspace / "vendor" / ".git" / "index").exists()


async def test_a_command_that_changes_nothing_reports_nothing(
    tmp_path: Path, workspace: Path
) -> None:
    snapshots = Snapshots(tmp_path / "snapshots")
    for _ in range(2):  # the second time from the shadow repository already there
        snapshot = await snapshots.before(workspace)
        changes = await snapshots.after(snapshot, Workspace([workspace]))
        assert changes == CommandChanges() and describe(changes) is None


async def test_a_failing_snapshot_degrades_to_changes_unknown(
    tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    snapshot = await Snapshots(blocked / "snapshots").before(workspace)
    assert snapshot.tree is None and snapshot.note is not None
    assert snapshot.note.startswith("Which files the command changed is unknown")
    changes = await Snapshots(blocked).after(snapshot, Workspace([workspace]))
    assert not changes.known and changes.note == snapshot.note and changes.files == ()
    assert describe(changes) == snapshot.note

    snapshots = Snapshots(tmp_path / "locked")
    first = await snapshots.before(workspace)
    assert first.git_dir is not None
    (first.git_dir / "index.lock").write_text("")  # another process holds the index
    (workspace / "kept.txt").write_text("changed\n")
    locked = await snapshots.after(first, Workspace([workspace]))
    assert not locked.known and "index.lock" in (locked.note or "")

    slow = await Snapshots(tmp_path / "s", timeout=0.000001).before(workspace)
    assert slow.tree is None and "took over" in (slow.note or "")

    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    missing = await Snapshots(tmp_path / "t").before(workspace)
    assert missing.tree is None and "git is not installed" in (missing.note or "")


class _Disk(Host):
    """A face that serves no files: a rewind reads and writes the disk."""


async def test_rewind_restores_a_command_s_changes_and_leaves_conflicts_alone(
    tmp_path: Path, workspace: Path
) -> None:
    db = Database.open(tmp_path / "seri.db")
    io, threads = Worker(), ToolThreads()
    try:
        sessions, store = SessionStore(db), CheckpointStore(db)
        session_id = (await io(sessions.create, str(workspace))).id
        checkpoint = await io(store.take, session_id, "run the build")
        task = TaskCheckpoint(checkpoint, store, io, _Disk())
        snapshots = Snapshots(tmp_path / "snapshots")
        snapshot = await snapshots.before(workspace)

        (workspace / "changed.txt").write_text("after\n")
        (workspace / "deleted.bin").unlink()
        (workspace / "new.txt").write_text("made\n")
        (workspace / "latin1.txt").write_bytes(b"\x00\xff")
        changes = await snapshots.after(snapshot, Workspace([workspace]))
        modified = await record_command(task, changes)
        assert sorted(modified) == ["changed.txt", "deleted.bin", "latin1.txt", "new.txt"]
        assert sorted(task.files) == sorted(modified)

        (workspace / "latin1.txt").write_bytes(b"changed by the user since")
        rewinder = Rewinder(
            store=store,
            sessions=cast(Any, None),
            tasks=cast(Any, SimpleNamespace(threads=threads)),
            workspace=Workspace([workspace]),
            host=_Disk(),
            io=io,
        )
        data = await io(store.session, session_id)
        plans = file_plans(list(data.checkpoints.values()))
        restored: list[str] = []
        conflicts: list[str] = []
        failed: list[dict[str, str]] = []
        await rewinder._restore_files(
            plans, [True] * len(plans), False, restored, conflicts, failed, {}
        )
        assert failed == []
        assert conflicts == ["latin1.txt"]
        assert sorted(restored) == ["changed.txt", "deleted.bin", "new.txt"]
        assert (workspace / "changed.txt").read_text() == "before\n"
        assert (workspace / "deleted.bin").read_bytes() == b"\xff\xfe\x00binary"
        assert not (workspace / "new.txt").exists()
        assert (workspace / "latin1.txt").read_bytes() == b"changed by the user since"

        await rewinder._restore_files(plans, [True] * len(plans), True, [], [], failed, {})
        assert (workspace / "latin1.txt").read_bytes() == "café\n".encode("latin-1")
    finally:
        threads.shutdown()
        io.shutdown()
        db.close()


async def test_a_file_a_tool_edited_before_the_command_goes_back_to_before_the_edit(
    tmp_path: Path, workspace: Path
) -> None:
    db = Database.open(tmp_path / "seri.db")
    io = Worker()
    try:
        sessions, store = SessionStore(db), CheckpointStore(db)
        session_id = (await io(sessions.create, str(workspace))).id
        task = TaskCheckpoint(await io(store.take, session_id, "p"), store, io, _Disk())
        target = Workspace([workspace]).resolve("changed.txt")
        await task.before(target, "before\n")  # the edit tool's change
        (workspace / "changed.txt").write_text("edited\n")
        await task.after(target, "edited\n")
        snapshots = Snapshots(tmp_path / "snapshots")
        snapshot = await snapshots.before(workspace)
        (workspace / "changed.txt").write_text("formatted\n")  # then a command's
        assert await record_command(task, await snapshots.after(snapshot, Workspace([workspace])))
        [change] = (await io(store.session, session_id)).checkpoints[1].files
        blobs = await io(store.blobs, [change.before, change.after])
        assert blobs[change.before] == b"before\n"
        assert blobs[change.after] == b"formatted\n"
    finally:
        io.shutdown()
        db.close()


async def test_files_the_user_s_info_exclude_ignores_are_not_snapshotted(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / ".git" / "info").mkdir(exist_ok=True)
    (workspace / ".git" / "info" / "exclude").write_text("scratch/\n*.tmp\n")
    snapshots = Snapshots(tmp_path / "snapshots")
    snapshot = await snapshots.before(workspace)
    (workspace / "scratch").mkdir()
    (workspace / "scratch" / "data.csv").write_text("1,2\n")
    (workspace / "notes.tmp").write_text("x\n")
    (workspace / "changed.txt").write_text("after\n")
    changes = await snapshots.after(snapshot, Workspace([workspace]))
    assert changes.paths == ("changed.txt",)


def loose_objects(git_dir: Path) -> int:
    return sum(
        1
        for folder in (git_dir / "objects").iterdir()
        if len(folder.name) == 2
        for _ in folder.iterdir()
    )


async def test_the_first_snapshot_of_a_run_prunes_what_no_snapshot_needs(
    tmp_path: Path, workspace: Path
) -> None:
    home = tmp_path / "snapshots"
    first = Snapshots(home)
    for n in range(5):  # each version of the file is an object nothing needs later
        snapshot = await first.before(workspace)
        (workspace / "changed.txt").write_text(f"version {n}\n" * 1000)
        await first.after(snapshot, Workspace([workspace]))
    await first.settled()
    git_dir = first.git_dir(workspace.resolve())
    piled = loose_objects(git_dir)

    # The next run (objects of any age expire in the test): the index's objects stay,
    # so the next snapshot still compares against what the files are now.
    later = Snapshots(home, prune_expire="now")
    snapshot = await later.before(workspace)
    await later.settled()
    assert loose_objects(git_dir) < piled - 5
    (workspace / "changed.txt").write_text("last\n")
    changes = await later.after(snapshot, Workspace([workspace]))
    assert [(f.display, f.before, f.after) for f in changes.files] == [
        ("changed.txt", b"version 4\n" * 1000, b"last\n")
    ]
