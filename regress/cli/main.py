"""The `regress` command: parse, dispatch, print. The one place errors become exit codes.

Exit status: 0 fine; 1 the measured code failed (a benchmark or suite at the
newest measured commit), or `--fail-on-regression` found one; 2 a user
mistake (bad revision, flag, suite file, result file); 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from regress import __version__
from regress.core import config
from regress.storage import gitrepo
from regress.measure import runner
from regress.core.errors import RegressError
from regress.core.records import WORKTREE, CommitResult, neighbours
from regress.storage.store import Store
from regress.storage.store import check_name as store_check_name


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not usage + traceback-ish noise
        raise RegressError(f"{message}; see `{self.prog} --help`")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("-C", dest="project", metavar="DIR", help="the project to measure (default: current folder)")
    p.add_argument("--results", metavar="DIR", help="results folder (default: .regress)")
    p.add_argument("--machine", metavar="NAME", help="machine name results are stored under (default: hostname)")
    p.add_argument("--env", metavar="NAME", help="environment name for A/B between builds (default: 'default')")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be positive")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be at least 1")
    return value


def _round_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--min-rounds", type=_count, metavar="N", help="rounds every benchmark gets at each commit (default 5)")
    p.add_argument("--max-rounds", type=_count, metavar="N", help="rounds a benchmark whose rounds disagree may get (default 15)")
    p.add_argument("--budget", type=_positive_float, metavar="SECONDS",
                   help="seconds of measuring per commit before only --min-rounds are taken (default 25)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="regress", description="Continuous benchmarking for PyTorch code.")
    parser.add_argument("--version", action="version", version=f"regress {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    p = sub.add_parser("list", help="the discovered benchmarks, one identity a line")
    _common(p)
    p.add_argument("--benchmarks", metavar="DIR", help="benchmark folder (default: benchmarks)")

    p = sub.add_parser("run", help="measure commits (default HEAD)")
    _common(p)
    p.add_argument("revisions", nargs="*", metavar="REV", help=f"commits or ranges (A..B, HEAD~5..HEAD, HEAD^!), or {WORKTREE}")
    p.add_argument("--skip-existing", action="store_true", help="skip commits already measured on this machine")
    p.add_argument("--bench", metavar="REGEX", default="", help="only benchmarks whose identity matches")
    p.add_argument("--benchmarks-from", choices=("worktree", "commit"), default="worktree", help="suite definitions from the working tree (default) or each commit")
    p.add_argument("--benchmarks", metavar="DIR", help="benchmark folder (default: benchmarks)")
    p.add_argument("--mode", choices=("time", "instructions"), default="time",
                   help="wall time (default) or callgrind instruction counts (needs valgrind)")
    p.add_argument("--python", metavar="PATH", help="interpreter the benchmarks run under")
    p.add_argument("--min-run-time", type=_positive_float, metavar="SECONDS", help="blocked_autorange min_run_time per benchmark")
    p.add_argument("--timeout", type=_positive_float, metavar="SECONDS", help="per-benchmark time limit (default 600)")
    p.add_argument("--shard", type=_shard, metavar="K/N", help="only the K-th of N shares of the benchmarks (parallel CI jobs; `regress merge` joins them)")
    _round_flags(p)

    p = sub.add_parser("show", help="a commit's results as a Compare table")
    _common(p)
    p.add_argument("revision", nargs="?", default="HEAD", metavar="REV")

    p = sub.add_parser("report", help="build the static site (default folder site/)")
    p.add_argument("-C", dest="project", metavar="DIR", help="the project (default: current folder)")
    p.add_argument("--results", metavar="DIR", help="results folder (default: .regress)")
    p.add_argument("--out", metavar="DIR", help="folder to write the site to (default: site/ in the project)")
    p.add_argument("--baseline", metavar="REV", help="commit the newest one is compared against (default: the oldest measured)")
    p.add_argument("--incremental", action="store_true", help="keep pages whose benchmarks have no new results")
    p.set_defaults(machine=None, env=None)  # the site shows every machine and environment
    _add_differ_commands(sub)
    _add_ci_commands(sub)
    return parser


def _config(args) -> config.Config:
    start = Path(args.project or os.getcwd())
    root = gitrepo.root_of(gitrepo.open_repo(start))
    return config.load(
        root,
        results=args.results,
        machine=args.machine,
        env=args.env,
        benchmarks=getattr(args, "benchmarks", None),
        python=getattr(args, "python", None),
        min_run_time=getattr(args, "min_run_time", None),
        timeout=getattr(args, "timeout", None),
        min_rounds=getattr(args, "min_rounds", None),
        max_rounds=getattr(args, "max_rounds", None),
        budget=getattr(args, "budget", None),
    )


def _err(line: str) -> None:
    print(line, file=sys.stderr)


def cmd_list(args) -> int:
    found = runner.list_benchmarks(_config(args))
    for spec, origin, skip in found.listed:
        print(f"{spec.id}\t{origin}" + (f"\t(skipped here: {skip})" if skip else ""))
    problems = []
    for f in found.failures:
        if f.kind == "skipped":
            print(f"{f.where}\t(skipped here: {f.message})")
        else:
            problems.append(f)
            _err(f"regress: error: {f.where}: {f.message}" if f.where else f"regress: error: {f.message}")
    return 2 if problems else 0


def cmd_run(args) -> int:
    from regress.measure.progress import ConsoleProgress

    cfg = _config(args)
    options = runner.Options(
        revisions=tuple(args.revisions) or ("HEAD",),
        skip_existing=args.skip_existing,
        bench=args.bench,
        benchmarks_from=args.benchmarks_from,
        mode=args.mode,
        shard=args.shard,
    )
    progress = ConsoleProgress()
    try:
        summary = runner.run(cfg, options, progress)
    finally:
        progress.close()
    if summary.skipped:
        n = len(summary.skipped)
        print(f"{n} commit{'s' if n != 1 else ''} already measured, skipped (--skip-existing): "
              + " ".join(sha[:10] for sha in summary.skipped[:5]) + (" ..." if n > 5 else ""))
    for result in summary.measured:
        _print_commit_summary(result)
    if not summary.measured:
        return 0
    newest = summary.measured[-1]
    if any(f.kind == "suite" for f in newest.problems):
        for f in newest.problems:
            if f.kind == "suite":
                _err(f"regress: error: {f.where}: {f.message}; fix the suite file")
        return 2
    return 1 if newest.failed or newest.problems else 0


def _print_commit_summary(result: CommitResult) -> None:
    ok = sum(r.ok or r.counted for r in result.results)
    rounds = [len(r.samples) for r in result.results if r.ok]
    head = f"{result.commit.short} {result.commit.subject[:60]}: {ok} measured"
    if rounds and max(rounds) > 1:
        head += f" ({min(rounds)}-{max(rounds)} rounds each)" if min(rounds) != max(rounds) else f" ({rounds[0]} rounds each)"
    problems = [f"  {r.id}: {r.failure}" for r in result.failed] + [f"  {f}" for f in result.problems]
    skipped = len(result.skipped) + len(result.failures) - len(result.problems)
    if problems:
        head += f", {len(problems)} problem{'s' if len(problems) != 1 else ''}"
    if skipped:
        head += f", {skipped} skipped"
    print(head)
    for line in problems:
        print(line)
    reasons = {r.failure.message for r in result.skipped} | {f.message for f in result.failures if f.kind == "skipped"}
    for reason in sorted(reasons):
        print(f"  skipped: {reason}")


def cmd_show(args) -> int:
    from regress.output.compare_tables import compare_table, instruction_table

    cfg = _config(args)
    store = Store(cfg.results_dir)
    if args.revision == WORKTREE:
        sha = WORKTREE
    else:
        (sha,) = gitrepo.resolve(gitrepo.open_repo(cfg.root), [args.revision])
    results = []
    for env in cfg.env.split(","):  # --env a,b: both environments in one table (A/B)
        result = store.load(cfg.machine_name, env, sha)
        if result is None:
            raise RegressError(
                f"no results for {args.revision} ({sha[:10]}) on machine '{cfg.machine_name}', env '{env}' "
                f"in {cfg.results_dir}; measure it with `regress run {args.revision}`"
                + (f" --env {env}" if env != "default" else "")
            )
        results.append(result)
    c = results[0].commit
    print(f"{c.short} {c.subject}")
    for result in results:
        fp = result.fingerprint
        print(f"machine {result.machine}, env {result.env}: torch {fp.torch_version}, python {fp.python}, {fp.cpu}"
              + (f", {fp.cuda_device}" if fp.cuda_device else ""))
    table = compare_table(results, color=sys.stdout.isatty())
    if table:
        print(table)
    for result in results:
        prefix = f"({result.env}) " if len(results) > 1 else ""
        counts = instruction_table(result)
        if counts:
            print(prefix + counts)
        for r in result.failed:
            print(f"failed: {prefix}{r.id}: {r.failure}")
        for r in result.skipped:
            print(f"skipped: {prefix}{r.id}: {r.failure.message}")
        for f in result.failures:
            print(f"{'skipped' if f.kind == 'skipped' else 'problem'}: {prefix}{f}")
        if not result.complete:
            print(f"incomplete: {prefix}the run was interrupted; `regress run --skip-existing` measures the rest")
    return 0


def cmd_report(args) -> int:
    from regress.report import site as report

    cfg = _config(args)
    baseline = None
    if args.baseline:
        shas = gitrepo.resolve(gitrepo.open_repo(cfg.root), [args.baseline])
        if len(shas) != 1:
            raise RegressError(f"--baseline takes one commit, not the range '{args.baseline}'")
        baseline = shas[0]
    out = Path(args.out) if args.out else cfg.root / "site"
    summary = report.build(
        Store(cfg.results_dir),
        out,
        baseline=baseline,
        repo_url=cfg.repo_url,
        threshold=cfg.threshold,
        incremental=args.incremental,
        title=cfg.root.name,
    )
    print(summary.describe())
    return 0


COMMANDS = {"list": cmd_list, "run": cmd_run, "show": cmd_show, "report": cmd_report}


# -- compare and regressions ----------------------------------------------


def _threshold(text: str) -> float:
    """'5%' or '0.05'; a bare number of 1 or more is surely a percentage without its sign."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100 if raw.endswith("%") else float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a threshold; write it like 5% or 0.05") from None
    if not raw.endswith("%") and value >= 1:
        raise argparse.ArgumentTypeError(f"{text!r} would mean {value * 100:g}%; write {raw}% if you meant percent")
    if not 0 <= value < 10:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 0% and 1000%")
    return value


def _rounds(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 1 <= value <= 1000:
        raise argparse.ArgumentTypeError(f"{text!r} must be between 1 and 1000")
    return value


def _add_differ_commands(sub) -> None:
    p = sub.add_parser("compare", help="per benchmark: both levels, the ratio and a verdict")
    _common(p)
    p.add_argument("base", metavar="BASE", help="the commit to compare against")
    p.add_argument("head", metavar="HEAD", nargs="?", default="HEAD", help=f"the commit judged (default HEAD; or {WORKTREE})")
    p.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    p.add_argument("--threshold", type=_threshold, metavar="PCT", help="smallest change worth reporting (default 5%%)")
    p.add_argument("--fail-on-regression", action="store_true", help="exit 1 if any verdict is regression")
    p.add_argument("--bench", metavar="REGEX", default="", help="only benchmarks whose identity matches")
    p.add_argument("--measure", action="store_true", help="first take more rounds of both commits, alternating, in fresh processes")
    p.add_argument("--rounds", type=_rounds, metavar="N", help="with --measure: rounds per side to reach (default: what the noisy verdicts ask for)")
    p.add_argument("--benchmarks", metavar="DIR", help="benchmark folder (default: benchmarks)")
    p.add_argument("--min-run-time", type=_positive_float, metavar="SECONDS", help="with --measure: blocked_autorange min_run_time per round")
    p.add_argument("--mode", choices=("time", "instructions"), default="time",
                   help="compare wall times (default) or callgrind instruction counts (default threshold 1%%)")
    p.add_argument("--env-a", metavar="NAME", help="environment of BASE (A/B between builds: `regress compare HEAD HEAD --env-a A --env-b B`)")
    p.add_argument("--env-b", metavar="NAME", help="environment of HEAD")

    p = sub.add_parser("regressions", help="steps in every benchmark's history")
    _common(p)
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--threshold", type=_threshold, metavar="PCT", help="smallest step worth reporting (default 5%%)")
    p.add_argument("--bench", metavar="REGEX", default="", help="only benchmarks whose identity matches")


def _one_commit(repo, rev: str) -> str:
    if rev == WORKTREE:
        return WORKTREE
    shas = gitrepo.resolve(repo, [rev])
    if len(shas) != 1:
        raise RegressError(f"'{rev}' is a range of {len(shas)} commits; compare takes two single commits, like main HEAD")
    return shas[0]


def _bench_filter(pattern: str):
    import re

    try:
        return re.compile(pattern)
    except re.error as exc:
        raise RegressError(f"--bench {pattern!r} is not a valid regular expression ({exc})") from None


def cmd_compare(args) -> int:
    from regress.analysis import diff
    from regress.measure import rounds
    from regress.analysis import stats
    from regress.output import verdicts as verdicts_format

    cfg = _config(args)
    counts = args.mode == "instructions"
    default_threshold = diff.COUNT_THRESHOLD if counts else cfg.threshold
    threshold = default_threshold if args.threshold is None else args.threshold
    envs = {"base": args.env_a or cfg.env, "head": args.env_b or cfg.env}
    for env in envs.values():
        store_check_name("env", env)
    if args.measure and (envs["base"] != envs["head"] or counts):
        raise RegressError(
            "--measure takes wall-time rounds in one environment; measure each side with "
            "`regress run REV --env NAME [--python PATH] [--mode instructions]` instead"
        )
    if args.rounds is not None and not args.measure:
        raise RegressError("--rounds only applies with --measure (it sets how many rounds to take)")
    wanted = _bench_filter(args.bench)
    repo = gitrepo.open_repo(cfg.root)
    shas = {"base": _one_commit(repo, args.base), "head": _one_commit(repo, args.head)}
    revs = {"base": args.base, "head": args.head}
    store = Store(cfg.results_dir)

    def load():
        return {side: store.load(cfg.machine_name, envs[side], sha) for side, sha in shas.items()}

    def judged(results):
        if counts:
            verdicts = diff.compare_counts(results["base"], results["head"], threshold=threshold)
        else:
            verdicts = diff.compare(results["base"], results["head"], threshold=threshold)
            # The commits either side (same machine and env) tell a blip from a change;
            # the history is only read when there is a change to tell apart.
            if envs["base"] == envs["head"] and any(v.verdict in ("regression", "improvement") for v in verdicts):
                history = store.history(cfg.machine_name, envs["head"])
                before, after = neighbours(history, shas["base"], shas["head"])
                if before is not None or after is not None:
                    verdicts = diff.compare(results["base"], results["head"], threshold=threshold, before=before, after=after)
        return [v for v in verdicts if wanted.search(str(v.id))]

    results = load()
    if args.measure:
        if results["base"] is None or results["head"] is None:
            take, bench = args.rounds or stats.RECOMMENDED_ROUNDS, args.bench
        else:
            take, chosen = rounds.plan_more(judged(results), rounds=args.rounds)
            bench = rounds.exact_filter(v.id for v in chosen)
        if take:
            def announce(k, n, info):
                _err(f"round {k}/{n}: {info.short} {info.subject[:60]}")

            rounds.measure_rounds(cfg, list(dict.fromkeys(shas.values())), rounds=take, bench=bench, announce=announce)
            results = load()
        else:
            _err("regress: nothing to measure: no verdict is noisy (use --rounds N to take more anyway)")
    for side in ("base", "head"):
        if results[side] is None:
            env_flag = f" --env {envs[side]}" if envs[side] != "default" else ""
            raise RegressError(
                f"no results for {revs[side]} ({shas[side][:10]}) on machine '{cfg.machine_name}', env '{envs[side]}' "
                f"in {cfg.results_dir}; measure it with `regress run {revs[side]}{env_flag}`, or add --measure"
            )
    verdicts = judged(results)
    base_info, head_info = results["base"].commit, results["head"].commit
    if args.format == "json":
        print(verdicts_format.compare_json(verdicts, base=base_info, head=head_info, threshold=threshold, machine=cfg.machine_name,
                                           env=envs["head"], base_env=envs["base"], mode=args.mode))
    elif args.format == "markdown":
        print(verdicts_format.markdown(verdicts, base=base_info, head=head_info, threshold=threshold, counts=counts))
    else:
        if envs["base"] != envs["head"]:
            print(f"A/B: base in env '{envs['base']}', head in env '{envs['head']}'")
        print(verdicts_format.text(verdicts, base=base_info, head=head_info, threshold=threshold, color=sys.stdout.isatty(),
                                   counts=counts))
    return 1 if args.fail_on_regression and diff.any_regression(verdicts) else 0


def cmd_regressions(args) -> int:
    from regress.analysis import changepoints
    from regress.output import verdicts as verdicts_format

    cfg = _config(args)
    threshold = cfg.threshold if args.threshold is None else args.threshold
    wanted = _bench_filter(args.bench)
    history = Store(cfg.results_dir).history(cfg.machine_name, cfg.env)
    if not history:
        raise RegressError(
            f"no measured commits on machine '{cfg.machine_name}', env '{cfg.env}' in {cfg.results_dir}; "
            "measure some with `regress run HEAD~20..HEAD`"
        )
    steps = [s for s in changepoints.find_steps(history, threshold=threshold) if wanted.search(str(s.id))]
    commits = {c.commit.sha: c.commit for c in history}
    if args.format == "json":
        print(verdicts_format.steps_json(steps, commits, threshold=threshold, machine=cfg.machine_name, env=cfg.env, n_commits=len(history)))
    else:
        print(verdicts_format.steps_text(steps, commits, threshold=threshold, n_commits=len(history)))
    return 0


COMMANDS.update(compare=cmd_compare, regressions=cmd_regressions)


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except RegressError as exc:
        _err(f"regress: error: {exc}")
        return 2
    except KeyboardInterrupt:
        _err("regress: interrupted; finished commits are saved, `regress run --skip-existing ...` measures the rest")
        return 130
    except BrokenPipeError:
        return 0


def entry() -> None:
    sys.exit(main())


# -- CI: shards, merging, the results branch ---------------------------------


def _shard(text: str):
    from regress.measure.shard import parse

    try:
        return parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _project_only(p: argparse.ArgumentParser) -> None:
    """-C and --results: these commands take every machine and environment at once."""
    p.add_argument("-C", dest="project", metavar="DIR", help="the project (default: current folder)")
    p.add_argument("--results", metavar="DIR", help="results folder (default: .regress)")
    p.set_defaults(machine=None, env=None)


def _add_ci_commands(sub) -> None:
    from regress.storage.results_branch import BRANCH, REMOTE

    p = sub.add_parser("merge", help="merge results folders (CI shards, other machines) into the results folder")
    _project_only(p)
    p.add_argument("sources", nargs="+", metavar="DIR", help="results folders, each laid out <machine>/<env>/<sha>.pkl")

    p = sub.add_parser("check", help="the pull-request check: merge base and head measured in turn, exit 1 on a regression")
    _common(p)
    p.add_argument("base", metavar="BASE", help="the branch the change goes into; its merge base with HEAD is measured")
    p.add_argument("head", metavar="HEAD", nargs="?", default="HEAD", help="the change (default HEAD)")
    p.add_argument("--rounds", type=_rounds, metavar="N", help="rounds per side, each in a fresh process (default 10)")
    p.add_argument("--threshold", type=_threshold, metavar="PCT", help="smallest change worth reporting (default 5%%)")
    p.add_argument("--ok-label", default="perf-regression-ok", metavar="NAME",
                   help="a pull request with this label passes despite a regression (labels come from $GITHUB_EVENT_PATH)")
    p.add_argument("--summary", metavar="FILE", help="append the Markdown comparison here (default: $GITHUB_STEP_SUMMARY when set)")
    p.add_argument("--benchmarks", metavar="DIR", help="benchmark folder (default: benchmarks)")
    p.add_argument("--min-run-time", type=_positive_float, metavar="SECONDS", help="blocked_autorange min_run_time per round")

    p = sub.add_parser("results", help="the results branch of the remote: pull restores it, push adds to it")
    actions = p.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    actions.required = True
    for name, text in (("pull", "merge the results branch into the results folder"),
                       ("push", "add the results folder to the results branch (created on first use)")):
        q = actions.add_parser(name, help=text)
        _project_only(q)
        q.add_argument("--remote", default=REMOTE, metavar="NAME", help=f"git remote (default: {REMOTE})")
        q.add_argument("--branch", default=BRANCH, metavar="NAME", help=f"results branch (default: {BRANCH})")
        if name == "push":
            q.add_argument("--retries", type=_count, default=8, metavar="N",
                           help="pushes to try when other jobs push at the same time (default 8)")


def _conflicts(synced, done: str) -> int:
    if not synced.conflicts:
        return 0
    for c in synced.conflicts:
        _err(f"  conflict: {c}")
    n = len(synced.conflicts)
    raise RegressError(
        f"{n} conflicting duplicate{'s' if n != 1 else ''} refused (listed above), {done}; "
        "measure different builds under different --env names, and give changed benchmarks new names"
    )


def cmd_merge(args) -> int:
    from regress.ci import sync as ci

    cfg = _config(args)
    synced = ci.merge(cfg, [Path(s) for s in args.sources])
    print(f"merged {synced.files} result file{'s' if synced.files != 1 else ''} from {len(args.sources)} "
          f"folder{'s' if len(args.sources) != 1 else ''} into {cfg.results_dir}: {synced.written} changed")
    return _conflicts(synced, "everything else was merged")


def cmd_results(args) -> int:
    from regress.ci import sync as ci

    cfg = _config(args)
    where = f"{args.remote}/{args.branch}"
    if args.action == "pull":
        synced = ci.pull(cfg, remote=args.remote, branch=args.branch)
        if synced.tip is None:
            print(f"no branch {where} yet: nothing to restore (`regress results push` creates it)")
        else:
            print(f"restored {where} ({synced.tip[:10]}): {synced.files} result files, {synced.written} changed in {cfg.results_dir}")
        return _conflicts(synced, "the local copies were kept")
    synced = ci.push(cfg, remote=args.remote, branch=args.branch, retries=args.retries, say=_err)
    if synced.written:
        print(f"pushed {synced.written} result file{'s' if synced.written != 1 else ''} to {where} ({synced.tip[:10]})")
    elif synced.tip is None:
        print(f"no results in {cfg.results_dir} to push; measure some with `regress run HEAD`")
    else:
        print(f"{where} already holds every result in {cfg.results_dir}; nothing to push")
    return _conflicts(synced, "the branch's copies were kept and everything else was pushed")


def cmd_check(args) -> int:
    from regress.ci import sync as ci

    cfg = _config(args)
    checked = ci.check(
        cfg, args.base, args.head,
        rounds=args.rounds, threshold=args.threshold, ok_label=args.ok_label,
        labels=ci.event_labels(os.environ.get("GITHUB_EVENT_PATH")),
        announce=lambda k, n, info: _err(f"round {k}/{n}: {info.short} {info.subject[:60]}"),
    )
    print(checked.markdown)
    where = ci.summary_path(args.summary)
    if where:
        ci.write_summary(where, checked.markdown)
    if checked.fails:
        _err(f"regress: {checked.regressions} significant regression{'s' if checked.regressions != 1 else ''} "
             f"in {checked.head.short} against the merge base {checked.base.short}; the check fails "
             f"(the '{args.ok_label}' label accepts them)")
        return 1
    return 0


COMMANDS.update(merge=cmd_merge, results=cmd_results, check=cmd_check)
