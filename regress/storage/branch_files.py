"""Result files that stay on the results branch: listed here, read through git when something needs one.

After `regress results pull --partial`, MANIFEST lists every file of the branch tip (relative name ->
blob id); one listed but not in the folder is still one of its files, read with `git cat-file`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from regress.core.errors import RegressError
from regress.storage.atomic import write_atomic

BRANCH = "regress-results"  # the results branch and its remote, by default (results_branch pushes and fetches them)
REMOTE = "origin"
MANIFEST = ".branch-files.json"


@dataclass(frozen=True)
class BranchFiles:
    git_dir: str
    tip: str
    files: dict[str, str]  # machine/env/sha.pkl -> blob id


def blob_id(data: bytes) -> str:
    """The id git gives these bytes as a file, to tell an unchanged file without writing it."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def write(root: Path, git_dir: str, tip: str, files: dict[str, str]) -> None:
    write_atomic(root / MANIFEST, json.dumps({"git_dir": git_dir, "tip": tip, "files": files}).encode())
    _cached.cache_clear()


def forget(root: Path) -> None:
    """After a full pull every file is here: the list is dropped."""
    (root / MANIFEST).unlink(missing_ok=True)
    _cached.cache_clear()


def read(root: Path) -> BranchFiles | None:
    path = root / MANIFEST
    try:
        st = path.stat()
    except OSError:
        return None
    return _cached(str(path), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=4)
def _cached(path: str, _size: int, _mtime: int) -> BranchFiles | None:
    try:
        data = json.loads(Path(path).read_bytes())
        files = data["files"]
        if not (isinstance(files, dict) and all(isinstance(v, str) for v in files.values())):
            raise ValueError
        return BranchFiles(str(data["git_dir"]), str(data["tip"]), files)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a list that can't be read lists nothing: the folder's own files stand


def absent(root: Path, machine: str, env: str) -> dict[str, str]:
    """sha -> blob id of machine/env's files that are on the branch and not in the folder."""
    listed = read(root)
    if listed is None:
        return {}
    prefix = f"{machine}/{env}/"
    out = {}
    for rel, blob in listed.files.items():
        name = rel[len(prefix) :]
        if rel.startswith(prefix) and name.endswith(".pkl") and "/" not in name and not os.path.exists(root / rel):
            out[name[: -len(".pkl")]] = blob
    return out


def folders(root: Path) -> set[tuple[str, str]]:
    """The (machine, env) folders the list names."""
    listed = read(root)
    if listed is None:
        return set()
    return {(machine, env) for machine, env, _ in (rel.split("/") for rel in listed.files if rel.count("/") == 2)}


def blob_of(root: Path, rel: str) -> str | None:
    """The blob id of a listed file that is not in the folder; None if it is here or not listed."""
    listed = read(root)
    if listed is None or rel not in listed.files or os.path.exists(root / rel):
        return None
    return listed.files[rel]


def fetch(root: Path, rel: str, blob: str) -> bytes:
    """A listed file's bytes, read through git (fetched from the remote if this clone lacks them)."""
    listed = read(root)
    git_dir = listed.git_dir if listed is not None else ""
    proc = subprocess.run(
        ["git", "--git-dir", git_dir, "cat-file", "blob", blob],
        capture_output=True,
        env=dict(os.environ, GIT_TERMINAL_PROMPT="0"),
    )
    if proc.returncode != 0:
        reason = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["git failed"]
        raise RegressError(
            f"cannot read result file {root / rel} from the results branch ({reason[0]}); "
            "run `regress results pull` to fetch every file"
        )
    return proc.stdout
