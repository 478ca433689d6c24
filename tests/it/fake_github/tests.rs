//! Tests of the fake itself, over real HTTP with `reqwest`.

use std::time::{Duration, Instant};

use reqwest::header::{ACCEPT, AUTHORIZATION, LINK};
use serde_json::{Value, json};

use super::{FakeGithub, Fault, FileSpec, PrSpec, Route, TokenKind, sha};

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
