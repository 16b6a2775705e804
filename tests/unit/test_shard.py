"""`regress run --shard K/N`: N jobs measure every benchmark exactly once, and `regress merge` puts them together."""

from __future__ import annotations

import pytest

from regress.core.records import BenchmarkId
from regress.measure.shard import Shard, parse, shard_of
from regress.storage.store import Store

WIDE = """
import torch.utils.benchmark as benchmark

def bench_wide():
    for i in range(9):
        for threads in (1, 2):
            yield benchmark.Timer(stmt="x + 1", globals={"x": i}, num_threads=threads,
                                  label="wide", sub_label=f"i={i}")
"""


def measured(folder, sha):
    (result,) = [r for r in Store(folder).load_all("testbox", "default") if r.commit.sha == sha]
    return result


def test_shards_cover_every_benchmark_once_and_merge_equals_an_unsharded_run(repo, tmp_path):
    sha = repo.commit("a wider suite", {"benchmarks/bench_wide.py": WIDE})
    repo.regress("run", "HEAD", "--results", str(tmp_path / "all"), check=True)
    everything = measured(tmp_path / "all", sha)
    assert len(everything.results) == 2 + 18 and all(r.ok for r in everything.results)

    shares = []
    for k in (1, 2, 3):
        proc = repo.regress("run", "HEAD", "--shard", f"{k}/3", "--results", str(tmp_path / f"s{k}"), check=True)
        share = measured(tmp_path / f"s{k}", sha)
        assert f"{len(share.results)} measured" in proc.stdout
        shares.append({r.id for r in share.results})
    assert all(shares)  # 20 benchmarks: each of 3 shards gets some
    assert sum(len(s) for s in shares) == 20 and set().union(*shares) == set(everything.by_id())

    merged = tmp_path / "merged"
    proc = repo.regress("merge", *(str(tmp_path / f"s{k}") for k in (1, 2, 3)), "--results", str(merged), check=True)
    assert "merged 3 result files from 3 folders" in proc.stdout
    joined = measured(merged, sha)
    assert {(r.id, r.spec, r.ok, len(r.samples)) for r in joined.results} == {
        (r.id, r.spec, r.ok, len(r.samples)) for r in everything.results
    }
    assert joined.complete and joined.commit == everything.commit

    # A folder holding one shard's share: --skip-existing measures only another shard's.
    partial = tmp_path / "partial"
    repo.regress("merge", str(tmp_path / "s1"), "--results", str(partial), check=True)
    proc = repo.regress("run", "HEAD", "--shard", "2/3", "--skip-existing", "--results", str(partial), check=True)
    assert f"{len(shares[1])} measured" in proc.stdout
    assert set(measured(partial, sha).by_id()) == shares[0] | shares[1]


def test_shard_of_depends_on_identity_alone_and_spreads_evenly():
    ids = [BenchmarkId("label", f"n={i}", "d", 1 + i % 3) for i in range(3000)]
    counts = [sum(shard_of(b, 4) == k for b in ids) for k in (1, 2, 3, 4)]
    assert sum(counts) == 3000 and min(counts) > 600, counts
    assert all(Shard(k, 4).takes(b) == (shard_of(b, 4) == k) for b in ids[:50] for k in (1, 2, 3, 4))
    assert shard_of(BenchmarkId("a", "b", "", 1), 1) == 1


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "x", "1/", "-1/2", "1.5/2"])
def test_bad_shards_are_refused(text):
    with pytest.raises(ValueError, match="K/N"):
        parse(text)


def test_bad_shard_is_one_line(repo):
    for text in ("4/3", "two"):
        proc = repo.regress("run", "HEAD", f"--shard={text}")
        lines = [line for line in proc.stderr.splitlines() if line.startswith("regress:")]
        assert proc.returncode == 2 and len(lines) == 1, proc.stderr
        assert "--shard" in lines[0] and "K/N" in lines[0] and "Traceback" not in proc.stderr


def test_parse():
    assert parse("2/4") == Shard(2, 4) and str(parse(" 1 / 1 ")) == "1/1"
