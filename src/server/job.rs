//! One job of the App: the shared review flow, run with the job's installation token, and the
//! `record` stage (rounds and lens runs into the store, counts into the metrics).

use std::sync::Arc;

use crate::config::Config;
use crate::flow::{self, FlowCtx, FlowOutcome};
use crate::github::app::GithubApp;
use crate::github::client::ClientLimits;
use crate::ids::InstallationId;
use crate::lens::LensStatus;
use crate::request::ReviewRequest;
use crate::review::notice::Notice;
use crate::review::panel::{NoProgress, Panel, SubscriptionSlots};
use crate::server::Metrics;
use crate::server::budget;
use crate::server::worker::{JobEnd, JobRunner};
use crate::store::{Job, LensRunRecord, RoundRecord, Store, now_ms};

/// Runs jobs through [`flow::review_pr`].
pub struct FlowRunner {
    config: Config,
    app: Arc<GithubApp>,
    limits: ClientLimits,
    store: Store,
    metrics: Arc<Metrics>,
    /// The lens credentials, read once at start, and one subscription cap for the whole
    /// process, whatever the number of workers.
    panel: Panel,
}

impl FlowRunner {
    pub fn new(
        mut config: Config,
        app: Arc<GithubApp>,
        own_login: String,
        limits: ClientLimits,
        store: Store,
        metrics: Arc<Metrics>,
    ) -> Self {
        let slots = SubscriptionSlots::new(config.limits.subscription_concurrency);
        let mut panel = Panel::from_env(slots.clone(), true, config.api_key_vars());
        panel.max_tool_calls = config.context.max_tool_calls;
        panel.max_call_tokens = config.context.max_call_tokens;
        panel.verify = config.verify;
        // The billing warning and other panel notices go to the log, not a terminal.
        panel.notices = Arc::new(|line: &str| tracing::warn!("{line}"));
        // Only reviewbot's own reviews count as rounds: set once, not per job.
        config.github.bot_login = Some(own_login.clone());
        Self {
            config,
            app,
            limits,
            store,
            metrics,
            panel,
        }
    }

    async fn record(&self, job: &Job, outcome: &FlowOutcome) {
        // Answers in threads are lens runs of no round: recorded, and counted in the budget.
        for run in &outcome.answers {
            let record = LensRunRecord {
                installation: job.request.installation,
                ..LensRunRecord::new(job.id, None, run)
            };
            if let Err(e) = self.store.record_lens_run(&record).await {
                tracing::error!(error = %e, "recording a lens run failed");
            }
        }
        for report in &outcome.reports {
            let verdict = report.verdict();
            let round = RoundRecord {
                job: job.id,
                repo: job.request.repo.clone(),
                pr: job.request.pr,
                head: Some(outcome.head.clone()),
                round: report.round,
                posted: report.posted,
                blocking: verdict.blocking as u32,
                advisory: verdict.advisory as u32,
                review_id: None,
                skipped: report.skipped.as_ref().map(|s| s.as_str().to_owned()),
            };
            if let Err(e) = self.store.record_round(&round).await {
                tracing::error!(error = %e, "recording the round failed");
            }
            if report.posted {
                self.metrics.round_posted();
            }
            // The verifiers' calls are lens runs too: they count in the daily budget.
            for run in &report.runs() {
                let record = LensRunRecord {
                    installation: job.request.installation,
                    ..LensRunRecord::new(job.id, report.round, run)
                };
                if let Err(e) = self.store.record_lens_run(&record).await {
                    tracing::error!(error = %e, "recording a lens run failed");
                }
                let status = match run.status {
                    LensStatus::Ok => "ok",
                    LensStatus::Failed => "failed",
                };
                let (input, output) = run
                    .usage
                    .map_or((0, 0), |u| (u.input_tokens, u.output_tokens));
                self.metrics.lens_run(
                    run.lens.as_str(),
                    status,
                    run.latency_ms as f64 / 1000.0,
                    input,
                    output,
                );
            }
        }
    }
}

impl FlowRunner {
    /// The job's end when the installation's daily budget is spent (it waits for the next UTC
    /// day, and the head's check run says so), or when what it spent cannot be read (tried
    /// again later); `None`: run it.
    async fn over_budget(
        &self,
        ctx: &FlowCtx<'_>,
        installation: InstallationId,
        job: &Job,
    ) -> Option<JobEnd> {
        let serve = &self.config.serve;
        if serve.daily_budget_usd.is_none() && serve.daily_budget_tokens.is_none() {
            return None;
        }
        let now = now_ms();
        let since = budget::day_start(now);
        let day = match self.store.spent_since(installation, since).await {
            Ok(spent) => budget::Day {
                budget_usd: serve.daily_budget_usd,
                budget_tokens: serve.daily_budget_tokens,
                spent_usd: spent.usd,
                unpriced_tokens: spent.unpriced_tokens,
            },
            Err(e) => return Some(JobEnd::Failed(format!("reading today's cost failed: {e}"))),
        };
        match budget::decide(&day, &job.request.reason, now) {
            budget::Decision::Run => None,
            budget::Decision::Wait { until_ms, over } => {
                for notice in flow::wait_for_budget(ctx, &job.request, &over).await {
                    tracing::info!(notice = %notice, "round waits");
                }
                let notice = Notice::BudgetReached { installation, over };
                Some(JobEnd::Deferred {
                    until_ms,
                    note: notice.to_string(),
                })
            }
        }
    }
}

impl JobRunner for FlowRunner {
    /// The whole job is one review's for masking: what it logs and keeps after its round (the
    /// notices, the error) is masked with the values the round remembered, too.
    async fn run(&self, job: Job) -> JobEnd {
        crate::redact::KnownSecrets::scoped(self.run_job(job)).await
    }
}

impl FlowRunner {
    async fn run_job(&self, job: Job) -> JobEnd {
        let Some(installation) = job.request.installation else {
            return JobEnd::Done("not reviewed: the delivery named no installation".to_owned());
        };
        let github = self
            .app
            .installation_client(installation, self.limits.clone());
        let ctx = FlowCtx {
            github: &github,
            has_token: true,
            config: &self.config,
            panel: &self.panel,
            observer: &NoProgress,
            store: Some(&self.store),
            workflow: false,
        };
        if let Some(wait) = self.over_budget(&ctx, installation, &job).await {
            return wait;
        }
        // The round's marker names the delivery that asked for it (see `ReviewRequest::ask`).
        let request = ReviewRequest {
            ask: job.delivery.clone(),
            ..job.request.clone()
        };
        match flow::review_pr(&ctx, &request).await {
            Ok(outcome) => {
                for notice in &outcome.notices {
                    tracing::info!(notice = %notice, "round");
                }
                self.record(&job, &outcome).await;
                JobEnd::Done(crate::render::notice::job_outcome(
                    &outcome.reports,
                    &outcome.head,
                    outcome.answers.len(),
                ))
            }
            Err(e) => {
                let error = e.to_string();
                // The last attempt: its check run must not be left spinning.
                if job.attempts >= self.config.serve.max_attempts {
                    let notices = flow::give_up(&ctx, &request, job.attempts, &error).await;
                    for notice in &notices {
                        tracing::warn!(notice = %notice, "giving up");
                    }
                }
                JobEnd::Failed(crate::redact::redact(&error).into_owned())
            }
        }
    }
}
