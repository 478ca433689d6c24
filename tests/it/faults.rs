//! The fault catalogue of `docs/security.md`, end to end through the real binary and the real
//! client: GitHub answering with pages, cut bodies, hangs, past rate-limit resets and permission
//! errors (the fake's faults), and lenses that flood, hang, babble or answer 1 GB, in one round.
//! Every case ends in a posted round or a clear error, within a bounded number of requests, a
//! bounded time and bounded memory, with nothing left running.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::pr::{REPO, Run, TOKEN, bodies, json, lens, stderr, world};
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

// ---- lens faults, in one whole round ----

fn script(dir: &Path, name: &str, body: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\ncat >/dev/null\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    path
}

/// A command lens answering `answer`, whatever it is asked.
fn answering(dir: &Path, name: &str, answer: &Value) -> String {
    let file = dir.join(format!("{name}.json"));
    std::fs::write(&file, answer.to_string()).unwrap();
    let bin = script(
        dir,
        &format!("{name}.sh"),
        &format!("cat '{}'", file.display()),
    );
    lens(name, &bin)
}

fn finding(path: &str, line: u32, title: &str, body: &str) -> Value {
    json!({"path": path, "line": line, "side": "RIGHT", "severity": "advisory",
           "confidence": "medium", "title": title, "body": body})
}

/// Pid `pid`'s process group, when it is alive (a zombie counts as gone).
fn live_group_of(stat: &str) -> Option<i32> {
    let rest = stat.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    (state != "Z").then_some(())?;
    fields.nth(1)?.parse().ok()
}

/// Live processes in process group `group`.
fn members_of(group: i32) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            (live_group_of(&stat) == Some(group)).then_some(stat)
        })
        .collect()
}

fn pid_in(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .parse()
        .unwrap()
}

/// The largest peak resident set of any child this test process has waited for, in MiB.
/// Runs `cmd` to its end like `Command::output`, and the highest resident set (VmHWM, MiB) its
/// process reached, read every few milliseconds while it runs. Its own figure, not the test
/// process's children's (other tests run children at the same time).
fn output_and_peak_mib(mut cmd: std::process::Command) -> (std::process::Output, u64) {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut out = Vec::new();
            pipe.read_to_end(&mut out).unwrap();
            out
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let status_path = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_path)
            && let Some(kib) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak_kib = peak_kib.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let output = std::process::Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    };
    (output, peak_kib / 1024)
}

#[test]
fn a_round_with_every_kind_of_bad_lens_posts_once_and_says_what_each_did() {
    let fake = world();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 500 findings, each in its own place (off the diff, so none merge).
    let flood: Vec<Value> = (0..500)
        .map(|i| finding("src/main.rs", 100 + i, &format!("Flood item {i}"), "flood"))
        .collect();
    let huge_body = "All of this matters. ".repeat(5_000);
    let firehose_pid = d.join("firehose.pid");
    let grandchild_pid = d.join("grandchild.pid");
    let config = [
        answering(d, "flood", &json!({"findings": flood})),
        answering(
            d,
            "verbose",
            &json!({"findings": [finding("src/main.rs", 3, "Unchecked total", &huge_body)]}),
        ),
        lens("babble", &script(d, "babble.sh", "echo '{\"findings\": [{\"path\": '")),
        lens(
            "firehose",
            &script(
                d,
                "firehose.sh",
                &format!("echo $$ > '{}'\nyes '{{\"findings\": []}}' | head -c 1000000000", firehose_pid.display()),
            ),
        ),
        format!(
            "{}timeout = \"1s\"\nargs = [\"{}\"]\n",
            lens("stuck", &crate::cli::root().join("tests/fixtures/lenses/hang.sh")),
            grandchild_pid.display()
        ),
        "[review]\nlenses = [\"builtin\", \"flood\", \"verbose\", \"babble\", \"firehose\", \"stuck\"]\n".to_owned(),
    ]
    .concat();
    let run = Run::new(&config);
    let started = Instant::now();
    let (o, peak) = output_and_peak_mib(run.review_command(
        &fake,
        Some(TOKEN),
        7,
        &["--post", "--format", "json"],
    ));
    let took = started.elapsed();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stderr(&o).contains("panicked"), "{}", stderr(&o));
    // The 1 GB answer was cut at the output cap, so neither time nor memory followed it.
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert!(peak > 0 && peak < 512, "the run peaked at {peak} MiB");

    let doc = json(&o);
    assert_eq!(doc["posted"], true);
    let status = |name: &str| {
        let l = doc["lenses"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["lens"] == name)
            .unwrap_or_else(|| panic!("no {name} in {doc:#}"));
        (
            l["status"].as_str().unwrap().to_owned(),
            l["error"].as_str().unwrap_or_default().to_owned(),
            l["findings_dropped"].clone(),
        )
    };
    assert_eq!(status("flood").0, "ok");
    assert_eq!(status("flood").2, 450);
    assert_eq!(status("verbose").0, "ok");
    let (s, e, _) = status("babble");
    assert!(s == "failed" && e.contains("unreadable"), "{s}: {e}");
    let (s, e, _) = status("firehose");
    assert!(
        s == "failed" && e.contains("output exceeded 8388608 bytes"),
        "{s}: {e}"
    );
    let (s, e, _) = status("stuck");
    assert!(
        s == "failed" && e.contains("timed out after 1s"),
        "{s}: {e}"
    );

    // Posted exactly once, saying what was capped and who did not answer.
    assert_eq!(fake.reviews(REPO, 7).len(), 1);
    let body = &bodies(&fake)[0];
    assert!(
        body.contains("flood reported 450 more findings than the 50 a lens may contribute"),
        "{body}"
    );
    assert!(body.contains("Lenses that did not answer:"), "{body}");
    for name in ["babble", "firehose", "stuck"] {
        assert!(body.contains(name), "{name} not in {body}");
    }
    assert_eq!(body.matches("Flood item").count(), 50, "{body}");
    let comments = fake.review_comments(REPO, 7);
    let verbose = comments
        .iter()
        .map(|c| c["body"].as_str().unwrap())
        .find(|b| b.contains("Unchecked total"))
        .expect("the long comment was posted");
    assert!(verbose.contains("(truncated)"), "{verbose}");
    assert!(
        verbose.chars().count() < 4_600,
        "{}",
        verbose.chars().count()
    );

    // Nothing left running: not the firehose's pipeline, not the stuck lens's grandchild.
    let left = members_of(pid_in(&firehose_pid));
    assert!(left.is_empty(), "left running: {left:?}");
    let grandchild = pid_in(&grandchild_pid);
    let stat = std::fs::read_to_string(format!("/proc/{grandchild}/stat")).unwrap_or_default();
    assert!(
        live_group_of(&stat).is_none(),
        "the grandchild lives: {stat}"
    );
}
