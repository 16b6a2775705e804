"""Files left on the results branch (`branch_files`): listed and read as the folder's own, through real git."""

from __future__ import annotations

import subprocess

import factories

from regress.core.errors import RegressError
from regress.storage import branch_files, summary
from regress.storage.codec import encode
from regress.storage.store import Store

SHAS = ["a" * 40, "b" * 40, "c" * 40]


def _result(sha: str, k: int):
    return factories.commit(sha, factories.bench(samples=factories.rounds_of([1e-3 * (k + 1)] * 3)), when=k)


def _repo_with_blobs(tmp_path):
    git_dir = tmp_path / "repo.git"
    subprocess.run(["git", "init", "-q", "--bare", str(git_dir)], check=True)
    blobs = {}
    for k, sha in enumerate(SHAS[1:], start=1):
        data = encode(_result(sha, k))
        blob = (
            subprocess.run(
                ["git", "--git-dir", str(git_dir), "hash-object", "-w", "--stdin"],
                input=data,
                capture_output=True,
                check=True,
            )
            .stdout.decode()
            .strip()
        )
        assert blob == branch_files.blob_id(data)  # git's own id, computed without git
        blobs[f"box/default/{sha}.pkl"] = blob
    return git_dir, blobs


def test_listed_files_are_the_folders_own_and_read_through_git(tmp_path):
    git_dir, blobs = _repo_with_blobs(tmp_path)
    store = Store(tmp_path / "results")
    store.save(_result(SHAS[0], 0))
    branch_files.write(store.root, str(git_dir), "f" * 40, blobs)
    assert store.shas("box", "default") == SHAS
    assert store.has("box", "default", SHAS[2]) and not store.has("box", "default", "d" * 40)
    assert [r.commit.sha for r in store.history("box", "default")] == SHAS
    assert store.load("box", "default", SHAS[1]) == _result(SHAS[1], 1)
    # The summary reads them too; its entries made from those blobs then stand without git.
    assert [r.commit.sha for r in summary.history(store, "box", "default")] == SHAS
    assert summary.knows(store, blobs) == set(blobs)
    # Saving over a listed file merges with the branch's copy and writes it here.
    more = factories.commit(SHAS[1], factories.bench(samples=factories.rounds_of([5e-3] * 3), sub="new"), when=1)
    store.save(more)
    assert (store.root / "box" / "default" / f"{SHAS[1]}.pkl").is_file()
    assert {r.id.sub_label for r in store.load("box", "default", SHAS[1]).results} == {"add", "new"}


def test_a_listed_file_git_cannot_read_is_one_line_and_the_rest_still_load(tmp_path):
    git_dir, blobs = _repo_with_blobs(tmp_path)
    store = Store(tmp_path / "results")
    store.save(_result(SHAS[0], 0))
    blobs[f"box/default/{SHAS[2]}.pkl"] = "0" * 40  # not in the repository
    branch_files.write(store.root, str(git_dir), "f" * 40, blobs)
    try:
        store.load("box", "default", SHAS[2])
    except RegressError as exc:
        assert f"{SHAS[2]}.pkl from the results branch" in str(exc) and "regress results pull" in str(exc)
    else:
        raise AssertionError("a blob git cannot read loaded")
    found = summary.history(store, "box", "default")
    assert [r.commit.sha for r in found] == SHAS[:2]
    assert len(store.refused) == 1 and "from the results branch" in store.refused[0]
    # A new run of that commit is never lost to it: written here alone (`results push` merges it later).
    new = factories.commit(SHAS[2], factories.bench(samples=factories.rounds_of([7e-3] * 3), sub="new"), when=2)
    store.save(new)
    assert store.load("box", "default", SHAS[2]) == new


def test_a_list_that_cannot_be_read_lists_nothing(tmp_path):
    store = Store(tmp_path / "results")
    store.save(_result(SHAS[0], 0))
    (store.root / branch_files.MANIFEST).write_text("{not json")
    assert store.shas("box", "default") == [SHAS[0]]
    branch_files.forget(store.root)
    assert not (store.root / branch_files.MANIFEST).exists()
