//! The generic rule (`generic-api-key`): a keyword, an assignment and a random-looking value.
//! Detection only (see the module above for why).

#[cfg(test)]
use std::sync::LazyLock;

#[cfg(test)]
use regex::Regex;

#[cfg(test)]
use super::rules::compile;
use super::rules::is_word;
use super::{GENERIC, SecretMatch, entropy, next_char};

/// The generic rule (gitleaks' `generic-api-key`). Compiling it is the dearest of the
/// patterns (`cargo bench --bench pipeline -- secrets/compile_generic`), so it is compiled
/// only for a text with a [`generic_candidates`] place.
pub const GENERIC_PATTERN: &str = concat!(
    r"(?i)(?:access|auth|api|credential|creds|key|passw(?:or)?d|pwd|secret|token)",
    r"[a-z0-9_.-]{0,20}['\x22]?[ \t]*(?::=|=>|=|:)[ \t]*[`'\x22]?",
    // `{10,}` rather than `{10,150}`: a bounded repeat of 150 compiles to a large
    // automaton; the upper bound is checked in `generic_keys`.
    r"([A-Za-z0-9_.=+/~!@#$%^&*-]{10,})",
    r"(?:[`'\x22;,\s]|\\[nrt]|$)",
);
/// The pattern compiled, for the tests that hold [`generic_keys`] to it.
#[cfg(test)]
pub(super) static GENERIC_RE: LazyLock<Regex> = LazyLock::new(|| compile(GENERIC_PATTERN));
/// Name characters the generic pattern allows after its keyword.
const GENERIC_MAX_GAP: usize = 20;

/// The longest value the generic rule reports (gitleaks: 150).
const GENERIC_MAX_VALUE: usize = 150;

/// The generic rule's matches in `text`, searched from `from`, the first of
/// [`generic_candidates`] (no match starts before it).
///
/// [`GENERIC_PATTERN`] is matched by hand at each candidate in turn, which is what the regex's
/// leftmost-first search finds (the property test `the_generic_match_is_the_patterns` holds
/// the two together): compiling the pattern and building its automaton's states was most of
/// the secret pass on a small diff. Every part of the pattern after the keyword has one way to
/// match, except the operator's alternatives, tried in the pattern's order.
pub(super) fn generic_keys(text: &str, from: usize, found: &mut Vec<SecretMatch>) {
    for value in generic_values(text, from) {
        if value.len() <= GENERIC_MAX_VALUE && plausible_generic(&text[value.clone()]) {
            found.push(SecretMatch {
                rule: GENERIC,
                range: value,
            });
        }
    }
}

/// The values [`GENERIC_PATTERN`] captures in `text` from `from`, match after match.
pub(super) fn generic_values(text: &str, from: usize) -> Vec<std::ops::Range<usize>> {
    let mut values = Vec::new();
    let mut at = from;
    // The value run last measured: a run with no end that holds a candidate every few bytes
    // (`key=` ten thousand times) is measured once, not again from every candidate in it.
    let mut run = ValueRun::default();
    each_generic_candidate(text.as_bytes(), |start| {
        if start >= at
            && let Some(value) = generic_match_at(text, start, &mut run)
        {
            at = value.end.max(next_char(text, start));
            values.push(value);
        }
        true
    });
    values
}

/// The two characters case folding lets stand for ASCII letters: `K` (U+212A) for `k` and `ſ`
/// for `s`. The generic pattern is case-insensitive, so its classes hold them too.
const KELVIN: &[u8] = "\u{212A}".as_bytes();
const LONG_S: &[u8] = "\u{17F}".as_bytes();

/// The keywords of [`GENERIC_PATTERN`], in its order; `passw(?:or)?d` is its two words.
const GENERIC_KEYWORDS: [&str; 11] = [
    "access",
    "auth",
    "api",
    "credential",
    "creds",
    "key",
    "password",
    "passwd",
    "pwd",
    "secret",
    "token",
];

/// The end of the keyword [`GENERIC_PATTERN`] matches at `at` of `bytes`, letters in any case
/// (and `K`, `ſ` for `k`, `s`, as case folding has it).
fn generic_keyword_end(bytes: &[u8], at: usize) -> Option<usize> {
    GENERIC_KEYWORDS.iter().find_map(|word| {
        let mut i = at;
        for &letter in word.as_bytes() {
            let rest = bytes.get(i..).unwrap_or_default();
            i += match rest.first() {
                Some(&b) if b.eq_ignore_ascii_case(&letter) => 1,
                _ if letter == b'k' && rest.starts_with(KELVIN) => KELVIN.len(),
                _ if letter == b's' && rest.starts_with(LONG_S) => LONG_S.len(),
                _ => return None,
            };
        }
        Some(i)
    })
}

/// The length of the character at `at` if it is in a class that case folding widens with
/// `K` and `ſ`: `ascii` says which ASCII bytes are in it.
fn folded_char_at(bytes: &[u8], at: usize, ascii: impl Fn(u8) -> bool) -> Option<usize> {
    let rest = bytes.get(at..).unwrap_or_default();
    match rest.first() {
        Some(&b) if b < 0x80 => ascii(b).then_some(1),
        _ if rest.starts_with(KELVIN) => Some(KELVIN.len()),
        _ if rest.starts_with(LONG_S) => Some(LONG_S.len()),
        _ => None,
    }
}

/// A run of [`GENERIC_PATTERN`]'s value characters, measured: any place in it ends there too,
/// with what follows the same.
#[derive(Debug, Default)]
struct ValueRun {
    start: usize,
    end: usize,
    /// What follows ends a value as the pattern requires.
    ended: bool,
}

/// The value [`GENERIC_PATTERN`] captures when it matches starting at `start`, if it does.
fn generic_match_at(
    text: &str,
    start: usize,
    run: &mut ValueRun,
) -> Option<std::ops::Range<usize>> {
    let bytes = text.as_bytes();
    let mut i = generic_keyword_end(bytes, start)?;
    // `[a-z0-9_.-]{0,20}`: none of those is a quote, a blank or an operator, so the name is
    // all of them up to 20, and a 21st leaves no way on.
    for _ in 0..GENERIC_MAX_GAP {
        match folded_char_at(bytes, i, |b| NAME_BYTES[usize::from(b)] != 0) {
            Some(n) => i += n,
            None => break,
        }
    }
    if matches!(bytes.get(i), Some(b'\'' | b'"')) {
        i += 1;
    }
    let op = blanks(bytes, i);
    generic_value_starts(bytes, op).find_map(|v| {
        let (end, ended) = value_run_end(text, v, run);
        (ended && value_chars_at(bytes, v) >= GENERIC_MIN_VALUE).then_some(v..end)
    })
}

/// After the blanks at `i`, where they end.
fn blanks(bytes: &[u8], mut i: usize) -> usize {
    while matches!(bytes.get(i), Some(b' ' | b'\t')) {
        i += 1;
    }
    i
}

/// Where [`GENERIC_PATTERN`]'s value starts after each of its operators that `bytes` has at
/// `op`, in the pattern's order (`:=`, `=>`, `=`, `:`): past the operator, blanks and an
/// optional quote. Blanks and quotes are not value characters, so there is no other way.
fn generic_value_starts(bytes: &[u8], op: usize) -> impl Iterator<Item = usize> + '_ {
    const OPS: [&[u8]; 4] = [b":=", b"=>", b"=", b":"];
    OPS.into_iter()
        .filter(move |o| bytes[op..].starts_with(o))
        .map(move |o| {
            let v = blanks(bytes, op + o.len());
            v + usize::from(matches!(bytes.get(v), Some(b'`' | b'\'' | b'"')))
        })
}

/// Where the run of value characters that `at` starts ends, and whether what follows ends a
/// value; from the last run measured when `at` lies in it.
fn value_run_end(text: &str, at: usize, run: &mut ValueRun) -> (usize, bool) {
    if (run.start..run.end).contains(&at) {
        return (run.end, run.ended);
    }
    let bytes = text.as_bytes();
    let mut end = at;
    while let Some(n) = value_char_at(bytes, end) {
        end += n;
    }
    // `(?:[`'"];,\s]|\\[nrt]|$)`, case-insensitive.
    let ended = match text[end..].chars().next() {
        None => true,
        Some(c) if matches!(c, '`' | '\'' | '"' | ';' | ',') || c.is_whitespace() => true,
        Some('\\') => matches!(
            bytes.get(end + 1).map(|b| b | 0x20),
            Some(b'n' | b'r' | b't')
        ),
        Some(_) => false,
    };
    *run = ValueRun {
        start: at,
        end,
        ended,
    };
    (end, ended)
}

/// Where the generic rule may match in `text`, in order: every start of a generic keyword
/// that an assignment (`=`, `:`, `=>`, `:=`) follows as [`GENERIC_RE`] requires (within 20
/// name characters, an optional quote and blanks), and every character of the name before
/// the assignment where it holds `K` (U+212A) or `ſ`, which case folding lets stand for `k`
/// and `s`.
///
/// Found from the operators: they are rare next to the keywords' letters (`key`, `api` and
/// `token` occur on most lines of real code, most of them not before an operator), and
/// `memchr` finds them at SIMD speed where a case-insensitive keyword automaton has no
/// prefilter and walks every byte.
pub(super) fn generic_candidates(text: &[u8]) -> Vec<usize> {
    let mut found = Vec::new();
    each_generic_candidate(text, |at| {
        found.push(at);
        true
    });
    found
}

/// The first of [`generic_candidates`], found without looking for the rest.
pub(super) fn first_generic_candidate(text: &[u8]) -> Option<usize> {
    let mut first = None;
    each_generic_candidate(text, |at| {
        first = Some(at);
        false
    });
    first
}

/// Calls `f` with each of [`generic_candidates`], in order, while it returns true. A plain
/// loop: as an iterator chain (`flat_map` over the operators) it cost twice as much.
fn each_generic_candidate(bytes: &[u8], mut f: impl FnMut(usize) -> bool) {
    // The name before an operator that is looked at: 20 characters after the longest
    // keyword (`credential`).
    const NAME: usize = GENERIC_MAX_GAP + 10;
    for op in memchr::memchr2_iter(b'=', b':', bytes) {
        let mut i = op;
        while i > 0 && matches!(bytes[i - 1], b' ' | b'\t') {
            i -= 1;
        }
        if i > 0 && matches!(bytes[i - 1], b'\'' | b'"') {
            i -= 1;
        }
        let end = i;
        let mut folded = false;
        let mut letters = 0;
        for _ in 0..NAME {
            let Some(&b) = bytes[..i].last() else { break };
            let class = NAME_BYTES[usize::from(b)];
            if class != 0 {
                letters |= class;
                i -= 1;
            } else if b < 0x80 {
                break;
            } else if bytes[..i].ends_with(KELVIN) {
                (i, folded) = (i - KELVIN.len(), true);
            } else if bytes[..i].ends_with(LONG_S) {
                (i, folded) = (i - LONG_S.len(), true);
            } else {
                break;
            }
        }
        // Most names lack some letter of every keyword: one test rules them out.
        if !folded && !KEYWORD_LETTERS.iter().any(|k| k & !letters == 0) {
            continue;
        }
        // Most of the rest are followed by something short (`key=None`, `token: str`).
        if !generic_value_follows(bytes, op) {
            continue;
        }
        for at in i..end {
            let candidate = match folded {
                // Not inside a character (a continuation byte), as `str` has it.
                true => bytes.get(at).is_none_or(|&b| b & 0xC0 != 0x80),
                // The first letter rules out most places before the call.
                false => {
                    matches!(bytes[at] | 0x20, b'a' | b'c' | b'k' | b'p' | b's' | b't')
                        && generic_keyword_at(&bytes[at..end])
                }
            };
            if candidate && !f(at) {
                return;
            }
        }
    }
}

/// Whether a value as long as [`GENERIC_PATTERN`] needs can follow the operator whose first
/// byte is at `op`: at least [`GENERIC_MIN_VALUE`] value characters.
fn generic_value_follows(bytes: &[u8], op: usize) -> bool {
    generic_value_starts(bytes, op).any(|v| value_chars_at(bytes, v) >= GENERIC_MIN_VALUE)
}

/// The shortest value the generic rule matches (`{10,}` in [`GENERIC_PATTERN`]).
const GENERIC_MIN_VALUE: usize = 10;

/// How many characters of the generic pattern's value class start at `at`, counted up to
/// [`GENERIC_MIN_VALUE`].
fn value_chars_at(bytes: &[u8], mut at: usize) -> usize {
    let mut n = 0;
    while n < GENERIC_MIN_VALUE
        && let Some(len) = value_char_at(bytes, at)
    {
        at += len;
        n += 1;
    }
    n
}

/// The length of the value character at `at`, if it is one.
fn value_char_at(bytes: &[u8], at: usize) -> Option<usize> {
    folded_char_at(bytes, at, |b| VALUE_BYTES[usize::from(b)])
}

/// The ASCII bytes of the generic pattern's value class, `[A-Za-z0-9_.=+/~!@#$%^&*-]`.
const VALUE_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'_' | b'.'
                    | b'='
                    | b'+'
                    | b'/'
                    | b'~'
                    | b'!'
                    | b'@'
                    | b'#'
                    | b'$'
                    | b'%'
                    | b'^'
                    | b'&'
                    | b'*'
                    | b'-'
            );
        b += 1;
    }
    table
};

/// For each byte: 0 if it is not an ASCII name character of the generic pattern, else a bit
/// that says so and, for a letter, the bit of its lower case (`a` is bit 0).
const NAME_BYTES: [u32; 256] = {
    let mut table = [0; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if c.is_ascii_alphabetic() {
            table[b] = NAME_BYTE | 1 << ((c | 0x20) - b'a');
        } else if c.is_ascii_digit() || matches!(c, b'_' | b'.' | b'-') {
            table[b] = NAME_BYTE;
        }
        b += 1;
    }
    table
};
const NAME_BYTE: u32 = 1 << 31;

/// The letters of each generic keyword, as in [`NAME_BYTES`].
const KEYWORD_LETTERS: [u32; 9] = {
    const fn letters(word: &[u8]) -> u32 {
        let mut bits = 0;
        let mut i = 0;
        while i < word.len() {
            bits |= 1 << (word[i] - b'a');
            i += 1;
        }
        bits
    }
    [
        letters(b"access"),
        letters(b"auth"),
        letters(b"api"),
        letters(b"cred"),
        letters(b"key"),
        letters(b"passw"),
        letters(b"pwd"),
        letters(b"secret"),
        letters(b"token"),
    ]
};

/// Whether `name` (ASCII letters, digits, `_`, `.`, `-`) starts with a generic keyword, in
/// any ASCII case. Runs for every character before every operator of a text: the first byte
/// decides most of the time.
#[inline]
fn generic_keyword_at(name: &[u8]) -> bool {
    fn starts(name: &[u8], keyword: &[u8]) -> bool {
        name.get(..keyword.len())
            .is_some_and(|b| b.eq_ignore_ascii_case(keyword))
    }
    // `| 0x20` lower-cases a letter and maps no other byte of a name onto one.
    match name.first().map(|b| b | 0x20) {
        Some(b'a') => starts(name, b"access") || starts(name, b"auth") || starts(name, b"api"),
        Some(b'c') => starts(name, b"cred"),
        Some(b'k') => starts(name, b"key"),
        Some(b'p') => starts(name, b"passw") || starts(name, b"pwd"),
        Some(b's') => starts(name, b"secret"),
        Some(b't') => starts(name, b"token"),
        _ => false,
    }
}

/// Whether a generic `key = value` value looks like a real secret rather than code, a
/// template or a placeholder.
fn plausible_generic(value: &str) -> bool {
    let has_digit = value.bytes().any(|b| b.is_ascii_digit());
    let has_alpha = value.bytes().any(|b| b.is_ascii_alphabetic());
    if !has_digit || !has_alpha || value.starts_with('$') || entropy(value) < 3.5 {
        return false;
    }
    let lower = value.to_ascii_lowercase();
    const PLACEHOLDERS: &[&str] = &[
        "changeme",
        "change_me",
        "change-me",
        "xxxx",
        "****",
        "your_",
        "your-",
        "yourapi",
        "example",
        "placeholder",
        "dummy",
        "sample",
        "fake",
        "redacted",
        "replace",
        "insert",
        "todo",
        "test",
        "secret",
        "password",
        "process.env",
        "environ",
        "getenv",
    ];
    if PLACEHOLDERS.iter().any(|p| lower.contains(p)) {
        return false;
    }
    // A dotted identifier (`settings.API_KEY`) or a file name (`certs/server2.pem`).
    let dotted = value.split('.').count() > 1
        && value.split('.').all(|part| {
            part.bytes()
                .next()
                .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
                && part.bytes().all(is_word)
        });
    let file = value.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (2..=4).contains(&ext.len())
            && ext.bytes().all(|b| b.is_ascii_lowercase())
    });
    !dotted && !file
}
