"""`seri.info`: what the server knows of its set-up, as `:checkhealth seri` shows it."""

from __future__ import annotations

from pathlib import Path

from seri_lsp import __version__
from tests.harness import command
from tests.scripted_provider import ScriptedProvider


async def test_info_names_the_profile_the_provider_and_the_window_from_its_model_list(
    agent, provider: ScriptedProvider, profile_root: Path, workspace: Path
) -> None:
    provider.context_length = 200_000
    client = await agent(init_options={"resumeOnOpen": False})
    info = await command(client, "seri.info", {})
    assert info == {
        "version": __version__,
        "profileRoot": str(profile_root.resolve()),
        "databasePath": str(profile_root.resolve() / "seri.db"),
        "project": str(workspace),
        "provider": {
            "baseUrl": provider.base_url,
            "model": provider.model,
            "apiKeySet": True,
            "apiKeySource": "provider.apiKey",
        },
        "contextWindow": {"tokens": 200_000, "source": "provider"},
        "mcpServers": [],  # none configured
    }
    # It opened no session.
    assert (await command(client, "seri.session.list", {}))["sessions"] == []


async def test_info_says_no_key_is_set_and_where_the_window_came_from(lsp) -> None:
    client = await lsp(
        init_options={
            "resumeOnOpen": False,
            "provider": {"baseUrl": "http://127.0.0.1:9/v1", "contextWindow": 32_000},
        }
    )
    info = await command(client, "seri.info", {})
    assert info["provider"]["apiKeySet"] is False
    assert info["provider"]["apiKeySource"] is None
    assert info["contextWindow"] == {"tokens": 32_000, "source": "setting"}
