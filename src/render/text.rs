//! `--format text`: compiler-style diagnostics with the flagged lines shown from the diff,
//! then the verdict.

use std::fmt::Write;

use anstyle::{AnsiColor, Effects, Style};

use crate::diff::{Diff, LineKind, Side};
use crate::lens::LensStatus;
use crate::render::{clean, clean_code, not_reviewed_reason, place, verdict_line};
use crate::review::finding::Finding;
use crate::review::{Report, Severity};

/// At most this many flagged lines are shown per finding; the rest are elided.
const MAX_SHOWN_LINES: usize = 8;

struct Palette {
    blocking: Style,
    advisory: Style,
    title: Style,
    gutter: Style,
    added: Style,
    removed: Style,
    dim: Style,
}

impl Palette {
    fn new(color: bool) -> Palette {
        let s = |st: Style| if color { st } else { Style::new() };
        Palette {
            blocking: s(AnsiColor::Red.on_default().effects(Effects::BOLD)),
            advisory: s(AnsiColor::Yellow.on_default().effects(Effects::BOLD)),
            title: s(Style::new().effects(Effects::BOLD)),
            gutter: s(AnsiColor::Blue.on_default().effects(Effects::BOLD)),
            added: s(AnsiColor::Green.on_default()),
            removed: s(AnsiColor::Red.on_default()),
            dim: s(Style::new().effects(Effects::DIMMED)),
        }
    }
}

/// Paints `text` in `style` (a no-op style prints plain text).
fn paint(style: Style, text: &str) -> String {
    format!("{style}{text}{style:#}")
}

/// The report as a terminal reads it. `color`: ANSI colours (the caller decides from the
/// terminal and `NO_COLOR`).
pub fn render(report: &Report, diff: &Diff, color: bool) -> String {
    let p = Palette::new(color);
    let mut out = String::new();
    if let Some(text) = crate::render::skipped_text(report) {
        return text;
    }
    for f in &report.findings {
        finding(&mut out, f, diff, &p);
    }
    for n in &report.not_reviewed {
        let _ = writeln!(
            out,
            "{}: {} not reviewed ({})",
            paint(p.dim, "note"),
            clean_code(&n.path),
            not_reviewed_reason(n.reason)
        );
    }
    for l in &report.lenses {
        if l.status == LensStatus::Failed {
            let _ = writeln!(
                out,
                "{}: lens {} failed: {}",
                paint(p.advisory, "warning"),
                l.lens,
                clean(l.error.as_deref().unwrap_or("no reason given"))
            );
        }
    }
    let capped = crate::render::capped_lenses(report);
    for line in &capped {
        let _ = writeln!(out, "{}: {line}", paint(p.advisory, "warning"));
    }
    let withdrawn = crate::render::markdown::withdrawn_line(report);
    if let Some(line) = &withdrawn {
        let _ = writeln!(out, "{}: {line}", paint(p.dim, "note"));
    }
    if !report.not_reviewed.is_empty()
        || !capped.is_empty()
        || withdrawn.is_some()
        || report.lenses.iter().any(|l| l.status == LensStatus::Failed)
    {
        out.push('\n');
    }
    let verdict = report.verdict();
    let style = if verdict.blocking > 0 {
        p.blocking
    } else if verdict.advisory > 0 {
        p.advisory
    } else {
        p.title
    };
    let ok = report
        .lenses
        .iter()
        .filter(|l| l.status == LensStatus::Ok)
        .count();
    let _ = writeln!(
        out,
        "{} ({} of {} lenses answered: {})",
        paint(style, &verdict_line(verdict)),
        ok,
        report.lenses.len(),
        lens_summary(report)
    );
    out
}

fn lens_summary(report: &Report) -> String {
    let parts: Vec<String> = report
        .lenses
        .iter()
        .map(|l| {
            let status = match l.status {
                LensStatus::Ok => "ok",
                LensStatus::Failed => "failed",
            };
            format!("{} {status} in {}", l.lens, human_ms(l.latency_ms))
        })
        .collect();
    parts.join(", ")
}

fn human_ms(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

fn finding(out: &mut String, f: &Finding, diff: &Diff, p: &Palette) {
    let (label, style) = match f.severity {
        Severity::Blocking => ("blocking", p.blocking),
        Severity::Advisory => ("advisory", p.advisory),
    };
    let _ = writeln!(
        out,
        "{}: {}",
        paint(style, label),
        paint(p.title, &clean(&f.title))
    );
    let _ = writeln!(
        out,
        "  {} {}",
        paint(p.gutter, "-->"),
        clean_code(&place(&f.path, f.start_line, f.line, f.side))
    );

    let shown = shown_lines(f, diff);
    let width = shown
        .iter()
        .map(|(n, _, _)| n.to_string().len())
        .max()
        .unwrap_or(1);
    let bar = paint(p.gutter, "|");
    let _ = writeln!(out, "{:width$} {bar}", "");
    for (n, kind, text) in &shown {
        let (mark, st) = match kind {
            Some(LineKind::Added) => ("+", p.added),
            Some(LineKind::Removed) => ("-", p.removed),
            Some(LineKind::Context) => (" ", Style::new()),
            None => ("", p.dim),
        };
        let num = paint(p.gutter, &format!("{n:>width$}"));
        let _ = writeln!(
            out,
            "{num} {bar} {}",
            paint(st, &format!("{mark}{}", clean_code(text)))
        );
    }
    if f.in_diff && shown.is_empty() {
        let _ = writeln!(
            out,
            "{:width$} {bar} {}",
            "",
            paint(p.dim, "(line text not available)")
        );
    }
    if !f.in_diff {
        let _ = writeln!(
            out,
            "{:width$} {bar} {}",
            "",
            paint(p.dim, "(not on a changed line)")
        );
    }
    let _ = writeln!(out, "{:width$} {bar}", "");
    let lenses: Vec<&str> = f.lenses.iter().map(|l| l.as_str()).collect();
    let _ = writeln!(
        out,
        "{:width$} {} {} confidence · {}",
        "",
        paint(p.gutter, "="),
        f.confidence.as_str(),
        lenses.join(", ")
    );
    for (i, line) in clean(f.body.trim()).lines().enumerate() {
        let lead = if i == 0 {
            paint(p.gutter, "=")
        } else {
            " ".into()
        };
        let _ = writeln!(out, "{:width$} {lead} {line}", "");
    }
    out.push('\n');
}

/// The flagged lines, `(number, kind, text)`, from the diff when the finding is on it.
fn shown_lines<'d>(f: &Finding, diff: &'d Diff) -> Vec<(u32, Option<LineKind>, &'d str)> {
    let Some(file) = diff.file(&f.path) else {
        return Vec::new();
    };
    if !f.in_diff {
        return Vec::new();
    }
    let first = f.start_line.unwrap_or(f.line);
    let mut shown = Vec::new();
    for hunk in &file.hunks {
        for l in diff.hunk_lines(hunk) {
            let n = match f.side {
                Side::Right => l.new,
                Side::Left => l.old,
            };
            if let Some(n) = n.filter(|n| (first..=f.line).contains(n)) {
                shown.push((n, Some(l.kind), l.text));
            }
        }
    }
    if shown.len() > MAX_SHOWN_LINES {
        let hidden = shown.len() - MAX_SHOWN_LINES + 1;
        shown.truncate(MAX_SHOWN_LINES - 1);
        let last = shown.last().map_or(first, |s| s.0);
        shown.push((
            last + 1,
            None,
            if hidden == 1 {
                "… 1 more line"
            } else {
                "… more lines"
            },
        ));
    }
    shown
}
