//! `reviewbot review --diff` end to end, through the real binary.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub(crate) fn fixture(rel: &str) -> String {
    root().join(rel).display().to_string()
}

/// Runs the binary in an empty directory with no ambient config, feeding `stdin`.
pub(crate) fn reviewbot(args: &[&str], stdin: Option<&[u8]>, cwd: &Path) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_reviewbot"));
    cmd.args(args)
        .current_dir(cwd)
        .env_remove("REVIEWBOT_CONFIG")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("NO_COLOR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn reviewbot");
    let mut pipe = child.stdin.take().expect("stdin");
    if let Some(input) = stdin {
        pipe.write_all(input).expect("write stdin");
    }
    drop(pipe);
    child.wait_with_output().expect("wait reviewbot")
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8 stdout")
}

pub(crate) fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).expect("utf-8 stderr")
}

/// Timings vary run to run; snapshots show a placeholder.
pub(crate) fn steady(text: &str) -> String {
    let re = regex::Regex::new(r"in \d+(\.\d+)? m?s").unwrap();
    re.replace_all(text, "in [time]").into_owned()
}

pub(crate) fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{}", stdout(o)))
}

/// A config with command lenses from `tests/fixtures`, written into `dir`.
pub(crate) fn config(dir: &Path, body: &str) -> String {
    let path = dir.join("reviewbot.toml");
    std::fs::write(&path, body).unwrap();
    path.display().to_string()
}

fn command_lens(name: &str, script: &str, extra: &str) -> String {
    format!(
        "[[lens]]\nname = \"{name}\"\nbackend = \"command\"\nbin = \"{}\"\n{extra}\n",
        fixture(script)
    )
}

// ---- the demo patch, in all four formats ----

#[test]
fn demo_text() {
    let dir = tempfile::tempdir().unwrap();
    let o = reviewbot(
        &["review", "--diff", &fixture("examples/demo.patch")],
        None,
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("no lens configured; reviewing with the builtin lens"));
    insta::assert_snapshot!("demo_text", steady(&stdout(&o)));
}

#[test]
fn demo_json() {
    let dir = tempfile::tempdir().unwrap();
    let o = reviewbot(
        &[
            "review",
            "--diff",
            &fixture("examples/demo.patch"),
            "--lens",
            "builtin",
            "--format",
            "json",
        ],
        None,
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc = json(&o);
    assert_eq!(doc["lenses"][0]["model"], Value::Null);
    assert_eq!(doc["lenses"][0]["usage"], Value::Null);
    assert_eq!(doc["head"], Value::Null);
    assert_eq!(doc["round"], Value::Null);
    assert_eq!(doc["posted"], Value::Bool(false));
    insta::assert_json_snapshot!("demo_json", doc, {".lenses[].latency_ms" => "[ms]"});
}

#[test]
fn demo_markdown() {
    let dir = tempfile::tempdir().unwrap();
    let o = reviewbot(
        &[
            "review",
            "--diff",
            &fixture("examples/demo.patch"),
            "--lens",
            "builtin",
            "--format",
            "markdown",
        ],
        None,
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    insta::assert_snapshot!("demo_markdown", stdout(&o));
}

#[test]
fn demo_sarif_points_at_the_same_places() {
    let dir = tempfile::tempdir().unwrap();
    let run = |format: &str| {
        reviewbot(
            &[
                "review",
                "--diff",
                &fixture("examples/demo.patch"),
                "--lens",
                "builtin",
                "--format",
                format,
            ],
            None,
            dir.path(),
        )
    };
    let doc = json(&run("json"));
    let sarif = json(&run("sarif"));
    assert_eq!(sarif["version"], "2.1.0");
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let findings = doc["findings"].as_array().unwrap();
    assert_eq!(results.len(), findings.len());
    assert!(!findings.is_empty());
    for (r, f) in results.iter().zip(findings) {
        let loc = &r["locations"][0]["physicalLocation"];
        assert_eq!(
            loc["artifactLocation"]["uri"],
            f["path"].as_str().unwrap().replace(' ', "%20")
        );
        assert_eq!(loc["region"]["endLine"], f["line"]);
        assert_eq!(
            r["partialFingerprints"]["reviewbotFingerprint/v1"],
            f["fingerprint"]
        );
        let level = if f["severity"] == "blocking" {
            "error"
        } else {
            "warning"
        };
        assert_eq!(r["level"], level);
    }
}

#[test]
fn no_secret_survives_in_any_format() {
    let patch = std::fs::read_to_string(root().join("examples/demo.patch")).unwrap();
    let secrets: Vec<String> = reviewbot::redact::find_secrets(&patch)
        .into_iter()
        .map(|m| patch[m.range].to_owned())
        .collect();
    assert!(
        !secrets.is_empty(),
        "the demo patch should carry a fake secret"
    );
    let dir = tempfile::tempdir().unwrap();
    for format in ["text", "json", "markdown", "sarif"] {
        let o = reviewbot(
            &[
                "review", "--diff", "-", "--lens", "builtin", "--format", format,
            ],
            Some(patch.as_bytes()),
            dir.path(),
        );
        let all = format!("{}{}", stdout(&o), stderr(&o));
        for s in &secrets {
            assert!(!all.contains(s.as_str()), "{format} output leaks {s}");
        }
    }
}

// ---- two command lenses, merged ----

#[test]
fn two_lenses_flagging_the_same_problem_merge_into_one_finding() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        &(command_lens("alpha", "tests/fixtures/cli/lens-a.sh", "")
            + &command_lens("beta", "tests/fixtures/cli/lens-b.sh", "")),
    );
    let o = reviewbot(
        &[
            "review",
            "--diff",
            &fixture("tests/fixtures/cli/query.diff"),
            "--config",
            &cfg,
            "--format",
            "json",
        ],
        None,
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc = json(&o);
    let findings = doc["findings"].as_array().unwrap();
    let injection: Vec<&Value> = findings
        .iter()
        .filter(|f| f["title"].as_str().unwrap().contains("SQL"))
        .collect();
    assert_eq!(injection.len(), 1, "{findings:#?}");
    let f = injection[0];
    assert_eq!(f["lenses"], serde_json::json!(["alpha", "beta"]));
    assert_eq!(f["severity"], "blocking");
    assert_eq!(f["confidence"], "high");
    assert_eq!(f["in_diff"], true);
    assert_eq!(f["path"], "src/db.rs");
    // The other two findings stay apart: a different problem, and one off the diff.
    assert_eq!(findings.len(), 3);
    let off: Vec<&Value> = findings.iter().filter(|f| f["in_diff"] == false).collect();
    assert_eq!(off.len(), 1);
    assert_eq!(off[0]["path"], "src/pool.rs");
    assert_eq!(
        doc["verdict"],
        serde_json::json!({"blocking": 1, "advisory": 2})
    );
    let statuses: Vec<&str> = doc["lenses"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l.get("role").is_none())
        .map(|l| l["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["ok", "ok"]);
    // These scripted lenses answer findings whatever they are asked: asked to cross-examine
    // each other's lone findings, they fail as verifiers, which changes nothing above.
    let verifiers: Vec<(&str, &str)> = doc["lenses"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["role"] == "verify")
        .map(|l| (l["lens"].as_str().unwrap(), l["status"].as_str().unwrap()))
        .collect();
    assert_eq!(verifiers, [("alpha", "failed"), ("beta", "failed")]);
    assert_eq!(doc["verification"]["checked"], 0);
}

#[test]
fn failing_lenses_are_reported_and_the_others_still_count() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let cfg = config(
        dir.path(),
        &[
            command_lens("alpha", "tests/fixtures/cli/lens-a.sh", ""),
            command_lens("broken", "tests/fixtures/lenses/fail.sh", ""),
            command_lens(
                "stuck",
                "tests/fixtures/lenses/hang.sh",
                &format!("timeout = \"1s\"\nargs = [\"{}\"]", pid_file.display()),
            ),
            command_lens("babble", "tests/fixtures/lenses/garbage.sh", ""),
        ]
        .concat(),
    );
    let o = reviewbot(
        &[
            "review",
            "--diff",
            &fixture("tests/fixtures/cli/query.diff"),
            "--config",
            &cfg,
            "--format",
            "json",
        ],
        None,
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let doc = json(&o);
    let lenses = doc["lenses"].as_array().unwrap();
    let status = |name: &str| {
        lenses
            .iter()
            .find(|l| l["lens"] == name)
            .map(|l| (l["status"].clone(), l["error"].clone()))
            .unwrap()
    };
    assert_eq!(status("alpha").0, "ok");
    for name in ["broken", "stuck", "babble"] {
        let (s, e) = status(name);
        assert_eq!(s, "failed", "{name}");
        assert!(
            e.as_str().is_some_and(|e| !e.is_empty()),
            "{name} has no error"
        );
    }
    assert!(
        status("stuck").1.as_str().unwrap().contains("timed out"),
        "{:?}",
        status("stuck")
    );
    assert_eq!(doc["findings"].as_array().unwrap().len(), 2);
}

#[test]
fn every_lens_failing_is_exit_3_with_the_document_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        &command_lens("broken", "tests/fixtures/lenses/fail.sh", ""),
    );
    let o = reviewbot(
        &[
            "review",
            "--diff",
            &fixture("tests/fixtures/cli/query.diff"),
            "--config",
            &cfg,
            "--format",
            "json",
        ],
        None,
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(3));
    assert_eq!(json(&o)["lenses"][0]["status"], "failed");
}

/// A token budget that no file fits beside the fixed prompt leaves every model lens with nothing
/// to review: each fails saying so, with the sizes that decide it, in the JSON and on stderr.
#[test]
fn a_budget_no_file_fits_fails_each_model_lens_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut patch = String::new();
    for f in 0..6 {
        let path = format!("src/f{f}.rs");
        patch.push_str(&format!(
            "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,120 @@\n"
        ));
        for n in 0..120 {
            patch.push_str(&format!(
                "+    let v{n} = compute(alpha_{n}, beta_{n}) * {n};\n"
            ));
        }
    }
    let diff = dir.path().join("six.diff");
    std::fs::write(&diff, patch).unwrap();
    let cfg_with_budget = |dir: &Path, budget: usize| {
        let lenses = ["one", "two"].map(|n| command_lens(n, "tests/fixtures/lenses/good.sh", ""));
        let text = format!("{}[review]\ntoken_budget = {budget}\n", lenses.concat());
        config(dir, &text)
    };
    let cfg = cfg_with_budget(dir.path(), 4000);
    let diff = diff.display().to_string();
    let o = reviewbot(
        &[
            "review", "--diff", &diff, "--config", &cfg, "--format", "json",
        ],
        None,
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    let doc = json(&o);
    let re = regex::Regex::new(
        r"^nothing fits the token budget of 4000 tokens \(3600 after a 10% margin\): the fixed prompt takes (\d+) and the smallest of the 6 files (\d+); raise `\[review\] token_budget` to at least (\d+) to review it$",
    )
    .unwrap();
    let mut needed = 0;
    for lens in doc["lenses"].as_array().unwrap() {
        assert_eq!(lens["status"], "failed");
        let error = lens["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error: {lens}"));
        let caps = re.captures(error).unwrap_or_else(|| panic!("{error}"));
        let [fixed, smallest, least] = [1, 2, 3].map(|i| caps[i].parse::<usize>().unwrap());
        assert!(fixed > 100 && smallest > 100, "{error}");
        assert!(fixed + smallest > 3600, "it would have fitted: {error}");
        needed = least;
    }
    let err = stderr(&o);
    let said: Vec<&str> = err.lines().filter(|l| l.contains("nothing fits")).collect();
    assert_eq!(said.len(), 1, "said once:\n{err}");
    assert!(
        said[0].starts_with("warning: nothing fits the token budget"),
        "{err}"
    );
    assert_eq!(doc["not_reviewed"].as_array().unwrap().len(), 6);

    // The budget it names is the least that works: one less still fits nothing.
    for (budget, status, left_out) in [(needed - 1, "failed", 6), (needed, "ok", 0)] {
        let cfg = cfg_with_budget(dir.path(), budget);
        let o = reviewbot(
            &[
                "review", "--diff", &diff, "--config", &cfg, "--format", "json",
            ],
            None,
            dir.path(),
        );
        let doc = json(&o);
        assert_eq!(
            doc["lenses"][0]["status"],
            status,
            "{budget}: {}",
            stderr(&o)
        );
        assert_eq!(doc["not_reviewed"].as_array().unwrap().len(), left_out);
    }
}

#[test]
fn fail_on_sets_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let demo = fixture("examples/demo.patch");
    let code = |extra: &[&str]| {
        let mut args = vec!["review", "--diff", demo.as_str(), "--lens", "builtin"];
        args.extend_from_slice(extra);
        reviewbot(&args, None, dir.path()).status.code()
    };
    assert_eq!(code(&["--fail-on", "blocking"]), Some(1));
    assert_eq!(code(&["--fail-on", "advisory"]), Some(1));
    assert_eq!(code(&["--fail-on", "never"]), Some(0));
    let clean_diff =
        "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-old\n+new\n";
    let o = reviewbot(
        &[
            "review",
            "--diff",
            "-",
            "--lens",
            "builtin",
            "--fail-on",
            "advisory",
        ],
        Some(clean_diff.as_bytes()),
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).contains("Verdict: 0 blocking, 0 advisory."));
}

// ---- bad input: exit 2 and one clear line ----

fn assert_usage_error(o: &Output, needle: &str) {
    assert_eq!(o.status.code(), Some(2), "stderr: {}", stderr(o));
    let err = stderr(o);
    assert!(err.contains(needle), "expected {needle:?} in {err:?}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        stdout(o).is_empty(),
        "stdout should be empty on a usage error: {}",
        stdout(o)
    );
}

#[test]
fn latin1_bytes_keep_their_lines_and_the_rest_of_their_text() {
    let dir = tempfile::tempdir().unwrap();
    // Latin-1 on context, added and removed lines, before and on the lines with findings.
    let diff = b"diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n\
        @@ -1,3 +1,6 @@\n # caf\xe9\n-old = 'cr\xe8me'\n+name = 'cr\xe8me br\xfbl\xe9e'\n\
        +api_key = \"Zx8kQ2mN7vB4pL9w\"  # r\xe9sum\xe9\n+x = 1\n breakpoint()  # \xe0 enlever\n\
        +breakpoint()  # \xe9t\xe9\n";
    let path = dir.path().join("latin1.diff");
    std::fs::write(&path, diff).unwrap();
    let o = reviewbot(
        &[
            "review",
            "--diff",
            path.to_str().unwrap(),
            "--lens",
            "builtin",
            "--format",
            "json",
        ],
        None,
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("is not valid UTF-8"), "{}", stderr(&o));
    let doc = json(&o);
    let findings = doc["findings"].as_array().unwrap();
    let mut at: Vec<(u64, &str)> = findings
        .iter()
        .map(|f| (f["line"].as_u64().unwrap(), f["title"].as_str().unwrap()))
        .collect();
    at.sort();
    assert_eq!(
        at,
        [
            (3, "Possible committed secret (generic-api-key)"),
            (6, "Leftover breakpoint() call")
        ],
        "{findings:#?}"
    );
    // The line quoted is the diff's own: its bytes, the secret masked, and only the
    // undecodable Latin-1 bytes replaced.
    let secret = findings.iter().find(|f| f["line"] == 3).unwrap();
    let body = secret["body"].as_str().unwrap();
    assert!(
        body.contains("`api_key = \"[REDACTED generic-api-key]\"  # r\u{FFFD}sum\u{FFFD}`"),
        "{body}"
    );
}

#[test]
fn a_diff_file_of_megabytes_reads_as_the_same_diff_from_standard_input() {
    // Files from 1 MiB on are read another way (into memory backed by huge pages): the
    // review must be the one the same bytes give on standard input, UTF-8 or not.
    let dir = tempfile::tempdir().unwrap();
    let head = "diff --git a/app.py b/app.py\n--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,3 @@\n \
        # caf\u{e9}\n-old = 1\n+api_key = \"Zx8kQ2mN7vB4pL9w\"\n+breakpoint()\n";
    let pad: String = (0..2200)
        .map(|i| {
            format!(
                "diff --git a/pad{i}.txt b/pad{i}.txt\n--- a/pad{i}.txt\n+++ b/pad{i}.txt\n\
                 @@ -1 +1 @@\n-old\n+{}\n",
                "x".repeat(960)
            )
        })
        .collect();
    let utf8 = format!("{head}{pad}").into_bytes();
    // The same diff with its one accented letter in Latin-1.
    let latin1 = {
        let at = utf8
            .windows(2)
            .position(|w| w == "\u{e9}".as_bytes())
            .unwrap();
        [&utf8[..at], b"\xe9", &utf8[at + 2..]].concat()
    };
    for (name, bytes) in [("utf8.diff", utf8), ("latin1.diff", latin1)] {
        assert!(bytes.len() > 2 << 20);
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        let args = |from| {
            [
                "review", "--diff", from, "--lens", "builtin", "--format", "json",
            ]
        };
        let from_file = reviewbot(&args(path.to_str().unwrap()), None, dir.path());
        let from_stdin = reviewbot(&args("-"), Some(&bytes), dir.path());
        for o in [&from_file, &from_stdin] {
            assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(o));
            assert_eq!(
                stderr(o).contains("is not valid UTF-8"),
                name == "latin1.diff",
                "{name}: {}",
                stderr(o)
            );
        }
        let (mut a, mut b) = (json(&from_file), json(&from_stdin));
        for doc in [&mut a, &mut b] {
            doc["lenses"][0]["latency_ms"] = serde_json::Value::Null;
        }
        assert_eq!(a, b, "{name}");
        let titles: Vec<&str> = a["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["title"].as_str().unwrap())
            .collect();
        assert_eq!(
            titles,
            [
                "Leftover breakpoint() call",
                "Possible committed secret (generic-api-key)"
            ],
            "{name}"
        );
    }
}

#[test]
fn a_coloured_diff_is_exit_2_saying_how_to_get_a_plain_one() {
    let dir = tempfile::tempdir().unwrap();
    // What `git diff --color=always` writes: every header line starts with an escape.
    let coloured = b"\x1b[1mdiff --git a/x b/x\x1b[m\n\x1b[1mindex 1..2 100644\x1b[m\n\
        \x1b[1m--- a/x\x1b[m\n\x1b[1m+++ b/x\x1b[m\n\x1b[36m@@ -1 +1 @@\x1b[m\n\
        \x1b[31m-a\x1b[m\n\x1b[32m+b\x1b[m\n";
    let o = reviewbot(&["review", "--diff", "-"], Some(coloured), dir.path());
    assert_usage_error(&o, "standard input is a coloured diff");
    assert!(stderr(&o).contains("git diff --no-color"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("not a unified diff"), "{}", stderr(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
}

#[test]
fn bad_input_is_exit_2_with_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let o = reviewbot(&["review", "--diff", "nope.patch"], None, d);
    assert_usage_error(
        &o,
        "cannot read diff file nope.patch: No such file or directory",
    );
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));

    let o = reviewbot(
        &["review", "--diff", "-"],
        Some(b"this is not a diff\nat all\n"),
        d,
    );
    assert_usage_error(&o, "standard input is not a diff reviewbot can read");
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));

    let o = reviewbot(
        &["review", "--diff", "-"],
        Some(b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n"),
        d,
    );
    assert_usage_error(&o, "line ");

    // Not named reviewbot.toml, so the later runs in this directory do not pick it up.
    let cfg = d.join("bad.toml");
    std::fs::write(&cfg, "[review]\nmax_coments = 3\n").unwrap();
    let cfg = cfg.display().to_string();
    let o = reviewbot(
        &[
            "review",
            "--diff",
            &fixture("examples/demo.patch"),
            "--config",
            &cfg,
        ],
        None,
        d,
    );
    assert_usage_error(&o, "line 2: unknown field `max_coments`");

    let o = reviewbot(
        &[
            "review",
            "--diff",
            &fixture("examples/demo.patch"),
            "--config",
            "missing.toml",
        ],
        None,
        d,
    );
    assert_usage_error(&o, "cannot read config missing.toml");

    let o = reviewbot(
        &[
            "review",
            "--diff",
            &fixture("examples/demo.patch"),
            "--format",
            "yaml",
        ],
        None,
        d,
    );
    assert_usage_error(&o, "invalid value 'yaml' for '--format");

    let o = reviewbot(
        &[
            "review",
            "--diff",
            &fixture("examples/demo.patch"),
            "--lens",
            "ghost",
        ],
        None,
        d,
    );
    assert_usage_error(&o, "unknown lens `ghost`");

    let o = reviewbot(&["review"], None, d);
    assert_usage_error(&o, "--diff");
}

#[test]
fn reviewbot_config_env_is_honoured() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(
        dir.path(),
        &command_lens("alpha", "tests/fixtures/cli/lens-a.sh", ""),
    );
    let o = Command::new(env!("CARGO_BIN_EXE_reviewbot"))
        .args([
            "review",
            "--diff",
            &fixture("tests/fixtures/cli/query.diff"),
            "--format",
            "json",
        ])
        .current_dir(dir.path())
        .env("REVIEWBOT_CONFIG", &cfg)
        .env_remove("GITHUB_ACTIONS")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json(&o)["lenses"][0]["lens"], "alpha");
}

#[test]
fn the_workspace_config_is_not_read_inside_github_actions() {
    let dir = tempfile::tempdir().unwrap();
    config(
        dir.path(),
        &command_lens("alpha", "tests/fixtures/cli/lens-a.sh", ""),
    );
    let run = |actions: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_reviewbot"));
        cmd.args([
            "review",
            "--diff",
            &fixture("tests/fixtures/cli/query.diff"),
            "--format",
            "json",
        ])
        .current_dir(dir.path())
        .env_remove("REVIEWBOT_CONFIG");
        if actions {
            cmd.env("GITHUB_ACTIONS", "true");
        } else {
            cmd.env_remove("GITHUB_ACTIONS");
        }
        json(&cmd.output().unwrap())["lenses"][0]["lens"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(run(false), "alpha");
    assert_eq!(run(true), "builtin");
}

// ---- doctor ----

#[test]
fn doctor_exits_3_when_a_lens_cannot_run() {
    let dir = tempfile::tempdir().unwrap();
    let run = |config: &str| {
        let path = dir.path().join("doctor.toml");
        std::fs::write(&path, config).unwrap();
        Command::new(env!("CARGO_BIN_EXE_reviewbot"))
            .args(["doctor", "--config", &path.display().to_string()])
            .current_dir(dir.path())
            .env_remove("GITHUB_TOKEN")
            .env_remove("GITHUB_REPOSITORY")
            .env_remove("ANTHROPIC_API_KEY")
            .output()
            .unwrap()
    };
    let o = run("[[lens]]\nname = \"mine\"\nbackend = \"command\"\nbin = \"/bin/sh\"\n");
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("All checks passed."), "{}", stdout(&o));
    let o = run(
        "[[lens]]\nname = \"api\"\nbackend = \"anthropic\"\nmodel = \"claude-sonnet-5\"\n[[lens]]\nname = \"gone\"\nbackend = \"command\"\nbin = \"/nonexistent/reviewer\"\n",
    );
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(
        out.contains("FAIL lens api") && out.contains("ANTHROPIC_API_KEY"),
        "{out}"
    );
    assert!(
        out.contains("FAIL lens gone") && out.contains("/nonexistent/reviewer"),
        "{out}"
    );
    assert!(out.trim_end().ends_with("2 of 4 checks failed."), "{out}");
}

/// `RUST_LOG=reviewbot::timing=debug` logs each stage of a review once, in order, with the time
/// since start (what `scripts/bench-stages.sh` reads); without it, nothing is logged.
#[test]
fn stage_timings_are_logged_in_order_when_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let patch = fixture("examples/demo.patch");
    let args = ["review", "--diff", patch.as_str(), "--format", "json"];
    let o = Command::new(env!("CARGO_BIN_EXE_reviewbot"))
        .args(args)
        .current_dir(dir.path())
        .env_remove("REVIEWBOT_CONFIG")
        .env_remove("GITHUB_ACTIONS")
        .env("RUST_LOG", "reviewbot::timing=debug")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let marks: Vec<(String, u64)> = stderr(&o)
        .lines()
        .filter_map(|l| {
            let stage = l.split("stage=\"").nth(1)?.split('"').next()?;
            let us = l.split("us=").nth(1)?.trim().parse().ok()?;
            Some((stage.to_owned(), us))
        })
        .collect();
    let stages: Vec<&str> = marks.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(
        stages,
        [
            "read",
            "parsed",
            "gated",
            "secrets remembered",
            "lenses done",
            "placed and merged",
            "reviewed",
            "rendered"
        ]
    );
    assert!(marks.windows(2).all(|w| w[0].1 <= w[1].1), "{marks:?}");
    let quiet = reviewbot(&args, None, dir.path());
    assert!(!stderr(&quiet).contains("stage done"), "{}", stderr(&quiet));
}
