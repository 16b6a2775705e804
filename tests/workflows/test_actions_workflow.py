"""The workflow files: they lint clean, and their own steps run end to end on a real repository.

tests/gha.py plays the runner: the `run:` lines of .github/workflows/benchmarks.yml
are executed as written, against a real git repository with a bare "origin".
"""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

import gha
import pytest
import slowed_history
from conftest import SRC_ROOT, cli_env
from github_server import FakeGitHub

from regress.storage.codec import decode
from regress.storage.store import Store

MACHINE = "gha-ubuntu-latest"
WORKFLOW = gha.load("benchmarks.yml")
COMMENT_WORKFLOW = gha.load("benchmarks-comment.yml")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=cli_env(), check=True, capture_output=True, text=True
    ).stdout.strip()


def test_workflows_pass_actionlint(actionlint):
    files = sorted(str(p) for p in gha.WORKFLOWS.glob("*.yml"))
    assert {Path(f).name for f in files} >= {"ci.yml", "benchmarks.yml", "benchmarks-comment.yml"}
    proc = subprocess.run([*actionlint, *files], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_actionlint_finds_mistakes(actionlint, tmp_path):
    """The linter really runs: a broken workflow fails it."""
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.shaa }}\n"
    )
    proc = subprocess.run([*actionlint, str(bad)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and 'property "shaa" is not defined' in proc.stdout, proc.stdout + proc.stderr


def test_permissions_are_the_least_each_job_needs():
    assert WORKFLOW["permissions"] == {"contents": "read"}
    jobs = WORKFLOW["jobs"]
    assert jobs["publish"]["permissions"] == {"contents": "write"}
    assert jobs["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    assert jobs["notify"]["permissions"] == {"contents": "read", "issues": "write"}
    assert "permissions" not in jobs["measure"] and "permissions" not in jobs["compare"]
    comment = COMMENT_WORKFLOW
    assert comment["permissions"] == {}
    assert comment["jobs"]["comment"]["permissions"] == {
        "actions": "read",
        "contents": "read",
        "pull-requests": "write",
    }
    # The compare job runs the pull request's code: it gets no token to write with.
    assert all("GITHUB_TOKEN" not in s.get("env", {}) for s in jobs["compare"]["steps"])
    assert gha.load("ci.yml")["permissions"] == {"contents": "read"}
    assert [s.get("uses", "").split("@")[0] for s in jobs["deploy"]["steps"]] == ["actions/deploy-pages"]
    uses = {s.get("uses", "").split("@")[0] for s in jobs["publish"]["steps"]}
    assert {"actions/configure-pages", "actions/upload-pages-artifact"} <= uses


def test_the_comment_workflow_never_runs_the_pull_requests_code():
    """workflow_run has a token that writes: it checks out only the default branch and reads the artifact as data."""
    assert gha.triggers(COMMENT_WORKFLOW) == {"workflow_run": {"workflows": [WORKFLOW["name"]], "types": ["completed"]}}
    steps = COMMENT_WORKFLOW["jobs"]["comment"]["steps"]
    checkouts = [s for s in steps if s.get("uses", "").startswith("actions/checkout")]
    assert checkouts and all(
        "ref" not in s.get("with", {}) and "repository" not in s.get("with", {}) for s in checkouts
    )
    text = (gha.WORKFLOWS / "benchmarks-comment.yml").read_text()
    assert text.count("workflow_run.head_sha") == 1  # only as --head-sha, to refuse a file for another commit
    (download,) = [s for s in steps if s.get("uses", "").startswith("actions/download-artifact")]
    assert download["with"]["run-id"] == "${{ github.event.workflow_run.id }}"
    runs = [s["run"] for s in steps if "run" in s and s.get("id") != "install"]
    assert runs == ['regress comment regress-comment/comment.json --head-sha "$HEAD_SHA"']


@pytest.fixture
def origin(repo, tmp_path) -> Path:
    bare = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo.path), str(bare))
    repo.git("remote", "add", "origin", str(bare))
    return bare


def branch_files(origin: Path) -> dict[str, str]:
    out = git(origin, "ls-tree", "-r", "regress-results")
    return {line.split("\t")[1]: line.split()[2] for line in out.splitlines()}


def on_branch(origin: Path, sha: str):
    data = subprocess.run(
        ["git", "show", f"regress-results:{MACHINE}/default/{sha}.pkl"], cwd=origin, capture_output=True, check=True
    ).stdout
    return decode(data, "branch")


def push_event(origin: Path, tmp_path: Path, sha: str, tag: str) -> tuple[gha.Runner, gha.Context]:
    """A push of `sha`: every shard of the measure job; returns the runner for the publish job."""
    runner = gha.Runner(origin, tmp_path / f"artifacts-{tag}", gha.regress_shim(tmp_path / "bin"))
    runner.artifacts.mkdir()
    shards = WORKFLOW["jobs"]["measure"]["strategy"]["matrix"]["shard"]
    assert len(shards) >= 2
    for k in shards:
        ctx = gha.Context(
            {"github.event_name": "push", "github.sha": sha, "matrix.shard": k, "strategy.job-total": len(shards)}
        )
        job = runner.run_job(WORKFLOW, "measure", ctx, tmp_path / f"{tag}-measure-{k}")
        assert job.ok, job.log()
    return runner, gha.Context({"github.event_name": "push", "github.sha": sha, "github.run_id": f"run-{tag}"})


def test_push_path_end_to_end(repo, origin, tmp_path):
    first = repo.git("rev-parse", "HEAD")
    runner, ctx = push_event(origin, tmp_path, first, "c1")
    assert sorted(p.name for p in runner.artifacts.iterdir()) == ["regress-shard-1", "regress-shard-2"]
    publish = runner.run_job(WORKFLOW, "publish", ctx, tmp_path / "c1-publish")
    assert publish.ok, publish.log()
    # The results branch was created and holds both shards' benchmarks of the commit, once each.
    assert set(branch_files(origin)) == {"README.md", f"{MACHINE}/default/{first}.pkl"}
    measured = on_branch(origin, first)
    assert {r.id.sub_label for r in measured.results} == {"n=100", "n=1000"}
    assert all(r.ok and len(r.samples) == 3 for r in measured.results)  # the project's plan: 3 rounds
    assert publish.pages is not None and (publish.pages / "index.html").is_file()
    # Pages deploys what publish built, even when a shard's benchmarks failed (its job failed).
    deploy_if = WORKFLOW["jobs"]["deploy"]["if"]
    assert gha.condition(deploy_if, gha.Context({**ctx, "needs.publish.result": "success"}))
    assert not gha.condition(deploy_if, gha.Context({**ctx, "needs.publish.result": "failure"}))
    first_blob = branch_files(origin)[f"{MACHINE}/default/{first}.pkl"]

    # Two more pushes whose publish jobs save at the same moment.
    heads = []
    for n in (2, 3):
        repo.commit(f"change {n}", {f"notes/{n}.txt": f"{n}\n"})
        heads.append(repo.git("rev-parse", "HEAD"))
    repo.git("push", "-q", "origin", "HEAD:main")
    runs = [push_event(origin, tmp_path, sha, f"c{n}") for n, sha in zip((2, 3), heads)]
    hook = origin / "hooks" / "pre-receive"  # holds each push until two have arrived: both start from one tip
    hook.write_text(
        "#!/bin/sh\n"
        f'touch "{tmp_path}/arrived.$$"\n'
        "i=0\n"
        f'while [ "$(ls "{tmp_path}" | grep -c "^arrived")" -lt 2 ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n'
        "cat >/dev/null\n"
    )
    hook.chmod(0o755)
    jobs: dict[int, gha.JobRun] = {}

    def publish_job(i: int) -> None:
        runner, ctx = runs[i]
        jobs[i] = runner.run_job(WORKFLOW, "publish", ctx, tmp_path / f"c{i + 2}-publish")

    threads = [threading.Thread(target=publish_job, args=(i,)) for i in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert all(jobs[i].ok for i in (0, 1)), jobs[0].log() + jobs[1].log()
    saves = [jobs[i].step("Save to the results branch") for i in (0, 1)]
    assert sum("trying again" in s.stderr for s in saves) == 1, [s.stderr for s in saves]
    files = branch_files(origin)
    assert set(files) == {"README.md"} | {f"{MACHINE}/default/{sha}.pkl" for sha in [first, *heads]}
    # Each push measured the commit before it again, in its own run: the first commit's file
    # gained those runs' rounds (both pushes paired with it: neither saw the other's results).
    assert files[f"{MACHINE}/default/{first}.pkl"] != first_blob
    paired = on_branch(origin, first)
    # Two shards a push, each its own run: 3 pushes x 2 shards; 3 rounds each of its own, two pairs.
    assert len(paired.runs) == 6 and all(len(r.samples) == 9 for r in paired.results)
    for sha in heads:
        own = {r.id for r in on_branch(origin, sha).runs}
        assert len(own) == 2 and own <= {r.id for r in paired.runs}  # measured together with the first commit
    # The job that retried has everyone's results in its folder, so its site shows all three commits.
    (late,) = [jobs[i] for i in (0, 1) if "trying again" in saves[i].stderr]
    folder = [tmp_path / f"c{i + 2}-publish" for i in (0, 1) if jobs[i] is late][0]
    assert set(Store(folder / ".regress").shas(MACHINE, "default")) == {first, *heads}
    assert late.pages is not None
    site_text = "".join(
        p.read_text(errors="replace")
        for p in late.pages.rglob("*")
        if p.is_file() and p.suffix in (".html", ".js", ".json") and "assets" not in p.parts
    )
    assert all(sha in site_text for sha in [first, *heads])
    # Both publish jobs restored the first one's site and summary (actions/cache) and built on them.
    for i in (0, 1):
        restored = jobs[i].step("Restore the last site built and the results summary").stdout
        assert restored == "Cache restored from key: regress-site-run-c1", restored
        assert "kept unchanged" in jobs[i].step("Build the site").stdout


SLOW = """
def work(n):
    total = 0
    for i in range(n * 20):
        total += i
    return total
"""


def pr_context(base_tip: str, head: str, action: str = "synchronize", label: str = "") -> gha.Context:
    return gha.Context(
        {
            "github.event_name": "pull_request",
            "github.sha": head,
            "github.event.action": action,
            "github.event.label.name": label,
            "github.event.pull_request.head.sha": head,
            "github.event.pull_request.base.sha": base_tip,
        }
    )


def pr_event(path: Path, base_tip: str, head: str, labels: list[str], action: str = "synchronize") -> Path:
    """The event payload GitHub writes to $GITHUB_EVENT_PATH for a pull request."""
    path.write_text(
        json.dumps(
            {
                "action": action,
                "number": 7,
                "pull_request": {
                    "base": {"sha": base_tip, "ref": "main"},
                    "head": {"sha": head},
                    "labels": [{"name": n} for n in labels],
                },
            }
        )
    )
    return path


def comment_context(main_sha: str, head: str, run_id: int) -> gha.Context:
    """The workflow_run event benchmarks-comment.yml gets once a pull request's run has finished."""
    return gha.Context(
        {
            "github.event_name": "workflow_run",
            "github.sha": main_sha,  # workflow_run runs on the default branch
            "github.token": "write-token",
            "github.event.workflow_run.event": "pull_request",
            "github.event.workflow_run.id": run_id,
            "github.event.workflow_run.head_sha": head,
            "github.event.workflow_run.head_branch": "docs",
            "github.event.workflow_run.head_repository.full_name": "fork/proj",
        }
    )


def post_comment(origin, tmp_path, fake, runner, main_sha, head, tag) -> gha.JobRun:
    """benchmarks-comment.yml's job for the run whose artifacts `runner` holds."""
    poster = gha.Runner(
        origin,
        tmp_path / f"artifacts-post-{tag}",
        runner.bin_dir,
        github_env={k: v for k, v in fake.env().items() if k != "GITHUB_TOKEN"},
        other_runs={"4242": runner.artifacts},
    )
    job = poster.run_job(COMMENT_WORKFLOW, "comment", comment_context(main_sha, head, 4242), tmp_path / f"post-{tag}")
    assert job.ok, job.log()
    return job


def test_pull_request_path_end_to_end(repo, origin, tmp_path):
    # The test project's fixed plan of three rounds a side (the differ's least for a
    # level) keeps the test short; a real project gets the adaptive default. A 50%
    # threshold and longer rounds: the docs-only change must never fail, however busy the machine.
    workflow = WORKFLOW
    settings = repo.path.joinpath("pyproject.toml").read_text().replace("min_run_time = 0.01", "min_run_time = 0.05")
    repo.commit("settings", {"pyproject.toml": settings + "threshold = 0.5\n"})
    branch_point = repo.git("rev-parse", "HEAD")
    repo.git("checkout", "-q", "-b", "docs")
    fine = repo.commit("docs only", {"README.md": "# mypkg\n"})
    repo.git("checkout", "-q", "main")
    repo.git("checkout", "-q", "-b", "slow")
    slow = repo.commit("make work 20x slower", {"src/mypkg/__init__.py": SLOW})
    repo.git("checkout", "-q", "main")
    base_tip = repo.commit("main moves on", {"notes.txt": "later\n"})  # the event's base.sha is not the merge base
    repo.git("push", "-q", "origin", "main", "docs", "slow")
    runner = gha.Runner(origin, tmp_path / "artifacts", gha.regress_shim(tmp_path / "bin"))
    step = "Compare the head with the merge base"

    # The push path's jobs never run for a pull request; a label other than the OK one runs nothing.
    jobs = workflow["jobs"]
    assert not any(gha.condition(jobs[j].get("if"), pr_context(base_tip, fine)) for j in ("measure", "publish"))
    assert not gha.condition(jobs["compare"]["if"], pr_context(base_tip, fine, "labeled", "documentation"))
    assert not gha.condition(jobs["compare"]["if"], gha.Context({"github.event_name": "push", "github.sha": fine}))

    ok = runner.run_job(
        workflow,
        "compare",
        pr_context(base_tip, fine),
        tmp_path / "pr-docs",
        pr_event(tmp_path / "docs.json", base_tip, fine, []),
    )
    assert ok.ok, ok.log()
    assert ok.summary.startswith("### regress:") and "| benchmark |" in ok.summary, ok.log()
    assert f"base `{branch_point[:10]}` settings → head `{fine[:10]}` docs only" in ok.summary, ok.summary
    assert f"where the head branched off `{base_tip[:10]}`" in ok.summary and "**regression**" not in ok.summary, (
        ok.summary
    )
    assert ok.step(step).stderr.count("round ") == 6, ok.log()  # base and head, in turn, three rounds each
    # The comment: an artifact of the compare job, posted by benchmarks-comment.yml with its own token.
    assert (runner.artifacts / "regress-comment" / "comment.json").is_file()
    main_sha = git(origin, "rev-parse", "main")
    with FakeGitHub() as fake:
        fake.state.add_pull(7, fine)
        posted = post_comment(origin, tmp_path, fake, runner, main_sha, fine, "docs")
        assert "comment created on pull request #7" in posted.step("Post or update the comment").stdout
        (first,) = fake.state.thread(7)
        assert first["body"].startswith("**regress: no significant change"), first["body"]
        fake.state.add_pull(7, slow)  # the pull request is pushed to: its run for `fine` is out of date
        stale = post_comment(origin, tmp_path, fake, runner, main_sha, fine, "stale")
        assert "not posted" in stale.step("Post or update the comment").stderr and fake.state.thread(7) == [first]
        comment_state = fake.state

    pr_dir = tmp_path / "pr-slow"
    bad = runner.run_job(
        workflow,
        "compare",
        pr_context(base_tip, slow),
        pr_dir,
        pr_event(tmp_path / "slow.json", base_tip, slow, ["documentation"]),
    )
    assert bad.step(step).returncode == 1, bad.log()
    assert all(s.returncode == 0 for s in bad.steps if s.name != step), bad.log()
    assert (
        "**regression**" in bad.summary and "this check fails" in bad.summary and "perf-regression-ok" in bad.summary
    ), bad.summary
    assert "significant regression" in bad.step(step).stderr, bad.log()
    with FakeGitHub(comment_state) as fake:  # the same pull request: its one comment is updated
        posted = post_comment(origin, tmp_path, fake, runner, main_sha, slow, "slow")
        assert "comment updated on pull request #7" in posted.step("Post or update the comment").stdout
        (updated,) = fake.state.thread(7)
        assert updated["id"] == first["id"] and updated["body"].startswith("**regress: 2 benchmarks slower")
    # A run whose check was skipped left no comment: the poster has nothing to do, and says nothing.
    empty = gha.Runner(origin, tmp_path / "artifacts-none", runner.bin_dir)
    empty.artifacts.mkdir()
    with FakeGitHub() as fake:
        quiet = post_comment(origin, tmp_path, fake, empty, main_sha, slow, "none")
        assert quiet.step("Post or update the comment").skipped and fake.state.log == []

    # The label is added: the same check passes, and the summary still shows the slowdown.
    again = runner.rerun_step(
        workflow,
        "compare",
        step,
        pr_context(base_tip, slow, "labeled", "perf-regression-ok"),
        pr_dir,
        pr_event(tmp_path / "ok.json", base_tip, slow, ["documentation", "perf-regression-ok"], "labeled"),
    )
    assert again.returncode == 0, again.stdout + again.stderr
    assert "**regression**" in again.summary and "accepted by the `perf-regression-ok` label" in again.summary, (
        again.summary
    )


def test_check_mistakes_are_one_line(repo, tmp_path):
    def error(proc) -> str:
        lines = [line for line in proc.stderr.splitlines() if line.startswith("regress:")]
        assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
        return lines[0]

    assert "already part of main: no changes to check" in error(repo.regress("check", "main"))
    assert "unknown revision 'nope'" in error(repo.regress("check", "nope"))
    (tmp_path / "event.json").write_text("{not json")
    line = error(repo.regress("check", "main", env={"GITHUB_EVENT_PATH": str(tmp_path / "event.json")}))
    assert "cannot read the GitHub event payload" in line


def test_readme_shows_the_workflow_as_it_is():
    """Users copy the README's workflow: it must be the tested file, to the byte."""
    readme = (SRC_ROOT / "README.md").read_text()
    section = readme[readme.index("## Use regress in your project") :]
    block = section[section.index("```yaml\n") + len("```yaml\n") :]
    assert block[: block.index("```\n")] == (gha.WORKFLOWS / "benchmarks.yml").read_text()
    second = block[block.index("```yaml\n") + len("```yaml\n") :]
    assert second[: second.index("```\n")] == (gha.WORKFLOWS / "benchmarks-comment.yml").read_text()
    for needed in (
        "pages: write",
        "id-token: write",
        "contents: write",
        "issues: write",
        "pull-requests: write",
        "actions: read",
        "workflow_run",
        "perf-regression-ok",
        "gha-ubuntu-latest",
    ):
        assert needed in section


def notify_context(sha: str) -> gha.Context:
    return gha.Context(
        {
            "github.event_name": "push",
            "github.sha": sha,
            "github.token": "write-token",
            "needs.publish.result": "success",
            "needs.publish.outputs.site_url": "https://octo.github.io/proj/",
        }
    )


def test_push_path_opens_an_issue_for_a_regression(repo, origin, tmp_path):
    """The notify job after publish, on a results branch whose history shows c4 made two benchmarks slower."""
    shas = slowed_history.make(repo)
    repo.git("push", "-q", "origin", "main")
    slowed_history.save(repo.path / ".regress", shas, ["c1", "c2", "c3", "c4", "c5", "c6"], machine=MACHINE)
    repo.regress("results", "push", check=True)
    step = "Open an issue for each new regression"
    assert not gha.condition(
        WORKFLOW["jobs"]["notify"]["if"], gha.Context({**notify_context(shas["c6"]), "needs.publish.result": "failure"})
    )
    with FakeGitHub() as fake:
        runner = gha.Runner(
            origin,
            tmp_path / "artifacts",
            gha.regress_shim(tmp_path / "bin"),
            github_env={k: v for k, v in fake.env().items() if k != "GITHUB_TOKEN"},
        )
        job = runner.run_job(WORKFLOW, "notify", notify_context(shas["c6"]), tmp_path / "notify-c6")
        assert job.ok, job.log()
        assert f"opened issue #1 for {shas['c4'][:10]}" in job.step(step).stdout, job.log()
        (issue,) = fake.state.regress_issues("performance-regression")
        assert "[chart](https://octo.github.io/proj/bench/ops-add-" in issue["body"]
        assert f"regress bisect {shas['c3'][:10]} {shas['c4'][:10]}" in issue["body"]  # the full clone counts x

        # The next push's results confirm the second benchmark: a comment on the same issue.
        slowed_history.save(repo.path / ".regress", shas, ["c7"], machine=MACHINE)
        repo.regress("results", "push", check=True)
        job = runner.run_job(WORKFLOW, "notify", notify_context(shas["c7"]), tmp_path / "notify-c7")
        assert job.ok and "commented on issue #1" in job.step(step).stdout, job.log()
        assert len(fake.state.regress_issues("performance-regression")) == 1 and len(fake.state.thread(1)) == 1

        # Switched off in the workflow: the step does not run, and nothing is asked of GitHub.
        off = {**WORKFLOW, "env": {**WORKFLOW["env"], "REGRESS_ISSUES": "off"}}
        calls = len(fake.state.log)
        job = runner.run_job(off, "notify", notify_context(shas["c7"]), tmp_path / "notify-off")
        assert job.ok and job.step(step).skipped and len(fake.state.log) == calls
