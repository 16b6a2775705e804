"""User mistakes the layout move fixed: each one line naming the thing and the fix, exit 2."""

from __future__ import annotations

from conftest import PYPROJECT
from test_history import one_error_line


def test_show_of_a_range_is_one_line(repo):
    repo.commit("second", {"README": "x\n"})
    for command in (
        ("show", "HEAD~1..HEAD"),
        ("compare", "HEAD~1..HEAD", "HEAD"),
        ("report", "--baseline", "HEAD~1..HEAD"),
        ("check", "HEAD~1..HEAD"),
    ):
        line = one_error_line(repo.regress(*command))
        assert "'HEAD~1..HEAD' is a range of 1 commit" in line and "takes one commit, like HEAD" in line, line
        assert command[0] in line or "--baseline" in line


# Every range-checked key: a value its flag refuses is refused in [tool.regress] too, naming the key.
BAD_SETTINGS = [
    ("threshold", "-0.5", "must be between 0% and 1000%"),
    ("threshold", "5", "would mean 500%"),
    ("timeout", "-1", "must be positive"),
    ("min_run_time", "0", "must be positive"),
    ("warmup", "-3", "must be 0 or more"),
    ("warmup", "1.5", "is not a whole number"),
    ("min_rounds", "0", "must be at least 1"),
    ("max_rounds", "0", "must be at least 1"),
    ("budget", "0", "must be positive"),
    ("budget", '"lots"', "is not a number"),
    ("machine", "3", "must be a string"),
]


def test_out_of_range_settings_are_refused_naming_the_key(repo, monkeypatch, capsys):
    # The CLI's own entry point in this process (same parsing, dispatch and exit status) for the
    # eleven cases; one of them also through a real subprocess.
    from regress.cli.main import main

    monkeypatch.chdir(repo.path)
    for key, value, why in BAD_SETTINGS:
        kept = "\n".join(line for line in PYPROJECT.splitlines() if not line.startswith(f"{key} ="))
        repo.write("pyproject.toml", kept.replace("[tool.regress]", f"[tool.regress]\n{key} = {value}"))
        code = main(["compare", "HEAD", "HEAD"])
        err = capsys.readouterr().err
        (line,) = [x for x in err.splitlines() if x.startswith("regress:")]
        assert code == 2 and f"'{key}' {why}" in line and "fix it in [tool.regress]" in line, (key, line)
        assert "pyproject.toml" in line and "Traceback" not in err
    line = one_error_line(repo.regress("compare", "HEAD", "HEAD"))
    assert "'machine' must be a string" in line


def test_max_rounds_below_min_rounds_is_refused_and_a_lone_floor_lifts_the_ceiling(repo):
    line = one_error_line(repo.regress("run", "--min-rounds", "5", "--max-rounds", "2"))
    assert "max_rounds (2) is below min_rounds (5)" in line
    flag = one_error_line(repo.regress("run", "--min-rounds", "0"))
    assert "argument --min-rounds: '0' must be at least 1" in flag


EDITED = """
import torch.utils.benchmark as benchmark
from mypkg import work

def bench_work():
    for n in (100, 1000):
        yield benchmark.Timer(stmt="work(n) + 0", globals={"work": work, "n": n},
                              label="work", sub_label=f"n={n}")
"""


def test_a_rerun_after_editing_a_benchmark_says_what_it_replaced(repo):
    from regress.storage.codec import decode
    from regress.storage.store import Store

    repo.regress("run", "HEAD", "--bench", "n=100 ", check=True)
    sha = repo.git("rev-parse", "HEAD")
    store = Store(repo.path / ".regress")
    (old,) = store.load("testbox", "default", sha).results
    assert len(old.samples) == 3
    # Same definition again: the rounds join the stored ones.
    repo.regress("run", "HEAD", "--bench", "n=100 ", check=True)
    (joined,) = store.load("testbox", "default", sha).results
    assert len(joined.samples) == 6 and set(old.samples) <= set(joined.samples)
    # An edited definition under the same name: the new rounds replace the old ones, and the run says so.
    repo.write("benchmarks/bench_work.py", EDITED)
    proc = repo.regress("run", "HEAD", "--bench", "n=100 ", check=True)
    replaced = [line for line in proc.stdout.splitlines() if line.startswith("replaced:")]
    assert len(replaced) == 1, proc.stdout
    assert "work / n=100 [1 thread]" in replaced[0] and "its definition changed" in replaced[0]
    assert "replaced 6 stored rounds of the old" in replaced[0]
    (new,) = store.load("testbox", "default", sha).results
    assert new.spec.stmt == "work(n) + 0" and len(new.samples) == 3
    # The rounds it replaced are not lost: the old file is kept aside, where the line says.
    (kept,) = (repo.path / ".regress" / "testbox" / "default" / "replaced").glob(f"{sha}.*.pkl")
    assert f"the old file is kept as {kept}" in replaced[0]
    (old_rounds,) = decode(kept.read_bytes(), str(kept)).results
    assert old_rounds.spec.stmt == "work(n)" and len(old_rounds.samples) == 6
    assert store.shas("testbox", "default") == [sha]  # not read as another commit


def test_a_bad_fork_server_count_is_one_line(repo):
    line = one_error_line(repo.regress("list", env={"REGRESS_SERVERS": "three"}))
    assert "REGRESS_SERVERS='three'" in line and "unset it" in line
