//! `list_files`: the regular files under a path, one per line, sorted.

use std::fmt::Write as _;
use std::ops::ControlFlow;

use super::confine::{target, walk};
use super::text::{STOPPED, count};
use super::{LIST_FILES, RepoTools, ToolResult, Until};

/// Room kept under the result cap for the closing notes.
const FOOTER_ROOM: usize = 512;

pub(super) fn list_files(tools: &RepoTools, path: Option<&str>, until: &Until) -> ToolResult {
    let limits = tools.limits();
    let target = match target(tools.root(), path) {
        Ok(t) => t,
        Err(refusal) => return ToolResult::error(format!("{LIST_FILES}: {refusal}")),
    };
    let budget = limits.max_result_bytes.saturating_sub(FOOTER_ROOM);
    let mut out = String::new();
    let mut shown = 0usize;
    let mut total = 0usize;
    let skipped = walk(&target, limits.walk_max_entries, until, |entry| {
        total += 1;
        let line_len = entry.found.rel.len() + 1;
        if shown < limits.list_max_entries && out.len() + line_len <= budget && shown + 1 == total {
            out.push_str(&entry.found.rel);
            out.push('\n');
            shown += 1;
        }
        ControlFlow::Continue(())
    });
    let where_ = match path {
        Some(p) if !p.is_empty() => format!("`{p}`"),
        _ => "the repository".to_owned(),
    };
    let capped = shown < total || skipped.walk_cap || skipped.stopped;
    if total == 0 {
        let _ = write!(out, "no files in {where_}");
    } else if shown < total {
        let more = if skipped.walk_cap || skipped.stopped {
            "at least "
        } else {
            ""
        };
        let _ = write!(
            out,
            "[{shown} of {more}{total} files shown ({more}{} more); list a subdirectory or a \
             glob to see the rest]",
            total - shown
        );
    } else {
        let _ = write!(out, "[{}]", count(total, "file", "files"));
    }
    if let Some(d) = skipped.describe() {
        let _ = write!(out, "\n[not listed: {d}]");
    }
    if skipped.walk_cap {
        out.push_str(
            "\n[the listing stopped at its cap on directory entries; give a narrower path]",
        );
    }
    if skipped.stopped {
        let _ = write!(out, "\n{STOPPED}");
    }
    ToolResult::ok(out, capped)
}
