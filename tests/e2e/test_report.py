"""`regress report` end to end: a real git project, fabricated results, the real CLI in a subprocess.

`make_project` is shared with the browser tests (tests/browser/test_browser_report.py).
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest
from chart_data import chart_data
from conftest import SRC_ROOT, Repo, cli_env

from regress.core.records import (
    BenchmarkResult,
    CommitResult,
    Failure,
    Fingerprint,
    Sample,
    Settings,
    TaskSpec,
)
from regress.storage import gitrepo
from regress.storage.store import Store

N_COMMITS = 20
STEP_AT = 12  # this commit makes STEPPED 1.5x slower; its subject is EVIL_SUBJECT
FAIL_AT = 7  # FAILING fails at this commit on box-a
EVIL_SUBJECT = "<script>alert(1)</script>"
EVIL_AUTHOR = 'O\'Brien & "Sons" Ltd'
EVIL_LABEL = "</script><script>alert(3)</script>"
SPECS = [
    TaskSpec(stmt=f"mm{n}", label="matmul", sub_label=f"n={n}", description=dt, num_threads=th)
    for th in (1, 2)
    for n in (64, 128)
    for dt in ("float32", "float64")
] + [TaskSpec(stmt="evil()", label=EVIL_LABEL, sub_label="x & y", description="", num_threads=1)]
STEPPED = SPECS[0].id  # matmul / n=64 / float32 [1 thread]
FAILING = SPECS[7].id  # matmul / n=128 / float64 [2 threads]
B_EVERY = 2  # box-b measured every other commit


@dataclass
class Project:
    repo: Repo
    shas: list[str]  # oldest first

    @property
    def results(self) -> Path:
        return self.repo.path / ".regress"


def make_project(root: Path) -> Project:
    """A git repository of N_COMMITS commits and results for them on two machines."""
    repo = Repo(root)
    root.mkdir(parents=True)
    repo.git("init", "-q", "-b", "main")
    repo.write("pyproject.toml", '[project]\nname = "demo"\nversion = "0"\n\n[tool.regress]\nmachine = "box-a"\n')
    repo.write(".gitignore", ".regress/\nsite/\n")
    shas = []
    for i in range(N_COMMITS):
        date = f"{1_700_000_000 + 3600 * i} +0000"
        env = {"GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date}
        if i == STEP_AT:
            env["GIT_AUTHOR_NAME"] = EVIL_AUTHOR
        repo.write("demo.py", f"REV = {i}\n")  # every commit changes the code (same code would share one level)
        subprocess.run(["git", "add", "-A"], cwd=root, env=cli_env(), check=True)
        subprocess.run(
            ["git", "commit", "-q", "--allow-empty", "-m", EVIL_SUBJECT if i == STEP_AT else f"Change number {i}"],
            cwd=root,
            env=cli_env(env),
            check=True,
        )
        shas.append(repo.git("rev-parse", "HEAD"))
    git_repo = gitrepo.open_repo(root)
    rng = random.Random(0)
    store = Store(root / ".regress")
    base = {spec: 10 ** rng.uniform(-6, -3) for spec in SPECS}
    for i, sha in enumerate(shas):
        info = gitrepo.commit_info(git_repo, sha)
        for machine, factor in (("box-a", 1.0), ("box-b", 1.25)):
            if machine == "box-b" and i % B_EVERY:
                continue
            results = []
            for spec in SPECS:
                if machine == "box-a" and i == FAIL_AT and spec.id == FAILING:
                    results.append(
                        BenchmarkResult(spec, "benchmarks/x.py:1", failure=Failure("error", "RuntimeError: <boom>"))
                    )
                    continue
                level = base[spec] * factor * (1.5 if spec.id == STEPPED and i >= STEP_AT else 1.0)
                samples = tuple(
                    Sample(10, tuple(level * 10 * rng.lognormvariate(0, 0.01) for _ in range(8))) for _ in range(3)
                )
                results.append(BenchmarkResult(spec, "benchmarks/x.py:1", samples))
            fp = Fingerprint(machine, cpu="Test CPU <3GHz>", cores=2, python="3.11.7", torch_version="2.13.0")
            store.save(CommitResult(info, machine, "default", fp, Settings(), tuple(results)))
    return Project(repo, shas)


def bench_page(site: Path, name_part: str) -> Path:
    (page,) = [p for p in (site / "bench").glob("*.html") if name_part in p.name]
    return page


class _Links(HTMLParser):
    """Every resource a page loads, every script element, and the text outside tags."""

    def __init__(self):
        super().__init__()
        self.loads: list[str] = []
        self.anchors: list[str] = []
        self.scripts = 0
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        for key in ("src", "srcset", "data", "poster"):
            if a.get(key):
                self.loads.append(a[key])
        if tag == "link" and a.get("href"):
            self.loads.append(a["href"])
        if tag == "a" and a.get("href"):
            self.anchors.append(a["href"])
        if a.get("style") and "url(" in a["style"]:
            self.loads.append(a["style"])

    def handle_data(self, data):
        self.text.append(data)


def parse(path: Path) -> _Links:
    p = _Links()
    p.feed(path.read_text(encoding="utf-8"))
    return p


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Project:
    return make_project(tmp_path_factory.mktemp("report") / "demo")


@pytest.fixture(scope="module")
def site(project) -> Path:
    proc = project.repo.regress("report", check=True)
    assert re.search(r"20 commits, 9 benchmarks, 2 machine/env series; 12 pages written", proc.stdout), proc.stdout
    return project.repo.path / "site"


def test_site_has_every_page_and_plotly_once(site):
    assert sorted(p.name for p in site.iterdir()) == sorted(
        [
            "index.html",
            "label",
            "bench",
            "assets",
            "data",
            "regressions.json",
            "regressions.atom",
            ".regress-site.json",
            ".gitignore",  # regress made site/: its own output, ignored by git from the start
        ]
    )
    assert len(list((site / "label").glob("*.html"))) == 2
    assert len(list((site / "bench").glob("*.html"))) == len(SPECS)
    (plotly,) = (site / "assets").glob("plotly-*.min.js")
    import plotly as plotly_pkg

    shipped = Path(plotly_pkg.__file__).parent / "package_data" / "plotly.min.js"
    assert plotly.read_bytes() == shipped.read_bytes()
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert len(text) < 200_000 and "plotly.js v" not in text, f"{page} inlines Plotly"


def test_pages_load_nothing_from_the_network(site):
    pages = list(site.rglob("*.html"))
    assert len(pages) == 1 + 2 + len(SPECS)
    for page in pages:
        links = parse(page)
        assert links.loads, page
        for url in links.loads:
            assert not re.match(r"^([a-z]+:|//)", url, re.I), f"{page.name} loads {url}"
            assert (page.parent / url).resolve().is_file(), f"{page.name} links to missing {url}"
    chart = parse(bench_page(site, "matmul-n-64-float32-1-thread"))
    assert [u for u in chart.loads if u.endswith(".js")] == [
        next(u for u in chart.loads if "regress-" in u and u.endswith(".js")),
        "../data/commits.js",
        "../data/detects.js",
        next(u for u in chart.loads if "plotly-" in u),
    ]


def test_commit_and_benchmark_text_is_escaped(site):
    index = (site / "index.html").read_text(encoding="utf-8")
    assert EVIL_SUBJECT not in index and "<script>alert(3)" not in index
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in index
    assert "O&#39;Brien &amp; &#34;Sons&#34; Ltd" in index
    parsed = parse(site / "index.html")
    assert parsed.scripts == 2  # the site's script and the call that starts the search box
    assert EVIL_SUBJECT in "".join(parsed.text)  # shown as text
    evil = bench_page(site, "script-script-alert-3-script")
    text = evil.read_text(encoding="utf-8")
    # regress.js, bench-data JSON, commits.js, detects.js, its points (inline: a history shorter than a chunk),
    # plotly, the call
    assert parse(evil).scripts == 7
    assert "&lt;/script&gt;&lt;script&gt;alert(3)&lt;/script&gt;" in text
    commits_js = (site / "data" / "commits.js").read_text(encoding="utf-8")
    assert "\\u003cscript\\u003ealert(1)\\u003c/script\\u003e" in commits_js and "<" not in commits_js
    detects_js = (site / "data" / "detects.js").read_text(encoding="utf-8")
    assert "REGRESS_DETECTS" in detects_js and "<" not in detects_js
    failing = bench_page(site, "n-128-float64-2").read_text()
    assert "RuntimeError: \\u003cboom\\u003e" in failing and "<boom>" not in failing
    data = json.loads(re.search(r'id="bench-data">(.*?)</script>', failing).group(1))
    assert data["series"][0]["failed"][0][2] == "error: RuntimeError: <boom>"  # JSON.parse gives the text back


def test_regressions_json_and_atom_feed(project, site):
    data = json.loads((site / "regressions.json").read_text())
    stepped = [c for c in data["changes"] if c["name"] == str(STEPPED)]
    assert {(c["machine"], c["sha"], c["direction"]) for c in stepped} == {
        ("box-a", project.shas[STEP_AT], "regression"),
        ("box-b", project.shas[STEP_AT], "regression"),
    }
    for c in stepped:
        assert c["subject"] == EVIL_SUBJECT and c["author"] == EVIL_AUTHOR
        assert 1.4 < c["ratio"] < 1.6 and c["url"] is None
        assert (site / c["chart"]).is_file()
    feed = ET.parse(site / "regressions.atom").getroot()
    ns = {"a": "http://www.w3.org/2005/Atom"}
    entries = feed.findall("a:entry", ns)
    assert len(entries) == len([c for c in data["changes"] if c["direction"] == "regression"]) >= 2
    summary = entries[0].find("a:summary", ns).text
    assert EVIL_SUBJECT in summary and str(STEPPED) in summary
    assert entries[0].find("a:author/a:name", ns).text == EVIL_AUTHOR


def _overview_sections(site: Path) -> list[tuple[str, str]]:
    """(sha compared against or "", section html) per comparison: box-a previous, baseline, box-b previous, baseline."""
    html = (site / "index.html").read_text(encoding="utf-8")
    chunks = [c.split("</section>")[0] for c in html.split('<div class="comparison"')[1:]]
    found = [re.search(r'against\s*<span class="commit">\s*<code class="sha" title="(\w+)"', c) for c in chunks]
    return [(m.group(1) if m else "", c) for m, c in zip(found, chunks)]


def test_overview_compares_newest_with_previous_and_baseline(project, site):
    (a_prev, a_prev_html), (a_base, a_base_html), (b_prev, _), (b_base, _) = _overview_sections(site)
    b_shas = project.shas[::B_EVERY]
    assert [a_prev, a_base, b_prev, b_base] == [project.shas[-2], project.shas[0], b_shas[-2], b_shas[0]]
    assert str(STEPPED) not in a_prev_html  # nothing changed between the last two commits
    assert re.search(re.escape(str(STEPPED)) + r".*?\+(4[5-9]|5[0-5])\.\d%.*?badge regression", a_base_html, re.S)
    index = (site / "index.html").read_text()
    assert index.count("machine/environment series") == 1 and "box-a" in index and "box-b" in index

    # A baseline after the step (measured on box-a only): the stepped benchmark is no longer slower than it.
    out = project.repo.path / "site-baseline"
    project.repo.regress("report", "--out", str(out), "--baseline", f"HEAD~{N_COMMITS - 1 - (STEP_AT + 1)}", check=True)
    _, (a_base, a_base_html), _, (b_base, b_base_html) = _overview_sections(out)
    assert a_base == project.shas[STEP_AT + 1] and str(STEPPED) not in a_base_html
    assert (
        b_base == ""
        and f"The baseline {project.shas[STEP_AT + 1][:10]} was not measured on this series." in b_base_html
    )


def test_report_errors_are_one_line(project, tmp_path):
    def fails(*args, contains: str, cwd: Path | None = None):
        proc = subprocess.run(
            [sys.executable, "-m", "regress", "report", *args],
            cwd=cwd or project.repo.path,
            env=cli_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert contains in lines[0], lines[0]

    fails("--results", str(tmp_path / "empty"), "--out", str(tmp_path / "s1"), contains="no results in")
    fails("--baseline", "nosuchrev", "--out", str(tmp_path / "s2"), contains="unknown revision 'nosuchrev'")
    fails("--baseline", "HEAD~3..HEAD", "--out", str(tmp_path / "s3"), contains="--baseline takes one commit")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "index.html").write_text("mine")
    fails("--out", str(foreign), contains="did not write")
    assert (foreign / "index.html").read_text() == "mine"
    (tmp_path / "afile").write_text("x")
    fails("--out", str(tmp_path / "afile"), contains="is a file")
    fails("--out", str(tmp_path / "afile" / "site"), contains="cannot write the site to")
    bad = tmp_path / "bad-url"
    shutil.copytree(project.repo.path, bad, ignore=shutil.ignore_patterns("site*"))
    (bad / "pyproject.toml").write_text('[tool.regress]\nrepo_url = "javascript:alert(1)"\n')
    fails("--out", str(tmp_path / "s4"), contains="repo_url", cwd=bad)
    # A commit of the repository that was never measured.
    unmeasured = tmp_path / "unmeasured"
    shutil.copytree(project.repo.path, unmeasured, ignore=shutil.ignore_patterns("site*"))
    Repo(unmeasured).commit("not measured")
    fails("--baseline", "HEAD", "--out", str(tmp_path / "s5"), contains="has no results on any machine", cwd=unmeasured)


def test_repo_url_links_commits(project, tmp_path):
    linked = tmp_path / "linked"
    shutil.copytree(project.repo.path, linked, ignore=shutil.ignore_patterns("site*"))
    (linked / "pyproject.toml").write_text('[tool.regress]\nrepo_url = "https://github.com/owner/demo/"\n')
    Repo(linked).regress("report", "--out", str(tmp_path / "site"), check=True)
    index = parse(tmp_path / "site" / "index.html")
    assert f"https://github.com/owner/demo/commit/{project.shas[-1]}" in index.anchors
    data = json.loads((tmp_path / "site" / "regressions.json").read_text())
    assert data["changes"][0]["url"].startswith("https://github.com/owner/demo/commit/")
    assert '"repo":"https://github.com/owner/demo"' in (tmp_path / "site" / "data" / "commits.js").read_text()


def test_incremental_rebuild_keeps_pages_without_new_results(project, tmp_path):
    work = tmp_path / "inc"
    shutil.copytree(project.repo.path, work, ignore=shutil.ignore_patterns("site*"))
    repo = Repo(work)
    repo.regress("report", check=True)
    site = work / "site"
    old = 1_000_000_000
    for page in site.rglob("*.html"):
        os.utime(page, (old, old))
    # A new commit measured for one benchmark only (as `regress run --bench` stores it).
    sha = repo.commit("Speed up n=128")
    info = gitrepo.commit_info(gitrepo.open_repo(work), sha)
    spec = next(
        s for s in SPECS if s.id.sub_label == "n=128" and s.id.description == "float32" and s.id.num_threads == 1
    )
    result = BenchmarkResult(spec, "x", (Sample(1, (1e-6, 1.1e-6, 0.9e-6)),))
    Store(work / ".regress").save(CommitResult(info, "box-a", "default", Fingerprint("box-a"), Settings(), (result,)))

    proc = repo.regress("report", "--incremental", check=True)
    assert "3 pages written, 9 kept unchanged" in proc.stdout, proc.stdout
    rewritten = {p.relative_to(site).as_posix() for p in site.rglob("*.html") if p.stat().st_mtime != old}
    changed_bench = bench_page(site, "n-128-float32-1-thread")
    matmul_label = next((site / "label").glob("matmul-*")).relative_to(site).as_posix()
    # 21 commits, shorter than a chunk of points: the page holds them (report/data_files.py), no data files.
    assert rewritten == {"index.html", changed_bench.relative_to(site).as_posix(), matmul_label}
    assert not (site / "data" / "bench").exists() and not (site / "data" / "label").exists()
    assert chart_data(changed_bench)["series"][0]["level"][-1] == 0.9e-6  # the new commit's fastest block
    assert "21 commits" in proc.stdout
    # A page of a benchmark that is gone is removed; files regress never wrote stay.
    manifest = json.loads((site / ".regress-site.json").read_text())
    manifest["files"]["bench/gone-0123abcd.html"] = "x"
    (site / ".regress-site.json").write_text(json.dumps(manifest))
    (site / "bench" / "gone-0123abcd.html").write_text("old")
    (site / "CNAME").write_text("bench.example.com\n")
    proc = repo.regress("report", check=True)  # a full build writes everything again
    assert "12 pages written" in proc.stdout, proc.stdout
    assert not (site / "bench" / "gone-0123abcd.html").exists() and (site / "CNAME").is_file()
    assert all(p.stat().st_mtime != old for p in site.rglob("*.html"))


def test_templates_ship_inside_the_wheel(tmp_path):
    """The top-level templates/ installs as regress/templates, beside every module of the package."""
    src = tmp_path / "src"
    src.mkdir()
    shutil.copy(SRC_ROOT / "pyproject.toml", src)
    for name in ("regress", "templates"):
        shutil.copytree(SRC_ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    (src / "README.md").write_text("regress\n")
    subprocess.run(
        # Build isolation: the build requirements of pyproject.toml, as any installer uses them.
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(src)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = (tmp_path / "dist").glob("regress-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    templates = sorted(p.relative_to(SRC_ROOT / "templates").as_posix() for p in (SRC_ROOT / "templates").rglob("*.*"))
    assert {"base.html", "index.html", "label.html", "bench.html", "feed.atom", "static/regress.js"} <= set(templates)
    for name in templates:
        assert f"regress/templates/{name}" in names
    for module in (SRC_ROOT / "regress").rglob("*.py"):  # every stage's package is listed in pyproject.toml
        assert module.relative_to(SRC_ROOT).as_posix() in names
    assert not any(n.startswith("templates/") for n in names)  # inside the package, not a top-level folder
    zipfile.ZipFile(wheel).extractall(tmp_path / "installed")
    proc = subprocess.run(
        [sys.executable, "-c", "from regress.report import site; print(site._templates())"],
        env={**os.environ, "PYTHONPATH": str(tmp_path / "installed")},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.strip() == str(tmp_path / "installed" / "regress" / "templates")


def test_instruction_counts_and_skips_on_chart_pages(project, tmp_path):
    """Counts are shown apart from times; a benchmark skipped (no GPU) is not drawn as failed."""
    from dataclasses import replace

    from regress.core.records import InstructionCount

    results = tmp_path / "results"
    shutil.copytree(project.results, results)
    store = Store(results)
    newest = store.load("box-a", "default", project.shas[-1])
    prev = store.load("box-a", "default", project.shas[-2])
    cuda = TaskSpec(stmt="x @ x", label="matmul", sub_label="n=64, device=cuda", description="float32")
    for result, count in ((prev, 100_000), (newest, 112_000)):
        counted = tuple(
            replace(r, counts=(InstructionCount(20, (count + 50, count, count, count, count, count)),))
            if r.id == STEPPED
            else r
            for r in result.results
        ) + (BenchmarkResult(cuda, "benchmarks/x.py:9", failure=Failure("skipped", "CUDA is not available")),)
        store.save(replace(result, results=counted))
    out = tmp_path / "site"
    project.repo.regress("report", "--results", str(results), "--out", str(out), check=True)
    page = bench_page(out, "matmul-n-64-float32-1-thread").read_text()
    assert "Instruction counts" in page and "112,000" in page and "100,000" in page and "+12.00%" in page
    data = json.loads(re.search(r'id="bench-data">(.*?)</script>', page, re.S).group(1))
    (a,) = [s for s in data["series"] if s["name"] == "box-a / default"]
    assert [n for _, n in a["instr"]] == [100_000, 112_000]
    cuda_page = bench_page(out, "device-cuda").read_text()
    cuda_data = json.loads(re.search(r'id="bench-data">(.*?)</script>', cuda_page, re.S).group(1))
    assert all(not s["failed"] for s in cuda_data["series"])
