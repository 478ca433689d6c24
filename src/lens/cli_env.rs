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

/// Test support shared by the `claude-cli` and `codex-cli` tests: a fake CLI from
/// `tests/fixtures/fake-cli/`, symlinked into a temp dir with its `mode` file beside it (argv and
/// the environment must stay as the lens builds them), and what the fake recorded there.
#[cfg(test)]
pub(crate) mod fake {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;
    use std::time::Duration;

    use super::CliEnv;
    use crate::diff::Diff;
    use crate::lens::agent_cli::{self, AgentCli};
    use crate::lens::process::DEFAULT_MAX_OUTPUT;
    use crate::lens::{Answer, BackendKind, LensRequest, LensSpec};

    pub(crate) const DIFF: &str = "\
diff --git a/src/lib.rs b/src/lib.rs
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,2 +1,3 @@
 fn a() {}
+fn b() {}
 fn c() {}
";

    /// Shell variables a `sh` script has whatever its environment.
    const SHELL_OWN: [&str; 4] = ["PWD", "SHLVL", "_", "OLDPWD"];

    pub(crate) struct Fake {
        pub(crate) dir: tempfile::TempDir,
        cli: &'static str,
    }

    impl Fake {
        pub(crate) fn new(cli: &'static str, mode: &str) -> Self {
            let dir = tempfile::TempDir::new().expect("temp dir");
            let fixture: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests/fixtures/fake-cli", cli]
                .iter()
                .collect();
            // A symlink, not a copy: executing a file just written can fail with ETXTBSY when
            // another test thread forks meanwhile.
            std::os::unix::fs::symlink(&fixture, dir.path().join(cli)).expect("symlink");
            std::fs::write(dir.path().join("mode"), mode).expect("mode");
            Self { dir, cli }
        }

        pub(crate) fn bin(&self) -> String {
            self.dir
                .path()
                .join(self.cli)
                .to_string_lossy()
                .into_owned()
        }

        pub(crate) fn lens(&self, backend: BackendKind, model: Option<&str>) -> LensSpec {
            let mut spec = LensSpec::new(self.cli, backend);
            spec.bin = Some(self.bin());
            spec.model = model.map(str::to_owned);
            spec.timeout = Duration::from_secs(5);
            spec
        }

        pub(crate) fn path(&self, name: &str) -> PathBuf {
            self.dir.path().join(name)
        }

        /// A file the fake wrote ("" when it did not).
        pub(crate) fn read(&self, name: &str) -> String {
            std::fs::read_to_string(self.path(name)).unwrap_or_default()
        }

        pub(crate) fn ran(&self) -> bool {
            self.path("argv").exists()
        }

        pub(crate) fn argv(&self) -> Vec<String> {
            self.read("argv")
                .lines()
                .map(|l| {
                    l.strip_prefix('<')
                        .and_then(|l| l.strip_suffix('>'))
                        .expect("<arg>")
                        .to_owned()
                })
                .collect()
        }

        /// The fake's environment, without what the shell adds itself, sorted by name.
        pub(crate) fn env(&self) -> Vec<(String, String)> {
            let mut env: Vec<(String, String)> = self
                .read("env")
                .lines()
                .filter_map(|l| l.split_once('='))
                .filter(|(k, _)| {
                    !SHELL_OWN.contains(k)
                        && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                })
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            env.sort();
            env
        }

        pub(crate) fn env_names(&self) -> Vec<String> {
            self.env().into_iter().map(|(k, _)| k).collect()
        }
    }

    /// What reviewbot's own environment might hold: the basics, both CLIs' settings, and every
    /// credential a CLI child must never see.
    pub(crate) fn cli_env(home: &Path, codex_home: &Path) -> CliEnv {
        let home = home.to_string_lossy().into_owned();
        let codex_home = codex_home.to_string_lossy().into_owned();
        CliEnv::from_vars([
            ("PATH", "/usr/bin:/bin".to_owned()),
            ("HOME", home.clone()),
            ("USER", "reviewbot".to_owned()),
            ("LANG", "C.UTF-8".to_owned()),
            ("LC_ALL", "C.UTF-8".to_owned()),
            (
                "TMPDIR",
                std::env::temp_dir().to_string_lossy().into_owned(),
            ),
            ("TERM", "xterm-256color".to_owned()),
            ("CLAUDE_CONFIG_DIR", format!("{home}/.claude-review")),
            (
                "CLAUDE_CODE_OAUTH_TOKEN",
                "sk-ant-oat01-subscription".to_owned(),
            ),
            ("CODEX_HOME", codex_home),
            ("ANTHROPIC_API_KEY", "sk-ant-api03-paid".to_owned()),
            ("ANTHROPIC_AUTH_TOKEN", "gateway-bearer".to_owned()),
            ("ANTHROPIC_BASE_URL", "https://gateway.example".to_owned()),
            ("OPENAI_API_KEY", "sk-proj-paid".to_owned()),
            ("OPENAI_BASE_URL", "https://gateway.example/v1".to_owned()),
            ("CODEX_API_KEY", "sk-codex-paid".to_owned()),
            ("GITHUB_TOKEN", "ghs_installation".to_owned()),
            ("GH_TOKEN", "ghs_installation".to_owned()),
            ("REVIEWBOT_WEBHOOK_SECRET", "hook-secret".to_owned()),
            (
                "REVIEWBOT_PRIVATE_KEY",
                "-----BEGIN RSA PRIVATE KEY-----".to_owned(),
            ),
        ])
    }

    pub(crate) fn request(prompt: &str) -> LensRequest {
        LensRequest {
            prompt: prompt.to_owned(),
            diff: Arc::new(Diff::parse(DIFF).expect("diff")),
            pr: None,
            checkout: None,
            answer: crate::lens::contract::AnswerKind::Review,
        }
    }

    /// The text of `src/lib.rs` in a [`Snapshot`]: quotes, a backslash and a tab, which a fake
    /// must escape to put it into its JSON.
    pub(crate) const SNAPSHOT_LIB: &str =
        "fn a() {}\n\tfn b() { let s = \"q\\\\t\"; }\nfn c() {}\n";

    /// A repository snapshot for a lens to read: `src/lib.rs` ([`SNAPSHOT_LIB`]) and
    /// `src/util/helpers.rs`.
    pub(crate) struct Snapshot {
        dir: tempfile::TempDir,
    }

    impl Snapshot {
        pub(crate) fn new() -> Self {
            let dir = tempfile::Builder::new()
                .prefix("reviewbot-snapshot-")
                .tempdir()
                .expect("snapshot dir");
            std::fs::create_dir_all(dir.path().join("src/util")).expect("src/util");
            std::fs::write(dir.path().join("src/lib.rs"), SNAPSHOT_LIB).expect("lib.rs");
            std::fs::write(
                dir.path().join("src/util/helpers.rs"),
                "pub fn helper() -> u32 { 42 }\n",
            )
            .expect("helpers.rs");
            Self { dir }
        }

        pub(crate) fn path(&self) -> &Path {
            self.dir.path()
        }

        /// Every file under the snapshot with its text, sorted: equal before and after a run
        /// when nothing was written.
        pub(crate) fn contents(&self) -> Vec<(PathBuf, String)> {
            fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
                for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
                    let path = entry.path();
                    if entry.file_type().is_ok_and(|t| t.is_dir()) {
                        walk(&path, out);
                    } else {
                        let text = std::fs::read_to_string(&path).unwrap_or_default();
                        out.push((path, text));
                    }
                }
            }
            let mut out = Vec::new();
            walk(self.path(), &mut out);
            out.sort();
            out
        }

        /// `request(prompt)` over this snapshot.
        pub(crate) fn request(&self, prompt: &str) -> LensRequest {
            LensRequest {
                checkout: Some(Arc::from(self.path())),
                answer: crate::lens::contract::AnswerKind::Review,
                ..request(prompt)
            }
        }
    }

    /// The paragraph the prompt of a lens that reads the repository (`true`) or sees the diff
    /// alone ends with.
    pub(crate) fn repository_note(reads: bool) -> String {
        crate::lens::contract::with_repository("", reads)
            .trim()
            .to_owned()
    }

    /// Runs the fake CLI `C` as a lens over a fresh [`Snapshot`], 40 tool rounds allowed, and
    /// checks that the run wrote nothing there and that the prompt said whether the lens
    /// `reads` the repository.
    pub(crate) async fn review_snapshot<C: AgentCli>(
        fake: &Fake,
        env: &CliEnv,
        reads: bool,
    ) -> (Snapshot, Answer) {
        let spec = fake.lens(C::KIND, None);
        let snapshot = Snapshot::new();
        let before = snapshot.contents();
        let req = snapshot.request("Review this change.");
        let answer = agent_cli::run::<C>(&spec, &req, env, 40, DEFAULT_MAX_OUTPUT)
            .await
            .expect("an answer");
        assert_eq!(snapshot.contents(), before, "the snapshot changed");
        let stdin = fake.read("stdin");
        assert!(
            stdin.ends_with(&format!("{}\n", repository_note(reads))),
            "{stdin}"
        );
        (snapshot, answer)
    }

    /// A prompt larger than a pipe buffer, with a marker to look for in argv.
    pub(crate) fn big_prompt() -> String {
        let mut prompt = String::from("PROMPT-MARKER-7f3a: review this change.\n");
        while prompt.len() < 200_000 {
            prompt.push_str("+fn b() {} // untrusted diff text, quotes ' \" and $HOME\n");
        }
        prompt
    }

    /// Waits for `pid` to be gone (or a zombie, when PID 1 here never reaps).
    pub(crate) async fn gone_soon(pid: i32) -> bool {
        for _ in 0..100 {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if stat.is_empty()
                || stat
                    .rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    pub(crate) fn pid(fake: &Fake, name: &str) -> i32 {
        fake.read(name).trim().parse().expect("pid file")
    }

    /// The real CLI `name` under `REVIEWBOT_REAL_CLI_DIR` (an `npm install --prefix` folder), or
    /// `None` after saying plainly that the test is skipped. Written to stderr directly, so that
    /// the notice shows even though the test harness captures `eprintln!`.
    pub(crate) fn real_cli(name: &str, test: &str) -> Option<PathBuf> {
        use std::io::Write;
        let Some(dir) = std::env::var_os("REVIEWBOT_REAL_CLI_DIR").filter(|d| !d.is_empty()) else {
            // CI installs the real CLIs (.ci/run): there, a missing install is a failure.
            assert!(
                std::env::var_os("CI").is_none(),
                "{test}: CI must set REVIEWBOT_REAL_CLI_DIR (see .ci/run)"
            );
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED {test}: set REVIEWBOT_REAL_CLI_DIR to an `npm install --prefix` folder \
                 holding @anthropic-ai/claude-code and @openai/codex to run it"
            );
            return None;
        };
        let dir = PathBuf::from(dir);
        let found = [
            dir.join("node_modules/.bin").join(name),
            dir.join("bin").join(name),
            dir.join(name),
        ]
        .into_iter()
        .find(|p| p.is_file());
        assert!(
            found.is_some(),
            "REVIEWBOT_REAL_CLI_DIR={} holds no `{name}`",
            dir.display()
        );
        found
    }

    /// The basics of a real CLI's environment: our `PATH` (the Codex launcher needs `node`), a
    /// home of its own, and nothing else.
    pub(crate) fn real_env(home: &Path, extra: &[(&str, &Path)]) -> CliEnv {
        let mut vars = vec![
            (
                "PATH".to_owned(),
                std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned()),
            ),
            ("HOME".to_owned(), home.to_string_lossy().into_owned()),
            ("USER".to_owned(), "reviewbot".to_owned()),
            ("LANG".to_owned(), "C.UTF-8".to_owned()),
        ];
        for (k, v) in extra {
            vars.push(((*k).to_owned(), v.to_string_lossy().into_owned()));
        }
        CliEnv::from_vars(vars)
    }

    /// Pids of live processes whose environment holds `needle` (e.g. `CODEX_HOME=/tmp/x`).
    pub(crate) fn processes_with_env(needle: &str) -> Vec<i32> {
        let Ok(entries) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                let zombie = stat
                    .rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'));
                !zombie
                    && environ
                        .split(|&b| b == 0)
                        .any(|var| var == needle.as_bytes())
            })
            .collect()
    }
}
