//! The diff model: a parsed `git diff` (or GitHub per-file `patch`), with the lines each side
//! can carry a review comment on.
//!
//! The diff owns its text; files and hunks hold byte ranges into it, so parsing copies nothing
//! and the lines of a hunk are walked on demand. A diff whose bytes are not all UTF-8 (a
//! Latin-1 file in it) is kept as bytes: the checks that look at every line read the bytes,
//! and the text is decoded (each undecodable sequence as U+FFFD) only when something asks
//! for it, a file at a time.

mod decode;
pub(crate) mod file;
mod parse;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::ops::Range;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

pub use decode::{lossy_text, utf8};
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
    text: Text,
    files: Vec<FileDiff>,
}

/// What a diff was parsed from. Every range of its files and hunks is a range of these bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Text {
    /// UTF-8, as nearly every diff is: its ranges slice it as they are. Borrowed only from
    /// text that lives as long as the process (the CLI's diff file).
    Utf8(Cow<'static, str>),
    /// Bytes that are not all UTF-8.
    Lossy(Box<Lossy>),
}

impl Default for Text {
    fn default() -> Self {
        Text::Utf8(Cow::Borrowed(""))
    }
}

impl Text {
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Text::Utf8(s) => s.as_bytes(),
            Text::Lossy(l) => &l.bytes,
        }
    }
}

/// A diff's bytes that are not all UTF-8, and their text, decoded when first asked for.
#[derive(Debug, Clone)]
pub(crate) struct Lossy {
    bytes: Cow<'static, [u8]>,
    /// The whole text, for [`Diff::text`].
    whole: OnceLock<String>,
    /// Each file's text, in the order of [`Diff::files`], decoded when first asked for.
    files: OnceLock<Vec<OnceLock<DecodedFile>>>,
}

impl Lossy {
    pub(crate) fn new(bytes: Cow<'static, [u8]>) -> Box<Self> {
        Box::new(Lossy {
            bytes,
            whole: OnceLock::new(),
            files: OnceLock::new(),
        })
    }
}

/// The decoded bytes are the whole of it: what was decoded from them follows.
impl PartialEq for Lossy {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for Lossy {}

/// One file of a lossy diff, decoded, and where its hunks are in its text.
#[derive(Debug, Clone)]
struct DecodedFile {
    text: String,
    /// Each hunk's header and body.
    hunks: Vec<[Range<usize>; 2]>,
}

impl DecodedFile {
    /// Decodes `file` from `bytes` a piece at a time, cut where its ranges start and end: each
    /// cut lies before a line break or after one, where no sequence is cut, so each piece
    /// decodes as it does in the whole.
    fn new(bytes: &[u8], file: &FileDiff) -> Self {
        let mut text = String::with_capacity(file.text.len());
        let mut from = file.text.start;
        // Decodes the bytes from `from` to `end` onto `text`: its length after.
        let mut to = |text: &mut String, end: usize| -> usize {
            text.push_str(&lossy_text(bytes.get(from..end).unwrap_or_default()));
            from = end;
            text.len()
        };
        let mut hunks = Vec::with_capacity(file.hunks.len());
        for h in &file.hunks {
            let header_start = to(&mut text, h.header.start);
            let header = header_start..to(&mut text, h.header.end);
            let body_start = to(&mut text, h.body.start);
            hunks.push([header, body_start..to(&mut text, h.body.end)]);
        }
        to(&mut text, file.text.end);
        DecodedFile { text, hunks }
    }
}

impl Diff {
    /// Parses `git diff` / `git format-patch` / plain unified-diff output.
    ///
    /// Empty input is an empty diff. Input that is not a diff, a truncated hunk or a hunk header
    /// whose numbers overflow is an error naming the line where it went wrong.
    pub fn parse(text: impl Into<String>) -> Result<Diff, ParseError> {
        parse::parse_diff(Text::Utf8(Cow::Owned(text.into())))
    }

    /// [`Diff::parse`] of text that lives as long as the process, which the diff borrows
    /// rather than copies.
    pub fn parse_static(text: &'static str) -> Result<Diff, ParseError> {
        parse::parse_diff(Text::Utf8(Cow::Borrowed(text)))
    }

    /// [`Diff::parse_static`] of bytes that may not be UTF-8: each undecodable sequence reads
    /// as U+FFFD, as `String::from_utf8_lossy` has it.
    pub fn parse_static_bytes(bytes: &'static [u8]) -> Result<Diff, ParseError> {
        match utf8(bytes) {
            Some(text) => Diff::parse_static(text),
            None => parse::parse_diff(Text::Lossy(Lossy::new(Cow::Borrowed(bytes)))),
        }
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

    /// Whether the diff's bytes are not all UTF-8.
    pub fn is_lossy(&self) -> bool {
        matches!(self.text, Text::Lossy(_))
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
        let mut text = Builder::new(&self.text, kept.iter().map(|f| f.text.len()).sum());
        let mut files = Vec::with_capacity(kept.len());
        for f in kept {
            let base = text.len();
            text.push(f.text.clone());
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
            text: text.finish(),
            files,
        }
    }

    /// Keeps only the files `keep` selects. Nothing is copied: [`Diff::text`] still holds the
    /// dropped files' text (what a lens is shown comes from [`Diff::subset`], whose text is its
    /// files' alone). On a multi-megabyte diff the copy cost more than the rest of the gate.
    pub fn retain(&mut self, keep: impl FnMut(&FileDiff) -> bool) {
        self.files.retain(keep);
        if let Text::Lossy(l) = &mut self.text {
            // Decoded for the files as they were.
            l.files = OnceLock::new();
        }
    }

    /// Keeps only the hunks `keep` selects; a file left with none of its hunks is dropped. The
    /// text is rebuilt from the file headers and the kept hunks, so it stays a valid diff.
    pub fn retain_hunks(&mut self, mut keep: impl FnMut(&FileDiff, &Hunk) -> bool) {
        let mut text = Builder::new(&self.text, self.text.bytes().len());
        let mut files = Vec::with_capacity(self.files.len());
        for f in &self.files {
            let kept: Vec<&Hunk> = f.hunks.iter().filter(|h| keep(f, h)).collect();
            if kept.is_empty() && !f.hunks.is_empty() {
                continue;
            }
            let start = text.len();
            // The file's headers: everything before its first hunk.
            let header_end = f.hunks.first().map_or(f.text.end, |h| h.header.start);
            text.push(f.text.start..header_end);
            let mut g = f.clone();
            g.hunks.clear();
            for h in kept {
                let mut h2 = h.clone();
                let hs = text.len();
                text.push(h.header.clone());
                h2.header = hs..text.len();
                // Header ranges exclude the line break; the body starts on the next line.
                text.push(h.header.end..h.body.start);
                let bs = text.len();
                text.push(h.body.clone());
                h2.body = bs..text.len();
                g.hunks.push(h2);
            }
            g.text = start..text.len();
            files.push(g);
        }
        *self = Diff {
            text: text.finish(),
            files,
        };
    }

    /// The bytes the diff was parsed from: every range of its files and hunks is one of them.
    pub(crate) fn bytes(&self) -> &[u8] {
        self.text.bytes()
    }

    /// The whole text the diff was parsed from.
    pub fn text(&self) -> &str {
        match &self.text {
            Text::Utf8(s) => s,
            Text::Lossy(l) => l.whole.get_or_init(|| lossy_text(&l.bytes)),
        }
    }

    /// The lines of one hunk of `file`, with their numbers.
    pub fn hunk_lines<'a>(&'a self, hunk: &Hunk) -> HunkLines<'a> {
        HunkLines::new(self.hunk_body(hunk), hunk.old_start, hunk.new_start)
    }

    /// [`Diff::hunk_lines`] as bytes, as the diff has them: nothing is decoded.
    pub fn hunk_byte_lines<'a>(&'a self, hunk: &Hunk) -> HunkByteLines<'a> {
        let body = self.text.bytes().get(hunk.body.clone()).unwrap_or_default();
        HunkByteLines(Lines::new(body, hunk.old_start, hunk.new_start))
    }

    /// The raw text of a hunk's body: its lines as the diff has them, prefixes included.
    pub fn hunk_body(&self, hunk: &Hunk) -> &str {
        // `get`: a hunk of another diff must not panic (it just yields nothing useful).
        self.slice(hunk, |h| &h.body, |d| &d[1])
    }

    /// The hunk's `@@ -a,b +c,d @@ section` header line.
    pub fn hunk_header(&self, hunk: &Hunk) -> &str {
        self.slice(hunk, |h| &h.header, |d| &d[0])
    }

    /// The text of `pick(hunk)`: for a lossy diff, the decoded text of `pick_decoded` of the
    /// hunk's place in its file.
    fn slice(
        &self,
        hunk: &Hunk,
        pick: impl Fn(&Hunk) -> &Range<usize>,
        pick_decoded: impl Fn(&[Range<usize>; 2]) -> &Range<usize>,
    ) -> &str {
        match &self.text {
            Text::Utf8(s) => s.get(pick(hunk).clone()),
            Text::Lossy(l) => self.hunk_place(hunk).and_then(|(i, j)| {
                let decoded = self.decoded(l, i);
                decoded.text.get(pick_decoded(&decoded.hunks[j]).clone())
            }),
        }
        .unwrap_or_default()
    }

    /// Where `hunk` is: its file's index and its own in that file.
    fn hunk_place(&self, hunk: &Hunk) -> Option<(usize, usize)> {
        let i = self
            .files
            .partition_point(|f| f.text.end <= hunk.header.start);
        let hunks = &self.files.get(i)?.hunks;
        let j = hunks
            .binary_search_by_key(&hunk.header.start, |h| h.header.start)
            .ok()
            .filter(|&j| hunks[j] == *hunk)?;
        Some((i, j))
    }

    /// File `i` of a lossy diff, decoded.
    fn decoded<'a>(&'a self, lossy: &'a Lossy, i: usize) -> &'a DecodedFile {
        let files = lossy
            .files
            .get_or_init(|| self.files.iter().map(|_| OnceLock::new()).collect());
        files[i].get_or_init(|| DecodedFile::new(&lossy.bytes, &self.files[i]))
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
        match &self.text {
            Text::Utf8(s) => s.get(file.text.clone()),
            Text::Lossy(l) => self
                .files
                .binary_search_by_key(&file.text.start, |f| f.text.start)
                .ok()
                .filter(|&i| self.files[i].text == file.text)
                .map(|i| self.decoded(l, i).text.as_str()),
        }
        .unwrap_or_default()
    }

    /// `bytes`, a part of this diff's bytes (a line of [`Diff::hunk_byte_lines`]), as text:
    /// borrowed from a UTF-8 diff's text, which was checked once when it was read, so a long
    /// line is not checked again; decoded from a lossy diff or from bytes of somewhere else.
    pub fn as_text<'a>(&'a self, bytes: &'a [u8]) -> Cow<'a, str> {
        if let Text::Utf8(text) = &self.text {
            // Live slices do not overlap: one that starts inside the text and ends inside it
            // is a part of it.
            let start = (bytes.as_ptr() as usize).wrapping_sub(text.as_ptr() as usize);
            if let Some(part) = start
                .checked_add(bytes.len())
                .and_then(|end| text.get(start..end))
            {
                return Cow::Borrowed(part);
            }
        }
        String::from_utf8_lossy(bytes)
    }

    /// [`Diff::file_text`] as bytes, as the diff has them: nothing is decoded.
    pub fn file_bytes(&self, file: &FileDiff) -> &[u8] {
        self.text.bytes().get(file.text.clone()).unwrap_or_default()
    }
}

/// A diff's text made anew from ranges of another's, of the same kind.
enum Builder<'t> {
    Utf8(&'t str, String),
    Bytes(&'t [u8], Vec<u8>),
}

impl<'t> Builder<'t> {
    fn new(from: &'t Text, capacity: usize) -> Self {
        match from {
            Text::Utf8(s) => Builder::Utf8(s, String::with_capacity(capacity)),
            Text::Lossy(l) => Builder::Bytes(&l.bytes, Vec::with_capacity(capacity)),
        }
    }

    fn len(&self) -> usize {
        match self {
            Builder::Utf8(_, out) => out.len(),
            Builder::Bytes(_, out) => out.len(),
        }
    }

    fn push(&mut self, range: Range<usize>) {
        match self {
            Builder::Utf8(from, out) => out.push_str(from.get(range).unwrap_or_default()),
            Builder::Bytes(from, out) => out.extend_from_slice(from.get(range).unwrap_or_default()),
        }
    }

    fn finish(self) -> Text {
        match self {
            Builder::Utf8(_, out) => Text::Utf8(Cow::Owned(out)),
            Builder::Bytes(_, out) => Text::Lossy(Lossy::new(Cow::Owned(out))),
        }
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
    body: &'a str,
    lines: Lines<'a>,
}

impl<'a> HunkLines<'a> {
    fn new(body: &'a str, old_start: u32, new_start: u32) -> Self {
        Self {
            body,
            lines: Lines::new(body.as_bytes(), old_start, new_start),
        }
    }
}

impl<'a> Iterator for HunkLines<'a> {
    type Item = DiffLine<'a>;

    fn next(&mut self) -> Option<DiffLine<'a>> {
        let (line, at) = self.lines.next()?;
        Some(DiffLine {
            kind: line.kind,
            old: line.old,
            new: line.new,
            // Cut after a prefix byte and before a line break: on character boundaries.
            text: self.body.get(at..at + line.text.len()).unwrap_or_default(),
        })
    }
}

/// One line inside a hunk, as the diff's bytes have it ([`Diff::hunk_byte_lines`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteLine<'a> {
    pub kind: LineKind,
    pub old: Option<u32>,
    pub new: Option<u32>,
    /// As [`DiffLine::text`], not decoded.
    pub text: &'a [u8],
}

/// [`HunkLines`] as bytes.
#[derive(Debug, Clone)]
pub struct HunkByteLines<'a>(Lines<'a>);

impl<'a> Iterator for HunkByteLines<'a> {
    type Item = ByteLine<'a>;

    fn next(&mut self) -> Option<ByteLine<'a>> {
        self.0.next().map(|(line, _)| line)
    }
}

/// The walk both line iterators share: each line, and where its content starts in the body.
#[derive(Debug, Clone)]
struct Lines<'a> {
    body: &'a [u8],
    pos: usize,
    old: u32,
    new: u32,
}

impl<'a> Lines<'a> {
    fn new(body: &'a [u8], old: u32, new: u32) -> Self {
        Lines {
            body,
            pos: 0,
            old,
            new,
        }
    }

    fn next(&mut self) -> Option<(ByteLine<'a>, usize)> {
        loop {
            let start = self.pos;
            let rest = self.body.get(start..).filter(|r| !r.is_empty())?;
            let (mut end, next) = match memchr::memchr(b'\n', rest) {
                Some(i) => (start + i, start + i + 1),
                None => (self.body.len(), self.body.len()),
            };
            self.pos = next;
            if end > start && self.body[end - 1] == b'\r' {
                end -= 1;
            }
            let kind = match self.body[start..end].first() {
                Some(b'+') => LineKind::Added,
                Some(b'-') => LineKind::Removed,
                Some(b' ') => LineKind::Context,
                // An empty line inside a hunk is a context line whose space was stripped
                // (some editors and mailers do that).
                None => {
                    let (old, new) = (self.old, self.new);
                    self.old = old.saturating_add(1);
                    self.new = new.saturating_add(1);
                    let line = ByteLine {
                        kind: LineKind::Context,
                        old: Some(old),
                        new: Some(new),
                        text: &[],
                    };
                    return Some((line, start));
                }
                // `\ No newline at end of file` and anything the parser already vetted.
                _ => continue,
            };
            let (old, new) = match kind {
                LineKind::Added => (None, Some(self.new)),
                LineKind::Removed => (Some(self.old), None),
                LineKind::Context => (Some(self.old), Some(self.new)),
            };
            if old.is_some() {
                self.old = self.old.saturating_add(1);
            }
            if new.is_some() {
                self.new = self.new.saturating_add(1);
            }
            let line = ByteLine {
                kind,
                old,
                new,
                text: &self.body[start + 1..end],
            };
            return Some((line, start + 1));
        }
    }
}
