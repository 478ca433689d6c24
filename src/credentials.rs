//! The credentials reviewbot holds or hands to a child, masked by value wherever they turn up.
//!
//! Masking by shape ([`crate::redact`]'s rules) catches a token that looks like one; a lens that
//! quotes an API key of a gateway's own format, a webhook secret or a Codex login would slip
//! through. So every credential value the process can see is remembered at start, and from then
//! on [`crate::redact::redact`] masks it in everything printed, posted, logged or stored, whatever
//! shape it has. Installation tokens minted at run time are not added: they all carry GitHub's
//! `ghs_` prefix, which the shape rules mask, and a service minting one an hour per
//! installation would otherwise grow the remembered set for its whole life.
//!
//! The variables that hold a credential are one list: reviewbot's own ([`OWN_VARS`]) and those
//! each backend declares (the lens registry joins them). What is masked at start comes from it,
//! and so does what a `command` lens may never be given. The variables an operator passes to a
//! `command` lens (`env = [...]`) or names as a lens's `api_key_env` feed the same masking
//! ([`remember_vars`]) when the config is read.

use std::path::{Path, PathBuf};

use base64::Engine;
use serde_json::Value;

/// The rule name a credential is masked under: `[REDACTED credential]`.
pub const RULE: &str = "credential";

/// How a variable holds a credential.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holds {
    /// Its whole value is one.
    Value,
    /// A comma-separated list of them (webhook secrets while one is rotated).
    List,
    /// The path of a file holding one (the App's key).
    File,
    /// A URL whose passwords are (`user:password@`, `?password=`): the store's.
    Url,
}

/// A variable that holds a credential.
#[derive(Debug, Clone, Copy)]
pub struct SecretVar {
    pub name: &'static str,
    pub holds: Holds,
    /// Whether a `command` lens whose `env` names it is given it: API keys are the operator's
    /// to hand to their own program; reviewbot's own credentials and the Claude subscription
    /// token (for a `claude-cli` lens only) never are.
    pub to_command_lens: bool,
}

pub const fn var(name: &'static str, holds: Holds, to_command_lens: bool) -> SecretVar {
    SecretVar {
        name,
        holds,
        to_command_lens,
    }
}

/// The variables reviewbot's own credentials are in: GitHub's, the App's, the store's, and the
/// Claude subscription token it hands to a `claude-cli` lens and nothing else. The backends'
/// (API keys, base URLs, gateway tokens) are declared by each backend.
pub const OWN_VARS: [SecretVar; 10] = [
    var("GITHUB_TOKEN", Holds::Value, false),
    var("GH_TOKEN", Holds::Value, false),
    var("ACTIONS_RUNTIME_TOKEN", Holds::Value, false),
    var("ACTIONS_ID_TOKEN_REQUEST_TOKEN", Holds::Value, false),
    var("REVIEWBOT_PRIVATE_KEY", Holds::Value, false),
    var("REVIEWBOT_PRIVATE_KEY_PATH", Holds::File, false),
    var("REVIEWBOT_WEBHOOK_SECRET", Holds::List, false),
    var("REVIEWBOT_DATABASE_URL", Holds::Url, false),
    var("GITHUB_API_URL", Holds::Url, true),
    var("CLAUDE_CODE_OAUTH_TOKEN", Holds::Value, false),
];

/// Whether a lens may never be given `name` (of the credential variables `known`), even when
/// its config names it.
pub fn never_to_a_lens(known: &[SecretVar], name: &str) -> bool {
    known.iter().any(|v| v.name == name && !v.to_command_lens)
}

/// The most of a credentials file read (a PEM key, a login's JSON).
const MAX_FILE: u64 = 256 << 10;

/// The shortest string of a login file taken for a credential. A login's tokens are long; its
/// short strings are settings (`"subscriptionType": "max"`, `"auth_mode": "chatgpt"`), which
/// masked as tokens would garble every `max` in a review.
const MIN_LOGIN_VALUE: usize = 12;

/// Remembers every credential the process environment holds or points to, `known` naming the
/// variables that hold one.
pub fn remember_from_env(known: &[SecretVar]) {
    remember_from(known, |name| std::env::var(name).ok());
}

/// Remembers every credential `var` (a variable look-up) holds or points to: the variables of
/// `known`, the Codex login (`$CODEX_HOME/auth.json`) and the Claude Code login
/// (`.credentials.json` in its config directory).
pub fn remember_from(known: &[SecretVar], var: impl Fn(&str) -> Option<String>) {
    remember_vars(known, known.iter().map(|v| v.name), &var);
    let home = var("HOME").map(PathBuf::from);
    let codex_home = var("CODEX_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".codex")));
    let claude_dir = var("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".claude")));
    let mut values = Vec::new();
    for login in [
        codex_home.map(|d| d.join("auth.json")),
        claude_dir.map(|d| d.join(".credentials.json")),
    ]
    .into_iter()
    .flatten()
    {
        if let Some(text) = read_small(&login) {
            values.extend(
                json_strings(&text)
                    .into_iter()
                    .filter(|s| s.trim().len() >= MIN_LOGIN_VALUE),
            );
        }
    }
    remember(values.iter().map(String::as_str));
}

/// Remembers the credentials the variables `names` hold, each as `known` says it holds them; a
/// name it does not list (a variable an operator passes to a `command` lens) holds one as its
/// whole value.
pub fn remember_vars<'a>(
    known: &[SecretVar],
    names: impl IntoIterator<Item = &'a str>,
    var: impl Fn(&str) -> Option<String>,
) {
    let mut values = Vec::new();
    for name in names {
        let Some(value) = var(name) else { continue };
        let holds = known
            .iter()
            .find(|v| v.name == name)
            .map_or(Holds::Value, |v| v.holds);
        match holds {
            Holds::Value => values.push(value),
            Holds::List => values.extend(value.split(',').map(str::to_owned)),
            Holds::File => values.extend(read_small(Path::new(&value))),
            Holds::Url => {
                for password in url_passwords(&value) {
                    values.push(password.to_owned());
                    // The driver reads it percent-decoded; an error may quote it either way.
                    if let Ok(decoded) =
                        percent_encoding::percent_decode_str(password).decode_utf8()
                    {
                        values.push(decoded.into_owned());
                    }
                }
            }
        }
    }
    remember(values.iter().map(String::as_str));
}

/// Remembers credential values: each whole, each line of a multi-line one (a PEM key), and the
/// base64 forms of each long one.
pub fn remember<'a>(values: impl IntoIterator<Item = &'a str>) {
    let mut pieces: Vec<String> = Vec::new();
    for value in values {
        // A PEM key is quoted a line at a time as often as whole.
        pieces.extend(
            value
                .lines()
                .map(str::trim)
                .filter(|l| !l.starts_with("-----"))
                .map(str::to_owned),
        );
        let value = value.trim();
        pieces.push(value.to_owned());
        pieces.extend(base64_forms(value));
    }
    crate::redact::remember_for_process(pieces.iter().map(|v| (RULE, v.as_str())));
}

/// What shows of `value` wherever it is base64-encoded inside something longer: HTTP basic
/// auth, and the header `actions/checkout` writes into `.git/config`
/// (`AUTHORIZATION: basic base64("x-access-token:" + token)`), which a lens reads under
/// `--checkout`. Base64 turns each 3 bytes into 4 characters, so the value comes out one of
/// three ways depending on where it starts in the encoded bytes: for each, the characters that
/// depend on the value alone, and the same with the padding that ends an encoding it ends.
/// A short value has no form long enough to mask safely inside other base64.
fn base64_forms(value: &str) -> Vec<String> {
    const MIN: usize = 12;
    if value.len() < MIN {
        return Vec::new();
    }
    let mut forms = Vec::new();
    for lead in 0..3 {
        let mut bytes = vec![0u8; lead];
        bytes.extend_from_slice(value.as_bytes());
        let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
        // The first group holds a byte before the value unless it starts one.
        let start = if lead == 0 { 0 } else { 4 };
        let whole_groups = bytes.len() / 3 * 4;
        forms.push(encoded[start..whole_groups].to_owned());
        forms.push(encoded[start..].to_owned());
    }
    forms.sort();
    forms.dedup();
    forms
}

fn read_small(path: &Path) -> Option<String> {
    use std::io::Read;
    let file = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    file.take(MAX_FILE).read_to_string(&mut text).ok()?;
    Some(text)
}

/// Every string value in a JSON document (a login file's tokens and keys), at any depth.
fn json_strings(text: &str) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            Value::Object(map) => map.values().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        walk(&v, &mut out);
    }
    out
}

/// The URL for a message: a password in the user part or the query is replaced by `***`.
pub fn mask_url(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    let mut at = 0;
    for range in password_ranges(url) {
        out.push_str(&url[at..range.start]);
        out.push_str("***");
        at = range.end;
    }
    out.push_str(&url[at..]);
    out
}

/// The passwords a store's URL holds (`user:password@`, `?password=`), as written: what
/// [`mask_url`] hides, and what [`remember_from`] masks wherever it turns up.
pub fn url_passwords(url: &str) -> Vec<&str> {
    password_ranges(url)
        .into_iter()
        .map(|r| &url[r])
        .filter(|p| !p.is_empty())
        .collect()
}

/// Where the passwords of `url` are: the user part's after its `:`, and the value of every
/// query parameter whose name holds `password` (`password`, `sslpassword`), in order.
fn password_ranges(url: &str) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    let tail = match url.split_once("://") {
        Some((scheme, rest)) => {
            let start = scheme.len() + "://".len();
            let end = start + rest.find(['/', '?', '#']).unwrap_or(rest.len());
            if let Some(at) = url[start..end].rfind('@')
                && let Some(colon) = url[start..start + at].find(':')
            {
                ranges.push(start + colon + 1..start + at);
            }
            end
        }
        None => 0,
    };
    let Some(q) = url[tail..].find('?') else {
        return ranges;
    };
    let mut at = tail + q + 1;
    for pair in url[at..].split('&') {
        if let Some((key, _)) = pair.split_once('=')
            && key.to_ascii_lowercase().contains("password")
        {
            ranges.push(at + key.len() + 1..at + pair.len());
        }
        at += pair.len() + 1;
    }
    ranges
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    #[test]
    fn a_password_never_shows_in_a_url() {
        assert_eq!(
            mask_url("postgres://bot:s3cret@db.internal:5432/reviewbot"),
            "postgres://bot:***@db.internal:5432/reviewbot"
        );
        assert_eq!(
            mask_url("postgres://db/reviewbot?user=bot&password=s3cret&sslmode=require"),
            "postgres://db/reviewbot?user=bot&password=***&sslmode=require"
        );
        assert_eq!(
            mask_url("postgres://bot@db/x"),
            "postgres://bot@db/x",
            "no password, nothing to hide"
        );
        assert_eq!(mask_url("sqlite://reviewbot.db"), "sqlite://reviewbot.db");
        assert_eq!(mask_url("sqlite::memory:"), "sqlite::memory:");
        assert!(!mask_url("postgres://a:p%40ss@h/x").contains("p%40ss"));
        assert_eq!(mask_url("x?a=1&PassWord=z"), "x?a=1&PassWord=***");
    }

    #[test]
    fn the_passwords_of_a_url_are_what_mask_url_hides() {
        assert_eq!(
            url_passwords("postgres://bot:s3cret@db:5432/r?sslpassword=k3y&password=pw9&x=1"),
            ["s3cret", "k3y", "pw9"]
        );
        assert_eq!(url_passwords("postgres://bot:p%40ss@db/r"), ["p%40ss"]);
        assert!(url_passwords("postgres://bot@db/r?user=bot").is_empty());
        assert!(url_passwords("postgres://bot:@db/r?password=").is_empty());
        assert!(url_passwords("sqlite://reviewbot.db").is_empty());
        assert_eq!(url_passwords("sqlite::memory:?password=abcd"), ["abcd"]);
    }

    use super::*;
    use crate::redact::redact;

    /// Reviewbot's own variables and the backends' as they declare them today.
    fn known() -> Vec<SecretVar> {
        let mut known = OWN_VARS.to_vec();
        known.extend([
            var("ANTHROPIC_API_KEY", Holds::Value, true),
            var("ANTHROPIC_AUTH_TOKEN", Holds::Value, true),
            var("OPENAI_API_KEY", Holds::Value, true),
            var("CODEX_API_KEY", Holds::Value, true),
        ]);
        known
    }

    #[test]
    fn every_credential_is_masked_by_value_whatever_its_shape() {
        let dir = tempfile::tempdir().unwrap();
        let codex_home = dir.path().join("codex");
        std::fs::create_dir(&codex_home).unwrap();
        std::fs::write(
            codex_home.join("auth.json"),
            r#"{"OPENAI_API_KEY": null, "tokens": {"id_token": "codexlogin-id-4f1d9a7c2e",
                "access_token": "codexlogin-access-88a1b2c3d4", "account_id": "acct-local-778899aa"}}"#,
        )
        .unwrap();
        let claude_dir = dir.path().join("claude");
        std::fs::create_dir(&claude_dir).unwrap();
        std::fs::write(
            claude_dir.join(".credentials.json"),
            r#"{"claudeAiOauth": {"accessToken": "claudelogin-acc-5e6f7a8b9c"}}"#,
        )
        .unwrap();
        let key_path = dir.path().join("app.pem");
        std::fs::write(
            &key_path,
            "-----BEGIN RSA PRIVATE KEY-----\nkeyline-one-0a1b2c3d4e5f\nkeyline-two-9z8y7x6w5v\n-----END RSA PRIVATE KEY-----\n",
        )
        .unwrap();
        let vars: HashMap<&str, String> = [
            ("GITHUB_TOKEN", "plain-gh-value-31415926".to_owned()),
            ("ANTHROPIC_API_KEY", "gateway-key-27182818".to_owned()),
            ("OPENAI_API_KEY", "proxy-key-16180339".to_owned()),
            ("CLAUDE_CODE_OAUTH_TOKEN", "oauth-value-14142135".to_owned()),
            (
                "REVIEWBOT_WEBHOOK_SECRET",
                "hook-secret-old-1234,hook-secret-new-5678".to_owned(),
            ),
            ("REVIEWBOT_PRIVATE_KEY_PATH", key_path.display().to_string()),
            ("CODEX_HOME", codex_home.display().to_string()),
            ("CLAUDE_CONFIG_DIR", claude_dir.display().to_string()),
        ]
        .into_iter()
        .collect();
        remember_from(&known(), |name| vars.get(name).cloned());
        for value in [
            "plain-gh-value-31415926",
            "gateway-key-27182818",
            "proxy-key-16180339",
            "oauth-value-14142135",
            "hook-secret-old-1234",
            "hook-secret-new-5678",
            "keyline-one-0a1b2c3d4e5f",
            "keyline-two-9z8y7x6w5v",
            "codexlogin-access-88a1b2c3d4",
            "codexlogin-id-4f1d9a7c2e",
            "claudelogin-acc-5e6f7a8b9c",
        ] {
            let text = format!("the lens quoted ({value}) here");
            let masked = redact(&text);
            assert!(!masked.contains(value), "{value} survived: {masked}");
            assert!(masked.contains("[REDACTED credential]"), "{masked}");
        }
    }

    /// The credentials the list above missed: `CODEX_API_KEY`, `ANTHROPIC_AUTH_TOKEN`, a value
    /// under 12 characters, the store's password (in the user part and as `?password=`) and
    /// the GitHub token base64-encoded as `actions/checkout` writes it into `.git/config`.
    #[test]
    fn every_form_a_credential_takes_is_masked() {
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let token = "gh-token-value-8d3f1c2b9a7e";
        let vars: HashMap<&str, String> = [
            ("CODEX_API_KEY", "codex-paid-key-4f1a9e77"),
            ("ANTHROPIC_AUTH_TOKEN", "gateway-bearer-6b2c8d01"),
            ("REVIEWBOT_WEBHOOK_SECRET", "Hk7pQ2xZ"),
            (
                "REVIEWBOT_DATABASE_URL",
                "postgres://bot:Db9%40pw1@db.internal/r?sslmode=require&password=Qp4rT8vW",
            ),
            ("GITHUB_TOKEN", token),
        ]
        .into_iter()
        .map(|(k, v)| (k, v.to_owned()))
        .collect();
        remember_from(&known(), |name| vars.get(name).cloned());
        let extraheader = format!(
            "[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic {}\n",
            b64(&format!("x-access-token:{token}"))
        );
        for (value, text) in [
            (
                "codex-paid-key-4f1a9e77",
                "key codex-paid-key-4f1a9e77!".to_owned(),
            ),
            (
                "gateway-bearer-6b2c8d01",
                "Bearer gateway-bearer-6b2c8d01".to_owned(),
            ),
            ("Hk7pQ2xZ", "secret=Hk7pQ2xZ; next".to_owned()),
            ("Db9%40pw1", "postgres://bot:Db9%40pw1@db".to_owned()),
            ("Db9@pw1", "password \"Db9@pw1\" refused".to_owned()),
            ("Qp4rT8vW", "sslmode=require&password=Qp4rT8vW".to_owned()),
            (&b64(token)[..24], extraheader.clone()),
            // Base64 of the token after a user name of any length: each of the three ways
            // its bytes can fall.
            (
                &b64(&format!("u:{token}"))[4..28],
                b64(&format!("u:{token}")),
            ),
            (
                &b64(&format!("us:{token}"))[4..28],
                b64(&format!("us:{token}")),
            ),
        ] {
            let masked = redact(&text);
            assert!(!masked.contains(value), "{value} survived: {masked}");
            assert!(masked.contains("[REDACTED credential]"), "{masked}");
        }
        // The header keeps nothing of the token: not its encoded tail either.
        let masked = redact(&extraheader);
        assert!(
            masked.contains("AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46[REDACTED credential]\n"),
            "{masked}"
        );
    }

    #[test]
    fn a_short_credential_is_masked_as_a_whole_token_only() {
        remember(["Zq8vNp"]);
        assert_eq!(
            redact("token Zq8vNp, then \"Zq8vNp\"\\nZq8vNp"),
            "token [REDACTED credential], then \"[REDACTED credential]\"\\n[REDACTED credential]"
        );
        // The exact value only: not inside a longer word.
        assert_eq!(
            redact("aZq8vNp Zq8vNpb Zq8vNp_1"),
            "aZq8vNp Zq8vNpb Zq8vNp_1"
        );
        // Under four characters a value is not remembered: masking `on` or `1` everywhere would
        // mask every line number.
        remember(["q7Z"]);
        assert_eq!(redact("a q7Z b"), "a q7Z b");
    }
}
