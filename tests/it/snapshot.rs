//! The round's repository snapshot end to end: `review --pr` downloads GitHub's archive once per
//! round (through the fake's redirect to its archive host), extracts it safely, removes it when
//! the round ends, and falls back to the diff alone — never a failed round — when anything goes
//! wrong. `review --diff --checkout DIR` points the lenses at the user's directory.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};

use crate::fake_github::{FakeGithub, Fault, Route, TreeEntry, sha};
use crate::pr::{REPO, Run, TOKEN, json, lens, stderr, world};

/// The archive host's route of PR #7's head.
fn codeload_route() -> Route {
    Route::prefix("GET", "/octo/app/legacy.tar.gz/")
}

fn tarball_route() -> Route {
    Route::prefix("GET", &format!("/repos/{REPO}/tarball/"))
}

/// A run whose snapshots go below its own `tmp` (the binary's `TMPDIR`).
struct Site {
    run: Run,
}

impl Site {
    fn new(config: &str) -> Site {
        let run = Run::new(config);
        std::fs::create_dir(run.dir.path().join("tmp")).unwrap();
        Site { run }
    }

    fn dir(&self) -> &Path {
        self.run.dir.path()
    }

    fn tmp(&self) -> PathBuf {
        self.dir().join("tmp")
    }

    /// `reviewbot review --pr 7 --post --format json <args>` with the App's token.
    fn review(&self, fake: &FakeGithub, args: &[&str]) -> Output {
        let mut cmd =
            self.run
                .review_command(fake, Some(TOKEN), 7, &["--post", "--format", "json"]);
        cmd.args(args).env("TMPDIR", self.tmp());
        cmd.output().unwrap()
    }

    /// Configures one lens, `peek` (see [`Self::peeking_lens`]), and `extra`; returns the config.
    fn peek_only(&self, extra: &str) -> String {
        let config = format!(
            "{}\n[review]\nlenses = [\"peek\"]\n{extra}",
            self.peeking_lens("peek", 0)
        );
        self.configure(&config);
        config
    }

    /// [`Self::review`], which must exit 0.
    fn review_ok(&self, fake: &FakeGithub, args: &[&str]) -> Output {
        let o = self.review(fake, args);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        o
    }

    fn configure(&self, config: &str) {
        std::fs::write(self.dir().join("reviewbot.toml"), config).unwrap();
    }

    /// Every snapshot directory left below `tmp`.
    fn leftovers(&self) -> Vec<PathBuf> {
        let Ok(parents) = std::fs::read_dir(self.tmp()) else {
            return Vec::new();
        };
        parents
            .filter_map(Result::ok)
            .flat_map(|p| std::fs::read_dir(p.path()).into_iter().flatten())
            .filter_map(Result::ok)
            .map(|e| e.path())
            .collect()
    }

    /// What lens `name` saw of the snapshot while it ran.
    fn seen(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir().join(format!("seen-{name}.txt"))).unwrap_or_default()
    }

    /// A command lens that lists the snapshot directory while it runs (and tries to read
    /// `key.pem` through it), answers no findings and exits `code`.
    fn peeking_lens(&self, name: &str, code: i32) -> String {
        let script = self.dir().join(format!("{name}.sh"));
        let seen = self.dir().join(format!("seen-{name}.txt"));
        let snapshots = format!("{}/reviewbot-snapshots-*", self.tmp().display());
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\ncat >/dev/null\nls -laR {snapshots}/ > '{seen}' 2>&1\ncat {snapshots}/*/key.pem {snapshots}/*/hard >> '{seen}' 2>&1\necho '{{\"findings\":[]}}'\nexit {code}\n",
                seen = seen.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        lens(name, &script)
    }
}

const KEY_TEXT: &str = "-----BEGIN RSA PRIVATE KEY----- not-for-lenses\n";

fn context(o: &Output) -> Value {
    json(o)["context"].clone()
}

#[test]
fn two_lenses_share_one_download_and_the_snapshot_is_gone_after_the_round() {
    let fake = world();
    let site = Site::new("");
    site.configure(&format!(
        "{}{}\n[review]\nlenses = [\"one\", \"two\"]\n",
        site.peeking_lens("one", 0),
        site.peeking_lens("two", 0)
    ));
    let evidence = site.dir().join("evidence");
    let o = site.review_ok(&fake, &["--evidence", &evidence.display().to_string()]);
    assert_eq!(json(&o)["posted"], true);
    // The head's two files, from the archive.
    assert_eq!(
        context(&o),
        serde_json::json!({"source": "tarball", "files": 2, "bytes": context(&o)["bytes"],
                           "left_out": 0, "note": null})
    );
    assert!(context(&o)["bytes"].as_u64().unwrap() > 20);
    // One redirect and one download for two lenses; no token crossed to the archive host.
    assert_eq!(fake.archive_requests(REPO), (1, 1));
    assert_eq!(fake.codeload_authorized(), 0);
    let download = fake
        .requests()
        .into_iter()
        .find(|r| r.path.contains("legacy.tar.gz"))
        .expect("a download");
    assert_eq!(download.token, None);
    // Both lenses saw the snapshot while they ran; it is gone now.
    for name in ["one", "two"] {
        let seen = site.seen(name);
        assert!(
            seen.contains("main.rs") && seen.contains("work.py"),
            "{name}: {seen}"
        );
    }
    assert!(site.leftovers().is_empty(), "{:?}", site.leftovers());
    // The evidence says what the lenses had.
    let log = std::fs::read_dir(&evidence)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect::<String>();
    let record: Value = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["kind"] == "context")
        .expect("a context record");
    assert_eq!(record["source"], "tarball");
    assert_eq!(record["files"], 2);
}

#[test]
fn a_hostile_archive_writes_nothing_outside_and_its_left_outs_are_counted() {
    let fake = world();
    let site = Site::new("");
    let secret = site.dir().join("app-key.pem");
    std::fs::write(&secret, KEY_TEXT).unwrap();
    let escape = site.dir().join("escaped.txt");
    fake.set_tree(
        REPO,
        &sha("head"),
        vec![
            TreeEntry::file("src/main.rs", "fn main() {}\n"),
            TreeEntry::Symlink("key.pem".into(), secret.display().to_string()),
            TreeEntry::HardLink("hard".into(), secret.display().to_string()),
            TreeEntry::Symlink("out".into(), site.dir().display().to_string()),
            TreeEntry::file("out/escaped.txt", "inside\n"),
            TreeEntry::Fifo("fifo".into()),
            TreeEntry::RawName("../../escaped.txt".into(), b"x".to_vec()),
            TreeEntry::RawName(escape.display().to_string(), b"x".to_vec()),
        ],
    );
    site.peek_only("");
    let o = site.review_ok(&fake, &[]);
    let ctx = context(&o);
    assert_eq!(ctx["source"], "tarball");
    assert_eq!(ctx["files"], 2, "{ctx}");
    assert_eq!(ctx["left_out"], 6, "{ctx}");
    assert_eq!(
        ctx["note"],
        "the snapshot leaves out 6 entries of the archive: 3 symbolic or hard links, 1 special \
         file, 2 entries with unsafe or taken names"
    );
    assert!(
        stderr(&o).contains("notice: the snapshot leaves out 6 entries"),
        "{}",
        stderr(&o)
    );
    // The lens could not read the key through the snapshot, and nothing landed outside it.
    let seen = site.seen("peek");
    assert!(seen.contains("main.rs"), "{seen}");
    assert!(!seen.contains("not-for-lenses"), "{seen}");
    assert!(!seen.contains("->"), "a link in the snapshot: {seen}");
    assert!(!escape.exists());
    assert!(!site.tmp().join("escaped.txt").exists());
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), KEY_TEXT);
    assert!(site.leftovers().is_empty());
}

#[test]
fn a_failing_download_means_the_diff_alone_and_the_round_still_posts() {
    let cases: [(Route, Fault, u32, &str); 5] = [
        (
            tarball_route(),
            Fault::status(404),
            1,
            "GitHub refused the repository's archive",
        ),
        (
            tarball_route(),
            Fault::status(502),
            3,
            "the repository's archive could not be downloaded",
        ),
        (
            codeload_route(),
            Fault::status(503),
            3,
            "the repository's archive could not be downloaded",
        ),
        (
            codeload_route(),
            Fault::Raw {
                status: 200,
                content_type: "application/x-gzip".into(),
                body: "<html>not a gzip</html>".into(),
            },
            1,
            "the repository's archive could not be read",
        ),
        (
            codeload_route(),
            Fault::Truncated,
            1,
            "the repository's archive could not be downloaded",
        ),
    ];
    for (route, fault, times, why) in cases {
        let fake = world();
        fake.fail_next(route.clone(), fault.clone(), times);
        let err = diff_alone(&fake, "", why);
        assert!(
            err.contains("notice: the lenses review from the diff alone"),
            "{fault:?}: {err}"
        );
        assert_eq!(fake.codeload_authorized(), 0);
    }
}

/// Reviews PR #7 with one model lens and `extra` config; asserts the round posted from the
/// diff alone, for a reason that says `why`, and left nothing behind. Returns stderr.
fn diff_alone(fake: &FakeGithub, extra: &str, why: &str) -> String {
    let site = Site::new("");
    site.peek_only(extra);
    let o = site.review(fake, &[]);
    assert_eq!(o.status.code(), Some(0), "{why}: {}", stderr(&o));
    let doc = json(&o);
    assert_eq!(doc["posted"], true, "{why}");
    let ctx = &doc["context"];
    assert_eq!(ctx["source"], Value::Null, "{why}");
    let note = ctx["note"].as_str().unwrap_or_default();
    assert!(
        note.starts_with("the lenses reviewed from the diff alone: ") && note.contains(why),
        "{why}: {note}"
    );
    assert_eq!(fake.reviews(REPO, 7).len(), 1, "{why}");
    assert!(site.leftovers().is_empty(), "{why}: {:?}", site.leftovers());
    stderr(&o)
}

#[test]
fn over_a_cap_the_round_goes_on_from_the_diff_alone_naming_the_cap() {
    for (cap, says) in [
        (
            "max_snapshot = \"10B\"",
            "larger than max_snapshot = 10 bytes",
        ),
        (
            "max_snapshot_files = 1",
            "more than max_snapshot_files = 1 entries",
        ),
    ] {
        diff_alone(&world(), &format!("[context]\n{cap}\n"), says);
    }
}

#[test]
fn no_download_for_the_builtin_lens_a_skipped_round_or_a_snapshot_turned_off() {
    // The builtin lens alone reads the diff.
    let fake = world();
    let site = Site::new("");
    let o = site.review_ok(&fake, &["--lens", "builtin"]);
    assert_eq!(fake.archive_requests(REPO), (0, 0));
    assert_eq!(context(&o)["note"], Value::Null);
    assert!(!stderr(&o).contains("diff alone"), "{}", stderr(&o));

    // A round the gate skips.
    let fake = world();
    fake.set_labels(REPO, 7, &["reviewbot:no-review"]);
    let config = site.peek_only("");
    site.review_ok(&fake, &[]);
    assert_eq!(fake.archive_requests(REPO), (0, 0));

    // Turned off by the operator, or by the repository's own file: said in the JSON only.
    for (operator, repository) in [
        ("[context]\nenabled = false\n", None),
        ("", Some("[context]\nenabled = false\n")),
    ] {
        let fake = world();
        if let Some(text) = repository {
            fake.add_file_content(REPO, "main", ".github/reviewbot.toml", text);
        }
        site.configure(&format!("{config}{operator}"));
        let o = site.review_ok(&fake, &[]);
        assert_eq!(fake.archive_requests(REPO), (0, 0));
        assert_eq!(
            context(&o)["note"],
            "the lenses reviewed from the diff alone: the snapshot is turned off ([context] \
             enabled = false)"
        );
        assert!(!stderr(&o).contains("diff alone"), "{}", stderr(&o));
    }

    // A repository cannot raise a cap.
    let fake = world();
    fake.add_file_content(
        REPO,
        "main",
        ".github/reviewbot.toml",
        "[context]\nmax_snapshot = \"9GB\"\n",
    );
    let o = site.review(&fake, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("max_snapshot"), "{}", stderr(&o));
}

#[test]
fn a_failed_round_removes_its_snapshot_too() {
    let fake = world();
    let site = Site::new("");
    let config = format!(
        "{}\n[review]\nlenses = [\"broken\"]\n",
        site.peeking_lens("broken", 1)
    );
    site.configure(&config);
    let o = site.review(&fake, &[]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        site.seen("broken").contains("main.rs"),
        "{}",
        site.seen("broken")
    );
    assert!(site.leftovers().is_empty(), "{:?}", site.leftovers());
    assert!(fake.reviews(REPO, 7).is_empty());
}

// ---- review --diff --checkout ----

fn diff_review(dir: &Path, args: &[&str]) -> Output {
    crate::cli::reviewbot(
        &[
            &[
                "review",
                "--diff",
                &crate::cli::fixture("examples/demo.patch"),
            ],
            args,
        ]
        .concat(),
        None,
        dir,
    )
}

#[test]
fn checkout_must_be_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file.txt");
    std::fs::write(&file, "x").unwrap();
    let o = diff_review(dir.path(), &["--checkout", &file.display().to_string()]);
    assert_eq!(o.status.code(), Some(2));
    let err = crate::cli::stderr(&o);
    assert!(
        err.contains("--checkout") && err.contains("file.txt") && err.contains("not a directory"),
        "{err}"
    );
    let o = diff_review(dir.path(), &["--checkout", "missing-dir"]);
    assert_eq!(o.status.code(), Some(2));
    let err = crate::cli::stderr(&o);
    assert!(
        err.contains("missing-dir") && err.contains("No such file"),
        "{err}"
    );
    // Only with --diff.
    let o = crate::cli::reviewbot(
        &["review", "--pr", "1", "--checkout", "."],
        None,
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn checkout_is_the_context_and_without_it_a_model_lens_hears_why_once() {
    let dir = tempfile::tempdir().unwrap();
    let script = crate::pr::quiet_lens(dir.path());
    let config = crate::cli::config(
        dir.path(),
        &format!("{}{}", lens("a", &script), lens("b", &script)),
    );
    let checkout = dir.path().display().to_string();

    let o = diff_review(
        dir.path(),
        &[
            "--config",
            &config,
            "--format",
            "json",
            "--checkout",
            &checkout,
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", crate::cli::stderr(&o));
    let ctx = &crate::cli::json(&o)["context"];
    assert_eq!(ctx["source"], "checkout");
    assert_eq!(ctx["note"], Value::Null);
    assert!(!crate::cli::stderr(&o).contains("diff alone"));
    assert!(
        dir.path().join("quiet.sh").exists(),
        "a checkout is never removed"
    );

    let o = diff_review(dir.path(), &["--config", &config, "--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", crate::cli::stderr(&o));
    let err = crate::cli::stderr(&o);
    assert_eq!(
        err.matches("notice: the lenses review from the diff alone")
            .count(),
        1,
        "{err}"
    );
    assert!(err.contains("--checkout DIR"), "{err}");
    let ctx = &crate::cli::json(&o)["context"];
    assert_eq!(ctx["source"], Value::Null);
    assert!(ctx["note"].as_str().unwrap().contains("--checkout"));

    // The builtin lens alone: nothing to say.
    let o = diff_review(dir.path(), &["--lens", "builtin"]);
    assert!(!crate::cli::stderr(&o).contains("diff alone"));
}

// ---- findings anchored by what they quote ----

/// A lens whose line numbers are off by 3 gets its comments on the right lines; one quoting code
/// the file does not hold is dropped as unfounded; a small whole fix is a suggestion block.
#[test]
fn quotes_anchor_findings_and_drop_unfounded_ones_and_suggestions_are_posted() {
    use super::hardening::echo_lens;
    let dir = tempfile::tempdir().unwrap();
    let checkout = dir.path().join("checkout");
    std::fs::create_dir_all(checkout.join("src")).unwrap();
    let mut lines: Vec<String> = (1..=30).map(|n| format!("// line {n}")).collect();
    lines[19] = "    let total = price * qty;".to_owned();
    std::fs::write(checkout.join("src/cart.rs"), lines.join("\n") + "\n").unwrap();
    let mut patch = String::from(
        "diff --git a/src/cart.rs b/src/cart.rs\nnew file mode 100644\n--- /dev/null\n+++ b/src/cart.rs\n@@ -0,0 +1,30 @@\n",
    );
    for l in &lines {
        patch.push_str(&format!("+{l}\n"));
    }
    let diff = dir.path().join("cart.diff");
    std::fs::write(&diff, patch).unwrap();
    let finding = |line: u32, title: &str, quote: &str, suggestion: Value| {
        json!({"path": "src/cart.rs", "line": line, "start_line": null, "side": "RIGHT",
               "severity": "advisory", "confidence": "high", "title": title,
               "body": "Why.", "quote": quote, "suggestion": suggestion})
    };
    let cfg = echo_lens(
        dir.path(),
        &json!({"findings": [
            finding(23, "The total can overflow", "let total = price * qty;",
                    json!("    let total = price.checked_mul(qty)?;")),
            finding(12, "Tax is never added", "let total = price + tax;", Value::Null),
        ], "summary": "Read src/cart.rs."}),
    );
    let run = |format: &str| {
        diff_review_file(
            dir.path(),
            &diff,
            &[
                "--checkout",
                &checkout.display().to_string(),
                "--config",
                &cfg,
                "--format",
                format,
            ],
        )
    };
    let o = run("json");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let findings = doc["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{doc:#}");
    assert_eq!(findings[0]["line"], 20, "moved from 23 to the quoted line");
    assert_eq!(findings[0]["in_diff"], true);
    assert_eq!(doc["dropped_unfounded"], 1);
    assert_eq!(
        findings[0]["suggestion"],
        "    let total = price.checked_mul(qty)?;"
    );
    let md = String::from_utf8_lossy(&run("markdown").stdout).into_owned();
    insta::assert_snapshot!("quoted_finding_with_suggestion", md);
}

/// A suggestion is the complete replacement of its lines, one line or ten: each is posted as a
/// block whose lines are the lens's own, tabs kept. A CRLF file's lines reach the lens without
/// their `\r` (the diff's line ending), so a replacement written with `\r\n` breaks is the same
/// text: posted with the block's own `\n` breaks. A `\r` inside a line is a control character
/// (a line break to the Actions runner): that suggestion is dropped, its prose kept.
#[test]
fn suggestions_of_one_to_ten_lines_with_tabs_or_crlf_are_posted() {
    use super::hardening::echo_lens;
    let dir = tempfile::tempdir().unwrap();
    let checkout = dir.path().join("checkout");
    std::fs::create_dir_all(checkout.join("src")).unwrap();
    let rs: Vec<String> = (1..=60).map(|n| format!("    let x{n} = {n};")).collect();
    let go: Vec<String> = (1..=8).map(|n| format!("\tx{n} := {n}")).collect();
    let cs: Vec<String> = (1..=8).map(|n| format!("    int x{n} = {n};")).collect();
    let mut patch = String::new();
    for (path, lines, eol) in [
        ("src/a.rs", &rs, "\n"),
        ("src/t.go", &go, "\n"),
        ("src/w.cs", &cs, "\r\n"),
    ] {
        std::fs::write(checkout.join(path), lines.join(eol) + eol).unwrap();
        patch.push_str(&format!(
            "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n",
            lines.len()
        ));
        for l in lines {
            patch.push_str(&format!("+{l}{eol}"));
        }
    }
    let diff = dir.path().join("change.diff");
    std::fs::write(&diff, patch).unwrap();

    let replace = |from: u32, to: u32, indent: &str, eol: &str| -> String {
        (from..=to)
            .map(|n| format!("{indent}let x{n} = {n}u64;"))
            .collect::<Vec<_>>()
            .join(eol)
    };
    let finding = |path: &str, start: u32, line: u32, title: &str, suggestion: &str| {
        json!({"path": path, "line": line, "start_line": (start != line).then_some(start),
               "side": "RIGHT", "severity": "advisory", "confidence": "high", "title": title,
               "body": "Why.", "quote": null, "suggestion": suggestion})
    };
    let one = replace(5, 5, "    ", "\n");
    let two = replace(24, 25, "    ", "\n");
    let ten = replace(40, 49, "    ", "\n") + "\n";
    let tabs = "\tx3 := uint(3)\n\tx4 := uint(4)";
    let crlf = "    long x2 = 2;\r\n    long x3 = 3;\r\n";
    let bare_cr = "    long x6 = 6;\r    long x6b = 7;";
    let cfg = echo_lens(
        dir.path(),
        &json!({"findings": [
            finding("src/a.rs", 5, 5, "One line", &one),
            finding("src/a.rs", 24, 25, "Two lines", &two),
            finding("src/a.rs", 40, 49, "Ten lines", &ten),
            finding("src/t.go", 3, 4, "Tabs", tabs),
            finding("src/w.cs", 2, 3, "Windows line endings", crlf),
            finding("src/w.cs", 6, 6, "A carriage return inside a line", bare_cr),
        ], "summary": "Read the files."}),
    );
    let run = |format: &str| {
        let checkout = checkout.display().to_string();
        let args = [
            "--checkout",
            &checkout,
            "--config",
            &cfg,
            "--format",
            format,
        ];
        let o = diff_review_file(dir.path(), &diff, &args);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let doc: Value = serde_json::from_str(&run("json")).unwrap();
    let suggestion_of = |title: &str| {
        let found = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["title"] == title);
        found.unwrap_or_else(|| panic!("no {title}: {doc:#}"))["suggestion"].clone()
    };
    let want = [
        ("One line", json!(one)),
        ("Two lines", json!(two)),
        ("Ten lines", json!(ten)),
        ("Tabs", json!(tabs)),
        (
            "Windows line endings",
            json!("    long x2 = 2;\n    long x3 = 3;\n"),
        ),
        ("A carriage return inside a line", Value::Null),
    ];
    for (title, suggestion) in &want {
        assert_eq!(&suggestion_of(title), suggestion, "{title}");
    }

    // Posted as blocks holding exactly those lines.
    let md = run("markdown");
    for (title, suggestion) in &want {
        let Some(text) = suggestion.as_str() else {
            continue;
        };
        let block = format!(
            "```suggestion\n{}\n```\n",
            text.strip_suffix('\n').unwrap_or(text)
        );
        assert!(md.contains(&block), "{title}: {block:?} not in\n{md}");
    }
    assert_eq!(md.matches("```suggestion\n").count(), 5, "{md}");
    assert!(!md.contains('\r'), "{md:?}");
    assert!(
        md.contains("A carriage return inside a line"),
        "the prose stays"
    );
}

fn diff_review_file(dir: &Path, diff: &Path, args: &[&str]) -> Output {
    let diff = diff.display().to_string();
    let mut all = vec!["review", "--diff", diff.as_str()];
    all.extend_from_slice(args);
    super::cli::reviewbot(&all, None, dir)
}
