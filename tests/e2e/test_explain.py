"""`regress explain` on real torch code: the operators that changed, from torch.profiler."""

from __future__ import annotations

import json
from pathlib import Path

from regress.analysis.explanation import Op, OpStatus, OpTable, diff

SOFTMAX_SUITE = """
import torch
import torch.utils.benchmark as benchmark
from mypkg import softmax_rows

def bench_softmax():
    x = torch.randn(256, 512)
    return benchmark.Timer(stmt="softmax_rows(x)", globals={"softmax_rows": softmax_rows, "x": x},
                           label="softmax", sub_label="rows")
"""

HAND = """
import torch

def softmax_rows(x):
    m = x.max(-1, keepdim=True).values
    e = (x - m).exp()
    return e / e.sum(-1, keepdim=True)
"""

TORCH = """
import torch

def softmax_rows(x):
    return torch.softmax(x, -1)
"""

DOT_SUITE = """
import torch
import torch.utils.benchmark as benchmark
from mypkg import batched_dot

def bench_dot():
    a, b = torch.randn(256, 1024), torch.randn(256, 1024)
    return benchmark.Timer(stmt="batched_dot(a, b)", globals={"batched_dot": batched_dot, "a": a, "b": b},
                           label="dot", sub_label="mul_sum")
"""

ONCE = """
def batched_dot(a, b):
    return a.mul(b).sum(-1)
"""

TWICE = """
def batched_dot(a, b):
    a.mul(b).sum(-1)
    return a.mul(b).sum(-1)
"""

FOUR_TIMES = """
def batched_dot(a, b):
    for _ in range(3):
        a.mul(b).sum(-1)
    return a.mul(b).sum(-1)
"""


def _rows(doc: dict, bench: str) -> dict[str, dict]:
    (item,) = [b for b in doc["benchmarks"] if bench in b["id"]]
    return item, {r["name"]: r for r in item["ops"]}


def test_a_hand_written_softmax_replaced_by_torch_softmax(repo):
    base = repo.commit(
        "hand-written softmax", {"src/mypkg/__init__.py": HAND, "benchmarks/bench_work.py": SOFTMAX_SUITE}
    )
    head = repo.commit("use torch.softmax", {"src/mypkg/__init__.py": TORCH})
    proc = repo.regress("explain", base, head, "--bench", "softmax", "--format", "json", check=True)
    item, rows = _rows(json.loads(proc.stdout), "softmax")
    top = [r["name"] for r in item["ops"][:4]]
    softmax = rows.get("aten::_softmax") or rows["aten::softmax"]
    assert softmax["status"] == "new" and softmax["name"] in top, item["ops"][:6]
    assert rows["aten::exp"]["status"] == "gone" and "aten::exp" in top, item["ops"][:6]
    for gone in ("aten::max", "aten::sub", "aten::sum", "aten::div"):
        assert rows[gone]["status"] == "gone" and rows[gone]["base_calls"] == 1.0
    assert rows["aten::exp"]["base_calls"] == 1.0 and rows["aten::exp"]["head_calls"] == 0
    # The traces are kept beside the results, as Chrome trace JSON.
    for side in ("base_trace", "head_trace"):
        trace = json.loads(Path(item[side]).read_text())
        assert "traceEvents" in trace
        assert "/testbox/default/profiles/" in item[side]
    text = repo.regress("explain", base, head, "--bench", "softmax", check=True).stdout
    assert "aten::exp" in text and " gone " in text and " new " in text


def test_mul_sum_computed_twice_shows_twice_the_calls(repo):
    base = repo.commit("batched dot", {"src/mypkg/__init__.py": ONCE, "benchmarks/bench_work.py": DOT_SUITE})
    head = repo.commit("compute it twice", {"src/mypkg/__init__.py": TWICE})
    doc = json.loads(repo.regress("explain", base, head, "--bench", "mul_sum", "--format", "json", check=True).stdout)
    _, rows = _rows(doc, "mul_sum")
    assert rows["aten::mul"]["base_calls"] == 1.0 and rows["aten::mul"]["head_calls"] == 2.0
    assert rows["aten::sum"]["head_calls"] == 2.0
    assert rows["aten::mul"]["status"] == "changed"
    md = repo.regress("explain", base, head, "--bench", "mul_sum", "--format", "markdown", check=True).stdout
    assert "| `aten::mul` |" in md


def test_without_bench_explain_takes_the_benchmarks_compare_calls_changed(repo):
    # Four times the work: a regression however busy the machine (the test shares it), once each side has
    # rounds enough that all of them landing 3-4x slow is ruled out (the slow-mode test, analysis/modes.py).
    base = repo.commit("batched dot", {"src/mypkg/__init__.py": ONCE, "benchmarks/bench_work.py": DOT_SUITE})
    head = repo.commit("compute it four times", {"src/mypkg/__init__.py": FOUR_TIMES})
    repo.regress("run", base, head, "--min-rounds", "8", "--max-rounds", "8", check=True)
    verdict = json.loads(repo.regress("compare", base, head, "--format", "json", check=True).stdout)
    assert verdict["verdicts"][0]["verdict"] == "regression", verdict
    doc = json.loads(repo.regress("explain", base, head, "--format", "json", check=True).stdout)
    item, rows = _rows(doc, "mul_sum")
    assert item["verdict"] == "regression" and item["ratio"] > 2
    assert rows["aten::mul"]["head_calls"] == 4.0


def test_explain_with_nothing_changed_says_so_and_a_bad_revision_is_one_line(repo):
    base = repo.git("rev-parse", "HEAD")
    proc = repo.regress("explain", base, "HEAD", check=True)
    assert "nothing to explain" in proc.stdout
    bad = repo.regress("explain", "nosuchrev", "HEAD")
    assert bad.returncode == 2 and bad.stderr.startswith("regress: error:") and "Traceback" not in bad.stderr


def test_the_op_diff_sorts_by_contribution_and_marks_new_and_gone():
    base = OpTable(10, (Op("aten::exp", 10, 500.0), Op("aten::add", 10, 100.0), Op("ProfilerStep", 1, 9.0)))
    head = OpTable(20, (Op("aten::add", 40, 400.0), Op("aten::_softmax", 20, 200.0), Op("mine", 20, 40.0, user=True)))
    d = diff(base, head)
    assert [r.name for r in d.rows] == ["aten::exp", "aten::_softmax", "aten::add", "mine"]
    by = {r.name: r for r in d.rows}
    assert by["aten::exp"].status == OpStatus.GONE and by["aten::_softmax"].status == OpStatus.NEW
    assert by["aten::add"].base_calls == 1 and by["aten::add"].head_calls == 2 and by["aten::add"].diff_us == 10
    assert abs(d.diff_us - (10 + 10 + 2 - 50)) < 1e-9


def test_the_pull_request_check_shows_the_top_operator_rows_under_a_regression(repo, tmp_path):
    repo.commit("batched dot", {"src/mypkg/__init__.py": ONCE, "benchmarks/bench_work.py": DOT_SUITE})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("compute it four times", {"src/mypkg/__init__.py": FOUR_TIMES})
    summary = tmp_path / "summary.md"
    proc = repo.regress("check", "main", "--rounds", "6", "--summary", str(summary))
    assert proc.returncode == 1, proc.stderr
    md = summary.read_text()
    assert "Operators behind each regression" in md
    rows = [line for line in md.splitlines() if line.startswith("| `aten::")]
    assert 0 < len(rows) <= 5
    mul = next(line for line in rows if line.startswith("| `aten::mul` |"))
    assert "| 1 | 4 |" in mul  # calls per benchmark call: 1 at base, 4 at head


def explained_site(repo):
    """A stored history with a step at the softmax commit, `regress explain` run on it, and the site built."""
    from dataclasses import replace

    from factories import bench, commit

    from regress.storage import gitrepo
    from regress.storage.store import Store

    shas = [
        repo.commit("hand-written softmax", {"src/mypkg/__init__.py": HAND, "benchmarks/bench_work.py": SOFTMAX_SUITE})
    ]
    shas += [repo.commit(f"note {k}", {"src/mypkg/note.py": f"N = {k}\n"}) for k in range(3)]
    shas.append(repo.commit("use <torch.softmax> & friends", {"src/mypkg/__init__.py": TORCH}))
    shas += [repo.commit(f"later {k}", {"src/mypkg/note.py": f"L = {k}\n"}) for k in range(3)]
    git, store = gitrepo.open_repo(repo.path), Store(repo.path / ".regress")
    for k, sha in enumerate(shas):  # levels chosen: the step is at the softmax commit
        level = 2e-3 if k < 4 else 1e-3
        info = replace(gitrepo.commit_info(git, sha), committed_at=1_700_000_000 + k)
        r = commit("x", bench([level * (1 + 0.001 * j) for j in range(3)], label="softmax", sub="rows"))
        store.save(replace(r, commit=info, machine="testbox"))
    repo.regress("explain", shas[3], shas[4], "--bench", "softmax", check=True)
    repo.regress("report", check=True)
    return repo.path / "site", shas


def test_the_site_links_each_change_point_to_its_explain_panel_with_both_traces(repo):
    site, _ = explained_site(repo)
    index = (site / "index.html").read_text()
    assert 'class="explain-link"' in index
    (page,) = list((site / "explain").glob("*.html"))
    html = page.read_text()
    assert "aten::exp" in html and "gone" in html and "aten::_softmax" in html
    assert "use &lt;torch.softmax&gt; &amp; friends" in html and "<torch.softmax>" not in html
    for side in ("base", "head"):
        href = html.split(f'class="trace-{side}" href="')[1].split('"')[0]
        assert "traceEvents" in json.loads((page.parent / href).read_text())


def test_renderers_show_self_cuda_time_when_a_gpu_was_profiled():
    from regress.analysis.explanation import Explained, Explanation
    from regress.core.records import BenchmarkId, CommitInfo
    from regress.output import explain as render

    base = OpTable(4, (Op("aten::mm", 4, 40.0, 400.0),))
    head = OpTable(4, (Op("aten::mm", 8, 80.0, 800.0), Op("gpu|range", 4, 4.0, user=True)))
    bid = BenchmarkId("mm", "square", "", 1)
    info = CommitInfo("a" * 40, (), "A", "a@x", 0, 0, "subject")
    e = Explanation(bid, None, diff(base, head))
    got = Explained(info, info, [e])
    text = render.text(got)
    assert "self CUDA/call" in text and "100 us -> 200 us" in text
    md = render.markdown(got)
    assert "self CUDA/call" in md and "`gpu\\|range`" in md
    doc = json.loads(render.as_json(got))
    assert doc["benchmarks"][0]["ops"][0]["head_cuda_us"] == 200.0
