//! The `command` lens: any executable, request JSON on stdin, lens response on stdout.
//!
//! The child runs with the request on stdin (never argv), a minimal environment, an empty scratch
//! working directory and its own process group (see [`super::process`]). A non-zero exit, a
//! timeout, output over the cap or a reply that is not one lens response make the lens fail.

use std::ffi::OsString;
use std::path::Path;

use serde::Serialize;

use super::backend::{Backend, CallEnv, Pending, Runs};
use super::preflight::{Check, Located, PreflightEnv, locate, not_found};
use super::process::{
    self, DEFAULT_MAX_OUTPUT, Keep, OUTPUT_EXCERPT_CHARS, ProcessSpec, STDERR_TAIL_CHARS,
    child_text, describe_status, excerpt_note, failure_of, stderr_note,
};
use super::{Answer, AuthClass, Failure, LensRequest, LensSpec, PrInfo, Vendor};
use crate::lens::contract::LensResponse;
use crate::lens::contract::with_repository;

/// Variables every command lens gets when they are set: enough to find programs, a home, a
/// locale and a temp directory. `LC_*` variables are passed too.
const BASE_ENV: [&str; 4] = ["PATH", "HOME", "LANG", "TMPDIR"];

/// What a command lens reads on stdin (`docs/contract.md` "Command lens").
#[derive(Serialize)]
struct CommandRequest<'a> {
    lens: &'a str,
    prompt: &'a str,
    diff: &'a str,
    pr: Option<&'a PrInfo>,
    schema: serde_json::Value,
    /// The round's read-only snapshot, also the child's working directory; null without one.
    checkout: Option<&'a Path>,
    /// What is asked: `review` (findings) or `verify` (verdicts on another lens's findings).
    answer: crate::lens::contract::AnswerKind,
}

/// The `command` backend.
pub struct Command;

impl Backend for Command {
    fn auth_class(&self) -> AuthClass {
        AuthClass::None
    }

    fn runs(&self) -> Runs {
        Runs::Process
    }

    fn vendor(&self) -> Vendor {
        Vendor::Own
    }

    fn runs_named_program(&self) -> bool {
        true
    }

    fn call<'a>(
        &'a self,
        spec: &'a LensSpec,
        req: &'a LensRequest,
        _env: CallEnv<'a>,
    ) -> Pending<'a, Result<Answer, Failure>> {
        Box::pin(run_capped(spec, req, DEFAULT_MAX_OUTPUT))
    }

    fn preflight<'a>(
        &'a self,
        subject: &'a str,
        spec: &'a LensSpec,
        env: &'a PreflightEnv,
    ) -> Pending<'a, Vec<Check>> {
        Box::pin(async move { vec![preflight(subject, spec, env)] })
    }
}

/// Runs a `command` lens, each output stream capped at `max_output` bytes. A command lens
/// reports no token usage or cost.
async fn run_capped(
    spec: &LensSpec,
    req: &LensRequest,
    max_output: usize,
) -> Result<Answer, Failure> {
    let Some(bin) = spec.bin.as_deref().filter(|b| !b.is_empty()) else {
        return Err(Failure::fatal(format!(
            "command lens `{}` has no `bin`",
            spec.name
        )));
    };
    // The round's snapshot, or a fresh, empty directory removed when the run ends: never the
    // directory reviewbot runs in, never ours.
    let scratch = tempfile::Builder::new()
        .prefix("reviewbot-lens-")
        .tempdir()
        .map_err(|e| Failure::fatal(format!("could not create a scratch directory: {e}")))?;
    let cwd = req.checkout.as_deref().unwrap_or(scratch.path());

    let mut child = ProcessSpec::new(bin, cwd, spec.timeout);
    child.args = spec.args.iter().map(OsString::from).collect();
    child.env = child_env(&spec.env, std::env::vars_os());
    child.stdin = request_json(spec, req)?;
    child.max_output = max_output;

    let out = process::run(child).await.map_err(failure_of)?;
    if !out.status.success() {
        return Err(Failure::fatal(format!(
            "exited with {}{}",
            describe_status(out.status),
            stderr_note(&child_text(&out.stderr, STDERR_TAIL_CHARS, Keep::Tail))
        )));
    }
    let unreadable = |reason: String| {
        Failure::fatal(format!(
            "unreadable output: {reason}{}",
            excerpt_note(&child_text(&out.stdout, OUTPUT_EXCERPT_CHARS, Keep::Head))
        ))
    };
    let text = std::str::from_utf8(&out.stdout)
        .map_err(|_| unreadable("the reply is not UTF-8".to_owned()))?;
    let response = LensResponse::parse(text).map_err(|e| unreadable(e.to_string()))?;
    Ok(Answer {
        response,
        raw: text.to_owned(),
        ..Answer::default()
    })
}

/// The request document written to the lens's stdin.
fn request_json(spec: &LensSpec, req: &LensRequest) -> Result<Vec<u8>, Failure> {
    let prompt = with_repository(&req.prompt, req.checkout.is_some());
    let doc = CommandRequest {
        lens: spec.name.as_str(),
        prompt: &prompt,
        diff: req.diff.text(),
        pr: req.pr.as_ref(),
        schema: req.answer.schema(),
        checkout: req.checkout.as_deref(),
        answer: req.answer,
    };
    serde_json::to_vec(&doc)
        .map_err(|e| Failure::fatal(format!("could not encode the request: {e}")))
}

/// The child's whole environment, taken from `parent`: the base allow-list, `LC_*`, and the
/// variables the lens's config names ([`passed_through`]).
fn child_env(
    named: &[String],
    parent: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    parent
        .into_iter()
        .filter(|(name, _)| {
            let Some(name) = name.to_str() else {
                return false;
            };
            is_base(name) || passed_through(named).any(|n| n == name)
        })
        .collect()
}

fn is_base(name: &str) -> bool {
    BASE_ENV.contains(&name) || name.starts_with("LC_")
}

/// The variables of `named` (a lens's `env`) that the lens gets because its config names them:
/// not the base ones it gets anyway, and never a credential of reviewbot's own
/// ([`crate::credentials::never_to_a_lens`]: `docs/contract.md` "Isolation"; the store's
/// URL can hold its password) or the Claude subscription token, which is for a `claude-cli`
/// lens only. Their values are credentials the operator hands over, masked by value like
/// reviewbot's own ([`crate::credentials::remember_vars`]).
pub fn passed_through(named: &[String]) -> impl Iterator<Item = &str> {
    use crate::credentials::{OWN_VARS, never_to_a_lens};
    named
        .iter()
        .map(String::as_str)
        .filter(|n| !is_base(n) && !never_to_a_lens(&OWN_VARS, n))
}

/// `doctor`'s line: `bin` exists and is executable (a bare name is looked up on `PATH`); it is
/// not run.
fn preflight(subject: &str, spec: &LensSpec, env: &PreflightEnv) -> Check {
    let Some(bin) = spec.bin.as_deref().filter(|b| !b.trim().is_empty()) else {
        return Check::fail(subject, "command lens has no `bin`, the program to run");
    };
    match locate(bin, env.cli.get("PATH")) {
        Located::Found(path) => Check::ok(
            subject,
            format!("command `{bin}` found at {} (not run)", path.display()),
        ),
        Located::NotExecutable(path) => Check::fail(
            subject,
            format!(
                "command `{bin}`: {} is not an executable file",
                path.display()
            ),
        ),
        Located::NotFound => Check::fail(subject, not_found(bin, "set the lens's `bin`")),
    }
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::lens::contract::response_schema;

    async fn run(spec: &LensSpec, req: &LensRequest) -> Result<Answer, Failure> {
        run_capped(spec, req, DEFAULT_MAX_OUTPUT).await
    }
    use crate::diff::Diff;
    use crate::lens::BackendKind;
    use crate::testing::fake_cli::gone_soon;

    use crate::testing::fake_cli::DIFF;

    fn fixture(name: &str) -> String {
        let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests/fixtures/lenses", name]
            .iter()
            .collect();
        path.to_string_lossy().into_owned()
    }

    fn lens(script: &str) -> LensSpec {
        let mut spec = LensSpec::new(script.trim_end_matches(".sh"), BackendKind::Command);
        spec.bin = Some(fixture(script));
        spec.timeout = Duration::from_secs(2);
        spec
    }

    fn request() -> LensRequest {
        LensRequest {
            prompt: "Review this change.".to_owned(),
            diff: Arc::new(Diff::parse(DIFF).expect("diff")),
            pr: Some(PrInfo {
                title: "Add b".to_owned(),
                body: "Adds `b`.".to_owned(),
                number: crate::ids::PrNumber(7),
                head: crate::ids::HeadSha::parse("ec26c3e57ca3a959ca5aad62de7213c562f8c821")
                    .expect("sha"),
            }),
            checkout: None,
            answer: crate::lens::contract::AnswerKind::Review,
        }
    }

    fn out_file(dir: &tempfile::TempDir, name: &str) -> PathBuf {
        dir.path().join(name)
    }

    #[tokio::test]
    async fn a_good_lens_answers() {
        let answer = run(&lens("good.sh"), &request()).await.expect("ok");
        assert_eq!(answer.usage, None);
        assert!(answer.raw.contains("Unused function"));
        let response = answer.response;
        assert_eq!(response.findings.len(), 1);
        assert_eq!(response.findings[0].path, "src/lib.rs");
        assert_eq!(response.findings[0].line, 2);
        assert_eq!(response.summary.as_deref(), Some("One finding."));
    }

    #[tokio::test]
    async fn a_fenced_answer_with_prose_is_read() {
        let answer = run(&lens("fenced.sh"), &request()).await.expect("ok");
        assert_eq!(answer.response.findings.len(), 1);
    }

    #[tokio::test]
    async fn a_non_zero_exit_fails_with_the_stderr_tail() {
        let err = run(&lens("fail.sh"), &request()).await.expect_err("fails");
        assert_eq!(
            err.to_string(),
            "exited with status 3; stderr: fake-lens: model overloaded, try later"
        );
    }

    #[tokio::test]
    async fn a_hanging_lens_times_out_and_its_grandchild_dies() {
        let dir = tempfile::TempDir::new().expect("dir");
        let pidfile = out_file(&dir, "grandchild");
        let mut spec = lens("hang.sh");
        spec.timeout = Duration::from_millis(300);
        spec.args = vec![pidfile.to_string_lossy().into_owned()];
        let started = Instant::now();
        let err = run(&spec, &request()).await.expect_err("times out");
        assert!(started.elapsed() < Duration::from_millis(1500));
        assert_eq!(
            err.to_string(),
            "timed out after 300ms; stderr: fake-lens: thinking hard"
        );
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .expect("pid file")
            .trim()
            .parse()
            .expect("pid");
        assert!(gone_soon(pid).await, "grandchild {pid} survived");
    }

    #[tokio::test]
    async fn garbage_output_is_unreadable() {
        let err = run(&lens("garbage.sh"), &request())
            .await
            .expect_err("fails");
        let text = err.to_string();
        assert!(text.starts_with("unreadable output: "), "{text}");
        assert!(
            text.ends_with("; it began: I am not JSON. Sorry."),
            "{text}"
        );
    }

    #[tokio::test]
    async fn empty_output_is_a_failure_not_no_findings() {
        let err = run(&lens("silent.sh"), &request())
            .await
            .expect_err("fails");
        assert_eq!(err.to_string(), "unreadable output: the reply is empty");
    }

    #[tokio::test]
    async fn huge_output_fails() {
        let err = run_capped(&lens("huge.sh"), &request(), 64 * 1024)
            .await
            .expect_err("fails");
        assert_eq!(err.to_string(), "output exceeded 65536 bytes");
    }

    #[tokio::test]
    async fn a_missing_binary_is_a_clear_failure() {
        let mut spec = lens("good.sh");
        spec.bin = Some("/nonexistent/lens".to_owned());
        let err = run(&spec, &request()).await.expect_err("fails");
        assert_eq!(err.to_string(), "`/nonexistent/lens` was not found");

        spec.bin = None;
        let err = run(&spec, &request()).await.expect_err("fails");
        assert_eq!(err.to_string(), "command lens `good` has no `bin`");
    }

    #[tokio::test]
    async fn the_lens_sees_only_allowed_variables_in_an_empty_scratch_dir() {
        let dir = tempfile::TempDir::new().expect("dir");
        let dump = out_file(&dir, "env");
        let mut spec = lens("envdump.sh");
        spec.args = vec![dump.to_string_lossy().into_owned()];
        // cargo sets this for the test process; naming it passes it through.
        spec.env = vec!["CARGO_PKG_NAME".to_owned(), "GITHUB_TOKEN".to_owned()];
        run(&spec, &request()).await.expect("ok");

        let text = std::fs::read_to_string(&dump).expect("dump");
        let mut seen = Vec::new();
        for line in text.lines() {
            if let Some(cwd) = line.strip_prefix("CWD_LISTING=") {
                assert_eq!(cwd, "", "the scratch directory is not empty");
                continue;
            }
            if let Some(cwd) = line.strip_prefix("CWD=") {
                let leaf = Path::new(cwd).file_name().and_then(|n| n.to_str());
                assert!(
                    leaf.is_some_and(|n| n.starts_with("reviewbot-lens-")),
                    "{cwd}"
                );
                continue;
            }
            let Some((name, _)) = line.split_once('=') else {
                continue; // continuation of a multi-line value
            };
            seen.push(name.to_owned());
        }
        for name in &seen {
            let shell_own = matches!(name.as_str(), "PWD" | "SHLVL" | "_" | "OLDPWD");
            let allowed = BASE_ENV.contains(&name.as_str())
                || name.starts_with("LC_")
                || name == "CARGO_PKG_NAME";
            assert!(shell_own || allowed, "`{name}` leaked into the lens");
        }
        assert!(seen.iter().any(|n| n == "CARGO_PKG_NAME"));
        assert!(!seen.iter().any(|n| n == "GITHUB_TOKEN"));
    }

    #[test]
    fn the_allow_list_drops_secrets_even_when_named() {
        let parent = [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/bot"),
            ("LC_ALL", "C.UTF-8"),
            ("GITHUB_TOKEN", "ghp_secret"),
            ("ANTHROPIC_API_KEY", "sk-ant-secret"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("REVIEWBOT_WEBHOOK_SECRET", "hook"),
            ("REVIEWBOT_DATABASE_URL", "postgres://app:pw@db/app"),
            ("MY_LENS_KEY", "mine"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let named = [
            "MY_LENS_KEY".to_owned(),
            "GITHUB_TOKEN".to_owned(),
            "REVIEWBOT_DATABASE_URL".to_owned(),
        ];
        let env = child_env(&named, parent.clone());
        let names: Vec<_> = env
            .iter()
            .map(|(k, _)| k.to_str().expect("utf-8"))
            .collect();
        assert_eq!(names, ["PATH", "HOME", "LC_ALL", "MY_LENS_KEY"]);

        let env = child_env(&[], parent);
        let names: Vec<_> = env
            .iter()
            .map(|(k, _)| k.to_str().expect("utf-8"))
            .collect();
        assert_eq!(names, ["PATH", "HOME", "LC_ALL"]);
    }

    #[tokio::test]
    async fn stdin_carries_the_request_document() {
        let dir = tempfile::TempDir::new().expect("dir");
        let copy = out_file(&dir, "stdin.json");
        let mut spec = lens("stdin.sh");
        spec.args = vec![copy.to_string_lossy().into_owned()];
        run(&spec, &request()).await.expect("ok");

        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&copy).expect("copy")).expect("json");
        let keys: Vec<_> = doc.as_object().expect("object").keys().cloned().collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            [
                "answer", "checkout", "diff", "lens", "pr", "prompt", "schema"
            ]
        );
        assert_eq!(doc["lens"], "stdin");
        assert_eq!(doc["answer"], "review");
        assert!(doc["checkout"].is_null());
        let prompt = doc["prompt"].as_str().expect("prompt");
        assert!(prompt.starts_with("Review this change."), "{prompt}");
        assert!(prompt.contains("You see the diff alone"), "{prompt}");
        assert_eq!(doc["diff"], DIFF);
        assert_eq!(
            doc["pr"],
            serde_json::json!({"title": "Add b", "body": "Adds `b`.", "number": 7,
                               "head": "ec26c3e57ca3a959ca5aad62de7213c562f8c821"})
        );
        assert_eq!(doc["schema"], response_schema());

        // No PR (`--diff`): `pr` is null, not absent.
        let mut req = request();
        req.pr = None;
        run(&spec, &req).await.expect("ok");
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&copy).expect("copy")).expect("json");
        assert!(doc["pr"].is_null());

        // Asked to cross-examine: the verdicts' schema, and `answer` says so.
        req.answer = crate::lens::contract::AnswerKind::Verify;
        // The backend reads either answer; the panel holds it to the kind asked.
        run(&spec, &req).await.expect("ok");
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&copy).expect("copy")).expect("json");
        assert_eq!(doc["answer"], "verify");
        assert_eq!(doc["schema"], crate::lens::verdicts::verdicts_schema());
    }

    #[tokio::test]
    async fn with_a_snapshot_the_lens_runs_in_it_and_is_told_where_it_is() {
        let dir = tempfile::TempDir::new().expect("dir");
        let snapshot = dir.path().join("snapshot");
        std::fs::create_dir(&snapshot).expect("snapshot");
        std::fs::write(snapshot.join("caller.rs"), "b(1, 2);\n").expect("file");
        let dump = out_file(&dir, "env");
        let mut spec = lens("envdump.sh");
        spec.args = vec![dump.to_string_lossy().into_owned()];
        let mut req = request();
        req.checkout = Some(Arc::from(snapshot.as_path()));
        run(&spec, &req).await.expect("ok");
        let seen = std::fs::read_to_string(&dump).expect("dump");
        let cwd = seen
            .lines()
            .find_map(|l| l.strip_prefix("CWD="))
            .expect("CWD line");
        assert_eq!(Path::new(cwd), snapshot.canonicalize().expect("real"));

        let copy = out_file(&dir, "stdin.json");
        let mut spec = lens("stdin.sh");
        spec.args = vec![copy.to_string_lossy().into_owned()];
        run(&spec, &req).await.expect("ok");
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&copy).expect("copy")).expect("json");
        assert_eq!(doc["checkout"], snapshot.to_string_lossy().as_ref());
        let prompt = doc["prompt"].as_str().expect("prompt");
        assert!(prompt.contains("available to you read-only"), "{prompt}");
    }
}
