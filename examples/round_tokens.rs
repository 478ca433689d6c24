//! The prompt tokens each round of a multi-push pull request sends one lens, replayed from a
//! local git history (`scripts/round-tokens.sh` runs it): round 1 reviews `BASE..C1`, round k
//! the part of `BASE..Ck` that changed since `Ck-1`, as `review --pr` does with GitHub's
//! compare API.
//!
//! Two counts per round. `estimate` is what the planner budgets with (`plan::estimate_tokens`),
//! the schema left out. `exact` is OpenAI's o200k count (the `bpe-openai` dev-dependency) of
//! everything the `openai` lens sends in its first request of each call, for a lens that sees
//! the diff alone: the user message (the prompt with the diff-only paragraph and the one-line
//! footer that points at the response format) plus the `response_format` JSON schema, which
//! OpenAI counts too. A lens with the snapshot also gets tool definitions and tool turns, which
//! depend on the model and are not counted here. The last four columns split the exact count:
//! `fixed` (instructions, footer and schema: everything outside the diff block), `changed` (the
//! diff's added and removed lines, without their line numbers), `context` (its unchanged lines,
//! likewise) and `numbers` (what the line numbers before those lines add to them); file
//! and hunk headers are the rest of `exact`, give or take a token where pieces join.
//!
//! Usage:
//! - `round_tokens [--dump DIR] REPO BASE C1 [C2 ...]`: the table; `--dump` also writes each
//!   call's message and schema to `DIR/round<k>/`.
//! - `round_tokens --verify REPO BASE C1 [C2 ...]`: each round's review tokens against a
//!   cross-examination's (`review::verify`) of 1, 3, 5 and at most `[verify] max_findings`
//!   findings, one in each of the round's largest files, and the ratios.
//! - `round_tokens --count DIR ...`: the exact count of every `.txt` file under each DIR
//!   (recorded prompts: one file a message or schema), one line a DIR.
//! - `round_tokens --tiktoken-table FILE`: writes the o200k ranks in tiktoken's file format, so
//!   a Python tool that wants tiktoken's o200k tables can run without downloading them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use base64::Engine;
use reviewbot::config::ReviewConfig;
use reviewbot::diff::{Diff, FileStatus, LineKind, Side};
use reviewbot::github::model::{Comparison, PrFile};
use reviewbot::ids::HeadSha;
use reviewbot::ids::LensName;
use reviewbot::lens::contract::response_schema;
use reviewbot::lens::contract::{Confidence, RawFinding, Severity};
use reviewbot::lens::tools::{self, ToolLimits};
use reviewbot::lens::verdicts::verdicts_schema;
use reviewbot::plan::{self, PlanOptions};
use reviewbot::review::finding::Finding;
use reviewbot::review::scope;
use reviewbot::review::verify;

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

fn exact(text: &str) -> usize {
    bpe_openai::o200k_base().count(text)
}

/// One round's counts, summed over its calls.
#[derive(Default, Clone, Copy)]
struct Count {
    calls: usize,
    estimate: usize,
    exact: usize,
    fixed: usize,
    changed: usize,
    context: usize,
    numbers: usize,
}

impl Count {
    fn add(&mut self, o: &Count) {
        self.calls += o.calls;
        self.estimate += o.estimate;
        self.exact += o.exact;
        self.fixed += o.fixed;
        self.changed += o.changed;
        self.context += o.context;
        self.numbers += o.numbers;
    }
}

const DIFF_OPEN: &str = "<untrusted label=\"diff\">\n";
const DIFF_CLOSE: &str = "</untrusted>\n";

/// A numbered diff line's mark (`+`, `-` or ` ` after its line number) and where the line
/// starts without its number (at the mark), or `None` for a file or hunk header or a note.
fn mark(line: &str) -> Option<(u8, usize)> {
    let b = line.as_bytes();
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    (digits > 0)
        .then(|| b.get(digits).copied())
        .flatten()
        .filter(|m| matches!(m, b'+' | b'-' | b' '))
        .map(|m| (m, digits))
}

/// The exact count of one call's message and schema, split as the columns say.
fn count_call(message: &str, schema: &str) -> Count {
    let mut c = Count {
        calls: 1,
        exact: exact(message) + exact(schema),
        ..Count::default()
    };
    let (outside, inside) = match message.find(DIFF_OPEN) {
        Some(open) => {
            let body = &message[open + DIFF_OPEN.len()..];
            let close = body.rfind(DIFF_CLOSE).unwrap_or(body.len());
            let rest = &body[close..];
            (
                format!("{}{DIFF_OPEN}{rest}", &message[..open]),
                &body[..close],
            )
        }
        None => (message.to_owned(), ""),
    };
    c.fixed = exact(&outside) + exact(schema);
    // Each numbered line without its number (as the diff has it), by kind; and all of them
    // with their numbers.
    let (mut changed, mut context, mut numbered) = (String::new(), String::new(), String::new());
    for line in inside.lines() {
        let Some((m, start)) = mark(line) else {
            continue;
        };
        let text = &line[start..];
        match m {
            b' ' => writeln!(context, "{text}"),
            _ => writeln!(changed, "{text}"),
        }
        .and_then(|()| writeln!(numbered, "{line}"))
        .expect("writing to a String");
    }
    c.changed = exact(&changed);
    c.context = exact(&context);
    c.numbers = exact(&numbered).saturating_sub(exact(&changed) + exact(&context));
    c
}

/// What the `openai` lens sends for each call of the plan of `d`; written to `dump` if given.
fn tokens(d: &Diff, dump: Option<&Path>) -> Result<Count, String> {
    let review = ReviewConfig::default();
    let opts = PlanOptions {
        token_budget: review.token_budget,
        path_rules: &[],
        repo_rules: &[],
        notes: &[],
    };
    // As a round does before planning: the secrets the diff holds are remembered, so every
    // line of a private key's body is masked in the prompt (each line is redacted alone).
    reviewbot::lens::builtin::remember_secrets(d, None);
    let planned = plan::plan(d, None, &opts);
    // As lens::api builds the first message of a structured call without tools, and as
    // lens::openai puts the schema in `response_format`.
    let schema = response_schema().to_string();
    let mut total = Count::default();
    for (n, c) in planned.chunks.iter().enumerate() {
        let message = reviewbot::lens::contract::schema_given(
            &reviewbot::lens::contract::with_repository(&c.prompt, false),
        );
        let mut one = count_call(&message, &schema);
        one.estimate = plan::estimate_tokens(&reviewbot::lens::contract::schema_given(&c.prompt));
        total.add(&one);
        if let Some(dir) = dump {
            let w = |name: String, text: &str| {
                std::fs::write(dir.join(&name), text).map_err(|e| format!("{name}: {e}"))
            };
            w(format!("call{}-user.txt", n + 1), &message)?;
            w(format!("call{}-response_format.txt", n + 1), &schema)?;
        }
    }
    Ok(total)
}

/// What round `i` (0-based) of the replay reviews: `BASE..heads[0]` first, then the part of
/// `BASE..heads[i]` that changed since `heads[i - 1]`.
fn scoped(repo: &str, base: &str, heads: &[String], i: usize) -> Result<Diff, String> {
    let head = &heads[i];
    let pr = diff(repo, base, head)?;
    Ok(match i {
        0 => pr,
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
    })
}

const USAGE: &str = "usage: round_tokens [--dump DIR | --verify] REPO BASE C1 [C2 ...]";

fn rounds(args: &[String], dump: Option<&Path>) -> Result<(), String> {
    let [repo, base, heads @ ..] = args else {
        return Err(USAGE.into());
    };
    if heads.is_empty() {
        return Err("name at least one head".into());
    }
    println!("round\thead\tfiles\tcalls\testimate\texact\tfixed\tchanged\tcontext\tnumbers");
    let mut all = Count::default();
    for (i, head) in heads.iter().enumerate() {
        let scoped = scoped(repo, base, heads, i)?;
        let dir = dump.map(|d| d.join(format!("round{}", i + 1)));
        if let Some(dir) = &dir {
            std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        let c = tokens(&scoped, dir.as_deref())?;
        all.add(&c);
        let short: String = head.chars().take(12).collect();
        println!(
            "{}\t{short}\t{}\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
            i + 1,
            scoped.files().len(),
            c.calls,
            c.estimate,
            c.exact,
            c.fixed,
            c.changed,
            c.context,
            c.numbers
        );
    }
    println!(
        "all\t\t\t{}\t{}\t{}\t{}\t{}\t{}\t{}",
        all.calls, all.estimate, all.exact, all.fixed, all.changed, all.context, all.numbers
    );
    // What a lens with the snapshot would send on top, per request: its tool definitions, and
    // the paragraph on reading the repository instead of the diff-only one.
    let tools: usize = tools::definitions(&ToolLimits::default())
        .iter()
        .map(|d| exact(&d.openai_chat().to_string()))
        .sum();
    let paragraph = exact(&reviewbot::lens::contract::with_repository("", true)) as isize
        - exact(&reviewbot::lens::contract::with_repository("", false)) as isize;
    eprintln!(
        "note: with the snapshot, each request also carries {tools} tokens of tool \
         definitions and {paragraph:+} tokens of the paragraph on reading the repository, \
         and every tool turn sends the conversation again (not counted above)"
    );
    Ok(())
}

/// Every `.txt` file below `dir`, in name order.
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), String> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files_under(&p, out)?;
        } else if p.extension().is_some_and(|e| e == "txt") {
            out.push(p);
        }
    }
    Ok(())
}

/// `DIR\tfiles\ttokens` for each DIR: the exact count of its `.txt` files, each counted alone
/// (one file a message or schema).
fn count(dirs: &[String]) -> Result<(), String> {
    println!("dir\tfiles\ttokens");
    for d in dirs {
        let mut files = Vec::new();
        if Path::new(d).exists() {
            files_under(Path::new(d), &mut files)?;
        }
        let mut total = 0;
        for f in &files {
            let text = std::fs::read(f).map_err(|e| format!("{}: {e}", f.display()))?;
            total += exact(&String::from_utf8_lossy(&text));
        }
        println!("{d}\t{}\t{total}", files.len());
    }
    Ok(())
}

/// The o200k ranks as tiktoken stores them: `base64(bytes) rank`, a line each, by rank.
fn tiktoken_table(path: &str) -> Result<(), String> {
    let bpe = &bpe_openai::o200k_base().bpe;
    let mut out = String::new();
    for id in 0..bpe.num_tokens() as u32 {
        let b64 = base64::engine::general_purpose::STANDARD.encode(bpe.token_bytes(id));
        writeln!(out, "{b64} {id}").expect("writing to a String");
    }
    std::fs::write(path, out).map_err(|e| format!("{path}: {e}"))
}

/// The findings a cross-examination checks in `d`, `k` of them: one on the first added line of
/// each of the `k` largest files (the most diff a verifier is shown for `k` findings).
fn findings_on_largest(d: &Diff, k: usize) -> Vec<Finding> {
    let mut files: Vec<_> = d
        .files()
        .iter()
        .filter_map(|f| {
            let line = d
                .file_lines(f)
                .find(|l| l.kind == LineKind::Added)
                .and_then(|l| l.new)?;
            Some((d.file_text(f).len(), f.path().to_owned(), line))
        })
        .collect();
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    files
        .into_iter()
        .take(k)
        .map(|(_, path, line)| {
            let raw = RawFinding {
                path,
                line,
                start_line: None,
                side: Side::Right,
                severity: Severity::Advisory,
                confidence: Confidence::Medium,
                title: "The new error path leaves the cache stale".into(),
                body: "When the write fails, the entry cached above is never evicted, so later \
                       reads serve the old value. Evict it on the error path too."
                    .into(),
                quote: None,
                suggestion: None,
            };
            Finding::locate(raw, &LensName::new("claude"), d)
        })
        .collect()
}

/// Each round's review tokens (all its calls) against a cross-examination of 1, 3, 5 and up to
/// `max_findings` findings, each in another of the round's largest files; as the `openai` lens
/// sends both (message and schema, the diff alone).
fn verify_ratio(args: &[String]) -> Result<(), String> {
    let [repo, base, heads @ ..] = args else {
        return Err(USAGE.into());
    };
    let most = reviewbot::config::VerifyConfig::default().max_findings;
    let schema = verdicts_schema().to_string();
    println!("round\tfiles\treview\tverify(1)\tverify(3)\tverify(5)\tverify({most})\tratios");
    let ks = [1, 3, 5, most];
    let (mut all_review, mut all_verify) = (0, [0usize; 4]);
    for i in 0..heads.len() {
        let d = scoped(repo, base, heads, i)?;
        let review = tokens(&d, None)?.exact;
        all_review += review;
        let mut cells = Vec::new();
        let mut ratios = Vec::new();
        for (j, k) in ks.into_iter().enumerate() {
            let found = findings_on_largest(&d, k);
            let asked: Vec<&Finding> = found.iter().collect();
            let (prompt, _) = verify::prompt(&asked, &d);
            let message = reviewbot::lens::contract::schema_given(
                &reviewbot::lens::contract::with_repository(&prompt, false),
            );
            let n = exact(&message) + exact(&schema);
            all_verify[j] += n;
            cells.push(format!("{n} ({})", found.len()));
            ratios.push(format!("{:.2}", n as f64 / review.max(1) as f64));
        }
        println!(
            "{}\t{}\t{review}\t{}\t{}",
            i + 1,
            d.files().len(),
            cells.join("\t"),
            ratios.join(" / ")
        );
    }
    let ratios: Vec<String> = all_verify
        .iter()
        .map(|v| format!("{:.2}", *v as f64 / all_review.max(1) as f64))
        .collect();
    println!(
        "all\t\t{all_review}\t{}\t{}",
        all_verify.map(|v| v.to_string()).join("\t"),
        ratios.join(" / ")
    );
    Ok(())
}

fn run(args: &[String]) -> Result<(), String> {
    match args {
        [flag, rest @ ..] if flag == "--verify" => verify_ratio(rest),
        [flag, dirs @ ..] if flag == "--count" => count(dirs),
        [flag, path] if flag == "--tiktoken-table" => tiktoken_table(path),
        [flag, dir, rest @ ..] if flag == "--dump" => rounds(rest, Some(Path::new(dir))),
        _ => rounds(args, None),
    }
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
