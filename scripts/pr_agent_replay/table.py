"""The comparison table of one replay directory (written by scripts/pr-agent-tokens.sh):
reviewbot's exact tokens a round beside what PR-Agent's `review -i` and `review` sent.

    python -m pr_agent_replay.table OUT
"""

import csv
import os
import sys


def read_tsv(path):
    with open(path) as f:
        return list(csv.DictReader(f, delimiter="\t"))


def main(out):
    ours = [r for r in read_tsv(os.path.join(out, "reviewbot.tsv")) if r["round"] != "all"]
    counts = {}
    for r in read_tsv(os.path.join(out, "counts.tsv")):
        mode, rnd = r["dir"].rstrip("/").split(os.sep)[-2:]
        counts[(mode, int(rnd[len("round"):]))] = (int(r["files"]), int(r["tokens"]))
    calls = {}
    for r in read_tsv(os.path.join(out, "pr-agent.tsv")):
        calls[(r["mode"], int(r["round"]))] = int(r["calls"])

    head = ["round", "head", "reviewbot calls", "reviewbot exact", "(fixed/changed/context/numbers)",
            "PR-Agent review -i calls", "PR-Agent review -i", "PR-Agent review calls",
            "PR-Agent review", "reviewbot / review -i"]
    rows = []
    tot = {"ours": 0, "inc": 0, "full": 0, "oc": 0, "ic": 0, "fc": 0}
    for r in ours:
        k = int(r["round"])
        inc = counts.get(("incremental", k), (0, 0))[1]
        full = counts.get(("full", k), (0, 0))[1]
        ic, fc = calls.get(("incremental", k), 0), calls.get(("full", k), 0)
        exact = int(r["exact"])
        tot["ours"] += exact
        tot["inc"] += inc
        tot["full"] += full
        tot["oc"] += int(r["calls"])
        tot["ic"] += ic
        tot["fc"] += fc
        rows.append([str(k), r["head"][:7], r["calls"], f"{exact:,}",
                     "/".join(f"{int(r[k]):,}" for k in ("fixed", "changed", "context", "numbers")),
                     str(ic), f"{inc:,}", str(fc), f"{full:,}", ratio(exact, inc)])
    rows.append(["all", "", str(tot["oc"]), f"{tot['ours']:,}", "", str(tot["ic"]),
                 f"{tot['inc']:,}", str(tot["fc"]), f"{tot['full']:,}",
                 ratio(tot["ours"], tot["inc"])])
    widths = [max(len(x[i]) for x in [head, *rows]) for i in range(len(head))]
    for row in [head, *rows]:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths)))
    print(f"\nover the history: reviewbot / PR-Agent review -i = {ratio(tot['ours'], tot['inc'])}"
          f", reviewbot / PR-Agent review = {ratio(tot['ours'], tot['full'])}"
          f" (goal: <= 0.80x review -i)")


def ratio(a, b):
    return f"{a / b:.2f}x" if b else "n/a"


if __name__ == "__main__":
    main(sys.argv[1])
