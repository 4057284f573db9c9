"""The workspace boundary: which paths the tools may touch.

Paths given by the model are relative to the first workspace folder (absolute paths are
accepted when they lie inside a workspace folder). Anything that leads outside every
workspace folder is denied with a reason the model and the user can read: `..`
segments, absolute paths elsewhere, and symbolic links whose target lies outside.

Paths are read and compared by the system's rules (`PathRules`): on Windows, drive
letters and `\\` or `/` separators, and on Windows and macOS (whose file systems ignore
case by default) `C:\\Proj\\src` lies inside `c:\\proj`.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path, PurePath, PurePosixPath
from types import ModuleType

from seri_lsp.limits import clean_text, lone_surrogate


class PathDenied(Exception):
    """A path lies outside the workspace; the message is the reason."""


@dataclass(frozen=True)
class PathRules:
    """How a system writes and compares paths: its `os.path` module (posixpath or ntpath),
    its path class, and whether its file systems ignore case."""

    module: ModuleType
    kind: type[PurePath]
    ignore_case: bool

    def key(self, text: str) -> str:
        """`text` as compared: one separator, and one case where case is ignored."""
        text = self.module.normcase(text)
        return text.lower() if self.ignore_case else text


HOST_RULES = PathRules(os.path, Path, sys.platform in ("win32", "darwin"))


@dataclass(frozen=True)
class WorkspacePath:
    """A path inside the workspace: where it really is, and how to show it."""

    real: Path
    display: str


class Workspace:
    """The folders the tools may read and write."""

    def __init__(
        self, roots: list[Path], *, rules: PathRules = HOST_RULES, real: bool = False
    ) -> None:
        self.rules = rules
        self.set_roots(roots, real=real)

    def set_roots(self, roots: list[Path], *, real: bool = False) -> None:
        """Change the workspace folders (the editor added or removed one).

        `real`: the roots are real paths already (their links followed off the event
        loop); otherwise their links are followed here, which reads the disk.
        """
        kind, module = self.rules.kind, self.rules.module
        absolute = [kind(module.abspath(root)) for root in roots]
        real_roots = absolute if real else [kind(os.path.realpath(root)) for root in absolute]
        # The rules' path class is Path on this host and a pure path of another platform's
        # flavour only in tests (PathRules.kind); the tools take them as Path.
        self.roots: list[Path] = absolute  # type: ignore[assignment]
        self._real_roots: list[Path] = real_roots  # type: ignore[assignment]

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
        if self._containing(real, self._real_roots) is None:
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
        module = self.rules.module
        absolute = module.isabs(raw)
        lexical = self.rules.kind(module.normpath(raw if absolute else module.join(self.root, raw)))
        home = self._containing(lexical, self.roots)
        if home is None:
            kind = "absolute path" if absolute else "path"
            raise PathDenied(
                f"the {kind} {raw!r} is outside the workspace ({self._describe_roots()})"
            )
        # A Path on this host (the rules' path class: see set_roots).
        return lexical, home  # type: ignore[return-value]

    def contains(self, path: Path) -> bool:
        """Whether `path`, with every symbolic link followed, lies inside the workspace."""
        return self._containing(Path(os.path.realpath(path)), self._real_roots) is not None

    def real_root_of(self, path: Path) -> Path | None:
        """The workspace folder (its real path) that a real path lies in, if any."""
        return self._containing(path, self._real_roots)

    def relative(self, path: Path) -> str:
        """How a real path inside the workspace is shown (relative, with / separators)."""
        home = self._containing(path, self._real_roots) or self._containing(path, self.roots)
        if home is None:
            return str(path)
        return self._display(path, home)

    def _display(self, path: PurePath, home: PurePath) -> str:
        # The parts below the folder (compared by the rules' case, so not relative_to).
        below = path.parts[len(home.parts) :]
        relative = PurePosixPath(*below).as_posix() if below else "."
        if home not in (self.roots[0], self._real_roots[0]):
            relative = f"{home.name}/{relative}" if relative != "." else home.name
        return relative

    def _describe_roots(self) -> str:
        return ", ".join(str(root) for root in self.roots)

    def _containing(self, path: PurePath, roots: list[Path]) -> Path | None:
        # Both sides are normalised and absolute, so comparing their text is enough (and
        # much cheaper than walking `path.parents`).
        key, sep = self.rules.key, self.rules.module.sep
        text = key(str(path))
        for root in roots:
            prefix = key(str(root))
            if text == prefix or text.startswith(prefix.rstrip(sep) + sep):
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

    async def command_changed(
        self, target: WorkspacePath, before: bytes | None, after: bytes | None
    ) -> None:
        """A command changed `target` on disk: its bytes before and now (None: absent)."""
