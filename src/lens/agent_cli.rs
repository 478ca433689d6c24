//! What the `claude-cli` and `codex-cli` backends share around their CLIs: finding the binary,
//! the working directory, the child's allow-listed environment and process group, the prompt on
//! stdin, and turning a run that did not finish into a [`Failure`]. Each CLI's file says only its
//! argv, what it checks first, and how to read what it printed ([`AgentCli`]).

use std::ffi::OsString;
use std::marker::PhantomData;
use std::path::Path;

use super::backend::{Backend, CallEnv, Pending, Runs};
use super::cli_env::{Cli, CliEnv, process_failure, scratch_dir};
use super::preflight::{Check, PreflightEnv};
use super::process::{self, DEFAULT_MAX_OUTPUT, ProcessError, ProcessOutput, ProcessSpec};
use super::{Answer, AuthClass, BackendKind, Failure, LensRequest, LensSpec};

/// One agent CLI.
pub(crate) trait AgentCli: 'static {
    const KIND: BackendKind;
    /// Its vendor's API, the only fallback it may take.
    const FALLBACK: BackendKind;
    const CLI: Cli;
    /// Its name in messages (`claude`, `codex`).
    const NAME: &'static str;
    /// The binary looked up on the child's `PATH` when the lens names none.
    const DEFAULT_BIN: &'static str;
    /// How to get the binary, for a "not found" message.
    const INSTALL: &'static str;

    /// What is checked before the child starts, and the argv after the program name. Files
    /// the run needs (a schema) go into `scratch`, a fresh directory removed after the run.
    fn prepare(spec: &LensSpec, env: &CliEnv, scratch: &Path) -> Result<Vec<OsString>, Failure>;

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

/// The backend of an agent CLI `C`.
pub(crate) struct CliBackend<C>(PhantomData<fn() -> C>);

impl<C> CliBackend<C> {
    pub const NEW: Self = Self(PhantomData);
}

impl<C: AgentCli> Backend for CliBackend<C> {
    fn kind(&self) -> BackendKind {
        C::KIND
    }

    fn auth_class(&self) -> AuthClass {
        AuthClass::Subscription
    }

    fn runs(&self) -> Runs {
        Runs::Process
    }

    fn fallback(&self) -> Option<BackendKind> {
        Some(C::FALLBACK)
    }

    fn call<'a>(
        &'a self,
        spec: &'a LensSpec,
        req: &'a LensRequest,
        env: CallEnv<'a>,
    ) -> Pending<'a, Result<Answer, Failure>> {
        Box::pin(run::<C>(spec, req, env.cli, DEFAULT_MAX_OUTPUT))
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

/// Runs `C` once on `req`, each output stream capped at `max_output` bytes.
pub(crate) async fn run<C: AgentCli>(
    spec: &LensSpec,
    req: &LensRequest,
    env: &CliEnv,
    max_output: usize,
) -> Result<Answer, Failure> {
    let scratch = scratch_dir(C::NAME)?;
    let args = C::prepare(spec, env, scratch.path())?;
    let mut child = ProcessSpec::new(bin_of(spec, C::DEFAULT_BIN), scratch.path(), spec.timeout);
    child.args = args;
    child.env = env.child_env(C::CLI);
    child.stdin = req.prompt.as_bytes().to_vec();
    child.max_output = max_output;

    let out = process::run(child).await.map_err(|e| {
        let more = C::explain(&e);
        let mut f = process_failure(C::NAME, C::INSTALL, e);
        if let Some(more) = more {
            f.message.push_str(&more);
        }
        f
    })?;
    C::read_output(&out)
}
