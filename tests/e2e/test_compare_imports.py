"""A comparison of stored results starts no worker and imports none of the worker machinery.

The machinery (fork servers, worker processes, the round engine) registers exit
handlers and reads the environment as it imports; `regress compare` of two
measured commits, the common case in CI, has no use for any of it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import factories
from conftest import cli_env

from regress.storage.store import Store

PROBE = """
import json, sys
from regress.cli.main import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _probe(repo, *args: str) -> tuple[int, list[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=repo.path, env=cli_env(), capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    return got["code"], got["modules"]


def test_compare_of_stored_results_imports_no_worker_machinery(repo):
    base = repo.git("rev-parse", "HEAD")
    head = repo.commit("slower")
    store = Store(repo.path / ".regress")
    for sha, level in ((base, 1e-3), (head, 1.3e-3)):
        info = repo.git("show", "-s", "--format=%ct%n%s", sha).split("\n")
        store.save(
            factories.commit(
                sha,
                factories.bench([level * (1 + 0.001 * i) for i in range(6)]),
                when=int(info[0]),
                subject=info[1],
                machine="testbox",
            )
        )
    code, modules = _probe(repo, "compare", base, head)
    assert code == 0
    # The verdict was a change, so the neighbour rule ran: the flow did its whole job.
    assert "regress.flows.comparison" in modules and "regress.analysis.diff" in modules
    machinery = [
        m for m in modules if m == "regress.measure" or m.startswith(("regress.measure.", "regress.flows.top_up"))
    ]
    assert machinery == []
    assert "torch" not in modules
    # Nor the change-point code (scipy.sparse, scipy.ndimage): compare renders no steps.
    assert "regress.analysis.changepoints" not in modules
    assert not [m for m in modules if m.startswith(("scipy.sparse", "scipy.ndimage"))]
    # Once the history's same-code pairs are kept (the first compare of this history kept them), nor numpy.ma,
    # which np.median's first call imports (15 ms): the medians are taken by stats.median.
    code, modules = _probe(repo, "compare", base, head)
    assert code == 0 and "numpy" in modules and "regress.analysis.diff" in modules
    assert "numpy.ma" not in modules
    # Nor scipy at all (scipy.stats' import parses docstrings for 0.8 s; only `regressions` tests steps with
    # Mann-Whitney), nor the site's and the console's libraries.
    assert not [m for m in modules if m.split(".")[0] in ("scipy", "jinja2", "rich", "plotly")]

    # The same probe sees the machinery when a comparison does measure: the test can fail.
    code, modules = _probe(repo, "compare", base, head, "--measure", "--rounds", "1", "--bench", "nothing-matches")
    assert "regress.measure.worker_process" in modules
