//! The unified-diff parser.
//!
//! It works on the bytes of the text, UTF-8 or not: only header values (paths, modes) are
//! read as text, each decoded on its own. Hunk bodies are skipped by their header's counts
//! with one `memchr` per line and a look at its first byte; the only allocations are paths,
//! modes and the per-file hunk vectors (which are the whole index).
//!
//! Accepted input, in any mix: `git diff` (renames, copies, modes, binaries, quoted paths),
//! `git format-patch` mails (text outside files is skipped), and plain unified diffs
//! (`--- old` / `+++ new`). A hunk header met outside any file is an error ("hunk before any
//! file header"): `Diff::parse` cannot guess the file, and GitHub's header-less per-file
//! patches go through `Diff::from_patches` instead.

use std::borrow::Cow;
use std::fmt;
use std::fmt::Write as _;
use std::ops::Range;

use memchr::memchr;

use super::{Diff, FileDiff, FileStatus, Hunk, PatchFile, Text};

/// Why a diff could not be parsed, naming the place where it went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// For `Diff::from_patches`: the file (GitHub `filename`) whose patch is at fault.
    pub file: Option<String>,
    /// 1-based line: of the whole input for `Diff::parse`, of the file's `patch` for
    /// `Diff::from_patches`.
    pub line: usize,
    pub message: String,
    /// The input holds ANSI colour codes at line starts (`git diff --color=always`), which is
    /// most likely why it did not parse; the caller's message says how to get a plain diff.
    pub coloured: bool,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "file {file:?}, ")?;
        }
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

fn error(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        file: None,
        line,
        message: message.into(),
        coloured: false,
    }
}

/// A short, single-line, quoted rendering of input text for error messages.
fn snippet(bytes: &[u8]) -> String {
    const MAX: usize = 60;
    let cut = bytes.get(..MAX).unwrap_or(bytes);
    let s = String::from_utf8_lossy(cut);
    if cut.len() < bytes.len() {
        format!("{:?}…", s.as_ref())
    } else {
        format!("{:?}", s.as_ref())
    }
}

pub(super) fn parse_diff(text: Text) -> Result<Diff, ParseError> {
    let bytes = text.bytes();
    let pieces = match bytes.len() >= PIECES_FROM_BYTES && crate::par::threads() > 1 {
        true => parse_in_pieces(bytes, bytes.len().div_ceil(crate::par::threads() * 8)),
        false => None,
    };
    let blank = || String::from_utf8_lossy(bytes).trim().is_empty();
    let files = pieces
        .map_or_else(|| parse_files(bytes, 0), Ok)
        .and_then(|files| match files.is_empty() && !blank() {
            true => Err(error(
                1,
                "not a unified diff: no \"diff --git\" or \"---\"/\"+++\" file header found",
            )),
            false => Ok(files),
        })
        .map_err(|mut e| {
            // Looked for only on failure: a valid diff pays nothing for it.
            e.coloured = looks_coloured(bytes);
            e
        })?;
    Ok(Diff { text, files })
}

/// Whether some line starts with an ANSI escape sequence (`ESC [`), as every header line of
/// `git diff --color=always` does.
fn looks_coloured(text: &[u8]) -> bool {
    text.starts_with(b"\x1b[") || memchr::memmem::find(text, b"\n\x1b[").is_some()
}

/// One line of the input: `start..end` is its content without `\n` / `\r\n`, `next` where the
/// following line starts.
#[derive(Debug, Clone, Copy)]
struct Line {
    start: usize,
    end: usize,
    next: usize,
}

/// A position in the text, with the 1-based number of the line it is at.
struct Cursor<'t> {
    text: &'t [u8],
    pos: usize,
    line_no: usize,
}

impl<'t> Cursor<'t> {
    fn new(text: &'t [u8], pos: usize) -> Self {
        Cursor {
            text,
            pos,
            line_no: 1,
        }
    }

    fn line_at(&self, pos: usize) -> Option<Line> {
        let bytes = self.text;
        let rest = bytes.get(pos..).filter(|r| !r.is_empty())?;
        let (mut end, next) = match memchr(b'\n', rest) {
            Some(i) => (pos + i, pos + i + 1),
            None => (bytes.len(), bytes.len()),
        };
        if end > pos && bytes.get(end - 1) == Some(&b'\r') {
            end -= 1;
        }
        Some(Line {
            start: pos,
            end,
            next,
        })
    }

    fn peek(&self) -> Option<Line> {
        self.line_at(self.pos)
    }

    /// The line after `line`.
    fn peek_after(&self, line: Line) -> Option<Line> {
        self.line_at(line.next)
    }

    fn bytes(&self, line: Line) -> &'t [u8] {
        self.text.get(line.start..line.end).unwrap_or_default()
    }

    /// `line` from byte `skip` on, as text: a header value, decoded on its own (a path in a
    /// legacy encoding reads with U+FFFD, as in the decoded diff).
    fn str_from(&self, line: Line, skip: usize) -> Cow<'t, str> {
        String::from_utf8_lossy(
            self.text
                .get(line.start + skip..line.end)
                .unwrap_or_default(),
        )
    }

    fn advance(&mut self, line: Line) {
        self.pos = line.next;
        self.line_no += 1;
    }
}

/// Below this much text one parse is as fast as pieces on two cores or faster: the Django
/// diff (4.6 MB) and chardet's history (8.7 MB) were no faster in pieces, the 20 MB and 43 MB
/// diffs 5-6% faster (`scripts/bench-ab.sh`, docs/benchmarks.md).
const PIECES_FROM_BYTES: usize = 16 * 1024 * 1024;

/// The files of a large diff, parsed in pieces of about `size` bytes over the cores: each
/// piece but the first starts at a `diff --git` line, which only a file header can be (every
/// line of a hunk starts with ` `, `+`, `-` or `\\`). `None` when the text has only one piece,
/// or when a piece does not parse: the whole text is then parsed in one piece, so that the
/// error names its line in the whole text.
pub(super) fn parse_in_pieces(text: &[u8], size: usize) -> Option<Vec<FileDiff>> {
    let finder = memchr::memmem::Finder::new(b"\ndiff --git ");
    let mut starts = vec![0];
    let mut at = size;
    while let Some(found) = text.get(at..).and_then(|rest| finder.find(rest)) {
        let start = at + found + 1;
        starts.push(start);
        at = start + size;
    }
    if starts.len() < 2 {
        return None;
    }
    starts.push(text.len());
    let pieces: Vec<Range<usize>> = starts.windows(2).map(|w| w[0]..w[1]).collect();
    let parsed = crate::par::map_shares(
        &pieces,
        |piece| piece.len(),
        |share| {
            share
                .iter()
                .map(|piece| parse_files(&text[..piece.end], piece.start).ok())
                .collect()
        },
    );
    let parsed: Vec<Vec<FileDiff>> = parsed.into_iter().collect::<Option<_>>()?;
    Some(parsed.into_iter().flatten().collect())
}

/// The files of `text` from byte `start` (a line start) to its end (none for text without a
/// file header: [`parse_diff`] says that the whole is no diff).
fn parse_files(text: &[u8], start: usize) -> Result<Vec<FileDiff>, ParseError> {
    let mut cur = Cursor::new(text, start);
    let mut files = Vec::new();
    while let Some(line) = cur.peek() {
        let b = cur.bytes(line);
        if b.starts_with(b"diff --git ") {
            files.push(git_file(&mut cur, line)?);
        } else if b.starts_with(b"diff --cc ") || b.starts_with(b"diff --combined ") {
            return Err(error(
                cur.line_no,
                "combined (merge) diffs are not supported",
            ));
        } else if b.starts_with(b"--- ") && starts_plain_file(&cur, line) {
            files.push(plain_file(&mut cur, line)?);
        } else if b.starts_with(b"@@ -") || b.starts_with(b"@@@ ") {
            let what = if files.is_empty() {
                "hunk before any file header"
            } else {
                "hunk outside any file (text between it and its file header?)"
            };
            return Err(error(cur.line_no, format!("{what}: {}", snippet(b))));
        } else {
            // Mail headers, commit messages, diffstats, signatures, `Index:` lines, …
            cur.advance(line);
        }
    }
    Ok(files)
}

/// `--- old`, `+++ new`, `@@ -…`: three lines in a row, so that a commit message quoting a
/// `---`/`+++` pair is not taken for a file.
fn starts_plain_file(cur: &Cursor<'_>, minus: Line) -> bool {
    let Some(plus) = cur.peek_after(minus) else {
        return false;
    };
    cur.bytes(plus).starts_with(b"+++ ")
        && cur
            .peek_after(plus)
            .is_some_and(|l| cur.bytes(l).starts_with(b"@@ -"))
}

/// Paths as named by the `diff --git` line (a fallback when no other header names them).
struct GitNames {
    old: Option<String>,
    new: Option<String>,
    /// Whether the names carry `a/`-style prefixes (false for `--no-prefix` output).
    prefixed: bool,
}

/// Drops a one-letter `a/` / `b/` (or mnemonic `i/`, `w/`, …) prefix.
fn strip_prefix(path: String) -> String {
    match path.as_bytes() {
        [c, b'/', ..] if c.is_ascii_alphabetic() => path[2..].to_owned(),
        _ => path,
    }
}

fn parse_git_names(rest: &str) -> GitNames {
    let pair = if rest.starts_with('"') {
        unquote(rest).and_then(|(a, tail)| {
            let b = tail.strip_prefix(' ')?;
            let b = if b.starts_with('"') {
                unquote(b)?.0
            } else {
                b.to_owned()
            };
            Some((a, b))
        })
    } else if rest.ends_with('"') {
        // `a/plain "b/quoted"`: the second name is the quoted string that ends the line.
        rest.match_indices(" \"").find_map(|(i, _)| {
            let (b, tail) = unquote(&rest[i + 1..])?;
            tail.is_empty().then(|| (rest[..i].to_owned(), b))
        })
    } else {
        None
    };
    if let Some((a, b)) = pair {
        return GitNames {
            old: Some(strip_prefix(a)),
            new: Some(strip_prefix(b)),
            prefixed: true,
        };
    }

    // Unquoted: names may contain spaces. When both sides name the same path the split is
    // the middle space (what git itself does); otherwise guess and let `---`/`+++` or
    // `rename`/`copy` lines decide.
    let mid = rest.len() / 2;
    if rest.len() % 2 == 1 && rest.as_bytes().get(mid) == Some(&b' ') {
        let (a, b) = (&rest[..mid], &rest[mid + 1..]);
        if a == b {
            return GitNames {
                old: Some(a.to_owned()),
                new: Some(b.to_owned()),
                prefixed: false,
            };
        }
        if let (Some(pa), Some(pb)) = (a.get(2..), b.get(2..))
            && pa == pb
            && a.as_bytes().get(1) == Some(&b'/')
            && b.as_bytes().get(1) == Some(&b'/')
        {
            return GitNames {
                old: Some(pa.to_owned()),
                new: Some(pb.to_owned()),
                prefixed: true,
            };
        }
    }
    let split = rest.find(" b/").or_else(|| rest.find(' '));
    match split {
        Some(i) => GitNames {
            old: Some(strip_prefix(rest[..i].to_owned())),
            new: Some(strip_prefix(rest[i + 1..].to_owned())),
            prefixed: true,
        },
        None => GitNames {
            old: None,
            new: None,
            prefixed: true,
        },
    }
}

/// Undoes git's C-style path quoting (`"a/caf\303\251 x"`): returns the unquoted text (UTF-8,
/// lossy) and what follows the closing quote. `None` when `s` is not a well-formed quote.
fn unquote(s: &str) -> Option<(String, &str)> {
    let bytes = s.as_bytes();
    if bytes.first() != Some(&b'"') {
        return None;
    }
    let mut out = Vec::with_capacity(s.len());
    let mut i = 1;
    loop {
        let c = *bytes.get(i)?;
        i += 1;
        match c {
            b'"' => break,
            b'\\' => {
                let e = *bytes.get(i)?;
                i += 1;
                out.push(match e {
                    b'a' => 7,
                    b'b' => 8,
                    b't' => b'\t',
                    b'n' => b'\n',
                    b'v' => 11,
                    b'f' => 12,
                    b'r' => b'\r',
                    b'0'..=b'7' => {
                        let mut v = u32::from(e - b'0');
                        for _ in 0..2 {
                            match bytes.get(i) {
                                Some(&d @ b'0'..=b'7') => {
                                    v = v * 8 + u32::from(d - b'0');
                                    i += 1;
                                }
                                _ => break,
                            }
                        }
                        u8::try_from(v).ok()?
                    }
                    other => other, // `\\`, `\"` and anything git would not write.
                });
            }
            other => out.push(other),
        }
    }
    Some((
        String::from_utf8_lossy(&out).into_owned(),
        s.get(i..).unwrap_or_default(),
    ))
}

/// A path from a `---`/`+++`/`rename from`/… header value: unquoted, and for `---`/`+++` cut
/// at the tab that precedes a timestamp. `None` for `/dev/null`.
fn header_path(value: &str, cut_at_tab: bool) -> Option<String> {
    let path = match unquote(value) {
        Some((p, _)) => p,
        None if cut_at_tab => value.split('\t').next().unwrap_or_default().to_owned(),
        None => value.to_owned(),
    };
    (path != "/dev/null").then_some(path)
}

fn mode(value: &str) -> Option<String> {
    let m = value.trim();
    (!m.is_empty()).then(|| m.to_owned())
}

/// `similarity index 87%` → 87 (clamped to 100).
fn percent(value: &str) -> Option<u8> {
    let digits = value.trim().strip_suffix('%')?;
    let n: u32 = digits.parse().ok()?;
    u8::try_from(n.min(100)).ok()
}

/// One `diff --git` section: extended headers, then `---`/`+++` and hunks, or a binary note.
fn git_file(cur: &mut Cursor<'_>, first: Line) -> Result<FileDiff, ParseError> {
    let start = first.start;
    let names = parse_git_names(&cur.str_from(first, "diff --git ".len()));
    cur.advance(first);

    let mut f = FileDiff {
        old_path: None,
        new_path: None,
        status: FileStatus::Modified,
        old_mode: None,
        new_mode: None,
        binary: false,
        hunks: Vec::new(),
        text: start..start,
    };
    let (mut added, mut deleted) = (false, false);
    let (mut rename_from, mut rename_to, mut copy_from, mut copy_to) = (None, None, None, None);
    let mut similarity = None;
    // `---`/`+++` paths: `Some(None)` is `/dev/null`.
    let (mut minus, mut plus): (Option<Option<String>>, Option<Option<String>>) = (None, None);
    let mut has_hunks = false;

    while let Some(line) = cur.peek() {
        let b = cur.bytes(line);
        let value = |prefix: &str| cur.str_from(line, prefix.len());
        if b.starts_with(b"old mode ") {
            f.old_mode = mode(&value("old mode "));
        } else if b.starts_with(b"new mode ") {
            f.new_mode = mode(&value("new mode "));
        } else if b.starts_with(b"deleted file mode ") {
            f.old_mode = mode(&value("deleted file mode "));
            deleted = true;
        } else if b.starts_with(b"new file mode ") {
            f.new_mode = mode(&value("new file mode "));
            added = true;
        } else if b.starts_with(b"rename from ") {
            rename_from = header_path(&value("rename from "), false);
        } else if b.starts_with(b"rename to ") {
            rename_to = header_path(&value("rename to "), false);
        } else if b.starts_with(b"rename old ") {
            rename_from = header_path(&value("rename old "), false);
        } else if b.starts_with(b"rename new ") {
            rename_to = header_path(&value("rename new "), false);
        } else if b.starts_with(b"copy from ") {
            copy_from = header_path(&value("copy from "), false);
        } else if b.starts_with(b"copy to ") {
            copy_to = header_path(&value("copy to "), false);
        } else if b.starts_with(b"similarity index ") {
            similarity = percent(&value("similarity index "));
        } else if b.starts_with(b"dissimilarity index ") {
            // A complete rewrite; the hunks say it all.
        } else if b.starts_with(b"index ") {
            // `index abc..def 100644`: the mode when it did not change.
            if let Some((_, m)) = value("index ").split_once(' ') {
                f.old_mode = f.old_mode.take().or_else(|| mode(m));
                f.new_mode = f.new_mode.take().or_else(|| mode(m));
            }
        } else if b.starts_with(b"Binary files ") {
            f.binary = true;
            cur.advance(line);
            break;
        } else if b == b"GIT binary patch" {
            f.binary = true;
            cur.advance(line);
            skip_binary_patch(cur);
            break;
        } else if b.starts_with(b"--- ") {
            let Some(next) = cur
                .peek_after(line)
                .filter(|l| cur.bytes(*l).starts_with(b"+++ "))
            else {
                return Err(error(
                    cur.line_no,
                    "a \"---\" header must be followed by \"+++\"",
                ));
            };
            minus = Some(header_path(&value("--- "), true).map(|p| unprefix(p, names.prefixed)));
            plus = Some(
                header_path(&cur.str_from(next, "+++ ".len()), true)
                    .map(|p| unprefix(p, names.prefixed)),
            );
            cur.advance(line);
            cur.advance(next);
            has_hunks = true;
            break;
        } else if b.starts_with(b"@@") {
            has_hunks = true;
            break;
        } else {
            // The next file, or text after this one.
            break;
        }
        cur.advance(line);
    }
    if has_hunks {
        parse_hunks(cur, &mut f.hunks)?;
    }

    added |= minus == Some(None);
    deleted |= plus == Some(None);
    let copied = copy_from.is_some() || copy_to.is_some();
    let old = rename_from
        .or(copy_from)
        .or_else(|| minus.flatten())
        .or(names.old);
    let new = rename_to
        .or(copy_to)
        .or_else(|| plus.flatten())
        .or(names.new);
    let renamed = old.is_some() && new.is_some() && old != new;
    f.status = if added {
        FileStatus::Added
    } else if deleted {
        FileStatus::Deleted
    } else if copied {
        FileStatus::Copied { similarity }
    } else if renamed {
        FileStatus::Renamed { similarity }
    } else {
        FileStatus::Modified
    };
    match f.status {
        FileStatus::Added => f.new_path = new.or(old),
        FileStatus::Deleted => f.old_path = old.or(new),
        _ => {
            f.old_path = old.clone().or_else(|| new.clone());
            f.new_path = new.or(old);
        }
    }
    f.text = start..cur.pos;
    Ok(f)
}

fn unprefix(path: String, prefixed: bool) -> String {
    if prefixed { strip_prefix(path) } else { path }
}

/// Skips the `literal N`/`delta N` blocks of base85 lines (each ended by an empty line) that
/// follow `GIT binary patch`: one block for the new content, usually one for the old.
fn skip_binary_patch(cur: &mut Cursor<'_>) {
    for _ in 0..2 {
        match cur.peek() {
            Some(l)
                if cur.bytes(l).starts_with(b"literal ") || cur.bytes(l).starts_with(b"delta ") =>
            {
                cur.advance(l);
            }
            _ => return,
        }
        while let Some(l) = cur.peek() {
            let b = cur.bytes(l);
            if b.starts_with(b"diff --git ") {
                return;
            }
            cur.advance(l);
            if b.is_empty() {
                break;
            }
        }
    }
}

/// A unified diff without `diff --git`: `--- old` / `+++ new`, then hunks.
fn plain_file(cur: &mut Cursor<'_>, minus_line: Line) -> Result<FileDiff, ParseError> {
    let start = minus_line.start;
    let old = header_path(&cur.str_from(minus_line, 4), true);
    cur.advance(minus_line);
    let plus_line = cur
        .peek()
        .ok_or_else(|| error(cur.line_no, "missing \"+++\" line"))?;
    let new = header_path(&cur.str_from(plus_line, 4), true);
    cur.advance(plus_line);

    // Strip git-style `a/`, `b/` prefixes only when every present side carries them.
    let prefixed = old.as_ref().is_none_or(|p| p.starts_with("a/"))
        && new.as_ref().is_none_or(|p| p.starts_with("b/"))
        && (old.is_some() || new.is_some());
    let old = old.map(|p| unprefix(p, prefixed));
    let new = new.map(|p| unprefix(p, prefixed));

    let mut hunks = Vec::new();
    parse_hunks(cur, &mut hunks)?;
    let status = match (&old, &new) {
        (None, _) => FileStatus::Added,
        (_, None) => FileStatus::Deleted,
        (Some(o), Some(n)) if o != n => FileStatus::Renamed { similarity: None },
        _ => FileStatus::Modified,
    };
    Ok(FileDiff {
        old_path: old,
        new_path: new,
        status,
        old_mode: None,
        new_mode: None,
        binary: false,
        hunks,
        text: start..cur.pos,
    })
}

/// Parses consecutive hunks at the cursor. Stops at the first line that is not a hunk header;
/// a stray hunk line there means the previous header counted too few lines.
fn parse_hunks(cur: &mut Cursor<'_>, hunks: &mut Vec<Hunk>) -> Result<(), ParseError> {
    while let Some(line) = cur.peek() {
        let b = cur.bytes(line);
        if !b.starts_with(b"@@") {
            break;
        }
        let header_line = cur.line_no;
        let h = parse_hunk_header(b).map_err(|m| error(header_line, m))?;
        let (old_start, old_count, new_start, new_count) = h;
        if let Some(prev) = hunks.last() {
            let old_end = prev.old_start.saturating_add(prev.old_count);
            let new_end = prev.new_start.saturating_add(prev.new_count);
            if old_start < old_end || new_start < new_end {
                return Err(error(
                    header_line,
                    format!("hunk {} overlaps or precedes the previous hunk", snippet(b)),
                ));
            }
        }
        cur.advance(line);
        let body_start = cur.pos;
        hunk_body(cur, old_count, new_count, b, header_line)?;
        hunks.push(Hunk {
            old_start,
            old_count,
            new_start,
            new_count,
            header: line.start..line.end,
            body: body_start..cur.pos,
        });
    }
    if let Some(line) = cur.peek() {
        let b = cur.bytes(line);
        let stray = match b.first() {
            Some(b'+' | b' ') => true,
            // `-- ` (or `--`) opens a format-patch signature; `--- ` the next plain file.
            Some(b'-') => !(b == b"--" || b == b"-- " || b.starts_with(b"--- ")),
            _ => false,
        };
        if stray && let Some(last) = hunks.last() {
            let header = cur.text.get(last.header.clone()).unwrap_or_default();
            return Err(error(
                cur.line_no,
                format!(
                    "hunk line {} after the end of hunk {} (its header counts fewer lines)",
                    snippet(b),
                    snippet(header)
                ),
            ));
        }
    }
    Ok(())
}

/// Skips a hunk body by its header's counts. The hot loop: one `memchr` and one byte per line.
fn hunk_body(
    cur: &mut Cursor<'_>,
    mut old: u32,
    mut new: u32,
    header: &[u8],
    header_line: usize,
) -> Result<(), ParseError> {
    let bytes = cur.text;
    let mut pos = cur.pos;
    let mut line_no = cur.line_no;
    while old != 0 || new != 0 {
        let Some(&first) = bytes.get(pos) else {
            return Err(error(
                line_no,
                format!(
                    "input ends inside hunk {} (line {header_line}): {old} old and {new} new \
                     lines missing",
                    snippet(header)
                ),
            ));
        };
        let fits = match first {
            // An empty line is a context line whose space was stripped.
            b' ' | b'\n' => context(&mut old, &mut new),
            b'\r' if matches!(bytes.get(pos + 1), None | Some(b'\n')) => {
                context(&mut old, &mut new)
            }
            b'+' => take(&mut new),
            b'-' => take(&mut old),
            b'\\' => true, // `\ No newline at end of file`
            _ => {
                let end = memchr(b'\n', bytes.get(pos..).unwrap_or_default())
                    .map_or(bytes.len(), |i| pos + i);
                return Err(error(
                    line_no,
                    format!(
                        "expected a hunk line (' ', '+', '-' or '\\') in hunk {} (line \
                         {header_line}), found {}",
                        snippet(header),
                        snippet(bytes.get(pos..end).unwrap_or_default())
                    ),
                ));
            }
        };
        if !fits {
            let what = match (first, old) {
                (b'+', _) => "added",
                (b'-', _) => "removed",
                (_, 0) => "old-side context",
                _ => "new-side context",
            };
            return Err(error(
                line_no,
                format!(
                    "hunk {} (line {header_line}) has more {what} lines than its header counts",
                    snippet(header)
                ),
            ));
        }
        pos = next_line(bytes, pos);
        line_no += 1;
    }
    // A `\ No newline at end of file` after the last counted line belongs to the hunk.
    while bytes.get(pos) == Some(&b'\\') {
        pos = next_line(bytes, pos);
        line_no += 1;
    }
    cur.pos = pos;
    cur.line_no = line_no;
    Ok(())
}

fn next_line(bytes: &[u8], pos: usize) -> usize {
    match bytes.get(pos..).and_then(|rest| memchr(b'\n', rest)) {
        Some(i) => pos + i + 1,
        None => bytes.len(),
    }
}

fn take(n: &mut u32) -> bool {
    match n.checked_sub(1) {
        Some(m) => {
            *n = m;
            true
        }
        None => false,
    }
}

fn context(old: &mut u32, new: &mut u32) -> bool {
    if *old == 0 || *new == 0 {
        return false;
    }
    *old -= 1;
    *new -= 1;
    true
}

/// `@@ -old_start[,old_count] +new_start[,new_count] @@[ section]` → the four numbers, checked:
/// every number fits in `u32`, no range overflows, and only an empty range may start at 0.
fn parse_hunk_header(b: &[u8]) -> Result<(u32, u32, u32, u32), String> {
    if b.starts_with(b"@@@") {
        return Err(format!(
            "combined-diff hunk {} is not supported",
            snippet(b)
        ));
    }
    let malformed = || format!("hunk header {} is malformed", snippet(b));
    let rest = b.strip_prefix(b"@@ -").ok_or_else(malformed)?;
    let (old_start, old_count, rest) = hunk_range(rest).map_err(|e| e.message(b))?;
    let rest = rest.strip_prefix(b" +").ok_or_else(malformed)?;
    let (new_start, new_count, rest) = hunk_range(rest).map_err(|e| e.message(b))?;
    if !rest.starts_with(b" @@") {
        return Err(malformed());
    }
    for (start, count) in [(old_start, old_count), (new_start, new_count)] {
        if start.checked_add(count).is_none() {
            return Err(format!("hunk header {}: line range overflows", snippet(b)));
        }
        if start == 0 && count != 0 {
            return Err(format!(
                "hunk header {}: a non-empty range starts at line 0",
                snippet(b)
            ));
        }
    }
    Ok((old_start, old_count, new_start, new_count))
}

enum RangeError {
    Malformed,
    Overflow,
}

impl RangeError {
    fn message(&self, header: &[u8]) -> String {
        match self {
            RangeError::Malformed => format!("hunk header {} is malformed", snippet(header)),
            RangeError::Overflow => {
                format!(
                    "hunk header {}: a number does not fit in 32 bits",
                    snippet(header)
                )
            }
        }
    }
}

/// `start[,count]`; an omitted count is 1.
fn hunk_range(b: &[u8]) -> Result<(u32, u32, &[u8]), RangeError> {
    let (start, rest) = number(b)?;
    match rest.strip_prefix(b",") {
        Some(rest) => {
            let (count, rest) = number(rest)?;
            Ok((start, count, rest))
        }
        None => Ok((start, 1, rest)),
    }
}

fn number(b: &[u8]) -> Result<(u32, &[u8]), RangeError> {
    let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
    if digits == 0 {
        return Err(RangeError::Malformed);
    }
    let mut n: u32 = 0;
    for &d in &b[..digits] {
        n = n
            .checked_mul(10)
            .and_then(|n| n.checked_add(u32::from(d - b'0')))
            .ok_or(RangeError::Overflow)?;
    }
    Ok((n, &b[digits..]))
}

pub(super) fn from_patches<'p>(
    files: impl IntoIterator<Item = PatchFile<'p>>,
) -> Result<Diff, ParseError> {
    let mut text = String::new();
    let mut out = Vec::new();
    for pf in files {
        let in_file = |mut e: ParseError| {
            e.file = Some(pf.filename.to_owned());
            e
        };
        let filename = pf.filename.to_owned();
        let previous = pf.previous_filename.unwrap_or(pf.filename).to_owned();
        let (status, old_path, new_path) = match pf.status {
            "added" => (FileStatus::Added, None, Some(filename)),
            "removed" => (FileStatus::Deleted, Some(filename), None),
            "modified" | "changed" | "unchanged" => {
                (FileStatus::Modified, Some(filename.clone()), Some(filename))
            }
            "renamed" => (
                FileStatus::Renamed { similarity: None },
                Some(previous),
                Some(filename),
            ),
            "copied" => (
                FileStatus::Copied { similarity: None },
                Some(previous),
                Some(filename),
            ),
            other => return Err(in_file(error(1, format!("unknown file status {other:?}")))),
        };

        // A synthesized git header keeps `Diff::text()` / `file_text()` a self-contained diff.
        let start = text.len();
        let old_name = old_path
            .as_deref()
            .or(new_path.as_deref())
            .unwrap_or_default();
        let new_name = new_path
            .as_deref()
            .or(old_path.as_deref())
            .unwrap_or_default();
        let _ = writeln!(
            text,
            "diff --git {} {}",
            quote("a/", old_name),
            quote("b/", new_name)
        );
        match status {
            FileStatus::Renamed { .. } => {
                let _ = writeln!(text, "rename from {}", quote("", old_name));
                let _ = writeln!(text, "rename to {}", quote("", new_name));
            }
            FileStatus::Copied { .. } => {
                let _ = writeln!(text, "copy from {}", quote("", old_name));
                let _ = writeln!(text, "copy to {}", quote("", new_name));
            }
            _ => {}
        }
        let mut hunks = Vec::new();
        let patch = pf.patch.filter(|p| !p.is_empty());
        // `---`/`+++` also for an added or removed file without a patch: `/dev/null` is
        // what tells a reader (and a re-parse) that it was added or removed.
        if patch.is_some() || old_path.is_none() || new_path.is_none() {
            let minus = old_path
                .as_deref()
                .map_or("/dev/null".into(), |p| quote("a/", p));
            let plus = new_path
                .as_deref()
                .map_or("/dev/null".into(), |p| quote("b/", p));
            let _ = writeln!(text, "--- {minus}\n+++ {plus}");
        }
        if let Some(patch) = patch {
            let body = text.len();
            text.push_str(patch);
            if !patch.ends_with('\n') {
                text.push('\n');
            }
            let mut cur = Cursor::new(text.as_bytes(), body);
            parse_hunks(&mut cur, &mut hunks).map_err(in_file)?;
            // Blank lines after the last hunk are harmless; anything else is not a hunk.
            while let Some(line) = cur.peek().filter(|l| cur.bytes(*l).is_empty()) {
                cur.advance(line);
            }
            if let Some(line) = cur.peek() {
                let message = format!(
                    "expected a hunk header \"@@ -…\", found {}",
                    snippet(cur.bytes(line))
                );
                return Err(in_file(error(cur.line_no, message)));
            }
        }
        out.push(FileDiff {
            old_path,
            new_path,
            status,
            old_mode: None,
            new_mode: None,
            binary: false,
            hunks,
            text: start..text.len(),
        });
    }
    Ok(Diff {
        text: Text::Utf8(text.into()),
        files: out,
    })
}

/// `prefix` + `path`, quoted the way git quotes paths (C-style, octal bytes for non-ASCII)
/// when the path needs it.
pub(super) fn quote(prefix: &str, path: &str) -> String {
    let needs = path
        .bytes()
        .any(|c| !(0x20..0x7f).contains(&c) || c == b'"' || c == b'\\');
    if !needs {
        return format!("{prefix}{path}");
    }
    let mut out = String::with_capacity(path.len() + prefix.len() + 8);
    out.push('"');
    out.push_str(prefix);
    for c in path.bytes() {
        match c {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            0x20..0x7f => out.push(char::from(c)),
            _ => {
                let _ = write!(out, "\\{c:03o}");
            }
        }
    }
    out.push('"');
    out
}

/// The hunk header's section text (after the second `@@`), e.g. a function name.
pub(super) fn section(header: &str) -> &str {
    header
        .get(2..)
        .and_then(|h| h.find("@@").and_then(|i| h.get(i + 2..)))
        .map_or("", |s| s.strip_prefix(' ').unwrap_or(s))
}
