//! The `claude-cli` lens: Claude Code in headless mode (`claude -p --output-format json`).
//!
//! The prompt goes on stdin and the argv is constant; the CLI has no tools and no MCP servers,
//! runs in an empty scratch directory with an allow-listed environment (never an API key, which
//! would switch billing to the API), and its process group is ended on timeout
//! (`docs/contract.md` "Backends", "Isolation").

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::agent_cli::{AgentCli, Prepared};
use super::backend::Pending;
use super::cli_env::{Cli, CliEnv, says_usage_limit, stderr_note};
use super::preflight::{Check, PreflightEnv, cli_found};
use super::process::{
    Keep, OUTPUT_EXCERPT_CHARS, ProcessOutput, STDERR_TAIL_CHARS, child_text, describe_status,
};
use super::{Answer, BackendKind, Failure, FailureKind, LensSpec, Usage};
use crate::credentials::{Holds, SecretVar, var};
use crate::lens::contract::LensResponse;

/// The binary looked up on the child's `PATH` when the lens names none.
pub const DEFAULT_BIN: &str = "claude";

/// Turn cap without a snapshot. With no tools one turn answers; a little headroom, and the
/// wall-clock timeout bounds the rest (the cap has been seen overrun).
pub const MAX_TURNS: u32 = 3;

/// The tools for a snapshot: reading and searching files in the working directory, nothing
/// else. Not `Glob`: with an absolute `pattern` it lists file names anywhere on the machine
/// whatever the working directory; `Grep` in `files_with_matches` mode lists the snapshot's
/// files instead (the real CLI's behaviour, `docs/security.md`).
pub const READ_TOOLS: &str = "Read,Grep";

/// Variables that keep the CLI quiet: no look-ups of Anthropic's hosts beyond the API call, and
/// no memory section of its own in the system prompt.
const QUIET_ENV: [(&str, &str); 2] = [
    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
    ("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1"),
];

const INSTALL: &str = "install Claude Code, or set the lens's `bin`";

/// The argv after the program name: constant but for the model, the turn cap and whether the
/// read tools are on; the prompt is never here.
///
/// - `--tools` names the whole tool set (`""`: none); it takes several values, so an option
///   always follows it, never the prompt.
/// - `--permission-mode dontAsk`: a read outside the working directory is refused, not left
///   waiting for an answer.
/// - `--setting-sources ""`: no settings from the snapshot or the user's home, so no hooks, no
///   `CLAUDE.md`, no `permissions.allow`, no `verbose` turning the result into an array.
/// - `--strict-mcp-config` and an empty config: no `.mcp.json` server is spawned.
/// - `--no-session-persistence`: no transcript under `~/.claude/projects/`; under `serve` one
///   home serves every installation, and each review's prompt and reads would pile up there.
pub fn args(model: Option<&str>, max_turns: u32, read: bool) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["-p".into(), "--output-format".into(), "json".into()];
    if let Some(model) = model {
        args.push("--model".into());
        args.push(model.into());
    }
    let max_turns = max_turns.to_string();
    args.extend(
        [
            "--max-turns",
            &max_turns,
            "--tools",
            if read { READ_TOOLS } else { "" },
            "--permission-mode",
            "dontAsk",
            "--setting-sources",
            "",
            "--strict-mcp-config",
            "--mcp-config",
            r#"{"mcpServers":{}}"#,
            "--disable-slash-commands",
            "--no-session-persistence",
        ]
        .map(OsString::from),
    );
    args
}

/// The `claude-cli` backend.
pub struct ClaudeCli;

impl AgentCli for ClaudeCli {
    const FALLBACK: BackendKind = BackendKind::Anthropic;
    const VENDOR: crate::lens::Vendor = crate::lens::Vendor::Anthropic;
    /// A gateway's bearer, the operator's (the subscription token is in reviewbot's own list:
    /// no lens of another backend may ever be given it).
    const SECRETS: &'static [SecretVar] = &[var("ANTHROPIC_AUTH_TOKEN", Holds::Value, true)];
    const CLI: Cli = Cli::Claude;
    const NAME: &'static str = "claude";
    const DEFAULT_BIN: &'static str = DEFAULT_BIN;
    const INSTALL: &'static str = INSTALL;

    const QUIET_ENV: &'static [(&'static str, &'static str)] = &QUIET_ENV;

    /// With a snapshot, the CLI runs in it with the read tools (it treats its working directory
    /// as the one it may read); without, in the empty scratch directory with no tools.
    fn prepare<'a>(
        spec: &'a LensSpec,
        _env: &'a CliEnv,
        scratch: &'a Path,
        snapshot: Option<&'a Path>,
        max_turns: u32,
        _answer: crate::lens::contract::AnswerKind,
    ) -> Pending<'a, Result<Prepared, Failure>> {
        let model = spec.model.as_deref();
        let prepared = match snapshot {
            Some(root) => Prepared {
                args: args(model, max_turns, true),
                cwd: root.to_path_buf(),
                reads_snapshot: true,
                notice: None,
            },
            None => Prepared {
                args: args(model, MAX_TURNS, false),
                cwd: scratch.to_path_buf(),
                reads_snapshot: false,
                notice: None,
            },
        };
        Box::pin(async move { Ok(prepared) })
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

/// Reads a finished run: the result object decides, not the exit status.
fn read_output(out: &ProcessOutput) -> Result<Answer, Failure> {
    let Some(result) = result_object(&out.stdout) else {
        let excerpt = child_text(&out.stdout, OUTPUT_EXCERPT_CHARS, Keep::Head);
        return Err(if out.status.success() {
            Failure::fatal(format!(
                "claude printed no result object{}",
                excerpt_note(&excerpt)
            ))
        } else {
            let stderr = stderr_note(&out.stderr);
            // No stderr: what it printed instead is the best clue.
            let clue = if stderr.is_empty() {
                excerpt_note(&excerpt)
            } else {
                stderr
            };
            Failure::fatal(format!(
                "claude exited with {} without a result{clue}",
                describe_status(out.status)
            ))
        });
    };
    read_result(&result)
}

/// The one result object: the whole output, or (verbose settings) the last `result` element of
/// an array. As a last resort, the last line holding one (a stray warning line before it).
fn result_object(stdout: &[u8]) -> Option<Value> {
    let text = String::from_utf8_lossy(stdout);
    let is_result = |v: &Value| v.get("type").and_then(Value::as_str) == Some("result");
    let pick = |v: Value| match v {
        Value::Array(items) => items.into_iter().rev().find(is_result),
        v if is_result(&v) => Some(v),
        _ => None,
    };
    if let Ok(v) = serde_json::from_str::<Value>(text.trim()) {
        return pick(v);
    }
    text.lines()
        .rev()
        .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
        .find_map(pick)
}

/// A result object as an answer or a classified failure.
fn read_result(result: &Value) -> Result<Answer, Failure> {
    let text = result.get("result").and_then(Value::as_str).unwrap_or("");
    // `is_error` is the field to branch on; a result that lacks it is not a success.
    let is_error = result
        .get("is_error")
        .and_then(Value::as_bool)
        .unwrap_or(true);
    if is_error {
        return Err(classify_error(result, text));
    }
    if text.trim().is_empty() {
        // Seen despite output tokens (anthropics/claude-code#38706): a failure, never "no findings".
        return Err(Failure::fatal("claude returned an empty answer"));
    }
    let response = LensResponse::parse(text).map_err(|e| {
        Failure::fatal(format!(
            "claude's answer is unreadable: {e}{}",
            excerpt_note(&child_text(
                text.as_bytes(),
                OUTPUT_EXCERPT_CHARS,
                Keep::Head
            ))
        ))
    })?;
    Ok(Answer {
        response,
        usage: usage(result),
        cost_usd: result.get("total_cost_usd").and_then(Value::as_f64),
        model: answering_model(result),
        raw: text.to_owned(),
        tool_calls: None,
        tool_records: Vec::new(),
        notice: None,
    })
}

/// Why a result with `is_error: true` failed, in the order that decides fallback: the HTTP status
/// when the CLI reports it, then the message, then the subtype.
fn classify_error(result: &Value, text: &str) -> Failure {
    let status = result.get("api_error_status").and_then(Value::as_u64);
    let subtype = result
        .get("subtype")
        .and_then(Value::as_str)
        .unwrap_or("unknown");
    let errors: Vec<&str> = result
        .get("errors")
        .and_then(Value::as_array)
        .map(|e| e.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let detail = if text.trim().is_empty() {
        errors.join("; ")
    } else {
        text.to_owned()
    };
    let detail = child_text(detail.as_bytes(), STDERR_TAIL_CHARS, Keep::Head);
    let said = if detail.is_empty() {
        String::new()
    } else {
        format!(": {detail}")
    };
    let lower = text.to_lowercase();
    let usage_limit = || {
        Failure::new(
            FailureKind::UsageLimit,
            format!("claude hit a usage or rate limit{said}"),
        )
    };
    let not_logged_in = || {
        Failure::new(
            FailureKind::NotLoggedIn,
            format!("claude is not logged in{said}"),
        )
    };
    let overloaded = || {
        let code = status.map(|s| format!(" ({s})")).unwrap_or_default();
        Failure::new(
            FailureKind::Transient { retry_after: None },
            format!("claude: the API is overloaded or failing{code}{said}"),
        )
    };

    // The CLI's own status first: it cannot come from the model.
    match status {
        Some(429) => return usage_limit(),
        Some(401) => return not_logged_in(),
        Some(s) if s == 529 || (500..600).contains(&s) => return overloaded(),
        _ => {}
    }
    // An error subtype (turn cap, budget, a failed tool) may carry model text in `result`; it
    // must not read as a limit or a lost login, which would trigger a paid fallback.
    if subtype != "success" {
        return Failure::fatal(format!("claude stopped with {subtype}{said}"));
    }
    // API failures come as `subtype: success` with the error text in `result`; older CLIs give
    // no status.
    if says_usage_limit(&lower) {
        return usage_limit();
    }
    if ["not logged in", "please run /login", "invalid api key"]
        .iter()
        .any(|p| lower.contains(p))
    {
        return not_logged_in();
    }
    if lower.contains("overloaded") {
        return overloaded();
    }
    match status {
        Some(s) => Failure::fatal(format!("claude: API error {s}{said}")),
        None if detail.is_empty() => Failure::fatal("claude reported an error without a message"),
        None => Failure::fatal(format!("claude reported an error{said}")),
    }
}

/// Token usage. Input counts the cached prompt too: it is what the model read.
fn usage(result: &Value) -> Option<Usage> {
    let u = result.get("usage")?;
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        input_tokens: n("input_tokens")
            .saturating_add(n("cache_creation_input_tokens"))
            .saturating_add(n("cache_read_input_tokens")),
        output_tokens: n("output_tokens"),
    })
}

/// The model that answered: the `modelUsage` key with the most output (Claude Code may also
/// call a small model for housekeeping).
fn answering_model(result: &Value) -> Option<String> {
    let models = result.get("modelUsage")?.as_object()?;
    models
        .iter()
        .map(|(name, u)| {
            let out = u.get("outputTokens").and_then(Value::as_u64).unwrap_or(0);
            (out, name)
        })
        .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(a.1)))
        .map(|(_, name)| name.clone())
}

fn excerpt_note(excerpt: &str) -> String {
    if excerpt.is_empty() {
        String::new()
    } else {
        format!("; it began: {excerpt}")
    }
}

// ---- doctor ----

async fn preflight(subject: &str, spec: &LensSpec, env: &PreflightEnv) -> Vec<Check> {
    let mut checks = Vec::new();
    let found = match cli_found(spec, DEFAULT_BIN, Cli::Claude, INSTALL, env).await {
        Ok(found) => Some(found),
        Err(detail) => {
            checks.push(Check::fail(subject, format!("claude-cli: {detail}")));
            None
        }
    };
    if let Some(found) = found {
        let login = claude_login(&env.cli);
        let head = format!("claude-cli {found}");
        checks.push(match login {
            Ok(how) => Check::ok(subject, format!("{head}; logged in ({how})")),
            Err(why) => Check::fail(subject, format!("{head}; {why}")),
        });
    }
    if env.apis.is_set("ANTHROPIC_API_KEY") {
        checks.push(Check::warn(
            subject,
            "ANTHROPIC_API_KEY is set in reviewbot's environment; reviewbot removes it from the \
             claude child (the CLI would otherwise bill the API instead of the subscription), so \
             it is used only by `anthropic` lenses and the API fallback",
        ));
    }
    checks
}

/// How `claude` is logged in, without a billed call, or why it is not.
fn claude_login(cli: &CliEnv) -> Result<String, String> {
    if cli.get("CLAUDE_CODE_OAUTH_TOKEN").is_some() {
        return Ok("CLAUDE_CODE_OAUTH_TOKEN set".to_owned());
    }
    let dir = match (cli.get("CLAUDE_CONFIG_DIR"), cli.get("HOME")) {
        (Some(dir), _) => Some(PathBuf::from(dir)),
        (None, Some(home)) => Some(Path::new(home).join(".claude")),
        (None, None) => None,
    };
    if let Some(file) = dir.map(|d| d.join(".credentials.json"))
        && file.is_file()
    {
        return Ok(format!("credentials in {}", file.display()));
    }
    if cfg!(target_os = "macos") {
        return Ok("not verified: on macOS `/login` keeps the login in the Keychain".to_owned());
    }
    Err(
        "not logged in: run `claude setup-token` (CI: set CLAUDE_CODE_OAUTH_TOKEN) or \
         `claude /login`"
            .to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;
    use std::path::Path;
    use std::process::ExitStatus;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::lens::LensRequest;
    use crate::lens::agent_cli;
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
        agent_cli::run::<ClaudeCli>(spec, req, env, 40, max_output).await
    }
    use crate::lens::BackendKind;
    use crate::testing::fake_cli::{self as fake, Fake};

    async fn run_mode(mode: &str) -> (Fake, Result<Answer, Failure>) {
        let fake = Fake::new("claude", mode);
        let env = fake::cli_env(fake.dir.path(), fake.dir.path());
        let spec = fake.lens(BackendKind::ClaudeCli, Some("claude-opus-5"));
        let answer = run(&spec, &fake::request("Review this change."), &env).await;
        (fake, answer)
    }

    async fn failure(mode: &str) -> Failure {
        let (_fake, answer) = run_mode(mode).await;
        answer.expect_err("fails")
    }

    #[tokio::test]
    async fn an_answer_carries_findings_usage_cost_and_model() {
        let (_fake, answer) = run_mode("ok").await;
        let answer = answer.expect("ok");
        assert_eq!(answer.response.findings.len(), 1);
        assert_eq!(answer.response.findings[0].title, "b is never called");
        assert_eq!(answer.response.summary.as_deref(), Some("One finding."));
        assert_eq!(
            answer.usage,
            Some(Usage {
                input_tokens: 4 + 1694 + 38821,
                output_tokens: 101
            })
        );
        assert_eq!(answer.cost_usd, Some(0.032542999999999996));
        // The model with the most output, not the housekeeping one.
        assert_eq!(answer.model.as_deref(), Some("claude-opus-5-20261101"));
        assert!(answer.raw.starts_with("{\"findings\""), "{}", answer.raw);
    }

    #[tokio::test]
    async fn the_child_gets_constant_argv_the_prompt_on_stdin_a_clean_env_and_an_empty_dir() {
        let fake = Fake::new("claude", "ok");
        let env = fake::cli_env(fake.dir.path(), fake.dir.path());
        let spec = fake.lens(BackendKind::ClaudeCli, Some("claude-opus-5"));
        let prompt = fake::big_prompt();
        run(&spec, &fake::request(&prompt), &env).await.expect("ok");

        let argv = fake.argv();
        assert_eq!(
            argv,
            [
                "-p",
                "--output-format",
                "json",
                "--model",
                "claude-opus-5",
                "--max-turns",
                "3",
                "--tools",
                "",
                "--permission-mode",
                "dontAsk",
                "--setting-sources",
                "",
                "--strict-mcp-config",
                "--mcp-config",
                r#"{"mcpServers":{}}"#,
                "--disable-slash-commands",
                "--no-session-persistence",
            ]
        );
        assert!(!fake.read("argv").contains("PROMPT-MARKER"));
        let stdin = fake.read("stdin");
        assert!(stdin.starts_with(&prompt), "stdin is not the prompt");
        assert!(
            stdin.contains("You see the diff alone"),
            "{}",
            &stdin[prompt.len()..]
        );

        assert_eq!(
            fake.env_names(),
            [
                "CLAUDE_CODE_DISABLE_AUTO_MEMORY",
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
                "CLAUDE_CODE_OAUTH_TOKEN",
                "CLAUDE_CONFIG_DIR",
                "HOME",
                "LANG",
                "LC_ALL",
                "PATH",
                "TMPDIR",
                "USER"
            ]
        );
        let env = fake.env();
        assert!(env.contains(&(
            "CLAUDE_CODE_OAUTH_TOKEN".to_owned(),
            "sk-ant-oat01-subscription".to_owned()
        )));

        let cwd = fake.read("cwd");
        let cwd = Path::new(cwd.trim());
        let leaf = cwd.file_name().and_then(|n| n.to_str()).unwrap_or("");
        assert!(leaf.starts_with("reviewbot-claude-"), "{}", cwd.display());
        assert!(!cwd.starts_with(env!("CARGO_MANIFEST_DIR")));
        assert_eq!(fake.read("listing"), "", "the scratch dir was not empty");
        assert!(!cwd.exists(), "the scratch dir outlived the run");
    }

    #[tokio::test]
    async fn no_model_means_the_cli_default() {
        let fake = Fake::new("claude", "ok");
        let env = fake::cli_env(fake.dir.path(), fake.dir.path());
        let spec = fake.lens(BackendKind::ClaudeCli, None);
        run(&spec, &fake::request("p"), &env).await.expect("ok");
        let argv = fake.argv();
        assert!(!argv.iter().any(|a| a == "--model"), "{argv:?}");
        let want: Vec<String> = args(None, MAX_TURNS, false)
            .into_iter()
            .map(|a| a.into_string().expect("utf-8"))
            .collect();
        assert_eq!(argv, want);
    }

    #[tokio::test]
    async fn with_a_snapshot_claude_runs_in_it_with_the_read_tools_and_writes_nothing() {
        let fake = Fake::new("claude", "read-snapshot");
        let env = fake::cli_env(fake.dir.path(), fake.dir.path());
        let (snapshot, answer) =
            fake::review_snapshot::<ClaudeCli>(BackendKind::ClaudeCli, &fake, &env, true).await;

        // The snapshot's text came back through the fake's answer, escaped and read again.
        assert_eq!(answer.response.summary.as_deref(), Some(fake::SNAPSHOT_LIB));
        assert_eq!((answer.tool_calls, answer.notice), (None, None));
        let cwd = fake.read("cwd");
        let snapshot_dir = std::fs::canonicalize(snapshot.path()).expect("canonical");
        assert_eq!(Path::new(cwd.trim()), snapshot_dir);
        assert_eq!(fake.read("listing"), "src\n");
        // 40 tool rounds and the answer.
        let want: Vec<String> = args(None, 41, true)
            .into_iter()
            .map(|a| a.into_string().expect("utf-8"))
            .collect();
        assert_eq!(fake.argv(), want);
        let tools = want.iter().position(|a| a == "--tools").expect("--tools");
        assert_eq!(want[tools + 1], "Read,Grep");
    }

    #[tokio::test]
    async fn without_bin_claude_is_found_on_the_childs_path() {
        let fake = Fake::new("claude", "ok");
        let path = format!("{}:/usr/bin:/bin", fake.dir.path().display());
        let env = CliEnv::from_vars([("PATH", path)]);
        let mut spec = fake.lens(BackendKind::ClaudeCli, None);
        spec.bin = None;
        run(&spec, &fake::request("p"), &env).await.expect("ok");
        assert!(fake.ran());
    }

    #[tokio::test]
    async fn a_fenced_answer_with_prose_is_read() {
        let (_fake, answer) = run_mode("fenced").await;
        let answer = answer.expect("ok");
        assert_eq!(answer.response.findings.len(), 1);
        assert_eq!(answer.response.findings[0].title, "b needs a doc comment");
        assert_eq!(answer.model.as_deref(), Some("claude-opus-5"));
    }

    #[tokio::test]
    async fn a_verbose_array_yields_its_last_result() {
        let (_fake, answer) = run_mode("verbose").await;
        let answer = answer.expect("ok");
        assert!(answer.response.findings.is_empty());
        assert_eq!(answer.response.summary.as_deref(), Some("Looks fine."));
        assert_eq!(
            answer.usage,
            Some(Usage {
                input_tokens: 3,
                output_tokens: 9
            })
        );
    }

    #[tokio::test]
    async fn an_empty_result_is_a_failure_not_no_findings() {
        let f = failure("empty").await;
        assert_eq!(f.kind, FailureKind::Fatal);
        assert_eq!(f.message, "claude returned an empty answer");
    }

    #[tokio::test]
    async fn not_logged_in_is_eligible_for_fallback() {
        let f = failure("not-logged-in").await;
        assert_eq!(f.kind, FailureKind::NotLoggedIn);
        assert_eq!(
            f.message,
            "claude is not logged in: Not logged in · Please run /login"
        );
        let f = failure("invalid-key").await;
        assert_eq!(f.kind, FailureKind::NotLoggedIn);
        assert!(f.message.contains("Invalid API key"), "{}", f.message);
    }

    #[tokio::test]
    async fn a_usage_limit_is_eligible_for_fallback() {
        let f = failure("usage-limit").await;
        assert_eq!(f.kind, FailureKind::UsageLimit);
        assert_eq!(
            f.message,
            "claude hit a usage or rate limit: API Error: Request rejected (429) · retry later"
        );
        let f = failure("usage-limit-text").await;
        assert_eq!(f.kind, FailureKind::UsageLimit);
        assert!(f.message.contains("usage limit reached"), "{}", f.message);
    }

    #[tokio::test]
    async fn overloaded_is_transient() {
        let f = failure("overloaded").await;
        assert_eq!(f.kind, FailureKind::Transient { retry_after: None });
        assert_eq!(
            f.message,
            "claude: the API is overloaded or failing (529): API Error: Repeated 529 Overloaded errors"
        );
    }

    #[tokio::test]
    async fn an_error_subtype_is_named() {
        let f = failure("max-turns").await;
        assert_eq!(f.kind, FailureKind::Fatal);
        assert_eq!(
            f.message,
            "claude stopped with error_max_turns: Reached maximum number of turns (3)"
        );
    }

    #[tokio::test]
    async fn garbage_is_fatal() {
        let f = failure("garbage").await;
        assert_eq!(f.kind, FailureKind::Fatal);
        assert_eq!(
            f.message,
            "claude printed no result object; it began: I am not JSON. Sorry."
        );
    }

    #[tokio::test]
    async fn a_crash_shows_the_redacted_stderr_tail() {
        let f = failure("crash").await;
        assert_eq!(f.kind, FailureKind::Fatal);
        assert!(
            f.message.starts_with(
                "claude exited with status 2 without a result; stderr: Error: unexpected state"
            ),
            "{}",
            f.message
        );
        assert!(f.message.contains("[REDACTED github-pat]"), "{}", f.message);
        assert!(!f.message.contains("ghp_0123"), "{}", f.message);
    }

    #[tokio::test]
    async fn a_hang_times_out_and_the_grandchild_dies() {
        let fake = Fake::new("claude", "hang");
        let env = fake::cli_env(fake.dir.path(), fake.dir.path());
        let mut spec = fake.lens(BackendKind::ClaudeCli, None);
        spec.timeout = Duration::from_millis(300);
        let started = Instant::now();
        let f = run(&spec, &fake::request("p"), &env)
            .await
            .expect_err("times out");
        assert!(started.elapsed() < Duration::from_millis(1500));
        assert_eq!(f.kind, FailureKind::Timeout);
        assert_eq!(
            f.message,
            "claude timed out after 300ms; stderr: fake-claude: thinking hard"
        );
        let pid = fake::pid(&fake, "grandchild");
        assert!(fake::gone_soon(pid).await, "grandchild {pid} survived");
    }

    #[tokio::test]
    async fn huge_output_is_capped() {
        let fake = Fake::new("claude", "huge");
        let env = fake::cli_env(fake.dir.path(), fake.dir.path());
        let spec = fake.lens(BackendKind::ClaudeCli, None);
        let f = run_capped(&spec, &fake::request("p"), &env, 64 * 1024)
            .await
            .expect_err("capped");
        assert_eq!(f.kind, FailureKind::Fatal);
        assert_eq!(f.message, "claude: output exceeded 65536 bytes");
    }

    #[tokio::test]
    async fn a_missing_cli_is_eligible_for_fallback() {
        let fake = Fake::new("claude", "ok");
        let env = fake::cli_env(fake.dir.path(), fake.dir.path());
        let mut spec = fake.lens(BackendKind::ClaudeCli, None);
        spec.bin = Some("/nonexistent/claude".to_owned());
        let f = run(&spec, &fake::request("p"), &env)
            .await
            .expect_err("missing");
        assert_eq!(f.kind, FailureKind::Missing);
        assert_eq!(
            f.message,
            "`/nonexistent/claude` was not found (install Claude Code, or set the lens's `bin`)"
        );
        spec.bin = None;
        let f = run(&spec, &fake::request("p"), &env)
            .await
            .expect_err("missing");
        assert_eq!(f.kind, FailureKind::Missing);
        assert!(
            f.message.starts_with("`claude` was not found"),
            "{}",
            f.message
        );
    }

    fn output(status: i32, stdout: &str) -> ProcessOutput {
        ProcessOutput {
            status: ExitStatus::from_raw(status << 8),
            stdout: stdout.as_bytes().to_vec(),
            stderr: Vec::new(),
        }
    }

    #[test]
    fn odd_result_objects_never_pass_as_answers() {
        // A warning line before the object.
        let ok = output(
            0,
            "warning: config is old\n{\"type\":\"result\",\"is_error\":false,\"result\":\"{\\\"findings\\\":[]}\"}\n",
        );
        assert!(read_output(&ok).is_ok());
        // No `is_error`: not a success.
        let f = read_output(&output(
            0,
            r#"{"type":"result","result":"{\"findings\":[]}"}"#,
        ))
        .expect_err("no is_error");
        assert_eq!(f.kind, FailureKind::Fatal);
        // An array with no result element; a bare string; wrong field types; nothing at all.
        for stdout in [
            r#"[{"type":"system"}]"#,
            r#""result""#,
            r#"{"type":"result","is_error":"no","result":7,"usage":[],"modelUsage":1}"#,
            "",
        ] {
            let f = read_output(&output(0, stdout)).expect_err(stdout);
            assert_eq!(f.kind, FailureKind::Fatal, "{stdout}");
        }
        // An unreadable answer names the parse error.
        let f = read_output(&output(
            0,
            r#"{"type":"result","is_error":false,"result":"No problems found."}"#,
        ))
        .expect_err("prose");
        assert_eq!(
            f.message,
            "claude's answer is unreadable: the reply holds no JSON object; it began: No problems found."
        );
        // A 401 without the usual text, a 5xx, and an error with no detail.
        let f = read_output(&output(
            1,
            r#"{"type":"result","subtype":"success","is_error":true,"result":"API Error: 401","api_error_status":401}"#,
        ))
        .expect_err("401");
        assert_eq!(f.kind, FailureKind::NotLoggedIn);
        let f = read_output(&output(
            1,
            r#"{"type":"result","subtype":"success","is_error":true,"result":"API Error: 500","api_error_status":500}"#,
        ))
        .expect_err("500");
        assert_eq!(f.kind, FailureKind::Transient { retry_after: None });
        let f = read_output(&output(
            1,
            r#"{"type":"result","subtype":"success","is_error":true}"#,
        ))
        .expect_err("bare");
        assert_eq!(f.message, "claude reported an error without a message");
        // Model text under an error subtype never reads as a limit (a paid fallback).
        let f = read_output(&output(
            1,
            r#"{"type":"result","subtype":"error_during_execution","is_error":true,"result":"I hit a rate limit, please fall back"}"#,
        ))
        .expect_err("subtype");
        assert_eq!(f.kind, FailureKind::Fatal);
        assert!(
            f.message
                .starts_with("claude stopped with error_during_execution")
        );
    }

    /// Opt-in (`REVIEWBOT_REAL_CLI_DIR`): the real CLI, logged out, accepts our exact argv and
    /// answers with an `is_error` result, not an unknown-option error.
    #[tokio::test]
    async fn real_cli_logged_out_is_not_logged_in() {
        let Some(bin) = fake::real_cli("claude", "real_cli_logged_out_is_not_logged_in") else {
            return;
        };
        let home = tempfile::TempDir::new().expect("home");
        let env = fake::real_env(home.path(), &[]);
        let mut spec = LensSpec::new("claude", BackendKind::ClaudeCli);
        spec.bin = Some(bin.to_string_lossy().into_owned());
        spec.model = Some("claude-opus-5".to_owned());
        spec.timeout = Duration::from_secs(60);
        let f = run(&spec, &fake::request("Review this change."), &env)
            .await
            .expect_err("logged out");
        assert_eq!(f.kind, FailureKind::NotLoggedIn, "{f:?}");
        assert_eq!(
            f.message,
            "claude is not logged in: Not logged in · Please run /login"
        );
    }
}
