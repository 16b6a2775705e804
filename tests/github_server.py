"""A local stand-in for the few GitHub REST endpoints regress calls, on 127.0.0.1.

It keeps issues, pull requests and their comments in memory and answers as
GitHub does: paginated listings with Link headers (pages of `page_size`),
403 "Resource not accessible by integration" with the permission GitHub
wants for a token that may only read, and any answers a test queues first
(a 429 or a secondary rate limit, then the real answer). `hold` makes a
number of comment listings wait for each other, so racing runs really
race. Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

BOT = {"login": "github-actions[bot]", "type": "Bot"}


@dataclass
class State:
    repo: str = "octo/proj"
    tokens: dict = field(default_factory=lambda: {"write-token": "write", "read-token": "read"})
    page_size: int = 2
    issues: dict = field(default_factory=dict)  # number -> issue (pull requests are issues too)
    pulls: dict = field(default_factory=dict)  # number -> {"head": {"sha": ...}}
    comments: dict = field(default_factory=dict)  # id -> comment
    labels: dict = field(default_factory=dict)
    queued: list = field(default_factory=list)  # (method, path regex, status, headers, body) answered first
    log: list = field(default_factory=list)  # (method, path, status)
    next_id: int = 1000
    hold_left: int = 0  # this many comment listings still wait for one another at `barrier`
    barrier: threading.Barrier | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_pull(self, number: int, head_sha: str) -> None:
        self.pulls[number] = {"number": number, "head": {"sha": head_sha}, "state": "open"}
        self.issues.setdefault(number, {"number": number, "title": f"PR {number}", "body": "", "state": "open"})
        self.issues[number]["pull_request"] = {"url": f"/repos/{self.repo}/pulls/{number}"}
        self.issues[number].setdefault("labels", [])

    def thread(self, number: int) -> list[dict]:
        return sorted((c for c in self.comments.values() if c["issue"] == number), key=lambda c: c["id"])

    def regress_issues(self, label: str) -> list[dict]:
        return [
            i
            for _, i in sorted(self.issues.items())
            if "pull_request" not in i and any(x["name"] == label for x in i["labels"])
        ]


class Handler(BaseHTTPRequestHandler):
    state: State
    base: str

    def log_message(self, *args) -> None:  # quiet
        pass

    def _send(self, status: int, body=None, headers: dict | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> dict:
        n = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(n) or b"{}")

    def _page(self, items: list, query: dict) -> None:
        per = min(int(query.get("per_page", ["30"])[0]), self.state.page_size)
        page = int(query.get("page", ["1"])[0])
        chunk = items[(page - 1) * per : page * per]
        headers = {}
        last = max(1, -(-len(items) // per))
        if page < last:
            q = {k: v[0] for k, v in query.items()}
            path = urlsplit(self.path).path
            links = [f'<{self.base}{path}?{urlencode({**q, "page": page + 1})}>; rel="next"']
            links.append(f'<{self.base}{path}?{urlencode({**q, "page": last})}>; rel="last"')
            headers["Link"] = ", ".join(links)
        self._send(200, chunk, headers)

    def _handle(self, method: str) -> None:
        s = self.state
        url = urlsplit(self.path)
        path, query = url.path, parse_qs(url.query)
        token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        with s.lock:
            for i, (m, pattern, status, headers, body) in enumerate(s.queued):
                if m == method and re.fullmatch(pattern, path):
                    del s.queued[i]
                    s.log.append((method, path, status))
                    return self._send(status, body, headers)
        if token not in s.tokens:
            s.log.append((method, path, 401))
            return self._send(401, {"message": "Bad credentials"})
        prefix = f"/repos/{s.repo}"
        if not path.startswith(prefix + "/"):
            s.log.append((method, path, 404))
            return self._send(404, {"message": "Not Found"})
        rest = path[len(prefix) :]
        if method != "GET" and s.tokens[token] != "write":
            wants = "issues=write; pull_requests=write" if "/issues" in rest else "issues=write"
            s.log.append((method, path, 403))
            return self._send(
                403,
                {"message": "Resource not accessible by integration"},
                {"x-accepted-github-permissions": wants},
            )
        held = None
        if method == "GET" and re.fullmatch(r"/issues/\d+/comments", rest):
            with s.lock:
                if s.hold_left > 0:
                    s.hold_left -= 1
                    held = s.barrier
        with s.lock:
            status, body, paged = self._route(method, rest, query)
            s.log.append((method, path, status))
        if held is not None:  # answered only once every held listing has read the same state
            with contextlib.suppress(threading.BrokenBarrierError):
                held.wait(timeout=20)
        if paged:
            return self._page(body, query)
        return self._send(status, body)

    def _route(self, method: str, rest: str, query: dict):
        s = self.state
        if m := re.fullmatch(r"/pulls/(\d+)", rest):
            pr = s.pulls.get(int(m[1]))
            return (200, pr, False) if pr and method == "GET" else (404, {"message": "Not Found"}, False)
        if m := re.fullmatch(r"/issues/(\d+)/comments", rest):
            number = int(m[1])
            if number not in s.issues:
                return 404, {"message": "Not Found"}, False
            if method == "GET":
                return 200, [self._comment_json(c) for c in s.thread(number)], True
            body = self._body()["body"]
            if len(body) > 65536:
                return 422, {"message": "Validation Failed", "errors": [{"message": "body is too long"}]}, False
            s.next_id += 1
            s.comments[s.next_id] = {"id": s.next_id, "issue": number, "body": body, "user": BOT}
            return 201, self._comment_json(s.comments[s.next_id]), False
        if m := re.fullmatch(r"/issues/comments/(\d+)", rest):
            c = s.comments.get(int(m[1]))
            if c is None:
                return 404, {"message": "Not Found"}, False
            if method == "DELETE":
                del s.comments[c["id"]]
                return 204, None, False
            if method == "PATCH":
                c["body"] = self._body()["body"]
            return 200, self._comment_json(c), False
        if rest == "/issues":
            if method == "GET":
                state = query.get("state", ["open"])[0]
                wanted = set(query.get("labels", [""])[0].split(",")) - {""}
                found = [
                    i
                    for _, i in sorted(s.issues.items(), reverse=True)
                    if (state == "all" or i["state"] == state) and wanted <= {x["name"] for x in i["labels"]}
                ]
                return 200, found, True
            doc = self._body()
            number = max([0, *s.issues]) + 1
            s.issues[number] = {
                "number": number,
                "title": doc["title"],
                "body": doc.get("body", ""),
                "state": "open",
                "labels": [{"name": n} for n in doc.get("labels", [])],
                "html_url": f"https://github.example/{s.repo}/issues/{number}",
                "user": BOT,
            }
            return 201, s.issues[number], False
        if m := re.fullmatch(r"/labels/([^/]+)", rest):
            found = s.labels.get(unquote(m[1]))
            return (200, found, False) if found else (404, {"message": "Not Found"}, False)
        if rest == "/labels" and method == "POST":
            doc = self._body()
            s.labels[doc["name"]] = doc
            return 201, doc, False
        return 404, {"message": "Not Found"}, False

    def _comment_json(self, c: dict) -> dict:
        return {
            "id": c["id"],
            "body": c["body"],
            "user": c["user"],
            "html_url": f"https://github.example/{self.state.repo}/issues/{c['issue']}#issuecomment-{c['id']}",
        }

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")


class FakeGitHub:
    """`with FakeGitHub() as gh:` a server on 127.0.0.1; `gh.url` is its API address, `gh.state` what it holds."""

    def __init__(self, state: State | None = None) -> None:
        self.state = state or State()
        handler = type("BoundHandler", (Handler,), {"state": self.state})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        handler.base = self.url
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def hold(self, n: int) -> None:
        """The next `n` comment listings wait for one another (at most 20 s)."""
        self.state.barrier, self.state.hold_left = threading.Barrier(n), n

    def queue(self, method: str, path: str, status: int, headers: dict | None = None, body=None) -> None:
        self.state.queued.append((method, path, status, headers or {}, body or {"message": "queued"}))

    def env(self, token: str = "write-token") -> dict:
        return {"GITHUB_TOKEN": token, "GITHUB_REPOSITORY": self.state.repo, "GITHUB_API_URL": self.url}

    def __enter__(self) -> FakeGitHub:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
