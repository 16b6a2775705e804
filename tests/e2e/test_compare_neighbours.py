"""`regress compare` judges its two commits and their neighbours from the summary, not from their files.

Its verdicts and the blip rule's read only the rounds' values and runs,
which the summary's light copies give exactly. So compare decodes no result
file while the summary holds them as they are, however long the history, and
its output is the same, to the byte, when the summary can't be used and
every side and neighbour comes from its file.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace

import factories
from conftest import cli_env

from regress.storage import summary
from regress.storage.store import Store

PROBE = """
import json, sys
from regress.storage.store import Store
loaded = []
real = Store.load
def load(self, machine, env, sha):
    loaded.append(sha)
    return real(self, machine, env, sha)
Store.load = load
from regress.cli.main import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "loaded": loaded}))
"""

LEVEL = [1.00, 1.002, 1.004, 1.001, 1.003, 1.002]
# Per benchmark, each commit's level: "blip" moves at b alone, "stays" moves at b for good.
MOVES = {"blip": (1, 1.06, 1, 1), "stays": (1, 1.07, 1.07, 1.07), "calm": (1, 1, 1, 1)}


def _history(repo) -> list[str]:
    shas = [repo.git("rev-parse", "HEAD"), *(repo.commit(f"change {k}") for k in range(3))]
    store = Store(repo.path / ".regress")
    for k, sha in enumerate(shas):
        info = repo.git("show", "-s", "--format=%ct%n%s", sha).split("\n")
        results = []
        for sub, moves in MOVES.items():
            samples = factories.rounds_of([v * moves[k] * 1e-3 for v in LEVEL], within=0.3)
            results.append(factories.bench(sub=sub, samples=tuple(replace(s, run=f"run-{k}") for s in samples)))
        store.save(
            factories.commit(
                sha,
                *results,
                when=int(info[0]),
                subject=info[1],
                machine="testbox",
                parents=(shas[k - 1],) if k else (),
            )
        )
    return shas


def test_compare_decodes_no_file_the_summary_holds_and_says_what_the_files_say(repo):
    a, b, c, d = _history(repo)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, "compare", a, b, "--format", "json"],
        cwd=repo.path,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    probe = json.loads(lines[-1])
    assert probe["code"] == 0 and probe["loaded"] == []  # neither side nor c, the neighbour, decoded
    verdicts = {v["sub_label"]: v for v in json.loads("\n".join(lines[:-1]))["verdicts"]}
    assert {sub: v["verdict"] for sub, v in verdicts.items()} == {
        "blip": "noisy",
        "stays": "regression",
        "calm": "unchanged",
    }
    assert "a blip" in verdicts["blip"]["reason"]

    outputs = {}
    for pair in ((a, b), (b, c), (c, d)):
        for fmt in ("json", "text"):
            outputs[pair, fmt] = repo.regress("compare", *pair, "--format", fmt, check=True).stdout
    # The summary unusable: every neighbour, and the history, come from the files.
    (repo.path / ".regress" / summary.FILE).unlink()
    (repo.path / ".regress" / summary.FILE).mkdir()
    try:
        for (pair, fmt), expected in outputs.items():
            assert repo.regress("compare", *pair, "--format", fmt, check=True).stdout == expected, (pair, fmt)
    finally:
        shutil.rmtree(repo.path / ".regress" / summary.FILE)
