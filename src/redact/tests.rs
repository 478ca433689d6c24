use super::contextual::{AWS_SECRET_RE, AWS_SHAPED_RE, PEM_BEGIN_RE, PEM_END_RE, URL_PASSWORD_RE};
use super::keywords::COMPILED;
use super::known::secret_values_of;
use super::rules::compile;
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
    assert_eq!(rule_name(GENERIC), Some("Generic API key"));
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
fn placeholders_are_neither_reported_nor_masked() {
    // gitleaks' tests hold a token-shaped placeholder to be no secret, and masking shows what
    // detection finds.
    let text = format!("export GITHUB_TOKEN=ghp_{}", "x".repeat(36));
    assert!(find_secrets(&text).is_empty());
    assert_eq!(redact(&text), text);
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
}

/// A remembered value under 12 characters (a short password in a URL) is masked where it
/// stands as a whole token, and nowhere else.
#[tokio::test]
async fn a_short_remembered_value_is_masked_as_a_whole_token() {
    KnownSecrets::new()
        .scope(async {
            let pw = "Pw7x9k";
            remember(secret_values(&format!(
                "DATABASE_URL=postgres://app:{pw}@db/app"
            )));
            assert_eq!(
                redact(&format!("the password is {pw}.")),
                "the password is [REDACTED url-password]."
            );
            assert_eq!(
                redact(&format!("{{\"pw\":\"{pw}\"}}")),
                "{\"pw\":\"[REDACTED url-password]\"}"
            );
            let glued = format!("x{pw} {pw}y {pw}_2");
            assert_eq!(redact(&glued), glued);
        })
        .await;
}

/// No cap lets a value through: 5,000 generic keys in one diff, every one masked when a lens
/// echoes it (there was a cap of 4,096, past which values printed in clear).
#[tokio::test]
async fn thousands_of_remembered_values_are_all_masked() {
    KnownSecrets::new()
        .scope(async {
            // The values the generic rule takes: a few random ones hold one of gitleaks'
            // stopwords (`…dev…`) and are no secret to it.
            let values: Vec<String> = (0..5_000u64)
                .map(|i| format!("{}Q7", rand(ALNUM, 30, 10_000 + i)))
                .filter(|v| !find_secrets(&format!("API_KEY = \"{v}\"")).is_empty())
                .collect();
            assert!(values.len() > 4_900, "{}", values.len());
            let diff: String = values
                .iter()
                .enumerate()
                .map(|(i, v)| format!("+API_KEY_{i} = \"{v}\"\n"))
                .collect();
            let found = secret_values(&diff);
            assert_eq!(found.len(), values.len());
            remember(found);
            for v in [&values[0], &values[4_095], &values[4_096], &values[4_899]] {
                assert_eq!(
                    redact(&format!("echo {v}")),
                    "echo [REDACTED generic-api-key]",
                    "{v}"
                );
            }
            let echoed = values.join(" ");
            let masked = redact(&echoed);
            assert_eq!(
                masked.matches("[REDACTED generic-api-key]").count(),
                values.len()
            );
            assert!(values.iter().all(|v| !masked.contains(v.as_str())));
        })
        .await;
}

/// Two remembered values that overlap in a text are both masked whole: the first one's match
/// does not hide the second's tail.
#[tokio::test]
async fn overlapping_remembered_values_are_each_masked_whole() {
    KnownSecrets::new()
        .scope(async {
            let (left, right) = ("Left0123456789Mid", "MidRight9876543210");
            remember([(GENERIC, left), (GENERIC, right)]);
            assert_eq!(
                redact(&format!("a {left}Right9876543210 b")),
                "a [REDACTED generic-api-key] b"
            );
        })
        .await;
}

#[tokio::test]
async fn two_reviews_do_not_share_remembered_secrets() {
    let (a_value, b_value) = (rand(ALNUM, 32, 301), rand(ALNUM, 32, 302));
    let says = |v: &str| format!("lens says: {v}");
    let masked = says("[REDACTED generic-api-key]");
    let a = KnownSecrets::new();
    let b = KnownSecrets::new();
    a.scope(async { remember([(GENERIC, a_value.as_str())]) })
        .await;
    b.scope(async { remember([(GENERIC, b_value.as_str())]) })
        .await;
    // In a review's task: its own values, no other's.
    a.scope(async {
        assert_eq!(redact(&says(&a_value)), masked);
        assert_eq!(redact(&says(&b_value)), says(&b_value));
    })
    .await;
    b.scope(async {
        assert_eq!(redact(&says(&b_value)), masked);
        assert_eq!(redact(&says(&a_value)), says(&a_value));
    })
    .await;
    // Outside every review's task (a worker thread, a log line): every live review's.
    assert_eq!(redact(&says(&a_value)), masked);
    assert_eq!(redact(&says(&b_value)), masked);
    // A review that ended is forgotten; one under way in a review keeps using it.
    drop(a);
    assert!(forgotten(&says(&a_value)));
    assert_eq!(redact(&says(&b_value)), masked);
    b.scope(KnownSecrets::scoped(async {
        remember([(GENERIC, "a-later-value-of-review-b")]);
    }))
    .await;
    assert_eq!(
        redact("a-later-value-of-review-b"),
        "[REDACTED generic-api-key]"
    );
    drop(b);
    assert!(forgotten(&says(&b_value)));
    assert!(forgotten("a-later-value-of-review-b"));
}

/// Whether `text` comes out of [`redact`] unmasked within a second. A test on another thread
/// redacting outside any review holds every live review's values for the instant it reads
/// them, so a review just dropped is forgotten once such a read ends, not at the drop.
fn forgotten(text: &str) -> bool {
    (0..100).any(|_| {
        let unmasked = redact(text) == text;
        if !unmasked {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        unmasked
    })
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

#[test]
fn a_known_value_is_masked_wherever_it_is_echoed_and_nothing_else_is() {
    let key = rand(ALNUM, 12, 7);
    let text = format!("bad key {key}; you sent {key}!");
    assert_eq!(
        mask_value(&text, &key, "[REDACTED api-key]"),
        "bad key [REDACTED api-key]; you sent [REDACTED api-key]!"
    );
    assert!(matches!(
        mask_value("nothing here", &key, "[x]"),
        Cow::Borrowed(_)
    ));
    // No value to look for masks nothing (an empty key would match between every character).
    assert_eq!(mask_value("abc", "", "[x]"), "abc");
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
        prop_assert!(scan(&out, Mode::Redact, None).is_empty(), "{:?}", out);
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
        let by_pieces: Vec<usize> = crate::par::line_pieces(text.as_bytes(), size)
            .flat_map(|r| {
                keyword_starts(&text.as_bytes()[r.clone()]).into_iter().map(move |at| at + r.start)
            })
            .collect();
        prop_assert_eq!(by_pieces, keyword_starts(text.as_bytes()), "{:?}", text);
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
            prop_assert!(!keyword_starts(text.as_bytes()).is_empty(), "{:?}", text);
        }
    }

    #[test]
    fn redact_is_idempotent_on_any_text(text in "(\\PC|[A-Z2-7_-]|ghp_|AKIA|sk-ant-|eyJ|\\.){0,200}") {
        let once = redact(&text).into_owned();
        prop_assert_eq!(redact(&once).into_owned(), once);
    }
}

#[test]
fn a_value_on_the_line_after_its_name_is_remembered() {
    // gitleaks' "xml - element multiline" form: the prompt is masked a line at a time, so only
    // a remembered value hides the token on its own line.
    let token = format!("{}7q", rand(ALNUM, 30, 41));
    let diff = format!("+<apiToken>\n+    {token}\n+</apiToken>\n");
    let keywords = keyword_starts(diff.as_bytes());
    let values = secret_values_in(diff.as_bytes(), &keywords);
    assert_eq!(values, vec![(GENERIC, token.clone())], "{diff}");
}

#[test]
fn gitleaks_rules_mask_and_detect_alike() {
    // A Telegram bot token: gitleaks' rule, not one of reviewbot's own.
    let token = format!("{}:A{}", rand(DIGITS, 9, 5), rand(URLSAFE, 34, 6));
    let text = format!("TELEGRAM_BOT_TOKEN = \"{token}\"");
    let found = find_secrets(&text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].rule, "telegram-bot-api-token");
    assert_eq!(&text[found[0].range.clone()], token);
    assert_eq!(
        redact(&text),
        "TELEGRAM_BOT_TOKEN = \"[REDACTED telegram-bot-api-token]\""
    );
    // Its false positive (a bot id too short) is neither.
    let short = format!(
        "TELEGRAM_BOT_TOKEN = \"{}:A{}\"",
        rand(DIGITS, 4, 5),
        rand(URLSAFE, 34, 6)
    );
    assert!(find_secrets(&short).is_empty());
    assert_eq!(redact(&short), short);
}
