"""Histories for the benchmarks: a coding conversation of any length, as a legacy JSONL file.

Every four messages are one exchange: a prompt, an assistant message that reads a file
(a tool call), the tool's result (a 1.2 kB file) and the assistant's answer. A file of
10,000 messages is about 4 MB. The JSONL file is what the legacy import reads, and,
imported, the session that resume and `seri.session.get` are timed on.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

SOURCE = "def handler(request):\n    return respond(request, status=200)\n" * 20
ANSWER = (
    "The handler answers every request with status 200; the tests cover the error "
    "paths, so the next step is to make it read the status from the route table. " * 2
)


def records(count: int) -> list[dict[str, Any]]:
    """`count` message records in the legacy line format, oldest first."""
    lines: list[dict[str, Any]] = []
    for index in range(count):
        exchange, step = divmod(index, 4)
        call_id = f"call_{exchange}"
        if step == 0:
            record = {"role": "user", "content": f"Question {exchange}: why does it return 200?"}
        elif step == 1:
            arguments = json.dumps({"path": f"src/handler_{exchange % 50}.py"})
            record = {
                "role": "assistant",
                "content": "Let me read the handler.",
                "tool_calls": [{"id": call_id, "name": "read_file", "arguments": arguments}],
            }
        elif step == 2:
            record = {"role": "tool", "content": SOURCE, "tool_call_id": call_id}
        else:
            record = {"role": "assistant", "content": ANSWER, "usage": {"input_tokens": 1000}}
        lines.append({"type": "message", **record})
    return lines


def write_legacy_file(path: Path, session_id: str, project: Path, count: int) -> Path:
    """A legacy `sessions/*.jsonl` file holding one session of `count` messages."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {
        "type": "session",
        "id": session_id,
        "cwd": os.path.realpath(project),
        "created": "2025-01-01T00:00:00Z",
    }
    with path.open("w", encoding="utf-8") as handle:
        for record in [header, *records(count)]:
            handle.write(json.dumps(record) + "\n")
    return path
