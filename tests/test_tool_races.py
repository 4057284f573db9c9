"""Races the tools must win: a file the user changes while asked to allow a write, and a
grep pattern that is costly to compile.

A write is computed from the file as it is once the user has answered, never from the
text read before the question; grep refuses patterns too costly to compile and
compiles off the event loop. Every test but the walk's drives the real server process.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from seri_lsp.agent import search
from seri_lsp.agent.disk import Stop, Stopped
from tests.agent_helpers import messages, prompt, tool_results
from tests.harness import command, open_document
from tests.scripted_provider import Calls, ScriptedProvider, Text

ASK = {"permissions": {"write": "ask"}}
CHANGED = "changed while the user was asked to allow this write"


def user_acts_then_allows(
    client: LanguageClient, act: Callable[[LanguageClient], Awaitable[None]]
) -> None:
    """Make the editor's permission dialog run `act` (the user's own change) before
    its answer, Allow: the change happens while the question is open."""

    async def ask(params: types.ShowMessageRequestParams) -> types.MessageActionItem:
        client.message_requests.append(params)
        await act(client)
        return types.MessageActionItem(title="Allow")

    client.protocol.fm.features[types.WINDOW_SHOW_MESSAGE_REQUEST] = ask


def type_in_buffer(uri: str, text: str) -> Callable[[LanguageClient], Awaitable[None]]:
    """The user replacing an open buffer's text (didChange)."""

    async def act(client: LanguageClient) -> None:
        version = client.documents[uri][0] + 1
        client.documents[uri] = (version, text)
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    return act


def write_on_disk(path: Path, text: str) -> Callable[[LanguageClient], Awaitable[None]]:
    async def act(client: LanguageClient) -> None:
        path.write_text(text)

    return act


async def result_of(client: LanguageClient, call_id: str) -> str:
    return tool_results(await messages(client))[call_id]["content"]


async def test_an_edit_keeps_what_the_user_wrote_on_disk_while_asked(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    path = workspace / "a.py"
    path.write_text("a = 1\nb = 2\n")
    edit = {"path": "a.py", "old_text": "a = 1", "new_text": "a = 9"}
    provider.script(Calls([("e", "edit", edit)]), Text("done"))
    client = await agent(init_options=ASK)
    users = "a = 1\nb = 2\nc = 3  # the user's line\n"
    user_acts_then_allows(client, write_on_disk(path, users))

    assert (await prompt(client, "edit"))["status"] == "done"

    assert await result_of(client, "e") == "Edited a.py at line 1."
    assert path.read_text() == "a = 9\nb = 2\nc = 3  # the user's line\n"
    # The checkpoint holds the text the edit was made on: the user's.
    await command(client, "seri.rewind", {"restore": "files"})
    assert path.read_text() == users


async def test_an_edit_whose_text_the_user_removed_while_asked_writes_nothing(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    path = workspace / "a.py"
    path.write_text("a = 1\nb = 2\n")
    edit = {"path": "a.py", "old_text": "a = 1", "new_text": "a = 9"}
    provider.script(Calls([("e", "edit", edit)]), Text("done"))
    client = await agent(init_options=ASK)
    user_acts_then_allows(client, write_on_disk(path, "a = 7\nb = 2\n"))

    await prompt(client, "edit")

    result = await result_of(client, "e")
    assert result.startswith(f"Error: a.py {CHANGED}")
    assert "no longer holds old_text" in result and "Read a.py again" in result
    assert path.read_text() == "a = 7\nb = 2\n"


async def test_an_edit_applies_to_the_buffer_the_user_typed_in_while_asked(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    path = workspace / "b.py"
    path.write_text("a = 1\nb = 2\n")
    edit = {"path": "b.py", "old_text": "b = 2", "new_text": "b = 9"}
    provider.script(Calls([("e", "edit", edit)]), Text("done"))
    client = await agent(init_options=ASK)
    uri = open_document(client, path, "a = 1\nb = 2\n")
    user_acts_then_allows(client, type_in_buffer(uri, "# header\n# more\na = 1\nb = 2\n"))

    await prompt(client, "edit")

    assert await result_of(client, "e") == "Edited b.py at line 4."
    assert client.documents[uri][1] == "# header\n# more\na = 1\nb = 9\n"
    assert path.read_text() == "a = 1\nb = 2\n"  # the buffer is unsaved


async def test_write_file_refuses_to_overwrite_a_file_changed_while_asked(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    path = workspace / "notes.txt"
    path.write_text("old notes\n")
    write = {"path": "notes.txt", "content": "the model's notes\n"}
    provider.script(Calls([("w", "write_file", write)]), Text("done"))
    client = await agent(init_options=ASK)
    user_acts_then_allows(client, write_on_disk(path, "the user's notes\n"))

    await prompt(client, "write")

    result = await result_of(client, "w")
    assert result.startswith(f"Error: notes.txt {CHANGED}; nothing was written.")
    assert path.read_text() == "the user's notes\n"


async def test_write_file_refuses_to_overwrite_a_file_created_while_asked(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    path = workspace / "new.txt"
    write = {"path": "new.txt", "content": "the model's text\n"}
    provider.script(Calls([("w", "write_file", write)]), Text("done"))
    client = await agent(init_options=ASK)
    user_acts_then_allows(client, write_on_disk(path, "the user's text\n"))

    await prompt(client, "write")

    assert (await result_of(client, "w")).startswith(
        f"Error: new.txt {CHANGED} (it was created); nothing was written."
    )
    assert path.read_text() == "the user's text\n"


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("a{4294967294}", "the limit is 1000 for one repeat count"),
        ("(?:a{3000}){3000}", "the limit is 1000 for one repeat count"),
        ("(?:a{1000}){1000}", "repeats multiply to more than 100000 characters"),
        ("a" * 1001, "the limit is 1000"),
    ],
)
async def test_grep_refuses_a_pattern_too_costly_to_compile_and_the_server_keeps_answering(
    agent, provider: ScriptedProvider, workspace: Path, pattern: str, reason: str
) -> None:
    (workspace / "f.txt").write_text("hello\n")
    provider.script(Calls([("g", "grep", {"pattern": pattern})]), Text("done"))
    client = await agent()
    started = time.monotonic()
    running = asyncio.ensure_future(prompt(client, "grep"))
    slowest = 0.0
    while not running.done():
        asked = time.monotonic()
        await command(client, "seri.session.list", {})
        slowest = max(slowest, time.monotonic() - asked)
        await asyncio.sleep(0.02)
    assert (await running)["status"] == "done"

    result = await result_of(client, "g")
    assert result.startswith("Error: the pattern"), result
    assert reason in result
    assert time.monotonic() - started < 5
    assert slowest < 0.5


def test_grep_still_finds_with_a_counted_pattern(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("id: 2024-01-31\nab\\p{L}\n")
    scope = search.GrepScope(
        target=tmp_path, root=tmp_path, contains=lambda _: True, relative=lambda p: p.name
    )
    pattern = search.compile_pattern(r"\d{4}-\d{2}-(?:\d{1,2}){1}|[{}\]]{0,1000}p\{L\}")
    assert search.grep(pattern, scope, stop=Stop(5)).splitlines() == [
        "f.txt:1: id: 2024-01-31",
        "f.txt:2: ab\\p{L}",
    ]


def big_ignored_folder(root: Path, count: int = 3000) -> search.GrepScope:
    """A workspace whose one folder holds `count` files git ignores (by
    .git/info/exclude: a .gitignore would be a file to search)."""
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "info" / "exclude").write_text("*.log\n")
    for number in range(count):
        (root / f"{number}.log").touch()
    return search.GrepScope(
        target=root, root=root, contains=lambda _: True, relative=lambda p: p.name
    )


class CancelAfter(Stop):
    """A cancel that comes after `checks` looks at the stop (mid-folder)."""

    def __init__(self, checks: int) -> None:
        super().__init__()
        self.left = checks

    def check(self) -> None:
        self.left -= 1
        if self.left <= 0:
            self.cancel()
        super().check()


def test_the_walk_notices_a_cancel_inside_one_big_folder(tmp_path: Path) -> None:
    scope = big_ignored_folder(tmp_path)
    stop = CancelAfter(100)
    with pytest.raises(Stopped):
        search.grep(search.compile_pattern("x"), scope, stop=stop)
    assert stop.left > -10  # stopped at the entry after the cancel, not at the folder's end


def test_the_walk_notices_the_end_of_its_budget_inside_one_big_folder(tmp_path: Path) -> None:
    scope = big_ignored_folder(tmp_path)
    found = search.grep(search.compile_pattern("x"), scope, stop=Stop(0))
    assert "search cut short" in found
