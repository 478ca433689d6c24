//! The posted form of a round: review body, line comments and their hidden markers
//! (DESIGN.md "What a posted round looks like"); `--format markdown` prints the same.

use std::fmt::Write;

use crate::render::{
    clean, failed_lenses, not_reviewed_reason, place, reviewers, severity_word, verdict_line,
};
use crate::review::Report;
use crate::review::finding::Finding;

/// Labels and caps the body mentions.
#[derive(Debug, Clone)]
pub struct BodyOptions<'a> {
    pub opt_out_label: &'a str,
    /// How many findings go into line comments; the rest are listed in the body.
    pub max_comments: usize,
}

/// The findings that become line comments (on the diff, up to the cap), in output order.
pub fn attached(report: &Report, max_comments: usize) -> Vec<&Finding> {
    report
        .findings
        .iter()
        .filter(|f| f.in_diff)
        .take(max_comments)
        .collect()
}

/// The review body.
pub fn body(report: &Report, opts: &BodyOptions<'_>) -> String {
    let mut out = String::new();
    match (report.round, &report.head) {
        (Some(round), Some(head)) => {
            let _ = write!(out, "Round {round} — reviewed head {}", head.short());
        }
        _ => out.push_str("Review of a local diff"),
    }
    let _ = writeln!(out, " — reviewers: {}\n", reviewers(&report.lenses));
    let _ = writeln!(
        out,
        "Advisory findings from reviewbot — the code owner decides. Reply to disagree; the\n`{}` label opts this PR out.\n",
        opts.opt_out_label
    );
    let _ = writeln!(out, "{}\n", verdict_line(report.verdict()));

    let attached = attached(report, opts.max_comments);
    match attached.len() {
        0 if report.findings.is_empty() => out.push_str("No findings.\n\n"),
        0 => {}
        1 => out.push_str("1 finding is attached to the lines below.\n\n"),
        n => {
            let _ = writeln!(out, "{n} findings are attached to the lines below.\n");
        }
    }

    let rest: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| !attached.iter().any(|a| std::ptr::eq(*a, *f)))
        .collect();
    let (off_diff, over_cap): (Vec<&Finding>, Vec<&Finding>) =
        rest.into_iter().partition(|f| !f.in_diff);
    list(&mut out, "Not on a changed line:", &off_diff);
    list(
        &mut out,
        "More findings than line comments allow:",
        &over_cap,
    );

    if !report.not_reviewed.is_empty() {
        out.push_str("Not reviewed:\n");
        for n in &report.not_reviewed {
            let _ = writeln!(
                out,
                "- `{}` ({})",
                clean(&n.path),
                not_reviewed_reason(n.reason)
            );
        }
        out.push('\n');
    }
    let failed = failed_lenses(report);
    if !failed.is_empty() {
        out.push_str("Lenses that did not answer:\n");
        for line in failed {
            let _ = writeln!(out, "- {line}");
        }
        out.push('\n');
    }
    while out.ends_with('\n') {
        out.pop();
    }
    out.push('\n');
    out
}

fn list(out: &mut String, heading: &str, findings: &[&Finding]) {
    if findings.is_empty() {
        return;
    }
    let _ = writeln!(out, "{heading}");
    for f in findings {
        let _ = writeln!(
            out,
            "- **{}.** {} (`{}`; {} confidence)",
            severity_word(f.severity),
            clean(f.title.trim_end_matches('.')),
            clean(&place(&f.path, f.start_line, f.line, f.side)),
            f.confidence.as_str()
        );
    }
    out.push('\n');
}

/// A line comment: severity, title and body, confidence and lenses, and its hidden marker.
pub fn comment(f: &Finding) -> String {
    let lenses: Vec<&str> = f.lenses.iter().map(|l| l.as_str()).collect();
    format!(
        "**{}.** {}. {}\n\n({} confidence · {})\n<!-- reviewbot finding={} -->",
        severity_word(f.severity),
        clean(f.title.trim().trim_end_matches('.')),
        clean(f.body.trim()),
        f.confidence.as_str(),
        lenses.join(", "),
        f.fingerprint
    )
}

/// `--format markdown`: the body, then every finding as it would be posted.
pub fn render(report: &Report, opts: &BodyOptions<'_>) -> String {
    let mut out = body(report, opts);
    for f in &report.findings {
        let where_ = if f.in_diff {
            "line comment on"
        } else {
            "not on a changed line:"
        };
        let _ = write!(
            out,
            "\n---\n\n{where_} `{}`\n\n{}\n",
            clean(&place(&f.path, f.start_line, f.line, f.side)),
            comment(f)
        );
    }
    out
}
