"""What a file under the benchmark path is (read, never run), and what a checkout says it is as a distribution."""

from __future__ import annotations

import importlib.metadata
import sys
import textwrap
from pathlib import Path

import pytest

from regress.suite import installed
from regress.suite.files import FileKind, benchmark_files, classify


def _write(tmp_path: Path, rel: str, text: str) -> Path:
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def _kind(tmp_path, rel, text, **kw):
    path = _write(tmp_path, rel, text)
    return classify(path, rel, importable=lambda name: name != "cv2", **kw)


def test_a_file_is_read_for_what_it_is(tmp_path):
    suite = _kind(tmp_path, "b/suite.py", "import torch\ndef bench_a():\n    pass\ndef bench_b(device):\n    pass\n")
    assert suite.kind is FileKind.SUITE
    assert [str(n) for n in suite.notes] == ["b/suite.py:4 bench_b takes arguments (device): not a benchmark"]
    deco = _kind(
        tmp_path, "b/deco.py", "import regress\n@regress.benchmark(params={'n': [1]})\ndef anything(n):\n    pass\n"
    )
    assert deco.kind is FileKind.SUITE and not deco.notes
    aliased = _kind(tmp_path, "b/alias.py", "from regress import track as t\n@t(unit='x')\ndef size():\n    return 1\n")
    assert aliased.kind is FileKind.SUITE
    # pytest-benchmark's mark is not regress's decorator.
    marked = _kind(
        tmp_path, "b/marked.py", "import pytest\n@pytest.mark.benchmark(group='g')\ndef helper():\n    pass\n"
    )
    assert marked.kind is FileKind.OTHER
    tests = _kind(tmp_path, "b/test_x.py", "def test_a(benchmark):\n    benchmark(len, [])\n")
    assert tests.kind is FileKind.PYTEST and tests.mentions_benchmark
    custom = _kind(tmp_path, "b/check_x.py", "def test_a(benchmark):\n    pass\n", test_patterns=["check_*.py"])
    assert custom.kind is FileKind.PYTEST
    script = _kind(tmp_path, "b/run.py", "def main():\n    pass\n\nif __name__ == '__main__':\n    main()\n")
    assert script.kind is FileKind.OTHER and "is a script" in script.notes[0].message
    only_args = _kind(tmp_path, "b/geo.py", "def bench_linalg(device, *, dtype):\n    pass\n")
    assert only_args.kind is FileKind.OTHER
    assert only_args.notes[0].message == "bench_linalg takes arguments (device, dtype): not a benchmark"
    defaults = _kind(tmp_path, "b/dflt.py", "def bench_ok(device='cpu', *args, **kw):\n    pass\n")
    assert defaults.kind is FileKind.SUITE


def test_a_module_needing_a_missing_package_is_named_and_never_run(tmp_path):
    got = _kind(tmp_path, "b/blur.py", "import os\nimport cv2.data\ndef bench_blur():\n    pass\n")
    assert got.kind is FileKind.OTHER
    assert str(got.notes[0]) == "b/blur.py:2 imports cv2, which is not installed here: not measured"
    guarded = _kind(
        tmp_path,
        "b/guarded.py",
        "try:\n    import cv2\nexcept ImportError:\n    cv2 = None\ndef bench_a():\n    pass\n",
    )
    assert guarded.kind is FileKind.SUITE
    _write(tmp_path, "b/cv2.py", "")  # a sibling module of that name is what it imports
    assert _kind(tmp_path, "b/blur2.py", "import cv2\ndef bench_b():\n    pass\n").kind is FileKind.SUITE


def test_a_broken_file_is_left_to_fail_where_it_is_loaded(tmp_path):
    assert _kind(tmp_path, "b/broken.py", "def bench_x(:\n").kind is FileKind.SUITE
    assert _kind(tmp_path, "b/test_broken.py", "def test_x(:\n").kind is FileKind.PYTEST


def test_benchmark_files_take_a_folder_or_one_file(tmp_path):
    for rel in ("b/a.py", "b/_private.py", "b/conftest.py", "b/.hidden/x.py", "b/sub/c.py", "b/_skip/d.py"):
        _write(tmp_path, rel, "")
    assert [p.relative_to(tmp_path).as_posix() for p in benchmark_files(tmp_path / "b")] == ["b/a.py", "b/sub/c.py"]
    assert benchmark_files(tmp_path / "b" / "a.py") == [tmp_path / "b" / "a.py"]


@pytest.mark.parametrize(
    ("files", "name", "version", "version_files"),
    [
        ({"pyproject.toml": '[project]\nname = "my-pkg"\nversion = "1.2"\n'}, "my-pkg", "1.2", ()),
        (
            {
                "pyproject.toml": '[project]\nname = "scm"\ndynamic = ["version"]\n'
                '[tool.setuptools_scm]\nversion_file = "src/scm/_version.py"\n'
            },
            "scm",
            installed.PLACEHOLDER,
            ("src/scm/_version.py",),
        ),
        (
            {
                "pyproject.toml": '[project]\nname = "h"\ndynamic = ["version"]\n'
                '[tool.hatch.build.hooks.vcs]\nversion-file = "h/_v.py"\n'
            },
            "h",
            installed.PLACEHOLDER,
            ("h/_v.py",),
        ),
        ({"setup.cfg": "[metadata]\nname = cfgpkg\nversion = attr: cfgpkg.__version__\n"}, "cfgpkg", "0.0.0", ()),
        ({"setup.py": "from setuptools import setup\nsetup(name='old', version='0.3')\n"}, "old", "0.3", ()),
        ({"setup.py": "from setuptools import setup\nsetup(name=NAME)\n"}, None, None, None),
    ],
)
def test_a_checkout_names_its_distribution(tmp_path, files, name, version, version_files):
    for rel, text in files.items():
        _write(tmp_path, rel, text)
    got = installed.project(tmp_path)
    if name is None:
        assert got is None
    else:
        assert (got.name, got.version, got.version_files) == (name, version, version_files)


def test_install_makes_metadata_and_the_version_file_findable(tmp_path, monkeypatch):
    _write(
        tmp_path,
        "pyproject.toml",
        '[project]\nname = "Regress_Probe.Pkg"\ndynamic = ["version"]\n'
        '[tool.setuptools_scm]\nwrite_to = "src/regress_probe_pkg/_version.py"\n',
    )
    _write(tmp_path, "src/regress_probe_pkg/__init__.py", "from ._version import version\n")
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.setattr(sys, "path", [str(tmp_path / "src"), *sys.path])
    installed.install(tmp_path, tmp_path / "src")
    assert importlib.metadata.version("regress-probe-pkg") == installed.PLACEHOLDER
    assert importlib.metadata.metadata("regress_probe.pkg")["Name"] == "Regress_Probe.Pkg"
    import regress_probe_pkg

    try:
        assert regress_probe_pkg.version == installed.PLACEHOLDER
    finally:
        for mod in [m for m in sys.modules if m.startswith("regress_probe_pkg")]:
            del sys.modules[mod]
