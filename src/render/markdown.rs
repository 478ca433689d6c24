//! The posted form of a round: review body, line comments and their hidden markers
//! (`docs/contract.md` "Posted round", "Markers"); `--format markdown` prints the same.

use std::fmt::Write;

use crate::render::{
    code_path, disarm, failed_lenses, mask, not_reviewed_reason, place, reviewers, severity_word,
    verdict_line,
};
use crate::review::Report;
use crate::review::finding::Finding;
use crate::review::markers::{self, RoundMarker};

/// GitHub's limit on a review body.
pub const MAX_BODY_CHARS: usize = 65_536;

/// The most characters of a lens's finding body a line comment carries.
pub const MAX_COMMENT_BODY_CHARS: usize = 4_000;
/// The most characters of a lens's summary in the body.
pub const MAX_SUMMARY_CHARS: usize = 1_500;
/// The most characters of a finding's title.
pub const MAX_TITLE_CHARS: usize = 200;

/// Labels and caps the body mentions.
#[derive(Debug, Clone)]
pub struct BodyOptions<'a> {
    pub opt_out_label: &'a str,
    /// How many findings go into line comments; the rest are listed in the body.
    pub max_comments: usize,
    /// Per-lens mode: the header names the one reviewer, the marker carries `lens=`.
    pub per_lens: bool,
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

/// The review body: header, verdict, what was attached or carried over, the findings that are
/// not line comments, what was not reviewed, and the round marker. Never over GitHub's limit:
/// findings that do not fit are counted ("and 212 more").
pub fn body(report: &Report, opts: &BodyOptions<'_>) -> String {
    let mut out = String::new();
    match (report.round, &report.head) {
        (Some(round), Some(head)) => {
            let _ = write!(out, "Round {round} — reviewed head {}", head.short());
        }
        _ => out.push_str("Review of a local diff"),
    }
    // `docs/contract.md` "Posted round": "reviewers: a (m), b (m)"; per lens "reviewer a (m)".
    let who = if opts.per_lens {
        "reviewer"
    } else {
        "reviewers:"
    };
    let _ = writeln!(out, " — {who} {}\n", reviewers(&report.lenses));
    let _ = writeln!(
        out,
        "Advisory findings from reviewbot — the code owner decides. Reply to disagree; the\n`{}` label opts this PR out.\n",
        opts.opt_out_label
    );
    let _ = writeln!(out, "{}\n", verdict_line(report.verdict()));
    if let Some(scope) = &report.scope {
        let _ = writeln!(out, "{scope}\n");
    }

    let attached = attached(report, opts.max_comments);
    match attached.len() {
        0 if report.findings.is_empty() && report.carried_over.is_empty() => {
            out.push_str("No findings.\n\n")
        }
        0 if report.findings.is_empty() => out.push_str("No new findings.\n\n"),
        0 => {}
        1 => out.push_str("1 finding is attached to the lines below.\n\n"),
        n => {
            let _ = writeln!(out, "{n} findings are attached to the lines below.\n");
        }
    }
    if let Some(line) = withdrawn_line(report) {
        let _ = writeln!(out, "{line}\n");
    }
    match report.carried_over.len() {
        0 => {}
        1 => out.push_str("1 finding from an earlier round still holds and is not repeated.\n\n"),
        n => {
            let _ = writeln!(
                out,
                "{n} findings from earlier rounds still hold and are not repeated.\n"
            );
        }
    }

    let marker = marker(report, opts);
    let mut tail = String::new();
    if !report.not_reviewed.is_empty() {
        tail.push_str("Not reviewed:\n");
        for n in &report.not_reviewed {
            let _ = writeln!(
                tail,
                "- {} ({})",
                code_path(&n.path),
                not_reviewed_reason(n.reason)
            );
        }
        tail.push('\n');
    }
    let failed = failed_lenses(report);
    if !failed.is_empty() {
        tail.push_str("Lenses that did not answer:\n");
        for line in failed {
            let _ = writeln!(tail, "- {line}");
        }
        tail.push('\n');
    }
    for line in crate::render::capped_lenses(report) {
        let _ = writeln!(tail, "{line}\n");
    }
    let mut tail = fit_lines(tail, MAX_BODY_CHARS / 4);
    // What the round cost is the last visible line, right above the marker (one short line a
    // lens, so never cut).
    if let Some(line) = crate::render::cost_line(&report.runs()) {
        let _ = writeln!(tail, "{line}");
    }

    let rest: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| !attached.iter().any(|a| std::ptr::eq(*a, *f)))
        .collect();
    let (off_diff, over_cap): (Vec<&Finding>, Vec<&Finding>) =
        rest.into_iter().partition(|f| !f.in_diff);
    // Room left for the listed findings once everything else is in.
    let reserve = out.chars().count()
        + tail.chars().count()
        + marker.as_ref().map_or(0, |m| m.chars().count())
        + 200;
    let summaries = fit_lines(summaries(report), MAX_BODY_CHARS / 4);
    let mut room = MAX_BODY_CHARS.saturating_sub(reserve + summaries.chars().count());
    list(&mut out, "Not on a changed line:", &off_diff, &mut room);
    out.push_str(&summaries);
    list(
        &mut out,
        "More findings than line comments allow:",
        &over_cap,
        &mut room,
    );
    out.push_str(&tail);
    while out.ends_with('\n') {
        out.pop();
    }
    out.push('\n');
    if let Some(marker) = marker {
        out.push('\n');
        out.push_str(&marker);
        out.push('\n');
    }
    out
}

/// The round marker (PR rounds only): every finding the round reports, posted or carried over.
fn marker(report: &Report, opts: &BodyOptions<'_>) -> Option<String> {
    let (round, head) = (report.round?, report.head.clone()?);
    let mut findings: Vec<String> = report
        .findings
        .iter()
        .map(|f| f.fingerprint.clone())
        .collect();
    findings.extend(report.carried_over.iter().map(|c| c.fingerprint.clone()));
    // A marker that would not fit keeps what fits; the rest may be posted again next round.
    let budget = (MAX_BODY_CHARS / 2) / 17;
    findings.truncate(budget);
    let lens = opts
        .per_lens
        .then(|| report.lenses.first().map(|l| l.lens.to_string()))
        .flatten();
    Some(
        RoundMarker {
            round,
            head,
            verdict: report.verdict(),
            findings,
            lens,
            ask: report.ask.clone(),
        }
        .render(),
    )
}

/// Each answering lens's summary — what it checked and what it could not — as
/// `**<lens>:** <summary>`, cleaned like every lens text and capped: masked, cut, made one
/// paragraph, then disarmed as it will be read.
fn summaries(report: &Report) -> String {
    let mut out = String::new();
    for p in &report.lenses {
        let Some(summary) = p
            .summary
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        else {
            continue;
        };
        let text = mask(summary);
        let text = crate::chars::cut(&text, MAX_SUMMARY_CHARS, "… (truncated)");
        // One paragraph per lens: its own blank lines would split it from its name.
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let _ = writeln!(out, "**{}:** {}\n", p.lens, disarm::prose(&text));
    }
    out
}

/// `text` cut to at most `max` characters at a line boundary.
fn fit_lines(text: String, max: usize) -> String {
    if text.chars().count() <= max {
        return text;
    }
    let mut out = String::new();
    for line in text.lines() {
        if out.chars().count() + line.chars().count() + 40 > max {
            out.push_str("- … (cut to fit GitHub's limit)\n\n");
            break;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn list(out: &mut String, heading: &str, findings: &[&Finding], room: &mut usize) {
    if findings.is_empty() {
        return;
    }
    let _ = writeln!(out, "{heading}");
    for (i, f) in findings.iter().enumerate() {
        let item = format!(
            "- **{}.** {} ({}; {} confidence) {}\n",
            severity_word(f.severity),
            title(f),
            code_path(&place(&f.path, f.start_line, f.line, f.side)),
            f.confidence.as_str(),
            markers::finding(&f.fingerprint)
        );
        let len = item.chars().count();
        if len + 40 > *room {
            let _ = writeln!(
                out,
                "- and {} more (see the JSON output and the evidence)",
                findings.len() - i
            );
            *room = 0;
            break;
        }
        *room -= len;
        out.push_str(&item);
    }
    out.push('\n');
}

/// `N findings were withdrawn after cross-examination.` when a verifier refuted any.
pub fn withdrawn_line(report: &Report) -> Option<String> {
    match report.verification.as_ref().map_or(0, |v| v.withdrawn()) {
        0 => None,
        1 => Some("1 finding was withdrawn after cross-examination.".to_owned()),
        n => Some(format!(
            "{n} findings were withdrawn after cross-examination."
        )),
    }
}

/// The most characters of a verifier's evidence a line comment carries.
pub const MAX_EVIDENCE_CHARS: usize = 1_500;

/// What the verifier read, for a finding it confirmed: a collapsed block under the comment.
fn checked_block(f: &Finding) -> String {
    let Some(c) = f
        .verified
        .as_ref()
        .filter(|c| c.verdict == crate::lens::verdicts::VerdictKind::Confirmed)
    else {
        return String::new();
    };
    let evidence = mask(c.evidence.trim());
    let evidence = crate::chars::cut(&evidence, MAX_EVIDENCE_CHARS, "… (truncated)");
    // One paragraph: the block's own blank lines would end it.
    let evidence = evidence.split_whitespace().collect::<Vec<_>>().join(" ");
    let said = match evidence.is_empty() {
        true => "confirmed".to_owned(),
        false => disarm::prose(&evidence),
    };
    format!(
        "<details><summary>Cross-examined</summary>\n\nChecked by {}: {said}\n\n</details>\n",
        c.by
    )
}

/// A line comment: severity, title and body, confidence and lenses, and its hidden marker.
/// The title is one line of at most [`MAX_TITLE_CHARS`], the body at most
/// [`MAX_COMMENT_BODY_CHARS`] (then "(truncated)"). Title and body share a paragraph, so they
/// are disarmed together: a backtick the title leaves open pairs with one in the body.
pub fn comment(f: &Finding) -> String {
    let lenses: Vec<&str> = f.lenses.iter().map(|l| l.as_str()).collect();
    let text = format!(
        "{}. {}",
        masked_title(f),
        cut_body(&mask(f.body.trim()), MAX_COMMENT_BODY_CHARS)
    );
    format!(
        "**{}.** {}\n\n{}({} confidence · {})\n{}{}",
        severity_word(f.severity),
        disarm::prose(&text),
        suggestion_block(f),
        f.confidence.as_str(),
        lenses.join(", "),
        checked_block(f),
        markers::finding(&f.fingerprint)
    )
}

/// A committable suggestion, fenced so that no fence inside it closes the block early; nothing
/// when there is none or when cleaning would change it (then it would not be what the lens
/// proposed, and the prose stands alone).
fn suggestion_block(f: &Finding) -> String {
    let Some(text) = f.suggestion.as_deref().filter(|s| suggestion_is_clean(s)) else {
        return String::new();
    };
    let text = text.strip_suffix('\n').unwrap_or(text);
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}suggestion\n{text}\n{fence}\n\n")
}

/// Whether a suggestion is safe to post as it is: nothing to mask, hide or disarm in it. Its
/// line breaks are the block's own: each line is held to code's cleaning, and masking sees the
/// whole text (a secret may span lines).
pub fn suggestion_is_clean(text: &str) -> bool {
    crate::redact::redact(text) == text
        && text
            .split('\n')
            .all(|line| crate::render::clean_code(line) == line)
        && !text.contains("<!--")
}

/// A finding's title, cleaned, on one line, capped.
pub(crate) fn title(f: &Finding) -> String {
    disarm::prose(&masked_title(f))
}

/// A finding's title on one line, masked and capped, not yet disarmed.
fn masked_title(f: &Finding) -> String {
    let one_line = crate::sanitize::sanitize_line(f.title.trim().trim_end_matches('.'));
    let masked = mask(&one_line);
    match crate::chars::cut_head(&masked, MAX_TITLE_CHARS) {
        Some(kept) => format!("{} …", kept.trim_end()),
        None => masked,
    }
}

/// `text` cut to `max` characters, at a line break when one is near, with a code fence left
/// open closed again (so nothing after it, the marker included, is swallowed into code).
fn cut_body(text: &str, max: usize) -> String {
    let Some(kept) = crate::chars::cut_at_line(text, max) else {
        return text.to_owned();
    };
    let mut out = kept.to_owned();
    let mut fence: Option<&str> = None;
    for line in out.lines() {
        let t = line.trim_start();
        if let Some(m) = ["```", "~~~"].into_iter().find(|m| t.starts_with(m)) {
            fence = match fence {
                None => Some(m),
                Some(f) if f == m => None,
                keep => keep,
            };
        }
    }
    if let Some(f) = fence {
        out.push('\n');
        out.push_str(f);
    }
    out.push_str("\n\n(truncated)");
    out
}

/// `--format markdown`: the body, then every finding as it would be posted.
pub fn render(report: &Report, opts: &BodyOptions<'_>) -> String {
    if let Some(text) = crate::render::skipped_text(report) {
        return text;
    }
    let mut out = body(report, opts);
    for f in &report.findings {
        let where_ = if f.in_diff {
            "line comment on"
        } else {
            "not on a changed line:"
        };
        let _ = write!(
            out,
            "\n---\n\n{where_} {}\n\n{}\n",
            code_path(&place(&f.path, f.start_line, f.line, f.side)),
            comment(f)
        );
    }
    out
}
