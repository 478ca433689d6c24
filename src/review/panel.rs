//! Running the lenses of a panel concurrently.
//!
//! Every lens runs on its own task, each call under its own timeout; one failing, hanging or
//! panicking lens never sinks the others. A lens whose review was split into several calls makes
//! them in order. A subscription lens that fails with an eligible error (usage limit, not logged
//! in, CLI missing) falls back to its own vendor's API when the operator allowed it — once, with
//! a billing warning, and for the rest of the run. The result is one [`LensRun`] per lens, in the
//! order given, each with its full provenance.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::diff::Diff;
use crate::evidence::{Evidence, Record};
use crate::ids::LensName;
use crate::lens::api_call::RetryPolicy;
use crate::lens::backend::{CallEnv, Runs};
use crate::lens::cli_env::CliEnv;
use crate::lens::contract::{AnswerKind, LensResponse};
use crate::lens::keys::ApiVars;
use crate::lens::process::timed_out;
use crate::lens::registry;
use crate::lens::{
    Answer, AuthClass, BackendKind, Failure, FailureKind, LensRequest, LensRun, LensSpec,
    LensStatus, Provenance, Usage, builtin,
};

/// What a lens whose task panicked reports.
const CRASHED: &str = "lens crashed";
use crate::plan::with_focus;

/// Told when each lens starts and ends (progress display). Called from the panel's own task,
/// never from a lens's.
pub trait PanelObserver: Send + Sync {
    fn started(&self, lens: &LensName);
    fn finished(&self, lens: &LensName, status: LensStatus, elapsed: Duration);
}

/// An observer that shows nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoProgress;

impl PanelObserver for NoProgress {
    fn started(&self, _lens: &LensName) {}
    fn finished(&self, _lens: &LensName, _status: LensStatus, _elapsed: Duration) {}
}

/// What the lenses review: the whole diff (for the builtin lens) and the planned calls (each a
/// prompt and its part of the diff) for every other lens.
#[derive(Debug, Clone)]
pub struct PanelInput {
    pub diff: Arc<Diff>,
    pub calls: Vec<Arc<LensRequest>>,
    /// What the secret pre-pass found in `diff`, for the builtin lens to reuse.
    pub secret_keywords: Option<Arc<builtin::SecretKeywords>>,
    /// Why `calls` is empty: no file fits the token budget. Every model lens fails saying so.
    pub nothing_fits: Option<crate::plan::NothingFits>,
}

impl PanelInput {
    /// One call covering the whole diff.
    pub fn single(req: LensRequest) -> Self {
        Self {
            diff: Arc::clone(&req.diff),
            calls: vec![Arc::new(req)],
            secret_keywords: None,
            nothing_fits: None,
        }
    }
}

pub use crate::lens::tools::DEFAULT_MAX_TOOL_CALLS;

/// Where the panel's notices (billing warnings) go: stderr for the CLI, a log for the service.
pub type NoticeSink = Arc<dyn Fn(&str) + Send + Sync>;

/// The subscription CLIs' concurrency cap (`[limits] subscription_concurrency` runs per CLI at
/// once): built once per process and shared by every panel, so concurrent reviews in one
/// process (the App's workers) together stay under it. Clones share the same slots.
#[derive(Debug, Clone)]
pub struct SubscriptionSlots {
    /// One semaphore per subscription backend.
    slots: Vec<(BackendKind, Arc<Semaphore>)>,
    per_backend: usize,
}

impl SubscriptionSlots {
    /// `per_backend` simultaneous runs of each subscription CLI (at least one).
    pub fn new(per_backend: usize) -> Self {
        let per_backend = per_backend.max(1);
        Self {
            slots: registry::ALL
                .iter()
                .copied()
                .filter(|&kind| kind.auth_class() == AuthClass::Subscription)
                .map(|kind| (kind, Arc::new(Semaphore::new(per_backend))))
                .collect(),
            per_backend,
        }
    }

    /// The cap per subscription CLI.
    pub fn per_backend(&self) -> usize {
        self.per_backend
    }

    /// The slots of `backend`, when it is a subscription CLI.
    fn of(&self, backend: BackendKind) -> Option<&Semaphore> {
        self.slots
            .iter()
            .find(|(kind, _)| *kind == backend)
            .map(|(_, slots)| slots.as_ref())
    }
}

/// Everything a panel run needs beyond the lenses: credentials captured once, the operator's
/// limits and choices, and where evidence and notices go.
#[derive(Clone)]
pub struct Panel {
    pub cli_env: CliEnv,
    /// The API lenses' keys and base URLs.
    pub apis: ApiVars,
    /// `false` with `--no-api-fallback`.
    pub allow_api_fallback: bool,
    /// Simultaneous runs per subscription CLI, shared with every other panel of the process.
    pub slots: SubscriptionSlots,
    /// Retries of the API backends, and the backoff base for a transient CLI failure.
    pub retry: RetryPolicy,
    pub notices: NoticeSink,
    pub evidence: Option<Arc<Evidence>>,
    /// Tool calls a model lens may make per call reading the snapshot (`[context]
    /// max_tool_calls`).
    pub max_tool_calls: u32,
    /// Input tokens one API lens call's tool loop may send (`[context] max_call_tokens`).
    pub max_call_tokens: u64,
    /// Which findings a lens of another vendor checks before the round is settled (`[verify]`).
    pub verify: crate::config::VerifyConfig,
}

impl Panel {
    /// A panel with credentials read from the process environment, notices on stderr;
    /// `api_key_vars` are the lenses' own key variables (`api_key_env`).
    pub fn from_env<'a>(
        slots: SubscriptionSlots,
        allow_api_fallback: bool,
        api_key_vars: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        Self {
            cli_env: CliEnv::from_env(),
            apis: registry::apis_from_env(api_key_vars),
            allow_api_fallback,
            slots,
            retry: RetryPolicy::default(),
            notices: Arc::new(|line: &str| eprintln!("{}", crate::redact::redact(line))),
            evidence: None,
            max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
            max_call_tokens: crate::lens::tools::DEFAULT_MAX_CALL_TOKENS,
            verify: crate::config::VerifyConfig::default(),
        }
    }

    /// Runs every lens in `lenses` concurrently on `input`; one [`LensRun`] per lens, in order.
    pub async fn run(
        &self,
        lenses: &[LensSpec],
        input: Arc<PanelInput>,
        observer: &dyn PanelObserver,
    ) -> Vec<LensRun> {
        let shared = Arc::new(Shared {
            panel: self.clone(),
            billing_warned: AtomicBool::new(false),
            said: std::sync::Mutex::default(),
            builtin_in_place: lenses.len() == 1
                && tokio::runtime::Handle::current().runtime_flavor()
                    == tokio::runtime::RuntimeFlavor::CurrentThread,
        });
        run_with(lenses, observer, move |spec| {
            let shared = Arc::clone(&shared);
            let input = Arc::clone(&input);
            async move { shared.run_lens(spec, &input).await }
        })
        .await
    }
}

/// What one lens ended with, before it becomes a [`LensRun`].
#[derive(Debug)]
struct LensOutcome {
    response: Option<LensResponse>,
    failure: Option<String>,
    actual_backend: BackendKind,
    model: Option<String>,
    fallback_source: Option<BackendKind>,
    usage: Option<Usage>,
    cost_usd: Option<f64>,
    tool_calls: Option<u32>,
    calls: usize,
}

impl LensOutcome {
    fn failed(spec: &LensSpec, message: String) -> Self {
        Self {
            response: None,
            failure: Some(message),
            actual_backend: spec.backend,
            model: spec.model.clone(),
            fallback_source: None,
            usage: None,
            cost_usd: None,
            tool_calls: None,
            calls: 1,
        }
    }
}

/// The state every lens task shares.
struct Shared {
    panel: Panel,
    billing_warned: AtomicBool,
    /// Notices already said in this run.
    said: std::sync::Mutex<std::collections::HashSet<String>>,
    /// The builtin lens is the panel's only lens, on a one-thread runtime (the CLI's): nothing
    /// else waits on that thread, so the lens runs on it rather than on a thread started for
    /// it (0.26 ms of a 3.4 ms review of a 259 KB diff, docs/benchmarks.md). Its timeout,
    /// which could only stop the waiting, not the lens, is not applied then: with no other
    /// lens, a round it timed out on would have had nothing to show.
    builtin_in_place: bool,
}

impl Shared {
    async fn run_lens(&self, spec: LensSpec, input: &PanelInput) -> LensOutcome {
        if registry::backend(spec.backend).runs() == Runs::InProcess {
            return self.run_builtin(&spec, input).await;
        }
        // No call to make is a failure with its reason, said once for the run, never a silent
        // "failed".
        if let (0, Some(why)) = (input.calls.len(), &input.nothing_fits) {
            let message = why.to_string();
            self.notice_once(&format!("warning: {message}"));
            return LensOutcome::failed(&spec, message);
        }
        let calls = input.calls.len();
        let mut outcome = LensOutcome {
            response: None,
            failure: None,
            actual_backend: spec.backend,
            model: spec.model.clone(),
            fallback_source: None,
            usage: None,
            cost_usd: None,
            tool_calls: None,
            calls,
        };
        let mut findings = Vec::new();
        let mut summaries = Vec::new();
        let mut verdicts = None;
        let mut answered = 0;
        let mut failures = Vec::new();
        for (i, req) in input.calls.iter().enumerate() {
            // A lens's focus narrows its review, not what it checks for another lens.
            let prompt = match req.answer {
                AnswerKind::Review => with_focus(&req.prompt, spec.focus.as_deref()),
                AnswerKind::Verify => req.prompt.clone(),
            };
            let req = LensRequest {
                prompt,
                diff: Arc::clone(&req.diff),
                pr: req.pr.clone(),
                checkout: req.checkout.clone(),
                answer: req.answer,
            };
            match self
                .call_with_fallback(&spec, &req, &mut outcome, i + 1, calls)
                .await
            {
                Ok(answer) => {
                    if let Some(notice) = &answer.notice {
                        self.notice_once(&notice.to_string());
                    }
                    answered += 1;
                    findings.extend(answer.response.findings);
                    summaries.extend(answer.response.summary);
                    if let Some(v) = answer.response.verdicts {
                        verdicts.get_or_insert_with(Vec::new).extend(v);
                    }
                    if let Some(u) = answer.usage {
                        let sum = outcome.usage.get_or_insert_default();
                        sum.input_tokens += u.input_tokens;
                        sum.output_tokens += u.output_tokens;
                    }
                    // The backend's own figure, else the lens's declared prices.
                    let priced = spec.prices.zip(answer.usage).map(|(p, u)| p.cost(u));
                    if let Some(c) = answer.cost_usd.or(priced) {
                        *outcome.cost_usd.get_or_insert(0.0) += c;
                    }
                    if let Some(n) = answer.tool_calls {
                        *outcome.tool_calls.get_or_insert(0) += n;
                    }
                    if let Some(m) = answer.model {
                        outcome.model = Some(m);
                    }
                }
                Err(f) => {
                    let stop =
                        !matches!(f.kind, FailureKind::Transient { .. } | FailureKind::Timeout);
                    failures.push((i + 1, f));
                    // A lens that cannot run at all (not logged in, bad key) will not run for
                    // the next call either.
                    if stop {
                        break;
                    }
                }
            }
        }
        if answered > 0 {
            // Findings from the calls that answered are kept even when another call failed.
            outcome.response = Some(LensResponse {
                findings,
                summary: (!summaries.is_empty()).then(|| summaries.join("\n\n")),
                verdicts,
            });
        }
        if let Some((call, f)) = failures.first() {
            outcome.failure = Some(if calls == 1 {
                f.message.clone()
            } else {
                let unanswered = calls - answered;
                format!(
                    "{unanswered} of {calls} calls failed; call {call}: {}",
                    f.message
                )
            });
        }
        outcome
    }

    async fn run_builtin(&self, spec: &LensSpec, input: &PanelInput) -> LensOutcome {
        let result = if self.builtin_in_place {
            // A panic here is caught where the lens's task is joined, as a crash.
            Ok(builtin::review_with(
                &input.diff,
                input.secret_keywords.as_deref(),
            ))
        } else {
            // Pure CPU work, milliseconds on a big diff: keep it off the async workers. A
            // blocking thread cannot be stopped, so a timeout only stops waiting for it.
            let diff = Arc::clone(&input.diff);
            let keywords = input.secret_keywords.clone();
            let work = tokio::task::spawn_blocking(move || {
                builtin::review_with(&diff, keywords.as_deref())
            });
            match tokio::time::timeout(spec.timeout, work).await {
                Ok(Ok(response)) => Ok(response),
                Ok(Err(_)) => Err(CRASHED.to_owned()),
                Err(_) => Err(timed_out(spec.timeout)),
            }
        };
        let mut outcome = match result {
            Ok(response) => LensOutcome {
                response: Some(response),
                failure: None,
                ..LensOutcome::failed(spec, String::new())
            },
            Err(e) => LensOutcome::failed(spec, e),
        };
        // The builtin lens has no model, whatever its spec says (`docs/contract.md` "JSON output").
        outcome.model = None;
        outcome
    }

    /// One call, on the lens's own backend or — after an eligible failure, when allowed — on its
    /// vendor's API, which then stays in use for the lens's remaining calls.
    async fn call_with_fallback(
        &self,
        spec: &LensSpec,
        req: &LensRequest,
        outcome: &mut LensOutcome,
        call: usize,
        calls: usize,
    ) -> Result<Answer, Failure> {
        let model = outcome.model.clone();
        let first = self
            .call_with_retry(
                spec,
                outcome.actual_backend,
                model.as_deref(),
                req,
                call,
                calls,
            )
            .await;
        let failure = match first {
            Ok(answer) => return Ok(answer),
            Err(f) => f,
        };
        let fallback = spec.fallback_backend().zip(spec.api_fallback_model.clone());
        let (Some((api, fallback_model)), None, true, true) = (
            fallback,
            outcome.fallback_source,
            self.panel.allow_api_fallback,
            failure.kind.fallback_eligible(),
        ) else {
            return Err(failure);
        };
        self.warn_billing(spec, api, &fallback_model, &failure);
        if let Some(ev) = &self.panel.evidence {
            ev.record(&Record::Fallback {
                lens: spec.name.as_str(),
                from: spec.backend.as_str(),
                to: api.as_str(),
                model: &fallback_model,
                reason: &failure.message,
            });
        }
        outcome.fallback_source = Some(spec.backend);
        outcome.actual_backend = api;
        outcome.model = Some(fallback_model.clone());
        self.call_with_retry(spec, api, Some(&fallback_model), req, call, calls)
            .await
            .map_err(|f| {
                Failure::new(
                    f.kind,
                    format!(
                        "{} (after falling back from {}: {})",
                        f.message,
                        spec.backend.as_str(),
                        failure.message
                    ),
                )
            })
    }

    /// Says `notice` unless this run said it already (one per lens, not one per call).
    fn notice_once(&self, notice: &str) {
        let first = self
            .said
            .lock()
            .is_ok_and(|mut said| said.insert(notice.to_owned()));
        if first {
            (self.panel.notices)(notice);
        }
    }

    fn warn_billing(&self, spec: &LensSpec, api: BackendKind, model: &str, why: &Failure) {
        // The fallback calls the vendor's API with the vendor's own variables.
        let key = registry::backend(api)
            .api_vars()
            .map_or("an API key", |v| v.key);
        // Once per run: the first paid dispatch is the one the user must hear about.
        let first = !self.billing_warned.swap(true, Ordering::SeqCst);
        let warning = crate::review::notice::BillingFallback {
            first,
            lens: spec.name.as_str(),
            from: spec.backend.as_str(),
            api: api.as_str(),
            model,
            why: &why.message,
            key,
        };
        (self.panel.notices)(&warning.to_string());
    }

    /// One call on `backend`, retried once after a transient CLI failure (the API backends retry
    /// inside, honouring `retry-after`). Each attempt is recorded as evidence.
    async fn call_with_retry(
        &self,
        spec: &LensSpec,
        backend: BackendKind,
        model: Option<&str>,
        req: &LensRequest,
        call: usize,
        calls: usize,
    ) -> Result<Answer, Failure> {
        let attempts = registry::backend(backend).panel_attempts();
        let mut last = None;
        for attempt in 0..attempts {
            if attempt > 0 {
                tokio::time::sleep(self.panel.retry.base).await;
            }
            let started = Instant::now();
            let result = self.call_once(spec, backend, model, req).await;
            self.record_exchange(
                spec,
                backend,
                model,
                req,
                &result,
                started.elapsed(),
                call,
                calls,
            );
            match result {
                Err(f) if matches!(f.kind, FailureKind::Transient { .. }) => last = Some(f),
                other => return other,
            }
        }
        Err(last.unwrap_or_else(|| Failure::fatal("no attempt was made")))
    }

    #[allow(clippy::too_many_arguments)]
    fn record_exchange(
        &self,
        spec: &LensSpec,
        backend: BackendKind,
        model: Option<&str>,
        req: &LensRequest,
        result: &Result<Answer, Failure>,
        elapsed: Duration,
        call: usize,
        calls: usize,
    ) {
        let Some(ev) = &self.panel.evidence else {
            return;
        };
        let (raw, parsed, error, tool_calls) = match result {
            Ok(a) => (
                Some(a.raw.as_str()),
                serde_json::to_value(&a.response).ok(),
                None,
                a.tool_records.as_slice(),
            ),
            Err(f) => (None, None, Some(f.message.as_str()), &[][..]),
        };
        ev.record(&Record::Exchange {
            lens: spec.name.as_str(),
            role: (req.answer == AnswerKind::Verify).then_some("verify"),
            call,
            calls,
            backend: backend.as_str(),
            model,
            prompt: &req.prompt,
            raw,
            parsed,
            error,
            tool_calls,
            latency_ms: millis(elapsed),
        });
    }

    /// One attempt on one backend.
    async fn call_once(
        &self,
        spec: &LensSpec,
        backend: BackendKind,
        model: Option<&str>,
        req: &LensRequest,
    ) -> Result<Answer, Failure> {
        let mut spec = spec.clone();
        spec.model = model.map(str::to_owned);
        // Waiting for a subscription slot is not the lens's time: take the slot first.
        let _slot = match self.panel.slots.of(backend) {
            Some(slots) => slots.acquire().await.ok(),
            None => None,
        };
        let b = registry::backend(backend);
        let env = CallEnv {
            cli: &self.panel.cli_env,
            apis: &self.panel.apis,
            retry: &self.panel.retry,
            max_tool_calls: self.panel.max_tool_calls,
            max_call_tokens: self.panel.max_call_tokens,
        };
        let work = b.call(&spec, req, env);
        let bound = b.call_bound(spec.timeout, &self.panel.retry);
        match tokio::time::timeout(bound, work).await {
            // Every backend reads either answer; one that is not what was asked is unreadable.
            Ok(Ok(answer)) => match req.answer.check(&answer.response) {
                Ok(()) => Ok(answer),
                Err(e) => Err(Failure::fatal(format!("unreadable answer: {e}"))),
            },
            Ok(Err(f)) => Err(f),
            Err(_) => Err(Failure::new(FailureKind::Timeout, timed_out(spec.timeout))),
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// The panel with the lens runner injected, so tests can make a lens panic.
async fn run_with<F, Fut>(lenses: &[LensSpec], observer: &dyn PanelObserver, run: F) -> Vec<LensRun>
where
    F: Fn(LensSpec) -> Fut,
    Fut: Future<Output = LensOutcome> + Send + 'static,
{
    let panel_started = Instant::now();
    let mut tasks = JoinSet::new();
    let mut index_of = HashMap::with_capacity(lenses.len());
    for (i, spec) in lenses.iter().enumerate() {
        observer.started(&spec.name);
        let outcome = run(spec.clone());
        let task = tasks.spawn(async move {
            let started = Instant::now();
            let outcome = outcome.await;
            (outcome, started.elapsed())
        });
        index_of.insert(task.id(), i);
    }

    let mut runs: Vec<Option<LensRun>> = lenses.iter().map(|_| None).collect();
    while let Some(joined) = tasks.join_next_with_id().await {
        let (id, outcome, elapsed) = match joined {
            Ok((id, (outcome, elapsed))) => (id, Some(outcome), elapsed),
            // A panic in a lens is that lens's failure, nothing more.
            Err(e) => (e.id(), None, panel_started.elapsed()),
        };
        let Some(&i) = index_of.get(&id) else {
            continue;
        };
        let spec = &lenses[i];
        let outcome = outcome.unwrap_or_else(|| LensOutcome::failed(spec, CRASHED.to_owned()));
        let run = lens_run(spec, outcome, elapsed);
        observer.finished(&spec.name, run.provenance.status, elapsed);
        runs[i] = Some(run);
    }
    // Every task was joined above; the fallback only keeps this free of panics.
    runs.into_iter()
        .zip(lenses)
        .map(|(run, spec)| {
            run.unwrap_or_else(|| {
                lens_run(
                    spec,
                    LensOutcome::failed(spec, CRASHED.to_owned()),
                    panel_started.elapsed(),
                )
            })
        })
        .collect()
}

/// A lens's outcome with its provenance, logged as it is recorded.
fn lens_run(spec: &LensSpec, outcome: LensOutcome, elapsed: Duration) -> LensRun {
    // A lens that answered some calls but not all is failed (its findings still count).
    let status = if outcome.failure.is_none() && outcome.response.is_some() {
        LensStatus::Ok
    } else {
        LensStatus::Failed
    };
    let mut response = outcome.response;
    let dropped = response
        .as_mut()
        .map_or(0, |r| r.cap(crate::lens::parse::MAX_FINDINGS_PER_LENS));
    let provenance = Provenance {
        lens: spec.name.clone(),
        role: Default::default(),
        requested_backend: spec.backend,
        actual_backend: outcome.actual_backend,
        auth_class: outcome.actual_backend.auth_class(),
        model: outcome.model,
        fallback_source: outcome.fallback_source,
        status,
        error: outcome.failure,
        latency_ms: millis(elapsed),
        usage: outcome.usage,
        cost_usd: outcome.cost_usd,
        calls: (outcome.calls > 1).then_some(outcome.calls),
        findings_dropped: (dropped > 0).then_some(dropped),
        tool_calls: outcome.tool_calls,
        summary: response.as_ref().and_then(|r| r.summary.clone()),
    };
    tracing::info!(
        lens = %provenance.lens,
        requested_backend = provenance.requested_backend.as_str(),
        actual_backend = provenance.actual_backend.as_str(),
        model = provenance.model.as_deref().unwrap_or("-"),
        fallback_source = provenance.fallback_source.map_or("-", BackendKind::as_str),
        status = ?provenance.status,
        latency_ms = provenance.latency_ms,
        input_tokens = provenance.usage.map_or(0, |u| u.input_tokens),
        output_tokens = provenance.usage.map_or(0, |u| u.output_tokens),
        error = provenance.error.as_deref().unwrap_or("-"),
        "lens finished"
    );
    LensRun {
        provenance,
        response,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::lens::AuthClass;

    /// A panel from the environment (no fallback) on one call.
    async fn run_panel(
        lenses: &[LensSpec],
        req: Arc<LensRequest>,
        observer: &dyn PanelObserver,
    ) -> Vec<LensRun> {
        let input = PanelInput {
            diff: Arc::clone(&req.diff),
            calls: vec![req],
            secret_keywords: None,
            nothing_fits: None,
        };
        Panel::from_env(SubscriptionSlots::new(2), false, [])
            .run(lenses, Arc::new(input), observer)
            .await
    }

    fn request() -> Arc<LensRequest> {
        Arc::new(crate::testing::fake_cli::request("Review this change."))
    }

    fn command_lens(name: &str, script: &str) -> LensSpec {
        let mut spec = LensSpec::new(name, BackendKind::Command);
        spec.bin = Some(format!(
            "{}/tests/fixtures/lenses/{script}",
            env!("CARGO_MANIFEST_DIR")
        ));
        spec.model = Some("fake-1".to_owned());
        spec.timeout = Duration::from_secs(2);
        spec
    }

    /// A lens name, and for a `finished` event its status and time.
    type Event = (String, Option<(LensStatus, Duration)>);

    /// Records what the panel reports, to check order and timing.
    #[derive(Default)]
    struct Recorder {
        events: Mutex<Vec<Event>>,
    }

    impl PanelObserver for Recorder {
        fn started(&self, lens: &LensName) {
            if let Ok(mut events) = self.events.lock() {
                events.push((lens.to_string(), None));
            }
        }
        fn finished(&self, lens: &LensName, status: LensStatus, elapsed: Duration) {
            if let Ok(mut events) = self.events.lock() {
                events.push((lens.to_string(), Some((status, elapsed))));
            }
        }
    }

    fn statuses(runs: &[LensRun]) -> Vec<(&str, LensStatus)> {
        runs.iter()
            .map(|r| (r.provenance.lens.as_str(), r.provenance.status))
            .collect()
    }

    #[tokio::test]
    async fn runs_come_back_in_order_with_provenance() {
        let lenses = [
            command_lens("first", "good.sh"),
            command_lens("broken", "fail.sh"),
            command_lens("second", "good.sh"),
        ];
        let recorder = Recorder::default();
        let runs = run_panel(&lenses, request(), &recorder).await;
        assert_eq!(
            statuses(&runs),
            [
                ("first", LensStatus::Ok),
                ("broken", LensStatus::Failed),
                ("second", LensStatus::Ok)
            ]
        );

        let ok = &runs[0];
        assert_eq!(ok.response.as_ref().map(|r| r.findings.len()), Some(1));
        let p = &ok.provenance;
        assert_eq!(p.requested_backend, BackendKind::Command);
        assert_eq!(p.actual_backend, BackendKind::Command);
        assert_eq!(p.auth_class, AuthClass::None);
        assert_eq!(p.model.as_deref(), Some("fake-1"));
        assert_eq!(p.fallback_source, None);
        assert_eq!(p.error, None);
        assert_eq!(p.usage, None);
        assert_eq!(p.cost_usd, None);

        let failed = &runs[1];
        assert!(failed.response.is_none());
        assert_eq!(
            failed.provenance.error.as_deref(),
            Some("exited with status 3; stderr: fake-lens: model overloaded, try later")
        );

        let events = recorder.events.lock().expect("events");
        let started: Vec<_> = events
            .iter()
            .filter(|(_, e)| e.is_none())
            .map(|(n, _)| n.as_str())
            .collect();
        assert_eq!(started, ["first", "broken", "second"]);
        assert_eq!(events.iter().filter(|(_, e)| e.is_some()).count(), 3);
    }

    #[tokio::test]
    async fn a_hanging_lens_delays_nothing_beyond_its_timeout() {
        let dir = tempfile::TempDir::new().expect("dir");
        let mut hang = command_lens("slow", "hang.sh");
        hang.timeout = Duration::from_secs(1);
        hang.args = vec![dir.path().join("pid").to_string_lossy().into_owned()];
        let lenses = [
            command_lens("a", "good.sh"),
            hang,
            command_lens("b", "good.sh"),
        ];
        let recorder = Recorder::default();
        let started = Instant::now();
        let runs = run_panel(&lenses, request(), &recorder).await;
        let took = started.elapsed();
        assert_eq!(
            statuses(&runs),
            [
                ("a", LensStatus::Ok),
                ("slow", LensStatus::Failed),
                ("b", LensStatus::Ok)
            ]
        );
        assert!(took < Duration::from_millis(1800), "{took:?}");
        assert!(
            runs[1]
                .provenance
                .error
                .as_deref()
                .is_some_and(|e| e.starts_with("timed out after 1s")),
            "{:?}",
            runs[1].provenance.error
        );
        // The quick lenses finished long before the slow one's timeout.
        let events = recorder.events.lock().expect("events");
        for (name, event) in events.iter() {
            if let (true, Some((_, elapsed))) = (name != "slow", event) {
                assert!(*elapsed < Duration::from_millis(900), "{name}: {elapsed:?}");
            }
        }
        assert!(runs[0].provenance.latency_ms < 900);
        assert!(runs[1].provenance.latency_ms >= 1000);
    }

    #[tokio::test]
    async fn a_panicking_lens_is_a_crashed_lens() {
        let lenses = [
            LensSpec::new("fine", BackendKind::Command),
            LensSpec::new("boom", BackendKind::Command),
        ];
        let runs = run_with(&lenses, &NoProgress, |spec| async move {
            if spec.name.as_str() == "boom" {
                panic!("lens bug");
            }
            LensOutcome {
                response: Some(LensResponse::default()),
                failure: None,
                usage: Some(Usage::default()),
                ..LensOutcome::failed(&spec, String::new())
            }
        })
        .await;
        assert_eq!(
            statuses(&runs),
            [("fine", LensStatus::Ok), ("boom", LensStatus::Failed)]
        );
        assert_eq!(runs[1].provenance.error.as_deref(), Some("lens crashed"));
        assert_eq!(runs[0].provenance.usage, Some(Usage::default()));
    }

    #[tokio::test]
    async fn a_missing_cli_fails_clearly_and_does_not_fall_back_unless_allowed() {
        let mut claude = LensSpec::new("claude", BackendKind::ClaudeCli);
        claude.model = Some("claude-opus-5".to_owned());
        claude.bin = Some("/nonexistent/claude".to_owned());
        claude.api_fallback_model = Some("claude-sonnet-5".to_owned());
        let runs = run_panel(&[claude], request(), &NoProgress).await;
        let p = &runs[0].provenance;
        assert_eq!(p.status, LensStatus::Failed);
        assert_eq!(p.auth_class, AuthClass::Subscription);
        assert_eq!(p.actual_backend, BackendKind::ClaudeCli);
        assert_eq!(p.fallback_source, None);
        assert_eq!(p.model.as_deref(), Some("claude-opus-5"));
        let error = p.error.as_deref().unwrap_or_default();
        assert!(
            error.contains("/nonexistent/claude") && error.contains("not found"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn the_builtin_lens_runs() {
        let mut spec = LensSpec::new("builtin", BackendKind::Builtin);
        spec.model = Some("ignored".to_owned());
        let runs = run_panel(&[spec], request(), &NoProgress).await;
        let p = &runs[0].provenance;
        assert_eq!(p.status, LensStatus::Ok, "{:?}", p.error);
        assert_eq!(p.auth_class, AuthClass::None);
        assert_eq!(p.model, None);
        assert_eq!(p.usage, None);
        assert!(runs[0].response.is_some());
    }

    #[tokio::test]
    async fn an_empty_panel_is_empty() {
        assert!(run_panel(&[], request(), &NoProgress).await.is_empty());
    }

    // ---- fallback, concurrency ----

    use crate::testing::api_server::{FakeServer, Reply, fast_policy};
    use crate::testing::fake_cli::{Fake, cli_env};

    /// A panel whose notices are kept, with the given API servers.
    fn test_panel(
        fake: &Fake,
        anthropic: Option<&FakeServer>,
        openai: Option<&FakeServer>,
        allow_fallback: bool,
    ) -> (Panel, Arc<Mutex<Vec<String>>>) {
        let notices = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&notices);
        let mut apis = ApiVars::default();
        for (server, key, base) in [
            (anthropic, "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
            (openai, "OPENAI_API_KEY", "OPENAI_BASE_URL"),
        ] {
            apis.set(key, "sk-test-key");
            if let Some(server) = server {
                apis.set(base, &server.base);
            }
        }
        let panel = Panel {
            cli_env: cli_env(fake.dir.path(), fake.dir.path()),
            apis,
            allow_api_fallback: allow_fallback,
            slots: SubscriptionSlots::new(2),
            retry: fast_policy(),
            notices: Arc::new(move |line: &str| {
                sink.lock().expect("notices").push(line.to_owned())
            }),
            evidence: None,
            max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
            max_call_tokens: crate::lens::tools::DEFAULT_MAX_CALL_TOKENS,
            verify: crate::config::VerifyConfig::default(),
        };
        (panel, notices)
    }

    fn anthropic_ok() -> Reply {
        let text = r#"{"findings":[{"path":"src/lib.rs","line":2,"severity":"advisory","confidence":"high","title":"b is unused","body":"Remove it."}]}"#;
        Reply::json(
            200,
            serde_json::json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-5",
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 100, "output_tokens": 20}}),
        )
    }

    fn openai_ok() -> Reply {
        let text = r#"{"findings":[],"summary":"fine"}"#;
        Reply::json(
            200,
            serde_json::json!({"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-5.6",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text, "refusal": null},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}}),
        )
    }

    fn two_calls() -> Arc<PanelInput> {
        let req = request();
        Arc::new(PanelInput {
            diff: Arc::clone(&req.diff),
            calls: vec![Arc::clone(&req), req],
            secret_keywords: None,
            nothing_fits: None,
        })
    }

    #[tokio::test]
    async fn a_usage_limit_falls_back_to_the_same_vendor_api_once_and_sticks() {
        let fake = Fake::new("claude", "usage-limit");
        let server = FakeServer::start(vec![anthropic_ok()]).await;
        let (panel, notices) = test_panel(&fake, Some(&server), None, true);
        let mut spec = fake.lens(BackendKind::ClaudeCli, Some("claude-opus-5"));
        spec.api_fallback_model = Some("claude-sonnet-5".to_owned());

        let runs = panel.run(&[spec], two_calls(), &NoProgress).await;
        let p = &runs[0].provenance;
        assert_eq!(p.status, LensStatus::Ok, "{:?}", p.error);
        assert_eq!(p.requested_backend, BackendKind::ClaudeCli);
        assert_eq!(p.actual_backend, BackendKind::Anthropic);
        assert_eq!(p.fallback_source, Some(BackendKind::ClaudeCli));
        assert_eq!(p.auth_class, AuthClass::Api);
        assert_eq!(p.calls, Some(2));
        assert_eq!(
            p.usage,
            Some(Usage {
                input_tokens: 200,
                output_tokens: 40
            })
        );
        // Both calls went to the API: the fallback is sticky, the CLI was not asked again.
        let received = server.received();
        assert_eq!(received.len(), 2);
        assert!(
            received
                .iter()
                .all(|r| r.body["model"] == "claude-sonnet-5")
        );
        let notices = notices.lock().expect("notices");
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert!(notices[0].starts_with(
            "warning: billing: lens claude falls back from claude-cli to the anthropic API"
        ));
        assert!(notices[0].contains("ANTHROPIC_API_KEY") && !notices[0].contains("sk-test-key"));
        assert_eq!(runs[0].response.as_ref().map(|r| r.findings.len()), Some(2));
    }

    #[tokio::test]
    async fn no_fallback_without_permission_or_without_a_fallback_model() {
        let fake = Fake::new("claude", "usage-limit");
        let server = FakeServer::start(vec![anthropic_ok()]).await;
        let mut spec = fake.lens(BackendKind::ClaudeCli, Some("claude-opus-5"));
        spec.api_fallback_model = Some("claude-sonnet-5".to_owned());

        let (panel, notices) = test_panel(&fake, Some(&server), None, false);
        let runs = panel
            .run(std::slice::from_ref(&spec), two_calls(), &NoProgress)
            .await;
        let p = &runs[0].provenance;
        assert_eq!(
            (p.status, p.actual_backend, p.fallback_source),
            (LensStatus::Failed, BackendKind::ClaudeCli, None)
        );
        assert!(
            p.error
                .as_deref()
                .is_some_and(|e| e.contains("usage or rate limit")),
            "{:?}",
            p.error
        );

        spec.api_fallback_model = None;
        let (panel, _) = test_panel(&fake, Some(&server), None, true);
        let runs = panel.run(&[spec], two_calls(), &NoProgress).await;
        assert_eq!(runs[0].provenance.status, LensStatus::Failed);
        assert!(server.received().is_empty());
        assert!(notices.lock().expect("notices").is_empty());
    }

    #[tokio::test]
    async fn a_fatal_cli_failure_never_falls_back() {
        let fake = Fake::new("claude", "max-turns");
        let server = FakeServer::start(vec![anthropic_ok()]).await;
        let (panel, _) = test_panel(&fake, Some(&server), None, true);
        let mut spec = fake.lens(BackendKind::ClaudeCli, None);
        spec.api_fallback_model = Some("claude-sonnet-5".to_owned());
        let runs = panel.run(&[spec], two_calls(), &NoProgress).await;
        assert_eq!(runs[0].provenance.status, LensStatus::Failed);
        assert!(server.received().is_empty());
    }

    /// An API lens reports no cost: its declared prices make one, call by call, so the daily
    /// budget counts it; a lens without prices still has none.
    #[tokio::test]
    async fn an_api_lens_costs_its_tokens_at_its_declared_prices() {
        let fake = Fake::new("codex", "ok");
        let openai = FakeServer::start(vec![openai_ok(), openai_ok(), openai_ok()]).await;
        let (panel, _) = test_panel(&fake, None, Some(&openai), false);
        let mut priced = LensSpec::new("gpt", BackendKind::Openai);
        priced.model = Some("gpt-5.6".to_owned());
        priced.prices = Some(crate::lens::Prices {
            input_per_mtok: 2.0,
            output_per_mtok: 10.0,
        });
        let runs = panel.run(&[priced], two_calls(), &NoProgress).await;
        let p = &runs[0].provenance;
        assert_eq!(p.status, LensStatus::Ok, "{:?}", p.error);
        // Two calls of 50 input and 5 output tokens: (100 × $2 + 10 × $10) per million.
        let cost = p.cost_usd.expect("a cost");
        assert!((cost - 0.0003).abs() < 1e-12, "{cost}");
        let mut unpriced = LensSpec::new("gpt", BackendKind::Openai);
        unpriced.model = Some("gpt-5.6".to_owned());
        let runs = panel
            .run(
                &[unpriced],
                Arc::new(PanelInput::single((*request()).clone())),
                &NoProgress,
            )
            .await;
        assert_eq!(runs[0].provenance.cost_usd, None);
    }

    #[tokio::test]
    async fn codex_falls_back_to_openai_never_to_another_vendor() {
        let fake = Fake::new("codex", "usage-limit");
        let anthropic = FakeServer::start(vec![anthropic_ok()]).await;
        let openai = FakeServer::start(vec![openai_ok()]).await;
        let (panel, notices) = test_panel(&fake, Some(&anthropic), Some(&openai), true);
        let mut spec = fake.lens(BackendKind::CodexCli, Some("gpt-5.6-terra"));
        spec.api_fallback_model = Some("gpt-5.6".to_owned());
        let runs = panel
            .run(
                &[spec],
                Arc::new(PanelInput::single((*request()).clone())),
                &NoProgress,
            )
            .await;
        let p = &runs[0].provenance;
        assert_eq!(p.status, LensStatus::Ok, "{:?}", p.error);
        assert_eq!(
            (p.actual_backend, p.fallback_source),
            (BackendKind::Openai, Some(BackendKind::CodexCli))
        );
        assert_eq!(p.model.as_deref(), Some("gpt-5.6"));
        assert!(anthropic.received().is_empty());
        assert_eq!(openai.received().len(), 1);
        assert!(notices.lock().expect("notices")[0].contains("OPENAI_API_KEY"));
    }

    /// A claude CLI that logs when each run starts and ends and sleeps 0.3 s meanwhile, so
    /// overlapping runs show in the log; and `names` lenses running it.
    fn slow_claude(fake: &Fake, names: &[&str]) -> Vec<LensSpec> {
        let slow = fake.dir.path().join("slow-claude");
        std::fs::write(
            &slow,
            format!(
                "#!/bin/sh\necho start $(date +%s%N) >> {log}\nsleep 0.3\necho end $(date +%s%N) >> {log}\nexec {bin} \"$@\"\n",
                log = fake.dir.path().join("log").display(),
                bin = fake.bin()
            ),
        )
        .expect("write");
        std::fs::set_permissions(&slow, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
        names
            .iter()
            .map(|name| {
                let mut spec = fake.lens(BackendKind::ClaudeCli, None);
                spec.name = LensName::new(*name);
                spec.bin = Some(slow.display().to_string());
                spec
            })
            .collect()
    }

    /// Fails when the slow CLI's log shows two runs at once.
    fn assert_never_overlapped(fake: &Fake) {
        let log = std::fs::read_to_string(fake.dir.path().join("log")).expect("log");
        let mut running = 0;
        for line in log.lines() {
            running += if line.starts_with("start") { 1 } else { -1 };
            assert!(running <= 1, "two claude runs overlapped:\n{log}");
        }
        assert_eq!(log.lines().filter(|l| l.starts_with("end")).count(), 3);
    }

    #[tokio::test]
    async fn subscription_runs_are_capped_per_backend() {
        // Three claude lenses with a cap of one run at a time.
        let fake = Fake::new("claude", "ok");
        let lenses = slow_claude(&fake, &["one", "two", "three"]);
        let (mut panel, _) = test_panel(&fake, None, None, false);
        panel.slots = SubscriptionSlots::new(1);
        let started = Instant::now();
        let runs = panel
            .run(
                &lenses,
                Arc::new(PanelInput::single((*request()).clone())),
                &NoProgress,
            )
            .await;
        assert!(
            runs.iter().all(|r| r.provenance.status == LensStatus::Ok),
            "{runs:?}"
        );
        assert!(started.elapsed() >= Duration::from_millis(900));
        assert_never_overlapped(&fake);
        // The cap is per backend: no slot was held back for the lenses' own time.
        assert!(runs.iter().all(|r| r.provenance.latency_ms >= 300));
    }

    #[tokio::test]
    async fn panels_built_from_the_same_slots_share_the_cap() {
        // Two reviews at once in one process (two panels, as two jobs would have), one slot:
        // their three claude runs still take turns.
        let fake = Fake::new("claude", "ok");
        let lenses = slow_claude(&fake, &["one", "two", "three"]);
        let slots = SubscriptionSlots::new(1);
        let (mut first, _) = test_panel(&fake, None, None, false);
        let (mut second, _) = test_panel(&fake, None, None, false);
        first.slots = slots.clone();
        second.slots = slots.clone();
        let input = || Arc::new(PanelInput::single((*request()).clone()));
        let started = Instant::now();
        let (a, b) = tokio::join!(
            first.run(&lenses[..2], input(), &NoProgress),
            second.run(&lenses[2..], input(), &NoProgress)
        );
        assert!(
            a.iter()
                .chain(&b)
                .all(|r| r.provenance.status == LensStatus::Ok),
            "{a:?} {b:?}"
        );
        assert!(started.elapsed() >= Duration::from_millis(900));
        assert_never_overlapped(&fake);
        assert_eq!(slots.per_backend(), 1);
    }

    #[tokio::test]
    async fn evidence_keeps_each_exchange() {
        let dir = tempfile::TempDir::new().expect("dir");
        let evidence = Arc::new(Evidence::create(dir.path()).expect("evidence"));
        let fake = Fake::new("claude", "ok");
        let (mut panel, _) = test_panel(&fake, None, None, false);
        panel.evidence = Some(Arc::clone(&evidence));
        let runs = panel
            .run(
                &[fake.lens(BackendKind::ClaudeCli, None)],
                two_calls(),
                &NoProgress,
            )
            .await;
        assert_eq!(runs[0].provenance.status, LensStatus::Ok);
        let text = std::fs::read_to_string(evidence.path()).expect("read");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1]["kind"], "exchange");
        assert_eq!(lines[1]["call"], 2);
        assert_eq!(lines[1]["calls"], 2);
        assert_eq!(lines[1]["prompt"], "Review this change.");
        assert_eq!(
            lines[1]["parsed"]["findings"][0]["title"],
            "b is never called"
        );
        assert!(
            lines[1]["raw"]
                .as_str()
                .is_some_and(|r| r.contains("b is never called"))
        );
    }
}
