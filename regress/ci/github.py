"""The few GitHub REST calls regress makes, through `requests`: the job's own token,
pagination by Link headers, waits on primary and secondary rate limits, and
one line naming the permission when the token lacks one.

The same code runs in a workflow (GITHUB_TOKEN, GITHUB_REPOSITORY and
GITHUB_API_URL are there) and on a laptop (export a token; flags override the
repository and the API address).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import requests

from regress import __version__
from regress.core.errors import RegressError

API_URL = "https://api.github.com"
# A listing longer than this many pages (of 100) is refused rather than read forever.
MAX_PAGES = 50
ATTEMPTS = 6
# A rate limit that lifts later than this is reported instead of waited out (seconds).
LONGEST_WAIT = 15 * 60
# Without Retry-After or a reset time, GitHub asks for at least a minute between tries.
SECONDARY_WAIT = 60.0
TIMEOUT = 30.0
GRANT = (
    "grant it in the job's `permissions:` (see the README's permissions table), "
    "or to the token itself when it is a personal one"
)


@dataclass(frozen=True)
class Target:
    """Which repository, through which API, with which token."""

    api_url: str
    repository: str  # owner/name
    token: str

    @property
    def repo_path(self) -> str:
        return f"/repos/{self.repository}"


def target(repository: str | None = None, api_url: str | None = None, env: Mapping[str, str] = os.environ) -> Target:
    """Flags first, then the variables every GitHub Actions step has."""
    token = env.get("GITHUB_TOKEN") or env.get("GH_TOKEN") or ""
    if not token.strip():
        raise RegressError(
            "no GitHub token: set GITHUB_TOKEN (in a workflow step: `env: GITHUB_TOKEN: ${{ github.token }}`; "
            "on a laptop: a token that may write issues and pull requests of the repository)"
        )
    repo = repository or env.get("GITHUB_REPOSITORY") or ""
    if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", repo):
        raise RegressError(
            f"{repo!r} is not a repository as owner/name; pass --repo OWNER/NAME (or set GITHUB_REPOSITORY)"
            if repo
            else "which repository? pass --repo OWNER/NAME (or set GITHUB_REPOSITORY)"
        )
    api = (api_url or env.get("GITHUB_API_URL") or API_URL).rstrip("/")
    if not re.fullmatch(r"https?://[^\s/]+(/[^\s]*)?", api):
        raise RegressError(f"{api!r} is not an http(s) address; fix --api-url (or GITHUB_API_URL)")
    return Target(api, repo, token.strip())


def _message(resp: requests.Response) -> str:
    try:
        doc = resp.json()
    except ValueError:
        return resp.reason or ""
    return str(doc.get("message", "")) if isinstance(doc, dict) else ""


class GitHub:
    """A session on one repository. `sleep` and `clock` are the waits' (tests pass fakes)."""

    def __init__(
        self,
        target: Target,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        say: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.target = target
        self.sleep, self.clock, self.say = sleep, clock, say
        self.session = requests.Session()
        self.session.headers.update(
            {
                "Authorization": f"Bearer {target.token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": f"regress/{__version__}",
            }
        )

    def close(self) -> None:
        self.session.close()

    def __enter__(self) -> GitHub:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- one call ------------------------------------------------------------

    def _url(self, path: str) -> str:
        if path.startswith(("http://", "https://")):
            if not path.startswith(self.target.api_url + "/"):  # a next-page link elsewhere never gets the token
                raise RegressError(f"GitHub sent a link outside {self.target.api_url}: {path}; check --api-url")
            return path
        return self.target.api_url + path

    def _wait(self, resp: requests.Response, attempt: int) -> float | None:
        """Seconds to wait before trying again when `resp` is a rate limit, else None."""
        limited = resp.status_code == 429 or (
            resp.status_code == 403
            and (resp.headers.get("x-ratelimit-remaining") == "0" or "rate limit" in _message(resp).lower())
        )
        if not limited:
            return None
        after = resp.headers.get("retry-after", "")
        if after.strip().isdigit():
            return float(after)
        reset = resp.headers.get("x-ratelimit-reset", "")
        if resp.headers.get("x-ratelimit-remaining") == "0" and reset.strip().isdigit():
            return max(float(reset) - self.clock(), 0.0) + 1.0
        return SECONDARY_WAIT * (attempt + 1)

    def call(
        self,
        method: str,
        path: str,
        *,
        what: str,
        need: str,
        json: dict | None = None,
        params: dict | None = None,
        allow: tuple[int, ...] = (),
    ) -> requests.Response:
        """One request, retried on rate limits and server hiccups; any refusal is one RegressError line.

        `what` says what the call does ("create a comment on #7"), `need` the
        permission it takes ("pull-requests: write"); statuses in `allow` are
        returned for the caller to handle."""
        url = self._url(path)
        for attempt in range(ATTEMPTS):
            last = attempt == ATTEMPTS - 1
            try:
                resp = self.session.request(method, url, json=json, params=params, timeout=TIMEOUT)
            except requests.RequestException as exc:
                if last:
                    raise RegressError(
                        f"cannot reach GitHub at {self.target.api_url} to {what} ({type(exc).__name__}); "
                        "check --api-url (or GITHUB_API_URL) and the network"
                    ) from None
                self.sleep(2.0**attempt)
                continue
            wait = self._wait(resp, attempt)
            if wait is not None and not last and wait <= LONGEST_WAIT:
                self.say(f"regress: GitHub's rate limit: waiting {wait:.0f} s to {what}")
                self.sleep(wait)
                continue
            if wait is not None:
                raise RegressError(
                    f"GitHub's rate limit stopped regress from being able to {what} ({resp.status_code}: "
                    f"{_message(resp)}); run the step again later"
                )
            if resp.status_code >= 500 and not last:
                self.sleep(2.0**attempt)
                continue
            if resp.status_code < 300 or resp.status_code in allow:
                return resp
            raise self._refused(resp, what, need)
        raise AssertionError("unreachable")  # pragma: no cover

    def _refused(self, resp: requests.Response, what: str, need: str) -> RegressError:
        status, message = resp.status_code, _message(resp)
        if status == 401:
            return RegressError(
                f"GitHub did not accept the token ({status}: {message}); set GITHUB_TOKEN to a valid token"
            )
        if status == 403:
            asked = resp.headers.get("x-accepted-github-permissions", "")
            return RegressError(
                f"the token may not {what} in {self.target.repository} ({status}: {message}): it needs `{need}`; "
                + GRANT
                + (f" (GitHub accepts: {asked})" if asked else "")
            )
        if status == 404:
            return RegressError(
                f"GitHub found nothing to {what} in {self.target.repository} (404: {message}): check --repo "
                f"(or GITHUB_REPOSITORY) and that the token can see the repository (the call needs `{need}`)"
            )
        return RegressError(f"GitHub refused to {what} in {self.target.repository} ({status}: {message})")

    # -- shapes of calls -------------------------------------------------------

    def get(self, path: str, *, what: str, need: str, params: dict | None = None):
        return self.call("GET", path, what=what, need=need, params=params).json()

    def post(self, path: str, body: dict, *, what: str, need: str):
        return self.call("POST", path, what=what, need=need, json=body).json()

    def patch(self, path: str, body: dict, *, what: str, need: str):
        return self.call("PATCH", path, what=what, need=need, json=body).json()

    def delete(self, path: str, *, what: str, need: str) -> bool:
        """False when it was already gone (another run deleted it first)."""
        return self.call("DELETE", path, what=what, need=need, allow=(404,)).status_code != 404

    def paged(self, path: str, *, what: str, need: str, params: dict | None = None) -> list:
        """Every item of a listing, page after page as the Link headers lead."""
        items: list = []
        query: dict | None
        url, query = path, {"per_page": 100, **(params or {})}
        for _ in range(MAX_PAGES):
            resp = self.call("GET", url, what=what, need=need, params=query)
            page = resp.json()
            if not isinstance(page, list):
                raise RegressError(f"GitHub answered something else than a list to {what}; check --api-url")
            items += page
            nxt = resp.links.get("next", {}).get("url")
            if not nxt:
                return items
            url, query = nxt, None  # the link carries the query
        raise RegressError(f"more than {MAX_PAGES} pages to {what}; regress stops there")
