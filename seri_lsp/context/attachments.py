"""What an editor attaches to a prompt (a file, a selection, a buffer), as prompt text.

The editor names a file by its path, relative to the project (an absolute path inside
it is made relative; one outside stays absolute), optionally with a line range and the
text it shows there. What is attached is written into the prompt itself, so it is
stored with the prompt, shown in the transcript and read by the model as the user sent
it:

- with text (a selection, or a buffer with unsaved changes): a block
  `<context path="src/app.py" lines="10-20">` ... `</context>` after the prompt;
- without (a saved file): a mention `@src/app.py (lines 10-20)`, which the model reads
  with `read_file` when it needs to.

The ACP face writes an embedded resource the same way (`context_block`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePath, PurePosixPath

from seri_lsp.store.messages import BLOCK_START, MENTIONS_START


@dataclass(frozen=True)
class Attachment:
    """A file, or lines of it, that the user attached to a prompt."""

    path: str
    start_line: int | None = None
    end_line: int | None = None
    text: str | None = None

    def lines(self) -> str | None:
        """The line range as written in the prompt (`10-20`, `7`), or None for all."""
        if self.start_line is None:
            return None
        end = self.end_line if self.end_line is not None else self.start_line
        return str(self.start_line) if end == self.start_line else f"{self.start_line}-{end}"


def shown_path(path: str, project: PurePath) -> str:
    """`path` relative to the project when it lies inside it (compared as written: no
    disk is read), else as given."""
    candidate = PurePath(path)
    if not candidate.is_absolute():
        return PurePosixPath(*candidate.parts).as_posix() if candidate.parts else "."
    if candidate == project:
        return "."
    if project in candidate.parents:
        return candidate.relative_to(project).as_posix()
    return path


def context_block(where: str, text: str, lines: str | None = None) -> str:
    """A block of attached text: `where` is `path="..."` or `uri="..."`."""
    range_attribute = f' lines="{lines}"' if lines else ""
    opening = BLOCK_START.lstrip("\n")
    return f"{opening}{where}{range_attribute}>\n{text.rstrip(chr(10))}\n</context>"


def with_attachments(text: str, attachments: Sequence[Attachment], project: PurePath) -> str:
    """The prompt as stored: the user's text, then what they attached."""
    if not attachments:
        return text
    mentions: list[str] = []
    blocks: list[str] = []
    for attachment in attachments:
        path = shown_path(attachment.path, project)
        lines = attachment.lines()
        if attachment.text is not None:
            blocks.append(context_block(f'path="{_quoted(path)}"', attachment.text, lines))
        else:
            mention = f"@{path}" + (f" (lines {lines})" if lines else "")
            if mention not in text and mention not in mentions:
                mentions.append(mention)
    joined = text.rstrip()
    if mentions:
        joined += MENTIONS_START + ", @".join(mention[1:] for mention in mentions)
    return "\n\n".join([joined, *blocks])


def _quoted(value: str) -> str:
    """A value for a block's attribute: its double quotes escaped."""
    return value.replace("&", "&amp;").replace('"', "&quot;")
