"""PR-Agent replayed over a local git history, for scripts/pr-agent-tokens.sh: a fake GitHub
(fake_github, over gitrepo) serves the pull request one push at a time, a fake model
(fake_model) records every request, __main__ drives PR-Agent's `review` and `review -i`,
py311 makes PR-Agent 0.49.0 run on Python 3.11, and table prints the comparison."""
