"""Each slash command and each setting is declared once, in the server; every other
place that names them (the docs, the ACP face, the editors) is checked against that
declaration here, so a command or setting added, renamed or removed in one place and not
in another fails a test.

The declarations: `seri_lsp.slash.COMMANDS`, and the settings of
`seri_lsp.settings` (its `setting(...)` fields, the `SAMPLING` knobs and
`OTHER_SETTINGS`; `declared_keys()` lists them).
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from seri_lsp.acp.commands import available_commands
from seri_lsp.settings import ProviderSettings, Settings, declared_keys
from seri_lsp.slash import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
NAMES = [command.name for command in COMMANDS]


def section(path: Path, heading: str) -> str:
    """The text of a markdown section, from `heading` to the next heading of its level."""
    text = path.read_text(encoding="utf-8")
    level = heading.split(" ", 1)[0]
    start = text.index(f"\n{heading}\n")
    end = text.find(f"\n{level} ", start + len(heading) + 2)
    return text[start : end if end != -1 else len(text)]


def table_rows(text: str) -> list[list[str]]:
    """The cells of each row of the markdown tables in `text` (header and rule left out),
    `\\|` read as a pipe inside a cell."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("|") or re.fullmatch(r"[|\s:-]+", line):
            continue
        cells = [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", line)]
        rows.append(cells[1:-1])
    return [row for table in _split_tables(rows) for row in table[1:]]


def _split_tables(rows: list[list[str]]) -> list[list[list[str]]]:
    # Consecutive rows of one width are one table; its first row is the header.
    tables: list[list[list[str]]] = []
    for row in rows:
        if tables and len(tables[-1][-1]) == len(row):
            tables[-1].append(row)
        else:
            tables.append([row])
    return tables


def slash_names(text: str) -> list[str]:
    """The slash commands `text` names (`/rewind ...`, `` `/max-turns N` ``)."""
    return re.findall(r"(?<![\w/.])/([a-z][a-z-]*)\b", text)


# --- slash commands --------------------------------------------------------------------


def test_protocol_md_documents_every_slash_command_with_its_declared_usage() -> None:
    rows = table_rows(section(ROOT / "docs" / "protocol.md", "## Slash commands"))
    documented = {row[0].strip("`").split()[0][1:]: row[0].strip("`") for row in rows}
    assert documented == {command.name: command.usage for command in COMMANDS}


def test_the_readme_command_table_names_every_slash_command_and_no_other() -> None:
    rows = table_rows(section(ROOT / "README.md", "## Commands and slash commands"))
    named = [name for row in rows if len(row) == 4 for name in slash_names(row[2])]
    assert sorted(named) == sorted(NAMES)


def test_the_acp_face_offers_the_declared_commands_and_its_docs_name_them_all() -> None:
    offered = [command.name for command in available_commands().available_commands]
    assert offered == [command.name for command in COMMANDS if command.in_acp]
    paragraph = (ROOT / "docs" / "acp.md").read_text(encoding="utf-8")
    paragraph = paragraph.split("**Slash commands** advertised:", 1)[1].split("\n\n", 1)[0]
    advertised, also = paragraph.split(";", 1)
    assert slash_names(advertised) == offered
    named_too = slash_names(also.split(" work too.", 1)[0])
    assert sorted(named_too) == sorted(c.name for c in COMMANDS if not c.in_acp)


# Where each editor's sources are (its tests may type a command as a user would).
EDITOR_SOURCES = [
    (ROOT / "editors" / "vscode" / "src", "*.ts", "test"),
    (ROOT / "editors" / "neovim" / "lua", "*.lua", None),
]
# A quoted `/name` (or a quoted `max-turns`, which is nothing but a command's name).
_QUOTED_COMMAND = re.compile(r"""["'](?:/([a-z][a-z-]*)(?![\w-])|(max-turns)["'])""")


def test_neither_editor_keeps_a_slash_command_list_of_its_own() -> None:
    """Both editors build their slash menu and completion from the server's list
    (`initialize`'s `experimental.seri.slashCommands`). A file quoting three or more
    commands holds a list of its own; one or two quoted are a command the editor treats
    specially (`/resume` alone opens a picker, `/cost` prints a report).

    Passes on the merged result of issue 31 only: the editors' own lists are removed on
    the editors' branches.
    """
    lists = {}
    for folder, pattern, skipped in EDITOR_SOURCES:
        for path in sorted(folder.rglob(pattern)):
            if skipped and skipped in path.relative_to(folder).parts:
                continue
            quoted = {
                a or b
                for a, b in _QUOTED_COMMAND.findall(path.read_text(encoding="utf-8"))
                if (a or b) in NAMES
            }
            if len(quoted) >= 3 or "max-turns" in quoted:
                lists[str(path.relative_to(ROOT))] = sorted(quoted)
    assert lists == {}, "these editor files keep their own slash-command list"


# --- settings ----------------------------------------------------------------------------

KEYS = declared_keys()
TOP_LEVEL = {key.split(".")[0] for key in KEYS}


def setting_names(cell: str) -> list[str]:
    """The settings a table's first cell names: `` `provider.keepTokens`, `elideBytes` ``
    (a name after the first without a section is in the first one's section)."""
    names = re.findall(r"`([A-Za-z.]+)`", cell)
    section = names[0].rpartition(".")[0] if names else ""
    return [name if "." in name or not section else f"{section}.{name}" for name in names]


def documented_settings(path: Path, heading: str) -> list[str]:
    rows = table_rows(section(path, heading))
    return [name for row in rows for name in setting_names(row[0])]


def test_the_readme_settings_table_names_every_setting_and_no_other() -> None:
    documented = documented_settings(ROOT / "README.md", "## Configuration")
    assert sorted(documented) == sorted(KEYS)


def test_protocol_md_settings_table_names_every_setting_and_no_other() -> None:
    documented = documented_settings(
        ROOT / "docs" / "protocol.md", "## Initialization options and settings"
    )
    assert sorted(documented) == sorted(KEYS)


# The VS Code settings that are the editor's own, not the server's.
VSCODE_OWN = ("seri.server.", "seri.trace.")


def test_vscode_contributes_only_server_settings_that_exist_with_their_defaults() -> None:
    """Each `seri.*` setting VS Code contributes for the server is a declared setting; a
    default it shows is the server's (an empty string or 0 means: not sent)."""
    package = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text("utf-8"))
    configuration = package["contributes"]["configuration"]
    sections = configuration if isinstance(configuration, list) else [configuration]
    contributed = {
        name.removeprefix("seri."): schema
        for part in sections
        for name, schema in part["properties"].items()
        if not name.startswith(VSCODE_OWN)
    }
    assert contributed, "VS Code contributes no server settings"
    assert sorted(set(contributed) - set(KEYS)) == []
    for key, schema in contributed.items():
        shown = schema.get("default")
        if shown not in ("", 0, None):
            assert shown == default_of(key), key


def default_of(key: str) -> object:
    """The declared default of a setting of `Settings` or `ProviderSettings`."""
    for cls in (Settings, ProviderSettings):
        for field in dataclasses.fields(cls):
            if (
                field.metadata.get("declared_setting")
                and field.metadata["declared_setting"].key == key
            ):
                return field.default
    raise AssertionError(f"{key} has no default in Settings")


def lua_table_keys(text: str) -> list[str]:
    """The keys a Lua table literal sets, one per line (commented-out `-- key = ...`
    lines included), a nested table's keys as `section.key`."""
    keys: list[str] = []
    path: list[str] = []
    for line in text.splitlines():
        match = re.match(r"\s*(?:-- )?(\w+)\s*=\s*(.*)", line)
        if match is None:
            if line.strip().startswith("}") and path:
                path.pop()
            continue
        name, rest = ".".join([*path, match.group(1)]), match.group(2)
        if not rest.startswith("{"):
            keys.append(name)
        elif "}" in rest:  # a table on one line
            keys += [f"{name}.{key}" for key in re.findall(r"(\w+)\s*=", rest[: rest.index("}")])]
        else:
            path.append(match.group(1))
    return keys


def test_neovim_defaults_and_help_name_only_settings_that_exist() -> None:
    config = (ROOT / "editors" / "neovim" / "lua" / "seri" / "config.lua").read_text("utf-8")
    defaults = re.search(r"\n  settings = (\{\}|\{.*?\n  \}),", config, re.DOTALL)
    assert defaults, "config.lua's defaults have no `settings` table"
    assert sorted(set(lua_table_keys(defaults.group(1))) - set(KEYS)) == []
    field = re.search(r"---@field settings table .*\((.*)\)", config)
    assert field and set(re.findall(r"\w+", field.group(1))) <= TOP_LEVEL

    help_text = (ROOT / "editors" / "neovim" / "doc" / "seri.txt").read_text("utf-8")
    example = help_text.split("Server settings, for example", 1)[1].split("\n<\n", 1)[0]
    named = lua_table_keys(example.split("settings = {", 1)[1])
    assert named and sorted(set(named) - set(KEYS)) == []
    listed = re.search(r"server's settings \(([^)]*)\)", help_text)
    assert listed and set(re.findall(r"\w+", listed.group(1))) <= TOP_LEVEL
