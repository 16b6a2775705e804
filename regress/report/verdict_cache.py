"""The site's verdicts and change points, kept in the memo (`storage/memo.py`) between builds.

`CachedCompare` stands in for `diff.compare` in `data.judge_recent`: it keeps
each comparison's verdicts under a digest of the files' content digests, the
threshold and the same-code sha, with the allowance between separate runs
(`apart`) each benchmark asked for. On reading, the benchmarks whose allowance
moved are judged again alone (`diff.compare(only=...)`) and the rest kept, their
allowance notes brought up to date. A miss judges the light copies
(`storage/summary.py`). Where the memo verifies, every comparison that read
kept verdicts is judged again whole and must say the same.

A series' change points are kept too (kind STEPS, `steps_inputs`).
"""

from __future__ import annotations

import dataclasses

from regress.analysis import diff
from regress.analysis.changepoints import Step, judge_across
from regress.analysis.diff import compare, with_neighbours
from regress.analysis.runs import Allowance
from regress.analysis.verdict import Verdict, order_key
from regress.core.kinds import Kind
from regress.core.records import BenchmarkId, CommitResult
from regress.storage import memo, summary
from regress.storage.memo import Memo

# The memo's kinds: the recent comparisons whole, bare (before the blip rule: `__call__`), the candidate steps' (`across`),
# and a series' change points.
WHOLE, BARE, ACROSS, STEPS = "verdicts", "bare verdicts", "step verdicts", "steps"

_FIELDS = [f.name for f in dataclasses.fields(Verdict)]
assert _FIELDS[:2] == ["id", "verdict"]  # `verdicts_of` makes the first two anew; the rest are stored as they are
_REASON = _FIELDS.index("reason")
_STEP_FIELDS = [f.name for f in dataclasses.fields(Step)]


def bid_fields(b: BenchmarkId) -> list:
    return [b.label, b.sub_label, b.description, b.num_threads]


def to_tree(verdicts: list[Verdict], asked: dict[BenchmarkId, Allowance]) -> dict:
    """Verdicts and the allowances they asked for, as the memo keeps them: a row a verdict, its fields
    in Verdict's order."""
    rows = [[bid_fields(v.id), Kind(v.verdict).value, *(getattr(v, f) for f in _FIELDS[2:])] for v in verdicts]
    apart = [[bid_fields(b), a.sigma, a.pairs, a.within, a.within_pairs] for b, a in asked.items()]
    return {"verdicts": rows, "apart": apart}


def from_tree(tree: dict) -> tuple[list[Verdict], dict[BenchmarkId, Allowance]]:
    rows, asked = _rows(tree)
    return verdicts_of(rows, {}, None), asked


def _rows(tree: dict) -> tuple[list[list], dict[BenchmarkId, Allowance]]:
    """The kept verdicts' rows (made into verdicts by `verdicts_of`) and the allowances they asked for."""
    rows = tree["verdicts"]
    if not isinstance(rows, list) or not all(isinstance(r, list) and len(r) == len(_FIELDS) for r in rows):
        raise ValueError("not a kept entry's rows")
    return rows, {BenchmarkId(*b[0]): Allowance(*b[1:]) for b in tree["apart"]}


def verdicts_of(rows: list[list], asked: dict[BenchmarkId, Allowance], apart) -> list[Verdict]:
    """The verdicts, each allowance note as the history now gives it (the same sigma, perhaps more pairs)."""
    notes: dict[tuple, list[tuple[str, str]]] = {}
    ids: dict[tuple, BenchmarkId] = {}
    out = []
    for row in rows:
        key = tuple(row[0])
        bid = ids.get(key)
        if bid is None:
            bid = ids[key] = BenchmarkId(*key)
        v = object.__new__(Verdict)  # not Verdict's __init__, which sets each frozen field through a call
        v.__dict__.update(zip(_FIELDS, row))
        v.__dict__.update(id=bid, verdict=Kind(row[1]))
        was = asked.get(v.id)
        if was is not None:
            now = apart(v.id)
            if now != was:
                if (was, now) not in notes:
                    pairs = [(was.describe(), now.describe()), (was.describe_within(), now.describe_within())]
                    notes[was, now] = [(old, new) for old, new in pairs if old and old != new]
                reason = row[_REASON]
                for old, new in notes[was, now]:
                    reason = reason.replace(old, new)
                v.__dict__["reason"] = reason
        out.append(v)
    return out


def steps_tree(steps: list[Step]) -> list:
    """A series' change points as the memo keeps them."""
    return [[bid_fields(s.id), *(getattr(s, f) for f in _STEP_FIELDS[1:])] for s in steps]


def steps_from_tree(tree: list) -> list[Step]:
    out = []
    for bid, *rest in tree:
        fields = dict(zip(_STEP_FIELDS[1:], rest, strict=True))
        out.append(Step(id=BenchmarkId(*bid), **{**fields, "direction": Kind(fields["direction"])}))
    return out


def steps_inputs(digests: dict[str, str], shas: list[str], *, threshold: float, code: dict[str, str]) -> str | None:
    """What a series' change points are kept under (kind STEPS): its files in history order `shas`, by
    their content digests, the threshold and the commits' code identities."""
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
        """`digests`: the files' content digests as the summary has them, where the caller read them already."""
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
        """The sides' light copies (the history's records may be headers only), read once each, from the
        summary; a file only where the summary has none."""
        missing = [c for c in sides if c is not None and c.commit.sha not in self.light]
        if missing:
            found = summary.light_or_file(self.store, self.machine, self.env, [c.commit.sha for c in missing])
            for c in missing:
                self.light[c.commit.sha] = found.get(c.commit.sha) or c
        return [None if c is None else self.light[c.commit.sha] for c in sides]

    def _kept(self, key: str | None, apart, judge, *, kind: str = WHOLE, tally: bool = True) -> list[Verdict]:
        """The verdicts kept under `kind` and `key`, those whose allowance moved judged again (their notes
        brought up to date), else `judge(apart, only)`'s, each allowance it asks for recorded, and kept.
        `tally`: counted in hits, misses and partial (a bare comparison is not: `__call__`)."""
        tree = self.memo.find(kind, key) if key is not None else None
        # moved: the benchmarks whose allowance moved since; None (judge every benchmark) where nothing is
        # kept, it does not read back, or it asked for allowances this comparison is not given.
        kept: list[Verdict] = []
        asked: dict[BenchmarkId, Allowance] = {}
        moved: set[BenchmarkId] | None = None
        try:
            if tree is not None:
                rows, asked = _rows(tree)
                if asked and apart is None:
                    asked = {}
                else:
                    moved = {b for b, a in asked.items() if _moved(a, apart(b))}
                    if moved:
                        rows = [r for r in rows if BenchmarkId(*r[0]) not in moved]
                        asked = {b: a for b, a in asked.items() if b not in moved}
                    kept = verdicts_of(rows, asked, apart)
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
            self.memo.put(kind, key, to_tree(verdicts, {**asked, **fresh}))
        return verdicts

    def _verify(self, kind: str, verdicts: list[Verdict], asked: dict, apart, judge) -> None:
        """The verdicts a comparison gave from kept ones, as judging it afresh gives them (StaleValue
        where not). Uncounted."""
        counts = self.hits, self.misses, self.partial, self.rejudged
        again, fresh = _recording(judge, apart, None)
        self.hits, self.misses, self.partial, self.rejudged = counts
        again = sorted(again, key=order_key)
        self.memo.check(
            kind, to_tree(verdicts, dict(sorted(asked.items()))), to_tree(again, dict(sorted(fresh.items())))
        )

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

        key = self._key((table.history[before], table.history[after]), threshold, f"across {bid_fields(bid)}")
        found = self._kept(key, apart, judge, kind=ACROSS)
        return found[0] if found else None
