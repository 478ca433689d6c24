//! One review, top to bottom: gate the files, plan the prompt, run the panel, parse and place
//! each finding, merge.

use std::sync::Arc;

use globset::{Glob, GlobSetBuilder};

use crate::config::ReviewConfig;
use crate::diff::Diff;
use crate::lens::{LensRequest, LensSpec, PrInfo};
use crate::plan;
use crate::review::finding::Finding;
use crate::review::merge::merge;
use crate::review::panel::{PanelObserver, run_panel};
use crate::review::{NotReviewed, NotReviewedReason, Report};

/// Reviews `diff` with `lenses` and returns the merged report (not posted anywhere).
pub async fn review(
    diff: Diff,
    pr: Option<PrInfo>,
    lenses: &[LensSpec],
    config: &ReviewConfig,
    observer: &dyn PanelObserver,
) -> Report {
    let (diff, not_reviewed) = gate(diff, config);
    let diff = Arc::new(diff);
    let prompt = plan::build_prompt(&diff, pr.as_ref());
    let request = Arc::new(LensRequest { prompt, diff: Arc::clone(&diff), pr });
    let runs = run_panel(lenses, request, observer).await;

    let mut findings = Vec::new();
    let mut provenance = Vec::with_capacity(runs.len());
    for run in runs {
        if let Some(response) = run.response {
            let lens = &run.provenance.lens;
            findings.extend(response.findings.into_iter().map(|raw| Finding::locate(raw, lens, &diff)));
        }
        provenance.push(run.provenance);
    }
    Report {
        head: None,
        round: None,
        posted: false,
        skipped: None,
        findings: merge(findings, config.min_blocking_confidence),
        lenses: provenance,
        not_reviewed,
    }
}

/// Drops what no lens should see — binary files and `ignore_paths` — and lists each of them.
fn gate(mut diff: Diff, config: &ReviewConfig) -> (Diff, Vec<NotReviewed>) {
    let mut builder = GlobSetBuilder::new();
    for pattern in &config.ignore_paths {
        // Validated when the config was loaded.
        if let Ok(glob) = Glob::new(pattern) {
            builder.add(glob);
        }
    }
    let ignored = builder.build().unwrap_or_else(|_| globset::GlobSet::empty());
    let mut not_reviewed = Vec::new();
    diff.retain(|file| {
        let reason = if ignored.is_match(file.path()) {
            NotReviewedReason::Ignored
        } else if file.binary {
            NotReviewedReason::Binary
        } else {
            return true;
        };
        not_reviewed.push(NotReviewed { path: file.path().to_owned(), reason });
        false
    });
    (diff, not_reviewed)
}
