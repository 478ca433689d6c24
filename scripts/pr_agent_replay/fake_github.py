"""A fake GitHub REST API (the part PyGithub and PR-Agent ask for) over one pull request whose
head advances through a local git history one push at a time.

The PR is `OWNER/REPO#1`, base BASE, head the last push. Commits of push k are dated push k's
time on the fake clock, and comments posted while push k is the head are dated just after it,
so PR-Agent's incremental review (`review -i`), which compares commit dates with its last
review's date, sees exactly the commits of the pushes since that review. Comments PR-Agent posts
are kept and served back; anything else it writes (labels, reactions, check runs) is accepted
and forgotten. An unknown route is answered 404 and logged.
"""

import base64
import datetime as dt
import json
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, unquote, urlparse

from . import gitrepo, loopback

OWNER, REPO, NUMBER = "acme", "widget", 1
BOT = "pr-agent-bot"
EPOCH = dt.datetime(2026, 1, 5, 9, 0, 0, tzinfo=dt.timezone.utc)


def stamp(t):
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


class State:
    def __init__(self, repo, base, pushes, log=sys.stderr):
        self.repo = repo
        self.base = gitrepo.rev(repo, base)
        self.pushes = [gitrepo.rev(repo, c) for c in pushes]
        self.log = log
        self.lock = threading.Lock()
        # The PR's commits in push order, each with the push that brought it.
        self.commits = []
        seen = set()
        prev = self.base
        for k, head in enumerate(self.pushes, start=1):
            shas = gitrepo.git(repo, "rev-list", "--reverse", "--topo-order",
                               f"{prev}..{head}").split()
            for sha in shas:
                if sha not in seen:
                    seen.add(sha)
                    self.commits.append((sha, k))
            prev = head
        self.push_of = dict(self.commits)
        self.round = 0
        self.comments = []
        self.next_id = 1000
        self.requests = 0
        self.cache = {}

    def advance(self):
        """The next push: the PR's head moves on."""
        self.round += 1

    @property
    def head(self):
        return self.pushes[self.round - 1]

    def now(self):
        """The fake clock: half an hour after the current push, a second a request."""
        self.requests += 1
        return EPOCH + dt.timedelta(hours=self.round, minutes=30, seconds=self.requests)

    def push_time(self, k):
        return EPOCH + dt.timedelta(hours=k)

    def resolve(self, ref):
        """A ref as the fake's branches name it (main is the base, feature the head), else as
        the local repository does."""
        return {"main": self.base, "feature": self.head}.get(ref) or gitrepo.rev(self.repo, ref)

    def cached(self, key, fn):
        if key not in self.cache:
            self.cache[key] = fn()
        return self.cache[key]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: State = None  # set by serve()

    def log_message(self, fmt, *args):
        pass

    # -- plumbing ---------------------------------------------------------------------------

    def base_url(self):
        return f"http://{self.headers.get('Host')}"

    def api(self, path):
        return f"{self.base_url()}/api/v3{path}"

    def send_json(self, status, value):
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-RateLimit-Limit", "5000")
        self.send_header("X-RateLimit-Remaining", "4999")
        self.send_header("X-RateLimit-Reset", "4102444800")
        self.end_headers()
        self.wfile.write(body)

    def not_found(self):
        print(f"fake github: 404 {self.command} {self.path}", file=self.state.log)
        self.send_json(404, {"message": "Not Found",
                             "documentation_url": "https://docs.github.com/rest"})

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return {}

    def do_GET(self):
        self.route("GET")

    def do_POST(self):
        self.route("POST")

    def do_PATCH(self):
        self.route("PATCH")

    def do_PUT(self):
        self.route("PUT")

    def do_DELETE(self):
        self.route("DELETE")

    def route(self, method):
        url = urlparse(self.path)
        path = url.path
        if path.startswith("/api/v3"):
            path = path[len("/api/v3"):]
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        body = self.read_body() if method in ("POST", "PATCH", "PUT") else {}
        s = self.state
        with s.lock:
            try:
                self.dispatch(method, path.rstrip("/") or "/", query, body)
            except Exception as e:  # a bug here must show, not hang PR-Agent
                print(f"fake github: 500 {method} {self.path}: {e!r}", file=s.log)
                self.send_json(500, {"message": repr(e)})

    # -- objects ----------------------------------------------------------------------------

    def user(self, login=BOT):
        return {"login": login, "id": 7 if login == BOT else 8, "node_id": "U_1", "type": "User",
                "url": self.api(f"/users/{login}"), "html_url": f"{self.base_url()}/{login}",
                "site_admin": False}

    def repo_json(self):
        full = f"{OWNER}/{REPO}"
        return {"id": 42, "node_id": "R_1", "name": REPO, "full_name": full,
                "owner": self.user(OWNER), "private": False,
                "html_url": f"{self.base_url()}/{full}", "url": self.api(f"/repos/{full}"),
                "default_branch": "main", "description": "replayed history",
                "language": None, "fork": False}

    def commit_json(self, sha, with_files=False):
        s = self.state
        parents, name, email, message = s.cached(("info", sha),
                                                 lambda: gitrepo.commit_info(s.repo, sha))
        k = s.push_of.get(sha, 0)
        when = stamp(s.push_time(k)) if k else stamp(s.push_time(0))
        who = {"name": name, "email": email, "date": when}
        full = f"{OWNER}/{REPO}"
        out = {"sha": sha, "node_id": "C_" + sha[:8],
               "url": self.api(f"/repos/{full}/commits/{sha}"),
               "html_url": f"{self.base_url()}/{full}/commit/{sha}",
               "commit": {"message": message, "author": who, "committer": who,
                          "url": self.api(f"/repos/{full}/git/commits/{sha}"),
                          "tree": {"sha": sha, "url": ""}},
               "author": self.user("author"), "committer": self.user("author"),
               "parents": [{"sha": p, "url": self.api(f"/repos/{full}/commits/{p}")}
                           for p in parents]}
        if with_files:
            # GitHub lists a merge commit's files against its first parent.
            files = s.cached(("cfiles", sha), lambda: gitrepo.diff_files(
                s.repo, parents[0] if parents else "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
                sha))
            out["files"] = [self.file_json(f, sha) for f in files]
            out["stats"] = {"additions": sum(f["additions"] for f in files),
                            "deletions": sum(f["deletions"] for f in files),
                            "total": sum(f["changes"] for f in files)}
        return out

    def file_json(self, f, ref):
        full = f"{OWNER}/{REPO}"
        out = dict(f)
        out["sha"] = "0" * 40
        out["blob_url"] = f"{self.base_url()}/{full}/blob/{ref}/{f['filename']}"
        out["raw_url"] = f"{self.base_url()}/{full}/raw/{ref}/{f['filename']}"
        out["contents_url"] = self.api(f"/repos/{full}/contents/{f['filename']}?ref={ref}")
        return out

    def pr_files(self):
        s = self.state
        head = s.head
        return s.cached(("prfiles", head), lambda: gitrepo.diff_files(
            s.repo, gitrepo.git(s.repo, "merge-base", s.base, head).strip(), head))

    def pr_commits(self):
        s = self.state
        return [sha for sha, k in s.commits if k <= s.round]

    def pr_json(self):
        s = self.state
        full = f"{OWNER}/{REPO}"
        files = self.pr_files()
        first = gitrepo.commit_info(s.repo, s.pushes[0])[3].split("\n")[0]
        ref = lambda sha, name: {"label": f"{OWNER}:{name}", "ref": name, "sha": sha,
                                 "user": self.user(OWNER), "repo": self.repo_json()}
        return {"id": 4242, "node_id": "PR_1", "number": NUMBER, "state": "open",
                "title": first[:200], "body": "Replayed from a local history, one push at a time.",
                "user": self.user("author"), "draft": False, "merged": False,
                "html_url": f"{self.base_url()}/{full}/pull/{NUMBER}",
                "url": self.api(f"/repos/{full}/pulls/{NUMBER}"),
                "issue_url": self.api(f"/repos/{full}/issues/{NUMBER}"),
                "head": ref(s.head, "feature"), "base": ref(s.base, "main"),
                "labels": [], "commits": len(self.pr_commits()),
                "changed_files": len(files),
                "additions": sum(f["additions"] for f in files),
                "deletions": sum(f["deletions"] for f in files),
                "created_at": stamp(s.push_time(1)), "updated_at": stamp(s.push_time(s.round))}

    def comment_json(self, c):
        full = f"{OWNER}/{REPO}"
        return {"id": c["id"], "node_id": f"IC_{c['id']}", "body": c["body"],
                "user": self.user(c["login"]), "created_at": c["created_at"],
                "updated_at": c["updated_at"],
                "url": self.api(f"/repos/{full}/issues/comments/{c['id']}"),
                "html_url": f"{self.base_url()}/{full}/pull/{NUMBER}#issuecomment-{c['id']}",
                "issue_url": self.api(f"/repos/{full}/issues/{NUMBER}"),
                "author_association": "NONE", "reactions": {"total_count": 0}}

    # -- routes -----------------------------------------------------------------------------

    def dispatch(self, method, path, query, body):
        s = self.state
        prefix = f"/repos/{OWNER}/{REPO}"
        if method == "GET" and path == "/user":
            return self.send_json(200, self.user())
        if method == "GET" and path.startswith("/users/"):
            return self.send_json(200, self.user(path.split("/")[2]))
        if method == "POST" and path in ("/api/graphql", "/graphql"):
            # Review threads (PR-Agent reads which of its findings a human resolved): none.
            threads = {"pageInfo": {"hasNextPage": False, "endCursor": None}, "nodes": []}
            return self.send_json(200, {"data": {"repository": {"pullRequest": {
                "reviewThreads": threads}}}})
        if not path.startswith(prefix):
            return self.not_found()
        rest = path[len(prefix):]
        page = int(query.get("page", "1"))

        def paged(items):
            per = int(query.get("per_page", "30"))
            return items[(page - 1) * per: page * per]

        if method == "GET" and rest == "":
            return self.send_json(200, self.repo_json())
        if method == "GET" and rest == "/branches/main":
            return self.send_json(200, {"name": "main", "protected": False,
                                        "commit": self.commit_json(s.base)})
        if method == "GET" and rest == "/languages":
            return self.send_json(200, {})
        if method == "GET" and rest == f"/pulls/{NUMBER}":
            return self.send_json(200, self.pr_json())
        if method == "GET" and rest == f"/pulls/{NUMBER}/commits":
            return self.send_json(200, paged([self.commit_json(c) for c in self.pr_commits()]))
        if method == "GET" and rest == f"/pulls/{NUMBER}/files":
            return self.send_json(200, paged([self.file_json(f, s.head) for f in self.pr_files()]))
        if method == "GET" and rest in (f"/pulls/{NUMBER}/comments", f"/pulls/{NUMBER}/reviews",
                                        f"/issues/{NUMBER}/labels", f"/issues/{NUMBER}/events",
                                        f"/issues/{NUMBER}/timeline", "/labels"):
            return self.send_json(200, [])
        m = re.fullmatch(r"/commits/([^/]+)", rest)
        if method == "GET" and m:
            try:
                sha = s.resolve(unquote(m.group(1)))
            except Exception:
                return self.not_found()
            commit = self.commit_json(sha, with_files=True)
            if page > 1:
                commit["files"] = []
            return self.send_json(200, commit)
        m = re.fullmatch(r"/compare/(.+)\.\.\.(.+)", rest)
        if method == "GET" and m:
            a = s.resolve(unquote(m.group(1)))
            b = s.resolve(unquote(m.group(2)))
            mb = gitrepo.git(s.repo, "merge-base", a, b).strip()
            files = gitrepo.diff_files(s.repo, mb, b)
            return self.send_json(200, {
                "status": "ahead", "ahead_by": 1, "behind_by": 0, "total_commits": 1,
                "url": self.api(f"{prefix}/compare/{a}...{b}"),
                "html_url": "", "permalink_url": "", "diff_url": "", "patch_url": "",
                "base_commit": self.commit_json(a), "merge_base_commit": self.commit_json(mb),
                "commits": [], "files": [self.file_json(f, b) for f in files]})
        m = re.fullmatch(r"/contents/(.+)", rest)
        if method == "GET" and m:
            file_path = unquote(m.group(1))
            ref = query.get("ref", s.head)
            try:
                ref = s.resolve(ref)
            except Exception:
                return self.not_found()
            data = gitrepo.file_at(s.repo, ref, file_path)
            if data is None:
                return self.not_found()
            return self.send_json(200, {
                "type": "file", "encoding": "base64", "size": len(data),
                "name": file_path.rsplit("/", 1)[-1], "path": file_path, "sha": "0" * 40,
                "content": base64.b64encode(data).decode(),
                "url": self.api(f"{prefix}/contents/{file_path}?ref={ref}"),
                "html_url": "", "git_url": "", "download_url": ""})
        if rest == f"/issues/{NUMBER}/comments":
            if method == "GET":
                return self.send_json(200, paged([self.comment_json(c) for c in s.comments]))
            if method == "POST":
                t = stamp(s.now())
                c = {"id": s.next_id, "body": body.get("body", ""), "login": BOT,
                     "created_at": t, "updated_at": t, "round": s.round}
                s.next_id += 1
                s.comments.append(c)
                return self.send_json(201, self.comment_json(c))
        m = re.fullmatch(r"/issues/comments/(\d+)", rest)
        if m:
            found = [c for c in s.comments if c["id"] == int(m.group(1))]
            if not found:
                return self.not_found()
            c = found[0]
            if method == "GET":
                return self.send_json(200, self.comment_json(c))
            if method == "PATCH":
                c["body"] = body.get("body", c["body"])
                c["updated_at"] = stamp(s.now())
                return self.send_json(200, self.comment_json(c))
            if method == "DELETE":
                s.comments.remove(c)
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
        if method == "GET" and rest == f"/issues/{NUMBER}":
            pr = self.pr_json()
            pr["pull_request"] = {"url": pr["url"]}
            return self.send_json(200, pr)
        # Writes PR-Agent makes besides comments: accepted, not kept.
        if method in ("POST", "PUT", "PATCH"):
            if rest.endswith("/labels"):
                names = body.get("labels", []) if isinstance(body, dict) else body
                return self.send_json(200, [{"name": n, "color": "ededed"}
                                            for n in names if isinstance(n, str)])
            if rest.endswith("/reactions"):
                return self.send_json(201, {"id": 1, "content": body.get("content", "eyes"),
                                            "user": self.user()})
            if "check-runs" in rest:
                return self.send_json(201, {"id": 1, "status": "completed"})
        if method == "DELETE" and "/reactions/" in rest:
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return self.not_found()


def serve(state):
    """Starts the fake on a free loopback port; returns (server, base URL)."""
    return loopback.serve(Handler, state=state)
