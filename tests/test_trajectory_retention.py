"""Retention of recordings at every session open: legacy files by modification time,
recordings in seri.db by their session's newest record; recordings in progress and
conversations are never pruned."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import pytest
from lsprotocol import types

from seri_lsp.store.trajectories import cutoff_for
from tests.agent_helpers import prompt
from tests.harness import command, shown_messages, stop_server, wait_until
from tests.scripted_provider import ScriptedProvider, Text
from tests.test_legacy import good_session, write_legacy
from tests.trajectory_helpers import (
    age_session,
    days_ago,
    recording,
    recordings_of,
    rows,
    write,
)

DAY = 86400
RETENTION = "SERI_TRAJECTORY_RETENTION_DAYS"


def aged_file(path: Path, days: float, text: str = '{"type": "event"}\n') -> Path:
    path.write_text(text)
    moment = time.time() - days * DAY
    os.utime(path, (moment, moment))
    return path


def pruned_log(client) -> list[str]:
    return [m.message for m in client.log_messages if "Trajectory retention" in m.message]


@pytest.mark.parametrize(
    ("env", "gone_days", "kept_days"),
    [(None, 31, 29), ("10", 11, 9), ("0.5", 1, 0.25), ("soon", 31, 29)],
)
async def test_legacy_trajectory_files_go_by_modification_time(
    lsp, profile_root: Path, workspace: Path, env: str | None, gone_days: float, kept_days: float
) -> None:
    folder = profile_root / "trajectories"
    folder.mkdir(parents=True)
    old = aged_file(folder / "old.jsonl", gone_days)
    recent = aged_file(folder / "recent.jsonl", kept_days)
    other = aged_file(folder / "notes.txt", 400)
    # The legacy sessions/ folder is never written, however old its files.
    legacy = write_legacy(profile_root, "ancient.jsonl", good_session("ancient", workspace))
    os.utime(legacy, (time.time() - 400 * DAY,) * 2)
    legacy_before = hashlib.sha256(legacy.read_bytes()).hexdigest(), legacy.stat().st_mtime_ns
    linked = folder / "linked.jsonl"  # a link into sessions/ is not followed
    linked.symlink_to(legacy)

    client = await lsp(env={RETENTION: env} if env is not None else {})
    assert (await command(client, "seri.session.get", {}))["session"]["id"] == "ancient"

    assert not old.exists()
    assert recent.exists() and other.exists() and linked.is_symlink()
    assert (hashlib.sha256(legacy.read_bytes()).hexdigest(), legacy.stat().st_mtime_ns) == (
        legacy_before
    )
    [logged] = await wait_until(lambda: pruned_log(client))
    assert "old.jsonl" in logged and "recent.jsonl" not in logged
    if env == "soon":
        warnings = shown_messages(client, types.MessageType.Warning)
        assert any(f"{RETENTION}='soon'" in w and "default 30 days" in w for w in warnings)


async def test_database_recordings_go_by_their_sessions_newest_record(
    lsp, agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    provider.script(*(Text(f"answer {n}") for n in range(4)))
    first = await agent()
    ids = {}
    for name in ("old", "touched", "mixed", "open"):
        ids[name] = (await command(first, "seri.session.new", {}))["session"]["id"]
        await prompt(first, f"prompt in {name}")
    await command(first, "seri.session.resume", {"sessionId": ids["mixed"]})
    await stop_server(first)
    [mixed_old, mixed_new] = recordings_of(profile_root, ids["mixed"])
    messages_before = dict(
        rows(profile_root, "SELECT session_id, COUNT(*) FROM messages GROUP BY session_id")
    )

    # Everything of "old" is 40 days old. "touched" started 40 days ago but its newest
    # record is from yesterday. One of "mixed"'s two recordings is old. "open" is old
    # too, but it is the project's latest session, so the next start continues it.
    for name in ("old", "touched", "open"):
        age_session(profile_root, ids[name], 40)
    write(
        profile_root,
        "UPDATE trajectories SET updated_at = ? WHERE session_id = ?",
        (days_ago(1), ids["touched"]),
    )
    write(
        profile_root,
        "UPDATE trajectories SET started_at = ?, updated_at = ? WHERE id = ?",
        (days_ago(40), days_ago(40), mixed_old),
    )
    write(
        profile_root,
        "UPDATE sessions SET updated_at = ? WHERE id = ?",
        ("2999-01-01T00:00:00.000000Z", ids["open"]),
    )
    (open_old,) = recordings_of(profile_root, ids["open"])

    second = await lsp(init_options={"resumeOnOpen": True})
    assert (await command(second, "seri.session.get", {}))["session"]["id"] == ids["open"]

    assert recordings_of(profile_root, ids["old"]) == []
    assert len(recordings_of(profile_root, ids["touched"])) == 1
    assert recordings_of(profile_root, ids["mixed"]) == [mixed_old, mixed_new]
    # The session being recorded is never pruned, however old its records.
    in_progress = (await recording(second))["id"]
    assert recordings_of(profile_root, ids["open"]) == [open_old, in_progress]
    # Events went with their recordings; conversations never go.
    orphans = rows(
        profile_root,
        "SELECT COUNT(*) FROM trajectory_events"
        " WHERE trajectory_id NOT IN (SELECT id FROM trajectories)",
    )
    assert orphans == [(0,)]
    messages_after = dict(
        rows(profile_root, "SELECT session_id, COUNT(*) FROM messages GROUP BY session_id")
    )
    assert messages_after == messages_before
    assert rows(profile_root, "SELECT COUNT(*) FROM sessions") == [(4,)]
    [logged] = await wait_until(lambda: pruned_log(second))
    assert ids["old"] in logged and "1 recording(s) of 1 session(s)" in logged
    assert ids["touched"] not in logged and ids["open"] not in logged


async def test_zero_days_keeps_only_the_sessions_being_recorded(
    lsp, agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    provider.script(Text("zero"), Text("one"), Text("two"), Text("three"))
    first = await agent()
    left = (await command(first, "seri.session.new", {}))["session"]["id"]
    await prompt(first, "in a session nobody records now")
    earlier = (await command(first, "seri.session.new", {}))["session"]["id"]
    await prompt(first, "in the earlier session")
    held = (await command(first, "seri.clear", {}))["session"]["id"]
    await prompt(first, "in the session the first window keeps open")
    (held_recording,) = recordings_of(profile_root, held)
    held_events = rows(
        profile_root,
        "SELECT COUNT(*) FROM trajectory_events WHERE trajectory_id = ?",
        (held_recording,),
    )
    (earlier_recording,) = recordings_of(profile_root, earlier)

    # A second window: its start continues the earlier session (the other is held).
    second = await lsp(init_options={"resumeOnOpen": True}, env={RETENTION: "0"})
    assert (await command(second, "seri.session.get", {}))["session"]["id"] == earlier
    in_progress = (await recording(second))["id"]
    assert recordings_of(profile_root, left) == []  # pruned: nobody records it
    # The session being recorded is never pruned: its earlier recording stays too.
    assert sorted(recordings_of(profile_root, earlier)) == sorted([earlier_recording, in_progress])
    # The first window's recording in progress is left alone, with all its events.
    assert recordings_of(profile_root, held) == [held_recording]
    assert (
        rows(
            profile_root,
            "SELECT COUNT(*) FROM trajectory_events WHERE trajectory_id = ?",
            (held_recording,),
        )
        == held_events
    )
    await prompt(first, "still recording")
    assert (await recording(first))["id"] == held_recording
    assert "still recording" in [
        e["data"].get("prompt") for e in (await recording(first))["events"]
    ]


async def test_a_recording_pruned_meanwhile_starts_again_under_its_id(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    provider.script(Text("one"), Text("two"))
    client = await agent()
    await prompt(client, "first")
    before = await recording(client)
    # Another process pruned it (a subagent's recording is not protected by a lock).
    write(profile_root, "DELETE FROM trajectory_events WHERE trajectory_id = ?", (before["id"],))
    write(profile_root, "DELETE FROM trajectories WHERE id = ?", (before["id"],))
    assert (await prompt(client, "second"))["status"] == "done"
    after = await recording(client)
    assert after["id"] == before["id"] and after["header"] == before["header"]
    assert [e["data"]["prompt"] for e in after["events"] if e["kind"] == "task_started"] == [
        "second"
    ]


async def test_the_session_being_recorded_is_kept_however_old_its_records(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    provider.script(Text("one"))
    client = await agent()
    session = (await command(client, "seri.session.new", {}))["session"]["id"]
    await prompt(client, "first")
    other = (await command(client, "seri.clear", {}))["session"]["id"]
    await command(client, "seri.session.resume", {"sessionId": session})
    kept = recordings_of(profile_root, session)
    assert len(kept) == 2
    # Idle for longer than the window, then opened again (still open here): retention
    # runs, and the session being recorded keeps every recording.
    age_session(profile_root, session, 400)
    age_session(profile_root, other, 400)
    await command(client, "seri.session.continue", {})
    assert recordings_of(profile_root, session) == kept
    assert recordings_of(profile_root, other) == []
    assert (await recording(client))["id"] == kept[-1]


def test_a_window_beyond_the_earliest_date_keeps_everything() -> None:
    assert cutoff_for(1_000_000) == "0001-01-01T00:00:00.000000Z"
    assert cutoff_for(1e300) == "0001-01-01T00:00:00.000000Z"


async def test_a_huge_retention_window_opens_sessions_and_prunes_nothing(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    folder = profile_root / "trajectories"
    folder.mkdir(parents=True)
    ancient = aged_file(folder / "ancient.jsonl", 400)
    provider.script(Text("one"))
    client = await agent(env={RETENTION: "1000000"})
    assert (await prompt(client, "first"))["status"] == "done"
    assert ancient.exists()
    logged = [m.message for m in client.log_messages]
    assert not [m for m in logged if "retention" in m.lower()], logged
