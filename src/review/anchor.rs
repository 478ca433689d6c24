//! Findings anchored by the code they quote, and suggestions checked before they are offered.
//!
//! A model's line numbers can be off by a few. A lens may give `quote`, the text of the line it
//! means: when that text is not on the claimed line but on exactly one line within
//! [`WINDOW`] lines of it, the finding moves there; when the file at the head holds it nowhere,
//! the finding is dropped as unfounded (counted, and kept in the evidence). A `suggestion` is
//! posted as a committable block only when it is whole and safe to apply.

use std::path::Path;

use crate::diff::{Diff, Side};
use crate::lens::contract::RawFinding;
use crate::review::finding::{Finding, find_file};

/// How far a quote is looked for around the claimed line.
pub const WINDOW: u32 = 20;

/// The longest suggestion offered, in lines replaced.
pub const MAX_SUGGESTION_LINES: u32 = 10;

/// The largest file read from the snapshot to anchor a quote.
const MAX_FILE_BYTES: u64 = 2 << 20;

/// A quote shorter than this must match a whole line; a longer one may be part of it.
const MIN_PART_CHARS: usize = 12;

/// Where the text of a file at the reviewed head comes from: the snapshot when there is one
/// (every line), else the diff's new side (only the lines its hunks show).
#[derive(Debug, Clone, Copy)]
pub struct HeadText<'a> {
    pub snapshot: Option<&'a Path>,
    pub diff: &'a Diff,
}

/// A file's lines at the head, by number, and whether they are all of them.
struct FileLines {
    lines: Vec<(u32, String)>,
    complete: bool,
}

impl HeadText<'_> {
    fn lines(&self, path: &str) -> Option<FileLines> {
        if let Some(root) = self.snapshot
            && let Some(text) = read_inside(root, path)
        {
            let lines = text
                .lines()
                .zip(1..)
                .map(|(l, n)| (n, l.to_owned()))
                .collect();
            return Some(FileLines {
                lines,
                complete: true,
            });
        }
        let file = find_file(self.diff, path)?;
        let lines = file
            .hunks
            .iter()
            .flat_map(|h| self.diff.hunk_lines(h))
            .filter_map(|l| Some((l.new?, l.text.to_owned())))
            .collect();
        Some(FileLines {
            lines,
            complete: false,
        })
    }
}

/// A snapshot file's text, when `path` is a plain relative path to a regular file of sane size.
fn read_inside(root: &Path, path: &str) -> Option<String> {
    use std::io::Read;
    let rel = Path::new(path.trim().trim_start_matches("./"));
    let plain = rel
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !plain {
        return None;
    }
    let full = root.join(rel);
    let meta = std::fs::symlink_metadata(&full).ok()?;
    if !meta.file_type().is_file() || meta.len() > MAX_FILE_BYTES {
        return None;
    }
    let mut bytes = Vec::new();
    std::fs::File::open(&full)
        .ok()?
        .take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// What anchoring did with a finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Anchored {
    /// On its line, or nothing to check it against.
    Kept,
    /// Moved from the claimed line to the one that holds its quote.
    Moved { from: u32, to: u32 },
    /// The file at the head holds its quote nowhere.
    Unfounded,
}

fn quotes(line: &str, quote: &str) -> bool {
    let line = line.trim();
    line == quote || (quote.chars().count() >= MIN_PART_CHARS && line.contains(quote))
}

/// A quote copied with the line number and mark the prompt shows before each line (`12+text`,
/// `12 text`, `9-text`, `plan::numbered_file`): the text after them, if that is anything.
fn unnumbered(quote: &str) -> Option<&str> {
    let digits = quote.bytes().take_while(u8::is_ascii_digit).count();
    let rest = quote[digits..].strip_prefix(['+', '-', ' '])?.trim();
    (digits > 0 && !rest.is_empty()).then_some(rest)
}

/// Anchors `raw` by its quote (RIGHT side only: the quote is of the file at the head).
pub fn anchor(raw: &mut RawFinding, head: &HeadText<'_>) -> Anchored {
    let Some(quote) = raw
        .quote
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
    else {
        return Anchored::Kept;
    };
    if raw.side != Side::Right {
        return Anchored::Kept;
    }
    let Some(file) = head.lines(&raw.path) else {
        return Anchored::Kept;
    };
    // The quote as given, or else without a line number and mark copied from the prompt.
    let bare = unnumbered(quote);
    let quotes = |line: &str| quotes(line, quote) || bare.is_some_and(|b| quotes(line, b));
    let at = |n: u32| file.lines.iter().find(|(m, _)| *m == n).map(|(_, t)| t);
    if at(raw.line).is_some_and(|t| quotes(t)) {
        return Anchored::Kept;
    }
    let near: Vec<u32> = file
        .lines
        .iter()
        .filter(|(n, t)| n.abs_diff(raw.line) <= WINDOW && quotes(t))
        .map(|(n, _)| *n)
        .collect();
    match near.as_slice() {
        [to] => {
            let from = raw.line;
            let to = *to;
            // A range keeps its length.
            raw.start_line = raw
                .start_line
                .map(|s| (i64::from(s) + i64::from(to) - i64::from(from)).max(1) as u32);
            raw.line = to;
            Anchored::Moved { from, to }
        }
        [] if file.complete && !file.lines.iter().any(|(_, t)| quotes(t)) => Anchored::Unfounded,
        _ => Anchored::Kept,
    }
}

/// Why a suggestion is not offered, when it is not.
pub fn suggestion_problem(f: &Finding, diff: &Diff) -> Option<&'static str> {
    let text = f.suggestion.as_deref()?;
    if f.side != Side::Right || !f.in_diff {
        return Some("not on added or unchanged lines of the diff");
    }
    let start = f.start_line.unwrap_or(f.line);
    if f.line - start + 1 > MAX_SUGGESTION_LINES {
        return Some("more than 10 lines");
    }
    let lower = text.to_lowercase();
    if text.contains("...")
        || text.contains('…')
        || ["rest unchanged", "unchanged)", "existing code"]
            .iter()
            .any(|w| lower.contains(w))
    {
        return Some("it elides code");
    }
    let current: Vec<String> = find_file(diff, &f.path)
        .into_iter()
        .flat_map(|file| file.hunks.iter())
        .flat_map(|h| diff.hunk_lines(h))
        .filter(|l| l.new.is_some_and(|n| (start..=f.line).contains(&n)))
        .map(|l| l.text.to_owned())
        .collect();
    if current.len() != (f.line - start + 1) as usize {
        return Some("its lines are not all in the diff");
    }
    let proposed: Vec<&str> = text
        .strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .collect();
    if proposed
        .iter()
        .copied()
        .eq(current.iter().map(String::as_str))
    {
        return Some("it changes nothing");
    }
    let indent = |lines: &mut dyn Iterator<Item = &str>| -> (bool, bool) {
        lines.fold((false, false), |(tabs, spaces), l| {
            let lead = &l[..l.len() - l.trim_start().len()];
            (tabs || lead.contains('\t'), spaces || lead.starts_with(' '))
        })
    };
    let (cur_tabs, cur_spaces) = indent(&mut current.iter().map(String::as_str));
    let (new_tabs, new_spaces) = indent(&mut proposed.iter().copied());
    if (cur_tabs && !cur_spaces && new_spaces) || (cur_spaces && !cur_tabs && new_tabs) {
        return Some("its indentation differs from the file's");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::LensName;
    use crate::lens::contract::{Confidence, Severity};

    /// A new file of 40 lines, `line N` each, with one line of code at 25.
    fn diff() -> Diff {
        let mut patch = String::from(
            "diff --git a/src/a.rs b/src/a.rs\nnew file mode 100644\n--- /dev/null\n+++ b/src/a.rs\n@@ -0,0 +1,40 @@\n",
        );
        for n in 1..=40 {
            if n == 25 {
                patch.push_str("+    let total = price * qty;\n");
            } else {
                patch.push_str(&format!("+// line {n}\n"));
            }
        }
        Diff::parse(&patch).expect("diff")
    }

    fn raw(line: u32, quote: Option<&str>) -> RawFinding {
        RawFinding {
            path: "src/a.rs".into(),
            line,
            start_line: None,
            side: Side::Right,
            severity: Severity::Advisory,
            confidence: Confidence::High,
            title: "t".into(),
            body: "b".into(),
            quote: quote.map(str::to_owned),
            suggestion: None,
        }
    }

    fn snapshot_with(text: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("dir");
        std::fs::create_dir(dir.path().join("src")).expect("src");
        std::fs::write(dir.path().join("src/a.rs"), text).expect("file");
        dir
    }

    fn full_text() -> String {
        (1..=40)
            .map(|n| {
                if n == 25 {
                    "    let total = price * qty;\n".to_owned()
                } else {
                    format!("// line {n}\n")
                }
            })
            .collect()
    }

    #[test]
    fn a_line_number_off_by_three_moves_to_the_quoted_line() {
        let d = diff();
        let head = HeadText {
            snapshot: None,
            diff: &d,
        };
        let mut r = raw(28, Some("let total = price * qty;"));
        r.start_line = Some(27);
        assert_eq!(anchor(&mut r, &head), Anchored::Moved { from: 28, to: 25 });
        assert_eq!((r.start_line, r.line), (Some(24), 25));
        // Already right: kept.
        assert_eq!(anchor(&mut r, &head), Anchored::Kept);
        // A quote copied with the number and mark the prompt shows before the line.
        for quote in [
            "25+    let total = price * qty;",
            "25 let total = price * qty;",
        ] {
            let mut r = raw(23, Some(quote));
            assert_eq!(anchor(&mut r, &head), Anchored::Moved { from: 23, to: 25 });
        }
    }

    #[test]
    fn a_quote_found_nowhere_in_the_whole_file_is_unfounded_but_not_on_partial_text() {
        let d = diff();
        let snap = snapshot_with(&full_text());
        let head = HeadText {
            snapshot: Some(snap.path()),
            diff: &d,
        };
        let mut r = raw(25, Some("let total = price + tax;"));
        assert_eq!(anchor(&mut r, &head), Anchored::Unfounded);
        // From the diff alone the file may hold more than its hunks show: kept.
        let partial = HeadText {
            snapshot: None,
            diff: &d,
        };
        let mut r = raw(25, Some("let total = price + tax;"));
        assert_eq!(anchor(&mut r, &partial), Anchored::Kept);
    }

    #[test]
    fn far_or_ambiguous_quotes_and_left_side_findings_stay_put() {
        let d = diff();
        let head = HeadText {
            snapshot: None,
            diff: &d,
        };
        // `// line 3` is 22 lines away from 25: outside the window, found elsewhere: kept.
        let mut r = raw(25, Some("// line 3"));
        assert_eq!(anchor(&mut r, &head), Anchored::Kept);
        assert_eq!(r.line, 25);
        let mut r = raw(10, Some("// line"));
        assert_eq!(
            anchor(&mut r, &head),
            Anchored::Kept,
            "a short part of many lines"
        );
        let mut r = raw(10, Some("let total = price * qty;"));
        r.side = Side::Left;
        assert_eq!(anchor(&mut r, &head), Anchored::Kept);
    }

    fn placed(line: u32, start: Option<u32>, suggestion: &str) -> (Finding, Diff) {
        let d = diff();
        let mut r = raw(line, None);
        r.start_line = start;
        r.suggestion = Some(suggestion.to_owned());
        (Finding::locate(r, &LensName::new("l"), &d), d)
    }

    #[test]
    fn only_a_whole_small_changing_suggestion_on_the_diff_is_offered() {
        let (f, d) = placed(25, None, "    let total = price.checked_mul(qty)?;");
        assert_eq!(suggestion_problem(&f, &d), None);
        let (f, d) = placed(25, None, "    let total = price * qty;");
        assert_eq!(suggestion_problem(&f, &d), Some("it changes nothing"));
        let (f, d) = placed(25, None, "    let total = ...;");
        assert_eq!(suggestion_problem(&f, &d), Some("it elides code"));
        let (f, d) = placed(25, Some(10), "x");
        assert_eq!(suggestion_problem(&f, &d), Some("more than 10 lines"));
        let (f, d) = placed(25, None, "\tlet total = price.checked_mul(qty)?;");
        assert_eq!(
            suggestion_problem(&f, &d),
            Some("its indentation differs from the file's")
        );
        let (f, d) = placed(60, None, "x");
        assert_eq!(
            suggestion_problem(&f, &d),
            Some("not on added or unchanged lines of the diff")
        );
    }
}
