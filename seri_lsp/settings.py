"""Settings: initialization options, then the profile's `config.json`, then defaults.

Provider settings fall back to the environment (`SERI_BASE_URL`, `SERI_MODEL`,
`SERI_API_KEY` / `OPENROUTER_API_KEY`) where neither source sets them. A value of the
wrong type is reported and replaced by its default, never fatal: a typo in a settings
file must not keep the editor from starting. A key that is no setting (at the top or
inside `provider` or `permissions`) is reported once per source, with the setting it
probably meant, and everything else still loads.
"""

from __future__ import annotations

import difflib
import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeGuard

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
# A check runs at most this long unless its own `timeout` says otherwise (seconds).
DEFAULT_CHECK_TIMEOUT = 120.0
# The largest config.json read: settings are a few hundred bytes.
MAX_CONFIG_BYTES = 1024 * 1024

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

    resume_on_open: bool = True
    max_turns: int = 500
    write_permission: WritePermission = "ask"
    run_permission: Permission = "ask"
    checks: tuple[CheckSetting, ...] = ()
    provider: ProviderSettings = field(default_factory=ProviderSettings)


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


def _finite_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _whole_number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _stop_sequences(value: Any) -> bool:
    if isinstance(value, str):
        return bool(value)
    return isinstance(value, list) and all(isinstance(v, str) and v for v in value)


# What each sampling knob must be; a value that is not is warned about and not sent
# (the provider would refuse the whole request for it).
_SAMPLING_CHECKS: dict[str, tuple[Check, str]] = {
    "temperature": (_finite_number, "a number"),
    "topP": (_finite_number, "a number"),
    "topK": (_non_negative_int, "a whole number, 0 or more"),
    "minP": (_finite_number, "a number"),
    "maxTokens": (_positive_int, "a positive integer"),
    "seed": (_whole_number, "a whole number"),
    "frequencyPenalty": (_finite_number, "a number"),
    "presencePenalty": (_finite_number, "a number"),
    "repetitionPenalty": (_finite_number, "a number"),
    "stop": (_stop_sequences, "a string or a list of strings"),
}
assert _SAMPLING_CHECKS.keys() == SAMPLING_KNOBS.keys(), "every sampling knob has its check"


# setting name, python name, check, description for messages
_PROVIDER_FIELDS: list[tuple[str, str, Check, str]] = [
    ("baseUrl", "base_url", _url, "an http:// or https:// URL"),
    ("apiKey", "api_key", _header_text, "a string of printable ASCII characters"),
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

# What a provider value must be, by python name (the environment's values included).
_FIELD_CHECKS = {attr: (check, description) for _, attr, check, description in _PROVIDER_FIELDS}

# Every key a settings source may hold: the top level, and inside each section. The
# OpenRouter pin (`provider.provider`) is sent as is; its keys are not ours to check.
_TOP_LEVEL_KEYS = (
    "profileRoot",
    "resumeOnOpen",
    "maxTurns",
    "permissions",
    "checks",
    "trajectory",
    "provider",
)
_SECTION_KEYS = {
    "provider": (*(name for name, *_ in _PROVIDER_FIELDS), *SAMPLING_KNOBS),
    "permissions": ("write", "run"),
}

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
    config = _read_config(profile_root, problems)
    for source, data in (
        ("the initialization options", init_options or {}),
        (str(profile_root / CONFIG_NAME), config),
    ):
        unknown = unknown_keys(data)
        if unknown:
            problems.append(
                f"Unknown settings in {source}: {'; '.join(unknown)}. They are ignored."
            )
    merged = _deep_merge(config, dict(init_options or {}))

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
                if not env.get(env_name):
                    continue
                check, description = _FIELD_CHECKS[attr]
                if not check(env[env_name]):
                    problems.append(
                        f"{env_name} must be {description}, got {env[env_name]!r}; ignored."
                    )
                    continue
                provider_values[attr] = env[env_name]
                if attr == "api_key":
                    provider_values["api_key_source"] = env_name
                break
    sampling = {}
    for name, request_field in SAMPLING_KNOBS.items():
        value = provider_raw.get(name)
        if value is None:
            continue
        check, description = _SAMPLING_CHECKS[name]
        if check(value):
            sampling[request_field] = value
        else:
            problems.append(
                f"Setting provider.{name} must be {description}, got {value!r}; "
                "not sent to the provider."
            )
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
    if isinstance(permissions, dict):
        for name in ("write", "run"):
            _take(
                permissions,
                name,
                f"{name}_permission",
                lambda v: v in PERMISSIONS,
                "one of allow, ask, deny",
                values,
                problems,
                label=f"permissions.{name}",
            )
    else:
        problems.append(_bad_value("permissions", permissions, "an object"))
    if merged.get("checks") is not None:
        values["checks"] = _checks(merged["checks"], problems)
    if "trajectory" in (init_options or {}):
        problems.append(
            "Setting trajectory in the initialization options is ignored: recording is "
            "turned on and off with /trajectory on|off (stored in the profile's config.json) "
            "or SERI_TRAJECTORY_ENABLED."
        )
    return Settings(provider=provider, **values), problems


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
    data, problem = read_config_file(path)
    if problem is not None:
        problems.append(problem.ignored())
    return data or {}


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
