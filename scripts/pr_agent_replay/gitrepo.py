"""A local git history read the way GitHub's REST API would present it."""

import subprocess


def git(repo, *args, text=True):
    out = subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True)
    return out.stdout.decode("utf-8", "replace") if text else out.stdout


def rev(repo, name):
    return git(repo, "rev-parse", name + "^{commit}").strip()


def commit_info(repo, sha):
    """(parents, author name, author email, message) of a commit."""
    raw = git(repo, "show", "-s", "--format=%P%x00%an%x00%ae%x00%B", sha)
    parents, name, email, message = raw.split("\x00", 3)
    return parents.split(), name, email, message.rstrip("\n")


def file_at(repo, ref, path):
    """The bytes of `path` at `ref`, or None when it is not there."""
    try:
        return git(repo, "show", f"{ref}:{path}", text=False)
    except subprocess.CalledProcessError:
        return None


def _unquote(path):
    if path.startswith('"') and path.endswith('"'):
        return path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape").encode(
            "latin-1").decode("utf-8", "replace")
    return path


def diff_files(repo, old, new):
    """The files changed from `old` to `new` as GitHub's files lists have them: filename,
    status, previous_filename, additions, deletions, changes and patch (the hunks alone)."""
    raw = git(repo, "diff", "--no-color", "--no-ext-diff", "-M", "--full-index", old, new)
    files = []
    cur = None
    for line in raw.split("\n"):
        if line.startswith("diff --git "):
            cur = {"status": "modified", "patch_lines": [], "additions": 0, "deletions": 0,
                   "in_hunks": False, "binary": False}
            files.append(cur)
            # `diff --git a/x b/y`: the names are fixed up below from ---/+++ or rename lines.
            rest = line[len("diff --git "):]
            half = len(rest) // 2
            cur["filename"] = _unquote(rest[half + 1:])[2:] if rest[half] == " " else rest
            continue
        if cur is None:
            continue
        if cur["in_hunks"]:
            if line.startswith("+"):
                cur["additions"] += 1
            elif line.startswith("-"):
                cur["deletions"] += 1
            cur["patch_lines"].append(line)
            continue
        if line.startswith("@@"):
            cur["in_hunks"] = True
            cur["patch_lines"].append(line)
        elif line.startswith("new file mode"):
            cur["status"] = "added"
        elif line.startswith("deleted file mode"):
            cur["status"] = "removed"
        elif line.startswith("rename from "):
            cur["status"] = "renamed"
            cur["previous_filename"] = _unquote(line[len("rename from "):])
        elif line.startswith("rename to "):
            cur["filename"] = _unquote(line[len("rename to "):])
        elif line.startswith("+++ ") and line[4:] != "/dev/null":
            cur["filename"] = _unquote(line[4:])[2:]
        elif line.startswith("--- ") and line[4:] != "/dev/null" and cur["status"] == "removed":
            cur["filename"] = _unquote(line[4:])[2:]
        elif line.startswith("Binary files"):
            cur["binary"] = True
    out = []
    for f in files:
        lines = f.pop("patch_lines")
        while lines and lines[-1] == "":
            lines.pop()
        f.pop("in_hunks")
        binary = f.pop("binary")
        f["changes"] = f["additions"] + f["deletions"]
        if lines and not binary:
            f["patch"] = "\n".join(lines)
        out.append(f)
    return out
