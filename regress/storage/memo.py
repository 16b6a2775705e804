"""The one place regress keeps values derived from the results, from one command to the next.

A value (a *tree*: JSON-able, numpy arrays inside, kept as `encode` makes it, never a pickle) is kept
under its *kind* and the digest of its *inputs* (the caller's, made with `files_digest`),
in a row of the results folder's FILE, and found only while `code_digest` is the one it was made by.
A command writes what it put when its memo closes (or once WRITE_AT bytes wait), and drops every row
of other code and every row none of the last KEEP writing commands used. Never an error: a missing
or unusable file, a garbled row is a miss. With REGRESS_VERIFY_CACHE=1 every hit is computed again
and compared (`check`); a difference raises StaleValue.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import shutil
import sqlite3
import struct
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol, TypeVar

from regress import __version__
from regress.core.trees import decode, encode

FILE = ".summary.sqlite"
KEEP = 3  # a row none of the last KEEP writing commands used is dropped
WRITE_AT = 64 << 20  # bytes put and waiting that are written at once
VERIFY = "REGRESS_VERIFY_CACHE"
OLD_FOLDER = ".summary.d"  # an older regress kept large values there; a writing command removes it
# What a garbled value raises in a decoder: a miss, never an error.
GARBLED = (ValueError, KeyError, TypeError, IndexError, AttributeError, struct.error, EOFError)

SCHEMA = (  # run by `summary.connect`, which opens the file
    "CREATE TABLE IF NOT EXISTS memo (kind TEXT NOT NULL, inputs TEXT NOT NULL, code TEXT NOT NULL,"
    " value BLOB, PRIMARY KEY (kind, inputs))",
    "CREATE INDEX IF NOT EXISTS memo_code ON memo (code)",
    "CREATE TABLE IF NOT EXISTS memo_used (kind TEXT NOT NULL, inputs TEXT NOT NULL, command INTEGER NOT NULL,"
    " PRIMARY KEY (kind, inputs)) WITHOUT ROWID",
)
TABLES = ("memo", "memo_used")
# A regress import at the start of a line (in a module or a function): `from regress.x import a, b`.
_FROM = re.compile(r"^\s*from\s+(regress(?:\.\w+)*)\s+import\s+(\([^)]*\)|[^\n#]+)", re.M)
_IMPORT = re.compile(r"^\s*import\s+(regress(?:\.\w+)*)", re.M)

T = TypeVar("T")
K = TypeVar("K")


def _same(tree: Any) -> Any:
    return tree


class StaleValue(RuntimeError):
    """A kept value that is not what its computation gives now (REGRESS_VERIFY_CACHE=1)."""


@functools.cache
def code_digest() -> str:
    """A digest of regress's version and every source file of the installed package (its .py files and
    the report's templates): the code every kept value is made by."""
    return package_digest(Path(__file__).resolve().parents[1])


def package_digest(package: Path) -> str:
    """`code_digest` of the package in folder `package`."""
    templates = package / "templates"
    if not templates.is_dir() and (package.parent / "pyproject.toml").is_file():
        templates = package.parent / "templates"  # a source checkout: the top-level folder
    files = [(p.relative_to(package).as_posix(), p) for p in package.rglob("*.py")]
    if templates.is_dir():
        files += [(f"templates/{p.relative_to(templates).as_posix()}", p) for p in templates.rglob("*") if p.is_file()]
    return _source_digest(files, __version__)


def _source_digest(files: Iterable[tuple[str, Path]], version: str = "") -> str:
    """A digest of `version` and of these (name, path) files' bytes, in the order of their names."""
    h = hashlib.sha256(f"regress {version}\0".encode())
    for name, path in sorted(files):
        data = path.read_bytes()
        h.update(f"{name}\0{len(data)}\0".encode() + data)
    return h.hexdigest()


def imports_digest(module: str, package: Path | None = None, leave_out: Iterable[str] = ()) -> str:
    """A digest of the source of regress module `module` and of every regress module it imports, at any
    depth, but the modules named in `leave_out` (nor what only they import); not of regress's version (a
    release changes what its source changes). `package`: the regress package's folder (default: this one's)."""
    package = package or Path(__file__).resolve().parents[1]
    seen: dict[str, Path] = {}
    todo = [module]
    skip = set(leave_out)
    while todo:
        name = todo.pop()
        rel = Path(*name.split(".")[1:])
        path = package / rel / "__init__.py" if (package / rel).is_dir() else package / rel.with_suffix(".py")
        if name in skip or name in seen or not path.is_file():
            continue
        seen[name] = path
        text = path.read_text(encoding="utf-8")
        for found, names in _FROM.findall(text):
            todo.append(found)
            todo += (f"{found}.{n.split(' as ')[0].strip()}" for n in names.strip("()").split(",") if n.strip())
        todo += _IMPORT.findall(text)
    return _source_digest(seen.items())


def files_digest(digests: Mapping[str, str], shas: Iterable[str | None], *params: object) -> str | None:
    """The inputs digest of result files (by sha, in order; None: no file) by their content `digests`, and
    `params`; None where a file has no digest (then nothing is kept)."""
    h = hashlib.sha256(repr(params).encode())
    for sha in shas:
        found = "-" if sha is None else digests.get(sha)
        if found is None:
            return None
        h.update(f" {sha}:{found}".encode())
    return h.hexdigest()


# -- the store ------------------------------------------------------------------


class Folder(Protocol):
    """Where a memo keeps its values (a `Store`): its folder and its open FILE."""

    root: Path

    def db(self) -> sqlite3.Connection: ...


class Memo:
    """One command's view of a results folder's kept values: `get` (or `find` and `put`), then `close`
    (or a `with`), which writes what was put. In `store`'s file (`Store.db`); None: nothing kept."""

    def __init__(self, store: Folder | None, *, verify: bool | None = None) -> None:
        self.store = store
        self.verify = os.environ.get(VERIFY, "") not in ("", "0") if verify is None else verify
        self.code = code_digest()
        self._puts: dict[tuple[str, str], bytes] = {}
        self._waiting = 0  # bytes in _puts
        self._wrote = False  # values put were written before `close`
        self._used: set[tuple[str, str]] = set()  # rows read, and those put and written already
        self._db: sqlite3.Connection | None = None
        if store is not None:
            with contextlib.suppress(OSError, sqlite3.Error):  # no folder, read-only, busy: nothing kept this time
                self._db = store.db()

    def __enter__(self) -> Memo:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(
        self,
        kind: str,
        inputs: str | None,
        compute: Callable[[], T],
        to_tree: Callable[[T], Any] = _same,
        from_tree: Callable[[Any], T] = _same,
    ) -> T:
        """`from_tree` of the tree kept for `kind` and `inputs`, else `compute()`, kept as `to_tree` gives
        it. `inputs` None: computed, not kept. A tree `from_tree` raises one of GARBLED on is a miss."""
        if inputs is None:
            return compute()
        found = self.find(kind, inputs)
        if found is not None:
            try:
                value = from_tree(found)
            except GARBLED:
                pass
            else:
                if self.verify:
                    self.check(kind, found, to_tree(compute()))
                return value
        value = compute()
        self.put(kind, inputs, to_tree(value))
        return value

    def get_many(
        self, kind: str, inputs: Mapping[K, str | None], compute: Callable[[list[K]], Mapping[K, Any]]
    ) -> dict[K, Any]:
        """item -> the tree kept for `kind` and its `inputs` (None: not kept), else what `compute(items)` gives
        it (kept); items it gives nothing are left out. Where `verify`, hits are computed too and `check`ed."""
        found = self.find_many(kind, [key for key in inputs.values() if key is not None])
        out = {item: found[key] for item, key in inputs.items() if key in found}
        todo = [item for item in inputs if item not in out or self.verify]
        made = compute(todo) if todo else {}
        for item in (i for i in todo if i in made):
            if item in out:
                self.check(kind, out[item], made[item])
            else:
                out[item] = made[item]
                if (key := inputs[item]) is not None:
                    self.put(kind, key, made[item])
        return {item: out[item] for item in inputs if item in out}

    def find(self, kind: str, inputs: str) -> Any | None:
        """The tree kept for `kind` and `inputs`, or None (where `verify`, the caller `check`s a hit)."""
        return self.find_many(kind, [inputs]).get(inputs)

    def find_many(self, kind: str, inputs: Iterable[str]) -> dict[str, Any]:
        """inputs -> the tree kept for `kind` and those inputs, for those of `inputs` that have one."""
        keys = list(dict.fromkeys(inputs))
        found = {key: self._puts[kind, key] for key in keys if (kind, key) in self._puts}
        wanted = [key for key in keys if key not in found]
        if self._db is not None:
            # By the primary key: code is tested here, not by the code's index.
            sql = "SELECT inputs, code, value FROM memo WHERE kind = ? AND inputs IN ({marks})"
            with contextlib.suppress(sqlite3.Error):
                for key, code, value in in_batches(self._db, sql, wanted, kind):
                    if code == self.code and value is not None:
                        found[key] = value
                        self._used.add((kind, key))
        out: dict[str, Any] = {}
        for key, data in found.items():
            with contextlib.suppress(ValueError):
                out[key] = decode(data)
        return out

    def put(self, kind: str, inputs: str, tree: Any) -> None:
        """`tree` kept for `kind` and `inputs` (written when the memo closes, or once WRITE_AT bytes wait)."""
        if self._db is not None:
            data = self._puts[kind, inputs] = encode(tree)
            self._waiting += len(data)
            if self._waiting >= WRITE_AT:
                if self._write(self._db, self._puts, set(), closing=False):  # else kept, for `close` to try
                    self._used.update(self._puts)  # `close` marks them used
                    self._puts, self._wrote = {}, True
                self._waiting = 0

    def check(self, kind: str, kept: Any, fresh: Any) -> None:
        """StaleValue where a tree read for `kind` does not encode as `fresh` does."""
        kept, made = encode(kept), encode(fresh)
        if kept != made:
            raise StaleValue(
                f"the kept {kind!r} is not what its computation gives now ({len(kept)} bytes kept,"
                f" {len(made)} computed): its inputs digest misses an input"
            )

    def values(self, kind: str) -> Values:
        """This memo's values of one kind, by inputs digest (for a computation's own intermediate values)."""
        return Values(self, kind)

    def close(self) -> None:
        """What was put written, and the clean-up rule applied (see the module); the file stays open (`Store.close`)."""
        db, self._db = self._db, None
        puts, used = self._puts, self._used
        self._puts, self._used, self._waiting = {}, set(), 0
        if db is not None and (puts or self._wrote) and self._write(db, puts, used) and self.store is not None:
            shutil.rmtree(self.store.root / OLD_FOLDER, ignore_errors=True)  # no row names its files any more

    def _write(
        self, db: sqlite3.Connection, puts: dict[tuple[str, str], bytes], used: set[tuple[str, str]], closing=True
    ) -> bool:
        """`puts` written, and where `closing`, `used` and `puts` marked used and the clean-up rule applied;
        False where SQLite refused (nothing written)."""
        rows = [(kind, inputs, self.code, data) for (kind, inputs), data in puts.items()]
        try:
            db.execute("BEGIN IMMEDIATE")
            db.executemany("INSERT OR REPLACE INTO memo (kind, inputs, code, value) VALUES (?, ?, ?, ?)", rows)
            if closing:
                (last,) = db.execute("SELECT COALESCE(MAX(command), 0) FROM memo_used").fetchone()
                command = last + 1
                db.executemany(
                    "INSERT OR REPLACE INTO memo_used VALUES (?, ?, ?)", [(*key, command) for key in {*puts, *used}]
                )
                db.execute("DELETE FROM memo WHERE code != ?", (self.code,))
                db.execute(
                    "DELETE FROM memo WHERE (kind, inputs) IN (SELECT kind, inputs FROM memo_used WHERE command <= ?)",
                    (command - KEEP,),
                )
                db.execute("DELETE FROM memo_used WHERE command <= ?", (command - KEEP,))
            db.execute("COMMIT")
        except sqlite3.Error:
            with contextlib.suppress(sqlite3.Error):
                db.execute("ROLLBACK")
            return False
        return True


def in_batches(db: sqlite3.Connection, sql: str, keys: list[str], *params: str) -> Iterator:
    """The rows of `sql` over all of `keys`, at most 500 at a time (SQLite's limit on bound parameters)
    in its `{marks}`, after `params`."""
    for k in range(0, len(keys), 500):
        part = keys[k : k + 500]
        yield from db.execute(sql.format(marks=",".join("?" * len(part))), (*params, *part))


class Values:
    """A memo's trees of one kind: `get`/`put` by inputs digest; `verify` and `check` as the memo's."""

    def __init__(self, memo: Memo, kind: str) -> None:
        self.memo, self.kind = memo, kind
        self.verify = memo.verify

    def get(self, inputs: str) -> Any | None:
        return self.memo.find(self.kind, inputs)

    def put(self, inputs: str, tree: Any) -> None:
        self.memo.put(self.kind, inputs, tree)

    def check(self, kept: Any, fresh: Any) -> None:
        self.memo.check(self.kind, kept, fresh)
