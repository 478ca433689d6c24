//! The findings made of lens responses: placed on the diff, fingerprinted.

use std::collections::HashMap;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::diff::{ByteLine, Diff, FileDiff, Hunk, Side};
use crate::ids::LensName;
use crate::lens::contract::{Confidence, RawFinding, Severity};
use crate::sanitize::sanitize_line;

/// A finding after parsing, validation and merging: what the output shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub path: String,
    pub line: u32,
    pub start_line: Option<u32>,
    pub side: Side,
    pub severity: Severity,
    pub confidence: Confidence,
    pub title: String,
    pub body: String,
    /// Every lens that reported this finding.
    pub lenses: Vec<LensName>,
    /// Whether the finding's lines are inside a hunk, so it can be a line comment.
    pub in_diff: bool,
    pub fingerprint: String,
    /// The replacement for its lines, offered as a committable suggestion (only when checked
    /// safe: `review::anchor::suggestion_problem`).
    pub suggestion: Option<String>,
    /// What a lens of another vendor made of it (`review::verify`), when one checked it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verified: Option<Checked>,
}

/// A cross-examination's verdict on a finding: what, by which lens, and what it read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Checked {
    pub verdict: crate::lens::verdicts::VerdictKind,
    pub by: LensName,
    pub evidence: String,
}

/// The fingerprints of the lines already placed on, by file, side and first and last line:
/// findings of one review on the same lines (two checks firing on one minified line of
/// 140 KB) hash those lines once.
#[derive(Debug, Default)]
pub struct Fingerprints(HashMap<(String, Side, u32, u32), String>);

impl Finding {
    /// Places a lens's finding on the diff: checks its anchor against the hunks (a finding
    /// outside them is kept, marked off-diff) and computes its fingerprint.
    pub fn locate(raw: RawFinding, lens: &LensName, diff: &Diff) -> Finding {
        Self::locate_among(raw, lens, diff, &mut Fingerprints::default())
    }

    /// [`Finding::locate`], taking the fingerprint from `known` when lines were hashed before.
    pub fn locate_among(
        raw: RawFinding,
        lens: &LensName,
        diff: &Diff,
        known: &mut Fingerprints,
    ) -> Finding {
        let file = find_file(diff, &raw.path);
        let path = file.map_or(raw.path.clone(), |f| f.path().to_owned());
        let mut start_line = raw.start_line.filter(|&s| s != raw.line);
        let mut line = raw.line;
        if let Some(s) = start_line
            && s > line
        {
            start_line = Some(line);
            line = s;
        }
        let side = raw.side;
        let hunk = file.and_then(|f| f.hunk_index(side, line).map(|i| &f.hunks[i]));
        let in_diff = hunk.is_some();
        // GitHub wants a range inside one hunk: clamp the start to the hunk of the last line.
        if let (Some(h), Some(s)) = (hunk, start_line) {
            let clamped = s.max(h.range(side).start);
            start_line = (clamped < line).then_some(clamped);
        }
        let fingerprint = match hunk {
            // The range lies in one hunk (clamped above): its lines in one walk of the hunk,
            // where looking each line up walked the hunk again for every line of the range.
            Some(h) => {
                let range = start_line.unwrap_or(line)..=line;
                known
                    .0
                    .entry((path.clone(), side, *range.start(), line))
                    .or_insert_with(|| lines_fingerprint(diff, h, &path, side, range))
                    .clone()
            }
            // Off the diff there is no text to hash; the place is the best we have.
            _ => fingerprint(&path, side, std::iter::once(format!("@{line}").as_str())),
        };
        Finding {
            path,
            line,
            start_line,
            side,
            severity: raw.severity,
            confidence: raw.confidence,
            title: raw.title,
            body: raw.body,
            lenses: vec![lens.clone()],
            in_diff,
            fingerprint,
            // A `\r\n` break (a CRLF file read through a tool) is the block's own `\n`: the
            // diff's lines carry no `\r` either. A `\r` anywhere else stays, and keeps the
            // suggestion from being posted.
            suggestion: raw.suggestion.map(|s| s.replace("\r\n", "\n")),
            verified: None,
        }
    }
}

/// The fingerprint of the lines `range` of hunk `h` on `side`.
fn lines_fingerprint(
    diff: &Diff,
    h: &Hunk,
    path: &str,
    side: Side,
    range: std::ops::RangeInclusive<u32>,
) -> String {
    let number = |l: &ByteLine<'_>| match side {
        Side::Left => l.old,
        Side::Right => l.new,
    };
    // Numbers rise through a hunk: the walk ends after the range's last line (a long hunk, a
    // whole new file, is not walked to its end for each finding). Its bytes: only the lines
    // hashed are read as text (a file in a legacy encoding is not decoded whole for them).
    let lines: Vec<_> = diff
        .hunk_byte_lines(h)
        .take_while(|l| number(l).is_none_or(|n| n <= *range.end()))
        .filter(|l| number(l).is_some_and(|n| range.contains(&n)))
        .map(|l| diff.as_text(l.text))
        .collect();
    fingerprint(path, side, lines.iter().map(|l| l.as_ref()))
}

/// The diff file a lens means by `path`, forgiving `a/`, `b/` and `./` prefixes, and citing a
/// name as the prompt showed it (sanitized, `plan::numbered_file`).
pub(crate) fn find_file<'d>(diff: &'d Diff, path: &str) -> Option<&'d FileDiff> {
    let path = path.trim();
    let exact = |path: &str| {
        diff.file(path).or_else(|| {
            diff.files()
                .iter()
                .find(|f| sanitize_line(f.path()) == path)
        })
    };
    exact(path).or_else(|| {
        ["b/", "a/", "./", "/"]
            .iter()
            .find_map(|p| path.strip_prefix(p).and_then(exact))
    })
}

/// A stable fingerprint from the file, the side and the normalised text of the flagged lines:
/// a reworded finding on the same lines, or the same lines moved by an edit elsewhere in the
/// file, keep it; a change to the flagged lines changes it.
pub fn fingerprint<'a>(path: &str, side: Side, lines: impl Iterator<Item = &'a str>) -> String {
    let mut h = Sha256::new();
    h.update(path.as_bytes());
    h.update([0, side as u8]);
    // The words go to the hash a buffer at a time, not one call each: a minified line holds
    // tens of thousands of them. The bytes hashed are the same.
    let mut buf = Vec::new();
    for line in lines {
        push_words(line, &mut buf);
        buf.push(b'\n');
        if buf.len() >= 64 * 1024 {
            h.update(&buf);
            buf.clear();
        }
    }
    h.update(&buf);
    hex16(&h.finalize())
}

/// Appends each word of `line`, as `split_whitespace` cuts it, and a space after each: a run
/// of words is copied at once, and only a byte that is not ASCII is decoded (the standard
/// splitter decodes every character, most of the placing of a finding on a long line).
fn push_words(line: &str, out: &mut Vec<u8>) {
    let bytes = line.as_bytes();
    let mut word = None;
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let (blank, len) = match b {
            // `char::is_whitespace` in ASCII: tab, line feed, vertical tab, form feed, return, space.
            0..0x80 => (matches!(b, b'\t'..=b'\r' | b' '), 1),
            _ => line[i..]
                .chars()
                .next()
                .map_or((false, 1), |c| (c.is_whitespace(), c.len_utf8())),
        };
        match (blank, word) {
            (true, Some(start)) => {
                out.extend_from_slice(&bytes[start..i]);
                out.push(b' ');
                word = None;
            }
            (false, None) => word = Some(i),
            _ => {}
        }
        i += len;
    }
    if let Some(start) = word {
        out.extend_from_slice(&bytes[start..]);
        out.push(b' ');
    }
}

/// Derives a distinct fingerprint for a second finding on the same lines.
pub fn disambiguate(fingerprint: &str, title: &str) -> String {
    let mut h = Sha256::new();
    h.update(fingerprint.as_bytes());
    for word in title.split_whitespace() {
        h.update(word.to_lowercase().as_bytes());
        h.update(b" ");
    }
    hex16(&h.finalize())
}

fn hex16(digest: &[u8]) -> String {
    use std::fmt::Write;
    digest[..8]
        .iter()
        .fold(String::with_capacity(16), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "\
diff --git a/src/db.rs b/src/db.rs
--- a/src/db.rs
+++ b/src/db.rs
@@ -1,5 +1,6 @@
 fn find(pool: &Pool, name: &str) {
-    pool.query(\"SELECT * FROM u WHERE n = $1\", &[&name]);
+    let sql = format!(\"SELECT * FROM u WHERE n = '{name}'\");
+    pool.query(&sql, &[]);
 }
 
 fn other() {}
@@ -20,2 +21,2 @@ fn tail() {
 a
-b
+c
";

    fn raw(path: &str, line: u32, start: Option<u32>, title: &str, body: &str) -> RawFinding {
        RawFinding {
            path: path.into(),
            line,
            start_line: start,
            side: Side::Right,
            severity: Severity::Blocking,
            confidence: Confidence::High,
            title: title.into(),
            body: body.into(),
            quote: None,
            suggestion: None,
        }
    }

    proptest::proptest! {
        #[test]
        fn words_are_cut_as_split_whitespace_cuts_them(line in "([a-z]{0,3}[ \t\r\u{b}\u{c}\u{85}\u{a0}\u{2003}\u{3000}\u{200b}é€]{0,2}){0,12}") {
            let mut ours = Vec::new();
            super::push_words(&line, &mut ours);
            let std: String = line.split_whitespace().map(|w| format!("{w} ")).collect();
            proptest::prop_assert_eq!(String::from_utf8(ours).unwrap(), std);
        }
    }

    fn locate(r: RawFinding) -> Finding {
        Finding::locate(r, &LensName::new("claude"), &Diff::parse(DIFF).unwrap())
    }

    #[test]
    fn a_reworded_finding_on_the_same_lines_keeps_its_fingerprint() {
        let a = locate(raw(
            "src/db.rs",
            3,
            Some(2),
            "SQL injection",
            "Bind the name.",
        ));
        let b = locate(raw(
            "src/db.rs",
            3,
            Some(2),
            "User input concatenated into a query",
            "Untrusted `name` reaches the database; use a parameter.",
        ));
        assert_eq!(a.fingerprint, b.fingerprint);
        assert_eq!(a.fingerprint.len(), 16);
        // Other lines, or the same lines in another file, are another finding.
        assert_ne!(
            a.fingerprint,
            locate(raw("src/db.rs", 3, None, "SQL injection", "x")).fingerprint
        );
    }

    #[test]
    fn lines_hashed_before_give_the_fingerprint_they_gave_then() {
        let diff = Diff::parse(DIFF).unwrap();
        let lens = LensName::new("claude");
        let mut known = Fingerprints::default();
        let placed: Vec<Finding> = [(3, Some(2)), (3, None), (3, Some(2)), (22, None), (3, None)]
            .into_iter()
            .map(|(line, start)| {
                Finding::locate_among(
                    raw("src/db.rs", line, start, "t", "b"),
                    &lens,
                    &diff,
                    &mut known,
                )
            })
            .collect();
        for f in &placed {
            let alone = Finding::locate(
                raw("src/db.rs", f.line, f.start_line, "t", "b"),
                &lens,
                &diff,
            );
            assert_eq!(f.fingerprint, alone.fingerprint, "line {}", f.line);
        }
        assert_eq!(placed[0].fingerprint, placed[2].fingerprint);
        assert_ne!(placed[0].fingerprint, placed[1].fingerprint);
        assert_ne!(placed[1].fingerprint, placed[3].fingerprint);
        // Three ranges were hashed, each once.
        assert_eq!(known.0.len(), 3);
    }

    #[test]
    fn the_fingerprint_ignores_whitespace_and_follows_moved_lines() {
        let a = locate(raw("src/db.rs", 3, None, "t", "b"));
        let spaced = DIFF.replace(
            "    pool.query(&sql, &[]);",
            "\tpool.query(&sql,   &[]);   ",
        );
        let b = Finding::locate(
            raw("src/db.rs", 3, None, "t", "b"),
            &LensName::new("x"),
            &Diff::parse(spaced).unwrap(),
        );
        assert_eq!(a.fingerprint, b.fingerprint);
        // The same line two lines further down (an edit above it) keeps its fingerprint.
        let moved = DIFF
            .replace("@@ -1,5 +1,6 @@", "@@ -1,5 +1,8 @@")
            .replace(
                " fn find(pool: &Pool, name: &str) {\n",
                " fn find(pool: &Pool, name: &str) {\n+    // one\n+    // two\n",
            )
            .replace("@@ -20,2 +21,2 @@", "@@ -20,2 +23,2 @@");
        let c = Finding::locate(
            raw("src/db.rs", 5, None, "t", "b"),
            &LensName::new("x"),
            &Diff::parse(moved).unwrap(),
        );
        assert_eq!(a.fingerprint, c.fingerprint);
    }

    #[test]
    fn anchors_are_checked_against_the_hunks() {
        let f = locate(raw("b/src/db.rs", 3, Some(2), "t", "b"));
        assert_eq!(
            (f.path.as_str(), f.in_diff, f.start_line, f.line),
            ("src/db.rs", true, Some(2), 3)
        );
        // Off every hunk: kept, marked off-diff.
        let f = locate(raw("src/db.rs", 12, None, "t", "b"));
        assert!(!f.in_diff);
        assert_eq!(f.line, 12);
        let f = locate(raw("src/unknown.rs", 1, None, "t", "b"));
        assert!(!f.in_diff);
        // A range reaching outside the hunk of its last line is clamped to that hunk.
        let f = locate(raw("src/db.rs", 22, Some(3), "t", "b"));
        assert_eq!((f.in_diff, f.start_line, f.line), (true, Some(21), 22));
        // A reversed range is put in order; a one-line range is a single line.
        let f = locate(raw("src/db.rs", 2, Some(3), "t", "b"));
        assert_eq!((f.start_line, f.line), (Some(2), 3));
        let f = locate(raw("src/db.rs", 3, Some(3), "t", "b"));
        assert_eq!(f.start_line, None);
        // A removed line on the old side.
        let mut r = raw("src/db.rs", 2, None, "t", "b");
        r.side = Side::Left;
        assert!(locate(r).in_diff);
    }

    #[test]
    fn a_finding_citing_a_file_by_its_shown_name_lands_on_the_file() {
        let name = "src/d\u{200B}b.rs";
        let diff = Diff::parse(DIFF.replace("src/db.rs", name)).unwrap();
        let f = Finding::locate(
            raw("b/src/db.rs", 3, None, "t", "b"),
            &LensName::new("x"),
            &diff,
        );
        assert_eq!((f.path.as_str(), f.in_diff), (name, true));
    }
}
