//! `read_file`: numbered lines of one file, a range at a time.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::{BufReader, Cursor, Read};

use super::confine::{open_file, resolve};
use super::text::{self, BINARY_PROBE, Lines, MASK_SLACK, STOPPED, is_binary, show, size};
use super::{READ_FILE, RepoTools, ToolResult, Until};
use crate::redact::redact;

/// Room kept under the result cap for the closing line.
const FOOTER_ROOM: usize = 256;

pub(super) fn read_file(
    tools: &RepoTools,
    path: &str,
    start_line: Option<u64>,
    end_line: Option<u64>,
    until: &Until,
) -> ToolResult {
    let limits = tools.limits();
    let start = start_line.unwrap_or(1).max(1);
    let end = end_line.unwrap_or(u64::MAX);
    if end < start {
        return ToolResult::error(format!(
            "{READ_FILE}: end_line {end} is before start_line {start}"
        ));
    }
    let opened =
        resolve(tools.root(), path).and_then(|found| open_file(&found).map(|o| (found, o)));
    let (found, (file, meta)) = match opened {
        Ok(o) => o,
        Err(refusal) => return ToolResult::error(format!("{READ_FILE}: {refusal}")),
    };
    let read_error = |e: std::io::Error| {
        ToolResult::error(format!(
            "{READ_FILE}: `{}` could not be read: {}",
            found.rel,
            e.kind()
        ))
    };
    let mut head = Vec::with_capacity(BINARY_PROBE);
    if let Err(e) = (&file).take(BINARY_PROBE as u64).read_to_end(&mut head) {
        return read_error(e);
    }
    if is_binary(&head) {
        return ToolResult::ok(
            format!("binary file, {} bytes; not shown", meta.len()),
            false,
        );
    }
    let body = Cursor::new(head).chain(file).take(limits.read_scan_bytes);
    let budget = limits.max_result_bytes.saturating_sub(FOOTER_ROOM);
    // The first line asked for always fits, whatever the caps.
    let keep = limits.read_line_bytes.min(budget / 2);
    // Lines are read past `keep` so that they are masked whole before they are cut.
    let mut lines = Lines::new(BufReader::new(body), keep.saturating_add(MASK_SLACK));
    let mut shown: Vec<(String, bool)> = Vec::new();
    // What the shown lines will take, each cut at `keep`: the number, a tab, a newline.
    let mut shown_bytes = 0usize;
    let mut total = 0u64;
    let mut last_shown = None;
    let mut capped = false;
    let mut stopped = false;
    let mut around = Around::default();
    loop {
        if total % 1024 == 1023 && until.passed() {
            stopped = true;
            break;
        }
        let (line, cut) = match lines.next_line() {
            Ok(Some(l)) => l,
            Ok(None) => break,
            Err(e) => return read_error(e),
        };
        total += 1;
        if total < start {
            around.before(show(line));
            continue;
        }
        if total > end || capped {
            around.after(line);
            continue;
        }
        let text = show(line);
        let numbered = total.to_string().len() + 2 + text.len().min(keep);
        if shown.len() == limits.read_max_lines || shown_bytes + numbered > budget {
            capped = true;
            continue;
        }
        shown_bytes += numbered;
        shown.push((text, cut));
        last_shown = Some(total);
    }
    let mut out = String::new();
    let mut long_lines = false;
    for (n, (mut line, cut)) in (start..).zip(around.mask(shown)) {
        let cut = text::cut_bytes(&mut line, keep) || cut;
        let _ = writeln!(out, "{n}\t{line}");
        long_lines |= cut;
    }
    // Stopped at the scan cap with the file not read to its end: the count is a floor.
    let more = meta.len() > limits.read_scan_bytes || stopped;
    let of = if more {
        format!("more than {total}")
    } else {
        total.to_string()
    };
    let Some(last) = last_shown else {
        if total == 0 && !more {
            return ToolResult::ok(format!("[`{}` is empty]", found.rel), false);
        }
        if more {
            return ToolResult::error(format!(
                "{READ_FILE}: start_line {start} is past line {total}, as far as {READ_FILE} \
                 reads into `{}` ({} bytes); grep it for what you need",
                found.rel,
                meta.len()
            ));
        }
        return ToolResult::error(format!(
            "{READ_FILE}: start_line {start} is past the end: `{}` has {of} lines",
            found.rel
        ));
    };
    let _ = write!(out, "[lines {start}-{last} of {of}");
    if capped || (more && end > last) {
        let _ = write!(
            out,
            "; cut at {} lines or {}: call {READ_FILE} with start_line {} for the rest",
            limits.read_max_lines,
            size(limits.max_result_bytes as u64),
            last + 1
        );
    }
    if long_lines {
        let _ = write!(out, "; lines longer than {keep} bytes were cut");
    }
    out.push(']');
    if stopped {
        let _ = write!(out, "\n{STOPPED}");
    }
    ToolResult::ok(out, capped || long_lines || stopped)
}

/// Bytes of the lines above the first shown one that are masked with the shown lines: a
/// private key's BEGIN line may stand this far above its body (`redact`'s PEM window).
const MASK_BEFORE: usize = 64 * 1024;
/// Lines below the last shown one masked with them: an AWS key ID this close pairs with a
/// secret key shown (`redact`'s pair rule).
const MASK_AFTER: usize = 3;

/// The lines around the shown ones, so that a rule that looks past one line (a private key's
/// body below its BEGIN line, an AWS secret key near its ID) masks a range as it would the
/// whole file.
#[derive(Default)]
struct Around {
    before: VecDeque<String>,
    before_bytes: usize,
    after: Vec<String>,
}

impl Around {
    fn before(&mut self, line: String) {
        self.before_bytes += line.len() + 1;
        self.before.push_back(line);
        while self.before_bytes > MASK_BEFORE {
            match self.before.pop_front() {
                Some(gone) => self.before_bytes -= gone.len() + 1,
                None => break,
            }
        }
    }

    fn after(&mut self, line: &[u8]) {
        if self.after.len() < MASK_AFTER {
            self.after.push(show(line));
        }
    }

    /// The shown lines masked together with the lines around them; masking keeps line
    /// breaks, so each shown line stays its own.
    fn mask(self, shown: Vec<(String, bool)>) -> Vec<(String, bool)> {
        let block = self
            .before
            .iter()
            .map(String::as_str)
            .chain(shown.iter().map(|(line, _)| line.as_str()))
            .chain(self.after.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        let masked = redact(&block);
        let parts: Vec<&str> = masked.split('\n').collect();
        if parts.len() == self.before.len() + shown.len() + self.after.len() {
            return parts[self.before.len()..]
                .iter()
                .zip(&shown)
                .map(|(part, (_, cut))| ((*part).to_owned(), *cut))
                .collect();
        }
        // Not expected, but a line is never shown unmasked.
        shown
            .into_iter()
            .map(|(line, cut)| (redact(&line).into_owned(), cut))
            .collect()
    }
}
