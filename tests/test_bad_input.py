"""Bad input gets a clear error, names what was wrong, and loses nothing."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from tests.harness import (
    CLIENTS,
    command,
    initialize_client,
    shown_messages,
    start_server,
    stop_server,
    wait_until,
)

BAD_ARGUMENTS = [
    ("seri.session.resume", {}, "sessionId"),
    ("seri.session.resume", {"sessionId": 42}, "sessionId"),
    ("seri.session.resume", {"sessionId": "  "}, "sessionId"),
    ("seri.session.list", {"limit": "ten"}, "limit"),
    ("seri.session.list", {"limit": 0}, "limit"),
    ("seri.session.list", {"allProjects": "yes"}, "allProjects"),
    ("seri.session.get", {"sessionId": ["a"]}, "sessionId"),
    ("seri.prompt", {}, "text"),
    ("seri.prompt", {"text": 3}, "text"),
    ("seri.maxTurns", {}, "n"),
    ("seri.maxTurns", {"n": "five"}, "n"),
    ("seri.maxTurns", {"n": 0}, "n"),
    ("seri.maxTurns", {"n": True}, "n"),
    ("seri.compact", {"focus": 5}, "focus"),
]


@pytest.mark.parametrize("client_name", CLIENTS)
async def test_bad_arguments_answer_invalid_params_naming_the_field(lsp, client_name) -> None:
    client = await lsp(client_name=client_name)
    session = (await command(client, "seri.session.new", {}))["session"]
    for name, args, field in BAD_ARGUMENTS:
        with pytest.raises(JsonRpcInvalidParams) as caught:
            await command(client, name, args)
        assert field in caught.value.message, (name, args, caught.value.message)
        assert caught.value.data == {"field": field}
    # Nothing was lost and the server still answers.
    listed = await command(client, "seri.session.list", {})
    assert [s["id"] for s in listed["sessions"]] == [session["id"]]


async def test_an_argument_that_is_not_one_object_is_refused(lsp) -> None:
    client = await lsp()
    for arguments in (["not an object"], [1, 2], [[{"sessionId": "x"}]]):
        with pytest.raises(JsonRpcInvalidParams, match="JSON object"):
            await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="seri.session.list", arguments=arguments)
            )
    assert (await command(client, "seri.session.list", {}))["sessions"] == []


async def test_an_unknown_session_id_is_named_in_the_error(lsp) -> None:
    client = await lsp()
    for name in ("seri.session.resume", "seri.session.get"):
        with pytest.raises(JsonRpcInvalidParams, match="no-such-session"):
            await command(client, name, {"sessionId": "no-such-session"})


async def test_an_unknown_command_is_an_error_not_a_crash(lsp) -> None:
    client = await lsp()
    with pytest.raises(JsonRpcException):
        await command(client, "seri.nope", {})
    assert (await command(client, "seri.session.list", {}))["sessions"] == []


async def test_an_unknown_slash_command_is_refused_and_nothing_is_sent(lsp) -> None:
    client = await lsp()
    with pytest.raises(JsonRpcInvalidParams, match="Unknown command /frobnicate"):
        await command(client, "seri.prompt", {"text": "/frobnicate now"})
    view = await command(client, "seri.session.get", {})
    assert view["messages"] == []


async def test_unknown_setting_keys_give_one_warning_per_source_and_the_rest_loads(
    lsp, profile_root: Path
) -> None:
    profile_root.mkdir(parents=True, exist_ok=True)
    (profile_root / "config.json").write_text('{"provider": {"baseURL": "http://x/v1"}}')
    client = await lsp(init_options={"maxturns": 7, "maxTurns": 9, "permisions": {}})
    warnings = await wait_until(
        lambda: shown_messages(client, types.MessageType.Warning, "Unknown settings")
    )
    await asyncio.sleep(0.2)  # (nothing more comes)
    assert shown_messages(client, types.MessageType.Warning, "Unknown settings") == [
        "Unknown settings in the initialization options: maxturns (did you mean maxTurns?); "
        "permisions (did you mean permissions?). They are ignored.",
        f"Unknown settings in {profile_root / 'config.json'}: provider.baseURL (did you mean "
        "provider.baseUrl?). They are ignored.",
    ]
    assert len(warnings) >= 1
    session = (await command(client, "seri.session.new", {}))["session"]
    assert session["maxTurns"] == 9


async def test_bad_initialization_options_fall_back_with_a_warning(lsp) -> None:
    client = await lsp(init_options={"maxTurns": "lots", "permissions": {"write": "maybe"}})
    warnings = await wait_until(lambda: shown_messages(client, types.MessageType.Warning))
    assert any("maxTurns" in w for w in warnings)
    session = (await command(client, "seri.session.new", {}))["session"]
    assert session["maxTurns"] == 500


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def expect_refused_start(profile_root: Path, workspace: Path, match: str) -> None:
    db = profile_root / "seri.db"
    before = digest(db)
    client = await start_server(profile_root, workspace, initialize=False)
    try:
        with pytest.raises(JsonRpcException, match=match):
            await initialize_client(client, workspace)
        shown = shown_messages(client, types.MessageType.Error)
        assert any(match in message for message in shown)
        process = client._server
        await asyncio.wait_for(process.wait(), timeout=10)
        assert process.returncode != 0
    finally:
        await stop_server(client)
    assert digest(db) == before


async def test_a_seri_db_that_is_not_sqlite_stops_the_server_untouched(
    profile_root: Path, workspace: Path
) -> None:
    profile_root.mkdir()
    (profile_root / "seri.db").write_text("definitely not sqlite\n")
    await expect_refused_start(profile_root, workspace, "not a SQLite database")


async def test_a_seri_db_from_a_newer_schema_stops_the_server_untouched(
    profile_root: Path, workspace: Path
) -> None:
    profile_root.mkdir()
    conn = sqlite3.connect(profile_root / "seri.db")
    conn.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT, applied_at TEXT)"
    )
    conn.execute("INSERT INTO schema_migrations VALUES (1000, 'from the future', 'x')")
    conn.commit()
    conn.close()
    await expect_refused_start(profile_root, workspace, "newer seri-lsp")


@pytest.mark.parametrize(
    "root", ["~no-such-user-seri/profile", "/tmp/a\x00b", "/tmp/lone-\ud83d-surrogate"]
)
async def test_a_profile_root_no_system_can_use_stops_the_server_saying_why(
    workspace: Path, root: str
) -> None:
    client = await start_server(None, workspace, initialize=False)
    try:
        with pytest.raises(JsonRpcException, match=r"the profile root .* is not usable") as caught:
            await initialize_client(client, workspace, init_options={"profileRoot": root})
        assert caught.value.code == -32803  # RequestFailed, not an internal error
        await asyncio.wait_for(client._server.wait(), timeout=10)
        assert client._server.returncode == 1
    finally:
        await stop_server(client)


async def test_a_profile_root_that_is_not_text_is_warned_about_and_ignored(
    workspace: Path, tmp_path: Path
) -> None:
    fallback = tmp_path / "from-the-environment"
    client = await start_server(
        None,
        workspace,
        init_options={"profileRoot": 5},
        env={"SERI_PROFILE_ROOT": str(fallback)},
    )
    try:
        warnings = await wait_until(lambda: shown_messages(client, types.MessageType.Warning))
        assert any("profileRoot must be a folder path" in w for w in warnings)
        await command(client, "seri.session.new", {})
        assert (fallback / "seri.db").exists()
    finally:
        await stop_server(client)
