//! Secret detection and masking: the one function every output goes through.
//!
//! [`redact`] masks every secret a rule matches with `[REDACTED <rule-id>]`. Every outbound
//! channel (terminal, JSON, Markdown, SARIF, prompts, posted comments, logs) calls it, so it is
//! cheap on clean text (one literal pre-filter pass, no allocation) and idempotent (it masks
//! until nothing matches, and a mask never matches a rule).
//!
//! [`find_secrets`] is the detector behind the `builtin` lens. It uses the same rules plus:
//! - per-rule Shannon-entropy thresholds and plausibility checks (placeholders such as
//!   `ghp_xxxx…` or `xoxb-your-token-here` are not reported);
//! - `generic-api-key` (keyword + assignment + a 10–150 character value with entropy ≥ 3.5,
//!   at least one letter and one digit, and no template or placeholder look).
//!
//! Choices made here:
//! - `generic-api-key` is **detection only**: `redact` runs on code shown to reviewers and on
//!   their findings, and a generic rule would garble cache keys, hashes and identifiers there.
//!   The builtin lens never shows a detected value, generic or not.
//! - `redact` ignores entropy thresholds: masking a token-shaped placeholder costs nothing,
//!   missing a real token costs a rotation. The `…EXAMPLE` AWS allowlist applies to both.
//! - `gitleaks:allow` markers are ignored: the PR author controls them.
//! - Boundaries survive ANSI colour codes (`\x1b[31m`) and JSON/string escapes (`\n`, `\t`)
//!   on both sides of a token.
//! - A multi-line private-key block keeps its line breaks (and a leading diff `+`/`-`/` `
//!   marker) when masked, so a masked diff keeps its line numbers.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

/// One secret found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretMatch {
    /// Rule id, e.g. `github-pat`.
    pub rule: &'static str,
    /// Byte range of the secret in the scanned text.
    pub range: Range<usize>,
}

/// Masks every secret in `text`. Borrows when nothing matches.
pub fn redact(text: &str) -> Cow<'_, str> {
    let found = scan(text, Mode::Redact);
    if found.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = mask(text, &found);
    // Masking changes the context around a secret (a token that was glued to another one can
    // become free-standing), so repeat until nothing matches: that makes `redact` idempotent.
    for _ in 0..8 {
        let again = scan(&out, Mode::Redact);
        if again.is_empty() {
            break;
        }
        out = mask(&out, &again);
    }
    Cow::Owned(out)
}

/// A writer that masks secrets in everything written through it: the log writer
/// (`tracing_subscriber::fmt().with_writer(redact::redacting_stderr)`), so no log line carries
/// a secret whatever a field holds. The formatter writes one event per call, so a secret is
/// never split across two writes.
pub struct RedactingWriter<W: std::io::Write>(pub W);

impl<W: std::io::Write> std::io::Write for RedactingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(redact(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// Standard error through [`RedactingWriter`].
pub fn redacting_stderr() -> RedactingWriter<std::io::Stderr> {
    RedactingWriter(std::io::stderr())
}

/// Every secret in `text`, in order, without overlaps (a specific rule wins over
/// `generic-api-key`). See the module documentation for how this differs from [`redact`].
pub fn find_secrets(text: &str) -> Vec<SecretMatch> {
    scan(text, Mode::Detect)
}

/// A human name for a rule id (`github-pat` → `GitHub personal access token`).
pub fn rule_name(rule: &str) -> Option<&'static str> {
    match rule {
        PRIVATE_KEY => return Some("private key"),
        AWS_SECRET => return Some("AWS secret access key"),
        URL_PASSWORD => return Some("password in a URL"),
        _ => {}
    }
    RULES.iter().find(|r| r.id == rule).map(|r| r.name)
}

/// Rule id of the `generic-api-key` rule, whose matches are less certain than the others.
pub const GENERIC: &str = "generic-api-key";
const PRIVATE_KEY: &str = "private-key";
/// An AWS secret access key: named as one (`aws_secret_access_key = …`), or a 40-character
/// key-shaped value within a few lines of an AWS access key ID (the pair is how they leak).
const AWS_SECRET: &str = "aws-secret-access-key";
/// The password of a `scheme://user:password@host` URL.
const URL_PASSWORD: &str = "url-password";
/// Lines either side of an AWS access key ID searched for its secret key.
const AWS_PAIR_LINES: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Redact,
    Detect,
}

/// One token rule. `pattern` matches the token itself; boundaries are checked by hand (the
/// regex crate has no look-around) so they can treat ANSI codes and escapes as separators.
struct Rule {
    id: &'static str,
    name: &'static str,
    /// Literals one of which every match contains (case-sensitive).
    keywords: &'static [&'static str],
    pattern: &'static str,
    /// The byte before the token must not be a word byte (`[A-Za-z0-9_]`).
    left: bool,
    /// The byte after the token must not satisfy this.
    right: Option<fn(u8) -> bool>,
    /// Detection only: minimum Shannon entropy of the token.
    min_entropy: f64,
    /// Detection only: an extra plausibility check on the token.
    plausible: Option<fn(&str) -> bool>,
    /// Both modes: tokens that are known not to be secrets.
    allow: Option<fn(&str) -> bool>,
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn is_token(b: u8) -> bool {
    is_word(b) || b == b'-'
}

const RULES: &[Rule] = &[
    Rule {
        id: "github-pat",
        name: "GitHub personal access token",
        keywords: &["ghp_"],
        pattern: r"ghp_[0-9A-Za-z]{36,}",
        left: false,
        right: None,
        min_entropy: 3.0,
        plausible: None,
        allow: None,
    },
    Rule {
        id: "github-oauth",
        name: "GitHub OAuth access token",
        keywords: &["gho_"],
        pattern: r"gho_[0-9A-Za-z]{36,}",
        left: false,
        right: None,
        min_entropy: 3.0,
        plausible: None,
        allow: None,
    },
    Rule {
        id: "github-app-token",
        name: "GitHub App token",
        keywords: &["ghu_", "ghs_"],
        // `ghs_` also covers the stateless `ghs_<APPID>_<JWT>` installation tokens.
        pattern: r"ghu_[0-9A-Za-z]{36,}|ghs_[0-9A-Za-z_.-]{36,}",
        left: false,
        right: None,
        min_entropy: 3.0,
        plausible: None,
        allow: None,
    },
    Rule {
        id: "github-refresh-token",
        name: "GitHub refresh token",
        keywords: &["ghr_"],
        pattern: r"ghr_[0-9A-Za-z]{36,}",
        left: false,
        right: None,
        min_entropy: 3.0,
        plausible: None,
        allow: None,
    },
    Rule {
        id: "github-fine-grained-pat",
        name: "GitHub fine-grained personal access token",
        keywords: &["github_pat_"],
        pattern: r"github_pat_[0-9A-Za-z_]{82,}",
        left: false,
        right: None,
        min_entropy: 3.0,
        plausible: None,
        allow: None,
    },
    Rule {
        id: "aws-access-token",
        name: "AWS access key ID",
        keywords: &["AKIA", "ASIA", "ABIA", "ACCA", "A3T"],
        pattern: r"(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}",
        left: true,
        right: Some(is_word),
        min_entropy: 3.0,
        plausible: None,
        // AWS documents its example keys with this suffix.
        allow: Some(|t| t.ends_with("EXAMPLE")),
    },
    Rule {
        id: "slack-token",
        name: "Slack token",
        keywords: &["xox", "xapp-"],
        pattern: r"xox[abeoprs]-[0-9A-Za-z-]{10,}|xapp-[0-9]-[0-9A-Za-z]+-[0-9]+-[0-9A-Za-z]+",
        left: true,
        right: None,
        min_entropy: 3.0,
        // Real Slack tokens carry numeric workspace/user ids; `xoxb-your-token-here` does not.
        plausible: Some(|t| longest_digit_run(t) >= 6),
        allow: None,
    },
    Rule {
        id: "slack-webhook-url",
        name: "Slack webhook URL",
        keywords: &["hooks.slack.com"],
        pattern: r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,}",
        left: false,
        right: None,
        min_entropy: 0.0,
        plausible: None,
        allow: None,
    },
    Rule {
        id: "gcp-api-key",
        name: "Google Cloud API key",
        keywords: &["AIza"],
        pattern: r"AIza[0-9A-Za-z_-]{35}",
        left: true,
        right: Some(is_token),
        min_entropy: 4.0,
        plausible: None,
        allow: None,
    },
    Rule {
        id: "openai-api-key",
        name: "OpenAI API key",
        keywords: &["sk-proj-", "sk-svcacct-", "sk-admin-", "T3BlbkFJ"],
        pattern: r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20,}",
        left: true,
        right: None,
        min_entropy: 3.0,
        plausible: None,
        allow: None,
    },
    Rule {
        id: "anthropic-api-key",
        name: "Anthropic API key",
        keywords: &["sk-ant-"],
        // Covers `sk-ant-api03-…AA` and the admin keys `sk-ant-admin01-…AA`.
        pattern: r"sk-ant-[A-Za-z0-9_-]{20,}",
        left: true,
        right: None,
        min_entropy: 3.0,
        plausible: None,
        allow: None,
    },
    Rule {
        id: "jwt",
        name: "JSON Web Token",
        keywords: &["eyJ"],
        pattern: r"eyJ[A-Za-z0-9_-]{15,}\.ey[A-Za-z0-9_-]{15,}\.[A-Za-z0-9_-]*={0,2}",
        left: true,
        right: None,
        min_entropy: 3.0,
        plausible: None,
        allow: None,
    },
    Rule {
        id: "gitlab-pat",
        name: "GitLab personal access token",
        keywords: &["glpat-"],
        pattern: r"glpat-[0-9A-Za-z_-]{20,}",
        left: false,
        right: None,
        min_entropy: 3.0,
        plausible: None,
        allow: None,
    },
    Rule {
        id: "npm-token",
        name: "npm access token",
        keywords: &["npm_"],
        pattern: r"npm_[A-Za-z0-9]{36}",
        left: true,
        right: Some(is_word),
        min_entropy: 3.0,
        plausible: None,
        allow: None,
    },
    Rule {
        id: "huggingface-token",
        name: "Hugging Face access token",
        keywords: &["hf_"],
        pattern: r"hf_[A-Za-z]{34}",
        left: true,
        right: Some(is_word),
        min_entropy: 3.0,
        plausible: None,
        allow: None,
    },
    Rule {
        id: "pypi-token",
        name: "PyPI upload token",
        keywords: &["pypi-AgEIcHlwaS5vcmc"],
        pattern: r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",
        left: false,
        right: None,
        min_entropy: 0.0,
        plausible: None,
        allow: None,
    },
    Rule {
        id: "stripe-key",
        name: "Stripe API key",
        keywords: &[
            "sk_test_", "sk_live_", "sk_prod_", "rk_test_", "rk_live_", "rk_prod_",
        ],
        pattern: r"(?:sk|rk)_(?:test|live|prod)_[0-9A-Za-z]{10,}",
        left: true,
        right: None,
        min_entropy: 2.0,
        plausible: None,
        allow: None,
    },
    Rule {
        id: "sendgrid-key",
        name: "SendGrid API key",
        keywords: &["SG."],
        pattern: r"SG\.[0-9A-Za-z_-]{22}\.[0-9A-Za-z_-]{43}",
        left: true,
        right: Some(is_token),
        min_entropy: 2.0,
        plausible: None,
        allow: None,
    },
];

struct Compiled {
    /// Every literal some pattern needs ([`Compiled::literals`]), in one automaton: one pass
    /// over a text tells which patterns can match in it.
    any: aho_corasick::AhoCorasick,
    /// The literals of `any`, by pattern id, and what each one enables.
    literals: Vec<(&'static str, Needs)>,
    /// Compiled on first need: most texts never hold most rules' keywords, and compiling every
    /// pattern up front was a measurable part of a short run.
    rules: Vec<std::sync::OnceLock<Regex>>,
}

/// What a literal's presence lets run: one rule of [`RULES`], or a pattern outside them.
#[derive(Debug, Clone, Copy)]
enum Needs {
    Rule(usize),
    PrivateKey,
    Url,
    AwsSecretName,
}

/// Which patterns can match in a text: their literals occur in it.
#[derive(Debug, Default)]
struct Present {
    /// Bit `i`: rule `i` of [`RULES`].
    rules: u64,
    private_key: bool,
    url: bool,
    aws_secret_name: bool,
}

impl Present {
    fn add(&mut self, needs: Needs) {
        match needs {
            Needs::Rule(i) => self.rules |= 1 << i,
            Needs::PrivateKey => self.private_key = true,
            Needs::Url => self.url = true,
            Needs::AwsSecretName => self.aws_secret_name = true,
        }
    }

    fn any(&self) -> bool {
        self.rules != 0 || self.private_key || self.url || self.aws_secret_name
    }
}

impl Compiled {
    /// The literals' matches in `text`, except a `://` that no `@` follows before the next
    /// `/` or blank: [`URL_PASSWORD_PATTERN`] cannot match there, and most texts that hold
    /// `://` hold plain links (a file of documentation holds hundreds).
    fn matches<'t>(&'t self, text: &'t str) -> impl Iterator<Item = aho_corasick::Match> + 't {
        let bytes = text.as_bytes();
        self.any
            .find_iter(text)
            .filter(move |m| match self.literals[m.pattern().as_usize()].1 {
                Needs::Url => bytes[m.end()..]
                    .iter()
                    .find(|&&b| b == b'@' || b == b'/' || b.is_ascii_whitespace())
                    .is_some_and(|&b| b == b'@'),
                Needs::AwsSecretName => aws_before(bytes, m.start()),
                _ => true,
            })
    }

    /// Which patterns can match in `text`. The automaton reports matches that do not overlap,
    /// so a literal starting inside another one's match is looked for by hand (matches are
    /// rare: this runs only on the parts of a text that hold a keyword).
    fn present(&self, text: &str) -> Present {
        let bytes = text.as_bytes();
        let mut present = Present::default();
        for m in self.matches(text) {
            present.add(self.literals[m.pattern().as_usize()].1);
            for q in m.start() + 1..m.end() {
                for (literal, needs) in &self.literals {
                    if bytes[q..].starts_with(literal.as_bytes()) {
                        present.add(*needs);
                    }
                }
            }
        }
        present
    }
}

/// The patterns are constants covered by tests; failing to compile one is a programming error.
fn compile(p: &str) -> Regex {
    Regex::new(p).unwrap_or_else(|e| panic!("bad secret pattern {p}: {e}"))
}

static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    const _: () = assert!(RULES.len() <= 64, "Present::rules is a u64");
    let mut literals: Vec<(&'static str, Needs)> = RULES
        .iter()
        .enumerate()
        .flat_map(|(i, r)| r.keywords.iter().map(move |k| (*k, Needs::Rule(i))))
        .collect();
    literals.push((PEM_KEYWORD, Needs::PrivateKey));
    literals.push((URL_KEYWORD, Needs::Url));
    literals.extend(
        AWS_SECRET_KEYWORDS
            .iter()
            .map(|k| (*k, Needs::AwsSecretName)),
    );
    Compiled {
        // Leftmost-first rather than standard semantics: only that enables the SIMD
        // prefilter ([`Compiled::present`] finds the overlapping literals it skips).
        any: aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostFirst)
            // The prefilter does the searching; a DFA would only cost start-up time to build.
            .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
            .build(literals.iter().map(|l| l.0))
            .unwrap_or_else(|e| panic!("secret keywords: {e}")),
        literals,
        rules: RULES.iter().map(|_| std::sync::OnceLock::new()).collect(),
    }
});

// The patterns outside [`RULES`], each compiled on first need like the rules: a text without
// `://` never pays for the URL pattern, and so on (compiling all of them up front was most of
// a short review's time).
static PEM_BEGIN_RE: LazyLock<Regex> =
    LazyLock::new(|| compile(r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"));
static PEM_END_RE: LazyLock<Regex> =
    LazyLock::new(|| compile(r"-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"));
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
static GENERIC_RE: LazyLock<Regex> = LazyLock::new(|| compile(GENERIC_PATTERN));
/// Name characters the generic pattern allows after its keyword.
const GENERIC_MAX_GAP: usize = 20;
static AWS_SECRET_RE: LazyLock<Regex> = LazyLock::new(|| {
    compile(concat!(
        r"(?i)(?:aws|amazon)[a-z0-9_.-]{0,30}secret[a-z0-9_.-]{0,30}['\x22]?[ \t]*",
        r"(?::=|=>|=|:)[ \t]*[`'\x22]?([A-Za-z0-9/+]{40})",
    ))
});
static AWS_SHAPED_RE: LazyLock<Regex> = LazyLock::new(|| compile(r"[A-Za-z0-9/+]{40}"));
/// A password in a URL. User and password are open repeats: bounded repeats of a Unicode class
/// (`{1,200}`) compile to a large automaton (`cargo bench --bench pipeline -- secrets`); the
/// bounds ([`URL_USER_MAX`], [`URL_PASSWORD_MAX`]) are checked on the captures instead.
pub const URL_PASSWORD_PATTERN: &str = r"[A-Za-z][A-Za-z0-9+.-]{1,20}://([^\s/:@]+):([^\s/@]+)@";
static URL_PASSWORD_RE: LazyLock<Regex> = LazyLock::new(|| compile(URL_PASSWORD_PATTERN));
const URL_USER_MAX: usize = 100;
const URL_PASSWORD_MAX: usize = 200;

/// The literal a URL with a password needs.
const URL_KEYWORD: &str = "://";
/// Literals one of which a named AWS secret key needs.
const AWS_SECRET_KEYWORDS: &[&str] = &["secret", "SECRET", "Secret"];

const PEM_KEYWORD: &str = "PRIVATE KEY";
/// How far after a BEGIN line a private key's END line is looked for.
const PEM_WINDOW: usize = 64 * 1024;

fn scan(text: &str, mode: Mode) -> Vec<SecretMatch> {
    let c = &*COMPILED;
    // Where the generic rule's search starts, if it can match at all.
    let generic = match mode {
        Mode::Detect => first_generic_candidate(text),
        Mode::Redact => None,
    };
    let mut found = Vec::new();
    if mode == Mode::Redact
        && let Some(known) = known_secrets()
    {
        known.find(text, &mut found);
    }
    let present = c.present(text);
    if generic.is_none() && !present.any() {
        return resolve(found, mode);
    }
    let bytes = text.as_bytes();
    for (i, (rule, re)) in RULES.iter().zip(&c.rules).enumerate() {
        if present.rules & (1 << i) == 0 {
            continue;
        }
        let re = re.get_or_init(|| compile(rule.pattern));
        let mut at = 0;
        while let Some(m) = re.find_at(text, at) {
            let mut range = m.range();
            if rule.id == "github-app-token" {
                // A sentence ending right after a token is not part of it.
                while range.end > range.start && bytes[range.end - 1] == b'.' {
                    range.end -= 1;
                }
            }
            let ok = (!rule.left || left_boundary(bytes, range.start))
                && rule
                    .right
                    .is_none_or(|f| bytes.get(range.end).is_none_or(|&b| !f(b)));
            if !ok {
                // Try again one character later: a longer candidate may hide a valid one.
                at = next_char(text, range.start);
                continue;
            }
            at = range.end.max(next_char(text, range.start));
            let token = &text[range.clone()];
            if rule.allow.is_some_and(|f| f(token)) {
                continue;
            }
            if mode == Mode::Detect
                && (entropy(token) < rule.min_entropy || rule.plausible.is_some_and(|f| !f(token)))
            {
                continue;
            }
            found.push(SecretMatch {
                rule: rule.id,
                range,
            });
        }
    }
    if present.private_key {
        private_keys(text, mode, &mut found);
    }
    if present.url {
        url_passwords(text, mode, &mut found);
    }
    if present.aws_secret_name {
        named_aws_secrets(text, &mut found);
    }
    if found.iter().any(|m| m.rule == "aws-access-token") {
        paired_aws_secrets(text, mode, &mut found);
    }
    if let Some(from) = generic {
        generic_keys(text, from, &mut found);
    }
    resolve(found, mode)
}

/// Whether the byte at `i` continues a base64 run (so a 40-character match is part of a longer
/// string, not a key).
fn base64_at(bytes: &[u8], i: usize) -> bool {
    bytes
        .get(i)
        .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'/' || b == b'+')
}

/// `aws_secret_access_key = <40 characters>` and the like.
fn named_aws_secrets(text: &str, found: &mut Vec<SecretMatch>) {
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
fn aws_before(bytes: &[u8], at: usize) -> bool {
    // 30 characters of up to 3 bytes, after the longer name; on the line of `at`, as the
    // pattern's are, so that a line's keywords do not depend on the line before it.
    let window = &bytes[at.saturating_sub(30 * 3 + "amazon".len())..at];
    let window = memchr::memrchr(b'\n', window).map_or(window, |n| &window[n + 1..]);
    memchr::memmem::find(window, "\u{17F}".as_bytes()).is_some()
        || window.windows(3).any(|w| w.eq_ignore_ascii_case(b"aws"))
        || window.windows(6).any(|w| w.eq_ignore_ascii_case(b"amazon"))
}

/// A key-shaped 40-character value within [`AWS_PAIR_LINES`] lines of an AWS access key ID.
fn paired_aws_secrets(text: &str, mode: Mode, found: &mut Vec<SecretMatch>) {
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
fn url_passwords(text: &str, mode: Mode, found: &mut Vec<SecretMatch>) {
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

/// Values detected as secrets elsewhere (in the diff under review), masked wherever they
/// appear: in a lens's echo, a log line, an error.
struct Known {
    values: Vec<(String, &'static str)>,
    automaton: aho_corasick::AhoCorasick,
}

impl Known {
    fn find(&self, text: &str, found: &mut Vec<SecretMatch>) {
        for m in self.automaton.find_iter(text) {
            found.push(SecretMatch {
                rule: self.values[m.pattern().as_usize()].1,
                range: m.range(),
            });
        }
    }
}

static KNOWN: std::sync::RwLock<Option<std::sync::Arc<Known>>> = std::sync::RwLock::new(None);

/// The most values remembered; a diff holding more secrets than this has bigger problems,
/// and every rule still masks its own matches.
const MAX_KNOWN: usize = 4096;
/// Shorter values are not remembered: masking them everywhere would garble ordinary text.
const MIN_KNOWN_LEN: usize = 12;

fn known_secrets() -> Option<std::sync::Arc<Known>> {
    KNOWN.read().ok().and_then(|k| k.clone())
}

/// Remembers secret values so that [`redact`] masks them everywhere from now on, whatever
/// rule found them (`generic-api-key` included) and whatever text they later turn up in.
/// Values shorter than 12 characters are ignored.
pub fn remember<'a>(secrets: impl IntoIterator<Item = (&'static str, &'a str)>) {
    let fresh: Vec<(String, &'static str)> = secrets
        .into_iter()
        .map(|(rule, v)| (v.trim().to_owned(), rule))
        .filter(|(v, _)| v.len() >= MIN_KNOWN_LEN && !v.contains("REDACTED"))
        .collect();
    if fresh.is_empty() {
        return;
    }
    let Ok(mut guard) = KNOWN.write() else { return };
    let mut values = guard.as_ref().map(|k| k.values.clone()).unwrap_or_default();
    let before = values.len();
    for (v, rule) in fresh {
        if values.len() < MAX_KNOWN && !values.iter().any(|(have, _)| *have == v) {
            values.push((v, rule));
        }
    }
    if values.len() == before {
        return;
    }
    // Longest first, so a value that contains another is masked whole.
    values.sort_by_key(|v| std::cmp::Reverse(v.0.len()));
    let automaton = aho_corasick::AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::LeftmostLongest)
        .build(values.iter().map(|(v, _)| v.as_str()));
    if let Ok(automaton) = automaton {
        *guard = Some(std::sync::Arc::new(Known { values, automaton }));
    }
}

/// Every secret value in a multi-line `text` (a file's diff), each line of a private-key block
/// on its own: what [`remember`] needs so that each line is masked wherever it is shown alone.
pub fn secret_values(text: &str) -> Vec<(&'static str, &str)> {
    secret_values_at(text, &keyword_starts(text))
}

/// [`secret_values`], given the [`keyword_starts`] of `text` (found once, shared by callers).
pub fn secret_values_at<'t>(text: &'t str, keywords: &[usize]) -> Vec<(&'static str, &'t str)> {
    let found = keyword_regions(text, keywords)
        .into_iter()
        .flat_map(|region| {
            let base = region.start;
            find_secrets(&text[region])
                .into_iter()
                .map(move |m| SecretMatch {
                    rule: m.rule,
                    range: base + m.range.start..base + m.range.end,
                })
        });
    secret_values_of(text, found)
}

/// The values of `found` in `text`, each line of a private-key block on its own.
fn secret_values_of(
    text: &str,
    found: impl IntoIterator<Item = SecretMatch>,
) -> Vec<(&'static str, &str)> {
    let mut out = Vec::new();
    for m in found {
        let value = &text[m.range.clone()];
        if m.rule == PRIVATE_KEY {
            for line in value.lines() {
                let line = line.trim();
                // One diff marker (`+`, `-`, ` `) may lead; the BEGIN/END lines are rules' own.
                let line = if line.contains("-----") {
                    line
                } else {
                    line.strip_prefix(['+', '-']).unwrap_or(line).trim()
                };
                if !line.contains("-----") && !line.is_empty() {
                    out.push((m.rule, line));
                }
            }
        } else {
            out.push((m.rule, value));
        }
    }
    out
}

/// The parts of a multi-line `text` that can hold a secret, in order and apart: each line with
/// a keyword ([`keyword_starts`]; a line without one holds none), with the lines an AWS key
/// pair may span around it and, after a private-key keyword, the window its END line is looked
/// for in. Every part starts at a line's start and ends after a line break (or at the end), so
/// a secret found in a part is the one found in the whole text: a file's diff is mostly lines
/// without a keyword, and scanning only these parts is what keeps [`secret_values`] cheap.
fn keyword_regions(text: &str, keywords: &[usize]) -> Vec<std::ops::Range<usize>> {
    let mut regions: Vec<std::ops::Range<usize>> = Vec::new();
    // The line of the last keyword, and its part: the next keyword is often on the same line
    // (a minified file holds hundreds on one line of 100 KB), whose part is the same.
    let mut last_line = 0..0;
    let mut last_part = 0..0;
    for &at in keywords {
        if !last_line.contains(&at) {
            // The start of the keyword's line, then of each of the AWS_PAIR_LINES lines before
            // it; the end of its line, then of each of the AWS_PAIR_LINES lines after it.
            let line_start = |i: usize| text[..i].rfind('\n').map_or(0, |n| n + 1);
            let line_end = |i: usize| text[i..].find('\n').map_or(text.len(), |n| i + n + 1);
            last_line = line_start(at)..line_end(at);
            let mut start = last_line.start;
            for _ in 0..AWS_PAIR_LINES {
                if start == 0 {
                    break;
                }
                start = line_start(start - 1);
            }
            let mut end = last_line.end;
            for _ in 0..AWS_PAIR_LINES {
                end = line_end(end);
            }
            last_part = start..end;
        }
        let (start, mut end) = (last_part.start, last_part.end);
        if text[at..].starts_with(PEM_KEYWORD) {
            let window = floor_boundary(text, at.saturating_add(PEM_WINDOW));
            end = end.max(
                text[window..]
                    .find('\n')
                    .map_or(text.len(), |i| window + i + 1),
            );
        }
        match regions.last_mut() {
            Some(last) if start <= last.end => last.end = last.end.max(end),
            _ => regions.push(start..end),
        }
    }
    regions
}

/// Private-key PEM blocks. With an END line, the whole block; without one (a diff line, a
/// truncated hunk), the BEGIN line and the key-body-looking text after it.
fn private_keys(text: &str, mode: Mode, found: &mut Vec<SecretMatch>) {
    let bytes = text.as_bytes();
    let mut at = 0;
    while let Some(begin) = PEM_BEGIN_RE.find_at(text, at) {
        at = begin.end();
        let window_end = floor_boundary(text, begin.end().saturating_add(PEM_WINDOW));
        let next_begin = PEM_BEGIN_RE.find_at(text, begin.end()).map(|m| m.start());
        let end = PEM_END_RE
            .find(&text[begin.end()..window_end])
            .map(|m| begin.end() + m.end())
            .filter(|&e| next_begin.is_none_or(|nb| e <= nb));
        let range = match end {
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
fn generic_keys(text: &str, from: usize, found: &mut Vec<SecretMatch>) {
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
fn generic_values(text: &str, from: usize) -> Vec<std::ops::Range<usize>> {
    let mut values = Vec::new();
    let mut at = from;
    // The value run last measured: a run with no end that holds a candidate every few bytes
    // (`key=` ten thousand times) is measured once, not again from every candidate in it.
    let mut run = ValueRun::default();
    each_generic_candidate(text, |start| {
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
fn generic_candidates(text: &str) -> Vec<usize> {
    let mut found = Vec::new();
    each_generic_candidate(text, |at| {
        found.push(at);
        true
    });
    found
}

/// The first of [`generic_candidates`], found without looking for the rest.
fn first_generic_candidate(text: &str) -> Option<usize> {
    let mut first = None;
    each_generic_candidate(text, |at| {
        first = Some(at);
        false
    });
    first
}

/// Calls `f` with each of [`generic_candidates`], in order, while it returns true. A plain
/// loop: as an iterator chain (`flat_map` over the operators) it cost twice as much.
fn each_generic_candidate(text: &str, mut f: impl FnMut(usize) -> bool) {
    // The name before an operator that is looked at: 20 characters after the longest
    // keyword (`credential`).
    const NAME: usize = GENERIC_MAX_GAP + 10;
    let bytes = text.as_bytes();
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
                true => text.is_char_boundary(at),
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

/// Builds the keyword automaton every secret search starts with (it is built on first use
/// otherwise).
pub fn prepare() {
    LazyLock::force(&COMPILED);
}

/// Where in `text` a keyword of any secret rule starts, in order. A line of `text` that holds
/// none of them holds no secret ([`find_secrets`] returns nothing for it without looking
/// further), so a caller checking many lines of one text searches it once with this and
/// skips the lines without a keyword. (Keywords hold no line break, and neither does what
/// [`generic_candidates`] looks at: every line that holds one has a start inside it.)
pub fn keyword_starts(text: &str) -> Vec<usize> {
    let mut starts: Vec<usize> = COMPILED.matches(text).map(|m| m.start()).collect();
    starts.extend(generic_candidates(text));
    starts.sort_unstable();
    starts.dedup();
    starts
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

/// Sorts matches and removes overlaps. Redaction merges overlapping ranges so every byte of
/// each is masked; detection keeps one match per place, preferring a specific rule.
fn resolve(mut found: Vec<SecretMatch>, mode: Mode) -> Vec<SecretMatch> {
    found.sort_by(|a, b| {
        a.range
            .start
            .cmp(&b.range.start)
            .then(b.range.end.cmp(&a.range.end))
    });
    let mut out: Vec<SecretMatch> = Vec::with_capacity(found.len());
    for m in found {
        match out.last_mut() {
            Some(last) if m.range.start < last.range.end => match mode {
                Mode::Redact => last.range.end = last.range.end.max(m.range.end),
                Mode::Detect => {
                    if last.rule == GENERIC && m.rule != GENERIC {
                        *last = m;
                    }
                }
            },
            _ => out.push(m),
        }
    }
    out
}

fn mask(text: &str, found: &[SecretMatch]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for m in found {
        out.push_str(&text[at..m.range.start]);
        out.push_str("[REDACTED ");
        out.push_str(m.rule);
        out.push(']');
        // Keep line breaks so masked text keeps its line numbers; in a diff, keep each line's
        // `+`/`-`/` ` marker (recognised by the first line carrying the same marker).
        let secret = &text[m.range.clone()];
        let line_start = text[..m.range.start].rfind('\n').map_or(0, |i| i + 1);
        let marker = text.as_bytes()[line_start..m.range.start]
            .first()
            .copied()
            .filter(|b| matches!(b, b'+' | b'-' | b' '));
        let mut lines = secret.split('\n').peekable();
        while let Some(line) = lines.next() {
            let Some(next) = lines.peek() else { break };
            if line.ends_with('\r') {
                out.push('\r');
            }
            out.push('\n');
            if let Some(mk) = marker
                && next.as_bytes().first() == Some(&mk)
            {
                out.push(char::from(mk));
            }
        }
        at = m.range.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Whether a token starting at `start` is not glued to a preceding word. An ANSI colour code
/// (`\x1b[31m`, also written `\u001b[…m`) or a string escape (`\n`, `\r`, `\t`) counts as a
/// separator.
fn left_boundary(bytes: &[u8], start: usize) -> bool {
    let Some(&prev) = start.checked_sub(1).and_then(|i| bytes.get(i)) else {
        return true;
    };
    if !is_word(prev) {
        return true;
    }
    let before = &bytes[..start];
    if matches!(prev, b'n' | b'r' | b't') && before.len() >= 2 && before[before.len() - 2] == b'\\'
    {
        return true;
    }
    if prev == b'm' {
        let mut i = before.len() - 1;
        while i > 0 && (before[i - 1].is_ascii_digit() || before[i - 1] == b';') {
            i -= 1;
        }
        if i > 0 && before[i - 1] == b'[' {
            let esc = &before[..i - 1];
            return [
                &b"\x1b"[..],
                b"\\x1b",
                b"\\x1B",
                b"\\u001b",
                b"\\u001B",
                b"\\033",
                b"\\e",
            ]
            .iter()
            .any(|e| esc.ends_with(e));
        }
    }
    false
}

fn next_char(text: &str, i: usize) -> usize {
    text[i..]
        .chars()
        .next()
        .map_or(text.len(), |c| i + c.len_utf8())
}

fn floor_boundary(text: &str, mut i: usize) -> usize {
    if i >= text.len() {
        return text.len();
    }
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn longest_digit_run(s: &str) -> usize {
    s.split(|c: char| !c.is_ascii_digit())
        .map(str::len)
        .max()
        .unwrap_or(0)
}

/// Shannon entropy of `s` in bits per byte.
pub fn entropy(s: &str) -> f64 {
    if s.is_empty() {
        return 0.0;
    }
    let mut counts = [0u32; 256];
    for b in s.bytes() {
        counts[usize::from(b)] += 1;
    }
    let n = s.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    pub(crate) const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const URLSAFE: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
    const BASE32: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    const LETTERS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    const DIGITS: &str = "0123456789";

    /// Deterministic pseudo-random text over `alphabet`, so no realistic token is written out
    /// in the source and every generated one has a realistic entropy.
    pub(crate) fn rand(alphabet: &str, n: usize, seed: u64) -> String {
        let chars: Vec<char> = alphabet.chars().collect();
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                chars[(x % chars.len() as u64) as usize]
            })
            .collect()
    }

    /// A fake secret for each rule id, generated from `seed`.
    pub(crate) fn fake(rule: &str, seed: u64) -> String {
        let r = |a, n, k: u64| rand(a, n, seed.wrapping_add(k));
        match rule {
            "github-pat" => format!("ghp_{}", r(ALNUM, 36, 1)),
            "github-oauth" => format!("gho_{}", r(ALNUM, 36, 1)),
            "github-app-token" => match seed % 3 {
                0 => format!("ghu_{}", r(ALNUM, 36, 1)),
                1 => format!("ghs_{}", r(ALNUM, 36, 1)),
                // The stateless form: `ghs_<APPID>_<JWT>`.
                _ => format!(
                    "ghs_{}_eyJ{}.eyJ{}.{}",
                    r(DIGITS, 7, 1),
                    r(URLSAFE, 40, 2),
                    r(URLSAFE, 300, 3),
                    r(URLSAFE, 170, 4)
                ),
            },
            "github-refresh-token" => format!("ghr_{}", r(ALNUM, 36, 1)),
            "github-fine-grained-pat" => {
                format!("github_pat_{}_{}", r(ALNUM, 22, 1), r(ALNUM, 59, 2))
            }
            "aws-access-token" => format!("AKIA{}", r(BASE32, 16, 1)),
            "slack-token" => format!(
                "xoxb-{}-{}-{}",
                r(DIGITS, 12, 1),
                r(DIGITS, 13, 2),
                r(ALNUM, 24, 3)
            ),
            "slack-webhook-url" => format!(
                "https://hooks.slack.com/services/T{}/B{}/{}",
                r(BASE32, 8, 1),
                r(BASE32, 8, 2),
                r(ALNUM, 24, 3)
            ),
            "gcp-api-key" => format!("AIza{}", r(URLSAFE, 35, 1)),
            "openai-api-key" => match seed % 2 {
                0 => format!("sk-proj-{}", r(URLSAFE, 120, 1)),
                _ => format!("sk-{}T3BlbkFJ{}", r(ALNUM, 20, 1), r(ALNUM, 20, 2)),
            },
            "anthropic-api-key" => format!("sk-ant-api03-{}AA", r(URLSAFE, 93, 1)),
            "jwt" => format!(
                "eyJ{}.eyJ{}.{}",
                r(URLSAFE, 30, 1),
                r(URLSAFE, 60, 2),
                r(URLSAFE, 43, 3)
            ),
            "private-key" => {
                let body: Vec<String> = (0..4).map(|i| r(ALNUM, 64, i)).collect();
                format!(
                    "-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
                    body.join("\n")
                )
            }
            "gitlab-pat" => format!("glpat-{}", r(URLSAFE, 20, 1)),
            "npm-token" => format!("npm_{}", r(ALNUM, 36, 1)),
            "huggingface-token" => format!("hf_{}", r(LETTERS, 34, 1)),
            "pypi-token" => format!("pypi-AgEIcHlwaS5vcmc{}", r(URLSAFE, 70, 1)),
            "stripe-key" => format!("sk_live_{}", r(ALNUM, 24, 1)),
            "sendgrid-key" => format!("SG.{}.{}", r(URLSAFE, 22, 1), r(URLSAFE, 43, 2)),
            other => panic!("no generator for {other}"),
        }
    }

    pub(crate) fn all_rules() -> Vec<&'static str> {
        let mut ids: Vec<&'static str> = RULES.iter().map(|r| r.id).collect();
        ids.push(PRIVATE_KEY);
        ids
    }

    #[test]
    fn every_rule_is_detected_and_masked() {
        for rule in all_rules() {
            for seed in 0..6 {
                let secret = fake(rule, seed);
                let text = format!("value = \"{secret}\";");
                let found = find_secrets(&text);
                assert_eq!(found.len(), 1, "{rule}: {found:?} in {text}");
                assert_eq!(found[0].rule, rule);
                assert_eq!(&text[found[0].range.clone()], secret, "{rule}");
                let out = redact(&text);
                assert!(!out.contains(&secret), "{rule}: {out}");
                assert!(out.contains(&format!("[REDACTED {rule}]")), "{rule}: {out}");
                assert!(
                    out.starts_with("value = \"[REDACTED") && out.ends_with("\";"),
                    "{out}"
                );
            }
        }
    }

    #[test]
    fn every_pattern_compiles() {
        // Rules compile lazily at run time; a bad pattern must fail here, not in a review.
        for rule in RULES {
            let _ = compile(rule.pattern);
        }
        let _ = &*COMPILED;
        for re in [
            &PEM_BEGIN_RE,
            &PEM_END_RE,
            &GENERIC_RE,
            &AWS_SECRET_RE,
            &AWS_SHAPED_RE,
            &URL_PASSWORD_RE,
        ] {
            let _ = &**re;
        }
    }

    #[test]
    fn every_rule_has_a_name() {
        for rule in all_rules() {
            assert!(rule_name(rule).is_some(), "{rule}");
        }
        assert_eq!(
            rule_name("github-pat"),
            Some("GitHub personal access token")
        );
        assert_eq!(rule_name(GENERIC), None);
    }

    #[test]
    fn clean_text_is_borrowed() {
        let text = "fn main() { let key = config.api_key(); println!(\"{key}\"); } // ghp_ short";
        assert!(matches!(redact(text), Cow::Borrowed(_)));
        assert!(matches!(redact(""), Cow::Borrowed(_)));
    }

    #[test]
    fn aws_example_keys_are_not_secrets() {
        let text = "aws_access_key_id = AKIAIOSFODNN7EXAMPLE";
        assert!(find_secrets(text).is_empty());
        assert!(matches!(redact(text), Cow::Borrowed(_)));
    }

    #[test]
    fn aws_key_glued_to_a_word_is_not_one() {
        let key = fake("aws-access-token", 3);
        assert!(find_secrets(&format!("X{key}")).is_empty());
        assert!(find_secrets(&format!("{key}Z")).is_empty());
        assert_eq!(find_secrets(&format!("id={key}")).len(), 1);
    }

    #[test]
    fn ansi_codes_and_json_escapes_are_separators() {
        for rule in [
            "github-pat",
            "aws-access-token",
            "jwt",
            "anthropic-api-key",
            "npm-token",
        ] {
            let s = fake(rule, 7);
            for text in [
                format!("\x1b[31m{s}\x1b[0m"),
                format!("\\u001b[1;31m{s}\\u001b[0m"),
                format!("{{\"log\":\"token:\\n{s}\\nnext line\"}}"),
                format!("`{s}`"),
                format!("'{s}'"),
                format!("\\t{s}\\r\\n"),
            ] {
                let found = find_secrets(&text);
                assert_eq!(found.len(), 1, "{rule} in {text:?}: {found:?}");
                assert_eq!(&text[found[0].range.clone()], s);
                let out = redact(&text);
                assert!(!out.contains(&s), "{out:?}");
                assert!(out.contains("next line") || !text.contains("next line"));
            }
        }
    }

    #[test]
    fn gitleaks_allow_is_ignored() {
        let s = fake("github-pat", 1);
        let text = format!("token = \"{s}\" # gitleaks:allow");
        assert_eq!(find_secrets(&text).len(), 1);
        assert!(!redact(&text).contains(&s));
    }

    #[test]
    fn placeholders_are_masked_but_not_reported() {
        let text = format!("export GITHUB_TOKEN=ghp_{}", "x".repeat(36));
        assert!(find_secrets(&text).is_empty());
        assert_eq!(redact(&text), "export GITHUB_TOKEN=[REDACTED github-pat]");
        assert!(find_secrets("SLACK_TOKEN=xoxb-your-bot-token-here").is_empty());
    }

    #[test]
    fn stateless_installation_token_is_masked_whole() {
        let s = fake("github-app-token", 2);
        assert!(s.len() > 500);
        let text = format!("Authorization: token {s}.");
        assert_eq!(
            redact(&text),
            "Authorization: token [REDACTED github-app-token]."
        );
    }

    #[test]
    fn private_key_block_keeps_diff_lines() {
        let key = fake("private-key", 4);
        let diff: String = key.lines().map(|l| format!("+{l}\n")).collect();
        let out = redact(&diff);
        assert_eq!(out, "+[REDACTED private-key]\n+\n+\n+\n+\n+\n");
        let crlf = key.replace('\n', "\r\n");
        assert_eq!(redact(&crlf), "[REDACTED private-key]\r\n\r\n\r\n\r\n\r\n");
    }

    #[test]
    fn private_key_in_json_string() {
        let key = fake("private-key", 5).replace('\n', "\\n");
        let text = format!("{{\"private_key\": \"{key}\\n\", \"client_email\": \"a@b.c\"}}");
        assert_eq!(
            redact(&text),
            "{\"private_key\": \"[REDACTED private-key]\\n\", \"client_email\": \"a@b.c\"}"
        );
    }

    #[test]
    fn lone_begin_line() {
        // A diff line is one line: the BEGIN line alone is reported.
        let found = find_secrets("-----BEGIN OPENSSH PRIVATE KEY-----");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].rule, "private-key");
        assert_eq!(
            find_secrets("  key: |\n    -----BEGIN EC PRIVATE KEY-----\n").len(),
            1
        );
        // Code that names the header is not a key.
        assert!(find_secrets("if pem.starts_with(\"-----BEGIN PRIVATE KEY-----\") {").is_empty());
        assert!(find_secrets("HEADER = \"-----BEGIN PRIVATE KEY-----\\n\"").is_empty());
        // Unterminated, with a body: masked with its body.
        let body = rand(ALNUM, 64, 9);
        let text = format!("-----BEGIN PRIVATE KEY-----\n{body}\n");
        assert_eq!(find_secrets(&text).len(), 1);
        assert_eq!(redact(&text), "[REDACTED private-key]\n\n");
    }

    #[test]
    fn generic_api_key() {
        let value = format!("{}{}", rand(ALNUM, 20, 3), "7q");
        for text in [
            format!("API_KEY={value}"),
            format!("\"client_secret\": \"{value}\","),
            format!("db_password = '{value}'"),
            format!("auth_token: {value}"),
        ] {
            let found = find_secrets(&text);
            assert_eq!(found.len(), 1, "{text}");
            assert_eq!(found[0].rule, GENERIC);
            assert_eq!(&text[found[0].range.clone()], value);
            // Detection only: redaction leaves it (see the module documentation).
            assert!(matches!(redact(&text), Cow::Borrowed(_)));
        }
        for text in [
            "API_KEY=${API_KEY}",
            "api_key: \"{{ secrets.API_KEY }}\"",
            "password = changeme",
            "password = \"changeme123456\"",
            "api_key = \"xxxxxxxxxxxxxxxxxxxx\"",
            "api_key = \"your-api-key-here\"",
            "api_key = \"<your-api-key>\"",
            "token = settings.GITHUB_TOKEN",
            "key_file = \"certs/server2.pem\"",
            "let token = get_token(config);",
            "if api_key == \"abc\" {",
            "cache_key = user_profile_settings",
            "API_KEY=$API_TOKEN_FROM_ENV2",
        ] {
            assert!(
                find_secrets(text).is_empty(),
                "{text}: {:?}",
                find_secrets(text)
            );
        }
    }

    #[test]
    fn generic_candidates_sit_before_assignments() {
        let at = generic_candidates;
        assert_eq!(at("API_KEY = x123456789"), vec![0, 4]);
        assert_eq!(at("  \"client_secret\": '1234567890'"), vec![10]);
        assert_eq!(at("a: 1, token\t=> 2345678901"), vec![6]);
        assert!(at("fn api() -> Token { key(); }").is_empty());
        assert!(at("the key is: a").is_empty());
        // The value the pattern needs is ten characters at least.
        assert!(at("API_KEY = x12345678").is_empty());
        assert!(at("token: str, key=None, api_key = '\u{212A}'").is_empty());
        assert_eq!(at("key := \u{212A}\u{17F}34567890"), vec![0]);
        // Case folding makes a Kelvin sign a `k` to the pattern: it is found all the same.
        let value = format!("{}{}", rand(ALNUM, 20, 3), "7q");
        let kelvin = format!("\u{212A}EY = '{value}'");
        assert_eq!(at(&kelvin), vec![0, 3, 4]);
        let found = find_secrets(&kelvin);
        assert_eq!(found.len(), 1, "{kelvin}");
        assert_eq!(&kelvin[found[0].range.clone()], value);
    }

    #[test]
    fn specific_rule_wins_over_generic() {
        let s = fake("github-pat", 11);
        let text = format!("GITHUB_TOKEN = \"{s}\"");
        let found = find_secrets(&text);
        assert_eq!(
            found,
            vec![SecretMatch {
                rule: "github-pat",
                range: 16..16 + s.len()
            }]
        );
    }

    #[test]
    fn idempotent_on_adjacent_secrets() {
        let aws = fake("aws-access-token", 1);
        let gh = fake("github-pat", 2);
        let text = format!("{aws}{gh} {gh}{aws}");
        let once = redact(&text).into_owned();
        assert_eq!(redact(&once), once);
        assert!(!once.contains(&aws) && !once.contains(&gh), "{once}");
    }

    #[test]
    fn named_aws_secret_access_key() {
        let secret = format!(
            "{}/{}+{}",
            rand(ALNUM, 20, 1),
            rand(ALNUM, 10, 2),
            rand(ALNUM, 8, 3)
        );
        assert_eq!(secret.len(), 40);
        for text in [
            format!("AWS_SECRET_ACCESS_KEY = \"{secret}\""),
            format!("aws_secret_access_key={secret}"),
            format!("  awsSecretKey: '{secret}',"),
        ] {
            let found = find_secrets(&text);
            assert_eq!(found.len(), 1, "{text}: {found:?}");
            assert_eq!(found[0].rule, AWS_SECRET);
            assert_eq!(&text[found[0].range.clone()], secret);
            let out = redact(&text);
            assert!(!out.contains(&secret), "{out}");
            assert!(out.contains("[REDACTED aws-secret-access-key]"), "{out}");
        }
        // AWS's documented example key and a longer base64 run are not it.
        let example = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
        assert!(find_secrets(example).is_empty());
        assert!(
            find_secrets(&format!("aws_secret = {secret}AAAA"))
                .iter()
                .all(|m| m.rule != AWS_SECRET)
        );
    }

    #[test]
    fn aws_secret_next_to_its_key_id_is_masked_on_its_own_line() {
        let id = fake("aws-access-token", 5);
        let secret = format!("{}9{}", rand(ALNUM, 20, 7), rand(ALNUM, 19, 8));
        let text = format!("[default]\nkey = {id}\nvalue = {secret}\nregion = eu-west-1\n");
        let out = redact(&text);
        assert!(!out.contains(&secret) && !out.contains(&id), "{out}");
        assert!(
            out.contains("value = [REDACTED aws-secret-access-key]"),
            "{out}"
        );
        assert!(out.contains("region = eu-west-1"));
        // Far away (more than three lines) or without a key ID, a 40-character value is not.
        let far = format!("key = {id}\n\n\n\n\nvalue = {secret}\n");
        assert!(redact(&far).contains(&secret));
        assert!(matches!(
            redact(&format!("value = {secret}")),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn password_in_a_url() {
        let pw = rand(ALNUM, 16, 3);
        let text = format!("DATABASE_URL=postgres://app:{pw}@db.internal:5432/app");
        let found = find_secrets(&text);
        assert!(
            found
                .iter()
                .any(|m| m.rule == URL_PASSWORD && text[m.range.clone()] == pw),
            "{found:?}"
        );
        assert_eq!(
            redact(&text),
            "DATABASE_URL=postgres://app:[REDACTED url-password]@db.internal:5432/app"
        );
        for text in [
            "postgres://app:${DB_PASSWORD}@db/app",
            "https://user:<password>@example.com",
            "see https://example.com/a:b@c and git@github.com:o/r.git",
        ] {
            assert!(
                find_secrets(text).iter().all(|m| m.rule != URL_PASSWORD),
                "{text}"
            );
        }
        assert!(find_secrets("redis://:password@host").is_empty());
    }

    #[test]
    fn remembered_values_are_masked_anywhere() {
        let value = format!("{}Q7", rand(ALNUM, 30, 77));
        let key = format!("API_KEY={value}");
        // The generic rule only detects; a remembered value is masked wherever it turns up.
        assert!(redact(&format!("echo {value}")).contains(&value));
        remember(secret_values(&key));
        assert_eq!(
            redact(&format!("lens says: {value}!")),
            "lens says: [REDACTED generic-api-key]!"
        );
        assert_eq!(
            redact(&format!("error: {value}")),
            "error: [REDACTED generic-api-key]"
        );
        // Too short to remember safely.
        remember([(GENERIC, "abc123")]);
        assert_eq!(redact("abc123"), "abc123");
    }

    #[test]
    fn private_key_body_lines_are_remembered_one_by_one() {
        let key = fake("private-key", 21);
        let diff: String = key.lines().map(|l| format!("+{l}\n")).collect();
        let values = secret_values(&diff);
        assert_eq!(values.len(), 4, "{values:?}");
        remember(values);
        for line in key.lines().filter(|l| !l.starts_with("-----")) {
            assert_eq!(redact(line), "[REDACTED private-key]", "{line}");
        }
    }

    #[test]
    fn log_writer_masks_secrets() {
        use std::io::Write;
        let s = fake("github-pat", 31);
        let mut w = RedactingWriter(Vec::new());
        w.write_all(format!("INFO lens finished error=\"token {s} refused\"\n").as_bytes())
            .unwrap();
        let out = String::from_utf8(w.0).unwrap();
        assert_eq!(
            out,
            "INFO lens finished error=\"token [REDACTED github-pat] refused\"\n"
        );
    }

    #[test]
    fn entropy_values() {
        assert_eq!(entropy(""), 0.0);
        assert_eq!(entropy("aaaa"), 0.0);
        assert!((entropy("ab") - 1.0).abs() < 1e-9);
        assert!((entropy("0123456789abcdef") - 4.0).abs() < 1e-9);
    }

    #[test]
    fn clean_text_is_fast() {
        // A rough guard, far below the real budget: 4 MiB of code-like text.
        let line = "    let value = compute(config.timeout, &items[index]); // keep it simple\n";
        let text = line.repeat(4 * 1024 * 1024 / line.len());
        let start = std::time::Instant::now();
        assert!(matches!(redact(&text), Cow::Borrowed(_)));
        assert!(
            start.elapsed() < std::time::Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
    }

    fn separators() -> impl Strategy<Value = (&'static str, &'static str)> {
        prop::sample::select(vec![
            (" ", " "),
            ("\"", "\""),
            ("`", "`"),
            ("'", "'"),
            ("\\n", "\\n"),
            ("\x1b[31m", "\x1b[0m"),
            ("\n", "\n"),
            ("=", ","),
            ("(", ")"),
        ])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn generated_secrets_never_survive(
            rule in prop::sample::select(all_rules()),
            seed in any::<u64>(),
            pre in "[ -~\n]{0,40}",
            post in "[ -~\n]{0,40}",
            (l, r) in separators(),
        ) {
            let secret = fake(rule, seed);
            let text = format!("{pre}{l}{secret}{r}{post}");
            let out = redact(&text);
            prop_assert!(!out.contains(&secret), "{} in {:?}", rule, out);
            // Not even a prefix survives.
            let head = &secret[..secret.len() / 2];
            prop_assert!(!out.contains(head), "{} prefix in {:?}", rule, out);
            prop_assert!(scan(&out, Mode::Redact).is_empty(), "{:?}", out);
            prop_assert_eq!(redact(&out), out.clone());
        }

        #[test]
        fn scanning_keyword_regions_finds_what_the_whole_text_holds(
            secrets in prop::collection::vec(
                (prop::sample::select(all_rules()), any::<u64>(), 0usize..40),
                0..6,
            ),
            filler in prop::collection::vec("[ -~]{0,60}", 1..40),
            paired in prop::option::of(any::<bool>()),
        ) {
            // A file's diff: lines of filler with secrets (some multi-line, some an AWS key
            // ID with a key-shaped value two lines after or before it) dropped in at random
            // lines.
            let mut lines: Vec<String> = filler.iter().map(|l| format!("+{l}")).collect();
            for (rule, seed, at) in &secrets {
                let at = at % (lines.len() + 1);
                lines.insert(at, format!("+x = \"{}\"", fake(rule, *seed)));
                if let (Some(after), "aws-access-token") = (paired, *rule) {
                    let near = if after { (at + 3).min(lines.len()) } else { at.saturating_sub(2) };
                    lines.insert(near, format!("+ {}", rand(ALNUM, 40, *seed)));
                }
            }
            let text = lines.join("\n");
            let mut by_regions = secret_values(&text);
            by_regions.sort();
            let mut whole = secret_values_of(&text, find_secrets(&text));
            whole.sort();
            prop_assert_eq!(by_regions, whole);
        }

        #[test]
        fn the_generic_match_is_the_patterns(
            pieces in prop::collection::vec(prop::sample::select(vec![
                "key", "KEY", "Api", "token", "SeCrEt", "passwd", "password", "Pwd", "cred",
                "credentials", "creds", "auth", "access", "ke", "y", "_", ".", "-", "x", "9",
                "\u{212A}", "\u{17F}", "é", "\"", "'", "`", " ", "\t", "=", "==", ":", ":=",
                "=>", ";", ",", "\\n", "\\N", "\\x", "\n", "\u{A0}", "\u{2028}", "(", "<",
                "abcdefghij0123", "Zx9Qw7Er5Ty3Ui1", "q8W", "aaaaaaaaaaaaaaaaaaa", "+/~!@#$%^&*",
            ]), 0..48),
            assignments in prop::collection::vec(
                (
                    prop::sample::select(vec!["key", "Token", "\u{212A}ey", "pa\u{17F}\u{17F}word", "creds", "x"]),
                    "[a-z_\u{17F}]{0,25}",
                    prop::sample::select(vec!["=", ": ", " := ", "=>", "='", ":\"", "::", "= \t`", ":==", ":=="]),
                    prop::sample::select(vec![8usize, 9, 10, 11, 12, 150, 151]),
                    prop::sample::select(vec![ALNUM, "aB3\u{212A}\u{17F}=+/~!@#$%^&*-_.é "]),
                    any::<u64>(),
                    prop::sample::select(vec!["", "\n", "'", ";", "(", "\\n", "\\T", " x", "\u{3000}"]),
                ),
                0..4,
            ),
        ) {
            let mut text = pieces.concat();
            for (keyword, gap, op, len, alphabet, seed, end) in &assignments {
                let value = format!("{}7q", rand(alphabet, len - 2, *seed));
                text.push_str(&format!("{keyword}{gap}{op}{value}{end}"));
            }
            // What the pattern itself captures, match after match as the search used to run.
            let mut by_regex = Vec::new();
            let mut at = 0;
            while let Some(caps) = GENERIC_RE.captures_at(&text, at) {
                let (all, value) = (caps.get(0).unwrap(), caps.get(1).unwrap());
                at = value.end().max(next_char(&text, all.start()));
                by_regex.push(value.range());
            }
            let by_hand = first_generic_candidate(&text)
                .map(|from| generic_values(&text, from))
                .unwrap_or_default();
            prop_assert_eq!(by_hand, by_regex, "{:?}", text);
        }

        #[test]
        fn every_line_the_generic_pattern_matches_is_a_keyword_line(
            pieces in prop::collection::vec(prop::sample::select(vec![
                "key", "KEY", "Api", "token", "SeCrEt", "passwd", "password", "Pwd", "cred",
                "credentials", "auth", "access", "ke", "y", "_", ".", "-", "x", "9", "\u{212A}",
                "\u{17F}", "é", "\"", "'", "`", " ", "\t", "=", "==", ":", ":=", "=>", ";", ",",
                "\\n", "\n", "(", "abcdefghij0123", "Zx9Qw7Er5Ty3Ui1", "q8W", "aaaaaaaaaaaaaaaaaaa",
            ]), 0..40),
            // And assignments built to sit at the pattern's bounds: the name 15 to 25
            // characters past the keyword, the value 8 to 12 characters long or past 150.
            assignments in prop::collection::vec(
                (
                    prop::sample::select(vec!["key", "Token", "\u{212A}ey", "password", "creds"]),
                    "[a-z_\u{17F}]{15,25}",
                    prop::sample::select(vec!["=", ": ", " := ", "=>", "='", ":\"", "::", "= \t`", ":=="]),
                    prop::sample::select(vec![8usize, 9, 10, 11, 12, 150, 151]),
                    // Values of ASCII alone, or with the two letters case folding adds to the
                    // value class (each one character of several bytes) and its symbols.
                    prop::sample::select(vec![ALNUM, "aB3\u{212A}\u{17F}=+/~!@#$%^&*-_.é "]),
                    any::<u64>(),
                    prop::sample::select(vec!["", "\n", "'", ";", "(", "\\n", " x"]),
                ),
                0..4,
            ),
        ) {
            let mut text = pieces.concat();
            for (keyword, gap, op, len, alphabet, seed, end) in &assignments {
                let value = format!("{}7q", rand(alphabet, len - 2, *seed));
                text.push_str(&format!("{keyword}{gap}{op}{value}{end}"));
            }
            // Every match starts at a candidate, and its line is one `keyword_starts` points
            // into.
            let candidates = generic_candidates(&text);
            for m in GENERIC_RE.find_iter(&text) {
                prop_assert!(candidates.contains(&m.start()), "{:?} at {}", text, m.start());
            }
            let line_of = |at: usize| text[..at].matches('\n').count();
            let lines: Vec<usize> = keyword_starts(&text).into_iter().map(line_of).collect();
            for m in GENERIC_RE.find_iter(&text) {
                prop_assert!(lines.contains(&line_of(m.start())), "{:?}", text);
            }
        }

        #[test]
        fn keywords_found_piece_by_piece_are_the_whole_texts(
            parts in prop::collection::vec(prop::sample::select(vec![
                "key", "aws", "AMAZON", "secret", "Secret_Access_Key", "token", "api", "=", ":",
                " = ", "'", "\"", "\n", "\n", "x", "abcdefghij0123", "Zx9Qw7Er5Ty3Ui1", "://",
                "@", "/", " ", "\u{17F}", "\u{212A}", "é",
            ]), 0..80),
            secrets in prop::collection::vec(
                (prop::sample::select(all_rules()), any::<u64>(), 0usize..80),
                0..3,
            ),
            size in 1usize..64,
        ) {
            // What the secret pass does to share one large file over the cores.
            let mut parts: Vec<String> = parts.into_iter().map(str::to_owned).collect();
            for (rule, seed, at) in secrets {
                let at = at % (parts.len() + 1);
                parts.insert(at, fake(rule, seed));
            }
            let text = parts.concat();
            let by_pieces: Vec<usize> = crate::par::line_pieces(&text, size)
                .flat_map(|r| {
                    keyword_starts(&text[r.clone()]).into_iter().map(move |at| at + r.start)
                })
                .collect();
            prop_assert_eq!(by_pieces, keyword_starts(&text), "{:?}", text);
        }

        #[test]
        fn a_named_aws_secret_is_never_filtered_out(
            pieces in prop::collection::vec(prop::sample::select(vec![
                "aws", "AWS", "Amazon", "aw\u{17F}", "secret", "SECRET", "Secret", "_", "-", ".",
                "x", "_access_key", " ", "=", ": ", "\"", "é", "\n",
            ]), 0..24),
            value in "[A-Za-z0-9/+]{40}",
        ) {
            let text = format!("{}{value}", pieces.concat());
            if AWS_SECRET_RE.is_match(&text) {
                prop_assert!(COMPILED.present(&text).aws_secret_name, "{:?}", text);
            }
        }

        #[test]
        fn a_url_password_is_never_filtered_out(
            pieces in prop::collection::vec(prop::sample::select(vec![
                "://", "https", "a", "Z9", ":", "@", "/", " ", "\t", "\n", "é", "\u{a0}", "%40",
                "x.y",
            ]), 0..30),
        ) {
            let text = pieces.concat();
            if URL_PASSWORD_RE.is_match(&text) {
                prop_assert!(COMPILED.present(&text).url, "{:?}", text);
                prop_assert!(!keyword_starts(&text).is_empty(), "{:?}", text);
            }
        }

        #[test]
        fn redact_is_idempotent_on_any_text(text in "(\\PC|[A-Z2-7_-]|ghp_|AKIA|sk-ant-|eyJ|\\.){0,200}") {
            let once = redact(&text).into_owned();
            prop_assert_eq!(redact(&once).into_owned(), once);
        }
    }
}
