//! Bytes to text: the UTF-8 check, and the lossy decode that lets a diff of Latin-1 or mixed
//! files be reviewed (each undecodable sequence becomes U+FFFD, as `String::from_utf8_lossy`
//! has it; the property tests in `tests.rs` hold both decodes to it).

use std::ops::Range;

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

/// [`lossy_text`] of `buf[input]`, written into `buf` itself: where the decoded text lies in
/// `buf` afterwards.
///
/// A diff read from a file is decoded where it was read, so that the decode writes into
/// memory the read has already touched rather than into a fresh copy: first touching memory
/// costs more than the decode on a virtual machine (docs/benchmarks.md). The text grows
/// (U+FFFD is three bytes where a bad byte was one) into the room the caller left around
/// `input`; a caller that allocates it zeroed (`vec![0; n]`) gets it without touching it.
/// A large input is decoded in two halves at once: the first forward into the room before
/// it, the second backward into the room after it, and the second's text is then moved up
/// to meet the first's. A half whose text outgrows its room has the rest decoded apart and
/// joined: slower, the same text.
pub fn lossy_in_place(buf: &mut Vec<u8>, input: Range<usize>) -> Range<usize> {
    let two = crate::par::threads() > 1 && input.len() >= HALVES_FROM_BYTES;
    decode_in_place(buf, input, two, true)
}

/// From this much input a lossy decode runs in two halves at once. By stage
/// (`scripts/bench-stages.sh`), the 1.5 MB non-utf8 diff decoded in 1.4-1.55 ms in one piece
/// and 1.95-1.98 ms in two; chardet's history (8.7 MB) in 17-21 ms in two, where one piece
/// outgrew its room (30-32 ms).
const HALVES_FROM_BYTES: usize = 4 * 1024 * 1024;

/// [`lossy_in_place`], in two halves or in one; the second half on a thread of its own when
/// `threaded` (the tests decode thousands of short texts in halves on one thread).
pub(super) fn decode_in_place(
    buf: &mut Vec<u8>,
    input: Range<usize>,
    two: bool,
    threaded: bool,
) -> Range<usize> {
    if !two || input.is_empty() {
        let (head, text) = backward(&mut buf[input.start..], input.len());
        let text = input.start + text.start..input.start + text.end;
        return join(buf, [0..0, text], [String::new(), head]);
    }
    let cut = safe_cut(buf, input.start + input.len() / 2).max(input.start);
    let (front, back) = buf.split_at_mut(cut);
    let back_len = input.end - cut;
    let ((first, rest), (head, second)) = match threaded {
        true => std::thread::scope(|scope| {
            let second = scope.spawn(|| backward(back, back_len));
            let first = forward(front, input.start);
            // A panic in the helper is a bug: raised again here.
            let second = second
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e));
            (first, second)
        }),
        false => (forward(front, input.start), backward(back, back_len)),
    };
    let second = cut + second.start..cut + second.end;
    join(buf, [first, second], [rest, head])
}

/// The text of `[in place, apart, apart, in place]` as one range of `buf`: the second part in
/// place moved up to the first when nothing was decoded apart, else all four copied anew.
fn join(
    buf: &mut Vec<u8>,
    [first, second]: [Range<usize>; 2],
    [rest, head]: [String; 2],
) -> Range<usize> {
    if rest.is_empty() && head.is_empty() {
        if first.is_empty() {
            return second;
        }
        let len = second.len();
        buf.copy_within(second, first.end);
        return first.start..first.end + len;
    }
    let mut text = Vec::with_capacity(first.len() + rest.len() + head.len() + second.len());
    text.extend_from_slice(&buf[first]);
    text.extend_from_slice(rest.as_bytes());
    text.extend_from_slice(head.as_bytes());
    text.extend_from_slice(&buf[second]);
    *buf = text;
    0..buf.len()
}

/// Decodes `buf[from..]` forward into `buf` from its start (the room before `from`): the text
/// written in place, and the text of the rest decoded apart once a block's text would reach
/// into bytes not yet decoded.
fn forward(buf: &mut [u8], from: usize) -> (Range<usize>, String) {
    let mut fixed = Vec::new();
    let (mut write, mut read) = (0, from);
    while read < buf.len() {
        let end = read + block_end(&buf[read..]);
        if utf8(&buf[read..end]).is_some() {
            buf.copy_within(read..end, write);
            write += end - read;
        } else {
            let n = replace_bad_sequences(&buf[read..end], &mut fixed);
            if write + n > end {
                return (0..write, lossy_text(&buf[read..]));
            }
            buf[write..write + n].copy_from_slice(&fixed[..n]);
            write += n;
        }
        read = end;
    }
    (0..write, String::new())
}

/// Decodes `buf[..len]` backward, a block at a time from its end, each block's text written
/// just before the text of the block after it, the last ending at the end of `buf` (the room
/// after `len`): the text decoded apart once a block's text would reach into bytes not yet
/// decoded, and the text written in place.
fn backward(buf: &mut [u8], len: usize) -> (String, Range<usize>) {
    let mut fixed = Vec::new();
    let (mut write, mut end) = (buf.len(), len);
    while end > 0 {
        let start = block_start(buf, end);
        if utf8(&buf[start..end]).is_some() {
            write -= end - start;
            buf.copy_within(start..end, write);
        } else {
            let n = replace_bad_sequences(&buf[start..end], &mut fixed);
            let Some(to) = write.checked_sub(n).filter(|&to| to >= start) else {
                return (lossy_text(&buf[..end]), write..buf.len());
            };
            buf[to..write].copy_from_slice(&fixed[..n]);
            write = to;
        }
        end = start;
    }
    (String::new(), write..buf.len())
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

/// Where the block that ends at `end` of `bytes` starts: [`LOSSY_BLOCK`] bytes back, moved
/// back to a [`safe_cut`].
fn block_start(bytes: &[u8], end: usize) -> usize {
    match end.checked_sub(LOSSY_BLOCK) {
        Some(cut) if cut > 0 => safe_cut(bytes, cut),
        _ => 0,
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
