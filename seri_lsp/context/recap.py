"""Reading the summariser's reply into a recap, and merging recap path lists.

A recap holds four fields written by the summariser (Goal, Progress, Blockers, Next steps)
and two path lists taken from the evicted tool calls themselves (never from the model).
The `Recap` value itself is stored with its message (`seri_lsp.store.messages`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from seri_lsp.store.messages import FIELDS, HEADINGS, Recap

__all__ = ["Recap", "UnusableSummary", "merge_paths", "parse_summary"]

# A heading may come as a list item or numbered (`- **Goal**: ...`, `### 1. Goal`).
_HEADING = re.compile(
    r"""^\s*(?P<hashes>\#{1,6}\s*)?
        (?:[-*+]\s+)?(?:\d{1,2}[.)]\s*)?
        (?:\*\*|__)?\s*
        (?P<name>goal|progress|blockers|next[\s_-]*steps)
        \s*(?:\*\*|__)?\s*(?P<colon>:)?\s*(?:\*\*|__)?\s*
        (?P<rest>.*)$""",
    re.IGNORECASE | re.VERBOSE,
)
# Path claims in the same markdown dress as the headings (`**Read:** a`, `## Modified: b`)
# are dropped too, or they would leak into the field above them.
_PATH_LINE = re.compile(
    r"^\s*(?:#{1,6}\s*)?(?:[-*+]\s+)?(?:\*\*|__)?\s*(?:read|modified)\s*(?:\*\*|__)?\s*:",
    re.IGNORECASE,
)


class UnusableSummary(ValueError):
    """The summariser's reply lacks one or more of the four sections."""


def parse_summary(text: str) -> dict[str, str]:
    """Split a summariser reply into the four fields.

    Accepts `Goal:` style headings and markdown headings (`## Goal`, `**Goal:**`), also
    as list items or numbered (`- **Goal**: ...`, `### 1. Goal`).
    Lines that claim Read/Modified paths are dropped: paths come from the tool calls.
    Raises UnusableSummary naming the missing sections.
    """
    found: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.splitlines():
        key = _heading_key(line)
        if key is not None and key not in found:
            current = key
            heading = _HEADING.match(line)
            assert heading is not None  # _heading_key found one on this line
            rest = heading.group("rest")
            found[current] = [rest] if rest.strip() else []
            continue
        if current is not None and not _PATH_LINE.match(line):
            found[current].append(line)
    missing = [HEADINGS[name] for name in FIELDS if name not in found]
    if missing:
        raise UnusableSummary("the summary has no " + ", ".join(f"{m}:" for m in missing))
    return {name: "\n".join(found[name]).strip() for name in FIELDS}


def _heading_key(line: str) -> str | None:
    match = _HEADING.match(line)
    if match is None:
        return None
    bold_only = not match.group("rest").strip() and ("**" in line or "__" in line)
    if not (match.group("hashes") or match.group("colon") or bold_only):
        return None
    name = re.sub(r"[\s_-]+", "_", match.group("name").lower())
    return name if name in FIELDS else None


def merge_paths(
    earlier_read: Iterable[str],
    earlier_modified: Iterable[str],
    read: Iterable[str],
    modified: Iterable[str],
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Union two recaps' path lists; a path that was ever modified is listed as modified only."""
    all_modified = _unique([*earlier_modified, *modified])
    modified_set = set(all_modified)
    all_read = [p for p in _unique([*earlier_read, *read]) if p not in modified_set]
    return tuple(all_read), tuple(all_modified)


def _unique(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
