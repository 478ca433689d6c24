//! What `reviewbot eval` prints: a table a person reads, or one JSON document for scripts.

use crate::eval::{EvalReport, Row};

/// The table: one row per lens alone and one for the merged panel, over every case, then the
/// cases where a lens failed.
pub fn text(report: &EvalReport) -> String {
    let mut out = format!(
        "{} cases; a finding matches a known problem in the same file within {} lines.\n\n",
        report.cases,
        crate::eval::WINDOW
    );
    let width = report
        .rows
        .iter()
        .map(|r| r.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    out.push_str(&format!(
        "{:<width$}  {:>4} {:>4} {:>4}  {:>9} {:>6} {:>5}  {:>9} {:>9} {:>8}\n",
        "lens", "tp", "fp", "fn", "precision", "recall", "f1", "tokens", "cost", "seconds"
    ));
    for r in &report.rows {
        out.push_str(&row(r, width));
    }
    for case in report.per_case.iter().filter(|c| !c.failed.is_empty()) {
        out.push_str(&format!("\ncase {} had a failed lens:\n", case.case));
        for failure in &case.failed {
            out.push_str(&format!("  {failure}\n"));
        }
    }
    out
}

fn row(r: &Row, width: usize) -> String {
    let cost = r
        .cost_usd
        .map_or_else(|| "-".to_owned(), |c| format!("${c:.4}"));
    format!(
        "{:<width$}  {:>4} {:>4} {:>4}  {:>9.2} {:>6.2} {:>5.2}  {:>9} {:>9} {:>8.1}\n",
        r.name,
        r.counts.tp,
        r.counts.fp,
        r.counts.fn_,
        r.precision,
        r.recall,
        r.f1,
        r.tokens,
        cost,
        r.seconds
    )
}

/// The whole report as one JSON document.
pub fn json(report: &EvalReport) -> String {
    let mut out = serde_json::to_string_pretty(report).unwrap_or_else(|_| "{}".to_owned());
    out.push('\n');
    out
}

/// The progress line on stderr.
pub fn progress(done: usize, total: usize) -> String {
    format!("eval: {done}/{total} cases")
}
