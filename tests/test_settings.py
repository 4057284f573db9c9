"""Settings resolution: init options > config.json > environment (provider) > defaults."""

from __future__ import annotations

import json
from pathlib import Path

from seri_lsp.settings import DEFAULT_BASE_URL, load_settings


def test_defaults_without_any_source(tmp_path: Path) -> None:
    settings, problems = load_settings(tmp_path, None, env={})
    assert problems == []
    assert settings.max_turns == 500
    assert settings.resume_on_open is True
    assert settings.write_permission == "ask"
    assert settings.provider.base_url == DEFAULT_BASE_URL
    assert settings.provider.keep_tokens == 20_000
    assert settings.provider.elide_bytes == 8192
    assert settings.provider.context_window is None


def test_init_options_win_over_config_json_and_merge_provider_fields(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps({"maxTurns": 40, "provider": {"model": "a/b", "keepTokens": 1000}})
    )
    settings, problems = load_settings(
        tmp_path, {"maxTurns": 7, "provider": {"keepTokens": 2000}}, env={}
    )
    assert problems == []
    assert settings.max_turns == 7
    assert settings.provider.model == "a/b"
    assert settings.provider.keep_tokens == 2000


def test_environment_fills_provider_fields_no_setting_gives(tmp_path: Path) -> None:
    env = {
        "SERI_BASE_URL": "http://env/v1",
        "SERI_MODEL": "env/model",
        "OPENROUTER_API_KEY": "or-key",
    }
    settings, _ = load_settings(tmp_path, {"provider": {"model": "set/model"}}, env=env)
    assert settings.provider.base_url == "http://env/v1"
    assert settings.provider.model == "set/model"
    assert settings.provider.api_key == "or-key"
    settings, _ = load_settings(tmp_path, None, env={**env, "SERI_API_KEY": "seri-key"})
    assert settings.provider.api_key == "seri-key"


def test_sampling_knobs_pin_and_effort_are_kept_as_given(tmp_path: Path) -> None:
    pin = {"order": ["anthropic"], "allow_fallbacks": False}
    settings, problems = load_settings(
        tmp_path,
        {
            "provider": {
                "temperature": 0.2,
                "topP": 0.9,
                "maxTokens": 4096,
                "reasoningEffort": "high",
                "provider": pin,
            }
        },
        env={},
    )
    assert problems == []
    assert dict(settings.provider.sampling) == {
        "temperature": 0.2,
        "top_p": 0.9,
        "max_tokens": 4096,
    }
    assert settings.provider.reasoning_effort == "high"
    assert settings.provider.provider == pin


def test_sampling_knobs_of_the_wrong_type_are_named_and_not_sent(tmp_path: Path) -> None:
    settings, problems = load_settings(
        tmp_path,
        {
            "provider": {
                "temperature": "hot",
                "topP": 0.5,
                "topK": -1,
                "maxTokens": 0,
                "seed": 1.5,
                "stop": ["###", 3],
                "presencePenalty": True,
            }
        },
        env={},
    )
    assert dict(settings.provider.sampling) == {"top_p": 0.5}
    named = ["temperature", "topK", "maxTokens", "seed", "presencePenalty", "stop"]
    assert len(problems) == len(named)
    for name, problem in zip(named, problems, strict=True):
        assert f"provider.{name}" in problem and "not sent" in problem
    assert "'hot'" in problems[0]
    good, none = load_settings(tmp_path, {"provider": {"stop": "END", "seed": -3}}, env={})
    assert none == [] and dict(good.provider.sampling) == {"stop": "END", "seed": -3}


def test_bad_values_fall_back_to_defaults_with_a_message(tmp_path: Path) -> None:
    settings, problems = load_settings(
        tmp_path,
        {
            "maxTurns": "many",
            "resumeOnOpen": "yes",
            "permissions": {"write": "sometimes"},
            "provider": {"keepTokens": -5, "contextWindow": 1.5},
        },
        env={},
    )
    assert settings.max_turns == 500
    assert settings.resume_on_open is True
    assert settings.write_permission == "ask"
    assert settings.provider.keep_tokens == 20_000
    assert settings.provider.context_window is None
    joined = "\n".join(problems)
    for name in ("maxTurns", "resumeOnOpen", "permissions.write", "provider.keepTokens"):
        assert name in joined


def test_a_broken_config_json_is_reported_and_ignored_not_rewritten(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"maxTurns": 4,,}')
    settings, problems = load_settings(tmp_path, None, env={})
    assert settings.max_turns == 500
    assert "not valid JSON" in problems[0] and "line 1" in problems[0]
    assert config.read_text() == '{"maxTurns": 4,,}'


def test_check_names_that_differ_only_in_spaces_are_one_check(tmp_path: Path) -> None:
    settings, problems = load_settings(
        tmp_path,
        {"checks": [{"name": "lint", "command": "true"}, {"name": " lint ", "command": "false"}]},
        env={},
    )
    assert [check.name for check in settings.checks] == ["lint"]
    assert len(problems) == 1 and "comes earlier" in problems[0]


def test_unknown_keys_are_named_once_per_source_with_the_setting_they_meant(
    tmp_path: Path,
) -> None:
    (tmp_path / "config.json").write_text(
        json.dumps({"maxturns": 40, "provider": {"baseURL": "http://x/v1"}, "theme": "dark"})
    )
    options = {
        "resumeOnOpen": False,
        "permissions": {"wirte": "allow", "run": "allow"},
        "provider": {"model": "a/b", "temprature": 0.2},
    }
    settings, problems = load_settings(tmp_path, options, env={})
    assert problems == [
        "Unknown settings in the initialization options: "
        "provider.temprature (did you mean provider.temperature?); "
        "permissions.wirte (did you mean permissions.write?). They are ignored.",
        f"Unknown settings in {tmp_path / 'config.json'}: maxturns (did you mean maxTurns?); "
        "theme; provider.baseURL (did you mean provider.baseUrl?). They are ignored.",
        # Left unread, it would send prompts to the default provider: they are refused.
        f"Setting provider.baseURL (in {tmp_path / 'config.json'}) is no setting (did you "
        "mean provider.baseUrl?). No prompt is sent until it is fixed: seri does not fall "
        "back to another provider.",
    ]
    # Everything else still loads.
    assert settings.resume_on_open is False
    assert settings.run_permission == "allow"
    assert settings.provider.model == "a/b"
    assert settings.max_turns == 500 and settings.provider.base_url == DEFAULT_BASE_URL


def test_the_openrouter_pin_is_sent_as_is_and_its_keys_are_not_checked(tmp_path: Path) -> None:
    pin = {"order": ["anthropic"], "allow_fallbacks": False, "anything": 1}
    settings, problems = load_settings(tmp_path, {"provider": {"provider": pin}}, env={})
    assert problems == []
    assert settings.provider.provider == pin


def test_what_the_bundled_editors_send_is_all_settings(tmp_path: Path) -> None:
    """Every setting the VS Code extension contributes (but its own: how the server is
    started, tracing) and the Neovim plugin's documented example load without a warning."""
    package = Path(__file__).parent.parent / "editors" / "vscode" / "package.json"
    configuration = json.loads(package.read_text())["contributes"]["configuration"]
    sections = configuration if isinstance(configuration, list) else [configuration]
    sent: dict = {}
    for section in sections:
        for name in section["properties"]:
            key = name.removeprefix("seri.")
            if key.startswith("server.") or key == "trace.server":
                continue
            *parents, leaf = key.split(".")
            target = sent
            for parent in parents:
                target = target.setdefault(parent, {})
            target[leaf] = None
    assert {"provider", "permissions", "maxTurns", "resumeOnOpen", "profileRoot"} <= set(sent)
    neovim = {"provider": {"model": "anthropic/claude-sonnet-4.5"}, "permissions": {"write": "ask"}}
    for options in (sent, neovim):
        _, problems = load_settings(tmp_path, options, env={})
        assert problems == [], problems


# --- a wrong setting that decides where prompts go is kept, and blocks them -------------


def test_a_base_url_without_a_scheme_blocks_prompts_rather_than_fall_back(
    tmp_path: Path,
) -> None:
    settings, problems = load_settings(
        tmp_path,
        {"provider": {"baseUrl": "127.0.0.1:47150/v1"}},
        env={"SERI_BASE_URL": "http://elsewhere/v1"},
    )
    # Neither the environment's URL nor the default replaces it.
    assert settings.provider.base_url == "127.0.0.1:47150/v1"
    [blocking] = settings.provider.blocking
    assert blocking == (
        "Setting provider.baseUrl (in the initialization options) is '127.0.0.1:47150/v1', "
        "which is not an http:// or https:// URL (did you mean 'http://127.0.0.1:47150/v1'?). "
        "No prompt is sent until it is fixed: seri does not fall back to another provider."
    )
    assert problems == [blocking]


def test_a_wrong_value_in_config_json_or_the_environment_names_its_source(
    tmp_path: Path,
) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"provider": {"model": ""}}))
    settings, _ = load_settings(tmp_path, None, env={"SERI_BASE_URL": "localhost:8080"})
    first, second = settings.provider.blocking
    assert first.startswith(f"Setting provider.model (in {tmp_path / 'config.json'}) is ''")
    assert second.startswith("SERI_BASE_URL (in the environment) is 'localhost:8080', which")
    assert "'http://localhost:8080'" in second


def test_a_wrong_api_key_setting_is_not_replaced_by_the_environment_s(tmp_path: Path) -> None:
    settings, _ = load_settings(
        tmp_path, {"provider": {"apiKey": "clé"}}, env={"SERI_API_KEY": "another-account"}
    )
    assert settings.provider.api_key is None
    [blocking] = settings.provider.blocking
    assert "provider.apiKey" in blocking and "printable ASCII" in blocking
    assert "clé" not in blocking  # a key is never repeated in a message


def test_a_provider_section_or_pin_that_is_no_object_blocks_prompts(tmp_path: Path) -> None:
    settings, _ = load_settings(tmp_path, {"provider": "local"}, env={})
    assert "Setting provider" in settings.provider.blocking[0]
    settings, _ = load_settings(tmp_path, {"provider": {"provider": ["azure"]}}, env={})
    assert "provider.provider" in settings.provider.blocking[0]


def test_a_misspelt_where_setting_blocks_prompts_unless_the_real_one_is_set(
    tmp_path: Path,
) -> None:
    settings, _ = load_settings(tmp_path, {"provider": {"baseURL": "http://localhost/v1"}}, env={})
    [blocking] = settings.provider.blocking
    assert "provider.baseURL" in blocking and "did you mean provider.baseUrl?" in blocking
    both = {"provider": {"baseURL": "http://x/v1", "baseUrl": "http://localhost/v1"}}
    settings, _ = load_settings(tmp_path, both, env={})
    assert settings.provider.blocking == ()
    # The whole section under another name: none of it would be read.
    settings, _ = load_settings(tmp_path, {"Provider": {"baseUrl": "http://x/v1"}}, env={})
    [blocking] = settings.provider.blocking
    assert "Setting Provider (in the initialization options)" in blocking
    assert "did you mean provider?" in blocking


def test_other_wrong_settings_still_fall_back_without_blocking(tmp_path: Path) -> None:
    settings, problems = load_settings(
        tmp_path, {"provider": {"keepTokens": -5, "temperature": "hot"}, "maxTurns": 0}, env={}
    )
    assert settings.provider.blocking == ()
    assert len(problems) == 3
