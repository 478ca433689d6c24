//! Opt-in (`REVIEWBOT_REAL_CLI_DIR`): the real Claude Code, with the read-only argv, driven
//! through a real tool loop by the fake model over a hostile snapshot.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use super::read_only::{CLAUDE_QUIET_ENV, CLAUDE_TOOLS, claude_read_only_args};
use super::snapshot::{HARDLINK_SECRET, Hostile, OUTDIR_SECRET, OUTSIDE_SECRET, UNDIFFED};
use super::{FakeModel, ToolCall, Turn};
use crate::lens::cli_env::fake::real_cli;
use crate::lens::contract::LensResponse;
use crate::lens::process::{self, ProcessOutput, ProcessSpec};

/// The fake API key: it must reach no request body (only the `x-api-key` header).
const MODEL: &str = "claude-fake-1";

const API_KEY: &str = "sk-ant-api03-FAKE_KEY_MARKER_3e7d";

pub(super) const LENS_JSON: &str = r#"{"findings":[{"path":"src/lib.rs","line":2,"start_line":null,"side":"RIGHT","severity":"advisory","confidence":"low","title":"b is unused","body":"Nothing calls b."}],"summary":"One note."}"#;

/// What Claude Code 2.1.197 answers a `Read` outside its cwd under `dontAsk`.
const DONT_ASK: &str =
    "Permission to use Read has been denied because Claude Code is running in don't ask mode";

/// Runs `claude` with the read-only argv in the snapshot, against `fake`, and shows the run.
async fn run_read_only(
    bin: &Path,
    max_turns: u32,
    hostile: &Hostile,
    fake: &FakeModel,
) -> ProcessOutput {
    let out = run_claude(bin, claude_read_only_args(MODEL, max_turns), hostile, fake).await;
    show(fake, &out);
    out
}

/// stdout as the one result object it must be.
fn result_object(out: &ProcessOutput) -> Value {
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// Runs `claude` with `args` in the snapshot, against `fake`, the prompt on stdin.
async fn run_claude(
    bin: &Path,
    args: Vec<OsString>,
    hostile: &Hostile,
    fake: &FakeModel,
) -> ProcessOutput {
    let mut spec = ProcessSpec::new(bin, hostile.snapshot(), Duration::from_secs(60));
    spec.args = args;
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    spec.env = vec![
        ("PATH".into(), path),
        ("HOME".into(), hostile.home().into()),
        ("ANTHROPIC_API_KEY".into(), API_KEY.into()),
        ("ANTHROPIC_BASE_URL".into(), fake.url().into()),
    ];
    spec.env
        .extend(CLAUDE_QUIET_ENV.map(|(k, v)| (k.into(), v.into())));
    spec.stdin = b"Review the change to src/lib.rs. Answer with the lens JSON.".to_vec();
    process::run(spec).await.expect("claude ran")
}

fn read(id: &str, path: &Path) -> ToolCall {
    ToolCall::new(id, "Read", json!({"file_path": path}))
}

/// For `--nocapture`: what the CLI sent and printed.
pub(super) fn show(fake: &FakeModel, out: &ProcessOutput) {
    eprintln!(
        "{}exit {:?} in {:?}\nstdout:\n{}\nstderr: {}",
        fake.summary(),
        out.status.code(),
        out.elapsed,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test]
async fn real_claude_reads_the_snapshot_and_nothing_outside() {
    let Some(bin) = real_cli(
        "claude",
        "real_claude_reads_the_snapshot_and_nothing_outside",
    ) else {
        return;
    };
    let hostile = Hostile::new();
    let snap = hostile.snapshot();
    let outside = hostile.outside();
    let fake = FakeModel::start(vec![
        Turn::calls([
            read("in_snapshot", &snap.join("src/util/helpers.rs")),
            read("outside_abs", &outside.join("secret.txt")),
            read("via_symlink", &snap.join("link_secret")),
            read("via_dir_symlink", &snap.join("link_outdir/secret.txt")),
            read("via_hardlink", &snap.join("hard_secret.txt")),
            ToolCall::new(
                "list",
                "Grep",
                json!({"pattern": ".", "glob": "**/*.rs", "output_mode": "files_with_matches"}),
            ),
            ToolCall::new("grep_secret", "Grep", json!({"pattern": OUTSIDE_SECRET})),
            ToolCall::new(
                "write",
                "Write",
                json!({"file_path": snap.join("x"), "content": "x"}),
            ),
            ToolCall::new("bash", "Bash", json!({"command": "touch x"})),
        ])
        .with_text("Reading."),
        Turn::text(LENS_JSON),
    ]);
    let before = hostile.listing();
    let out = run_read_only(&bin, 3, &hostile, &fake).await;

    // stdout is one result object whose `result` is the lens JSON.
    assert!(out.status.success(), "exit {:?}", out.status.code());
    let result = result_object(&out);
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    let text = result["result"].as_str().expect("result text");
    assert_eq!(text, LENS_JSON);
    serde_json::from_str::<LensResponse>(text).expect("a lens response");

    // Exactly the read-only tools, in every model request.
    let requests = fake.model_requests();
    assert_eq!(requests.len(), 2, "one tool round, then the answer");
    for r in &requests {
        assert!(r.path.starts_with("/v1/messages"), "{}", r.path);
        let mut tools = r.tools.clone();
        tools.sort();
        assert_eq!(tools, ["Grep", "Read"]);
    }
    assert_eq!(CLAUDE_TOOLS, "Read,Grep");

    let result_of = |id: &str| {
        fake.tool_result(id)
            .unwrap_or_else(|| panic!("no result for {id}"))
    };
    // The file in no diff was read for real.
    let inside = result_of("in_snapshot");
    assert!(
        !inside.is_error && inside.text.contains(UNDIFFED),
        "{inside:?}"
    );
    // Grep lists the snapshot's files (what Glob would have been for).
    let list = result_of("list");
    assert!(
        list.text.contains("src/util/helpers.rs") && list.text.contains("src/lib.rs"),
        "{list:?}"
    );
    // Reads outside, by path or through symlinks, are refused.
    for id in ["outside_abs", "via_symlink", "via_dir_symlink"] {
        let r = result_of(id);
        assert!(r.is_error && r.text.contains(DONT_ASK), "{r:?}");
    }
    // Grep does not follow symlinks out (its default mode answers "No files found").
    assert_eq!(result_of("grep_secret").text, "No files found");
    for secret in [OUTSIDE_SECRET, OUTDIR_SECRET] {
        assert_eq!(fake.tool_result_containing(secret), None);
    }
    // A hard link defeats the path check: the outside file's text comes back. Snapshots are
    // therefore made from git objects, which hold no hard links.
    let hard = result_of("via_hardlink");
    assert!(
        !hard.is_error && hard.text.contains(HARDLINK_SECRET),
        "{hard:?}"
    );
    // No write or shell tool exists.
    for id in ["write", "bash"] {
        let r = result_of(id);
        assert!(
            r.is_error && r.text.contains("No such tool available"),
            "{r:?}"
        );
    }

    // The snapshot's configuration did nothing: no hook, no MCP server, no CLAUDE.md text.
    hostile.assert_inert(&before, &fake, &["FAKE_KEY_MARKER"]);
}

/// Why [`CLAUDE_TOOLS`] leaves `Glob` out: with an absolute `pattern` it lists names anywhere
/// (contents stay refused), which no permission rule on the command line stops.
#[tokio::test]
async fn glob_with_an_absolute_pattern_lists_names_outside() {
    let Some(bin) = real_cli(
        "claude",
        "glob_with_an_absolute_pattern_lists_names_outside",
    ) else {
        return;
    };
    let hostile = Hostile::new();
    let outside = hostile.outside();
    let fake = FakeModel::start(vec![
        Turn::calls([
            ToolCall::new(
                "outside_names",
                "Glob",
                json!({"pattern": format!("{}/*", outside.display())}),
            ),
            ToolCall::new("inside_names", "Glob", json!({"pattern": "**/*"})),
        ]),
        Turn::text(LENS_JSON),
    ]);
    let mut args = claude_read_only_args(MODEL, 3);
    let tools = args
        .iter_mut()
        .find(|a| *a == CLAUDE_TOOLS)
        .expect("the tools value");
    *tools = "Read,Grep,Glob".into();
    let out = run_claude(&bin, args, &hostile, &fake).await;
    show(&fake, &out);
    assert!(out.status.success(), "exit {:?}", out.status.code());
    let mut tools = fake.model_requests()[0].tools.clone();
    tools.sort();
    assert_eq!(tools, ["Glob", "Grep", "Read"]);
    let names = fake.tool_result("outside_names").expect("a result");
    assert!(
        !names.is_error
            && names
                .text
                .contains(&outside.join("secret.txt").display().to_string()),
        "{names:?}"
    );
    // Inside, Glob lists real files, dotfiles included, and no symlink.
    let inside = fake.tool_result("inside_names").expect("a result");
    assert!(inside.text.contains("src/util/helpers.rs"), "{inside:?}");
    assert!(inside.text.contains(".mcp.json"), "{inside:?}");
    assert!(!inside.text.contains("link_secret"), "{inside:?}");
}

/// What the lens reads when the API refuses a request, and when the turn cap is reached.
#[tokio::test]
async fn real_claude_reports_api_errors_and_the_turn_cap() {
    let Some(bin) = real_cli("claude", "real_claude_reports_api_errors_and_the_turn_cap") else {
        return;
    };
    let hostile = Hostile::new();
    let fake = FakeModel::start(vec![Turn::error(
        400,
        "invalid_request_error",
        "fake bad request",
    )]);
    let out = run_read_only(&bin, 3, &hostile, &fake).await;
    assert_eq!(out.status.code(), Some(1));
    let result = result_object(&out);
    assert_eq!(result["is_error"], true);
    assert_eq!(result["api_error_status"], 400);
    assert_eq!(result["result"], "API Error: 400 fake bad request");

    // A model that keeps calling tools: `--max-turns 2` allows two model requests.
    let read = |id: &str| read(id, &hostile.snapshot().join("src/lib.rs"));
    let fake = FakeModel::start(vec![
        Turn::calls([read("r0")]),
        Turn::calls([read("r1")]),
        Turn::calls([read("r2")]),
    ]);
    let out = run_read_only(&bin, 2, &hostile, &fake).await;
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(fake.model_requests().len(), 2);
    let result = result_object(&out);
    assert_eq!(result["subtype"], "error_max_turns");
    assert_eq!(result["is_error"], true);
    assert_eq!(result["terminal_reason"], "max_turns");
}
