"""How regress writes numbers for people: one time format, one percent, one count (used by verdict reasons and every renderer)."""

from __future__ import annotations

_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"))


def fmt_time(seconds: float | None, missing: str = "-") -> str:
    """4 significant figures in the largest unit that keeps the number >= 1."""
    if seconds is None:
        return missing
    if not seconds > 0:
        return f"{seconds:g} s"
    for scale, unit in _UNITS:
        if seconds >= scale or scale == 1e-9:
            value = seconds / scale
            return f"{value:.4g} {unit}" if value >= 1000 else f"{value:#.4g} {unit}".replace(". ", " ")
    raise AssertionError  # pragma: no cover


def percent(ratio: float | None, missing: str = "") -> str:
    """+4.2% / -3.0% for a ratio of head to base."""
    return missing if ratio is None else f"{(ratio - 1) * 100:+.1f}%"


def fmt_count(count: float | None) -> str:
    return "-" if count is None else f"{round(count):,}"


_BINARY = ("B", "KiB", "MiB", "GiB", "TiB")


def binary_unit(n: float) -> tuple[int, str]:
    """(scale, name) of the largest binary unit that keeps `n` bytes at 1 or more: (1024, "KiB")."""
    k = 0
    while k < len(_BINARY) - 1 and abs(n) >= 1024 ** (k + 1):
        k += 1
    return 1024**k, _BINARY[k]


def fmt_bytes(n: float | None) -> str:
    """1536 -> '1.50 KiB'; exact below 1 KiB."""
    if n is None:
        return "-"
    scale, unit = binary_unit(float(n))
    return f"{int(n)} B" if scale == 1 else f"{n / scale:.2f} {unit}"


def fmt_value(x: float | None) -> str:
    return "-" if x is None else f"{x:.6g}"
