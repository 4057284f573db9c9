"""A `session/prompt`'s content blocks as the text of a seri prompt.

Text blocks are taken as written. A resource link (an @-mention) becomes `@path`, the
path relative to the project when the file lies in it (the model reads it with
`read_file`), else absolute; a link that is not a file stays a markdown link. An embedded
resource (a file's text sent along) is mentioned the same way in place, and its text
follows the prompt in a `<context path="...">` block (as an LSP editor's attachments,
`seri_lsp.context.attachments`), so the model reads it with its path.
Images and audio are not read by seri; a placeholder says they were left out. A slash
command keeps only its own text.
"""

from __future__ import annotations

import base64
import binascii
import ntpath
import os
import posixpath
import re
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import unquote, urlparse

from acp.schema import (
    AudioContentBlock,
    BlobResourceContents,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
)

from seri_lsp.context.attachments import context_block
from seri_lsp.errors import InvalidArgument
from seri_lsp.limits import shorten
from seri_lsp.slash import parse_slash

ContentBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)


def prompt_text(blocks: Sequence[ContentBlock], project: Path) -> str:
    """The prompt text the engine runs, from the blocks of a `session/prompt`."""
    pieces: list[tuple[str, bool]] = []  # (text, whether it is a mention or placeholder)
    attached: list[str] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            pieces.append((block.text, False))
        elif isinstance(block, ResourceContentBlock):
            pieces.append((_mention(block.uri, block.name, project), True))
        elif isinstance(block, EmbeddedResourceContentBlock):
            pieces.append((_mention(block.resource.uri, None, project), True))
            attached.append(_attachment(block.resource, project))
        elif isinstance(block, ImageContentBlock):
            pieces.append(("[an image was attached; seri does not read images]", True))
        elif isinstance(block, AudioContentBlock):
            pieces.append(("[audio was attached; seri does not read audio]", True))
    command = "\n\n".join(text for text, mention in pieces if not mention).strip()
    if parse_slash(command) is not None:
        return command
    return "\n\n".join(part for part in [_joined(pieces).strip(), *attached] if part)


def _joined(pieces: list[tuple[str, bool]]) -> str:
    """Pieces in order: a mention runs on in its sentence, two texts are two paragraphs."""
    out = ""
    previous_mention = False
    for text, mention in pieces:
        if out and not out[-1].isspace() and not text[:1].isspace():
            out += " " if mention or previous_mention else "\n\n"
        out += text
        previous_mention = mention
    return out


_DRIVE = re.compile(r"/[A-Za-z]:")


def file_uri_path(uri: str, *, windows: bool = os.name == "nt") -> str | None:
    """The absolute path a `file:` URI names; None for another scheme or a relative path.

    On Windows `file:///C:/My%20Project/a.py` (or VS Code's `file:///c%3A/...`) is
    `C:\\My Project\\a.py`, and `file://server/share/a.py` the UNC path
    `\\\\server\\share\\a.py`.
    """
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    text = unquote(parsed.path)
    if parsed.netloc and parsed.netloc != "localhost":
        text = f"//{parsed.netloc}{text}"
    if "\x00" in text:
        raise InvalidArgument("prompt", f"The link {shorten(uri)!r} names no file: it holds a NUL.")
    if windows:
        text = (text[1:] if _DRIVE.match(text) else text).replace("/", "\\")
        return text if ntpath.isabs(text) else None
    return text if posixpath.isabs(text) else None


def _file_path(uri: str) -> Path | None:
    text = file_uri_path(uri)
    return Path(text) if text is not None else None


def _shown_path(path: Path, project: Path) -> str:
    real = Path(os.path.realpath(path))
    for base in (project, Path(os.path.realpath(project))):
        if real == base or base in real.parents:
            return real.relative_to(base).as_posix() or "."
    return str(path)


def _mention(uri: str, name: str | None, project: Path) -> str:
    path = _file_path(uri)
    if path is not None:
        return f"@{_shown_path(path, project)}"
    return f"[{name or uri}]({uri})"


def _attachment(resource: object, project: Path) -> str:
    uri = getattr(resource, "uri", "")
    path = _file_path(uri)
    where = f'path="{_shown_path(path, project)}"' if path is not None else f'uri="{uri}"'
    if isinstance(resource, BlobResourceContents):
        try:
            size = f"{len(base64.b64decode(resource.blob, validate=False))} bytes"
        except (binascii.Error, ValueError):
            size = "binary"
        return context_block(where, f"(binary content, {size}, not shown)")
    return context_block(where, getattr(resource, "text", ""))
