"""regress installed by pip into a fresh venv, run from a project elsewhere: the site's templates come along.

The venv shares this interpreter's torch and other dependencies through a .pth of
plain folder lines (no .pth of theirs runs, so this environment's own editable
regress stays out); pip builds regress from a copy of the source, as a user's
`pip install .` (or `pip install -e .`) does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import SRC_ROOT
from test_ab_envs import running_site_dirs
from test_report import make_project


def _fresh_venv(path: Path) -> tuple[Path, Path]:
    """(its python, its site-packages): a venv whose own packages come before this interpreter's."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    purelib = Path(
        subprocess.check_output(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
        ).strip()
    )
    assert purelib != Path(sysconfig.get_paths()["purelib"])
    (purelib / "zz_running_env.pth").write_text("".join(f"{d}\n" for d in running_site_dirs()))
    return python, purelib


def _clean_env() -> dict:
    """No PYTHONPATH (the checkout under test is not on the path) and no REGRESS_ settings."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("REGRESS_")}


@pytest.mark.parametrize("editable", [False, True], ids=["wheel", "editable"])
def test_pip_install_into_a_fresh_venv_then_report_from_another_folder(editable, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(SRC_ROOT / name, src)
    for name in ("regress", "templates"):
        shutil.copytree(SRC_ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    python, purelib = _fresh_venv(tmp_path / "venv")
    install = ["install", "--no-deps", "--ignore-installed", "-q", *(["-e"] if editable else []), str(src)]
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), *install],
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    regress = tmp_path / "venv" / "bin" / "regress"
    assert regress.is_file()

    project = make_project(tmp_path / "elsewhere" / "demo")
    root = project.repo.path
    where = subprocess.run(
        [
            str(python),
            "-c",
            "import regress; from regress.report import site; print(regress.__file__, site._templates())",
        ],
        cwd=root,
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    package = src / "regress" if editable else purelib / "regress"
    assert where == [str(package / "__init__.py"), str(src / "templates" if editable else package / "templates")]

    proc = subprocess.run(
        [str(regress), "report"], cwd=root, env=_clean_env(), capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "12 pages written" in proc.stdout, proc.stdout
    site = root / "site"
    assert (site / "index.html").is_file() and (site / "regressions.atom").is_file()
    css = next((site / "assets").glob("regress-*.css")).read_bytes()
    assert css == (SRC_ROOT / "templates" / "static" / "regress.css").read_bytes()
