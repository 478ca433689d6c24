//! Cross-examination (`docs/contract.md` "Cross-examination"): before a round is settled, a
//! finding only one model lens raised is checked against the code by a lens of another vendor.
//! `refuted` withdraws it, `confirmed` raises its confidence one step; anything else leaves it as
//! it was. One call per verifier a round, through the panel (its timeouts, caps, retries,
//! fallback and evidence), the call's provenance marked `verify`.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;
use tokio::task::JoinSet;

use crate::config::{VerifyConfig, VerifyMode};
use crate::diff::Diff;
use crate::evidence::Record;
use crate::ids::LensName;
use crate::lens::contract::AnswerKind;
use crate::lens::verdicts::{Verdict, VerdictKind};
use crate::lens::{LensRequest, LensSpec, LensStatus, PrInfo, Provenance, Role};
use crate::plan::Spot;
use crate::review::finding::{Checked, Finding};
use crate::review::panel::{NoProgress, Panel, PanelInput};

/// What a round's cross-examination did: each finding checked and its verdict, and the
/// verifiers' calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verification {
    pub checked: Vec<CheckedFinding>,
    /// One per verifier call (role `verify`), failed ones too.
    pub runs: Vec<Provenance>,
}

/// One finding a verifier answered for (a verifier that failed answered for none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckedFinding {
    pub fingerprint: String,
    pub title: String,
    /// The lenses that raised it.
    pub lenses: Vec<LensName>,
    pub verdict: VerdictKind,
    pub by: LensName,
    pub evidence: String,
}

impl Verification {
    /// How many findings got `kind`.
    pub fn count(&self, kind: VerdictKind) -> usize {
        self.checked.iter().filter(|c| c.verdict == kind).count()
    }

    /// The findings withdrawn (refuted).
    pub fn withdrawn(&self) -> usize {
        self.count(VerdictKind::Refuted)
    }

    /// The verifiers called, each once, in order.
    pub fn verifiers(&self) -> Vec<&LensName> {
        let mut out: Vec<&LensName> = Vec::new();
        for run in &self.runs {
            if !out.contains(&&run.lens) {
                out.push(&run.lens);
            }
        }
        out
    }

    /// What one lens's own review (per-lens posting) shows: the verdicts on its findings, and
    /// the calls it made as a verifier. `None` is the whole round.
    pub fn for_lens(&self, lens: Option<&LensName>) -> Verification {
        let Some(lens) = lens else {
            return self.clone();
        };
        Verification {
            checked: self
                .checked
                .iter()
                .filter(|c| c.lenses.contains(lens))
                .cloned()
                .collect(),
            runs: self
                .runs
                .iter()
                .filter(|r| &r.lens == lens)
                .cloned()
                .collect(),
        }
    }

    /// Several lenses' parts (per-lens posting) as one.
    pub fn combine(parts: impl IntoIterator<Item = Verification>) -> Verification {
        let mut all = Verification::default();
        for part in parts {
            for c in part.checked {
                if !all.checked.contains(&c) {
                    all.checked.push(c);
                }
            }
            for r in part.runs {
                if !all.runs.contains(&r) {
                    all.runs.push(r);
                }
            }
        }
        all
    }
}

/// Something cross-examination tells the user, as data; the words are in `render::notice`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyNotice {
    /// No other model lens answered this round: `unchecked` findings stay unchecked.
    NoVerifier { unchecked: usize },
    /// The verifier failed (`error`): the findings it was to check stay as they were.
    Failed {
        verifier: LensName,
        unchecked: usize,
        error: String,
    },
}

/// The findings to check, as indices into `findings`: those of one model lens alone (`single`)
/// or of any model lens (`all`), most severe first, at most `max_findings`. A finding the
/// builtin lens raised is left out: its rules are deterministic.
pub fn candidates(findings: &[Finding], lenses: &[LensSpec], config: VerifyConfig) -> Vec<usize> {
    let model = |name: &LensName| lenses.iter().any(|l| &l.name == name && l.is_model());
    let mut picked: Vec<usize> = (0..findings.len())
        .filter(|&i| {
            let f = &findings[i];
            let all_model = !f.lenses.is_empty() && f.lenses.iter().all(model);
            match config.mode {
                VerifyMode::Off => false,
                VerifyMode::Single => all_model && f.lenses.len() == 1,
                VerifyMode::All => all_model,
            }
        })
        .collect();
    // Stable: among equals, the merge's order stays.
    picked.sort_by_key(|&i| (findings[i].severity, findings[i].confidence));
    picked.truncate(config.max_findings);
    picked
}

/// Who checks a finding raised by `authors`: the first of `usable` (the panel's model lenses
/// that can be asked, in order) of a vendor none of the authors is; else the first that is not
/// an author; else no one.
pub fn verifier<'a>(authors: &[&LensSpec], usable: &[&'a LensSpec]) -> Option<&'a LensSpec> {
    let others = || {
        usable
            .iter()
            .copied()
            .filter(|l| l.is_model() && !authors.iter().any(|a| a.name == l.name))
    };
    others()
        .find(|l| !authors.iter().any(|a| a.same_vendor(l)))
        .or_else(|| others().next())
}

/// What a round's cross-examination reads: the panel and how each lens did in the review, the
/// diff the findings are placed on, the PR, and the snapshot the verifier reads.
pub struct VerifyInput<'a> {
    pub lenses: &'a [LensSpec],
    pub runs: &'a [Provenance],
    pub diff: &'a Diff,
    pub pr: Option<&'a PrInfo>,
    pub checkout: Option<Arc<Path>>,
    /// Fingerprints an earlier round reported: raised again, they are carried over, not
    /// checked again.
    pub earlier: &'a BTreeSet<String>,
}

/// One verifier's call: the lens and the findings (indices) it checks.
struct Call {
    spec: LensSpec,
    findings: Vec<usize>,
}

/// Checks the candidates among `findings`, applying the verdicts: refuted findings are removed
/// (kept in the result and the evidence), confirmed ones raised one step. `None` when `[verify]
/// mode = "off"`.
pub async fn cross_examine(
    findings: &mut Vec<Finding>,
    input: &VerifyInput<'_>,
    panel: &Panel,
) -> Option<Verification> {
    if panel.verify.mode == VerifyMode::Off {
        return None;
    }
    let mut picked = candidates(findings, input.lenses, panel.verify);
    picked.retain(|&i| !input.earlier.contains(&findings[i].fingerprint));
    let calls = plan_calls(findings, &picked, input, panel);
    let mut verification = Verification::default();
    let mut tasks = JoinSet::new();
    for (order, call) in calls.into_iter().enumerate() {
        let req = request(findings, &call.findings, input);
        let panel = panel.clone();
        tasks.spawn(async move {
            let input = Arc::new(PanelInput::single(req));
            // A one-lens panel yields one run.
            let run = panel
                .run(std::slice::from_ref(&call.spec), input, &NoProgress)
                .await
                .into_iter()
                .next();
            (order, call, run)
        });
    }
    let mut done = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        if let Ok(one) = joined {
            done.push(one);
        }
    }
    // Verdicts are applied in the calls' order, whatever order they finished in.
    done.sort_by_key(|(order, _, _)| *order);
    let mut refuted = Vec::new();
    for (_, call, run) in done {
        let Some(run) = run else { continue };
        let mut provenance = run.provenance;
        provenance.role = Role::Verify;
        let verdicts = match (&provenance.status, run.response) {
            (LensStatus::Ok, Some(r)) => r.verdicts.unwrap_or_default(),
            _ => {
                (panel.notices)(
                    &VerifyNotice::Failed {
                        verifier: call.spec.name.clone(),
                        unchecked: call.findings.len(),
                        error: provenance.error.clone().unwrap_or_default(),
                    }
                    .to_string(),
                );
                verification.runs.push(provenance);
                continue;
            }
        };
        for &i in &call.findings {
            let f = &mut findings[i];
            let checked = judge(f, &call.spec.name, &verdicts);
            record(panel, f, &checked);
            if checked.verdict == VerdictKind::Refuted {
                refuted.push(i);
            }
            verification.checked.push(checked);
        }
        verification.runs.push(provenance);
    }
    refuted.sort_unstable();
    for i in refuted.into_iter().rev() {
        findings.remove(i);
    }
    Some(verification)
}

/// The verdict on finding `f` among `verdicts` (a finding left unanswered is `unsure`), applied:
/// a confirmed finding is one step more confident and carries what its verifier read.
fn judge(f: &mut Finding, by: &LensName, verdicts: &[Verdict]) -> CheckedFinding {
    let (verdict, evidence) = verdicts
        .iter()
        .find(|v| v.id.trim() == f.fingerprint)
        .map_or((VerdictKind::Unsure, String::new()), |v| {
            (v.verdict, v.evidence.trim().to_owned())
        });
    if verdict == VerdictKind::Confirmed {
        f.confidence = f.confidence.raised();
    }
    f.verified = Some(Checked {
        verdict,
        by: by.clone(),
        evidence: evidence.clone(),
    });
    CheckedFinding {
        fingerprint: f.fingerprint.clone(),
        title: f.title.clone(),
        lenses: f.lenses.clone(),
        verdict,
        by: by.clone(),
        evidence,
    }
}

fn record(panel: &Panel, f: &Finding, checked: &CheckedFinding) {
    if let Some(ev) = &panel.evidence {
        ev.record(&Record::Verdict {
            fingerprint: &f.fingerprint,
            title: &f.title,
            verifier: checked.by.as_str(),
            verdict: checked.verdict.as_str(),
            evidence: &checked.evidence,
        });
    }
}

/// Each candidate's verifier, grouped into one call per verifier (in the panel's order). A
/// candidate with none is counted in a notice.
fn plan_calls(
    findings: &[Finding],
    picked: &[usize],
    input: &VerifyInput<'_>,
    panel: &Panel,
) -> Vec<Call> {
    let spec = |name: &LensName| input.lenses.iter().find(|l| &l.name == name);
    // Only a lens that answered this round is asked: one that could not run will not now.
    let usable: Vec<&LensSpec> = input
        .lenses
        .iter()
        .filter(|l| {
            input
                .runs
                .iter()
                .any(|r| r.lens == l.name && r.status == LensStatus::Ok)
        })
        .collect();
    let mut calls: Vec<Call> = Vec::new();
    let mut unchecked = 0;
    for &i in picked {
        let authors: Vec<&LensSpec> = findings[i].lenses.iter().filter_map(spec).collect();
        let Some(chosen) = verifier(&authors, &usable) else {
            unchecked += 1;
            continue;
        };
        match calls.iter_mut().find(|c| c.spec.name == chosen.name) {
            Some(call) => call.findings.push(i),
            None => calls.push(Call {
                spec: as_it_ran(chosen, input.runs),
                findings: vec![i],
            }),
        }
    }
    if unchecked > 0 {
        (panel.notices)(&VerifyNotice::NoVerifier { unchecked }.to_string());
    }
    calls.sort_by_key(|c| input.lenses.iter().position(|l| l.name == c.spec.name));
    calls
}

/// The verifier as it ran in the review: a lens that fell back to its vendor's API stays there
/// (the fallback is sticky for the run).
fn as_it_ran(spec: &LensSpec, runs: &[Provenance]) -> LensSpec {
    let mut spec = spec.clone();
    if let Some(run) = runs
        .iter()
        .find(|r| r.lens == spec.name && r.fallback_source.is_some())
    {
        spec.backend = run.actual_backend;
        spec.model = run.model.clone();
        spec.api_fallback_model = None;
    }
    spec
}

/// The verifier's request: the findings as one JSON array, the numbered diff of their files,
/// the snapshot, and the verdicts' schema.
fn request(findings: &[Finding], which: &[usize], input: &VerifyInput<'_>) -> LensRequest {
    let asked: Vec<&Finding> = which.iter().map(|&i| &findings[i]).collect();
    let (prompt, diff) = prompt(&asked, input.diff);
    LensRequest {
        prompt,
        diff: Arc::new(diff),
        pr: input.pr.cloned(),
        checkout: input.checkout.clone(),
        answer: AnswerKind::Verify,
    }
}

/// A cross-examination's prompt for `findings`, placed on `diff` (the diff around each one's
/// lines), and their files' part of `diff` (what a `command` lens gets as `diff`).
pub fn prompt(findings: &[&Finding], diff: &Diff) -> (String, Diff) {
    let items: Vec<serde_json::Value> = findings
        .iter()
        .map(|f| {
            let quote = diff
                .file(&f.path)
                .and_then(|file| diff.line_text(file, f.side, f.line));
            serde_json::json!({
                "id": f.fingerprint,
                "path": f.path,
                "line": f.line,
                "side": f.side,
                "title": f.title,
                "body": f.body,
                "quote": quote,
            })
        })
        .collect();
    // One finding a line: the array's own indentation would cost tokens and say nothing.
    let json = format!(
        "[\n{}\n]",
        items
            .iter()
            .map(serde_json::Value::to_string)
            .collect::<Vec<_>>()
            .join(",\n")
    );
    let shown = diff.subset(|_, file| findings.iter().any(|f| f.path == file.path()));
    let spots: Vec<Spot<'_>> = findings
        .iter()
        .map(|f| Spot {
            path: &f.path,
            side: f.side,
            lines: (f.start_line.unwrap_or(f.line), f.line),
        })
        .collect();
    (crate::plan::verify_prompt(&shown, &spots, &json), shown)
}

#[cfg(test)]
pub(crate) mod tests;
