"""The segmentation behind `changepoints`: the history's own noise scale, outliers clipped, change points placed."""

from __future__ import annotations

import contextlib
import math
from typing import Protocol

import numpy as np

from regress.analysis import normal, partition

# Penalty per change point, in squared units of the history's noise.
PENALTY = 20.0
# Running-median window and clipping distance (noise units) that tame outliers.
WINDOW = 5
CLIP = 3.0
# Commits on a new level before it counts: 2, so one outlier is never a step.
MIN_SEGMENT = 2
# The noise scale never falls below this (log units), so a nearly constant
# history doesn't turn every wobble into a step.
MIN_NOISE = 0.002
# The calibration span: a benchmark's noise scale, the search's centre and the level fit's Huber scale
# are read from its first this many levels (all of them in a shorter history), so what a history said
# of its older commits stays said as it grows (docs/statistics.md, "The calibration span").
CALIBRATION = 500
# A search is carried on from a checkpoint at most this many points short of the newest final one,
# else from an anchor: a checkpoint at a multiple of ANCHOR points, at least ANCHOR short of the newest
# final one (a paired push moves the fitted levels of the last few dozen commits, which the final
# checkpoint of the build before covered; an anchor's points stay as they were).
RESUME_BACK = 8
ANCHOR = 128
ANCHORS_TRIED = 3


def noise_scale(logs: np.ndarray) -> float:
    """Commit-to-commit noise: the scaled MAD of first differences over sqrt(2).

    Differences cancel the level, so the few real steps barely move it.
    """
    if len(logs) < 3:
        return MIN_NOISE
    d = np.diff(logs)
    # scipy.stats.median_abs_deviation(d, scale="normal"), in its own operations.
    mad = float(np.median(np.abs(d - np.median(d)))) / normal.Z_75
    return max(mad / math.sqrt(2), MIN_NOISE)


def robust(logs: np.ndarray, scale: float) -> np.ndarray:
    """Clip each level to within CLIP noise units of its neighbours' running median: a wild commit
    weighs like an ordinary one, while a step moves the running median with it."""
    if len(logs) < 3:
        return logs
    local = running_median(logs)
    return np.clip(logs, local - CLIP * scale, local + CLIP * scale)


def running_median(logs: np.ndarray) -> np.ndarray:
    """The median of each level's WINDOW neighbours, mirrored at the ends (d c b | a b c d | c b a):
    scipy.ndimage.median_filter(size=WINDOW, mode="mirror") to the bit."""
    half = WINDOW // 2
    padded = np.pad(np.asarray(logs, dtype=float), half, mode="reflect")
    return np.median(np.lib.stride_tricks.sliding_window_view(padded, WINDOW), axis=1)


class Kept(Protocol):
    """Where the search keeps its checkpoints between calls (a store of derived values): by content key.
    Where `verify`, a search carried on from a kept checkpoint is done afresh too, and `check`ed."""

    verify: bool

    def get(self, key: str) -> dict | None: ...

    def put(self, key: str, value: dict) -> None: ...

    def check(self, kept: object, fresh: object) -> None: ...


def history_scale(logs: np.ndarray) -> float:
    """A benchmark's commit-to-commit noise (`noise_scale`) as the change points read it: its calibration span's."""
    return noise_scale(np.asarray(logs)[:CALIBRATION])


def calibrated(logs: np.ndarray) -> tuple[np.ndarray, float]:
    """A benchmark's log levels clipped to the edge of its noise (`robust`), and that noise (`history_scale`)."""
    scale = history_scale(logs)
    return robust(logs, scale), scale


def breakpoints_of(
    series: list[tuple[np.ndarray, float]], *, penalty: float = PENALTY, kept: Kept | None = None
) -> list[list[int]]:
    """Per (clipped log levels, noise scale): the start of every segment after the first.

    The exact optimal partition (`partition`) of the levels in noise units, centred on the median of
    the calibration span, every segment at least MIN_SEGMENT long. `kept`: checkpoints of earlier
    searches, by the digest of the points they covered; a series longer than the calibration span is
    carried on from the last one made from the same first points (see RESUME_BACK and ANCHOR), and
    checkpointed at its newest final point (the last whose clipping no newer level can move) and at
    its anchor. The cuts are the same with or without them.
    """
    z = [np.asarray(c, dtype=float) / scale for c, scale in series]
    centred = [v - np.median(v[:CALIBRATION]) if len(v) else v for v in z]
    # Final points: all but the last WINDOW // 2, whose clipping reads levels still to come.
    final = [len(v) - WINDOW // 2 if len(v) > CALIBRATION + WINDOW else 0 for v in centred]
    anchor = [(t - ANCHOR) // ANCHOR * ANCHOR if t >= 2 * ANCHOR else 0 for t in final]
    resume: list[partition.Checkpoint | None] = [None] * len(centred)
    if kept is not None:
        for b, (v, t, a) in enumerate(zip(centred, final, anchor)):
            if not t:
                continue
            anchors = [a - k * ANCHOR for k in range(ANCHORS_TRIED) if a - k * ANCHOR > 0][::-1]
            near = range(max(t - RESUME_BACK, 1, anchors[-1] + 1 if anchors else 1), t + 1)
            keys = partition.digests(v, [*anchors, *near], penalty, MIN_SEGMENT)
            for at in sorted(keys, reverse=True):
                value = kept.get(keys[at])
                if value is not None:
                    with contextlib.suppress(ValueError):
                        resume[b] = partition.from_plain(value)
                        break
    keep_at = [(a, t) if a else (t,) for a, t in zip(anchor, final)]
    found, made = partition.search(centred, penalty, MIN_SEGMENT, resume=resume, keep_at=keep_at)
    if kept is not None and kept.verify and any(c is not None for c in resume):
        kept.check(found, partition.search(centred, penalty, MIN_SEGMENT)[0])
    if kept is not None:
        for c in (c for cs in made for c in cs):
            kept.put(c.digest, partition.plain(c))
    return [cuts if len(v) >= 2 * MIN_SEGMENT else [] for cuts, v in zip(found, z)]
