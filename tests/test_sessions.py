"""Sessions over the LSP contract, with the real server process and a real seri.db.

Every test runs against the capabilities of both bundled editors.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from tests.harness import CLIENTS, command, stop_server, wait_until

pytestmark = pytest.mark.parametrize("client_name", CLIENTS)


async def test_new_session_is_listed_and_fetched(lsp, client_name, workspace: Path) -> None:
    client = await lsp(client_name=client_name)
    session = (await command(client, "seri.session.new", {}))["session"]
    assert session["project"] == str(workspace)
    assert session["messageCount"] == 0
    assert session["maxTurns"] == 500
    assert set(session) == {
        "id", "project", "title", "createdAt", "updatedAt", "maxTurns", "messageCount",
        "parentId", "forkedAt", "spend", "model",
    }  # fmt: skip
    assert session["parentId"] is None and session["forkedAt"] is None
    assert session["spend"] == {
        "inputTokens": 0, "cachedInputTokens": 0, "cacheWriteTokens": 0, "outputTokens": 0,
        "reasoningTokens": 0, "cost": None, "calls": 0,
    }  # fmt: skip

    listed = await command(client, "seri.session.list", {})
    assert [s["id"] for s in listed["sessions"]] == [session["id"]]

    view = await command(client, "seri.session.get", {"sessionId": session["id"]})
    assert view["session"]["id"] == session["id"]
    assert view["messages"] == []
    assert view["paths"] == {"read": [], "modified": []}
    assert view["usage"]["contextWindow"] > 0
    assert view["usage"]["estimateTokens"] > 0  # the system prompt alone


async def test_a_missing_argument_counts_as_an_empty_object(lsp, client_name) -> None:
    client = await lsp(client_name=client_name)
    session = (await command(client, "seri.session.new"))["session"]
    listed = await command(client, "seri.session.list")
    assert [s["id"] for s in listed["sessions"]] == [session["id"]]


async def test_every_change_of_the_open_session_is_notified(lsp, client_name) -> None:
    client = await lsp(client_name=client_name)
    first = (await command(client, "seri.session.new", {}))["session"]
    cleared = (await command(client, "seri.clear", {}))["session"]
    resumed = (await command(client, "seri.session.resume", {"sessionId": first["id"]}))["session"]
    continued = (await command(client, "seri.session.continue", {}))["session"]
    changes = await wait_until(
        lambda: len(client.seri["seri/sessionChanged"]) >= 4 and client.seri["seri/sessionChanged"]
    )
    assert [(c["reason"], c["session"]["id"]) for c in changes] == [
        ("new", first["id"]),
        ("cleared", cleared["id"]),
        ("resumed", first["id"]),
        ("continued", first["id"]),
    ]
    assert resumed["id"] == continued["id"] == first["id"]


async def test_continue_opens_the_most_recently_touched_session(lsp, client_name) -> None:
    client = await lsp(client_name=client_name)
    older = (await command(client, "seri.session.new", {}))["session"]
    newer = (await command(client, "seri.session.new", {}))["session"]
    assert (await command(client, "seri.session.continue", {}))["session"]["id"] == newer["id"]
    await command(client, "seri.session.resume", {"sessionId": older["id"]})
    # Resuming touched the older one: it is now the most recent.
    assert (await command(client, "seri.session.continue", {}))["session"]["id"] == older["id"]
    listed = await command(client, "seri.session.list", {})
    assert [s["id"] for s in listed["sessions"]] == [older["id"], newer["id"]]


async def test_continue_with_no_session_in_the_project_answers_null(lsp, client_name) -> None:
    client = await lsp(client_name=client_name)
    assert await command(client, "seri.session.continue", {}) == {"session": None}


async def test_clear_starts_a_new_session_and_keeps_the_old_one(lsp, client_name) -> None:
    client = await lsp(client_name=client_name)
    old = (await command(client, "seri.session.new", {}))["session"]
    new = (await command(client, "seri.clear", {}))["session"]
    assert new["id"] != old["id"]
    ids = {s["id"] for s in (await command(client, "seri.session.list", {}))["sessions"]}
    assert ids == {old["id"], new["id"]}
    view = await command(client, "seri.session.get", {})
    assert view["session"]["id"] == new["id"]


async def test_resume_accepts_a_unique_id_prefix(lsp, client_name) -> None:
    client = await lsp(client_name=client_name)
    session = (await command(client, "seri.session.new", {}))["session"]
    resumed = await command(client, "seri.session.resume", {"sessionId": session["id"][:8]})
    assert resumed["session"]["id"] == session["id"]


async def test_list_limit_and_all_projects(lsp, client_name, tmp_path: Path) -> None:
    other = tmp_path / "other-project"
    other.mkdir()
    first = await lsp(client_name=client_name)
    mine = [(await command(first, "seri.session.new", {}))["session"]["id"] for _ in range(3)]
    second = await lsp(client_name=client_name, workspace=other)
    theirs = (await command(second, "seri.session.new", {}))["session"]

    limited = await command(first, "seri.session.list", {"limit": 2})
    assert [s["id"] for s in limited["sessions"]] == mine[::-1][:2]
    everything = await command(first, "seri.session.list", {"allProjects": True})
    assert {s["id"] for s in everything["sessions"]} == {*mine, theirs["id"]}
    assert theirs["project"] == os.path.realpath(other)


async def test_the_latest_session_is_resumed_on_open(lsp, client_name) -> None:
    first = await lsp(client_name=client_name)
    await command(first, "seri.session.new", {})
    latest = (await command(first, "seri.session.new", {}))["session"]
    await stop_server(first)

    second = await lsp(client_name=client_name)
    change = await wait_until(lambda: second.seri["seri/sessionChanged"])
    assert change[0]["reason"] == "continued"
    assert change[0]["session"]["id"] == latest["id"]
    view = await command(second, "seri.session.get", {})
    assert view["session"]["id"] == latest["id"]


async def test_resume_on_open_can_be_turned_off(lsp, client_name) -> None:
    first = await lsp(client_name=client_name)
    await command(first, "seri.session.new", {})
    second = await lsp(client_name=client_name, init_options={"resumeOnOpen": False})
    view = await command(second, "seri.session.get", {})
    assert view["session"] is None
    assert second.seri["seri/sessionChanged"] == []


async def test_two_server_processes_share_one_profile_while_both_write(lsp, client_name) -> None:
    first = await lsp(client_name=client_name)
    second = await lsp(client_name=client_name)
    # Let the second finish starting (resume on open) before the first creates sessions:
    # finding them all held, it would start one of its own.
    await command(second, "seri.session.list", {})

    async def create_many(client, count: int) -> list[str]:
        ids = []
        for _ in range(count):
            ids.append((await command(client, "seri.session.new", {}))["session"]["id"])
            ids.append((await command(client, "seri.clear", {}))["session"]["id"])
        return ids

    made = await asyncio.gather(create_many(first, 15), create_many(second, 15))
    expected = set(made[0]) | set(made[1])
    for client in (first, second):
        listed = await command(client, "seri.session.list", {})
        assert {s["id"] for s in listed["sessions"]} == expected
        assert len(listed["sessions"]) == 60


async def test_settings_come_from_init_options_then_config_then_defaults(
    lsp, client_name, profile_root: Path
) -> None:
    first = await lsp(client_name=client_name)
    assert (await command(first, "seri.session.new", {}))["session"]["maxTurns"] == 500
    (profile_root / "config.json").write_text(json.dumps({"maxTurns": 40, "resumeOnOpen": False}))

    from_config = await lsp(client_name=client_name)
    assert (await command(from_config, "seri.session.new", {}))["session"]["maxTurns"] == 40
    assert [c["reason"] for c in from_config.seri["seri/sessionChanged"]] == ["new"]

    from_init = await lsp(client_name=client_name, init_options={"maxTurns": 7})
    assert (await command(from_init, "seri.session.new", {}))["session"]["maxTurns"] == 7
