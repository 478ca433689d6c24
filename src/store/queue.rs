//! Deliveries and the job queue.
//!
//! A job is one review of one PR. Its life: `queued` → `running` (claimed with a lease) →
//! `done` | `failed` | back to `queued` (a retry, a release, a lease that expired); a queued job
//! becomes `superseded` when a newer head of its PR is requested. A running job of an older head
//! is flagged (`superseded_by`) instead and finishes its round for the head it reviewed; if it
//! comes back to the queue (released, failed, its lease expired) it is superseded then, so a
//! claim never hands out a superseded job.
//!
//! Every claim and every enqueue is one write transaction. On SQLite the writes of a process
//! take turns (a gate, then `BEGIN IMMEDIATE`, so none hits SQLITE_BUSY), and deliveries go
//! through one writer thread that commits them in batches (`sqlite_intake`). PostgreSQL locks the picked job (`FOR
//! UPDATE SKIP LOCKED`) and the PR's row in `pulls` (enqueue), and on both a partial unique
//! index keeps one running job a PR whatever happens.

use std::time::Duration;

use sqlx::{Pool, Postgres, Row, Sqlite};
use tokio::sync::oneshot;

use super::delivery::{
    Accepted, INSERT_DELIVERY, INSERT_JOB, NewDelivery, QUEUED_REPLY_JOB, SAME_HEAD_JOB,
    SET_OUTCOME, SUPERSEDE_OTHER_HEADS, TOUCH_PULL, payload_of,
};
use super::sqlite_intake::{self, writer_gone};
use super::{Db, Dialect, Scope, Store, StoreError, millis, now_ms, to_i64};
use crate::github::model::RepoName;
use crate::ids::{DeliveryId, JobId, PrNumber};
use crate::request::ReviewRequest;

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobState {
    Queued,
    Running,
    Done,
    Failed,
    Superseded,
}

impl JobState {
    pub const ALL: [JobState; 5] = [
        JobState::Queued,
        JobState::Running,
        JobState::Done,
        JobState::Failed,
        JobState::Superseded,
    ];

    /// The name stored in the database (and used as a metrics label).
    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Failed => "failed",
            JobState::Superseded => "superseded",
        }
    }

    fn parse(s: &str) -> Result<JobState, StoreError> {
        JobState::ALL
            .into_iter()
            .find(|state| state.as_str() == s)
            .ok_or_else(|| StoreError::Corrupt {
                what: "job state".into(),
                reason: format!("{s:?}"),
            })
    }
}

/// A claimed job: run it, heartbeat while it runs, then complete, fail or release it.
#[derive(Debug, Clone)]
pub struct Job {
    pub id: JobId,
    pub request: ReviewRequest,
    /// This attempt's number, from 1 (a dead worker's attempt counts; a released one does not).
    pub attempts: u32,
    pub delivery: Option<DeliveryId>,
    /// Which claim of the job this is: a write from an older claim (a lease that expired and
    /// was taken over) matches no row.
    generation: i64,
}

/// A job as stored, for tests and operators.
#[derive(Debug, Clone)]
pub struct JobRecord {
    pub id: JobId,
    pub state: JobState,
    pub attempts: u32,
    pub request: ReviewRequest,
    pub delivery: Option<DeliveryId>,
    pub lease_owner: Option<String>,
    pub superseded_by: Option<JobId>,
    pub outcome: Option<String>,
    pub error: Option<String>,
}

/// Claims passed over in one call (a job superseded or out of attempts) before giving up.
const CLAIM_STEPS: usize = 64;

/// The oldest runnable job: a queued one that is due, whose PR has nothing running and no older
/// due job; or a running one whose lease expired (its worker died).
macro_rules! candidate_sql {
    ($lock:literal) => {
        concat!(
            "SELECT j.id, j.state, j.attempts, j.superseded_by FROM jobs j \
         WHERE (j.state = 'queued' AND j.run_after <= $1 \
                AND NOT EXISTS (SELECT 1 FROM jobs r \
                                WHERE r.repo = j.repo AND r.pr = j.pr AND r.state = 'running') \
                AND NOT EXISTS (SELECT 1 FROM jobs o \
                                WHERE o.repo = j.repo AND o.pr = j.pr AND o.state = 'queued' \
                                  AND o.run_after <= $1 AND o.id < j.id)) \
            OR (j.state = 'running' AND j.lease_until < $1) \
         ORDER BY j.id LIMIT 1 ",
            $lock
        )
    };
}

/// The candidate query, with the lock that makes another replica skip the picked row on
/// PostgreSQL; SQLite has one writer at a time already (`BEGIN IMMEDIATE`).
trait Candidate {
    const SQL: &'static str;
}

impl Candidate for Pool<Sqlite> {
    const SQL: &'static str = candidate_sql!("");
}

impl Candidate for Pool<Postgres> {
    const SQL: &'static str = candidate_sql!("FOR UPDATE SKIP LOCKED");
}

fn candidate_sql<P: Candidate>(_pool: &P) -> &'static str {
    P::SQL
}

/// The condition every write of a claimed job carries (`$1` the job, `$2` the worker, `$3` the
/// claim): a worker whose lease was taken over writes nothing.
macro_rules! held_by_caller {
    () => {
        " WHERE id = $1 AND state = 'running' AND lease_owner = $2 AND claims = $3"
    };
}

/// `UPDATE jobs SET $set` on a job the caller holds, `$extra` bound from `$4`; the rows changed.
macro_rules! holder_update {
    ($store:expr, $job:expr, $worker:expr, $set:literal $(, $extra:expr)* $(,)?) => {{
        let _turn = $store.write_turn().await;
        on_pool!(&$store.db, pool => {
            sqlx::query(concat!("UPDATE jobs SET ", $set, held_by_caller!()))
                .bind($job.id.0)
                .bind($worker)
                .bind($job.generation)
                $(.bind($extra))*
                .execute(pool)
                .await?
                .rows_affected()
        })
    }};
}

/// One delivery's writes inside the transaction `$tx` (the caller commits): a future of the
/// [`Accepted`]. A macro, so that one text serves both databases' transactions. (SQLite's
/// writer does the same for a whole batch at once, with the same statements.)
macro_rules! accept_in_tx {
    ($tx:ident, $delivery:expr, $request:expr, $payload:expr, $now:expr) => {
        async {
            let (delivery, now): (&NewDelivery, i64) = ($delivery, $now);
            let fresh: Option<String> = sqlx::query_scalar(INSERT_DELIVERY)
                .bind(delivery.id.as_str())
                .bind(&delivery.event)
                .bind(delivery.action.as_deref())
                .bind(now)
                .fetch_optional(&mut *$tx)
                .await?;
            if fresh.is_none() {
                // Nothing was written.
                return Ok(Accepted::Duplicate);
            }
            let (Some(request), Some(payload)) = ($request, $payload) else {
                return Ok(Accepted::Stored);
            };
            let accepted =
                enqueue_in_tx!($tx, delivery.id.as_str(), request, &payload, now).await?;
            sqlx::query(SET_OUTCOME)
                .bind(delivery.id.as_str())
                .bind(accepted.outcome())
                .bind(accepted.job().map(|j| j.0))
                .execute(&mut *$tx)
                .await?;
            Ok::<Accepted, StoreError>(accepted)
        }
    };
}

/// The job half of accepting a new delivery that asks for a round, inside `$tx`: coalesce into
/// the PR's queued or running job for the same head (unless forced), a reply into the PR's
/// queued reply job, or queue a new job and
/// supersede the older heads' (queued: superseded; running: flagged). The delivery's row must
/// exist already (the job refers to it); its outcome is the caller's to record.
macro_rules! enqueue_in_tx {
    ($tx:ident, $delivery_id:expr, $request:expr, $payload:expr, $now:expr) => {
        async {
            let (delivery_id, request, payload, now): (&str, &ReviewRequest, &str, i64) =
                ($delivery_id, $request, $payload, $now);
            let repo = request.repo.to_string();
            let pr = to_i64(request.pr.0);
            let head = request.head.as_ref().map(|h| h.as_str());
            sqlx::query(TOUCH_PULL)
                .bind(&repo)
                .bind(pr)
                .bind(now)
                .execute(&mut *$tx)
                .await?;
            let same_head: Option<i64> = if request.reason.is_reply() {
                sqlx::query_scalar(QUEUED_REPLY_JOB)
                    .bind(&repo)
                    .bind(pr)
                    .fetch_optional(&mut *$tx)
                    .await?
            } else if request.force {
                None
            } else {
                sqlx::query_scalar(SAME_HEAD_JOB)
                    .bind(&repo)
                    .bind(pr)
                    .bind(head)
                    .fetch_optional(&mut *$tx)
                    .await?
            };
            if let Some(into) = same_head {
                return Ok(Accepted::Coalesced { into: JobId(into) });
            }
            let job: i64 = sqlx::query_scalar(INSERT_JOB)
                .bind(delivery_id)
                .bind(&repo)
                .bind(pr)
                .bind(head)
                .bind(request.force)
                .bind(payload)
                .bind(now)
                .bind(request.reason.job_kind())
                .fetch_one(&mut *$tx)
                .await?;
            let mut superseded = Vec::new();
            if head.is_some() {
                let rows = sqlx::query(SUPERSEDE_OTHER_HEADS)
                    .bind(&repo)
                    .bind(pr)
                    .bind(job)
                    .bind(head)
                    .bind(now)
                    .fetch_all(&mut *$tx)
                    .await?;
                for row in rows {
                    let state: String = row.try_get("state")?;
                    if state == JobState::Superseded.as_str() {
                        superseded.push(JobId(row.try_get("id")?));
                    }
                }
                superseded.sort();
            }
            Ok::<Accepted, StoreError>(Accepted::Enqueued {
                job: JobId(job),
                superseded,
            })
        }
    };
}

/// What one step of a claim did.
enum Step {
    Claimed(Box<Job>),
    /// Passed over a job that must not run; look again.
    Again,
    Nothing,
}

impl Store {
    /// Records a delivery and, when it asks for a review, enqueues the job, in one transaction:
    /// a delivery seen before adds nothing. A non-forced request for a head already queued or
    /// running coalesces into that job; a request for a head supersedes the PR's queued jobs of
    /// other heads (and flags a running one, see [`Store::is_superseded`]).
    pub async fn accept_delivery(
        &self,
        delivery: &NewDelivery,
        request: Option<&ReviewRequest>,
    ) -> Result<Accepted, StoreError> {
        match (&self.db, &self.intake) {
            (Db::Sqlite(_), Some(intake)) => {
                let (reply, answer) = oneshot::channel();
                let item = sqlite_intake::Waiting {
                    delivery: delivery.clone(),
                    request: request.cloned(),
                    reply,
                };
                intake.send(item).await.map_err(|_| writer_gone())?;
                answer.await.map_err(|_| writer_gone())?
            }
            (Db::Postgres(pool), _) => {
                let payload = payload_of(request)?;
                let mut tx = pool.begin_write().await?;
                let accepted = accept_in_tx!(tx, delivery, request, payload, now_ms()).await?;
                tx.commit().await?;
                Ok(accepted)
            }
            (Db::Sqlite(_), None) => Err(writer_gone()),
        }
    }

    /// Claims the oldest runnable job for `worker`, with a lease of `lease`: a queued job that is
    /// due, or a running one whose lease expired (a dead worker's; that attempt counted, and on
    /// the last of [`Store::with_max_attempts`] the job is marked failed instead). A PR never
    /// has two running jobs: its next job waits. `None` when nothing is runnable.
    pub async fn claim(&self, worker: &str, lease: Duration) -> Result<Option<Job>, StoreError> {
        for _ in 0..CLAIM_STEPS {
            match self.claim_step(worker, lease).await? {
                Step::Claimed(job) => return Ok(Some(*job)),
                Step::Nothing => return Ok(None),
                Step::Again => {}
            }
        }
        Ok(None)
    }

    async fn claim_step(&self, worker: &str, lease: Duration) -> Result<Step, StoreError> {
        let now = now_ms();
        let max_attempts = i64::from(self.max_attempts);
        let _turn = self.write_turn().await;
        on_pool!(&self.db, pool => {
            let mut tx = pool.begin_write().await?;
            let sql = candidate_sql(pool);
            let Some(row) = sqlx::query(sql).bind(now).fetch_optional(&mut *tx).await? else {
                tx.commit().await?;
                return Ok(Step::Nothing);
            };
            let id: i64 = row.try_get("id")?;
            let expired = row.try_get::<String, _>("state")? == JobState::Running.as_str();
            let attempts: i64 = row.try_get("attempts")?;
            let superseded = row.try_get::<Option<i64>, _>("superseded_by")?.is_some();
            if expired && (superseded || attempts >= max_attempts) {
                let (state, error) = if superseded {
                    (JobState::Superseded, None)
                } else {
                    (JobState::Failed, Some("the worker's lease expired on the last attempt"))
                };
                sqlx::query(
                    "UPDATE jobs SET state = $2, error = COALESCE($3, error), \
                       lease_owner = NULL, lease_until = NULL, updated_at = $4 WHERE id = $1",
                )
                .bind(id)
                .bind(state.as_str())
                .bind(error)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                tx.commit().await?;
                return Ok(Step::Again);
            }
            let claimed = sqlx::query(
                "UPDATE jobs SET state = 'running', lease_owner = $2, lease_until = $3, \
                   attempts = attempts + 1, claims = claims + 1, updated_at = $4 \
                 WHERE id = $1 AND (state = 'queued' OR lease_until < $4) \
                 RETURNING request, attempts, claims, delivery_id",
            )
            .bind(id)
            .bind(worker)
            .bind(now.saturating_add(millis(lease)))
            .bind(now)
            .fetch_optional(&mut *tx)
            .await;
            let row = match claimed {
                Ok(Some(row)) => row,
                // Taken meanwhile (the lock makes this rare; the check makes it harmless).
                Ok(None) => {
                    tx.rollback().await?;
                    return Ok(Step::Again);
                }
                // Another replica started a job of this PR after our snapshot: the unique
                // index refused the second; look again.
                Err(e) if is_unique_violation(&e) => {
                    tx.rollback().await?;
                    return Ok(Step::Again);
                }
                Err(e) => return Err(e.into()),
            };
            let request: String = row.try_get("request")?;
            let request = match serde_json::from_str::<ReviewRequest>(&request) {
                Ok(request) => request,
                Err(e) => {
                    // Never run, never retried: failed with the reason.
                    sqlx::query(
                        "UPDATE jobs SET state = 'failed', error = $2, lease_owner = NULL, \
                           lease_until = NULL WHERE id = $1",
                    )
                    .bind(id)
                    .bind(format!("unreadable request: {e}"))
                    .execute(&mut *tx)
                    .await?;
                    tx.commit().await?;
                    return Ok(Step::Again);
                }
            };
            let job = Job {
                id: JobId(id),
                request,
                attempts: u32::try_from(row.try_get::<i64, _>("attempts")?).unwrap_or(u32::MAX),
                delivery: row
                    .try_get::<Option<String>, _>("delivery_id")?
                    .as_deref()
                    .and_then(DeliveryId::parse),
                generation: row.try_get("claims")?,
            };
            tx.commit().await?;
            Ok(Step::Claimed(Box::new(job)))
        })
    }

    /// Extends the lease; `false` when `worker` no longer holds it (it expired and another
    /// worker took the job, or the job left `running`): stop, and write nothing more.
    pub async fn heartbeat(
        &self,
        job: &Job,
        worker: &str,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        let now = now_ms();
        let changed = holder_update!(
            self,
            job,
            worker,
            "lease_until = $4, updated_at = $5",
            now.saturating_add(millis(lease)),
            now
        );
        Ok(changed == 1)
    }

    /// Marks the job done with `outcome` (a short word: `posted`, `skipped: draft`, …); `false`
    /// (and nothing written) when `worker` no longer holds the lease.
    pub async fn complete(
        &self,
        job: &Job,
        worker: &str,
        outcome: &str,
    ) -> Result<bool, StoreError> {
        let now = now_ms();
        let changed = holder_update!(
            self,
            job,
            worker,
            "state = 'done', outcome = $4, lease_owner = NULL, lease_until = NULL, \
             updated_at = $5",
            outcome,
            now
        );
        Ok(changed == 1)
    }

    /// Records a failed attempt: back to the queue, due after `retry_after`, or `failed` with
    /// `error` once `max_attempts` attempts were made (`superseded` if a newer head came).
    /// Returns the job's new state; `None` (nothing written) when `worker` lost the lease.
    pub async fn fail(
        &self,
        job: &Job,
        worker: &str,
        error: &str,
        max_attempts: u32,
        retry_after: Duration,
    ) -> Result<Option<JobState>, StoreError> {
        let now = now_ms();
        let _turn = self.write_turn().await;
        let state: Option<String> = on_pool!(&self.db, pool => {
            sqlx::query_scalar(concat!(
                "UPDATE jobs SET \
                   state = CASE WHEN superseded_by IS NOT NULL THEN 'superseded' \
                                WHEN attempts >= $4 THEN 'failed' ELSE 'queued' END, \
                   error = $5, run_after = $6, lease_owner = NULL, lease_until = NULL, \
                   updated_at = $7",
                held_by_caller!(),
                " RETURNING state"
            ))
            .bind(job.id.0)
            .bind(worker)
            .bind(job.generation)
            .bind(i64::from(max_attempts))
            .bind(error)
            .bind(now.saturating_add(millis(retry_after)))
            .bind(now)
            .fetch_optional(pool)
            .await?
        });
        state.as_deref().map(JobState::parse).transpose()
    }

    /// Gives the job back (shutdown): queued again at once, this attempt not counted (or
    /// `superseded` if a newer head came). `false` when `worker` no longer holds the lease.
    pub async fn release(&self, job: &Job, worker: &str) -> Result<bool, StoreError> {
        self.requeue(job, worker, now_ms(), None).await
    }

    /// Puts the job back in the queue until `until` (unix milliseconds), this attempt not
    /// counted, with `note` as its outcome so far (a daily budget reached: the job waits, it is
    /// not dropped). `superseded` if a newer head came. `false` when `worker` lost the lease.
    pub async fn defer(
        &self,
        job: &Job,
        worker: &str,
        until_ms: i64,
        note: &str,
    ) -> Result<bool, StoreError> {
        self.requeue(job, worker, until_ms, Some(note)).await
    }

    /// Queued again from `run_after` (or superseded), the attempt not counted; `note`, when
    /// given, becomes the outcome.
    async fn requeue(
        &self,
        job: &Job,
        worker: &str,
        run_after: i64,
        note: Option<&str>,
    ) -> Result<bool, StoreError> {
        let changed = holder_update!(
            self,
            job,
            worker,
            "state = CASE WHEN superseded_by IS NOT NULL THEN 'superseded' ELSE 'queued' END, \
             attempts = attempts - 1, run_after = $4, outcome = COALESCE($5, outcome), \
             lease_owner = NULL, lease_until = NULL, updated_at = $6",
            run_after,
            note,
            now_ms()
        );
        Ok(changed == 1)
    }

    /// Whether a newer head of the job's PR was requested after it (superseded while queued, or
    /// flagged while running).
    pub async fn is_superseded(&self, job: JobId) -> Result<bool, StoreError> {
        let row: Option<(String, Option<i64>)> = on_pool!(&self.db, pool => {
            sqlx::query_as("SELECT state, superseded_by FROM jobs WHERE id = $1")
                .bind(job.0)
                .fetch_optional(pool)
                .await?
        });
        let (state, by) = row.ok_or(StoreError::UnknownJob(job))?;
        Ok(by.is_some() || JobState::parse(&state)? == JobState::Superseded)
    }

    /// One job as stored.
    pub async fn job(&self, id: JobId) -> Result<Option<JobRecord>, StoreError> {
        Ok(self.jobs_in(Scope::Job(id)).await?.pop())
    }

    /// A PR's jobs, oldest first.
    pub async fn jobs_for_pr(
        &self,
        repo: &RepoName,
        pr: PrNumber,
    ) -> Result<Vec<JobRecord>, StoreError> {
        self.jobs_in(Scope::Pr(repo, pr)).await
    }

    async fn jobs_in(&self, scope: Scope<'_>) -> Result<Vec<JobRecord>, StoreError> {
        let (job, repo, pr) = scope.binds();
        on_pool!(&self.db, pool => {
            let rows = sqlx::query(
                "SELECT id, state, attempts, request, delivery_id, lease_owner, superseded_by, \
                   outcome, error FROM jobs \
                 WHERE ($1 IS NULL OR id = $1) AND ($2 IS NULL OR (repo = $2 AND pr = $3)) \
                 ORDER BY id",
            )
            .bind(job)
            .bind(repo)
            .bind(pr)
            .fetch_all(pool)
            .await?;
            rows.iter()
                .map(|row| {
                    let id = JobId(row.try_get("id")?);
                    let request: String = row.try_get("request")?;
                    Ok(JobRecord {
                        id,
                        state: JobState::parse(&row.try_get::<String, _>("state")?)?,
                        attempts: u32::try_from(row.try_get::<i64, _>("attempts")?).unwrap_or(0),
                        request: serde_json::from_str(&request).map_err(|e| {
                            StoreError::Corrupt {
                                what: format!("request of job {id}"),
                                reason: e.to_string(),
                            }
                        })?,
                        delivery: row
                            .try_get::<Option<String>, _>("delivery_id")?
                            .as_deref()
                            .and_then(DeliveryId::parse),
                        lease_owner: row.try_get("lease_owner")?,
                        superseded_by: row.try_get::<Option<i64>, _>("superseded_by")?.map(JobId),
                        outcome: row.try_get("outcome")?,
                        error: row.try_get("error")?,
                    })
                })
                .collect()
        })
    }

    /// How many jobs are in each state, every state listed (for the jobs gauge).
    pub async fn jobs_by_state(&self) -> Result<Vec<(JobState, i64)>, StoreError> {
        let rows: Vec<(String, i64)> = on_pool!(&self.db, pool => {
            sqlx::query_as("SELECT state, COUNT(*) FROM jobs GROUP BY state")
                .fetch_all(pool)
                .await?
        });
        let mut counts: Vec<(JobState, i64)> = JobState::ALL.iter().map(|s| (*s, 0)).collect();
        for (state, n) in rows {
            let state = JobState::parse(&state)?;
            if let Some(slot) = counts.iter_mut().find(|(s, _)| *s == state) {
                slot.1 = n;
            }
        }
        Ok(counts)
    }

    /// How many deliveries were stored (each once).
    pub async fn delivery_count(&self) -> Result<i64, StoreError> {
        let n: i64 = on_pool!(&self.db, pool => {
            sqlx::query_scalar("SELECT COUNT(*) FROM deliveries")
                .fetch_one(pool)
                .await?
        });
        Ok(n)
    }
}

fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.is_unique_violation())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::model::RepoName;
    use crate::ids::HeadSha;
    use crate::request::Reason;
    use crate::store::sqlite_intake::{Waiting, write_batch};
    use proptest::prelude::*;
    use sqlx::SqlitePool;

    /// One delivery of a generated sequence: its id (from a small pool, so some repeat) and
    /// what it asks for (a PR of two, a head of three, sometimes forced, sometimes nothing).
    fn arrival() -> impl Strategy<Value = (u8, Option<(u8, u8, bool)>)> {
        (
            0u8..12,
            prop::option::weighted(0.85, (1u8..3, 0u8..3, prop::bool::weighted(0.2))),
        )
    }

    fn item(
        id: u8,
        asks: Option<(u8, u8, bool)>,
    ) -> (Waiting, oneshot::Receiver<Result<Accepted, StoreError>>) {
        let (reply, answer) = oneshot::channel();
        let request = asks.map(|(pr, head, force)| ReviewRequest {
            repo: RepoName::parse("octo/widgets").unwrap(),
            pr: PrNumber(u64::from(pr)),
            head: HeadSha::parse(&char::from(b'a' + head).to_string().repeat(40)),
            installation: None,
            reason: Reason::Synchronize,
            force,
            post: true,
            lenses: Vec::new(),
            ask: None,
            fail_on: None,
        });
        let delivery = NewDelivery {
            id: DeliveryId::parse(&format!("d-{id}")).unwrap(),
            event: "pull_request".into(),
            action: Some("synchronize".into()),
        };
        (
            Waiting {
                delivery,
                request,
                reply,
            },
            answer,
        )
    }

    type Rows = Vec<Vec<Option<String>>>;

    /// Every delivery, job and PR as stored (all but the times), for comparing two databases.
    async fn contents(pool: &SqlitePool) -> [Rows; 3] {
        let rows = |sql: &'static str| async move {
            sqlx::query(sql)
                .fetch_all(pool)
                .await
                .unwrap()
                .iter()
                .map(|row| {
                    (0..row.len())
                        .map(|i| row.try_get::<Option<String>, _>(i).unwrap())
                        .collect()
                })
                .collect::<Rows>()
        };
        [
            rows(
                "SELECT id, event, action, outcome, CAST(job_id AS TEXT) \
                  FROM deliveries ORDER BY id",
            )
            .await,
            rows(
                "SELECT CAST(id AS TEXT), delivery_id, repo, CAST(pr AS TEXT), head, \
                  CAST(forced AS TEXT), request, state, CAST(attempts AS TEXT), \
                  CAST(superseded_by AS TEXT), outcome FROM jobs ORDER BY id",
            )
            .await,
            rows("SELECT repo, CAST(pr AS TEXT) FROM pulls ORDER BY repo, pr").await,
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// SQLite's batch writer (rusqlite, many deliveries a transaction) changes nothing: each
        /// delivery's outcome and the stored rows are those of writing the deliveries one at a
        /// time through sqlx with `accept_in_tx`, as PostgreSQL does.
        #[test]
        fn a_batch_is_written_as_if_each_delivery_came_alone(
            arrivals in prop::collection::vec(arrival(), 1..30),
            split in 1usize..30,
        ) {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async {
                let dir = tempfile::tempdir().unwrap();
                let open = |name: &str| {
                    let url = format!("sqlite://{}", dir.path().join(name).display());
                    async move { Store::connect(&url).await.unwrap() }
                };
                let (alone, batched) = (open("alone.db").await, open("batched.db").await);
                let (Db::Sqlite(alone_pool), Db::Sqlite(batched_pool)) = (&alone.db, &batched.db) else {
                    unreachable!("both are SQLite")
                };

                let mut expected = Vec::new();
                for &(id, asks) in &arrivals {
                    let (it, _) = item(id, asks);
                    let payload = payload_of(it.request.as_ref()).unwrap();
                    let mut tx = alone_pool.begin_write().await.unwrap();
                    expected.push(
                        accept_in_tx!(tx, &it.delivery, it.request.as_ref(), payload, now_ms())
                            .await
                            .unwrap(),
                    );
                    tx.commit().await.unwrap();
                }

                let mut got = Vec::new();
                let path = batched_pool.connect_options().get_filename().to_owned();
                let mut conn = crate::store::sqlite_intake::open(&path).unwrap();
                for chunk in arrivals.chunks(split) {
                    let batch: Vec<Waiting> = chunk.iter().map(|&(id, asks)| item(id, asks).0).collect();
                    got.extend(write_batch(&mut conn, &batch).unwrap());
                }
                drop(conn);
                assert_eq!(got, expected, "outcomes of {arrivals:?} in batches of {split}");
                assert_eq!(contents(batched_pool).await, contents(alone_pool).await);
            });
        }
    }
}
