"""The change points' search carried on from a kept checkpoint gives the cuts a search from scratch gives."""

from __future__ import annotations

import numpy as np

from regress.analysis import changepoints, levels


class Memory:
    """A store of checkpoints in a dict (what the memo does for a command), counting hits."""

    verify = False

    def __init__(self) -> None:
        self.values: dict[str, dict] = {}
        self.hits = 0

    def check(self, kept: object, fresh: object) -> None:
        assert kept == fresh

    def get(self, key: str) -> dict | None:
        found = self.values.get(key)
        self.hits += found is not None
        return found

    def put(self, key: str, value: dict) -> None:
        self.values[key] = value


def _series(n: int, seed: int) -> list[tuple[np.ndarray, float]]:
    """Six benchmarks' first n log levels (0 to 5 steps each) of one longer history."""
    rng = np.random.default_rng(seed)
    out = []
    for b in range(6):
        logs = rng.normal(0, 0.01, 1300)
        for at in rng.integers(50, 1190, size=b):
            logs[at:] += rng.choice([-0.1, 0.08, 0.2])
        out.append((changepoints.robust(logs[:n], s := levels.history_scale(logs[:n])), s))
    return out


def test_a_grown_history_carries_on_from_the_last_search_and_finds_the_same_cuts():
    made = Memory()
    first = _series(1200, seed=1)
    assert changepoints.breakpoints_of(first, kept=made) == changepoints.breakpoints_of(first)
    assert len(made.values) == 2 * len(first)  # two a series: at its newest final point, and at its anchor
    final = 1200 - changepoints.REACH
    anchor = (final - changepoints.ANCHOR) // changepoints.ANCHOR * changepoints.ANCHOR
    assert sorted({v["t"] for v in made.values.values()}) == [anchor, final]
    for grown, at in ((1203, final), (1200 + changepoints.RESUME_BACK + 1, anchor)):
        kept = Memory()
        kept.values = dict(made.values)
        longer = _series(grown, seed=1)
        assert [np.array_equal(a[0][:1190], b[0][:1190]) for a, b in zip(first, longer)] == [True] * 6
        assert changepoints.breakpoints_of(longer, kept=kept) == changepoints.breakpoints_of(longer)
        # Carried on from the newest checkpoint within reach: the final one, else the anchor (the same cuts).
        assert kept.hits == len(longer)
        assert {v["t"] for v in kept.values.values()} >= {at, grown - changepoints.REACH}


def test_a_history_whose_newest_levels_moved_carries_on_from_its_anchor():
    """A paired push refits the last few dozen levels: the final checkpoint no longer matches, the anchor
    (at least ANCHOR points back) does, and the cuts are a search from scratch's."""
    made = Memory()
    changepoints.breakpoints_of(_series(1200, seed=1), kept=made)
    moved = [(np.r_[v[: 1200 - 60], v[1200 - 60 :] + 0.001], scale) for v, scale in _series(1201, seed=1)]
    kept = Memory()
    kept.values = dict(made.values)
    assert changepoints.breakpoints_of(moved, kept=kept) == changepoints.breakpoints_of(moved)
    assert kept.hits == len(moved)


def test_a_checkpoint_of_other_points_is_never_resumed():
    kept = Memory()
    changepoints.breakpoints_of(_series(1200, seed=1), kept=kept)
    other = _series(1201, seed=2)  # other levels from the first on
    kept.hits = 0
    assert changepoints.breakpoints_of(other, kept=kept) == changepoints.breakpoints_of(other)
    assert kept.hits == 0


def test_a_history_within_its_calibration_span_is_searched_whole():
    kept = Memory()
    short = _series(levels.CALIBRATION, seed=3)
    assert changepoints.breakpoints_of(short, kept=kept) == changepoints.breakpoints_of(short)
    assert kept.values == {}


def test_a_garbled_checkpoint_is_searched_afresh_not_an_error():
    """A kept checkpoint whose digest matches but whose arrays were cut short (a damaged memo) is a miss."""
    made = Memory()
    changepoints.breakpoints_of(_series(1200, seed=1), kept=made)
    for value in made.values.values():
        value["back"] = value["back"][:-1]
    kept = Memory()
    kept.values = made.values
    longer = _series(1203, seed=1)
    assert changepoints.breakpoints_of(longer, kept=kept) == changepoints.breakpoints_of(longer)
    assert kept.hits == 2 * len(longer)  # the final one and the anchor found, then refused: searched from the start
