"""What each benchmark can detect, on the site: the newest commit's figures per series (`analysis/detectable.py`)
for the chart pages' line under the title, and a verdict's figure for the overview's tables.

The chart pages read theirs from `data/detects.js`, written at every build; regress.js sets the line's
text (never HTML).
"""

from __future__ import annotations

from regress.analysis import detectable
from regress.analysis.detectable import Seen
from regress.analysis.verdict import Verdict
from regress.core.records import BenchmarkId
from regress.output import detects
from regress.report.files import script_json
from regress.report.links import bench_slug
from regress.storage import summary

REL = "data/detects.js"


def of_series(
    store, s, *, threshold: float, rounds: int, most_rounds: int, noise: dict[BenchmarkId, float]
) -> dict[BenchmarkId, Seen]:
    """Each benchmark's figures at the series' newest commit (`s`: a `data.Series` with its recent verdicts;
    `noise`: its history's, `detectable.series_noise`)."""
    n = len(s.history)
    if not n:
        return {}
    shas = [c.commit.sha for c in s.history[-2:]]
    light = summary.light_or_file(store, s.machine, s.env, shas)
    newest = light.get(shas[-1])
    if newest is None:
        return {}
    before = light.get(shas[0]) if n > 1 else None
    across = s.table is not None and not detectable.shares_a_run(s.table, n - 1)
    found = detectable.each(
        newest,
        threshold=threshold,
        rounds=rounds,
        most_rounds=most_rounds,
        before=before,
        history=noise,
        apart=s.apart,
        across_runs=across,
    )
    return {x.id: x for x in found}


def script(series, threshold: float) -> str:
    """data/detects.js: per series, by chart slug, [the line, whether the threshold is within reach]."""
    data = {
        "threshold": threshold,
        "series": {
            s.name: {
                bench_slug(bid): [detects.line(x), x.found is not None and x.found.reaches]
                for bid, x in s.detects.items()
            }
            for s in series
        },
    }
    return f"window.REGRESS_DETECTS = {script_json(data)};\n"


def cell(v: Verdict | None, threshold: float, cores: int) -> dict:
    """A verdict's figure as an overview cell: its text ("3.1%"), its tooltip, and whether it falls short."""
    if v is None or v.detectable is None:
        return {"text": "", "note": "", "short": False}
    return {
        "text": detects.pct(v.detectable),
        "note": detects.note(v, threshold, cores),
        "short": not detects.reaches(v, threshold),
    }
