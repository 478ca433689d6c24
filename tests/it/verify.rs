//! Cross-examination through the binary: `review --diff` (with and without `--checkout`) and
//! `review --pr --post` against the fake GitHub, with scripted lenses that review and, asked,
//! give verdicts (`tests/fixtures/lenses/verifier.sh`).

use std::path::Path;

use serde_json::{Value, json};

use crate::cli::{config, fixture, json as doc_of, reviewbot, stderr, stdout};
use crate::fake_github::FakeGithub;
use crate::pr::{REPO, Run, TOKEN, bodies, world};

/// A `[[lens]]` running the scripted verifier: it reviews with `findings` (written into `dir`)
/// and answers `verdict` when asked to cross-examine; `extra` more arguments.
fn verifier_lens(
    dir: &Path,
    name: &str,
    verdict: &str,
    findings: &Value,
    extra: &[&str],
) -> String {
    let file = dir.join(format!("{name}.json"));
    std::fs::write(&file, json!({ "findings": findings }).to_string()).unwrap();
    let mut args = vec![format!("\"{verdict}\""), format!("\"{}\"", file.display())];
    args.extend(extra.iter().map(|a| format!("\"{a}\"")));
    format!(
        "[[lens]]\nname = \"{name}\"\nbackend = \"command\"\nbin = \"{}\"\nargs = [{}]\n",
        fixture("tests/fixtures/lenses/verifier.sh"),
        args.join(", ")
    )
}

fn finding(path: &str, line: u32, severity: &str, confidence: &str, title: &str) -> Value {
    json!({"path": path, "line": line, "side": "RIGHT", "severity": severity,
           "confidence": confidence, "title": title, "body": format!("{title}: why it breaks.")})
}

/// alpha finds the SQL injection and is refuted by beta; beta finds the ignored error and is
/// confirmed by alpha.
fn two_lenses(dir: &Path, extra: &[&str]) -> String {
    let alpha = verifier_lens(
        dir,
        "alpha",
        "confirmed",
        &json!([finding(
            "src/db.rs",
            5,
            "blocking",
            "medium",
            "SQL injection in find_user"
        )]),
        extra,
    );
    let beta = verifier_lens(
        dir,
        "beta",
        "refuted",
        &json!([finding(
            "src/db.rs",
            9,
            "advisory",
            "low",
            "Delete failure is ignored"
        )]),
        extra,
    );
    alpha + &beta
}

fn review_diff(dir: &Path, cfg: &str, more: &[&str]) -> std::process::Output {
    let diff = fixture("tests/fixtures/cli/query.diff");
    let mut args = vec!["review", "--diff", &diff, "--config", cfg];
    args.extend_from_slice(more);
    reviewbot(&args, None, dir)
}

#[test]
fn a_diff_review_withdraws_what_another_lens_refuted_and_confirms_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), &two_lenses(dir.path(), &[]));
    let o = review_diff(dir.path(), &cfg, &["--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc = doc_of(&o);
    let findings = doc["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{findings:#?}");
    let f = &findings[0];
    assert_eq!(f["title"], "Delete failure is ignored");
    assert_eq!(f["confidence"], "medium", "low, raised one step");
    assert_eq!(f["verified"], "confirmed");
    assert_eq!(doc["verdict"], json!({"blocking": 0, "advisory": 1}));
    assert_eq!(
        doc["verification"],
        json!({"checked": 2, "confirmed": 1, "refuted": 1, "unsure": 0,
               "verifier": ["alpha", "beta"]})
    );
    let roles: Vec<(&str, Option<&str>, &str)> = doc["lenses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["lens"].as_str().unwrap(),
                l["role"].as_str(),
                l["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        roles,
        [
            ("alpha", None, "ok"),
            ("beta", None, "ok"),
            ("alpha", Some("verify"), "ok"),
            ("beta", Some("verify"), "ok")
        ]
    );

    // What a user reads: the withdrawn count in the body, the verifier's words under the
    // confirmed finding.
    let o = review_diff(dir.path(), &cfg, &["--format", "markdown"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!("verify_diff_markdown", stdout(&o));
    let o = review_diff(dir.path(), &cfg, &["--format", "text"]);
    assert!(
        stdout(&o).contains("note: 1 finding was withdrawn after cross-examination."),
        "{}",
        stdout(&o)
    );
}

#[test]
fn with_a_checkout_the_verifier_reads_the_code_and_evidence_keeps_each_verdict() {
    let dir = tempfile::tempdir().unwrap();
    let checkout = dir.path().join("checkout");
    std::fs::create_dir_all(checkout.join("src")).unwrap();
    std::fs::write(checkout.join("src/db.rs"), "use crate::pool::Pool;\n").unwrap();
    let evidence = dir.path().join("evidence");
    let cfg = config(dir.path(), &two_lenses(dir.path(), &["src/db.rs"]));
    let o = review_diff(
        dir.path(),
        &cfg,
        &[
            "--checkout",
            checkout.to_str().unwrap(),
            "--evidence",
            evidence.to_str().unwrap(),
            "--format",
            "markdown",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // The verifier ran in the checkout and quotes the file it read there.
    assert!(
        stdout(&o)
            .contains("Checked by alpha: read src/db.rs:1 (use crate::pool::Pool;), confirmed"),
        "{}",
        stdout(&o)
    );
    let lines: Vec<Value> = std::fs::read_dir(&evidence)
        .unwrap()
        .flat_map(|e| {
            let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
            text.lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    let verdicts: Vec<(&str, &str)> = lines
        .iter()
        .filter(|l| l["kind"] == "verdict")
        .map(|l| {
            (
                l["verifier"].as_str().unwrap(),
                l["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(verdicts.len(), 2, "{lines:#?}");
    assert!(verdicts.contains(&("beta", "refuted")));
    assert!(verdicts.contains(&("alpha", "confirmed")));
    let refuted = lines
        .iter()
        .find(|l| l["kind"] == "verdict" && l["verdict"] == "refuted")
        .unwrap();
    assert_eq!(refuted["title"], "SQL injection in find_user");
    assert_eq!(
        refuted["evidence"],
        "read src/db.rs:1 (use crate::pool::Pool;), refuted"
    );
    let asked: Vec<&Value> = lines
        .iter()
        .filter(|l| l["kind"] == "exchange" && l["role"] == "verify")
        .collect();
    assert_eq!(asked.len(), 2, "one call per verifier");
    let prompt = asked[0]["prompt"].as_str().unwrap();
    assert!(
        prompt.contains("<untrusted label=\"findings\">"),
        "{prompt}"
    );
    assert!(prompt.contains("=== src/db.rs"), "{prompt}");
}

#[test]
fn off_checks_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        &(two_lenses(dir.path(), &[]) + "[verify]\nmode = \"off\"\n"),
    );
    let o = review_diff(dir.path(), &cfg, &["--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc = doc_of(&o);
    assert_eq!(doc["findings"].as_array().unwrap().len(), 2);
    assert_eq!(doc["verification"], Value::Null);
    assert_eq!(doc["lenses"].as_array().unwrap().len(), 2);
}

#[test]
fn a_bad_verify_key_is_a_clear_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    for (body, says) in [
        ("[verify]\nmode = \"some\"\n", "unknown variant `some`"),
        (
            "[verify]\nmax_findings = 0\n",
            "max_findings: must be at least 1",
        ),
        ("[verify]\nmax_finding = 3\n", "unknown field `max_finding`"),
    ] {
        let cfg = config(dir.path(), body);
        let o = review_diff(dir.path(), &cfg, &[]);
        assert_eq!(o.status.code(), Some(2), "{body}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{body}: {}", stderr(&o));
    }
}

/// PR #7's two files: `src/main.rs` lines 2-4 and `app/work.py` line 11 are added.
fn pr_lenses(dir: &Path) -> String {
    let alpha = verifier_lens(
        dir,
        "alpha",
        "confirmed",
        &json!([finding(
            "src/main.rs",
            3,
            "blocking",
            "medium",
            "Debug print left in"
        )]),
        &[],
    );
    let beta = verifier_lens(
        dir,
        "beta",
        "refuted",
        &json!([finding(
            "app/work.py",
            11,
            "advisory",
            "low",
            "breakpoint() stops the worker"
        )]),
        &[],
    );
    alpha + &beta
}

/// A `review --pr` run with [`pr_lenses`] and `review` more `[review]` keys.
fn pr_run(review: &str) -> Run {
    let run = Run::new("");
    let cfg =
        pr_lenses(run.dir.path()) + &format!("[review]\n{review}lenses = [\"alpha\", \"beta\"]\n");
    std::fs::write(
        run.dir.path().join("reviewbot.toml"),
        format!("[github]\nmax_rate_limit_wait = \"10s\"\n{cfg}"),
    )
    .unwrap();
    run
}

fn posted_comments(fake: &FakeGithub) -> Vec<String> {
    fake.review_comments(REPO, 7)
        .iter()
        .map(|c| c["body"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_posted_round_carries_only_what_survived_cross_examination() {
    let fake = world();
    let run = pr_run("");
    let o = run.review(&fake, Some(TOKEN), &["--post", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc = crate::pr::json(&o);
    assert_eq!(doc["posted"], true);
    assert_eq!(doc["verification"]["refuted"], 1);
    let bodies = bodies(&fake);
    assert_eq!(bodies.len(), 1);
    assert!(
        bodies[0].contains("1 finding was withdrawn after cross-examination."),
        "{}",
        bodies[0]
    );
    assert!(
        bodies[0].contains("Verdict: 0 blocking, 1 advisory."),
        "{}",
        bodies[0]
    );
    assert!(bodies[0].contains("alpha (verify)") || !bodies[0].contains("Cost:"));
    let comments = posted_comments(&fake);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(comments[0].starts_with("**Advisory.** breakpoint() stops the worker"));
    assert!(
        comments[0].contains(
            "<details><summary>Cross-examined</summary>\n\nChecked by alpha: read src/lib.rs:2, \
             confirmed\n\n</details>"
        ),
        "{}",
        comments[0]
    );
    assert!(
        comments[0].contains("(medium confidence · beta)"),
        "{}",
        comments[0]
    );
    // The check run is completed with the verified verdict.
    let runs = fake.check_runs(REPO);
    assert_eq!(runs.len(), 1);
    assert_eq!(
        runs[0]["output"]["title"],
        "Round 1: 0 blocking, 1 advisory"
    );
}

#[test]
fn per_lens_posting_verifies_before_splitting() {
    let fake = world();
    let run = pr_run("post = \"per-lens\"\n");
    let o = run.review(&fake, Some(TOKEN), &["--post", "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let bodies = bodies(&fake);
    assert_eq!(bodies.len(), 2, "{bodies:#?}");
    let of = |lens: &str| {
        bodies
            .iter()
            .find(|b| {
                b.contains(&format!("lens={lens} ")) || b.contains(&format!("lens={lens}-->"))
            })
            .cloned()
            .unwrap_or_else(|| panic!("no review of {lens}: {bodies:#?}"))
    };
    // alpha's finding was refuted: its review says so and attaches nothing.
    let alpha = of("alpha");
    assert!(
        alpha.contains("1 finding was withdrawn after cross-examination."),
        "{alpha}"
    );
    assert!(alpha.contains("No findings."), "{alpha}");
    let beta = of("beta");
    assert!(!beta.contains("withdrawn"), "{beta}");
    assert!(beta.contains("Verdict: 0 blocking, 1 advisory."), "{beta}");
    let comments = posted_comments(&fake);
    assert_eq!(comments.len(), 1, "{comments:#?}");
    assert!(comments[0].contains("Checked by alpha"), "{}", comments[0]);
}
