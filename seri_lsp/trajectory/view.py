"""Reading recordings: totals, the differences between two headers, and text for people.

Pure functions over what `store.trajectories` returns; the command line prints them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from seri_lsp.settings import SAMPLING_KNOBS
from seri_lsp.store.trajectories import Recorded, RecordingInfo

# The header fields `diff` compares, in the order it shows them (prompt files last).
COMPARED = [
    "model",
    "baseUrl",
    *(f"sampling.{name}" for name in SAMPLING_KNOBS),
    "providerPin",
    "reasoningEffort",
    "contextWindow",
    "keepTokens",
    "elideBytes",
    "maxTurns",
    "stream",
    "permissions.write",
    "permissions.run",
    "checks",
    "seriVersion",
]

TOTALS = [
    ("tasks", "tasks"),
    ("turns", "turns"),
    ("toolCalls", "tool calls"),
    ("tokensIn", "tokens in"),
    ("tokensOut", "tokens out"),
    ("retries", "retries"),
    ("denials", "denials"),
    ("compactions", "compactions"),
    ("compactionFailures", "failed compactions"),
    ("checks", "checks run"),
    ("checkFailures", "check failures"),
]

_MISSING = object()


def totals(events: list[Recorded]) -> dict[str, int]:
    """What a recording adds up to: turns, tokens, retries, denials, compactions, checks."""
    sums = dict.fromkeys((key for key, _ in TOTALS), 0)
    for event in events:
        data = event.data
        if event.kind == "task_ended":
            sums["tasks"] += 1
            sums["turns"] += _int(data.get("turns"))
        elif event.kind == "tool_call":
            sums["toolCalls"] += 1
        elif event.kind == "usage":
            sums["tokensIn"] += _int(data.get("inputTokens"))
            sums["tokensOut"] += _int(data.get("outputTokens"))
        elif event.kind == "retry":
            sums["retries"] += 1
        elif event.kind == "denial":
            sums["denials"] += 1
        elif event.kind == "compaction":
            sums["compactions"] += 1
        elif event.kind == "compaction_failed":
            sums["compactionFailures"] += 1
        elif event.kind == "check":
            sums["checks"] += 1
            if data.get("passed") is not True:
                sums["checkFailures"] += 1
    return sums


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(field, value in a, value in b) for every compared header field that differs.

    Prompt files are compared by path (`promptFiles.<path>`, a missing file as None).
    """
    found = []
    for field in COMPARED:
        left, right = _get(a, field), _get(b, field)
        if left != right:
            found.append((field, _present(left), _present(right)))
    files_a = a.get("promptFiles") or {}
    files_b = b.get("promptFiles") or {}
    for path in [*files_a, *(p for p in files_b if p not in files_a)]:
        if files_a.get(path) != files_b.get(path):
            found.append((f"promptFiles.{path}", files_a.get(path), files_b.get(path)))
    return found


@dataclass(frozen=True)
class Difference:
    """A header field (a setting in force, or `promptFiles.PATH`) that the two differ in."""

    field: str
    a: Any
    b: Any


@dataclass(frozen=True)
class TrajectoryDiff:
    """Everything `trajectory diff` says: the two recordings, what differs in their
    headers, and each one's totals (`{"a": ..., "b": ...}`)."""

    a: RecordingInfo
    b: RecordingInfo
    differences: list[Difference]
    totals: dict[str, dict[str, int]]


def diff_report(
    a: RecordingInfo, a_events: list[Recorded], b: RecordingInfo, b_events: list[Recorded]
) -> TrajectoryDiff:
    """Everything `trajectory diff` says."""
    return TrajectoryDiff(
        a=a,
        b=b,
        differences=[
            Difference(field, left, right) for field, left, right in differences(a.header, b.header)
        ],
        totals={"a": totals(a_events), "b": totals(b_events)},
    )


def diff_lines(report: TrajectoryDiff) -> list[str]:
    """The side-by-side text of `trajectory diff`."""
    a, b = report.a, report.b
    rows: list[tuple[str, str, str]] = [
        ("recording", a.id, b.id),
        ("session", a.session_id, b.session_id),
        ("started", a.started_at, b.started_at),
    ]
    lines = _table(rows, ("", "A", "B"))
    lines.append("")
    settings = [d for d in report.differences if not d.field.startswith("promptFiles.")]
    files = [d for d in report.differences if d.field.startswith("promptFiles.")]
    if settings:
        lines.append("Settings in force that differ:")
        rows = [(_label(d.field), _shown(d.field, d.a), _shown(d.field, d.b)) for d in settings]
        lines += ["  " + line for line in _table(rows)]
    if files:
        lines.append("Prompt files that differ (sha256):")
        project = str(a.project or "")
        rows = []
        for d in files:
            path = d.field.removeprefix("promptFiles.")
            if project and path.startswith(project.rstrip("/") + "/"):
                path = path[len(project.rstrip("/")) + 1 :]
            rows.append((path, _shown(d.field, d.a), _shown(d.field, d.b)))
        lines += ["  " + line for line in _table(rows)]
    if not settings and not files:
        lines.append(
            "The headers match: model, knobs, pin, effort, window, budgets and prompt files."
        )
    lines.append("")
    lines.append("Totals:")
    left, right = report.totals["a"], report.totals["b"]
    rows = [
        (label, str(left[key]), str(right[key]) + ("   *" if left[key] != right[key] else ""))
        for key, label in TOTALS
    ]
    lines += ["  " + line for line in _table(rows)]
    return lines


def list_lines(infos: list[RecordingInfo]) -> list[str]:
    """`trajectory list` for people, newest first."""
    rows = [
        (
            info.id,
            info.started_at[:19].replace("T", " "),
            f"{info.events} events",
            str(info.header.get("model") or "(legacy)"),
            info.session_id,
            info.title or "",
        )
        for info in infos
    ]
    return _table(rows)


def show_lines(info: RecordingInfo, events: list[Recorded]) -> list[str]:
    """`trajectory show` for people: the header, then one line per event."""
    header = info.header
    lines = [
        f"Recording {info.id} of session {info.session_id}"
        + (f" ({header['reason']})" if header.get("reason") else ""),
        f"started {info.started_at}, last record {info.updated_at}",
    ]
    if header.get("legacy"):
        lines.append("(moved from an earlier release's session events: no settings recorded)")
    else:
        knobs = {k: v for k, v in (header.get("sampling") or {}).items() if v is not None}
        lines += [
            f"seri {header.get('seriVersion')}, project {header.get('project')}",
            f"model {header.get('model')} at {header.get('baseUrl')}",
            "sampling "
            + (" ".join(f"{k}={_compact(v)}" for k, v in knobs.items()) or "(provider defaults)"),
            f"provider pin {_compact(header.get('providerPin'))}, reasoning effort "
            f"{_compact(header.get('reasoningEffort'))}",
            f"context window {_compact(header.get('contextWindow'))}, keep "
            f"{header.get('keepTokens')} tokens, elide over {header.get('elideBytes')} bytes, "
            f"{header.get('maxTurns')} turns per task",
            "prompt files:",
        ]
        lines += [
            f"  {sha[:12]}  {path}" for path, sha in (header.get("promptFiles") or {}).items()
        ]
    lines.append(f"events ({len(events)}):")
    for event in events:
        text = json.dumps(event.data, ensure_ascii=False)
        if len(text) > 160:
            text = text[:159] + "…"
        lines.append(f"  {event.seq:>4}  {event.created_at[11:19]}  {event.kind:<17} {text}")
    return lines


def _get(header: dict[str, Any], field: str) -> Any:
    value: Any = header
    for part in field.split("."):
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _present(value: Any) -> Any:
    return None if value is _MISSING else value


def _label(field: str) -> str:
    return field.removeprefix("sampling.")


def _shown(field: str, value: Any) -> str:
    if value is None:
        return "(absent)" if field.startswith("promptFiles.") else "(unset)"
    if field.startswith("promptFiles."):
        return str(value)[:12]
    return _compact(value)


def _compact(value: Any) -> str:
    if value is None:
        return "(unset)"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _table(rows: Sequence[tuple[str, ...]], heading: tuple[str, ...] | None = None) -> list[str]:
    everything = ([heading] if heading else []) + list(rows)
    if not everything:
        return []
    widths = [max(len(row[i]) for row in everything) for i in range(len(everything[0]))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in everything
    ]
