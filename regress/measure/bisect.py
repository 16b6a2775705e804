"""`regress bisect`: the first commit between GOOD and BAD where a benchmark's level moved.

A binary search over the first-parent commits from GOOD to BAD. Each probed
commit is measured with the round engine (`rounds.measure_rounds`, the
configured plan; what is stored already is reused, what is measured is
stored) and judged with compare's rules (`diff.judge_one`) against GOOD: it
is good when unchanged, and otherwise sides with the level (GOOD's or BAD's)
it is nearer: a verdict alone would let a busy minute's false alarm misplace
the step. A commit
that fails to build, import or run the benchmark is skipped,
as `git bisect skip` would; if skips surround the answer it is a range.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import replace

from regress.analysis import diff, stats
from regress.analysis.explanation import Bisected, Probe
from regress.core.config import Config
from regress.core.errors import RegressError
from regress.core.kinds import CHANGES, FailureKind, Kind
from regress.core.records import BenchmarkId, CommitInfo, CommitResult
from regress.measure import rounds
from regress.storage import gitrepo
from regress.storage.store import Store


def _enough(result: CommitResult | None, wanted: re.Pattern, min_rounds: int) -> bool:
    """Whether what is stored already settles this commit: the benchmarks have their rounds, or it can't run."""
    if result is None:
        return False
    mine = [r for r in result.results if wanted.search(str(r.id))]
    if not mine:
        return any(f.kind in (FailureKind.BUILD, FailureKind.SUITE, FailureKind.CHECKOUT) for f in result.failures)
    return all(not r.ok or len(r.samples) >= min_rounds for r in mine)


def _skip_reason(result: CommitResult | None, ids: list[BenchmarkId]) -> str:
    if result is None:
        return "not measured"
    have = result.by_id()
    for bid in ids:
        r = have.get(bid)
        if r is not None and r.ok:
            return ""
    failed = [str(have[b].failure) for b in ids if b in have and have[b].failure is not None]
    problems = [str(f) for f in result.problems]
    return (failed + problems + ["the benchmark is not in its results"])[0]


def _leaning(result: CommitResult, good: CommitResult, bad: CommitResult, bid: BenchmarkId) -> float:
    """Where a commit's level (its fastest round, as compare reads it) lies between GOOD's (0) and BAD's (1), in log units."""
    at, lo, hi = (stats.level(stats.round_values(c.by_id()[bid])) for c in (result, good, bad))
    return math.log(at / lo) / math.log(hi / lo)


# GOOD against BAD still noisy after more rounds, but its levels this many thresholds apart: bisect anyway.
FAR = 4
# A busy machine only ever slows a commit down: one that reads further than this from the
# faster level (GOOD's for a regression) gets more rounds before it is placed; its fastest
# round can only get faster, so a good commit caught by a busy minute comes back.
UNDECIDED = 0.3


def bisect(
    cfg: Config,
    good: str,
    bad: str,
    *,
    bench: str,
    announce: Callable[[int, int, CommitInfo], None] | None = None,
    say: Callable[[str], None] = lambda line: None,
    paths: tuple[str, ...] = (),
) -> Bisected:
    repo = gitrepo.open_repo(cfg.root)
    if good == bad:
        raise RegressError("GOOD and BAD are the same commit; bisect needs a good commit and a later bad one")
    if not gitrepo.is_ancestor(repo, good, bad):
        raise RegressError(f"{good[:10]} is not an ancestor of {bad[:10]}; give the older, good commit first")
    path = gitrepo.first_parent_path(repo, good, bad, paths)
    info = {sha: gitrepo.commit_info(repo, sha) for sha in path}
    wanted = re.compile(bench)
    store = Store(cfg.results_dir)
    min_rounds = max(cfg.min_rounds, 1)
    probes: dict[str, Probe] = {}

    def result(sha: str) -> tuple[CommitResult | None, bool]:
        stored = store.load(cfg.machine_name, cfg.env, sha)
        if _enough(stored, wanted, min_rounds):
            return stored, False
        say(f"bisect: measuring {info[sha].short} {info[sha].subject[:60]}")
        rounds.measure_rounds(cfg, [sha], bench=bench, announce=announce)
        return store.load(cfg.machine_name, cfg.env, sha), True

    g, g_new = result(good)
    b, b_new = result(bad)
    for side, res, sha in (("GOOD", g, good), ("BAD", b, bad)):
        have = [r for r in (res.results if res else ()) if wanted.search(str(r.id)) and r.ok]
        if not have:
            why = _skip_reason(res, []) if res else "not measured"
            raise RegressError(
                f"{side} {sha[:10]} has no result for --bench {bench!r} ({why}); check the pattern with `regress list`"
            )
    ids = sorted({r.id for r in g.results if r.ok} & {r.id for r in b.results if r.ok})
    ids = [i for i in ids if wanted.search(str(i))]
    ends = {i: diff.judge_one(g, b, i, threshold=cfg.threshold) for i in ids}
    moved = [i for i, v in ends.items() if v.verdict in CHANGES]
    if not moved and any(v.verdict == Kind.NOISY for v in ends.values()):
        # As `compare --measure` would: more rounds of both ends, once, before giving up.
        more = max((v.rounds_needed or 0 for v in ends.values()), default=0) or stats.RECOMMENDED_ROUNDS
        say(f"bisect: GOOD against BAD is noisy; taking {more} more rounds of each")
        rounds.measure_rounds(cfg, [good, bad], rounds=min(more, rounds.MAX_ROUNDS), bench=bench, announce=announce)
        g, b = store.load(cfg.machine_name, cfg.env, good), store.load(cfg.machine_name, cfg.env, bad)
        g_new = b_new = True
        ends = {i: diff.judge_one(g, b, i, threshold=cfg.threshold) for i in ids}
        moved = [i for i, v in ends.items() if v.verdict in CHANGES]
    if not moved:
        # Still noisy, but well beyond the threshold: bisect on the levels, and say so.
        far = [
            i
            for i, v in ends.items()
            if v.verdict == Kind.NOISY and v.ratio and abs(math.log(v.ratio)) >= FAR * math.log1p(cfg.threshold)
        ]
        if far:
            moved, kind = far, Kind.REGRESSION if ends[far[0]].ratio > 1 else Kind.IMPROVEMENT
            ends = {i: replace(v, verdict=kind) if i in far else v for i, v in ends.items()}
            say(
                f"bisect: GOOD against BAD is still noisy (levels {(ends[far[0]].ratio - 1) * 100:+.0f}%); "
                "bisecting on which level each commit is nearer"
            )
    if not moved:
        shown = ", ".join(f"{i}: {v.verdict}" for i, v in ends.items()) or "no benchmark at both"
        raise RegressError(
            f"nothing moved between {good[:10]} and {bad[:10]} ({shown}); bisect needs a regression or improvement "
            "(`regress compare GOOD BAD --measure` takes more rounds)"
        )
    direction = ends[moved[0]].verdict
    moved = [i for i in moved if ends[i].verdict == direction]
    probes[good] = Probe(info[good], "good", measured=g_new)
    probes[bad] = Probe(info[bad], "bad", measured=b_new)

    def classify(sha: str) -> Probe:
        res, new = result(sha)
        why = _skip_reason(res, moved)
        if why:
            say(f"bisect: skipping {info[sha].short} ({why})")
            return Probe(info[sha], "skip", why, new)
        mine = [i for i in moved if i in res.by_id() and res.by_id()[i].ok]
        faster = 0.0 if direction == Kind.REGRESSION else 1.0  # where the faster of the two levels lies
        unsure = [i for i in mine if abs(_leaning(res, g, b, i) - faster) > UNDECIDED]
        if any(len(res.by_id()[i].samples) < 2 * min_rounds for i in unsure):  # not confirmed yet
            say(f"bisect: {info[sha].short} does not read at the faster level; {min_rounds} more rounds to confirm")
            rounds.measure_rounds(cfg, [sha], rounds=min_rounds, bench=bench, announce=announce)
            res, new = store.load(cfg.machine_name, cfg.env, sha), True
        votes = []
        for i in mine:
            v = diff.judge_one(g, res, i, threshold=cfg.threshold)
            # Unchanged against GOOD is good; otherwise the level it is nearer decides, so a busy
            # minute that makes a good commit read "+15%: regression" does not misplace a +50% step.
            votes.append(v.verdict != Kind.UNCHANGED and _leaning(res, g, b, i) > 0.5)
        state = "bad" if sum(votes) * 2 > len(votes) else "good"
        return Probe(info[sha], state, measured=new)

    lo, hi = 0, len(path) - 1
    while hi - lo > 1:
        open_ = [k for k in range(lo + 1, hi) if path[k] not in probes]
        if not open_:
            break  # every commit left between is skipped: the answer is a range
        mid = (lo + hi) // 2
        k = min(open_, key=lambda k: (abs(k - mid), k))
        p = probes[path[k]] = classify(path[k])
        if p.state == "good":
            lo = k
        elif p.state == "bad":
            hi = k
    candidates = [info[path[k]] for k in range(lo + 1, hi + 1)]
    parent = store.load(cfg.machine_name, cfg.env, path[lo])
    last = store.load(cfg.machine_name, cfg.env, path[hi])
    verdicts = [diff.judge_one(parent, last, i, threshold=cfg.threshold) for i in moved] if parent and last else []
    order = {sha: n for n, sha in enumerate(path)}
    listed = sorted(probes.values(), key=lambda p: order[p.info.sha])
    return Bisected(info[good], info[bad], info[path[lo]], candidates, direction, moved, verdicts, listed, len(path))
