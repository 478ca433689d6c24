//! SQLite's one writer of deliveries. The webhook hands each verified delivery over and waits;
//! this thread takes whatever has queued up and writes it in one transaction (one commit, so
//! one fsync, a batch), each delivery in arrival order with the outcome it would have had
//! alone. If the transaction fails, every delivery in it gets the error (its webhook answers
//! 5xx, and GitHub can redeliver it).
//!
//! It runs on a thread of its own, on a connection of its own, with rusqlite rather than sqlx:
//! through sqlx each statement is a round trip to the connection's thread, two context switches
//! and more for each row it returns, and those, not SQLite's work, were most of what a delivery
//! cost (docs/benchmarks.md). The SQL is the text the other writes use
//! (`INSERT_DELIVERY` and the rest, in `delivery.rs`), and a property test holds a batch's rows and
//! outcomes to those of writing each delivery alone through sqlx.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior};
use tokio::sync::{mpsc, oneshot};

use super::delivery::{
    Accepted, INSERT_DELIVERY, INSERT_JOB, NewDelivery, QUEUED_REPLY_JOB, SAME_HEAD_JOB,
    SET_OUTCOME, SUPERSEDE_OTHER_HEADS, TOUCH_PULL, payload_of,
};
use super::{SQLITE_BUSY_TIMEOUT, StoreError, now_ms, to_i64};
use crate::ids::JobId;
use crate::request::ReviewRequest;

/// A delivery waiting for the writer.
pub(crate) struct Waiting {
    pub(crate) delivery: NewDelivery,
    pub(crate) request: Option<ReviewRequest>,
    pub(crate) reply: oneshot::Sender<Result<Accepted, StoreError>>,
}

/// Deliveries written together, at most, in one transaction.
const BATCH: usize = 128;

/// Opens the writer's connection to the database at `path` (created and migrated already) and
/// starts the writer. It stops when every sender is dropped, or when `closed` is set (the
/// store was closed): then each delivery still queued is refused.
pub(crate) fn spawn(
    path: &Path,
    gate: Arc<tokio::sync::Mutex<()>>,
    closed: Arc<AtomicBool>,
    intake: mpsc::Receiver<Waiting>,
) -> Result<(), StoreError> {
    let conn = open(path).map_err(|e| StoreError::Write(e.to_string()))?;
    std::thread::Builder::new()
        .name("reviewbot-store".into())
        .spawn(move || run(conn, &gate, &closed, intake))
        .map_err(StoreError::Writer)?;
    Ok(())
}

/// The connection, set as sqlx sets the pool's (which made the file WAL already): every commit
/// synced (`FULL`: a delivery answered 2xx survives a power cut), foreign keys checked, the
/// same busy timeout.
pub(crate) fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(SQLITE_BUSY_TIMEOUT)?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.pragma_update(None, "foreign_keys", true)?;
    conn.set_prepared_statement_cache_capacity(16);
    Ok(conn)
}

fn run(
    mut conn: Connection,
    gate: &tokio::sync::Mutex<()>,
    closed: &AtomicBool,
    mut intake: mpsc::Receiver<Waiting>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    while let Some(first) = intake.blocking_recv() {
        batch.push(first);
        while batch.len() < BATCH {
            match intake.try_recv() {
                Ok(item) => batch.push(item),
                Err(_) => break,
            }
        }
        if closed.load(Ordering::Acquire) {
            for item in batch.drain(..) {
                let _ = item.reply.send(Err(writer_gone()));
            }
            break;
        }
        let written = {
            let _turn = gate.blocking_lock();
            write_batch(&mut conn, &batch)
        };
        match written {
            Ok(accepted) => {
                for (item, accepted) in batch.drain(..).zip(accepted) {
                    let _ = item.reply.send(Ok(accepted));
                }
            }
            Err(e) => {
                let message = e.to_string();
                for item in batch.drain(..) {
                    let _ = item.reply.send(Err(StoreError::Write(message.clone())));
                }
            }
        }
    }
}

pub(crate) fn writer_gone() -> StoreError {
    StoreError::Write("the store's writer has stopped".into())
}

/// A batch in one transaction, each delivery written as `accept_in_tx!` writes it alone.
pub(crate) fn write_batch(
    conn: &mut Connection,
    batch: &[Waiting],
) -> Result<Vec<Accepted>, StoreError> {
    let now = now_ms();
    let started = std::time::Instant::now();
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut accepted = Vec::with_capacity(batch.len());
    for item in batch {
        let d = &item.delivery;
        let outcome = match &item.request {
            _ if !insert_delivery(&tx, d, now)? => Accepted::Duplicate,
            None => Accepted::Stored,
            Some(request) => {
                let outcome = enqueue(&tx, d.id.as_str(), request, now)?;
                tx.prepare_cached(SET_OUTCOME)?
                    .execute(rusqlite::named_params! {
                        "$1": d.id.as_str(),
                        "$2": outcome.outcome(),
                        "$3": outcome.job().map(|j| j.0),
                    })?;
                outcome
            }
        };
        accepted.push(outcome);
    }
    let written = started.elapsed();
    tx.commit()?;
    // What a batch costs, for `scripts/bench-webhook.sh --log reviewbot::store=debug`.
    tracing::debug!(
        deliveries = batch.len(),
        statements_us = written.as_micros() as u64,
        commit_us = (started.elapsed() - written).as_micros() as u64,
        "delivery batch written"
    );
    Ok(accepted)
}

/// Whether the delivery is new (a row was inserted).
fn insert_delivery(tx: &Transaction<'_>, d: &NewDelivery, now: i64) -> rusqlite::Result<bool> {
    tx.prepare_cached(INSERT_DELIVERY)?
        .query_row(
            rusqlite::named_params! {
                "$1": d.id.as_str(),
                "$2": d.event,
                "$3": d.action,
                "$4": now,
            },
            |_| Ok(()),
        )
        .optional()
        .map(|row| row.is_some())
}

/// The job half, as `enqueue_in_tx!` does it through sqlx, with the same statements.
fn enqueue(
    tx: &Transaction<'_>,
    delivery_id: &str,
    request: &ReviewRequest,
    now: i64,
) -> Result<Accepted, StoreError> {
    let repo = request.repo.to_string();
    let pr = to_i64(request.pr.0);
    let head = request.head.as_ref().map(|h| h.as_str());
    tx.prepare_cached(TOUCH_PULL)?
        .execute(rusqlite::named_params! { "$1": repo, "$2": pr, "$3": now })?;
    let joins: Option<i64> = if request.reason.is_reply() {
        tx.prepare_cached(QUEUED_REPLY_JOB)?
            .query_row(rusqlite::named_params! { "$1": repo, "$2": pr }, |row| {
                row.get(0)
            })
            .optional()?
    } else if request.force {
        None
    } else {
        tx.prepare_cached(SAME_HEAD_JOB)?
            .query_row(
                rusqlite::named_params! { "$1": repo, "$2": pr, "$3": head },
                |row| row.get(0),
            )
            .optional()?
    };
    if let Some(into) = joins {
        return Ok(Accepted::Coalesced { into: JobId(into) });
    }
    let payload = payload_of(Some(request))?.unwrap_or_default();
    let job: i64 = tx.prepare_cached(INSERT_JOB)?.query_row(
        rusqlite::named_params! {
            "$1": delivery_id,
            "$2": repo,
            "$3": pr,
            "$4": head,
            "$5": request.force,
            "$6": payload,
            "$7": now,
            "$8": request.reason.job_kind(),
        },
        |row| row.get(0),
    )?;
    let mut superseded = Vec::new();
    if head.is_some() {
        let mut stmt = tx.prepare_cached(SUPERSEDE_OTHER_HEADS)?;
        let mut rows = stmt.query(rusqlite::named_params! {
            "$1": repo,
            "$2": pr,
            "$3": job,
            "$4": head,
            "$5": now,
        })?;
        while let Some(row) = rows.next()? {
            let state: String = row.get(1)?;
            if state == super::JobState::Superseded.as_str() {
                superseded.push(JobId(row.get(0)?));
            }
        }
        superseded.sort();
    }
    Ok(Accepted::Enqueued {
        job: JobId(job),
        superseded,
    })
}
