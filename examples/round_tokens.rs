//! The prompt tokens each round of a multi-push pull request sends one lens, replayed from a
//! local git history (`scripts/round-tokens.sh` runs it): round 1 reviews `BASE..C1`, round k
//! the part of `BASE..Ck` that changed since `Ck-1`, as `review --pr` does with GitHub's
//! compare API. Tokens are the estimate the planner budgets with (`plan::estimate_tokens`), the
//! schema left out as for a backend that takes it itself (the APIs, codex).
//!
//! Usage: `cargo run --release --example round_tokens -- REPO BASE C1 [C2 ...]`

use std::process::{Command, ExitCode};

use reviewbot::config::ReviewConfig;
use reviewbot::diff::{Diff, FileStatus};
use reviewbot::github::model::{Comparison, PrFile};
use reviewbot::ids::HeadSha;
use reviewbot::plan::{self, PlanOptions};
use reviewbot::review::scope;

fn git(repo: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .output()
        .map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn diff(repo: &str, from: &str, to: &str) -> Result<Diff, String> {
    let text = git(
        repo,
        &["diff", "--no-color", "--no-ext-diff", "-M", from, to],
    )?;
    Diff::parse(&text).map_err(|e| format!("{from}..{to}: {e}"))
}

/// A git diff as the files API would list it: each file's hunks as its `patch`.
fn pr_files(d: &Diff) -> Vec<PrFile> {
    d.files()
        .iter()
        .map(|f| {
            let mut patch = String::new();
            for h in &f.hunks {
                patch.push_str(d.hunk_header(h));
                patch.push('\n');
                patch.push_str(d.hunk_body(h));
            }
            let status = match f.status {
                FileStatus::Added => "added",
                FileStatus::Deleted => "removed",
                FileStatus::Modified => "modified",
                FileStatus::Renamed { .. } => "renamed",
                FileStatus::Copied { .. } => "copied",
            };
            PrFile {
                filename: f.path().to_owned(),
                previous_filename: f.old_path.clone().filter(|old| old != f.path()),
                status: status.to_owned(),
                patch: (!f.binary).then_some(patch),
            }
        })
        .collect()
}

fn tokens(d: &Diff) -> (usize, usize) {
    let review = ReviewConfig::default();
    let opts = PlanOptions {
        token_budget: review.token_budget,
        path_rules: &[],
        repo_rules: &[],
        notes: &[],
    };
    let planned = plan::plan(d, None, &opts);
    let total = planned
        .chunks
        .iter()
        .map(|c| plan::estimate_tokens(&plan::schema_given(&c.prompt)))
        .sum();
    (planned.chunks.len(), total)
}

fn run(args: &[String]) -> Result<(), String> {
    let [repo, base, heads @ ..] = args else {
        return Err("usage: round_tokens REPO BASE C1 [C2 ...]".into());
    };
    if heads.is_empty() {
        return Err("name at least one head".into());
    }
    println!("round\thead\tfiles\tcalls\tprompt_tokens");
    let mut all = 0;
    for (i, head) in heads.iter().enumerate() {
        let pr = diff(repo, base, head)?;
        let scoped = match i {
            0 => pr.clone(),
            _ => {
                let last = git(repo, &["rev-parse", &heads[i - 1]])?;
                let last = HeadSha::parse(last.trim()).ok_or("not a commit SHA")?;
                let since = diff(repo, &heads[i - 1], head)?;
                let cmp = Comparison {
                    status: "ahead".into(),
                    files: pr_files(&since),
                };
                scope::interdiff(&pr, Ok::<_, ()>(&cmp), &last, i as u32).0
            }
        };
        let (calls, t) = tokens(&scoped);
        all += t;
        let short: String = head.chars().take(12).collect();
        println!("{}\t{short}\t{}\t{calls}\t{t}", i + 1, scoped.files().len());
    }
    println!("all\t\t\t\t{all}");
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
