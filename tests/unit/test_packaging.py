"""pyproject.toml lists every package of regress/ and maps the top-level templates/ into it.

setuptools is given the package list by name (a `find` cannot add templates/,
which sits outside regress/): a new stage missing from the list would be missing
from every installed regress, so this checks the list against the folders.
"""

from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]


def test_every_package_folder_is_listed_and_the_templates_are_mapped_in():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    folders = {".".join(init.parent.relative_to(ROOT).parts) for init in (ROOT / "regress").rglob("__init__.py")}
    assert set(setuptools["packages"]) == folders | {"regress.templates", "regress.templates.static"}
    assert setuptools["package-dir"] == {
        "regress.templates": "templates",
        "regress.templates.static": "templates/static",
    }
    shipped = {
        folder: {p.name for pattern in patterns for p in (ROOT / setuptools["package-dir"][folder]).glob(pattern)}
        for folder, patterns in setuptools["package-data"].items()
    }
    assert shipped["regress.templates"] == {p.name for p in (ROOT / "templates").iterdir() if p.is_file()}
    assert shipped["regress.templates.static"] == {p.name for p in (ROOT / "templates" / "static").iterdir()}
    assert {"base.html", "bench.html", "label.html", "index.html"} <= shipped["regress.templates"]
