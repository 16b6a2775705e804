"""A small stand-in for a GitHub Actions runner, so tests run the workflow files' own steps.

It reads a workflow, evaluates the `if:` conditions and `${{ }}` expressions
it meets against a context the test gives (an expression it was not given
fails the test: the workflow then depends on something no test simulates),
runs each `run:` step with bash exactly as a runner does (`bash -eo pipefail`),
and plays the few actions the workflows use: checkout clones the "origin"
repository, the artifact actions copy folders the way actions/upload-artifact
v4 lays them out, the Pages actions record what they were given.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from conftest import SRC_ROOT, cli_env

WORKFLOWS = SRC_ROOT / ".github" / "workflows"
_CONFIG_LOCK = threading.Lock()
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}", re.S)
_TOKEN = re.compile(
    r"\s*(?:('(?:[^']|'')*')|(==|!=|&&|\|\||!|\(|\))|([A-Za-z_][A-Za-z0-9_.\-]*\(\))|([A-Za-z_][A-Za-z0-9_.\-*]*))"
)


def load(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def triggers(workflow: dict) -> dict:
    return workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true


class Context(dict):
    """Dotted names (github.sha, matrix.shard) to values; a missing one is the test's bug."""

    def value(self, name: str):
        if name not in self:
            raise KeyError(f"the workflow uses ${{{{ {name} }}}}, which this test does not simulate")
        return self[name]


def _hash_files(pattern: str, ctx: Context) -> str:
    """hashFiles('glob'): '' when nothing in the workspace matches, else a digest of the files."""
    import hashlib

    root = Path(ctx.value("__workspace__"))
    files = sorted(p for p in root.glob(pattern) if p.is_file())
    return hashlib.sha256(b"".join(p.read_bytes() for p in files)).hexdigest() if files else ""


def evaluate(expr: str, ctx: Context):
    """GitHub's expression language, as much of it as the workflows use."""
    out, pos = [], 0
    expr = re.sub(
        r"hashFiles\('((?:[^']|'')*)'\)", lambda m: "'" + _hash_files(m.group(1).replace("''", "'"), ctx) + "'", expr
    ).strip()
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m or m.end() == pos:
            raise ValueError(f"cannot evaluate {expr!r} at {expr[pos:]!r}")
        pos = m.end()
        literal, op, call, name = m.groups()
        if literal is not None:
            out.append(repr(literal[1:-1].replace("''", "'")))
        elif op is not None:
            out.append({"&&": " and ", "||": " or ", "!": " not "}.get(op, f" {op} "))
        elif call is not None:
            if call not in ("cancelled()", "always()", "success()"):
                raise ValueError(f"unsupported function {call}")
            out.append({"cancelled()": " False ", "always()": " True ", "success()": " ok "}[call])
        else:
            out.append(
                f"_v({name!r})" if name not in ("true", "false") else str(name == "true")
            )  # looked up lazily: && and || short-circuit
    return eval("".join(out), {"__builtins__": {}}, {"ok": ctx.get("__ok__", True), "_v": ctx.value})


def substitute(text, ctx: Context):
    if not isinstance(text, str):
        return text
    return _EXPR.sub(lambda m: str(evaluate(m.group(1), ctx)), text)


def condition(cond, ctx: Context) -> bool:
    if cond is None:
        return bool(ctx.get("__ok__", True))
    if isinstance(cond, bool):
        return cond
    m = _EXPR.fullmatch(cond.strip())
    return bool(evaluate(m.group(1) if m else cond, ctx))


@dataclass
class Step:
    name: str
    returncode: int = 0
    stdout: str = ""
    stderr: str = ""
    summary: str = ""
    skipped: bool = False


@dataclass
class JobRun:
    steps: list[Step] = field(default_factory=list)
    pages: Path | None = None

    @property
    def ok(self) -> bool:
        return all(s.returncode == 0 for s in self.steps)

    @property
    def summary(self) -> str:
        """The job summary: each step's $GITHUB_STEP_SUMMARY file, in order."""
        return "".join(s.summary for s in self.steps)

    def step(self, name: str) -> Step:
        (found,) = [s for s in self.steps if s.name == name]
        return found

    def log(self) -> str:
        return "\n".join(
            f"--- {s.name} (exit {s.returncode}{', skipped' if s.skipped else ''})\n{s.stdout}{s.stderr}"
            for s in self.steps
        )


def regress_shim(folder: Path) -> Path:
    """A `regress` command on PATH that runs the checkout under test."""
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "regress"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m regress "$@"\n')
    shim.chmod(0o755)
    return folder


@dataclass
class Runner:
    """One simulated runner machine: an origin to check out from and an artifact store."""

    origin: Path
    artifacts: Path
    bin_dir: Path
    skip_ids: tuple[str, ...] = ("install",)  # the test environment has everything installed
    # What every step's environment holds besides (GITHUB_API_URL, GITHUB_REPOSITORY, ...): a test's fake GitHub.
    github_env: dict = field(default_factory=dict)
    # Artifacts of other runs, by run id (actions/download-artifact with run-id).
    other_runs: dict = field(default_factory=dict)

    def run_job(
        self, workflow: dict, job_id: str, ctx: Context, workspace: Path, event_path: Path | None = None
    ) -> JobRun:
        job = workflow["jobs"][job_id]
        assert condition(job.get("if"), ctx), f"job {job_id} would not run for this event"
        workspace.mkdir(parents=True)
        run = JobRun()
        base_env = {**workflow.get("env", {}), **job.get("env", {})}
        ctx["__workspace__"] = str(workspace)
        for i, raw in enumerate(job["steps"]):
            ctx["__ok__"] = run.ok
            name = raw.get("name") or raw.get("uses") or raw.get("id") or f"step {i}"
            env = {k: substitute(v, ctx) for k, v in {**base_env, **raw.get("env", {})}.items()}
            step_ctx = Context({**ctx, **{f"env.{k}": v for k, v in env.items()}})
            if raw.get("id") in self.skip_ids or not condition(raw.get("if"), step_ctx):
                run.steps.append(Step(name, skipped=True))
                continue
            with_ = {k: substitute(v, ctx) for k, v in raw.get("with", {}).items()}
            if "uses" in raw:
                run.steps.append(self._action(raw["uses"], with_, ctx, workspace, run, name))
            else:
                run.steps.append(self._shell(raw["run"], env, ctx, workspace, event_path, name, i))
        return run

    def rerun_step(
        self, workflow: dict, job_id: str, name: str, ctx: Context, workspace: Path, event_path: Path | None = None
    ) -> Step:
        """One `run:` step again in a job's workspace (GitHub would start over; the measurements are the same)."""
        job = workflow["jobs"][job_id]
        assert condition(job.get("if"), ctx), f"job {job_id} would not run for this event"
        ((i, raw),) = [(i, s) for i, s in enumerate(job["steps"]) if s.get("name") == name]
        ctx["__ok__"] = True
        env = {
            k: substitute(v, ctx)
            for k, v in {**workflow.get("env", {}), **job.get("env", {}), **raw.get("env", {})}.items()
        }
        return self._shell(raw["run"], env, ctx, workspace, event_path, f"{name} (again)", i)

    def _shell(self, script: str, env: dict, ctx: Context, workspace: Path, event_path, name: str, i: int) -> Step:
        assert "${{" not in script, f"step {name!r}: pass values through env:, never ${{{{ }}}} in a script (injection)"
        summary = workspace.parent / f".summary-{workspace.name}-{i}.md"
        summary.write_text("")
        full = cli_env(
            {
                **{k: str(v) for k, v in env.items()},
                "PATH": f"{self.bin_dir}{os.pathsep}{os.environ['PATH']}",
                "CI": "true",
                "GITHUB_ACTIONS": "true",
                "GITHUB_WORKSPACE": str(workspace),
                "GITHUB_SHA": str(ctx.value("github.sha")),
                "GITHUB_EVENT_NAME": str(ctx.value("github.event_name")),
                "GITHUB_STEP_SUMMARY": str(summary),
                **self.github_env,
                **({"GITHUB_EVENT_PATH": str(event_path)} if event_path else {}),
            }
        )
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
            cwd=workspace,
            env=full,
            capture_output=True,
            text=True,
            timeout=600,
        )
        return Step(name, proc.returncode, proc.stdout, proc.stderr, summary.read_text())

    def _action(self, uses: str, with_: dict, ctx: Context, workspace: Path, run: JobRun, name: str) -> Step:
        action = uses.split("@")[0]
        if action == "actions/checkout":
            ref = with_.get("ref") or ctx.value("github.sha")
            # GitHub serves partial clones (`filter: blob:none`): the clone then fetches files as they are read.
            with _CONFIG_LOCK:  # jobs run in threads side by side: two `git config` writes collide on its lock file
                subprocess.run(["git", "config", "uploadpack.allowFilter", "true"], cwd=self.origin, check=True)
            cut = (
                ["--filter", str(with_["filter"]), f"file://{self.origin}"] if "filter" in with_ else [str(self.origin)]
            )
            subprocess.run(["git", "clone", "-q", *cut, str(workspace)], check=True, env=cli_env())
            subprocess.run(["git", "checkout", "-q", "--detach", ref], cwd=workspace, check=True, env=cli_env())
        elif action == "actions/upload-artifact":
            self._upload(with_, workspace)
        elif action == "actions/download-artifact":
            dest = workspace / with_.get("path", ".")
            store = self.artifacts
            if "run-id" in with_:  # another run's artifacts: that needs a token with actions: read
                assert with_.get("github-token"), "download-artifact with run-id needs github-token"
                store = self.other_runs[str(with_["run-id"])]
            merge = str(with_.get("merge-multiple", "false")).lower() == "true"
            for art in sorted(store.iterdir()) if store.is_dir() else []:
                if fnmatch.fnmatch(art.name, with_.get("pattern", "*")):
                    shutil.copytree(art, dest if merge else dest / art.name, dirs_exist_ok=merge)
        elif action == "actions/upload-pages-artifact":
            site = workspace / with_.get("path", "_site")
            assert (site / "index.html").is_file(), f"{site} has no index.html to publish"
            run.pages = site
        elif action in ("actions/cache/restore", "actions/cache/save"):
            return Step(name, stdout=self._cache(action.rsplit("/", 1)[1], with_, workspace))
        elif action not in ("actions/setup-python", "actions/configure-pages", "actions/deploy-pages"):
            raise AssertionError(f"this test does not simulate {uses}")
        return Step(name)

    def _cache(self, what: str, with_: dict, workspace: Path) -> str:
        """actions/cache v4: one store per repository (beside its origin); a key is saved once and never
        overwritten; restore takes the exact key, else the newest entry whose key starts with a restore-key."""
        store = self.origin.parent / "gha-cache"
        paths = [p.strip() for p in with_["path"].splitlines() if p.strip()]
        if what == "save":
            dest = store / with_["key"]
            if dest.exists():
                return f"Cache already exists for key: {with_['key']}"
            for rel in paths:
                src = workspace / rel
                if src.is_dir():
                    shutil.copytree(src, dest / rel)
                elif src.is_file():
                    (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(src, dest / rel)
            dest.mkdir(parents=True, exist_ok=True)
            return f"Cache saved with key: {with_['key']}"
        saved = sorted(store.iterdir(), key=lambda p: p.stat().st_mtime_ns) if store.is_dir() else []
        hit = store / with_["key"]
        if not hit.is_dir():
            prefixes = [k.strip() for k in with_.get("restore-keys", "").splitlines() if k.strip()]
            hits = [p for p in saved if any(p.name.startswith(k) for k in prefixes)]
            hit = hits[-1] if hits else None
        if hit is None:
            return f"Cache not found for input keys: {with_['key']}"
        shutil.copytree(hit, workspace, dirs_exist_ok=True)
        return f"Cache restored from key: {hit.name}"

    def _upload(self, with_: dict, workspace: Path) -> None:
        """actions/upload-artifact v4: a wildcard keeps the folders after the first wildcard; hidden files need opting in."""
        pattern = with_["path"]
        if "*" in pattern:
            prefix = pattern.split("*")[0].rsplit("/", 1)[0] if "/" in pattern.split("*")[0] else "."
        else:
            prefix = pattern if (workspace / pattern).is_dir() else str(Path(pattern).parent)
            pattern = f"{pattern.rstrip('/')}/**/*" if (workspace / pattern).is_dir() else pattern
        hidden_ok = str(with_.get("include-hidden-files", "false")).lower() == "true"
        dest = self.artifacts / with_["name"]
        if dest.exists():
            assert str(with_.get("overwrite", "false")).lower() == "true", f"artifact {with_['name']} uploaded twice"
            shutil.rmtree(dest)
        found = 0
        for match in glob.glob(str(workspace / pattern), include_hidden=True, recursive=True):
            if not Path(match).is_file():
                continue
            rel = Path(match).relative_to(workspace)
            if not hidden_ok and any(part.startswith(".") for part in rel.parts):
                continue
            target = dest / Path(match).relative_to(workspace / prefix)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(match, target)
            found += 1
        if not found and with_.get("if-no-files-found", "warn") == "error":
            raise AssertionError(f"no files match {pattern}")
