"""The profile root: the folder holding `seri.db`, `config.json` and legacy files."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Mapping
from pathlib import Path

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
    import platformdirs  # (with tempfile, shutil, random...) only for the default

    return platformdirs.user_data_path("seri").resolve()


def ensure_profile_root(root: Path) -> Path:
    """Create the profile root if needed; it is made private (0700) before use.

    A folder this user does not own (one cannot chmod `/tmp`) is used as it is: the
    files seri keeps in it are private on their own.
    """
    if not root.exists():
        # Another process starting at the same moment may make it first.
        root.mkdir(parents=True, mode=0o700, exist_ok=True)
    if not root.is_dir():
        raise NotADirectoryError(f"The profile root {root} exists but is not a folder.")
    if stat.S_IMODE(root.stat().st_mode) != 0o700:
        with contextlib.suppress(PermissionError):
            root.chmod(0o700)
    return root
