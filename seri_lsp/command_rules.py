"""Command rules: split a shell line into its simple commands, match them to patterns.

The split uses a real shell parser (bashlex, imported on first use: server start-up does
not pay for it). Every simple command of the line is a part: those joined by `&&`, `||`,
`;`, `|` or `&`, those in subshells and braces, in loops and conditionals, and those
inside command substitutions (`$(...)`, backquotes) and process substitutions
(`<(...)`), wherever they stand (an argument, an assignment, a redirection's target).

A part's words are its arguments with quotes removed; assignments written before the
command (`FOO=1 git push`) and redirections (`> out.txt`) are not words of it, so they
neither defeat a rule nor slip past one.

A pattern is words too (split as the shell would: `git "commit -m" *`). It matches a part
word for word: a word with `*` or `?` matches as a glob within that one word, other words
exactly. A last word `*` on its own matches any further words, none included: `npm run *`
matches `npm run`, `npm run build` and `npm run test -- -x`. Without it the pattern matches
the command exactly: `npm test` matches `npm test`, not `npm test --watch`.

A line that cannot be parsed, and a part whose meaning rules cannot judge (`eval`,
`sh -c`, `source`, a command name that is an expansion such as `$CMD`, a function
definition), is never allowed by a rule; deny rules still refuse what they match. Deny
rules also look at a command named by its path (`/usr/bin/git push` as `git push`) and
at the command a wrapper runs (`env FOO=1 git push`, `sudo git push`); they match words,
so `git -C x push` is not `git push *` (a deny list is a guard rail, not a sandbox).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Literal

# Commands that run a command line given as text: what they run cannot be judged.
_EVALUATING = frozenset({"eval", "source", ".", "trap"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})
# Commands that run the rest of their words as a command: deny rules also look at the
# command they run (`env git push`, `sudo git push`, `nohup git push`).
_WRAPPERS = frozenset({"env", "command", "exec", "nohup", "time", "nice", "sudo", "xargs"})


@dataclass(frozen=True)
class Part:
    """One simple command of a line: its words (quotes removed), its text as written."""

    words: tuple[str, ...]
    text: str
    # Why rules cannot judge it (None: they can).
    unjudgeable: str | None = None


@dataclass(frozen=True)
class Split:
    """A line's simple commands, or why it could not be parsed (`error`)."""

    parts: tuple[Part, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class Pattern:
    """A rule's pattern: its words as written."""

    text: str
    words: tuple[str, ...]

    @staticmethod
    def parse(text: str) -> Pattern | None:
        """The pattern `text`, or None where it has no words or unbalanced quotes."""
        try:
            words = tuple(shlex.split(text))
        except ValueError:
            return None
        return Pattern(text.strip(), words) if words else None

    def matches(self, words: Sequence[str]) -> bool:
        pattern = self.words
        if pattern[-1] == "*":
            head = pattern[:-1]
            return len(words) >= len(head) and all(
                _word_matches(p, w) for p, w in zip(head, words, strict=False)
            )
        return len(words) == len(pattern) and all(
            _word_matches(p, w) for p, w in zip(pattern, words, strict=True)
        )


def _word_matches(pattern: str, word: str) -> bool:
    if "*" in pattern or "?" in pattern:
        return fnmatchcase(word, pattern)
    return pattern == word


@dataclass(frozen=True)
class CommandRules:
    """`permissions.commands`: allow and deny patterns. `workspace_allow` holds the allow
    patterns that came from a workspace's own settings (used only once the user agreed)."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    workspace_allow: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "allow": list(self.allow),
            "deny": list(self.deny),
            "workspaceAllow": list(self.workspace_allow),
        }


@dataclass(frozen=True)
class Verdict:
    """What the rules say of a line: `allow` (every part allowed), `deny` (`rule` refused
    `part`), or `ask`, with the parts no allow rule matched (`unmatched`)."""

    decision: Literal["allow", "deny", "ask"]
    parts: tuple[Part, ...] = ()
    unmatched: tuple[Part, ...] = ()
    rule: str | None = None
    part: Part | None = None
    error: str | None = None
    reason: str = ""


def split_line(line: str) -> Split:
    """The simple commands of the shell line `line`."""
    import bashlex  # (lazily: see the module's docstring)
    import bashlex.errors

    if "\x00" in line:
        return Split(error="the line holds a NUL character")
    try:
        trees = bashlex.parse(line)
    except (bashlex.errors.ParsingError, NotImplementedError) as error:
        return Split(error=f"it cannot be parsed ({error})")
    except Exception as error:  # bashlex raises assorted errors on what it cannot read
        return Split(error=f"it cannot be parsed ({type(error).__name__})")
    parts: list[Part] = []
    for tree in trees:
        _walk(tree, line, parts)
    return Split(parts=tuple(parts))


def _walk(node: Any, line: str, parts: list[Part]) -> None:
    kind = getattr(node, "kind", None)
    if kind == "command":
        _command(node, line, parts)
        return
    if kind == "function":
        text = line[node.pos[0] : node.pos[1]]
        parts.append(Part((), text, "it defines a function"))
    if kind == "heredoc":
        return
    for child in _children(node):
        _walk(child, line, parts)


def _children(node: Any) -> Iterable[Any]:
    for name in ("parts", "list", "command", "output", "input", "value"):
        value = getattr(node, name, None)
        if isinstance(value, list):
            yield from value
        elif value is not None and hasattr(value, "kind"):
            yield value


def _command(node: Any, line: str, parts: list[Part]) -> None:
    words: list[str] = []
    unjudgeable: str | None = None
    nested: list[Any] = []
    for child in node.parts:
        if child.kind == "word":
            if not words and any(p.kind in ("parameter", "tilde") for p in child.parts):
                unjudgeable = f"its command name `{child.word}` is an expansion"
            if not words and any(
                p.kind in ("commandsubstitution", "processsubstitution") for p in child.parts
            ):
                unjudgeable = "its command name is a command substitution"
            words.append(child.word)
        nested.append(child)
    text = line[node.pos[0] : node.pos[1]]
    if words:
        unjudgeable = unjudgeable or _cannot_judge(words)
        parts.append(Part(tuple(words), text, unjudgeable))
    for child in nested:
        _walk(child, line, parts)


def _cannot_judge(words: Sequence[str]) -> str | None:
    name = words[0].rsplit("/", 1)[-1]
    if name in _EVALUATING:
        return f"`{name}` runs text as commands"
    if name in _SHELLS and any(w.startswith("-") and "c" in w for w in words[1:]):
        return f"`{name} -c` runs text as commands"
    if name in _SHELLS and len(words) == 1:
        return f"`{name}` reads commands"
    return None


def _unwrapped(words: tuple[str, ...]) -> Iterable[tuple[str, ...]]:
    """`words`, and the command a wrapper (`env FOO=1 git push`) runs, its options and
    assignments skipped, each also with its command's path left out (`/usr/bin/git` as
    `git`): what deny rules look at."""
    while words:
        yield words
        name = words[0].rsplit("/", 1)[-1]
        if name != words[0]:
            yield (name, *words[1:])
        if name not in _WRAPPERS:
            return
        rest = words[1:]
        while rest and (rest[0].startswith("-") or "=" in rest[0] or rest[0].isdigit()):
            rest = rest[1:]
        words = rest


def decide(line: str, rules: CommandRules, extra_allow: Sequence[str] = ()) -> Verdict:
    """What `rules` (and `extra_allow`: session patterns, agreed workspace patterns) say
    of `line`."""
    split = split_line(line)
    deny = [p for p in (Pattern.parse(t) for t in rules.deny) if p is not None]
    allow = [p for p in (Pattern.parse(t) for t in (*rules.allow, *extra_allow)) if p is not None]
    for part in split.parts:
        for words in _unwrapped(part.words):
            for pattern in deny:
                if pattern.matches(words):
                    return Verdict(
                        "deny",
                        split.parts,
                        rule=pattern.text,
                        part=part,
                        reason=f"`{part.text}` matches the deny rule `{pattern.text}`",
                    )
    if split.error is not None:
        return Verdict("ask", error=split.error, reason=f"the line {split.error}")
    unmatched = tuple(
        part
        for part in split.parts
        if part.unjudgeable is not None or not any(p.matches(part.words) for p in allow)
    )
    if not split.parts:
        return Verdict("ask", reason="the line runs no command rules can name")
    if unmatched:
        return Verdict("ask", split.parts, unmatched)
    return Verdict("allow", split.parts)


def judged(verdict: Verdict) -> bool:
    """Whether deny rules could look at the whole line: it parsed, and rules can judge
    each of its parts."""
    return verdict.error is None and all(part.unjudgeable is None for part in verdict.parts)


# A word that reads as a subcommand (`run`, `status`, `db:migrate`), not an argument
# (`1`, `-x`, `src/a.py`, `out.txt`).
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9:_-]*")


def suggested_pattern(part: Part) -> str | None:
    """The pattern offered for "allow for this session": the first two words and ` *`
    where the second is a subcommand (`npm run build` -> `npm run *`), else the command
    exactly. None for a part rules cannot judge."""
    if part.unjudgeable is not None or not part.words:
        return None
    words = part.words
    if len(words) > 2 and _SUBCOMMAND.fullmatch(words[1]):
        return f"{shlex.join(words[:2])} *"
    return shlex.join(words)


@dataclass
class SessionRules:
    """Patterns the user allowed for the rest of one session's task tree."""

    patterns: list[str] = field(default_factory=list)

    def add(self, patterns: Iterable[str]) -> None:
        for pattern in patterns:
            if pattern not in self.patterns:
                self.patterns.append(pattern)
