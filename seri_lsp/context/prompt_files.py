"""The frozen part of the prompt: system prompt, AGENTS.md, always-on rules, memory.

These are read once when a session is opened in a process and never re-read while it
stays open, so every request of the session starts with the same bytes (which lets the
provider reuse its cached prefix). Anything that arrives later (a rule that fires on a
glob, an approved memory line) arrives as a message or at the next open.

Where they come from:
- the built-in system prompt (`seri_lsp/context/prompts/system.md`);
- `AGENTS.md` at the workspace root;
- rules: `*.md` in `<profile>/rules/` (yours, every project) and `<workspace>/.seri/rules/`
  (the project's). A rule whose front matter (YAML between `---` lines) has `globs:` is
  not always on: it arrives as a message the first time a tool touches a matching path.
  Globs have the whole syntax (`**`, braces, classes; wcmatch matches them); a rule whose
  front matter cannot be read is skipped with a warning naming the file;
- memory: `<profile>/memory.md` (yours) and `<workspace>/.seri/memory.md` (the
  project's; approved `remember` lines are appended here).

The project's files are confined to the workspace, as the tools' paths are: a
symbolic link (the file itself, `.seri` or `.seri/rules`) that leads out of the workspace
is not followed. The file is skipped and the skip is reported in `warnings`, so a
cloned repository cannot send a file from elsewhere on the disk to the provider. Your
own files in the profile are not confined.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from seri_lsp.files import NotRegularFile, open_regular

BUILTIN = "<builtin>/system.md"
PROJECT_DIR = ".seri"
MEMORY_NAME = "memory.md"
# A prompt file bigger than this is not read (it would crowd out the conversation).
MAX_PROMPT_FILE_BYTES = 1024 * 1024


def builtin_prompt(name: str) -> str:
    """A prompt text shipped with the package (`system`, `summarizer`, `subagent`)."""
    from importlib import resources  # tempfile, shutil and more: not at start-up

    return resources.files("seri_lsp.context.prompts").joinpath(f"{name}.md").read_text("utf-8")


@dataclass(frozen=True)
class PromptFile:
    """One file that went into the frozen prompt, with its hash."""

    path: str
    sha256: str


@dataclass(frozen=True)
class GlobRule:
    """A rule delivered as a message when a tool first touches a matching path."""

    path: str
    globs: tuple[str, ...]
    body: str

    def matches(self, relative_path: str) -> bool:
        """Whether a workspace-relative path matches any of the rule's globs."""
        return self._matcher(relative_path)

    @cached_property
    def _matcher(self) -> Callable[[str], bool]:
        return compile_globs(self.globs)

    def as_message(self, relative_path: str) -> str:
        """The text of the user message that delivers the rule."""
        return (
            f"Rule {self.path} applies to {relative_path} "
            f"(globs: {', '.join(self.globs)}):\n\n{self.body.strip()}"
        )


@dataclass(frozen=True)
class PromptPart:
    """A part of what a request sends, with its characters. In the system message: the
    built-in prompt (`system`), `agents` (AGENTS.md), an always-on `rule` or a `memory`
    file, named by its path, headings and separators included (the history's parts:
    `context.breakdown`)."""

    kind: str
    name: str
    chars: int


@dataclass(frozen=True)
class FrozenPrompt:
    """The system message of a session as frozen at open, and what it was made of
    (`parts`, in order, add up to the message's characters)."""

    system: str
    files: tuple[PromptFile, ...]
    glob_rules: tuple[GlobRule, ...]
    memory_path: Path | None
    warnings: tuple[str, ...] = ()
    parts: tuple[PromptPart, ...] = ()

    @property
    def chars(self) -> int:
        """Characters of the system message, for the token estimate."""
        return len(self.system)

    def hashes(self) -> dict[str, str]:
        """path -> sha256 of every prompt file, as recorded with the session (the
        summariser's, which compaction sends, included)."""
        return {f.path: f.sha256 for f in self.files}


def freeze(workspace_root: Path | None, profile_root: Path, base: str = "system") -> FrozenPrompt:
    """Read the prompt files now and assemble the system message."""
    system_text = builtin_prompt(base)
    files = [
        PromptFile(f"<builtin>/{base}.md", _sha256(system_text)),
        # Not in the system message, but a prompt the session uses: compaction's.
        PromptFile("<builtin>/summarizer.md", _sha256(builtin_prompt("summarizer"))),
    ]
    # (kind, name, text): the system message is their texts, one after the other.
    pieces = [("system", f"<builtin>/{base}.md", system_text.strip())]
    warnings: list[str] = []

    def confined(path: Path) -> bool:
        """Whether a project file may be read: it does not lead out of the workspace."""
        if workspace_root is None or leads_outside(path, workspace_root) is None:
            return True
        warnings.append(outside_warning(path, workspace_root))
        return False

    if workspace_root is not None:
        agents = workspace_root / "AGENTS.md"
        text = _read(agents, warnings) if confined(agents) else None
        if text is not None:
            files.append(PromptFile(str(agents), _sha256(text)))
            section = f"\n\n# Project instructions (AGENTS.md)\n\n{text.strip()}"
            pieces.append(("agents", str(agents), section))

    rule_dirs = [(profile_root / "rules", False)]
    if workspace_root is not None:
        rule_dirs.append((workspace_root / PROJECT_DIR / "rules", True))
    always_on: list[tuple[str, str]] = []
    glob_rules: list[GlobRule] = []
    for folder, project in rule_dirs:
        if project and folder.is_dir() and not confined(folder):
            continue
        for rule_path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
            if project and not confined(rule_path):
                continue
            text = _read(rule_path, warnings)
            if text is None:
                continue
            try:
                globs, body = parse_front_matter(text)
            except FrontMatterError as exc:
                warnings.append(f"Skipped {rule_path}: {exc}")
                continue
            files.append(PromptFile(str(rule_path), _sha256(text)))
            if globs:
                glob_rules.append(GlobRule(str(rule_path), globs, body))
            else:
                always_on.append((str(rule_path), f"## {rule_path.name}\n\n{body.strip()}"))
    pieces += _section("rule", "# Rules", always_on)

    memory_files = [(profile_root / MEMORY_NAME, False)]
    project_memory = None
    if workspace_root is not None:
        project_memory = workspace_root / PROJECT_DIR / MEMORY_NAME
        memory_files.append((project_memory, True))
    memories: list[tuple[str, str]] = []
    for memory, project in memory_files:
        if project and os.path.lexists(memory) and not confined(memory):
            continue
        text = _read(memory, warnings)
        if text is not None and text.strip():
            files.append(PromptFile(str(memory), _sha256(text)))
            memories.append((str(memory), f"## {memory}\n\n{text.strip()}"))
    pieces += _section("memory", "# Memory", memories)

    return FrozenPrompt(
        system="".join(text for _, _, text in pieces),
        files=tuple(files),
        glob_rules=tuple(glob_rules),
        memory_path=project_memory,
        warnings=tuple(warnings),
        parts=tuple(PromptPart(kind, name, len(text)) for kind, name, text in pieces),
    )


def _section(kind: str, heading: str, entries: list[tuple[str, str]]) -> list[tuple[str, str, str]]:
    """A section of the system message as pieces, one per (path, text) entry: the first
    carries the separator and the heading, each later one its separator."""
    return [
        (kind, path, ("\n\n" + heading if index == 0 else "") + "\n\n" + text)
        for index, (path, text) in enumerate(entries)
    ]


def leads_outside(path: Path, workspace_root: Path) -> Path | None:
    """Where `path` really leads (links followed) if that is outside the workspace, else None."""
    real = Path(os.path.realpath(path))
    root = Path(os.path.realpath(workspace_root))
    if real == root or root in real.parents:
        return None
    return real


def outside_warning(path: Path, workspace_root: Path) -> str:
    """Why a project prompt file was skipped."""
    real = leads_outside(path, workspace_root)
    return (
        f"Skipped {path}: it leads outside the workspace through a symbolic link (to "
        f"{real}); prompt files are read only from inside the workspace."
    )


class FrontMatterError(ValueError):
    """A rule's front matter cannot be read; the message says why and what to do."""


def parse_front_matter(text: str) -> tuple[tuple[str, ...], str]:
    """Split `---` front matter (YAML) off a rule; returns (globs, body).

    `globs` is a YAML list of globs, or one string of globs separated by commas
    (`"*.py, tests/**"`; a comma inside braces belongs to the glob). FrontMatterError
    when the front matter is not YAML, not a mapping, or its globs are not text or
    cannot be compiled.
    """
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return (), text
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        return (), text
    import yaml  # only for rules that have front matter

    body = "\n".join(lines[end + 1 :])
    try:
        header = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 2})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise FrontMatterError(
            f"its front matter is not valid YAML{where}: {problem}. Put globs in quotes "
            '(globs: "*.py") or write them as a YAML list.'
        ) from None
    if header is None:
        return (), body
    if not isinstance(header, dict):
        raise FrontMatterError("its front matter must be YAML keys and values (globs: ...).")
    raw = header.get("globs")
    if raw is None or raw == "" or raw == []:
        return (), body
    if isinstance(raw, str):
        globs = split_globs(raw)
    elif isinstance(raw, list) and all(isinstance(item, str) for item in raw):
        globs = [item.strip() for item in raw]
    else:
        raise FrontMatterError(
            f"its globs must be a string or a list of strings, got {type(raw).__name__}."
        )
    globs = [glob for glob in globs if glob]
    try:
        compile_globs(globs)
    except Exception as exc:  # wcmatch's pattern errors have no common base
        raise FrontMatterError(f"its globs cannot be used ({exc}).") from None
    return tuple(globs), body


def split_globs(value: str) -> list[str]:
    """Globs separated by commas, a comma inside braces or brackets not counting."""
    globs: list[str] = []
    current: list[str] = []
    depth = 0
    for char in value:
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth = max(0, depth - 1)
        if char == "," and depth == 0:
            globs.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    globs.append("".join(current).strip())
    return [glob.strip("'\"") for glob in globs]


def compile_globs(globs: tuple[str, ...] | list[str]) -> Callable[[str], bool]:
    """A matcher of workspace-relative paths for rule globs: `*` stays within one
    folder, `**` crosses folders, braces and classes as in a shell, and, as in
    `.gitignore`, a glob without a slash matches the file name anywhere while a leading
    `/` anchors it at the workspace root."""
    from wcmatch import glob

    flags = glob.GLOBSTAR | glob.BRACE | glob.DOTGLOB
    anchored = [pattern[1:] for pattern in globs if pattern.startswith("/")]
    loose = [pattern for pattern in globs if not pattern.startswith("/")]
    matchers = [
        glob.compile(patterns, flags=extra | flags)
        for patterns, extra in ((anchored, 0), (loose, glob.MATCHBASE))
        if patterns
    ]
    return lambda path: any(matcher.match(path) for matcher in matchers)


def _read(path: Path, warnings: list[str]) -> str | None:
    """A prompt file's text; None if it is missing or cannot be used (then a warning).

    Only regular files are opened (a FIFO named AGENTS.md would block the read forever),
    and without blocking, in case one is swapped in between.
    """
    try:
        fd, _ = open_regular(path)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(MAX_PROMPT_FILE_BYTES + 1)
    except NotRegularFile as exc:
        if not stat.S_ISDIR(exc.mode):
            warnings.append(f"Skipped {path}: it is not a regular file.")
        return None
    except OSError:
        return None
    if len(data) > MAX_PROMPT_FILE_BYTES:
        warnings.append(f"Skipped {path}: it is bigger than {MAX_PROMPT_FILE_BYTES} bytes.")
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        warnings.append(f"Skipped {path}: it is not UTF-8 text.")
        return None


def _sha256(text: str) -> str:
    import hashlib  # only when needed: not at start-up

    return hashlib.sha256(text.encode("utf-8")).hexdigest()
