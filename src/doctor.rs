//! `reviewbot doctor`: a preflight of the config, each lens's backend and GitHub auth, without a
//! billed call and without a review.
//!
//! What is read from the environment is captured once into a [`DoctorEnv`], so tests hand the
//! checks any values without touching the process environment. Every check yields one or more
//! [`Check`] lines; [`DoctorReport::render`] prints them with a verdict, and the caller exits 3
//! when [`DoctorReport::all_ok`] is false (`docs/contract.md` "Exit codes").
//!
//! Each backend checks its own setup (`Backend::preflight`, in its file under `src/lens/`);
//! a subscription lens with `api_fallback_model` gets an extra line saying whether its fallback
//! could run — a warning at worst, never what fails the lens.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::Url;

use crate::config::Config;
use crate::github::client::{ClientLimits, DEFAULT_API_URL, GithubClient};
use crate::github::model::RepoName;
use crate::lens::LensSpec;
use crate::lens::keys::origin_of;
pub use crate::lens::preflight::{Check, PreflightEnv};
use crate::lens::registry::backend;

/// What doctor reads from the environment, captured once.
pub struct DoctorEnv {
    /// What the lens checks read.
    pub lens: PreflightEnv,
    pub github: GithubCheck,
    /// Where the config was read from; `None` when there is no config file (presets only).
    pub config_path: Option<PathBuf>,
}

impl DoctorEnv {
    /// Reads the process environment for `config`. `config_path` is the file the caller
    /// loaded, if any.
    pub fn from_env(config: &Config, config_path: Option<PathBuf>) -> Self {
        Self {
            lens: PreflightEnv::from_env(crate::lens::registry::apis_from_env(
                config.api_key_vars(),
            )),
            github: GithubCheck::from_env(),
            config_path,
        }
    }
}

impl fmt::Debug for DoctorEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DoctorEnv")
            .field("lens", &self.lens)
            .field("github", &self.github)
            .field("config_path", &self.config_path)
            .finish()
    }
}

/// What the GitHub check needs: where the API is, the token (if any), and the client's limits.
/// The client itself is built inside [`run`] (it needs a Tokio runtime). `Debug` hides the token.
#[derive(Clone)]
pub struct GithubCheck {
    pub api_url: String,
    /// The repository a review would post to (`--repo`, else `GITHUB_REPOSITORY`), whose access
    /// is checked too when set.
    pub repo: Option<RepoName>,
    /// `GITHUB_TOKEN`, trimmed; `None` when unset or empty.
    pub token: Option<String>,
    pub limits: ClientLimits,
}

impl GithubCheck {
    /// `GITHUB_API_URL` (default `https://api.github.com`) and `GITHUB_TOKEN`, with short limits:
    /// a preflight does not wait out a rate limit or retry for long.
    pub fn from_env() -> Self {
        let api_url = std::env::var("GITHUB_API_URL")
            .ok()
            .filter(|u| !u.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_API_URL.to_owned());
        Self::new(api_url, std::env::var("GITHUB_TOKEN").ok())
    }

    /// A check of `api_url` with `token` (blank means none) and the preflight limits.
    pub fn new(api_url: impl Into<String>, token: Option<String>) -> Self {
        Self {
            api_url: api_url.into(),
            repo: None,
            token: token.map(|t| t.trim().to_owned()).filter(|t| !t.is_empty()),
            limits: ClientLimits {
                max_rate_limit_wait: Duration::from_secs(5),
                retries: 2,
                backoff_base: Duration::from_millis(500),
                ..ClientLimits::default()
            },
        }
    }
}

impl fmt::Debug for GithubCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GithubCheck")
            .field("api_url", &self.api_url)
            .field("token", &self.token.as_ref().map(|_| "[set]"))
            .field("limits", &self.limits)
            .finish()
    }
}

/// Every check, in order: config, each lens, GitHub.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DoctorReport {
    pub checks: Vec<Check>,
}

impl DoctorReport {
    /// True when no check failed (warnings allowed).
    pub fn all_ok(&self) -> bool {
        self.checks.iter().all(|c| c.ok)
    }

    /// One line a check (`ok  `, `warn` or `FAIL`, the subject, the detail), then the verdict.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for check in &self.checks {
            out.push_str(&format!(
                "{} {}: {}\n",
                check.label(),
                check.subject,
                check.detail
            ));
        }
        out.push_str(&self.verdict());
        out.push('\n');
        out
    }

    /// `All checks passed.`, `All checks passed (1 warning).` or `2 of 5 checks failed.`
    pub fn verdict(&self) -> String {
        let total = self.checks.len();
        let failed = self.checks.iter().filter(|c| !c.ok).count();
        let warnings = self.checks.iter().filter(|c| c.warning).count();
        if failed > 0 {
            let noun = if total == 1 { "check" } else { "checks" };
            format!("{failed} of {total} {noun} failed.")
        } else if warnings > 0 {
            let noun = if warnings == 1 { "warning" } else { "warnings" };
            format!("All checks passed ({warnings} {noun}).")
        } else {
            "All checks passed.".to_owned()
        }
    }
}

/// Runs every check: the config, each of `lenses` (in order), and GitHub auth.
pub async fn run(config: &Config, lenses: &[LensSpec], env: &DoctorEnv) -> DoctorReport {
    let mut checks = vec![config_check(config, env.config_path.as_deref())];
    let lens_checks = async {
        let mut out = Vec::new();
        for spec in lenses {
            out.extend(lens_checks(spec, &env.lens).await);
        }
        out
    };
    let (lens_checks, github) = tokio::join!(lens_checks, github_check(&env.github));
    checks.extend(lens_checks);
    checks.push(github);
    DoctorReport { checks }
}

/// The checks of one lens: its backend's lines, then whether its API fallback could run.
async fn lens_checks(spec: &LensSpec, env: &PreflightEnv) -> Vec<Check> {
    let subject = format!("lens {}", spec.name);
    let b = backend(spec.backend);
    let mut checks = b.preflight(&subject, spec, env).await;
    let fallback_model = spec
        .api_fallback_model
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty());
    if let (Some(api), Some(model)) = (b.fallback(), fallback_model)
        && let Some(check) = backend(api).fallback_check(&subject, model, env)
    {
        checks.push(check);
    }
    checks
}

fn config_check(config: &Config, path: Option<&Path>) -> Check {
    match path {
        Some(path) => {
            let n = config.lens.len();
            let lenses = match n {
                0 => "no lens defined, presets only".to_owned(),
                1 => "1 lens defined".to_owned(),
                n => format!("{n} lenses defined"),
            };
            Check::ok("config", format!("read from {} ({lenses})", path.display()))
        }
        None => Check::ok(
            "config",
            "no config file; presets only (builtin, claude, codex)",
        ),
    }
}

// ---- GitHub ----

async fn github_check(check: &GithubCheck) -> Check {
    const SUBJECT: &str = "github";
    let Some(token) = &check.token else {
        return Check::ok(
            SUBJECT,
            "GITHUB_TOKEN is not set: `review --diff` needs none; `review --pr` on a private \
             repository, and `--post`, need one",
        );
    };
    let api = Url::parse(check.api_url.trim())
        .map(|u| origin_of(&u))
        .unwrap_or_else(|_| check.api_url.trim().to_owned());
    let client = match GithubClient::new(&check.api_url, Some(token.clone()), check.limits.clone())
    {
        Ok(client) => client,
        Err(e) => return Check::fail(SUBJECT, e.to_string()),
    };
    let who = match client.current_user().await {
        Ok(Some(user)) => format!("token valid, authenticated as {} ({api})", user.login),
        Ok(None) => format!("token valid (an installation or Actions token) ({api})"),
        Err(e) => return Check::fail(SUBJECT, format!("{e} ({api})")),
    };
    let Some(repo) = &check.repo else {
        return Check::ok(SUBJECT, who);
    };
    match client.repository_push_access(repo).await {
        Ok(Some(true)) => Check::ok(SUBJECT, format!("{who}; can write to {repo}")),
        Ok(Some(false)) => Check::fail(
            SUBJECT,
            format!(
                "{who}; can read {repo} but not write to it: posting a review needs the \
                 \"Pull requests\" permission with read and write access (`pull-requests: write`)"
            ),
        ),
        Ok(None) => Check::ok(
            SUBJECT,
            format!("{who}; can read {repo} (write access shows only when posting)"),
        ),
        Err(e) => Check::fail(SUBJECT, format!("{who}; but {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lens::BackendKind;
    use crate::lens::cli_env::CliEnv;
    use crate::lens::keys::ApiVars;
    use std::os::unix::fs::PermissionsExt;

    async fn lens_check(spec: &LensSpec, env: &DoctorEnv) -> Vec<Check> {
        lens_checks(spec, &env.lens).await
    }
    use crate::testing::api_server::{FakeServer, Reply};
    use crate::testing::fake_cli::Fake;
    use serde_json::json;

    /// An environment with nothing set but a `PATH` and `HOME` of our choosing.
    fn env_with(vars: &[(&str, &str)]) -> DoctorEnv {
        DoctorEnv {
            lens: PreflightEnv {
                cli: CliEnv::from_vars(vars.iter().map(|(k, v)| (*k, *v))),
                apis: ApiVars::default(),
                cli_timeout: Duration::from_secs(5),
            },
            github: GithubCheck::new("http://127.0.0.1:9", None),
            config_path: None,
        }
    }

    fn lens(name: &str, backend: BackendKind) -> LensSpec {
        LensSpec::new(name, backend)
    }

    fn one(checks: &[Check]) -> &Check {
        assert_eq!(checks.len(), 1, "{checks:#?}");
        &checks[0]
    }

    #[tokio::test]
    async fn claude_with_a_version_and_a_token_is_ok() {
        let fake = Fake::new("claude", "ok");
        let home = tempfile::TempDir::new().expect("home");
        let env = env_with(&[
            ("PATH", "/usr/bin:/bin"),
            ("HOME", &home.path().to_string_lossy()),
            ("CLAUDE_CODE_OAUTH_TOKEN", "sk-ant-oat01-secret"),
        ]);
        let checks = lens_check(&fake.lens(BackendKind::ClaudeCli, None), &env).await;
        let check = one(&checks);
        assert!(check.ok, "{check:?}");
        assert_eq!(check.subject, "lens claude");
        assert_eq!(
            check.detail,
            format!(
                "claude-cli 2.1.197 found at {}; logged in (CLAUDE_CODE_OAUTH_TOKEN set)",
                fake.bin()
            )
        );
        assert!(!check.detail.contains("secret"));
        // The probe ran as a lens child runs: `--version` only, allow-listed env, a scratch dir.
        assert_eq!(fake.argv(), ["--version"]);
        assert_eq!(
            fake.env_names(),
            ["CLAUDE_CODE_OAUTH_TOKEN", "HOME", "PATH"]
        );
        assert!(fake.read("cwd").contains("reviewbot-claude-"));
    }

    #[tokio::test]
    async fn claude_is_found_on_the_childs_path_and_a_credentials_file_counts_as_logged_in() {
        let fake = Fake::new("claude", "ok");
        let config_dir = tempfile::TempDir::new().expect("config dir");
        std::fs::write(config_dir.path().join(".credentials.json"), "{}").expect("creds");
        let path = fake.dir.path().to_string_lossy().into_owned();
        let env = env_with(&[
            ("PATH", &path),
            ("CLAUDE_CONFIG_DIR", &config_dir.path().to_string_lossy()),
        ]);
        let checks = lens_check(&lens("claude", BackendKind::ClaudeCli), &env).await;
        let check = one(&checks);
        assert!(check.ok, "{check:?}");
        assert!(check.detail.contains(&format!("found at {}", fake.bin())));
        assert!(check.detail.contains(".credentials.json"), "{check:?}");
    }

    #[tokio::test]
    async fn claude_logged_out_fails_with_what_to_run() {
        let fake = Fake::new("claude", "ok");
        let home = tempfile::TempDir::new().expect("home");
        let env = env_with(&[
            ("PATH", "/usr/bin:/bin"),
            ("HOME", &home.path().to_string_lossy()),
        ]);
        let checks = lens_check(&fake.lens(BackendKind::ClaudeCli, None), &env).await;
        let check = one(&checks);
        if cfg!(target_os = "macos") {
            return;
        }
        assert!(!check.ok, "{check:?}");
        assert!(check.detail.contains("2.1.197"), "{check:?}");
        assert!(check.detail.contains("claude setup-token"), "{check:?}");
        assert!(check.detail.contains("claude /login"), "{check:?}");
    }

    #[tokio::test]
    async fn a_missing_claude_fails_naming_it() {
        let empty = tempfile::TempDir::new().expect("empty");
        let env = env_with(&[("PATH", &empty.path().to_string_lossy())]);
        let checks = lens_check(&lens("claude", BackendKind::ClaudeCli), &env).await;
        let check = one(&checks);
        assert!(!check.ok);
        assert!(
            check
                .detail
                .starts_with("claude-cli: `claude` was not found on PATH"),
            "{check:?}"
        );

        let mut spec = lens("claude", BackendKind::ClaudeCli);
        spec.bin = Some("/nonexistent/bin/claude".into());
        let check = lens_check(&spec, &env).await.remove(0);
        assert!(!check.ok);
        assert!(
            check
                .detail
                .contains("`/nonexistent/bin/claude` was not found"),
            "{check:?}"
        );
    }

    #[tokio::test]
    async fn a_claude_whose_version_fails_fails() {
        let fake = Fake::new("claude", "version-crash");
        let env = env_with(&[("PATH", "/usr/bin:/bin"), ("CLAUDE_CODE_OAUTH_TOKEN", "t")]);
        let checks = lens_check(&fake.lens(BackendKind::ClaudeCli, None), &env).await;
        let check = one(&checks);
        assert!(!check.ok);
        assert!(
            check
                .detail
                .contains("exited with status 3: Error: cannot start"),
            "{check:?}"
        );
    }

    #[tokio::test]
    async fn an_anthropic_key_is_a_warning_for_claude_and_feeds_its_fallback() {
        let fake = Fake::new("claude", "ok");
        let mut env = env_with(&[("PATH", "/usr/bin:/bin"), ("CLAUDE_CODE_OAUTH_TOKEN", "t")]);
        env.lens.apis.set("ANTHROPIC_API_KEY", "sk-ant-api03-paid");
        let mut spec = fake.lens(BackendKind::ClaudeCli, None);
        spec.api_fallback_model = Some("claude-sonnet-5".into());
        let checks = lens_check(&spec, &env).await;
        assert_eq!(checks.len(), 3, "{checks:#?}");
        assert!(checks.iter().all(|c| c.ok), "{checks:#?}");
        assert!(checks[1].warning && checks[1].detail.contains("removes it"));
        assert!(!checks[2].warning);
        assert!(
            checks[2]
                .detail
                .contains("api fallback to anthropic (model claude-sonnet-5) could run"),
            "{checks:#?}"
        );
        assert!(checks[2].detail.contains("https://api.anthropic.com"));
        assert!(!format!("{checks:?}").contains("sk-ant-api03-paid"));
    }

    #[tokio::test]
    async fn a_fallback_without_a_key_is_a_warning_not_a_failure() {
        let fake = Fake::new("codex", "ok");
        let env = env_with(&[("PATH", "/usr/bin:/bin")]);
        let mut spec = fake.lens(BackendKind::CodexCli, Some("gpt-5.6-terra"));
        spec.api_fallback_model = Some("gpt-5.6".into());
        let checks = lens_check(&spec, &env).await;
        assert_eq!(checks.len(), 2, "{checks:#?}");
        assert!(checks[0].ok && !checks[0].warning, "{checks:#?}");
        assert!(checks[1].ok && checks[1].warning, "{checks:#?}");
        assert!(checks[1].detail.contains("OPENAI_API_KEY is not set"));
    }

    #[tokio::test]
    async fn codex_logged_in_is_ok() {
        let fake = Fake::new("codex", "ok");
        let codex_home = tempfile::TempDir::new().expect("codex home");
        let env = env_with(&[
            ("PATH", "/usr/bin:/bin"),
            ("CODEX_HOME", &codex_home.path().to_string_lossy()),
        ]);
        let checks = lens_check(&fake.lens(BackendKind::CodexCli, None), &env).await;
        let check = one(&checks);
        assert!(check.ok, "{check:?}");
        assert_eq!(
            check.detail,
            format!(
                "codex-cli 0.171.0 found at {}; logged in (codex login status: Logged in using \
                 ChatGPT)",
                fake.bin()
            )
        );
        assert_eq!(fake.argv(), ["login", "status"]);
        assert_eq!(fake.env_names(), ["CODEX_HOME", "PATH"]);
    }

    #[tokio::test]
    async fn codex_whose_sandbox_cannot_start_warns_that_it_reads_the_diff_alone() {
        let fake = Fake::new("codex", "sandbox-broken");
        let env = env_with(&[("PATH", "/usr/bin:/bin")]);
        let checks = lens_check(&fake.lens(BackendKind::CodexCli, None), &env).await;
        assert_eq!(checks.len(), 2, "{checks:#?}");
        assert!(checks[0].ok && !checks[0].warning, "{checks:#?}");
        assert!(checks[1].ok && checks[1].warning, "{checks:#?}");
        assert!(
            checks[1].detail.contains("cannot start its sandbox")
                && checks[1].detail.contains("bwrap:"),
            "{checks:#?}"
        );
    }

    #[tokio::test]
    async fn codex_logged_out_fails() {
        let fake = Fake::new("codex", "logged-out");
        let env = env_with(&[("PATH", "/usr/bin:/bin")]);
        let mut spec = fake.lens(BackendKind::CodexCli, None);
        spec.name = crate::ids::LensName::new("terra");
        let checks = lens_check(&spec, &env).await;
        let check = one(&checks);
        assert!(!check.ok);
        assert_eq!(check.subject, "lens terra");
        assert!(
            check
                .detail
                .contains("not logged in (codex login status: Not logged in); run `codex login`"),
            "{check:?}"
        );
    }

    #[tokio::test]
    async fn codex_with_an_api_key_login_warns() {
        let fake = Fake::new("codex", "api-key-login");
        let env = env_with(&[("PATH", "/usr/bin:/bin")]);
        let checks = lens_check(&fake.lens(BackendKind::CodexCli, None), &env).await;
        assert_eq!(checks.len(), 2, "{checks:#?}");
        assert!(checks[0].ok && checks[1].warning, "{checks:#?}");
        assert!(checks[1].detail.contains("billed to the API"));
    }

    #[tokio::test]
    async fn a_missing_codex_home_fails_before_login_status() {
        let fake = Fake::new("codex", "ok");
        let env = env_with(&[
            ("PATH", "/usr/bin:/bin"),
            ("CODEX_HOME", "/nonexistent/codex-home"),
        ]);
        let checks = lens_check(&fake.lens(BackendKind::CodexCli, None), &env).await;
        let check = one(&checks);
        assert!(!check.ok);
        assert!(
            check.detail.contains(
                "CODEX_HOME points to a folder that does not exist (/nonexistent/codex-home)"
            ),
            "{check:?}"
        );
        assert_eq!(fake.argv(), ["--version"], "login status must not run");
    }

    #[tokio::test]
    async fn api_lenses_need_a_key_and_a_model() {
        let env = env_with(&[]);
        let check = one(&lens_check(&lens("opus", BackendKind::Anthropic), &env).await).clone();
        assert!(!check.ok);
        assert_eq!(
            check.detail,
            "anthropic: ANTHROPIC_API_KEY is not set; no `model` is configured for this lens"
        );

        let mut env = env_with(&[]);
        env.lens
            .apis
            .set("OPENAI_API_KEY", "sk-proj-secret")
            .set("OPENAI_BASE_URL", "http://user:pw@127.0.0.1:4000/v1/");
        let mut spec = lens("local", BackendKind::Openai);
        spec.model = Some("qwen3-coder".into());
        let check = one(&lens_check(&spec, &env).await).clone();
        assert!(check.ok, "{check:?}");
        assert!(
            check.detail.starts_with(
                "openai API at http://127.0.0.1:4000, model qwen3-coder; OPENAI_API_KEY set"
            ),
            "{check:?}"
        );
        assert!(!check.detail.contains("pw") && !check.detail.contains("secret"));

        env.lens
            .apis
            .set("OPENAI_API_KEY", "k")
            .set("OPENAI_BASE_URL", "not a url");
        let check = one(&lens_check(&spec, &env).await).clone();
        assert!(!check.ok);
        assert!(
            check
                .detail
                .contains("OPENAI_BASE_URL is not an http(s) URL")
        );
    }

    #[tokio::test]
    async fn command_lenses_need_an_executable_bin() {
        let dir = tempfile::TempDir::new().expect("dir");
        let script = dir.path().join("my-reviewer");
        std::fs::write(&script, "#!/bin/sh\n").expect("script");
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let plain = dir.path().join("notes.txt");
        std::fs::write(&plain, "").expect("plain");
        let env = env_with(&[("PATH", &dir.path().to_string_lossy())]);

        let mut spec = lens("mine", BackendKind::Command);
        spec.bin = Some("my-reviewer".into());
        let check = one(&lens_check(&spec, &env).await).clone();
        assert!(check.ok, "{check:?}");
        assert!(check.detail.contains(&script.display().to_string()));

        spec.bin = Some("missing-reviewer".into());
        let check = one(&lens_check(&spec, &env).await).clone();
        assert!(!check.ok);
        assert!(
            check
                .detail
                .contains("`missing-reviewer` was not found on PATH"),
            "{check:?}"
        );

        spec.bin = Some(plain.to_string_lossy().into_owned());
        let check = one(&lens_check(&spec, &env).await).clone();
        assert!(!check.ok);
        assert!(
            check.detail.contains("is not an executable file"),
            "{check:?}"
        );
    }

    #[tokio::test]
    async fn the_report_renders_every_check_and_a_verdict() {
        let empty = tempfile::TempDir::new().expect("empty");
        let mut env = env_with(&[("PATH", &empty.path().to_string_lossy())]);
        env.config_path = Some(PathBuf::from("/etc/reviewbot.toml"));
        let lenses = [
            lens("builtin", BackendKind::Builtin),
            lens("claude", BackendKind::ClaudeCli),
            lens("opus", BackendKind::Anthropic),
        ];
        let report = run(&Config::default(), &lenses, &env).await;
        assert!(!report.all_ok());
        let text = report.render();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 6, "{text}");
        assert_eq!(
            lines[0],
            "ok   config: read from /etc/reviewbot.toml (no lens defined, presets only)"
        );
        assert!(lines[1].starts_with("ok   lens builtin: "), "{text}");
        assert!(
            lines[2].starts_with("FAIL lens claude: claude-cli: `claude`"),
            "{text}"
        );
        assert!(
            lines[3].starts_with("FAIL lens opus: anthropic: "),
            "{text}"
        );
        assert!(
            lines[4].starts_with("ok   github: GITHUB_TOKEN is not set"),
            "{text}"
        );
        assert_eq!(lines[5], "2 of 5 checks failed.");

        let report = run(&Config::default(), &lenses[..1], &env_with(&[])).await;
        assert!(report.all_ok());
        assert!(report.render().ends_with("\nAll checks passed.\n"));
        assert!(
            report
                .render()
                .contains("ok   config: no config file; presets only")
        );

        let warned = DoctorReport {
            checks: vec![Check::ok("config", "x"), Check::warn("lens claude", "y")],
        };
        assert!(warned.all_ok());
        assert!(warned.render().contains("warn lens claude: y\n"));
        assert_eq!(warned.verdict(), "All checks passed (1 warning).");
    }

    async fn github(replies: Vec<Reply>) -> Check {
        let server = FakeServer::start(replies).await;
        let mut check = GithubCheck::new(server.base.clone(), Some("ghp_doctor".into()));
        check.limits.retries = 1;
        check.limits.backoff_base = Duration::from_millis(1);
        let result = github_check(&check).await;
        let received = server.received();
        assert_eq!(received.len(), 1);
        assert_eq!(received[0].path, "/user");
        assert_eq!(
            received[0].header("authorization"),
            Some("Bearer ghp_doctor")
        );
        result
    }

    #[tokio::test]
    async fn github_repository_write_access_is_checked() {
        let run = |push: Option<bool>| async move {
            let repo = match push {
                Some(p) => {
                    json!({"id": 1, "full_name": "octo/app", "permissions": {"pull": true, "push": p}})
                }
                None => json!({"id": 1, "full_name": "octo/app"}),
            };
            let server = FakeServer::start(vec![
                Reply::json(200, json!({"login": "octocat", "id": 1, "type": "User"})),
                Reply::json(200, repo),
            ])
            .await;
            let mut check = GithubCheck::new(server.base.clone(), Some("ghp_doctor".into()));
            check.repo = RepoName::parse("octo/app");
            let result = github_check(&check).await;
            let paths: Vec<String> = server.received().iter().map(|r| r.path.clone()).collect();
            assert_eq!(paths, ["/user", "/repos/octo/app"]);
            result
        };
        let ok = run(Some(true)).await;
        assert!(
            ok.ok && ok.detail.ends_with("can write to octo/app"),
            "{ok:?}"
        );
        let read_only = run(Some(false)).await;
        assert!(
            !read_only.ok && read_only.detail.contains("`pull-requests: write`"),
            "{read_only:?}"
        );
        let unknown = run(None).await;
        assert!(
            unknown.ok && unknown.detail.contains("can read octo/app"),
            "{unknown:?}"
        );
    }

    #[tokio::test]
    async fn github_user_token_is_ok_with_the_login() {
        let check = github(vec![Reply::json(
            200,
            json!({"login": "octocat", "id": 1, "type": "User"}),
        )])
        .await;
        assert!(check.ok, "{check:?}");
        assert!(
            check
                .detail
                .starts_with("token valid, authenticated as octocat (http://127.0.0.1:"),
            "{check:?}"
        );
    }

    #[tokio::test]
    async fn github_installation_token_is_ok() {
        let check = github(vec![Reply::json(
            403,
            json!({"message": "Resource not accessible by integration"}),
        )])
        .await;
        assert!(check.ok, "{check:?}");
        assert!(
            check
                .detail
                .starts_with("token valid (an installation or Actions token)"),
            "{check:?}"
        );
    }

    #[tokio::test]
    async fn github_401_fails_with_the_errors_sentence() {
        let check = github(vec![Reply::json(
            401,
            json!({"message": "Bad credentials"}),
        )])
        .await;
        assert!(!check.ok);
        assert!(
            check
                .detail
                .starts_with("GitHub rejected the token (401): check GITHUB_TOKEN"),
            "{check:?}"
        );
        assert!(!check.detail.contains("ghp_doctor"));
    }

    #[tokio::test]
    async fn github_unreachable_fails() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        drop(listener);
        let mut check = GithubCheck::new(format!("http://127.0.0.1:{port}"), Some("t".into()));
        check.limits.retries = 1;
        check.limits.backoff_base = Duration::from_millis(1);
        let result = github_check(&check).await;
        assert!(!result.ok);
        assert!(result.detail.contains("unreachable"), "{result:?}");
    }

    /// The real CLIs, logged out (`REVIEWBOT_REAL_CLI_DIR`, see `cli_env::fake::real_cli`).
    #[tokio::test]
    async fn real_clis_logged_out_are_found_and_fail_the_login() {
        use crate::testing::fake_cli::{real_cli, real_env};
        let test = "real_clis_logged_out_are_found_and_fail_the_login";
        let Some(claude) = real_cli("claude", test) else {
            return;
        };
        let Some(codex) = real_cli("codex", test) else {
            return;
        };
        let home = tempfile::TempDir::new().expect("home");
        let codex_home = home.path().join("codex-home");
        std::fs::create_dir(&codex_home).expect("codex home");
        let mut env = env_with(&[]);
        env.lens.cli = real_env(home.path(), &[("CODEX_HOME", &codex_home)]);
        env.lens.cli_timeout = Duration::from_secs(30);

        let mut spec = lens("claude", BackendKind::ClaudeCli);
        spec.bin = Some(claude.to_string_lossy().into_owned());
        let check = one(&lens_check(&spec, &env).await).clone();
        assert!(!check.ok, "{check:?}");
        assert!(check.detail.starts_with("claude-cli 2."), "{check:?}");
        assert!(check.detail.contains("not logged in"), "{check:?}");

        let mut spec = lens("codex", BackendKind::CodexCli);
        spec.bin = Some(codex.to_string_lossy().into_owned());
        let check = one(&lens_check(&spec, &env).await).clone();
        assert!(!check.ok, "{check:?}");
        assert!(check.detail.starts_with("codex-cli 0."), "{check:?}");
        assert!(
            check
                .detail
                .contains("not logged in (codex login status: Not logged in)"),
            "{check:?}"
        );
    }

    #[test]
    fn debug_hides_the_github_token() {
        let check = GithubCheck::new("https://api.github.com", Some("ghp_secret".into()));
        assert!(!format!("{check:?}").contains("ghp_secret"));
        assert!(
            GithubCheck::new("https://api.github.com", Some("  ".into()))
                .token
                .is_none()
        );
    }
}
