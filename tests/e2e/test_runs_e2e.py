"""Runs on real repositories: rounds from several processes, paired pushes, same code by tree."""

from __future__ import annotations

from regress.core.config import Config
from regress.storage import code_identity
from regress.storage.memo import Memo
from regress.storage.store import Store


def _stored(repo, sha):
    return Store(repo.path / ".regress").load("testbox", "default", sha)


def test_one_commits_rounds_come_from_more_than_one_process(repo):
    sha = repo.git("rev-parse", "HEAD")
    repo.regress("run", "HEAD", env={"REGRESS_SERVERS": ""}, check=True)  # as users run it: the default pool
    result = _stored(repo, sha)
    (run,) = result.runs
    assert run.kind == "run" and run.fingerprint is not None and run.fingerprint.cpu
    for r in result.results:
        assert len(r.samples) == 3 and {s.run for s in r.samples} == {run.id}
        # Three rounds, three fork servers: no two rounds share a process's luck.
        assert len({s.process for s in r.samples}) == 3, [s.process for s in r.samples]
    assert len({s.process for s in result.reference}) == 3


def test_a_paired_push_stores_both_commits_rounds_under_one_run(repo):
    first = repo.git("rev-parse", "HEAD")
    repo.regress("run", "HEAD", check=True)
    repo.commit("docs", {"README.md": "# mypkg\n"})
    repo.commit("touch the code")
    head = repo.git("rev-parse", "HEAD")
    proc = repo.regress("run", "HEAD", "--paired", check=True)
    assert f"paired with {first[:10]}" in proc.stdout  # the newest measured ancestor, not the docs commit
    old, new = _stored(repo, first), _stored(repo, head)
    (pair,) = new.runs
    assert len(old.runs) == 2 and pair.id in {r.id for r in old.runs}
    for r in new.results:
        mine = [s for s in old.by_id()[r.id].samples if s.run == pair.id]
        assert len(mine) == 3 and len(r.samples) == 3
    # compare judges the pair from that run alone, and says so.
    out = repo.regress("compare", first, head, "--format", "json", check=True).stdout
    assert '"reason"' in out and "paired in 1 run" in out
    # Measured by separate runs only: the allowance is named instead.
    repo.commit("another change")
    repo.regress("run", "HEAD", check=True)
    apart = repo.regress("compare", first, "HEAD", "--format", "json", check=True).stdout
    assert "separate runs: allowance" in apart


def test_same_code_is_the_import_paths_tree_plus_the_build_inputs(repo):
    base = repo.git("rev-parse", "HEAD")
    readme = repo.commit("readme", {"README.md": "# docs only\n"})
    bench = repo.commit(
        "benchmarks", {"benchmarks/bench_work.py": repo.path.joinpath("benchmarks/bench_work.py").read_text() + "\n"}
    )
    comment = repo.commit(
        "comment", {"src/mypkg/__init__.py": repo.path.joinpath("src/mypkg/__init__.py").read_text() + "# a comment\n"}
    )
    cfg = Config(root=repo.path)
    ids = code_identity.for_config(cfg, [base, readme, bench, comment], Memo(None))
    assert ids[base] == ids[readme] == ids[bench]  # docs and today's benchmarks are not the measured code
    assert ids[comment] != ids[bench]  # a comment changes the module's tree (and may change its bytecode)
    # With a build_command, what it reads is code too: a change to a build input is not the same code.
    setup = repo.commit("build flags", {"setup.cfg": "[build]\nflags = -O3\n"})
    built = Config(root=repo.path, build_command="true", build_inputs=("setup.cfg", "src"))
    with_build = code_identity.for_config(built, [comment, setup], Memo(None))
    assert with_build[comment] != with_build[setup]
    assert code_identity.for_config(cfg, [comment, setup], Memo(None)) == {comment: ids[comment], setup: ids[comment]}
    # compare says so on the command line.
    repo.regress("run", base, readme, check=True)
    out = repo.regress("compare", base, readme, "--format", "json", check=True).stdout
    assert "same code as" in out and '"verdict": "regression"' not in out


def test_code_at_the_repository_root_leaves_out_documents_and_examples(tmp_path):
    from conftest import Repo

    r = Repo(tmp_path / "flat")
    r.path.mkdir()
    r.git("init", "-q", "-b", "main")
    base = r.commit("pkg", {"flatpkg/__init__.py": "X = 1\n", "README.md": "a\n", "examples/demo.py": "print(1)\n"})
    docs = r.commit("docs", {"README.md": "b\n", "examples/demo.py": "print(2)\n", "docs/index.rst": "x\n"})
    code = r.commit("code", {"flatpkg/__init__.py": "X = 2\n"})
    ids = code_identity.for_config(Config(root=r.path), [base, docs, code], Memo(None))
    assert ids[base] == ids[docs] != ids[code]
