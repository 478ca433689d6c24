//! What the `claude-cli` and `codex-cli` backends share around their CLIs: finding the binary,
//! the working directory, the child's allow-listed environment and process group, the prompt on
//! stdin, and turning a run that did not finish into a [`Failure`]. Each CLI's file says only its
//! argv, what it checks first, and how to read what it printed ([`AgentCli`]).

use std::ffi::OsString;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use super::backend::{Backend, CallEnv, Pending, Runs};
use super::cli_env::{Cli, CliEnv, process_failure, scratch_dir};
use super::preflight::{Check, PreflightEnv};
use super::process::{self, DEFAULT_MAX_OUTPUT, ProcessError, ProcessOutput, ProcessSpec};
use super::{Answer, AuthClass, BackendKind, Failure, LensRequest, LensSpec, Vendor};
use crate::credentials::SecretVar;
use crate::lens::contract::{AnswerKind, schema_given, with_repository};

/// One agent CLI.
pub(crate) trait AgentCli: 'static {
    /// Its vendor's API, the only fallback it may take.
    const FALLBACK: BackendKind;
    /// Who made its models: its fallback's vendor (the registry's test holds the two together).
    const VENDOR: Vendor;
    const CLI: Cli;
    /// Its name in messages (`claude`, `codex`).
    const NAME: &'static str;
    /// The binary looked up on the child's `PATH` when the lens names none.
    const DEFAULT_BIN: &'static str;
    /// How to get the binary, for a "not found" message.
    const INSTALL: &'static str;

    /// The variables holding a credential the CLI reads (the child gets only those its
    /// allow-list names).
    const SECRETS: &'static [SecretVar] = &[];
    /// Constant variables the child gets beside its allow-listed environment (never secrets).
    const QUIET_ENV: &'static [(&'static str, &'static str)] = &[];
    /// The CLI hands the model the response schema itself (`--output-schema`): the prompt
    /// does not spell it out again.
    const TAKES_SCHEMA: bool = false;

    /// What is checked before the child starts, the argv after the program name and the
    /// working directory. Files the run needs (a schema) go into `scratch`, a fresh directory
    /// removed after the run; `snapshot` is the repository to read, when the round has one;
    /// `max_turns` caps the model's requests; `answer` is the answer asked for (its schema).
    fn prepare<'a>(
        spec: &'a LensSpec,
        env: &'a CliEnv,
        scratch: &'a Path,
        snapshot: Option<&'a Path>,
        max_turns: u32,
        answer: AnswerKind,
    ) -> Pending<'a, Result<Prepared, Failure>>;

    /// More to say about a run that did not reach its end, from what it printed so far.
    fn explain(_error: &ProcessError) -> Option<String> {
        None
    }

    /// Reads a finished run (whatever its exit status) as the answer or a classified failure.
    fn read_output(out: &ProcessOutput) -> Result<Answer, Failure>;

    /// `doctor`'s checks of the CLI: found, answering, logged in.
    fn preflight<'a>(
        subject: &'a str,
        spec: &'a LensSpec,
        env: &'a PreflightEnv,
    ) -> Pending<'a, Vec<Check>>;
}

/// How one run of an agent CLI is set up.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub args: Vec<OsString>,
    /// The child's working directory.
    pub cwd: PathBuf,
    /// Whether the child can read the snapshot (its prompt says which).
    pub reads_snapshot: bool,
    /// Why a round with a snapshot runs this lens on the diff alone, for the user.
    pub notice: Option<super::LensNotice>,
}

/// The backend of an agent CLI `C`.
pub(crate) struct CliBackend<C>(PhantomData<fn() -> C>);

impl<C> CliBackend<C> {
    pub const NEW: Self = Self(PhantomData);
}

impl<C: AgentCli> Backend for CliBackend<C> {
    fn auth_class(&self) -> AuthClass {
        AuthClass::Subscription
    }

    fn runs(&self) -> Runs {
        Runs::Process
    }

    fn fallback(&self) -> Option<BackendKind> {
        Some(C::FALLBACK)
    }

    fn secret_vars(&self) -> Vec<SecretVar> {
        C::SECRETS.to_vec()
    }

    fn vendor(&self) -> Vendor {
        C::VENDOR
    }

    fn call<'a>(
        &'a self,
        spec: &'a LensSpec,
        req: &'a LensRequest,
        env: CallEnv<'a>,
    ) -> Pending<'a, Result<Answer, Failure>> {
        Box::pin(run::<C>(
            spec,
            req,
            env.cli,
            env.max_tool_calls,
            DEFAULT_MAX_OUTPUT,
        ))
    }

    fn preflight<'a>(
        &'a self,
        subject: &'a str,
        spec: &'a LensSpec,
        env: &'a PreflightEnv,
    ) -> Pending<'a, Vec<Check>> {
        C::preflight(subject, spec, env)
    }
}

/// The lens's binary: its `bin`, else the CLI's default name.
pub(crate) fn bin_of<'a>(spec: &'a LensSpec, default: &'a str) -> &'a str {
    spec.bin
        .as_deref()
        .filter(|b| !b.trim().is_empty())
        .unwrap_or(default)
}

/// The whole environment of `C`'s child: the allow-listed variables, `C`'s quiet ones, and
/// (tests only) those pointing it at a fake model.
pub(crate) fn child_env<C: AgentCli>(env: &CliEnv) -> Vec<(OsString, OsString)> {
    let mut vars = env.child_env(C::CLI);
    vars.extend(
        C::QUIET_ENV
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    vars.extend(env.test_overrides());
    vars
}

/// Runs `C` once on `req`, each output stream capped at `max_output` bytes; with a snapshot,
/// the model may make up to `max_tool_calls` rounds of tool calls.
pub(crate) async fn run<C: AgentCli>(
    spec: &LensSpec,
    req: &LensRequest,
    env: &CliEnv,
    max_tool_calls: u32,
    max_output: usize,
) -> Result<Answer, Failure> {
    let scratch = scratch_dir(C::NAME)?;
    let snapshot = req.checkout.as_deref();
    // Tool rounds plus the one that answers.
    let max_turns = max_tool_calls.saturating_add(1);
    let prepared = C::prepare(spec, env, scratch.path(), snapshot, max_turns, req.answer).await?;
    let mut child = ProcessSpec::new(bin_of(spec, C::DEFAULT_BIN), &prepared.cwd, spec.timeout);
    child.args = prepared.args;
    child.env = child_env::<C>(env);
    let prompt = with_repository(&req.prompt, prepared.reads_snapshot);
    child.stdin = match C::TAKES_SCHEMA {
        true => schema_given(&prompt),
        false => prompt,
    }
    .into_bytes();
    child.max_output = max_output;

    let out = process::run(child).await.map_err(|e| {
        let more = C::explain(&e);
        let mut f = process_failure(C::NAME, C::INSTALL, e);
        if let Some(more) = more {
            f.message.push_str(&more);
        }
        f
    })?;
    let mut answer = C::read_output(&out)?;
    answer.notice = prepared.notice;
    Ok(answer)
}
