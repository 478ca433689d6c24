//! `reviewbot eval`: a panel measured on findings whose answer is known (`docs/eval.md`).
//!
//! A golden set is a directory of cases, one directory each: `diff.patch`, an optional
//! `checkout/` (the new side, which model lenses read as they read a `--checkout`), and
//! `expected.json`, the known problems `[{"path", "line", "description"}]`. Each case is
//! reviewed as `review --diff … --checkout …` would review it, and what the panel found is
//! scored: a finding matches an expected problem when it names the same file and its lines lie
//! within [`WINDOW`] lines of the problem's; each problem matches at most one finding, the
//! nearest. Rows are given per lens alone (each lens's findings before merging), for the merged
//! panel, and, when cross-examination ran, for the panel after it (what a review would post).

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::config::ReviewConfig;
use crate::context::{Context, Snapshot};
use crate::diff::Diff;
use crate::lens::LensSpec;
use crate::review::finding::Finding;
use crate::review::panel::{NoProgress, Panel};
use crate::review::pipeline::{self, ReviewAt, Reviewed};

/// How many lines away from an expected problem a finding's lines may lie and still match.
pub const WINDOW: u32 = 5;

/// The name of the merged panel's row.
pub const PANEL: &str = "panel";

/// The name of the row of the panel after cross-examination (when a verifier ran).
pub const VERIFIED: &str = "panel+verify";

/// A known problem of a case.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Expected {
    pub path: String,
    pub line: u32,
    pub description: String,
}

/// One case of a golden set, read and checked.
#[derive(Debug)]
pub struct Case {
    pub name: String,
    pub diff: Diff,
    pub checkout: Option<PathBuf>,
    pub expected: Vec<Expected>,
}

/// Why a golden set cannot be evaluated: it names the case and the problem.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SetError {
    #[error("{dir}: {problem}")]
    Set { dir: String, problem: String },
    #[error("case {case}: {problem}")]
    Case { case: String, problem: String },
}

/// Reads every case under `dir` (its subdirectories, by name).
pub fn load(dir: &Path) -> Result<Vec<Case>, SetError> {
    let set = |problem: String| SetError::Set {
        dir: dir.display().to_string(),
        problem,
    };
    let entries = std::fs::read_dir(dir).map_err(|e| set(format!("cannot read it: {e}")))?;
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    if dirs.is_empty() {
        return Err(set(
            "holds no case (a directory with diff.patch and expected.json)".into(),
        ));
    }
    dirs.iter().map(|d| load_case(d)).collect()
}

fn load_case(dir: &Path) -> Result<Case, SetError> {
    let name = dir
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let bad = |problem: String| SetError::Case {
        case: name.clone(),
        problem,
    };
    let read = |file: &str| {
        std::fs::read_to_string(dir.join(file)).map_err(|e| bad(format!("cannot read {file}: {e}")))
    };
    let diff = Diff::parse(read("diff.patch")?)
        .map_err(|e| bad(format!("diff.patch is not a diff: {e}")))?;
    let expected: Vec<Expected> = serde_json::from_str(&read("expected.json")?)
        .map_err(|e| bad(format!("expected.json: {e}")))?;
    for e in &expected {
        if e.line == 0 {
            return Err(bad(format!(
                "expected.json: {} has line 0 (lines count from 1)",
                e.path
            )));
        }
        if !diff.files().iter().any(|f| f.path() == e.path) {
            return Err(bad(format!(
                "expected.json names {}, which diff.patch does not change",
                e.path
            )));
        }
    }
    let checkout = Some(dir.join("checkout")).filter(|c| c.is_dir());
    Ok(Case {
        name,
        diff,
        checkout,
        expected,
    })
}

/// True and false positives and false negatives of one set of findings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub tp: u32,
    pub fp: u32,
    #[serde(rename = "fn")]
    pub fn_: u32,
}

impl Counts {
    fn add(&mut self, other: Counts) {
        self.tp += other.tp;
        self.fp += other.fp;
        self.fn_ += other.fn_;
    }
}

/// The lines a finding covers.
fn lines_of(f: &Finding) -> (u32, u32) {
    let start = f.start_line.unwrap_or(f.line).min(f.line);
    (start, f.line)
}

/// How far `f` lies from `e`, when it is within the window of the same file.
fn distance(f: &Finding, e: &Expected) -> Option<u32> {
    if f.path != e.path {
        return None;
    }
    let (start, end) = lines_of(f);
    let d = if e.line < start {
        start - e.line
    } else {
        e.line.saturating_sub(end)
    };
    (d <= WINDOW).then_some(d)
}

/// Scores `found` against `expected`: each problem takes the nearest finding not yet taken.
pub fn score(found: &[&Finding], expected: &[Expected]) -> Counts {
    let mut taken = vec![false; found.len()];
    let mut tp = 0;
    for e in expected {
        let nearest = found
            .iter()
            .enumerate()
            .filter(|(i, _)| !taken[*i])
            .filter_map(|(i, f)| distance(f, e).map(|d| (d, i)))
            .min();
        if let Some((_, i)) = nearest {
            taken[i] = true;
            tp += 1;
        }
    }
    let found_n = u32::try_from(found.len()).unwrap_or(u32::MAX);
    let expected_n = u32::try_from(expected.len()).unwrap_or(u32::MAX);
    Counts {
        tp,
        fp: found_n - tp,
        fn_: expected_n - tp,
    }
}

/// One row of the result: a lens alone, or the merged panel.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub name: String,
    #[serde(flatten)]
    pub counts: Counts,
    pub precision: f64,
    pub recall: f64,
    pub f1: f64,
    pub tokens: u64,
    pub cost_usd: Option<f64>,
    pub seconds: f64,
}

impl Row {
    fn new(name: &str, counts: Counts, spent: Spent) -> Row {
        let ratio = |a: u32, b: u32| match b {
            0 => 0.0,
            b => f64::from(a) / f64::from(b),
        };
        let precision = ratio(counts.tp, counts.tp + counts.fp);
        let recall = ratio(counts.tp, counts.tp + counts.fn_);
        let f1 = match precision + recall {
            s if s > 0.0 => 2.0 * precision * recall / s,
            _ => 0.0,
        };
        Row {
            name: name.to_owned(),
            counts,
            precision,
            recall,
            f1,
            tokens: spent.tokens,
            cost_usd: spent.cost_usd,
            seconds: spent.seconds,
        }
    }
}

/// What a lens (or the panel) spent on a case.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Spent {
    tokens: u64,
    cost_usd: Option<f64>,
    seconds: f64,
}

impl Spent {
    fn add(&mut self, other: Spent) {
        self.tokens += other.tokens;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
        self.seconds += other.seconds;
    }
}

/// One case's rows, and the lenses that failed on it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseResult {
    pub case: String,
    pub rows: Vec<Row>,
    /// `lens: error` for each lens that failed: the case is then a failed case.
    pub failed: Vec<String>,
}

/// The whole evaluation: rows over every case, and each case's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalReport {
    pub cases: usize,
    pub rows: Vec<Row>,
    pub per_case: Vec<CaseResult>,
}

impl EvalReport {
    /// How many cases had a lens fail.
    pub fn failed_cases(&self) -> usize {
        self.per_case
            .iter()
            .filter(|c| !c.failed.is_empty())
            .count()
    }
}

/// Reviews every case with `lenses`, `jobs` cases at once, and scores them; `done` hears of
/// each case as it ends (cases done, cases in all).
pub async fn run(
    cases: Vec<Case>,
    lenses: &[LensSpec],
    config: &ReviewConfig,
    panel: &Panel,
    jobs: usize,
    done: &(dyn Fn(usize, usize) + Sync),
) -> EvalReport {
    use futures_util::StreamExt;
    let total = cases.len();
    let mut finished = 0;
    let mut per_case: Vec<CaseResult> = futures_util::stream::iter(cases)
        .map(|case| one(case, lenses, config, panel))
        .buffer_unordered(jobs.max(1))
        .inspect(|_| {
            finished += 1;
            done(finished, total);
        })
        .collect()
        .await;
    per_case.sort_by(|a, b| a.case.cmp(&b.case));
    EvalReport {
        cases: total,
        rows: totals(&per_case),
        per_case,
    }
}

/// Reviews one case and scores each lens and the panel.
async fn one(case: Case, lenses: &[LensSpec], config: &ReviewConfig, panel: &Panel) -> CaseResult {
    let context = case
        .checkout
        .as_deref()
        .and_then(|dir| Snapshot::checkout(dir).ok())
        .map_or_else(Context::default, |s| s.context());
    let started = Instant::now();
    let earlier = std::collections::BTreeSet::new();
    let at = ReviewAt {
        anchors: None,
        earlier: &earlier,
    };
    let Reviewed {
        report,
        located,
        refuted,
    } = pipeline::review_with(
        case.diff,
        at,
        None,
        lenses,
        config,
        context,
        panel,
        &NoProgress,
    )
    .await;
    let wall = started.elapsed().as_secs_f64();
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    let mut all = Spent::default();
    for p in &report.lenses {
        let spent = Spent {
            tokens: p.usage.map_or(0, |u| u.input_tokens + u.output_tokens),
            cost_usd: p.cost_usd,
            seconds: p.latency_ms as f64 / 1000.0,
        };
        all.add(spent);
        if let Some(error) = &p.error {
            failed.push(format!("{}: {error}", p.lens));
        }
        // A lens alone: what it found, refuted or not.
        let own: Vec<&Finding> = located
            .iter()
            .chain(&refuted.located)
            .filter(|f| f.lenses.contains(&p.lens))
            .collect();
        rows.push(Row::new(
            p.lens.as_str(),
            score(&own, &case.expected),
            spent,
        ));
    }
    all.seconds = wall;
    let posted: Vec<&Finding> = report.findings.iter().collect();
    match report.verification.as_ref().filter(|v| !v.runs.is_empty()) {
        None => rows.push(Row::new(PANEL, score(&posted, &case.expected), all)),
        Some(v) => {
            // The merged panel before cross-examination: what was posted, and what a verifier
            // refuted.
            let merged: Vec<&Finding> = posted.iter().copied().chain(&refuted.merged).collect();
            rows.push(Row::new(PANEL, score(&merged, &case.expected), all));
            let mut checked = all;
            for p in &v.runs {
                checked.tokens += p.usage.map_or(0, |u| u.input_tokens + u.output_tokens);
                checked.cost_usd = match (checked.cost_usd, p.cost_usd) {
                    (None, None) => None,
                    (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
                };
                if let Some(error) = &p.error {
                    failed.push(format!("{} (verify): {error}", p.lens));
                }
            }
            rows.push(Row::new(VERIFIED, score(&posted, &case.expected), checked));
        }
    }
    CaseResult {
        case: case.name,
        rows,
        failed,
    }
}

/// The case's row named `name`; a case where no verifier ran posts what its panel found.
fn row_of<'c>(case: &'c CaseResult, name: &str) -> Option<&'c Row> {
    let named = case.rows.iter().find(|r| r.name == name);
    match name {
        VERIFIED => named.or_else(|| case.rows.iter().find(|r| r.name == PANEL)),
        _ => named,
    }
}

/// The rows over every case: counts and spending summed, the ratios computed again.
fn totals(per_case: &[CaseResult]) -> Vec<Row> {
    let mut names: Vec<String> = Vec::new();
    for c in per_case {
        for r in &c.rows {
            if !names.contains(&r.name) {
                names.push(r.name.clone());
            }
        }
    }
    names
        .iter()
        .map(|name| {
            let mut counts = Counts::default();
            let mut spent = Spent::default();
            for r in per_case.iter().filter_map(|c| row_of(c, name)) {
                counts.add(r.counts);
                spent.add(Spent {
                    tokens: r.tokens,
                    cost_usd: r.cost_usd,
                    seconds: r.seconds,
                });
            }
            Row::new(name, counts, spent)
        })
        .collect()
}

#[cfg(test)]
mod tests;
