"""`regress bisect`: the first commit between GOOD and BAD where a benchmark's level moved.

A binary search over the first-parent commits from GOOD to BAD. Each probed
commit is measured with the round engine (`rounds.measure_rounds`, the
configured plan; what is stored already is reused, what is measured is
stored) and judged with compare's rules (`diff.judge_one`) against GOOD: it
is bad when it moved the way BAD did, good when it is still where GOOD was
(unchanged), and, when noisy, sides with the level it is nearer. A commit
that fails to build, import or run the benchmark is skipped,
as `git bisect skip` would; if skips surround the answer it is a range.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable

from regress.analysis import diff, stats
from regress.core.config import Config
from regress.core.errors import RegressError
from regress.core.kinds import CHANGES, FailureKind, Kind
from regress.core.records import BenchmarkId, CommitInfo, CommitResult
from regress.measure import rounds
from regress.storage import gitrepo
from regress.storage.store import Store


@dataclass(frozen=True)
class Probe:
    info: CommitInfo
    state: str  # "good" | "bad" | "skip"
    why: str = ""
    measured: bool = False  # by this run (not only read from the store)


@dataclass(frozen=True)
class Bisected:
    good: CommitInfo
    bad: CommitInfo
    last_good: CommitInfo
    candidates: list[CommitInfo]  # the first bad commit is one of these (one when exact)
    direction: Kind  # how BAD moved from GOOD
    ids: list[BenchmarkId]
    verdicts: list[diff.Verdict]  # the first bad commit against its parent
    probes: list[Probe] = field(default_factory=list)
    commits: int = 0  # commits between GOOD and BAD, both included

    @property
    def first_bad(self) -> CommitInfo | None:
        return self.candidates[0] if len(self.candidates) == 1 else None

    @property
    def measured(self) -> int:
        return sum(p.measured for p in self.probes)

    @property
    def skipped(self) -> list[Probe]:
        return [p for p in self.probes if p.state == "skip"]


def _enough(result: CommitResult | None, wanted: re.Pattern, min_rounds: int) -> bool:
    """Whether what is stored already settles this commit: the benchmarks have their rounds, or it can't run."""
    if result is None:
        return False
    mine = [r for r in result.results if wanted.search(str(r.id))]
    if not mine:
        return any(f.kind in (FailureKind.BUILD, FailureKind.SUITE) for f in result.failures)
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


def _nearer_bad(v: diff.Verdict, good_level: float, bad_level: float) -> bool:
    if v.head_level is None:
        return False
    return abs(math.log(v.head_level / bad_level)) < abs(math.log(v.head_level / good_level))


def bisect(
    cfg: Config,
    good: str,
    bad: str,
    *,
    bench: str,
    announce: Callable[[int, int, CommitInfo], None] | None = None,
    say: Callable[[str], None] = lambda line: None,
) -> Bisected:
    repo = gitrepo.open_repo(cfg.root)
    if good == bad:
        raise RegressError("GOOD and BAD are the same commit; bisect needs a good commit and a later bad one")
    if not gitrepo.is_ancestor(repo, good, bad):
        raise RegressError(f"{good[:10]} is not an ancestor of {bad[:10]}; give the older, good commit first")
    path = gitrepo.first_parent_path(repo, good, bad)
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
            raise RegressError(f"{side} {sha[:10]} has no result for --bench {bench!r} ({why}); check the pattern with `regress list`")
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
        votes = []
        for i in moved:
            if i not in res.by_id() or not res.by_id()[i].ok:
                continue
            v = diff.judge_one(g, res, i, threshold=cfg.threshold)
            if v.verdict in CHANGES or v.verdict == Kind.UNCHANGED:
                votes.append(v.verdict == direction)
            else:  # noisy: the level it is nearer decides
                votes.append(_nearer_bad(v, ends[i].base_level, ends[i].head_level))
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
