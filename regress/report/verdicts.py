"""The site's verdicts (`CachedCompare`, for `diff.compare`) and change points, kept in the memo between
builds by their files' digests, the threshold and the same-code sha, with the allowances they asked for."""

from __future__ import annotations

import dataclasses
from typing import Any

from regress.analysis import diff
from regress.analysis.changepoints import Step, judge_across
from regress.analysis.diff import Allowance, compare, with_neighbours
from regress.analysis.judge import Verdict, order_key
from regress.core import trees
from regress.core.kinds import Kind
from regress.core.records import BenchmarkId, CommitResult
from regress.storage import memo, summary
from regress.storage.memo import Memo

# The memo's kinds: comparisons whole, bare (before the blip rule), the candidate steps', change points.
WHOLE, BARE, ACROSS, STEPS = "verdicts", "bare verdicts", "step verdicts", "steps"
trees.record(BenchmarkId, Kind, Allowance, Step, Verdict)


def _tree(verdicts: list[Verdict], asked: dict[BenchmarkId, Allowance]) -> dict:
    return {"verdicts": verdicts, "apart": list(asked.items())}


def _read(tree: Any) -> tuple[list[Verdict], dict[BenchmarkId, Allowance]]:
    """`_tree`'s verdicts and allowances back (ValueError where they are not)."""
    verdicts, asked = tree["verdicts"], dict(tree["apart"])
    if not all(isinstance(v, Verdict) for v in verdicts) or not all(
        isinstance(b, BenchmarkId) and isinstance(a, Allowance) for b, a in asked.items()
    ):
        raise ValueError("not a kept comparison")
    return verdicts, asked


def steps_of(tree: Any) -> list[Step]:
    """A series' change points as the memo keeps them (ValueError where the tree is not)."""
    if not isinstance(tree, list) or not all(isinstance(s, Step) for s in tree):
        raise ValueError("not kept change points")
    return tree


def _noted(verdicts: list[Verdict], asked: dict[BenchmarkId, Allowance], apart) -> list[Verdict]:
    """The verdicts, each allowance note as the history now gives it (the same sigma, perhaps more pairs)."""
    notes: dict[tuple, list[tuple[str, str]]] = {}
    out = []
    for v in verdicts:
        was = asked.get(v.id)
        now: Allowance | None = apart(v.id) if was is not None else None
        if was is not None and now is not None and now != was:
            if (was, now) not in notes:
                pairs = [(was.describe(), now.describe()), (was.describe_within(), now.describe_within())]
                notes[was, now] = [(old, new) for old, new in pairs if old and old != new]
            reason = v.reason
            for old, new in notes[was, now]:
                reason = reason.replace(old, new)
            v = dataclasses.replace(v, reason=reason)
        out.append(v)
    return out


def steps_inputs(digests: dict[str, str], shas: list[str], *, threshold: float, code: dict[str, str]) -> str | None:
    """What a series' change points are kept under (kind STEPS)."""
    return memo.files_digest(digests, shas, threshold, sorted(code.items()))


def _moved(was: Allowance, now: Allowance) -> bool:
    """Whether `now` may judge otherwise than `was` (more pairs giving the same allowances change only notes)."""
    return (was.sigma, was.within) != (now.sigma, now.within)


def _recording(judge, apart, only) -> tuple[list[Verdict], dict[BenchmarkId, Allowance]]:
    """`judge(apart, only)`'s verdicts, and each allowance they asked for."""
    fresh: dict[BenchmarkId, Allowance] = {}

    def recorded(bid: BenchmarkId) -> Allowance:
        fresh[bid] = apart(bid)
        return fresh[bid]

    return judge(recorded if apart is not None else None, only), fresh


class CachedCompare:
    """`diff.compare` for one series of a site build, its verdicts kept in `memo` between builds."""

    def __init__(self, store, memo: Memo, machine: str, env: str, *, digests: dict[str, str] | None = None):
        self.store, self.memo, self.machine, self.env = store, memo, machine, env
        self.light: dict[str, CommitResult] = {}
        self.digests = summary.digests(store, machine, env) if digests is None else digests
        # Comparisons kept whole, judged whole, and kept but for the benchmarks whose allowance moved;
        # `rejudged` counts the benchmarks the differ judged (not those a kept bare comparison gave, see __call__).
        self.hits = self.misses = self.partial = self.rejudged = 0

    def _key(self, sides, threshold: float, same_code: str) -> str | None:
        shas = [None if c is None else c.commit.sha for c in sides]
        return memo.files_digest(self.digests, shas, threshold, same_code)

    def _light(self, sides) -> list[CommitResult | None]:
        """The sides' light copies, read once each from the summary (else their files)."""
        missing = [c for c in sides if c is not None and c.commit.sha not in self.light]
        if missing:
            found = summary.light_or_file(self.store, self.machine, self.env, [c.commit.sha for c in missing])
            for c in missing:
                self.light[c.commit.sha] = found.get(c.commit.sha) or c
        return [None if c is None else self.light[c.commit.sha] for c in sides]

    def _kept(self, key: str | None, apart, judge, *, kind: str = WHOLE, tally: bool = True) -> list[Verdict]:
        """The verdicts kept under `kind` and `key`, those whose allowance moved judged again, else
        `judge(apart, only)`'s, kept with the allowances asked for; `tally`: counted in hits, misses, partial."""
        tree = self.memo.find(kind, key) if key is not None else None
        # moved: the benchmarks whose allowance moved since; None (judge every benchmark) where nothing is
        # kept, it does not read back, or it asked for allowances this comparison is not given.
        kept: list[Verdict] = []
        asked: dict[BenchmarkId, Allowance] = {}
        moved: set[BenchmarkId] | None = None
        try:
            if tree is not None:
                kept, asked = _read(tree)
                if asked and apart is None:
                    kept, asked = [], {}
                else:
                    moved = {b for b, a in asked.items() if _moved(a, apart(b))}
                    if moved:
                        kept = [v for v in kept if v.id not in moved]
                        asked = {b: a for b, a in asked.items() if b not in moved}
                    kept = _noted(kept, asked, apart)
        except (ValueError, KeyError, TypeError, AttributeError, IndexError):  # garbled: made afresh, and replaced
            kept, asked, moved = [], {}, None
        if moved is not None and not moved:
            self.hits += tally
            if self.memo.verify:
                self._verify(kind, kept, {b: apart(b) for b in asked}, apart, judge)
            return kept
        if moved is None:
            self.misses += tally
        else:
            self.partial += tally
        judged, fresh = _recording(judge, apart, moved)
        verdicts = sorted(kept + judged, key=order_key)
        if moved is not None and self.memo.verify:
            self._verify(kind, verdicts, {**{b: apart(b) for b in asked}, **fresh}, apart, judge)
        if key is not None:
            self.memo.put(kind, key, _tree(verdicts, {**asked, **fresh}))
        return verdicts

    def _verify(self, kind: str, verdicts: list[Verdict], asked: dict, apart, judge) -> None:
        """StaleValue where judging afresh does not give `verdicts`; uncounted."""
        counts = self.hits, self.misses, self.partial, self.rejudged
        again, fresh = _recording(judge, apart, None)
        self.hits, self.misses, self.partial, self.rejudged = counts
        again = sorted(again, key=order_key)
        self.memo.check(kind, _tree(verdicts, dict(sorted(asked.items()))), _tree(again, dict(sorted(fresh.items()))))

    def __call__(self, base, head, *, threshold: float, before=None, after=None, apart=None, same_code: str = ""):
        """`diff.compare(base, head, ...)`. Kept twice: whole, and bare (`compare` without the
        neighbours, as `diff.with_neighbours` takes it), so a comparison whose `after` neighbour is new
        applies only the blip rule again, to its few changes."""

        def bare(apart, only):
            light = self._light((base, head))
            found = compare(light[0], light[1], threshold=threshold, apart=apart, same_code=same_code, only=only)
            self.rejudged += len(found)
            return found

        if same_code or (before is None and after is None):  # no neighbour rule applies: bare is whole
            return self._kept(self._key((base, head, before, after), threshold, same_code), apart, bare)
        bare_key = self._key((base, head), threshold, same_code)

        def judge(apart, only):
            # The benchmarks whose allowance moved are judged again alone; else the kept bare verdicts.
            made = bare(apart, only) if only is not None else self._kept(bare_key, apart, bare, kind=BARE, tally=False)
            if base is None or head is None or not any(map(diff.may_blip, made)):
                return made  # no neighbour can move any of them: none read
            light = self._light((base, head, before, after))
            return with_neighbours(made, *light, threshold=threshold, apart=apart)

        return self._kept(self._key((base, head, before, after), threshold, same_code), apart, judge)

    def across(self, table, before: int, after: int, bid: BenchmarkId, threshold: float, apart):
        """`changepoints.judge_across`'s verdict on a candidate step, kept as `__call__`'s are."""

        def judge(apart, only):  # one benchmark: judged again whole
            v = judge_across(table, before, after, bid, threshold, apart)
            self.rejudged += v is not None
            return [] if v is None else [v]

        key = self._key((table.history[before], table.history[after]), threshold, f"across {bid!r}")
        found = self._kept(key, apart, judge, kind=ACROSS)
        return found[0] if found else None
