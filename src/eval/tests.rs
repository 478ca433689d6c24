use super::*;
use crate::ids::LensName;
use crate::review::{Confidence, Severity};

fn finding(path: &str, start: Option<u32>, line: u32) -> Finding {
    Finding {
        path: path.to_owned(),
        line,
        start_line: start,
        side: crate::diff::Side::Right,
        severity: Severity::Advisory,
        confidence: Confidence::Medium,
        title: "t".to_owned(),
        body: "b".to_owned(),
        lenses: vec![LensName::new("l")],
        in_diff: true,
        fingerprint: format!("{path}:{line}"),
        suggestion: None,
        verified: None,
    }
}

fn expected(path: &str, line: u32) -> Expected {
    Expected {
        path: path.to_owned(),
        line,
        description: "d".to_owned(),
    }
}

#[test]
fn a_finding_matches_within_five_lines_of_its_range_in_the_same_file() {
    let e = [expected("a.rs", 20)];
    for (f, hit) in [
        (finding("a.rs", None, 20), true),
        (finding("a.rs", None, 25), true),
        (finding("a.rs", None, 26), false),
        (finding("a.rs", None, 15), true),
        (finding("a.rs", None, 14), false),
        // A range covering the line, or ending within the window before it.
        (finding("a.rs", Some(10), 30), true),
        (finding("a.rs", Some(5), 15), true),
        (finding("a.rs", Some(5), 14), false),
        (finding("b.rs", None, 20), false),
    ] {
        let counts = score(&[&f], &e);
        assert_eq!(counts.tp == 1, hit, "{f:?}");
        assert_eq!(counts.tp + counts.fp, 1);
        assert_eq!(counts.tp + counts.fn_, 1);
    }
}

/// Two findings near one problem: one is a true positive, the other a false one; two problems
/// near one finding: one is found, the other missed.
#[test]
fn each_problem_matches_at_most_one_finding_the_nearest() {
    let near = finding("a.rs", None, 21);
    let far = finding("a.rs", None, 24);
    assert_eq!(
        score(&[&far, &near], &[expected("a.rs", 20)]),
        Counts {
            tp: 1,
            fp: 1,
            fn_: 0
        }
    );
    assert_eq!(
        score(&[&near], &[expected("a.rs", 20), expected("a.rs", 22)]),
        Counts {
            tp: 1,
            fp: 0,
            fn_: 1
        }
    );
    // The second problem takes the finding the first one left.
    assert_eq!(
        score(
            &[&near, &far],
            &[expected("a.rs", 20), expected("a.rs", 23)]
        ),
        Counts {
            tp: 2,
            fp: 0,
            fn_: 0
        }
    );
    assert_eq!(score(&[], &[]), Counts::default());
}

#[test]
fn ratios_are_zero_when_there_is_nothing_to_divide() {
    let r = Row::new(
        "l",
        Counts {
            tp: 2,
            fp: 2,
            fn_: 0,
        },
        Spent::default(),
    );
    assert_eq!((r.precision, r.recall), (0.5, 1.0));
    assert!((r.f1 - 2.0 / 3.0).abs() < 1e-9);
    let none = Row::new("l", Counts::default(), Spent::default());
    assert_eq!((none.precision, none.recall, none.f1), (0.0, 0.0, 0.0));
}

const DIFF: &str = "\
diff --git a/a.rs b/a.rs
--- a/a.rs
+++ b/a.rs
@@ -1,1 +1,2 @@
 fn a() {}
+fn b() {}
";

fn write_case(root: &Path, name: &str, files: &[(&str, &str)]) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    for (file, text) in files {
        std::fs::write(dir.join(file), text).unwrap();
    }
}

#[test]
fn a_set_is_read_case_by_case_and_a_malformed_case_is_named() {
    let root = tempfile::tempdir().unwrap();
    let ok = r#"[{"path": "a.rs", "line": 2, "description": "b is unused"}]"#;
    write_case(
        root.path(),
        "one",
        &[("diff.patch", DIFF), ("expected.json", ok)],
    );
    std::fs::create_dir_all(root.path().join("one/checkout")).unwrap();
    write_case(
        root.path(),
        "two",
        &[("diff.patch", DIFF), ("expected.json", "[]")],
    );
    let cases = load(root.path()).expect("loads");
    assert_eq!(cases.len(), 2);
    assert_eq!(cases[0].name, "one");
    assert_eq!(
        cases[0].expected,
        vec![expected("a.rs", 2).with("b is unused")]
    );
    assert!(cases[0].checkout.is_some() && cases[1].checkout.is_none());

    for (files, problem) in [
        (vec![("expected.json", ok)], "cannot read diff.patch"),
        (
            vec![("diff.patch", "hello\n"), ("expected.json", ok)],
            "diff.patch is not a diff",
        ),
        (vec![("diff.patch", DIFF)], "cannot read expected.json"),
        (
            vec![("diff.patch", DIFF), ("expected.json", "{}")],
            "expected.json:",
        ),
        (
            vec![
                ("diff.patch", DIFF),
                ("expected.json", r#"[{"path": "a.rs", "line": 2}]"#),
            ],
            "missing field `description`",
        ),
        (
            vec![
                ("diff.patch", DIFF),
                (
                    "expected.json",
                    r#"[{"path": "z.rs", "line": 2, "description": "x"}]"#,
                ),
            ],
            "names z.rs, which diff.patch does not change",
        ),
        (
            vec![
                ("diff.patch", DIFF),
                (
                    "expected.json",
                    r#"[{"path": "a.rs", "line": 0, "description": "x"}]"#,
                ),
            ],
            "line 0",
        ),
    ] {
        let root = tempfile::tempdir().unwrap();
        write_case(root.path(), "bad", &files);
        let err = load(root.path()).expect_err(problem).to_string();
        assert!(
            err.starts_with("case bad: ") && err.contains(problem),
            "{err}"
        );
    }
    let empty = tempfile::tempdir().unwrap();
    assert!(
        load(empty.path())
            .unwrap_err()
            .to_string()
            .contains("holds no case")
    );
    assert!(load(&empty.path().join("missing")).is_err());
}

impl Expected {
    fn with(mut self, description: &str) -> Self {
        self.description = description.to_owned();
        self
    }
}
