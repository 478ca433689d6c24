//! The credentials reviewbot holds or hands to a child, masked by value wherever they turn up.
//!
//! Masking by shape ([`crate::redact`]'s rules) catches a token that looks like one; a lens that
//! quotes an API key of a gateway's own format, a webhook secret or a Codex login would slip
//! through. So every credential value the process can see is remembered at start, and from then
//! on [`crate::redact::redact`] masks it in everything printed, posted, logged or stored, whatever
//! shape it has. Installation tokens minted at run time are not added: they all carry GitHub's
//! `ghs_` prefix, which the shape rules mask, and a service minting one an hour per
//! installation would otherwise grow the remembered set for its whole life.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The rule name a credential is masked under: `[REDACTED credential]`.
pub const RULE: &str = "credential";

/// Variables whose whole value is a credential.
const SECRET_VARS: [&str; 8] = [
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
    "REVIEWBOT_PRIVATE_KEY",
];

/// The most of a credentials file read (a PEM key, a login's JSON).
const MAX_FILE: u64 = 256 << 10;

/// Remembers every credential the process environment holds or points to.
pub fn remember_from_env() {
    remember_from(|name| std::env::var(name).ok());
}

/// Remembers every credential `var` (a variable look-up) holds or points to: the variables
/// above, each webhook secret, the App key file, the Codex login (`$CODEX_HOME/auth.json`) and
/// the Claude Code login (`.credentials.json` in its config directory).
pub fn remember_from(var: impl Fn(&str) -> Option<String>) {
    let mut values: Vec<String> = SECRET_VARS.iter().filter_map(|name| var(name)).collect();
    if let Some(secrets) = var("REVIEWBOT_WEBHOOK_SECRET") {
        values.extend(secrets.split(',').map(str::to_owned));
    }
    if let Some(path) = var("REVIEWBOT_PRIVATE_KEY_PATH") {
        values.extend(read_small(Path::new(&path)));
    }
    let home = var("HOME").map(PathBuf::from);
    let codex_home = var("CODEX_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".codex")));
    let claude_dir = var("CLAUDE_CONFIG_DIR")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".claude")));
    for login in [
        codex_home.map(|d| d.join("auth.json")),
        claude_dir.map(|d| d.join(".credentials.json")),
    ]
    .into_iter()
    .flatten()
    {
        if let Some(text) = read_small(&login) {
            values.extend(json_strings(&text));
        }
    }
    remember(values.iter().map(String::as_str));
}

/// Remembers credential values: each whole, and each line of a multi-line one (a PEM key).
pub fn remember<'a>(values: impl IntoIterator<Item = &'a str>) {
    let mut pieces = Vec::new();
    for value in values {
        // A PEM key is quoted a line at a time as often as whole.
        pieces.extend(
            value
                .lines()
                .map(str::trim)
                .filter(|l| !l.starts_with("-----")),
        );
        pieces.push(value.trim());
    }
    crate::redact::remember_for_process(pieces.into_iter().map(|v| (RULE, v)));
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::redact::redact;

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
        remember_from(|name| vars.get(name).cloned());
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
