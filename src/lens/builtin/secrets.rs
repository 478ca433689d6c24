//! The secret pre-pass of the builtin lens: where the secret keywords are in a diff's text,
//! searched once for the whole review, and the secrets they lead to, remembered so that every
//! output of the review masks them.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::diff::Diff;
use crate::redact;

/// Where each file's text holds a secret keyword ([`redact::keyword_starts`]), by the file's
/// index in the diff: found once by [`remember_secrets`], which searches every file's text,
/// and reused by [`review_with`], which would otherwise search the added lines again.
#[derive(Debug, Default)]
pub struct SecretKeywords(pub(super) Vec<Vec<usize>>);

/// A file's text is searched for keywords in pieces of about this many bytes, each ending
/// after a line break, so that one large file is shared over the cores like many small ones:
/// on the corpus's 1.5 MB diff one file held half the text and most of the `=` signs, and
/// kept the secret pass on one core (docs/benchmarks.md).
const KEYWORD_PIECE_BYTES: usize = 64 * 1024;

/// A search for secret keywords in the whole text of a diff, begun before the diff is parsed:
/// it needs only the bytes, so a second core searches while the first parses. The pieces are
/// taken in turn, so whichever thread is free takes the next, and the caller of
/// [`KeywordSearch::finish`] searches what the other has not taken: when no core is free for
/// the helper, the search costs what it costs on one thread, no more.
pub struct KeywordSearch {
    text: &'static [u8],
    pieces: Arc<Pieces>,
    helper: Option<std::thread::JoinHandle<Found>>,
}

/// Pieces searched: each one's index and its keyword starts in the whole text.
type Found = Vec<(usize, Vec<usize>)>;

/// The text's pieces ([`KEYWORD_PIECE_BYTES`], each ending after a line break) and the next
/// one to take.
struct Pieces {
    ranges: Vec<std::ops::Range<usize>>,
    next: AtomicUsize,
}

impl Pieces {
    /// Searches pieces until none is left: each piece's index and its keyword starts in `text`.
    fn take_all(&self, text: &[u8]) -> Found {
        let mut found = Vec::new();
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(r) = self.ranges.get(i) else {
                return found;
            };
            found.push((i, starts_in(text, r.clone())));
        }
    }
}

/// Starts searching `text`, the bytes a diff is about to be parsed from, for secret keywords:
/// on a thread of its own when the text is large enough for a second core to pay
/// ([`crate::par::PARALLEL_FROM_BYTES`]), otherwise when [`KeywordSearch::finish`] is called.
pub fn search_keywords(text: &'static [u8]) -> KeywordSearch {
    let pieces = Arc::new(Pieces {
        ranges: crate::par::line_pieces(text, KEYWORD_PIECE_BYTES).collect(),
        next: AtomicUsize::new(0),
    });
    let helper =
        (text.len() >= crate::par::PARALLEL_FROM_BYTES && crate::par::threads() > 1).then(|| {
            let pieces = Arc::clone(&pieces);
            std::thread::spawn(move || pieces.take_all(text))
        });
    KeywordSearch {
        text,
        pieces,
        helper,
    }
}

impl KeywordSearch {
    /// Whether this is the search of `diff`'s own bytes.
    fn is_of(&self, diff: &Diff) -> bool {
        let bytes = diff.bytes();
        std::ptr::eq(bytes.as_ptr(), self.text.as_ptr()) && bytes.len() == self.text.len()
    }

    /// Every keyword start in the text, in order, once every piece is searched.
    fn finish(self) -> Vec<usize> {
        let mut found = self.pieces.take_all(self.text);
        if let Some(helper) = self.helper {
            match helper.join() {
                Ok(theirs) => found.extend(theirs),
                // A panicking search is a bug; re-raise it on the calling thread.
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        found.sort_unstable_by_key(|(i, _)| *i);
        found.into_iter().flat_map(|(_, starts)| starts).collect()
    }
}

/// Remembers every secret this lens would detect anywhere in `diff` (any side, across lines:
/// private-key bodies, an AWS secret key next to its key ID), so that every output of the
/// review under way ([`redact::KnownSecrets`]) masks those values wherever they appear —
/// quoted diff lines, a lens's echo, logs, errors.
/// Returns where the keywords are, for [`review_with`]. `search`, the search of the bytes
/// `diff` was parsed from, gives them when it is one ([`search_keywords`]); they are searched
/// for here otherwise.
pub fn remember_secrets(diff: &Diff, search: Option<KeywordSearch>) -> SecretKeywords {
    let texts: Vec<(usize, &[u8])> = diff
        .files()
        .iter()
        .enumerate()
        .filter(|(_, f)| !f.binary)
        .map(|(i, f)| (i, diff.file_bytes(f)))
        .collect();
    let keywords = match search.filter(|s| s.is_of(diff)) {
        Some(search) => by_file(diff, &search.finish()),
        None => search_files(diff, &texts),
    };
    let mut values = Vec::new();
    for (i, text) in texts {
        let lockfile = is_lockfile(diff.files()[i].path());
        values.extend(
            redact::secret_values_in(text, &keywords[i])
                .into_iter()
                .filter(|(rule, _)| !(lockfile && *rule == redact::GENERIC)),
        );
    }
    redact::remember(values.iter().map(|(rule, value)| (*rule, value.as_str())));
    SecretKeywords(keywords)
}

/// `starts`, keyword starts in the whole text of `diff` in order, as each file's own: the
/// starts inside the file's text, from its first byte. Keywords hold no line break and a
/// file's text is whole lines, so these are the starts a search of the file's text finds.
fn by_file(diff: &Diff, starts: &[usize]) -> Vec<Vec<usize>> {
    diff.files()
        .iter()
        .map(|f| {
            if f.binary {
                return Vec::new();
            }
            let (from, to) = (f.text.start, f.text.end);
            let first = starts.partition_point(|&at| at < from);
            let end = starts.partition_point(|&at| at < to);
            starts[first..end].iter().map(|at| at - from).collect()
        })
        .collect()
}

/// The keyword starts of each file's text in `texts`, by the file's index in `diff`.
fn search_files(diff: &Diff, texts: &[(usize, &[u8])]) -> Vec<Vec<usize>> {
    // Keywords hold no line break, so a piece's keywords are the whole text's in its lines.
    let pieces: Vec<(usize, &[u8], std::ops::Range<usize>)> = texts
        .iter()
        .flat_map(|&(i, text)| {
            crate::par::line_pieces(text, KEYWORD_PIECE_BYTES).map(move |r| (i, text, r))
        })
        .collect();
    let found = crate::par::map_shares(
        &pieces,
        |p| p.2.len(),
        |share| {
            share
                .iter()
                .map(|(i, text, r)| (*i, starts_in(text, r.clone())))
                .collect()
        },
    );
    let mut keywords = vec![Vec::new(); diff.files().len()];
    // In the order of the pieces: each file's in the order of its text.
    for (i, starts) in found {
        keywords[i].extend(starts);
    }
    keywords
}

/// The keyword starts in the lines `piece` of `text`, as places in `text`.
fn starts_in(text: &[u8], piece: std::ops::Range<usize>) -> Vec<usize> {
    let mut starts = redact::keyword_starts(&text[piece.clone()]);
    starts.iter_mut().for_each(|at| *at += piece.start);
    starts
}

/// Which lines of a file's text hold a secret keyword: one of `keywords` (the
/// [`redact::keyword_starts`] of the text) lies in them. Asked of the lines in the order of
/// the text, as a hunk gives them, it walks the keywords once.
pub(super) struct KeywordLines<'k> {
    /// Where the text starts: its lines are slices of the same text, the diff's.
    base: usize,
    len: usize,
    keywords: &'k [usize],
    next: usize,
}

impl<'k> KeywordLines<'k> {
    pub(super) fn new(file_text: &[u8], keywords: &'k [usize]) -> Self {
        KeywordLines {
            base: file_text.as_ptr() as usize,
            len: file_text.len(),
            keywords,
            next: 0,
        }
    }

    /// Whether `line` holds a keyword. A line that is not inside the text counts as holding
    /// one (it is scanned in full).
    pub(super) fn holds(&mut self, line: &[u8]) -> bool {
        let start = (line.as_ptr() as usize).wrapping_sub(self.base);
        if start > self.len {
            return true;
        }
        while self.keywords.get(self.next).is_some_and(|&at| at < start) {
            self.next += 1;
        }
        self.keywords
            .get(self.next)
            .is_some_and(|&at| at < start + line.len())
    }
}

/// A lockfile's hashes and URLs look like generic secrets and are not: the generic rule skips it.
pub(super) fn is_lockfile(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    file.ends_with(".lock")
        || matches!(
            file,
            "package-lock.json" | "npm-shrinkwrap.json" | "pnpm-lock.yaml" | "go.sum"
        )
}
