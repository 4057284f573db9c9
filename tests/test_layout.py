"""The engine stays plain Python: only the LSP face may import pygls or lsprotocol."""

from __future__ import annotations

import ast
from pathlib import Path

import seri_lsp

PACKAGE = Path(seri_lsp.__file__).parent
FACE = PACKAGE / "lsp"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_no_module_outside_the_lsp_face_imports_pygls() -> None:
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if FACE not in path.parents and imported_modules(path) & {"pygls", "lsprotocol"}
    ]
    assert offenders == []


def test_the_lsp_face_does_import_pygls() -> None:
    # Guards the check above against scanning the wrong folder.
    assert "pygls" in imported_modules(FACE / "server.py")
