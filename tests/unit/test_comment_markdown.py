"""The pull-request comment and the regression issue as GitHub would show them: the
Markdown rendered by markdown-it-py (CommonMark with GFM tables, raw HTML on,
as GitHub allows <details>), then read back from the parsed tokens.
"""

from __future__ import annotations

from markdown_it import MarkdownIt

from regress.analysis.changepoints import Culprit, Step
from regress.analysis.diff import Verdict
from regress.core.kinds import Kind
from regress.core.records import BenchmarkId, CommitInfo
from regress.output import pr_comment, regression_issue
from regress.report.links import chart_url

SITE = "https://octo.github.io/proj"
BASE = CommitInfo("b" * 40, (), "Ann", "ann@x", 0, 0, "the base")
HEAD = CommitInfo("c" * 40, ("b" * 40,), "Bo", "bo@x", 1, 1, "make | things <faster>")


def v(sub: str, kind: Kind, ratio: float | None, reason: str = "", label: str = "ops") -> Verdict:
    base = 1e-3
    return Verdict(
        BenchmarkId(label, sub, "", 1),
        kind,
        base,
        None if ratio is None else base * ratio,
        base * 0.01,
        base * 0.01,
        ratio,
        0.001,
        reason or f"{kind} reason for {sub}",
        10,
        10,
        None if ratio is None else ratio * 0.97,
        None if ratio is None else ratio * 1.03,
    )


VERDICTS = [
    v("add", Kind.REGRESSION, 1.124),
    v("mul", Kind.REGRESSION, 1.06),
    v("div", Kind.IMPROVEMENT, 0.8),
    v("sub", Kind.UNCHANGED, 1.001),
    v("neg", Kind.UNCHANGED, 0.999),
    v("abs", Kind.UNCHANGED, 1.0),
    v("exp", Kind.NOISY, 1.3, "rounds disagree by 40%; take more rounds"),
]


def parse(text: str) -> list:
    return MarkdownIt("commonmark", {"html": True}).enable("table").parse(text)


def tables(tokens) -> list[list[list[str]]]:
    """Every table as rows of cell texts (the header row first)."""
    out, rows, row, cell = [], None, None, False
    for t in tokens:
        if t.type == "table_open":
            rows = []
        elif t.type == "table_close":
            out.append(rows)
        elif t.type == "tr_open":
            row = []
        elif t.type == "tr_close":
            rows.append(row)
        elif t.type in ("th_open", "td_open"):
            cell = True
        elif t.type == "inline" and cell:
            row.append(t.content)
            cell = False
    return out


def test_the_comment_reads_as_headline_changed_table_and_folded_rest():
    body = pr_comment.body(
        VERDICTS,
        base=BASE,
        head=HEAD,
        threshold=0.05,
        note="> [!CAUTION]\n> 2 significant slowdowns: this check fails.",
        operators="#### Operators behind each regression\n\n**ops / add**\n\n| operator | change |\n|---|---:|\n| `aten::add` | +1 us |",
        chart_url=chart_url(SITE),
        run_url="https://github.com/octo/proj/actions/runs/42",
    )
    tokens = parse(body)
    # The first line says the outcome in words.
    assert tokens[0].type == "paragraph_open"
    assert tokens[1].content == "**regress: 2 benchmarks slower (worst +12.4%), 1 faster, 3 unchanged, 1 noisy**"
    assert body.splitlines()[0] == tokens[1].content
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(body)
    assert '<a href="https://github.com/octo/proj/actions/runs/42">the run</a>' in html
    assert "make \\| things &lt;faster&gt;" in body and "<faster>" not in html  # a subject is text, never HTML

    # Before the <details>: the changed benchmarks, with levels, change, interval, verdict and why.
    opened = next(i for i, t in enumerate(tokens) if t.type == "html_block" and t.content.startswith("<details>"))
    changed, operators = tables(tokens[:opened])
    assert changed[0] == [
        "benchmark",
        "threads",
        "base",
        "head",
        "change",
        "95% interval",
        "verdict",
        "detects",
        "why",
    ]
    assert [r[4] for r in changed[1:]] == ["+12.4%", "+6.0%", "-20.0%"]
    add = changed[1]
    assert add[0].startswith("[ops / add](https://octo.github.io/proj/bench/ops-add-1-thread-") and add[0].endswith(
        ".html)"
    )
    assert add[2] == "1.000 ms ±0.5%" and add[3] == "1.124 ms ±0.4%"
    assert add[5] == "+9.0% … +15.8%" and add[6] == "🔴 **regression**" and add[8] == "regression reason for add"
    assert operators[1][0] == "`aten::add`"
    assert body.index("Operators behind each regression") > body.index("| [ops / div]")

    # Folded: the unchanged and noisy ones, in a table of their own inside <details>.
    assert tokens[opened].content.startswith("<details><summary>1 noisy, 3 unchanged</summary>")
    closed = next(i for i, t in enumerate(tokens) if t.type == "html_block" and "</details>" in t.content)
    (rest,) = tables(tokens[opened:closed])
    assert [r[0].split("]")[0] for r in rest[1:]] == ["[ops / sub", "[ops / neg", "[ops / abs", "[ops / exp"]
    assert rest[4][6] == "🟡 **noisy**" and rest[4][8] == "rounds disagree by 40%; take more rounds"
    assert rest[1][8] == ""  # an unchanged one needs no reason


def test_no_change_says_so_and_without_a_site_there_are_no_links():
    quiet = [x for x in VERDICTS if x.verdict == Kind.UNCHANGED]
    body = pr_comment.body(quiet, base=BASE, head=HEAD, threshold=0.05)
    tokens = parse(body)
    assert tokens[1].content == "**regress: no significant change (3 unchanged)**"
    assert "](" not in body
    assert len(tables(tokens)) == 1  # only the folded one


def test_a_cut_body_stays_within_the_limit_and_still_parses():
    many = [v(f"b{i:05d}", Kind.UNCHANGED, 1.0) for i in range(3000)]
    whole = pr_comment.body([VERDICTS[0], *many], base=BASE, head=HEAD, threshold=0.05, chart_url=chart_url(SITE))
    assert pr_comment.size(whole) > pr_comment.COMMENT_LIMIT
    cut = pr_comment.fit(whole, tail="<!-- regress:comment regress -->")
    assert pr_comment.size(cut) <= pr_comment.COMMENT_LIMIT
    assert cut.endswith("<!-- regress:comment regress -->")
    tokens = parse(cut)
    assert tokens[1].content.startswith("**regress: 1 benchmark slower (worst +12.4%), 3000 unchanged")
    blocks = [t.content for t in tokens if t.type == "html_block"]
    assert blocks[0].startswith("<details>") and any("</details>" in b for b in blocks[1:])  # closed again
    notes = [t.content for t in tokens if t.type == "inline" and "Cut here" in t.content]
    assert notes and "65,536 characters" in notes[0]
    changed, folded = tables(tokens)
    assert len(changed) == 2 and 100 < len(folded) < 3001  # the rows that fit, each whole


def step(sub: str, ratio: float, index: int = 5) -> Step:
    return Step(BenchmarkId("ops", sub, "", 1), HEAD.sha, index, 1e-3, 1e-3 * ratio, ratio, "regression", 0.01)


def test_the_regression_issue_names_benchmarks_levels_charts_and_the_bisect():
    c = Culprit(HEAD, BASE, (step("add", 1.5), step("mul", 1.2)))
    title = regression_issue.title(c)
    assert title == "Performance regression in cccccccccc: make | things <faster> (2 benchmarks slower, worst +50.0%)"
    ctx = regression_issue.Context(HEAD, gap=3, chart_url=chart_url(SITE), run_url="https://r/1")
    body = regression_issue.body(c, ctx, machine="gha", env="default")
    tokens = parse(body)
    assert tokens[1].content == f"**regress: {HEAD.sha} made 2 benchmarks slower (worst +50.0%)**"
    (table,) = tables(tokens)
    assert table[0] == ["benchmark", "threads", "before", "after", "change", "chart"]
    assert table[1][:5] == ["ops / add", "1", "1.000 ms", "1.500 ms", "+50.0%"]
    assert table[1][5].startswith("[chart](https://octo.github.io/proj/bench/ops-add-")
    (fence,) = [t for t in tokens if t.type == "fence"]
    assert fence.content.strip() == (
        "regress bisect bbbbbbbbbb cccccccccc --bench '^(ops\\ /\\ add\\ \\[1\\ thread\\]|ops\\ /\\ mul\\ \\[1\\ thread\\])$'"
    )
    assert "3 commits were not measured" in body and "Closing this issue is respected" in body
    more = regression_issue.comment(c, [step("div", 1.3)], regression_issue.Context(HEAD))
    assert parse(more)[1].content == "**regress: 1 more benchmark slower since cccccccccc (worst +30.0%)**"
    assert "regress bisect" not in more  # no gap given: every commit was measured
