"""The tools' guarantees: files are never lost, the event loop never waits on a tool,
the prompt never reaches outside the workspace, and at most three subagents run at once.

Every test drives the real server process, as an editor would.
"""

from __future__ import annotations

import asyncio
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from seri_lsp.agent import search
from seri_lsp.agent.disk import Stop
from seri_lsp.faults import CRASH_EXIT_CODE
from seri_lsp.files import atomic_write_bytes, atomic_write_text
from seri_lsp.waits import WAITS_ENV
from tests.agent_helpers import events, messages, prompt, system_prompt, tool_results
from tests.conftest import provider_options
from tests.harness import command, open_document, wait_until
from tests.scripted_provider import Calls, Hang, ScriptedProvider, Text

TEMP_SUFFIX = ".seri-tmp"


def temp_files(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name.endswith(TEMP_SUFFIX))


async def disk_only_client(lsp, provider: ScriptedProvider, workspace: Path, **kwargs: Any):
    """A server whose editor cannot apply workspace edits, so tools write the disk."""
    client = await lsp(initialize=False, **kwargs)
    capabilities = client_capabilities("visual-studio-code")
    capabilities.workspace.apply_edit = False
    init = provider_options(provider)
    init["permissions"] = {"write": "allow"}
    uri = workspace.as_uri()
    await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities,
            root_uri=uri,
            workspace_folders=[types.WorkspaceFolder(uri=uri, name=workspace.name)],
            initialization_options=init,
        )
    )
    return client


def write_call(tool: str) -> tuple[str, str, dict[str, str]]:
    if tool == "write_file":
        return ("c", "write_file", {"path": "notes.txt", "content": "new content\n" * 500})
    return ("c", "edit", {"path": "notes.txt", "old_text": "the old end", "new_text": "new"})


def expected_new(tool: str, old: str) -> str:
    return "new content\n" * 500 if tool == "write_file" else old.replace("the old end", "new")


# --- files are never lost ---------------------------------------------------------------


@pytest.mark.parametrize(
    "crash_at, tool, editor",
    [
        ("files.half_written", "write_file", False),
        ("files.before_rename", "write_file", False),
        ("files.half_written", "edit", False),
        ("files.before_rename", "edit", False),
        ("files.before_rename", "edit", True),
    ],
)
async def test_a_kill_during_a_write_leaves_the_old_content_and_a_run_without_one_the_new(
    lsp,
    provider: ScriptedProvider,
    workspace: Path,
    profile_root: Path,
    crash_at: str,
    tool: str,
    editor: bool,
) -> None:
    target = workspace / "notes.txt"
    old = "".join(f"line {n}\n" for n in range(2000)) + "the old end\n"
    target.write_text(old)

    async def start(env: dict[str, str] | None = None) -> LanguageClient:
        if editor:  # the editor applies the edit, then the disk is written too
            init = {**provider_options(provider), "permissions": {"write": "allow"}}
            return await lsp(init_options=init, env=env)
        return await disk_only_client(lsp, provider, workspace, env=env)

    provider.script(Calls([write_call(tool)]))
    doomed = await start({"SERI_CRASH_AT": crash_at})
    pending = asyncio.ensure_future(prompt(doomed, "change notes.txt"))
    await asyncio.wait_for(doomed._server.wait(), timeout=20)
    pending.cancel()
    assert doomed._server.returncode == CRASH_EXIT_CODE
    assert target.read_text() == old  # killed mid-write: the old content, whole
    left_by_the_kill = temp_files(workspace)

    provider.script(Calls([write_call(tool)]), Text("changed"))
    survivor = await start()
    assert (await prompt(survivor, "change notes.txt"))["status"] == "done"
    assert target.read_text() == expected_new(tool, old)
    assert temp_files(workspace) == left_by_the_kill  # a normal write leaves no temp file
    assert events(profile_root, "edit")[-1]["via"] == ("editor+disk" if editor else "disk")


async def test_writes_keep_the_file_mode_and_leave_no_temp_files(
    agent, provider: ScriptedProvider, workspace: Path, profile_root: Path
) -> None:
    script = workspace / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o755)
    private = workspace / "private.txt"
    private.write_text("secret one\n")
    private.chmod(0o600)
    provider.script(
        Calls(
            [
                ("e", "edit", {"path": "run.sh", "old_text": "old", "new_text": "new"}),
                ("w", "write_file", {"path": "private.txt", "content": "secret two\n"}),
                ("n", "write_file", {"path": "sub/fresh.txt", "content": "fresh\n"}),
            ]
        ),
        Text("done"),
    )
    client = await agent()
    assert (await prompt(client, "change things"))["status"] == "done"
    assert script.read_text() == "#!/bin/sh\necho new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert private.read_text() == "secret two\n"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    umask = os.umask(0)
    os.umask(umask)
    fresh = workspace / "sub" / "fresh.txt"
    assert fresh.read_text() == "fresh\n"
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask
    assert temp_files(workspace) == [] and temp_files(workspace / "sub") == []
    assert [e["via"] for e in events(profile_root, "edit")] == [
        "editor+disk",
        "editor+disk",
        "disk",
    ]


@pytest.mark.parametrize("editor", [False, True])
async def test_text_that_cannot_be_encoded_is_a_failed_result_and_the_file_is_untouched(
    lsp, agent, provider: ScriptedProvider, workspace: Path, editor: bool
) -> None:
    target = workspace / "notes.txt"
    target.write_text("keep me\n")
    # JSON text as the model sends it: a lone high surrogate, half of an emoji.
    provider.script(
        Calls(
            [
                ("w", "write_file", '{"path": "notes.txt", "content": "smile \\ud83d"}'),
                ("e", "edit", '{"path": "notes.txt", "old_text": "keep", "new_text": "\\ud83d"}'),
                ("n", "write_file", '{"path": "new.txt", "content": "\\ud83d!"}'),
            ]
        ),
        Text("I will try again"),
    )
    client = await agent() if editor else await disk_only_client(lsp, provider, workspace)
    outcome = await prompt(client, "write an emoji")
    assert outcome["status"] == "done"  # the task goes on: no "Internal error"
    results = tool_results(await messages(client))
    for call_id in ("w", "e", "n"):
        assert results[call_id]["isError"], call_id
        content = results[call_id]["content"]
        assert "lone surrogate" in content and "\\ud83d" in content, content
        assert "was not changed" in content
    assert target.read_text() == "keep me\n"
    assert not (workspace / "new.txt").exists()
    assert temp_files(workspace) == []
    if editor:
        assert client.applied_edits == []  # the editor was not handed the broken text


# --- the event loop never waits on a tool ------------------------------------------------


async def answered_quickly(client: LanguageClient, running: asyncio.Future[Any]) -> list[float]:
    """Ask for the session list over and over while `running` works; the answer times."""
    times = []
    while not running.done():
        started = time.monotonic()
        await asyncio.wait_for(command(client, "seri.session.list", {}), timeout=5)
        times.append(time.monotonic() - started)
        await asyncio.sleep(0.1)
    return times


async def test_a_catastrophic_grep_does_not_freeze_the_server(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    # The case: one line of 40 `a`s and a `!`, and a pattern that backtracks
    # forever on it in Python's `re`; and a pattern that does so in any backtracking
    # engine, on thirty such lines, so the search runs into its time budget (even where
    # the per-line limit, counted in the process's CPU time, ends sooner by the clock).
    (workspace / "a.txt").write_text("a" * 40 + "!\n")
    (workspace / "many.txt").write_text(("a" * 40 + "!\n") * 30)
    provider.script(
        Calls([("g1", "grep", {"pattern": "(a+)+$", "path": "a.txt"})]),
        Calls([("g2", "grep", {"pattern": "(a|aa)+$"})]),
        Text("searched"),
    )
    # The search's budget and a line's limit (5 s and 1 s) shortened: the same bounds,
    # proven sooner.
    client = await agent(env={WAITS_ENV: "GREP_TIME_BUDGET=2,GREP_LINE_TIMEOUT=0.4"})
    started = time.monotonic()
    running = asyncio.ensure_future(prompt(client, "search"))
    times = await answered_quickly(client, running)
    outcome = await running
    assert outcome["status"] == "done"
    assert time.monotonic() - started < 15
    assert len(times) >= 10 and max(times) < 1.0, times  # answered all along
    results = tool_results(await messages(client))
    assert results["g1"]["content"] == "No matches."
    slow = results["g2"]["content"]
    assert "search cut short" in slow and "time budget" in slow
    assert "the pattern took too long on" in slow


def test_a_line_cut_off_by_the_search_budget_says_the_search_was_cut_short(
    tmp_path: Path,
) -> None:
    # The one line takes longer than the whole budget: the budget ends it, so the
    # report is "cut short", not "this line's pattern took too long".
    (tmp_path / "slow.txt").write_text("a" * 60 + "!\n")  # years for this pattern
    scope = search.GrepScope(
        target=tmp_path, root=tmp_path, contains=lambda _: True, relative=lambda p: p.name
    )
    found = search.grep(search.compile_pattern("(a|aa)+$"), scope, stop=Stop(0.3))
    assert "search cut short" in found
    assert "took too long" not in found


async def test_cancel_stops_a_working_grep_at_once(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "many.txt").write_text(("a" * 40 + "!\n") * 6)
    provider.script(Calls([("g", "grep", {"pattern": "(a|aa)+$"})]), Text("never asked"))
    client = await agent()
    running = asyncio.ensure_future(prompt(client, "search"))
    await wait_until(
        lambda: any(m["message"]["role"] == "assistant" for m in client.seri["seri/message"])
    )
    await asyncio.sleep(0.5)  # the grep is working now
    started = time.monotonic()
    assert await command(client, "seri.cancel", {}) == {"cancelled": True}
    outcome = await asyncio.wait_for(running, timeout=5)
    assert time.monotonic() - started < 1.5
    assert outcome["status"] == "cancelled"
    result = tool_results(await messages(client))["g"]
    assert result["isError"] and result["content"].startswith("Cancelled")
    assert len(provider.requests) == 1


async def test_a_fifo_is_refused_or_skipped_by_every_tool_without_blocking(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    os.mkfifo(workspace / "pipe")
    (workspace / "text.txt").write_text("needle\n")
    provider.script(
        Calls(
            [
                ("r", "read_file", {"path": "pipe"}),
                ("rr", "read_file", {"path": "pipe", "offset": 1, "limit": 5}),
                ("w", "write_file", {"path": "pipe", "content": "x"}),
                ("e", "edit", {"path": "pipe", "old_text": "a", "new_text": "b"}),
                ("g", "grep", {"pattern": "needle"}),
                ("l", "list_dir", {"path": "."}),
            ]
        ),
        Text("done"),
    )
    client = await agent()
    outcome = await asyncio.wait_for(prompt(client, "read the pipe"), timeout=20)
    assert outcome["status"] == "done"
    results = tool_results(await messages(client))
    for call_id in ("r", "rr", "w", "e"):
        assert results[call_id]["isError"], call_id
        assert "pipe is a named pipe (FIFO), not a regular file" in results[call_id]["content"]
    assert results["g"]["content"].splitlines() == [
        "text.txt:1: needle",
        "[skipped 1 not regular files (FIFOs, devices, sockets)]",
    ]
    assert results["l"]["content"] == "pipe\ntext.txt"
    assert stat.S_ISFIFO(os.stat(workspace / "pipe").st_mode)  # untouched


async def test_a_big_file_is_refused_whole_and_read_in_line_ranges(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "big.log").write_text("".join(f"line {n}\n" for n in range(1, 50_001)))
    (workspace / "open.txt").write_text("saved\n")
    provider.script(
        Calls(
            [
                ("whole", "read_file", {"path": "big.log"}),
                ("tail", "read_file", {"path": "big.log", "offset": 49_999, "limit": 10}),
                ("mid", "read_file", {"path": "big.log", "offset": 10, "limit": 2}),
                ("from", "read_file", {"path": "big.log", "offset": 49_000}),
                ("past", "read_file", {"path": "big.log", "offset": 60_000}),
                ("zero", "read_file", {"path": "big.log", "offset": 0}),
                ("buffer", "read_file", {"path": "open.txt", "offset": 2, "limit": 1}),
            ]
        ),
        Text("read"),
    )
    client = await agent()
    open_document(client, workspace / "open.txt", "one\ntwo\nthree\n")
    await prompt(client, "read the log")
    results = tool_results(await messages(client))
    whole = results["whole"]
    assert whole["isError"]
    assert "big.log is too big to read whole" in whole["content"]
    assert "50000 lines" in whole["content"]
    assert "offset" in whole["content"] and "limit" in whole["content"]
    assert results["tail"]["content"] == (
        "line 49999\nline 50000\n[big.log: lines 49999-50000 of 50000]"
    )
    assert results["mid"]["content"] == (
        "line 10\nline 11\n[big.log: lines 10-11 of 50000; go on with offset=12]"
    )
    assert results["from"]["content"].startswith("line 49000\nline 49001\n")
    assert results["from"]["content"].endswith("line 50000\n[big.log: lines 49000-50000 of 50000]")
    assert results["past"]["isError"]
    assert (
        "offset 60000 is past the end of big.log, which has 50000 lines"
        in results["past"]["content"]
    )
    assert (
        results["zero"]["isError"]
        and "'offset' must be a whole number" in results["zero"]["content"]
    )
    assert results["buffer"]["content"] == "two\n[open.txt: lines 2-2 of 3; go on with offset=3]"


async def test_a_range_longer_than_the_result_limit_stops_and_says_where_to_go_on(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    line = "x" * 999 + "\n"  # a thousand characters a line
    (workspace / "wide.txt").write_text(line * 1000)
    provider.script(
        Calls([("r", "read_file", {"path": "wide.txt", "offset": 1, "limit": 1000})]),
        Text("read"),
    )
    client = await agent()
    await prompt(client, "read")
    content = tool_results(await messages(client))["r"]["content"]
    body, note = content.rsplit("\n", 1)
    shown = body.count("\n") + 1
    assert 200 <= shown < 1000
    assert note == (
        f"[wide.txt: lines 1-{shown} of 1000; stopped at the 256.0 KiB result limit, "
        f"go on with offset={shown + 1}]"
    )


async def test_grep_skips_git_ignored_binary_and_non_regular_files(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("needle in git\n")
    (workspace / ".gitignore").write_text("*.log\n!keep.log\nbuild/\n")
    (workspace / "a.txt").write_text("needle a\n")
    (workspace / "x.log").write_text("needle log\n")
    (workspace / "keep.log").write_text("needle kept\n")
    (workspace / "build").mkdir()
    (workspace / "build" / "out.txt").write_text("needle built\n")
    sub = workspace / "sub"
    sub.mkdir()
    (sub / ".gitignore").write_text("secret.txt\n")
    (sub / "secret.txt").write_text("needle secret\n")
    (sub / "ok.txt").write_text("needle ok\n")
    (sub / "deeper").mkdir()
    (sub / "deeper" / "secret.txt").write_text("needle deeper secret\n")
    (workspace / "bin.dat").write_bytes(b"needle\x00\x01\x02")
    os.mkfifo(workspace / "fifo")
    provider.script(
        Calls(
            [
                ("all", "grep", {"pattern": "needle"}),
                ("sub", "grep", {"pattern": "needle", "path": "sub"}),
                ("named", "grep", {"pattern": "needle", "path": "x.log"}),
            ]
        ),
        Text("found"),
    )
    client = await agent()
    await prompt(client, "search")
    results = tool_results(await messages(client))
    assert results["all"]["content"].splitlines() == [
        "a.txt:1: needle a",
        "keep.log:1: needle kept",
        "sub/ok.txt:1: needle ok",
        "[skipped 1 not regular files (FIFOs, devices, sockets)]",
    ]
    assert results["sub"]["content"] == "sub/ok.txt:1: needle ok"
    assert results["named"]["content"] == "x.log:1: needle log"  # asked for by name


async def test_list_dir_stays_bounded(agent, provider: ScriptedProvider, workspace: Path) -> None:
    many = workspace / "many"
    many.mkdir()
    for n in range(620):
        (many / f"f{n:04d}.txt").write_text("")
    (many / "zz").mkdir()
    provider.script(Calls([("l", "list_dir", {"path": "many"})]), Text("listed"))
    client = await agent()
    await prompt(client, "list")
    lines = tool_results(await messages(client))["l"]["content"].splitlines()
    assert len(lines) == 501
    assert lines[0] == "f0000.txt" and lines[499] == "f0499.txt"
    assert lines[-1] == "[121 more entries not shown]"


# --- the prompt never reaches outside the workspace --------------------------------------


def outside_files(tmp_path: Path) -> Path:
    """A folder outside the workspace holding prompt files with secrets in them."""
    outside = tmp_path / "outside"
    (outside / "seri" / "rules").mkdir(parents=True)
    (outside / "agents.md").write_text("SECRET-AGENTS: never send me\n")
    (outside / "seri" / "rules" / "r.md").write_text("SECRET-RULE: never send me\n")
    (outside / "seri" / "memory.md").write_text("- SECRET-MEMORY: never send me\n")
    return outside


@pytest.mark.parametrize("layout", ["files", "seri-folder", "rules-folder"])
async def test_prompt_files_linked_from_outside_the_workspace_are_not_read(
    agent, provider: ScriptedProvider, workspace: Path, tmp_path: Path, layout: str
) -> None:
    outside = outside_files(tmp_path)
    os.symlink(outside / "agents.md", workspace / "AGENTS.md")
    seri = workspace / ".seri"
    if layout == "files":  # each file a link
        (seri / "rules").mkdir(parents=True)
        os.symlink(outside / "seri" / "rules" / "r.md", seri / "rules" / "r.md")
        os.symlink(outside / "seri" / "memory.md", seri / "memory.md")
        (seri / "rules" / "own.md").write_text("Inside rule: kept.\n")
    elif layout == "seri-folder":  # the whole .seri folder a link
        os.symlink(outside / "seri", seri)
    else:  # .seri is real, its rules folder a link
        seri.mkdir()
        os.symlink(outside / "seri" / "rules", seri / "rules")
        (seri / "memory.md").write_text("- Inside memory: kept.\n")
    provider.script(Text("hello"), Text("again"))
    client = await agent()
    await prompt(client, "hi")
    system = system_prompt(provider.requests[0])
    assert "SECRET" not in system
    if layout == "files":
        assert "Inside rule: kept." in system
    if layout == "rules-folder":
        assert "Inside memory: kept." in system
    logged = [
        m.message
        for m in client.log_messages
        if m.type == types.MessageType.Warning and "leads outside the workspace" in m.message
    ]
    assert any(str(workspace / "AGENTS.md") in line for line in logged)
    assert len(logged) == {"files": 3, "seri-folder": 3, "rules-folder": 2}[layout]
    shown = [m for m in client.messages if m.type == types.MessageType.Warning]
    assert len(shown) == 1  # once, at session open
    await prompt(client, "again")  # not again for the next prompt
    assert len([m for m in client.messages if m.type == types.MessageType.Warning]) == 1


async def test_profile_rules_and_memory_are_not_confined_to_the_workspace(
    agent, provider: ScriptedProvider, profile_root: Path, tmp_path: Path
) -> None:
    dotfiles = tmp_path / "dotfiles"
    (dotfiles / "rules").mkdir(parents=True)
    (dotfiles / "rules" / "me.md").write_text("Answer tersely. (linked rule)\n")
    (dotfiles / "memory.md").write_text("- I use fish. (linked memory)\n")
    profile_root.mkdir(parents=True)
    os.symlink(dotfiles / "rules", profile_root / "rules")
    os.symlink(dotfiles / "memory.md", profile_root / "memory.md")
    provider.script(Text("ok"))
    client = await agent()
    await prompt(client, "hi")
    system = system_prompt(provider.requests[0])
    assert "(linked rule)" in system and "(linked memory)" in system
    assert not [m for m in client.messages if m.type == types.MessageType.Warning]


@pytest.mark.parametrize("link", ["seri-folder", "memory-file"])
async def test_remember_never_writes_through_a_link_out_of_the_workspace(
    agent,
    provider: ScriptedProvider,
    workspace: Path,
    tmp_path: Path,
    profile_root: Path,
    link: str,
) -> None:
    outside = outside_files(tmp_path)
    before = (outside / "seri" / "memory.md").read_text()
    if link == "seri-folder":
        os.symlink(outside / "seri", workspace / ".seri")
    else:
        (workspace / ".seri").mkdir()
        os.symlink(outside / "seri" / "memory.md", workspace / ".seri" / "memory.md")
    provider.script(Calls([("m", "remember", {"text": "We deploy on Fridays."})]), Text("ok"))
    client = await agent()
    client.answers.append("Remember")
    assert (await prompt(client, "remember it"))["status"] == "done"
    result = tool_results(await messages(client))["m"]
    assert result["isError"]
    assert "Not saved" in result["content"] and "outside the workspace" in result["content"]
    assert str(outside / "seri" / "memory.md") in result["content"]
    assert client.message_requests == []  # nobody was asked to approve a write outside
    assert (outside / "seri" / "memory.md").read_text() == before
    assert events(profile_root, "memory")[0]["approved"] is False


async def test_the_memory_dialog_names_the_file_really_written(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "docs").mkdir()
    (workspace / "docs" / "memory.md").write_text("- Old fact.")  # no final newline
    (workspace / ".seri").mkdir()
    os.symlink(workspace / "docs" / "memory.md", workspace / ".seri" / "memory.md")
    provider.script(Calls([("m", "remember", {"text": "New fact."})]), Text("ok"))
    client = await agent()
    client.answers.append("Remember")
    await prompt(client, "remember it")
    assert str(workspace / "docs" / "memory.md") in client.message_requests[0].message
    assert (workspace / "docs" / "memory.md").read_text() == "- Old fact.\n- New fact.\n"
    assert (workspace / ".seri" / "memory.md").is_symlink()  # the link stays a link
    assert temp_files(workspace / "docs") == []


# --- at most three subagents at once -----------------------------------------------------


def four_tasks() -> Calls:
    return Calls([(f"t{n}", "task", {"prompt": f"subtask {n}"}) for n in range(1, 5)])


async def test_at_most_three_subagents_run_at_once_and_every_call_gets_its_result(
    agent, provider: ScriptedProvider
) -> None:
    hangs = [Hang(then=Text(f"answer {n}")) for n in range(1, 5)]
    provider.script(four_tasks(), *hangs, Text("all four done"))
    client = await agent()
    running = asyncio.ensure_future(prompt(client, "split the work"))
    await asyncio.to_thread(provider.wait_for_requests, 4)  # the parent and three subagents
    await asyncio.sleep(1.0)
    assert len(provider.requests) == 4  # the fourth waits its turn
    assert provider.active == 3
    hangs[0].release.set()
    await asyncio.to_thread(provider.wait_for_requests, 5)  # a slot came free
    for hang in hangs[1:]:
        hang.release.set()
    outcome = await asyncio.wait_for(running, timeout=20)
    assert outcome["status"] == "done"
    assert provider.most_active == 3
    results = tool_results(await messages(client))
    assert sorted(results) == ["t1", "t2", "t3", "t4"]
    assert not any(r.get("isError") for r in results.values())
    assert sorted(r["content"] for r in results.values()) == [f"answer {n}" for n in range(1, 5)]
    assert len(provider.requests) == 6


async def test_cancel_stops_running_and_waiting_subagents(
    agent, provider: ScriptedProvider
) -> None:
    provider.script(four_tasks(), *[Hang() for _ in range(4)])
    client = await agent()
    running = asyncio.ensure_future(prompt(client, "split the work"))
    await asyncio.to_thread(provider.wait_for_requests, 4)
    started = time.monotonic()
    assert await command(client, "seri.cancel", {}) == {"cancelled": True}
    outcome = await asyncio.wait_for(running, timeout=5)
    assert time.monotonic() - started < 2
    assert outcome["status"] == "cancelled"
    results = tool_results(await messages(client))
    assert sorted(results) == ["t1", "t2", "t3", "t4"]
    assert all(r["isError"] for r in results.values())
    running_ones = [r for r in results.values() if "The subagent cancelled" in r["content"]]
    assert len(running_ones) == 3
    waiting = [r for r in results.values() if "before this subagent started" in r["content"]]
    assert len(waiting) == 1
    await asyncio.sleep(0.5)
    assert len(provider.requests) == 4  # the waiting one never started


# --- the atomic write helper itself -------------------------------------------------------


def test_a_failed_atomic_write_leaves_no_temp_file_and_a_link_stays_a_link(tmp_path: Path) -> None:
    folder = tmp_path / "target"
    folder.mkdir()
    (folder / "inside").write_text("x")
    with pytest.raises(OSError):
        atomic_write_bytes(folder, b"cannot replace a folder")
    assert temp_files(tmp_path) == []

    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    atomic_write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    with pytest.raises(UnicodeEncodeError):
        atomic_write_text(real, "half \ud83d")
    assert real.read_text() == "new" and temp_files(tmp_path) == []


# --- hostile names and trees --------------------------------------------------------------


async def test_a_path_that_is_not_valid_text_is_a_failed_result_not_a_failed_task(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(
        Calls(
            [
                ("r", "read_file", '{"path": "a\\ud83d.txt"}'),
                ("l", "list_dir", '{"path": "\\udcff"}'),
                ("g", "grep", '{"pattern": "x", "path": "b\\ud83d"}'),
            ]
        ),
        Text("ok"),
    )
    client = await agent()
    outcome = await prompt(client, "read it")
    assert outcome["status"] == "done", outcome
    results = tool_results(await messages(client))
    for call_id in ("r", "l", "g"):
        assert results[call_id]["isError"], results[call_id]
        assert "not a valid path" in results[call_id]["content"]


async def test_file_names_that_are_not_utf8_are_listed_and_searched(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / os.fsdecode(b"bad\xff.txt")).write_text("needle here\n")
    (workspace / "good.txt").write_text("needle too\n")
    provider.script(
        Calls([("l", "list_dir", {"path": "."}), ("g", "grep", {"pattern": "needle"})]),
        Text("ok"),
    )
    client = await agent()
    outcome = await prompt(client, "look")
    assert outcome["status"] == "done", outcome
    results = tool_results(await messages(client))
    assert not results["l"].get("isError") and "bad\ufffd.txt" in results["l"]["content"]
    assert "good.txt" in results["l"]["content"]
    assert "bad\ufffd.txt:1: needle here" in results["g"]["content"]
    assert "good.txt:1: needle too" in results["g"]["content"]


async def test_grep_walks_a_tree_deeper_than_the_recursion_limit(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    folders = [workspace]
    for _ in range(1_100):  # deeper than Python's default recursion limit (1,000)
        folders.append(folders[-1] / "d")
        os.mkdir(folders[-1])
    (folders[-1] / "deep.txt").write_text("needle at the bottom\n")
    (folders[-1] / ".gitignore").write_text("ignored.txt\n")
    (folders[-1] / "ignored.txt").write_text("needle ignored\n")
    provider.script(Calls([("g", "grep", {"pattern": "needle"})]), Text("ok"))
    try:
        client = await agent()
        outcome = await prompt(client, "find it")
        found = tool_results(await messages(client))["g"]
    finally:
        # Removed here, bottom up: pytest's own clean-up (shutil.rmtree) recurses.
        for name in ("deep.txt", ".gitignore", "ignored.txt"):
            (folders[-1] / name).unlink()
        for folder in reversed(folders[1:]):
            os.rmdir(folder)
    assert outcome["status"] == "done", outcome
    assert not found.get("isError"), found["content"][:300]
    assert found["content"].endswith("deep.txt:1: needle at the bottom")
    assert "ignored" not in found["content"]


async def test_the_folders_the_editor_adds_and_removes_are_where_the_tools_may_read(
    agent, provider: ScriptedProvider, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "b.txt").write_text("from the other folder\n")
    # The editor names the folder through a link: its real path is the root.
    link = tmp_path / "other-link"
    link.symlink_to(other)
    target = str(Path(os.path.realpath(other)) / "b.txt")
    for call_id in ("before", "added", "removed"):
        provider.script(Calls([(call_id, "read_file", {"path": target})]), Text("ok"))
    client = await agent()
    folder = types.WorkspaceFolder(uri=link.as_uri(), name="other")

    def change(added: list[types.WorkspaceFolder], removed: list[types.WorkspaceFolder]) -> None:
        event = types.WorkspaceFoldersChangeEvent(added=added, removed=removed)
        client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(event=event)
        )

    await prompt(client, "read it")
    change([folder], [])
    await prompt(client, "read it now")
    change([], [folder])
    await prompt(client, "and now")
    results = tool_results(await messages(client))
    assert results["before"]["isError"] and "outside the workspace" in results["before"]["content"]
    assert not results["added"].get("isError"), results["added"]["content"]
    assert "from the other folder" in results["added"]["content"]
    assert results["removed"]["isError"], results["removed"]["content"]
    assert "outside the workspace" in results["removed"]["content"]
    # The project is still the first folder: the session stays where it was.
    session = await command(client, "seri.session.get", {})
    assert session["session"]["project"] == str(workspace)
