//! What `GET /metrics` shows: one registry per process (no global, so tests each have their
//! own), in the Prometheus text format. The intake counts deliveries; the worker and the GitHub
//! client call [`Metrics::round_posted`], [`Metrics::lens_run`], [`Metrics::github_request`].

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

pub use prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// How a webhook delivery ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, EncodeLabelValue)]
#[allow(non_camel_case_types)]
pub enum DeliveryOutcome {
    /// Stored, and asks for a round.
    accepted,
    /// A delivery id seen before: answered, nothing started.
    duplicate,
    /// Stored; nothing to do (ping, other events, reviewbot's own actions).
    ignored,
    bad_signature,
    bad_request,
    too_large,
    store_error,
    timeout,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct DeliveryLabels {
    event: &'static str,
    outcome: DeliveryOutcome,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StateLabels {
    state: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LensStatusLabels {
    lens: String,
    status: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct LensLabels {
    lens: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct TokenLabels {
    lens: String,
    kind: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StatusLabels {
    status: u16,
}

type LensHistogram = Family<LensLabels, Histogram, fn() -> Histogram>;

/// The events a delivery is counted under. `X-GitHub-Event` comes from whoever sent the request
/// (signed or not), so anything else is `other`: a stranger cannot grow the label set.
const KNOWN_EVENTS: &[&str] = &[
    "pull_request",
    "issue_comment",
    "ping",
    "installation",
    "installation_repositories",
    "installation_target",
    "pull_request_review",
    "pull_request_review_comment",
    "pull_request_review_thread",
    "check_run",
    "check_suite",
    "push",
    "issues",
    "github_app_authorization",
    "meta",
];

/// The label a delivery of `event` is counted under.
pub fn event_label(event: &str) -> &'static str {
    KNOWN_EVENTS
        .iter()
        .find(|known| **known == event)
        .copied()
        .unwrap_or("other")
}

pub struct Metrics {
    registry: Registry,
    deliveries: Family<DeliveryLabels, Counter>,
    jobs: Family<StateLabels, Gauge>,
    rounds_posted: Counter,
    lens_runs: Family<LensStatusLabels, Counter>,
    lens_seconds: LensHistogram,
    lens_tokens: Family<TokenLabels, Counter>,
    github_requests: Family<StatusLabels, Counter>,
    /// One scrape at a time: the job gauges are cleared and refilled for each.
    scrape: std::sync::Mutex<()>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("reviewbot");
        let deliveries = Family::default();
        // Counters get `_total` from the encoder.
        registry.register(
            "webhook_deliveries",
            "Webhook deliveries, by event and how they ended",
            deliveries.clone(),
        );
        let jobs = Family::default();
        registry.register("jobs", "Review jobs in the store, by state", jobs.clone());
        let rounds_posted = Counter::default();
        registry.register(
            "rounds_posted",
            "Review rounds posted to GitHub",
            rounds_posted.clone(),
        );
        let lens_runs = Family::default();
        registry.register(
            "lens_runs",
            "Lens runs, by lens and status",
            lens_runs.clone(),
        );
        // 0.5 s to about 17 min: a lens takes seconds to minutes.
        let lens_seconds: LensHistogram =
            Family::new_with_constructor(|| Histogram::new(exponential_buckets(0.5, 2.0, 12)));
        registry.register(
            "lens_seconds",
            "How long a lens run took, in seconds",
            lens_seconds.clone(),
        );
        let lens_tokens = Family::default();
        registry.register(
            "lens_tokens",
            "Tokens lenses used, by lens and kind (input, output)",
            lens_tokens.clone(),
        );
        let github_requests = Family::default();
        registry.register(
            "github_requests",
            "GitHub API requests, by response status (0: no response)",
            github_requests.clone(),
        );
        Self {
            registry,
            deliveries,
            jobs,
            rounds_posted,
            lens_runs,
            lens_seconds,
            lens_tokens,
            github_requests,
            scrape: std::sync::Mutex::new(()),
        }
    }

    /// One webhook delivery answered.
    pub fn delivery(&self, event: &str, outcome: DeliveryOutcome) {
        let labels = DeliveryLabels {
            event: event_label(event),
            outcome,
        };
        self.deliveries.get_or_create(&labels).inc();
    }

    pub fn round_posted(&self) {
        self.rounds_posted.inc();
    }

    /// One lens run finished: its status (`ok`, `failed`, `timeout`, …), how long it took and
    /// the tokens it used.
    pub fn lens_run(&self, lens: &str, status: &str, secs: f64, input: u64, output: u64) {
        let run = LensStatusLabels {
            lens: lens.to_owned(),
            status: status.to_owned(),
        };
        self.lens_runs.get_or_create(&run).inc();
        let lens = LensLabels {
            lens: lens.to_owned(),
        };
        self.lens_seconds.get_or_create(&lens).observe(secs);
        for (kind, n) in [("input", input), ("output", output)] {
            let labels = TokenLabels {
                lens: lens.lens.clone(),
                kind,
            };
            self.lens_tokens.get_or_create(&labels).inc_by(n);
        }
    }

    /// One GitHub API response (`0` when none came: a timeout, a refused connection).
    pub fn github_request(&self, status: u16) {
        self.github_requests
            .get_or_create(&StatusLabels { status })
            .inc();
    }

    /// The Prometheus text, with the job counts as the store gives them now (states it no
    /// longer reports are dropped).
    pub fn render(&self, job_counts: &[(String, i64)]) -> String {
        let _one = self
            .scrape
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        self.jobs.clear();
        for (state, n) in job_counts {
            let labels = StateLabels {
                state: state.clone(),
            };
            self.jobs.get_or_create(&labels).set(*n);
        }
        let mut out = String::with_capacity(4096);
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_named_as_documented() {
        let m = Metrics::new();
        m.delivery("pull_request", DeliveryOutcome::accepted);
        m.delivery("pull_request", DeliveryOutcome::accepted);
        m.delivery("made-up-by-a-stranger", DeliveryOutcome::bad_signature);
        m.round_posted();
        m.lens_run("claude", "ok", 12.5, 1000, 200);
        m.github_request(201);
        m.github_request(0);
        let text = m.render(&[("queued".into(), 3), ("running".into(), 1)]);
        for line in [
            r#"reviewbot_webhook_deliveries_total{event="pull_request",outcome="accepted"} 2"#,
            r#"reviewbot_webhook_deliveries_total{event="other",outcome="bad_signature"} 1"#,
            r#"reviewbot_jobs{state="queued"} 3"#,
            r#"reviewbot_jobs{state="running"} 1"#,
            "reviewbot_rounds_posted_total 1",
            r#"reviewbot_lens_runs_total{lens="claude",status="ok"} 1"#,
            r#"reviewbot_lens_seconds_count{lens="claude"} 1"#,
            r#"reviewbot_lens_seconds_sum{lens="claude"} 12.5"#,
            r#"reviewbot_lens_seconds_bucket{lens="claude",le="16"} 1"#,
            r#"reviewbot_lens_tokens_total{lens="claude",kind="input"} 1000"#,
            r#"reviewbot_lens_tokens_total{lens="claude",kind="output"} 200"#,
            r#"reviewbot_github_requests_total{status="201"} 1"#,
            r#"reviewbot_github_requests_total{status="0"} 1"#,
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
        assert!(!text.contains("made-up"));
        // A state the store no longer reports disappears.
        let text = m.render(&[("queued".into(), 0)]);
        assert!(text.contains(r#"reviewbot_jobs{state="queued"} 0"#));
        assert!(!text.contains(r#"state="running""#), "{text}");
    }
}
