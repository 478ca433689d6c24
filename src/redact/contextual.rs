//! The rules that look past one token: private-key blocks (several lines), AWS secret keys
//! (named as one, or next to their key ID) and passwords in URLs.

use std::sync::LazyLock;

use regex::Regex;

use super::rules::compile;
use super::{
    AWS_PAIR_LINES, AWS_SECRET, Mode, PRIVATE_KEY, SecretMatch, URL_PASSWORD, entropy,
    floor_boundary,
};

// The patterns outside [`RULES`], each compiled on first need like the rules: a text without
// `://` never pays for the URL pattern, and so on (compiling all of them up front was most of
// a short review's time).
pub(super) static PEM_BEGIN_RE: LazyLock<Regex> =
    LazyLock::new(|| compile(r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"));
pub(super) static PEM_END_RE: LazyLock<Regex> =
    LazyLock::new(|| compile(r"-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"));

pub(super) static AWS_SECRET_RE: LazyLock<Regex> = LazyLock::new(|| {
    compile(concat!(
        r"(?i)(?:aws|amazon)[a-z0-9_.-]{0,30}secret[a-z0-9_.-]{0,30}['\x22]?[ \t]*",
        r"(?::=|=>|=|:)[ \t]*[`'\x22]?([A-Za-z0-9/+]{40})",
    ))
});
pub(super) static AWS_SHAPED_RE: LazyLock<Regex> = LazyLock::new(|| compile(r"[A-Za-z0-9/+]{40}"));
/// A password in a URL. User and password are open repeats: bounded repeats of a Unicode class
/// (`{1,200}`) compile to a large automaton (`cargo bench --bench pipeline -- secrets`); the
/// bounds ([`URL_USER_MAX`], [`URL_PASSWORD_MAX`]) are checked on the captures instead.
pub const URL_PASSWORD_PATTERN: &str = r"[A-Za-z][A-Za-z0-9+.-]{1,20}://([^\s/:@]+):([^\s/@]+)@";
pub(super) static URL_PASSWORD_RE: LazyLock<Regex> =
    LazyLock::new(|| compile(URL_PASSWORD_PATTERN));
const URL_USER_MAX: usize = 100;
const URL_PASSWORD_MAX: usize = 200;

/// The literal a URL with a password needs.
pub(super) const URL_KEYWORD: &str = "://";
/// Literals one of which a named AWS secret key needs.
pub(super) const AWS_SECRET_KEYWORDS: &[&str] = &["secret", "SECRET", "Secret"];

pub(super) const PEM_KEYWORD: &str = "PRIVATE KEY";
/// How far after a BEGIN line a private key's END line is looked for.
pub(super) const PEM_WINDOW: usize = 64 * 1024;

/// Whether the byte at `i` continues a base64 run (so a 40-character match is part of a longer
/// string, not a key).
fn base64_at(bytes: &[u8], i: usize) -> bool {
    bytes
        .get(i)
        .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'/' || b == b'+')
}

/// `aws_secret_access_key = <40 characters>` and the like.
pub(super) fn named_aws_secrets(text: &str, found: &mut Vec<SecretMatch>) {
    let bytes = text.as_bytes();
    for caps in AWS_SECRET_RE.captures_iter(text) {
        let Some(value) = caps.get(1) else { continue };
        if base64_at(bytes, value.end()) || value.as_str().ends_with("EXAMPLEKEY") {
            continue;
        }
        found.push(SecretMatch {
            rule: AWS_SECRET,
            range: value.range(),
        });
    }
}

/// Whether `aws` or `amazon` may come before the `secret` at `at` as [`AWS_SECRET_RE`]
/// requires (at most 30 name characters between), so that a text saying "secret" does not
/// compile the pattern: in any ASCII case, or anything where an `ſ` is near (case folding
/// lets it stand for `s`; no other character folds onto a letter of either name).
pub(super) fn aws_before(bytes: &[u8], at: usize) -> bool {
    // 30 characters of up to 3 bytes, after the longer name; on the line of `at`, as the
    // pattern's are, so that a line's keywords do not depend on the line before it.
    let window = &bytes[at.saturating_sub(30 * 3 + "amazon".len())..at];
    let window = memchr::memrchr(b'\n', window).map_or(window, |n| &window[n + 1..]);
    memchr::memmem::find(window, "\u{17F}".as_bytes()).is_some()
        || window.windows(3).any(|w| w.eq_ignore_ascii_case(b"aws"))
        || window.windows(6).any(|w| w.eq_ignore_ascii_case(b"amazon"))
}

/// A key-shaped 40-character value within [`AWS_PAIR_LINES`] lines of an AWS access key ID.
pub(super) fn paired_aws_secrets(text: &str, mode: Mode, found: &mut Vec<SecretMatch>) {
    let bytes = text.as_bytes();
    let ids: Vec<usize> = found
        .iter()
        .filter(|m| m.rule == "aws-access-token")
        .map(|m| m.range.start)
        .collect();
    let mut extra = Vec::new();
    for id in ids {
        let mut start = id;
        for _ in 0..=AWS_PAIR_LINES {
            start = text[..start].rfind('\n').unwrap_or(0);
        }
        let mut end = id;
        for _ in 0..=AWS_PAIR_LINES {
            end = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
        }
        let window = &text[start..end];
        for m in AWS_SHAPED_RE.find_iter(window) {
            let range = start + m.start()..start + m.end();
            let token = m.as_str();
            let plausible = token.bytes().any(|b| b.is_ascii_digit())
                && token.bytes().any(|b| b.is_ascii_lowercase())
                && token.bytes().any(|b| b.is_ascii_uppercase())
                && (mode == Mode::Redact || entropy(token) >= 4.0);
            if plausible
                && !base64_at(bytes, range.end)
                && !(range.start > 0 && base64_at(bytes, range.start - 1))
            {
                extra.push(SecretMatch {
                    rule: AWS_SECRET,
                    range,
                });
            }
        }
    }
    found.extend(extra);
}

/// `scheme://user:password@host`: the password. Template variables are not passwords.
pub(super) fn url_passwords(text: &str, mode: Mode, found: &mut Vec<SecretMatch>) {
    for caps in URL_PASSWORD_RE.captures_iter(text) {
        let (Some(user), Some(value)) = (caps.get(1), caps.get(2)) else {
            continue;
        };
        if user.as_str().chars().count() > URL_USER_MAX
            || value.as_str().chars().count() > URL_PASSWORD_MAX
        {
            continue;
        }
        let v = value.as_str();
        let template =
            v.starts_with(['$', '{', '<', '%']) || v.bytes().all(|b| b == b'*' || b == b'x');
        let placeholder = mode == Mode::Detect
            && (matches!(
                v.to_ascii_lowercase().as_str(),
                "password" | "pass" | "pwd" | "secret"
            ) || v.len() < 4);
        if !template && !placeholder {
            found.push(SecretMatch {
                rule: URL_PASSWORD,
                range: value.range(),
            });
        }
    }
}

/// Private-key PEM blocks. With an END line, the whole block; without one (a diff line, a
/// truncated hunk), the BEGIN line and the key-body-looking text after it.
pub(super) fn private_keys(text: &str, mode: Mode, found: &mut Vec<SecretMatch>) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(begin) = PEM_BEGIN_RE.find_at(text, at) {
        at = begin.end();
        // `-----BEGIN … KEY----------END … KEY-----`: the BEGIN pattern's dashes and blanks
        // reach over an empty block.
        if begin.as_str().contains("-----END") {
            continue;
        }
        let window_end = floor_boundary(text, begin.end().saturating_add(PEM_WINDOW));
        let next_begin = PEM_BEGIN_RE.find_at(text, begin.end()).map(|m| m.start());
        let end = PEM_END_RE
            .find(&text[begin.end()..window_end])
            .map(|m| begin.end() + m.end())
            .filter(|&e| next_begin.is_none_or(|nb| e <= nb));
        let range = match end {
            // gitleaks' tests: a block with no key body (`…-----\nanything\n-----END…`) is
            // an example.
            Some(end) if key_body_len(&bytes[begin.end()..end]) < PEM_MIN_BODY => continue,
            Some(end) => begin.start()..end,
            None => {
                let body_end = key_body_end(bytes, begin.end());
                let body = &bytes[begin.end()..body_end];
                let base64 = body.iter().filter(|b| b.is_ascii_alphanumeric()).count();
                // In detection, a BEGIN line counts when a key body follows or when nothing
                // else is on its line (the body is on the next lines); code that merely names
                // the header (`starts_with("-----BEGIN …")`) does not.
                if mode == Mode::Detect && base64 < 64 && !rest_of_line_blank(bytes, begin.end()) {
                    continue;
                }
                let mut end = body_end;
                while end > begin.end() && bytes[end - 1].is_ascii_whitespace() {
                    end -= 1;
                }
                begin.start()..end
            }
        };
        at = range.end.max(at);
        found.push(SecretMatch {
            rule: PRIVATE_KEY,
            range,
        });
    }
}

/// Base64 characters a private key's body holds at least (gitleaks: 64).
const PEM_MIN_BODY: usize = 64;

fn key_body_len(block: &[u8]) -> usize {
    block
        .iter()
        .filter(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/'))
        .count()
}

fn key_body_end(bytes: &[u8], mut i: usize) -> usize {
    while let Some(&b) = bytes.get(i) {
        let body = b.is_ascii_alphanumeric()
            || matches!(b, b'+' | b'/' | b'=' | b'\\' | b':' | b',')
            || b.is_ascii_whitespace()
            || (b == b'-' && !bytes[i..].starts_with(b"-----"));
        if !body {
            break;
        }
        i += 1;
    }
    i
}

fn rest_of_line_blank(bytes: &[u8], from: usize) -> bool {
    for &b in &bytes[from..] {
        match b {
            b'\n' => return true,
            b' ' | b'\t' | b'\r' => {}
            _ => return false,
        }
    }
    true
}
