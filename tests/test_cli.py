"""The terminal face: `seri-lsp sessions`, `seri-lsp show`, on the same profile root."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness import command, seri
from tests.test_legacy import good_session, write_legacy


async def test_sessions_lists_what_the_server_created(
    lsp, profile_root: Path, workspace: Path, tmp_path: Path
) -> None:
    client = await lsp()
    first = (await command(client, "seri.session.new", {}))["session"]
    second = (await command(client, "seri.clear", {}))["session"]

    result = seri("sessions", "--json", "--profile-root", str(profile_root), cwd=workspace)
    assert result.returncode == 0, result.stderr
    assert [s["id"] for s in json.loads(result.stdout)] == [second["id"], first["id"]]

    text = seri("sessions", "--profile-root", str(profile_root), cwd=workspace)
    assert first["id"] in text.stdout and second["id"] in text.stdout

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"SERI_PROFILE_ROOT": str(profile_root)}
    none_here = seri("sessions", "--json", cwd=elsewhere, env=env)
    assert json.loads(none_here.stdout) == []
    everywhere = seri("sessions", "--all", "--json", cwd=elsewhere, env=env)
    assert len(json.loads(everywhere.stdout)) == 2


@pytest.mark.parametrize("where", ["before", "after"])
def test_the_common_flags_count_before_or_after_the_subcommand(
    profile_root: Path, workspace: Path, tmp_path: Path, where: str
) -> None:
    write_legacy(profile_root, "flags.jsonl", good_session("legacy-flags", workspace))
    # Where the flag would otherwise lead: a default profile that must stay untouched.
    default = tmp_path / "default-profile"
    env = {"SERI_PROFILE_ROOT": str(default)}
    flags = ["--profile-root", str(profile_root), "--log-level", "error"]
    for subcommand in (["sessions", "--json"], ["show", "legacy-flags"], ["trajectory", "list"]):
        args = flags + subcommand if where == "before" else subcommand + flags
        result = seri(*args, cwd=workspace, env=env)
        assert result.returncode == 0, (args, result.stderr)
        if subcommand[0] == "sessions":
            assert [s["id"] for s in json.loads(result.stdout)] == ["legacy-flags"]
        if subcommand[0] == "show":
            assert "Rename foo to bar" in result.stdout
    assert not default.exists()


def test_show_prints_one_conversation(profile_root: Path, workspace: Path) -> None:
    # The first use of the profile, from the terminal, imports the legacy file.
    write_legacy(profile_root, "old.jsonl", good_session("legacy-show", workspace))
    shown = seri("show", "legacy-show", "--profile-root", str(profile_root), cwd=workspace)
    assert shown.returncode == 0, shown.stderr
    assert "Rename foo to bar in app.py" in shown.stdout
    assert "read_file" in shown.stdout and "Done: foo is now bar." in shown.stdout

    as_json = seri("show", "legacy", "--json", "--profile-root", str(profile_root), cwd=workspace)
    payload = json.loads(as_json.stdout)
    assert payload["session"]["id"] == "legacy-show"
    assert len(payload["messages"]) == 4


def test_show_with_an_unknown_id_says_so(profile_root: Path, workspace: Path) -> None:
    result = seri("show", "nope", "--profile-root", str(profile_root), cwd=workspace)
    assert result.returncode == 1
    assert "Unknown session id 'nope'" in result.stderr
