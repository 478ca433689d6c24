//! `reviewbot eval` through the binary, on the golden set the project ships
//! (`fixtures/eval/`): the builtin lens finds the five mechanical problems and none of the five
//! a model must reason about; a scripted lens finds two of those and misplaces a third; the
//! merged panel is scored as one; a malformed set is exit 2 naming the case.

use serde_json::Value;

use crate::cli::{config, fixture, json, reviewbot, stderr, stdout};

fn row<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row {name}: {doc:#}"))
}

fn counts(row: &Value) -> (u64, u64, u64) {
    let n = |k: &str| row[k].as_u64().expect(k);
    (n("tp"), n("fp"), n("fn"))
}

#[test]
fn the_builtin_lens_finds_the_mechanical_problems_of_the_golden_set_and_no_others() {
    let dir = tempfile::tempdir().unwrap();
    let set = fixture("fixtures/eval");
    let o = reviewbot(
        &[
            "eval", "--set", &set, "--lens", "builtin", "--format", "json",
        ],
        None,
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc = json(&o);
    assert_eq!(doc["cases"], 10);
    assert_eq!(counts(row(&doc, "builtin")), (5, 0, 5));
    assert_eq!(counts(row(&doc, "panel")), (5, 0, 5));
    assert_eq!(row(&doc, "builtin")["precision"], 1.0);
    assert_eq!(row(&doc, "builtin")["recall"], 0.5);
    let per_case = doc["per_case"].as_array().expect("per_case");
    assert_eq!(per_case.len(), 10);
    let found = |case: &str| {
        let c = per_case.iter().find(|c| c["case"] == case).expect(case);
        counts(&c["rows"][0])
    };
    for case in [
        "python-breakpoint-left-in",
        "go-merge-conflict",
        "rust-committed-aws-key",
    ] {
        assert_eq!(found(case), (1, 0, 0), "{case}");
    }
    assert_eq!(found("python-sql-injection"), (0, 0, 1));
    assert!(stderr(&o).contains("eval: 10/10 cases"), "{}", stderr(&o));
}

#[test]
fn a_panel_is_scored_per_lens_and_merged_with_jobs_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        &format!(
            "[[lens]]\nname = \"oracle\"\nbackend = \"command\"\nbin = \"{}\"\n",
            fixture("tests/fixtures/lenses/oracle.sh")
        ),
    );
    let set = fixture("fixtures/eval");
    let args = [
        "eval",
        "--set",
        &set,
        "--config",
        &cfg,
        "--lens",
        "builtin,oracle",
        "--jobs",
        "4",
    ];
    let o = reviewbot(
        &[&args[..], &["--format", "json"]].concat(),
        None,
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc = json(&o);
    assert_eq!(counts(row(&doc, "oracle")), (2, 1, 8));
    assert_eq!(counts(row(&doc, "builtin")), (5, 0, 5));
    // Together: seven found, the misplaced one still false, three missed.
    assert_eq!(counts(row(&doc, "panel")), (7, 1, 3));
    let text = reviewbot(&args, None, dir.path());
    // Seconds vary run to run.
    let seconds = regex::Regex::new(r"(?m) +\d+\.\d$").unwrap();
    insta::assert_snapshot!(
        "eval_table",
        seconds.replace_all(&stdout(&text), "  [seconds]")
    );
}

/// With a second model lens, cross-examination runs: the merged panel is scored before it and
/// again after it, with the verifier's calls counted in the second row.
#[test]
fn the_panel_is_scored_before_and_after_cross_examination() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        &format!(
            "[[lens]]\nname = \"oracle\"\nbackend = \"command\"\nbin = \"{}\"\n\n\
             [[lens]]\nname = \"checker\"\nbackend = \"command\"\nbin = \"{}\"\n\
             args = [\"refuted\"]\n",
            fixture("tests/fixtures/lenses/oracle.sh"),
            fixture("tests/fixtures/lenses/verifier.sh")
        ),
    );
    let set = fixture("fixtures/eval");
    let o = reviewbot(
        &[
            "eval",
            "--set",
            &set,
            "--config",
            &cfg,
            "--lens",
            "oracle,checker",
            "--format",
            "json",
        ],
        None,
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc = json(&o);
    assert_eq!(counts(row(&doc, "oracle")), (2, 1, 8));
    assert_eq!(counts(row(&doc, "checker")), (0, 0, 10));
    assert_eq!(counts(row(&doc, "panel")), (2, 1, 8));
    // The checker refuted all three: nothing the panel found is left.
    assert_eq!(counts(row(&doc, "panel+verify")), (0, 0, 10));
}

#[test]
fn a_malformed_case_is_exit_2_naming_it_and_a_failed_lens_is_exit_3() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set");
    let case = set.join("broken-case");
    std::fs::create_dir_all(&case).unwrap();
    std::fs::write(case.join("diff.patch"), "not a diff\n").unwrap();
    std::fs::write(case.join("expected.json"), "[]").unwrap();
    let o = reviewbot(
        &[
            "eval",
            "--set",
            &set.display().to_string(),
            "--lens",
            "builtin",
        ],
        None,
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("case broken-case: diff.patch is not a diff"),
        "{}",
        stderr(&o)
    );

    let cfg = config(
        dir.path(),
        "[[lens]]\nname = \"broken\"\nbackend = \"command\"\nbin = \"/bin/false\"\n",
    );
    let golden = fixture("fixtures/eval");
    let o = reviewbot(
        &[
            "eval",
            "--set",
            &golden,
            "--config",
            &cfg,
            "--lens",
            "broken,builtin",
        ],
        None,
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.contains("case go-ignored-error had a failed lens:"),
        "{out}"
    );
    assert!(out.contains("  broken: "), "{out}");
}
