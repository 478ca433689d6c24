//! Counting o200k tokens of diff text, exactly as the tokenizer's own `count` does, for less.
//!
//! The tokenizer splits text into pieces with its pattern and byte-pair encodes each piece.
//! Code repeats its pieces heavily (identifiers, keywords, punctuation, indentation), so a
//! [`Counter`] encodes each distinct piece once and remembers its count. And code is mostly
//! ASCII, where the pattern's split is simple enough to do byte by byte ([`piece_ranges`]); the
//! pattern itself (a regex) splits only around other characters. The property tests hold both
//! to the tokenizer's own results.

use std::hash::BuildHasher;
use std::ops::Range;

use hashbrown::{DefaultHashBuilder, HashMap, HashTable};

use super::tokenizer;

/// Longer pieces are rare and seldom repeat (a long literal, a base64 blob): encoded every time,
/// so the cache stays small.
const CACHED_PIECE_BYTES: usize = 48;

/// Pieces up to this long (nearly all) are cached packed into one `u128`: the bytes, then in
/// the top byte the length and the token count (at most one token a byte), 4 bits each.
/// Hashing and comparing one is far cheaper than a string's, and the table is half the size.
const PACKED_PIECE_BYTES: usize = 15;
const PACKED_COUNT: u128 = 0xf0 << 120;

/// Token counts of the pieces seen so far. One per thread: it is cheap to start, and sharing
/// one would cost more in locking than it saves.
pub(super) struct Counter {
    bpe: &'static bpe_openai::byte_pair_encoding::BytePairEncoding,
    hasher: DefaultHashBuilder,
    packed: HashTable<u128>,
    longer: HashMap<Box<str>, usize>,
}

impl Counter {
    pub(super) fn new() -> Self {
        Self {
            bpe: &tokenizer().bpe,
            hasher: DefaultHashBuilder::default(),
            packed: HashTable::new(),
            longer: HashMap::new(),
        }
    }

    /// The token count of `text`.
    pub(super) fn count(&mut self, text: &str) -> usize {
        self.count_up_to(text, usize::MAX - 1)
    }

    /// The token count of `text`, or `limit + 1` once it passes `limit` (a file that cannot fit
    /// needs no exact count).
    pub(super) fn count_up_to(&mut self, text: &str, limit: usize) -> usize {
        let over = limit.saturating_add(1);
        let text = tokenizer().normalize(text);
        let text = text.as_str();
        let mut total = 0;
        for piece in piece_ranges(text) {
            total += self.piece(text, piece, over - total);
            if total >= over {
                return over;
            }
        }
        total
    }

    /// The tokens of the piece `text[range]`, or more than `limit` once it passes `limit`.
    fn piece(&mut self, text: &str, range: Range<usize>, limit: usize) -> usize {
        let bpe = self.bpe;
        let piece = &text[range.clone()];
        match piece.len() {
            // Every byte is a token.
            0 | 1 => piece.len(),
            n if n <= PACKED_PIECE_BYTES => {
                let key = packed_key(text.as_bytes(), range.start, n);
                let hash = self.hasher.hash_one(key);
                let entry = self
                    .packed
                    .entry(
                        hash,
                        |&e| e & !PACKED_COUNT == key,
                        |&e| self.hasher.hash_one(e & !PACKED_COUNT),
                    )
                    .or_insert_with(|| key | (bpe.count(piece.as_bytes()) as u128) << 124);
                (*entry.get() >> 124) as usize
            }
            n if n <= CACHED_PIECE_BYTES => {
                if let Some(&n) = self.longer.get(piece) {
                    return n;
                }
                let n = bpe.count(piece.as_bytes());
                self.longer.insert(piece.into(), n);
                n
            }
            _ => bpe
                .count_till_limit(piece.as_bytes(), limit)
                .unwrap_or(limit.saturating_add(1)),
        }
    }
}

/// The `n` (at most 15) bytes from `start` and their length, as a table key. Read as one
/// 16-byte load from the text where it is long enough (the bytes past the piece masked off).
fn packed_key(text: &[u8], start: usize, n: usize) -> u128 {
    let bytes = match text
        .get(start..start + 16)
        .and_then(|w| <[u8; 16]>::try_from(w).ok())
    {
        Some(window) => u128::from_le_bytes(window),
        None => {
            let mut window = [0u8; 16];
            window[..n].copy_from_slice(&text[start..start + n]);
            u128::from_le_bytes(window)
        }
    };
    (bytes & ((1u128 << (8 * n)) - 1)) | (n as u128) << 120
}

/// The tokenizer's pieces of `text`, in order (see [`piece_ranges`]).
#[cfg(test)]
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    piece_ranges(text).map(|r| &text[r])
}

/// Where the tokenizer's pieces of `text` lie, in order: split here while the bytes that decide
/// a piece are ASCII, else by the tokenizer's pattern. The pattern's split at a piece boundary
/// depends only on the text from there on, so the two can take turns at any boundary.
fn piece_ranges(text: &str) -> impl Iterator<Item = Range<usize>> {
    let mut pos = 0;
    std::iter::from_fn(move || {
        if pos >= text.len() {
            return None;
        }
        let end = match ascii_piece_end(text.as_bytes(), pos) {
            Some(end) => end,
            None => pos + tokenizer().split(&text[pos..]).next().map_or(0, str::len),
        };
        if end <= pos {
            // The pattern matches every non-empty text; never loop on a surprise.
            return None;
        }
        let piece = pos..end;
        pos = end;
        Some(piece)
    })
}

// Byte classes for the o200k pattern on ASCII. `SPACE` is the pattern's `\s` (Unicode
// White_Space: tab, LF, VT, FF, CR, space); `NEWLINE` is CR and LF. A byte with no class bit
// is punctuation (`[^\s\p{L}\p{N}]`, ASCII controls included).
const UPPER: u8 = 1;
const LOWER: u8 = 2;
const DIGIT: u8 = 4;
const SPACE: u8 = 8;
const NEWLINE: u8 = 16;
/// Past the end of the text.
const END: u8 = 32;
const LETTER: u8 = UPPER | LOWER;
const NOT_PUNCT: u8 = LETTER | DIGIT | SPACE | END;

const CLASSES: [u8; 128] = {
    let mut t = [0u8; 128];
    let mut c = 0;
    while c < 128 {
        let b = c as u8;
        t[c] = if b.is_ascii_uppercase() {
            UPPER
        } else if b.is_ascii_lowercase() {
            LOWER
        } else if b.is_ascii_digit() {
            DIGIT
        } else if b == b'\r' || b == b'\n' {
            SPACE | NEWLINE
        } else if matches!(b, b'\t' | 0x0b | 0x0c | b' ') {
            SPACE
        } else {
            0
        };
        c += 1;
    }
    t
};

/// The class of byte `i`, or `None` if it is not ASCII (its class would need its whole
/// character: a letter, a digit, whitespace or punctuation).
fn class(b: &[u8], i: usize) -> Option<u8> {
    match b.get(i) {
        None => Some(END),
        Some(&c) if c.is_ascii() => Some(CLASSES[usize::from(c)]),
        Some(_) => None,
    }
}

/// Where the piece starting at `p` ends under the o200k pattern, decided from ASCII bytes
/// alone; `None` as soon as a byte it must look at is not ASCII. The pattern's alternatives,
/// tried in its order:
///
/// 1. letters, after at most one character that is no letter, digit or newline: capitals
///    then small letters, else capitals alone, then an optional `'s` `'t` `'re` `'ve` `'m`
///    `'ll` `'d` (any case);
/// 2. one to three digits;
/// 3. punctuation after at most one space, then any CR, LF and `/`;
/// 4. whitespace: up to its last newline, else all of it at the end of the text, else all
///    but its last character, else (one character) that character.
fn ascii_piece_end(b: &[u8], p: usize) -> Option<usize> {
    let first = class(b, p)?;
    let letters_from = if first & LETTER != 0 {
        Some(p)
    } else if first & (DIGIT | NEWLINE) == 0 {
        Some(p + 1)
    } else {
        None
    };
    if let Some(q) = letters_from {
        let mut end = q;
        while class(b, end)? & UPPER != 0 {
            end += 1;
        }
        while class(b, end)? & LOWER != 0 {
            end += 1;
        }
        if end > q {
            return contraction_end(b, end);
        }
    }
    if first & DIGIT != 0 {
        let mut end = p + 1;
        while end < p + 3 && class(b, end)? & DIGIT != 0 {
            end += 1;
        }
        return Some(end);
    }
    let q = if b[p] == b' ' { p + 1 } else { p };
    if class(b, q)? & NOT_PUNCT == 0 {
        let mut end = q + 1;
        while class(b, end)? & NOT_PUNCT == 0 {
            end += 1;
        }
        while matches!(b.get(end), Some(b'\r' | b'\n' | b'/')) {
            end += 1;
        }
        return Some(end);
    }
    // Whitespace (nothing else is left).
    let (mut end, mut after_newline) = (p, None);
    loop {
        let c = class(b, end)?;
        if c & SPACE == 0 {
            break;
        }
        end += 1;
        if c & NEWLINE != 0 {
            after_newline = Some(end);
        }
    }
    Some(match after_newline {
        Some(e) => e,
        None if end == b.len() || end - p == 1 => end,
        None => end - 1,
    })
}

/// After a piece's letters ending at `e`: past an apostrophe contraction, if one follows.
fn contraction_end(b: &[u8], e: usize) -> Option<usize> {
    if b.get(e) != Some(&b'\'') {
        return Some(e);
    }
    // Case-insensitive matching lets a non-ASCII letter stand in (`ſ` for `s`).
    let next = |i: usize| match b.get(i) {
        Some(c) if !c.is_ascii() => None,
        c => Some(c.map(u8::to_ascii_lowercase)),
    };
    Some(match next(e + 1)? {
        Some(b's' | b't' | b'm' | b'd') => e + 2,
        Some(b'r' | b'v') if next(e + 2)? == Some(b'e') => e + 3,
        Some(b'l') if next(e + 2)? == Some(b'l') => e + 3,
        _ => e,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// What the split must get right on ASCII: case runs, contractions (and near misses),
    /// digit runs, every kind of whitespace, punctuation before newlines and slashes, controls.
    const ASCII: &[&str] = &[
        "a", "Z", "q", "xY", "HTTP", "Request", "don", "'s", "'S", "'re", "'rE", "'Ve", "'ll",
        "'Ld", "'d", "'m", "'T", "'x", "'", "0", "7", "12", "345", "6789", " ", "  ", "\t", "\n",
        "\r", "\r\n", "\x0b", "\x0c", "\x00", "\x1f", "\x7f", "(", ")", "//", "/", "#", "-", "+",
        "=", "\"", ".", ",", ";", "_", "{", "}", "\\", "<", "!", "@", "$", "%", "&", "*", "|", "~",
        "`", ":",
    ];

    /// Characters the pattern classes by Unicode: letters of every case kind, marks, digits,
    /// whitespace, punctuation, a format character, an emoji, and `ſ` (a case variant of `s`).
    const OTHER: &[&str] = &[
        "é",
        "É",
        "ſ",
        "\u{a0}",
        "\u{85}",
        "\u{2028}",
        "\u{3000}",
        "中",
        "²",
        "٣",
        "\u{301}",
        "ǅ",
        "ʰ",
        "→",
        "—",
        "\u{200b}",
        "\u{1F600}",
        "ß",
    ];

    fn text(alphabet: Vec<&'static str>) -> impl Strategy<Value = String> {
        let part = prop_oneof![
            3 => proptest::sample::select(alphabet).prop_map(str::to_owned),
            1 => (0u8..128).prop_map(|b| char::from(b).to_string()),
        ];
        proptest::collection::vec(part, 0..48).prop_map(|parts| parts.concat())
    }

    fn splits_and_counts_as_the_tokenizer_does(text: &str) -> Result<(), TestCaseError> {
        let ours: Vec<&str> = pieces(text).collect();
        let theirs: Vec<&str> = tokenizer().split(text).collect();
        prop_assert_eq!(ours, theirs);
        prop_assert_eq!(Counter::new().count(text), tokenizer().count(text));
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn ascii_text_splits_as_the_pattern_does(text in text(ASCII.to_vec())) {
            splits_and_counts_as_the_tokenizer_does(&text)?;
        }

        #[test]
        fn mixed_text_splits_as_the_pattern_does(
            text in text(ASCII.iter().chain(OTHER).copied().collect())
        ) {
            splits_and_counts_as_the_tokenizer_does(&text)?;
        }
    }

    #[test]
    fn the_fast_split_matches_real_text() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        for dir in ["src", "src/plan", "src/diff", "fixtures/diffs", "docs"] {
            for entry in std::fs::read_dir(root.join(dir)).unwrap() {
                let path = entry.unwrap().path();
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
                };
                let ours: Vec<&str> = pieces(&text).collect();
                let theirs: Vec<&str> = tokenizer().split(&text).collect();
                assert!(ours == theirs, "{}", path.display());
            }
        }
    }

    #[test]
    fn counts_match_the_tokenizer_on_repeated_and_long_pieces() {
        let long = "x".repeat(CACHED_PIECE_BYTES * 3);
        let mid = ")".repeat(PACKED_PIECE_BYTES + 10);
        let text = format!(
            "fn main() {{\n    let a = 1;\n    let a = 1;\n}}\n{long} {long}\n\n\n  {mid} {mid} tail  "
        );
        let exact = tokenizer().count(&text);
        let mut counter = Counter::new();
        assert_eq!(counter.count(&text), exact);
        // Again, now from the cache.
        assert_eq!(counter.count(&text), exact);
        assert_eq!(counter.count_up_to(&text, exact), exact);
        assert_eq!(counter.count_up_to(&text, exact - 1), exact);
        assert_eq!(counter.count_up_to(&text, 3), 4);
        assert_eq!(counter.count_up_to(&long, 2), 3);
        assert_eq!(counter.count(""), 0);
        // A packed key keeps the length: a piece is not taken for one with zero bytes after it.
        // Alone (the key copied) and inside a longer text (the key read from it).
        for piece in [
            "((\0\0",
            "((\0",
            "((",
            "((\0\0 ((\0 (( ((\0\0 ((\0 ((. abcdefghijklmnop",
        ] {
            assert_eq!(counter.count(piece), tokenizer().count(piece), "{piece:?}");
        }
    }
}
