//! The fault catalogue of `docs/security.md`, end to end through the real binary and the real
//! client: GitHub answering with pages, cut bodies, hangs, past rate-limit resets and permission
//! errors (the fake's faults). Every case ends in a posted round or a clear error, within a
//! bounded number of requests and a bounded time.

use std::time::{Duration, Instant};

use serde_json::json;

use super::pr::{REPO, Run, TOKEN, json, stderr, world};
use crate::fake_github::{FakeGithub, Fault, Route};

const PULL: &str = "/repos/octo/app/pulls/7";
const FILES: &str = "/repos/octo/app/pulls/7/files";
const REVIEWS: &str = "/repos/octo/app/pulls/7/reviews";

/// Requests for exactly this method and path.
fn sent(fake: &FakeGithub, method: &str, path: &str) -> usize {
    fake.requests()
        .iter()
        .filter(|r| r.method == method && r.path == path)
        .count()
}

/// Short GitHub timings: a request gets 1 s.
fn run() -> Run {
    Run::new("request_timeout = \"1s\"\n")
}

fn assert_clear_failure(o: &std::process::Output, needles: &[&str]) {
    assert_exit(o, 3, needles);
}

fn assert_exit(o: &std::process::Output, code: i32, needles: &[&str]) {
    let err = stderr(o);
    assert_eq!(o.status.code(), Some(code), "{err}");
    for n in needles {
        assert!(err.contains(n), "{n:?} not in:\n{err}");
    }
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_page_or_a_cut_body_on_a_read_is_retried_and_the_round_posts_once() {
    let fake = world();
    fake.fail_next(
        Route::exact("GET", PULL),
        Fault::html(502, "Unicorn! &middot; GitHub"),
        1,
    )
    .fail_next(Route::exact("GET", PULL), Fault::Truncated, 1)
    .fail_next(Route::exact("GET", FILES), Fault::Truncated, 1);
    let o = run().review(&fake, Some(TOKEN), &["--post", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json(&o)["posted"], true);
    assert_eq!(fake.reviews(REPO, 7).len(), 1);
    assert_eq!(sent(&fake, "GET", PULL), 3);
    assert_eq!(sent(&fake, "GET", FILES), 2);
}

#[test]
fn a_read_that_keeps_failing_with_a_page_or_a_cut_body_fails_clearly_after_three_tries() {
    let cases = [
        (
            Fault::html(502, "Unicorn! &middot; GitHub"),
            "reading pull request octo/app#7 failed with HTTP 502: an HTML page (\u{201c}Unicorn! &middot; GitHub\u{201d}) instead of JSON",
        ),
        (Fault::Truncated, "(after 3 attempts)"),
    ];
    for (fault, says) in cases {
        let fake = world();
        fake.fail_next(Route::exact("GET", PULL), fault, 10);
        let o = run().review(&fake, Some(TOKEN), &["--post"]);
        assert_clear_failure(&o, &["reading pull request octo/app#7", says]);
        assert_eq!(sent(&fake, "GET", PULL), 3, "{}", stderr(&o));
        assert!(fake.reviews(REPO, 7).is_empty());
    }
}

#[test]
fn a_200_that_is_a_page_or_cut_json_is_a_clear_error_after_one_request() {
    let cases = [
        (
            Fault::html(200, "Sign in to GitHub"),
            "reading pull request octo/app#7: unexpected response from GitHub: an HTML page (\u{201c}Sign in to GitHub\u{201d}) instead of JSON".to_owned(),
        ),
        (
            Fault::Raw {
                status: 200,
                content_type: "application/json; charset=utf-8".to_owned(),
                body: r#"{"url":"https://api.github.com/repos/octo/app/pulls/7","number":7,"state":"open","title":"Upd"#.to_owned(),
            },
            "reading pull request octo/app#7: unexpected response from GitHub: EOF while parsing"
                .to_owned(),
        ),
    ];
    for (fault, says) in cases {
        let fake = world();
        fake.fail_next(Route::exact("GET", PULL), fault, 10);
        let o = run().review(&fake, Some(TOKEN), &["--post"]);
        assert_clear_failure(&o, &[&says]);
        assert_eq!(sent(&fake, "GET", PULL), 1, "{}", stderr(&o));
    }
}

#[test]
fn a_hung_read_times_out_and_is_retried() {
    let fake = world();
    fake.fail_next(Route::exact("GET", PULL), Fault::Hang, 1);
    let started = Instant::now();
    let o = run().review(&fake, Some(TOKEN), &["--post", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(fake.reviews(REPO, 7).len(), 1);
    assert_eq!(sent(&fake, "GET", PULL), 2);
}

#[test]
fn a_read_that_always_hangs_fails_clearly_within_its_timeouts() {
    let fake = world();
    fake.fail_next(Route::exact("GET", PULL), Fault::Hang, 10);
    let started = Instant::now();
    let o = run().review(&fake, Some(TOKEN), &["--post"]);
    // Three tries of 1 s and backoffs of 1 s and 2 s.
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "{:?}",
        started.elapsed()
    );
    assert_clear_failure(
        &o,
        &[
            "reading pull request octo/app#7",
            "no answer within 1s (github.request_timeout) (after 3 attempts)",
        ],
    );
    assert_eq!(sent(&fake, "GET", PULL), 3);
}

#[test]
fn a_hung_or_cut_review_post_is_looked_for_then_posted_exactly_once() {
    // A hang: GitHub never had it, so it is sent again. A cut answer: GitHub had it, so the
    // marker is found and nothing is sent again.
    for (fault, posts) in [(Fault::Hang, 2), (Fault::Truncated, 1)] {
        let fake = world();
        fake.fail_next(Route::exact("POST", REVIEWS), fault, 1);
        let started = Instant::now();
        let o = run().review(&fake, Some(TOKEN), &["--post", "--format", "json"]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(json(&o)["posted"], true);
        assert_eq!(fake.reviews(REPO, 7).len(), 1, "exactly one review");
        assert_eq!(sent(&fake, "POST", REVIEWS), posts);
    }
}

#[test]
fn a_primary_limit_whose_reset_is_past_is_retried_at_once() {
    let fake = world();
    fake.fail_next(
        Route::exact("GET", PULL),
        Fault::primary_reset_in(403, -120),
        1,
    )
    .fail_next(
        Route::exact("POST", REVIEWS),
        Fault::primary_reset_in(429, -5),
        1,
    );
    let started = Instant::now();
    let o = run().review(&fake, Some(TOKEN), &["--post", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Two short waits (`backoff_base`, 1 s), not a wait for a reset long gone nor an overflow.
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        stderr(&o)
            .matches("notice: GitHub rate limit; waiting 1s")
            .count(),
        2,
        "{}",
        stderr(&o)
    );
    assert_eq!(fake.reviews(REPO, 7).len(), 1);
    assert_eq!(sent(&fake, "GET", PULL), 2);
    assert_eq!(sent(&fake, "POST", REVIEWS), 2);
}

#[test]
fn permission_errors_on_reads_and_on_the_review_post_are_one_request_each() {
    let refused = |status: u16, message: &str| {
        Fault::Status(
            status,
            Some(
                json!({"message": message, "documentation_url": "https://docs.github.com/rest", "status": status.to_string()}),
            ),
        )
    };
    // A 403 on the POST is what a fork PR's read-only token gets: the review is printed instead
    // and the run succeeds, saying so.
    let cases: [(&str, &str, Fault, i32, &[&str]); 6] = [
        (
            "GET",
            PULL,
            refused(401, "Bad credentials"),
            3,
            &["(401)", "GITHUB_TOKEN"],
        ),
        (
            "GET",
            FILES,
            refused(403, "Resource not accessible by integration"),
            3,
            &["refused listing", "(403)", "`pull-requests: read`"],
        ),
        (
            "GET",
            PULL,
            refused(404, "Not Found"),
            3,
            &["(404)", "`pull-requests: read`"],
        ),
        (
            "POST",
            REVIEWS,
            refused(401, "Bad credentials"),
            3,
            &["(401)", "GITHUB_TOKEN"],
        ),
        (
            "POST",
            REVIEWS,
            refused(403, "Resource not accessible by integration"),
            0,
            &[
                "not posted: GitHub refused posting a review on octo/app#7 (403)",
                "`pull-requests: write`",
            ],
        ),
        (
            "POST",
            REVIEWS,
            refused(404, "Not Found"),
            3,
            &["(404)", "`pull-requests: write`"],
        ),
    ];
    for (method, path, fault, code, says) in cases {
        let fake = world();
        fake.fail_next(Route::exact(method, path), fault, 10);
        let o = run().review(&fake, Some(TOKEN), &["--post"]);
        assert_exit(&o, code, says);
        assert_eq!(
            sent(&fake, method, path),
            1,
            "{method} {path}: {}",
            stderr(&o)
        );
        assert!(fake.reviews(REPO, 7).is_empty());
    }
}
