"""Where `/rewind` stops: compactions, retired checkpoints, other processes; and how the
checkpoint store keeps contents (shared blobs, garbage-collected), read from seri.db."""

from __future__ import annotations

import hashlib
from pathlib import Path

from lsprotocol import types

from tests.agent_helpers import messages, prompt
from tests.harness import command, shown_messages, stop_server, wait_until
from tests.scripted_provider import Calls, ScriptedProvider, Text
from tests.test_checkpoints import db_rows, edit, refused, run, task, user_texts, write

FILLER = "x" * 400
SUMMARY = "Goal: make files\nProgress: wrote zero.txt\nBlockers: none\nNext steps: write two.txt"


def blobs(profile_root: Path) -> dict[str, bytes]:
    rows = db_rows(profile_root, "SELECT sha256, content, size FROM blobs")
    for sha, content, size in rows:
        assert hashlib.sha256(content).hexdigest() == sha and size == len(content)
    return {sha: bytes(content) for sha, content, _ in rows}


def checkpoint_count(profile_root: Path, session_id: str | None = None) -> int:
    if session_id is None:
        return db_rows(profile_root, "SELECT COUNT(*) FROM checkpoints")[0][0]
    sql = "SELECT COUNT(*) FROM checkpoints WHERE session_id = ?"
    return db_rows(profile_root, sql, (session_id,))[0][0]


async def test_a_rewind_never_steps_across_a_compaction(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    client = await agent(provider_extra={"contextWindow": 4000, "keepTokens": 150})
    task(provider, write("w0", "zero.txt", "zero\n"), answer=f"reply 0 {FILLER}")
    await run(client, "prompt 0")
    task(provider, edit("e1", "zero.txt", "zero", "one"), answer=f"reply 1 {FILLER}")
    await run(client, "prompt 1")
    task(provider, write("w2", "two.txt", "two\n"), answer=f"reply 2 {FILLER}")
    await run(client, "prompt 2")
    provider.script(Text(SUMMARY))
    compacted = await prompt(client, "/compact")
    assert compacted["compacted"] is True
    history = await messages(client)
    assert history[0].get("kind") == "recap" and user_texts(history) == ["prompt 2"]

    # Only the prompt the compaction kept can be listed and rewound.
    listed = await command(client, "seri.checkpoints", {})
    assert [(c["steps"], c["prompt"]) for c in listed["checkpoints"]] == [(1, "prompt 2")]
    for steps in (3, 2):
        message = await refused(client, "seri.rewind", {"steps": steps})
        assert message == f"Cannot rewind {steps} prompts: only 1 since the last compaction."
    message = await refused(client, "seri.prompt", {"text": "/rewind 3 files"})
    assert message == "Cannot rewind 3 prompts: only 1 since the last compaction."
    # Nothing changed.
    assert await messages(client) == history
    assert (workspace / "zero.txt").read_text() == "one\n"
    assert (workspace / "two.txt").read_text() == "two\n"

    result = await command(client, "seri.rewind", {})
    assert result["prompt"] == "prompt 2" and result["restoredFiles"] == ["two.txt"]
    # The compaction came after prompt 2 and kept it: its recap of the earlier history stays.
    assert result["recapKept"] is True
    assert shown_messages(client, types.MessageType.Info, "The recap of the earlier conversation")
    assert not (workspace / "two.txt").exists()
    assert (workspace / "zero.txt").read_text() == "one\n"
    assert [m.get("kind") for m in await messages(client)] == ["recap"]
    message = await refused(client, "seri.rewind", {})
    assert message == "Cannot rewind 1 prompt: none since the last compaction."


async def test_checkpoints_are_retired_beyond_the_20_most_recent_sessions(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    client = await agent()
    task(provider, write("w", "a.txt", "written in the first session\n"))
    await run(client, "the first session's prompt")
    first = (await command(client, "seri.session.get", {}))["session"]["id"]
    history = await messages(client)
    assert checkpoint_count(profile_root, first) == 1 and len(blobs(profile_root)) == 1

    for _ in range(19):
        await command(client, "seri.session.new", {})
    # Twenty sessions: the first is still among them.
    assert checkpoint_count(profile_root, first) == 1
    assert (await command(client, "seri.checkpoints", {"sessionId": first}))["retired"] is False

    newest = (await command(client, "seri.session.new", {}))["session"]["id"]
    # The 21st touched session retires the first's checkpoints, and their blobs.
    assert checkpoint_count(profile_root, first) == 0
    assert blobs(profile_root) == {}
    listed = await command(client, "seri.checkpoints", {"sessionId": first})
    assert listed == {"checkpoints": [], "retired": True}
    # A new session is not retired.
    assert (await command(client, "seri.checkpoints", {}))["retired"] is False
    assert (await command(client, "seri.checkpoints", {"sessionId": newest}))["retired"] is False

    # Its conversation is whole; a rewind says why it cannot go back, and changes nothing.
    await command(client, "seri.session.resume", {"sessionId": first})
    assert await messages(client) == history
    assert (await command(client, "seri.checkpoints", {}))["retired"] is True
    message = await refused(client, "seri.rewind", {})
    assert message == (
        f"Cannot rewind 1 prompt: session {first}'s checkpoints were retired (seri keeps "
        "them for the 20 most recently used sessions of a project); its conversation is "
        "intact."
    )
    assert await messages(client) == history
    assert (workspace / "a.txt").read_text() == "written in the first session\n"

    # New prompts get checkpoints again; the retired ones stay out of reach.
    task(provider, write("w", "b.txt", "b\n"))
    await run(client, "a later prompt")
    message = await refused(client, "seri.rewind", {"steps": 2})
    assert "checkpoints were retired" in message
    assert message.endswith("Only the last 1 prompt can be rewound.")
    result = await command(client, "seri.rewind", {})
    assert result["restoredFiles"] == ["b.txt"] and not (workspace / "b.txt").exists()
    assert await messages(client) == history


async def test_a_session_another_process_holds_is_not_rewound(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    holder = await agent()
    task(provider, write("w", "a.txt", "a\n"))
    await run(holder, "write a")
    held = (await command(holder, "seri.session.get", {}))["session"]["id"]
    history = await messages(holder)

    other = await agent(init_options={"resumeOnOpen": False})
    message = await refused(other, "seri.rewind", {})
    pid = holder._server.pid
    assert message == (
        f"Session {held} is open in another seri process (pid {pid}); close it there, or "
        "start a new session."
    )
    assert (workspace / "a.txt").read_text() == "a\n"
    assert await messages(holder) == history
    assert (await command(other, "seri.session.get", {}))["session"] is None
    # Listing is only reading: the other window may look.
    listed = await command(other, "seri.checkpoints", {"sessionId": held})
    assert [c["prompt"] for c in listed["checkpoints"]] == ["write a"]


async def test_with_no_session_open_the_latest_is_opened_and_rewound(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    first = await agent()
    task(provider, write("w", "a.txt", "a\n"))
    await run(first, "write a")
    session_id = (await command(first, "seri.session.get", {}))["session"]["id"]
    await stop_server(first)

    other = await agent(init_options={"resumeOnOpen": False})
    result = await command(other, "seri.rewind", {})
    assert result["session"]["id"] == session_id and result["prompt"] == "write a"
    assert not (workspace / "a.txt").exists()
    assert (await command(other, "seri.session.get", {}))["session"]["id"] == session_id
    reasons = await wait_until(lambda: [c["reason"] for c in other.seri["seri/sessionChanged"]])
    assert reasons[-2:] == ["resumed", "rewound"]


async def test_blobs_are_shared_and_garbage_collected(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    client = await agent()
    # Two files with one content: one blob.
    task(provider, write("w1", "a.txt", "same\n"), write("w2", "b.txt", "same\n"))
    await run(client, "two files alike")
    assert sorted(blobs(profile_root).values()) == [b"same\n"]
    # The second prompt's "before" of a.txt is the first's "after": still one blob for it.
    # Two edits in one task: only the last write is kept, the one between is collected.
    provider.script(
        Calls([edit("e1", "a.txt", "same", "v2")]),
        Calls([edit("e2", "a.txt", "v2", "v3")]),
        Text("edited twice"),
    )
    await run(client, "edit a twice")
    assert sorted(blobs(profile_root).values()) == [b"same\n", b"v3\n"]
    rows = db_rows(
        profile_root,
        "SELECT f.display, f.before_sha256 IS NULL, b.content FROM checkpoint_files f"
        " JOIN checkpoints c ON c.id = f.checkpoint_id"
        " LEFT JOIN blobs b ON b.sha256 = f.after_sha256 ORDER BY c.prompt_seq, f.display",
    )
    assert rows == [("a.txt", 1, b"same\n"), ("b.txt", 1, b"same\n"), ("a.txt", 0, b"v3\n")]

    await command(client, "seri.rewind", {})
    assert (workspace / "a.txt").read_text() == "same\n"
    assert sorted(blobs(profile_root).values()) == [b"same\n"]
    assert checkpoint_count(profile_root) == 1
    await command(client, "seri.rewind", {})
    assert blobs(profile_root) == {}
    assert checkpoint_count(profile_root) == 0
    assert db_rows(profile_root, "SELECT COUNT(*) FROM checkpoint_files") == [(0,)]
    assert not (workspace / "a.txt").exists() and not (workspace / "b.txt").exists()


async def test_checkpoints_a_compaction_evicted_take_their_blobs_with_them(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    client = await agent(provider_extra={"contextWindow": 4000, "keepTokens": 150})
    task(provider, write("w0", "zero.txt", "zero\n"), answer=f"reply 0 {FILLER}")
    await run(client, "prompt 0")
    task(provider, write("w1", "one.txt", "one\n"), answer=f"reply 1 {FILLER}")
    await run(client, "prompt 1")
    task(provider, answer=f"reply 2 {FILLER}")
    await run(client, "prompt 2")
    provider.script(Text(SUMMARY))
    assert (await prompt(client, "/compact"))["compacted"] is True
    assert sorted(blobs(profile_root).values()) == [b"one\n", b"zero\n"]

    # The next prompt drops the checkpoints of the evicted prompts, and their contents.
    task(provider, write("w3", "three.txt", "three\n"))
    await run(client, "prompt 3")
    used = {
        sha
        for row in db_rows(profile_root, "SELECT before_sha256, after_sha256 FROM checkpoint_files")
        for sha in row
        if sha is not None
    }
    assert set(blobs(profile_root)) == used
    assert sorted(blobs(profile_root).values()) == [b"three\n"]


async def test_a_session_open_in_another_window_keeps_its_checkpoints(
    lsp, agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    client = await agent()
    task(provider, write("w", "a.txt", "written\n"))
    await run(client, "the first session's prompt")
    first = (await command(client, "seri.session.get", {}))["session"]["id"]
    await command(client, "seri.session.new", {})
    other = await lsp(init_options={"resumeOnOpen": False})
    await command(other, "seri.session.resume", {"sessionId": first})  # open over there
    for _ in range(21):
        await command(client, "seri.session.new", {})
    assert checkpoint_count(profile_root, first) == 1  # spared while it is open
    await stop_server(other)
    await command(client, "seri.session.new", {})
    assert checkpoint_count(profile_root, first) == 0  # and retired once it is not
