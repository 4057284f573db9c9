"""The trajectory toggle: `/trajectory [on|off]`, `seri.trajectory`, the environment, and
`config.json`, through the real server."""

from __future__ import annotations

import hashlib
import json
import stat
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.agent_helpers import messages, prompt
from tests.harness import command, shown_messages, wait_until
from tests.scripted_provider import Calls, ScriptedProvider, Text
from tests.trajectory_helpers import kinds, recording, recordings_of, rows

REQUEST_FAILED = -32803
ENV = "SERI_TRAJECTORY_ENABLED"


def config(profile_root: Path) -> Path:
    return profile_root / "config.json"


def store(profile_root: Path, value: bool | None) -> None:
    """What /trajectory would have stored (None: config.json without the key)."""
    profile_root.mkdir(exist_ok=True)
    data: dict[str, Any] = {"resumeOnOpen": False}
    if value is not None:
        data["trajectory"] = value
    config(profile_root).write_text(json.dumps(data))


def expected(env: str | None, stored: bool | None) -> tuple[bool, str]:
    from_env = {"true": True, "FALSE": False, "yes": True, "0": False}.get(env or "")
    if from_env is not None:
        return from_env, "env"
    if stored is not None:
        return stored, "profile"
    return True, "default"


@pytest.mark.parametrize("env", [None, "true", "FALSE", "maybe"])
async def test_the_toggle_in_each_combination_with_the_environment(
    lsp, profile_root: Path, env: str | None
) -> None:
    store(profile_root, None)
    client = await lsp(env={ENV: env} if env is not None else {})
    for stored in (None, True, False):
        store(profile_root, stored)
        enabled, source = expected(env, stored)
        answer = await command(client, "seri.trajectory", {})
        assert (answer["enabled"], answer["source"], answer["stored"]) == (
            enabled,
            source,
            stored,
        ), stored
        warning = answer.get("warning") or ""
        if env == "maybe":
            assert f"{ENV}='maybe' is not one of true, false, 1, 0, yes, no" in warning
            assert "ignored" in warning
        overridden = source == "env" and stored is not None and stored != enabled
        if overridden:
            assert f"{ENV}={'true' if enabled else 'false'}" in warning
            assert "until the variable is unset" in warning
        if env != "maybe" and not overridden:
            assert "warning" not in answer
        # The toggle is read when a session opens: recorded, or nothing written at all.
        session = (await command(client, "seri.session.new", {}))["session"]
        assert len(recordings_of(profile_root, session["id"])) == (1 if enabled else 0), stored
    if env == "maybe":  # the user hears about the bad value, once
        shown = shown_messages(client, types.MessageType.Warning, "'maybe'")
        assert len(shown) == 1


@pytest.mark.parametrize("env", ["FALSE", "yes"])
async def test_setting_the_toggle_against_the_environment_stores_it_and_warns(
    lsp, profile_root: Path, env: str
) -> None:
    store(profile_root, None)
    client = await lsp(env={ENV: env})
    against = not expected(env, None)[0]
    word = "on" if against else "off"
    result = await command(client, "seri.prompt", {"text": f"/trajectory {word}"})
    assert result["command"] == "trajectory"
    assert (result["enabled"], result["source"], result["stored"]) == (not against, "env", against)
    assert "overrides" in result["warning"] and "until the variable is unset" in result["warning"]
    assert json.loads(config(profile_root).read_text())["trajectory"] is against
    # Typed in the chat, the warning reaches the user.
    await wait_until(lambda: shown_messages(client, types.MessageType.Warning, "overrides"))
    # Setting it the way the environment already says needs no warning.
    same = await command(client, "seri.trajectory", {"enabled": not against})
    assert same["stored"] is (not against) and "warning" not in same


async def test_trajectory_on_and_off_apply_at_once_and_off_writes_nothing(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    provider.script(
        Calls([("w", "write_file", {"path": "a.txt", "content": "1\n"})]),
        Text("wrote a.txt"),
        Text("second answer"),
        Text("third answer"),
    )
    client = await agent()
    shown = await command(client, "seri.prompt", {"text": "/trajectory"})
    assert (shown["enabled"], shown["source"]) == (True, "default")
    await wait_until(lambda: [m for m in client.messages if "recording is on" in m.message])
    await prompt(client, "first")
    first = await recording(client)
    assert "tool_call" in kinds(first)

    off = await command(client, "seri.prompt", {"text": "/trajectory off"})
    assert (off["enabled"], off["source"], off["stored"]) == (False, "profile", False)
    assert json.loads(config(profile_root).read_text()) == {"trajectory": False}
    count = rows(profile_root, "SELECT COUNT(*) FROM trajectory_events")[0][0]
    assert (await prompt(client, "second"))["status"] == "done"  # the conversation works
    assert rows(profile_root, "SELECT COUNT(*) FROM trajectory_events")[0][0] == count
    assert rows(profile_root, "SELECT COUNT(*) FROM trajectories")[0][0] == 1
    assert [m["content"] for m in await messages(client)][-1] == "second answer"
    while_off = await recording(client)  # the latest stored recording, no longer growing
    assert while_off["id"] == first["id"] and while_off["recording"] is False

    on = await command(client, "seri.trajectory", {"enabled": True})
    assert (on["enabled"], on["source"]) == (True, "profile")
    await prompt(client, "third")
    now = await recording(client)
    assert now["id"] != first["id"] and now["recording"] is True
    assert now["header"]["reason"] == "toggled"
    assert of_prompts(now) == ["third"]


def of_prompts(rec: dict[str, Any]) -> list[str]:
    return [e["data"]["prompt"] for e in rec["events"] if e["kind"] == "task_started"]


async def test_storing_the_toggle_keeps_every_other_key_in_its_place(
    lsp, profile_root: Path
) -> None:
    profile_root.mkdir()
    original = {
        "zeta": 1,
        "provider": {"model": "x/y", "temperature": 0.25, "stop": ["a", "b"]},
        "resumeOnOpen": False,
        "note": "café",
    }
    config(profile_root).write_text(json.dumps(original, indent=4))
    config(profile_root).chmod(0o640)
    client = await lsp()
    await command(client, "seri.trajectory", {"enabled": False})
    first = json.loads(config(profile_root).read_text(encoding="utf-8"))
    assert list(first) == [*original, "trajectory"]
    assert first == {**original, "trajectory": False}
    original["zeta"] = 2  # edited by hand meanwhile
    config(profile_root).write_text(json.dumps({**first, "zeta": 2}))
    await command(client, "seri.trajectory", {"enabled": True})
    second = json.loads(config(profile_root).read_text(encoding="utf-8"))
    assert list(second) == [*original, "trajectory"]
    assert second == {**original, "trajectory": True}
    assert stat.S_IMODE(config(profile_root).stat().st_mode) == 0o640
    assert [p.name for p in profile_root.iterdir() if "seri-tmp" in p.name] == []


async def test_a_new_config_json_is_private(lsp, profile_root: Path) -> None:
    client = await lsp()
    assert not config(profile_root).exists()
    await command(client, "seri.trajectory", {"enabled": False})
    assert json.loads(config(profile_root).read_text()) == {"trajectory": False}
    assert stat.S_IMODE(config(profile_root).stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b'{"provider": {"model": "a/b",}', "is not valid JSON"),
        (b'{"note": "caf\xe9"}', "is not UTF-8 text"),
        (b'["trajectory", true]', "must hold a JSON object"),
    ],
)
async def test_a_config_json_that_cannot_be_parsed_is_refused_and_left_untouched(
    lsp, profile_root: Path, content: bytes, why: str
) -> None:
    profile_root.mkdir()
    config(profile_root).write_bytes(content)
    before = hashlib.sha256(content).hexdigest(), config(profile_root).stat().st_mtime_ns
    client = await lsp()
    for attempt in ({"enabled": False}, {"enabled": True}):
        with pytest.raises(JsonRpcException) as caught:
            await command(client, "seri.trajectory", attempt)
        assert caught.value.code == REQUEST_FAILED
        assert str(config(profile_root)) in caught.value.message
        assert why in caught.value.message and "not overwrite" in caught.value.message
    with pytest.raises(JsonRpcException):
        await command(client, "seri.prompt", {"text": "/trajectory off"})
    after = (
        hashlib.sha256(config(profile_root).read_bytes()).hexdigest(),
        config(profile_root).stat().st_mtime_ns,
    )
    assert after == before
    # Asking still answers: the unreadable file counts as no stored toggle, and says so.
    answer = await command(client, "seri.trajectory", {})
    assert (answer["enabled"], answer["source"], answer["stored"]) == (True, "default", None)
    assert why in answer["warning"]


async def test_bad_toggle_arguments_are_invalid_params(lsp) -> None:
    client = await lsp()
    with pytest.raises(JsonRpcException) as caught:
        await command(client, "seri.trajectory", {"enabled": "off"})
    assert caught.value.code == -32602 and caught.value.data == {"field": "enabled"}
    with pytest.raises(JsonRpcException) as caught:
        await command(client, "seri.prompt", {"text": "/trajectory maybe"})
    assert caught.value.code == -32602 and "on or off" in caught.value.message
