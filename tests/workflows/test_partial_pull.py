"""`regress results pull --near REV` on a results branch of many pushes: a few files, not the whole history.

Real git: a project of COMMITS commits, a bare origin serving partial clones
(as GitHub does), a results branch of one push per commit
(`scripts/branch_history.py`), and the bytes of every pack git received,
counted by git's own trace (GIT_TRACE_PACKFILE).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import factories
import numpy as np
import pytest
from conftest import cli_env, regress_cmd

from regress.storage.branch_files import blob_id
from regress.storage.codec import encode
from regress.storage.store import Store
from scripts.branch_history import fetched_bytes, write_branch

COMMITS = 150
BENCHMARKS = 12


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=cli_env(), check=True, capture_output=True, text=True
    ).stdout.strip()


def result_of(sha: str, k: int):
    rng = np.random.default_rng(k)  # noise, as measured times are: blobs that do not compress away
    return factories.commit(
        sha,
        *(
            factories.bench(samples=factories.rounds_of(rng.uniform(1e-3, 2e-3, 8).tolist(), blocks=30), sub=f"b{b}")
            for b in range(BENCHMARKS)
        ),
        when=k,
    )


@pytest.fixture(scope="module")
def origin(tmp_path_factory) -> tuple[Path, list[str]]:
    """A bare origin: COMMITS code commits on main, and a results branch holding a result file for every one."""
    root = tmp_path_factory.mktemp("partial")
    work = root / "code"
    git(root, "init", "-q", "-b", "main", str(work))
    (work / ".gitignore").write_text(".regress/\n")
    shas = []
    for k in range(COMMITS):
        (work / "counter.txt").write_text(f"{k}\n")
        git(work, "add", "-A")
        git(work, "commit", "-q", "-m", f"commit {k}")
        shas.append(git(work, "rev-parse", "HEAD"))
    bare = root / "origin.git"
    git(root, "clone", "-q", "--bare", str(work), str(bare))
    git(bare, "config", "uploadpack.allowFilter", "true")
    files = ((f"box/default/{sha}.pkl", encode(result_of(sha, k))) for k, sha in enumerate(shas))
    assert write_branch(bare, files) == COMMITS + 1
    return bare, shas


def code_clone(bare: Path, path: Path) -> Path:
    """The code's branch alone, as the push job's checkout (partial) holds it."""
    git(path.parent, "clone", "-q", "--single-branch", "--branch", "main", f"file://{bare}", str(path))
    return path


def pull(clone: Path, *args: str) -> tuple[int, str]:
    size, proc = fetched_bytes(regress_cmd("results", "pull", *args), clone, cli_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return size, proc.stdout


def test_pull_near_head_fetches_a_few_files_not_the_history(origin, tmp_path):
    bare, shas = origin
    full_bytes, out = pull(code_clone(bare, tmp_path / "full"))
    assert f"{COMMITS} result files, {COMMITS} changed" in out
    near = code_clone(bare, tmp_path / "near")
    git(near, "checkout", "-q", shas[-2])  # a push of the commit before the newest: its own file is there too
    near_bytes, out = pull(near, "--near", "HEAD")
    # The commit's own file and its two newest measured ancestors', nothing else.
    held = sorted(Store(near / ".regress").result_files())
    assert held == sorted(f"box/default/{sha}.pkl" for sha in shas[-4:-1]), out
    assert Store(near / ".regress").load("box", "default", shas[-3]) == result_of(shas[-3], COMMITS - 3)
    assert "3 result files near HEAD, 3 changed" in out
    # Three files of 150 (2%), plus the tip's trees: at most 5% of the full fetch's bytes.
    assert 0 < near_bytes <= 0.05 * full_bytes, (near_bytes, full_bytes)

    # Pushing from the partial clone merges with the branch and fetches only what it merges with.
    extra = factories.commit(shas[-2], factories.bench(samples=factories.rounds_of([5e-3]), sub="new"), when=1)
    Store(near / ".regress").absorb(extra)
    push_bytes, proc = fetched_bytes(regress_cmd("results", "push"), near, cli_env())
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "pushed 1 result file" in proc.stdout
    assert push_bytes <= 0.05 * full_bytes, (push_bytes, full_bytes)
    branch = Path(tmp_path / "check")
    git(tmp_path, "clone", "-q", "--branch", "regress-results", str(bare), str(branch))
    pushed = Store(branch).load("box", "default", shas[-2])
    assert {r.id.sub_label for r in pushed.results} == {f"b{b}" for b in range(BENCHMARKS)} | {"new"}
    assert len(Store(branch).result_files()) == COMMITS  # nothing lost, nothing else rewritten

    # A plain pull later in the same clone brings the rest, in one request.
    rest_bytes, out = pull(near)
    assert f"{COMMITS} result files, {COMMITS - 3} changed" in out
    assert len(Store(near / ".regress").result_files()) == COMMITS
    assert rest_bytes <= 1.05 * full_bytes


def test_pull_near_a_commit_nothing_measured_restores_nothing(origin, tmp_path):
    bare, _ = origin
    clone = code_clone(bare, tmp_path / "c")
    git(clone, "checkout", "-q", "--orphan", "other")
    git(clone, "commit", "-q", "--allow-empty", "-m", "unrelated")
    _, out = pull(clone, "--near", "HEAD")
    assert "0 result files near HEAD, 0 changed" in out
    assert Store(clone / ".regress").result_files() == {}


def test_pull_near_a_bad_revision_is_one_line(origin, tmp_path):
    bare, _ = origin
    clone = code_clone(bare, tmp_path / "c")
    proc = subprocess.run(
        regress_cmd("results", "pull", "--near", "nosuchrev"), cwd=clone, env=cli_env(), capture_output=True, text=True
    )
    lines = [line for line in proc.stderr.splitlines() if line.startswith("regress:")]
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "nosuchrev" in lines[0]


def _cli(clone: Path, *args: str) -> str:
    proc = subprocess.run(regress_cmd(*args), cwd=clone, env=cli_env(), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_a_publish_pull_with_its_summary_fetches_the_new_files_and_reads_the_rest_when_needed(origin, tmp_path):
    """The publish job restores the summary from its cache and pulls `--partial`: it fetches the one changed
    file, not the other 149, and the site, `regressions` and `compare` come out as from a full pull."""
    source, shas = origin
    bare = tmp_path / "origin.git"
    subprocess.run(["cp", "-r", str(source), str(bare)], check=True)  # this test pushes: its own origin
    last = code_clone(bare, tmp_path / "last")  # the last publish job: a full pull, a site built
    full_bytes, _ = pull(last)
    # A pulled file is the branch's blob as it is (not decoded and written again), so a summary of
    # these files knows each blob id.
    listed = git(bare, "ls-tree", "-r", "regress-results").splitlines()
    on_branch = {line.split("\t")[1]: line.split()[2] for line in listed if line.endswith(".pkl")}
    here = Store(last / ".regress")
    assert {rel: blob_id(here.raw(rel)) for rel in here.result_files()} == on_branch
    _cli(last, "report", "--out", "site")
    cached = (last / ".regress" / ".summary.sqlite").read_bytes()  # what its cache keeps

    pusher = code_clone(bare, tmp_path / "pusher")  # a push job re-measures the newest commit
    pull(pusher, "--near", "HEAD")
    Store(pusher / ".regress").absorb(
        factories.commit(shas[-1], factories.bench(samples=factories.rounds_of([5e-3] * 3), sub="new"), when=2)
    )
    assert "pushed 1 result file" in _cli(pusher, "results", "push")

    publish = code_clone(bare, tmp_path / "publish")
    (publish / ".regress").mkdir()
    (publish / ".regress" / ".summary.sqlite").write_bytes(cached)
    got, out = pull(publish, "--partial")
    assert f"{COMMITS} result files, 1 changed" in out and f"{COMMITS - 1} left on the branch" in out, out
    assert sorted(Store(publish / ".regress").result_files()) == [f"box/default/{shas[-1]}.pkl"]
    assert 0 < got <= 0.05 * full_bytes, (got, full_bytes)

    # Every file is still one of the folder's: listed, and read through git when something needs it.
    store = Store(publish / ".regress")
    assert store.shas("box", "default") == sorted(shas)
    assert store.load("box", "default", shas[-5]) == result_of(shas[-5], COMMITS - 5)

    pull(last)  # the full pull, for the same answers
    for args in (
        ("regressions", "--machine", "box", "--format", "json"),
        ("compare", shas[-3], shas[-1], "--machine", "box", "--format", "json"),
    ):
        assert _cli(publish, *args) == _cli(last, *args), args
    site_bytes, proc = fetched_bytes(regress_cmd("report", "--out", "site"), publish, cli_env())
    assert proc.returncode == 0, proc.stderr
    assert site_bytes <= 0.05 * full_bytes, (site_bytes, full_bytes)  # the summary held what the site needs
    _cli(last, "report", "--out", "site")
    for name in ("regressions.json",):
        assert (publish / "site" / name).read_text() == (last / "site" / name).read_text()

    # A shard that measured a file left on the branch merges with the branch's copy, and is pushed.
    extra = factories.commit(shas[-4], factories.bench(samples=factories.rounds_of([4e-3] * 3), sub="more"), when=3)
    assert store.absorb(extra)[0]
    merged = store.load("box", "default", shas[-4])
    assert {r.id.sub_label for r in merged.results} == {f"b{b}" for b in range(BENCHMARKS)} | {"more"}
    assert "pushed 1 result file" in _cli(publish, "results", "push")
    check = tmp_path / "check"
    git(tmp_path, "clone", "-q", "--branch", "regress-results", str(bare), str(check))
    assert Store(check).load("box", "default", shas[-4]) == merged
    assert len(Store(check).result_files()) == COMMITS


def test_a_partial_pull_without_a_summary_fetches_every_file_of_the_tip(origin, tmp_path):
    bare, _ = origin
    clone = code_clone(bare, tmp_path / "c")
    _, out = pull(clone, "--partial")
    assert f"{COMMITS} result files, {COMMITS} changed" in out and "0 left on the branch" in out, out
    assert len(Store(clone / ".regress").result_files()) == COMMITS
    proc = subprocess.run(
        regress_cmd("results", "pull", "--partial", "--near", "HEAD"),
        cwd=clone,
        env=cli_env(),
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "--near and --partial" in proc.stderr
