"""Shared fixtures: a temporary profile root and workspace, the scripted provider, servers."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from pytest_lsp import LanguageClient

from tests.harness import provider_config, start_server, stop_server
from tests.scripted_provider import ScriptedProvider


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
