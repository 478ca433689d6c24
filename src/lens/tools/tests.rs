use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tempfile::TempDir;

use super::*;

/// What the outside files hold; no result of any tool may ever show it.
const MARKER: &str = "APP-KEY-MARKER-7f3a9c";

struct Fixture {
    root: TempDir,
    _outside: TempDir,
    tools: RepoTools,
}

fn write(root: &Path, rel: &str, body: impl AsRef<[u8]>) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, body).unwrap();
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

/// A repository with every kind of entry that could lead outside it, next to an outside
/// directory holding a fake App key.
fn fixture() -> Fixture {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("app-key.pem");
    fs::write(
        &secret,
        format!("-----BEGIN KEY-----\n{MARKER}\nfn parse_key\n"),
    )
    .unwrap();
    write(
        outside.path(),
        "dir/inner.rs",
        format!("fn parse_inner() {{ \"{MARKER}\" }}\n"),
    );

    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    write(r, "README.md", "# widgets\n\nParses widgets.\n");
    write(
        r,
        "src/lib.rs",
        "pub mod parse;\n\npub fn run() {\n    parse::parse_all();\n}\n",
    );
    write(
        r,
        "src/parse.rs",
        "pub fn parse_all() {}\r\nfn parse_one() {}\r\n",
    );
    write(r, "src/empty.rs", "");
    write(r, "docs/guide.md", "Call parse_all first.\n");
    write(
        r,
        ".git/config",
        format!("[remote]\n  url = https://x:{MARKER}@example.com/\n  fn parse_git\n"),
    );
    write(
        r,
        "vendor/sub/.git",
        format!("gitdir: ../../.git/modules/sub {MARKER}\n"),
    );
    write(r, "logo.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR fn parse_png");
    symlink(&secret, r.join("link_out")).unwrap();
    symlink("README.md", r.join("link_in")).unwrap();
    symlink(outside.path().join("dir"), r.join("dir_out")).unwrap();
    symlink("/proc/self/environ", r.join("environ")).unwrap();
    fs::hard_link(&secret, r.join("hard")).unwrap();
    mkfifo(&r.join("pipe"));
    let tools = RepoTools::new(r, ToolLimits::default());
    Fixture {
        root,
        _outside: outside,
        tools,
    }
}

/// The fixture's tools with other caps.
fn capped(f: &Fixture, change: impl FnOnce(&mut ToolLimits)) -> RepoTools {
    let mut limits = ToolLimits::default();
    change(&mut limits);
    RepoTools::new(f.root.path(), limits)
}

fn read(tools: &RepoTools, path: &str) -> ToolResult {
    tools.call(
        READ_FILE,
        &json!({"path": path, "start_line": null, "end_line": null}),
    )
}

fn assert_refused(result: &ToolResult, why: &str) {
    assert!(result.is_error, "not refused: {result:?}");
    assert!(
        result.content.contains(why),
        "{why:?} not in {:?}",
        result.content
    );
    assert!(!result.content.contains(MARKER));
}

#[test]
fn reads_numbered_lines_with_the_total() {
    let f = fixture();
    let r = read(&f.tools, "README.md");
    assert!(!r.is_error && !r.capped);
    assert_eq!(
        r.content,
        "1\t# widgets\n2\t\n3\tParses widgets.\n[lines 1-3 of 3]"
    );
    assert_eq!(r.bytes, r.content.len());
    // A leading `./` and CRLF line ends.
    let r = read(&f.tools, "./src/parse.rs");
    assert_eq!(
        r.content,
        "1\tpub fn parse_all() {}\n2\tfn parse_one() {}\n[lines 1-2 of 2]"
    );
    let r = read(&f.tools, "src/empty.rs");
    assert_eq!(r.content, "[`src/empty.rs` is empty]");
}

#[test]
fn a_line_range_is_clamped_and_checked() {
    let f = fixture();
    let call = |start: Value, end: Value| {
        f.tools.call(
            READ_FILE,
            &json!({"path": "src/lib.rs", "start_line": start, "end_line": end}),
        )
    };
    let r = call(json!(2), json!(3));
    assert_eq!(r.content, "2\t\n3\tpub fn run() {\n[lines 2-3 of 5]");
    let r = call(json!(4), json!(400));
    assert_eq!(
        r.content,
        "4\t    parse::parse_all();\n5\t}\n[lines 4-5 of 5]"
    );
    let r = call(json!(0), json!(1));
    assert_eq!(r.content, "1\tpub mod parse;\n[lines 1-1 of 5]");
    let r = call(json!(9), Value::Null);
    assert!(r.is_error);
    assert_eq!(
        r.content,
        "read_file: start_line 9 is past the end: `src/lib.rs` has 5 lines"
    );
    let r = call(json!(3), json!(2));
    assert!(r.is_error);
    assert_eq!(r.content, "read_file: end_line 2 is before start_line 3");
}

#[test]
fn links_out_of_the_tree_are_refused_by_every_tool() {
    let f = fixture();
    for path in [
        "link_out",
        "link_in",
        "dir_out/inner.rs",
        "dir_out",
        "environ",
        "hard",
    ] {
        let r = read(&f.tools, path);
        assert!(r.is_error, "{path}: {r:?}");
        assert!(!r.content.contains(MARKER), "{path}: {r:?}");
    }
    assert_refused(&read(&f.tools, "link_out"), "`link_out` is a symbolic link");
    // Refused even though it points inside.
    assert_refused(&read(&f.tools, "link_in"), "`link_in` is a symbolic link");
    assert_refused(
        &read(&f.tools, "dir_out/inner.rs"),
        "`dir_out` is a symbolic link",
    );
    assert_refused(
        &read(&f.tools, "hard"),
        "`hard` has more than one hard link",
    );
    for (tool, args) in [
        (GREP, json!({"pattern": "MARKER|parse", "path": null})),
        (GREP, json!({"pattern": ".", "path": "dir_out"})),
        (GREP, json!({"pattern": ".", "path": "dir_out/*.rs"})),
        (GREP, json!({"pattern": "KEY", "path": "link_out"})),
        (GREP, json!({"pattern": "KEY", "path": "hard"})),
        (GREP, json!({"pattern": "KEY", "path": "*"})),
        (LIST_FILES, json!({"path": null})),
        (LIST_FILES, json!({"path": "dir_out"})),
        (LIST_FILES, json!({"path": "**"})),
    ] {
        let r = f.tools.call(tool, &args);
        assert!(!r.content.contains(MARKER), "{tool} {args}: {r:?}");
        assert!(!r.content.contains("inner.rs"), "{tool} {args}: {r:?}");
        assert!(!r.content.contains("parse_key"), "{tool} {args}: {r:?}");
    }
}

#[test]
fn parent_and_absolute_paths_are_refused_before_any_lookup() {
    let f = fixture();
    let outside = f._outside.path().join("app-key.pem");
    assert_refused(&read(&f.tools, "../app-key.pem"), "contains `..`");
    assert_refused(&read(&f.tools, "src/../../x"), "contains `..`");
    assert_refused(&read(&f.tools, "src/.."), "contains `..`");
    assert_refused(&read(&f.tools, outside.to_str().unwrap()), "is absolute");
    assert_refused(&read(&f.tools, "/proc/self/environ"), "is absolute");
    assert_refused(&read(&f.tools, "/etc/hostname"), "is absolute");
    assert_refused(&read(&f.tools, "src/lib.rs\0"), "NUL");
    for (path, why) in [("../", "contains `..`"), ("/proc/self/*", "is absolute")] {
        let r = f.tools.call(GREP, &json!({"pattern": "x", "path": path}));
        assert_refused(&r, why);
        let r = f.tools.call(LIST_FILES, &json!({"path": path}));
        assert_refused(&r, why);
    }
    // The refusal names the model's path, never where the root is on this machine.
    let root = f.root.path().to_str().unwrap();
    assert!(!read(&f.tools, "nope/x.rs").content.contains(root));
}

#[test]
fn special_files_and_directories_are_not_read() {
    let f = fixture();
    // Would block forever if it were opened for reading.
    assert_refused(&read(&f.tools, "pipe"), "`pipe` is not a regular file");
    assert_refused(&read(&f.tools, "src"), "`src` is a directory");
    assert_refused(&read(&f.tools, ""), "`.` is a directory");
    for tool in [GREP, LIST_FILES] {
        let args = if tool == GREP {
            json!({"pattern": "x", "path": "pipe"})
        } else {
            json!({"path": "pipe"})
        };
        assert_refused(&f.tools.call(tool, &args), "`pipe` is not a regular file");
        let args = if tool == GREP {
            json!({"pattern": "KEY", "path": "hard"})
        } else {
            json!({"path": "hard"})
        };
        assert_refused(
            &f.tools.call(tool, &args),
            "`hard` has more than one hard link",
        );
    }
    assert_refused(&read(&f.tools, "nope.rs"), "`nope.rs` does not exist");
    assert_refused(
        &read(&f.tools, "README.md/x"),
        "`README.md` is not a directory",
    );
    // A walk passes a FIFO by without opening it.
    let r = f.tools.call(GREP, &json!({"pattern": "x", "path": null}));
    assert!(r.content.contains("1 special file"), "{}", r.content);
}

#[test]
fn dot_git_is_neither_read_nor_searched_nor_listed() {
    let f = fixture();
    for path in [
        ".git/config",
        ".GIT/config",
        "./.git/config",
        "vendor/sub/.git",
        ".git",
    ] {
        assert_refused(&read(&f.tools, path), "inside .git/");
    }
    let r = f
        .tools
        .call(GREP, &json!({"pattern": "parse_", "path": null}));
    assert!(!r.content.contains(".git"), "{}", r.content);
    assert!(!r.content.contains("parse_git"));
    let r = f.tools.call(LIST_FILES, &json!({"path": null}));
    assert!(!r.content.contains(".git"), "{}", r.content);
}

#[test]
fn binary_files_answer_their_size() {
    let f = fixture();
    let r = read(&f.tools, "logo.png");
    assert!(!r.is_error);
    assert_eq!(r.content, "binary file, 29 bytes; not shown");
    let r = f
        .tools
        .call(GREP, &json!({"pattern": "parse_png", "path": null}));
    assert!(r.content.starts_with("no matches"), "{}", r.content);
    assert!(r.content.contains("1 binary"), "{}", r.content);
}

#[test]
fn a_huge_file_is_capped_and_says_how_to_read_on() {
    let f = fixture();
    let body: String = (1..=5000).map(|n| format!("line {n}\n")).collect();
    write(f.root.path(), "big.txt", &body);
    let r = read(&f.tools, "big.txt");
    assert!(r.capped && !r.is_error);
    assert!(r.content.starts_with("1\tline 1\n"));
    assert!(r.content.contains("2000\tline 2000\n"));
    assert!(!r.content.contains("2001\t"));
    assert!(
        r.content.ends_with("[lines 1-2000 of 5000; cut at 2000 lines or 64 KiB: call read_file with start_line 2001 for the rest]"),
        "{}",
        &r.content[r.content.len() - 200..]
    );
    // The byte cap: 2,000 lines of 100 bytes do not fit in 64 KiB.
    let wide: String = (1..=2000).map(|n| format!("{n:0>99}\n")).collect();
    write(f.root.path(), "wide.txt", &wide);
    let r = read(&f.tools, "wide.txt");
    assert!(r.capped && r.bytes <= 64 * 1024, "{}", r.bytes);
    let last_line = r.content.lines().rev().nth(1).unwrap();
    let n: u64 = last_line.split('\t').next().unwrap().parse().unwrap();
    assert!(r.content.contains(&format!("start_line {}", n + 1)));
    // One endless line is cut, on a character boundary.
    write(f.root.path(), "long.txt", "é".repeat(200_000));
    let r = read(&f.tools, "long.txt");
    assert!(r.capped);
    assert!(r.content.starts_with("1\téé"));
    assert!(
        r.content
            .ends_with("[lines 1-1 of 1; lines longer than 2000 bytes were cut]")
    );
    assert!(!r.content.contains('\u{FFFD}'));
    assert!(r.content.len() < 2100);
}

#[test]
fn a_file_past_the_scan_cap_gives_a_floor_for_its_line_count() {
    let f = fixture();
    let tools = capped(&f, |l| l.read_scan_bytes = 100);
    let body: String = (1..=100).map(|n| format!("{n:0>9}\n")).collect();
    write(f.root.path(), "big.txt", &body);
    let r = tools.call(
        READ_FILE,
        &json!({"path": "big.txt", "start_line": 5, "end_line": 6}),
    );
    assert_eq!(
        r.content,
        "5\t000000005\n6\t000000006\n[lines 5-6 of more than 10]"
    );
    let r = tools.call(
        READ_FILE,
        &json!({"path": "big.txt", "start_line": 50, "end_line": null}),
    );
    assert!(r.is_error);
    assert!(r.content.contains("past line 10"), "{}", r.content);
}

#[test]
fn grep_answers_path_line_text_in_path_order() {
    let f = fixture();
    let r = f
        .tools
        .call(GREP, &json!({"pattern": r"parse_\w+\(", "path": null}));
    assert!(!r.is_error && !r.capped);
    insta::assert_snapshot!(r.content);
    let r = f.tools.call(
        GREP,
        &json!({"pattern": "(?i)WIDGETS", "path": "README.md"}),
    );
    assert_eq!(
        r.content,
        "README.md:1: # widgets\nREADME.md:3: Parses widgets.\n[2 matches in 1 file searched]"
    );
    // `$` matches before a CRLF line end.
    let r = f
        .tools
        .call(GREP, &json!({"pattern": r"\{\}$", "path": "src"}));
    assert!(
        r.content
            .starts_with("src/parse.rs:1: pub fn parse_all() {}\nsrc/parse.rs:2:"),
        "{}",
        r.content
    );
}

#[test]
fn grep_and_list_take_globs() {
    let f = fixture();
    let r = f
        .tools
        .call(GREP, &json!({"pattern": "parse_all", "path": "*.rs"}));
    assert_eq!(
        r.content,
        "src/lib.rs:4:     parse::parse_all();\nsrc/parse.rs:1: pub fn parse_all() {}\n[2 matches in 3 files searched]"
    );
    let r = f.tools.call(LIST_FILES, &json!({"path": "src/*.rs"}));
    assert_eq!(
        r.content,
        "src/empty.rs\nsrc/lib.rs\nsrc/parse.rs\n[3 files]"
    );
    let r = f.tools.call(LIST_FILES, &json!({"path": "**/*.md"}));
    assert_eq!(r.content, "README.md\ndocs/guide.md\n[2 files]");
    let r = f.tools.call(LIST_FILES, &json!({"path": "src/[z"}));
    assert_refused(&r, "bad glob `src/[z`");
}

#[test]
fn grep_caps_its_matches() {
    let f = fixture();
    let body: String = (1..=300).map(|n| format!("hit {n}\n")).collect();
    write(f.root.path(), "many.txt", &body);
    let r = f
        .tools
        .call(GREP, &json!({"pattern": "^hit", "path": "many.txt"}));
    assert!(r.capped);
    assert_eq!(
        r.content
            .lines()
            .filter(|l| l.starts_with("many.txt:"))
            .count(),
        200
    );
    assert!(
        r.content
            .contains("many.txt:200: hit 200\n[stopped at 200 matches"),
        "{}",
        r.content
    );
    // A file over the size cap is skipped, and the answer says so.
    write(f.root.path(), "huge.txt", "hit\n".repeat(300_000));
    let r = f
        .tools
        .call(GREP, &json!({"pattern": "^hit", "path": "huge.txt"}));
    assert!(r.content.starts_with("no matches"), "{}", r.content);
    assert!(r.content.contains("1 over 1 MB"));
}

#[test]
fn hostile_patterns_are_refused_cleanly() {
    let f = fixture();
    for pattern in [r"(?:a{1000}){1000}", r"\w{5000}\w{5000}", "(", "[z-a]"] {
        let r = f
            .tools
            .call(GREP, &json!({"pattern": pattern, "path": null}));
        assert!(r.is_error, "{pattern}: {r:?}");
        assert!(r.content.starts_with("grep: bad pattern:"), "{}", r.content);
    }
    let r = f
        .tools
        .call(GREP, &json!({"pattern": "a".repeat(1001), "path": null}));
    assert_eq!(
        r.content,
        "grep: the pattern is 1001 bytes; patterns are limited to 1000 bytes"
    );
    // A pattern that backtracks forever elsewhere runs in linear time here.
    write(
        f.root.path(),
        "as.txt",
        format!("{}b\n", "a".repeat(50_000)),
    );
    let r = f
        .tools
        .call(GREP, &json!({"pattern": "(a+)+$", "path": "as.txt"}));
    assert!(!r.is_error);
}

#[test]
fn list_files_is_sorted_and_capped() {
    let f = fixture();
    let r = f.tools.call(LIST_FILES, &json!({"path": null}));
    insta::assert_snapshot!(r.content);
    let tools = capped(&f, |l| l.list_max_entries = 2);
    let r = tools.call(LIST_FILES, &json!({"path": "src"}));
    assert!(r.capped);
    assert_eq!(
        r.content,
        "src/empty.rs\nsrc/lib.rs\n[2 of 3 files shown (1 more); list a subdirectory or a glob to see the rest]"
    );
    let r = tools.call(LIST_FILES, &json!({"path": "docs/guide.md"}));
    assert_eq!(r.content, "docs/guide.md\n[1 file]");
    let r = tools.call(LIST_FILES, &json!({"path": "nowhere"}));
    assert_refused(&r, "`nowhere` does not exist");
    fs::create_dir(f.root.path().join("void")).unwrap();
    let r = tools.call(LIST_FILES, &json!({"path": "void"}));
    assert_eq!(r.content, "no files in `void`");
}

#[test]
fn the_walk_stops_at_its_entry_cap() {
    let f = fixture();
    let tools = capped(&f, |l| l.walk_max_entries = 5);
    let r = tools.call(LIST_FILES, &json!({"path": null}));
    assert!(r.capped);
    assert!(
        r.content
            .contains("stopped at its cap on directory entries"),
        "{}",
        r.content
    );
}

#[test]
fn odd_names_and_bytes_do_not_panic() {
    let f = fixture();
    let r = f.root.path();
    write(r, "ünï/cødé.rs", "// 日本語 ✓ parse\n");
    fs::write(r.join(OsStr::from_bytes(b"bad\xffname.txt")), "parse me\n").unwrap();
    write(r, "latin1.txt", b"caf\xe9 parse\n\xff\xfe\n");
    let tools = &f.tools;
    let r = read(tools, "ünï/cødé.rs");
    assert_eq!(r.content, "1\t// 日本語 ✓ parse\n[lines 1-1 of 1]");
    let r = read(tools, "latin1.txt");
    assert_eq!(
        r.content,
        "1\tcaf\u{FFFD} parse\n2\t\u{FFFD}\u{FFFD}\n[lines 1-2 of 2]"
    );
    let r = tools.call(GREP, &json!({"pattern": "parse", "path": null}));
    assert!(
        r.content.contains("bad\u{FFFD}name.txt:1: parse me"),
        "{}",
        r.content
    );
    assert!(r.content.contains("latin1.txt:1: caf\u{FFFD} parse"));
    let r = tools.call(LIST_FILES, &json!({"path": null}));
    assert!(r.content.contains("ünï/cødé.rs\n"));
    // A pattern for a raw byte finds it in text that is not UTF-8.
    let r = tools.call(GREP, &json!({"pattern": r"(?-u)^\xff", "path": null}));
    assert!(
        r.content.starts_with("latin1.txt:2: \u{FFFD}\u{FFFD}\n"),
        "{}",
        r.content
    );
}

#[test]
fn bad_input_is_an_error_the_model_can_act_on() {
    let f = fixture();
    let t = &f.tools;
    let cases = [
        ("read", json!({"path": "x"})),
        (READ_FILE, json!({})),
        (READ_FILE, json!({"path": 7})),
        (READ_FILE, json!({"path": "README.md", "start_line": "ten"})),
        (READ_FILE, json!({"path": "README.md", "start_line": -1})),
        (READ_FILE, json!({"path": "README.md", "limit": 10})),
        (READ_FILE, json!("{\"path\": ")),
        (READ_FILE, json!([1, 2])),
        (GREP, json!({"path": "src"})),
        (LIST_FILES, json!({"path": ["src"]})),
    ];
    let answers: Vec<String> = cases
        .iter()
        .map(|(tool, input)| {
            let r = t.call(tool, input);
            assert!(r.is_error, "{tool} {input}: {r:?}");
            format!("{tool} {input}\n  => {}", r.content)
        })
        .collect();
    insta::assert_snapshot!(answers.join("\n"));
}

#[test]
fn arguments_arrive_as_an_object_or_a_json_string() {
    let f = fixture();
    let as_object = f.tools.call(READ_FILE, &json!({"path": "README.md"}));
    let as_string = f.tools.call(
        READ_FILE,
        &json!(r#"{"path":"README.md","start_line":null}"#),
    );
    assert!(!as_object.is_error);
    assert_eq!(as_object, as_string);
    // No arguments at all: the whole repository.
    for input in [json!(""), Value::Null, json!({}), json!("{}")] {
        let r = f.tools.call(LIST_FILES, &input);
        assert!(r.content.contains("README.md\n"), "{input}: {r:?}");
    }
}

#[test]
fn every_result_obeys_the_result_cap() {
    let f = fixture();
    let tools = capped(&f, |l| l.max_result_bytes = 300);
    let body: String = (1..=100).map(|n| format!("parse {n}\n")).collect();
    write(f.root.path(), "p.txt", &body);
    // A first line longer than the whole answer is cut to fit, not reported past the end.
    write(f.root.path(), "one.txt", "x".repeat(5000));
    let r = tools.call(READ_FILE, &json!({"path": "one.txt"}));
    assert!(!r.is_error && r.capped && r.bytes <= 300, "{r:?}");
    assert!(r.content.starts_with("1\txxx"));
    for (tool, args) in [
        (READ_FILE, json!({"path": "p.txt"})),
        (GREP, json!({"pattern": "parse", "path": null})),
        (LIST_FILES, json!({"path": null})),
        (GREP, json!({"pattern": "(".repeat(400), "path": null})),
    ] {
        let r = tools.call(tool, &args);
        assert!(r.bytes <= 300, "{tool}: {} bytes", r.bytes);
        assert_eq!(r.bytes, r.content.len());
    }
}

#[test]
fn the_budget_ends_the_calls_and_every_call_is_recorded() {
    let f = fixture();
    let mut session = ToolSession::new(f.tools.clone(), ToolBudget::new(2));
    assert!(!session.call(LIST_FILES, &json!({"path": null})).is_error);
    let long = "x".repeat(2000);
    assert!(
        session
            .call(GREP, &json!({"pattern": long, "path": null}))
            .is_error
    );
    assert_eq!(session.budget().remaining(), 0);
    let r = session.call(READ_FILE, &json!("{\"path\":\"README.md\"}"));
    assert!(r.is_error);
    assert_eq!(r.content, BUDGET_SPENT);
    let records = session.into_records();
    assert_eq!(records.len(), 3);
    assert_eq!(records[0].name, LIST_FILES);
    assert_eq!(records[0].arguments, r#"{"path":null}"#);
    assert!(!records[0].is_error && records[0].bytes > 0);
    assert!(records[1].is_error);
    assert!(records[1].arguments.len() <= RECORD_ARGUMENT_BYTES + '…'.len_utf8());
    assert!(records[1].arguments.ends_with('…'));
    assert_eq!(records[2].arguments, r#"{"path":"README.md"}"#);
    assert_eq!(records[2].bytes, BUDGET_SPENT.len());
    assert_eq!(ToolBudget::default().max_calls(), DEFAULT_MAX_TOOL_CALLS);
}

#[test]
fn definitions_are_strict_mode_schemas() {
    for def in definitions(&ToolLimits::default()) {
        let schema = &def.input_schema;
        assert_eq!(schema["additionalProperties"], json!(false));
        let properties = schema["properties"].as_object().unwrap();
        let mut required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        required.sort_unstable();
        let mut names: Vec<&str> = properties.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(required, names, "{}", def.name);
        // Optional ones are nullable; `path` is required only by read_file.
        for (name, property) in properties {
            let nullable = property["type"]
                .as_array()
                .is_some_and(|t| t.contains(&json!("null")));
            let optional = !(name == "pattern" || (def.name == READ_FILE && name == "path"));
            assert_eq!(nullable, optional, "{}.{name}", def.name);
        }
    }
}

#[test]
fn definitions_as_each_api_reads_them() {
    let defs = definitions(&ToolLimits::default());
    let anthropic: Vec<Value> = defs.iter().map(ToolDef::anthropic).collect();
    insta::assert_json_snapshot!("anthropic", anthropic);
    let chat: Vec<Value> = defs.iter().map(ToolDef::openai_chat).collect();
    insta::assert_json_snapshot!("openai_chat", chat);
    let responses = defs[0].openai_responses();
    assert_eq!(responses["name"], json!(READ_FILE));
    assert_eq!(responses["parameters"], defs[0].input_schema);
    assert_eq!(responses["strict"], json!(true));
}

mod confinement {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    use super::*;

    fn segment() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "..",
            ".",
            "",
            "/",
            "link_out",
            "link_in",
            "dir_out",
            "environ",
            "hard",
            "src",
            "inner.rs",
            "app-key.pem",
            ".git",
            "config",
            "*",
            "**",
            "pipe",
            "README.md",
        ])
        .prop_map(str::to_owned)
    }

    fn relative_path() -> impl Strategy<Value = String> {
        (any::<bool>(), prop::collection::vec(segment(), 1..6)).prop_map(|(lead, parts)| {
            let path = parts.join("/");
            if lead { format!("/{path}") } else { path }
        })
    }

    #[test]
    fn no_path_reaches_outside_the_root() {
        let f = fixture();
        let mut runner = TestRunner::new(Config {
            cases: 300,
            ..Config::default()
        });
        runner
            .run(&relative_path(), |path| {
                for (tool, args) in [
                    (
                        READ_FILE,
                        json!({"path": path, "start_line": null, "end_line": null}),
                    ),
                    (GREP, json!({"pattern": "KEY|parse|MARKER|.", "path": path})),
                    (LIST_FILES, json!({"path": path})),
                ] {
                    let r = f.tools.call(tool, &args);
                    prop_assert!(!r.content.contains(MARKER), "{} {}: {:?}", tool, args, r);
                    prop_assert!(
                        !r.content.contains("parse_key"),
                        "{} {}: {:?}",
                        tool,
                        args,
                        r
                    );
                    prop_assert!(
                        !r.content.contains("parse_inner"),
                        "{} {}: {:?}",
                        tool,
                        args,
                        r
                    );
                }
                Ok(())
            })
            .unwrap();
    }
}

/// A GitHub token shape: `ghp_` and 36 characters.
const TOKEN: &str = "ghp_R7kQ2mX9vB4nT1cZ8wL5yH3jD6fG0sA2pE4u";

#[test]
fn every_tool_masks_what_it_shows() {
    let f = fixture();
    write(
        f.root.path(),
        "deploy/ci.env",
        format!("# deploy\nGITHUB_TOKEN={TOKEN}\n"),
    );
    write(
        f.root.path(),
        &format!("deploy/{TOKEN}.md"),
        "named after it\n",
    );
    let r = read(&f.tools, "deploy/ci.env");
    assert_eq!(
        r.content,
        "1\t# deploy\n2\tGITHUB_TOKEN=[REDACTED github-pat]\n[lines 1-2 of 2]"
    );
    let r = f
        .tools
        .call(GREP, &json!({"pattern": "GITHUB_TOKEN", "path": "deploy"}));
    assert!(
        r.content
            .starts_with("deploy/ci.env:2: GITHUB_TOKEN=[REDACTED github-pat]\n"),
        "{}",
        r.content
    );
    let r = f.tools.call(LIST_FILES, &json!({"path": "deploy"}));
    assert!(r.content.contains("[REDACTED github-pat]"), "{}", r.content);
    assert!(!r.content.contains(TOKEN), "{}", r.content);
    // The model's own arguments echoed in an error are masked too.
    let r = read(&f.tools, &format!("missing/{TOKEN}"));
    assert!(r.is_error && !r.content.contains(TOKEN), "{}", r.content);
}

#[test]
fn a_cut_never_shows_part_of_a_secret() {
    let f = fixture();
    // The token starts 10 bytes before each tool's cut, so a cut made before masking would
    // show `ghp_R7kQ2m`, which no rule matches.
    let line = format!("{}{TOKEN} and more\n", "x".repeat(40));
    write(f.root.path(), "long.txt", &line);
    let tools = capped(&f, |l| {
        l.read_line_bytes = 50;
        l.grep_line_bytes = 50;
    });
    let r = read(&tools, "long.txt");
    assert!(!r.content.contains("ghp_"), "{}", r.content);
    assert!(
        r.content
            .starts_with(&format!("1\t{}[REDACTED", "x".repeat(40)))
    );
    assert!(r.content.contains("lines longer than 50 bytes were cut"));
    let r = tools.call(GREP, &json!({"pattern": "more", "path": "long.txt"}));
    assert!(!r.content.contains("ghp_"), "{}", r.content);
    assert!(r.content.starts_with("long.txt:1: xxxx"), "{}", r.content);
    // The per-result cap cuts after masking too.
    let tools = capped(&f, |l| l.max_result_bytes = 90);
    let r = read(&tools, "long.txt");
    assert!(r.capped && !r.content.contains("ghp_"), "{}", r.content);
}

#[test]
fn grep_tells_nothing_of_a_masked_value() {
    let f = fixture();
    write(f.root.path(), "ci.env", format!("GITHUB_TOKEN={TOKEN}\n"));
    // The file is searched as shown: a pattern for the token's own characters finds nothing,
    // so matches cannot spell the value out call by call.
    let r = f
        .tools
        .call(GREP, &json!({"pattern": "ghp_R7", "path": "ci.env"}));
    assert!(r.content.starts_with("no matches"), "{}", r.content);
    let r = f
        .tools
        .call(GREP, &json!({"pattern": "REDACTED", "path": "ci.env"}));
    assert!(r.content.starts_with("ci.env:1: "), "{}", r.content);
}

#[test]
fn a_private_key_shown_in_a_range_is_masked_whole() {
    let f = fixture();
    let body = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx7q3Zb9Lk2mN4pQ8rT6vW1yH0jD5fG\nc2VjcmV0IGtleSBib2R5IGxpbmUgdHdvIGZvciB0ZXN0\n-----END RSA PRIVATE KEY-----\n";
    write(f.root.path(), "key.pem", body);
    let r = read(&f.tools, "key.pem");
    assert!(!r.content.contains("MIIEowIBAAK"), "{}", r.content);
    assert!(!r.content.contains("c2VjcmV0"), "{}", r.content);
    // Line numbers hold: the mask keeps the block's line breaks.
    assert!(r.content.ends_with("[lines 1-4 of 4]"), "{}", r.content);
    // The body alone, its BEGIN line above the range: masked as in the whole file.
    let r = f.tools.call(
        READ_FILE,
        &json!({"path": "key.pem", "start_line": 2, "end_line": 3}),
    );
    assert!(!r.content.contains("MIIEowIBAAK"), "{}", r.content);
    assert!(!r.content.contains("c2VjcmV0"), "{}", r.content);
    assert!(r.content.ends_with("[lines 2-3 of 4]"), "{}", r.content);
}

#[test]
fn an_aws_secret_shown_without_its_key_id_is_masked() {
    let f = fixture();
    let secret = "Zx8Kq2Wm4Rt6Yp9Ls3Dv7Bn1Hc5Jf0Ga2Ue4Ti6O";
    write(
        f.root.path(),
        "aws.env",
        format!(
            "value = {secret}
id = AKIAQ3ZR7VX2M4LP6NTW
"
        ),
    );
    let r = f.tools.call(
        READ_FILE,
        &json!({"path": "aws.env", "start_line": 1, "end_line": 1}),
    );
    assert!(!r.content.contains(secret), "{}", r.content);
    assert!(
        r.content.contains("[REDACTED aws-secret-access-key]"),
        "{}",
        r.content
    );
}

/// A pattern whose lazy DFA keeps missing on [`costly_text`]: the slowest per byte found for
/// the regex crate (about 0.1 s a MiB in a release build, 0.7 s in a debug one).
pub(crate) const COSTLY: &str = r"(?:a.{10}|b.{12}|c.{14}|d.{16}|e.{18}){3}[^a-z]";

/// Lines of random letters, just under `grep`'s file cap, none matching [`COSTLY`].
pub(crate) fn costly_text() -> String {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut body = String::with_capacity(1_000_000);
    while body.len() < 999_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        body.push(char::from(b'a' + u8::try_from(x % 26).expect("small")));
        if body.len() % 100 == 99 {
            body.push('\n');
        }
    }
    body
}

fn costly_fixture(files: usize) -> Fixture {
    let f = fixture();
    let body = costly_text();
    for i in 0..files {
        write(f.root.path(), &format!("costly/f{i:02}.txt"), &body);
    }
    f
}

#[test]
fn a_call_stops_at_its_time_limit() {
    // Eight files the pattern takes seconds over (debug build): the call stops at 200 ms.
    let f = costly_fixture(8);
    let tools = capped(&f, |l| l.call_time = Duration::from_millis(200));
    let started = Instant::now();
    let r = tools.call(GREP, &json!({"pattern": COSTLY, "path": "costly"}));
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert!(r.capped && !r.is_error, "{r:?}");
    assert!(r.content.ends_with(text::STOPPED), "{}", r.content);
}

#[test]
fn a_cancelled_session_stops_the_call_under_way() {
    let f = costly_fixture(8);
    let mut session = ToolSession::new(f.tools.clone(), ToolBudget::new(5));
    let cancel = session.cancel();
    let started = Instant::now();
    let work = std::thread::spawn(move || {
        let first = session.call(GREP, &json!({"pattern": COSTLY, "path": "costly"}));
        let next = session.call(LIST_FILES, &json!({"path": null}));
        (first, next, session.into_records())
    });
    std::thread::sleep(Duration::from_millis(100));
    drop(cancel.on_drop());
    let (first, next, records) = work.join().expect("no panic");
    let took = started.elapsed();
    assert!(took < Duration::from_secs(2), "took {took:?}");
    assert!(first.content.ends_with(text::STOPPED), "{}", first.content);
    assert!(next.is_error && next.content == text::CANCELLED, "{next:?}");
    assert_eq!(records.len(), 2);
}

#[test]
fn a_call_past_the_lens_deadline_stops_at_once() {
    let f = costly_fixture(2);
    let mut session =
        ToolSession::new(f.tools.clone(), ToolBudget::new(5)).with_deadline(Instant::now());
    let r = session.call(GREP, &json!({"pattern": COSTLY, "path": "costly"}));
    assert!(r.content.ends_with(text::STOPPED), "{}", r.content);
    let r = session.call(
        READ_FILE,
        &json!({"path": "costly/f00.txt", "start_line": null, "end_line": null}),
    );
    assert!(r.content.ends_with(text::STOPPED), "{}", r.content);
}

#[test]
fn grep_stops_at_its_scan_cap() {
    let f = fixture();
    for i in 0..4 {
        write(f.root.path(), &format!("scan/f{i}.txt"), "x\n".repeat(50));
    }
    let tools = capped(&f, |l| l.grep_scan_bytes = 250);
    let r = tools.call(GREP, &json!({"pattern": "x", "path": "scan"}));
    assert!(r.capped, "{r:?}");
    assert!(r.content.starts_with("scan/f0.txt:1: x\n"), "{}", r.content);
    assert!(!r.content.contains("scan/f2.txt"), "{}", r.content);
    assert!(
        r.content
            .ends_with("[the search stopped after reading 250 bytes; give a narrower path]"),
        "{}",
        r.content
    );
    assert_eq!(ToolLimits::default().grep_scan_bytes, 16 << 20);
}
