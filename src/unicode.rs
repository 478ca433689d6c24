//! The one table of characters that change how text displays without being seen: bidi
//! controls, Unicode tag characters, zero-width and other invisible format characters,
//! variation selectors and fillers.
//!
//! Three places read it, each its own way: the sanitizer drops them from untrusted prose
//! (PR text, lens text), the `builtin` lens flags them on added lines, and the renderers show
//! them escaped (`<U+202E>`) wherever code is quoted. Every `Cf` (format) code point is in the
//! table; a test checks that against the regex crate's Unicode data.

/// What kind of hidden character a code point is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hidden {
    /// Bidirectional embedding, override and isolate controls (Trojan Source).
    Bidi,
    /// Unicode tag characters U+E0000–U+E007F (invisible ASCII smuggling).
    Tag,
    /// Variation selectors: legitimate right after an emoji or an ideograph, a carrier in runs.
    Selector,
    /// Everything else that renders as nothing: zero-width characters, marks, word joiner,
    /// invisible operators, soft hyphen, fillers, the byte order mark, other format controls.
    Invisible,
}

/// `(first, last, kind, name)`, sorted by code point, ranges not overlapping. Names are given
/// for the characters a reader is most likely to meet.
const TABLE: &[(u32, u32, Hidden, &str)] = &[
    (0x00AD, 0x00AD, Hidden::Invisible, "SOFT HYPHEN"),
    (
        0x034F,
        0x034F,
        Hidden::Invisible,
        "COMBINING GRAPHEME JOINER",
    ),
    (0x0600, 0x0605, Hidden::Invisible, ""),
    (0x061C, 0x061C, Hidden::Invisible, "ARABIC LETTER MARK"),
    (0x06DD, 0x06DD, Hidden::Invisible, ""),
    (0x070F, 0x070F, Hidden::Invisible, ""),
    (0x0890, 0x0891, Hidden::Invisible, ""),
    (0x08E2, 0x08E2, Hidden::Invisible, ""),
    (0x115F, 0x1160, Hidden::Invisible, "HANGUL FILLER"),
    (0x17B4, 0x17B5, Hidden::Invisible, ""),
    (
        0x180B,
        0x180D,
        Hidden::Selector,
        "MONGOLIAN FREE VARIATION SELECTOR",
    ),
    (
        0x180E,
        0x180E,
        Hidden::Invisible,
        "MONGOLIAN VOWEL SEPARATOR",
    ),
    (
        0x180F,
        0x180F,
        Hidden::Selector,
        "MONGOLIAN FREE VARIATION SELECTOR",
    ),
    (0x200B, 0x200B, Hidden::Invisible, "ZERO WIDTH SPACE"),
    (0x200C, 0x200C, Hidden::Invisible, "ZERO WIDTH NON-JOINER"),
    (0x200D, 0x200D, Hidden::Invisible, "ZERO WIDTH JOINER"),
    (0x200E, 0x200E, Hidden::Invisible, "LEFT-TO-RIGHT MARK"),
    (0x200F, 0x200F, Hidden::Invisible, "RIGHT-TO-LEFT MARK"),
    (0x202A, 0x202A, Hidden::Bidi, "LEFT-TO-RIGHT EMBEDDING"),
    (0x202B, 0x202B, Hidden::Bidi, "RIGHT-TO-LEFT EMBEDDING"),
    (0x202C, 0x202C, Hidden::Bidi, "POP DIRECTIONAL FORMATTING"),
    (0x202D, 0x202D, Hidden::Bidi, "LEFT-TO-RIGHT OVERRIDE"),
    (0x202E, 0x202E, Hidden::Bidi, "RIGHT-TO-LEFT OVERRIDE"),
    (0x2060, 0x2060, Hidden::Invisible, "WORD JOINER"),
    (0x2061, 0x2061, Hidden::Invisible, "FUNCTION APPLICATION"),
    (0x2062, 0x2062, Hidden::Invisible, "INVISIBLE TIMES"),
    (0x2063, 0x2063, Hidden::Invisible, "INVISIBLE SEPARATOR"),
    (0x2064, 0x2064, Hidden::Invisible, "INVISIBLE PLUS"),
    (0x2065, 0x2065, Hidden::Invisible, ""),
    (0x2066, 0x2066, Hidden::Bidi, "LEFT-TO-RIGHT ISOLATE"),
    (0x2067, 0x2067, Hidden::Bidi, "RIGHT-TO-LEFT ISOLATE"),
    (0x2068, 0x2068, Hidden::Bidi, "FIRST STRONG ISOLATE"),
    (0x2069, 0x2069, Hidden::Bidi, "POP DIRECTIONAL ISOLATE"),
    (
        0x206A,
        0x206F,
        Hidden::Invisible,
        "deprecated format character",
    ),
    (0x3164, 0x3164, Hidden::Invisible, "HANGUL FILLER"),
    (0xFE00, 0xFE0F, Hidden::Selector, "VARIATION SELECTOR"),
    (
        0xFEFF,
        0xFEFF,
        Hidden::Invisible,
        "ZERO WIDTH NO-BREAK SPACE (byte order mark)",
    ),
    (0xFFA0, 0xFFA0, Hidden::Invisible, "HALFWIDTH HANGUL FILLER"),
    (0xFFF9, 0xFFFB, Hidden::Invisible, "INTERLINEAR ANNOTATION"),
    (0x110BD, 0x110BD, Hidden::Invisible, ""),
    (0x110CD, 0x110CD, Hidden::Invisible, ""),
    (0x13430, 0x1343F, Hidden::Invisible, ""),
    (0x1BCA0, 0x1BCA3, Hidden::Invisible, ""),
    (0x1D173, 0x1D17A, Hidden::Invisible, ""),
    (0xE0000, 0xE007F, Hidden::Tag, "TAG"),
    (0xE0100, 0xE01EF, Hidden::Selector, "VARIATION SELECTOR"),
];

/// Whether `text` holds a hidden character.
pub fn holds_hidden(text: &str) -> bool {
    holds_hidden_bytes(text.as_bytes())
}

/// Whether `bytes`, UTF-8 or not, hold a hidden character: the same answer as
/// [`holds_hidden`] gives for their lossy decoding, which keeps every well-formed sequence and
/// turns the rest into U+FFFD (no hidden character). A character is decoded and looked up
/// only when its first two bytes start one of [`TABLE`]'s encodings ([`PAIRS`]): most
/// non-ASCII text (accented Latin, Greek, Cyrillic, CJK, a legacy encoding's bytes) never
/// gets that far.
pub fn holds_hidden_bytes(b: &[u8]) -> bool {
    // Thirty-two places at a time: whether any may start a hidden character, judged first by
    // two comparisons a byte, then by the pair of bytes at each place, with no branch either
    // way. Only the places of a window whose pairs say so are looked at one by one: in text
    // dense in other characters (Cyrillic, CJK, a legacy encoding) a branch at every place
    // was mispredicted at most of them.
    let mut at = 0;
    while let Some(window) = b.get(at..at + WINDOW + 1).and_then(|w| w.try_into().ok()) {
        if may_start(window)
            && starts_a_pair(&window[..WINDOW], &window[1..])
            && (at..at + WINDOW).any(|i| hidden_at(b, i))
        {
            return true;
        }
        at += WINDOW;
    }
    let tail = &b[at..];
    let seconds = tail.get(1..).unwrap_or_default();
    // The last place has no second byte: 0 starts no pair.
    (starts_a_pair(tail, seconds) || tail.last().is_some_and(|&last| starts_pair(last, 0)))
        && (at..b.len()).any(|i| hidden_at(b, i))
}

/// Whether some place `j` has `firsts[j]`, `seconds[j]` as the first two bytes of one of
/// [`TABLE`]'s encodings ([`PAIRS`]), for every `j` both have.
fn starts_a_pair(firsts: &[u8], seconds: &[u8]) -> bool {
    firsts
        .iter()
        .zip(seconds)
        .fold(false, |any, (&first, &second)| {
            any | starts_pair(first, second)
        })
}

/// Whether `first`, `second` begin the encoding of one of [`TABLE`]'s characters.
#[inline]
fn starts_pair(first: u8, second: u8) -> bool {
    let pair = usize::from(first) << 8 | usize::from(second);
    PAIRS[pair >> 6] >> (pair & 63) & 1 != 0
}

/// How many places [`may_start`] judges at once.
const WINDOW: usize = 32;

/// Whether some place `j` of the first [`WINDOW`] of `window` may start a hidden character:
/// `window[j]` is one of [`LEADS`]'s bytes and `window[j + 1]` a continuation byte. A
/// comparison with each lead rather than with their range: it rules out accented Latin
/// (`C3`), Greek, Cyrillic and most CJK (`E4`–`E9`), which would go on to the slower check by
/// pairs.
fn may_start(window: &[u8; WINDOW + 1]) -> bool {
    let (firsts, seconds) = (&window[..WINDOW], &window[1..]);
    let any = firsts
        .iter()
        .zip(seconds)
        .fold(0u8, |any, (&first, &second)| {
            let lead = LEAD_BYTES.0[..LEAD_BYTES.1]
                .iter()
                .fold(0u8, |is, &l| is | u8::from(first == l));
            any | (lead & u8::from(second & 0xC0 == 0x80))
        });
    any != 0
}

/// The bytes [`LEADS`] holds, in order, and how many there are (the rest of the array is 0).
const LEAD_BYTES: ([u8; 256], usize) = {
    let (mut bytes, mut n) = ([0; 256], 0);
    let mut b = 0;
    while b < 256 {
        if LEADS[b] {
            bytes[n] = b as u8;
            n += 1;
        }
        b += 1;
    }
    (bytes, n)
};

/// Whether a hidden character starts at `b[i]`: its first two bytes start one of [`TABLE`]'s
/// encodings ([`PAIRS`]), and it is one, well formed.
#[inline]
fn hidden_at(b: &[u8], i: usize) -> bool {
    let first = b[i];
    if !LEADS[usize::from(first)] {
        return false;
    }
    let second = b.get(i + 1).copied().unwrap_or(0);
    let len = match first {
        0xF0.. => 4,
        0xE0.. => 3,
        _ => 2,
    };
    starts_pair(first, second)
        && b.get(i..i + len)
            .and_then(|s| std::str::from_utf8(s).ok())
            .and_then(|s| s.chars().next())
            .is_some_and(is_hidden)
}

/// One bit for each pair of first two bytes of a UTF-8 encoding, set where one of
/// [`TABLE`]'s characters starts with it (all of them take two bytes or more).
static PAIRS: [u64; 1024] = {
    let mut bits = [0u64; 1024];
    let mut i = 0;
    while i < TABLE.len() {
        let mut cp = TABLE[i].0;
        while cp <= TABLE[i].1 {
            let (first, second) = match cp {
                0x80..=0x7FF => (0xC0 | cp >> 6, 0x80 | (cp & 0x3F)),
                0x800..=0xFFFF => (0xE0 | cp >> 12, 0x80 | (cp >> 6 & 0x3F)),
                _ => (0xF0 | cp >> 18, 0x80 | (cp >> 12 & 0x3F)),
            };
            let pair = (first << 8 | second) as usize;
            bits[pair >> 6] |= 1 << (pair & 63);
            cp += 1;
        }
        i += 1;
    }
    bits
};

/// The first bytes of the UTF-8 encodings of [`TABLE`]'s code points. A range's first bytes
/// run from its first code point's to its last one's: UTF-8 keeps code point order.
static LEADS: [bool; 256] = {
    const fn lead(cp: u32) -> usize {
        (match cp {
            0..=0x7F => cp,
            0x80..=0x7FF => 0xC0 | cp >> 6,
            0x800..=0xFFFF => 0xE0 | cp >> 12,
            _ => 0xF0 | cp >> 18,
        }) as usize
    }
    let mut leads = [false; 256];
    let mut i = 0;
    while i < TABLE.len() {
        let mut b = lead(TABLE[i].0);
        while b <= lead(TABLE[i].1) {
            leads[b] = true;
            b += 1;
        }
        i += 1;
    }
    leads
};

/// The kind of hidden character `c` is, if it is one. ASCII is never hidden.
pub fn hidden(c: char) -> Option<Hidden> {
    entry(c).map(|e| e.2)
}

/// Whether `c` is in the table.
pub fn is_hidden(c: char) -> bool {
    entry(c).is_some()
}

/// `U+202E RIGHT-TO-LEFT OVERRIDE`, or `U+0605` for a character without a listed name.
pub fn name(c: char) -> String {
    match entry(c).map(|e| e.3).filter(|n| !n.is_empty()) {
        Some(n) => format!("U+{:04X} {n}", u32::from(c)),
        None => format!("U+{:04X}", u32::from(c)),
    }
}

/// `text` with every hidden character written as `<U+202E>`: code is shown as it is, never
/// stripped, and printed raw these characters reorder or hide text (Trojan Source).
pub fn escape(text: &str) -> std::borrow::Cow<'_, str> {
    if text.is_ascii() || !holds_hidden(text) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if is_hidden(c) {
            out.push_str(&format!("<U+{:04X}>", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

fn entry(c: char) -> Option<&'static (u32, u32, Hidden, &'static str)> {
    let cp = u32::from(c) as usize;
    if cp < 0x80
        || BMP
            .get(cp >> 6)
            .is_some_and(|bits| bits & 1 << (cp & 63) == 0)
    {
        return None;
    }
    search(cp as u32)
}

fn search(cp: u32) -> Option<&'static (u32, u32, Hidden, &'static str)> {
    let i = TABLE.partition_point(|e| e.1 < cp);
    TABLE.get(i).filter(|e| e.0 <= cp)
}

/// One bit for each code point below U+10000, set where [`TABLE`] has it: text in most
/// scripts (and the U+FFFD a lossy decoding leaves) never meets one, and a bit here spares
/// searching the table for every character.
static BMP: [u64; 1024] = {
    let mut bits = [0u64; 1024];
    let mut i = 0;
    while i < TABLE.len() {
        let mut cp = TABLE[i].0 as usize;
        while cp <= TABLE[i].1 as usize && cp < 0x10000 {
            bits[cp >> 6] |= 1 << (cp & 63);
            cp += 1;
        }
        i += 1;
    }
    bits
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_holds_a_hidden_character_exactly_when_one_is_in_it() {
        let mut buf = [0u8; 4];
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            let text = c.encode_utf8(&mut buf);
            assert_eq!(holds_hidden(text), is_hidden(c), "U+{:04X}", u32::from(c));
        }
        // The bit per code point answers as the table does.
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            assert_eq!(entry(c), search(u32::from(c)), "U+{:04X}", u32::from(c));
        }
        assert!(!holds_hidden(
            "naïve café, Ελληνικά, русский, 中文, \u{FFFD}\u{FFFD}"
        ));
        assert!(holds_hidden("a\u{202E}b"));
        assert!(holds_hidden("\u{FFFD} caf\u{E9}\u{200B}"));
    }

    #[test]
    fn the_window_check_knows_the_lead_bytes_of_the_table() {
        for first in 0..=255u8 {
            for at in [0, WINDOW - 1] {
                let mut window = [b'a'; WINDOW + 1];
                window[at..at + 2].copy_from_slice(&[first, 0x80]);
                assert_eq!(may_start(&window), LEADS[usize::from(first)], "{first:#X}");
            }
        }
        assert!(!may_start(&[b'a'; WINDOW + 1]));
        let accented = std::array::from_fn(|i| [0xC3, 0xA9][i % 2]);
        assert!(!may_start(&accented), "é after é");
        assert!(!may_start(&[0xE9; WINDOW + 1]), "Latin-1 letters alone");
    }

    #[test]
    fn every_hidden_character_is_found_at_every_place_of_a_window() {
        let mut buf = [0u8; 4];
        for (first, last, _, _) in TABLE {
            for cp in [*first, *last] {
                let c = char::from_u32(cp).unwrap_or_default();
                let c = c.encode_utf8(&mut buf).as_bytes().to_vec();
                for pad in [
                    &b"a"[..],
                    b"\xE9",
                    "\u{FFFD}".as_bytes(),
                    "\u{3042}".as_bytes(),
                ] {
                    for before in 0..2 * WINDOW + 2 {
                        let mut text: Vec<u8> = pad.iter().copied().cycle().take(before).collect();
                        text.extend_from_slice(&c);
                        text.extend(pad.iter().copied().cycle().take(WINDOW + 3));
                        assert!(holds_hidden_bytes(&text), "U+{cp:04X} after {before} bytes");
                        text.truncate(before);
                        assert!(!holds_hidden_bytes(&text), "{before} bytes of padding");
                    }
                }
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn bytes_hold_a_hidden_character_when_their_lossy_text_does(
            bytes in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::prelude::any::<u8>(),
                    proptest::sample::select(vec![0xE2u8, 0x80, 0xAE, 0xEF, 0xBB, 0xBF, 0xF3, 0xA0, 0x81, b'a']),
                ],
                0..200,
            )
        ) {
            let text = String::from_utf8_lossy(&bytes);
            proptest::prop_assert_eq!(holds_hidden_bytes(&bytes), holds_hidden(&text));
        }
    }

    #[test]
    fn table_is_sorted_and_disjoint() {
        for w in TABLE.windows(2) {
            assert!(
                w[0].0 <= w[0].1 && w[0].1 < w[1].0,
                "{:X?}",
                (w[0].0, w[1].0)
            );
        }
    }

    #[test]
    fn every_format_character_is_in_the_table() {
        // The regex crate carries the Unicode character database: every `Cf` code point must be
        // hidden, so a new Unicode version cannot slip one past the sanitizer unnoticed.
        let cf = regex::Regex::new(r"^\p{Cf}$").unwrap();
        let mut buf = [0u8; 4];
        let missing: Vec<String> = (0x80..=0x10FFFFu32)
            .filter_map(char::from_u32)
            .filter(|&c| cf.is_match(c.encode_utf8(&mut buf)) && !is_hidden(c))
            .map(|c| format!("U+{:04X}", u32::from(c)))
            .collect();
        assert!(missing.is_empty(), "not in the table: {missing:?}");
    }

    #[test]
    fn kinds_and_names() {
        assert_eq!(hidden('\u{202E}'), Some(Hidden::Bidi));
        assert_eq!(hidden('\u{2067}'), Some(Hidden::Bidi));
        assert_eq!(hidden('\u{E0041}'), Some(Hidden::Tag));
        assert_eq!(hidden('\u{FE0F}'), Some(Hidden::Selector));
        assert_eq!(hidden('\u{E0100}'), Some(Hidden::Selector));
        for c in [
            '\u{200B}', '\u{200E}', '\u{200F}', '\u{2060}', '\u{2064}', '\u{FEFF}',
        ] {
            assert_eq!(hidden(c), Some(Hidden::Invisible), "{c:?}");
        }
        for c in ['a', 'é', '日', '\u{1F600}', '\u{00A0}', '\n'] {
            assert_eq!(hidden(c), None, "{c:?}");
        }
        assert_eq!(name('\u{202E}'), "U+202E RIGHT-TO-LEFT OVERRIDE");
        assert_eq!(name('\u{0605}'), "U+0605");
        assert_eq!(escape("a\u{202E}b\u{200B}c"), "a<U+202E>b<U+200B>c");
        assert!(matches!(escape("café"), std::borrow::Cow::Borrowed(_)));
    }
}
