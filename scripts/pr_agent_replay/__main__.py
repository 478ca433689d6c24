"""Replays a local git history as one pull request pushed to several times, runs PR-Agent on
every push against a fake GitHub and a fake model, and records what PR-Agent sends the model.

    python -m pr_agent_replay --out DIR [--mode incremental|full ...] REPO BASE C1 [C2 ...]

Modes (each a fresh pull request with no comments):
- incremental: `review` on push 1, `review -i` on every later push (the incremental review,
  which reviews the commits since its last review).
- full: `review` on every push.
Requests are recorded under DIR/<mode>/round<k>/. PR-Agent runs with its default settings but
for the GitHub and OpenAI endpoints and keys, which point at the fakes; its model is its default
one. Prints one line a round: mode, round, model calls, PR-Agent's exit status and the comments
it posted; the comments' final text is kept in DIR/<mode>-comments.json, its log in
DIR/<mode>.log.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

from . import fake_github, fake_model


def run_pr_agent(python, env, pr_url, command, log, cwd):
    """One PR-Agent command, from a directory outside any git checkout."""
    args = [python, "-m", "pr_agent.cli", f"--pr_url={pr_url}", *command]
    done = subprocess.run(args, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                          timeout=600)
    return done.returncode


def main():
    p = argparse.ArgumentParser(prog="pr_agent_replay")
    p.add_argument("--out", required=True)
    p.add_argument("--mode", action="append", choices=["incremental", "full"])
    p.add_argument("--python", default=sys.executable, help="the Python that has pr_agent")
    p.add_argument("repo")
    p.add_argument("base")
    p.add_argument("heads", nargs="+")
    a = p.parse_args()
    modes = a.mode or ["incremental", "full"]
    os.makedirs(a.out, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="pr-agent-replay-")
    recorder = fake_model.Recorder(a.out)
    model_server, model_url = fake_model.serve(recorder)
    failed = False
    print("mode\tround\tcalls\texit\tcomments", flush=True)
    for mode in modes:
        log_path = os.path.join(a.out, f"{mode}.log")
        with open(log_path, "w") as log:
            state = fake_github.State(a.repo, a.base, a.heads, log=log)
            gh_server, gh_url = fake_github.serve(state)
            env = dict(os.environ)
            env.update({
                "CONFIG__GIT_PROVIDER": "github",
                "GITHUB__DEPLOYMENT_TYPE": "user",
                "GITHUB__USER_TOKEN": "ghp_fake_token_for_the_replay",
                "GITHUB__BASE_URL": f"{gh_url}/api/v3",
                "OPENAI__KEY": "sk-fake-key-for-the-replay",
                "OPENAI__API_BASE": f"{model_url}/v1",
                # litellm would fetch its price list from the network at import.
                "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost",
            })
            pr_url = (f"{gh_url}/{fake_github.OWNER}/{fake_github.REPO}/pull/"
                      f"{fake_github.NUMBER}")
            for k in range(1, len(a.heads) + 1):
                state.advance()
                recorder.label = os.path.join(mode, f"round{k}")
                os.makedirs(os.path.join(a.out, recorder.label), exist_ok=True)
                command = ["review", "-i"] if mode == "incremental" and k > 1 else ["review"]
                print(f"--- {mode} round {k}: {' '.join(command)} at {a.heads[k - 1]}",
                      file=log, flush=True)
                rc = run_pr_agent(a.python, env, pr_url, command, log, scratch)
                calls = recorder.calls.get(recorder.label, 0)
                posted = sum(1 for c in state.comments if c["round"] == k)
                print(f"{mode}\t{k}\t{calls}\t{rc}\t{posted}", flush=True)
                if rc != 0 or calls == 0:
                    failed = True
            with open(os.path.join(a.out, f"{mode}-comments.json"), "w") as f:
                json.dump(state.comments, f, indent=1)
            gh_server.shutdown()
    model_server.shutdown()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
