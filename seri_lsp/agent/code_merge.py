"""Where a code block from a reply goes in a file (`seri.code.merge`, "Apply to File").

A reply often shows only the part of a file it changed ("here is the fixed `slugify`").
Applied as the file's whole new content, such a block would wipe the rest of the file;
`merge` puts it in its place instead. Deterministic, no model: the rules are written
down in docs/protocol.md (`seri.code.merge`) and, briefly:

- no file yet: the block is the new file (`create`);
- a block that restates the file (it holds most of the lines outside the part it would
  replace, or runs from the file's top, changed, to its end) replaces it whole (`whole`);
- otherwise the block's first definition line (`def`, `class`, `function`, a heading...,
  else its first line) is looked up in the file, ignoring surrounding whitespace (by the
  defined name when the line itself changed, the closest unit when several match), and
  the unit it starts in the file is replaced (`fragment`): to the end of its indented
  body (Python, YAML), its closing brace (C-like, JavaScript), its `end` (Lua, Ruby), or
  the next heading of its level (Markdown). A block with several definitions replaces
  from the first through the last; a block with no definition (statements, settings
  entries) replaces the run of lines it is a version of. The block is re-indented to
  what it replaces;
- a block whose definition is nowhere in the file is added at its end (`append`; before
  a Python `if __name__ == "__main__":` block), never in place of anything.

The file keeps its line endings (CRLF stays CRLF) and its final newline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import Match, SequenceMatcher
from pathlib import Path
from typing import Literal

from seri_lsp.agent.disk import DiskError, Stop, read_current

MergeMode = Literal["create", "whole", "fragment", "append"]


@dataclass(frozen=True)
class LineSpan:
    """Lines of the file as it was, 1-based and inclusive."""

    start_line: int
    end_line: int


@dataclass(frozen=True)
class CodeMerge:
    """The file's new text once the block is applied, and how the block went in:
    `range`, for a fragment, the old lines it replaced."""

    text: str
    mode: MergeMode
    range: LineSpan | None = None


# A line that starts a definition: the keyword (or `name = function`) and the name.
_HEADER = re.compile(
    r"^(?:(?:export|default|public|private|protected|internal|static|async|pub(?:\([^)]*\))?|"
    r"abstract|final|override|inline|extern|unsafe|const|local)\s+)*"
    r"(?:def|class|function\*?|fn|func|sub|module|interface|struct|enum|impl|trait|type|"
    r"object|record|namespace|macro|proc)\s+"
    r"(?:\([^)]*\)\s*)?"  # Go's receiver
    r"(?P<name>[A-Za-z_$][\w$.:]*)"
)
# `name = function (...)`, `const name = (...) =>`, `M.name = function`, `name: function`.
_ASSIGNED = re.compile(
    r"^(?:(?:export|const|let|var|local|static)\s+)*(?P<name>[A-Za-z_$][\w$.:]*)\s*[:=]\s*"
    r"(?:async\s+)?(?:function\b|\([^)]*\)\s*(?:=>|\{)|[A-Za-z_$][\w$]*\s*=>)"
)
_HEADING = re.compile(r"^(#{1,6})\s")
# How many places of a block's line are compared with the block, at most.
MAX_CANDIDATES = 200
# Lines too common to tell whether a block restates the rest of a file.
_TRIVIAL = frozenset({"", "}", "};", "{", ")", "]", "end", "pass", "else:", "else", "return"})


def merge(current: str | None, block: str) -> CodeMerge:
    """`block` applied to a file whose text is `current` (None: no such file yet)."""
    if current is None:
        return CodeMerge(_with_final_newline(block.replace("\r\n", "\n")), "create")
    newline = "\r\n" if "\r\n" in current else "\n"
    ends_with_newline = current.endswith(("\n", "\r"))
    file = _lines(current)
    code = _trim_blank(_lines(block))
    if not code:
        raise ValueError("the code block is empty")

    def joined(lines: list[str]) -> str:
        text = newline.join(lines)
        return text + newline if ends_with_newline and lines else text

    if not any(line.strip() for line in file):
        return CodeMerge(joined(code), "whole")
    placed = _place(file, code)
    if placed is None:
        if _covers(code, file):
            return CodeMerge(joined(code), "whole")
        at = _append_at(file)
        before = file[: _before_blank(file, -1, at - 1) + 1]
        after = file[at:]
        gap = [""] * _spacing(file)
        return CodeMerge(
            joined([*before, *(gap if before else []), *code, *(gap if after else []), *after]),
            "append",
        )
    start, end, anchor, pair = placed
    outside = file[:start] + file[end + 1 :]
    if _covers(code, outside) or _restates_top(file[:start], file[end + 1 :], code[:anchor]):
        return CodeMerge(joined(code), "whole")
    fitted = _reindent(code, _indent(code[pair[0]]), _indent(file[pair[1]]))
    fitted = _drop_known_preamble(fitted, anchor, outside)
    return CodeMerge(
        joined([*file[:start], *fitted, *file[end + 1 :]]),
        "fragment",
        LineSpan(start + 1, end + 1),
    )


def _lines(text: str) -> list[str]:
    """The lines of `text` without their ends (one final newline ends the last line)."""
    text = text.replace("\r\n", "\n")
    if text.endswith("\n"):
        text = text[:-1]
    return text.split("\n") if text else []


def _with_final_newline(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"


def _trim_blank(lines: list[str]) -> list[str]:
    first = next((i for i, line in enumerate(lines) if line.strip()), len(lines))
    last = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].strip()), -1)
    return [line.rstrip() for line in lines[first : last + 1]]


def _key(line: str) -> str:
    return " ".join(line.split())


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _width(line: str) -> int:
    return len(_indent(line).expandtabs(4))


def _significant(lines: list[str]) -> list[str]:
    return [_key(line) for line in lines if _key(line) not in _TRIVIAL]


def _covers(code: list[str], outside: list[str]) -> bool:
    """The block holds most of the file's lines outside the part it would replace: it
    restates the file rather than one part of it."""
    rest = _significant(outside)
    if not rest:
        return False
    mine = set(_significant(code))
    return sum(key in mine for key in rest) * 2 >= len(rest)


def _restates_top(before: list[str], after: list[str], preamble: list[str]) -> bool:
    """The block runs from the file's top (its imports, changed) to its end: what it
    brings above its first definition is a version of what the file has above it, and
    the file has nothing after the part it replaces."""
    if _significant(after) or not _significant(preamble) or not _significant(before):
        return False
    mine = "\n".join(_significant(preamble))
    theirs = "\n".join(_significant(before))
    return SequenceMatcher(None, mine, theirs, autojunk=False).ratio() >= 0.6


def _name(line: str) -> str | None:
    """The name a definition line defines (a heading: its text), else None."""
    text = line.strip()
    heading = _HEADING.match(text)
    if heading:
        return text
    found = _HEADER.match(text) or _ASSIGNED.match(text)
    return found.group("name") if found else None


def _top_level(code: list[str]) -> list[int]:
    """The block's lines at its outermost indentation that start something."""
    base = min(_width(line) for line in code if line.strip())
    return [
        i
        for i, line in enumerate(code)
        if line.strip() and _width(line) == base and line.strip()[0] not in ")]}"
    ]


def _place(file: list[str], code: list[str]) -> tuple[int, int, int, tuple[int, int]] | None:
    """Where the block goes: the first and last file line it replaces (0-based), the
    block's anchor line (what is above it is its preamble), and a block line with the
    file line it stands for (to re-indent by); None when no part of the file matches."""
    top = _top_level(code) or [0]
    headers = [i for i in top if _name(code[i]) is not None]
    if not headers:
        run = _similar_run(file, code)
        if run is not None:
            return run
    anchor = headers[0] if headers else top[0]
    start = _find(file, code, anchor, 0)
    if start is None:
        return None
    end = _extent(file, start)
    if len(headers) > 1:
        last = _find(file, code, headers[-1], end + 1)
        if last is not None:
            end = max(end, _extent(file, last))
    # Decorators (and attributes) above the unit in the file go with it when the block
    # brings its own.
    first = start
    if anchor > 0 and _decorator(code[anchor - 1]):
        while (
            first > 0
            and _decorator(file[first - 1])
            and _width(file[first - 1]) == _width(file[start])
        ):
            first -= 1
    return first, end, anchor, (anchor, start)


def _similar_run(file: list[str], code: list[str]) -> tuple[int, int, int, tuple[int, int]] | None:
    """For a block of plain lines (no definition: statements, settings), the run of file
    lines it is a version of: the lines it shares with the file (at least half of its
    own), near each other, and next to them the file lines its changed first and last
    lines replace (those that look alike). None when the block is not found so."""
    theirs = [_key(line) for line in file]
    mine = [_key(line) for line in code]
    wanted = set(_significant(code))
    where: dict[str, list[int]] = {}
    for i, key in enumerate(theirs):
        if key in wanted:
            where.setdefault(key, []).append(i)
    if not where:
        return None
    # Where the block's rarest line is found, the stretch of the file most like the block.
    rarest = min(where, key=lambda key: len(where[key]))
    offset = mine.index(rarest)

    def stretch(at: int) -> tuple[int, list[str]]:
        low = max(0, at - offset - 2)
        return low, theirs[low : at - offset + len(code) + 2]

    def likeness(at: int) -> float:
        return SequenceMatcher(None, stretch(at)[1], mine, autojunk=False).ratio()

    low, lines = stretch(max(where[rarest][:MAX_CANDIDATES], key=likeness))
    matcher = SequenceMatcher(None, lines, mine, autojunk=False)
    near = [
        Match(low + b.a, b.b, b.size)
        for b in matcher.get_matching_blocks()
        if b.size and _significant(code[b.b : b.b + b.size])
    ]
    if not near:
        return None
    start, end = near[0].a, near[-1].a + near[-1].size - 1
    before = near[0].b
    while before > 0 and start > 0 and _alike(file[start - 1], code[before - 1]):
        start, before = start - 1, before - 1
    after = near[-1].b + near[-1].size
    while after < len(code) and end + 1 < len(file) and _alike(file[end + 1], code[after]):
        end, after = end + 1, after + 1
    shared = sum(len(_significant(code[b.b : b.b + b.size])) for b in near)
    changed = (near[0].b - before) + (after - near[-1].b - near[-1].size)
    if (shared + changed) * 2 < len(_significant(code)):
        return None
    return start, end, 0, (near[0].b, near[0].a)


def _alike(old: str, new: str) -> bool:
    """A changed version of the same line: mostly the same text."""
    if not old.strip() or not new.strip():
        return False
    return SequenceMatcher(None, _key(old), _key(new), autojunk=False).ratio() >= 0.6


def _decorator(line: str) -> bool:
    return line.strip().startswith(("@", "#["))


def _lead(file: list[str], start: int) -> int:
    """How many decorator lines lead the unit at `start`, before its definition line."""
    lead = 0
    while start + lead < len(file) - 1 and _decorator(file[start + lead]):
        lead += 1
    return lead


def _find(file: list[str], code: list[str], anchor: int, since: int) -> int | None:
    """The file line (at or after `since`) where the block's line `anchor` is: the same
    line ignoring whitespace, else a definition of the same name; the unit closest to
    the block where several are."""
    wanted = _key(code[anchor])
    candidates = [i for i in range(since, len(file)) if _key(file[i]) == wanted]
    if not candidates:
        name = _name(code[anchor])
        if name is None:
            return None
        candidates = [i for i in range(since, len(file)) if _name(file[i]) == name]
    if len(candidates) <= 1:
        return candidates[0] if candidates else None
    mine = [_key(line) for line in code[anchor:]]

    def likeness(i: int) -> float:
        theirs = [_key(line) for line in file[i : _extent(file, i) + 1]]
        return SequenceMatcher(None, mine, theirs, autojunk=False).ratio()

    return max(candidates, key=likeness)


def _extent(file: list[str], start: int) -> int:
    """The last line (0-based) of the unit that starts at line `start` of the file."""
    text = file[start].strip()
    heading = _HEADING.match(text)
    if heading:
        level = len(heading.group(1))
        for i in range(start + 1, len(file)):
            other = _HEADING.match(file[i].strip())
            if other and len(other.group(1)) <= level:
                return _before_blank(file, start, i - 1)
        return _before_blank(file, start, len(file) - 1)
    braces = _brace_end(file, start)
    if braces is not None:
        return braces
    base = _width(file[start])
    last = start
    for i in range(start + 1, len(file)):
        line = file[i]
        if not line.strip():
            continue
        if _width(line) > base:
            last = i
            continue
        word = line.strip()
        if _width(line) == base and (word[0] in ")]}" or re.match(r"end\b", word)):
            last = i  # the unit's closing line: `)`, `}`, Lua's and Ruby's `end`
            if re.match(r"end\b", word) or word[0] == "}":
                break
            continue
        break
    return last


def _before_blank(file: list[str], start: int, end: int) -> int:
    """`end`, moved up over blank lines (not above `start`)."""
    while end > start and not file[end].strip():
        end -= 1
    return end


_STRINGS = re.compile(r"'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"|`(?:\\.|[^`\\])*`")
_LINE_COMMENT = re.compile(r"(?://|--|#).*$")


def _brace_end(file: list[str], start: int) -> int | None:
    """The line of the brace that closes the unit at `start`, for brace languages: the
    unit opens a `{` on its first lines (before its body starts). None otherwise."""
    if _LINE_COMMENT.sub("", _STRINGS.sub('""', file[start])).rstrip().endswith(":"):
        return None  # a Python definition, whatever its defaults hold
    depth = 0
    opened = False
    base = _width(file[start])
    for i in range(start, len(file)):
        line = file[i]
        body = i > start and not opened and line.strip() and _width(line) > base
        if body and "{" not in line:
            return None  # an indented body line before any brace: Python, Lua
        if i > start + 4 and not opened:
            return None
        code = _LINE_COMMENT.sub("", _STRINGS.sub('""', line))
        for char in code:
            if char == "{":
                depth += 1
                opened = True
            elif char == "}":
                depth -= 1
        if opened and depth <= 0:
            return i
        if not opened and code.rstrip().endswith(";"):
            return None
    return len(file) - 1 if opened else None


def _reindent(code: list[str], theirs: str, ours: str) -> list[str]:
    """The block's lines moved from its anchor's indentation to the file's."""
    if theirs == ours:
        return list(code)
    out = []
    for line in code:
        if not line.strip():
            out.append("")
        elif line.startswith(theirs):
            out.append(ours + line[len(theirs) :])
        else:
            out.append(ours + line.lstrip())
    return out


def _drop_known_preamble(code: list[str], anchor: int, outside: list[str]) -> list[str]:
    """The block without the lines above its definition that the file already has
    elsewhere (the imports a reply repeats for context), so they are not doubled."""
    known = {_key(line) for line in outside if line.strip()}
    preamble = code[:anchor]
    if not preamble or any(_decorator(line) for line in preamble):
        return code
    if not any(line.strip() and _key(line) in known for line in preamble):
        return code
    kept = [line for line in preamble if line.strip() and _key(line) not in known]
    gap = len(preamble) - 1 - _before_blank(preamble, 0, len(preamble) - 1)
    return [*kept, *([""] * max(gap, 1) if kept else []), *code[anchor:]]


def _spacing(file: list[str]) -> int:
    """How many blank lines the file puts between its top-level parts (most often)."""
    runs: dict[int, int] = {}
    blank = 0
    for line in file:
        if not line.strip():
            blank += 1
            continue
        if blank and _width(line) == 0:
            runs[blank] = runs.get(blank, 0) + 1
        blank = 0
    return max(runs, key=lambda run: (runs[run], run)) if runs else 1


def _append_at(file: list[str]) -> int:
    """Where a block with no place in the file goes: at the end, or before a Python
    script's closing `if __name__ == "__main__":` block."""
    for i in range(len(file) - 1, -1, -1):
        if re.match(r"if __name__ == ['\"]__main__['\"]\s*:", file[i]):
            return i
    return len(file)


def merge_into(path: Path, display: str, open_text: str | None, block: str) -> CodeMerge:
    """`block` applied to the file at `path` (a real path inside the workspace): to
    `open_text` when the editor has the file open, else to the disk's text. Blocking:
    call it off the event loop. ValueError, in the user's words, when it cannot be."""
    current = open_text
    if current is None:
        try:
            current = read_current(path, display, stop=Stop())
        except (DiskError, OSError) as exc:
            raise ValueError(f"Cannot apply the code block to {display}: {exc}") from None
    return merge(current, block)
