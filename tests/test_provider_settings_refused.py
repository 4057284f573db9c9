"""A provider setting whose value is wrong never sends work elsewhere: prompts are refused
(naming the setting, its value and what is wrong) until the setting is fixed, and
`seri.info` shows the problem. A refused key names where it came from and the real fix.
Real server process, scripted provider on 127.0.0.1.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.agent_helpers import prompt
from tests.harness import command, provider_config
from tests.scripted_provider import Error, ScriptedProvider, Text

VSCODE_STORE = {
    "name": "VS Code's secret storage",
    "command": "Seri: Set API Key",
    "inUse": True,
}


@pytest.fixture
def decoy() -> Iterator[ScriptedProvider]:
    """A second provider, where the environment points: it must never be called."""
    server = ScriptedProvider().start()
    yield server
    server.stop()


def no_scheme(url: str) -> str:
    return url.removeprefix("http://")


async def test_a_base_url_without_a_scheme_refuses_prompts_until_it_is_fixed(
    lsp, provider: ScriptedProvider, decoy: ScriptedProvider
) -> None:
    wrong = no_scheme(provider.base_url)  # 127.0.0.1:PORT/v1
    settings = {"provider": provider_config(provider, baseUrl=wrong), "resumeOnOpen": False}
    # The environment names another provider: falling back to it would send the code there.
    client = await lsp(init_options=settings, env={"SERI_BASE_URL": decoy.base_url})

    with pytest.raises(JsonRpcException) as refused:
        await prompt(client, "here is my code")
    message = str(refused.value)
    assert "provider.baseUrl" in message
    assert repr(wrong) in message
    assert "http://" in message and "https://" in message
    assert "nothing was sent" in message.lower()
    assert provider.requests == [] and decoy.requests == []
    assert provider.model_list_requests == 0 and decoy.model_list_requests == 0
    # Nothing was stored either: the prompt never became a turn.
    assert (await command(client, "seri.session.list", {}))["sessions"] == []

    info = await command(client, "seri.info", {})
    assert info["provider"]["baseUrl"] == wrong
    [problem] = info["provider"]["problems"]
    assert "provider.baseUrl" in problem and repr(wrong) in problem
    assert decoy.model_list_requests == 0

    fixed = {"provider": provider_config(provider), "resumeOnOpen": False}
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=fixed))
    provider.script(Text("now it works"))
    result = await prompt(client, "here is my code")
    assert result["status"] == "done", result
    assert len(provider.requests) == 1 and decoy.requests == []
    info = await command(client, "seri.info", {})
    assert info["provider"]["baseUrl"] == provider.base_url
    assert "problems" not in info["provider"]


@pytest.mark.parametrize(
    ("extra", "setting", "shown"),
    [
        ({"model": 42}, "provider.model", "42"),
        ({"apiKey": "clé"}, "provider.apiKey", "printable ASCII"),
        ({"provider": ["anthropic"]}, "provider.provider", "['anthropic']"),
    ],
)
async def test_other_settings_that_decide_where_prompts_go_refuse_them_too(
    agent, provider: ScriptedProvider, extra: dict[str, Any], setting: str, shown: str
) -> None:
    # With a key in the environment, a wrong provider.apiKey must not fall back to it.
    client = await agent(provider_extra=extra, env={"SERI_API_KEY": "another-account"})
    with pytest.raises(JsonRpcException) as refused:
        await prompt(client, "hello")
    assert setting in str(refused.value) and shown in str(refused.value)
    assert provider.requests == []


async def test_a_compaction_is_refused_too(agent, provider: ScriptedProvider) -> None:
    client = await agent(provider_extra={"baseUrl": "localhost:1234/v1"})
    with pytest.raises(JsonRpcException, match=r"provider\.baseUrl"):
        await prompt(client, "/compact")
    assert provider.requests == []


async def test_a_wrong_setting_of_no_consequence_for_where_keeps_its_default(
    agent, provider: ScriptedProvider
) -> None:
    provider.script(Text("fine"))
    client = await agent(provider_extra={"keepTokens": -5})
    assert (await prompt(client, "hello"))["status"] == "done"
    assert "problems" not in (await command(client, "seri.info", {}))["provider"]


# --- a refused key names its real source and the real fix -----------------------------


async def test_a_refused_key_from_vscode_secret_storage_says_to_run_set_api_key(
    agent, provider: ScriptedProvider
) -> None:
    provider.script(Error(401, {"error": {"message": "User not found."}}))
    client = await agent(
        provider_extra={"apiKey": None},
        init_options={"apiKeyStore": VSCODE_STORE},
        env={"SERI_API_KEY": "stored-key"},
    )
    result = await prompt(client, "hello")
    error = result["error"]
    assert "HTTP 401: User not found." in error
    assert "VS Code's secret storage" in error and "Seri: Set API Key" in error
    assert "SERI_API_KEY" not in error and "provider.apiKey" not in error
    info = await command(client, "seri.info", {})
    assert info["provider"]["apiKeySource"] == "VS Code's secret storage"


async def test_a_refused_key_from_the_environment_says_to_change_the_variable(
    agent, provider: ScriptedProvider
) -> None:
    provider.script(Error(401, {"error": {"message": "Invalid key"}}))
    # The editor has a store, but the key is not from it: the variable is named.
    client = await agent(
        provider_extra={"apiKey": None},
        init_options={"apiKeyStore": {**VSCODE_STORE, "inUse": False}},
        env={"OPENROUTER_API_KEY": "wrong"},
    )
    error = (await prompt(client, "hello"))["error"]
    assert "environment variable OPENROUTER_API_KEY" in error
    assert "secret storage" not in error


async def test_a_refused_key_from_config_json_names_the_file(
    lsp, provider: ScriptedProvider, profile_root
) -> None:
    profile_root.mkdir(mode=0o700, exist_ok=True)
    (profile_root / "config.json").write_text('{"provider": {"apiKey": "from-file"}}')
    provider.script(Error(401, {"error": {"message": "Invalid key"}}))
    settings = provider_config(provider)
    del settings["apiKey"]
    client = await lsp(init_options={"provider": settings}, env={"SERI_API_KEY": "ignored"})
    error = (await prompt(client, "hello"))["error"]
    assert f"provider.apiKey in {profile_root.resolve() / 'config.json'}" in error
    assert "SERI_API_KEY" not in error
    assert provider.headers[0]["Authorization"] == "Bearer from-file"


async def test_no_key_in_vscode_says_to_run_set_api_key(agent, provider: ScriptedProvider) -> None:
    client = await agent(
        provider_extra={"baseUrl": "https://openrouter.ai/api/v1", "apiKey": None},
        init_options={"apiKeyStore": {**VSCODE_STORE, "inUse": False}},
    )
    error = (await prompt(client, "hello"))["error"]
    assert error.startswith("No API key for https://openrouter.ai/api/v1: run Seri: Set API Key")
    assert provider.requests == []


# --- a config.json that cannot be read may hold the provider settings -------------------


@pytest.mark.parametrize(
    ("text", "what"),
    [
        ('{"provider": {"baseUrl": "http://127.0.0.1:1/v1",}', "not valid JSON"),
        ('["provider"]', "must hold a JSON object"),
    ],
)
async def test_an_unreadable_config_json_refuses_prompts_rather_than_use_defaults(
    lsp, profile_root, provider: ScriptedProvider, decoy: ScriptedProvider, text: str, what: str
) -> None:
    config = profile_root / "config.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)
    # The options set no baseUrl: the default (or the environment's) would get the code.
    client = await lsp(
        init_options={"resumeOnOpen": False},
        env={"SERI_BASE_URL": decoy.base_url, "SERI_API_KEY": "k", "SERI_MODEL": "m"},
    )
    with pytest.raises(JsonRpcException) as refused:
        await prompt(client, "here is my code")
    message = str(refused.value)
    assert str(config) in message and what in message
    assert "nothing was sent" in message.lower() and "fix" in message.lower()
    assert decoy.requests == [] and decoy.model_list_requests == 0
    info = await command(client, "seri.info", {})
    assert any(str(config) in problem for problem in info["provider"]["problems"])
    # Everything else still works: the session list answers.
    assert (await command(client, "seri.session.list", {}))["sessions"] == []


async def test_an_unreadable_config_json_does_not_block_when_the_options_decide_the_provider(
    lsp, profile_root, provider: ScriptedProvider
) -> None:
    config = profile_root / "config.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("{not json")
    provider.script(Text("fine"))
    client = await lsp(init_options={"provider": provider_config(provider), "resumeOnOpen": False})
    assert (await prompt(client, "hello"))["status"] == "done"
    assert "problems" not in (await command(client, "seri.info", {}))["provider"]
