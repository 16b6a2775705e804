"""Memory per call, end to end: real torch code, real commits, one round each, exact verdicts.

The project's history: an A/A commit, a `.clone()` of an op's output, a
product computed twice, a hand-written softmax replaced by torch.softmax.
`compare --metric allocated` must flag exactly the clone and the double
product as regressions and the softmax as an improvement, nothing else.
"""

from __future__ import annotations

import itertools
import json

from regress.core.records import BenchmarkResult, MemoryUse, TaskSpec
from regress.core.units import fmt_bytes

OPS = """
import torch

def scaled(x):
    return x * 2.0

def gram(a, b):
    p = a * b
    return p + p

def softmax(x):
    e = (x - x.max(dim=-1, keepdim=True).values).exp()
    return e / e.sum(dim=-1, keepdim=True)

def relu(x):
    return x.clamp_min(0)
"""

SUITE = """
import torch
import regress
from mypkg import ops

torch.manual_seed(0)
X = torch.randn(128, 256)
Y = torch.randn(128, 256)

@regress.benchmark(label="mem")
def scaled():
    return lambda: ops.scaled(X)

@regress.benchmark(label="mem")
def gram():
    return lambda: ops.gram(X, Y)

@regress.benchmark(label="mem")
def softmax():
    return lambda: ops.softmax(X)

@regress.benchmark(label="mem")
def relu():
    return lambda: ops.relu(X)
"""

ONE_ROUND = ("--min-rounds", "1", "--max-rounds", "1")


def _compare(repo, base, head, metric="allocated"):
    proc = repo.regress("compare", base, head, "--metric", metric, "--format", "json", check=True)
    doc = json.loads(proc.stdout)
    return doc, {v["sub_label"].removesuffix("()"): v for v in doc["verdicts"]}


def test_allocated_flags_exactly_the_clone_and_double_product_and_the_softmax(repo):
    repo.commit("ops", {"src/mypkg/ops.py": OPS, "benchmarks/bench_work.py": SUITE})
    shas = [repo.git("rev-parse", "HEAD")]
    shas.append(repo.commit("A/A: a comment only", {"src/mypkg/ops.py": OPS + "\n# nothing changes\n"}))
    clone = OPS.replace("return x * 2.0", "return (x * 2.0).clone()")
    shas.append(repo.commit("clone the output", {"src/mypkg/ops.py": clone}))
    twice = clone.replace("p = a * b\n    return p + p", "return a * b + a * b")
    shas.append(repo.commit("compute the product twice", {"src/mypkg/ops.py": twice}))
    fused = twice.replace(
        "e = (x - x.max(dim=-1, keepdim=True).values).exp()\n    return e / e.sum(dim=-1, keepdim=True)",
        "return torch.softmax(x, dim=-1)",
    )
    assert fused != twice
    shas.append(repo.commit("torch.softmax", {"src/mypkg/ops.py": fused}))
    repo.regress("run", f"{shas[0]}^..{shas[-1]}", *ONE_ROUND, check=True)

    found = {}
    for base, head in itertools.pairwise(shas):
        doc, by = _compare(repo, base, head)
        assert doc["mode"] == "allocated" and doc["unit"] == "bytes"
        assert set(by) == {"scaled", "gram", "softmax", "relu"}
        assert all(v["base_rounds"] == 1 and v["head_rounds"] == 1 for v in by.values())
        assert not any(v["verdict"] == "noisy" for v in by.values())
        found[head] = {name: v["verdict"] for name, v in by.items() if v["verdict"] != "unchanged"}
        for v in by.values():
            if v["verdict"] == "unchanged":
                assert v["base"] == v["head"], v  # exact: identical figures, not merely close ones
    assert found == {
        shas[1]: {},
        shas[2]: {"scaled": "regression"},
        shas[3]: {"gram": "regression"},
        shas[4]: {"softmax": "improvement"},
    }
    # The clone doubles what a call allocates: one more output-sized tensor (128x256 float32).
    _, by = _compare(repo, shas[1], shas[2])
    assert by["scaled"]["head"] - by["scaled"]["base"] == 128 * 256 * 4
    # Peak: the double product holds a third temporary at once; the clone's copy outlives its source.
    _, peak = _compare(repo, shas[2], shas[3], metric="peak")
    assert peak["gram"]["verdict"] == "regression"
    text = repo.regress("compare", shas[1], shas[2], "--metric", "allocated", check=True).stdout
    assert "KiB" in text and "regression" in text
    gate = repo.regress("compare", shas[1], shas[2], "--metric", "allocated", "--fail-on-regression")
    assert gate.returncode == 1
    steps = json.loads(repo.regress("regressions", "--metric", "allocated", "--format", "json", check=True).stdout)[
        "steps"
    ]
    assert sorted((s["commit"]["sha"], s["sub_label"], s["direction"]) for s in steps) == sorted(
        [
            (shas[2], "scaled()", "regression"),
            (shas[3], "gram()", "regression"),
            (shas[4], "softmax()", "improvement"),
        ]
    )
    shown = repo.regress("show", shas[2], check=True).stdout
    assert "allocated" in shown and "KiB" in shown


def test_memory_threshold_comes_from_tool_regress(repo):
    repo.commit("ops", {"src/mypkg/ops.py": OPS, "benchmarks/bench_work.py": SUITE})
    base = repo.git("rev-parse", "HEAD")
    head = repo.commit("clone", {"src/mypkg/ops.py": OPS.replace("return x * 2.0", "return (x * 2.0).clone()")})
    repo.regress("run", f"{base}^..{head}", "--bench", "scaled", *ONE_ROUND, check=True)
    pyproject = (repo.path / "pyproject.toml").read_text()
    (repo.path / "pyproject.toml").write_text(pyproject + 'memory_threshold = "150%"\n')
    doc, by = _compare(repo, base, head)
    assert doc["threshold"] == 1.5 and by["scaled"]["verdict"] == "unchanged"
    (repo.path / "pyproject.toml").write_text(pyproject + 'memory_threshold = "lots"\n')
    bad = repo.regress("compare", base, head, "--metric", "allocated")
    assert bad.returncode == 2 and bad.stderr.startswith("regress: error:") and "memory_threshold" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_memory_figures_survive_the_results_file_and_older_files_have_none(tmp_path):
    from regress.core.records import CommitInfo, CommitResult, Fingerprint, Settings
    from regress.storage import codec

    r = BenchmarkResult(TaskSpec("f()"), "b.py:1", memory=(MemoryUse(1024, 512, "cpu", 1.0),))
    info = CommitInfo("a" * 40, (), "A", "a@x", 1, 1, "s")
    result = CommitResult(info, "m", "default", Fingerprint("m"), Settings(), (r,))
    assert codec.decode(codec.encode(result), "x").results[0].memory == r.memory
    assert codec.FORMAT_VERSION >= 5 and set(codec.READABLE_VERSIONS) >= {1, 2, 3, 4}
    assert fmt_bytes(1536) == "1.50 KiB" and fmt_bytes(100) == "100 B" and fmt_bytes(3 << 20) == "3.00 MiB"


def test_the_pull_request_check_fails_on_a_memory_regression(repo, tmp_path):
    repo.commit("ops", {"src/mypkg/ops.py": OPS, "benchmarks/bench_work.py": SUITE})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("clone the output", {"src/mypkg/ops.py": OPS.replace("return x * 2.0", "return (x * 2.0).clone()")})
    summary = tmp_path / "summary.md"
    proc = repo.regress("check", "main", "--rounds", "1", "--summary", str(summary))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    text = summary.read_text()
    assert "#### allocated" in text and "regression" in text and "KiB" in text


def test_format_4_files_load_with_no_memory_compile_or_tracked_figures():
    import pickle

    from regress.core.records import (
        CommitInfo,
        CommitResult,
        Fingerprint,
        Sample,
        Settings,
    )
    from regress.storage import codec

    r = BenchmarkResult(TaskSpec("f()"), "b.py:1", (Sample(1, (1e-4,)),))
    state = {k: v for k, v in r.__dict__.items() if k not in ("memory", "compiled", "tracked")}  # what format 4 pickled
    object.__setattr__(r, "__dict__", state)
    info = CommitInfo("b" * 40, (), "A", "a@x", 1, 1, "s")
    result = CommitResult(info, "m", "default", Fingerprint("m"), Settings(), (r,))
    loaded = codec.decode(pickle.dumps({"format": "regress-results", "version": 4, "result": result}), "old.pkl")
    got = loaded.results[0]
    assert (got.memory, got.compiled, got.tracked) == ((), (), ()) and got.ok and not got.is_tracked
