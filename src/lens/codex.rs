//! The `codex-cli` lens: Codex CLI in non-interactive mode (`codex exec --json`, JSONL events).
//!
//! The prompt goes on stdin and the argv is constant; the CLI runs read-only and ephemeral in an
//! empty scratch directory (holding only the response schema), with an allow-listed environment
//! (never an API key, which would switch billing to the API), and its process group is ended on
//! timeout (`docs/contract.md` "Backends", "Isolation").

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use serde_json::Value;

use super::agent_cli::{AgentCli, Prepared, bin_of};
use super::backend::Pending;
use super::cli_env::{Cli, CliEnv, mentions_status, says_usage_limit, stderr_note};
use super::preflight::{
    Check, Located, PreflightEnv, QUOTE_CHARS, cli_found, locate, probe, status_text,
};
use super::process::{
    self, Keep, OUTPUT_EXCERPT_CHARS, ProcessError, ProcessOutput, ProcessSpec, STDERR_TAIL_CHARS,
    child_text, describe_status,
};
use super::{Answer, BackendKind, Failure, FailureKind, LensNotice, LensSpec, Usage};
use crate::credentials::{Holds, SecretVar, var};
use crate::lens::contract::LensResponse;

/// The binary looked up on the child's `PATH` when the lens names none.
pub const DEFAULT_BIN: &str = "codex";

/// The schema file's name in the scratch directory.
pub const SCHEMA_FILE: &str = "schema.json";

const INSTALL: &str = "install the Codex CLI, or set the lens's `bin`";

/// The argv after the program name: constant but for the model, the workspace the model may
/// read, the directory of the codex package and the schema path; the prompt is never here
/// (`-` reads it from stdin). `None` when `codex_pkg` is not UTF-8 (it goes inside a TOML value).
///
/// - A permission profile mounts only the workspace, the system's minimal directories and the
///   Codex package (its sandbox re-executes the codex binary from there), read-only. No
///   `--sandbox`: it selects the older policy and the profile is then ignored, and
///   `--sandbox read-only` lets commands read the whole machine (the Codex login included) and
///   follow symlinks out.
/// - `inherit="core"`: no API key variable reaches a command's environment.
/// - `project_doc_max_bytes=0`, `skills.include_instructions=false`: no `AGENTS.md` and no skill
///   list from the snapshot in the prompt; `--ignore-user-config`, `--ignore-rules`: nothing of
///   the user's either.
/// - `--disable multi_agent --disable goals`, `web_search="disabled"`: the tools shrink to
///   running commands in the sandbox and reading their output.
/// - `check_for_update_on_startup`, `analytics.enabled`, `--disable plugins`: no look-ups of
///   OpenAI's or GitHub's hosts (each costs seconds offline).
pub fn args(
    model: Option<&str>,
    workspace: &Path,
    codex_pkg: &Path,
    schema: &Path,
    extra: &[OsString],
) -> Option<Vec<OsString>> {
    let pkg = toml::Value::String(codex_pkg.to_str()?.to_owned()).to_string();
    let filesystem = format!(
        r#"permissions.review.filesystem={{":minimal"="read", ":workspace_roots"={{"."="read"}}, {pkg}="read"}}"#
    );
    let mut args: Vec<OsString> = [
        "exec",
        "--json",
        // A snapshot is not a git repository.
        "--skip-git-repo-check",
        "--ephemeral",
        "--ignore-user-config",
        "--ignore-rules",
        "-C",
    ]
    .map(OsString::from)
    .into();
    args.push(workspace.into());
    if let Some(model) = model {
        args.push("-m".into());
        args.push(model.into());
    }
    args.push("--output-schema".into());
    args.push(schema.into());
    args.extend(
        [
            "-c",
            r#"default_permissions="review""#,
            "-c",
            &filesystem,
            "-c",
            r#"shell_environment_policy.inherit="core""#,
            "-c",
            "project_doc_max_bytes=0",
            "-c",
            "skills.include_instructions=false",
            "-c",
            r#"web_search="disabled""#,
            "--disable",
            "multi_agent",
            "--disable",
            "goals",
            "--disable",
            "plugins",
            "-c",
            "check_for_update_on_startup=false",
            "-c",
            "analytics.enabled=false",
        ]
        .map(OsString::from),
    );
    args.extend(extra.iter().cloned());
    args.push("-".into());
    Some(args)
}

/// The directory the sandbox must be able to read for Codex to start in it: the npm package
/// directory `@openai` holding the platform package with the real binary, found from the
/// `codex` launcher (usually `node_modules/.bin/codex`, a link to `@openai/codex/bin/codex.js`)
/// by resolving its links and walking up; for a codex outside npm, the binary's own directory.
pub fn package_dir(bin: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(bin).ok()?;
    real.ancestors()
        .find(|dir| dir.file_name() == Some(OsStr::new("@openai")))
        .or_else(|| real.parent())
        .map(Path::to_path_buf)
}

/// Whether Codex's sandbox can start on this host, asked once per binary per process: `codex
/// sandbox -- true` with the lens's environment exits 1 where the host forbids the namespaces
/// it needs, and then every command a lens ran would fail while the turn still "succeeds".
/// `Err` holds the redacted tail of its stderr.
pub(crate) async fn sandbox_works(bin: &Path, env: &CliEnv) -> Result<(), String> {
    static PROBED: LazyLock<Mutex<HashMap<PathBuf, Result<(), String>>>> =
        LazyLock::new(Mutex::default);
    if let Some(known) = PROBED.lock().ok().and_then(|p| p.get(bin).cloned()) {
        return known;
    }
    let mut spec = ProcessSpec::new(bin.as_os_str(), std::env::temp_dir(), SANDBOX_PROBE_TIMEOUT);
    spec.args = ["sandbox", "--", "true"].map(OsString::from).into();
    spec.env = env.child_env(Cli::Codex);
    let result = match process::run(spec).await {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(child_text(&out.stderr, STDERR_TAIL_CHARS, Keep::Tail)),
        Err(e) => Err(e.to_string()),
    };
    if let Ok(mut probed) = PROBED.lock() {
        probed.insert(bin.to_path_buf(), result.clone());
    }
    result
}

/// How long the sandbox probe may take (0.2 s where it works).
const SANDBOX_PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether a command's output (a `command_execution` item's `aggregated_output`) says the
/// sandbox could not start: Codex then fails closed, every command fails, and the turn
/// completes.
pub(crate) fn says_sandbox_failed(aggregated_output: &str) -> bool {
    aggregated_output.contains("bwrap:")
}

/// The `codex-cli` backend.
pub struct CodexCli;

impl AgentCli for CodexCli {
    const FALLBACK: BackendKind = BackendKind::Openai;
    const VENDOR: crate::lens::Vendor = crate::lens::Vendor::Openai;
    const SECRETS: &'static [SecretVar] = &[var("CODEX_API_KEY", Holds::Value, true)];
    const CLI: Cli = Cli::Codex;
    const NAME: &'static str = "codex";
    const DEFAULT_BIN: &'static str = DEFAULT_BIN;
    const INSTALL: &'static str = INSTALL;
    const TAKES_SCHEMA: bool = true;

    /// The workspace is the snapshot, or the scratch directory (holding only the schema) when
    /// there is none or when Codex's sandbox cannot start here: then the lens reviews the diff
    /// alone, and says so.
    fn prepare<'a>(
        spec: &'a LensSpec,
        env: &'a CliEnv,
        scratch: &'a Path,
        snapshot: Option<&'a Path>,
        _max_turns: u32,
        answer: crate::lens::contract::AnswerKind,
    ) -> Pending<'a, Result<Prepared, Failure>> {
        Box::pin(async move {
            // The real CLI refuses a missing CODEX_HOME; say so plainly rather than relay its
            // stderr.
            if let Some(home) = env.get("CODEX_HOME")
                && !Path::new(home).is_dir()
            {
                return Err(Failure::fatal(format!(
                    "codex: CODEX_HOME points to a folder that does not exist ({})",
                    child_text(home.as_encoded_bytes(), 200, Keep::Head)
                )));
            }
            let schema = scratch.join(SCHEMA_FILE);
            let schema_json = serde_json::to_vec_pretty(&answer.schema())
                .map_err(|e| Failure::fatal(format!("codex: could not encode the schema: {e}")))?;
            std::fs::write(&schema, schema_json).map_err(|e| {
                Failure::fatal(format!("codex: could not write the schema file: {e}"))
            })?;
            // Not found: the run says so (and may fall back); the package is then moot.
            let bin = match locate(bin_of(spec, DEFAULT_BIN), env.get("PATH")) {
                Located::Found(path) => path,
                _ => PathBuf::from(bin_of(spec, DEFAULT_BIN)),
            };
            let pkg = package_dir(&bin).unwrap_or_else(|| scratch.to_path_buf());
            let mut workspace = snapshot;
            let mut notice = None;
            if snapshot.is_some()
                && let Err(why) = sandbox_works(&bin, env).await
            {
                workspace = None;
                notice = Some(LensNotice::NoSandbox {
                    lens: spec.name.clone(),
                    why,
                });
            }
            let args = args(
                spec.model.as_deref(),
                workspace.unwrap_or(scratch),
                &pkg,
                &schema,
                env.test_args(),
            )
            .ok_or_else(|| {
                Failure::fatal(
                    "codex: the path of its package is not UTF-8, which its config needs",
                )
            })?;
            Ok(Prepared {
                args,
                cwd: scratch.to_path_buf(),
                reads_snapshot: workspace.is_some(),
                notice,
            })
        })
    }

    /// The real CLI offline reconnects and then waits for the network without end: only the
    /// timeout stops it, and its last `error` event says why it never answered.
    fn explain(error: &ProcessError) -> Option<String> {
        match error {
            ProcessError::Timeout { stdout, .. } => events(stdout)
                .last_error
                .map(|last| format!("; last error: {}", short(&last))),
            _ => None,
        }
    }

    fn read_output(out: &ProcessOutput) -> Result<Answer, Failure> {
        read_output(out)
    }

    fn preflight<'a>(
        subject: &'a str,
        spec: &'a LensSpec,
        env: &'a PreflightEnv,
    ) -> Pending<'a, Vec<Check>> {
        Box::pin(preflight(subject, spec, env))
    }
}

/// What the event stream said, as far as the lens cares.
#[derive(Debug, Default)]
struct Events {
    /// How many lines were JSON objects at all.
    parsed: usize,
    /// The text of the last completed `agent_message`: the answer.
    answer: Option<String>,
    /// Commands the agent ran (its tool calls: reading the snapshot).
    commands: u32,
    /// A command's output came from the sandbox failing to start (`bwrap: …`): the commands
    /// ran nowhere, though the turn may still "succeed".
    sandbox_failed: bool,
    /// Summed over `turn.completed` events.
    usage: Option<Usage>,
    turn_completed: bool,
    /// `turn.failed`'s `error.message`.
    turn_failed: Option<String>,
    /// The last `error` event's message: not a failure by itself (the CLI reports its reconnects
    /// this way), but the best explanation when the run fails.
    last_error: Option<String>,
}

/// Reads the JSONL stream line by line; lines that are not JSON and unknown events are skipped.
fn events(stdout: &[u8]) -> Events {
    let mut ev = Events::default();
    for line in stdout.split(|&b| b == b'\n') {
        let Ok(Value::Object(event)) = serde_json::from_slice::<Value>(line.trim_ascii()) else {
            continue;
        };
        ev.parsed += 1;
        let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
        match event.get("type").and_then(Value::as_str) {
            Some("item.completed") => {
                let item = event.get("item");
                match item.and_then(|i| i.get("type")).and_then(Value::as_str) {
                    Some("agent_message") => {
                        ev.answer =
                            Some(text(item.and_then(|i| i.get("text"))).unwrap_or_default());
                    }
                    Some("command_execution") => {
                        ev.commands += 1;
                        let output = item.and_then(|i| i.get("aggregated_output"));
                        if output
                            .and_then(Value::as_str)
                            .is_some_and(says_sandbox_failed)
                        {
                            ev.sandbox_failed = true;
                        }
                    }
                    _ => {}
                }
            }
            Some("turn.completed") => {
                ev.turn_completed = true;
                if let Some(u) = event.get("usage") {
                    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
                    let sum = ev.usage.get_or_insert_with(Usage::default);
                    // `cached_input_tokens` is part of `input_tokens` (OpenAI's accounting).
                    sum.input_tokens = sum.input_tokens.saturating_add(n("input_tokens"));
                    sum.output_tokens = sum.output_tokens.saturating_add(n("output_tokens"));
                }
            }
            Some("turn.failed") => {
                let message = text(event.get("error").and_then(|e| e.get("message")));
                ev.turn_failed = Some(message.unwrap_or_default());
            }
            Some("error") => {
                if let Some(message) = text(event.get("message")) {
                    ev.last_error = Some(message);
                }
            }
            _ => {}
        }
    }
    ev
}

/// A finished run as an answer or a classified failure. The events decide, not the exit status:
/// some versions exit 0 after a failed turn.
fn read_output(out: &ProcessOutput) -> Result<Answer, Failure> {
    let ev = events(&out.stdout);
    let last_error = ev
        .last_error
        .as_deref()
        .map(|e| format!("; last error: {}", short(e)))
        .unwrap_or_default();

    if let Some(message) = &ev.turn_failed {
        return Err(classify_turn_failed(message));
    }
    if ev.sandbox_failed {
        // Its commands ran nowhere, so whatever it answered was not checked against the code.
        return Err(Failure::fatal(
            "codex's sandbox could not start on this host (bwrap failed), so it read nothing; \
             its answer is not used",
        ));
    }
    if ev.parsed == 0 {
        let excerpt = child_text(&out.stdout, OUTPUT_EXCERPT_CHARS, Keep::Head);
        return Err(if out.status.success() {
            Failure::fatal(format!(
                "codex printed no JSON events{}",
                if excerpt.is_empty() {
                    String::new()
                } else {
                    format!("; it began: {excerpt}")
                }
            ))
        } else {
            Failure::fatal(format!(
                "codex exited with {}{}",
                describe_status(out.status),
                stderr_note(&out.stderr)
            ))
        });
    }
    let answer = match ev.answer.as_deref().map(str::trim) {
        Some(text) if !text.is_empty() => text,
        Some(_) => {
            return Err(Failure::fatal(format!(
                "codex returned an empty answer{last_error}"
            )));
        }
        None if out.status.success() => {
            return Err(Failure::fatal(format!(
                "codex gave no final answer{last_error}"
            )));
        }
        None => {
            return Err(Failure::fatal(format!(
                "codex exited with {} and no final answer{last_error}{}",
                describe_status(out.status),
                stderr_note(&out.stderr)
            )));
        }
    };
    // An answer from a run that died before its turn completed may be a fragment.
    if !ev.turn_completed && !out.status.success() {
        return Err(Failure::fatal(format!(
            "codex exited with {} before its turn completed{last_error}{}",
            describe_status(out.status),
            stderr_note(&out.stderr)
        )));
    }
    let response = LensResponse::parse(answer).map_err(|e| {
        Failure::fatal(format!(
            "codex's answer is unreadable: {e}; it began: {}",
            child_text(answer.as_bytes(), OUTPUT_EXCERPT_CHARS, Keep::Head)
        ))
    })?;
    Ok(Answer {
        response,
        usage: ev.usage,
        cost_usd: None,
        // The events do not name the model; the lens's own is the best there is.
        model: None,
        raw: answer.to_owned(),
        tool_calls: Some(ev.commands),
        tool_records: Vec::new(),
        notice: None,
    })
}

/// A failed turn: a usage limit and a lost login are eligible for fallback; the rest is fatal.
fn classify_turn_failed(message: &str) -> Failure {
    let lower = message.to_lowercase();
    let said = if message.trim().is_empty() {
        String::new()
    } else {
        format!(": {}", short(message))
    };
    if says_usage_limit(&lower) || mentions_status(&lower, 429) {
        return Failure::new(
            FailureKind::UsageLimit,
            format!("codex hit a usage or rate limit{said}"),
        );
    }
    if mentions_status(&lower, 401)
        || [
            "not logged in",
            "unauthorized",
            "login",
            "log in",
            "sign in",
            "signing in",
        ]
        .iter()
        .any(|p| lower.contains(p))
    {
        return Failure::new(
            FailureKind::NotLoggedIn,
            format!("codex is not logged in{said}"),
        );
    }
    Failure::fatal(format!("codex's turn failed{said}"))
}

/// A message from the CLI (untrusted: it may quote the prompt), redacted and shortened.
fn short(message: &str) -> String {
    child_text(message.as_bytes(), STDERR_TAIL_CHARS, Keep::Head)
}

// ---- doctor ----

async fn preflight(subject: &str, spec: &LensSpec, env: &PreflightEnv) -> Vec<Check> {
    let found = match cli_found(spec, DEFAULT_BIN, Cli::Codex, INSTALL, env).await {
        Ok(found) => found,
        Err(detail) => return vec![Check::fail(subject, format!("codex-cli: {detail}"))],
    };
    let head = format!("codex-cli {found}");
    if let Some(home) = env.cli.get("CODEX_HOME")
        && !Path::new(home).is_dir()
    {
        return vec![Check::fail(
            subject,
            format!(
                "{head}; CODEX_HOME points to a folder that does not exist ({})",
                child_text(home.as_encoded_bytes(), QUOTE_CHARS, Keep::Head)
            ),
        )];
    }
    let out = match probe(&found.path, &["login", "status"], Cli::Codex, env).await {
        Ok(out) => out,
        Err(e) => {
            return vec![Check::fail(
                subject,
                format!("{head}; `codex login status` failed: {e}"),
            )];
        }
    };
    let status = status_text(&out.stderr, &out.stdout);
    if out.status.success() {
        let mut checks = vec![Check::ok(
            subject,
            format!("{head}; logged in (codex login status: {status})"),
        )];
        if status.to_ascii_lowercase().contains("api key") {
            checks.push(Check::warn(
                subject,
                "codex is logged in with an API key: its runs are billed to the API, not to a \
                 ChatGPT plan; run `codex login` to use the subscription",
            ));
        }
        // Without its sandbox the lens cannot read the repository: worth knowing before a round.
        if let Err(why) = sandbox_works(&found.path, &env.cli).await {
            checks.push(Check::warn(
                subject,
                LensNotice::NoSandbox {
                    lens: spec.name.clone(),
                    why,
                }
                .to_string(),
            ));
        }
        checks
    } else if status.to_ascii_lowercase().contains("not logged in") {
        vec![Check::fail(
            subject,
            format!(
                "{head}; not logged in (codex login status: {status}); run `codex login` (or \
                 `codex login --device-auth`), or copy a ChatGPT auth.json into CODEX_HOME"
            ),
        )]
    } else {
        vec![Check::fail(
            subject,
            format!(
                "{head}; `codex login status` exited with {}: {status}",
                describe_status(out.status)
            ),
        )]
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::lens::LensRequest;
    use crate::lens::agent_cli;
    use crate::lens::contract::response_schema;
    use crate::lens::process::DEFAULT_MAX_OUTPUT;

    async fn run(spec: &LensSpec, req: &LensRequest, env: &CliEnv) -> Result<Answer, Failure> {
        run_capped(spec, req, env, DEFAULT_MAX_OUTPUT).await
    }

    async fn run_capped(
        spec: &LensSpec,
        req: &LensRequest,
        env: &CliEnv,
        max_output: usize,
    ) -> Result<Answer, Failure> {
        agent_cli::run::<CodexCli>(spec, req, env, 40, max_output).await
    }
    use crate::lens::BackendKind;
    use crate::testing::fake_cli::{self as fake, Fake};

    /// A fake with an existing `CODEX_HOME` beside it.
    fn setup(mode: &str) -> (Fake, CliEnv) {
        let fake = Fake::new("codex", mode);
        let home = fake.path("codex-home");
        std::fs::create_dir(&home).expect("codex home");
        let env = fake::cli_env(fake.dir.path(), &home);
        (fake, env)
    }

    async fn run_mode(mode: &str) -> (Fake, Result<Answer, Failure>) {
        let (fake, env) = setup(mode);
        let spec = fake.lens(BackendKind::CodexCli, Some("gpt-5.6-terra"));
        let answer = run(&spec, &fake::request("Review this change."), &env).await;
        (fake, answer)
    }

    async fn failure(mode: &str) -> Failure {
        let (_fake, answer) = run_mode(mode).await;
        answer.expect_err("fails")
    }

    #[tokio::test]
    async fn the_last_agent_message_is_the_answer() {
        let (_fake, answer) = run_mode("ok").await;
        let answer = answer.expect("ok");
        assert_eq!(answer.response.findings.len(), 1);
        assert_eq!(answer.response.findings[0].title, "b is never called");
        assert_eq!(answer.response.summary, None);
        assert_eq!(
            answer.usage,
            Some(Usage {
                input_tokens: 24763,
                output_tokens: 122
            })
        );
        assert_eq!(answer.cost_usd, None);
        assert!(answer.raw.starts_with("{\"findings\""), "{}", answer.raw);
    }

    #[tokio::test]
    async fn the_child_gets_constant_argv_the_prompt_on_stdin_a_clean_env_and_only_the_schema() {
        let (fake, env) = setup("ok");
        let spec = fake.lens(BackendKind::CodexCli, Some("gpt-5.6-terra"));
        let prompt = fake::big_prompt();
        run(&spec, &fake::request(&prompt), &env).await.expect("ok");

        let cwd = fake.read("cwd");
        let cwd = Path::new(cwd.trim());
        let leaf = cwd.file_name().and_then(|n| n.to_str()).unwrap_or("");
        assert!(leaf.starts_with("reviewbot-codex-"), "{}", cwd.display());
        assert!(!cwd.starts_with(env!("CARGO_MANIFEST_DIR")));
        assert_eq!(fake.read("listing"), "schema.json\n");
        assert!(!cwd.exists(), "the scratch dir outlived the run");

        let argv = fake.argv();
        let after = |flag: &str| {
            let at = argv.iter().position(|a| a == flag).expect(flag);
            argv[at + 1].clone()
        };
        let (workspace, schema) = (after("-C"), after("--output-schema"));
        // The scratch dir may be reached through a symlink (`/tmp`); compare by name. Without a
        // snapshot the workspace is the scratch dir, which holds only the schema.
        assert!(workspace.ends_with(&format!("/{leaf}")), "{workspace}");
        assert!(
            schema.ends_with(&format!("/{leaf}/schema.json")),
            "{schema}"
        );
        // The fake is no npm install: its own directory is what the sandbox may read.
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake-cli/codex");
        let pkg = package_dir(&fixtures).expect("the fixture's directory");
        let want: Vec<String> = args(
            Some("gpt-5.6-terra"),
            Path::new(&workspace),
            &pkg,
            Path::new(&schema),
            &[],
        )
        .expect("utf-8")
        .into_iter()
        .map(|a| a.into_string().expect("utf-8"))
        .collect();
        assert_eq!(argv, want);
        assert!(!argv.iter().any(|a| a == "--sandbox"), "{argv:?}");
        assert!(!fake.read("argv").contains("PROMPT-MARKER"));
        let stdin = fake.read("stdin");
        assert!(stdin.starts_with(&prompt), "stdin is not the prompt");
        assert!(
            stdin.contains("You see the diff alone"),
            "{}",
            &stdin[prompt.len()..]
        );
        let written: serde_json::Value =
            serde_json::from_str(&fake.read("schema")).expect("schema json");
        assert_eq!(written, response_schema());

        assert_eq!(
            fake.env_names(),
            [
                "CODEX_HOME",
                "HOME",
                "LANG",
                "LC_ALL",
                "PATH",
                "TMPDIR",
                "USER"
            ]
        );
        let home = fake.path("codex-home").to_string_lossy().into_owned();
        assert!(fake.env().contains(&("CODEX_HOME".to_owned(), home)));
    }

    #[tokio::test]
    async fn no_model_means_the_cli_default() {
        let (fake, env) = setup("ok");
        let spec = fake.lens(BackendKind::CodexCli, None);
        run(&spec, &fake::request("p"), &env).await.expect("ok");
        let argv = fake.argv();
        assert!(!argv.iter().any(|a| a == "-m"), "{argv:?}");
        assert_eq!(argv.last().map(String::as_str), Some("-"));
    }

    #[tokio::test]
    async fn without_bin_codex_is_found_on_the_childs_path_and_codex_home_may_be_unset() {
        let fake = Fake::new("codex", "ok");
        let path = format!("{}:/usr/bin:/bin", fake.dir.path().display());
        let env = CliEnv::from_vars([("PATH", path)]);
        let mut spec = fake.lens(BackendKind::CodexCli, None);
        spec.bin = None;
        run(&spec, &fake::request("p"), &env).await.expect("ok");
        assert_eq!(fake.env_names(), ["PATH"]);
    }

    /// The fake's `-C` workspace and working directory, and the name of the scratch directory.
    fn workspace_and_cwd(fake: &Fake) -> (PathBuf, PathBuf) {
        let workspace = PathBuf::from(fake.read("workspace").trim());
        let cwd = PathBuf::from(fake.read("cwd").trim());
        (workspace, cwd)
    }

    fn is_scratch(dir: &Path) -> bool {
        dir.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("reviewbot-codex-"))
    }

    #[tokio::test]
    async fn with_a_snapshot_codex_reads_it_as_its_workspace_from_the_scratch_dir() {
        let (fake, env) = setup("read-snapshot");
        let (snapshot, answer) =
            fake::review_snapshot::<CodexCli>(BackendKind::CodexCli, &fake, &env, true).await;

        // The snapshot's text came back, through a command and the answer.
        assert_eq!(answer.response.summary.as_deref(), Some(fake::SNAPSHOT_LIB));
        assert_eq!(answer.tool_calls, Some(1));
        assert_eq!(answer.notice, None);
        let (workspace, cwd) = workspace_and_cwd(&fake);
        assert_eq!(workspace, snapshot.path());
        assert!(is_scratch(&cwd), "{}", cwd.display());
        assert_eq!(fake.read("listing"), "schema.json\n");
        // The probe ran first, as `codex sandbox -- true`.
        assert_eq!(fake.read("sandbox-argv"), "<sandbox>\n<-->\n<true>\n");
    }

    #[tokio::test]
    async fn where_the_sandbox_cannot_start_codex_reviews_the_diff_alone_and_says_why() {
        let (fake, env) = setup("sandbox-broken");
        let (snapshot, answer) =
            fake::review_snapshot::<CodexCli>(BackendKind::CodexCli, &fake, &env, false).await;

        assert_eq!(answer.response.findings.len(), 1);
        assert_eq!(
            answer.notice.map(|n| n.to_string()).as_deref(),
            Some(
                "lens codex: codex cannot start its sandbox on this host, so it reviews the diff \
                 alone (bwrap: Creating new namespace failed: nesting depth or \
                 /proc/sys/user/max_*_namespaces exceeded (ENOSPC))"
            )
        );
        // The workspace is the scratch dir, the one it runs in; the snapshot is not named.
        let (workspace, cwd) = workspace_and_cwd(&fake);
        assert!(is_scratch(&cwd), "{}", cwd.display());
        assert_eq!(workspace.file_name(), cwd.file_name());
        assert!(
            !fake
                .read("argv")
                .contains(&*snapshot.path().to_string_lossy())
        );
    }

    #[tokio::test]
    async fn without_a_snapshot_the_sandbox_is_not_probed() {
        let (fake, env) = setup("sandbox-broken");
        let spec = fake.lens(BackendKind::CodexCli, None);
        let answer = run(&spec, &fake::request("p"), &env).await.expect("ok");
        assert_eq!(answer.notice, None);
        assert!(!fake.path("sandbox-argv").exists());
    }

    #[tokio::test]
    async fn the_probe_reports_the_sandbox_stderr_and_a_codex_that_cannot_start() {
        let (fake, env) = setup("sandbox-broken");
        let why = sandbox_works(Path::new(&fake.bin()), &env)
            .await
            .expect_err("broken");
        assert!(says_sandbox_failed(&why), "{why}");
        let why = sandbox_works(Path::new("/nonexistent/codex"), &env)
            .await
            .expect_err("missing");
        assert!(why.contains("/nonexistent/codex"), "{why}");
        let (fake, env) = setup("ok");
        assert_eq!(sandbox_works(Path::new(&fake.bin()), &env).await, Ok(()));
    }

    #[test]
    fn a_bwrap_error_is_a_sandbox_failure() {
        assert!(says_sandbox_failed(
            "bwrap: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)\n"
        ));
        assert!(!says_sandbox_failed(
            "touch: cannot touch 'x': Read-only file system\n"
        ));
    }

    #[test]
    fn the_package_path_is_quoted_as_toml() {
        let pkg = Path::new(r#"/opt/odd "dir"\x/@openai"#);
        let args = args(
            Some("m"),
            Path::new("/s"),
            pkg,
            Path::new("/schema.json"),
            &[],
        )
        .expect("utf-8");
        let filesystem = args
            .iter()
            .filter_map(|a| a.to_str())
            .find(|a| a.starts_with("permissions.review.filesystem="))
            .expect("the profile");
        let (_, value) = filesystem.split_once('=').expect("key=value");
        let parsed: toml::Table =
            toml::from_str(&format!("v = {value}")).expect("the value is TOML");
        let fs = parsed["v"].as_table().expect("a table");
        assert_eq!(fs[r#"/opt/odd "dir"\x/@openai"#].as_str(), Some("read"));
        assert_eq!(fs[":minimal"].as_str(), Some("read"));
        assert_eq!(fs[":workspace_roots"]["."].as_str(), Some("read"));
        assert_eq!(args.last().map(OsString::as_os_str), Some(OsStr::new("-")));
    }

    #[test]
    fn the_package_dir_is_found_through_the_launcher_symlink() {
        let dir = tempfile::TempDir::new().expect("temp");
        let launcher = dir.path().join("node_modules/@openai/codex/bin/codex.js");
        std::fs::create_dir_all(launcher.parent().expect("parent")).expect("dirs");
        std::fs::write(&launcher, "").expect("launcher");
        let bin_dir = dir.path().join("node_modules/.bin");
        std::fs::create_dir_all(&bin_dir).expect(".bin");
        std::os::unix::fs::symlink("../@openai/codex/bin/codex.js", bin_dir.join("codex"))
            .expect("symlink");
        let real = std::fs::canonicalize(dir.path().join("node_modules/@openai")).expect("real");
        assert_eq!(package_dir(&bin_dir.join("codex")), Some(real));
        // A codex outside any npm package: its own directory.
        std::fs::write(dir.path().join("codex"), "").expect("bare");
        let own = std::fs::canonicalize(dir.path()).expect("real");
        assert_eq!(package_dir(&dir.path().join("codex")), Some(own));
        assert_eq!(package_dir(&dir.path().join("missing")), None);
    }

    #[tokio::test]
    async fn reconnect_errors_then_an_answer_is_a_success() {
        let (_fake, answer) = run_mode("reconnect").await;
        assert_eq!(answer.expect("ok").response.findings.len(), 1);
    }

    #[tokio::test]
    async fn a_sandbox_that_could_not_start_fails_the_lens_even_when_the_turn_succeeds() {
        let f = failure("sandbox-failed").await;
        assert_eq!(f.kind, FailureKind::Fatal);
        assert!(
            f.message.contains("sandbox could not start"),
            "{}",
            f.message
        );
    }

    #[tokio::test]
    async fn a_usage_limit_is_eligible_for_fallback() {
        let f = failure("usage-limit").await;
        assert_eq!(f.kind, FailureKind::UsageLimit);
        assert!(
            f.message
                .starts_with("codex hit a usage or rate limit: You've hit your usage limit."),
            "{}",
            f.message
        );
    }

    #[tokio::test]
    async fn an_expired_login_is_eligible_for_fallback() {
        let f = failure("not-logged-in").await;
        assert_eq!(f.kind, FailureKind::NotLoggedIn);
        assert!(
            f.message
                .starts_with("codex is not logged in: unexpected status 401 Unauthorized"),
            "{}",
            f.message
        );
    }

    #[tokio::test]
    async fn a_failed_turn_fails_even_with_exit_status_zero() {
        let f = failure("turn-failed-exit0").await;
        assert_eq!(f.kind, FailureKind::Fatal);
        assert!(
            f.message
                .starts_with("codex's turn failed: unexpected status 400 Bad Request"),
            "{}",
            f.message
        );
    }

    #[tokio::test]
    async fn no_final_answer_is_fatal_even_with_exit_status_zero() {
        let f = failure("no-answer").await;
        assert_eq!(f.kind, FailureKind::Fatal);
        assert!(
            f.message
                .starts_with("codex gave no final answer; last error: Reconnecting... 5/5"),
            "{}",
            f.message
        );
        let f = failure("empty-answer").await;
        assert_eq!(f.message, "codex returned an empty answer");
    }

    #[tokio::test]
    async fn garbage_is_fatal() {
        let f = failure("garbage").await;
        assert_eq!(f.kind, FailureKind::Fatal);
        assert_eq!(
            f.message,
            "codex printed no JSON events; it began: I am not JSON. Sorry."
        );
    }

    #[tokio::test]
    async fn a_crash_shows_the_redacted_stderr_tail() {
        let f = failure("crash").await;
        assert_eq!(f.kind, FailureKind::Fatal);
        assert!(
            f.message
                .starts_with("codex exited with status 1; stderr: Error: invalid configuration"),
            "{}",
            f.message
        );
        assert!(
            f.message.contains("[REDACTED openai-api-key]"),
            "{}",
            f.message
        );
        assert!(!f.message.contains("a1B2c3D4e5"), "{}", f.message);
    }

    #[tokio::test]
    async fn a_hang_times_out_and_the_grandchild_dies() {
        let (fake, env) = setup("hang");
        let mut spec = fake.lens(BackendKind::CodexCli, None);
        spec.timeout = Duration::from_millis(300);
        let started = Instant::now();
        let f = run(&spec, &fake::request("p"), &env)
            .await
            .expect_err("times out");
        assert!(started.elapsed() < Duration::from_millis(1500));
        assert_eq!(f.kind, FailureKind::Timeout);
        assert!(
            f.message.starts_with("codex timed out after 300ms"),
            "{}",
            f.message
        );
        // The stream's last `error` event says why it never answered.
        assert!(
            f.message
                .ends_with("; last error: Reconnecting... waiting for network"),
            "{}",
            f.message
        );
        let pid = fake::pid(&fake, "grandchild");
        assert!(fake::gone_soon(pid).await, "grandchild {pid} survived");
    }

    #[tokio::test]
    async fn huge_output_is_capped() {
        let (fake, env) = setup("huge");
        let spec = fake.lens(BackendKind::CodexCli, None);
        let f = run_capped(&spec, &fake::request("p"), &env, 64 * 1024)
            .await
            .expect_err("capped");
        assert_eq!(f.kind, FailureKind::Fatal);
        assert_eq!(f.message, "codex: output exceeded 65536 bytes");
    }

    #[tokio::test]
    async fn a_missing_codex_home_stops_before_the_cli_runs() {
        let fake = Fake::new("codex", "ok");
        let missing = fake.path("no-such-home");
        let env = fake::cli_env(fake.dir.path(), &missing);
        let spec = fake.lens(BackendKind::CodexCli, None);
        let f = run(&spec, &fake::request("p"), &env)
            .await
            .expect_err("fails");
        assert_eq!(f.kind, FailureKind::Fatal);
        assert_eq!(
            f.message,
            format!(
                "codex: CODEX_HOME points to a folder that does not exist ({})",
                missing.display()
            )
        );
        assert!(!fake.ran());
    }

    #[tokio::test]
    async fn a_missing_cli_is_eligible_for_fallback() {
        let (fake, env) = setup("ok");
        let mut spec = fake.lens(BackendKind::CodexCli, None);
        spec.bin = Some("/nonexistent/codex".to_owned());
        let f = run(&spec, &fake::request("p"), &env)
            .await
            .expect_err("missing");
        assert_eq!(f.kind, FailureKind::Missing);
        assert_eq!(
            f.message,
            "`/nonexistent/codex` was not found (install the Codex CLI, or set the lens's `bin`)"
        );
    }

    #[test]
    fn failed_turns_are_classified_by_their_message() {
        let kind = |m: &str| classify_turn_failed(m).kind;
        assert_eq!(
            kind("Rate limit reached for gpt-5"),
            FailureKind::UsageLimit
        );
        assert_eq!(
            kind("exceeded retry limit, last status: 429 Too Many Requests"),
            FailureKind::UsageLimit
        );
        assert_eq!(kind("Not logged in"), FailureKind::NotLoggedIn);
        assert_eq!(
            kind("Please log in again: your refresh token was revoked"),
            FailureKind::NotLoggedIn
        );
        assert_eq!(kind("context window exceeded"), FailureKind::Fatal);
        assert_eq!(kind(""), FailureKind::Fatal);
        assert_eq!(classify_turn_failed("").message, "codex's turn failed");
    }

    #[test]
    fn odd_streams_never_pass_as_answers() {
        let ev = events(
            b"\xff\xfe not utf-8\n[1,2]\n{\"type\":7}\n{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":5}}\n{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":-1,\"output_tokens\":\"x\"}}\n{\"type\":\"turn.failed\"}\n{\"type\":\"error\"}\n",
        );
        assert_eq!(ev.parsed, 5);
        assert_eq!(ev.answer.as_deref(), Some(""));
        assert_eq!(ev.usage, Some(Usage::default()));
        assert_eq!(ev.turn_failed.as_deref(), Some(""));
        assert_eq!(ev.last_error, None);
    }

    /// Opt-in (`REVIEWBOT_REAL_CLI_DIR`): the real CLI accepts our exact argv and schema file,
    /// and, logged out, either fails its turn (online) or reconnects until the lens timeout
    /// (offline); either way nothing it started outlives the run.
    #[tokio::test]
    async fn real_cli_logged_out_fails_and_leaves_nothing_behind() {
        let Some(bin) = fake::real_cli(
            "codex",
            "real_cli_logged_out_fails_and_leaves_nothing_behind",
        ) else {
            return;
        };
        let home = tempfile::TempDir::new().expect("home");
        let codex_home = home.path().join("codex-home");
        std::fs::create_dir(&codex_home).expect("codex home");
        let env = fake::real_env(home.path(), &[("CODEX_HOME", &codex_home)]);
        let mut spec = LensSpec::new("codex", BackendKind::CodexCli);
        spec.bin = Some(bin.to_string_lossy().into_owned());
        spec.model = Some("gpt-5.6-terra".to_owned());
        spec.timeout = Duration::from_secs(5);
        let f = run(&spec, &fake::request("Review this change."), &env)
            .await
            .expect_err("logged out");
        // Visible with `--nocapture`: what the real CLI made of it.
        eprintln!("real codex: {f:?}");
        let offline =
            f.kind == FailureKind::Timeout && f.message.starts_with("codex timed out after 5s");
        assert!(offline || f.kind == FailureKind::NotLoggedIn, "{f:?}");
        let needle = format!("CODEX_HOME={}", codex_home.display());
        let mut left = fake::processes_with_env(&needle);
        for _ in 0..100 {
            if left.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            left = fake::processes_with_env(&needle);
        }
        assert!(left.is_empty(), "codex processes survived: {left:?}");

        // A missing CODEX_HOME is caught before the CLI runs.
        let env = fake::real_env(home.path(), &[("CODEX_HOME", &home.path().join("nope"))]);
        let f = run(&spec, &fake::request("p"), &env)
            .await
            .expect_err("missing home");
        assert!(
            f.message
                .contains("CODEX_HOME points to a folder that does not exist")
        );
    }
}
