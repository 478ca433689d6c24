//! Tests of the fake itself, over real HTTP with `reqwest`.

use std::time::{Duration, Instant};

use reqwest::header::{ACCEPT, AUTHORIZATION, LINK};
use serde_json::{Value, json};

use super::{FakeGithub, Fault, FileSpec, PrSpec, Route, TokenKind, openapi, sha};

const REPO: &str = "octo/hello";
const PAT: &str = "ghp_alice";
const APP: &str = "ghs_app";
const READ_ONLY: &str = "ghs_fork";

/// Two hunks: old 1–3 / new 1–4, and old 10–11 / new 11–13.
const PATCH: &str = "@@ -1,3 +1,4 @@ fn top()\n fn a() {}\n-fn b() {}\n+fn b() { 1 }\n+fn c() {}\n fn d() {}\n@@ -10,2 +11,3 @@\n x\n+y\n z\n";

/// A fake with the three kinds of token and PR #1 touching `src/lib.rs` and a binary file.
fn world() -> FakeGithub {
    let fake = FakeGithub::start();
    fake.add_token(PAT, TokenKind::user("alice"))
        .add_token(APP, TokenKind::app())
        .add_token(READ_ONLY, TokenKind::ReadOnly)
        .add_pr(
            REPO,
            PrSpec {
                labels: vec!["bug".to_owned()],
                files: vec![
                    FileSpec::modified("src/lib.rs", PATCH),
                    FileSpec::binary("logo.png"),
                ],
                ..PrSpec::default()
            },
        );
    fake
}

fn client() -> reqwest::Client {
    reqwest::Client::new()
}

async fn get(fake: &FakeGithub, token: Option<&str>, path: &str) -> reqwest::Response {
    let mut req = client().get(format!("{}{path}", fake.url()));
    if let Some(t) = token {
        req = req.header(AUTHORIZATION, format!("Bearer {t}"));
    }
    req.send().await.expect("request")
}

async fn post_review(fake: &FakeGithub, token: &str, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}/repos/{REPO}/pulls/1/reviews", fake.url()))
        .header(AUTHORIZATION, format!("token {token}"))
        .json(body)
        .send()
        .await
        .expect("request")
}

fn next_link(resp: &reqwest::Response) -> Option<String> {
    let link = resp.headers().get(LINK)?.to_str().ok()?;
    link.split(", ").find_map(|part| {
        let (url, rel) = part.split_once("; ")?;
        (rel == "rel=\"next\"").then(|| url.trim_matches(['<', '>']).to_owned())
    })
}

#[tokio::test]
async fn requests_without_a_known_token_get_401() {
    let fake = world();
    for token in [None, Some("ghp_unknown")] {
        let resp = get(&fake, token, "/repos/octo/hello/pulls/1").await;
        assert_eq!(resp.status(), 401);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["message"], "Bad credentials");
    }
    assert!(fake.unexpected().is_empty());
}

#[tokio::test]
async fn get_user_answers_a_pat_and_refuses_installation_tokens() {
    let fake = world();
    let resp = get(&fake, Some(PAT), "/user").await;
    assert_eq!(resp.status(), 200);
    let user: Value = resp.json().await.unwrap();
    assert_eq!(
        (user["login"].as_str(), user["type"].as_str()),
        (Some("alice"), Some("User"))
    );

    for token in [APP, READ_ONLY] {
        let resp = get(&fake, Some(token), "/user").await;
        assert_eq!(resp.status(), 403);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["message"], "Resource not accessible by integration");
    }
}

#[tokio::test]
async fn files_paginate_with_absolute_link_headers() {
    let fake = world();
    let files = (0..350)
        .map(|i| FileSpec::modified(&format!("f{i:03}.rs"), "@@ -1 +1 @@\n-a\n+b\n"))
        .collect();
    fake.add_pr(
        REPO,
        PrSpec {
            number: 2,
            files,
            ..PrSpec::default()
        },
    );

    let mut url = format!("{}/repos/{REPO}/pulls/2/files?per_page=100", fake.url());
    let mut sizes = Vec::new();
    let mut names = Vec::new();
    loop {
        let resp = client().get(&url).bearer_auth(PAT).send().await.unwrap();
        assert_eq!(resp.status(), 200);
        if sizes.is_empty() {
            let link = resp.headers()[LINK].to_str().unwrap().to_owned();
            assert!(link.contains("page=4>; rel=\"last\""), "{link}");
            assert!(
                link.starts_with(&format!("<{}/repos/", fake.url())),
                "{link}"
            );
        }
        let next = next_link(&resp);
        let page: Vec<Value> = resp.json().await.unwrap();
        sizes.push(page.len());
        names.extend(
            page.iter()
                .map(|f| f["filename"].as_str().unwrap().to_owned()),
        );
        match next {
            Some(n) => url = n,
            None => break,
        }
    }
    assert_eq!(sizes, [100, 100, 100, 50]);
    assert_eq!(names.first().map(String::as_str), Some("f000.rs"));
    assert_eq!(names.last().map(String::as_str), Some("f349.rs"));
    assert_eq!(fake.count("GET", "/repos/octo/hello/pulls/2/files"), 4);

    // per_page is capped at 100.
    let resp = get(
        &fake,
        Some(PAT),
        "/repos/octo/hello/pulls/2/files?per_page=500&page=4",
    )
    .await;
    let link = resp.headers()[LINK].to_str().unwrap().to_owned();
    assert!(link.contains("page=3>; rel=\"prev\""), "{link}");
    assert!(!link.contains("rel=\"next\""), "{link}");
    let page: Vec<Value> = resp.json().await.unwrap();
    assert_eq!(page.len(), 50);

    // Default page size is 30; a binary file has no `patch` key at all.
    let resp = get(&fake, Some(PAT), "/repos/octo/hello/pulls/1/files").await;
    assert!(resp.headers().get(LINK).is_none());
    let page: Vec<Value> = resp.json().await.unwrap();
    assert_eq!(page[0]["additions"], 3);
    assert!(page[1].get("patch").is_none());
}

#[tokio::test]
async fn diff_media_type_builds_a_git_diff_and_406s_over_300_files() {
    let fake = world();
    let resp = client()
        .get(format!("{}/repos/{REPO}/pulls/1", fake.url()))
        .bearer_auth(PAT)
        .header(ACCEPT, "application/vnd.github.v3.diff")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let diff = resp.text().await.unwrap();
    assert!(
        diff.starts_with("diff --git a/src/lib.rs b/src/lib.rs\n"),
        "{diff}"
    );
    assert!(diff.contains("--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,4 @@"));
    assert!(diff.contains("Binary files a/logo.png and b/logo.png differ"));

    let files = (0..301)
        .map(|i| FileSpec::modified(&format!("f{i}.rs"), "@@ -1 +1 @@\n-a\n+b\n"))
        .collect();
    fake.add_pr(
        REPO,
        PrSpec {
            number: 3,
            files,
            ..PrSpec::default()
        },
    );
    let resp = client()
        .get(format!("{}/repos/{REPO}/pulls/3", fake.url()))
        .bearer_auth(PAT)
        .header(ACCEPT, "application/vnd.github.diff")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 406);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["status"], "406");
    assert_eq!(body["errors"][0]["code"], "too_large");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("maximum number of files (300)")
    );

    // One file, 20,001 diff lines: the line limit.
    let huge = format!("@@ -0,0 +1,20000 @@\n{}", "+x\n".repeat(20_000));
    fake.add_pr(
        REPO,
        PrSpec {
            number: 4,
            files: vec![FileSpec::added("big.txt", &huge)],
            ..PrSpec::default()
        },
    );
    let resp = client()
        .get(format!("{}/repos/{REPO}/pulls/4", fake.url()))
        .bearer_auth(PAT)
        .header(ACCEPT, "application/vnd.github.diff")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 406);
    let body: Value = resp.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("maximum number of lines (20000)")
    );
}

#[tokio::test]
async fn a_comment_off_the_hunks_rejects_the_whole_review() {
    let fake = world();
    let head = sha("head");
    let cases = [
        (
            json!({"path": "src/lib.rs", "line": 7, "side": "RIGHT", "body": "x"}),
            "Line could not be resolved",
        ),
        (
            json!({"path": "src/lib.rs", "line": 4, "side": "LEFT", "body": "x"}),
            "Line could not be resolved",
        ),
        (
            json!({"path": "logo.png", "line": 1, "body": "x"}),
            "Line could not be resolved",
        ),
        (
            json!({"path": "nope.rs", "line": 1, "body": "x"}),
            "path is invalid",
        ),
        (
            json!({"path": "src/lib.rs", "start_line": 2, "start_side": "RIGHT", "line": 12, "side": "RIGHT", "body": "x"}),
            "same hunk",
        ),
        (
            json!({"path": "src/lib.rs", "start_line": 3, "start_side": "RIGHT", "line": 3, "body": "x"}),
            "precede",
        ),
    ];
    for (bad, expected) in cases {
        let good = json!({"path": "src/lib.rs", "line": 3, "side": "RIGHT", "body": "fine"});
        let review = json!({"commit_id": head, "event": "COMMENT", "body": "Round 1", "comments": [good, bad]});
        let resp = post_review(&fake, APP, &review).await;
        assert_eq!(resp.status(), 422, "{bad}");
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["status"], "422");
        let message = body["errors"][0].as_str().unwrap();
        assert!(message.contains(expected), "{bad}: {message}");
    }
    let too_long = json!({"event": "COMMENT", "body": "x".repeat(65_537)});
    let resp = post_review(&fake, APP, &too_long).await;
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["errors"][0],
        "Body is too long (maximum is 65536 characters)"
    );
    let unknown_commit = json!({"event": "COMMENT", "body": "b", "commit_id": sha("elsewhere")});
    assert_eq!(post_review(&fake, APP, &unknown_commit).await.status(), 422);

    assert!(fake.reviews(REPO, 1).is_empty());
    assert!(fake.review_comments(REPO, 1).is_empty());
}

#[tokio::test]
async fn a_valid_review_stores_line_left_and_range_comments() {
    let fake = world();
    let head = sha("head");
    let review = json!({
        "commit_id": head,
        "event": "COMMENT",
        "body": "Round 1 <!-- reviewbot round=1 -->",
        "comments": [
            {"path": "src/lib.rs", "line": 3, "side": "RIGHT", "body": "right"},
            {"path": "src/lib.rs", "line": 2, "side": "LEFT", "body": "left"},
            {"path": "src/lib.rs", "start_line": 11, "start_side": "RIGHT", "line": 13, "side": "RIGHT", "body": "range"},
        ],
    });
    let resp = post_review(&fake, APP, &review).await;
    assert_eq!(resp.status(), 200);
    let posted: Value = resp.json().await.unwrap();
    assert_eq!(posted["state"], "COMMENTED");
    assert_eq!(posted["user"]["login"], "reviewbot[bot]");
    assert_eq!(posted["user"]["type"], "Bot");
    assert_eq!(posted["commit_id"], head.as_str());

    let comments = fake.review_comments(REPO, 1);
    assert_eq!(comments.len(), 3);
    for c in &comments {
        assert_eq!(c["pull_request_review_id"], posted["id"]);
        assert_eq!(c["commit_id"], head.as_str());
        assert_eq!(c["user"]["login"], "reviewbot[bot]");
    }
    assert_eq!(
        (&comments[0]["line"], &comments[0]["side"]),
        (&json!(3), &json!("RIGHT"))
    );
    assert_eq!(comments[0]["position"], 4);
    assert_eq!(
        comments[0]["diff_hunk"],
        "@@ -1,3 +1,4 @@ fn top()\n fn a() {}\n-fn b() {}\n+fn b() { 1 }\n+fn c() {}"
    );
    assert_eq!(
        (&comments[1]["line"], &comments[1]["side"]),
        (&json!(2), &json!("LEFT"))
    );
    assert_eq!(comments[1]["position"], 2);
    assert_eq!(
        (&comments[2]["start_line"], &comments[2]["line"]),
        (&json!(11), &json!(13))
    );
    assert!(comments[0].get("in_reply_to_id").is_none());

    // The list endpoints answer what was stored, and a human reply joins the thread.
    let reply = fake.add_reply(
        REPO,
        1,
        comments[0]["id"].as_u64().unwrap(),
        "bob",
        "I disagree",
    );
    let listed: Vec<Value> = get(
        &fake,
        Some(PAT),
        "/repos/octo/hello/pulls/1/comments?per_page=100",
    )
    .await
    .json()
    .await
    .unwrap();
    assert_eq!(listed.len(), 4);
    assert_eq!(listed[3]["id"], reply);
    assert_eq!(listed[3]["in_reply_to_id"], comments[0]["id"]);
    assert_eq!(listed[3]["user"]["type"], "User");
    let reviews: Vec<Value> = get(&fake, Some(PAT), "/repos/octo/hello/pulls/1/reviews")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(reviews.len(), 2);
    assert_eq!(reviews[0]["id"], posted["id"]);
}

#[tokio::test]
async fn a_review_may_target_an_older_head_after_a_push() {
    let fake = world();
    fake.set_head(
        REPO,
        1,
        &sha("head2"),
        vec![FileSpec::added("new.rs", "@@ -0,0 +1,2 @@\n+a\n+b\n")],
    );
    let old = json!({"commit_id": sha("head"), "event": "COMMENT", "body": "b",
        "comments": [{"path": "src/lib.rs", "line": 3, "body": "x"}]});
    assert_eq!(post_review(&fake, APP, &old).await.status(), 200);
    let stale = json!({"commit_id": sha("head2"), "event": "COMMENT", "body": "b",
        "comments": [{"path": "src/lib.rs", "line": 3, "body": "x"}]});
    assert_eq!(post_review(&fake, APP, &stale).await.status(), 422);
    let pr: Value = get(&fake, Some(PAT), "/repos/octo/hello/pulls/1")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(pr["head"]["sha"], sha("head2").as_str());
    assert_eq!(pr["commits"], 2);
}

#[tokio::test]
async fn approve_is_refused_to_installation_tokens_and_authors() {
    let fake = world();
    let resp = post_review(&fake, APP, &json!({"event": "APPROVE"})).await;
    assert_eq!(resp.status(), 422);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["errors"][0],
        "GitHub Actions is not permitted to approve pull requests."
    );
    assert_eq!(
        post_review(&fake, PAT, &json!({"event": "APPROVE"}))
            .await
            .status(),
        200
    );
}

#[tokio::test]
async fn a_read_only_token_cannot_post() {
    let fake = world();
    let resp = post_review(&fake, READ_ONLY, &json!({"event": "COMMENT", "body": "hi"})).await;
    assert_eq!(resp.status(), 403);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["message"], "Resource not accessible by integration");
    assert!(fake.reviews(REPO, 1).is_empty());
    assert_eq!(
        get(&fake, Some(READ_ONLY), "/repos/octo/hello/pulls/1")
            .await
            .status(),
        200
    );
}

#[tokio::test]
async fn queued_faults_apply_in_order_then_clear() {
    let fake = world();
    let path = "/repos/octo/hello/pulls/1";
    fake.fail_next(("GET", path), Fault::status(502), 2);
    let statuses = [
        get(&fake, Some(PAT), path).await.status(),
        get(&fake, Some(PAT), path).await.status(),
        get(&fake, Some(PAT), path).await.status(),
    ];
    assert_eq!(statuses.map(|s| s.as_u16()), [502, 502, 200]);
    let log = fake.requests();
    assert_eq!(
        log.iter().map(|r| r.status).collect::<Vec<_>>(),
        [502, 502, 200]
    );

    // Rate limits: secondary with and without retry-after, primary with a reset.
    fake.fail_next(
        Route::prefix("*", "/repos/"),
        Fault::SecondaryRateLimit {
            retry_after: Some(7),
        },
        1,
    )
    .fail_next(
        Route::prefix("*", "/repos/"),
        Fault::SecondaryRateLimit { retry_after: None },
        1,
    )
    .fail_next(
        Route::prefix("GET", "/repos/"),
        Fault::primary_reset_in(429, 30),
        1,
    );
    let first = get(&fake, Some(PAT), path).await;
    assert_eq!(first.status(), 403);
    assert_eq!(first.headers()["retry-after"], "7");
    let body: Value = first.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("secondary rate limit")
    );
    let second = get(&fake, Some(PAT), path).await;
    assert_eq!(second.status(), 403);
    assert!(second.headers().get("retry-after").is_none());
    let third = get(&fake, Some(PAT), path).await;
    assert_eq!(third.status(), 429);
    assert_eq!(third.headers()["x-ratelimit-remaining"], "0");
    let reset: u64 = third.headers()["x-ratelimit-reset"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(reset > super::now_epoch());

    // Remaining decreases on ordinary responses.
    let a = get(&fake, Some(PAT), path).await;
    let b = get(&fake, Some(PAT), path).await;
    let remaining = |r: &reqwest::Response| -> u64 {
        r.headers()["x-ratelimit-remaining"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(remaining(&b) < remaining(&a));
}

#[tokio::test]
async fn apply_then_fail_stores_the_review_and_answers_502() {
    let fake = world();
    fake.fail_next(
        ("POST", "/repos/octo/hello/pulls/1/reviews"),
        Fault::ApplyThenFail(502),
        1,
    );
    let review = json!({"event": "COMMENT", "body": "<!-- reviewbot round=1 -->"});
    assert_eq!(post_review(&fake, APP, &review).await.status(), 502);
    assert_eq!(fake.reviews(REPO, 1).len(), 1);
    assert_eq!(fake.count("POST", "/repos/octo/hello/pulls/1/reviews"), 1);
}

#[tokio::test]
async fn pages_cut_bodies_and_hangs_are_served_as_the_network_would() {
    let fake = world();
    let path = "/repos/octo/hello/pulls/1";
    fake.fail_next(
        ("GET", path),
        Fault::html(502, "Unicorn! &middot; GitHub"),
        1,
    )
    .fail_next(("GET", path), Fault::Truncated, 1)
    .fail_next(("GET", path), Fault::Hang, 1)
    .fail_next(
        ("POST", "/repos/octo/hello/pulls/1/reviews"),
        Fault::Truncated,
        1,
    );
    let page = get(&fake, Some(PAT), path).await;
    assert_eq!(page.status(), 502);
    assert!(
        page.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("<title>Unicorn! &middot; GitHub</title>")
    );

    let cut = get(&fake, Some(PAT), path).await;
    assert_eq!(cut.status(), 200);
    let declared = cut.content_length().unwrap();
    assert!(declared > 100);
    assert!(cut.bytes().await.is_err(), "the body must end early");

    let hung = tokio::time::timeout(Duration::from_millis(500), get(&fake, Some(PAT), path)).await;
    assert!(hung.is_err(), "a hung request answered");
    assert_eq!(fake.requests().last().unwrap().status, 0);
    // Then the route answers again.
    assert_eq!(get(&fake, Some(PAT), path).await.status(), 200);

    // A cut write was applied all the same.
    let review = json!({"event": "COMMENT", "body": "<!-- reviewbot round=1 -->"});
    let posted = post_review(&fake, APP, &review).await;
    assert_eq!(posted.status(), 200);
    assert!(posted.bytes().await.is_err());
    assert_eq!(fake.reviews(REPO, 1).len(), 1);
}

#[tokio::test]
async fn a_delay_fault_holds_the_reply() {
    let fake = world();
    fake.fail_next(
        ("GET", "/user"),
        Fault::Delay(Duration::from_millis(300)),
        1,
    );
    let started = Instant::now();
    assert_eq!(get(&fake, Some(PAT), "/user").await.status(), 200);
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[tokio::test]
async fn unknown_routes_are_404_and_recorded() {
    let fake = world();
    fake.allow_unserved_routes();
    let resp = get(&fake, Some(PAT), "/repos/octo/hello/pulls/1/commits").await;
    assert_eq!(resp.status(), 404);
    assert_eq!(
        get(&fake, Some(PAT), "/repos/octo/hello/pulls/99")
            .await
            .status(),
        404
    );
    let unexpected = fake.unexpected();
    assert_eq!(unexpected.len(), 1, "a missing PR is not an unknown route");
    assert_eq!(unexpected[0].path, "/repos/octo/hello/pulls/1/commits");
}

#[tokio::test]
async fn contents_compare_and_labels() {
    let fake = world();
    fake.add_file_content(REPO, "main", ".github/reviewbot.toml", "hello\n")
        .set_compare(
            REPO,
            &sha("head"),
            &sha("head2"),
            "diverged",
            vec![FileSpec::modified("a.rs", PATCH)],
        );

    let resp = get(
        &fake,
        Some(PAT),
        "/repos/octo/hello/contents/.github/reviewbot.toml?ref=main",
    )
    .await;
    assert_eq!(resp.status(), 200);
    let file: Value = resp.json().await.unwrap();
    assert_eq!(
        (file["encoding"].as_str(), file["content"].as_str()),
        (Some("base64"), Some("aGVsbG8K\n"))
    );
    let absent = get(
        &fake,
        Some(PAT),
        "/repos/octo/hello/contents/.github/reviewbot.toml?ref=other",
    )
    .await;
    assert_eq!(absent.status(), 404);

    let path = format!(
        "/repos/octo/hello/compare/{}...{}",
        sha("head"),
        sha("head2")
    );
    let cmp: Value = get(&fake, Some(PAT), &path).await.json().await.unwrap();
    assert_eq!(
        (cmp["status"].as_str(), cmp["ahead_by"].as_u64()),
        (Some("diverged"), Some(1))
    );
    assert_eq!(cmp["files"][0]["filename"], "a.rs");

    let labels: Vec<Value> = get(&fake, Some(PAT), "/repos/octo/hello/issues/1/labels")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(labels[0]["name"], "bug");
    let resp = client()
        .delete(format!(
            "{}/repos/octo/hello/issues/1/labels/bug",
            fake.url()
        ))
        .bearer_auth(APP)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert!(fake.labels(REPO, 1).is_empty());
    assert!(fake.unexpected().is_empty());
}

#[test]
fn hunk_headers_default_counts_to_one() {
    use super::hunks::{Side, parse, parse_header};
    assert_eq!(parse_header("@@ -3 +4 @@"), Some((3, 1, 4, 1)));
    assert_eq!(parse_header("@@ -0,0 +1,5 @@ fn x"), Some((0, 0, 1, 5)));
    assert_eq!(parse_header(" @@ -1 +1 @@"), None);
    let h = parse("@@ -0,0 +1,2 @@\n+a\n+b\n");
    assert!(h[0].contains(Side::Right, 2));
    assert!(!h[0].contains(Side::Left, 0));
    assert_eq!(super::world::base64(b"hello\n"), "aGVsbG8K");
    assert_eq!(super::json::node_id("User", 1), "MDQ6VXNlcjE=");
    assert_eq!(
        super::world::timestamp(std::time::UNIX_EPOCH + Duration::from_secs(1_557_933_633)),
        "2019-05-15T15:20:33Z"
    );
}

/// Every JSON shape the fake answers deserializes with octocrab's models.
#[tokio::test]
async fn answers_deserialize_with_octocrab_models() {
    use octocrab::models::pulls::{Comment, PullRequest, Review, ReviewComment};
    use octocrab::models::repos::{Content, DiffEntry};
    use octocrab::models::{Author, Label, commits::CommitComparison};

    async fn decode<T: serde::de::DeserializeOwned>(fake: &FakeGithub, path: &str) -> T {
        let value: Value = get(fake, Some(PAT), path).await.json().await.unwrap();
        serde_json::from_value(value.clone()).unwrap_or_else(|e| panic!("{path}: {e}\n{value:#}"))
    }

    let fake = world();
    fake.add_file_content(REPO, "main", "README.md", "hi")
        .set_compare(
            REPO,
            "a",
            "b",
            "diverged",
            vec![FileSpec::modified("x.rs", PATCH)],
        )
        .set_labels(REPO, 1, &["bug", "reviewbot:review"]);
    let review = json!({"event": "COMMENT", "body": "Round 1",
        "comments": [{"path": "src/lib.rs", "start_line": 1, "start_side": "RIGHT", "line": 3, "side": "RIGHT", "body": "x"}]});
    assert_eq!(post_review(&fake, APP, &review).await.status(), 200);
    let first = fake.review_comments(REPO, 1)[0]["id"].as_u64().unwrap();
    fake.add_reply(REPO, 1, first, "bob", "no");
    fake.add_review_by(
        REPO,
        1,
        "mallory",
        "<!-- reviewbot round=9 -->",
        &sha("head"),
    );

    let pr: PullRequest = decode(&fake, "/repos/octo/hello/pulls/1").await;
    assert_eq!((pr.number, pr.head.sha.as_str()), (1, sha("head").as_str()));
    let reviews: Vec<Review> = decode(&fake, "/repos/octo/hello/pulls/1/reviews").await;
    assert_eq!(reviews.len(), 3);
    let comments: Vec<Comment> = decode(&fake, "/repos/octo/hello/pulls/1/comments").await;
    assert_eq!(comments[1].in_reply_to_id.map(|id| id.0), Some(first));
    let _: Vec<ReviewComment> = decode(&fake, "/repos/octo/hello/pulls/1/comments").await;
    let files: Vec<DiffEntry> = decode(&fake, "/repos/octo/hello/pulls/1/files").await;
    assert!(files[1].patch.is_none());
    let labels: Vec<Label> = decode(&fake, "/repos/octo/hello/issues/1/labels").await;
    assert_eq!(labels.len(), 2);
    let _: Author = decode(&fake, "/user").await;
    let _: Content = decode(&fake, "/repos/octo/hello/contents/README.md?ref=main").await;
    let _: CommitComparison = decode(&fake, "/repos/octo/hello/compare/a...b").await;
}

/// `POST` (no `id`) or `PATCH` a check run of `REPO` with `token`; the status and the body.
async fn write_check_run(
    fake: &FakeGithub,
    token: &str,
    id: Option<u64>,
    body: &Value,
) -> (u16, Value) {
    let url = format!("{}/repos/{REPO}/check-runs", fake.url());
    let req = match id {
        None => client().post(url),
        Some(id) => client().patch(format!("{url}/{id}")),
    };
    let resp = req.bearer_auth(token).json(body).send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

/// `n` valid annotations on `src/lib.rs`.
fn annotations(n: usize) -> Vec<Value> {
    (1..=n)
        .map(|line| {
            json!({"path": "src/lib.rs", "start_line": line, "end_line": line,
                   "annotation_level": "warning", "message": format!("line {line}")})
        })
        .collect()
}

fn output(annotations: Vec<Value>) -> Value {
    json!({"title": "t", "summary": "s", "annotations": annotations})
}

/// The checks API's 422: `Invalid request.`, a blank line, `detail`; the endpoint's docs; no
/// `errors` array.
#[track_caller]
fn assert_invalid(answer: &(u16, Value), endpoint: &str, detail: &str) {
    let (status, body) = answer;
    assert_eq!(*status, 422, "{body:#}");
    assert_eq!(body["message"], format!("Invalid request.\n\n{detail}"));
    assert_eq!(
        body["documentation_url"],
        format!("https://docs.github.com/rest/checks/runs#{endpoint}")
    );
    assert_eq!(body["status"], "422");
    assert!(body.get("errors").is_none(), "{body:#}");
}

#[tokio::test]
async fn check_runs_refuse_a_conclusion_beside_another_status_as_github_does() {
    let fake = world();
    // Sends what GitHub's description rejects (a bad conclusion, `completed` without one), to
    // see the fake refuse it as GitHub does.
    fake.allow_invalid_requests();
    let head = sha("head");
    let new = |status: &str, conclusion: Option<&str>| {
        let mut run = json!({"name": "reviewbot", "head_sha": head, "status": status});
        if let Some(c) = conclusion {
            run["conclusion"] = c.into();
        }
        run
    };
    let refused = write_check_run(&fake, APP, None, &new("in_progress", Some("success"))).await;
    assert_invalid(
        &refused,
        "create-a-check-run",
        "Conclusion cannot be set when status is in_progress",
    );
    assert!(fake.check_runs(REPO).is_empty());

    let (status, run) = write_check_run(&fake, APP, None, &new("in_progress", None)).await;
    assert_eq!((status, run["status"].as_str()), (201, Some("in_progress")));
    let id = run["id"].as_u64().unwrap();
    let queued = json!({"status": "queued", "conclusion": "neutral"});
    assert_invalid(
        &write_check_run(&fake, APP, Some(id), &queued).await,
        "update-a-check-run",
        "Conclusion cannot be set when status is queued",
    );
    assert_invalid(
        &write_check_run(&fake, APP, Some(id), &json!({"status": "completed"})).await,
        "update-a-check-run",
        "Conclusion must be set when status is completed",
    );
    assert_invalid(
        &write_check_run(&fake, APP, Some(id), &json!({"conclusion": "fine"})).await,
        "update-a-check-run",
        "For 'properties/conclusion', \"fine\" is not one of [\"action_required\", \"cancelled\", \
         \"failure\", \"neutral\", \"success\", \"skipped\", \"timed_out\"].",
    );
    let run = &fake.check_runs(REPO)[0];
    assert_eq!(
        (&run["status"], &run["conclusion"]),
        (&json!("in_progress"), &Value::Null)
    );

    // A conclusion alone completes the run (GitHub's docs: it sets `status` to `completed`).
    let (status, run) =
        write_check_run(&fake, APP, Some(id), &json!({"conclusion": "neutral"})).await;
    assert_eq!(status, 200, "{run:#}");
    assert_eq!(
        (&run["status"], &run["conclusion"]),
        (&json!("completed"), &json!("neutral"))
    );
    assert_invalid(
        &write_check_run(&fake, APP, Some(id), &json!({"status": "in_progress"})).await,
        "update-a-check-run",
        "A completed check run cannot go back to in_progress",
    );
    let answered: Vec<u16> = fake
        .check_run_writes(REPO)
        .iter()
        .map(|w| w.answered)
        .collect();
    assert_eq!(answered, [422, 201, 422, 422, 422, 200, 422]);
}

#[tokio::test]
async fn check_runs_take_at_most_50_annotations_a_request_and_add_them_up() {
    let fake = world();
    // Sends 51 annotations and incomplete ones, which GitHub's description rejects, to see the
    // fake refuse them as GitHub does.
    fake.allow_invalid_requests();
    let new = json!({"name": "reviewbot", "head_sha": sha("head"), "status": "in_progress",
                     "output": output(annotations(51))});
    assert_invalid(
        &write_check_run(&fake, APP, None, &new).await,
        "create-a-check-run",
        "No more than 50 items are allowed; 51 were supplied.",
    );
    assert!(fake.check_runs(REPO).is_empty());

    let new = json!({"name": "reviewbot", "head_sha": sha("head"), "status": "in_progress"});
    let (_, run) = write_check_run(&fake, APP, None, &new).await;
    let id = run["id"].as_u64().unwrap();
    let done = |n| json!({"status": "completed", "conclusion": "neutral", "output": output(annotations(n))});
    assert_invalid(
        &write_check_run(&fake, APP, Some(id), &done(51)).await,
        "update-a-check-run",
        "No more than 50 items are allowed; 51 were supplied.",
    );
    let run = &fake.check_runs(REPO)[0];
    assert_eq!(
        run["status"], "in_progress",
        "a refused update changes nothing"
    );
    assert_eq!(run["annotations"].as_array().unwrap().len(), 0);

    assert_eq!(
        write_check_run(&fake, APP, Some(id), &done(50)).await.0,
        200
    );
    let more = json!({"output": output(annotations(20))});
    let (status, run) = write_check_run(&fake, APP, Some(id), &more).await;
    assert_eq!(status, 200);
    assert_eq!(run["output"]["annotations_count"], 70, "annotations add up");
    assert_eq!(run["status"], "completed");

    // Annotations missing keys: each one's keys, alphabetically, one line per annotation.
    let bad = json!({"output": output(vec![
        json!({"start_line": 1, "end_line": 1, "message": "m"}),
        json!({"path": "a.rs", "start_line": 1, "end_line": 1, "annotation_level": "notice"}),
    ])});
    assert_invalid(
        &write_check_run(&fake, APP, Some(id), &bad).await,
        "update-a-check-run",
        "\"annotation_level\", \"path\" weren't supplied.\n\"message\" wasn't supplied.",
    );
    let writes = fake.check_run_writes(REPO);
    let shares: Vec<(&str, usize, u16)> = writes
        .iter()
        .map(|w| (w.method, w.annotations, w.answered))
        .collect();
    assert_eq!(
        shares,
        [
            ("POST", 51, 422),
            ("POST", 0, 201),
            ("PATCH", 51, 422),
            ("PATCH", 50, 200),
            ("PATCH", 20, 200),
            ("PATCH", 2, 422),
        ]
    );
}

#[tokio::test]
async fn only_an_app_token_with_checks_write_may_write_check_runs() {
    let fake = world();
    let new = json!({"name": "reviewbot", "head_sha": sha("head"), "status": "in_progress"});
    for (token, message) in [
        (PAT, "You must authenticate via a GitHub App."),
        (READ_ONLY, "Resource not accessible by integration"),
    ] {
        let (status, body) = write_check_run(&fake, token, None, &new).await;
        assert_eq!(status, 403);
        assert_eq!(body["message"], message);
        assert_eq!(
            body["documentation_url"],
            "https://docs.github.com/rest/checks/runs#create-a-check-run"
        );
    }
    let (status, run) = write_check_run(&fake, APP, None, &new).await;
    assert_eq!(status, 201);
    // The Action's token without `checks: write` in the workflow's `permissions`.
    fake.forbid_checks(true);
    let id = run["id"].as_u64().unwrap();
    let done = json!({"status": "completed", "conclusion": "success"});
    let (status, body) = write_check_run(&fake, APP, Some(id), &done).await;
    assert_eq!(status, 403);
    assert_eq!(body["message"], "Resource not accessible by integration");
    assert_eq!(fake.check_runs(REPO)[0]["status"], "in_progress");
    // Reading them needs no write permission.
    let list = get(
        &fake,
        Some(APP),
        &format!("/repos/{REPO}/commits/{}/check-runs", sha("head")),
    )
    .await;
    assert_eq!(list.status(), 200);
}

#[test]
fn under_ci_the_fake_is_held_to_githubs_rest_description() {
    if std::env::var_os("CI").is_none() {
        return;
    }
    assert!(
        std::env::var_os(openapi::ENV).is_some(),
        "CI must set {} (.ci/run installs the description)",
        openapi::ENV
    );
    let description = openapi::description().expect("the description loads");
    let op = description.operation("GET", "/repos/octo/hello/pulls/1");
    assert_eq!(
        op.map(openapi::Operation::name).as_deref(),
        Some("GET /repos/{owner}/{repo}/pulls/{pull_number}")
    );
}

#[test]
fn requests_are_matched_to_the_descriptions_operations_per_segment() {
    let Some(description) = openapi::description() else {
        return;
    };
    let name = |method: &str, path: &str| description.operation(method, path).map(|op| op.name());
    // A literal segment beats a parameter.
    assert_eq!(
        name("GET", "/repos/octo/hello/pulls/comments").as_deref(),
        Some("GET /repos/{owner}/{repo}/pulls/comments")
    );
    // Literal text between parameters.
    let compare = name(
        "GET",
        &format!("/repos/octo/hello/compare/{}...{}", sha("a"), sha("b")),
    );
    assert!(compare.is_some_and(|n| n.starts_with("GET /repos/{owner}/{repo}/compare/")));
    // A file path spans segments.
    assert_eq!(
        name("GET", "/repos/octo/hello/contents/.github/reviewbot.toml").as_deref(),
        Some("GET /repos/{owner}/{repo}/contents/{path}")
    );
    assert_eq!(name("GET", "/repos/octo/hello/pulls/1/frobnicate"), None);
    assert_eq!(name("PUT", "/user"), None);
    // GraphQL has its own schema: no REST operation.
    assert_eq!(name("POST", "/graphql"), None);
}

#[tokio::test]
async fn requests_github_would_refuse_and_routes_the_fake_lacks_fail_the_test() {
    if openapi::description().is_none() {
        return;
    }
    let fake = world();
    get(&fake, Some(PAT), "/repos/octo/hello/pulls/1?bogus=1").await;
    get(
        &fake,
        Some(PAT),
        "/repos/octo/hello/pulls/1/files?per_page=many",
    )
    .await;
    post_review(&fake, PAT, &json!({"event": "SHRUG", "body": "x"})).await;
    // Refused by the fake too (a conclusion beside `in_progress`), so the bad time is not echoed.
    let run = json!({"name": "x", "head_sha": sha("head"), "status": "in_progress",
                     "conclusion": "success", "started_at": "yesterday"});
    write_check_run(&fake, APP, None, &run).await;
    get(&fake, Some(PAT), "/repos/octo/hello/frobnicate").await;
    // A route GitHub has and the fake does not serve.
    get(&fake, Some(PAT), "/repos/octo/hello/pulls/1/commits").await;
    let problems = fake.problems();
    let has = |text: &str| problems.iter().any(|p| p.contains(text));
    assert!(
        has(
            "GET /repos/{owner}/{repo}/pulls/{pull_number} (/repos/octo/hello/pulls/1): query parameter `bogus` is not declared"
        ),
        "{problems:#?}"
    );
    assert!(has("query parameter `per_page=many`"), "{problems:#?}");
    assert!(
        has(
            "POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews (/repos/octo/hello/pulls/1/reviews): request body: at /event"
        ),
        "{problems:#?}"
    );
    assert!(
        has("GET /repos/octo/hello/frobnicate: no such operation in GitHub's REST description"),
        "{problems:#?}"
    );
    assert!(
        has("GET /repos/octo/hello/pulls/1/commits: a route the fake does not serve"),
        "{problems:#?}"
    );
    assert!(
        has("request body: at /started_at: \"yesterday\" is not a \"date-time\""),
        "{problems:#?}"
    );
    assert_eq!(problems.len(), 7, "{problems:#?}");
    // Said explicitly, they pass.
    fake.allow_invalid_requests().allow_unserved_routes();
    assert_eq!(fake.problems(), Vec::<String>::new());
}

#[test]
fn answers_are_held_to_the_declared_statuses_and_schemas() {
    let Some(description) = openapi::description() else {
        return;
    };
    let op = description.operation("GET", "/user").expect("GET /user");
    let problems = description.check_response(op, 200, Some(&json!({"login": "alice", "id": 1})));
    assert!(
        problems
            .iter()
            .any(|p| p.contains("fits none of its alternatives")
                && p.contains("\"avatar_url\" is a required property")),
        "{problems:#?}"
    );
    let problems = description.check_response(op, 201, None);
    assert!(
        problems[0].starts_with("answered 201, which is not among its answers"),
        "{problems:#?}"
    );
    let op = description
        .operation("POST", "/app/installations/1/access_tokens")
        .expect("create an installation token");
    let token = json!({"token": 7, "expires_at": "2026-01-01T00:00:00Z"});
    let problems = description.check_response(op, 201, Some(&token));
    assert_eq!(
        problems,
        ["answer 201: at /token: 7 is not of type \"string\""]
    );
}
