"""The workspace boundary: which paths the tools may touch.

Paths given by the model are relative to the first workspace folder (absolute paths are
accepted when they lie inside a workspace folder). Anything that leads outside every
workspace folder is denied with a reason the model and the user can read: `..`
segments, absolute paths elsewhere, and symbolic links whose target lies outside.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from seri_lsp.limits import clean_text, lone_surrogate


class PathDenied(Exception):
    """A path lies outside the workspace; the message is the reason."""


@dataclass(frozen=True)
class WorkspacePath:
    """A path inside the workspace: where it really is, and how to show it."""

    real: Path
    display: str


class Workspace:
    """The folders the tools may read and write."""

    def __init__(self, roots: list[Path]) -> None:
        self.set_roots(roots)

    def set_roots(self, roots: list[Path], *, real: bool = False) -> None:
        """Change the workspace folders (the editor added or removed one).

        `real`: the roots are real paths already (their links followed off the event
        loop); otherwise their links are followed here, which reads the disk.
        """
        absolute = [Path(os.path.abspath(root)) for root in roots]
        real_roots = absolute if real else [Path(os.path.realpath(root)) for root in absolute]
        self.roots, self._real_roots = absolute, real_roots

    @property
    def root(self) -> Path | None:
        """The first workspace folder, against which relative paths resolve."""
        return self.roots[0] if self.roots else None

    def resolve(self, raw: object) -> WorkspacePath:
        """Check a model-supplied path and return where it leads; PathDenied if outside.

        Symbolic links are followed (`os.path.realpath` reads the disk, and a hung
        network mount blocks it): call this on a tool thread, never on the event loop.
        """
        lexical, home = self._lexical(raw)
        real = Path(os.path.realpath(lexical))
        if _containing(real, self._real_roots) is None:
            raise PathDenied(
                f"{raw!r} leads outside the workspace through a symbolic link (to {real})"
            )
        return WorkspacePath(real=real, display=self._display(lexical, home))

    def locate(self, raw: object) -> Path | None:
        """Where a model-supplied path points, read as written (no link followed, nothing
        read from disk, so safe on the event loop); None when it is outside. For showing
        where a tool acts, never for touching the file (that is `resolve`'s)."""
        try:
            return self._lexical(raw)[0]
        except PathDenied:
            return None

    def normalize(self, raw: str) -> str | None:
        """A model-supplied path as the session's path lists show it (None: outside).
        Read as written, like `locate`."""
        try:
            lexical, home = self._lexical(raw)
        except PathDenied:
            return None
        return self._display(lexical, home)

    def _lexical(self, raw: object) -> tuple[Path, Path]:
        """The absolute, normalised path `raw` names and the workspace folder it lies in,
        from the text alone; PathDenied when it is no valid path or lies outside."""
        if not isinstance(raw, str) or not raw.strip():
            raise PathDenied("a path is required")
        if "\x00" in raw or lone_surrogate(raw) is not None:
            raise PathDenied(f"{clean_text(raw)!r} is not a valid path (it is not valid text)")
        if self.root is None:
            raise PathDenied("no workspace folder is open, so no file can be touched")
        absolute = os.path.isabs(raw)
        lexical = Path(os.path.normpath(raw if absolute else os.path.join(self.root, raw)))
        home = _containing(lexical, self.roots)
        if home is None:
            kind = "absolute path" if absolute else "path"
            raise PathDenied(
                f"the {kind} {raw!r} is outside the workspace ({self._describe_roots()})"
            )
        return lexical, home

    def contains(self, path: Path) -> bool:
        """Whether `path`, with every symbolic link followed, lies inside the workspace."""
        return _containing(Path(os.path.realpath(path)), self._real_roots) is not None

    def real_root_of(self, path: Path) -> Path | None:
        """The workspace folder (its real path) that a real path lies in, if any."""
        return _containing(path, self._real_roots)

    def relative(self, path: Path) -> str:
        """How a real path inside the workspace is shown (relative, with / separators)."""
        home = _containing(path, self._real_roots) or _containing(path, self.roots)
        if home is None:
            return str(path)
        return self._display(path, home)

    def _display(self, path: Path, home: Path) -> str:
        relative = PurePosixPath(*path.relative_to(home).parts).as_posix()
        if home not in (self.roots[0], self._real_roots[0]):
            relative = f"{home.name}/{relative}" if relative != "." else home.name
        return relative

    def _describe_roots(self) -> str:
        return ", ".join(str(root) for root in self.roots)


def _containing(path: Path, roots: list[Path]) -> Path | None:
    # Both sides are normalised and absolute, so comparing their text is enough (and
    # much cheaper than walking `path.parents`).
    text = str(path)
    for root in roots:
        prefix = str(root)
        if text == prefix or text.startswith(prefix.rstrip(os.sep) + os.sep):
            return root
    return None


class FileChanges:
    """Told about each change the write tools make to a file (the task's checkpoint).

    `before` comes once the write is allowed and just before it happens, with the text
    the tool found (None: the file does not exist yet); `after` comes once the write
    succeeded, with the file's whole new text. This one ignores both.
    """

    async def before(self, target: WorkspacePath, current: str | None) -> None:
        """A write to `target` is about to happen."""

    async def after(self, target: WorkspacePath, text: str) -> None:
        """`target` now holds `text` (in the editor's buffer when open, else on disk)."""
