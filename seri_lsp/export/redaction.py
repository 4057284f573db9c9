"""What must not leave in an export: secrets, and the workspace's absolute paths.

Secrets: the API keys seri is configured with, wherever they appear, and text of the
common key shapes (`sk-...`, `Bearer ...`, GitHub's `ghp_...` and kin, AWS access key
ids `AKIA...`, private key blocks) become `[redacted]`, counted. Absolute paths inside
the workspace become workspace-relative (`/home/me/app/src/a.py` is `src/a.py`, the
folder itself `.`, a `file://` URI too); absolute paths elsewhere are kept and listed,
so whoever shares the export sees what it names.

A tool call's arguments are JSON text: they are decoded and their strings filtered, so
that `\\n` escapes and `\\/` hide nothing; the text is re-encoded only when something
changed, and stays valid JSON.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from seri_lsp.settings import API_KEY_ENV

REDACTED = "[redacted]"
# A configured key shorter than this is no key (and replacing it would mangle the text).
MIN_SECRET_CHARS = 8

_KEY_SHAPES = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*\Z)"
    r"|(?<![A-Za-z0-9])sk-[A-Za-z0-9_\-]{20,}"
    r"|(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"
    r"|(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"
    r"|(?P<bearer>(?<![A-Za-z0-9])Bearer\s+)[A-Za-z0-9._~+/=\-]{8,}",
    re.DOTALL,
)
# Characters of a file or folder name, for telling where a path ends.
_NAME = r"[\w\-~@+]"
# An absolute POSIX path of at least two parts, not inside a URL or another path.
_ABSOLUTE = re.compile(r"(?<![\w.~@+\-/\\:])/[\w.@+\-~]+(?:/[\w.@+\-~]+)+")


def configured_secrets(
    api_key: str | None, env: Mapping[str, str] = os.environ
) -> list[str | None]:
    """The API keys an export must not carry: the configured one, and those in the
    environment (whichever of them the settings chose)."""
    return [api_key, *(env.get(name) for name in API_KEY_ENV)]


class ExportFilter:
    """Filters the text of one export; `redactions` and `outside` say what it did."""

    def __init__(self, workspace: str, secrets: Iterable[str | None]) -> None:
        self.redactions = 0
        self.outside: set[str] = set()
        self._secrets = sorted(
            {s for s in secrets if s and len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True
        )
        root = workspace.rstrip("/\\")
        # A root that is the file system's own ("/") would make every path relative.
        self._root = (
            re.compile(
                rf"(?<![\w.~@+\-/\\])(?:file://)?{re.escape(root)}(?!{_NAME}|\.\w)(?P<sep>[/\\](?={_NAME}|\.))?"
            )
            if root.strip("/\\")
            else None
        )

    def text(self, value: str) -> str:
        """`value` with secrets redacted and workspace paths made relative (and the
        other absolute paths it names noted)."""
        for secret in self._secrets:
            count = value.count(secret)
            if count:
                self.redactions += count
                value = value.replace(secret, REDACTED)
        value = _KEY_SHAPES.sub(self._redact, value)
        if self._root is not None:
            value = self._root.sub(lambda m: "" if m.group("sep") else ".", value)
        self.outside.update(path.rstrip(".") for path in _ABSOLUTE.findall(value))
        return value

    def arguments(self, value: str) -> str:
        """A tool call's JSON arguments, filtered inside (as text when not JSON)."""
        try:
            decoded = json.loads(value)
        except (ValueError, RecursionError):
            return self.text(value)
        filtered = self._walk(decoded)
        if filtered == decoded:
            return value
        return json.dumps(filtered, ensure_ascii=False)

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self._walk(item) for item in value]
        if isinstance(value, dict):
            return {self.text(key): self._walk(item) for key, item in value.items()}
        return value

    def _redact(self, match: re.Match[str]) -> str:
        self.redactions += 1
        return (match.group("bearer") or "") + REDACTED
