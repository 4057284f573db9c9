"""grep: searching the workspace within a time budget, as users expect grep to.

The walk skips `.git/` (and the other usual tool folders), whatever `.gitignore` files
ignore (nested ones too, each for its own folder, with negations, as git reads them;
plus `.git/info/exclude`), files that are not regular (FIFOs, devices, sockets), binary
files and files too big to be source. The pattern runs on the `regex` engine with a
timeout on every line, so a catastrophic pattern such as `(a|aa)+$` cannot stall the
search: the lines it chokes on are skipped and reported. The whole search stops at a
time budget, saying it was cut short. Compiling a pattern can cost as much as running
it (`regex` spells out counted repeats: `(?:a{3000}){3000}` takes seconds and gigabytes),
so a pattern too long, or whose repeat counts are too big, is refused before it is
compiled, and it is compiled on a tool thread.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pathspec
import regex

from seri_lsp.agent.disk import BINARY_SNIFF, Stop, read_upto, size_text
from seri_lsp.files import READ_FLAGS
from seri_lsp.waits import Wait

MAX_GREP_MATCHES = 200
MAX_GREP_FILE_BYTES = 2 * 1024 * 1024
MAX_IGNORE_FILE_BYTES = 1024 * 1024
MAX_LINE_SHOWN = 300
# Seconds one grep call may take, and one line's match at most.
GREP_TIME_BUDGET = Wait("GREP_TIME_BUDGET", 5.0)
GREP_LINE_TIMEOUT = Wait("GREP_LINE_TIMEOUT", 1.0)
SKIPPED_DIRS = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv"})
# What a pattern may ask of the compiler: its length, one repeat count ({n}, {n,}, {n,m}),
# and its size with the counted repeats spelled out (nested counts multiply).
MAX_PATTERN_CHARS = 1000
MAX_REPEAT_COUNT = 1000
MAX_PATTERN_SIZE = 100_000

_COUNTED = regex.compile(r"\{(\d*)(?:,(\d*))?\}")


class PatternError(Exception):
    """The pattern is not a valid regular expression, or too costly to compile."""


def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """Compile a grep pattern (Python syntax); PatternError with the reason if it is
    invalid or too costly. Call it on a tool thread: compiling can take a while."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(
            f"the pattern is {len(pattern)} characters long; the limit is "
            f"{MAX_PATTERN_CHARS}. Search for a shorter pattern."
        )
    _check_repeats(pattern)
    try:
        return regex.compile(pattern)
    except (regex.error, ValueError, OverflowError) as exc:
        raise PatternError(f"the pattern is not a valid regular expression: {exc}.") from exc
    except (MemoryError, RecursionError):
        raise PatternError(
            "the pattern is too complex to compile; simplify it (fewer nested groups and repeats)."
        ) from None


def _check_repeats(pattern: str) -> None:
    """PatternError if a repeat count is above MAX_REPEAT_COUNT, or the pattern with its
    counted repeats spelled out is bigger than MAX_PATTERN_SIZE.

    Every count anywhere in the text is checked (in a class or a comment too: refusing
    a literal "{5000}" is cheap, missing a real one is not). The size is a rough reading
    of the syntax that errs on the side of refusing: every atom (a character, an escape,
    a class) counts 1, a group the sum of its parts, and a count multiplies what it
    repeats by its largest number."""
    for repeat in _COUNTED.finditer(pattern):
        count = _count(repeat)
        if count is not None and count > MAX_REPEAT_COUNT:
            raise PatternError(
                f"the pattern repeats {count} times ({repeat.group()}); the limit is "
                f"{MAX_REPEAT_COUNT} for one repeat count."
            )
    sizes = [0]  # the size so far of each open group, outermost first
    last = 0  # the size of the atom a count would repeat
    i = 0
    while i < len(pattern):
        char = pattern[i]
        counted = _COUNTED.match(pattern, i) if char == "{" else None
        count = _count(counted) if counted is not None else None
        if counted is not None and count is not None:
            sizes[-1] += last * (max(count, 1) - 1)
            last *= max(count, 1)
            i = counted.end()
        elif pattern.startswith("(?#", i):  # a comment, to its first ")"
            close = pattern.find(")", i)
            i = close + 1 if close != -1 else len(pattern)
            last = 0
        elif char == "(":
            sizes.append(0)
            last, i = 0, i + 1
        elif char == ")" and len(sizes) > 1:
            last = sizes.pop()
            sizes[-1] += last
            i += 1
        else:
            i = _atom_end(pattern, i)
            sizes[-1] += 1
            last = 1
        if sum(sizes) > MAX_PATTERN_SIZE:
            raise PatternError(
                f"the pattern's repeats multiply to more than {MAX_PATTERN_SIZE} characters "
                "(nested counts such as (?:a{1000}){1000}); use smaller counts."
            )


def _count(counted: regex.Match[str]) -> int | None:
    """The largest number of a count such as {3,5}; None for "{,}", a literal."""
    numbers = [int(n) for n in counted.groups() if n]
    return max(numbers) if numbers else None


def _atom_end(pattern: str, i: int) -> int:
    """Where the character, escape or class that starts at `i` ends."""
    if pattern[i] == "\\":
        end = i + 2
        if pattern[i + 1 : end] in ("p", "P", "N") and pattern.startswith("{", end):
            # \p{L}, \N{name}: the braces are the escape's, no count
            close = pattern.find("}", end)
            end = close + 1 if close != -1 else end
        return end
    if pattern[i] != "[":
        return i + 1
    j = i + 1
    if pattern.startswith("^", j):
        j += 1
    if pattern.startswith("]", j):  # a "]" first is a member, not the end
        j += 1
    while j < len(pattern) and pattern[j] != "]":
        j += 2 if pattern[j] == "\\" else 1
    if "\n" in pattern[i:j]:
        # No line holds a newline, so this "[" is text: in a verbose pattern's comment
        # (# to the end of the line) a class reading would hide what follows it.
        return i + 1
    return j + 1


@dataclass
class GrepScope:
    """Where grep looks and how it shows paths."""

    target: Path  # a real path: a file, or a folder to walk
    root: Path  # the real workspace folder the target lies in
    contains: Callable[[Path], bool]  # whether a path, links followed, is in the workspace
    relative: Callable[[Path], str]  # how a real path is shown
    open_documents: dict[Path, str] = field(default_factory=dict)  # the editor's buffers


@dataclass
class _Tally:
    line_timeout: float  # (seconds one line's match may take)
    matches: list[str] = field(default_factory=list)
    searched: int = 0
    slow_lines: int = 0
    not_regular: int = 0
    too_big: int = 0
    full: bool = False
    out_of_time: bool = False


def grep(pattern: regex.Pattern[str], scope: GrepScope, *, stop: Stop) -> str:
    """Search the scope's files line by line; answers `path:line: text` lines and notes."""
    tally = _Tally(line_timeout=GREP_LINE_TIMEOUT.seconds())
    ignores = _Ignores(scope.root, stop)
    try:
        for path in _walk(scope.target, ignores, stop):
            if not scope.contains(path):
                continue  # a symbolic link that leads out of the workspace
            text = scope.open_documents.get(path)
            if text is None:
                text = _read_text(path, tally)
            if text is None:
                continue
            tally.searched += 1
            _search_text(pattern, text, scope.relative(path), tally, stop)
            if tally.full or tally.out_of_time:
                break
    except _OutOfTime:
        tally.out_of_time = True
    return _report(tally)


def _search_text(
    pattern: regex.Pattern[str], text: str, display: str, tally: _Tally, stop: Stop
) -> None:
    for number, line in enumerate(text.splitlines(), start=1):
        stop.check()
        remaining = stop.remaining()
        if remaining is not None and remaining <= 0:
            tally.out_of_time = True
            return
        limit = tally.line_timeout
        timeout = limit if remaining is None else min(limit, remaining)
        try:
            found = pattern.search(line, timeout=timeout)
        except TimeoutError:
            if timeout < limit:  # the search's budget ran out, not the line's
                tally.out_of_time = True
                return
            tally.slow_lines += 1
            continue
        if found:
            tally.matches.append(f"{display}:{number}: {line[:MAX_LINE_SHOWN]}")
            if len(tally.matches) >= MAX_GREP_MATCHES:
                tally.full = True
                return


def _report(tally: _Tally) -> str:
    lines = list(tally.matches) or ["No matches."]
    if tally.full:
        lines.append(f"[stopped after {MAX_GREP_MATCHES} matches; narrow the search]")
    if tally.out_of_time:
        lines.append(
            f"[search cut short: the time budget of {GREP_TIME_BUDGET.seconds():g} seconds ran "
            f"out after {tally.searched} files; the rest were not searched. Narrow the path or "
            "simplify the pattern]"
        )
    if tally.slow_lines:
        lines.append(
            f"[the pattern took too long on {tally.slow_lines} line(s), which were skipped; "
            "avoid nested repetition such as (a+)+ or (a|aa)+]"
        )
    skipped = []
    if tally.too_big:
        skipped.append(f"{tally.too_big} larger than {size_text(MAX_GREP_FILE_BYTES)}")
    if tally.not_regular:
        skipped.append(f"{tally.not_regular} not regular files (FIFOs, devices, sockets)")
    if skipped:
        lines.append(f"[skipped {', '.join(skipped)}]")
    return "\n".join(lines)


def _read_text(path: Path, tally: _Tally) -> str | None:
    """A file's text, or None for what grep skips (not regular, too big, binary, not UTF-8)."""
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            tally.not_regular += 1
            return None
        if info.st_size > MAX_GREP_FILE_BYTES:
            tally.too_big += 1
            return None
        data = _read_regular(path, MAX_GREP_FILE_BYTES)
    except OSError:
        return None
    if data is None:
        tally.not_regular += 1
        return None
    if b"\x00" in data[:BINARY_SNIFF]:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _read_regular(path: Path, limit: int) -> bytes | None:
    """Read a regular file without blocking (None if something else was swapped in)."""
    fd = os.open(path, READ_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return read_upto(fd, limit + 1)
    finally:
        os.close(fd)


# --- which files: the walk and the ignore rules -------------------------------------------


class _Ignores:
    """The `.gitignore` rules in force for each folder, read once per folder."""

    def __init__(self, root: Path, stop: Stop) -> None:
        self.root = root
        self._root_prefix = _prefix(root)
        self.stop = stop
        # Each folder's rules: (the text a path under the rule's folder starts with, spec).
        self._specs: dict[Path, list[tuple[str, pathspec.PathSpec]]] = {}
        base: list[tuple[str, pathspec.PathSpec]] = []
        exclude = _spec_from(root / ".git" / "info" / "exclude")
        if exclude is not None:
            base.append((self._root_prefix, exclude))
        self._base = base

    def rules_for(self, folder: Path) -> list[tuple[str, pathspec.PathSpec]]:
        """Every spec that applies inside `folder`: its ancestors' (to the root) and its own."""
        cached = self._specs.get(folder)
        if cached is not None:
            return cached
        # Up to the nearest folder already known (or the root), then down again: a loop,
        # not recursion, so a tree a thousand folders deep is no different.
        missing = [folder]
        while self._below_root(missing[-1]):
            parent = missing[-1].parent
            if parent in self._specs:
                break
            missing.append(parent)
        top = missing[-1]
        rules = list(self._specs[top.parent]) if self._below_root(top) else list(self._base)
        for each in reversed(missing):
            own = _spec_from(each / ".gitignore")
            rules = [*rules, (_prefix(each), own)] if own is not None else rules
            self._specs[each] = rules
        return rules

    def _below_root(self, folder: Path) -> bool:
        """Whether `folder` lies inside the root (not the root itself). Compared as text:
        both are absolute and normalised, and walking `parents` costs the depth."""
        return str(folder).startswith(self._root_prefix)

    def ignored(self, path: Path, is_dir: bool) -> bool:
        """Whether git would ignore `path` (the last rule that matches decides)."""
        verdict = False
        text = str(path)
        for prefix, spec in self.rules_for(path.parent):
            if not text.startswith(prefix):
                continue
            relative = text[len(prefix) :].replace(os.sep, "/")
            result = spec.check_file(relative + "/" if is_dir else relative)
            if result.include is not None:
                verdict = result.include
        return verdict


def _prefix(folder: Path) -> str:
    """The text every path inside `folder` starts with."""
    return str(folder).rstrip(os.sep) + os.sep


def _spec_from(path: Path) -> pathspec.PathSpec | None:
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_IGNORE_FILE_BYTES:
            return None
        data = _read_regular(path, MAX_IGNORE_FILE_BYTES)
    except OSError:
        return None
    if not data:
        return None
    lines = data.decode("utf-8", errors="replace").splitlines()
    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except (ValueError, TypeError):
        return None


def _walk(target: Path, ignores: _Ignores, stop: Stop) -> Iterator[Path]:
    """The files to search under `target`, in name order; a file given itself is searched."""
    if not os.path.isdir(target):
        yield target
        return
    # Depth first, each folder's files before its subfolders, all in name order (as
    # os.walk goes, but with a stack of its own: os.walk recurses, and a deep enough
    # tree would exhaust Python's recursion limit).
    # A cancel or the end of the budget is noticed at every entry: one folder may hold
    # hundreds of thousands, all ignored.
    pending = [target]
    while pending:
        _check(stop)
        folder = pending.pop()
        dirs, files = _entries(folder, stop)
        for name in files:
            _check(stop)
            path = folder / name
            if not ignores.ignored(path, is_dir=False):
                yield path
        kept = []
        for name in dirs:
            _check(stop)
            if name not in SKIPPED_DIRS and not ignores.ignored(folder / name, is_dir=True):
                kept.append(folder / name)
        pending.extend(reversed(kept))


def _check(stop: Stop) -> None:
    """Stopped when the walk should end: cancelled, or out of time (grep then says the
    search was cut short)."""
    stop.check()
    if stop.expired():
        raise _OutOfTime


class _OutOfTime(Exception):
    """The time budget ran out during the walk."""


def _entries(folder: Path, stop: Stop) -> tuple[list[str], list[str]]:
    """(subfolders to enter, other names) of a folder, each in name order; a folder
    that cannot be read has none. Links to folders are not entered (as os.walk)."""
    dirs, files = [], []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                _check(stop)
                try:
                    is_dir = entry.is_dir()
                    linked = is_dir and entry.is_symlink()
                except OSError:
                    is_dir, linked = False, False
                if is_dir and not linked:
                    dirs.append(entry.name)
                elif not is_dir:
                    files.append(entry.name)
    except OSError:
        return [], []
    return sorted(dirs), sorted(files)
