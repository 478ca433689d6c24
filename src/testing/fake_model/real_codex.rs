//! Opt-in (`REVIEWBOT_REAL_CLI_DIR`): the real Codex run as the `codex-cli` lens runs it (its
//! argv, permission profile, working directory, environment and prompt), pointed at the fake
//! model and driven through a real tool loop over a hostile snapshot; and the lens on a host
//! where Codex's sandbox cannot start.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use super::real_claude::{LENS_JSON, assert_lens_json, lens, request, show, told};
use super::snapshot::{HARDLINK_SECRET, Hostile, OUTDIR_SECRET, OUTSIDE_SECRET, UNDIFFED};
use super::{FakeModel, ToolCall, Turn};
use crate::lens::agent_cli;
use crate::lens::cli_env::CliEnv;
use crate::lens::codex::{CodexCli, sandbox_works, says_sandbox_failed};
use crate::lens::contract::response_schema;
use crate::lens::process::{self, DEFAULT_MAX_OUTPUT, ProcessSpec};
use crate::lens::{Answer, BackendKind, Failure, FailureKind};
use crate::testing::fake_cli::{self as fake, Fake, real_cli};

/// The variable the custom provider reads its key from, and the key: neither may reach a
/// command's environment or a request body.
const KEY_VAR: &str = "REVIEWBOT_FAKE_PROVIDER_KEY";
const KEY: &str = "sk-fake-PROVIDER_KEY_MARKER_8b2f";
/// In `$CODEX_HOME/auth.json`.
const AUTH_MARKER: &str = "AUTH_JSON_MARKER_d90c";

/// Everything a Codex lens needs, for one hostile snapshot.
pub(super) struct CodexRun {
    pub(super) bin: PathBuf,
    pub(super) hostile: Hostile,
}

impl CodexRun {
    pub(super) fn new(bin: PathBuf) -> Self {
        let hostile = Hostile::new();
        std::fs::write(
            hostile.codex_home().join("auth.json"),
            json!({"OPENAI_API_KEY": AUTH_MARKER}).to_string(),
        )
        .expect("auth.json");
        Self { bin, hostile }
    }

    /// The lens's environment: `PATH`, a fresh `HOME` and `CODEX_HOME`, and the fake as a
    /// custom model provider (Responses API) whose key is in [`KEY_VAR`].
    pub(super) fn env(&self, fake: &FakeModel) -> CliEnv {
        let home = self.hostile.home();
        let codex_home = self.hostile.codex_home();
        let provider = format!(
            r#"model_providers.fake={{name="fake", base_url="{}", env_key="{KEY_VAR}", wire_api="responses"}}"#,
            fake.v1_url()
        );
        fake::real_env(&home, &[("CODEX_HOME", &codex_home)]).with_fake_model(
            vec![(KEY_VAR.into(), KEY.into())],
            ["-c", "model_provider=fake", "-c", &provider]
                .map(OsString::from)
                .into(),
        )
    }

    /// Runs the `codex-cli` lens with `bin` (the real codex, or a wrapper around it) over the
    /// snapshot, against `fake`, and shows the run.
    async fn review(&self, bin: &Path, fake: &FakeModel) -> Result<Answer, Failure> {
        let spec = lens(BackendKind::CodexCli, bin, "gpt-fake-1");
        let req = request(Some(&self.hostile.snapshot()));
        let answer =
            agent_cli::run::<CodexCli>(&spec, &req, &self.env(fake), 40, DEFAULT_MAX_OUTPUT).await;
        show(fake, &answer);
        answer
    }
}

pub(super) fn exec(id: &str, cmd: &str) -> ToolCall {
    ToolCall::new(id, "exec_command", json!({"cmd": cmd}))
}

#[tokio::test]
async fn real_codex_reads_the_snapshot_and_nothing_outside() {
    let Some(bin) = real_cli("codex", "real_codex_reads_the_snapshot_and_nothing_outside") else {
        return;
    };
    let run = CodexRun::new(bin);
    let outside = run.hostile.outside();
    let codex_home = run.hostile.codex_home();
    let fake = FakeModel::start(vec![
        Turn::calls([
            exec("in_snapshot", "cat src/util/helpers.rs"),
            exec(
                "outside_abs",
                &format!("cat {}", outside.join("secret.txt").display()),
            ),
            exec("via_symlink", "cat link_secret"),
            exec("via_dir_symlink", "cat link_outdir/secret.txt"),
            exec("via_hardlink", "cat hard_secret.txt"),
            exec(
                "auth",
                &format!("cat {}", codex_home.join("auth.json").display()),
            ),
            exec("env", "env"),
            exec("touch", "touch x"),
        ]),
        Turn::text(LENS_JSON),
    ]);
    // Hosts that forbid unprivileged user namespaces cannot let a `codex-cli` lens read.
    let probe = sandbox_works(&run.bin, &run.env(&fake)).await;
    assert_eq!(probe, Ok(()), "Codex's sandbox cannot start here");
    let before = run.hostile.listing();
    let answer = run.review(&run.bin, &fake).await.expect("an answer");

    // What the lens read from the JSONL stream.
    assert_lens_json(&answer);
    assert_eq!(answer.notice, None);
    // Seven or eight commands: one whose failure reads as a sandbox denial (`touch x`:
    // "Read-only file system") is sometimes left out of the stream (no `item.started` either),
    // although its output reached the model. The count is a sample, not a record.
    let calls = answer.tool_calls.expect("codex counts its commands");
    assert!((7..=8).contains(&calls), "{calls}");
    let usage = answer.usage.expect("usage");
    assert!(usage.input_tokens > 0, "{usage:?}");
    assert!(
        told(&fake, true),
        "the prompt does not say it reads the repository"
    );

    let requests = fake.model_requests();
    assert_eq!(requests.len(), 2, "one tool round, then the answer");
    // `--output-schema` reaches the model as a strict `text.format`.
    let first: Value = serde_json::from_str(&requests[0].body).expect("json");
    let format = &first["text"]["format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["strict"], true);
    assert_eq!(format["schema"], response_schema());
    // The model saw exactly these tools.
    for r in &requests {
        assert_eq!(r.path, "/v1/responses");
        let mut tools = r.tools.clone();
        tools.sort();
        assert_eq!(
            tools,
            [
                "exec_command",
                "request_user_input",
                "view_image",
                "write_stdin"
            ]
        );
    }

    let result_of = |id: &str| {
        fake.tool_result(id)
            .unwrap_or_else(|| panic!("no result for {id}"))
    };
    assert!(result_of("in_snapshot").text.contains(UNDIFFED));
    for secret in [
        OUTSIDE_SECRET,
        OUTDIR_SECRET,
        AUTH_MARKER,
        "PROVIDER_KEY_MARKER",
    ] {
        assert_eq!(fake.tool_result_containing(secret), None, "{secret}");
    }
    for id in ["outside_abs", "via_symlink", "via_dir_symlink", "auth"] {
        let r = result_of(id);
        assert!(r.text.contains("No such file or directory"), "{r:?}");
    }
    assert!(!result_of("env").text.contains(KEY_VAR));
    // The hard link's inode is inside the mounted snapshot: its text comes back.
    assert!(result_of("via_hardlink").text.contains(HARDLINK_SECRET));
    assert!(result_of("touch").text.contains("Read-only file system"));

    // Nothing written, no configuration from the snapshot ran or reached the prompt.
    run.hostile
        .assert_inert(&before, &fake, &["PROVIDER_KEY_MARKER"]);
}

/// The real codex behind the `without-namespaces` wrapper (see its header) in `mode`, or `None`
/// after saying why the test is skipped: the wrapper needs a user namespace of its own.
async fn without_namespaces(bin: &Path, mode: &str, test: &str) -> Option<Fake> {
    let mut check = ProcessSpec::new("unshare", ".", Duration::from_secs(10));
    check.args = [
        "-Ur",
        "sh",
        "-c",
        "echo 0 > /proc/sys/user/max_user_namespaces",
    ]
    .map(OsString::from)
    .into();
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    check.env = vec![("PATH".into(), path)];
    if !process::run(check).await.is_ok_and(|o| o.status.success()) {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: `unshare -Ur` cannot create a user namespace here"
        );
        return None;
    }
    let wrapper = Fake::new("without-namespaces", mode);
    std::fs::write(wrapper.path("real"), bin.as_os_str().as_encoded_bytes()).expect("real");
    Some(wrapper)
}

/// A host where Codex's sandbox cannot start: the lens's probe says so, the lens reviews the
/// diff alone (its workspace is the scratch directory, its prompt says so) and its notice says
/// why.
#[tokio::test]
async fn real_codex_whose_sandbox_cannot_start_reviews_the_diff_alone() {
    const TEST: &str = "real_codex_whose_sandbox_cannot_start_reviews_the_diff_alone";
    let Some(bin) = real_cli("codex", TEST) else {
        return;
    };
    let Some(wrapper) = without_namespaces(&bin, "all", TEST).await else {
        return;
    };
    let run = CodexRun::new(bin);
    let fake = FakeModel::start(vec![Turn::text(LENS_JSON)]);
    let wrapped = PathBuf::from(wrapper.bin());
    let why = sandbox_works(&wrapped, &run.env(&fake))
        .await
        .expect_err("the probe must fail");
    assert!(says_sandbox_failed(&why), "{why}");

    let before = run.hostile.listing();
    let answer = run.review(&wrapped, &fake).await.expect("an answer");
    assert_lens_json(&answer);
    assert_eq!(answer.tool_calls, Some(0));
    let notice = answer.notice.expect("a notice").to_string();
    // Why: the tail of the probe's stderr (after a warning of codex's own, under `/tmp`).
    assert!(
        notice.starts_with(
            "lens real: codex cannot start its sandbox on this host, so it reviews the diff alone ("
        ) && notice.contains("bwrap: Creating new namespace failed"),
        "{notice}"
    );
    let argv = wrapper.argv();
    let c = argv.iter().position(|a| a == "-C").expect("-C");
    let workspace = Path::new(&argv[c + 1]);
    let leaf = workspace.file_name().and_then(|n| n.to_str()).unwrap_or("");
    assert!(
        leaf.starts_with("reviewbot-codex-"),
        "{}",
        workspace.display()
    );
    assert!(told(&fake, false), "the prompt does not say diff alone");
    assert!(!told(&fake, true));
    let snapshot = run.hostile.snapshot().display().to_string();
    assert_eq!(fake.bodies_containing(&snapshot), Vec::<String>::new());
    run.hostile
        .assert_inert(&before, &fake, &["PROVIDER_KEY_MARKER", UNDIFFED]);
}

/// Where the probe passes but the review's commands cannot start their sandbox, Codex fails
/// closed and quietly (the turn still completes with an answer): the lens fails, as it read
/// nothing.
#[tokio::test]
async fn real_codex_whose_commands_cannot_start_the_sandbox_fails_the_lens() {
    const TEST: &str = "real_codex_whose_commands_cannot_start_the_sandbox_fails_the_lens";
    let Some(bin) = real_cli("codex", TEST) else {
        return;
    };
    let Some(wrapper) = without_namespaces(&bin, "probe-passes", TEST).await else {
        return;
    };
    let run = CodexRun::new(bin);
    let fake = FakeModel::start(vec![
        Turn::calls([exec("in_snapshot", "cat src/util/helpers.rs")]),
        Turn::text(LENS_JSON),
    ]);
    let f = run
        .review(Path::new(&wrapper.bin()), &fake)
        .await
        .expect_err("a failure");
    assert_eq!(f.kind, FailureKind::Fatal);
    assert!(
        f.message.contains("sandbox could not start"),
        "{}",
        f.message
    );
    let result = fake.tool_result("in_snapshot").expect("a result");
    assert!(says_sandbox_failed(&result.text), "{result:?}");
    assert!(!result.text.contains(UNDIFFED));
    // The model was told it could read, and did get an answer in.
    assert!(told(&fake, true));
    assert_eq!(fake.model_requests().len(), 2);
}

/// What the lens makes of a provider that refuses a request.
#[tokio::test]
async fn real_codex_reports_api_errors() {
    let Some(bin) = real_cli("codex", "real_codex_reports_api_errors") else {
        return;
    };
    let run = CodexRun::new(bin);
    let fake = FakeModel::start(vec![Turn::error(
        400,
        "invalid_request_error",
        "fake bad request",
    )]);
    let f = run.review(&run.bin, &fake).await.expect_err("a failure");
    assert_eq!(f.kind, FailureKind::Fatal);
    assert!(
        f.message.starts_with("codex's turn failed: "),
        "{}",
        f.message
    );
    assert!(f.message.contains("fake bad request"), "{}", f.message);
}
