"""`regress regressions`: the steps in every benchmark's stored history."""

from __future__ import annotations

from regress.cli import flags
from regress.cli.console import skipped_files
from regress.core.errors import RegressError
from regress.core.kinds import Metric
from regress.core.metric_specs import BEYOND_TIME, spec
from regress.storage import summary


def add(sub) -> None:
    p = sub.add_parser(
        "regressions",
        help="steps in every benchmark's history",
        usage="regress regressions [options] [-- PATH ...]",
        epilog="after the flags, `-- PATH...`: count only the commits touching the paths as unmeasured, and "
        "carry the paths into the bisect hint",
    )
    flags.common(p)
    p.add_argument("--format", choices=("text", "json"), default="text")
    flags.threshold_flag(p, "smallest step worth reporting", per_metric=True)
    flags.bench(p)
    p.add_argument(
        "--metric",
        choices=[m.value for m in BEYOND_TIME],
        help="steps of another metric than wall time (bytes per call, compile figures, track_* values)",
    )
    p.set_defaults(run=run)


def run(args) -> int:
    from regress.storage.session import Session

    with Session(flags.load_config(args)) as session:
        return _run(args, session)


def _run(args, session) -> int:
    from regress.analysis import changepoints
    from regress.output import verdicts as render

    cfg, store, kept = session.cfg, session.store, session.memo
    metric = Metric(args.metric) if args.metric else Metric.TIME
    threshold = cfg.threshold_for(metric) if args.threshold is None else args.threshold
    wanted = flags.bench_pattern(args.bench)
    history = summary.commits(store, cfg.machine_name, cfg.env)  # the commit list: no results decoded yet
    skipped_files(store)
    if not history:
        raise RegressError(
            f"no measured commits on machine '{cfg.machine_name}', env '{cfg.env}' in {cfg.results_dir}; "
            "measure some with `regress run HEAD~20..HEAD`"
        )
    if metric == Metric.TIME:
        from regress.report import data

        machine, env, shas = cfg.machine_name, cfg.env, [c.commit.sha for c in history]
        code = session.code(shas)

        def compute():  # each file's figures, kept in the memo: no rounds decoded
            from regress.analysis import table

            files = summary.per_file(store, kept, machine, env, table.compute)
            series = table.Table.kept(files, lambda: summary.history(store, machine, env))
            return changepoints.find_steps(
                series, threshold=threshold, code=code, kept=kept.values(changepoints.CHECKPOINT)
            )

        # Kept by the site build (or the last `regressions`) when no file changed since.
        inputs = data.steps_inputs(summary.digests(store, machine, env), shas, threshold=threshold, code=code)
        found = kept.get(data.STEPS, inputs, compute, from_tree=data.steps_of)
    else:
        from regress.analysis import metrics

        found = metrics.steps(summary.history(store, cfg.machine_name, cfg.env), metric, threshold=threshold)
    steps = [s for s in found if wanted.search(str(s.id))]
    commits = {c.commit.sha: c.commit for c in history}
    if args.format == "json":
        at, seen = None, None
        if metric == Metric.TIME:  # what each benchmark can detect, at the newest measured commit
            from regress.flows import detects as detect_flow
            from regress.output import detects

            at, detected = detect_flow.at_newest(session, cfg.env, threshold=threshold)
            seen = [detects.seen_json(s) for s in detected if wanted.search(str(s.id))]
        print(
            render.steps_json(
                steps,
                commits,
                threshold=threshold,
                machine=cfg.machine_name,
                env=cfg.env,
                n_commits=len(history),
                detectable=seen,
                detectable_at=at,
            )
        )
    else:
        gaps = unmeasured(cfg, history, steps, getattr(args, "paths", ()))
        print(
            render.steps_text(
                steps, commits, threshold=threshold, n_commits=len(history), fmt=spec(metric).fmt, gaps=gaps
            )
        )
    return 0


def unmeasured(cfg, history, steps, paths: tuple[str, ...] = ()) -> dict[str, tuple]:
    """By step commit: the measured commit before it, how many commits git has between the two
    (with `paths`, only those touching them), and the paths."""
    from regress.storage import gitrepo

    repo = gitrepo.open_repo(cfg.root)
    gaps = {}
    for s in steps:
        if s.index > 0 and s.sha not in gaps:
            prev = history[s.index - 1].commit.sha
            try:
                n = gitrepo.count_between(repo, prev, s.sha, paths)
            except Exception:  # noqa: BLE001 - a commit git no longer has: nothing to count
                n = None
            if n:
                gaps[s.sha] = (prev, n, paths)
    return gaps
