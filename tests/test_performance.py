"""Performance behaviours, seen from outside: what is reused and what is not done early.

No test here times anything (speed is measured in `bench/`); each checks a behaviour
that makes the figures possible: one TCP connection serves a whole task, and a server
that only starts and lists sessions never loads the agent or its HTTP client.
"""

from __future__ import annotations

import importlib.abc
import sys
from pathlib import Path
from typing import Any

from pytest_lsp import ClientServerConfig, LanguageClient

from seri_lsp.agent.provider import Provider
from seri_lsp.settings import load_settings
from tests.agent_helpers import messages, prompt
from tests.conftest import provider_options
from tests.harness import command, initialize_client, make_client, server_env, stop_server
from tests.scripted_provider import Calls, Raw, ScriptedProvider, Text, usage


async def test_one_connection_serves_every_model_call_of_a_task(
    agent, provider: ScriptedProvider, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("hello from the notes\n")
    provider.script(
        Calls([("c1", "read_file", {"path": "notes.txt"})]),
        Calls([("c2", "read_file", {"path": "notes.txt"})]),
        Calls([("c3", "list_dir", {"path": "."})]),
        Text("The notes say hello.", usage=usage(100)),
    )
    client = await agent()
    outcome = await prompt(client, "What do the notes say?")
    assert outcome["status"] == "done" and outcome["turns"] == 4
    # Four model calls (and the model-list lookup for the window), one connection.
    assert len(provider.requests) == 4
    assert provider.connections == 1

    # The next task goes on using it.
    provider.script(Text("Still hello."))
    assert (await prompt(client, "And now?"))["status"] == "done"
    assert len(provider.requests) == 5
    assert provider.connections == 1


async def test_a_reply_whose_body_does_not_end_after_done_is_kept(
    agent, provider: ScriptedProvider
) -> None:
    """[DONE] came, but the body never ends: the reply stands (even past the provider's
    timeout, which no longer applies once the reply is complete) and the next call
    opens a fresh connection."""
    finished = {
        "id": "x",
        "model": provider.model,
        "choices": [{"index": 0, "delta": {"content": "Held."}, "finish_reason": "stop"}],
    }
    provider.script(Raw(events=[finished], end="hold"), Text("Next."))
    client = await agent(provider_extra={"timeout": 0.5, "contextWindow": 128_000})
    first = await prompt(client, "first")
    assert first["status"] == "done", first
    second = await prompt(client, "second")
    assert second["status"] == "done", second
    assert [m["content"] for m in await messages(client) if m["role"] == "assistant"] == [
        "Held.",
        "Next.",
    ]
    assert provider.connections == 2


def imported_modules(log: Path) -> set[str]:
    """Module names in a `python -X importtime` log."""
    names = set()
    for line in log.read_text().splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


async def test_nothing_heavy_before_the_first_prompt(
    profile_root: Path, workspace: Path, provider: ScriptedProvider, tmp_path: Path
) -> None:
    """Start-up, initialize and seri.session.list neither load the HTTP client (nor
    build its TLS context) nor the agent; the first prompt does both."""
    log = tmp_path / "imports.log"
    config = ClientServerConfig(
        server_command=[
            "sh",
            "-c",
            'exec "$0" -X importtime -m seri_lsp --profile-root "$1" 2>>"$2"',
            sys.executable,
            str(profile_root),
            str(log),
        ],
        client_factory=make_client,
        server_env=server_env(),
    )
    client: LanguageClient = await config.start()
    try:
        await initialize_client(client, workspace, init_options=provider_options(provider))
        assert (await command(client, "seri.session.list"))["sessions"] == []
        before = imported_modules(log)
        assert "seri_lsp.engine" in before  # the log is read as it grows
        assert "seri_lsp.agent.connection" not in before
        assert "httpx" not in before
        assert "seri_lsp.agent.tasks" not in before
        assert "seri_lsp.agent.provider" not in before

        provider.script(Text("Hello."))
        assert (await prompt(client, "hi"))["status"] == "done"
        after = imported_modules(log)
        assert {
            "seri_lsp.agent.connection",
            "seri_lsp.agent.tasks",
            "seri_lsp.agent.provider",
        } <= after
        assert "httpx" in after  # the provider's HTTP client, loaded with it
    finally:
        await stop_server(client)


class _Lookups(importlib.abc.MetaPathFinder):
    """Notes every module the import system has to look for (one not loaded yet)."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, name: str, path: Any, target: Any = None) -> None:
        self.names.append(name)
        return None


async def test_a_model_call_looks_for_no_module(provider: ScriptedProvider, tmp_path: Path) -> None:
    """After the first call, a model call imports nothing: a module that is looked for
    and never found (an optional dependency tried at each call) is searched for on
    sys.path again at every call."""
    settings, problems = load_settings(tmp_path, provider_options(provider))
    assert not problems, problems
    client = Provider(settings.provider)
    lookups = _Lookups()
    try:
        provider.script(Text("First."), Text("Second."))
        assert (await client.complete([{"role": "user", "content": "hi"}])).content == "First."
        sys.meta_path.insert(0, lookups)
        try:
            reply = await client.complete([{"role": "user", "content": "again"}])
        finally:
            sys.meta_path.remove(lookups)
        assert reply.content == "Second."
    finally:
        await client.aclose()
    assert lookups.names == []
