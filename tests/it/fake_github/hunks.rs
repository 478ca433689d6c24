//! A small, independent parser of a file's `patch` (the files endpoint's hunks), used to decide
//! where GitHub would accept a review comment. Kept apart from reviewbot's own diff parser on
//! purpose: the fake must not share its bugs.

/// Which side of the diff a comment's line is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Side {
    /// The old file: deleted and context lines.
    Left,
    /// The new file: added and context lines.
    Right,
}

impl Side {
    /// `LEFT` / `RIGHT` as the API spells them.
    pub fn parse(s: &str) -> Option<Side> {
        match s {
            "LEFT" => Some(Side::Left),
            "RIGHT" => Some(Side::Right),
            _ => None,
        }
    }

    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Left => "LEFT",
            Side::Right => "RIGHT",
        }
    }
}

/// One `@@ -a,b +c,d @@` hunk and where it sits in the patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Hunk {
    pub old_start: u64,
    pub old_len: u64,
    pub new_start: u64,
    pub new_len: u64,
    /// Index of the header among the patch's lines.
    pub header: usize,
    /// Index one past the hunk's last line.
    pub end: usize,
}

impl Hunk {
    /// Whether `line` lies in this hunk's range on `side`.
    pub fn contains(&self, side: Side, line: u64) -> bool {
        let (start, len) = match side {
            Side::Left => (self.old_start, self.old_len),
            Side::Right => (self.new_start, self.new_len),
        };
        len > 0 && line >= start && line < start + len
    }
}

/// The patch's lines (a trailing newline does not make an empty last line).
pub(super) fn lines(patch: &str) -> Vec<&str> {
    let mut v: Vec<&str> = patch.split('\n').collect();
    if v.last() == Some(&"") {
        v.pop();
    }
    v
}

/// Parses `@@ -a[,b] +c[,d] @@…`; an omitted count means 1.
pub(super) fn parse_header(line: &str) -> Option<(u64, u64, u64, u64)> {
    let rest = line.strip_prefix("@@ -")?;
    let (ranges, _) = rest.split_once(" @@")?;
    let (old, new) = ranges.split_once(" +")?;
    let range = |r: &str| -> Option<(u64, u64)> {
        match r.split_once(',') {
            Some((s, l)) => Some((s.parse().ok()?, l.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let (a, b) = range(old)?;
    let (c, d) = range(new)?;
    Some((a, b, c, d))
}

/// Every hunk of a patch, in order.
pub(super) fn parse(patch: &str) -> Vec<Hunk> {
    let lines = lines(patch);
    let mut hunks: Vec<Hunk> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if let Some((old_start, old_len, new_start, new_len)) = parse_header(line) {
            if let Some(prev) = hunks.last_mut() {
                prev.end = i;
            }
            hunks.push(Hunk {
                old_start,
                old_len,
                new_start,
                new_len,
                header: i,
                end: lines.len(),
            });
        }
    }
    hunks
}

/// Where a line of a hunk sits: its legacy `position` (lines below the first header, headers of
/// later hunks counted) and the `diff_hunk` GitHub shows (header through that line).
pub(super) fn locate(patch: &str, hunk: &Hunk, side: Side, line: u64) -> (u64, String) {
    let lines = lines(patch);
    let (mut old, mut new) = (hunk.old_start, hunk.new_start);
    let mut at = hunk.end.saturating_sub(1);
    for (i, text) in lines
        .iter()
        .enumerate()
        .take(hunk.end)
        .skip(hunk.header + 1)
    {
        let (is_old, is_new) = match text.as_bytes().first() {
            Some(b'+') => (false, true),
            Some(b'-') => (true, false),
            Some(b'\\') => (false, false),
            _ => (true, true),
        };
        let hit = match side {
            Side::Left => is_old && old == line,
            Side::Right => is_new && new == line,
        };
        if hit {
            at = i;
            break;
        }
        old += u64::from(is_old);
        new += u64::from(is_new);
    }
    let first_header = parse(patch).first().map_or(0, |h| h.header);
    let position = (at - first_header) as u64;
    (position, lines[hunk.header..=at].join("\n"))
}

/// Added and deleted line counts of a patch.
pub(super) fn stats(patch: &str) -> (u64, u64) {
    let mut added = 0;
    let mut deleted = 0;
    for line in lines(patch) {
        if parse_header(line).is_some() {
            continue;
        }
        match line.as_bytes().first() {
            Some(b'+') => added += 1,
            Some(b'-') => deleted += 1,
            _ => {}
        }
    }
    (added, deleted)
}
