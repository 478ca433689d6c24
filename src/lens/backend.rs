//! One trait every backend implements.
//!
//! A backend says what it is (its kind, who pays for it, which API it may fall back to, how it
//! runs), makes one call, and checks its own setup for `doctor`. The panel, the config and
//! `doctor` ask the registry (`registry.rs`) and never match on the kind themselves, so a new backend is
//! one file, one [`BackendKind`] variant and one line in the registry.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use super::api_call::RetryPolicy;
use super::cli_env::CliEnv;
use super::keys::{ApiVars, EnvVars};
use super::preflight::{Check, PreflightEnv};
use super::process::KILL_GRACE;
use super::{Answer, AuthClass, BackendKind, Failure, LensRequest, LensSpec, Vendor};
use crate::credentials::SecretVar;

/// A boxed future borrowing its arguments: what a trait object can return.
pub type Pending<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a call needs besides its lens and request: the credentials captured once, and the
/// retry policy of the API backends.
#[derive(Debug, Clone, Copy)]
pub struct CallEnv<'a> {
    pub cli: &'a CliEnv,
    /// The API lenses' keys and base URLs.
    pub apis: &'a ApiVars,
    pub retry: &'a RetryPolicy,
    /// Tool calls a model lens may make per call reading the snapshot (`[context]
    /// max_tool_calls`): the API tool loop's cap, the CLIs' turns.
    pub max_tool_calls: u32,
    /// Input tokens one API lens call's tool loop may send over all its turns (`[context]
    /// max_call_tokens`).
    pub max_call_tokens: u64,
}

/// How a backend runs, which decides how the panel waits for it and retries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// In reviewbot's own process, on the diff alone (no prompt, no call).
    InProcess,
    /// A child process that ends its own group at the lens's timeout; a transient failure is
    /// tried once more by the panel.
    Process,
    /// HTTPS calls that retry inside, honouring the server's `retry-after`.
    Http,
}

/// One kind of backend.
pub trait Backend: Sync {
    /// Who pays for a call.
    fn auth_class(&self) -> AuthClass;

    fn runs(&self) -> Runs;

    /// Who made the models it runs.
    fn vendor(&self) -> Vendor;

    /// The API a subscription lens may fall back to: its own vendor's, never another.
    fn fallback(&self) -> Option<BackendKind> {
        None
    }

    /// The variables an API backend reads its key and base URL from by default (a lens may name
    /// its own); `None` for every other backend.
    fn api_vars(&self) -> Option<EnvVars> {
        None
    }

    /// The variables that hold a credential this backend reads or hands to its child: masked by
    /// value from start, and never given to a lens that should not have them.
    fn secret_vars(&self) -> Vec<SecretVar> {
        Vec::new()
    }

    /// Whether the lens names a program of its own to run, with `args` and `env` (`command`).
    fn runs_named_program(&self) -> bool {
        false
    }

    /// One call of `spec` on `req`. Every failure is a [`Failure`] with one clear line.
    fn call<'a>(
        &'a self,
        spec: &'a LensSpec,
        req: &'a LensRequest,
        env: CallEnv<'a>,
    ) -> Pending<'a, Result<Answer, Failure>>;

    /// `doctor`'s checks of this backend's setup for `spec`, without a billed call. `subject`
    /// names the lens in each line.
    fn preflight<'a>(
        &'a self,
        subject: &'a str,
        spec: &'a LensSpec,
        env: &'a PreflightEnv,
    ) -> Pending<'a, Vec<Check>>;

    /// For a subscription lens falling back to this backend with `model`: `doctor`'s line on
    /// whether the fallback could run (API backends only).
    fn fallback_check(&self, _subject: &str, _model: &str, _env: &PreflightEnv) -> Option<Check> {
        None
    }

    /// How long the panel waits for one call before calling it timed out.
    fn call_bound(&self, timeout: Duration, retry: &RetryPolicy) -> Duration {
        match self.runs() {
            // An API call may retry inside (waits included), so it gets room for its attempts.
            Runs::Http => timeout * retry.attempts.max(1) + retry.max_retry_after,
            // A child ends its own process group at `timeout`; this bound is a backstop that
            // leaves room for that cleanup.
            Runs::Process | Runs::InProcess => timeout + KILL_GRACE + Duration::from_secs(1),
        }
    }

    /// How many times the panel tries a call that failed transiently.
    fn panel_attempts(&self) -> u32 {
        match self.runs() {
            Runs::Process => 2,
            Runs::Http | Runs::InProcess => 1,
        }
    }
}
