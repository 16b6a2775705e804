"""Recipe step 6: A/B between two real environments (virtual environments with different builds of a library)."""

from __future__ import annotations

import site
import subprocess
import sys
import sysconfig
from pathlib import Path

from regress.storage.store import Store

SUITE = """
import torch.utils.benchmark as benchmark
import fastlib

def bench_lib():
    for n in (200, 2000):
        yield benchmark.Timer(stmt="fastlib.work(n)", globals={"fastlib": fastlib, "n": n},
                              label="lib", sub_label=f"n={n}")
"""

SLOW_BUILD = "def work(n):\n    return sum(i * i for i in range(n))\n"
FAST_BUILD = "def work(n):\n    return (n - 1) * n * (2 * n - 1) // 6\n"


def running_site_dirs() -> list[str]:
    """This interpreter's site-packages folders: where torch and the editable regress are."""
    dirs = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        dirs.append(site.getusersitepackages())
    return [d for d in dirs if Path(d).is_dir()]


def make_venv(path: Path, build: str) -> Path:
    """A real venv sharing this interpreter's torch, with its own build of `fastlib`.

    Not `--system-site-packages`: when this interpreter is itself a venv, that flag
    shares the *base* interpreter's packages, which need not have torch. A .pth file
    adds this interpreter's site folders (their .pth files too: the editable install)
    after the venv's own, so the venv's `fastlib` comes first.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    purelib = subprocess.check_output(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True
    ).strip()
    assert purelib != sysconfig.get_paths()["purelib"]
    lines = "".join(f"import site; site.addsitedir({d!r})\n" for d in running_site_dirs())
    (Path(purelib) / "zz_running_env.pth").write_text(lines)
    (Path(purelib) / "fastlib.py").write_text(build)
    return python


def test_two_environments_are_stored_apart_and_compared(repo, tmp_path):
    repo.commit("suite needs fastlib", {"benchmarks/bench_work.py": SUITE})
    slow = make_venv(tmp_path / "venv-slow", SLOW_BUILD)
    fast = make_venv(tmp_path / "venv-fast", FAST_BUILD)
    for _ in range(3):  # the differ wants 3 rounds (fresh processes) per side for a level
        repo.regress("run", "HEAD", "--python", str(slow), "--env", "lib-1.0", check=True)
        repo.regress("run", "HEAD", "--python", str(fast), "--env", "lib-2.0", check=True)
    sha = repo.git("rev-parse", "HEAD")
    store = Store(repo.path / ".regress")
    assert store.envs("testbox") == ["lib-1.0", "lib-2.0"]
    a, b = store.load("testbox", "lib-1.0", sha), store.load("testbox", "lib-2.0", sha)
    assert a.fingerprint.executable == str(slow) and b.fingerprint.executable == str(fast)
    assert {r.spec.env for r in a.results} == {"lib-1.0"}
    big = [r for r in a.results if r.id.sub_label == "n=2000"][0].median
    big_fast = [r for r in b.results if r.id.sub_label == "n=2000"][0].median
    assert big > 10 * big_fast  # the fast build really is what ran
    table = repo.regress("show", "HEAD", "--env", "lib-1.0,lib-2.0", check=True).stdout
    assert "(lib-1.0)" in table and "(lib-2.0)" in table
    assert "no results" in repo.regress("show", "HEAD").stderr  # the default env was never measured

    verdicts = repo.regress(
        "compare", "HEAD", "HEAD", "--env-a", "lib-1.0", "--env-b", "lib-2.0", "--format", "json", check=True
    )
    import json

    doc = json.loads(verdicts.stdout)
    assert doc["base_env"] == "lib-1.0" and doc["env"] == "lib-2.0"
    by = {v["sub_label"]: v for v in doc["verdicts"]}
    assert by["n=2000"]["verdict"] == "improvement" and by["n=2000"]["ratio"] < 0.1
    text = repo.regress("compare", "HEAD", "HEAD", "--env-a", "lib-1.0", "--env-b", "lib-2.0", check=True).stdout
    assert "A/B: base in env 'lib-1.0', head in env 'lib-2.0'" in text
    missing = repo.regress("compare", "HEAD", "HEAD", "--env-a", "lib-1.0", "--env-b", "lib-3.0")
    assert missing.returncode == 2 and "env 'lib-3.0'" in missing.stderr and "--env lib-3.0" in missing.stderr
