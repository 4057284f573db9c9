"""Shared fixtures: a temporary profile root and workspace, the scripted provider, servers."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from pytest_lsp import LanguageClient

from tests import tiers
from tests.harness import compile_server, provider_config, start_server, stop_server
from tests.scripted_provider import ScriptedProvider

# --- tiers and parallel runs (tests/tiers.py says why) ---------------------------------


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # once: in the process that starts the workers
        compile_server()


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tiers.classify(items)
    tiers.order(items)


def pytest_runtest_setup(item: pytest.Item) -> None:
    tiers.check_group(item)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the cores this process may use, so that while one
    waits (a test for a timeout) the cores stay busy. With VS Code lanes in the run, one
    worker per core and one per lane instead: a lane's worker only waits for its run
    (code-server and Chromium do the work, and wait a lot themselves) for minutes, and
    with two lanes on three workers the other tests had one worker meanwhile; the lanes
    are the extra work that keeps the cores busy, and a worker more would only crowd the
    workbenches, whose scenarios wait with timeouts.
    None for the fast tier alone: its tests take less time than workers take to start and
    collect the suite (twice the CPU, and longer)."""
    if config.getoption("markexpr") == "fast":
        return 0
    lanes = _vscode_lanes(config)
    return tiers.usable_cores() + (lanes or 1)


def _vscode_lanes(config: pytest.Config) -> int:
    """The VS Code lanes (runs of the workbench) this run may make: none when they are
    skipped or no path given holds tests/test_vscode.py."""
    if os.environ.get("SERI_SKIP_VSCODE_TESTS"):
        return 0
    here = Path(__file__).parent
    vscode = here / "test_vscode.py"
    for arg in config.args or [str(here)]:
        path = (config.invocation_params.dir / arg.partition("::")[0]).resolve()
        if path == vscode or path in vscode.parents:
            from tests.test_vscode import LANES

            return LANES
    return 0


_FAST_TEST_RUNNING: list[str] = []  # the node id of the fast test running, if one is


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    fast = item.get_closest_marker("fast") is not None
    if fast:
        _FAST_TEST_RUNNING.append(item.nodeid)
    try:
        return (yield)
    finally:
        if fast:
            _FAST_TEST_RUNNING.pop()


def _no_heavy_process_in_a_fast_test(event: str, args: tuple[Any, ...]) -> None:
    if not _FAST_TEST_RUNNING:
        return
    program = tiers.heavy_program(event, args)
    if program is not None:
        raise RuntimeError(
            f"{_FAST_TEST_RUNNING[-1]} is in the fast tier (tests/tiers.py found no process "
            f"start in it), yet it starts {program}. Start processes through a fixture or "
            "a helper of the test suite, or mark the test @pytest.mark.slow."
        )


sys.addaudithook(_no_heavy_process_in_a_fast_test)

# --- fixtures ----------------------------------------------------------------------------


@pytest.fixture
def profile_root(tmp_path: Path) -> Path:
    """A profile root that does not exist yet (the server creates it)."""
    return tmp_path / "profile"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder, by its canonical path."""
    folder = tmp_path / "workspace"
    folder.mkdir()
    return Path(os.path.realpath(folder))


@pytest.fixture
def provider() -> Iterator[ScriptedProvider]:
    """The scripted model provider, listening on 127.0.0.1."""
    server = ScriptedProvider().start()
    yield server
    server.stop()


def provider_options(
    provider: ScriptedProvider, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Initialization options that point the server at the scripted provider."""
    return {"provider": provider_config(provider, **(extra or {}))}


StartServer = Callable[..., Awaitable[LanguageClient]]


@pytest_asyncio.fixture
async def lsp(profile_root: Path, workspace: Path) -> AsyncIterator[StartServer]:
    """Start real server processes (any number); all are shut down after the test."""
    clients: list[LanguageClient] = []

    async def start(**kwargs: Any) -> LanguageClient:
        kwargs.setdefault("profile_root", profile_root)
        kwargs.setdefault("workspace", workspace)
        client = await start_server(kwargs.pop("profile_root"), kwargs.pop("workspace"), **kwargs)
        clients.append(client)
        return client

    yield start
    for client in clients:
        await stop_server(client)


@pytest_asyncio.fixture
async def agent(
    lsp: StartServer, provider: ScriptedProvider
) -> Callable[..., Awaitable[LanguageClient]]:
    """Start a server wired to the scripted provider (writes allowed unless told)."""

    async def start(
        *, provider_extra: dict[str, Any] | None = None, **options: Any
    ) -> LanguageClient:
        init = provider_options(provider, provider_extra)
        init.setdefault("permissions", {"write": "allow"})
        init.update(options.pop("init_options", {}))
        return await lsp(init_options=init, **options)

    return start
