"""The batched code digests (one git call for a whole history) are the one-by-one gitpython digests, exactly.

Stored verdicts and the kept same-code pairs are keyed by these digests, so a
batched read that differed in one commit would silently change which commits
count as the same code. A real repository walks through every layout.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from conftest import Repo

from regress.core.config import Config
from regress.storage import code_identity, gitrepo
from regress.storage.memo import Memo
from regress.storage.store import Store


def _code_id(repo, cfg: Config, sha: str) -> str:
    """The reference: a commit's code digest read one by one through gitpython ("" when git lacks it)."""
    import git

    try:
        tree = repo.commit(sha).tree
    except (ValueError, git.BadName, git.BadObject):
        return ""

    def entries(path: str) -> list[tuple[str, str]]:
        if path in ("", "."):
            return [("", tree.hexsha)]
        try:
            return [(path, tree[path].hexsha)]
        except KeyError:
            return [(path, "")]

    if cfg.code_paths:
        parts = [e for p in cfg.code_paths for e in entries(p)]
    elif cfg.import_path and cfg.import_path.strip("/") not in ("", "."):
        parts = entries(cfg.import_path.strip("/"))
    elif "src" in tree:
        parts = entries("src")
    else:
        parts = [(str(o.path), o.hexsha) for o in tree if code_identity._is_code(o.name, cfg)]
    if cfg.build_command:
        parts += [e for p in (cfg.build_inputs or (".",)) for e in entries(p)]
    return code_identity._digest(parts)


def _history(tmp_path) -> tuple[Repo, list[str]]:
    r = Repo(tmp_path / "proj")
    r.path.mkdir()
    r.git("init", "-q", "-b", "main")
    shas = [
        r.commit(
            "flat package at the root",
            {
                "flatpkg/__init__.py": "X = 1\n",
                "flatpkg/sub/mod.py": "Y = 1\n",
                "README.md": "a\n",
                "docs/index.rst": "x\n",
                "benchmarks/bench_x.py": "pass\n",
                "setup.cfg": "[build]\n",
                "naïve.py": "Z = 1\n",
            },
        ),
        r.commit("docs only", {"README.md": "b\n", "docs/index.rst": "y\n"}),
        r.commit("nested module", {"flatpkg/sub/mod.py": "Y = 2\n"}),
    ]
    # A submodule's gitlink and a symlink: entries that are neither blob nor tree.
    r.git("update-index", "--add", "--cacheinfo", f"160000,{shas[0]},vendor")
    (r.path / "link").symlink_to("flatpkg")
    shas.append(r.commit("gitlink and symlink", same_code=True))
    shas.append(r.commit("build flags", {"setup.cfg": "[build]\nflags = -O3\n"}))
    shas.append(r.commit("src layout", {"src/pkg/__init__.py": "A = 1\n"}))
    shas.append(r.commit("src change", {"src/pkg/__init__.py": "A = 2\n"}))
    r.git("rm", "-q", "-r", "flatpkg/sub")
    shas.append(r.commit("nested path gone", same_code=True))
    shas.append(r.commit("benchmarks only", {"benchmarks/bench_x.py": "pass  # again\n"}))
    return r, shas


CONFIGS = {
    "root, then src/": {},
    "benchmark folder with a slash": {"benchmarks": "benchmarks/"},
    "code_paths": {
        "code_paths": (
            "flatpkg/sub",
            "flatpkg/sub/mod.py",
            "setup.cfg",
            "missing/x",
            "flatpkg/",
            ".",
            "flatpkg/__init__.py/x",
            "vendor",
            "link",
            "naïve.py",
        )
    },
    "nested import path": {"import_path": "/flatpkg/sub/"},
    "import path": {"import_path": "flatpkg"},
    "import path at the root": {"import_path": "/"},
    "build command, whole tree": {"build_command": "make"},
    "build command, build inputs": {"build_command": "make", "build_inputs": ("setup.cfg", "src/pkg", "", "no/such")},
    "code_paths and a build command": {"code_paths": ("src",), "build_command": "make", "build_inputs": (".",)},
}


def test_batched_digests_equal_one_by_one_for_every_layout(tmp_path):
    r, shas = _history(tmp_path)
    repo = gitrepo.open_repo(r.path)
    gone = "0" * 40
    for name, fields in CONFIGS.items():
        cfg = replace(Config(root=r.path), **fields)
        one_by_one = {sha: _code_id(repo, cfg, sha) for sha in shas}
        assert _code_id(repo, cfg, gone) == ""
        batched = code_identity.for_config(cfg, [*shas, gone, shas[0]], Memo(None))
        assert batched == one_by_one, name
        # The digests tell the history's code apart (so equality above is not of constants).
        assert len(set(batched.values())) >= 2, name


def test_the_root_layout_sees_code_not_documents(tmp_path):
    r, shas = _history(tmp_path)
    ids = code_identity.for_config(Config(root=r.path), shas, Memo(None))
    flat, docs, nested, linked, build, src, src2, gone, bench = (ids[s] for s in shas)
    assert flat == docs != nested  # a docs-only commit is the same code as its parent
    assert linked != nested and build != linked  # the gitlink and symlink are entries; setup.cfg is code
    assert src not in (flat, build) and src2 != src  # src/ present: only it counts
    assert gone == src2 == bench  # outside src/, nothing counts


def test_no_repository_means_no_digests(tmp_path):
    cfg = Config(root=tmp_path)
    assert code_identity.for_config(cfg, ["0" * 40], Memo(None)) == {}
    assert code_identity.for_config(replace(cfg, root=tmp_path / "absent"), ["0" * 40], Memo(None)) == {}


def test_identities_are_kept_in_the_memo_and_asked_again_for_another_rule(tmp_path, monkeypatch):
    from regress.storage.code_identity import Reader
    from regress.storage.memo import StaleValue

    r, shas = _history(tmp_path)
    cfg = Config(root=r.path)
    cfg.results_dir.mkdir(parents=True, exist_ok=True)  # a results folder, for the memo
    with Memo(Store(cfg.results_dir)) as kept:
        first = code_identity.for_config(cfg, shas, kept)
    asked = []
    real = Reader.roots
    monkeypatch.setattr(Reader, "roots", lambda self, s: asked.append(list(s)) or real(self, s))
    with Memo(Store(cfg.results_dir), verify=False) as kept:
        assert code_identity.for_config(cfg, shas, kept) == first and asked == []  # kept: git not asked
    other = replace(cfg, code_paths=("src",))
    with Memo(Store(cfg.results_dir)) as kept:
        assert code_identity.for_config(other, shas, kept) == {
            sha: _code_id(gitrepo.open_repo(r.path), other, sha) for sha in shas
        }
    assert asked and set(asked[0]) == set(shas)  # another rule: every commit read again
    with Memo(Store(cfg.results_dir), verify=False) as kept:  # a wrong identity kept (by hand) ...
        kept.put(code_identity.CODE, f"{code_identity.rule(cfg)}:{shas[0]}", "not its tree")
    with Memo(Store(cfg.results_dir), verify=True) as kept, pytest.raises(StaleValue):
        code_identity.for_config(cfg, shas, kept)  # ... is found out where the memo verifies
