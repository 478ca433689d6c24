//! Tests of the App credentials and the App JWT (signed for real, verified with the public key).

use std::collections::HashMap;

use jsonwebtoken::{DecodingKey, Validation};
use serde_json::Value;

use super::*;

// The key maker the integration tests use too.
#[path = "../../../tests/support/app_keys.rs"]
pub(crate) mod app_keys;

pub(crate) fn test_key(pkcs8: bool) -> &'static app_keys::TestKey {
    app_keys::test_key(if pkcs8 {
        app_keys::KeyForm::Pkcs8
    } else {
        app_keys::KeyForm::Pkcs1
    })
}

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

/// The claims of `jwt`, after checking its RS256 signature against `public_pem`.
fn verified_claims(jwt: &str, public_pem: &str) -> Value {
    let key = DecodingKey::from_rsa_pem(public_pem.as_bytes()).unwrap();
    let mut validation = Validation::new(Algorithm::RS256);
    validation.validate_exp = false;
    validation.required_spec_claims.clear();
    let data = jsonwebtoken::decode::<Value>(jwt, &key, &validation).unwrap();
    assert_eq!(data.header.alg, Algorithm::RS256);
    data.claims
}

/// Each base64 line of the key's body, which no error or `Debug` may contain.
fn key_lines(pem: &str) -> Vec<&str> {
    pem.lines()
        .filter(|l| !l.starts_with("-----") && l.len() > 16)
        .collect()
}

#[test]
fn both_key_forms_load_and_sign_a_jwt_github_accepts() {
    for pkcs8 in [false, true] {
        let key = test_key(pkcs8);
        let creds = AppCredentials::from_vars(vars(&[
            (APP_ID_VAR, " 123456 "),
            (PRIVATE_KEY_VAR, &key.private_pem),
        ]))
        .unwrap();
        let at = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let jwt = creds.jwt_at(at).unwrap();
        let claims = verified_claims(jwt.expose_secret(), &key.public_pem);
        assert_eq!(claims["iat"], 1_800_000_000 - 60, "pkcs8={pkcs8}");
        assert_eq!(claims["exp"], 1_800_000_000 + 9 * 60);
        assert_eq!(claims["iss"], 123_456, "a numeric ID goes out as a number");
        let span = claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap();
        assert!(span <= 600, "GitHub refuses more than 10 minutes: {span}");
    }
}

#[test]
fn a_client_id_is_the_issuer_as_a_string() {
    let key = test_key(false);
    let creds = AppCredentials::from_vars(vars(&[
        (APP_ID_VAR, "Iv23liAbCdEf0123"),
        (PRIVATE_KEY_VAR, &key.private_pem),
    ]))
    .unwrap();
    let claims = verified_claims(creds.jwt().unwrap().expose_secret(), &key.public_pem);
    assert_eq!(claims["iss"], "Iv23liAbCdEf0123");
}

#[test]
fn the_key_is_read_from_a_file_or_from_one_escaped_line() {
    let key = test_key(true);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.pem");
    std::fs::write(&path, &key.private_pem).unwrap();
    let from_file = AppCredentials::from_vars(vars(&[
        (APP_ID_VAR, "7"),
        (PRIVATE_KEY_PATH_VAR, path.to_str().unwrap()),
    ]))
    .unwrap();
    verified_claims(from_file.jwt().unwrap().expose_secret(), &key.public_pem);
    let one_line = key.private_pem.trim_end().replace('\n', "\\n");
    let escaped =
        AppCredentials::from_vars(vars(&[(APP_ID_VAR, "7"), (PRIVATE_KEY_VAR, &one_line)]))
            .unwrap();
    verified_claims(escaped.jwt().unwrap().expose_secret(), &key.public_pem);
}

#[test]
fn bad_or_missing_settings_are_clear_errors_that_never_show_the_key() {
    let key = test_key(false);
    let private = key.private_pem.as_str();
    let damaged = private.replacen("MII", "MIJ", 1);
    let truncated: String = private.lines().take(8).collect::<Vec<_>>().join("\n");
    let ec = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBFake\n-----END EC PRIVATE KEY-----\n";
    let encrypted =
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIFake\n-----END ENCRYPTED PRIVATE KEY-----\n";
    let cases: Vec<(Vec<(&str, &str)>, &str)> = vec![
        (
            vec![(PRIVATE_KEY_VAR, private)],
            "REVIEWBOT_APP_ID is not set",
        ),
        (
            vec![(APP_ID_VAR, "my-app"), (PRIVATE_KEY_VAR, private)],
            "REVIEWBOT_APP_ID must be",
        ),
        (
            vec![(APP_ID_VAR, "0"), (PRIVATE_KEY_VAR, private)],
            "REVIEWBOT_APP_ID must be",
        ),
        (
            vec![(APP_ID_VAR, "1")],
            "set REVIEWBOT_PRIVATE_KEY (the PEM text) or REVIEWBOT_PRIVATE_KEY_PATH",
        ),
        (
            vec![(APP_ID_VAR, "1"), (PRIVATE_KEY_VAR, "  ")],
            "the GitHub App's private key is missing",
        ),
        (
            vec![
                (APP_ID_VAR, "1"),
                (PRIVATE_KEY_VAR, private),
                (PRIVATE_KEY_PATH_VAR, "/k.pem"),
            ],
            "set only one of",
        ),
        (
            vec![(APP_ID_VAR, "1"), (PRIVATE_KEY_VAR, "hunter2-not-a-key")],
            "REVIEWBOT_PRIVATE_KEY does not hold a usable GitHub App private key: it is not PEM text",
        ),
        (
            vec![(APP_ID_VAR, "1"), (PRIVATE_KEY_VAR, &key.public_pem)],
            "it is a public key, not the private key",
        ),
        (
            vec![(APP_ID_VAR, "1"), (PRIVATE_KEY_VAR, ec)],
            "it is not an RSA private key",
        ),
        (
            vec![(APP_ID_VAR, "1"), (PRIVATE_KEY_VAR, encrypted)],
            "the key is encrypted",
        ),
        (
            vec![(APP_ID_VAR, "1"), (PRIVATE_KEY_VAR, &damaged)],
            "REVIEWBOT_PRIVATE_KEY does not hold a usable",
        ),
        (
            vec![(APP_ID_VAR, "1"), (PRIVATE_KEY_VAR, &truncated)],
            "REVIEWBOT_PRIVATE_KEY does not hold a usable",
        ),
        (
            vec![
                (APP_ID_VAR, "1"),
                (PRIVATE_KEY_PATH_VAR, "/nonexistent/app.pem"),
            ],
            "cannot read the private key file /nonexistent/app.pem (REVIEWBOT_PRIVATE_KEY_PATH): entity not found",
        ),
    ];
    for (settings, expected) in cases {
        let err = AppCredentials::from_vars(vars(&settings)).unwrap_err();
        let text = err.to_string();
        assert!(text.contains(expected), "{settings:?}: {text}");
        for shown in [text, format!("{err:?}")] {
            for line in key_lines(private).iter().chain(&key_lines(&key.public_pem)) {
                assert!(!shown.contains(line), "{shown}");
            }
            assert!(!shown.contains("hunter2"), "{shown}");
        }
    }
}

#[test]
fn a_key_file_that_is_not_a_key_names_the_path_variable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.pem");
    std::fs::write(&path, b"\xff\xfe not text").unwrap();
    let err = AppCredentials::from_vars(vars(&[
        (APP_ID_VAR, "1"),
        (PRIVATE_KEY_PATH_VAR, path.to_str().unwrap()),
    ]))
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("REVIEWBOT_PRIVATE_KEY_PATH does not hold"),
        "{err}"
    );
    let err = AppCredentials::from_vars(vars(&[
        (APP_ID_VAR, "1"),
        (PRIVATE_KEY_PATH_VAR, dir.path().to_str().unwrap()),
    ]))
    .unwrap_err();
    assert!(err.to_string().contains("not a file"), "{err}");
}

#[test]
fn debug_never_shows_the_key() {
    let key = test_key(false);
    let creds =
        AppCredentials::from_pem(AppIssuer::Id(42), &key.private_pem, PRIVATE_KEY_VAR).unwrap();
    let shown = format!("{creds:?}");
    assert_eq!(
        shown,
        r#"AppCredentials { app_id: 42, private_key: "[redacted]" }"#
    );
    let token = InstallationToken {
        token: SecretString::from("ghs_secretsecretsecretsecretsecretsecret"),
        expires_at: UNIX_EPOCH,
    };
    assert!(!format!("{token:?}").contains("ghs_"), "{token:?}");
}

#[test]
fn issuers_parse_strictly() {
    assert_eq!(AppIssuer::parse(" 12 "), Some(AppIssuer::Id(12)));
    assert_eq!(
        AppIssuer::parse("Iv1.abc_DEF-9"),
        Some(AppIssuer::ClientId("Iv1.abc_DEF-9".into()))
    );
    for bad in ["", "0", "-3", "12a", "my app", "Iv1 x", "ghp_abc"] {
        assert_eq!(AppIssuer::parse(bad), None, "{bad:?}");
    }
}
