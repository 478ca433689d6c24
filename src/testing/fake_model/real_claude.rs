//! Opt-in (`REVIEWBOT_REAL_CLI_DIR`): the real Claude Code run as the `claude-cli` lens runs it
//! (its argv, working directory, environment and prompt), pointed at the fake model and driven
//! through a real tool loop over a hostile snapshot.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::snapshot::{HARDLINK_SECRET, Hostile, OUTDIR_SECRET, OUTSIDE_SECRET, UNDIFFED};
use super::{FakeModel, ToolCall, Turn};
use crate::lens::agent_cli;
use crate::lens::claude::{self, ClaudeCli, READ_TOOLS};
use crate::lens::cli_env::CliEnv;
use crate::lens::process::{self, DEFAULT_MAX_OUTPUT, ProcessOutput, ProcessSpec};
use crate::lens::{Answer, BackendKind, Failure, FailureKind, LensRequest, LensSpec};
use crate::testing::fake_cli::{self as fake, real_cli, repository_note};

pub(super) const MODEL: &str = "claude-fake-1";

/// The fake API key: it must reach no request body (only the `x-api-key` header).
const API_KEY: &str = "sk-ant-api03-FAKE_KEY_MARKER_3e7d";

pub(super) const LENS_JSON: &str = r#"{"findings":[{"path":"src/lib.rs","line":2,"start_line":null,"side":"RIGHT","severity":"advisory","confidence":"low","title":"b is unused","body":"Nothing calls b."}],"summary":"One note."}"#;

/// What Claude Code 2.1.197 answers a `Read` outside its cwd under `dontAsk`.
const DONT_ASK: &str =
    "Permission to use Read has been denied because Claude Code is running in don't ask mode";

/// A lens of `kind` running the real `bin` with `model`.
pub(super) fn lens(kind: BackendKind, bin: &Path, model: &str) -> LensSpec {
    let mut spec = LensSpec::new("real", kind);
    spec.bin = Some(bin.to_string_lossy().into_owned());
    spec.model = Some(model.to_owned());
    spec.timeout = Duration::from_secs(60);
    spec
}

/// The lens's request, over `snapshot` when there is one.
pub(super) fn request(snapshot: Option<&Path>) -> LensRequest {
    LensRequest {
        checkout: snapshot.map(Arc::from),
        answer: crate::lens::contract::AnswerKind::Review,
        ..fake::request("Review the change to src/lib.rs. Answer with the lens JSON.")
    }
}

/// The lens's environment: `PATH`, the hostile snapshot's fresh `HOME`, and the fake as the API.
pub(super) fn env(hostile: &Hostile, fake: &FakeModel) -> CliEnv {
    fake::real_env(&hostile.home(), &[]).with_fake_model(
        vec![
            ("ANTHROPIC_BASE_URL".into(), fake.url().into()),
            ("ANTHROPIC_API_KEY".into(), API_KEY.into()),
        ],
        Vec::new(),
    )
}

/// Runs the `claude-cli` lens against `fake`, over the snapshot when `read`, with up to
/// `max_tool_calls` tool rounds, and shows the run.
async fn review(
    bin: &Path,
    hostile: &Hostile,
    fake: &FakeModel,
    read: bool,
    max_tool_calls: u32,
) -> Result<Answer, Failure> {
    let spec = lens(BackendKind::ClaudeCli, bin, MODEL);
    let snapshot = hostile.snapshot();
    let req = request(read.then_some(snapshot.as_path()));
    let env = env(hostile, fake);
    let answer =
        agent_cli::run::<ClaudeCli>(&spec, &req, &env, max_tool_calls, DEFAULT_MAX_OUTPUT).await;
    show(fake, &answer);
    answer
}

pub(super) fn read(id: &str, path: &Path) -> ToolCall {
    ToolCall::new(id, "Read", json!({"file_path": path}))
}

/// For `--nocapture`: what the CLI sent and what the lens made of it.
pub(super) fn show(fake: &FakeModel, answer: &Result<Answer, Failure>) {
    eprintln!("{}lens: {answer:?}", fake.summary());
}

/// The one lens finding [`LENS_JSON`] holds.
pub(super) fn assert_lens_json(answer: &Answer) {
    assert_eq!(answer.raw, LENS_JSON);
    assert_eq!(answer.response.findings.len(), 1);
    assert_eq!(answer.response.findings[0].title, "b is unused");
    assert_eq!(answer.response.summary.as_deref(), Some("One note."));
}

/// Whether some request's user text holds the prompt's note on reading the repository.
pub(super) fn told(fake: &FakeModel, reads: bool) -> bool {
    let note = repository_note(reads);
    fake.model_requests()
        .iter()
        .any(|r| r.user_text.iter().any(|t| t.contains(&note)))
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
    let answer = review(&bin, &hostile, &fake, true, 2)
        .await
        .expect("an answer");

    // The lens read the answer, and has nothing to add.
    assert_lens_json(&answer);
    assert_eq!((answer.tool_calls, &answer.notice), (None, &None));
    assert_eq!(answer.model.as_deref(), Some(MODEL));
    assert!(
        told(&fake, true),
        "the prompt does not say it reads the repository"
    );

    // Exactly the read tools, in every model request.
    let requests = fake.model_requests();
    assert_eq!(requests.len(), 2, "one tool round, then the answer");
    for r in &requests {
        assert!(r.path.starts_with("/v1/messages"), "{}", r.path);
        let mut tools = r.tools.clone();
        tools.sort();
        assert_eq!(tools, ["Grep", "Read"]);
    }
    assert_eq!(READ_TOOLS, "Read,Grep");

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

/// Without a snapshot the lens runs in its empty scratch directory and the model gets no tool.
#[tokio::test]
async fn real_claude_on_the_diff_alone_has_no_tools() {
    let Some(bin) = real_cli("claude", "real_claude_on_the_diff_alone_has_no_tools") else {
        return;
    };
    let hostile = Hostile::new();
    let fake = FakeModel::start(vec![Turn::text(LENS_JSON)]);
    let before = hostile.listing();
    let answer = review(&bin, &hostile, &fake, false, 40)
        .await
        .expect("an answer");
    assert_lens_json(&answer);
    let requests = fake.model_requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].tools, Vec::<String>::new());
    assert!(told(&fake, false), "the prompt does not say diff alone");
    assert!(!told(&fake, true));
    // Not even the snapshot's path reached the model.
    let path = hostile.snapshot().display().to_string();
    assert_eq!(fake.bodies_containing(&path), Vec::<String>::new());
    hostile.assert_inert(&before, &fake, &["FAKE_KEY_MARKER", UNDIFFED]);
}

/// Why [`READ_TOOLS`] leaves `Glob` out: with an absolute `pattern` it lists names anywhere
/// (contents stay refused), which no permission rule on the command line stops. The lens's
/// own argv, with `Glob` added; the rest as the lens runs it.
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
    let mut args = claude::args(Some(MODEL), 3, true);
    let tools = args
        .iter_mut()
        .find(|a| *a == READ_TOOLS)
        .expect("the tools value");
    *tools = "Read,Grep,Glob".into();
    let out = run_claude(&bin, args, &hostile, &fake).await;
    eprintln!(
        "{}exit {:?}\nstdout:\n{}\nstderr: {}",
        fake.summary(),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
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

/// Runs `claude args` in the snapshot as the lens would (its environment and quiet variables),
/// the prompt on stdin.
async fn run_claude(
    bin: &Path,
    args: Vec<OsString>,
    hostile: &Hostile,
    fake: &FakeModel,
) -> ProcessOutput {
    let mut spec = ProcessSpec::new(bin, hostile.snapshot(), Duration::from_secs(60));
    spec.args = args;
    spec.env = agent_cli::child_env::<ClaudeCli>(&env(hostile, fake));
    spec.stdin = request(None).prompt.into_bytes();
    process::run(spec).await.expect("claude ran")
}

/// What the lens makes of an API that refuses a request, and of the turn cap.
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
    let f = review(&bin, &hostile, &fake, true, 2)
        .await
        .expect_err("a failure");
    assert_eq!(f.kind, FailureKind::Fatal);
    assert_eq!(
        f.message,
        "claude: API error 400: API Error: 400 fake bad request"
    );

    // A model that keeps calling tools: one tool round allowed, so two model requests.
    let read = |id: &str| read(id, &hostile.snapshot().join("src/lib.rs"));
    let fake = FakeModel::start(vec![
        Turn::calls([read("r0")]),
        Turn::calls([read("r1")]),
        Turn::calls([read("r2")]),
    ]);
    let f = review(&bin, &hostile, &fake, true, 1)
        .await
        .expect_err("a failure");
    assert_eq!(fake.model_requests().len(), 2);
    assert_eq!(f.kind, FailureKind::Fatal);
    assert!(
        f.message.starts_with("claude stopped with error_max_turns"),
        "{}",
        f.message
    );
}

/// Every file under `dir`, relative and sorted (links not followed); empty when it is absent.
fn files_under(dir: &Path) -> Vec<String> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                walk(&path, base, out);
            } else if let Ok(rel) = path.strip_prefix(base) {
                out.push(rel.display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Under `serve` every installation's reviews run in the service's one `HOME`: a transcript kept
/// there (`~/.claude/projects/<cwd>/<session>.jsonl`, the prompt and every file the lens read)
/// would pile up the code of every repository reviewed. The lens runs the CLI without session
/// persistence, so nothing of the review stays behind, with a snapshot or without.
#[tokio::test]
async fn real_claude_keeps_no_transcript_in_its_home() {
    let Some(bin) = real_cli("claude", "real_claude_keeps_no_transcript_in_its_home") else {
        return;
    };
    for read in [true, false] {
        let hostile = Hostile::new();
        let mut turns = vec![Turn::text(LENS_JSON)];
        if read {
            let helpers = hostile.snapshot().join("src/util/helpers.rs");
            turns.insert(0, Turn::calls([self::read("in_snapshot", &helpers)]));
        }
        let fake = FakeModel::start(turns);
        let answer = review(&bin, &hostile, &fake, read, 2)
            .await
            .expect("an answer");
        assert_lens_json(&answer);
        let home = hostile.home();
        let transcripts: Vec<String> = files_under(&home)
            .into_iter()
            .filter(|f| f.ends_with(".jsonl") || f.contains("projects/"))
            .collect();
        assert_eq!(transcripts, Vec::<String>::new(), "read: {read}");
        // Nothing in the home holds what the lens read or was asked.
        for file in files_under(&home) {
            let text = std::fs::read_to_string(home.join(&file)).unwrap_or_default();
            for needle in [UNDIFFED, "Review the change to src/lib.rs"] {
                assert!(!text.contains(needle), "{file} holds {needle}");
            }
        }
    }
}
