"""Settings: initialization options, then the profile's `config.json`, then defaults.

Provider settings fall back to the environment (`SERI_BASE_URL`, `SERI_MODEL`,
`SERI_API_KEY` / `OPENROUTER_API_KEY`) where neither source sets them. A value of the
wrong type is reported and replaced by its default, never fatal: a typo in a settings
file must not keep the editor from starting. A key that is no setting (at the top or
inside `provider` or `permissions`) is reported once per source, with the setting it
probably meant, and everything else still loads.

The exception: a setting that decides where prompts (and the key) go (`provider.baseUrl`,
`provider.model`, `provider.apiKey`, the OpenRouter pin `provider.provider`, or their
variables) is never replaced by a default or another source when its value is wrong or
its name misspelt, since that would send the user's code elsewhere. It is kept in
`ProviderSettings.blocking`, and no prompt is sent until it is fixed. So is a
`config.json` that cannot be read as settings, since it may hold them, unless the
initialization options alone decide where prompts go (`_options_decide_provider`).
"""

from __future__ import annotations

import difflib
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeGuard

from seri_lsp.command_rules import CommandRules, Pattern
from seri_lsp.files import NotRegularFile, open_regular
from seri_lsp.limits import MAX_TURNS, lone_surrogate
from seri_lsp.profile import CONFIG_NAME

DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
DEFAULT_MODEL = "anthropic/claude-sonnet-4.5"
DEFAULT_CONTEXT_WINDOW = 128_000
SUBAGENT_MAX_TURNS = 25
# Environment variables read for the API key, in order (after the settings).
API_KEY_ENV = ("SERI_API_KEY", "OPENROUTER_API_KEY")

WritePermission = Literal["allow", "ask", "deny"]
Permission = WritePermission  # permissions.write and permissions.run take the same values
PERMISSIONS = ("allow", "ask", "deny")
# provider.promptCache and provider.cacheTtl (see agent/provider/cache.py).
PromptCache = Literal["auto", "on", "off"]
PROMPT_CACHE_MODES = ("auto", "on", "off")
# run.shell: which shell runs the `run` tool's command lines on Windows.
RUN_SHELLS = ("cmd", "powershell")
RunShell = Literal["cmd", "powershell"]
CACHE_TTLS = ("5m", "1h")
# A check runs at most this long unless its own `timeout` says otherwise (seconds).
DEFAULT_CHECK_TIMEOUT = 120.0
# The largest config.json read: settings are a few hundred bytes.
MAX_CONFIG_BYTES = 1024 * 1024

Check = Callable[[Any], bool]


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _non_negative_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _positive_number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and value > 0
        and math.isfinite(value)
    )


def _non_negative_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def _text(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and bool(value.strip()) and lone_surrogate(value) is None


def _url(value: Any) -> bool:
    """An http(s) URL (the provider's HTTP client can call nothing else)."""
    return _text(value) and value.strip().lower().startswith(("http://", "https://"))


def _header_text(value: Any) -> bool:
    """Text an HTTP header can carry: printable ASCII (an API key)."""
    return _text(value) and all(" " <= ch <= "~" for ch in value)


def _boolean(value: Any) -> bool:
    return isinstance(value, bool)


def _object(value: Any) -> bool:
    return isinstance(value, dict)


def _finite_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _whole_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _stop_sequences(value: Any) -> bool:
    if isinstance(value, str):
        return bool(value)
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


def _max_turns(value: Any) -> bool:
    return _positive_int(value) and value <= MAX_TURNS


def _permission(value: Any) -> bool:
    return value in PERMISSIONS


def _prompt_cache(value: Any) -> bool:
    return value in PROMPT_CACHE_MODES


def _run_shell(value: Any) -> bool:
    return value in RUN_SHELLS


def _cache_ttl(value: Any) -> bool:
    return value in CACHE_TTLS


@dataclass(frozen=True)
class Declared:
    """What a setting is to its sources: its key as written there (`maxTurns`,
    `provider.baseUrl`: the section, a dot, the name), the check its value must pass
    and what that is in words (`Setting maxTurns must be <description>, ...`)."""

    key: str
    check: Check
    description: str
    # Environment variables read, in order, when no source sets it.
    env: tuple[str, ...] = ()
    # Reads a value that has more to it than one check (its entries each checked).
    read: Callable[[Any, list[str]], Any] | None = None
    # It decides where prompts go: a wrong value blocks them rather than fall back.
    routes: bool = False
    # Its value is never repeated in a message (the API key).
    secret: bool = False

    @property
    def section(self) -> str:
        """The object it sits in (`provider`), "" at the top level."""
        return self.key.rpartition(".")[0]

    @property
    def name(self) -> str:
        """Its key inside its section."""
        return self.key.rpartition(".")[2]


# The dataclass-field metadata key under which a setting keeps its declaration.
_DECLARED = "declared_setting"


def setting(
    key: str,
    default: Any,
    check: Check,
    description: str,
    *,
    env: tuple[str, ...] = (),
    read: Callable[[Any, list[str]], Any] | None = None,
    routes: bool = False,
    secret: bool = False,
) -> Any:
    """A dataclass field that is a setting: its default, and how its sources name and
    check it (`routes`: it decides where prompts go, see the module's docstring). Adding
    a setting is one such field (plus its line in the docs)."""
    declared = Declared(key, check, description, env, read, routes, secret)
    return field(default=default, metadata={_DECLARED: declared})


@dataclass(frozen=True)
class SamplingKnob:
    """A sampling setting (`provider.topP`): sent to the provider as `request_field`
    when set; a value that fails its check is warned about and not sent (the provider
    would refuse the whole request for it)."""

    name: str
    request_field: str
    check: Check
    description: str

    @property
    def key(self) -> str:
        return f"provider.{self.name}"


SAMPLING: tuple[SamplingKnob, ...] = (
    SamplingKnob("temperature", "temperature", _finite_number, "a number"),
    SamplingKnob("topP", "top_p", _finite_number, "a number"),
    SamplingKnob("topK", "top_k", _non_negative_int, "a whole number, 0 or more"),
    SamplingKnob("minP", "min_p", _finite_number, "a number"),
    SamplingKnob("maxTokens", "max_tokens", _positive_int, "a positive integer"),
    SamplingKnob("seed", "seed", _whole_number, "a whole number"),
    SamplingKnob("frequencyPenalty", "frequency_penalty", _finite_number, "a number"),
    SamplingKnob("presencePenalty", "presence_penalty", _finite_number, "a number"),
    SamplingKnob("repetitionPenalty", "repetition_penalty", _finite_number, "a number"),
    SamplingKnob("stop", "stop", _stop_sequences, "a string or a list of strings"),
)
# Sampling knobs: setting name (camelCase) -> request field (snake_case).
SAMPLING_KNOBS = {knob.name: knob.request_field for knob in SAMPLING}


@dataclass(frozen=True)
class ProviderSettings:
    """How to reach the model, and the context-management budgets that depend on it."""

    base_url: str = setting(
        "provider.baseUrl",
        DEFAULT_BASE_URL,
        _url,
        "an http:// or https:// URL",
        env=("SERI_BASE_URL",),
        routes=True,
    )
    api_key: str | None = setting(
        "provider.apiKey",
        None,
        _header_text,
        "a string of printable ASCII characters",
        env=API_KEY_ENV,
        routes=True,
        secret=True,
    )
    model: str = setting(
        "provider.model", DEFAULT_MODEL, _text, "a model id", env=("SERI_MODEL",), routes=True
    )
    context_window: int | None = setting(
        "provider.contextWindow", None, _positive_int, "a positive integer"
    )
    keep_tokens: int = setting("provider.keepTokens", 20_000, _positive_int, "a positive integer")
    elide_bytes: int = setting("provider.elideBytes", 8192, _positive_int, "a positive integer")
    # Request field -> value, from the SAMPLING knobs that are set.
    sampling: Mapping[str, Any] = field(default_factory=dict)
    reasoning_effort: str | None = setting(
        "provider.reasoningEffort", None, _text, "a string such as 'high'"
    )
    provider: Mapping[str, Any] | None = setting(
        "provider.provider", None, _object, "an object", routes=True
    )
    stream: bool = setting("provider.stream", True, _boolean, "true or false")
    timeout: float = setting("provider.timeout", 300.0, _positive_number, "a number of seconds")
    max_retries: int = setting(
        "provider.maxRetries", 4, _non_negative_int, "a non-negative integer"
    )
    retry_base_delay: float = setting(
        "provider.retryBaseDelay", 1.0, _non_negative_number, "a number of seconds"
    )
    retry_max_delay: float = setting(
        "provider.retryMaxDelay", 60.0, _non_negative_number, "a number of seconds"
    )
    # Prompt-cache breakpoints: where the model needs them, always, or never.
    prompt_cache: PromptCache = setting(
        "provider.promptCache", "auto", _prompt_cache, "one of auto, on, off"
    )
    # The breakpoints' time to live.
    cache_ttl: str = setting("provider.cacheTtl", "5m", _cache_ttl, "one of 5m, 1h")
    # Where api_key came from and how to change it, for messages (None: no key).
    key_origin: KeyOrigin | None = field(default=None, compare=False)
    # The editor's own key store, if it has one (`apiKeyStore`), for the no-key advice.
    key_store: KeyStore | None = field(default=None, compare=False)
    # Why no prompt may be sent with these settings: each a wrong setting that decides
    # where prompts go, in the user's words (empty: prompts may be sent).
    blocking: tuple[str, ...] = ()

    @property
    def api_key_source(self) -> str | None:
        """Where the key came from in a word (`provider.apiKey`, `SERI_API_KEY`, the
        editor's store): `seri.info`'s `apiKeySource`."""
        return self.key_origin.label if self.key_origin is not None else None

    def blocked(self) -> str | None:
        """Why nothing may be sent with these settings, in the user's words; None when
        prompts may go."""
        if not self.blocking:
            return None
        return "Nothing was sent to the model. " + " ".join(self.blocking)

    def key_advice(self) -> str:
        """How to set a key, for the messages about a missing one."""
        hint = (
            "set provider.apiKey in the settings, or "
            + " / ".join(API_KEY_ENV)
            + " in the environment"
        )
        if self.key_store is None:
            return hint
        return f"run {self.key_store.command} (the key is kept in {self.key_store.name}), or {hint}"


@dataclass(frozen=True)
class KeyStore:
    """An editor's own store for the API key (`apiKeyStore` in the initialization
    options): VS Code's secret storage, written by **Seri: Set API Key**. The editor
    passes the stored key in `SERI_API_KEY`; `in_use` says it did."""

    name: str
    command: str
    in_use: bool = False


@dataclass(frozen=True)
class KeyOrigin:
    """Where the API key came from (`where`) and what changes it (`fix`); `label` is the
    same in a word, for `seri.info`."""

    label: str
    where: str
    fix: str


@dataclass(frozen=True)
class CheckSetting:
    """One entry of `checks`: a command run in the workspace after a task changed files.

    `command` is a shell command line (a string, run by `/bin/sh -c`) or an argument
    list (run directly, no shell).
    """

    name: str
    command: str | tuple[str, ...]
    timeout: float = DEFAULT_CHECK_TIMEOUT

    def display(self) -> str:
        """The command as the user wrote it, for messages and recordings."""
        if isinstance(self.command, str):
            return self.command
        return " ".join(self.command)

    def to_json(self) -> dict[str, Any]:
        command = self.command if isinstance(self.command, str) else list(self.command)
        return {"name": self.name, "command": command, "timeout": self.timeout}


@dataclass(frozen=True)
class Settings:
    """Everything configurable, resolved."""

    resume_on_open: bool = setting("resumeOnOpen", True, _boolean, "true or false")
    max_turns: int = setting("maxTurns", 500, _max_turns, f"a whole number from 1 to {MAX_TURNS:,}")
    write_permission: WritePermission = setting(
        "permissions.write", "ask", _permission, "one of allow, ask, deny"
    )
    run_permission: Permission = setting(
        "permissions.run", "ask", _permission, "one of allow, ask, deny"
    )
    command_rules: CommandRules = setting(
        "permissions.commands",
        CommandRules(),
        _object,
        "an object {allow, deny} of lists of command patterns",
        read=lambda raw, problems: _command_rules(raw, problems),
    )
    run_shell: RunShell = setting("run.shell", "cmd", _run_shell, "one of cmd, powershell")
    mcp_permission: Permission = setting(
        "permissions.mcp", "ask", _permission, "one of allow, ask, deny"
    )
    # Per server (`git`) or per tool (`git__git_push`): allow, ask or deny.
    mcp_tool_permissions: Mapping[str, Permission] | None = setting(
        "permissions.mcpTools",
        None,
        _object,
        "an object of server or server__tool names to allow, ask or deny",
        read=lambda raw, problems: _mcp_tool_permissions(raw, problems),
    )
    # The editor's MCP servers, as `.mcp.json`'s `mcpServers` (read by seri_lsp/mcp/config.py:
    # each entry is checked there, so one bad entry does not drop the others).
    mcp_servers: Mapping[str, Any] | None = setting(
        "mcpServers", None, _object, "an object of MCP server entries by name"
    )
    mcp_startup_timeout: float = setting(
        "mcp.startupTimeout", 15.0, _positive_number, "a number of seconds"
    )
    mcp_tool_timeout: float = setting(
        "mcp.toolTimeout", 120.0, _positive_number, "a number of seconds"
    )
    checks: tuple[CheckSetting, ...] = setting(
        "checks",
        (),
        _object,
        "a list of {name, command} objects",
        read=lambda raw, problems: _checks(raw, problems),
    )
    provider: ProviderSettings = field(default_factory=ProviderSettings)
    # MCP servers a workspace's own editor settings configure (`workspaceMcpServers`,
    # which VS Code sends apart from the user's `mcpServers`): not a setting of its own;
    # they start, as the workspace's `.mcp.json` servers do, once the user agreed.
    workspace_mcp_servers: Mapping[str, Any] | None = None


# Settings read elsewhere, not part of `Settings`: the profile root (`profile.py`, at
# start-up) and trajectory recording (`recording_settings.py`, config.json only).
OTHER_SETTINGS: tuple[Declared, ...] = (
    Declared("profileRoot", _text, "a folder path (text)"),
    Declared("trajectory", _boolean, "true or false"),
)


def declared_fields(cls: type) -> list[tuple[str, Declared]]:
    """The settings among `cls`'s fields: (python name, declaration), in field order."""
    return [(f.name, f.metadata[_DECLARED]) for f in fields(cls) if _DECLARED in f.metadata]


def declared_keys() -> list[str]:
    """Every setting's key (`provider.baseUrl`, `maxTurns`, ...): what the sources may
    hold and what the docs and editors are checked against."""
    return [
        *(declared.key for _, declared in declared_fields(ProviderSettings)),
        *(knob.key for knob in SAMPLING),
        *(declared.key for _, declared in declared_fields(Settings)),
        *(declared.key for declared in OTHER_SETTINGS),
    ]


# Every key a settings source may hold: the top level, and inside each section. The
# OpenRouter pin (`provider.provider`) is sent as is; its keys are not ours to check.
_TOP_LEVEL_KEYS = tuple(dict.fromkeys(key.split(".")[0] for key in declared_keys()))
_SECTION_KEYS: dict[str, tuple[str, ...]] = {}
for _section, _, _name in (key.rpartition(".") for key in declared_keys()):
    if _section:
        _SECTION_KEYS[_section] = (*_SECTION_KEYS.get(_section, ()), _name)


def load_settings(
    profile_root: Path,
    init_options: Mapping[str, Any] | None = None,
    env: Mapping[str, str] = os.environ,
) -> tuple[Settings, list[str]]:
    """Resolve settings; returns them with a list of human-readable problems found."""
    problems: list[str] = []
    config_data, config_problem = read_config_file(profile_root / CONFIG_NAME)
    config = config_data or {}
    options = dict(init_options or {})
    key_store = _key_store(options.pop(KEY_STORE_OPTION, None), problems)
    workspace_mcp = options.pop(WORKSPACE_MCP_OPTION, None)
    if workspace_mcp is not None and not isinstance(workspace_mcp, dict):
        problems.append(
            f"{WORKSPACE_MCP_OPTION} must be an object of MCP server entries by name, got "
            f"{workspace_mcp!r}; ignored."
        )
        workspace_mcp = None
    config_path = str(profile_root / CONFIG_NAME)
    # Setting (or variable) -> why its wrong value blocks prompts.
    blocking: dict[str, str] = {}
    if config_problem is not None:
        if _options_decide_provider(options, key_store):
            problems.append(config_problem.ignored())
        else:
            blocking[CONFIG_NAME] = config_problem.blocking()
    for source, data in (("the initialization options", options), (config_path, config)):
        unknown = unknown_keys(data)
        if unknown:
            problems.append(
                f"Unknown settings in {source}: {'; '.join(unknown)}. They are ignored."
            )
    merged = _deep_merge(config, options)

    def source_of(key: str) -> str:
        """Which source set `key` (`provider.baseUrl`): the options win over the file."""
        section, _, name = key.rpartition(".")
        in_options = options.get(section) if section else options
        return (
            "the initialization options"
            if isinstance(in_options, dict) and in_options.get(name) is not None
            else config_path
        )

    given = merged.get("provider")  # (None: no source has a provider section)
    provider_raw = merged.get("provider", {})
    if not isinstance(provider_raw, dict):
        blocking["provider"] = _blocked(
            "provider", source_of("provider"), provider_raw, "an object"
        )
        provider_raw = {}
    merged["provider"] = provider_raw
    provider_values = _read_fields(ProviderSettings, merged, problems, blocking, source_of)
    for source, data in (("the initialization options", options), (config_path, config)):
        blocking.update(_misspelt_routes(data, given, source))
    if "api_key" in provider_values:
        where = source_of("provider.apiKey")
        provider_values["key_origin"] = KeyOrigin(
            "provider.apiKey",
            f"provider.apiKey in {where}",
            f"correct provider.apiKey in {where}",
        )
    # The API key's variables are read last, so their problems come after the others'.
    by_env = sorted(declared_fields(ProviderSettings), key=lambda item: item[0] == "api_key")
    for attr, declared in by_env:
        if attr in provider_values or declared.key in blocking or not declared.env:
            continue
        for env_name in declared.env:
            if not env.get(env_name):
                continue
            if not declared.check(env[env_name]):
                if declared.routes:  # (the next variable would send elsewhere too)
                    blocking[env_name] = _blocked(
                        env_name, "the environment", env[env_name], declared
                    )
                    break
                problems.append(
                    f"{env_name} must be {declared.description}, got {env[env_name]!r}; ignored."
                )
                continue
            provider_values[attr] = env[env_name]
            if attr == "api_key":
                provider_values["key_origin"] = _env_key_origin(env_name, key_store)
            break
    problems += blocking.values()
    sampling = {}
    for knob in SAMPLING:
        value = provider_raw.get(knob.name)
        if value is None:
            continue
        if knob.check(value):
            sampling[knob.request_field] = value
        else:
            problems.append(
                f"Setting {knob.key} must be {knob.description}, got {value!r}; "
                "not sent to the provider."
            )
    provider = ProviderSettings(
        sampling=sampling,
        key_store=key_store,
        blocking=tuple(blocking.values()),
        **provider_values,
    )

    values = _read_fields(Settings, merged, problems, blocking, source_of)
    if "trajectory" in (init_options or {}):
        problems.append(
            "Setting trajectory in the initialization options is ignored: recording is "
            "turned on and off with /trajectory on|off (stored in the profile's config.json) "
            "or SERI_TRAJECTORY_ENABLED."
        )
    return Settings(provider=provider, workspace_mcp_servers=workspace_mcp, **values), problems


def _read_fields(
    cls: type,
    merged: Mapping[str, Any],
    problems: list[str],
    blocking: dict[str, str],
    source_of: Callable[[str], str],
) -> dict[str, Any]:
    """The values of `cls`'s settings that `merged` sets and that pass their check, by
    python name; each one that fails is reported (its default is used), or, where it
    decides where prompts go, added to `blocking` (a wrong text is kept, to be shown)."""
    values: dict[str, Any] = {}
    bad_sections: set[str] = set()
    for attr, declared in declared_fields(cls):
        source = merged
        if declared.section:
            source = merged.get(declared.section, {})
            if not isinstance(source, dict):
                if declared.section not in bad_sections:
                    bad_sections.add(declared.section)
                    problems.append(_bad_value(declared.section, source, "an object"))
                continue
        value = source.get(declared.name)
        if value is None:
            continue
        if declared.read is not None:
            values[attr] = declared.read(value, problems)
        elif declared.check(value):
            values[attr] = value
        elif declared.routes:
            blocking[declared.key] = _blocked(
                declared.key, source_of(declared.key), value, declared
            )
            if isinstance(value, str) and not declared.secret and lone_surrogate(value) is None:
                values[attr] = value
        else:
            problems.append(_bad_value(declared.key, value, declared.description))
    return values


# The initialization option in which an editor describes its own key store.
KEY_STORE_OPTION = "apiKeyStore"
# The initialization option with the MCP servers of the workspace's own editor settings.
WORKSPACE_MCP_OPTION = "workspaceMcpServers"
_BLOCKED = "No prompt is sent until it is fixed: seri does not fall back to another provider."


def _blocked(name: str, where: str, value: Any, declared: Declared | str) -> str:
    """Why a wrong setting (or variable) that decides where prompts go blocks them."""
    description = declared if isinstance(declared, str) else declared.description
    if isinstance(declared, Declared) and declared.secret:
        wrong = f"is not {description}"
    else:
        wrong = f"is {value!r}, which is not {description}{_scheme_guess(value)}"
    return f"Setting {name} (in {where}) {wrong}. {_BLOCKED}".removeprefix(
        "Setting " if name.isupper() else ""
    )


def _scheme_guess(value: Any) -> str:
    """For a URL written without its scheme, the URL it probably meant."""
    if not _text(value) or "://" in value or " " in value.strip():
        return ""
    text = value.strip()
    local = text.startswith(("localhost", "127.", "0.0.0.0", "[::1]", "10.", "192.168."))
    return f" (did you mean {('http://' if local else 'https://') + text!r}?)"


def _misspelt_routes(data: Mapping[str, Any], given: Any, where: str) -> dict[str, str]:
    """Misspelt names, in one source, of the settings that decide where prompts go
    (`provider.baseURL`, `Provider`) whose real one is not set: left unread, the default
    would send prompts elsewhere."""
    routed = [d.key for _, d in declared_fields(ProviderSettings) if d.routes]
    candidates: list[tuple[str, list[str]]] = [
        (key, ["provider"]) for key in data if key not in _TOP_LEVEL_KEYS
    ]
    section = data.get("provider")
    if isinstance(section, dict):
        known = _SECTION_KEYS["provider"]
        candidates += [(f"provider.{key}", routed) for key in section if key not in known]
    found = {}
    for key, names in candidates:
        guess = _with_guess(str(key), names).partition(" (did you mean ")[2].rstrip("?)")
        if not guess:
            continue
        if guess == "provider":
            is_set = given is not None
        else:
            is_set = isinstance(given, dict) and given.get(guess.partition(".")[2]) is not None
        if not is_set:
            found[key] = (
                f"Setting {key} (in {where}) is no setting (did you mean {guess}?). {_BLOCKED}"
            )
    return found


def _env_key_origin(env_name: str, store: KeyStore | None) -> KeyOrigin:
    """Where a key read from `env_name` came from: the editor's store when the editor
    says it passed its stored key there, else the environment."""
    if store is not None and store.in_use and env_name == API_KEY_ENV[0]:
        return KeyOrigin(
            store.name,
            f"{store.name}, saved with {store.command}",
            f"run {store.command} to save the right one",
        )
    return KeyOrigin(
        env_name,
        f"the environment variable {env_name}",
        f"set the right key in {env_name} in the environment the editor starts seri in, "
        "then restart the server",
    )


def _key_store(raw: Any, problems: list[str]) -> KeyStore | None:
    """The editor's key store (`apiKeyStore`: {name, command, inUse}), if it gave one."""
    if raw is None:
        return None
    if (
        isinstance(raw, dict)
        and _text(raw.get("name"))
        and _text(raw.get("command"))
        and isinstance(raw.get("inUse", False), bool)
    ):
        return KeyStore(raw["name"], raw["command"], raw.get("inUse", False))
    problems.append(
        f"{KEY_STORE_OPTION} must be an object {{name, command, inUse}} with text name and "
        f"command, got {raw!r}; ignored."
    )
    return None


def unknown_keys(data: Mapping[str, Any]) -> list[str]:
    """The keys of one settings source that are no setting, each with the setting it
    probably meant (`maxturns (did you mean maxTurns?)`)."""
    found = [_with_guess(key, _TOP_LEVEL_KEYS) for key in data if key not in _TOP_LEVEL_KEYS]
    for section, names in _SECTION_KEYS.items():
        inner = data.get(section)
        if isinstance(inner, dict):
            known = [f"{section}.{name}" for name in names]
            found += [_with_guess(f"{section}.{key}", known) for key in inner if key not in names]
    return found


def _with_guess(key: str, known: Sequence[str]) -> str:
    """`key`, and the known name it is closest to when one is close."""
    by_case = {name.lower(): name for name in known}
    guess = by_case.get(str(key).lower())
    if guess is None:
        close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.75)
        guess = close[0] if close else None
    return f"{key} (did you mean {guess}?)" if guess else str(key)


def _command_rules(raw: Any, problems: list[str]) -> CommandRules:
    """`permissions.commands`: its `allow` and `deny` lists (and `workspaceAllow`, the
    allow rules VS Code found in the workspace's own settings); a bad entry is reported
    and dropped."""
    if not isinstance(raw, dict):
        problems.append(
            "Setting permissions.commands must be an object {allow, deny} of lists of "
            f"command patterns, got {raw!r}; no command rules apply."
        )
        return CommandRules()
    lists: dict[str, tuple[str, ...]] = {}
    for key in ("allow", "deny", "workspaceAllow"):
        value = raw.get(key, [])
        if not isinstance(value, list):
            problems.append(
                f"Setting permissions.commands.{key} must be a list of command patterns, "
                f"got {value!r}; ignored."
            )
            value = []
        kept: list[str] = []
        for entry in value:
            if isinstance(entry, str) and Pattern.parse(entry) is not None:
                kept.append(entry.strip())
            else:
                problems.append(
                    f"Setting permissions.commands.{key} holds {entry!r}, which is no "
                    "command pattern; ignored."
                )
        lists[key] = tuple(kept)
    unknown = sorted(set(raw) - {"allow", "deny", "workspaceAllow"})
    if unknown:
        problems.append(
            f"Unknown keys in permissions.commands: {', '.join(map(str, unknown))}. "
            "They are ignored."
        )
    return CommandRules(lists["allow"], lists["deny"], lists["workspaceAllow"])


def _mcp_tool_permissions(raw: Any, problems: list[str]) -> Mapping[str, Permission] | None:
    """The valid entries of `permissions.mcpTools`; each bad one is reported and dropped."""
    if not isinstance(raw, dict):
        problems.append(_bad_value("permissions.mcpTools", raw, "an object"))
        return None
    kept: dict[str, Permission] = {}
    for name, value in raw.items():
        if _text(name) and _permission(value):
            kept[name] = value
        else:
            problems.append(
                f"Setting permissions.mcpTools.{name} must be one of allow, ask, deny, "
                f"got {value!r}; ignored."
            )
    return kept


def _checks(raw: Any, problems: list[str]) -> tuple[CheckSetting, ...]:
    """The valid entries of `checks`; each bad one is reported and dropped."""
    if not isinstance(raw, list):
        problems.append(
            f"Setting checks must be a list of {{name, command}} objects, got {raw!r}; "
            "no checks will run."
        )
        return ()
    checks: list[CheckSetting] = []
    for index, entry in enumerate(raw):
        label = f"checks[{index}]"
        if not isinstance(entry, dict):
            problems.append(
                f"Setting {label} must be an object {{name, command}}, got {entry!r}; dropped."
            )
            continue
        name = entry.get("name")
        if not _text(name):
            problems.append(
                f"Setting {label}.name must be a non-empty string, got {name!r}; dropped."
            )
            continue
        name = name.strip()  # (so "lint " is the same check as "lint")
        command = entry.get("command")
        if isinstance(command, list) and command and all(_text(part) for part in command):
            command = tuple(command)
        elif not _text(command):
            problems.append(
                f"Setting {label}.command ({name}) must be a command line (a non-empty string) "
                f"or a non-empty list of strings, got {command!r}; dropped."
            )
            continue
        timeout = entry.get("timeout", DEFAULT_CHECK_TIMEOUT)
        if not _positive_number(timeout):
            problems.append(
                f"Setting {label}.timeout ({name}) must be a positive number of seconds, got "
                f"{timeout!r}; using {DEFAULT_CHECK_TIMEOUT:g}."
            )
            timeout = DEFAULT_CHECK_TIMEOUT
        unknown = sorted(set(entry) - {"name", "command", "timeout"})
        if unknown:
            problems.append(
                f"Setting {label} ({name}) has unknown fields {unknown}; they are ignored."
            )
        if any(check.name == name for check in checks):
            problems.append(f"Setting {label}: a check named {name!r} comes earlier; dropped.")
            continue
        checks.append(CheckSetting(name=name, command=command, timeout=float(timeout)))
    return tuple(checks)


def _bad_value(name: str, value: Any, description: str) -> str:
    return f"Setting {name} must be {description}, got {value!r}; using the default."


def _options_decide_provider(options: Mapping[str, Any], key_store: KeyStore | None) -> bool:
    """Whether the initialization options alone say where prompts go: a base URL, a model
    and a key source (`provider.apiKey`, or the editor's key store in use). Then a
    `config.json` that cannot be read cannot change where prompts (and the key) go."""
    provider = options.get("provider")
    if not isinstance(provider, dict):
        return False
    has_key = provider.get("apiKey") is not None or (key_store is not None and key_store.in_use)
    return provider.get("baseUrl") is not None and provider.get("model") is not None and has_key


@dataclass(frozen=True)
class ConfigProblem:
    """Why `config.json` cannot be used: `what` is wrong, `advice` says what to do."""

    path: Path
    what: str
    advice: str = ""

    def ignored(self) -> str:
        """The problem as reported when the file is read for settings (and ignored)."""
        advice = f" {self.advice}" if self.advice else ""
        return f"{self.path} {self.what}; ignoring it.{advice}"

    def blocking(self) -> str:
        """The problem when the file may hold the provider settings (where prompts and the
        key go): prompts wait for the fix rather than go to a default provider."""
        advice = self.advice or "Fix it, or remove it to use the defaults."
        return (
            f"{self.path} {self.what}, so the provider settings it may hold (where prompts "
            f"and the key go) cannot be read. {advice} Or set provider.baseUrl, "
            "provider.model and provider.apiKey in the editor's settings."
        )


def read_config_file(path: Path) -> tuple[dict[str, Any] | None, ConfigProblem | None]:
    """The JSON object in `config.json`: (data, None), or (None, why it cannot be used).

    A missing file is `({}, None)`. Only a regular file of at most MAX_CONFIG_BYTES is
    read: a FIFO would block start-up and a link to a device could read for ever. Nothing
    is ever written here.
    """
    try:
        raw = _read_regular_file(path)
    except (FileNotFoundError, NotADirectoryError):  # (no profile folder: said elsewhere)
        return {}, None
    except _NotAConfigFile as exc:
        return None, ConfigProblem(path, str(exc), "Replace it with a JSON file, or remove it.")
    except OSError as exc:
        return None, ConfigProblem(path, f"cannot be read ({exc.strerror or exc})")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        return None, ConfigProblem(
            path,
            f"is not UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line})",
            "Save it as UTF-8.",
        )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, ConfigProblem(
            path, f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        )
    except RecursionError:
        return None, ConfigProblem(path, "is nested too deeply to read")
    except ValueError:  # an integer longer than Python reads (4,300 digits)
        return None, ConfigProblem(path, "holds a number too long to read")
    if not isinstance(data, dict):
        return None, ConfigProblem(path, "must hold a JSON object")
    bad = lone_surrogate(data)
    if bad is not None:
        return None, ConfigProblem(
            path, f"holds text that is not valid Unicode (a lone surrogate escape, {bad})"
        )
    return data, None


class _NotAConfigFile(Exception):
    """config.json is there but is no file seri reads (the message says what it is)."""


def _read_regular_file(path: Path) -> bytes:
    """The bytes of `path` (links followed) if it is a regular file of a sane size."""
    try:
        fd, info = open_regular(path)  # a device is not even opened, a FIFO not waited on
    except NotRegularFile as exc:
        raise _NotAConfigFile(f"is {exc.kind}, not a regular file") from None
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > MAX_CONFIG_BYTES:
            raise _NotAConfigFile(_too_big(f"{info.st_size:,} bytes"))
        data = handle.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:  # it grew while being read
        raise _NotAConfigFile(_too_big(f"more than {MAX_CONFIG_BYTES:,} bytes"))
    return data


def _too_big(size: str) -> str:
    return f"is {size}; a settings file may be at most {MAX_CONFIG_BYTES:,} bytes"


def _deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged
