"""The package's stages import only the stages below them, as each folder's docstring says."""

from __future__ import annotations

import ast
from pathlib import Path

import regress

PACKAGE = Path(regress.__file__).parent

ALLOWED = {
    "core": set(),
    "suite": {"core"},
    "storage": {"core"},
    "analysis": {"core"},
    "measure": {"core", "suite", "storage", "analysis"},
    "flows": {"core", "measure", "storage", "analysis"},
    "output": {"core", "analysis"},
    "report": {"core", "storage", "analysis", "output"},
    "ci": {"core", "storage", "analysis", "flows", "output"},
    "cli": {"core", "storage", "analysis", "measure", "flows", "output", "report", "ci"},
}


def imported_stages(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "regress" and len(parts) > 1 and parts[1] in ALLOWED:
                found.add(parts[1])
    return found


def test_every_stage_imports_only_the_stages_below_it():
    wrong = []
    for stage, allowed in ALLOWED.items():
        files = sorted((PACKAGE / stage).rglob("*.py"))
        assert files, f"regress/{stage}/ is missing"
        for path in files:
            extra = imported_stages(path) - allowed - {stage}
            if extra:
                wrong.append(f"{path.relative_to(PACKAGE)} imports {sorted(extra)}")
    assert wrong == []


def test_no_module_reaches_into_another_modules_private_names():
    wrong = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = set()  # names bound to regress modules here
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("regress"):
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        wrong.append(f"{path.relative_to(PACKAGE)}: {node.module}.{a.name}")
                    modules.add(a.asname or a.name)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in modules
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                wrong.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value.id}.{node.attr}")
    assert wrong == []


def test_modules_stay_small():
    sizes = {
        str(p.relative_to(PACKAGE)): len(p.read_text(encoding="utf-8").splitlines()) for p in PACKAGE.rglob("*.py")
    }
    assert {name: n for name, n in sizes.items() if n > 600} == {}


def _module_name(path: Path) -> str:
    parts = ["regress", *path.relative_to(PACKAGE).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Each regress module -> the regress modules it imports, anywhere in it (a deferred import counts)."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:  # `from regress.output import slides` imports the module slides
                    sub = f"{node.module}.{a.name}"
                    found.add(sub if sub in paths else node.module)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
        graph[name] = {m for m in found if m in paths and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while not part or part[-1] != v:
                part.append(stack.pop())
            if len(part) > 1:
                found.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle_between_regress_modules():
    assert cycles(import_graph()) == []


def test_the_cycle_check_finds_a_cycle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"} - {"e"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
