//! Running the lenses of a panel concurrently.
//!
//! Every lens runs on its own task under its own timeout; one failing, hanging or panicking lens
//! never sinks the others. The result is one [`LensRun`] per lens, in the order given, each with
//! its full provenance.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use crate::ids::LensName;
use crate::lens::process::{KILL_GRACE, LensError};
use crate::lens::{
    BackendKind, LensRequest, LensRun, LensSpec, LensStatus, Provenance, Usage, builtin, command,
};
use crate::review::finding::LensResponse;

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

/// What a lens yields: its response and, when the backend reports it, its token usage.
type Answer = Result<(LensResponse, Option<Usage>), LensError>;

/// Runs every lens in `lenses` concurrently on `req`; one [`LensRun`] per lens, in order.
pub async fn run_panel(
    lenses: &[LensSpec],
    req: Arc<LensRequest>,
    observer: &dyn PanelObserver,
) -> Vec<LensRun> {
    run_with(lenses, observer, move |spec| {
        let req = Arc::clone(&req);
        async move { dispatch(&spec, &req).await }
    })
    .await
}

/// The panel with the dispatch injected, so tests can make a lens panic.
async fn run_with<F, Fut>(lenses: &[LensSpec], observer: &dyn PanelObserver, run: F) -> Vec<LensRun>
where
    F: Fn(LensSpec) -> Fut,
    Fut: Future<Output = Answer> + Send + 'static,
{
    let panel_started = Instant::now();
    let mut tasks = JoinSet::new();
    let mut index_of = HashMap::with_capacity(lenses.len());
    for (i, spec) in lenses.iter().enumerate() {
        observer.started(&spec.name);
        let answer = run(spec.clone());
        let task = tasks.spawn(async move {
            let started = Instant::now();
            let answer = answer.await;
            (answer, started.elapsed())
        });
        index_of.insert(task.id(), i);
    }

    let mut runs: Vec<Option<LensRun>> = lenses.iter().map(|_| None).collect();
    while let Some(joined) = tasks.join_next_with_id().await {
        let (id, answer, elapsed) = match joined {
            Ok((id, (answer, elapsed))) => (id, answer, elapsed),
            // A panic in a lens is that lens's failure, nothing more.
            Err(e) => (e.id(), Err(LensError::Crashed), panel_started.elapsed()),
        };
        let Some(&i) = index_of.get(&id) else {
            continue;
        };
        let spec = &lenses[i];
        let run = lens_run(spec, answer, elapsed);
        observer.finished(&spec.name, run.provenance.status, elapsed);
        runs[i] = Some(run);
    }
    // Every task was joined above; the fallback only keeps this free of panics.
    runs.into_iter()
        .zip(lenses)
        .map(|(run, spec)| {
            run.unwrap_or_else(|| lens_run(spec, Err(LensError::Crashed), panel_started.elapsed()))
        })
        .collect()
}

/// Runs one lens on the backend its spec names.
async fn dispatch(spec: &LensSpec, req: &LensRequest) -> Answer {
    match spec.backend {
        BackendKind::Builtin => {
            // Pure CPU work, milliseconds on a big diff: keep it off the async workers. A blocking
            // thread cannot be stopped, so a timeout only stops waiting for it.
            let diff = Arc::clone(&req.diff);
            let work = tokio::task::spawn_blocking(move || builtin::review(&diff));
            match tokio::time::timeout(spec.timeout, work).await {
                Ok(Ok(response)) => Ok((response, None)),
                Ok(Err(_)) => Err(LensError::Crashed),
                Err(_) => Err(timed_out(spec)),
            }
        }
        BackendKind::Command => {
            // The command lens enforces its timeout itself and then ends its process group; this
            // bound is a backstop that leaves room for that cleanup. Dropping the lens's future
            // also ends the group.
            let backstop = spec.timeout + KILL_GRACE + Duration::from_secs(1);
            match tokio::time::timeout(backstop, command::run(spec, req)).await {
                Ok(answer) => answer,
                Err(_) => Err(timed_out(spec)),
            }
        }
        other @ (BackendKind::ClaudeCli
        | BackendKind::CodexCli
        | BackendKind::Anthropic
        | BackendKind::Openai) => Err(LensError::Unavailable(other)),
    }
}

fn timed_out(spec: &LensSpec) -> LensError {
    LensError::Timeout {
        after: spec.timeout,
        stderr: String::new(),
    }
}

/// A lens's outcome with its provenance. No fallback happens here yet: the backend asked for is
/// the one that ran.
fn lens_run(spec: &LensSpec, answer: Answer, elapsed: Duration) -> LensRun {
    let (status, error, response, usage) = match answer {
        Ok((response, usage)) => (LensStatus::Ok, None, Some(response), usage),
        Err(e) => (LensStatus::Failed, Some(e.to_string()), None, None),
    };
    LensRun {
        provenance: Provenance {
            lens: spec.name.clone(),
            requested_backend: spec.backend,
            actual_backend: spec.backend,
            auth_class: spec.backend.auth_class(),
            // The builtin lens has no model, whatever its spec says (DESIGN.md `--format json`).
            model: match spec.backend {
                BackendKind::Builtin => None,
                _ => spec.model.clone(),
            },
            fallback_source: None,
            status,
            error,
            latency_ms: u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
            usage,
            cost_usd: None,
        },
        response,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::diff::Diff;
    use crate::lens::AuthClass;

    const DIFF: &str = "\
diff --git a/src/lib.rs b/src/lib.rs
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,2 +1,3 @@
 fn a() {}
+fn b() {}
 fn c() {}
";

    fn request() -> Arc<LensRequest> {
        Arc::new(LensRequest {
            prompt: "Review this change.".to_owned(),
            diff: Arc::new(Diff::parse(DIFF).expect("diff")),
            pr: None,
        })
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
            Ok((LensResponse::default(), Some(Usage::default())))
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
    async fn backends_not_built_yet_fail_clearly() {
        let mut claude = LensSpec::new("claude", BackendKind::ClaudeCli);
        claude.model = Some("claude-opus-5".to_owned());
        let runs = run_panel(&[claude], request(), &NoProgress).await;
        let p = &runs[0].provenance;
        assert_eq!(p.status, LensStatus::Failed);
        assert_eq!(p.auth_class, AuthClass::Subscription);
        assert_eq!(p.model.as_deref(), Some("claude-opus-5"));
        assert_eq!(
            p.error.as_deref(),
            Some("backend `claude-cli` is not available in this build yet")
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
}
