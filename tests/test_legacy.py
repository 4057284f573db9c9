"""Importing `sessions/*.jsonl` from an older release: once, read-only, bad lines reported."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from lsprotocol import types

from seri_lsp.store.database import Database
from seri_lsp.store.legacy import find_pending, import_files
from seri_lsp.store.sessions import SessionStore
from tests.harness import CLIENTS, command, shown_messages, stop_server, wait_until


def write_legacy(profile_root: Path, name: str, lines: list[object]) -> Path:
    folder = profile_root / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    )
    return path


def good_session(session_id: str, project: Path) -> list[object]:
    return [
        {
            "type": "session",
            "id": session_id,
            "cwd": str(project),
            "created": "2025-03-01T10:00:00Z",
        },
        {"type": "message", "role": "user", "content": "Rename foo to bar in app.py"},
        {
            "type": "message",
            "role": "assistant",
            "content": "",
            "thinking": "I should read it first.",
            "tool_calls": [{"id": "c1", "name": "read_file", "arguments": {"path": "app.py"}}],
        },
        {"type": "message", "role": "tool", "tool_call_id": "c1", "content": "def foo(): ..."},
        {
            "type": "message",
            "role": "assistant",
            "content": "Done: foo is now bar.",
            "usage": {"input_tokens": 1234},
        },
    ]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("client_name", CLIENTS)
async def test_a_good_file_is_imported_once_and_left_unchanged(
    lsp, client_name, profile_root: Path, workspace: Path
) -> None:
    path = write_legacy(profile_root, "old.jsonl", good_session("legacy-1", workspace))
    before = (digest(path), path.stat().st_mtime_ns)

    client = await lsp(client_name=client_name)
    view = await command(client, "seri.session.get", {"sessionId": "legacy-1"})
    assert view["session"]["project"] == str(workspace)
    assert view["session"]["title"] == "Rename foo to bar in app.py"
    assert [m["role"] for m in view["messages"]] == ["user", "assistant", "tool", "assistant"]
    call = view["messages"][1]
    assert call["thinking"] == "I should read it first."
    assert call["tool_calls"] == [
        {"id": "c1", "name": "read_file", "arguments": '{"path": "app.py"}'}
    ]
    assert view["messages"][2]["tool_call_id"] == "c1"
    # The paths its tools touched, as a session's path lists show them.
    assert view["paths"] == {"read": ["app.py"], "modified": []}
    # The last billed input-token count came along.
    assert view["usage"]["estimateTokens"] == 1234
    # It kept its legacy id, so resume finds it, and it is the project's latest session.
    assert (await command(client, "seri.session.resume", {"sessionId": "legacy-1"}))["session"]
    assert (digest(path), path.stat().st_mtime_ns) == before

    await stop_server(client)
    again = await lsp(client_name=client_name)
    report = await command(again, "seri.legacy.import", {})
    assert report["imported"] == 0 and report["alreadyImported"] == 1
    listed = await command(again, "seri.session.list", {})
    assert [s["id"] for s in listed["sessions"]] == ["legacy-1"]
    assert (digest(path), path.stat().st_mtime_ns) == before


async def test_bad_lines_are_skipped_counted_and_reported_with_line_numbers(
    lsp, profile_root: Path, workspace: Path
) -> None:
    lines = good_session("legacy-2", workspace)
    lines.insert(2, "{this is not json")
    lines.insert(4, {"type": "message", "role": "wizard", "content": "?"})
    lines.append({"type": "message", "role": "tool", "content": "no call id"})
    path = write_legacy(profile_root, "broken.jsonl", lines)
    before = digest(path)

    client = await lsp()
    # The warning comes once the file is read, after the log line of each bad line.
    warning = await wait_until(lambda: shown_messages(client, containing="skipped 3 bad line"))
    assert warning
    logs = [m.message for m in client.log_messages if "line" in m.message]
    assert any(f"{path} line 3 skipped" in log and "invalid JSON" in log for log in logs)
    assert any("line 5 skipped" in log and "wizard" in log for log in logs)
    assert any("line 8 skipped" in log and "tool_call_id" in log for log in logs)

    view = await command(client, "seri.session.get", {"sessionId": "legacy-2"})
    assert len(view["messages"]) == 4  # the good ones are kept
    assert digest(path) == before


async def test_the_import_command_reports_files_and_skipped_lines(
    lsp, profile_root: Path, workspace: Path
) -> None:
    client = await lsp()
    await command(client, "seri.session.list", {})  # start-up (and its import) is over
    lines = good_session("legacy-3", workspace)
    lines.insert(1, "[1, 2, 3]")
    write_legacy(profile_root, "late.jsonl", lines)
    write_legacy(profile_root, "headless.jsonl", [{"type": "message", "role": "user"}])
    report = await command(client, "seri.legacy.import", {})
    assert report["imported"] == 1
    assert report["skippedLines"] == 2
    by_name = {Path(f["path"]).name: f for f in report["files"]}
    assert by_name["late.jsonl"]["outcome"] == "imported"
    assert by_name["late.jsonl"]["skippedLines"] == [{"line": 2, "reason": "not a JSON object"}]
    assert by_name["headless.jsonl"]["outcome"] == "failed"
    assert "no valid session line" in by_name["headless.jsonl"]["reason"]
    # Reported once: a second run has nothing new.
    again = await command(client, "seri.legacy.import", {})
    assert again["files"] == [] and again["alreadyImported"] == 2


async def test_the_import_reports_progress_while_it_runs(
    lsp, profile_root: Path, workspace: Path
) -> None:
    for index in range(3):
        write_legacy(profile_root, f"s{index}.jsonl", good_session(f"legacy-p{index}", workspace))
    client = await lsp()
    await wait_until(lambda: client.seri["seri/sessionChanged"])
    reports = [
        values
        for values in client.progress_reports.values()
        if values and getattr(values[0], "title", "") == "seri: importing legacy sessions"
    ]
    assert reports, client.progress_reports
    kinds = [value.kind for value in reports[0]]
    assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds


def test_a_changed_id_clash_is_reported_not_overwritten(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    db = Database.open(tmp_path / "seri.db")
    store = SessionStore(db)
    write_legacy(tmp_path, "a.jsonl", good_session("same-id", project))
    write_legacy(tmp_path, "b.jsonl", good_session("same-id", project)[:2])
    pending, already = find_pending(tmp_path, store)
    assert (len(pending), already) == (2, 0)
    report = import_files(pending, store)
    outcomes = {Path(f.path).name: f.outcome for f in report.files}
    assert outcomes == {"a.jsonl": "imported", "b.jsonl": "conflict"}
    assert len(store.messages("same-id")) == 4
    assert find_pending(tmp_path, store) == ([], 2)
    db.close()


async def test_the_import_runs_once_across_two_processes(
    lsp, profile_root: Path, workspace: Path
) -> None:
    for index in range(5):
        write_legacy(profile_root, f"s{index}.jsonl", good_session(f"shared-{index}", workspace))
    first = await lsp(init_options={"resumeOnOpen": False})
    second = await lsp(init_options={"resumeOnOpen": False})
    listed = await command(second, "seri.session.list", {})
    assert sorted(s["id"] for s in listed["sessions"]) == [f"shared-{i}" for i in range(5)]
    for client in (first, second):
        view = await command(client, "seri.session.get", {"sessionId": "shared-0"})
        assert len(view["messages"]) == 4
    assert not [m for m in first.messages if m.type == types.MessageType.Error]


def test_an_imported_history_lists_the_paths_its_answered_tool_calls_touched(
    tmp_path: Path, workspace: Path
) -> None:
    def assistant(*calls: tuple[str, str, object]) -> dict[str, object]:
        return {
            "type": "message",
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": i, "name": n, "arguments": a} for i, n, a in calls],
        }

    def result(call_id: str) -> dict[str, object]:
        return {"type": "message", "role": "tool", "tool_call_id": call_id, "content": "ok"}

    lines = good_session("legacy-paths", workspace)[:2]
    lines += [
        assistant(
            ("c1", "read_file", {"path": "src/a.py"}),
            ("c2", "write_file", {"path": str(workspace / "src" / "b.py")}),
            ("c3", "edit", '{"path": "./src/../a.py"}'),
            ("c4", "read_file", {"path": "../outside.txt"}),
            ("c5", "list_dir", {"path": "src"}),
            ("c6", "read_file", '{"path": "lone-\\ud83d.py"}'),
        ),
        *(result(c) for c in ("c1", "c2", "c3", "c4", "c5", "c6")),
        # The same id in a later turn pairs with its own call; an unanswered call is left out.
        assistant(("c1", "edit", {"path": "src/a.py"}), ("c9", "write_file", {"path": "z.py"})),
        result("c1"),
    ]
    write_legacy(tmp_path, "paths.jsonl", lines)
    db = Database.open(tmp_path / "seri.db")
    try:
        store = SessionStore(db)
        pending, _ = find_pending(tmp_path, store)
        import_files(pending, store)
        paths = store.paths("legacy-paths")
    finally:
        db.close()
    assert paths.read == ()
    assert paths.modified == ("src/a.py", "src/b.py", "a.py")
