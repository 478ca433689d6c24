//! Bytes to text: the UTF-8 check, and the lossy decode that lets a diff of Latin-1 or mixed
//! files be reviewed (each undecodable sequence becomes U+FFFD, as `String::from_utf8_lossy`
//! has it; the property tests in `tests.rs` hold both decodes to it).

/// `bytes` as text, if they are UTF-8. Checked with SIMD: the standard library's check walks
/// text that is not all ASCII a byte at a time, four times slower on a big diff.
pub fn utf8(bytes: &[u8]) -> Option<&str> {
    simdutf8::basic::from_utf8(bytes).ok()
}

/// `bytes` decoded as `String::from_utf8_lossy` decodes them: each undecodable sequence
/// becomes U+FFFD, so every line keeps its place and the rest of its bytes.
///
/// A block at a time: one without a bad byte, as most are even in a Latin-1 diff, is checked
/// with SIMD and copied; one with a bad byte is written out with each bad sequence replaced.
pub fn lossy_text(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + bytes.len() / 16);
    let mut fixed = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let (block, tail) = rest.split_at(block_end(rest));
        match utf8(block) {
            Some(text) => out.push_str(text),
            None => {
                let n = replace_bad_sequences(block, &mut fixed);
                // Always UTF-8: valid runs and U+FFFD.
                out.push_str(utf8(&fixed[..n]).unwrap_or_default());
            }
        }
        rest = tail;
    }
    out
}

const REPLACEMENT: &[u8] = "\u{FFFD}".as_bytes();

/// How much of the input the lossy decodes take at a time.
pub(super) const LOSSY_BLOCK: usize = 4096;

/// Where the block at the start of `bytes` ends: [`LOSSY_BLOCK`] bytes in, moved back to a
/// [`safe_cut`].
fn block_end(bytes: &[u8]) -> usize {
    match bytes.len() {
        n if n <= LOSSY_BLOCK => n,
        _ => safe_cut(bytes, LOSSY_BLOCK),
    }
}

/// `at`, moved back to before a byte that is not a continuation byte (`10xxxxxx`): no
/// sequence, good or bad, spans such a cut, since a character or an undecodable run is a
/// first byte and its continuations, so the text on each side decodes alone as it does in
/// the whole. When the four bytes up to `at` are all continuations, the cut stays at `at`:
/// no sequence has more than three after its first byte.
fn safe_cut(bytes: &[u8], at: usize) -> usize {
    let continuation = |i: usize| bytes[i] & 0xC0 == 0x80;
    (at.saturating_sub(3)..=at)
        .rev()
        .find(|&i| !continuation(i))
        .unwrap_or(at)
}

const HIGH_BITS: u64 = 0x8080_8080_8080_8080;

/// Writes `block` at the start of `out` with each undecodable sequence replaced by U+FFFD,
/// and returns the length written. A sequence the block ends in the middle of is one more
/// (blocks end only where no sequence is cut, so that is the end of the text, as
/// `from_utf8_lossy` has it).
///
/// `out` is written by index, never pushed to: it is made long enough for the worst case
/// (every byte a U+FFFD, and a word of slack) once and reused, and ASCII is copied eight
/// bytes at a time, the write moving on past those that were ASCII.
fn replace_bad_sequences(block: &[u8], out: &mut Vec<u8>) -> usize {
    let room = block.len() * REPLACEMENT.len() + 8;
    if out.len() < room {
        out.resize(room, 0);
    }
    let (mut i, mut o) = (0, 0);
    while let Some(&first) = block.get(i) {
        if first.is_ascii() {
            match block.get(i..i + 8) {
                Some(word) => {
                    out[o..o + 8].copy_from_slice(word);
                    let high = u64::from_le_bytes(word.try_into().unwrap_or_default()) & HIGH_BITS;
                    // The ASCII bytes before the first that is not (8 when all are).
                    let ascii = (high.trailing_zeros() / 8) as usize;
                    i += ascii;
                    o += ascii;
                }
                None => {
                    out[o] = first;
                    i += 1;
                    o += 1;
                }
            }
            continue;
        }
        let (len, bad) = match sequence(&block[i..]) {
            Sequence::Char(n) => (n, false),
            Sequence::Bad(n) => (n, true),
            Sequence::Cut => (block.len() - i, true),
        };
        match bad {
            true => {
                out[o..o + REPLACEMENT.len()].copy_from_slice(REPLACEMENT);
                o += REPLACEMENT.len();
            }
            false => {
                out[o..o + len].copy_from_slice(&block[i..i + len]);
                o += len;
            }
        }
        i += len;
    }
    o
}

/// What starts at a byte that is not ASCII.
enum Sequence {
    /// A character of this many bytes.
    Char(usize),
    /// This many bytes that are no character: the longest start of one, or the one byte that
    /// starts none (what `from_utf8` reports as the error's length).
    Bad(usize),
    /// The start of a character that the text ends in the middle of.
    Cut,
}

/// For each byte that is not ASCII, as a first byte: the length of the character it starts
/// (0: none) and the bounds of the second byte (the table of well-formed sequences in the
/// Unicode standard, 3.9, table 3-7; every later byte is a plain continuation).
static FIRST: [(u8, u8, u8); 128] = {
    let mut table = [(0, 0, 0); 128];
    let mut b = 0x80;
    while b <= 0xFF {
        table[b - 0x80] = match b {
            0xC2..=0xDF => (2, 0x80, 0xBF),
            0xE0 => (3, 0xA0, 0xBF),
            0xE1..=0xEC | 0xEE..=0xEF => (3, 0x80, 0xBF),
            0xED => (3, 0x80, 0x9F),
            0xF0 => (4, 0x90, 0xBF),
            0xF1..=0xF3 => (4, 0x80, 0xBF),
            0xF4 => (4, 0x80, 0x8F),
            _ => (0, 0, 0),
        };
        b += 1;
    }
    table
};

/// What `b` starts with, `b[0]` not ASCII.
fn sequence(b: &[u8]) -> Sequence {
    let (len, low, high) = FIRST[usize::from(b[0] & 0x7F)];
    if len == 0 {
        return Sequence::Bad(1);
    }
    match b.get(1) {
        None => return Sequence::Cut,
        Some(&c) if c < low || c > high => return Sequence::Bad(1),
        Some(_) => {}
    }
    for i in 2..usize::from(len) {
        match b.get(i) {
            None => return Sequence::Cut,
            Some(&c) if c & 0xC0 != 0x80 => return Sequence::Bad(i),
            Some(_) => {}
        }
    }
    Sequence::Char(usize::from(len))
}
