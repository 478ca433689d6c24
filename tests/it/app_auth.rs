//! The GitHub App's authentication against the stateful fake: App JWTs the fake verifies with
//! the App's public key, `GET /app` → the bot login, installation tokens minted, cached,
//! renewed and re-minted after a 401. Keys are made by the `openssl` CLI at test time.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use reqwest::header::AUTHORIZATION;
use reviewbot::github::app::{AppCredentials, AppIssuer, GithubApp, PRIVATE_KEY_VAR};
use reviewbot::github::client::{ClientLimits, GithubClient, GithubError};
use reviewbot::github::model::{NewReview, RepoName};
use reviewbot::ids::{InstallationId, PrNumber};
use serde_json::{Value, json};

use crate::fake_github::{FakeGithub, KeyForm, PrSpec, test_key};

const APP_ID: u64 = 123_456;
const SLUG: &str = "reviewbot-test";
const INSTALLATION: u64 = 42;
const REPO: &str = "octo/hello";
const MINTS: &str = "/app/installations/42/access_tokens";

/// A fake with the App (its public key of `form`), installation 42 and PR #1.
fn world(form: KeyForm) -> FakeGithub {
    let fake = FakeGithub::start();
    fake.add_app(APP_ID, SLUG, &test_key(form).public_pem)
        .add_installation(INSTALLATION)
        .add_pr(REPO, PrSpec::default());
    fake
}

fn limits() -> ClientLimits {
    ClientLimits {
        max_rate_limit_wait: Duration::from_secs(5),
        rate_limit_floor: Duration::from_millis(100),
        write_spacing: Duration::ZERO,
        retries: 2,
        backoff_base: Duration::from_millis(10),
        notice: Arc::new(|_: &str| {}),
        ..ClientLimits::default()
    }
}

fn credentials(form: KeyForm) -> AppCredentials {
    AppCredentials::from_pem(
        AppIssuer::Id(APP_ID),
        &test_key(form).private_pem,
        PRIVATE_KEY_VAR,
    )
    .expect("the generated key loads")
}

fn app(fake: &FakeGithub, form: KeyForm, margin: Duration) -> Arc<GithubApp> {
    let app = GithubApp::new(&fake.url(), credentials(form), limits()).expect("app");
    Arc::new(app.with_renew_margin(margin))
}

fn installation_client(app: &Arc<GithubApp>) -> GithubClient {
    app.installation_client(InstallationId(INSTALLATION), limits())
}

fn repo() -> RepoName {
    RepoName::parse(REPO).unwrap()
}

/// `(method, path, status)` of every request so far.
fn log(fake: &FakeGithub) -> Vec<(String, String, u16)> {
    fake.requests()
        .into_iter()
        .map(|r| (r.method, r.path, r.status))
        .collect()
}

#[tokio::test]
async fn get_app_with_a_verified_jwt_gives_the_bot_login_for_both_key_forms() {
    for form in [KeyForm::Pkcs1, KeyForm::Pkcs8] {
        let fake = world(form);
        let app = app(&fake, form, Duration::from_secs(300));
        assert_eq!(app.bot_login().await.unwrap(), "reviewbot-test[bot]");
        assert_eq!(log(&fake), [("GET".into(), "/app".into(), 200)], "{form:?}");
    }
}

#[tokio::test]
async fn a_jwt_signed_with_another_key_is_refused_with_a_clear_error() {
    // The fake knows the PKCS#8 key's public half; the App signs with the PKCS#1 key.
    let fake = world(KeyForm::Pkcs8);
    let app = app(&fake, KeyForm::Pkcs1, Duration::from_secs(300));
    let err = app.bot_login().await.unwrap_err();
    assert!(matches!(err, GithubError::Unauthorized { .. }), "{err:?}");
    assert!(
        err.to_string()
            .contains("the App JWT was refused: check REVIEWBOT_APP_ID and the App's private key"),
        "{err}"
    );
    let client = installation_client(&app);
    let err = client.pull_request(&repo(), PrNumber(1)).await.unwrap_err();
    assert!(matches!(err, GithubError::Unauthorized { .. }), "{err:?}");
    assert!(fake.minted().is_empty());
    assert_eq!(
        fake.count("GET", "/repos/"),
        0,
        "no repo call without a token"
    );
}

/// Signs `claims` with the PKCS#1 test key (RS256).
fn sign(claims: &Value) -> String {
    let key = EncodingKey::from_rsa_pem(test_key(KeyForm::Pkcs1).private_pem.as_bytes()).unwrap();
    jsonwebtoken::encode(&Header::new(Algorithm::RS256), claims, &key).unwrap()
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[tokio::test]
async fn the_fake_checks_app_jwts_as_github_does() {
    let fake = world(KeyForm::Pkcs1);
    let t = now();
    let hs256 = jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        &json!({"iat": t - 60, "exp": t + 540, "iss": APP_ID}),
        &EncodingKey::from_secret(b"not the app key"),
    )
    .unwrap();
    let cases: Vec<(Option<String>, u16, &str)> = vec![
        (
            Some(sign(&json!({"iat": t - 60, "exp": t + 540, "iss": APP_ID}))),
            200,
            "valid",
        ),
        (
            Some(sign(
                &json!({"iat": t - 60, "exp": t + 540, "iss": APP_ID.to_string()}),
            )),
            200,
            "the ID as a string",
        ),
        (
            Some(sign(
                &json!({"iat": t - 60, "exp": t + 540, "iss": "Iv23fake123456"}),
            )),
            200,
            "the client ID",
        ),
        (
            Some(sign(&json!({"iat": t - 60, "exp": t + 601, "iss": APP_ID}))),
            401,
            "too far in the future",
        ),
        (
            Some(sign(
                &json!({"iat": t - 700, "exp": t - 100, "iss": APP_ID}),
            )),
            401,
            "must be a numeric value representing the future time",
        ),
        (
            Some(sign(
                &json!({"iat": t + 120, "exp": t + 500, "iss": APP_ID}),
            )),
            401,
            "a time in the past",
        ),
        (
            Some(sign(&json!({"iat": t - 60, "exp": t + 540, "iss": 999}))),
            401,
            "Integration not found",
        ),
        (
            Some(sign(&json!({"exp": t + 540, "iss": APP_ID}))),
            401,
            "claims must be Integers",
        ),
        (Some(hs256), 401, "could not be decoded"),
        (Some("ghs_not_a_jwt".into()), 401, "could not be decoded"),
        (None, 401, "could not be decoded"),
    ];
    let http = reqwest::Client::new();
    for (jwt, status, expected) in cases {
        let mut req = http.get(format!("{}/app", fake.url()));
        if let Some(jwt) = &jwt {
            req = req.header(AUTHORIZATION, format!("Bearer {jwt}"));
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status().as_u16(), status, "{expected}");
        let body: Value = resp.json().await.unwrap();
        let text = if status == 200 {
            body["slug"].as_str().unwrap().to_owned()
        } else {
            body["message"].as_str().unwrap().to_owned()
        };
        assert!(
            text.contains(expected) || (status == 200 && text == SLUG),
            "{expected}: {text}"
        );
    }
    // A JWT is not a token for the repository endpoints.
    let jwt = sign(&json!({"iat": t - 60, "exp": t + 540, "iss": APP_ID}));
    let resp = http
        .get(format!("{}/repos/{REPO}/pulls/1", fake.url()))
        .header(AUTHORIZATION, format!("Bearer {jwt}"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
}

#[tokio::test]
async fn one_mint_serves_a_job_and_its_token_reads_the_repository() {
    let fake = world(KeyForm::Pkcs1);
    let app = app(&fake, KeyForm::Pkcs1, Duration::from_secs(300));
    let client = installation_client(&app);
    client.pull_request(&repo(), PrNumber(1)).await.unwrap();
    client.reviews(&repo(), PrNumber(1)).await.unwrap();
    // A second job's client shares the App's cache.
    let other = installation_client(&app);
    other.labels(&repo(), PrNumber(1)).await.unwrap();
    assert_eq!(fake.count("POST", MINTS), 1, "{:?}", log(&fake));
    let minted = fake.minted();
    assert_eq!(minted.len(), 1);
    let repo_tokens: Vec<Option<String>> = fake
        .requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/repos/"))
        .map(|r| r.token)
        .collect();
    assert_eq!(repo_tokens, vec![Some(minted[0].token.clone()); 3]);
    assert_eq!(app.tokens_minted(), 1);
}

#[tokio::test]
async fn a_token_near_its_expiry_is_renewed_before_github_refuses_it() {
    let fake = world(KeyForm::Pkcs8);
    fake.set_token_lifetime(Duration::from_secs(3));
    let app = app(&fake, KeyForm::Pkcs8, Duration::from_secs(1));
    let client = installation_client(&app);
    client.pull_request(&repo(), PrNumber(1)).await.unwrap();
    client.pull_request(&repo(), PrNumber(1)).await.unwrap();
    assert_eq!(fake.minted().len(), 1, "still fresh: cached");
    tokio::time::sleep(Duration::from_millis(2200)).await;
    client.pull_request(&repo(), PrNumber(1)).await.unwrap();
    assert_eq!(fake.minted().len(), 2, "inside the margin: renewed");
    assert!(
        log(&fake).iter().all(|(_, _, status)| *status != 401),
        "{:?}",
        log(&fake)
    );
}

#[tokio::test]
async fn an_expired_token_answers_401_and_the_client_never_sends_it() {
    let fake = world(KeyForm::Pkcs1);
    fake.set_token_lifetime(Duration::from_secs(1));
    let app = app(&fake, KeyForm::Pkcs1, Duration::ZERO);
    let client = installation_client(&app);
    client.pull_request(&repo(), PrNumber(1)).await.unwrap();
    let first = fake.minted()[0].token.clone();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let resp = reqwest::Client::new()
        .get(format!("{}/repos/{REPO}/pulls/1", fake.url()))
        .header(AUTHORIZATION, format!("Bearer {first}"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401, "the fake honours the expiry");
    client.pull_request(&repo(), PrNumber(1)).await.unwrap();
    assert_eq!(fake.minted().len(), 2);
    let client_401s = fake
        .requests()
        .iter()
        .filter(|r| r.status == 401 && r.token.as_deref() != Some(first.as_str()))
        .count();
    assert_eq!(client_401s, 0);
}

#[tokio::test]
async fn a_revoked_token_mid_job_is_reminted_and_the_review_lands_once() {
    let fake = world(KeyForm::Pkcs1);
    let app = app(&fake, KeyForm::Pkcs1, Duration::from_secs(300));
    let client = installation_client(&app);
    let pr = client.pull_request(&repo(), PrNumber(1)).await.unwrap();
    fake.revoke_installation_tokens(INSTALLATION);
    let review = NewReview {
        commit_id: pr.head.to_string(),
        body: "Round 1 — reviewed head".into(),
        event: reviewbot::github::model::ReviewEvent::Comment,
        comments: Vec::new(),
    };
    let posted = client
        .create_review(&repo(), PrNumber(1), &review)
        .await
        .unwrap();
    let reviews = fake.reviews(REPO, 1);
    assert_eq!(reviews.len(), 1, "posted exactly once");
    assert_eq!(reviews[0]["id"], posted.id);
    assert_eq!(reviews[0]["user"]["login"], "reviewbot-test[bot]");
    let posts: Vec<u16> = log(&fake)
        .into_iter()
        .filter(|(m, p, _)| m == "POST" && p.ends_with("/reviews"))
        .map(|(_, _, s)| s)
        .collect();
    assert_eq!(posts, [401, 200]);
    assert_eq!(fake.count("POST", MINTS), 2);
    assert_eq!(app.tokens_minted(), 2);
    // The job goes on with the new token.
    client.reviews(&repo(), PrNumber(1)).await.unwrap();
    assert_eq!(fake.count("POST", MINTS), 2);
}

#[tokio::test]
async fn an_unknown_installation_is_a_clear_error() {
    let fake = world(KeyForm::Pkcs1);
    let app = app(&fake, KeyForm::Pkcs1, Duration::from_secs(300));
    let client = app.installation_client(InstallationId(7), limits());
    let err = client.pull_request(&repo(), PrNumber(1)).await.unwrap_err();
    assert!(matches!(err, GithubError::NotFound { .. }), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("minting a token for installation 7 of the App was not found (404)"),
        "{err}"
    );
}

#[tokio::test]
async fn keys_and_tokens_never_show_in_debug() {
    let fake = world(KeyForm::Pkcs1);
    let app = app(&fake, KeyForm::Pkcs1, Duration::from_secs(300));
    let client = installation_client(&app);
    client.pull_request(&repo(), PrNumber(1)).await.unwrap();
    let token = fake.minted()[0].token.clone();
    let key_lines: Vec<&str> = test_key(KeyForm::Pkcs1)
        .private_pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    for shown in [
        format!("{app:?}"),
        format!("{client:?}"),
        format!("{:?}", app.credentials()),
    ] {
        assert!(!shown.contains(&token), "{shown}");
        assert!(key_lines.iter().all(|l| !shown.contains(l)), "{shown}");
    }
}
