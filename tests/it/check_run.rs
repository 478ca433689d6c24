//! The round's check run under `review --pr N --post`: created `in_progress` before the
//! review is posted, completed after it with the right conclusion, reused after a crash, and
//! a notice (never a failed round) without `checks: write`.

use serde_json::{Value, json};

use crate::fake_github::{FakeGithub, Fault, FileSpec, PrSpec, TokenKind};
use crate::pr::{REPO, Run, TOKEN, stderr, world};

fn runs(fake: &FakeGithub) -> Vec<Value> {
    fake.check_runs(REPO)
}

/// The method and path of every check-run or review write, in order.
/// Every write: each request but a GET and the GraphQL query that reads the base branch's files.
fn writes(fake: &FakeGithub) -> Vec<String> {
    fake.requests()
        .iter()
        .filter(|r| r.method != "GET" && r.path != "/graphql")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

#[test]
fn a_round_creates_its_check_run_then_completes_it_with_the_verdict() {
    let fake = world();
    let o = Run::new("").review(&fake, Some(TOKEN), &["--post"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let runs = runs(&fake);
    assert_eq!(runs.len(), 1, "{runs:#?}");
    let run = &runs[0];
    assert_eq!(run["name"], "reviewbot");
    assert_eq!(run["status"], "completed");
    assert_eq!(
        run["conclusion"], "neutral",
        "findings hold, fail_on is never"
    );
    let title = run["output"]["title"].as_str().unwrap();
    assert!(title.starts_with("Round 1: 1 blocking, "), "{title}");
    let summary = run["output"]["summary"].as_str().unwrap();
    let review = &fake.reviews(REPO, 7)[0];
    let body = review["body"].as_str().unwrap();
    assert!(summary.starts_with("Round 1 — reviewed head"), "{summary}");
    assert!(!summary.contains("<!-- reviewbot round="), "{summary}");
    assert!(
        body.starts_with(summary.trim_end()),
        "{summary}\n---\n{body}"
    );
    let annotations = run["annotations"].as_array().unwrap();
    assert_eq!(annotations.len(), fake.review_comments(REPO, 7).len());
    assert!(
        annotations
            .iter()
            .any(|a| a["annotation_level"] == "failure")
    );
    let id = run["id"].as_u64().unwrap();
    assert_eq!(
        writes(&fake),
        [
            "POST /repos/octo/app/check-runs".to_owned(),
            "POST /repos/octo/app/pulls/7/reviews".to_owned(),
            format!("PATCH /repos/octo/app/check-runs/{id}"),
        ]
    );
}

#[test]
fn fail_on_in_the_config_fails_the_check_run_and_the_flag_overrides_it() {
    let fake = world();
    let run = Run::new("[review]\nfail_on = \"blocking\"\n");
    let o = run.review(&fake, Some(TOKEN), &["--post"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(runs(&fake)[0]["conclusion"], "failure");

    let fake = world();
    let o = run.review(&fake, Some(TOKEN), &["--post", "--fail-on", "never"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(runs(&fake)[0]["conclusion"], "neutral");
}

#[test]
fn no_finding_is_success_and_every_lens_failing_is_neutral_saying_why() {
    let fake = world();
    let run = Run::new("[review]\nignore_paths = [\"app/**\", \"src/main.rs\"]\n");
    let o = run.review(&fake, Some(TOKEN), &["--post"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let runs_now = runs(&fake);
    assert_eq!(runs_now.len(), 1, "{runs_now:#?}");
    assert_eq!(
        runs_now[0]["conclusion"], "skipped",
        "every file ignored: gated"
    );

    let fake = world();
    let quiet = Run::new("");
    let lens = quiet.dir.path().join("quiet.sh");
    std::fs::write(
        &lens,
        "#!/bin/sh\ncat >/dev/null\necho '{\"findings\":[]}'\n",
    )
    .unwrap();
    std::fs::set_permissions(&lens, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let cfg = format!(
        "[github]\nmax_rate_limit_wait = \"10s\"\n[[lens]]\nname = \"quiet\"\nbackend = \"command\"\nbin = \"{}\"\n",
        lens.display()
    );
    std::fs::write(quiet.dir.path().join("reviewbot.toml"), cfg).unwrap();
    let o = quiet.review(&fake, Some(TOKEN), &["--post"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let run = &runs(&fake)[0];
    assert_eq!(run["conclusion"], "success");
    assert_eq!(run["output"]["title"], "Round 1: 0 blocking, 0 advisory");

    let fake = world();
    let broken =
        Run::new("[[lens]]\nname = \"broken\"\nbackend = \"command\"\nbin = \"/bin/false\"\n");
    let o = broken.review(&fake, Some(TOKEN), &["--post"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(fake.reviews(REPO, 7).is_empty());
    let runs = runs(&fake);
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(runs[0]["status"], "completed");
    assert_eq!(runs[0]["conclusion"], "neutral");
    assert_eq!(runs[0]["output"]["title"], "Round 1: every lens failed");
    let summary = runs[0]["output"]["summary"].as_str().unwrap();
    assert!(summary.contains("broken failed"), "{summary}");
}

#[test]
fn an_opted_out_pr_gets_a_skipped_check_run_created_completed() {
    let fake = world();
    fake.set_labels(REPO, 7, &["reviewbot:no-review"]);
    let o = Run::new("").review(&fake, Some(TOKEN), &["--post"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let runs = runs(&fake);
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(runs[0]["conclusion"], "skipped");
    assert_eq!(runs[0]["output"]["title"], "Not reviewed");
    assert_eq!(writes(&fake), ["POST /repos/octo/app/check-runs"]);
}

#[test]
fn a_run_left_in_progress_by_a_failed_round_is_completed_by_the_next_one() {
    let fake = world();
    let run = Run::new("");
    // The round dies after its check run started: the opt-out re-check is refused.
    fake.fail_next(
        ("GET", "/repos/octo/app/issues/7/labels"),
        Fault::status(404),
        1,
    );
    let o = run.review(&fake, Some(TOKEN), &["--post"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let first = runs(&fake);
    assert_eq!(first.len(), 1);
    assert_eq!(first[0]["status"], "in_progress");

    let o = run.review(&fake, Some(TOKEN), &["--post"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let runs = runs(&fake);
    assert_eq!(runs.len(), 1, "the same run, not a second: {runs:#?}");
    assert_eq!(runs[0]["id"], first[0]["id"]);
    assert_eq!(runs[0]["status"], "completed");
}

#[test]
fn a_run_left_in_progress_after_the_review_landed_is_completed_on_the_next_run() {
    let fake = world();
    let run = Run::new("");
    // Every try of the completing PATCH fails: the review is posted, the run spins.
    fake.fail_next(
        crate::fake_github::Route::prefix("PATCH", "/repos/octo/app/check-runs/"),
        Fault::status(500),
        3,
    );
    let o = run.review(&fake, Some(TOKEN), &["--post"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the check run could not be written"),
        "{}",
        stderr(&o)
    );
    assert_eq!(runs(&fake)[0]["status"], "in_progress");

    let o = run.review(&fake, Some(TOKEN), &["--post"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(fake.reviews(REPO, 7).len(), 1, "no second review");
    let runs = runs(&fake);
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(runs[0]["status"], "completed");
    assert_eq!(runs[0]["conclusion"], "neutral");
    let summary = runs[0]["output"]["summary"].as_str().unwrap();
    assert!(summary.starts_with("Round 1 — reviewed head"), "{summary}");
}

#[test]
fn without_checks_write_the_round_posts_and_a_notice_says_so() {
    let fake = world();
    fake.forbid_checks(true);
    let o = Run::new("").review(&fake, Some(TOKEN), &["--post"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(fake.reviews(REPO, 7).len(), 1);
    assert!(runs(&fake).is_empty());
    let err = stderr(&o);
    assert!(
        err.contains("notice: the check run could not be created"),
        "{err}"
    );
    assert!(err.contains("checks: write"), "{err}");

    // A personal token may not write check runs at all: the same notice.
    let fake = world();
    fake.add_token("pat", TokenKind::user("octocat"));
    let o = Run::new("").review(&fake, Some("pat"), &["--post"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(fake.reviews(REPO, 7).len(), 1);
    assert!(stderr(&o).contains("the check run could not be created"));
}

#[test]
fn a_round_with_120_findings_pages_its_annotations_50_50_20_onto_one_run() {
    let fake = world();
    let added: String = (1..=120).map(|n| format!("+let v{n} = {n};\n")).collect();
    fake.add_pr(
        REPO,
        PrSpec {
            number: 9,
            files: vec![FileSpec::added(
                "src/many.rs",
                &format!("@@ -0,0 +1,120 @@\n{added}"),
            )],
            ..PrSpec::default()
        },
    );
    // A lens reports at most 50 findings: three lenses, 40 lines each, worded apart so that
    // neighbours across lenses are not merged as one problem.
    let run = Run::new("");
    let mut cfg = "[github]\nmax_rate_limit_wait = \"10s\"\n".to_owned();
    for k in 0..3 {
        let findings: Vec<Value> = (40 * k + 1..=40 * k + 40)
            .map(|n| {
                json!({"path": "src/many.rs", "line": n, "severity": "advisory",
                       "confidence": "high", "title": format!("Tag{n}"),
                       "body": format!("Word{n} only.")})
            })
            .collect();
        let reply = run.dir.path().join(format!("reply{k}.json"));
        std::fs::write(&reply, json!({ "findings": findings }).to_string()).unwrap();
        let lens = run.dir.path().join(format!("many{k}.sh"));
        let script = format!("#!/bin/sh\ncat >/dev/null\ncat '{}'\n", reply.display());
        std::fs::write(&lens, script).unwrap();
        std::fs::set_permissions(&lens, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        cfg.push_str(&crate::pr::lens(&format!("many{k}"), &lens));
    }
    std::fs::write(run.dir.path().join("reviewbot.toml"), cfg).unwrap();

    let o = run.review_pr(&fake, Some(TOKEN), 9, &["--post"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let runs = runs(&fake);
    assert_eq!(runs.len(), 1, "{runs:#?}");
    let id = runs[0]["id"].as_u64();
    assert_eq!(runs[0]["status"], "completed");
    assert_eq!(runs[0]["conclusion"], "neutral");
    assert_eq!(
        runs[0]["output"]["title"],
        "Round 1: 0 blocking, 120 advisory"
    );
    // Every finding is on the one run, each on its own line.
    let lines: Vec<u64> = runs[0]["annotations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["start_line"].as_u64().unwrap())
        .collect();
    assert_eq!(lines, (1..=120).collect::<Vec<u64>>());

    // Created in_progress without annotations; the completing update carries the first 50, two
    // more updates the rest; none refused, none over GitHub's 50.
    let writes: Vec<_> = fake
        .check_run_writes(REPO)
        .into_iter()
        .map(|w| {
            assert_eq!(w.run, id, "{w:?}");
            (w.method, w.status, w.conclusion, w.annotations, w.answered)
        })
        .collect();
    let done = || Some("completed".to_owned());
    assert_eq!(
        writes,
        [
            ("POST", Some("in_progress".to_owned()), None, 0, 201),
            ("PATCH", done(), Some("neutral".to_owned()), 50, 200),
            ("PATCH", None, None, 50, 200),
            ("PATCH", None, None, 20, 200),
        ]
    );
}
