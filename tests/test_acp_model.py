"""`seri-lsp acp` offers the model as a session config option (`configOptions` in
session/new, `session/set_config_option`), mapped to `seri.session.model`; `/model` works
there too. Real agent process, scripted provider on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

from tests.acp_client import start_acp, write_config
from tests.harness import provider_config
from tests.scripted_provider import ScriptedProvider, Text


async def test_the_model_is_a_config_option_that_switches_the_next_turn(
    profile_root: Path, workspace: Path, provider: ScriptedProvider
) -> None:
    write_config(profile_root, {"provider": provider_config(provider)})
    async with start_acp(profile_root, workspace) as agent:
        response = await agent.conn.new_session(cwd=str(workspace))
        [option] = response.config_options
        assert (option.id, option.category, option.current_value) == (
            "model",
            "model",
            "test/model",
        )
        assert [entry.value for entry in option.options] == ["test/model", "other/model"]
        changed = await agent.conn.set_config_option(
            config_id="model", session_id=response.session_id, value="other/model"
        )
        assert changed.config_options[0].current_value == "other/model"
        provider.script(Text("hi"))
        await agent.prompt(response.session_id, "hello")
        assert provider.requests[-1]["model"] == "other/model"

        await agent.prompt(response.session_id, "/model default")
        provider.script(Text("again"))
        await agent.prompt(response.session_id, "hello again")
        assert provider.requests[-1]["model"] == "test/model"
        # A loaded session offers the option with the model it uses.
        loaded = await agent.load(response.session_id)
        assert loaded.config_options[0].current_value == "test/model"
