"""How each benchmark is timed: one declaration of the settings, their defaults included.

`[tool.regress]` sets them (`config.Config`) and each commit's results keep
them (`records.Settings`); both are a `Timing`, so the defaults are written once.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Timing:
    min_run_time: float = 0.2  # seconds of torch's blocked_autorange per round
    warmup: int = 1  # calls before timing
    timeout: float = 600.0  # seconds a benchmark may take before its worker is stopped
