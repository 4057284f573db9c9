"""Full-text search over the stored sessions (`seri.session.search`, `seri-lsp search`).

What the agent was told, said, read, ran and changed is found, with words the way people
type them; what a compaction evicted or a rewind removed is not; the index agrees with
the messages after any kill; a profile from before the index is indexed once; a SQLite
without FTS5 (`SERI_FTS5=off`) keeps everything else working.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path
from typing import Any

import pytest
from pytest_lsp import LanguageClient

from seri_lsp.faults import CRASH_EXIT_CODE
from tests.agent_helpers import SUMMARY, prompt
from tests.harness import command, seri, stop_server, wait_until
from tests.scripted_provider import Calls, Hang, ScriptedProvider, Text, usage
from tests.session_helpers import (
    assert_index_agrees,
    found,
    invalid,
    older_database,
    refused,
    search,
)
from tests.test_legacy import good_session, write_legacy
from tests.trajectory_helpers import rows

LOGIN = "def check_password(user, given):\n    return user.password != given  # inverted\n"


async def login_session(agent: Any, provider: ScriptedProvider, workspace: Path) -> LanguageClient:
    """A server whose session holds a prompt, a read of src/auth/login.py, its result and
    an answer."""
    (workspace / "src" / "auth").mkdir(parents=True)
    (workspace / "src" / "auth" / "login.py").write_text(LOGIN)
    provider.script(
        Calls([("c1", "read_file", {"path": "src/auth/login.py"})]),
        Text("The comparison in check_password is inverted."),
    )
    client = await agent()
    assert (await prompt(client, "Fix the login bug, users cannot sign in"))["status"] == "done"
    return client


async def test_prompts_replies_tool_calls_and_results_are_found(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    client = await login_session(agent, provider, workspace)
    assert await found(client, "login bug") == ["Fix the «login» «bug», users cannot sign in"]
    # A path as written, as a tool call's argument; the tool's name too.
    assert await found(client, "src/auth/login.py") == ["read_file «src/auth/login.py»"]
    assert await found(client, "read_file") == ["«read_file» src/auth/login.py"]
    # The result of the call, and the answer; words in any order, case folded.
    # (Words are letters and digits: check_password holds the word password.)
    assert await found(client, "GIVEN password") == [
        "def check_«password»(user, «given»): return user.«password» != «given» # inverted"
    ]
    assert await found(client, "inverted") == [
        "The comparison in check_password is «inverted».",
        "def check_password(user, given): return user.password != given # «inverted»",
    ]
    assert await found(client, "nowhere") == []


async def test_a_hit_says_where_it_is_and_leads_to_its_message(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    client = await login_session(agent, provider, workspace)
    session = client.seri["seri/sessionChanged"][-1]["session"]
    result = await search(client, "src/auth/login.py")
    assert result["hasMore"] is False
    [hit] = result["hits"]
    view = await command(client, "seri.session.get", {"sessionId": session["id"]})
    message = next(m for m in view["messages"] if m["id"] == hit["messageId"])
    assert hit == {
        "sessionId": session["id"],
        "title": "Fix the login bug, users cannot sign in",
        "messageId": message["id"],
        "role": "assistant",
        "snippet": "read_file «src/auth/login.py»",
        "createdAt": message["createdAt"],
        "projectPath": str(workspace),
        "messagesAfter": 2,
    }
    await assert_leads_to(client, hit)


async def assert_leads_to(client: LanguageClient, hit: dict[str, Any]) -> None:
    """The newest page of messagesAfter + 1 messages of the hit's session starts with it."""
    page = await command(
        client,
        "seri.session.get",
        {"sessionId": hit["sessionId"], "limit": hit["messagesAfter"] + 1},
    )
    assert page["messages"][0]["id"] == hit["messageId"]


async def test_the_last_word_is_a_prefix_and_quoted_words_a_phrase(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    client = await login_session(agent, provider, workspace)
    assert await found(client, "users cann") == ["Fix the login bug, «users» «cannot» sign in"]
    assert await found(client, "cann users") == []  # only the last word is a prefix
    assert await found(client, '"sign in" fix') == ["«Fix» the login bug, users cannot «sign in»"]
    assert await found(client, '"in sign"') == []
    # Part of a path matches too, as written.
    assert await found(client, "auth/login") == ["read_file src/«auth/login».py"]


@pytest.mark.parametrize(
    "query, finds",
    [
        ('"', False),
        ('""', False),
        ('login"', True),
        ('"login', True),
        ("login*", True),
        ("*", False),
        ("-", False),
        ("- login", True),
        ("^login", True),
        ("(login", True),
        ("login)", True),
        ("{login bug}", True),
        ("login AND", False),  # a word like any other: the text has no "and..."
        ("NOT login", False),
        ("login OR bug", False),
        ("NEAR(login bug)", False),
        ("text:login", False),
        ("log\x00in", False),
        ("🔑 ключ", False),
    ],
)
async def test_nothing_a_user_types_is_an_error(
    agent, provider: ScriptedProvider, workspace: Path, query: str, finds: bool
) -> None:
    client = await login_session(agent, provider, workspace)
    result = await search(client, query)
    assert set(result) == {"hits", "hasMore"}
    assert bool(result["hits"]) is finds


@pytest.mark.parametrize("query", ["", "   ", "\n\t"])
async def test_a_blank_search_is_invalid_params(lsp, query: str) -> None:
    client = await lsp()
    message, field = await invalid(client, "seri.session.search", {"query": query})
    assert field == "query"
    assert "query" in message


async def test_search_arguments_are_checked(lsp) -> None:
    client = await lsp()
    assert (await invalid(client, "seri.session.search", {}))[1] == "query"
    assert (await invalid(client, "seri.session.search", {"query": 5}))[1] == "query"
    too_long = {"query": "x" * 1001}
    assert (await invalid(client, "seri.session.search", too_long))[1] == "query"
    for limit in (0, 201, 1.5, "10"):
        args = {"query": "x", "limit": limit}
        assert (await invalid(client, "seri.session.search", args))[1] == "limit"
    for offset in (-1, "2"):
        args = {"query": "x", "offset": offset}
        assert (await invalid(client, "seri.session.search", args))[1] == "offset"
    args = {"query": "x", "allProjects": "yes"}
    assert (await invalid(client, "seri.session.search", args))[1] == "allProjects"


async def test_limit_offset_and_has_more_page_the_hits(agent, provider: ScriptedProvider) -> None:
    client = await agent()
    for n in range(5):
        provider.script(Text(f"noted {n}"))
        await command(client, "seri.session.new")
        assert (await prompt(client, f"remember the parrot number {n}"))["status"] == "done"
    first = await search(client, "parrot", limit=2)
    assert (len(first["hits"]), first["hasMore"]) == (2, True)
    rest = await search(client, "parrot", limit=2, offset=2)
    last = await search(client, "parrot", limit=2, offset=4)
    assert (len(last["hits"]), last["hasMore"]) == (1, False)
    every = [hit["messageId"] for page in (first, rest, last) for hit in page["hits"]]
    assert sorted(every) == sorted(h["messageId"] for h in (await search(client, "parrot"))["hits"])
    assert len(set(every)) == 5
    # One hit per session: the prompt that named it.
    assert {hit["title"] for hit in (await search(client, "parrot"))["hits"]} == {
        f"remember the parrot number {n}" for n in range(5)
    }


async def test_a_search_covers_this_project_unless_told_all(
    agent, provider: ScriptedProvider, tmp_path: Path, workspace: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    provider.script(Text("ok"), Text("ok"))
    elsewhere = await agent(workspace=other)
    assert (await prompt(elsewhere, "the walrus lives elsewhere"))["status"] == "done"
    await stop_server(elsewhere)
    client = await agent()
    assert (await prompt(client, "the walrus lives here"))["status"] == "done"
    assert await found(client, "walrus") == ["the «walrus» lives here"]
    everywhere = (await search(client, "walrus", allProjects=True))["hits"]
    assert sorted(hit["snippet"] for hit in everywhere) == [
        "the «walrus» lives elsewhere",
        "the «walrus» lives here",
    ]
    assert {hit["projectPath"] for hit in everywhere} == {str(other.resolve()), str(workspace)}


async def test_what_a_compaction_evicted_is_no_longer_found_but_its_recap_is(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    client = await agent(provider_extra={"contextWindow": 4000, "keepTokens": 150})
    for n in range(3):
        provider.script(Text(f"reply {n} " + "x" * 400, usage=usage(100)))
        assert (await prompt(client, f"prompt {n} about the aardvark"))["status"] == "done"
    assert len(await found(client, "aardvark")) == 3
    provider.script(Text(SUMMARY))
    assert (await prompt(client, "/compact"))["compacted"] is True
    [kept] = (await search(client, "aardvark"))["hits"]
    assert kept["snippet"] == "prompt 2 about the «aardvark»"
    [recap] = (await search(client, "README"))["hits"]
    assert (recap["role"], recap["kind"]) == ("user", "recap")
    assert "«README»" in recap["snippet"]
    for hit in (kept, recap):
        await assert_leads_to(client, hit)
    assert_index_agrees(profile_root)


async def test_a_rewind_removes_what_it_took_back_from_search(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    client = await agent()
    provider.script(Text("first answer"), Text("second answer about the okapi"))
    assert (await prompt(client, "first question"))["status"] == "done"
    assert (await prompt(client, "second question about the okapi"))["status"] == "done"
    assert len(await found(client, "okapi")) == 2
    assert (await command(client, "seri.rewind", {}))["rewound"] == 1
    assert await found(client, "okapi") == []
    assert await found(client, "first") == ["«first» question", "«first» answer"]
    provider.script(Text("third answer"))
    assert (await prompt(client, "third question"))["status"] == "done"
    for hit in (await search(client, "question"))["hits"]:
        await assert_leads_to(client, hit)
    assert_index_agrees(profile_root)


async def test_legacy_sessions_are_found_once_imported(
    lsp, profile_root: Path, workspace: Path
) -> None:
    write_legacy(profile_root, "old.jsonl", good_session("legacy-1", workspace))
    client = await lsp()
    hits = (await search(client, "foo bar"))["hits"]
    assert [hit["sessionId"] for hit in hits] == ["legacy-1", "legacy-1"]
    assert sorted(await found(client, "app.py")) == [
        "Rename foo to bar in «app.py»",
        "read_file «app.py»",
    ]
    assert_index_agrees(profile_root)


def older_profile(profile_root: Path, workspace: Path, messages: int) -> None:
    """A seri.db as the release before search left it (migrations 1 to 7), holding one
    session of `messages` messages that mention a kiwi every tenth."""
    conn = older_database(profile_root, 7)
    at = "2025-01-01T00:00:00.000000Z"
    conn.execute(
        "INSERT INTO sessions (id, project, title, created_at, updated_at, message_count)"
        " VALUES ('old', ?, 'old', ?, ?, ?)",
        (str(workspace), at, at, messages),
    )
    conn.executemany(
        "INSERT INTO messages (session_id, seq, role, content, chars, created_at)"
        " VALUES ('old', ?, 'user', ?, 10, ?)",
        [
            (n, f"note {n}" + (" about a kiwi" if n % 10 == 0 else ""), at)
            for n in range(1, messages + 1)
        ],
    )
    conn.commit()
    conn.close()


async def test_a_profile_from_before_search_is_indexed_once_with_progress(
    lsp, profile_root: Path, workspace: Path
) -> None:
    older_profile(profile_root, workspace, 5_000)
    client = await lsp()
    hits = (await search(client, "kiwi", limit=200))["hits"]
    assert len(hits) == 200
    titles = [
        reports[0].title
        for reports in client.progress_reports.values()
        if reports and getattr(reports[0], "title", None)
    ]
    assert "seri: indexing sessions for search" in titles
    assert_index_agrees(profile_root)
    await stop_server(client)

    again = await lsp()
    assert len((await search(again, "kiwi", limit=200))["hits"]) == 200
    assert not [
        reports
        for reports in again.progress_reports.values()
        if reports and getattr(reports[0], "title", None) == "seri: indexing sessions for search"
    ]


async def test_without_fts5_search_says_why_and_everything_else_works(
    agent, provider: ScriptedProvider
) -> None:
    client = await agent(env={"SERI_FTS5": "off"})
    provider.script(Text("the answer"))
    assert (await prompt(client, "a question"))["status"] == "done"
    message = await refused(client, "seri.session.search", {"query": "answer"})
    assert message.startswith("Search is not available: SERI_FTS5=off is set.")
    listed = await command(client, "seri.session.list", {})
    assert listed["sessions"][0]["title"] == "a question"
    # A blank search is still the caller's mistake.
    assert (await invalid(client, "seri.session.search", {"query": " "}))[1] == "query"


async def test_what_a_process_without_fts5_stored_is_indexed_by_the_next_with_it(
    agent, provider: ScriptedProvider, profile_root: Path
) -> None:
    provider.script(Text("ok"), Text("ok"))
    first = await agent()
    assert (await prompt(first, "the first gecko"))["status"] == "done"
    await stop_server(first)
    without = await agent(env={"SERI_FTS5": "off"}, init_options={"resumeOnOpen": False})
    assert (await prompt(without, "the second gecko"))["status"] == "done"
    await stop_server(without)
    assert rows(profile_root, "SELECT stale FROM search_index") == [(1,)]

    client = await agent()
    assert sorted(await found(client, "gecko")) == ["the first «gecko»", "the second «gecko»"]
    assert_index_agrees(profile_root)


async def test_a_kill_9_during_a_turn_leaves_the_index_and_the_messages_in_agreement(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    (workspace / "notes.txt").write_text("the capybara notes\n")
    hang = Hang()
    provider.script(Calls([("c1", "read_file", {"path": "notes.txt"})]), hang)
    client = await agent()
    pending = asyncio.ensure_future(prompt(client, "What do the notes say?"))
    try:
        await wait_until(
            lambda: any(p["message"]["role"] == "tool" for p in client.seri["seri/message"])
        )
        provider.wait_for_requests(2)
        client._server.send_signal(signal.SIGKILL)
        await asyncio.wait_for(client._server.wait(), timeout=20)
    finally:
        pending.cancel()
        hang.release.set()
    assert_index_agrees(profile_root)
    survivor = await agent()
    assert await found(survivor, "capybara") == ["the «capybara» notes"]


@pytest.mark.parametrize("step", ["reply", "result"])
async def test_a_kill_inside_a_step_leaves_the_index_and_the_messages_in_agreement(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path, step: str
) -> None:
    (workspace / "notes.txt").write_text("the capybara notes\n")
    provider.script(Calls([("c1", "read_file", {"path": "notes.txt"})]), Text("Hello."))
    doomed = await agent(env={"SERI_CRASH_AT": f"{step}.in_transaction"})
    pending = asyncio.ensure_future(prompt(doomed, "What do the capybara notes say?"))
    await asyncio.wait_for(doomed._server.wait(), timeout=20)
    pending.cancel()
    assert doomed._server.returncode == CRASH_EXIT_CODE
    assert_index_agrees(profile_root)
    survivor = await agent(init_options={"resumeOnOpen": False})
    expected = ["What do the «capybara» notes say?"]
    assert await found(survivor, "capybara") == expected  # the read's result never stored


async def test_the_command_line_searches_as_the_command_does(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    client = await login_session(agent, provider, workspace)
    answer = await search(client, "login")
    await stop_server(client)
    root = ("--profile-root", str(profile_root))
    as_json = seri("search", "login", "--json", *root, cwd=workspace)
    assert as_json.returncode == 0, as_json.stderr
    assert json.loads(as_json.stdout) == answer
    plain = seri("search", "check_password", "is", *root, cwd=workspace)
    assert plain.returncode == 0, plain.stderr
    lines = plain.stdout.splitlines()
    assert lines[0].split()[2] == "assistant"
    assert lines[1] == "    The comparison in «check_password» «is» inverted."
    elsewhere = seri("search", "login", *root, cwd=profile_root)
    assert elsewhere.stdout.startswith("No match in this project")
    everywhere = seri("search", "login", "--all", "--limit", "1", *root, cwd=profile_root)
    assert everywhere.stdout.count("«login»") == 1 and "--limit" in everywhere.stdout
    blank = seri("search", " ", *root, cwd=workspace)
    assert (blank.returncode, blank.stderr.strip()) == (
        1,
        "seri-lsp: The search is empty; type the words to look for",
    )
    without = seri("search", "login", *root, cwd=workspace, env={"SERI_FTS5": "off"})
    assert without.returncode == 1
    assert "Search is not available" in without.stderr
