"""Legacy import against odd files: a bad line is skipped and counted, never the start-up.

Each line below is valid JSON of the wrong shape (or JSON Python refuses to read); the
import skips that line, keeps the rest of its file, imports the other files, and leaves
every file as it found it.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from seri_lsp.lsp.wire import to_wire
from seri_lsp.store import legacy
from seri_lsp.store.database import Database
from seri_lsp.store.legacy import FileReport, SkippedLine, find_pending, import_files
from seri_lsp.store.sessions import SessionStore
from tests.harness import command
from tests.test_legacy import good_session, write_legacy

GOOD_CONTENTS = ["Rename foo to bar in app.py", "", "def foo(): ...", "Done: foo is now bar."]

BAD_LINES = {
    "tool_calls is a number": (
        '{"type": "message", "role": "assistant", "content": "", "tool_calls": 5}',
        "tool_calls is not a list (it is 5)",
    ),
    "tool_calls is a string": (
        '{"type": "message", "role": "assistant", "content": "", "tool_calls": "x"}',
        "tool_calls is not a list (it is 'x')",
    ),
    "tool_calls is an object": (
        '{"type": "message", "role": "assistant", "content": "", "tool_calls": {"a": 1}}',
        "tool_calls is not a list (it is {'a': 1})",
    ),
    "tool-call arguments are a number": (
        '{"type": "message", "role": "assistant", "content": "",'
        ' "tool_calls": [{"id": "c9", "name": "read_file", "arguments": 5}]}',
        "the arguments of tool call 'c9' are neither JSON text nor an object (they are 5)",
    ),
    "tool-call arguments are a list": (
        '{"type": "message", "role": "assistant", "content": "",'
        ' "tool_calls": [{"id": "c9", "name": "read_file", "arguments": [1, 2]}]}',
        "the arguments of tool call 'c9' are neither JSON text nor an object",
    ),
    "tool_call_id is a number": (
        '{"type": "message", "role": "tool", "tool_call_id": 5, "content": "?"}',
        "tool_call_id is not a string (it is 5)",
    ),
    "content is a number": (
        '{"type": "message", "role": "user", "content": 5}',
        "content is not a string",
    ),
    "an integer of 5000 digits": (
        '{"type": "message", "role": "user", "content": "x", "n": ' + "7" * 5000 + "}",
        "invalid JSON (a number of more than 4300 digits)",
    ),
    "the line is null": ("null", "not a JSON object"),
    "the line is a list": ("[1, 2, 3]", "not a JSON object"),
    "the line is a string": ('"text"', "not a JSON object"),
}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SessionStore]:
    db = Database.open(tmp_path / "seri.db")
    yield SessionStore(db)
    db.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return Path(os.path.realpath(folder))


def snapshot(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


def import_all(root: Path, store: SessionStore) -> dict[str, FileReport]:
    """Import the pending legacy files of `root`, by file name."""
    pending, _ = find_pending(root, store)
    return {Path(report.path).name: report for report in import_files(pending, store).files}


@pytest.mark.parametrize(("line", "reason"), BAD_LINES.values(), ids=BAD_LINES.keys())
def test_a_line_of_the_wrong_shape_is_skipped_and_the_rest_imported(
    tmp_path: Path, store: SessionStore, project: Path, line: str, reason: str
) -> None:
    lines = good_session("legacy-odd", project)
    lines.insert(2, line)
    odd = write_legacy(tmp_path, "odd.jsonl", lines)
    fine = write_legacy(tmp_path, "fine.jsonl", good_session("legacy-fine", project))
    before = {path: snapshot(path) for path in (odd, fine)}

    reports = import_all(tmp_path, store)

    assert reports["odd.jsonl"].outcome == "imported"
    [skipped] = reports["odd.jsonl"].skipped_lines
    assert skipped.line == 3 and skipped.reason.startswith(reason)
    assert [m.content for m in store.messages("legacy-odd")] == GOOD_CONTENTS
    assert reports["fine.jsonl"].outcome == "imported"
    assert len(store.messages("legacy-fine")) == 4
    assert {path: snapshot(path) for path in (odd, fine)} == before
    assert find_pending(tmp_path, store) == ([], 2)


HUGE_COUNT = '{"input_tokens": 1' + "0" * 30 + "}"


@pytest.mark.parametrize("usage", ["[1]", HUGE_COUNT, '{"input_tokens": "9"}'])
def test_a_token_count_of_the_wrong_shape_is_ignored_and_its_message_kept(
    tmp_path: Path, store: SessionStore, project: Path, usage: str
) -> None:
    lines = good_session("legacy-usage", project)
    lines.append(
        '{"type": "message", "role": "user", "content": "and then?", "usage": ' + usage + "}"
    )
    write_legacy(tmp_path, "usage.jsonl", lines)
    report = import_all(tmp_path, store)["usage.jsonl"]
    assert report.outcome == "imported" and report.skipped_lines == []
    assert [m.content for m in store.messages("legacy-usage")] == [*GOOD_CONTENTS, "and then?"]


@pytest.mark.parametrize("created", ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"])
def test_a_created_time_beyond_the_calendar_falls_back_to_the_files_date(
    tmp_path: Path, store: SessionStore, project: Path, created: str
) -> None:
    lines = good_session("legacy-old", project)
    lines[0]["created"] = created  # type: ignore[index]
    path = write_legacy(tmp_path, "old.jsonl", lines)
    os.utime(path, (1_700_000_000, 1_700_000_000))
    write_legacy(tmp_path, "fine.jsonl", good_session("legacy-fine", project))

    reports = import_all(tmp_path, store)

    assert reports["old.jsonl"].outcome == "imported" and reports["old.jsonl"].skipped_lines == []
    assert store.get("legacy-old").created_at == "2023-11-14T22:13:20.000000Z"
    assert reports["fine.jsonl"].outcome == "imported"


def test_a_session_line_whose_cwd_holds_a_nul_is_skipped(
    tmp_path: Path, store: SessionStore, project: Path
) -> None:
    lines = good_session("legacy-nul", project)
    lines[0]["cwd"] = f"{project}\0x"  # type: ignore[index]
    write_legacy(tmp_path, "nul.jsonl", lines)
    write_legacy(tmp_path, "fine.jsonl", good_session("legacy-fine", project))

    reports = import_all(tmp_path, store)

    assert reports["nul.jsonl"].outcome == "failed"
    assert reports["nul.jsonl"].reason == "it has no valid session line"
    assert reports["nul.jsonl"].skipped_lines[0] == SkippedLine(
        1, "the session line's cwd contains a NUL character"
    )
    assert reports["fine.jsonl"].outcome == "imported"


def test_a_file_whose_name_is_not_utf8_is_reported_and_the_others_import(
    tmp_path: Path, store: SessionStore, project: Path
) -> None:
    folder = write_legacy(tmp_path, "fine.jsonl", good_session("legacy-fine", project)).parent
    odd = Path(os.fsdecode(os.path.join(os.fsencode(folder), b"caf\xe9.jsonl")))
    odd.write_text(json.dumps(good_session("legacy-latin1", project)[0]) + "\n")

    reports = import_all(tmp_path, store)

    assert reports["fine.jsonl"].outcome == "imported"
    failed = reports["caf\\xe9.jsonl"]
    assert failed.outcome == "failed"
    assert failed.reason == "its name is not valid UTF-8; rename it to import it"
    json.dumps(to_wire(failed), ensure_ascii=False).encode("utf-8")  # it can be sent
    # Not recorded: once renamed it imports.
    assert find_pending(tmp_path, store) == ([odd], 1)


def test_a_file_dated_past_2262_is_imported_once(
    tmp_path: Path, store: SessionStore, project: Path
) -> None:
    path = write_legacy(tmp_path, "future.jsonl", good_session("legacy-future", project))
    # In ns, beyond SQLite's 64-bit integers.
    year_2400 = int(datetime(2400, 1, 1, tzinfo=UTC).timestamp()) * 10**9
    os.utime(path, ns=(year_2400, year_2400))
    if path.stat().st_mtime_ns != year_2400:
        pytest.skip("this file system cannot date a file in 2400")

    assert import_all(tmp_path, store)["future.jsonl"].outcome == "imported"
    assert store.get("legacy-future").updated_at.startswith("2400-01-01")
    assert find_pending(tmp_path, store) == ([], 1)


def test_an_unforeseen_error_on_one_line_skips_that_line_only(
    tmp_path: Path,
    store: SessionStore,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    real_chars_of = legacy.chars_of

    def chars_of(content, thinking, arguments=()):  # a bug that only some lines reach
        if content == "boom":
            raise TypeError("a bug of ours")
        return real_chars_of(content, thinking, arguments)

    monkeypatch.setattr(legacy, "chars_of", chars_of)
    lines = good_session("legacy-boom", project)
    boom = {"type": "message", "role": "assistant", "content": "boom"}
    lines[2:2] = [boom, boom]
    write_legacy(tmp_path, "boom.jsonl", lines)
    write_legacy(tmp_path, "fine.jsonl", good_session("legacy-fine", project))

    with caplog.at_level(logging.ERROR, logger=legacy.__name__):
        reports = import_all(tmp_path, store)

    reason = "an unexpected error while reading it (TypeError: a bug of ours)"
    assert reports["boom.jsonl"].skipped_lines == [SkippedLine(3, reason), SkippedLine(4, reason)]
    assert [m.content for m in store.messages("legacy-boom")] == GOOD_CONTENTS
    assert reports["fine.jsonl"].outcome == "imported"
    # One traceback per file is logged, to find the fault by.
    assert [r.exc_info is not None for r in caplog.records] == [True]


def test_an_unforeseen_error_on_one_file_fails_that_file_only(
    tmp_path: Path,
    store: SessionStore,
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    real_make_title = legacy.make_title

    def make_title(text: str) -> str:  # a bug that only one file reaches
        if text == "crash":
            raise RuntimeError("a bug of ours")
        return real_make_title(text)

    monkeypatch.setattr(legacy, "make_title", make_title)
    lines = good_session("legacy-crash", project)
    lines[1]["content"] = "crash"  # type: ignore[index]
    crash = write_legacy(tmp_path, "crash.jsonl", lines)
    write_legacy(tmp_path, "fine.jsonl", good_session("legacy-fine", project))

    with caplog.at_level(logging.ERROR, logger=legacy.__name__):
        reports = import_all(tmp_path, store)

    assert reports["crash.jsonl"].outcome == "failed"
    assert "RuntimeError: a bug of ours" in (reports["crash.jsonl"].reason or "")
    assert store.find_exact("legacy-crash") is None  # nothing half-imported
    assert reports["fine.jsonl"].outcome == "imported"
    assert any(r.exc_info is not None and "crash.jsonl" in r.message for r in caplog.records)
    # Not recorded: a release without the fault imports it.
    assert find_pending(tmp_path, store) == ([crash], 1)


def test_an_interrupt_during_the_import_is_not_swallowed(
    tmp_path: Path, store: SessionStore, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(text: str) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr(legacy, "make_title", interrupted)
    write_legacy(tmp_path, "fine.jsonl", good_session("legacy-fine", project))
    pending, _ = find_pending(tmp_path, store)
    with pytest.raises(KeyboardInterrupt):
        import_files(pending, store)


async def test_the_server_starts_and_keeps_the_good_lines_of_an_odd_file(
    lsp, profile_root: Path, workspace: Path
) -> None:
    lines = good_session("legacy-odd", workspace)
    lines[0]["created"] = "0001-01-01T00:00:00+01:00"  # type: ignore[index]
    bad = [line for line, _ in BAD_LINES.values()]
    lines[2:2] = bad
    odd = write_legacy(profile_root, "odd.jsonl", lines)
    fine = write_legacy(profile_root, "fine.jsonl", good_session("legacy-fine", workspace))
    before = {path: snapshot(path) for path in (odd, fine)}

    client = await lsp()
    listed = await command(client, "seri.session.list", {})
    assert sorted(s["id"] for s in listed["sessions"]) == ["legacy-fine", "legacy-odd"]
    view = await command(client, "seri.session.get", {"sessionId": "legacy-odd"})
    assert [m["content"] for m in view["messages"]] == GOOD_CONTENTS
    logs = [m.message for m in client.log_messages]
    for number in range(3, 3 + len(bad)):
        assert any(f"odd.jsonl line {number} skipped" in log for log in logs), number
    report = await command(client, "seri.legacy.import", {})
    assert report["alreadyImported"] == 2
    assert {path: snapshot(path) for path in (odd, fine)} == before
