"""Makes PR-Agent 0.49.0 importable on Python 3.11.

PR-Agent declares Python >= 3.12, but only a few f-strings in two modules need 3.12's syntax
(they reuse their own quote character, or a backslash, inside a replacement field: PEP 701), and
one module imports itertools.batched (new in 3.12). Each is rewritten to the same expression in
3.11's terms. Every other module compiles and runs as
shipped. Idempotent; fails loudly if an edit finds nothing (another PR-Agent version) or a
module still does not compile.

    python -m pr_agent_replay.py311 SITE_PACKAGES
"""

import pathlib
import sys

EDITS = {
    # Every `.strip("\\r\\n")` of the module (inside f-strings and out: the same call).
    "pr_agent/algo/pr_processing.py": (
        '.strip("\\r\\n")',
        ".strip(chr(13) + chr(10))",
    ),
    "pr_agent/git_providers/bitbucket_server_provider.py": (
        'f"bitbucket-server:{getattr(self, "bitbucket_server_url", "")}:{workspace}"',
        "f\"bitbucket-server:{getattr(self, 'bitbucket_server_url', '')}:{workspace}\"",
    ),
    # itertools.batched is new in 3.12: the same generator from islice.
    "pr_agent/tools/pr_similar_issue.py": (
        "from itertools import batched, islice\n",
        "from itertools import islice\n"
        "batched = lambda items, n: iter(lambda it=iter(items): tuple(islice(it, n)), ())\n",
    ),
}


def main(site):
    for rel, (old, new) in EDITS.items():
        path = pathlib.Path(site) / rel
        text = path.read_text()
        if old not in text and new in text:
            continue
        if old not in text:
            sys.exit(f"{rel}: the text to rewrite for Python 3.11 is not there")
        path.write_text(text.replace(old, new))
        for cached in path.parent.glob(f"__pycache__/{path.stem}.*.pyc"):
            cached.unlink()
    root = pathlib.Path(site) / "pr_agent"
    for p in root.rglob("*.py"):
        compile(p.read_text(), str(p), "exec")


if __name__ == "__main__":
    main(sys.argv[1])
