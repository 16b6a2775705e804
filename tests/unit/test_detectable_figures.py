"""What each benchmark can detect, from rounds of known spread: a commit's figures (`analysis/detectable.py`)
and how the pull-request comment shows a verdict's figure and names the benchmarks out of reach.

The rounds are spread evenly from a floor to a known height above it (`_spread`), so each figure is fixed:
rounds within 0.3% of their floor catch a 5% change at the plan's 5 rounds; rounds up to 10% above their
floor can't at 5 or 8, but a dozen can; a benchmark of two threads on two cores carries a 5% allowance for
using every core that no number of rounds lowers, and fewer threads is what would help.
"""

from __future__ import annotations

import numpy as np
from factories import bench, commit, in_run
from markdown_it import MarkdownIt
from test_comment_markdown import BASE, HEAD, parse, tables

from regress.analysis import detectable, diff
from regress.core.kinds import Kind
from regress.output import detects, pr_comment
from regress.output.verdicts import md_cell

PLAN = {"threshold": 0.05, "rounds": 5, "most_rounds": 15}


def _spread(level: float, top: float, n: int = 8) -> list[float]:
    """n rounds from `level` up to `top` (log) above it, evenly spread."""
    return (level * np.exp(np.linspace(0.0, top, n))).tolist()


def _commit(sha: str, *, scale: float = 1.0, cores: int = 2, run: str = "r1", few: int = 2):
    return commit(
        sha,
        in_run(bench(_spread(1e-4 * scale, 0.003), sub="calm"), run),
        in_run(bench(_spread(1e-4, 0.10), sub="busy"), run),
        in_run(bench(_spread(1e-4, 0.20), sub="busier <i>"), run),
        in_run(bench(_spread(2e-4, 0.003), sub="wide", threads=2), run),
        in_run(bench(_spread(3e-4, 0.003, few), sub="few <b>|</b>"), run),
        cores=cores,
    )


def _seen(result, **kw) -> dict[str, detectable.Seen]:
    return {s.id.sub_label: s for s in detectable.each(result, **PLAN, **kw)}


def test_the_figures_follow_the_rounds_spread_threads_and_cores():
    seen = _seen(_commit("a"))
    calm, busy, busier, wide = (seen[k] for k in ("calm", "busy", "busier <i>", "wide"))
    # Calm rounds: a 5% change within reach at the plan's minimum, nothing to advise.
    assert calm.found is not None and calm.found.reaches and calm.found.paired < 0.05
    assert calm.advice == "" and calm.rounds_for_threshold == 5 and detects.line(calm).startswith("detects ")
    # Rounds spread 10% above their floor: out of reach at 5 rounds, within it at more.
    assert busy.found is not None and not busy.found.reaches and busy.found.paired > 0.05
    assert busy.found.most < busy.found.paired and 5 < busy.rounds_for_threshold <= 15
    assert (
        busy.advice
        == f"a 5% change needs {busy.rounds_for_threshold} rounds a side (`--min-rounds {busy.rounds_for_threshold}`)"
    )
    # Twice the spread: a larger figure, and more rounds for the threshold.
    assert busier.found.paired > busy.found.paired and busier.rounds_for_threshold > busy.rounds_for_threshold
    # Two threads on two cores: no number of rounds, and fewer threads is named first.
    assert wide.found is not None and not wide.found.reaches and wide.rounds_for_threshold is None
    assert wide.advice.startswith(
        "no number of rounds catches a 5% change here; what would help: fewer threads (it uses 2 of 2 cores)"
    )
    assert "instruction counts (`--mode instructions`)" in wide.advice
    # The same benchmark on a machine of four cores leaves two spare: it can, and nobody tells it otherwise.
    spare = _seen(_commit("b", cores=4))["wide"]
    assert spare.found.reaches and spare.advice == ""


def test_too_few_rounds_say_so_unless_the_commit_before_lends_its_own():
    alone = _seen(_commit("a"))["few <b>|</b>"]
    assert alone.found is None and alone.rounds == 2 and alone.rounds_for_threshold is None
    assert detects.line(alone) == "too few rounds to tell (2 here; 6 in runs of 2 or more are needed)"
    assert detects.seen_json(alone)["advice"] == detects.line(alone) and detects.seen_json(alone)["paired"] is None
    # The commit before measured it in 8 rounds: pooled, as a verdict between the two pools them.
    pooled = _seen(_commit("a"), before=_commit("b", run="r0", few=8))["few <b>|</b>"]
    assert (
        pooled.found is not None
        and pooled.pooled
        and "; read with the previous commit's rounds" in detects.line(pooled)
    )
    # A commit with enough rounds of its own never reads its neighbour's.
    assert not _seen(_commit("a"), before=_commit("b", run="r0"))["calm"].pooled


def test_the_history_figure_is_never_finer_than_the_series_noise_lets_a_step_show():
    rng = np.random.default_rng(0)
    levels = {bid: (1e-4 * np.exp(rng.normal(0, 0.03, 40))).tolist() for bid in _commit("a").by_id()}
    noise = detectable.history_noise(levels)
    assert all(0.015 < n < 0.045 for n in noise.values())  # 3% from commit to commit: a noisy series
    quiet = _seen(_commit("a"))["calm"].found
    seen = _seen(_commit("a"), history=noise)["calm"].found
    assert quiet.history is None and seen.history is not None and seen.history > 0.05 > seen.paired
    assert detectable.history_noise({next(iter(levels)): [1e-4, 1e-4]}) == {}  # two levels tell nothing


def _verdicts() -> list:
    """Real verdicts: calm 20% slower, the others as they were, each side measured in one run."""
    return diff.compare(_commit("b"), _commit("c", scale=1.2), threshold=0.05)


def test_the_comment_shows_each_changed_or_noisy_rows_figure_and_names_those_out_of_reach():
    verdicts = _verdicts()
    by = {v.id.sub_label: v for v in verdicts}
    assert by["calm"].verdict == Kind.REGRESSION and by["calm"].detectable < 0.05
    body = pr_comment.body(verdicts, base=BASE, head=HEAD, threshold=0.05, cores=2)
    tokens = parse(body)
    changed, *rest = tables(tokens)
    assert changed[0][7] == "detects"
    (calm,) = [r for r in changed[1:] if r[0] == "ops / calm"]
    assert calm[7] == f"{by['calm'].detectable * 100:.1f}%"
    folded = {r[0]: r for t in rest for r in t[1:]}
    for name, row in folded.items():  # noisy rows show theirs, unchanged rows none
        v = by[name.removeprefix("ops / ").replace("\\|", "|").replace("&lt;", "<").replace("&gt;", ">")]
        shown = v.verdict == Kind.NOISY and v.detectable is not None  # too few rounds: no figure
        assert row[7] == (f"{v.detectable * 100:.1f}%" if shown else ""), (name, v.verdict)

    # The folded section: every benchmark whose comparison can't catch 5%, least able first, with what would help.
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(body)
    short = detects.out_of_reach(verdicts, 0.05)
    assert {v.id.sub_label for v in short} == {"busy", "busier <i>", "wide"}
    assert "<details><summary>3 benchmarks can't catch a 5% change here</summary>" in body
    items = [line for line in body.splitlines() if line.startswith("- **ops / ")]
    assert [i.split("**")[1] for i in items] == [md_cell(str(v.id)) for v in short]
    assert [v.detectable for v in short] == sorted((v.detectable for v in short), reverse=True)
    (wide,) = [i for i in items if "wide" in i]
    assert f"detects {by['wide'].detectable * 100:.1f}% at 8 rounds a side" in wide
    assert "fewer threads (it uses 2 of 2 cores)" in wide
    (busy,) = [i for i in items if "busy " in i]
    assert f"a 5% change needs {by['busy'].detect_rounds} rounds a side" in busy
    assert "<code>--min-rounds" in html  # a benchmark's name is text, never HTML:
    assert "<b>|</b>" not in html and "<i>" not in html and "busier &lt;i&gt;" in html


def test_no_section_when_every_benchmark_can_and_the_section_stays_short():
    calm = [v for v in _verdicts() if v.id.sub_label == "calm"]
    assert "can't catch" not in pr_comment.body(calm, base=BASE, head=HEAD, threshold=0.05)
    wide = next(v for v in _verdicts() if v.id.sub_label == "wide")
    from dataclasses import replace

    many = [replace(wide, id=replace(wide.id, sub_label=f"w{k:03d}")) for k in range(pr_comment.OUT_OF_REACH_NAMED + 5)]
    lines = pr_comment.out_of_reach(many, 0.05, cores=2)
    assert sum(x.startswith("- **") for x in lines) == pr_comment.OUT_OF_REACH_NAMED
    assert "- and 5 more: `regress compare BASE HEAD` names them all" in lines
