"""How a seri tool call looks in an ACP client: its kind, title, locations and content.

Locations are absolute paths (so the editor can follow the agent); a path the workspace
boundary refuses has none. Edits carry diffs: live, the whole file before and after the
change; when a conversation is replayed, what the call's arguments say.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    TerminalToolCallContent,
    TextContentBlock,
    ToolCallLocation,
    ToolKind,
)

from seri_lsp.events import FileChange
from seri_lsp.store.messages import ToolCall

# A model-supplied, workspace-relative path -> the absolute path it leads to (None: denied).
Locate = Callable[[str], str | None]

# What a tool call update may carry (seri sends text and diffs, never a terminal).
ToolContent = ContentToolCallContent | FileEditToolCallContent | TerminalToolCallContent

_KINDS: dict[str, ToolKind] = {
    "read_file": "read",
    "list_dir": "read",
    "write_file": "edit",
    "edit": "edit",
    "grep": "search",
    "task": "think",
    "remember": "other",
    "run": "execute",
}
_TITLE_CHARS = 80


@dataclass(frozen=True)
class Presentation:
    """What a client shows for one tool call."""

    kind: ToolKind
    title: str
    locations: list[ToolCallLocation]
    raw_input: Any


def present(call: ToolCall, locate: Locate) -> Presentation:
    """The kind, title, locations and raw input of a tool call."""
    args = call.parsed_arguments()
    kind = _KINDS.get(call.name, "other")
    if args is None:
        return Presentation(kind, f"{call.name} (arguments that are not JSON)", [], call.arguments)
    path = args.get("path") if isinstance(args.get("path"), str) else None
    title = _title(call.name, args, path)
    locations = []
    where = locate(path) if path else None
    if where is not None:
        line = _first_line(args) if call.name == "read_file" else None
        locations.append(ToolCallLocation(path=where, line=line))
    return Presentation(kind, _short(title), locations, args)


def _title(name: str, args: dict[str, Any], path: str | None) -> str:
    shown = path or "."
    if name == "read_file":
        offset, limit = args.get("offset"), args.get("limit")
        if isinstance(offset, int) and isinstance(limit, int):
            return f"Read {shown} (lines {offset}-{offset + limit - 1})"
        if isinstance(offset, int):
            return f"Read {shown} (from line {offset})"
        return f"Read {shown}"
    if name == "write_file":
        return f"Write {shown}"
    if name == "edit":
        return f"Edit {shown}"
    if name == "list_dir":
        return f"List {shown}"
    if name == "grep":
        pattern = args.get("pattern")
        where = f" in {path}" if path else ""
        return f"Search for {json.dumps(pattern, ensure_ascii=False)}{where}"
    if name == "task":
        return f"Subagent: {_first_text_line(args.get('prompt'))}"
    if name == "remember":
        return f"Remember: {_first_text_line(args.get('text'))}"
    if name == "run":
        cwd = args.get("cwd")
        where = f" (in {cwd})" if isinstance(cwd, str) and cwd not in ("", ".") else ""
        return f"Run `{_first_text_line(args.get('command'))}`{where}"
    return name


def _first_line(args: dict[str, Any]) -> int | None:
    """The 0-based line a read starts at, when it does not start at the top."""
    offset = args.get("offset")
    if isinstance(offset, int) and not isinstance(offset, bool) and offset > 1:
        return offset - 1
    return None


def _first_text_line(value: object) -> str:
    text = value.strip() if isinstance(value, str) else ""
    return text.splitlines()[0] if text else ""


def _short(title: str) -> str:
    return title if len(title) <= _TITLE_CHARS else title[: _TITLE_CHARS - 1] + "…"


def text_content(text: str) -> ContentToolCallContent:
    """A piece of text shown in a tool call."""
    return ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))


def change_content(change: FileChange) -> FileEditToolCallContent:
    """The diff of a file a tool changed (no old text: the file was created)."""
    return FileEditToolCallContent(
        type="diff", path=change.path, old_text=change.old_text, new_text=change.new_text
    )


def change_location(change: FileChange) -> ToolCallLocation:
    """Where the change starts (0-based line), for the editor to follow."""
    return ToolCallLocation(path=change.path, line=max(change.line - 1, 0))


def proposed_change(call: ToolCall, locate: Locate) -> FileEditToolCallContent | None:
    """The change an `edit` call asks for, from its arguments (shown before it runs)."""
    args = call.parsed_arguments() or {}
    if call.name != "edit" or not isinstance(args.get("path"), str):
        return None
    where = locate(args["path"])
    old, new = args.get("old_text"), args.get("new_text")
    if where is None or not isinstance(old, str) or not isinstance(new, str):
        return None
    return FileEditToolCallContent(type="diff", path=where, old_text=old, new_text=new)


def replayed_change(call: ToolCall, result: str, locate: Locate) -> FileEditToolCallContent | None:
    """The diff of a past, successful write as its arguments tell it.

    `edit` shows the replaced text and its replacement; `write_file` shows the content of a
    file it created (for an overwrite the earlier text is no longer known: no diff).
    """
    if call.name == "edit":
        return proposed_change(call, locate)
    args = call.parsed_arguments() or {}
    if call.name != "write_file" or not result.startswith("Created "):
        return None
    path, content = args.get("path"), args.get("content")
    where = locate(path) if isinstance(path, str) else None
    if where is None or not isinstance(content, str):
        return None
    return FileEditToolCallContent(type="diff", path=where, old_text=None, new_text=content)
