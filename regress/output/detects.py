"""What each benchmark can detect, as every output writes it: a verdict's figure ("3.1%") and what would
help where it can't catch the threshold; a commit's figures (`analysis/detectable.py`) as `show`'s lines
and `regressions --format json`'s list."""

from __future__ import annotations

from regress.analysis.detectable import Detectable, Seen
from regress.analysis.judge import Verdict

# A figure this close above the threshold still reaches it (as `Detectable.reaches` rounds).
_SLACK = 1e-12


def pct(fraction: float | None) -> str:
    """0.031 -> "3.1%"; "" for no figure."""
    return "" if fraction is None else f"{fraction * 100:.1f}%"


def reaches(v: Verdict, threshold: float) -> bool:
    """The verdict's comparison could catch a change of the threshold (or has no figure to say otherwise)."""
    return v.detectable is None or v.detectable <= threshold + _SLACK


def out_of_reach(verdicts: list[Verdict], threshold: float) -> list[Verdict]:
    """The verdicts whose comparison could not catch a change of the threshold, least able first."""
    return sorted((v for v in verdicts if not reaches(v, threshold)), key=lambda v: -(v.detectable or 0.0))


def advice(v: Verdict, threshold: float, cores: int = 0) -> str:
    """What would let this comparison catch the threshold ("" where it can): `Detectable.advice`'s words."""
    if reaches(v, threshold):
        return ""
    have = min(v.base_rounds, v.head_rounds)
    assert v.detectable is not None
    found = Detectable(have, v.detectable, v.detect_rounds, v.detectable, have, None, threshold)
    return found.advice(v.id.num_threads, cores)


def note(v: Verdict, threshold: float, cores: int = 0) -> str:
    """A figure's explanation (a tooltip): what it means, and what would help where it falls short."""
    if v.detectable is None:
        return ""
    have = min(v.base_rounds, v.head_rounds)
    said = f"the smallest change this comparison could catch, at {have} rounds a side"
    if reaches(v, threshold):
        return f"{said}: a {threshold * 100:g}% change is within reach"
    return f"{said}; {advice(v, threshold, cores)}"


# -- a commit's figures (`detectable.each`) -------------------------------------


def line(s: Seen) -> str:
    """ "detects 3.1% in a paired push at 5 rounds (2.0% at 15); 4.2% in the history[; advice]"."""
    if s.found is None:
        return s.too_few()
    parts = [s.found.short()]
    if s.pooled:
        parts.append("read with the previous commit's rounds")
    return "; ".join(parts + ([s.advice] if s.advice else []))


def lines(seen: list[Seen], *, threshold: float, rounds: int, most_rounds: int) -> list[str]:
    """`regress show`'s block: a heading, then one line a benchmark."""
    if not seen:
        return []
    short = sum(s.found is not None and not s.found.reaches for s in seen)
    t = f"{threshold * 100:g}%"
    head = f"what each benchmark can detect (threshold {t}, the plan's {rounds} to {most_rounds} rounds a side"
    head += f"; {short} of {len(seen)} can't reach {t} at {rounds} rounds)" if short else ")"
    return [head + ":"] + [f"  {s.id}: {line(s)}" for s in seen]


def seen_json(s: Seen) -> dict:
    """One benchmark in `regressions --format json`'s "detectable" list (fractions: 0.031 is 3.1%)."""
    f = s.found
    return {
        "id": str(s.id),
        "label": s.id.label,
        "sub_label": s.id.sub_label,
        "description": s.id.description,
        "num_threads": s.id.num_threads,
        "rounds_measured": s.rounds,
        "paired": None if f is None else f.paired,
        "rounds": None if f is None else f.rounds,
        "most": None if f is None else f.most,
        "most_rounds": None if f is None else f.most_rounds,
        "history": None if f is None else f.history,
        "rounds_for_threshold": s.rounds_for_threshold,
        "reaches": None if f is None else f.reaches,
        "advice": s.too_few() if f is None else s.advice,
    }
