"""A real git history whose stored results show one commit making two benchmarks 1.5x slower.

Commits c1 c2 c3 x c4 c5 c6 c7 on main; `x` is never measured, so the step
at c4 follows an unmeasured commit (the issue names `regress bisect`). The
results are fabricated (every number chosen, five agreeing rounds a commit)
and saved through `Store`, as `regress run` saves them:

- `ops / add` is measured everywhere: its step at c4 is confirmed once c6 is
  in (three commits at the new level), and not before;
- `ops / mul` is missing at c6 (say its shard's artifact was lost), so its
  step at c4 is only confirmed once c7 is in.
"""

from __future__ import annotations

from factories import bench, commit

from regress.core.records import CommitInfo
from regress.storage.store import Store

MACHINE = "testbox"
NAMES = ("c1", "c2", "c3", "x", "c4", "c5", "c6", "c7")


def make(repo) -> dict[str, str]:
    """The commits, by name (after the repository fixture's initial commit)."""
    return {name: repo.commit(name, {f"notes/{name}.txt": f"{name}\n"}) for name in NAMES}


def save(folder, shas: dict[str, str], names, *, machine: str = MACHINE) -> None:
    """The results of the named commits into a results folder."""
    store = Store(folder)
    for name in names:
        i = NAMES.index(name)
        slow = 1.5 if i >= NAMES.index("c4") else 1.0
        results = [bench([1e-3 * slow * (1 + 0.001 * k) for k in range(5)], sub="add")]
        if name != "c6":
            results.append(bench([2e-3 * slow * (1 + 0.001 * k) for k in range(5)], sub="mul"))
        parent = shas[NAMES[i - 1]] if i else ""
        result = commit(shas[name], *results, machine=machine, when=1000 + i, subject=name, parents=(parent,))
        store.save(result)


def info(shas: dict[str, str], name: str) -> CommitInfo:
    return CommitInfo(shas[name], (), "A", "a@x", 0, 0, name)
