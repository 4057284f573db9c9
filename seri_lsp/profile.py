"""The profile root: the folder holding `seri.db`, `config.json` and legacy files."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import platformdirs

DB_NAME = "seri.db"
CONFIG_NAME = "config.json"


def resolve_profile_root(
    cli_value: str | None,
    init_value: object,
    env: Mapping[str, str] = os.environ,
) -> Path:
    """Pick the profile root: `--profile-root` > init option > `SERI_PROFILE_ROOT` > default."""
    for candidate in (cli_value, init_value, env.get("SERI_PROFILE_ROOT")):
        if isinstance(candidate, str) and candidate.strip():
            return Path(candidate).expanduser().resolve()
    return platformdirs.user_data_path("seri").resolve()


def ensure_profile_root(root: Path) -> Path:
    """Create the profile root if needed; a folder we create is private (0700)."""
    if not root.exists():
        root.mkdir(parents=True, mode=0o700)
        root.chmod(0o700)
    elif not root.is_dir():
        raise NotADirectoryError(f"The profile root {root} exists but is not a folder.")
    return root
