"""Whether runs are recorded (the trajectory toggle), and how long recordings are kept.

The toggle is resolved at each look, in this order:

1. `SERI_TRAJECTORY_ENABLED` in the environment (`true/false/1/0/yes/no`, any case),
   so a variable set in the shell keeps winning, start after start. Any other value
   is warned about and ignored; an empty one counts as unset.
2. `"trajectory": true|false` in the profile's `config.json`, written by
   `/trajectory on|off` (atomically, every other key kept in its place). A
   `config.json` that cannot be read (not a regular file, too large) or parsed is never
   overwritten: storing is refused.
3. The default: on.

Retention comes from `SERI_TRAJECTORY_RETENTION_DAYS` (days, default 30; `0` keeps only
the recording in progress); an invalid value is warned about and the default used.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from seri_lsp.errors import SeriError
from seri_lsp.files import atomic_write_text
from seri_lsp.profile import CONFIG_NAME
from seri_lsp.settings import read_config_file

ENABLED_ENV = "SERI_TRAJECTORY_ENABLED"
RETENTION_ENV = "SERI_TRAJECTORY_RETENTION_DAYS"
DEFAULT_RETENTION_DAYS = 30
CONFIG_KEY = "trajectory"

_TRUE = ("true", "1", "yes")
_FALSE = ("false", "0", "no")

Source = Literal["env", "profile", "default"]


@dataclass(frozen=True)
class TrajectoryToggle:
    """Whether recording is on, where that comes from, and what the user should know."""

    enabled: bool
    source: Source
    # What config.json holds (None: nothing usable), and the environment's say (None: unset).
    stored: bool | None
    env: bool | None
    config_path: Path
    # A value that is ignored (a bad SERI_TRAJECTORY_ENABLED, a "trajectory" that is not
    # true or false): told to the user when a session opens, once per process.
    notices: tuple[str, ...] = ()
    # config.json cannot be parsed (the settings already reported that at start).
    config_problem: str | None = None
    # The environment overrides a different stored value.
    override: str | None = None

    @property
    def warning(self) -> str | None:
        """Everything the user should know, in one text (None: nothing)."""
        parts = [*self.notices, self.config_problem, self.override]
        text = " ".join(part for part in parts if part)
        return text or None

    def describe(self) -> str:
        """One sentence: on or off, and why."""
        state = "on" if self.enabled else "off"
        if self.source == "env":
            why = f"{ENABLED_ENV}={_word(self.enabled)} in the environment"
            if self.stored is not None and self.stored != self.enabled:
                why += f", which overrides the profile's {_onoff(self.stored)}"
        elif self.source == "profile":
            why = f"set in {self.config_path}"
        else:
            why = "the default; /trajectory on|off sets it for this profile"
        return f"Trajectory recording is {state} ({why})."

    def to_wire(self) -> dict[str, Any]:
        """The answer of `seri.trajectory`: `{enabled, source, stored, warning?}`."""
        wire: dict[str, Any] = {
            "enabled": self.enabled,
            "source": self.source,
            "stored": self.stored,
        }
        if self.warning:
            wire["warning"] = self.warning
        return wire


def read_toggle(profile_root: Path, env: Mapping[str, str] = os.environ) -> TrajectoryToggle:
    """The toggle as it stands now (the environment, then config.json, then on)."""
    path = profile_root / CONFIG_NAME
    notices: list[str] = []
    env_value = _env_toggle(env, notices)
    data, problem = read_config_file(path)
    stored = _stored_toggle(path, data or {}, notices)
    found: dict[str, Any] = {
        "stored": stored,
        "env": env_value,
        "config_path": path,
        "notices": tuple(notices),
        "config_problem": (
            f"{path} {problem.what}; the stored toggle cannot be read." if problem else None
        ),
    }
    if env_value is not None:
        override = None
        if stored is not None and stored != env_value:
            override = _override_warning(env_value, stored)
        return TrajectoryToggle(env_value, "env", override=override, **found)
    if stored is not None:
        return TrajectoryToggle(stored, "profile", **found)
    return TrajectoryToggle(True, "default", **found)


def store_toggle(
    profile_root: Path, enabled: bool, env: Mapping[str, str] = os.environ
) -> TrajectoryToggle:
    """Write `"trajectory": enabled` into config.json and return the toggle now.

    Every other key keeps its value and its place. A config.json that cannot be read or
    parsed (a FIFO or a device, too large, not UTF-8, not JSON, not an object) is left as
    it is: SeriError.
    """
    path = profile_root / CONFIG_NAME
    data, problem = read_config_file(path)
    if problem is not None or data is None:
        assert problem is not None
        raise SeriError(
            f"Recording was not turned {_onoff(enabled)}: {path} {problem.what}, and seri does "
            "not overwrite a settings file it cannot read. Fix the file (or move it aside) "
            f"and try again; {ENABLED_ENV}={_word(enabled)} turns recording "
            f"{_onoff(enabled)} meanwhile."
        )
    existed = path.exists()
    data[CONFIG_KEY] = enabled
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    try:
        # A new config.json may later hold an API key: it starts private.
        atomic_write_text(path, text, mode=None if existed else 0o600)
    except OSError as exc:
        raise SeriError(
            f"Recording was not turned {_onoff(enabled)}: {path} could not be written "
            f"({exc.strerror or exc})."
        ) from exc
    return read_toggle(profile_root, env)


def retention_days(env: Mapping[str, str] = os.environ) -> tuple[float, str | None]:
    """The retention window in days, and a warning when the variable was not usable."""
    raw = env.get(RETENTION_ENV)
    if raw is None or not raw.strip():
        return DEFAULT_RETENTION_DAYS, None
    try:
        days = float(raw.strip())
    except ValueError:
        days = -1.0
    if not math.isfinite(days) or days < 0:
        return DEFAULT_RETENTION_DAYS, (
            f"{RETENTION_ENV}={raw!r} is not a number of days (0 or more); keeping "
            f"recordings for the default {DEFAULT_RETENTION_DAYS} days."
        )
    return days, None


def _env_toggle(env: Mapping[str, str], warnings: list[str]) -> bool | None:
    raw = env.get(ENABLED_ENV)
    if raw is None or not raw.strip():
        return None
    word = raw.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    warnings.append(
        f"{ENABLED_ENV}={raw!r} is not one of true, false, 1, 0, yes, no; it is ignored."
    )
    return None


def _stored_toggle(path: Path, data: dict[str, Any], warnings: list[str]) -> bool | None:
    value = data.get(CONFIG_KEY)
    if value is None or isinstance(value, bool):
        return value
    warnings.append(f'"{CONFIG_KEY}" in {path} must be true or false, got {value!r}; ignored.')
    return None


def _override_warning(env_value: bool, stored: bool) -> str:
    return (
        f"{ENABLED_ENV}={_word(env_value)} in the environment overrides the profile's "
        f"{_onoff(stored)}: recording stays {_onoff(env_value)} until the variable is unset."
    )


def _onoff(value: bool) -> str:
    return "on" if value else "off"


def _word(value: bool) -> str:
    return "true" if value else "false"
