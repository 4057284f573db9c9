"""What a `run` command changed: listed in its result and recording, restored by
`seri.rewind`, and the command rules (`permissions.commands`) applied through the server."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.agent_helpers import prompt
from tests.harness import command
from tests.scripted_provider import ScriptedProvider, Text
from tests.test_run_tool import result_of, run, start
from tests.trajectory_helpers import of_kind, recording


async def test_a_commands_changes_are_listed_recorded_and_rewound(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "changed.txt").write_text("before\n")
    (workspace / "deleted.txt").write_text("keep me\n")
    (workspace / ".gitignore").write_text("build/\n")
    provider.script(
        run(
            "echo new > created.txt; echo after > changed.txt; rm deleted.txt; "
            "mkdir -p build; echo x > build/out.o"
        ),
        Text("done"),
    )
    client = await start(agent)
    assert (await prompt(client, "change things"))["status"] == "done"
    result = result_of(provider)
    assert result.startswith("exit code 0")
    assert "Files changed by the command (3):" in result
    for line in ("created: created.txt", "changed: changed.txt", "deleted: deleted.txt"):
        assert line in result
    assert "build/out.o" not in result  # ignored by .gitignore
    [record] = of_kind(await recording(client), "command")
    assert sorted(record["changed"]) == ["changed.txt", "created.txt", "deleted.txt"]

    answer = await command(client, "seri.rewind", {"steps": 1})
    assert sorted(answer["restoredFiles"]) == ["changed.txt", "created.txt", "deleted.txt"]
    assert not (workspace / "created.txt").exists()
    assert (workspace / "changed.txt").read_text() == "before\n"
    assert (workspace / "deleted.txt").read_text() == "keep me\n"


async def test_the_users_own_git_is_never_touched(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    head = (workspace / ".git" / "HEAD").read_bytes()
    listing = sorted(p.name for p in (workspace / ".git").iterdir())
    provider.script(run("echo hi > a.txt"), Text("ok"))
    client = await start(agent)
    await prompt(client, "go")
    assert "created: a.txt" in result_of(provider)
    assert (workspace / ".git" / "HEAD").read_bytes() == head
    assert sorted(p.name for p in (workspace / ".git").iterdir()) == listing
    assert not (workspace / ".git" / "index").exists()


async def test_allow_rules_run_without_asking_and_a_session_pattern_is_kept(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    provider.script(
        run("echo one > one.txt", "r1"),
        Text("a"),
        run("touch two.txt && git --version", "r2"),
        Text("b"),
        run("git --version && echo three", "r3"),
        Text("c"),
        run("echo x; rm -rf stuff", "r4"),
        Text("d"),
    )
    rules = {"allow": ["echo *", "touch *"], "deny": ["rm *"]}
    client = await agent(
        init_options={"permissions": {"write": "allow", "run": "ask", "commands": rules}}
    )
    await prompt(client, "first")  # every part allowed: no question
    assert (workspace / "one.txt").exists() and client.message_requests == []

    client.answers.append("Allow `git --version` for this session")
    await prompt(client, "second")  # `git --version` matches no rule: asked
    [asked] = client.message_requests
    assert "`touch two.txt && git --version`" in asked.message
    assert "Allow `git --version` for this session" in [a.title for a in asked.actions]
    assert (workspace / "two.txt").exists()

    await prompt(client, "third")  # the session pattern now allows it
    assert len(client.message_requests) == 1
    assert result_of(provider, 5).startswith("exit code 0")

    await prompt(client, "fourth")  # one part denied: the whole line is refused
    assert len(client.message_requests) == 1
    assert result_of(provider, 7).startswith("not run (denied)")
    assert "rm *" in result_of(provider, 7)


async def test_a_commands_paths_are_in_the_recaps_modified_list(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    from tests.agent_helpers import messages
    from tests.test_compaction import FILLER, SUMMARY

    provider.script(run("echo made > made.txt"), Text(f"made {FILLER}"))
    client = await agent(
        init_options={"permissions": {"run": "allow"}},
        provider_extra={"contextWindow": 4000, "keepTokens": 150},
    )
    await prompt(client, "make a file")
    provider.script(Text(f"ok {FILLER}"))
    await prompt(client, "thanks")
    provider.script(Text(SUMMARY))
    assert (await command(client, "seri.compact", {}))["compacted"] is True
    recap = (await messages(client))[0]
    assert recap["kind"] == "recap" and recap["recap"]["modified"] == ["made.txt"]
    assert "Modified: made.txt" in recap["content"]
