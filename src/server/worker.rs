//! The worker pool: claims queued jobs with a lease, keeps the lease alive while the round runs,
//! runs the shared review flow with the job's installation token, records what happened, and
//! gives a job back when told to stop.
//!
//! At least once: a worker that dies leaves a lease that lapses, and the job runs again; the
//! round markers keep what is posted exactly once.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument as _;

use crate::store::{Job, Store};

/// How long a worker waits between looks at an empty queue when nothing wakes it (another
/// replica's jobs, a retry whose delay ran out, a lapsed lease).
const IDLE_POLL: Duration = Duration::from_millis(500);

/// What a finished job tells the store.
#[derive(Debug)]
pub enum JobEnd {
    /// Ran to its end (posted, skipped or refused); the text is stored as the job's outcome.
    Done(String),
    /// Failed; tried again later until the attempts run out.
    Failed(String),
    /// Not run now: queued again until `until_ms` (unix milliseconds), this attempt not
    /// counted; `note` says why (a daily budget reached).
    Deferred { until_ms: i64, note: String },
}

/// Runs one job. The serve command supplies the real one (the review flow); the pool only knows
/// leases.
pub trait JobRunner: Send + Sync + 'static {
    fn run(&self, job: Job) -> impl Future<Output = JobEnd> + Send;
}

/// The pool's settings.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    pub workers: usize,
    pub lease: Duration,
    pub max_attempts: u32,
    /// Delay before a failed job is tried again.
    pub retry_after: Duration,
    /// This process's name in the store (several replicas share one database).
    pub process: String,
}

/// Spawns the workers on `tracker`; they stop claiming when `stop` is cancelled, and a job still
/// running `grace` after that is dropped (its lens processes die with it) and released.
pub fn spawn<R: JobRunner>(
    store: Store,
    runner: Arc<R>,
    config: PoolConfig,
    wake: Arc<Notify>,
    stop: CancellationToken,
    grace: Duration,
    tracker: &TaskTracker,
) {
    for n in 0..config.workers.max(1) {
        let worker = Worker {
            name: format!("{}/{n}", config.process),
            store: store.clone(),
            runner: Arc::clone(&runner),
            config: config.clone(),
            wake: Arc::clone(&wake),
            stop: stop.clone(),
            grace,
        };
        tracker.spawn(worker.run());
    }
}

struct Worker<R> {
    name: String,
    store: Store,
    runner: Arc<R>,
    config: PoolConfig,
    wake: Arc<Notify>,
    stop: CancellationToken,
    grace: Duration,
}

impl<R: JobRunner> Worker<R> {
    async fn run(self) {
        while !self.stop.is_cancelled() {
            let claimed = self.store.claim(&self.name, self.config.lease).await;
            match claimed {
                Ok(Some(job)) => {
                    let span = tracing::info_span!("job", job = %job.id.0, attempt = job.attempts, worker = %self.name);
                    self.work(job).instrument(span).await
                }
                Ok(None) => self.idle().await,
                Err(e) => {
                    tracing::error!(worker = %self.name, error = %e, "claiming a job failed");
                    self.idle().await;
                }
            }
        }
        tracing::debug!(worker = %self.name, "worker stopped");
    }

    async fn idle(&self) {
        tokio::select! {
            () = self.wake.notified() => {}
            () = tokio::time::sleep(IDLE_POLL) => {}
            () = self.stop.cancelled() => {}
        }
    }

    async fn work(&self, job: Job) {
        let lost = CancellationToken::new();
        let beat = tokio::spawn(
            heartbeat(
                self.store.clone(),
                job.clone(),
                self.name.clone(),
                self.config.lease,
                lost.clone(),
            )
            .in_current_span(),
        );
        let run = self.runner.run(job.clone());
        tokio::pin!(run);
        let ended = tokio::select! {
            end = &mut run => Some(end),
            () = lost.cancelled() => {
                tracing::warn!("lease lost; another worker has the job");
                None
            }
            () = self.stop.cancelled() => {
                // Shutting down: give the round a little time to finish, then hand it back.
                tokio::select! {
                    end = &mut run => Some(end),
                    () = tokio::time::sleep(self.grace) => None,
                    () = lost.cancelled() => None,
                }
            }
        };
        beat.abort();
        let result = match ended {
            Some(JobEnd::Done(outcome)) => {
                tracing::info!(%outcome, "job done");
                self.store
                    .complete(&job, &self.name, &outcome)
                    .await
                    .map(|_| ())
            }
            Some(JobEnd::Failed(error)) => {
                tracing::warn!(%error, "job failed");
                self.store
                    .fail(
                        &job,
                        &self.name,
                        &error,
                        self.config.max_attempts,
                        self.config.retry_after,
                    )
                    .await
                    .map(|_| ())
            }
            Some(JobEnd::Deferred { until_ms, note }) => {
                tracing::info!(%note, until_ms, "job deferred");
                self.store
                    .defer(&job, &self.name, until_ms, &note)
                    .await
                    .map(|_| ())
            }
            None if lost.is_cancelled() => Ok(()),
            None => {
                tracing::info!("job released at shutdown");
                self.store.release(&job, &self.name).await.map(|_| ())
            }
        };
        if let Err(e) = result {
            tracing::error!(error = %e, "recording the job's end failed");
        }
    }
}

/// Renews the lease every third of its length; cancels `lost` when the store says the lease is
/// no longer ours.
async fn heartbeat(
    store: Store,
    job: Job,
    worker: String,
    lease: Duration,
    lost: CancellationToken,
) {
    let every = lease / 3;
    loop {
        tokio::time::sleep(every).await;
        match store.heartbeat(&job, &worker, lease).await {
            Ok(true) => {}
            Ok(false) => {
                lost.cancel();
                return;
            }
            Err(e) => tracing::warn!(error = %e, "heartbeat failed"),
        }
    }
}
