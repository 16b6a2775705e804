"""The overview page, the machine-readable change points and the feed."""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import time
from collections import Counter

from regress import __version__
from regress.core.kinds import Kind
from regress.core.records import CommitInfo, CommitResult
from regress.core.units import percent
from regress.report import detects, shown
from regress.report.chart_pages import SiteFields, short_name
from regress.report.data import Step, compare
from regress.report.links import iso

MAX_CHANGES_ON_OVERVIEW = 100


def _result_at(table, i: int):
    """The result at history position i (None outside the history)."""
    return table.load(i) if 0 <= i < len(table.history) else None


class OverviewPages(SiteFields):
    """Page renderers of `Site`: the overview, the change points as JSON and the feed."""

    # -- overview, JSON and feed --------------------------------------------------

    def overview(self) -> str:
        series = []
        for s in self.series:
            # The results (rounds and all) of the few commits compared here; the history holds headers.
            n = len(s.history)
            at = functools.partial(_result_at, s.table)
            newest = at(n - 1)
            if self.baseline:
                found = next((i for i, cr in enumerate(s.history) if cr.commit.sha == self.baseline), None)
                base = at(found) if found is not None else None
            else:
                base = at(0)
            base = newest if base is not None and base.commit.sha == newest.commit.sha else base
            judged = s.compared.get((n - 2, n - 1))
            # Judged already (the recent verdicts'): its base's header is all it shows of it, no rounds read.
            previous = (None if n < 2 else s.history[n - 2]) if judged is not None else at(n - 2)
            comparisons = [
                self._comparison(
                    "previous",
                    "Against the previous measured commit",
                    previous,
                    newest,
                    "This is the only commit measured on this series.",
                    before=at(n - 3) if judged is None else None,
                    judged=judged,
                ),
                self._comparison(
                    "baseline",
                    "Against the baseline" + ("" if self.baseline else " (the oldest measured commit)"),
                    base if base is not newest else None,
                    newest,
                    "The newest commit is the baseline."
                    if base is newest
                    else f"The baseline {self.baseline[:10] if self.baseline else ''} was not measured on this series.",
                ),
            ]
            series.append(
                {
                    "name": s.name,
                    "machine": s.machine,
                    "env": s.env,
                    "newest": newest.commit,
                    "comparisons": comparisons,
                    "n_commits": len(s.history),
                    "first": s.history[0].commit.committed_at,
                    "last": newest.commit.committed_at,
                    "fp": newest.fingerprint,
                }
            )
        labels = []
        # The newest commit's verdicts against the commit before it: each benchmark's figure beside its level.
        newest_verdicts = [s.verdicts.get(len(s.history) - 1, {}) for s in self.series]
        cores = [s.history[-1].fingerprint.cores for s in self.series]
        for label, ids in self.labels.items():
            benchmarks = []
            for bid in ids:
                latest, figures = [], []
                for s, recent, n in zip(self.series, newest_verdicts, cores):
                    track = s.tracks.get(bid)
                    latest.append(shown.text(float(shown.values(track)[-1])) if track is not None else "")
                    figures.append(detects.cell(recent.get(bid, (0, None))[1], self.threshold, n))
                benchmarks.append(
                    {
                        "name": str(bid),
                        "short": short_name(bid),
                        "href": self.bench_href[bid],
                        "latest": latest,
                        "detects": figures,
                    }
                )
            labels.append({"name": label, "href": self.label_href[label], "benchmarks": benchmarks})
        return self.env.get_template("index.html").render(
            **self.context(""),
            built_at=time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
            n_commits=len(self.commits),
            series=series,
            benchmarks=self.ids,
            labels=labels,
            changes=[self._change_row(ch, "") for ch in self.changes[:MAX_CHANGES_ON_OVERVIEW]],
            n_changes=len(self.changes),
            threshold_pct=f"{self.threshold * 100:g}%",
        )

    def _comparison(
        self,
        kind: str,
        title: str,
        base: CommitResult | None,
        head: CommitResult,
        missing: str,
        before: CommitResult | None = None,
        judged: list | None = None,
    ) -> dict:
        """`judged`: the verdicts of this very comparison, where the recent verdicts already made them
        (`data.judge_recent`: as `regress compare` judges, with the history's allowance for separate runs)."""
        if base is None:
            return {"kind": kind, "title": title, "base": None, "missing": missing}
        # As `regress compare` judges it: with the commit before base as history, when there is one.
        verdicts = judged if judged is not None else compare(base, head, threshold=self.threshold, before=before)
        counts = Counter(v.verdict for v in verdicts)
        notable = sorted(
            (v for v in verdicts if v.verdict != Kind.UNCHANGED),
            key=lambda v: (v.verdict.rank, -abs((v.ratio or 1) - 1)),
        )
        return {
            "kind": kind,
            "title": title,
            "base": base.commit,
            "counts": sorted(counts.items(), key=lambda kv: kv[0].rank),
            "notable": [
                {
                    "name": str(v.id),
                    "href": self.bench_href.get(v.id, ""),
                    "base": shown.text(v.base_level),
                    "head": shown.text(v.head_level),
                    "change": percent(v.ratio),
                    "verdict": v.verdict,
                    "reason": v.reason,  # the differ's own words; they quote the interval and p where there is one
                    "detects": detects.cell(v, self.threshold, head.fingerprint.cores),
                }
                for v in notable
            ],
        }

    def regressions_json(self) -> str:
        rows = []
        for ch in self.changes:
            st: Step = ch["step"]
            c: CommitInfo = ch["commit"]
            rows.append(
                {
                    "machine": ch["series"].machine,
                    "env": ch["series"].env,
                    "sha": c.sha,
                    "subject": c.subject,
                    "author": c.author,
                    "committed_at": iso(c.committed_at),
                    "url": f"{self.repo_url}/commit/{c.sha}" if self.repo_url else None,
                    "benchmark": dataclasses.asdict(st.id),
                    "name": str(st.id),
                    "before": st.before,
                    "after": st.after,
                    "ratio": st.ratio,
                    "direction": st.direction,
                    "span": st.span,
                    "total_ratio": st.total,
                    "chart": self.bench_href[st.id],
                }
            )
        return (
            json.dumps(
                {"format": 1, "generator": f"regress {__version__}", "threshold": self.threshold, "changes": rows},
                indent=1,
                ensure_ascii=False,
            )
            + "\n"
        )

    def feed(self) -> str:
        entries = []
        for ch in self.changes:
            if ch["step"].direction != "regression":
                continue
            row = self._change_row(ch, "")
            st: Step = ch["step"]
            row["key"] = hashlib.sha1(f"{ch['series'].name} {st.sha} {st.id!r}".encode()).hexdigest()
            row["updated"] = _rfc3339(ch["commit"].committed_at)
            row["slower"] = f"{(st.ratio - 1) * 100:.1f}%"
            entries.append(row)
        newest = max((c.committed_at for c in self.commits), default=0)
        return self.env.get_template("feed.atom").render(
            title=self.title,
            feed_id=hashlib.sha1(self.title.encode()).hexdigest()[:16],
            updated=_rfc3339(newest),
            entries=entries,
            repo_url=self.repo_url,
        )


def _rfc3339(ts: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))
