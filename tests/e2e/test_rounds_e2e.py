"""The round engine end to end: real git repositories, the real CLI, real torch timing."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from conftest import cli_env, regress_cmd

from regress.storage.store import Store


def three_commits(repo) -> list[str]:
    shas = [repo.git("rev-parse", "HEAD")]
    for i in (2, 3):
        shas.append(repo.commit(f"change {i}", {"src/mypkg/note.py": f"NOTE = {i}\n"}))
    return shas


def stored(repo, sha):
    return Store(repo.path / ".regress").load("testbox", "default", sha)


def test_a_range_is_measured_round_by_round_alternating_direction(repo):
    shas = three_commits(repo)
    proc = repo.regress("run", *shas, check=True)
    # Round k of every commit starts before round k+1 of any: the samples' start times say so.
    starts = {sha: sorted(s.started_at for r in stored(repo, sha).results for s in r.samples) for sha in shas}
    per_round = {
        sha: [times[i * 2 : i * 2 + 2] for i in range(3)] for sha, times in starts.items()
    }  # 2 benchmarks a round
    for k in range(2):
        assert max(t for sha in shas for t in per_round[sha][k]) < min(t for sha in shas for t in per_round[sha][k + 1])
    # Round 1 oldest first, round 2 newest first, round 3 oldest first again.
    for k, order in enumerate([shas, shas[::-1], shas]):
        firsts = [per_round[sha][k][0] for sha in order]
        assert firsts == sorted(firsts), f"round {k + 1} not in order {order}"
    for sha in shas:
        result = stored(repo, sha)
        assert result.complete and {len(r.samples) for r in result.results} == {3}
        assert len(result.reference) == 3  # the reference workload, once a round
        assert (result.settings.min_rounds, result.settings.max_rounds) == (3, 3)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("[round")]
    assert len(lines) == 9 and lines[0].startswith("[round 1, 1/3]") and lines[3].startswith("[round 2, 1/3]")
    assert "left)" in lines[-1]
    assert "(3 rounds each)" in proc.stdout


def test_a_killed_range_keeps_its_rounds_and_a_rerun_tops_up_the_rest(repo):
    shas = three_commits(repo)
    cmd = regress_cmd("run", *shas, "--min-run-time", "0.3")
    proc = subprocess.Popen(cmd, cwd=repo.path, env=cli_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    results = repo.path / ".regress" / "testbox" / "default"
    deadline = time.monotonic() + 240
    # Kill it once the second round has started somewhere: some rounds saved, others not.
    while time.monotonic() < deadline:
        files = list(results.glob("*.pkl")) if results.is_dir() else []
        if len(files) == 3 and any(
            len(r.samples) >= 2
            for f in files
            for r in Store(repo.path / ".regress").load("testbox", "default", f.stem).results
        ):
            break
        time.sleep(0.02)
    else:
        raise AssertionError("the run never reached its second round")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = {sha: stored(repo, sha) for sha in shas}
    kept = {sha: {s.started_at for r in res.results for s in r.samples} for sha, res in before.items()}
    assert all(not res.complete for res in before.values())
    assert sum(len(v) for v in kept.values()) >= 2 * 3 + 2  # round 1 of all three and part of round 2
    # The rerun measures only what is missing: every benchmark ends with exactly 3 rounds.
    again = repo.regress("run", "--skip-existing", *shas, "--min-run-time", "0.3", check=True)
    for sha in shas:
        result = stored(repo, sha)
        assert result.complete
        assert {len(r.samples) for r in result.results} == {3}, sha
        assert kept[sha] <= {s.started_at for r in result.results for s in r.samples}
    # Nothing is left running: no worktree, no worker.
    assert "regress-" not in repo.git("worktree", "list")
    assert "[round" in again.stderr
    # A third run with --skip-existing has nothing to do.
    done = repo.regress("run", "--skip-existing", *shas, check=True)
    assert "3 commits already measured" in done.stdout


def test_default_rounds_adapt_and_rounds_after_the_first_are_cheap(repo):
    # No round settings: the adaptive defaults (5 rounds at least).
    repo.write(
        "pyproject.toml",
        repo.path.joinpath("pyproject.toml").read_text().replace("min_rounds = 3\nmax_rounds = 3\n", ""),
    )
    repo.git("commit", "-qam", "default rounds")
    trace = repo.path / "trace.jsonl"
    started = time.monotonic()
    repo.regress("run", env={"REGRESS_TRACE": str(trace), "REGRESS_SERVERS": ""}, check=True)  # the default pool
    wall = time.monotonic() - started
    result = stored(repo, repo.git("rev-parse", "HEAD"))
    rounds = [len(r.samples) for r in result.results]
    assert min(rounds) >= 5 and max(rounds) <= 15
    assert (result.settings.min_rounds, result.settings.max_rounds, result.settings.budget) == (5, 15, 25.0)
    # Every round is a worker of its own; the servers that fork them (three, in turn) imported torch once each,
    # all three together before the first round.
    import json

    from regress.measure.worker_process import SERVERS

    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert sum(e["event"] == "worker_start" for e in events) == max(rounds)
    assert [e["servers"] for e in events if e["event"] == "server_started"] == [SERVERS]
    # A listing measures nothing: it starts the one server it forks from.
    listed = repo.path / "list.jsonl"
    repo.regress("list", env={"REGRESS_TRACE": str(listed)}, check=True)
    events = [json.loads(line) for line in listed.read_text().splitlines()]
    assert [e["servers"] for e in events if e["event"] == "server_started"] == [1]
    # Generous: a round of two 10 ms benchmarks plus the reference must not cost an interpreter start each.
    assert wall < 2.0 * max(rounds) + 10
