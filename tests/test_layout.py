"""The package's shape: dependencies point downwards, the engine is plain Python.

Layers, lowest first: the shared top-level modules (errors, faults, files, limits,
profile, settings, signals, waits), `slash` and `store/`, what the engine tells its faces
(`events`, `host`), what the model sees, what is recorded and what leaves (`context/`,
`trajectory/`, `export/`), `agent/`, the `engine` facade, and the faces (`lsp/`, `acp/`,
`cli`). A module imports only from its own layer or below (type-checking
imports included); only the faces import the engine; only `lsp/` imports pygls or
lsprotocol, and only `acp/` the ACP SDK (`acp`); and no two modules import each other,
directly or around a loop.
"""

from __future__ import annotations

import ast
from pathlib import Path

import seri_lsp

PACKAGE = Path(seri_lsp.__file__).parent
NAME = "seri_lsp"

LAYERS: list[tuple[str, ...]] = [
    (
        "seri_lsp",
        "seri_lsp.command_rules",
        "seri_lsp.errors",
        "seri_lsp.faults",
        "seri_lsp.files",
        "seri_lsp.limits",
        "seri_lsp.profile",
        "seri_lsp.trajectory.toggle",
        "seri_lsp.settings",
        "seri_lsp.signals",
        "seri_lsp.waits",
    ),
    ("seri_lsp.slash", "seri_lsp.store", "seri_lsp.model_choice"),
    ("seri_lsp.events", "seri_lsp.host"),
    ("seri_lsp.context", "seri_lsp.trajectory", "seri_lsp.export"),
    ("seri_lsp.agent",),
    ("seri_lsp.mcp",),
    ("seri_lsp.engine",),
    ("seri_lsp.lsp", "seri_lsp.acp", "seri_lsp.cli", "seri_lsp.__main__"),
]
FACES = ("seri_lsp.lsp", "seri_lsp.acp", "seri_lsp.cli", "seri_lsp.__main__")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(path): path for path in PACKAGE.rglob("*.py")}


def imports_of(path: Path) -> set[str]:
    """Every module named by an import in the file, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module_name(path) if path.name == "__init__.py" else module_name(path.parent)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def internal_imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's own modules that a file imports (`from x import name` counts x)."""
    return {name for name in imports_of(path) if name in modules} - {module_name(path)}


def layer_of(module: str) -> int:
    best, index = -1, -1
    for number, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, index = len(prefix), number
    assert index >= 0, f"{module} belongs to no layer; add it to LAYERS"
    return index


def graph() -> dict[str, set[str]]:
    modules = all_modules()
    return {name: internal_imports(path, modules) for name, path in modules.items()}


def test_every_module_belongs_to_a_layer() -> None:
    for module in all_modules():
        layer_of(module)


def test_imports_only_point_downwards() -> None:
    upward = [
        f"{module} imports {target}"
        for module, targets in graph().items()
        for target in targets
        if layer_of(target) > layer_of(module)
    ]
    assert upward == []


def test_there_are_no_import_cycles() -> None:
    edges = graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(edges[module]):
            if state.get(target) == 1:
                cycles.append([*stack[stack.index(target) :], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module)
    assert cycles == []


def test_only_the_faces_import_the_engine() -> None:
    importers = sorted(
        module
        for module, targets in graph().items()
        if "seri_lsp.engine" in targets and module != "seri_lsp.engine"
    )
    assert importers
    assert [m for m in importers if not m.startswith(FACES)] == []


def test_no_module_outside_the_lsp_face_imports_pygls() -> None:
    offenders = [
        module
        for module, path in all_modules().items()
        if not module.startswith("seri_lsp.lsp")
        and {name.split(".")[0] for name in imports_of(path)} & {"pygls", "lsprotocol"}
    ]
    assert offenders == []


def test_the_lsp_face_does_import_pygls() -> None:
    # Guards the check above against scanning the wrong folder.
    assert "pygls" in {name.split(".")[0] for name in imports_of(PACKAGE / "lsp" / "server.py")}


def test_no_module_outside_the_acp_face_imports_the_acp_sdk() -> None:
    offenders = [
        module
        for module, path in all_modules().items()
        if not module.startswith("seri_lsp.acp")
        and "acp" in {name.split(".")[0] for name in imports_of(path)}
    ]
    assert offenders == []


def test_the_acp_face_does_import_the_acp_sdk() -> None:
    assert "acp" in {name.split(".")[0] for name in imports_of(PACKAGE / "acp" / "server.py")}


def test_each_subpackage_says_what_lives_there_and_what_it_may_depend_on() -> None:
    for init in PACKAGE.glob("*/__init__.py"):
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert docstring, f"{init} has no docstring"
        lines = [line for line in docstring.splitlines() if line.strip()]
        assert len(lines) == 2, f"{init}: two lines, what lives there and what it may use"
        assert "depend" in lines[1], f"{init}: the second line says what it may depend on"
