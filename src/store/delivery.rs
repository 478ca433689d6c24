//! What accepting a webhook delivery writes: the delivery as it arrived, what accepting it did,
//! and its statements — one text for both databases and for SQLite's batch writer
//! (`sqlite_intake`), which is why they live apart from the queue that runs them.

use super::StoreError;
use crate::ids::{DeliveryId, JobId};
use crate::request::ReviewRequest;

/// A webhook delivery as it arrived (the headers; never the body).
#[derive(Debug, Clone)]
pub struct NewDelivery {
    pub id: DeliveryId,
    pub event: String,
    pub action: Option<String>,
}

/// What [`Store::accept_delivery`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Accepted {
    /// Seen before: nothing was added.
    Duplicate,
    /// Stored; there was nothing to run.
    Stored,
    /// Stored, and a new job queued; `superseded` are the queued jobs of older heads it replaced.
    Enqueued { job: JobId, superseded: Vec<JobId> },
    /// Stored; the same head of the PR is already queued or running, so that job covers it.
    Coalesced { into: JobId },
}

impl Accepted {
    /// The job that will (or does) run for this delivery.
    pub fn job(&self) -> Option<JobId> {
        match self {
            Accepted::Enqueued { job, .. } => Some(*job),
            Accepted::Coalesced { into } => Some(*into),
            Accepted::Duplicate | Accepted::Stored => None,
        }
    }

    /// A short name for logs and metrics labels.
    pub fn outcome(&self) -> &'static str {
        match self {
            Accepted::Duplicate => "duplicate",
            Accepted::Stored => "stored",
            Accepted::Enqueued { .. } => "enqueued",
            Accepted::Coalesced { .. } => "coalesced",
        }
    }
}

/// The statements of accepting a delivery, one text for both databases and for SQLite's
/// batch writer (`$N` placeholders, which SQLite reads as named parameters).
pub(crate) const INSERT_DELIVERY: &str = "INSERT INTO deliveries (id, event, action, received_at, outcome) \
     VALUES ($1, $2, $3, $4, 'stored') ON CONFLICT (id) DO NOTHING RETURNING id";
/// A delivery's outcome once its job half ran: `$1` the delivery, `$2` the outcome, `$3` the job.
pub(crate) const SET_OUTCOME: &str =
    "UPDATE deliveries SET outcome = $2, job_id = $3 WHERE id = $1";
/// Locks the PR's row until commit: concurrent enqueues for one PR take turns.
pub(crate) const TOUCH_PULL: &str = "INSERT INTO pulls (repo, pr, last_request_at) VALUES ($1, $2, $3) \
     ON CONFLICT (repo, pr) DO UPDATE SET last_request_at = excluded.last_request_at";
/// The PR's queued or running job for the same head, which a non-forced request joins.
pub(crate) const SAME_HEAD_JOB: &str = "SELECT id FROM jobs WHERE repo = $1 AND pr = $2 \
     AND state IN ('queued', 'running') AND superseded_by IS NULL AND kind = 'round' \
     AND (head = $3 OR (head IS NULL AND $3 IS NULL)) ORDER BY id LIMIT 1";
/// The PR's reply job still queued: a new reply joins it (the job answers every pending reply
/// of the PR when it runs, so one queued job covers them all — one archive and one answer a
/// reply, not a job each). A running one may have read its threads already: not joined.
pub(crate) const QUEUED_REPLY_JOB: &str = "SELECT id FROM jobs WHERE repo = $1 AND pr = $2 \
     AND state = 'queued' AND kind = 'reply' ORDER BY id LIMIT 1";
pub(crate) const INSERT_JOB: &str = "INSERT INTO jobs (delivery_id, repo, pr, head, forced, request, state, \
                       run_after, created_at, updated_at, kind) \
     VALUES ($1, $2, $3, $4, $5, $6, 'queued', $7, $7, $7, $8) RETURNING id";
/// The PR's other heads' round jobs: queued ones are superseded, a running one is flagged (a
/// reply job is superseded by nothing).
pub(crate) const SUPERSEDE_OTHER_HEADS: &str = "UPDATE jobs SET superseded_by = $3, updated_at = $5, \
       state = CASE WHEN state = 'queued' THEN 'superseded' ELSE state END \
     WHERE repo = $1 AND pr = $2 AND id <> $3 AND superseded_by IS NULL \
       AND state IN ('queued', 'running') AND (head IS NULL OR head <> $4) AND kind = 'round' \
     RETURNING id, state";

/// The request as the job stores it (JSON).
pub(crate) fn payload_of(request: Option<&ReviewRequest>) -> Result<Option<String>, StoreError> {
    request
        .map(serde_json::to_string)
        .transpose()
        .map_err(|e| StoreError::Corrupt {
            what: "review request".into(),
            reason: e.to_string(),
        })
}
