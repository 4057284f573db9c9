"""The compaction divider in real headless Neovim against the real server: what the
recap replaced, told above it (live and reopened), and <CR> on it opening the record of
those turns."""

from __future__ import annotations

from pathlib import Path

from tests.scripted_provider import Calls, ScriptedProvider, Text
from tests.test_neovim import nvim, scenario  # noqa: F401 (fixtures)

SUMMARY = "Goal: read notes\nProgress: read notes.txt\nBlockers: none\nNext steps: none"


def test_the_divider_tells_what_a_recap_replaced_and_opens_its_record(
    scenario,  # noqa: F811
    provider: ScriptedProvider,
    workspace: Path,
) -> None:
    (workspace / "notes.txt").write_text("Notes on parsing.\n")
    provider.script(
        Calls([("r1", "read_file", {"path": "notes.txt"})]),
        Text("The notes are about parsing. " * 10),
        Text("Then nothing more. " * 10),
        Text(SUMMARY),
    )
    scenario("divider.lua")
