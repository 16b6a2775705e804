"""`track_*` functions and `@regress.track(...)`: a number of the user's own, measured at each commit.

    @regress.track(unit="parameters", better="lower")
    def model_size():
        return sum(p.numel() for p in make_model().parameters())

A plain module-level `track_*` function is the same with no unit and lower
being better. The function is called once a round, in the worker, and must
return a real number (an int, a float, or a one-element tensor).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from regress.core.kinds import Better


class TrackDefinition:
    # Discovery recognises it by this marker (like BenchmarkDefinition's).
    __regress_track__ = True

    def __init__(self, fn: Callable[[], Any], *, unit: str = "", better: str = "lower", label: str | None = None):
        if better not in [b.value for b in Better]:
            raise ValueError(f"{fn.__name__}: better= must be 'lower' or 'higher', got {better!r}")
        self.fn = fn
        self.__wrapped__ = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__module__ = fn.__module__
        self.unit = str(unit)
        self.better = Better(better)
        self.label = label

    def __call__(self):
        return self.fn()

    def value(self) -> float:
        """Call the function; its result as a finite float, or TypeError/ValueError saying why not."""
        got = self.fn()
        if hasattr(got, "item") and callable(got.item):
            got = got.item()
        if isinstance(got, bool) or not isinstance(got, (int, float)):
            raise TypeError(f"{self.__name__} returned {type(got).__name__}; a track function must return a number")
        if not math.isfinite(got):
            raise ValueError(f"{self.__name__} returned {got}; a track function must return a finite number")
        return float(got)


def track(fn: Callable | None = None, *, unit: str = "", better: str = "lower", label: str | None = None):
    """Mark a function as a tracked value; see the module docstring."""

    def wrap(f: Callable) -> TrackDefinition:
        return TrackDefinition(f, unit=unit, better=better, label=label)

    return wrap(fn) if fn is not None else wrap
