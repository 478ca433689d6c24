//! The adapter layer: every lens, whatever runs it, takes a [`LensRequest`] and yields a
//! [`LensRun`] — a lens response or a failure — with the same provenance. What a lens answers
//! is fixed by [`contract`]; [`parse`] reads a lens's raw output as that answer.

pub(crate) mod agent_cli;
pub(crate) mod anthropic;
pub(crate) mod api;
pub(crate) mod api_call;
pub(crate) mod backend;
pub mod builtin;
pub(crate) mod claude;
pub(crate) mod cli_env;
pub(crate) mod codex;
pub(crate) mod command;
pub mod contract;
pub(crate) mod gemini;
pub(crate) mod keys;
pub(crate) mod openai;
pub(crate) mod parse;
pub(crate) mod preflight;
pub(crate) mod process;
pub(crate) mod registry;
pub mod tools;
pub mod verdicts;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::diff::Diff;
use crate::ids::{HeadSha, LensName, PrNumber};
use crate::lens::contract::LensResponse;

pub use registry::BackendKind;

impl BackendKind {
    pub fn auth_class(self) -> AuthClass {
        registry::backend(self).auth_class()
    }
}

/// Who made the model behind a lens: cross-examination asks a lens of another vendor to check
/// what one lens alone saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Vendor {
    Anthropic,
    Openai,
    Google,
    /// A `command` lens: its own vendor, the same only as itself.
    Own,
    /// No model (the builtin lens).
    None,
}

/// How a backend is paid for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AuthClass {
    None,
    Subscription,
    Api,
}

/// A configured lens: a backend plus a model, with its own limits.
#[derive(Debug, Clone, PartialEq)]
pub struct LensSpec {
    pub name: LensName,
    pub backend: BackendKind,
    pub model: Option<String>,
    pub focus: Option<String>,
    pub timeout: Duration,
    /// The executable (`command` lenses; CLI backends default to their binary on PATH).
    pub bin: Option<String>,
    /// Extra arguments for a `command` lens.
    pub args: Vec<String>,
    /// Names of environment variables passed through to a `command` lens.
    pub env: Vec<String>,
    /// An API lens's own base URL, instead of its vendor's variable (a local server beside the
    /// vendor's API in one panel).
    pub base_url: Option<String>,
    /// The variable an API lens reads its key from, instead of its vendor's.
    pub api_key_env: Option<String>,
    pub api_fallback_model: Option<String>,
    pub temperature: Option<f32>,
    pub max_output_tokens: Option<u32>,
    /// The prices its `[[lens]]` declares: what its tokens cost when the backend reports no
    /// cost itself (every API lens), so the daily budget counts it.
    pub prices: Option<Prices>,
}

/// Dollars per million tokens, as an operator declares them for a lens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prices {
    pub input_per_mtok: f64,
    pub output_per_mtok: f64,
}

impl Prices {
    /// What `usage` costs at these prices, in dollars.
    pub fn cost(&self, usage: Usage) -> f64 {
        (usage.input_tokens as f64 * self.input_per_mtok
            + usage.output_tokens as f64 * self.output_per_mtok)
            / 1_000_000.0
    }
}

/// Whether any of `lenses` reads the round's snapshot: a model lens does, the builtin lens reads
/// the diff alone. A round downloads the archive only then.
pub fn wants_snapshot(lenses: &[LensSpec]) -> bool {
    lenses.iter().any(LensSpec::is_model)
}

impl LensSpec {
    /// Whether it is a model lens: it takes a prompt (and reads the snapshot when there is
    /// one); the builtin lens runs rules on the diff in process.
    pub fn is_model(&self) -> bool {
        registry::backend(self.backend).runs() != backend::Runs::InProcess
    }

    /// Who made its model.
    pub fn vendor(&self) -> Vendor {
        registry::backend(self.backend).vendor()
    }

    /// Whether `other`'s model is of the same vendor as this lens's (a `command` lens is only
    /// its own).
    pub fn same_vendor(&self, other: &LensSpec) -> bool {
        match self.vendor() {
            Vendor::Own => self.name == other.name,
            v => v == other.vendor(),
        }
    }

    /// The API backend a subscription lens may fall back to: its own vendor's, never another.
    pub fn fallback_backend(&self) -> Option<BackendKind> {
        registry::backend(self.backend).fallback()
    }

    /// Default per-lens timeout.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

    pub fn new(name: impl Into<String>, backend: BackendKind) -> Self {
        Self {
            name: LensName::new(name),
            backend,
            model: None,
            focus: None,
            timeout: Self::DEFAULT_TIMEOUT,
            bin: None,
            args: Vec::new(),
            env: Vec::new(),
            base_url: None,
            api_key_env: None,
            api_fallback_model: None,
            temperature: None,
            max_output_tokens: None,
            prices: None,
        }
    }
}

/// Something a lens call tells the user, as data (said once per run); its words are in
/// `render::notice`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LensNotice {
    /// Codex cannot start its sandbox on this host (`why`, its own words): the lens reviews the
    /// diff alone.
    NoSandbox { lens: LensName, why: String },
    /// The API server of `backend` refused tools: the lens reviews the diff alone.
    NoTools {
        lens: LensName,
        backend: BackendKind,
    },
}

/// The PR a review is about, when there is one (`None` for `--diff`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrInfo {
    pub title: String,
    pub body: String,
    pub number: PrNumber,
    pub head: HeadSha,
}

impl PrInfo {
    /// The PR with its title and body sanitized: what every lens (a `command` lens's JSON
    /// request too) is given.
    pub fn sanitized(mut self) -> Self {
        self.title = crate::sanitize::sanitize_line(&self.title);
        self.body = crate::sanitize::sanitize(&self.body).into_owned();
        self
    }
}

/// What a lens is asked to review.
#[derive(Debug, Clone)]
pub struct LensRequest {
    /// The full prompt for an LLM lens (instructions, untrusted PR text, numbered diff, schema).
    pub prompt: String,
    pub diff: Arc<Diff>,
    pub pr: Option<PrInfo>,
    /// The round's read-only snapshot of the repository at the reviewed head (or the
    /// `--checkout` directory), when there is one: model lenses read it through tools.
    pub checkout: Option<Arc<Path>>,
    /// The answer asked for: a review's findings, or verdicts on findings.
    pub answer: contract::AnswerKind,
}

/// Token usage of a lens run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LensStatus {
    Ok,
    Failed,
}

/// What a lens run was for: reviewing the change, or cross-examining findings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    #[default]
    Review,
    Verify,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Review => "review",
            Role::Verify => "verify",
        }
    }

    fn is_review(&self) -> bool {
        *self == Role::Review
    }
}

/// Where a lens's answer came from and what it cost: one per lens in the JSON output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Provenance {
    pub lens: LensName,
    /// `verify` for a cross-examination's call (left out of the JSON for a review).
    #[serde(skip_serializing_if = "Role::is_review")]
    pub role: Role,
    pub requested_backend: BackendKind,
    pub actual_backend: BackendKind,
    pub auth_class: AuthClass,
    pub model: Option<String>,
    pub fallback_source: Option<BackendKind>,
    pub status: LensStatus,
    pub error: Option<String>,
    pub latency_ms: u64,
    pub usage: Option<Usage>,
    pub cost_usd: Option<f64>,
    /// How many calls the lens made, when a review was split into several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls: Option<usize>,
    /// Findings over the per-lens cap, dropped from the round (counted, never silent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findings_dropped: Option<usize>,
    /// Tool calls the lens made reading the repository, summed over its calls; `None` where
    /// the backend does not report them.
    pub tool_calls: Option<u32>,
    /// What the lens says it checked and could not check (its response's `summary`), as the
    /// lens wrote it: rendered only after cleaning.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// The outcome of one lens: its provenance and, when it answered, its response.
#[derive(Debug, Clone)]
pub struct LensRun {
    pub provenance: Provenance,
    pub response: Option<LensResponse>,
}

/// What a backend yields when it answered: the parsed response plus what the call cost.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    pub response: LensResponse,
    pub usage: Option<Usage>,
    pub cost_usd: Option<f64>,
    /// The model that actually answered, when the backend says (e.g. a dated snapshot id).
    pub model: Option<String>,
    /// The raw reply text (redacted before it is stored anywhere), for evidence.
    pub raw: String,
    /// Tool calls made reading the repository, when the backend reports them.
    pub tool_calls: Option<u32>,
    /// What each repository tool call was, for the evidence log.
    pub tool_records: Vec<tools::ToolCallRecord>,
    /// Something the user should hear about this call (a lens that could not read the
    /// snapshot and reviewed the diff alone), said once per run.
    pub notice: Option<LensNotice>,
}

/// How a failure is handled: retried, fallen back from, or reported at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// Timeout, 5xx, 529 overloaded, an API 429 with `retry-after`: retry with backoff (bounded).
    Transient { retry_after: Option<Duration> },
    /// The call ran out its time. Not retried: a retry would wait as long again.
    Timeout,
    /// A subscription's usage or rate limit: lasts hours, never retried; eligible for fallback.
    UsageLimit,
    /// A CLI that is not logged in: eligible for fallback.
    NotLoggedIn,
    /// A CLI binary that is not installed: eligible for fallback.
    Missing,
    /// Everything else — bad key, `insufficient_quota`, unknown model, CLI too old, unreadable
    /// or empty output: fail fast.
    Fatal,
}

impl FailureKind {
    /// Whether a subscription lens may fall back to its vendor's API after this failure.
    pub fn fallback_eligible(self) -> bool {
        matches!(
            self,
            FailureKind::UsageLimit | FailureKind::NotLoggedIn | FailureKind::Missing
        )
    }
}

/// A backend failure: its kind and one clear line (already redacted) saying what happened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
}

impl Failure {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
    pub fn fatal(message: impl Into<String>) -> Self {
        Self::new(FailureKind::Fatal, message)
    }
}
