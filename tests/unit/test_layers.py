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
    assert {name: n for name, n in sizes.items() if n > 320} == {}
