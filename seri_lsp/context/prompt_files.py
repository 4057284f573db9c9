"""The frozen part of the prompt: system prompt, AGENTS.md, always-on rules, memory.

These are read once when a session is opened in a process and never re-read while it
stays open, so every request of the session starts with the same bytes (which lets the
provider reuse its cached prefix). Anything that arrives later (a rule that fires on a
glob, an approved memory line) arrives as a message or at the next open.

Where they come from:
- the built-in system prompt (`seri_lsp/context/prompts/system.md`);
- `AGENTS.md` at the workspace root;
- rules: `*.md` in `<profile>/rules/` (yours, every project) and `<workspace>/.seri/rules/`
  (the project's). A rule whose front matter has `globs:` is not always on: it arrives
  as a message the first time a tool touches a matching path;
- memory: `<profile>/memory.md` (yours) and `<workspace>/.seri/memory.md` (the
  project's; approved `remember` lines are appended here).

The project's files are confined to the workspace, as the tools' paths are: a
symbolic link (the file itself, `.seri` or `.seri/rules`) that leads out of the workspace
is not followed. The file is skipped and the skip is reported in `warnings`, so a
cloned repository cannot send a file from elsewhere on the disk to the provider. Your
own files in the profile are not confined.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass
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
        return any(glob_matches(glob, relative_path) for glob in self.globs)

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
            files.append(PromptFile(str(rule_path), _sha256(text)))
            globs, body = parse_front_matter(text)
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


def parse_front_matter(text: str) -> tuple[tuple[str, ...], str]:
    """Split `---` front matter off a rule; returns (globs, body)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return (), text
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        return (), text
    globs: list[str] = []
    in_globs = False
    for line in lines[1:end]:
        key, sep, value = line.partition(":")
        if sep and not line.startswith((" ", "\t", "-")):
            in_globs = key.strip() == "globs"
            if in_globs and value.strip():
                globs.extend(_split_globs(value.strip()))
        elif in_globs and line.strip().startswith("-"):
            globs.extend(_split_globs(line.strip()[1:].strip()))
    body = "\n".join(lines[end + 1 :])
    return tuple(g for g in globs if g), body


def _split_globs(value: str) -> list[str]:
    if value.startswith("["):
        try:
            items = json.loads(value)
            return [str(item).strip() for item in items]
        except json.JSONDecodeError:
            value = value.strip("[]")
    return [part.strip().strip("'\"") for part in value.split(",")]


def glob_matches(glob: str, relative_path: str) -> bool:
    """Match a workspace-relative path against a rule glob.

    `*` stays within one folder, `**` crosses folders, and a glob without a slash
    matches the file name anywhere (as `.gitignore` does).
    """
    pattern = glob.strip().lstrip("/")
    target = relative_path if "/" in pattern else relative_path.rsplit("/", 1)[-1]
    return re.fullmatch(_glob_regex(pattern), target) is not None


def _glob_regex(pattern: str) -> str:
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


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
