//! What the subscription CLI lenses (`claude-cli`, `codex-cli`) share: the environment their
//! child gets (an allow-list, never the parent's environment), a scratch working directory, and
//! the mapping of a child-process error to a lens [`Failure`].
//!
//! The environment is captured once into a [`CliEnv`] so that tests can hand a lens any values
//! (secrets included, to prove they are dropped) without touching the process environment.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::sync::LazyLock;

use super::process::{self, Keep, ProcessError, STDERR_TAIL_CHARS, child_text, failure_of};
use super::{Failure, FailureKind};

/// Variables every CLI child gets when they are set: enough to find programs, a home (where the
/// CLIs keep their login), a user name, a locale and a temp directory. `LC_*` are passed too.
const BASE: [&str; 5] = ["PATH", "HOME", "USER", "LANG", "TMPDIR"];

/// Extra variables for `claude`: where its login lives, and the subscription token for CI
/// (`docs/contract.md` "Isolation": it goes to a `claude-cli` lens and nothing else).
const CLAUDE_EXTRA: [&str; 2] = ["CLAUDE_CONFIG_DIR", "CLAUDE_CODE_OAUTH_TOKEN"];

/// Extra variables for `codex`: where its login and config live.
const CODEX_EXTRA: [&str; 1] = ["CODEX_HOME"];

/// Which CLI a child environment is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cli {
    Claude,
    Codex,
}

impl Cli {
    fn allows(self, name: &str) -> bool {
        if BASE.contains(&name) || name.starts_with("LC_") {
            return true;
        }
        match self {
            Cli::Claude => CLAUDE_EXTRA.contains(&name),
            Cli::Codex => CODEX_EXTRA.contains(&name),
        }
    }
}

/// The parts of reviewbot's environment a CLI lens may pass on, captured once.
///
/// Its `Debug` shows names only: it may hold a subscription token.
#[derive(Clone, Default)]
pub struct CliEnv {
    vars: Vec<(OsString, OsString)>,
    /// Tests only: variables and arguments that point a real CLI at a fake model on loopback
    /// (a base URL and a key, a custom model provider). Always empty outside tests: nothing
    /// but [`CliEnv::with_fake_model`] sets them.
    fake_model_vars: Vec<(OsString, OsString)>,
    fake_model_args: Vec<OsString>,
}

static CAPTURED: LazyLock<CliEnv> = LazyLock::new(CliEnv::from_env);

impl CliEnv {
    /// Captures, from the process environment, every variable some CLI lens may receive (and
    /// nothing else, so the bot's own credentials are never copied here).
    pub fn from_env() -> Self {
        let vars = std::env::vars_os()
            .filter(|(name, _)| {
                name.to_str()
                    .is_some_and(|n| Cli::Claude.allows(n) || Cli::Codex.allows(n))
            })
            .collect();
        Self {
            vars,
            ..Self::default()
        }
    }

    /// The process environment as captured the first time this is called.
    pub fn captured() -> &'static CliEnv {
        &CAPTURED
    }

    /// An environment made of exactly these variables (tests, embedders). The per-CLI
    /// allow-lists still apply when a child's environment is built from it.
    pub fn from_vars<I, K, V>(vars: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<OsString>,
        V: Into<OsString>,
    {
        Self {
            vars: vars
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            ..Self::default()
        }
    }

    /// The value of `name`, when set and not empty (the last one wins, as in a real environment).
    pub fn get(&self, name: &str) -> Option<&OsStr> {
        self.vars
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_os_str())
            .filter(|v| !v.is_empty())
    }

    /// Tests: the same environment, with the variables and arguments that point a real CLI at
    /// a fake model.
    #[cfg(test)]
    pub(crate) fn with_fake_model(
        mut self,
        vars: Vec<(OsString, OsString)>,
        args: Vec<OsString>,
    ) -> Self {
        self.fake_model_vars = vars;
        self.fake_model_args = args;
        self
    }

    /// Variables a test adds to point a real CLI at a fake model; empty outside tests.
    pub(crate) fn test_overrides(&self) -> impl Iterator<Item = (OsString, OsString)> + '_ {
        self.fake_model_vars.iter().cloned()
    }

    /// Arguments a test adds (a custom model provider); empty outside tests.
    pub(crate) fn test_args(&self) -> &[OsString] {
        &self.fake_model_args
    }

    /// The whole environment of a `cli` child: the allow-list, nothing else. Empty values are
    /// dropped (an empty `CODEX_HOME` or token means "not set"), and each name appears once.
    pub fn child_env(&self, cli: Cli) -> Vec<(OsString, OsString)> {
        let mut out: Vec<(OsString, OsString)> = Vec::new();
        for (name, value) in &self.vars {
            let Some(n) = name.to_str() else { continue };
            if !cli.allows(n) || value.is_empty() || out.iter().any(|(k, _)| k == name) {
                continue;
            }
            if let Some(v) = self.get(n) {
                out.push((name.clone(), v.to_owned()));
            }
        }
        out
    }
}

impl fmt::Debug for CliEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.vars.iter().map(|(k, _)| k))
            .finish()
    }
}

/// A fresh, empty working directory for one run, removed when dropped: never a checkout (agent
/// CLIs act on project config found in their working directory), never ours.
pub(crate) fn scratch_dir(cli: &str) -> Result<tempfile::TempDir, Failure> {
    tempfile::Builder::new()
        .prefix(&format!("reviewbot-{cli}-"))
        .tempdir()
        .map_err(|e| Failure::fatal(format!("{cli}: could not create a scratch directory: {e}")))
}

/// A child that did not run to its end, as a lens failure. `install` says how to get the CLI.
pub(crate) fn process_failure(cli: &str, install: &str, e: ProcessError) -> Failure {
    if let ProcessError::NotFound { program } = &e {
        return Failure::new(
            FailureKind::Missing,
            format!(
                "`{}` was not found ({install})",
                child_text(program.as_bytes(), 200, Keep::Head)
            ),
        );
    }
    let f = failure_of(e);
    let sep = if f.kind == FailureKind::Timeout {
        " "
    } else {
        ": "
    };
    Failure::new(f.kind, format!("{cli}{sep}{}", f.message))
}

/// The tail of a child's stderr, redacted and on one line, as `; stderr: …` (or nothing).
pub(crate) fn stderr_note(stderr: &[u8]) -> String {
    process::stderr_note(&child_text(stderr, STDERR_TAIL_CHARS, Keep::Tail))
}

/// Whether `text` (already lowercased) mentions a usage or rate limit.
pub(crate) fn says_usage_limit(lower: &str) -> bool {
    [
        "usage limit",
        "rate limit",
        "rate_limit",
        "limit reached",
        "hit your limit",
        "too many requests",
    ]
    .iter()
    .any(|p| lower.contains(p))
}

/// Whether `text` contains the number `code` on its own (not inside a longer number).
pub(crate) fn mentions_status(text: &str, code: u16) -> bool {
    let needle = code.to_string();
    let bytes = text.as_bytes();
    text.match_indices(&needle).any(|(i, m)| {
        let before = i.checked_sub(1).and_then(|j| bytes.get(j));
        let after = bytes.get(i + m.len());
        !before.is_some_and(u8::is_ascii_digit) && !after.is_some_and(u8::is_ascii_digit)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(env: &[(OsString, OsString)]) -> Vec<&str> {
        env.iter()
            .map(|(k, _)| k.to_str().expect("utf-8"))
            .collect()
    }

    fn everything() -> CliEnv {
        CliEnv::from_vars([
            ("PATH", "/usr/bin:/bin"),
            ("HOME", "/home/bot"),
            ("USER", "bot"),
            ("LANG", "C.UTF-8"),
            ("LC_ALL", "C.UTF-8"),
            ("TMPDIR", "/tmp"),
            ("TERM", "xterm"),
            ("CLAUDE_CONFIG_DIR", "/home/bot/.claude-review"),
            ("CLAUDE_CODE_OAUTH_TOKEN", "sk-ant-oat01-secret"),
            ("CODEX_HOME", "/home/bot/.codex-review"),
            ("ANTHROPIC_API_KEY", "sk-ant-api03-secret"),
            ("ANTHROPIC_AUTH_TOKEN", "bearer"),
            ("ANTHROPIC_BASE_URL", "https://evil.example"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("OPENAI_BASE_URL", "https://evil.example/v1"),
            ("CODEX_API_KEY", "sk-secret"),
            ("GITHUB_TOKEN", "ghp_secret"),
            ("GH_TOKEN", "ghp_secret"),
            ("REVIEWBOT_WEBHOOK_SECRET", "hook"),
            ("REVIEWBOT_PRIVATE_KEY", "-----BEGIN"),
            ("REVIEWBOT_PRIVATE_KEY_PATH", "/key.pem"),
        ])
    }

    #[test]
    fn claude_gets_its_login_and_nothing_else() {
        let env = everything().child_env(Cli::Claude);
        assert_eq!(
            names(&env),
            [
                "PATH",
                "HOME",
                "USER",
                "LANG",
                "LC_ALL",
                "TMPDIR",
                "CLAUDE_CONFIG_DIR",
                "CLAUDE_CODE_OAUTH_TOKEN"
            ]
        );
    }

    #[test]
    fn codex_gets_its_home_and_never_the_claude_token() {
        let env = everything().child_env(Cli::Codex);
        assert_eq!(
            names(&env),
            [
                "PATH",
                "HOME",
                "USER",
                "LANG",
                "LC_ALL",
                "TMPDIR",
                "CODEX_HOME"
            ]
        );
    }

    #[test]
    fn empty_values_are_unset_and_the_last_value_wins() {
        let env = CliEnv::from_vars([
            ("PATH", "/a"),
            ("CODEX_HOME", ""),
            ("PATH", "/b"),
            ("CLAUDE_CODE_OAUTH_TOKEN", ""),
        ]);
        assert_eq!(env.get("CODEX_HOME"), None);
        let child = env.child_env(Cli::Claude);
        assert_eq!(child, [(OsString::from("PATH"), OsString::from("/b"))]);
    }

    #[test]
    fn debug_shows_names_not_values() {
        let text = format!("{:?}", everything());
        assert!(text.contains("CLAUDE_CODE_OAUTH_TOKEN"), "{text}");
        assert!(!text.contains("secret"), "{text}");
    }

    #[test]
    fn statuses_are_matched_as_whole_numbers() {
        assert!(mentions_status("unexpected status 401 Unauthorized", 401));
        assert!(mentions_status("401", 401));
        assert!(!mentions_status("item 4012", 401));
        assert!(!mentions_status("14010", 401));
    }
}
