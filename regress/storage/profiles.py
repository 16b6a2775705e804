"""Operator profiles kept beside the results, so the report shows them without measuring.

Layout: <results>/<machine>/<env>/profiles/<sha>/<bench-slug>.json (the op
table, as JSON) and <bench-slug>.trace.json (torch.profiler's Chrome trace,
loadable in Perfetto or chrome://tracing). Separate from the result files,
whose format this leaves alone. Written atomically; read as data only.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from regress.core.errors import RegressError
from regress.core.ops import Op, OpTable
from regress.core.records import BenchmarkId
from regress.storage.atomic import make_ignored, write_atomic
from regress.storage.store import check_name

FORMAT = "regress-profile"
VERSION = 1


@dataclass(frozen=True)
class Profile:
    """One benchmark profiled at one commit."""

    id: BenchmarkId
    sha: str
    table: OpTable
    trace: Path | None  # the Chrome trace, where it was kept


def slug(bid: BenchmarkId) -> str:
    """A file name for a benchmark: readable, and unique by a hash of the whole identity."""
    text = str(bid)
    plain = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")[:60] or "bench"
    return f"{plain}-{hashlib.sha1(text.encode()).hexdigest()[:10]}"


def folder(results: Path, machine: str, env: str, sha: str) -> Path:
    return results / check_name("machine", machine) / check_name("env", env) / "profiles" / sha


def save(
    results: Path, machine: str, env: str, sha: str, bid: BenchmarkId, table: OpTable, trace: bytes | None
) -> Profile:
    make_ignored(results)
    where = folder(results, machine, env, sha)
    name = slug(bid)
    trace_path = where / f"{name}.trace.json" if trace is not None else None
    if trace_path is not None and trace is not None:
        write_atomic(trace_path, trace, sync=False)
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "sha": sha,
        "id": asdict(bid),
        "calls": table.calls,
        "ops": [asdict(o) for o in table.ops],
        "trace": trace_path.name if trace_path is not None else None,
    }
    write_atomic(where / f"{name}.json", json.dumps(doc, indent=1))
    return Profile(bid, sha, table, trace_path)


def _read(path: Path) -> Profile:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("format") != FORMAT:
            raise ValueError("not a regress profile")
        bid = BenchmarkId(**doc["id"])
        ops = tuple(
            Op(
                str(o["name"]),
                int(o["count"]),
                float(o["self_cpu_us"]),
                float(o.get("self_cuda_us", 0.0)),
                bool(o.get("user", False)),
            )
            for o in doc["ops"]
        )
        trace = path.with_name(doc["trace"]) if doc.get("trace") else None
        return Profile(bid, str(doc["sha"]), OpTable(int(doc["calls"]), ops), trace)
    except (OSError, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise RegressError(f"cannot read profile {path} ({exc}); delete it and run `regress explain` again") from None


def pair(
    results: Path, machine: str, env: str, base: str, head: str, bid: BenchmarkId
) -> tuple[Profile, Profile] | None:
    """A benchmark's profiles at two commits, as an earlier `regress explain` kept them; None unless both are."""
    paths = [folder(results, machine, env, sha) / f"{slug(bid)}.json" for sha in (base, head)]
    b, h = (_read(p) if p.is_file() else None for p in paths)
    return (b, h) if b is not None and h is not None else None


def load_all(results: Path, machine: str, env: str, sha: str) -> dict[BenchmarkId, Profile]:
    where = folder(results, machine, env, sha)
    found = (
        [_read(p) for p in sorted(where.glob("*.json")) if not p.name.endswith(".trace.json")] if where.is_dir() else []
    )
    return {p.id: p for p in found}


def pairs(results: Path, machine: str, env: str, base: str, head: str) -> dict[BenchmarkId, tuple[Profile, Profile]]:
    """Every benchmark an earlier `regress explain` profiled at both commits: its two profiles, by id."""
    b, h = load_all(results, machine, env, base), load_all(results, machine, env, head)
    return {i: (b[i], h[i]) for i in sorted(set(b) & set(h))}
