//! `doctor`'s checks of a lens's setup, without a billed call and without a review: the line a
//! check prints, what the checks read from the environment, and the parts the backends share
//! (finding a CLI and asking its version, finding an executable). Each backend's own checks are
//! in its file (`Backend::preflight` in `backend.rs`).
//!
//! CLI children run as the lenses run them: the allow-listed environment of [`CliEnv`], an empty
//! scratch directory, their own process group and a short timeout.

use std::ffi::OsStr;
use std::fmt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::LensSpec;
use super::cli_env::{Cli, CliEnv, scratch_dir};
use super::keys::ApiVars;
use super::process::{self, Keep, ProcessSpec, child_text, describe_status};

/// How long `claude --version`, `codex --version` and `codex login status` may take.
pub const CLI_TIMEOUT: Duration = Duration::from_secs(10);

/// The most of a CLI's output a check reads (a version line, a login status).
const CLI_MAX_OUTPUT: usize = 64 << 10;

/// The longest piece of a CLI's output quoted in a check.
pub(crate) const QUOTE_CHARS: usize = 200;

/// What the lens checks read from the environment, captured once, so tests hand them any
/// values without touching the process environment.
pub struct PreflightEnv {
    /// What a CLI lens's child may receive (and where `command` binaries are looked up).
    pub cli: CliEnv,
    /// The API lenses' keys and base URLs.
    pub apis: ApiVars,
    /// How long each CLI probe may take.
    pub cli_timeout: Duration,
}

impl PreflightEnv {
    /// Reads the process environment; `apis` are the API variables read already
    /// (`registry::apis_from_env`).
    pub fn from_env(apis: ApiVars) -> Self {
        Self {
            cli: CliEnv::from_env(),
            apis,
            cli_timeout: CLI_TIMEOUT,
        }
    }
}

impl fmt::Debug for PreflightEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreflightEnv")
            .field("cli", &self.cli)
            .field("apis", &self.apis)
            .field("cli_timeout", &self.cli_timeout)
            .finish()
    }
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// `config`, `github`, or `lens NAME`.
    pub subject: String,
    pub ok: bool,
    /// Worth reading but not a failure (`ok` is true).
    pub warning: bool,
    pub detail: String,
}

impl Check {
    pub fn ok(subject: &str, detail: impl Into<String>) -> Self {
        Self {
            subject: subject.to_owned(),
            ok: true,
            warning: false,
            detail: detail.into(),
        }
    }

    pub fn fail(subject: &str, detail: impl Into<String>) -> Self {
        Self {
            subject: subject.to_owned(),
            ok: false,
            warning: false,
            detail: detail.into(),
        }
    }

    pub fn warn(subject: &str, detail: impl Into<String>) -> Self {
        Self {
            subject: subject.to_owned(),
            ok: true,
            warning: true,
            detail: detail.into(),
        }
    }

    pub fn label(&self) -> &'static str {
        match (self.ok, self.warning) {
            (false, _) => "FAIL",
            (true, true) => "warn",
            (true, false) => "ok  ",
        }
    }
}

/// A CLI binary that was found and answered `--version`.
pub(crate) struct Found {
    pub path: PathBuf,
    pub version: String,
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} found at {}", self.version, self.path.display())
    }
}

/// Finds the lens's CLI (its `bin`, else `default` on the child's `PATH`) and asks its version.
pub(crate) async fn cli_found(
    spec: &LensSpec,
    default: &str,
    cli: Cli,
    install: &str,
    env: &PreflightEnv,
) -> Result<Found, String> {
    let bin = spec
        .bin
        .as_deref()
        .filter(|b| !b.trim().is_empty())
        .unwrap_or(default);
    let path = match locate(bin, env.cli.get("PATH")) {
        Located::Found(path) => path,
        Located::NotExecutable(path) => {
            return Err(format!("{} is not an executable file", path.display()));
        }
        Located::NotFound => return Err(not_found(bin, install)),
    };
    let out = probe(&path, &["--version"], cli, env).await.map_err(|e| {
        format!(
            "found at {} but `{bin} --version` failed: {e}",
            path.display()
        )
    })?;
    if !out.status.success() {
        return Err(format!(
            "found at {} but `{bin} --version` exited with {}: {}",
            path.display(),
            describe_status(out.status),
            status_text(&out.stderr, &out.stdout)
        ));
    }
    let version = version_of(&out.stdout).unwrap_or_else(|| {
        let text = status_text(&out.stdout, &out.stderr);
        if text.is_empty() {
            "(version unknown)".to_owned()
        } else {
            format!("({text})")
        }
    });
    Ok(Found { path, version })
}

/// Runs `path args…` as a lens would run the CLI: the allow-listed environment, an empty scratch
/// directory, its own process group, a short timeout, empty stdin.
pub(crate) async fn probe(
    path: &Path,
    args: &[&str],
    cli: Cli,
    env: &PreflightEnv,
) -> Result<process::ProcessOutput, String> {
    let scratch = scratch_dir(match cli {
        Cli::Claude => "claude",
        Cli::Codex => "codex",
    })
    .map_err(|f| f.message)?;
    let mut child = ProcessSpec::new(path.as_os_str(), scratch.path(), env.cli_timeout);
    child.args = args.iter().map(|a| std::ffi::OsString::from(*a)).collect();
    child.env = env.cli.child_env(cli);
    child.max_output = CLI_MAX_OUTPUT;
    process::run(child).await.map_err(|e| e.to_string())
}

/// The meaningful lines of a CLI's output, redacted and on one line: `first`'s, else `second`'s,
/// without codex's `WARNING:` lines about helper binaries.
pub(crate) fn status_text(first: &[u8], second: &[u8]) -> String {
    let lines = |bytes: &[u8]| -> String {
        String::from_utf8_lossy(bytes)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("WARNING:"))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let text = match lines(first) {
        t if t.is_empty() => lines(second),
        t => t,
    };
    child_text(text.as_bytes(), QUOTE_CHARS, Keep::Head)
}

/// The version number in `--version` output: `2.1.197 (Claude Code)` → `2.1.197`,
/// `codex-cli 0.171.0` → `0.171.0`.
pub(crate) fn version_of(stdout: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(stdout);
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    line.split_whitespace()
        .map(|w| w.trim_start_matches('v'))
        .find(|w| {
            w.starts_with(|c: char| c.is_ascii_digit())
                && w.contains('.')
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || ".-+".contains(c))
        })
        .map(|w| child_text(w.as_bytes(), 40, Keep::Head))
}

pub(crate) enum Located {
    Found(PathBuf),
    /// Exists, but is a directory or lacks the execute bit.
    NotExecutable(PathBuf),
    NotFound,
}

/// Finds `bin` as [`process::run`] would: a path (with a `/`) as given, relative to our working
/// directory; a bare name on `path_var` (the child's `PATH`), absolute entries only.
pub(crate) fn locate(bin: &str, path_var: Option<&OsStr>) -> Located {
    if bin.contains('/') {
        let path = Path::new(bin);
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            match std::env::current_dir() {
                Ok(cwd) => cwd.join(path),
                Err(_) => return Located::NotFound,
            }
        };
        return if is_executable(&path) {
            Located::Found(path)
        } else if path.exists() {
            Located::NotExecutable(path)
        } else {
            Located::NotFound
        };
    }
    let Some(search) = path_var else {
        return Located::NotFound;
    };
    std::env::split_paths(search)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(bin))
        .find(|candidate| is_executable(candidate))
        .map_or(Located::NotFound, Located::Found)
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

pub(crate) fn not_found(bin: &str, install: &str) -> String {
    let bin = child_text(bin.as_bytes(), QUOTE_CHARS, Keep::Head);
    if bin.contains('/') {
        format!("`{bin}` was not found ({install})")
    } else {
        format!("`{bin}` was not found on PATH ({install})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_read_from_both_clis() {
        assert_eq!(
            version_of(b"2.1.197 (Claude Code)\n").as_deref(),
            Some("2.1.197")
        );
        assert_eq!(
            version_of(b"codex-cli 0.171.0\n").as_deref(),
            Some("0.171.0")
        );
        assert_eq!(
            version_of(b"tool v1.2.3-beta\n").as_deref(),
            Some("1.2.3-beta")
        );
        assert_eq!(version_of(b"no version here\n"), None);
    }

    #[test]
    fn status_text_drops_codex_warnings() {
        let stderr =
            b"WARNING: proceeding, even though we could not create PATH aliases\nNot logged in\n";
        assert_eq!(status_text(stderr, b""), "Not logged in");
        assert_eq!(
            status_text(b"", b"Logged in using ChatGPT\n"),
            "Logged in using ChatGPT"
        );
    }
}
