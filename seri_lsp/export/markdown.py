"""A session as a markdown transcript, for people to read (`seri.session.export {format:
"markdown"}`).

The title, then the date, project and model; each prompt under `## You` and each reply
under `## seri`, and after a task that did not end normally how it ended; every tool
call folded in a `<details>` block with its arguments and its result (a long result cut,
with its size said); the recap as a quoted block. It is made from an export bundle
(`bundle.py`), so it carries nothing the bundle does not: no absolute path of the
workspace, no secret.
"""

from __future__ import annotations

import json
import re
from typing import Any

# A tool result longer than this is cut in the transcript.
RESULT_CHARS = 2_000
_FENCE = re.compile(r"`{3,}")


def transcript(bundle: dict[str, Any], *, model: str | None) -> str:
    """The markdown transcript of an export bundle."""
    lines = [f"# {bundle['title'] or 'Untitled session'}", ""]
    facts = [
        f"Started {bundle['createdAt'][:16].replace('T', ' ')} UTC",
        f"last active {bundle['updatedAt'][:16].replace('T', ' ')} UTC",
        f"project `{bundle['project']}`",
    ]
    if model:
        facts.append(f"model `{model}`")
    lines += ["; ".join(facts) + f". Session `{bundle['sessionId']}`.", ""]
    results = {
        message["tool_call_id"]: message
        for message in bundle["messages"]
        if message["role"] == "tool"
    }
    for message in bundle["messages"]:
        lines += _message(message, results)
        lines += _turn_end(message.get("turnEnded"))
    return "\n".join(lines).rstrip("\n") + "\n"


def _turn_end(ended: dict[str, Any] | None) -> list[str]:
    """How a task ended, after its last message, when it did not end normally."""
    if ended is None or ended["status"] == "done":
        return []
    error = ended.get("error") or ""
    if ended["status"] == "cancelled":
        return ["_Cancelled._", ""]
    if ended["status"] == "failed":
        return [f"_The task failed: {error or 'no reason given'}_", ""]
    return [f"_{error or 'The task stopped before it ended.'}_", ""]


def _message(message: dict[str, Any], results: dict[str, dict[str, Any]]) -> list[str]:
    role, kind, content = message["role"], message.get("kind"), message["content"]
    if role == "tool":
        return []  # shown with its call
    if kind == "recap":
        quoted = "\n".join(f"> {line}" if line else ">" for line in content.splitlines())
        return ["> **Recap of the earlier conversation**", ">", quoted, ""]
    if kind == "rule":
        return [*_details("A rule for the files touched", content), ""]
    if role == "user":
        heading = "## Checks" if kind == "check" else "## You"
        return [heading, "", content, ""]
    lines = ["## seri", ""]
    if message.get("thinking"):
        lines += [*_details("Thinking", message["thinking"]), ""]
    if content:
        lines += [content, ""]
    for call in message.get("tool_calls", []):
        lines += [*_call(call, results.get(call["id"])), ""]
    return lines


def _call(call: dict[str, Any], result: dict[str, Any] | None) -> list[str]:
    lines = [
        "<details>",
        f"<summary>{_summary(call)}</summary>",
        "",
        "Arguments:",
        "",
        *_fenced(_pretty(call["arguments"]), "json"),
        "",
    ]
    if result is None:
        lines.append("No result (the task was cut short).")
    else:
        text = result["content"]
        label = "Error" if result.get("isError") else "Result"
        if len(text) > RESULT_CHARS:
            label += f" (the first {RESULT_CHARS:,} of {len(text):,} characters)"
            text = text[:RESULT_CHARS] + "\n…"
        lines += [f"{label}:", "", *_fenced(text, "")]
    return [*lines, "", "</details>"]


def _summary(call: dict[str, Any]) -> str:
    """`read_file src/a.py`: the tool and its first short argument, HTML-escaped."""
    try:
        arguments = json.loads(call["arguments"])
    except (ValueError, RecursionError):
        arguments = None
    first = ""
    if isinstance(arguments, dict):
        first = next((v for v in arguments.values() if isinstance(v, str) and v), "")
        first = " ".join(first.split())
        first = first if len(first) <= 80 else first[:79] + "…"
    text = f"{call['name']} {first}".strip()
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return f"<code>{escaped}</code>"


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return arguments


def _details(summary: str, text: str) -> list[str]:
    return ["<details>", f"<summary>{summary}</summary>", "", text, "", "</details>"]


def _fenced(text: str, language: str) -> list[str]:
    """`text` in a code fence longer than any run of backticks inside it."""
    longest = max((len(run) for run in _FENCE.findall(text)), default=2)
    fence = "`" * (longest + 1)
    return [fence + language, text, fence]
