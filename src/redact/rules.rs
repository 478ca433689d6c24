//! The token rules: one pattern per kind of token, with the checks a regex cannot make
//! (boundaries, entropy, plausibility, allowlists).

use regex::Regex;

use super::longest_digit_run;

/// One token rule. `pattern` matches the token itself; boundaries are checked by hand (the
/// regex crate has no look-around) so they can treat ANSI codes and escapes as separators.
pub(super) struct Rule {
    pub(super) id: &'static str,
    pub(super) name: &'static str,
    /// Literals one of which every match contains (case-sensitive).
    pub(super) keywords: &'static [&'static str],
    pub(super) pattern: &'static str,
    /// The byte before the token must not be a word byte (`[A-Za-z0-9_]`).
    pub(super) left: bool,
    /// The byte after the token must not satisfy this.
    pub(super) right: Option<fn(u8) -> bool>,
    /// Detection only: minimum Shannon entropy of the token.
    pub(super) min_entropy: f64,
    /// Detection only: an extra plausibility check on the token.
    pub(super) plausible: Option<fn(&str) -> bool>,
    /// Both modes: tokens that are known not to be secrets.
    pub(super) allow: Option<fn(&str) -> bool>,
}

pub(super) fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn is_token(b: u8) -> bool {
    is_word(b) || b == b'-'
}

pub(super) const RULES: &[Rule] = &[
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
        // Real Slack tokens carry numeric workspace and user ids, two of them at least, and end
        // in a body; `xoxb-your-token-here`, `xoxp-1234567890` and `xoxp-…-` do not.
        plausible: Some(|t| {
            let ids = t
                .split('-')
                .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
                .count();
            longest_digit_run(t) >= 6 && ids >= 2 && !t.ends_with('-')
        }),
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
        // `sk-ant-api03-…AA`; the admin keys (`sk-ant-admin01-…AA`) are gitleaks'
        // `anthropic-admin-api-key`.
        pattern: r"sk-ant-[A-Za-z0-9_-]{20,}",
        left: true,
        right: None,
        min_entropy: 3.0,
        // A key's body is 93 characters and `AA` (gitleaks' tests hold shorter ones to be
        // examples).
        plausible: Some(|t| {
            t.strip_prefix("sk-ant-api03-")
                .is_some_and(|b| b.len() == 95 && b.ends_with("AA"))
        }),
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

/// The patterns are constants covered by tests; failing to compile one is a programming error.
pub(super) fn compile(p: &str) -> Regex {
    Regex::new(p).unwrap_or_else(|e| panic!("bad secret pattern {p}: {e}"))
}
