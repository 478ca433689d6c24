//! Estimating the o200k tokens of diff text, without the tokenizer's tables (tens of megabytes
//! of a binary that only needs to know whether a prompt fits).
//!
//! The text is cut into the pieces o200k's pattern cuts it into, byte by byte while the bytes
//! that decide a piece are ASCII ([`ascii_piece_end`]); a word with other characters in it is
//! taken whole. Each piece is then given the tokens a piece of its kind and length takes, on
//! the high side: a digit group is one token, a common word one, a long or vowel-less run of
//! letters (a hash, base64) more, a run of punctuation about one per two characters. The
//! tests hold the estimate to the exact o200k count on real text: never under it by more than
//! the plan's margin on any file.

/// Costs are counted in quarter tokens, rounded up once at the end of a text.
const QUARTER: usize = 4;

/// A run of letters (with the one character before it that the pattern takes along): this
/// many quarters, for up to [`FREE_LETTERS`] of them, then [`PER_LETTER`] for each further one.
const WORD: usize = 5;
const FREE_LETTERS: usize = 5;
const PER_LETTER: usize = 1;
/// Past this many letters a run is a blob (a hash, a repeated word) more than a word: each
/// further letter costs [`BLOB_PER_LETTER`].
const WORD_LETTERS: usize = 12;
const BLOB_PER_LETTER: usize = 2;
/// Letters without a vowel (`x509`, `sha`, base64) seldom merge; with few vowels, not much.
const NO_VOWEL: usize = 6;
const FEW_VOWELS: usize = 4;
/// Capitals merge less than small letters: for each one after the first.
const PER_CAPITAL: usize = 2;
/// A run of punctuation: a token, then this many quarters for each further character, and a
/// token for each control character in it.
const PER_PUNCT: usize = 2;
const PER_CONTROL: usize = 4;
/// Whitespace: a token, and one more for each 16 characters after the first.
const SPACES_PER_TOKEN: usize = 16;
/// In a word with non-ASCII letters: each ASCII letter, and each other letter by its UTF-8
/// length (2, 3, 4 bytes).
const MIXED_ASCII_LETTER: usize = 2;
const LETTER_BY_LEN: [usize; 3] = [3, 4, 8];
/// A non-ASCII character that is no letter (a symbol, U+FFFD), alone, by its UTF-8 length.
const SYMBOL_BY_LEN: [usize; 3] = [4, 6, 8];

/// The estimated tokens of `text`.
pub(super) fn estimate(text: &str) -> usize {
    estimate_up_to(text, usize::MAX - 1)
}

/// The estimated tokens of `text`, or `limit + 1` once they pass `limit` (a file that cannot
/// fit needs no full count).
pub(super) fn estimate_up_to(text: &str, limit: usize) -> usize {
    let over = limit.saturating_add(1);
    let stop = over.saturating_mul(QUARTER);
    let b = text.as_bytes();
    let (mut pos, mut quarters) = (0, 0usize);
    while pos < b.len() {
        let (end, cost) = match ascii_piece_end(b, pos) {
            Some(end) => (end, ascii_piece(&b[pos..end])),
            None => word(text, pos),
        };
        quarters += cost;
        if quarters >= stop {
            return over;
        }
        // Every piece holds at least one byte; never loop on a surprise.
        pos = end.max(pos + 1);
    }
    quarters.div_ceil(QUARTER).min(over)
}

/// The cost of a piece of ASCII bytes, as [`ascii_piece_end`] cut it.
fn ascii_piece(piece: &[u8]) -> usize {
    // The character the pattern takes along before letters (` foo`, `.bar`, `_baz`). Most
    // merge into the word's token; a `+` (a diff's added line) almost never does: `+let` is
    // two tokens.
    let (body, prefix) = match piece {
        [first, second, ..] if !first.is_ascii_alphanumeric() && second.is_ascii_alphabetic() => {
            (&piece[1..], if *first == b'+' { QUARTER } else { 0 })
        }
        _ => (piece, 0),
    };
    let n = body.len();
    match body[0] {
        b'0'..=b'9' => QUARTER,
        c if c.is_ascii_alphabetic() => prefix + letters(body),
        c if c.is_ascii_whitespace() => QUARTER * (1 + (n - 1) / SPACES_PER_TOKEN),
        _ => {
            let controls = body
                .iter()
                .filter(|c| c.is_ascii_control() && !c.is_ascii_whitespace())
                .count();
            QUARTER + (n - 1) * PER_PUNCT + controls * PER_CONTROL
        }
    }
}

/// The cost of a run of ASCII letters (an apostrophe contraction may end it).
fn letters(body: &[u8]) -> usize {
    let n = body.len();
    let vowels = body
        .iter()
        .filter(|c| matches!(c.to_ascii_lowercase(), b'a' | b'e' | b'i' | b'o' | b'u'))
        .count();
    let mut cost = WORD
        + n.min(WORD_LETTERS).saturating_sub(FREE_LETTERS) * PER_LETTER
        + n.saturating_sub(WORD_LETTERS) * BLOB_PER_LETTER;
    if n >= 2 && vowels == 0 {
        cost += NO_VOWEL;
    }
    if n >= 4 && vowels * 5 < n {
        cost += FEW_VOWELS;
    }
    let capitals = body.iter().filter(|c| c.is_ascii_uppercase()).count();
    cost += capitals.saturating_sub(1) * PER_CAPITAL;
    cost
}

/// A piece whose end depends on a character that is not ASCII, from `p`: a word of letters of
/// any script (with the one ASCII character before it that the pattern takes along), else a
/// non-ASCII character that is no letter, alone, else the one ASCII byte at `p`. Where it ends
/// and what it costs.
fn word(text: &str, p: usize) -> (usize, usize) {
    let b = text.as_bytes();
    let mut i = p;
    if b[i].is_ascii() && !b[i].is_ascii_alphabetic() {
        i += 1;
    }
    let start = i;
    let (mut ascii, mut cost) = (0, 0);
    while let Some(c) = text.get(i..).and_then(|rest| rest.chars().next()) {
        let len = c.len_utf8();
        if c.is_ascii_alphabetic() {
            ascii += 1;
        } else if c.is_alphabetic() {
            cost += LETTER_BY_LEN[len - 2];
        } else if !c.is_ascii() && i == start {
            cost += SYMBOL_BY_LEN[len - 2];
            i += len;
            break;
        } else {
            break;
        }
        i += len;
    }
    (i, (cost + ascii * MIXED_ASCII_LETTER).max(QUARTER))
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

    /// The exact o200k count (the tokenizer is a dev-dependency, for these comparisons only).
    fn exact(text: &str) -> usize {
        bpe_openai::o200k_base().count(text)
    }

    /// The pieces [`ascii_piece_end`] cuts ASCII `text` into.
    fn ascii_pieces(text: &str) -> Vec<&str> {
        let mut pos = 0;
        let mut out = Vec::new();
        while pos < text.len() {
            let end = ascii_piece_end(text.as_bytes(), pos).expect("ASCII text");
            out.push(&text[pos..end]);
            pos = end;
        }
        out
    }

    /// What the split must get right on ASCII: case runs, contractions (and near misses),
    /// digit runs, every kind of whitespace, punctuation before newlines and slashes, controls.
    const ASCII: &[&str] = &[
        "a", "Z", "q", "xY", "HTTP", "Request", "don", "'s", "'S", "'re", "'rE", "'Ve", "'ll",
        "'Ld", "'d", "'m", "'T", "'x", "'", "0", "7", "12", "345", "6789", " ", "  ", "\t", "\n",
        "\r", "\r\n", "\x0b", "\x0c", "\x00", "\x1f", "\x7f", "(", ")", "//", "/", "#", "-", "+",
        "=", "\"", ".", ",", ";", "_", "{", "}", "\\", "<", "!", "@", "$", "%", "&", "*", "|", "~",
        "`", ":",
    ];

    /// Characters of other kinds: letters of every case kind, marks, digits, whitespace,
    /// punctuation, a format character, an emoji, U+FFFD.
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
        "\u{FFFD}",
        "Ж",
    ];

    fn text(alphabet: Vec<&'static str>) -> impl Strategy<Value = String> {
        let part = prop_oneof![
            3 => proptest::sample::select(alphabet).prop_map(str::to_owned),
            1 => (0u8..128).prop_map(|b| char::from(b).to_string()),
        ];
        proptest::collection::vec(part, 0..48).prop_map(|parts| parts.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        #[test]
        fn ascii_text_splits_as_the_pattern_does(text in text(ASCII.to_vec())) {
            let theirs: Vec<&str> = bpe_openai::o200k_base().split(&text).collect();
            prop_assert_eq!(ascii_pieces(&text), theirs);
        }

        #[test]
        fn a_limit_only_cuts_the_estimate_short(
            text in text(ASCII.iter().chain(OTHER).copied().collect()),
            limit in 0usize..40,
        ) {
            let full = estimate(&text);
            prop_assert_eq!(estimate_up_to(&text, limit), full.min(limit + 1));
            prop_assert!(text.is_empty() || full >= 1);
        }
    }

    /// `estimate` against the exact count: never under it by more than `margin` percent (here
    /// half the plan's, on texts much denser than a file of a real diff).
    fn holds(name: &str, text: &str, margin: usize) -> (usize, usize) {
        let (exact, estimated) = (exact(text), estimate(text));
        assert!(
            estimated * 100 >= exact * (100 - margin),
            "{name}: estimated {estimated} < exact {exact}"
        );
        (exact, estimated)
    }

    #[test]
    fn the_estimate_holds_on_this_repositorys_files() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let (mut exact_total, mut estimated_total) = (0, 0);
        for dir in [
            "src",
            "src/plan",
            "src/diff",
            "fixtures/diffs",
            "docs",
            "tests/it",
        ] {
            for entry in std::fs::read_dir(root.join(dir)).unwrap() {
                let path = entry.unwrap().path();
                let Ok(text) = std::fs::read_to_string(&path) else {
                    continue;
                };
                let (e, n) = holds(&path.display().to_string(), &text, 5);
                exact_total += e;
                estimated_total += n;
            }
        }
        println!("exact {exact_total} estimated {estimated_total}");
        // On the high side, not wildly: a budget still fills to most of its size.
        assert!(estimated_total >= exact_total);
        assert!(estimated_total * 100 <= exact_total * 140);
    }

    #[test]
    fn dense_text_is_not_underestimated() {
        // What merges least: hashes, base64, capitals, other scripts, symbols, controls.
        let texts = [
            "sha256=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n".repeat(20),
            "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
                .repeat(20),
            "ACCESS_KEY_ID SECRET_ACCESS_KEY HTTP_X_FORWARDED_FOR\n".repeat(20),
            "Съешь же ещё этих мягких французских булок, да выпей чаю.\n".repeat(20),
            "敏捷的棕色狐狸跳过了懒狗。日本語のテキストも少し。\n".repeat(20),
            "caf\u{FFFD} na\u{FFFD}ve \u{FFFD}\u{FFFD}\u{FFFD} r\u{FFFD}sum\u{FFFD}\n".repeat(20),
            "emoji 😀🎉👍 arrows →⇒ dashes — … ™ ©\n".repeat(20),
            "\0\x01\x02 binary\x7f\x1b[0m ((((((((;;;;;;;;))))))))\n".repeat(20),
        ];
        for text in &texts {
            let name: String = text.chars().take(20).collect();
            holds(&name, text, 5);
        }
        assert_eq!(estimate(""), 0);
    }
}
