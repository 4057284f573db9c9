"""Settings: initialization options, then the profile's `config.json`, then defaults.

Provider settings fall back to the environment (`SERI_BASE_URL`, `SERI_MODEL`,
`SERI_API_KEY` / `OPENROUTER_API_KEY`) where neither source sets them. A value of the
wrong type is reported and replaced by its default, never fatal: a typo in a settings
file must not keep the editor from starting.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from seri_lsp.limits import MAX_TURNS, lone_surrogate
from seri_lsp.profile import CONFIG_NAME

DEFAULT_BASE_URL = "https://openrouter.ai/api/v1"
DEFAULT_MODEL = "anthropic/claude-sonnet-4.5"
DEFAULT_CONTEXT_WINDOW = 128_000
SUBAGENT_MAX_TURNS = 25
# Environment variables read for the API key, in order (after the settings).
API_KEY_ENV = ("SERI_API_KEY", "OPENROUTER_API_KEY")

WritePermission = Literal["allow", "ask", "deny"]

# Sampling knobs: setting name (camelCase) -> request field (snake_case).
SAMPLING_KNOBS = {
    "temperature": "temperature",
    "topP": "top_p",
    "topK": "top_k",
    "minP": "min_p",
    "maxTokens": "max_tokens",
    "seed": "seed",
    "frequencyPenalty": "frequency_penalty",
    "presencePenalty": "presence_penalty",
    "repetitionPenalty": "repetition_penalty",
    "stop": "stop",
}


@dataclass(frozen=True)
class ProviderSettings:
    """How to reach the model, and the context-management budgets that depend on it."""

    base_url: str = DEFAULT_BASE_URL
    api_key: str | None = None
    model: str = DEFAULT_MODEL
    context_window: int | None = None
    keep_tokens: int = 20_000
    elide_bytes: int = 8192
    sampling: Mapping[str, Any] = field(default_factory=dict)
    reasoning_effort: str | None = None
    provider: Mapping[str, Any] | None = None
    stream: bool = True
    timeout: float = 300.0
    max_retries: int = 4
    retry_base_delay: float = 1.0
    retry_max_delay: float = 60.0
    # Where api_key came from ("provider.apiKey" or an environment variable), for messages.
    api_key_source: str | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Settings:
    """Everything configurable, resolved."""

    resume_on_open: bool = True
    max_turns: int = 500
    write_permission: WritePermission = "ask"
    provider: ProviderSettings = field(default_factory=ProviderSettings)


Check = Callable[[Any], bool]


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _non_negative_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _positive_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def _non_negative_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value >= 0


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _boolean(value: Any) -> bool:
    return isinstance(value, bool)


# setting name, python name, check, description for messages
_PROVIDER_FIELDS: list[tuple[str, str, Check, str]] = [
    ("baseUrl", "base_url", _text, "a URL"),
    ("apiKey", "api_key", _text, "a string"),
    ("model", "model", _text, "a model id"),
    ("contextWindow", "context_window", _positive_int, "a positive integer"),
    ("keepTokens", "keep_tokens", _positive_int, "a positive integer"),
    ("elideBytes", "elide_bytes", _positive_int, "a positive integer"),
    ("reasoningEffort", "reasoning_effort", _text, "a string such as 'high'"),
    ("provider", "provider", lambda v: isinstance(v, dict), "an object"),
    ("stream", "stream", _boolean, "true or false"),
    ("timeout", "timeout", _positive_number, "a number of seconds"),
    ("maxRetries", "max_retries", _non_negative_int, "a non-negative integer"),
    ("retryBaseDelay", "retry_base_delay", _non_negative_number, "a number of seconds"),
    ("retryMaxDelay", "retry_max_delay", _non_negative_number, "a number of seconds"),
]

_PROVIDER_ENV = {
    "base_url": ("SERI_BASE_URL",),
    "model": ("SERI_MODEL",),
    "api_key": API_KEY_ENV,
}


def load_settings(
    profile_root: Path,
    init_options: Mapping[str, Any] | None = None,
    env: Mapping[str, str] = os.environ,
) -> tuple[Settings, list[str]]:
    """Resolve settings; returns them with a list of human-readable problems found."""
    problems: list[str] = []
    merged = _deep_merge(_read_config(profile_root, problems), dict(init_options or {}))

    provider_raw = merged.get("provider", {})
    if not isinstance(provider_raw, dict):
        problems.append(f"Setting provider must be an object, got {provider_raw!r}; ignored.")
        provider_raw = {}
    provider_values: dict[str, Any] = {}
    for name, attr, check, description in _PROVIDER_FIELDS:
        if name in provider_raw and provider_raw[name] is not None:
            value = provider_raw[name]
            if check(value):
                provider_values[attr] = value
            else:
                problems.append(_bad_value(f"provider.{name}", value, description))
    if "api_key" in provider_values:
        provider_values["api_key_source"] = "provider.apiKey"
    for attr, names in _PROVIDER_ENV.items():
        if attr not in provider_values:
            for env_name in names:
                if env.get(env_name):
                    provider_values[attr] = env[env_name]
                    if attr == "api_key":
                        provider_values["api_key_source"] = env_name
                    break
    sampling = {}
    for name, request_field in SAMPLING_KNOBS.items():
        if provider_raw.get(name) is not None:
            sampling[request_field] = provider_raw[name]
    provider = ProviderSettings(sampling=sampling, **provider_values)

    values: dict[str, Any] = {}
    _take(merged, "resumeOnOpen", "resume_on_open", _boolean, "true or false", values, problems)
    _take(
        merged,
        "maxTurns",
        "max_turns",
        lambda v: _positive_int(v) and v <= MAX_TURNS,
        f"a whole number from 1 to {MAX_TURNS:,}",
        values,
        problems,
    )
    permissions = merged.get("permissions", {})
    if isinstance(permissions, dict) and "write" in permissions:
        _take(
            permissions,
            "write",
            "write_permission",
            lambda v: v in ("allow", "ask", "deny"),
            "one of allow, ask, deny",
            values,
            problems,
            label="permissions.write",
        )
    elif not isinstance(permissions, dict):
        problems.append(_bad_value("permissions", permissions, "an object"))
    return Settings(provider=provider, **values), problems


def _take(
    source: Mapping[str, Any],
    name: str,
    attr: str,
    check: Check,
    description: str,
    values: dict[str, Any],
    problems: list[str],
    label: str | None = None,
) -> None:
    if name not in source or source[name] is None:
        return
    if check(source[name]):
        values[attr] = source[name]
    else:
        problems.append(_bad_value(label or name, source[name], description))


def _bad_value(name: str, value: Any, description: str) -> str:
    return f"Setting {name} must be {description}, got {value!r}; using the default."


def _read_config(profile_root: Path, problems: list[str]) -> dict[str, Any]:
    path = profile_root / CONFIG_NAME
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        problems.append(f"{path} cannot be read ({exc.strerror}); ignoring it.")
        return {}
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        problems.append(
            f"{path} is not UTF-8 text (byte 0x{raw[exc.start]:02x} on line {line}); "
            "ignoring it. Save it as UTF-8."
        )
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "ignoring it."
        )
        return {}
    except RecursionError:
        problems.append(f"{path} is nested too deeply to read; ignoring it.")
        return {}
    if not isinstance(data, dict):
        problems.append(f"{path} must hold a JSON object; ignoring it.")
        return {}
    bad = lone_surrogate(data)
    if bad is not None:
        problems.append(
            f"{path} holds text that is not valid Unicode (a lone surrogate escape, {bad}); "
            "ignoring it."
        )
        return {}
    return data


def _deep_merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged
