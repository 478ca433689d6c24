//! The argv that runs Claude Code and Codex over a repository snapshot with read-only tools, as
//! validated against the real CLIs (`real_claude`, `real_codex`), and how to tell that Codex's
//! sandbox cannot start. Kept here until the `claude-cli` and `codex-cli` backends take them.
//!
//! What the real CLIs did (claude 2.1.197, codex 0.171.0; the tests assert all of it):
//!
//! - Claude sends `HEAD /`, then one `POST /v1/messages?beta=true` (`"stream": true`) per model
//!   turn, advertising exactly `Grep, Read`. A `Read` outside the cwd, through a symlink to a file
//!   or through a symlinked directory is refused with the `dontAsk` text and listed in the
//!   result's `permission_denials`; the run still succeeds. A hard link to an outside file is
//!   read (the check is on the path). `Grep` for the outside text answers "No files found".
//!   `Write`/`Bash` answer "No such tool available". No hook ran, no MCP server was spawned,
//!   and no `CLAUDE.md`, `CLAUDE.local.md` or settings text reached a request.
//! - Claude's result: one object; `result` is the final text verbatim. `num_turns` is not the
//!   number of model requests (10 for 2 requests with 9 parallel calls): do not read it. An HTTP
//!   400 gives exit 1, `is_error: true`, `api_error_status: 400`, `result: "API Error: 400 …"`;
//!   `--max-turns 2` stops after 2 requests with exit 1 and `subtype: "error_max_turns"`.
//! - Codex sends one `POST /v1/responses` (`stream: true`) per turn and nothing else; the body
//!   has no `instructions` key, and `--output-schema` arrives verbatim as `text.format`
//!   (`json_schema`, `strict: true`). Tools: `exec_command`, `write_stdin`,
//!   `request_user_input`, `view_image`. Under the profile, `cat` of an outside path, a symlink
//!   out, a symlinked directory or `$CODEX_HOME/auth.json` says "No such file or directory"; a
//!   hard link is read; `touch` fails "Read-only file system"; `env` holds no provider key.
//! - Codex's JSONL is not a complete record of commands: a command whose failure reads as a
//!   sandbox denial ("Read-only file system") is sometimes missing from stdout altogether (no
//!   `item.started` either; missing in every unloaded run, present under load) although the
//!   model got its output. Read the answer from the last `agent_message`, usage from
//!   `turn.completed`; treat `command_execution` items as a sample.
//! - Without user namespaces, every Codex command fails with `bwrap: Creating new namespace
//!   failed…` (exit 1, that item did appear), the turn completes and the process exits 0 with
//!   the model's answer: only the probe ([`codex_sandbox`], exit 1) or [`says_sandbox_failed`]
//!   on an item tells. An HTTP 400 gives exit 1, an `error` event and `turn.failed` whose
//!   message is the provider's error body re-encoded as JSON.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::lens::process::{self, Keep, ProcessSpec, STDERR_TAIL_CHARS, child_text};

/// Claude Code's tools for a snapshot. Not `Glob`: an absolute `pattern` lists file names
/// anywhere on the machine whatever the cwd (`glob_with_an_absolute_pattern_lists_names_outside`);
/// `Grep` with `output_mode: files_with_matches` lists the snapshot's files instead.
pub(crate) const CLAUDE_TOOLS: &str = "Read,Grep";

/// `claude` reading the snapshot that is its cwd, with only [`CLAUDE_TOOLS`]; the prompt goes
/// on stdin. `max_turns` counts model requests: tool rounds plus one at least.
///
/// - `--permission-mode dontAsk`: a read outside the cwd is refused, not left pending.
/// - `--setting-sources ""`: no settings from the snapshot or `$HOME`, so no hooks, no
///   `CLAUDE.md`, no `permissions.allow`, no `verbose` turning the result into an array.
/// - `--strict-mcp-config` and an empty config: no `.mcp.json` server is spawned.
/// - `--tools` takes several values: an option must follow it, never the prompt.
pub(crate) fn claude_read_only_args(model: &str, max_turns: u32) -> Vec<OsString> {
    let max_turns = max_turns.to_string();
    [
        "-p",
        "--output-format",
        "json",
        "--max-turns",
        &max_turns,
        "--tools",
        CLAUDE_TOOLS,
        "--permission-mode",
        "dontAsk",
        "--setting-sources",
        "",
        "--strict-mcp-config",
        "--mcp-config",
        r#"{"mcpServers":{}}"#,
        "--disable-slash-commands",
        "--model",
        model,
    ]
    .map(OsString::from)
    .into()
}

/// The variables Claude Code needs beside `PATH` and a bot-owned `HOME`: no phone-home lookups
/// (`api.anthropic.com` is resolved otherwise, even with a base URL on loopback) and no
/// auto-memory section in the system prompt.
pub(crate) const CLAUDE_QUIET_ENV: [(&str, &str); 2] = [
    ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
    ("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1"),
];

/// A string as a TOML basic string (quotes and escapes included), for `-c key=value`.
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// `codex exec` reading `snapshot` under a permission profile that mounts only the snapshot,
/// the system's minimal directories and the Codex package (the sandbox re-executes the codex
/// binary from there), read-only; the prompt goes on stdin (`-`). `None` when `codex_pkg` is not
/// UTF-8 (it goes inside a TOML value).
///
/// - No `--sandbox`: it selects the legacy policy and `default_permissions` is then ignored;
///   `--sandbox read-only` lets commands read the whole machine and follow symlinks out.
/// - `inherit="core"`: the provider's key variable never reaches a command.
/// - `project_doc_max_bytes=0`, `skills.include_instructions=false`: no `AGENTS.md`, no skill
///   list from the snapshot in the prompt.
/// - `--disable multi_agent --disable goals`, `web_search="disabled"`: tools shrink to
///   `exec_command`, `write_stdin`, `request_user_input`, `view_image`.
/// - `check_for_update_on_startup`, `analytics.enabled`, `--disable plugins`: no phone-home
///   lookups (each costs seconds offline).
pub(crate) fn codex_read_only_args(
    snapshot: &Path,
    model: &str,
    codex_pkg: &Path,
    schema: &Path,
) -> Option<Vec<OsString>> {
    let pkg = toml_string(codex_pkg.to_str()?);
    let filesystem = format!(
        r#"permissions.review.filesystem={{":minimal"="read", ":workspace_roots"={{"."="read"}}, {pkg}="read"}}"#
    );
    let mut args: Vec<OsString> = [
        "exec",
        "--json",
        "--skip-git-repo-check",
        "--ephemeral",
        "--ignore-user-config",
        "--ignore-rules",
        "-C",
    ]
    .map(OsString::from)
    .into();
    args.push(snapshot.into());
    args.extend(["-m", model, "--output-schema"].map(OsString::from));
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
            "-",
        ]
        .map(OsString::from),
    );
    Some(args)
}

/// The npm package directory `@openai` that holds the platform package with the real codex
/// binary, found from the `codex` launcher (usually `node_modules/.bin/codex`, a symlink to
/// `@openai/codex/bin/codex.js`) by resolving its links and walking up.
pub(crate) fn codex_package_dir(bin: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(bin).ok()?;
    real.ancestors()
        .find(|dir| dir.file_name() == Some(OsStr::new("@openai")))
        .map(Path::to_path_buf)
}

/// Whether Codex's sandbox can start here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Sandbox {
    Works,
    /// `codex sandbox -- true` failed: every command a lens ran would fail with `bwrap: …` while
    /// the turn still "succeeds". `detail` is the redacted tail of its stderr.
    Broken {
        detail: String,
    },
}

/// Runs `codex sandbox -- true` with the lens's environment (the same `HOME` and `CODEX_HOME`)
/// and says whether Codex's sandbox can start.
pub(crate) async fn codex_sandbox(bin: &Path, env: &[(OsString, OsString)]) -> Sandbox {
    probe(bin.as_os_str(), &[], env).await
}

/// [`codex_sandbox`] as `program pre_args… sandbox -- true`: `program` is codex, or a wrapper
/// that runs it (`pre_args` then name codex), for a test that takes namespaces away.
pub(super) async fn probe(
    program: &OsStr,
    pre_args: &[OsString],
    env: &[(OsString, OsString)],
) -> Sandbox {
    let mut spec = ProcessSpec::new(program, ".", Duration::from_secs(30));
    spec.args = pre_args.to_vec();
    spec.args
        .extend(["sandbox", "--", "true"].map(OsString::from));
    spec.env = env.to_vec();
    match process::run(spec).await {
        Ok(out) if out.status.success() => Sandbox::Works,
        Ok(out) => Sandbox::Broken {
            detail: child_text(&out.stderr, STDERR_TAIL_CHARS, Keep::Tail),
        },
        Err(e) => Sandbox::Broken {
            detail: e.to_string(),
        },
    }
}

/// Whether a command's output says the sandbox could not start (a `command_execution` item's
/// `aggregated_output`): Codex then fails closed, every command fails, and the turn completes.
pub(crate) fn says_sandbox_failed(aggregated_output: &str) -> bool {
    aggregated_output.contains("bwrap:")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_argv_is_the_validated_one() {
        let args = claude_read_only_args("claude-x", 4);
        let args: Vec<&str> = args.iter().map(|a| a.to_str().expect("utf-8")).collect();
        // One argument a line, so that the empty `--setting-sources` value shows.
        assert_eq!(
            args.join("\n"),
            "-p\n--output-format\njson\n--max-turns\n4\n--tools\nRead,Grep\n\
             --permission-mode\ndontAsk\n--setting-sources\n\n--strict-mcp-config\n\
             --mcp-config\n{\"mcpServers\":{}}\n--disable-slash-commands\n--model\nclaude-x"
        );
        // `--tools` takes every value up to the next option.
        let after = args.iter().position(|a| *a == "--tools").expect("--tools") + 2;
        assert!(args[after].starts_with("--"));
    }

    #[test]
    fn codex_argv_quotes_the_package_path_as_toml() {
        let pkg = Path::new(r#"/opt/odd "dir"\x/@openai"#);
        let args = codex_read_only_args(Path::new("/s"), "m", pkg, Path::new("/schema.json"))
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
        assert!(!args.iter().any(|a| a == "--sandbox"), "{args:?}");
        let c = args.iter().position(|a| a == "-C").expect("-C");
        assert_eq!(args[c + 1], "/s");
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
        assert_eq!(codex_package_dir(&bin_dir.join("codex")), Some(real));
        // A codex outside any npm package has none.
        std::fs::write(dir.path().join("codex"), "").expect("bare");
        assert_eq!(codex_package_dir(&dir.path().join("codex")), None);
        assert_eq!(codex_package_dir(&dir.path().join("missing")), None);
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

    #[tokio::test]
    async fn a_probe_that_cannot_start_is_broken() {
        let probe = codex_sandbox(Path::new("/nonexistent/codex"), &[]).await;
        assert!(matches!(probe, Sandbox::Broken { .. }), "{probe:?}");
    }
}
