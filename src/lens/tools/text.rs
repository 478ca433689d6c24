//! Bounded text: lines read with a cap on what is kept of each, cuts to a byte budget on
//! character boundaries (cuts to a number of characters are `crate::chars`'s), and the
//! binary-file test.

use std::io::{self, BufRead};

/// Bytes looked at to call a file binary (a NUL among them), as git and ripgrep do.
pub(super) const BINARY_PROBE: usize = 8 * 1024;

/// Bytes of a line read past where it is cut, so that a secret the cut falls in is still whole
/// when the line is masked, and is masked rather than shown in part.
pub(super) const MASK_SLACK: usize = 4096;

/// What a call stopped at its time limit says, after what it found.
pub(super) const STOPPED: &str =
    "[this call stopped at its time limit; narrow the path or the pattern]";

/// What a call answers once the lens has ended (never read by a model; it keeps the record).
pub(super) const CANCELLED: &str = "the lens ended; no more tool calls run";

/// What a result cut at the per-result cap ends with.
pub(super) const CUT_NOTE: &str = "\n[cut: this answer reached its size cap]";

pub(super) fn is_binary(head: &[u8]) -> bool {
    memchr::memchr(0, &head[..head.len().min(BINARY_PROBE)]).is_some()
}

/// Cuts `s` to at most `max` bytes on a character boundary; true when it cut.
pub(super) fn cut_bytes(s: &mut String, max: usize) -> bool {
    if s.len() <= max {
        return false;
    }
    let end = s.floor_char_boundary(max);
    s.truncate(end);
    true
}

/// `s` cut to at most `max` bytes, with `…` when cut.
pub(super) fn clip_bytes(s: &str, max: usize) -> String {
    let mut out = s.to_owned();
    if cut_bytes(&mut out, max) {
        out.push('…');
    }
    out
}

/// `n` and the noun, singular or plural: "1 file", "3 files".
pub(super) fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// A size as the descriptions give it: "64 KiB", "1 MB", or bytes.
pub(super) fn size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    match bytes {
        0 => "0 bytes".to_owned(),
        b if b % (KIB * KIB) == 0 => format!("{} MiB", b / (KIB * KIB)),
        b if b % 1_000_000 == 0 => format!("{} MB", b / 1_000_000),
        b if b % KIB == 0 => format!("{} KiB", b / KIB),
        b => format!("{b} bytes"),
    }
}

/// Drops a character left incomplete at the end of `bytes` by a cut, so a lossy reading does
/// not end in a replacement character that the file does not have.
fn trim_partial_char(bytes: &mut Vec<u8>) {
    let tail = bytes.len().saturating_sub(3);
    if let Some(lead) = (tail..bytes.len()).rev().find(|&i| bytes[i] & 0xC0 != 0x80) {
        let need = match bytes[lead] {
            b if b >= 0xF0 => 4,
            b if b >= 0xE0 => 3,
            b if b >= 0xC0 => 2,
            _ => 1,
        };
        if bytes.len() - lead < need {
            bytes.truncate(lead);
        }
    }
}

/// A line of text for the model: lossy UTF-8, no trailing `\r`.
pub(super) fn show(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    String::from_utf8_lossy(line).into_owned()
}

/// Reads lines keeping at most `keep` bytes of each, so one endless line costs no memory.
pub(super) struct Lines<R> {
    inner: R,
    keep: usize,
    line: Vec<u8>,
}

impl<R: BufRead> Lines<R> {
    pub fn new(inner: R, keep: usize) -> Self {
        Lines {
            inner,
            keep,
            line: Vec::new(),
        }
    }

    /// The next line (without its `\n`) and whether it was cut; `None` at the end.
    pub fn next_line(&mut self) -> io::Result<Option<(&[u8], bool)>> {
        self.line.clear();
        let mut cut = false;
        let mut any = false;
        loop {
            let available = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                break;
            }
            any = true;
            let newline = memchr::memchr(b'\n', available);
            let chunk = &available[..newline.unwrap_or(available.len())];
            let room = self.keep.saturating_sub(self.line.len());
            cut |= chunk.len() > room;
            self.line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            let used = newline.map_or(available.len(), |i| i + 1);
            self.inner.consume(used);
            if newline.is_some() {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        if cut {
            trim_partial_char(&mut self.line);
        }
        Ok(Some((&self.line, cut)))
    }
}
