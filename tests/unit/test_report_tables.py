"""The report's Compare tables: torch's number formatting (trim_significant_figures), mirrored in bulk, and the level in its cells."""

from __future__ import annotations

import random
from decimal import Decimal

import factories
import numpy as np

from regress.analysis import stats
from regress.core.blocks import summarize_times
from regress.core.records import (
    BenchmarkResult,
    CommitResult,
    Sample,
    TaskSpec,
)
from regress.report.data import Series, summarize
from regress.report.data_files import format_tables, label_tables, layout_for, select_unit, trim_sigfig


def _commit(i: int, results) -> CommitResult:
    return factories.commit(f"{i:040x}", *results, machine="m", env="e", when=1_700_000_000 + i, subject=f"commit {i}")


def test_label_tables_show_the_level_in_torchs_units():
    """A label page shows the level (what its verdict colours use, and the overview and charts
    show), to 4 significant figures in the unit torch's Compare would pick for the table."""
    rng = random.Random(7)
    specs = [
        TaskSpec(stmt=f"f{sub}{desc}", label="ops", sub_label=sub, description=desc, num_threads=threads)
        for threads in (1, 4)
        for sub in ("[1, 64]", "[64, 1024]", "[1024, 10000]")
        for desc in ("mul/sum", "bmm")
    ]
    history = []
    for i in range(12):
        results = []
        for spec in specs:
            if rng.random() < 0.15:  # not measured at this commit: a blank cell
                continue
            level = 10 ** rng.uniform(-7.5, -1.5)
            noise = rng.choice([0.0005, 0.005, 0.03, 0.2])
            number = max(1, int(1e-3 / level))
            samples = tuple(
                Sample(
                    number, tuple(level * number * rng.lognormvariate(0, noise) for _ in range(rng.choice([3, 7, 10])))
                )
                for _ in range(rng.choice([1, 2, 3]))
            )
            results.append(BenchmarkResult(spec, "here", samples))
        rng.shuffle(results)
        history.append(_commit(i, results))

    series = summarize(Series("m", "e", history), threshold=0.05)
    grid = layout_for(sorted(series.ids))
    tables = label_tables(series, grid)
    assert [t["c"] for t in tables] == list(range(12))
    for table in tables:
        commit = history[table["c"]]
        levels = {r.id: stats.level(stats.round_values(r)) for r in commit.results}
        unit, scale = select_unit(min(levels.values()))
        assert table["unit"] == unit
        shown = {bid: cell[0] for bid, cell in zip(grid.cells, table["cells"]) if cell is not None}
        assert set(shown) == set(levels)  # blank where not measured
        for bid, text in shown.items():
            value = Decimal(text)
            # Within the last shown digit (or the fourth significant one: 390400 ns): torch rounds to
            # the figures, then to the column's decimals (those of its least precise cell).
            digit = max(Decimal(1).scaleb(value.as_tuple().exponent), Decimal(1).scaleb(value.adjusted() - 3))
            assert abs(float(value) * scale - levels[bid]) <= float(digit) * scale * 1.001, (bid, text, levels[bid])
    figures = series.table.torch[3]  # torch's significant figures of each measurement
    figures = figures[~np.isnan(figures)].astype(int)
    assert set(figures.tolist()) == {1, 2, 3, 4}  # every precision torch can pick was exercised


def test_summaries_and_units_match_torch_measurements():
    from torch.utils.benchmark.utils import common

    rng = random.Random(3)
    for _ in range(300):
        n = rng.choice([1, 2, 5, 10, 31])
        number = rng.choice([1, 100])
        level, noise = 10 ** rng.uniform(-9.5, 0.5), rng.choice([1e-4, 1e-2, 0.3])
        raw = [level * number * rng.lognormvariate(0, noise) for _ in range(n)]
        m = common.Measurement(number, raw, common.TaskSpec("x", "pass"))
        _q1, median, _q3, figures = (float(a[0]) for a in summarize_times(np.array([[t / number for t in raw]])))
        assert median == m.median or abs(median - m.median) < 1e-15
        assert figures == m.significant_figures
        assert select_unit(median) == common.select_unit(median)
        for k in (1, 2, 3, 4):
            assert float(trim_sigfig(median / 1e-6, k)) == common.trim_sigfig(median / 1e-6, k)


def test_format_tables_leaves_missing_cells_empty():
    medians = np.array([[1.5e-6, np.nan, 2.25e-3], [np.nan, np.nan, np.nan]])
    figures = np.array([[3, 1, 2], [1, 1, 1]])
    units, texts = format_tables(medians, figures, np.array([0, 1, 1]))
    assert units[0] == "us" and texts[0] == ["1.50", None, "2200"]
    assert units[1] == "" and texts[1] == [None, None, None]
