//! The diff model: a parsed `git diff` (or GitHub per-file `patch`), with the lines each side
//! can carry a review comment on.
//!
//! The diff owns its text; files and hunks hold byte ranges into it, so parsing copies nothing
//! and the lines of a hunk are walked on demand.

mod decode;
mod parse;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::ops::Range;

use serde::{Deserialize, Serialize};

pub use decode::{lossy_in_place, lossy_text, utf8};
pub use parse::ParseError;

/// Which side of the diff a line number refers to (GitHub's `side`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "UPPERCASE")]
pub enum Side {
    /// The old file: removed and context lines.
    Left,
    /// The new file: added and context lines.
    #[default]
    Right,
}

/// What kind of line a hunk line is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    Context,
    Added,
    Removed,
}

/// What happened to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileStatus {
    Added,
    Deleted,
    Modified,
    /// `similarity` in percent when git reported it.
    Renamed {
        similarity: Option<u8>,
    },
    Copied {
        similarity: Option<u8>,
    },
}

/// One line inside a hunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffLine<'a> {
    pub kind: LineKind,
    /// Line number in the old file (`None` for added lines).
    pub old: Option<u32>,
    /// Line number in the new file (`None` for removed lines).
    pub new: Option<u32>,
    /// The line's content without the `+`/`-`/` ` prefix and without the line ending
    /// (`\n` or `\r\n`).
    pub text: &'a str,
}

/// A hunk: `@@ -old_start,old_count +new_start,new_count @@ section`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hunk {
    pub old_start: u32,
    pub old_count: u32,
    pub new_start: u32,
    pub new_count: u32,
    /// Byte range of the `@@ … @@ section` header line (without its line ending).
    pub(crate) header: Range<usize>,
    /// Byte range of the hunk body (the lines after the `@@` header) in the diff's text.
    pub(crate) body: Range<usize>,
}

impl Hunk {
    /// The line numbers this hunk covers on `side` (empty for a pure addition on `Left`, …).
    pub fn range(&self, side: Side) -> Range<u32> {
        match side {
            // The parser rejects ranges that overflow; saturate anyway so a hand-edited
            // `Hunk` cannot panic here.
            Side::Left => self.old_start..self.old_start.saturating_add(self.old_count),
            Side::Right => self.new_start..self.new_start.saturating_add(self.new_count),
        }
    }
}

/// One file of the diff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileDiff {
    /// Path before the change (`None` for an added file).
    pub old_path: Option<String>,
    /// Path after the change (`None` for a deleted file).
    pub new_path: Option<String>,
    pub status: FileStatus,
    /// Mode of the old side (`100644`, …) when the diff states it: `old mode`,
    /// `deleted file mode`, or the `index` line when the mode did not change.
    pub old_mode: Option<String>,
    /// Mode of the new side: `new mode`, `new file mode`, or the unchanged `index` mode.
    pub new_mode: Option<String>,
    /// A binary file (`Binary files … differ` or `GIT binary patch`): no hunks, no comments.
    pub binary: bool,
    pub hunks: Vec<Hunk>,
    /// Byte range of this file's whole section (headers and hunks) in the diff's text.
    pub(crate) text: Range<usize>,
}

impl FileDiff {
    /// The path a review comment names: the new path, or the old one for a deleted file.
    pub fn path(&self) -> &str {
        self.new_path
            .as_deref()
            .or(self.old_path.as_deref())
            .unwrap_or_default()
    }

    /// Whether a review comment may sit on `line` of `side`: GitHub accepts a comment on any
    /// line inside a hunk (added or context on `Right`, removed or context on `Left`).
    pub fn is_commentable(&self, side: Side, line: u32) -> bool {
        self.hunk_index(side, line).is_some()
    }

    /// Index of the hunk that covers `line` on `side`, if any (hunks are sorted; binary search).
    pub fn hunk_index(&self, side: Side, line: u32) -> Option<usize> {
        let i = self.hunks.partition_point(|h| h.range(side).end <= line);
        let h = self.hunks.get(i)?;
        h.range(side).contains(&line).then_some(i)
    }
}

/// A parsed diff: the text it was parsed from and its files, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    /// Borrowed only from text that lives as long as the process (the CLI's diff file).
    text: Cow<'static, str>,
    files: Vec<FileDiff>,
}

impl Diff {
    /// Parses `git diff` / `git format-patch` / plain unified-diff output.
    ///
    /// Empty input is an empty diff. Input that is not a diff, a truncated hunk or a hunk header
    /// whose numbers overflow is an error naming the line where it went wrong.
    pub fn parse(text: impl Into<String>) -> Result<Diff, ParseError> {
        parse::parse_diff(Cow::Owned(text.into()))
    }

    /// [`Diff::parse`] of text that lives as long as the process, which the diff borrows
    /// rather than copies.
    pub fn parse_static(text: &'static str) -> Result<Diff, ParseError> {
        parse::parse_diff(Cow::Borrowed(text))
    }

    /// Builds a diff from GitHub's per-file records: each `patch` starts at `@@` and has no
    /// file headers. `patch: None` (binary or too large) yields a file without hunks.
    pub fn from_patches<'p>(
        files: impl IntoIterator<Item = PatchFile<'p>>,
    ) -> Result<Diff, ParseError> {
        parse::from_patches(files)
    }

    pub fn files(&self) -> &[FileDiff] {
        &self.files
    }

    /// The file whose `path()` (or old path) is `path`.
    pub fn file(&self, path: &str) -> Option<&FileDiff> {
        self.files.iter().find(|f| f.path() == path).or_else(|| {
            self.files
                .iter()
                .find(|f| f.old_path.as_deref() == Some(path))
        })
    }

    /// A diff of the files `keep(index, file)` selects, in order. Its text is theirs alone
    /// (what a lens is shown), so the dropped files' text does not leak into it.
    pub fn subset(&self, mut keep: impl FnMut(usize, &FileDiff) -> bool) -> Diff {
        let kept: Vec<&FileDiff> = self
            .files
            .iter()
            .enumerate()
            .filter(|(i, f)| keep(*i, f))
            .map(|(_, f)| f)
            .collect();
        // Sized once: growing a multi-megabyte buffer by doubling costs more than the copy.
        let mut text = String::with_capacity(kept.iter().map(|f| f.text.len()).sum());
        let mut files = Vec::with_capacity(kept.len());
        for f in kept {
            let Some(part) = self.text.get(f.text.clone()) else {
                continue;
            };
            let base = text.len();
            text.push_str(part);
            // Every range of a file lies inside its text, so shifting by one offset rebases it.
            let shift = |r: &Range<usize>| {
                r.start.saturating_sub(f.text.start) + base
                    ..r.end.saturating_sub(f.text.start) + base
            };
            let mut g = f.clone();
            g.text = base..text.len();
            for h in &mut g.hunks {
                h.header = shift(&h.header);
                h.body = shift(&h.body);
            }
            files.push(g);
        }
        Diff {
            text: text.into(),
            files,
        }
    }

    /// Keeps only the files `keep` selects. Nothing is copied: [`Diff::text`] still holds the
    /// dropped files' text (what a lens is shown comes from [`Diff::subset`], whose text is its
    /// files' alone). On a multi-megabyte diff the copy cost more than the rest of the gate.
    pub fn retain(&mut self, keep: impl FnMut(&FileDiff) -> bool) {
        self.files.retain(keep);
    }

    /// Keeps only the hunks `keep` selects; a file left with none of its hunks is dropped. The
    /// text is rebuilt from the file headers and the kept hunks, so it stays a valid diff.
    pub fn retain_hunks(&mut self, mut keep: impl FnMut(&FileDiff, &Hunk) -> bool) {
        let mut text = String::with_capacity(self.text.len());
        let mut files = Vec::with_capacity(self.files.len());
        for f in &self.files {
            let kept: Vec<&Hunk> = f.hunks.iter().filter(|h| keep(f, h)).collect();
            if kept.is_empty() && !f.hunks.is_empty() {
                continue;
            }
            let start = text.len();
            // The file's headers: everything before its first hunk.
            let header_end = f.hunks.first().map_or(f.text.end, |h| h.header.start);
            text.push_str(self.text.get(f.text.start..header_end).unwrap_or_default());
            let mut g = f.clone();
            g.hunks.clear();
            for h in kept {
                let mut h2 = h.clone();
                let header = self.text.get(h.header.clone()).unwrap_or_default();
                let hs = text.len();
                text.push_str(header);
                // Header ranges exclude the line break; the body starts on the next line.
                let gap = self
                    .text
                    .get(h.header.end..h.body.start)
                    .unwrap_or_default();
                text.push_str(gap);
                h2.header = hs..hs + header.len();
                let bs = text.len();
                text.push_str(self.text.get(h.body.clone()).unwrap_or_default());
                h2.body = bs..text.len();
                g.hunks.push(h2);
            }
            g.text = start..text.len();
            files.push(g);
        }
        *self = Diff {
            text: text.into(),
            files,
        };
    }

    /// The whole text the diff was parsed from.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The lines of one hunk of `file`, with their numbers.
    pub fn hunk_lines<'a>(&'a self, hunk: &Hunk) -> HunkLines<'a> {
        // `get`: a hunk of another diff must not panic (it just yields nothing useful).
        let body = self.text.get(hunk.body.clone()).unwrap_or_default();
        HunkLines::new(body, hunk.old_start, hunk.new_start)
    }

    /// The raw text of a hunk's body: its lines as the diff has them, prefixes included.
    pub fn hunk_body(&self, hunk: &Hunk) -> &str {
        self.text.get(hunk.body.clone()).unwrap_or_default()
    }

    /// The hunk's `@@ -a,b +c,d @@ section` header line.
    pub fn hunk_header(&self, hunk: &Hunk) -> &str {
        self.text.get(hunk.header.clone()).unwrap_or_default()
    }

    /// The section text after the header's second `@@` (often the enclosing function), or "".
    pub fn hunk_section(&self, hunk: &Hunk) -> &str {
        parse::section(self.hunk_header(hunk))
    }

    /// Every line of every hunk of `file`, in order.
    pub fn file_lines<'a>(&'a self, file: &'a FileDiff) -> impl Iterator<Item = DiffLine<'a>> + 'a {
        file.hunks.iter().flat_map(move |h| self.hunk_lines(h))
    }

    /// The content of `line` on `side` of `file`, when that line is inside a hunk.
    pub fn line_text(&self, file: &FileDiff, side: Side, line: u32) -> Option<&str> {
        let hunk = &file.hunks[file.hunk_index(side, line)?];
        self.hunk_lines(hunk)
            .find(|l| match side {
                Side::Left => l.old == Some(line),
                Side::Right => l.new == Some(line),
            })
            .map(|l| l.text)
    }

    /// The unified-diff text of one file (headers and hunks), as sent to a lens.
    pub fn file_text(&self, file: &FileDiff) -> &str {
        self.text.get(file.text.clone()).unwrap_or_default()
    }
}

/// One file record as GitHub's files API gives it.
#[derive(Debug, Clone, Copy)]
pub struct PatchFile<'p> {
    pub filename: &'p str,
    /// GitHub's `previous_filename` for renames and copies.
    pub previous_filename: Option<&'p str>,
    /// GitHub's `status`: `added`, `removed`, `modified`, `renamed`, `copied`, `changed`, `unchanged`.
    pub status: &'p str,
    pub patch: Option<&'p str>,
}

/// Iterator over the lines of a hunk body. Skips `\ No newline at end of file` markers.
#[derive(Debug, Clone)]
pub struct HunkLines<'a> {
    rest: &'a str,
    old: u32,
    new: u32,
}

impl<'a> HunkLines<'a> {
    fn new(body: &'a str, old_start: u32, new_start: u32) -> Self {
        Self {
            rest: body,
            old: old_start,
            new: new_start,
        }
    }
}

impl<'a> Iterator for HunkLines<'a> {
    type Item = DiffLine<'a>;

    fn next(&mut self) -> Option<DiffLine<'a>> {
        loop {
            if self.rest.is_empty() {
                return None;
            }
            let end =
                memchr::memchr(b'\n', self.rest.as_bytes()).map_or(self.rest.len(), |i| i + 1);
            let (raw, rest) = self.rest.split_at(end);
            self.rest = rest;
            let raw = raw.strip_suffix('\n').unwrap_or(raw);
            let raw = raw.strip_suffix('\r').unwrap_or(raw);
            let (kind, text) = match raw.as_bytes().first() {
                Some(b'+') => (LineKind::Added, &raw[1..]),
                Some(b'-') => (LineKind::Removed, &raw[1..]),
                Some(b' ') => (LineKind::Context, &raw[1..]),
                // An empty line inside a hunk is a context line whose space was stripped
                // (some editors and mailers do that).
                None => (LineKind::Context, raw),
                // `\ No newline at end of file` and anything the parser already vetted.
                _ => continue,
            };
            let line = match kind {
                LineKind::Added => {
                    let l = DiffLine {
                        kind,
                        old: None,
                        new: Some(self.new),
                        text,
                    };
                    self.new = self.new.saturating_add(1);
                    l
                }
                LineKind::Removed => {
                    let l = DiffLine {
                        kind,
                        old: Some(self.old),
                        new: None,
                        text,
                    };
                    self.old = self.old.saturating_add(1);
                    l
                }
                LineKind::Context => {
                    let l = DiffLine {
                        kind,
                        old: Some(self.old),
                        new: Some(self.new),
                        text,
                    };
                    self.old = self.old.saturating_add(1);
                    self.new = self.new.saturating_add(1);
                    l
                }
            };
            return Some(line);
        }
    }
}
