"""One sticky comment per pull request: written by the check as a file, posted by `regress comment`.

The check job of a pull request from a fork gets a token that cannot write,
so the check only writes the comment to a file (uploaded as an artifact), and
a workflow on `workflow_run` posts it. That file comes from a job that ran the
pull request's code, so it is read as untrusted data: its shape is checked,
its body is cut to GitHub's limit and given our marker here, and with
`head_sha` (the trusted `workflow_run.head_sha`) the pull request it names
must be at exactly that commit.

The comment is found again by a hidden marker. Two runs that race both
create one; each then lists the comments again and keeps the oldest, so one
is left whatever the interleaving.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from regress.ci.check import Checked
from regress.ci.github import GitHub
from regress.core.errors import RegressError
from regress.output import pr_comment as render
from regress.storage.atomic import write_atomic

FORMAT = "regress-comment"
VERSION = 1
NEED = "pull-requests: write"
# A comment file larger than this is refused before it is parsed.
MAX_FILE = 4 * 1024 * 1024
KEY = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_MARK = re.compile(r"^<!-- regress:comment [^>]*-->\s*$", re.M)


def marker(key: str) -> str:
    return f"<!-- regress:comment {key} -->"


@dataclass(frozen=True)
class Payload:
    """What the check leaves for the poster."""

    body: str
    head_sha: str
    pr: int | None = None
    key: str = "regress"


@dataclass(frozen=True)
class Posted:
    action: str  # "created" | "updated" | "unchanged" | "stale"
    pr: int
    url: str = ""
    removed: int = 0  # duplicates deleted (another run's, when two raced)
    why: str = ""


def body_for(checked: Checked, *, chart_url: Callable | None = None, run_url: str = "") -> str:
    return render.body(
        list(checked.verdicts),
        base=checked.base,
        head=checked.head,
        threshold=checked.threshold,
        metrics=checked.metrics,
        operators=checked.operators,
        note=checked.note,
        chart_url=chart_url,
        run_url=run_url,
        cores=checked.cores,
    )


def event_number(path: str | None) -> int | None:
    """The pull request's number, from the event payload ($GITHUB_EVENT_PATH), if it is one."""
    if not path:
        return None
    try:
        event = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise RegressError(f"cannot read the GitHub event payload {path} ({exc}); unset GITHUB_EVENT_PATH") from None
    number = event.get("number", (event.get("pull_request") or {}).get("number"))
    return number if isinstance(number, int) and not isinstance(number, bool) else None


def write(path: Path, payload: Payload) -> None:
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "pr": payload.pr,
        "head_sha": payload.head_sha,
        "key": payload.key,
        "body": render.fit(payload.body, limit=render.COMMENT_LIMIT - 100),  # room for the marker
    }
    write_atomic(path, json.dumps(doc, indent=1), sync=False)


def read(path: Path) -> Payload:
    """A comment file, checked field by field (it may come from a fork's job)."""
    bad = f"{path} is not a comment file from `regress check --comment-file`"
    try:
        if path.stat().st_size > MAX_FILE:
            raise RegressError(f"{bad}: larger than {MAX_FILE} bytes")
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RegressError(
            f"no comment file {path}; write one with `regress check BASE --comment-file {path}`"
        ) from None
    except (OSError, ValueError) as exc:
        raise RegressError(f"{bad} ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise RegressError(bad)
    if doc.get("version") != VERSION:
        raise RegressError(
            f"{path} is version {doc.get('version')!r} of the comment file, this regress reads {VERSION}"
        )
    pr, sha, key, body = doc.get("pr"), doc.get("head_sha"), doc.get("key"), doc.get("body")
    if pr is not None and (not isinstance(pr, int) or isinstance(pr, bool) or pr < 1):
        raise RegressError(f"{bad}: 'pr' is not a pull request number")
    if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise RegressError(f"{bad}: 'head_sha' is not a commit")
    if not isinstance(key, str) or not KEY.fullmatch(key):
        raise RegressError(f"{bad}: 'key' is not a name of letters, digits, '.', '_' or '-'")
    if not isinstance(body, str):
        raise RegressError(f"{bad}: 'body' is not text")
    return Payload(body, sha, pr, key)


def _ours(gh: GitHub, pr: int, mark: str) -> list[dict]:
    comments = gh.paged(
        f"{gh.target.repo_path}/issues/{pr}/comments", what=f"list the comments of pull request #{pr}", need=NEED
    )
    return sorted((c for c in comments if mark in str(c.get("body", "")).splitlines()), key=lambda c: c["id"])


def post(gh: GitHub, payload: Payload, *, pr: int | None = None, head_sha: str | None = None) -> Posted:
    """Create the pull request's comment, or update the one that is there; never leave two."""
    pr = pr or payload.pr
    if pr is None:
        raise RegressError("which pull request? the comment file names none; pass --pr N")
    repo = gh.target.repo_path
    if head_sha is not None:
        if payload.head_sha != head_sha:
            raise RegressError(
                f"the comment file is for {payload.head_sha[:10]}, not {head_sha[:10]}: "
                "it comes from another run; download the artifact of the run that measured it"
            )
        got = gh.get(f"{repo}/pulls/{pr}", what=f"read pull request #{pr}", need="pull-requests: read")
        current = str((got.get("head") or {}).get("sha", ""))
        if current != head_sha:
            why = f"pull request #{pr} is at {current[:10]}, not {head_sha[:10]}: this comment is out of date (or the file names another pull request)"
            return Posted("stale", pr, why=why)
    mark = marker(payload.key)
    text = render.fit(_MARK.sub("", payload.body), tail=mark)
    path = f"{repo}/issues/{pr}/comments"
    found = _ours(gh, pr, mark)
    mine = None
    if not found:
        mine = gh.post(path, {"body": text}, what=f"create a comment on pull request #{pr}", need=NEED)
        # Another run may have created one meanwhile: the oldest stays, whoever we are.
        found = _ours(gh, pr, mark) or [mine]
    keep, others = found[0], found[1:]
    if mine is not None and keep["id"] == mine["id"]:
        action = "created"
    elif keep.get("body") == text:
        action = "unchanged"
    else:
        gh.patch(f"{repo}/issues/comments/{keep['id']}", {"body": text}, what=f"update the comment on #{pr}", need=NEED)
        action = "updated"
    removed = sum(
        gh.delete(f"{repo}/issues/comments/{c['id']}", what=f"delete a duplicate comment on #{pr}", need=NEED)
        for c in others
    )
    return Posted(action, pr, str(keep.get("html_url", "")), removed)
