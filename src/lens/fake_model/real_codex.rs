//! Opt-in (`REVIEWBOT_REAL_CLI_DIR`): the real Codex, with the read-only argv and its sandbox,
//! driven through a real tool loop by the fake model over a hostile snapshot.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use super::read_only::{
    Sandbox, codex_package_dir, codex_read_only_args, codex_sandbox, probe, says_sandbox_failed,
};
use super::real_claude::{LENS_JSON, show};
use super::snapshot::{HARDLINK_SECRET, Hostile, OUTDIR_SECRET, OUTSIDE_SECRET, UNDIFFED};
use super::{FakeModel, ToolCall, Turn};
use crate::lens::cli_env::fake::real_cli;
use crate::lens::contract::response_schema;
use crate::lens::process::{self, ProcessOutput, ProcessSpec};

/// The variable the custom provider reads its key from, and the key: neither may reach a
/// command's environment or a request body.
const KEY_VAR: &str = "REVIEWBOT_FAKE_PROVIDER_KEY";
const KEY: &str = "sk-fake-PROVIDER_KEY_MARKER_8b2f";
/// In `$CODEX_HOME/auth.json`.
const AUTH_MARKER: &str = "AUTH_JSON_MARKER_d90c";

/// The custom provider pointing at the fake (Responses API), as `-c` overrides.
fn provider_args(fake: &FakeModel) -> [OsString; 4] {
    let provider = format!(
        r#"model_providers.fake={{name="fake", base_url="{}", env_key="{KEY_VAR}", wire_api="responses"}}"#,
        fake.v1_url()
    );
    ["-c", "model_provider=fake", "-c", &provider].map(OsString::from)
}

/// Everything a Codex run needs, for one hostile snapshot.
pub(super) struct CodexRun {
    pub(super) bin: PathBuf,
    pub(super) hostile: Hostile,
    schema: PathBuf,
}

impl CodexRun {
    pub(super) fn new(bin: PathBuf) -> Self {
        let hostile = Hostile::new();
        let schema = hostile.root().join("schema.json");
        std::fs::write(&schema, response_schema().to_string()).expect("schema");
        std::fs::write(
            hostile.codex_home().join("auth.json"),
            json!({"OPENAI_API_KEY": AUTH_MARKER}).to_string(),
        )
        .expect("auth.json");
        Self {
            bin,
            hostile,
            schema,
        }
    }

    /// The environment: `PATH`, a fresh `HOME` and `CODEX_HOME`, the provider key.
    pub(super) fn env(&self) -> Vec<(OsString, OsString)> {
        let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
        vec![
            ("PATH".into(), path),
            ("HOME".into(), self.hostile.home().into()),
            ("CODEX_HOME".into(), self.hostile.codex_home().into()),
            (KEY_VAR.into(), KEY.into()),
        ]
    }

    /// The read-only argv with the fake as provider, before the final `-`.
    pub(super) fn args(&self, fake: &FakeModel) -> Vec<OsString> {
        let pkg = codex_package_dir(&self.bin).expect("the codex launcher is in @openai");
        let mut args =
            codex_read_only_args(&self.hostile.snapshot(), "gpt-fake-1", &pkg, &self.schema)
                .expect("utf-8 paths");
        let stdin = args.pop();
        assert_eq!(stdin.as_deref(), Some("-".as_ref()));
        args.extend(provider_args(fake));
        args.push("-".into());
        args
    }

    /// Runs `program args` (codex, or a wrapper around it) from `HOME`, the prompt on stdin.
    pub(super) async fn run(&self, program: &Path, args: Vec<OsString>) -> ProcessOutput {
        let mut spec = ProcessSpec::new(program, self.hostile.home(), Duration::from_secs(60));
        spec.args = args;
        spec.env = self.env();
        spec.stdin = b"Review the change to src/lib.rs. Answer with the lens JSON.".to_vec();
        process::run(spec).await.expect("codex ran")
    }
}

fn exec(id: &str, cmd: &str) -> ToolCall {
    ToolCall::new(id, "exec_command", json!({"cmd": cmd}))
}

/// Every JSONL event on stdout.
pub(super) fn events(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}

/// The `item.completed` items of `kind`.
pub(super) fn completed<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == kind)
        .map(|e| &e["item"])
        .collect()
}

#[tokio::test]
async fn real_codex_reads_the_snapshot_and_nothing_outside() {
    let Some(bin) = real_cli("codex", "real_codex_reads_the_snapshot_and_nothing_outside") else {
        return;
    };
    let run = CodexRun::new(bin);
    // Hosts that forbid unprivileged user namespaces cannot run a `codex-cli` lens at all.
    let sandbox = codex_sandbox(&run.bin, &run.env()).await;
    assert_eq!(sandbox, Sandbox::Works, "Codex's sandbox cannot start here");
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
    let before = run.hostile.listing();
    let out = run.run(&run.bin, run.args(&fake)).await;
    show(&fake, &out);
    assert!(out.status.success(), "exit {:?}", out.status.code());

    // What the lens reads from stdout.
    let events = events(&out.stdout);
    let commands = completed(&events, "command_execution");
    // Seven or eight: a command whose failure reads as a sandbox denial (`touch x`: "Read-only
    // file system") is sometimes left out of the JSONL stream (no `item.started` either),
    // although its output reached the model. The stream is no complete record of commands.
    assert!((7..=8).contains(&commands.len()), "{commands:?}");
    for c in &commands {
        assert!(
            c["command"].is_string() && c["aggregated_output"].is_string(),
            "{c}"
        );
        assert!(c["exit_code"].is_i64(), "{c}");
        let ok = c["exit_code"] == 0;
        assert_eq!(c["status"], if ok { "completed" } else { "failed" }, "{c}");
    }
    let helper = commands
        .iter()
        .find(|c| {
            c["command"]
                .as_str()
                .is_some_and(|s| s.contains("helpers.rs"))
        })
        .expect("the helper's cat");
    assert_eq!(helper["exit_code"], 0);
    let messages = completed(&events, "agent_message");
    assert_eq!(messages.last().map(|m| &m["text"]), Some(&json!(LENS_JSON)));
    let turn = events
        .iter()
        .find(|e| e["type"] == "turn.completed")
        .expect("turn.completed");
    assert!(
        turn["usage"]["input_tokens"]
            .as_u64()
            .is_some_and(|n| n > 0),
        "{turn}"
    );
    assert!(turn["usage"]["output_tokens"].as_u64().is_some(), "{turn}");

    // The model saw exactly these tools.
    let requests = fake.model_requests();
    assert_eq!(requests.len(), 2, "one tool round, then the answer");
    // `--output-schema` reaches the model as a strict `text.format`.
    let first: Value = serde_json::from_str(&requests[0].body).expect("json");
    let format = &first["text"]["format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["strict"], true);
    assert_eq!(format["schema"], response_schema());
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

/// Runs a program with user namespaces taken away from it (and only from it): in a child user
/// namespace, `max_user_namespaces` is set to 0, so `bwrap` cannot create its own.
const NO_NAMESPACES: &str = r#"echo 0 > /proc/sys/user/max_user_namespaces && exec "$0" "$@""#;

fn without_namespaces(codex: &Path, args: Vec<OsString>) -> Vec<OsString> {
    let mut wrapped: Vec<OsString> = ["-Ur", "sh", "-c", NO_NAMESPACES]
        .map(OsString::from)
        .into();
    wrapped.push(codex.into());
    wrapped.extend(args);
    wrapped
}

#[tokio::test]
async fn real_codex_without_a_sandbox_reads_nothing_and_the_probe_says_so() {
    let Some(bin) = real_cli(
        "codex",
        "real_codex_without_a_sandbox_reads_nothing_and_the_probe_says_so",
    ) else {
        return;
    };
    let unshare = Path::new("unshare");
    let run = CodexRun::new(bin);
    // The simulation needs a user namespace of its own; where there is none, the test above
    // already fails on the probe.
    let mut check = ProcessSpec::new(unshare, run.hostile.home(), Duration::from_secs(10));
    check.args = without_namespaces(Path::new("true"), Vec::new());
    check.env = run.env();
    if !process::run(check).await.is_ok_and(|o| o.status.success()) {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED real_codex_without_a_sandbox_reads_nothing_and_the_probe_says_so: \
             `unshare -Ur` cannot create a user namespace here"
        );
        return;
    }
    let fake = FakeModel::start(vec![
        Turn::calls([exec("in_snapshot", "cat src/util/helpers.rs")]),
        Turn::text(LENS_JSON),
    ]);
    let out = run
        .run(unshare, without_namespaces(&run.bin, run.args(&fake)))
        .await;
    show(&fake, &out);
    // Codex fails closed and quietly: the command never ran, the turn still completes.
    assert!(out.status.success(), "exit {:?}", out.status.code());
    let result = fake.tool_result("in_snapshot").expect("a result");
    assert!(says_sandbox_failed(&result.text), "{result:?}");
    assert!(!result.text.contains(UNDIFFED));
    let events = events(&out.stdout);
    let commands = completed(&events, "command_execution");
    assert_eq!(commands.len(), 1, "{commands:?}");
    assert_eq!(commands[0]["exit_code"], 1);
    let output = commands[0]["aggregated_output"].as_str().expect("output");
    assert!(says_sandbox_failed(output), "{output}");
    let messages = completed(&events, "agent_message");
    assert_eq!(messages.last().map(|m| &m["text"]), Some(&json!(LENS_JSON)));

    // The probe, run the same way, says so before any lens runs.
    let probe = probe(
        unshare.as_os_str(),
        &without_namespaces(&run.bin, Vec::new()),
        &run.env(),
    )
    .await;
    match probe {
        Sandbox::Broken { detail } => assert!(says_sandbox_failed(&detail), "{detail}"),
        Sandbox::Works => panic!("the probe missed a sandbox that cannot start"),
    }
}

/// What the lens reads when the provider refuses a request.
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
    let out = run.run(&run.bin, run.args(&fake)).await;
    show(&fake, &out);
    assert_eq!(out.status.code(), Some(1));
    let events = events(&out.stdout);
    let failed = events
        .iter()
        .find(|e| e["type"] == "turn.failed")
        .expect("turn.failed");
    let message = failed["error"]["message"].as_str().expect("a message");
    assert!(message.contains("fake bad request"), "{message}");
    assert!(completed(&events, "agent_message").is_empty());
}
