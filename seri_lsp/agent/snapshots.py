"""What a command changed: a snapshot of the workspace before it, compared after it.

Before each `run` command, `Snapshots.before` records the workspace root's files that
`.gitignore` does not ignore; after it, `Snapshots.after` says which files the command
created, changed or deleted, with each one's content before (None: it was created) and
after (None: it was deleted). `record_command` puts those into the task's checkpoint
(`FileChanges.command_changed`), so `/rewind` restores them like the write tools' edits,
with the same conflict rule, and returns their display paths for `ToolOutcome.modified`.

The `run` tool's part (one `Snapshots(<profile root>/snapshots)` per engine):

    snapshot = await snapshots.before(root)          # root: the workspace folder of cwd
    ...run the command...
    result = await snapshots.after(snapshot, workspace)
    modified = await record_command(tools.changes, result)   # -> ToolOutcome.modified
    tail = describe(result)                          # lines for the result, or None

How: a shadow git repository per workspace root under the profile root
(`<profile>/snapshots/<sha of the root>.git`), driven through the `git` binary with
`GIT_DIR` / `GIT_WORK_TREE`, as Cline does. `git add -A` + `git write-tree` is
incremental (the index caches each file's stat, so an unchanged tree is re-read only as
`stat` calls, about the cost of `git status`); the comparison is `git diff-tree` of the
two trees. We chose it over our own content-addressed store because git already does
the `.gitignore` rules (nested ones, negations) exactly and keeps the stat cache; the
bench row `snapshot` measures it against `git status` (docs/performance.md).

- The user's `.git` is never written, and only its `info/exclude` is read (its
  patterns are honoured, as `git status` does): git always skips a work tree's `.git`,
  and our `GIT_DIR` lies in the profile. A nested repository (a folder with its own
  `.git`) is kept as a gitlink by git, so its files are not snapshotted; such entries,
  and symbolic links (their target text is not a file to put back), are left out.
- Isolated from the user's git setup: `GIT_CONFIG_GLOBAL=/dev/null`,
  `GIT_CONFIG_NOSYSTEM=1`, no hooks (`core.hooksPath` empty dir), no autocrlf or
  filters (content is stored as bytes, binary and non-UTF-8 included).
- A file larger than `MAX_FILE_BYTES` is still compared but its content not kept for
  rewind (it is listed, with a note); beyond `MAX_CHANGED` changed files the rest are
  listed without content.
- Every git call runs off the event loop with a time limit; a failure (no git binary, a
  huge tree, a timeout, a broken shadow repository) degrades to "changes unknown" with a
  note (`Snapshot.note` / `CommandChanges.note`) and never fails the command.
- Two commands running at once in one workspace (parallel subagents) each see the
  other's changes as their own; both are recorded, so a rewind still restores them.
- Objects pile up as files change (each snapshot stores the changed files' content;
  `gc.auto` is 0 so no command waits on a collection). The first snapshot of a
  workspace in each language-server run prunes, in the background, what no snapshot
  can still need: objects the index does not hold that are older than `PRUNE_EXPIRE`
  (a command's tree before it ran is needed only until it ends).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from seri_lsp.agent.workspace import FileChanges, Workspace, WorkspacePath
from seri_lsp.store.messages import COMMAND_CHANGES_HEADING

log = logging.getLogger(__name__)

# The folder of the profile that holds the shadow repositories.
SNAPSHOTS_NAME = "snapshots"
# Seconds one git call may take before the snapshot is given up.
GIT_TIMEOUT = 20.0
# How old an object no index holds must be before a prune drops it: far longer than any
# command runs (another seri process may be running one in the same workspace).
PRUNE_EXPIRE = "2.hours.ago"
# A changed file bigger than this is listed but its content not kept for rewind.
MAX_FILE_BYTES = 8 * 1024 * 1024
# Changed files whose content is kept, per command.
MAX_CHANGED = 2000
_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_REGULAR = ("100644", "100755")


class SnapshotFailed(Exception):
    """A git call failed; the message says why (for the note)."""


@dataclass(frozen=True)
class Snapshot:
    """The workspace as it was before a command (tree None: unknown, see note)."""

    root: Path
    git_dir: Path | None
    tree: str | None
    note: str | None = None


@dataclass(frozen=True)
class ChangedFile:
    """One file a command created, changed or deleted."""

    real: Path
    display: str
    before: bytes | None  # None: the command created it
    after: bytes | None  # None: the command deleted it
    kept: bool = True  # False: too large (or too many): listed, not restorable


@dataclass(frozen=True)
class CommandChanges:
    """What a command changed; `known` False when the snapshot failed (see `note`)."""

    files: tuple[ChangedFile, ...] = ()
    known: bool = True
    note: str | None = None

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(f.display for f in self.files)


@dataclass
class Snapshots:
    """Shadow repositories under `home` (`<profile>/snapshots`), one per workspace root."""

    home: Path
    timeout: float = GIT_TIMEOUT
    prune_expire: str = PRUNE_EXPIRE
    _locks: dict[Path, asyncio.Lock] = field(default_factory=dict)
    # Shadow repositories pruned in this run, and the prunes under way.
    _pruned: set[Path] = field(default_factory=set)
    _pruning: set[asyncio.Task[None]] = field(default_factory=set)

    async def before(self, root: Path) -> Snapshot:
        """Snapshot `root` before a command; never raises (a failure gives a note)."""
        try:
            root = await asyncio.to_thread(root.resolve)
            async with self._locks.setdefault(root, asyncio.Lock()):
                snapshot = await asyncio.to_thread(self._take, root)
        except Exception as exc:  # any failure: the command runs, its changes unknown
            return Snapshot(root, None, None, _unknown(exc))
        if snapshot.git_dir is not None and snapshot.git_dir not in self._pruned:
            self._pruned.add(snapshot.git_dir)
            task = asyncio.get_running_loop().create_task(self._prune(snapshot))
            self._pruning.add(task)
            task.add_done_callback(self._pruning.discard)
        return snapshot

    async def _prune(self, snapshot: Snapshot) -> None:
        """Drop the objects no snapshot can need any more (see the module's docstring);
        a failure only leaves them."""
        assert snapshot.git_dir is not None
        try:
            await asyncio.to_thread(
                self._git,
                snapshot.git_dir,
                snapshot.root,
                "prune",
                f"--expire={self.prune_expire}",
            )
        except Exception as exc:
            log.info("Pruning the snapshots of %s failed: %s", snapshot.root, exc)

    async def settled(self) -> None:
        """Wait for the prunes under way (tests, and a clean stop)."""
        if self._pruning:
            await asyncio.gather(*self._pruning, return_exceptions=True)

    async def after(self, snapshot: Snapshot, workspace: Workspace) -> CommandChanges:
        """What changed in `snapshot.root` since it was taken; never raises."""
        if snapshot.tree is None or snapshot.git_dir is None:
            return CommandChanges(known=False, note=snapshot.note)
        try:
            async with self._locks.setdefault(snapshot.root, asyncio.Lock()):
                return await asyncio.to_thread(self._compare, snapshot, workspace)
        except Exception as exc:  # any failure: the command's result says so
            return CommandChanges(known=False, note=_unknown(exc))

    # --- on a thread -------------------------------------------------------------------

    def git_dir(self, root: Path) -> Path:
        key = hashlib.sha256(os.fsencode(root)).hexdigest()[:24]
        return self.home / f"{key}.git"

    def _take(self, root: Path) -> Snapshot:
        if shutil.which("git") is None:
            raise SnapshotFailed("git is not installed")
        git_dir = self.git_dir(root)
        if not (git_dir / "HEAD").is_file():
            self._init(git_dir, root)
        return Snapshot(root, git_dir, self._tree(git_dir, root))

    def _init(self, git_dir: Path, root: Path) -> None:
        git_dir.mkdir(parents=True, exist_ok=True)
        self._git(git_dir, root, "init", "-q", "--bare", work_tree=False)
        hooks = git_dir / "no-hooks"
        hooks.mkdir(exist_ok=True)
        for key, value in (
            ("core.bare", "false"),
            ("core.autocrlf", "false"),
            ("core.safecrlf", "false"),
            ("core.symlinks", "true"),
            ("core.hooksPath", str(hooks)),
            ("core.fsmonitor", "false"),
            ("core.untrackedCache", "true"),
            ("gc.auto", "0"),
            ("core.bigFileThreshold", "1m"),
        ):
            self._git(git_dir, root, "config", key, value)
        (git_dir / "seri-root").write_text(str(root), encoding="utf-8")

    def _tree(self, git_dir: Path, root: Path) -> str:
        # --ignore-errors: an unreadable file is skipped, not the snapshot; anything
        # fatal (a locked index: another seri on this workspace) fails it. The user's
        # own `.git/info/exclude` counts as their `.gitignore` files do.
        exclude = root / ".git" / "info" / "exclude"
        also = ("-c", f"core.excludesFile={exclude}") if exclude.is_file() else ()
        self._git(git_dir, root, *also, "add", "-A", "--ignore-errors", ".", check=False)
        return self._git(git_dir, root, "write-tree").decode().strip() or _EMPTY_TREE

    def _compare(self, snapshot: Snapshot, workspace: Workspace) -> CommandChanges:
        assert snapshot.git_dir is not None and snapshot.tree is not None
        git_dir, root = snapshot.git_dir, snapshot.root
        now = self._tree(git_dir, root)
        if now == snapshot.tree:
            return CommandChanges()
        listing = self._git(
            git_dir, root, "diff-tree", "-r", "-z", "--no-renames", snapshot.tree, now
        )
        files: list[ChangedFile] = []
        skipped = 0
        for old_mode, new_mode, old_sha, new_sha, name in _diff_entries(listing):
            if not _is_file(old_mode) and not _is_file(new_mode):
                continue  # a symbolic link or a nested repository on both sides
            real = root / os.fsdecode(name)
            display = workspace.relative(real)
            if len(files) >= MAX_CHANGED:
                files.append(ChangedFile(real, display, None, None, kept=False))
                continue
            before = self._blob(git_dir, root, old_sha) if _is_file(old_mode) else None
            after = self._blob(git_dir, root, new_sha) if _is_file(new_mode) else None
            if before is _TOO_BIG or after is _TOO_BIG:
                skipped += 1
                files.append(ChangedFile(real, display, None, None, kept=False))
                continue
            files.append(ChangedFile(real, display, before, after))
        note = None
        if skipped or len(files) > MAX_CHANGED:
            note = (
                "Some changed files are too large (or too many) to be kept; a rewind "
                "does not restore them."
            )
        return CommandChanges(tuple(files), note=note)

    def _blob(self, git_dir: Path, root: Path, sha: str) -> bytes | None:
        size = int(self._git(git_dir, root, "cat-file", "-s", sha).strip() or 0)
        if size > MAX_FILE_BYTES:
            return _TOO_BIG
        return self._git(git_dir, root, "cat-file", "blob", sha)

    def _git(
        self, git_dir: Path, root: Path, *args: str, check: bool = True, work_tree: bool = True
    ) -> bytes:
        env = {
            **os.environ,
            "GIT_DIR": str(git_dir),
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "LC_ALL": "C",
        }
        if work_tree:
            env["GIT_WORK_TREE"] = str(root)
        for name in ("GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_CEILING_DIRECTORIES"):
            env.pop(name, None)
        try:
            done = subprocess.run(
                ["git", *args],
                cwd=root,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise SnapshotFailed(f"git {_verb(args)} took over {self.timeout:g} s") from exc
        except FileNotFoundError as exc:
            raise SnapshotFailed("git is not installed") from exc
        why = done.stderr.decode(errors="replace").strip().splitlines()
        if done.returncode != 0 and (check or any(line.startswith("fatal:") for line in why)):
            fatal = [line for line in why if line.startswith("fatal:")] or why[-1:]
            raise SnapshotFailed(
                f"git {_verb(args)} failed: {fatal[0] if fatal else done.returncode}"
            )
        return done.stdout


_TOO_BIG = b"\0seri: too big\0"


def _verb(args: tuple[str, ...]) -> str:
    """The git command of `args` (`add` in `-c core.excludesFile=... add -A`)."""
    return next((a for a in args if not a.startswith("-") and "=" not in a), "")


def _is_file(mode: bytes) -> bool:
    return mode.decode() in _REGULAR


def _diff_entries(listing: bytes) -> list[tuple[bytes, bytes, str, str, bytes]]:
    """`git diff-tree -r -z` output as (old mode, new mode, old sha, new sha, path)."""
    parts = listing.split(b"\0")
    entries = []
    for i in range(0, len(parts) - 1, 2):
        meta, name = parts[i], parts[i + 1]
        if not meta.startswith(b":"):
            continue
        old_mode, new_mode, old_sha, new_sha, _status = meta[1:].split(b" ")
        entries.append((old_mode, new_mode, old_sha.decode(), new_sha.decode(), name))
    return entries


def _unknown(exc: BaseException) -> str:
    return f"Which files the command changed is unknown: {str(exc).rstrip('.')}."


def describe(result: CommandChanges) -> str | None:
    """The lines the `run` tool's result ends with: what the command changed, or why that
    is unknown; None when it changed nothing."""
    if not result.known:
        return result.note
    if not result.files:
        return None
    lines = [f"{COMMAND_CHANGES_HEADING} ({len(result.files)}):"]
    for changed in result.files:
        kind = (
            "created"
            if changed.before is None
            else "deleted"
            if changed.after is None
            else "changed"
        )
        if not changed.kept:
            kind = "changed (too large to keep for rewind)"
        lines.append(f"  {kind}: {changed.display}")
    if result.note:
        lines.append(result.note)
    return "\n".join(lines)


async def record_command(changes: FileChanges, result: CommandChanges) -> tuple[str, ...]:
    """Put a command's changes into the task's checkpoint (so `/rewind` restores them);
    the display paths of the changed files, for `ToolOutcome.modified`."""
    for changed in result.files:
        if changed.kept:
            target = WorkspacePath(real=changed.real, display=changed.display)
            await changes.command_changed(target, changed.before, changed.after)
    return result.paths
