//! `grep`: a regex over the lines of the files under a path, in path order.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Read;
use std::ops::ControlFlow;

use regex::bytes::RegexBuilder;

use crate::redact::redact;

use super::confine::{Skipped, open_file, target, walk};
use super::text::{STOPPED, clip_bytes, count, is_binary, show, size};
use super::{GREP, RepoTools, ToolResult, Until};

/// Room kept under the result cap for the closing notes.
const FOOTER_ROOM: usize = 512;

#[derive(Default)]
struct Search {
    out: String,
    matches: usize,
    files_searched: usize,
    scanned: u64,
    binary: usize,
    large: usize,
    unreadable: usize,
    /// Stopped at the match or byte cap: there may be more.
    capped: bool,
    /// Stopped at the scan cap.
    scan_cap: bool,
    /// Stopped at the call's time limit, or the lens ended.
    stopped: bool,
}

pub(super) fn grep(
    tools: &RepoTools,
    pattern: &str,
    path: Option<&str>,
    until: &Until,
) -> ToolResult {
    let limits = tools.limits();
    if pattern.len() > limits.grep_pattern_bytes {
        return ToolResult::error(format!(
            "{GREP}: the pattern is {} bytes; patterns are limited to {} bytes",
            pattern.len(),
            limits.grep_pattern_bytes
        ));
    }
    // The regex crate matches in linear time; these limits bound what a pattern compiles to.
    let regex = match RegexBuilder::new(pattern)
        .size_limit(limits.grep_regex_size)
        .dfa_size_limit(limits.grep_regex_size)
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            return ToolResult::error(format!(
                "{GREP}: bad pattern: {}",
                clip_bytes(&e.to_string(), 600)
            ));
        }
    };
    let target = match target(tools.root(), path) {
        Ok(t) => t,
        Err(refusal) => return ToolResult::error(format!("{GREP}: {refusal}")),
    };
    let budget = limits.max_result_bytes.saturating_sub(FOOTER_ROOM);
    let mut s = Search::default();
    let skipped = walk(&target, limits.walk_max_entries, until, |entry| {
        if entry.found.meta.len() > limits.grep_max_file_bytes {
            s.large += 1;
            return ControlFlow::Continue(());
        }
        if s.scanned + entry.found.meta.len() > limits.grep_scan_bytes {
            s.scan_cap = true;
            return ControlFlow::Break(());
        }
        let mut data = Vec::new();
        let read = open_file(&entry.found).ok().and_then(|(file, _)| {
            file.take(limits.grep_max_file_bytes)
                .read_to_end(&mut data)
                .ok()
        });
        if read.is_none() {
            s.unreadable += 1;
            return ControlFlow::Continue(());
        }
        s.scanned += data.len() as u64;
        if is_binary(&data) {
            s.binary += 1;
            return ControlFlow::Continue(());
        }
        s.files_searched += 1;
        // A file with a secret is searched as the model may see it, masked, so that a match
        // never tells what a masked value holds (masking keeps line breaks, so line numbers
        // hold); any other file as its bytes, where a pattern may look for a byte that is not
        // UTF-8.
        let text = String::from_utf8_lossy(&data);
        let masked = match redact(&text) {
            Cow::Owned(masked) => Some(masked),
            Cow::Borrowed(_) => None,
        };
        let body = masked.as_ref().map_or(&data[..], |m| m.as_bytes());
        let body = body.strip_suffix(b"\n").unwrap_or(body);
        for (n, line) in body.split(|&b| b == b'\n').enumerate() {
            // A costly pattern is checked against the clock every few lines, not every file.
            if n % 64 == 63 && until.passed() {
                s.stopped = true;
                return ControlFlow::Break(());
            }
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if !regex.is_match(line) {
                continue;
            }
            let text = clip_bytes(&show(line), limits.grep_line_bytes);
            let hit = format!("{}:{}: {text}\n", entry.found.rel, n + 1);
            if s.matches == limits.grep_max_matches || s.out.len() + hit.len() > budget {
                s.capped = true;
                return ControlFlow::Break(());
            }
            s.out.push_str(&hit);
            s.matches += 1;
        }
        ControlFlow::Continue(())
    });
    let where_ = match path {
        Some(p) if !p.is_empty() => format!("`{p}`"),
        _ => "the repository".to_owned(),
    };
    let mut out = std::mem::take(&mut s.out);
    if s.matches == 0 {
        let _ = write!(
            out,
            "no matches for `{}` in {where_}",
            clip_bytes(pattern, 200)
        );
    } else if s.capped {
        let _ = write!(
            out,
            "[stopped at {} matches (at most {} matches or {} per call); narrow the \
             pattern or the path to see the rest]",
            s.matches,
            limits.grep_max_matches,
            size(limits.max_result_bytes as u64)
        );
    } else {
        let _ = write!(
            out,
            "[{} in {} searched]",
            count(s.matches, "match", "matches"),
            count(s.files_searched, "file", "files")
        );
    }
    notes(
        &mut out,
        &s,
        &skipped,
        limits.grep_max_file_bytes,
        limits.grep_scan_bytes,
    );
    ToolResult::ok(
        out,
        s.capped || s.scan_cap || s.stopped || skipped.walk_cap || skipped.stopped,
    )
}

fn notes(out: &mut String, s: &Search, skipped: &Skipped, max_file: u64, max_scan: u64) {
    let mut parts = Vec::new();
    if s.binary > 0 {
        parts.push(format!("{} binary", s.binary));
    }
    if s.large > 0 {
        parts.push(format!("{} over {}", s.large, size(max_file)));
    }
    if s.unreadable > 0 {
        parts.push(format!("{} unreadable", s.unreadable));
    }
    if let Some(d) = skipped.describe() {
        parts.push(d);
    }
    if !parts.is_empty() {
        let _ = write!(out, "\n[not searched: {}]", parts.join(", "));
    }
    if s.scan_cap {
        let _ = write!(
            out,
            "\n[the search stopped after reading {}; give a narrower path]",
            size(max_scan)
        );
    }
    if skipped.walk_cap {
        out.push_str(
            "\n[the search stopped at its cap on directory entries; give a narrower path]",
        );
    }
    if s.stopped || skipped.stopped {
        let _ = write!(out, "\n{STOPPED}");
    }
}
