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
An answer that does not move against its parent when both are measured
again (a probe's rounds caught by a busy minute put it on the wrong side)
is searched for once more, every probe with more rounds, before bisect
calls it inconclusive.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace

from regress.analysis import diff, stats
from regress.analysis.explanation import Bisected, Probe
from regress.core.config import Config
from regress.core.errors import RegressError
from regress.core.kinds import CHANGES, Kind, ProbeState
from regress.core.records import BenchmarkId, CommitResult
from regress.core.reporter import QUIET, Reporter
from regress.flows import rounds
from regress.measure import engine
from regress.storage import code_identity, gitrepo
from regress.storage.memo import Memo
from regress.storage.store import Store


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


def _in_run(result: CommitResult | None, run: str) -> CommitResult | None:
    """A commit's stored results with only the rounds `run` took."""
    if result is None:
        return None
    kept = (replace(r, samples=tuple(s for s in r.samples if s.run == run)) if r.ok else r for r in result.results)
    return replace(result, results=tuple(kept))


def bisect(
    cfg: Config,
    good: str,
    bad: str,
    *,
    bench: str,
    reporter: Reporter = QUIET,
    paths: tuple[str, ...] = (),
) -> Bisected:
    """Everything it judges it measures in one run of its own: the ends first, then each probe
    beside the commits that bracket it, so a probe is never judged against rounds of another
    run (another minute, another machine). Stored rounds of other runs stay as they were."""
    say = reporter.say
    repo = gitrepo.open_repo(cfg.root)
    if good == bad:
        raise RegressError("GOOD and BAD are the same commit; bisect needs a good commit and a later bad one")
    if not gitrepo.is_ancestor(repo, good, bad):
        raise RegressError(f"{good[:10]} is not an ancestor of {bad[:10]}; give the older, good commit first")
    path = gitrepo.first_parent_path(repo, good, bad, paths)
    info = {sha: gitrepo.commit_info(repo, sha) for sha in path}
    code = code_identity.for_config(cfg, path, Memo(None))
    wanted = re.compile(bench)
    store = Store(cfg.results_dir)
    min_rounds = max(cfg.min_rounds, stats.FEWEST_ROUNDS_TO_JUDGE)
    probes: dict[str, Probe] = {}
    run = engine.new_run("bisect")
    measured: set[str] = set()

    def measure(shas: list[str], n: int | None = None) -> None:
        for sha in shas:
            if sha not in measured:
                say(f"bisect: measuring {info[sha].short} {info[sha].subject[:60]}")
        rounds.measure_rounds(cfg, shas, rounds=n, bench=bench, reporter=reporter, run=run)
        measured.update(shas)

    def load(sha: str) -> CommitResult | None:
        return _in_run(store.load(cfg.machine_name, cfg.env, sha), run.id)

    measure([good, bad])
    g, b = load(good), load(bad)
    for side, res, sha in (("GOOD", g, good), ("BAD", b, bad)):
        have = [r for r in (res.results if res else ()) if wanted.search(str(r.id)) and r.ok]
        if not have:
            why = _skip_reason(res, []) if res else "not measured"
            raise RegressError(
                f"{side} {sha[:10]} has no result for --bench {bench!r} ({why}); check the pattern with `regress list`"
            )
    assert g is not None and b is not None  # each has results, or the loop above raised
    ids = sorted({r.id for r in g.results if r.ok} & {r.id for r in b.results if r.ok})
    ids = [i for i in ids if wanted.search(str(i))]
    ends = {i: diff.judge_one(g, b, i, threshold=cfg.threshold) for i in ids}
    moved = [i for i, v in ends.items() if v.verdict in CHANGES]
    if not moved and any(v.verdict == Kind.NOISY for v in ends.values()):
        # As `compare --measure` would: more rounds of both ends, once, before giving up.
        more = max((v.rounds_needed or 0 for v in ends.values()), default=0) or stats.RECOMMENDED_ROUNDS
        say(f"bisect: GOOD against BAD is noisy; taking {more} more rounds of each")
        measure([good, bad], min(more, rounds.MOST_ROUNDS_PER_SIDE))
        g, b = load(good), load(bad)
        assert g is not None and b is not None  # measured again, in this run
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
            ratio = ends[far[0]].ratio
            assert ratio is not None  # `far` holds benchmarks with a ratio
            moved, kind = far, Kind.REGRESSION if ratio > 1 else Kind.IMPROVEMENT
            ends = {i: replace(v, verdict=kind) if i in far else v for i, v in ends.items()}
            say(
                f"bisect: GOOD against BAD is still noisy (levels {(ratio - 1) * 100:+.0f}%); "
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
    probes[good] = Probe(info[good], ProbeState.GOOD, measured=True)
    probes[bad] = Probe(info[bad], ProbeState.BAD, measured=True)
    faster = 0.0 if direction == Kind.REGRESSION else 1.0  # where the faster of the two levels lies

    # A commit placed by its code (the same as a measured one's) is read through that one.
    stand: dict[str, str] = {}

    def classify(k: int, lo: int, hi: int) -> Probe:
        sha = path[k]
        for end, state in ((path[lo], ProbeState.GOOD), (path[hi], ProbeState.BAD)):
            if code.get(sha) and code.get(sha) == code.get(end):
                say(f"bisect: {info[sha].short} is the same code as {info[end].short} ({state}); not measured")
                stand[sha] = stand.get(end, end)
                return Probe(info[sha], state, f"same code as {info[end].short}", False)
        beside = [stand.get(path[lo], path[lo]), sha, stand.get(path[hi], path[hi])]
        measure(beside, min_rounds)
        lo_res, res, hi_res = (load(x) for x in beside)
        why = _skip_reason(res, moved)
        if why:
            say(f"bisect: skipping {info[sha].short} ({why})")
            return Probe(info[sha], ProbeState.SKIP, why, True)
        # `res` has a moved benchmark (else a reason to skip), so `mine` is not empty and all three are read.
        assert res is not None and lo_res is not None and hi_res is not None
        mine = [i for i in moved if i in res.by_id() and res.by_id()[i].ok]
        unsure = [i for i in mine if abs(_leaning(res, lo_res, hi_res, i) - faster) > UNDECIDED]
        if unsure:  # not at the faster level: more rounds of all three before it is placed
            say(f"bisect: {info[sha].short} does not read at the faster level; {min_rounds} more rounds to confirm")
            measure(beside, min_rounds)
            lo_res, res, hi_res = (load(x) for x in beside)
            assert res is not None and lo_res is not None and hi_res is not None  # measured again, in this run
        votes = []
        for i in mine:
            v = diff.judge_one(lo_res, res, i, threshold=cfg.threshold)
            # Unchanged against the good side is good; otherwise the level it is nearer decides.
            votes.append(v.verdict != Kind.UNCHANGED and _leaning(res, lo_res, hi_res, i) > 0.5)
        state = ProbeState.BAD if sum(votes) * 2 > len(votes) else ProbeState.GOOD
        return Probe(info[sha], state, measured=True)

    def search() -> tuple[int, int]:
        lo, hi = 0, len(path) - 1
        while hi - lo > 1:
            open_ = [k for k in range(lo + 1, hi) if path[k] not in probes]
            if not open_:
                break  # every commit left between is skipped: the answer is a range
            mid = (lo + hi) // 2
            k = min(open_, key=lambda k: (abs(k - mid), k))
            p = probes[path[k]] = classify(k, lo, hi)
            if p.state == ProbeState.GOOD:
                lo = k
            elif p.state == ProbeState.BAD:
                hi = k
        return lo, hi

    lo, hi = search()
    ends_ = (stand.get(path[lo], path[lo]), stand.get(path[hi], path[hi]))
    verdicts, inconclusive = _confirm(cfg, ends_, moved, direction, measure, load, say)
    if inconclusive:
        # A probe placed on the wrong side (its rounds caught by a busy minute) ends the search where
        # nothing moves: search once more, each probe re-measured beside its brackets with the rounds
        # it has plus more; skipped commits stay skipped (they fail the same way again).
        say("bisect: the commit the search ended on does not confirm; searching again with more rounds")
        for sha in [s for s, p in probes.items() if p.state != ProbeState.SKIP and s not in (good, bad)]:
            del probes[sha]
        lo, hi = search()
        ends_ = (stand.get(path[lo], path[lo]), stand.get(path[hi], path[hi]))
        verdicts, inconclusive = _confirm(cfg, ends_, moved, direction, measure, load, say)
    candidates = [info[path[k]] for k in range(lo + 1, hi + 1) if not _same_as_parent(code, path, k)]
    order = {sha: n for n, sha in enumerate(path)}
    listed = sorted(probes.values(), key=lambda p: order[p.info.sha])
    return Bisected(
        info[good],
        info[bad],
        info[path[lo]],
        candidates,
        direction,
        moved,
        verdicts,
        listed,
        len(path),
        inconclusive=inconclusive,
    )


def _same_as_parent(code: dict[str, str], path: list[str], k: int) -> bool:
    return bool(code.get(path[k])) and code.get(path[k]) == code.get(path[k - 1])


def _confirm(cfg, ends, moved, direction, measure, load, say) -> tuple[list, str]:
    """The answer's own verdict against the last good commit, in this run; "" or why it is inconclusive.

    A culprit is named only when it moved against its parent the way GOOD
    and BAD did: once more rounds of both (interleaved) before saying not.
    """
    lo, hi = ends
    parent, last = load(lo), load(hi)
    if parent is None or last is None:
        return [], f"{lo[:10]} or {hi[:10]} has no rounds of this run"

    def judged():
        return [diff.judge_one(parent, last, i, threshold=cfg.threshold) for i in moved]

    verdicts = judged()
    if not any(v.verdict == direction for v in verdicts):
        say(f"bisect: {hi[:10]} against {lo[:10]} is not a {direction} yet; more rounds of both")
        measure([lo, hi], stats.RECOMMENDED_ROUNDS)
        parent, last = load(lo), load(hi)
        verdicts = judged()
    if any(v.verdict == direction for v in verdicts):
        return verdicts, ""
    shown = ", ".join(f"{v.verdict} {v.ratio - 1:+.1%}" if v.ratio else str(v.verdict) for v in verdicts)
    return verdicts, (
        f"the commit the search ended on does not move against its parent when both are measured together ({shown}): "
        "the change is smaller than the noise here, or spread over several commits; "
        "`regress compare` the ends with --measure, or bisect a narrower range"
    )
