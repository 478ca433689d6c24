//! The store on real databases: every body runs on SQLite (a temporary file) and on PostgreSQL
//! (a database of its own, created for the test and dropped after it).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use reviewbot::github::model::RepoName;
use reviewbot::ids::{DeliveryId, HeadSha, InstallationId, JobId, LensName, PrNumber};
use reviewbot::request::{Reason, ReviewRequest};
use reviewbot::store::{
    Accepted, JobState, LensRunRecord, NewDelivery, RoundRecord, Store, StoreError,
};
use sqlx::Connection;

const LONG: Duration = Duration::from_secs(60);
/// A lease that runs out as it is given (the store counts in milliseconds): no test waits for
/// a lease, and none depends on how fast a loaded machine runs.
const EXPIRED: Duration = Duration::ZERO;

/// Lets the clock pass the end of an [`EXPIRED`] lease.
async fn tick() {
    tokio::time::sleep(Duration::from_millis(5)).await;
}

/// A store on a fresh database, and the URL to open it again.
struct TestDb {
    url: String,
    store: Store,
}

impl TestDb {
    async fn reconnect(&self) -> Store {
        Store::connect(&self.url).await.expect("reconnect")
    }
}

/// Runs `body` once on each database.
macro_rules! on_both {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::on_sqlite(super::$name).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::on_postgres(super::$name).await
            }
        }
    )*};
}

on_both!(
    deliveries_are_idempotent,
    coalescing_and_supersede,
    claim_lease_and_heartbeat,
    an_expired_lease_is_reclaimed_and_counted,
    attempts_are_bounded,
    release_requeues_without_counting,
    one_running_job_per_pr,
    concurrent_claimers_take_each_job_once,
    migrations_are_idempotent,
    rounds_and_lens_runs_are_recorded,
    the_days_cost_is_summed_per_installation_and_a_job_waits,
    a_closed_store_answers_with_errors,
    reply_jobs_are_superseded_by_nothing_and_join_only_a_queued_reply_job,
    learnings_are_kept_once_per_reply_listed_and_forgotten,
    outcomes_are_settled_once_and_counted_per_lens,
    stats_prints_what_the_store_kept,
);

async fn on_sqlite<F, Fut>(body: F)
where
    F: FnOnce(TestDb) -> Fut,
    Fut: Future<Output = ()>,
{
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("reviewbot.db").display());
    let store = Store::connect(&url).await.expect("open SQLite");
    body(TestDb { url, store }).await;
}

/// The server's URL, or `None` (said on stderr) outside CI; under CI a missing URL fails.
pub(crate) fn postgres_url() -> Option<String> {
    match std::env::var("REVIEWBOT_TEST_POSTGRES_URL") {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => {
            panic!(
                "REVIEWBOT_TEST_POSTGRES_URL is unset under CI: the PostgreSQL store tests must run"
            )
        }
        _ => {
            eprintln!("skipped: REVIEWBOT_TEST_POSTGRES_URL is unset (the PostgreSQL store tests)");
            None
        }
    }
}

async fn on_postgres<F, Fut>(body: F)
where
    F: FnOnce(TestDb) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some(server) = postgres_url() else {
        return;
    };
    static RUN: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let name = format!(
        "reviewbot_store_{}_{}_{nanos}",
        std::process::id(),
        RUN.fetch_add(1, Ordering::Relaxed)
    );
    let mut admin = sqlx::PgConnection::connect(&server)
        .await
        .expect("connect to REVIEWBOT_TEST_POSTGRES_URL");
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut admin)
        .await
        .unwrap();
    let url = with_database(&server, &name);
    let store = Store::connect(&url).await.expect("open PostgreSQL");
    // On a task of its own, so a failed assertion still drops the database.
    let outcome = tokio::spawn(body(TestDb { url, store })).await;
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
    if let Err(e) = outcome {
        std::panic::resume_unwind(e.into_panic());
    }
}

/// `url` with its database replaced by `name`.
pub(crate) fn with_database(url: &str, name: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a postgres:// URL");
    let (base, query) = match rest.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (rest, String::new()),
    };
    let authority = base.split('/').next().unwrap();
    format!("{scheme}://{authority}/{name}{query}")
}

fn repo() -> RepoName {
    RepoName::parse("octo/widgets").unwrap()
}

fn sha(c: char) -> HeadSha {
    HeadSha::parse(&c.to_string().repeat(40)).unwrap()
}

fn request(pr: u64, head: char, force: bool) -> ReviewRequest {
    ReviewRequest {
        repo: repo(),
        pr: PrNumber(pr),
        head: Some(sha(head)),
        installation: Some(InstallationId(7)),
        reason: if force {
            Reason::Labeled {
                label: "reviewbot".into(),
            }
        } else {
            Reason::Synchronize
        },
        force,
        post: true,
        lenses: Vec::new(),
        ask: None,
        fail_on: None,
    }
}

fn delivery(id: &str) -> NewDelivery {
    NewDelivery {
        id: DeliveryId::parse(id).unwrap(),
        event: "pull_request".into(),
        action: Some("synchronize".into()),
    }
}

/// A delivery of its own for `req`.
async fn enqueue(store: &Store, req: &ReviewRequest) -> Accepted {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let id = format!("d-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    store
        .accept_delivery(&delivery(&id), Some(req))
        .await
        .unwrap()
}

fn enqueued(accepted: &Accepted) -> JobId {
    match accepted {
        Accepted::Enqueued { job, .. } => *job,
        other => panic!("expected a new job, got {other:?}"),
    }
}

async fn state(store: &Store, job: JobId) -> JobState {
    store.job(job).await.unwrap().expect("the job").state
}

async fn count(store: &Store, wanted: JobState) -> i64 {
    let counts = store.jobs_by_state().await.unwrap();
    assert_eq!(counts.len(), JobState::ALL.len(), "every state listed");
    counts.into_iter().find(|(s, _)| *s == wanted).unwrap().1
}

async fn deliveries_are_idempotent(db: TestDb) {
    let store = db.store;
    let req = request(1, 'a', false);
    let first = store
        .accept_delivery(&delivery("dup-1"), Some(&req))
        .await
        .unwrap();
    let job = enqueued(&first);
    for _ in 0..2 {
        let again = store
            .accept_delivery(&delivery("dup-1"), Some(&req))
            .await
            .unwrap();
        assert_eq!(again, Accepted::Duplicate);
    }
    assert_eq!(store.delivery_count().await.unwrap(), 1);
    assert_eq!(count(&store, JobState::Queued).await, 1);
    let stored = store.job(job).await.unwrap().unwrap();
    assert_eq!(stored.request, req);
    assert_eq!(stored.delivery.unwrap().as_str(), "dup-1");

    // A delivery that asks for nothing is stored once too.
    let plain = store.accept_delivery(&delivery("ping-1"), None).await;
    assert_eq!(plain.unwrap(), Accepted::Stored);
    let again = store.accept_delivery(&delivery("ping-1"), None).await;
    assert_eq!(again.unwrap(), Accepted::Duplicate);

    // The same delivery arriving eight times at once: one is new.
    let other = request(2, 'b', false);
    let racers: Vec<_> = (0..8)
        .map(|_| {
            let (store, other) = (store.clone(), other.clone());
            tokio::spawn(async move {
                store
                    .accept_delivery(&delivery("dup-2"), Some(&other))
                    .await
                    .unwrap()
            })
        })
        .collect();
    let mut fresh = 0;
    for racer in racers {
        if racer.await.unwrap() != Accepted::Duplicate {
            fresh += 1;
        }
    }
    assert_eq!(fresh, 1);
    assert_eq!(store.delivery_count().await.unwrap(), 3);
    assert_eq!(count(&store, JobState::Queued).await, 2);
}

async fn coalescing_and_supersede(db: TestDb) {
    let store = db.store.clone();
    let j1 = enqueued(&enqueue(&store, &request(1, 'a', false)).await);
    // The same head again: that job covers it.
    let again = enqueue(&store, &request(1, 'a', false)).await;
    assert_eq!(again, Accepted::Coalesced { into: j1 });
    // Forced: a job of its own, and the same head supersedes nothing.
    let forced = enqueue(&store, &request(1, 'a', true)).await;
    let j2 = enqueued(&forced);
    assert_eq!(
        forced,
        Accepted::Enqueued {
            job: j2,
            superseded: vec![]
        }
    );
    // A new head wins over every queued job of the older one.
    let newer = enqueue(&store, &request(1, 'b', false)).await;
    let j3 = enqueued(&newer);
    assert_eq!(
        newer,
        Accepted::Enqueued {
            job: j3,
            superseded: vec![j1, j2]
        }
    );
    assert_eq!(state(&store, j1).await, JobState::Superseded);
    assert_eq!(
        store.job(j1).await.unwrap().unwrap().superseded_by,
        Some(j3)
    );
    assert!(store.is_superseded(j1).await.unwrap());
    assert!(!store.is_superseded(j3).await.unwrap());
    // Another PR is untouched.
    let j4 = enqueued(&enqueue(&store, &request(2, 'a', false)).await);
    assert_eq!(state(&store, j3).await, JobState::Queued);
    assert_eq!(count(&store, JobState::Superseded).await, 2);

    // A running job of an older head is flagged, not stopped; given back, it is superseded.
    let running = store.claim("w1", LONG).await.unwrap().unwrap();
    assert_eq!(running.id, j3);
    let coalesced = enqueue(&store, &request(1, 'b', false)).await;
    assert_eq!(
        coalesced,
        Accepted::Coalesced { into: j3 },
        "running covers it"
    );
    let j5 = enqueued(&enqueue(&store, &request(1, 'c', false)).await);
    assert_eq!(state(&store, j3).await, JobState::Running);
    assert!(store.is_superseded(j3).await.unwrap());
    assert!(store.release(&running, "w1").await.unwrap());
    assert_eq!(state(&store, j3).await, JobState::Superseded);
    // The newest head runs; the old head asked again is a new job, not the superseded one.
    let next = store.claim("w1", LONG).await.unwrap().unwrap();
    assert_eq!(next.id, j4, "oldest first: PR 2's job");
    let newest = store.claim("w1", LONG).await.unwrap().unwrap();
    assert_eq!(newest.id, j5);
    assert_eq!(newest.request.head, Some(sha('c')));
    assert!(matches!(
        enqueue(&store, &request(1, 'b', false)).await,
        Accepted::Enqueued { .. }
    ));
    assert!(matches!(
        store.is_superseded(JobId(999_999)).await,
        Err(StoreError::UnknownJob(_))
    ));

    // Eight deliveries of one head at once, on two replicas: one job, the rest coalesced.
    let replica = db.reconnect().await;
    let racers: Vec<_> = (0..8)
        .map(|n| {
            let store = if n % 2 == 0 {
                store.clone()
            } else {
                replica.clone()
            };
            tokio::spawn(async move { enqueue(&store, &request(9, 'a', false)).await })
        })
        .collect();
    let mut jobs = HashSet::new();
    let mut coalesced = 0;
    for racer in racers {
        let accepted = racer.await.unwrap();
        jobs.insert(accepted.job().unwrap());
        coalesced += usize::from(matches!(accepted, Accepted::Coalesced { .. }));
    }
    assert_eq!((jobs.len(), coalesced), (1, 7));
}

async fn claim_lease_and_heartbeat(db: TestDb) {
    let store = db.store;
    assert!(store.claim("w1", LONG).await.unwrap().is_none(), "empty");
    let req = request(1, 'a', false);
    let id = enqueued(&enqueue(&store, &req).await);
    let job = store.claim("w1", LONG).await.unwrap().unwrap();
    assert_eq!(job.id, id);
    assert_eq!(job.request, req);
    assert_eq!(job.attempts, 1);
    assert!(job.delivery.is_some());
    assert_eq!(state(&store, id).await, JobState::Running);
    assert!(store.claim("w2", LONG).await.unwrap().is_none(), "taken");

    assert!(store.heartbeat(&job, "w1", LONG).await.unwrap());
    assert!(!store.heartbeat(&job, "w2", LONG).await.unwrap());
    assert!(!store.complete(&job, "w2", "posted").await.unwrap());
    assert_eq!(state(&store, id).await, JobState::Running);

    // A heartbeat sets the lease: one that ran out is still its holder's to renew…
    assert!(store.heartbeat(&job, "w1", EXPIRED).await.unwrap());
    tick().await;
    assert!(store.heartbeat(&job, "w1", LONG).await.unwrap());
    assert!(store.claim("w2", LONG).await.unwrap().is_none(), "renewed");
    // …until another worker takes the job over.
    assert!(store.heartbeat(&job, "w1", EXPIRED).await.unwrap());
    tick().await;
    let taken = store.claim("w2", LONG).await.unwrap().unwrap();
    assert_eq!((taken.id, taken.attempts), (id, 2));
    assert!(
        !store.heartbeat(&job, "w1", LONG).await.unwrap(),
        "taken over"
    );
    assert!(!store.complete(&job, "w1", "posted").await.unwrap());

    assert!(store.complete(&taken, "w2", "posted").await.unwrap());
    let done = store.job(id).await.unwrap().unwrap();
    assert_eq!(done.state, JobState::Done);
    assert_eq!(done.outcome.as_deref(), Some("posted"));
    assert_eq!(done.lease_owner, None);
    assert!(!store.heartbeat(&taken, "w2", LONG).await.unwrap(), "done");
    assert!(!store.complete(&taken, "w2", "again").await.unwrap());
    assert!(store.claim("w1", LONG).await.unwrap().is_none());
}

async fn an_expired_lease_is_reclaimed_and_counted(db: TestDb) {
    let store = db.store;
    let id = enqueued(&enqueue(&store, &request(1, 'a', false)).await);
    let dead = store.claim("w1", EXPIRED).await.unwrap().unwrap();
    tick().await;
    let taken = store.claim("w2", LONG).await.unwrap().unwrap();
    assert_eq!(taken.id, id);
    assert_eq!(taken.attempts, 2, "the dead worker's attempt counts");
    assert_eq!(
        store.job(id).await.unwrap().unwrap().lease_owner.as_deref(),
        Some("w2")
    );

    // The dead worker's late writes do nothing.
    assert!(!store.heartbeat(&dead, "w1", LONG).await.unwrap());
    assert!(!store.complete(&dead, "w1", "posted").await.unwrap());
    let late = store.fail(&dead, "w1", "late", 3, Duration::ZERO).await;
    assert_eq!(late.unwrap(), None);
    assert!(!store.release(&dead, "w1").await.unwrap());
    assert_eq!(state(&store, id).await, JobState::Running);

    // Even a worker of the same name, restarted, cannot write with its old claim.
    assert!(store.release(&taken, "w2").await.unwrap());
    let old = store.claim("w2", EXPIRED).await.unwrap().unwrap();
    tick().await;
    let new = store.claim("w2", LONG).await.unwrap().unwrap();
    assert_eq!(new.id, id);
    assert!(!store.complete(&old, "w2", "stale").await.unwrap());
    assert!(store.complete(&new, "w2", "posted").await.unwrap());
    let done = store.job(id).await.unwrap().unwrap();
    assert_eq!(done.outcome.as_deref(), Some("posted"));
    assert_eq!(done.attempts, 3);
}

async fn attempts_are_bounded(db: TestDb) {
    let store = db.store.with_max_attempts(3);
    let id = enqueued(&enqueue(&store, &request(1, 'a', false)).await);
    for attempt in 1..=3u32 {
        let job = store.claim("w1", LONG).await.unwrap().unwrap();
        assert_eq!((job.id, job.attempts), (id, attempt));
        let error = format!("boom {attempt}");
        let after = store.fail(&job, "w1", &error, 3, Duration::ZERO).await;
        let expected = if attempt < 3 {
            JobState::Queued
        } else {
            JobState::Failed
        };
        assert_eq!(after.unwrap(), Some(expected));
    }
    let failed = store.job(id).await.unwrap().unwrap();
    assert_eq!(failed.state, JobState::Failed);
    assert_eq!(failed.error.as_deref(), Some("boom 3"));
    assert!(store.claim("w1", LONG).await.unwrap().is_none());

    // A retry waits for its delay.
    let later = enqueued(&enqueue(&store, &request(2, 'a', false)).await);
    let job = store.claim("w1", LONG).await.unwrap().unwrap();
    let after = store.fail(&job, "w1", "flaky", 3, LONG).await;
    assert_eq!(after.unwrap(), Some(JobState::Queued));
    assert!(store.claim("w1", LONG).await.unwrap().is_none(), "not due");
    assert_eq!(state(&store, later).await, JobState::Queued);

    // A job whose workers keep dying fails after the last attempt.
    let store = store.with_max_attempts(2);
    let dying = enqueued(&enqueue(&store, &request(3, 'a', false)).await);
    for attempt in 1..=2 {
        let job = store.claim("w1", EXPIRED).await.unwrap().unwrap();
        assert_eq!((job.id, job.attempts), (dying, attempt));
        tick().await;
    }
    assert!(store.claim("w1", LONG).await.unwrap().is_none());
    let failed = store.job(dying).await.unwrap().unwrap();
    assert_eq!(failed.state, JobState::Failed);
    assert!(failed.error.unwrap().contains("lease expired"));
    assert_eq!(count(&store, JobState::Failed).await, 2);
}

async fn release_requeues_without_counting(db: TestDb) {
    let store = db.store;
    let id = enqueued(&enqueue(&store, &request(1, 'a', false)).await);
    let job = store.claim("w1", LONG).await.unwrap().unwrap();
    assert!(!store.release(&job, "w2").await.unwrap(), "not w2's");
    assert!(store.release(&job, "w1").await.unwrap());
    let queued = store.job(id).await.unwrap().unwrap();
    assert_eq!((queued.state, queued.attempts), (JobState::Queued, 0));
    assert_eq!(queued.lease_owner, None);
    let again = store.claim("w2", LONG).await.unwrap().unwrap();
    assert_eq!((again.id, again.attempts), (id, 1), "at once, not counted");
    assert!(!store.release(&job, "w1").await.unwrap(), "an old claim");
    assert!(store.complete(&again, "w2", "posted").await.unwrap());
}

async fn one_running_job_per_pr(db: TestDb) {
    let store = db.store;
    let j1 = enqueued(&enqueue(&store, &request(1, 'a', true)).await);
    let j2 = enqueued(&enqueue(&store, &request(1, 'a', true)).await);
    let j3 = enqueued(&enqueue(&store, &request(2, 'a', false)).await);
    let first = store.claim("w1", LONG).await.unwrap().unwrap();
    assert_eq!(first.id, j1);
    let second = store.claim("w2", LONG).await.unwrap().unwrap();
    assert_eq!(second.id, j3, "PR 1's second job waits");
    assert!(store.claim("w3", LONG).await.unwrap().is_none());
    assert!(store.complete(&first, "w1", "posted").await.unwrap());
    let third = store.claim("w3", LONG).await.unwrap().unwrap();
    assert_eq!(third.id, j2);

    // A dead worker's job still holds its PR until it is taken over.
    let j4 = enqueued(&enqueue(&store, &request(2, 'a', true)).await);
    let other = enqueued(&enqueue(&store, &request(3, 'a', false)).await);
    assert!(store.complete(&second, "w2", "posted").await.unwrap());
    let dying = store.claim("w2", EXPIRED).await.unwrap().unwrap();
    assert_eq!(dying.id, j4);
    tick().await;
    let next = store.claim("w4", LONG).await.unwrap().unwrap();
    assert_eq!(
        next.id, j4,
        "the expired one first, not a second job of PR 2"
    );
    let last = store.claim("w5", LONG).await.unwrap().unwrap();
    assert_eq!(last.id, other);
    assert_eq!(count(&store, JobState::Running).await, 3);
}

async fn concurrent_claimers_take_each_job_once(db: TestDb) {
    const PRS: u64 = 12;
    const PER_PR: usize = 4;
    let total = usize::try_from(PRS).unwrap() * PER_PR;
    let store = db.store.clone();
    // A second pool on the same database: another replica (or another process on the file).
    let replica = db.reconnect().await;
    let mut ids = HashSet::new();
    for _ in 0..PER_PR {
        for pr in 1..=PRS {
            ids.insert(enqueued(&enqueue(&store, &request(pr, 'a', true)).await));
        }
    }
    let claimed = Arc::new(Mutex::new(HashMap::<JobId, usize>::new()));
    let running = Arc::new(Mutex::new(HashSet::<PrNumber>::new()));
    let deadline = Instant::now() + Duration::from_secs(90);
    let workers: Vec<_> = (0..16)
        .map(|n| {
            // Eight tasks on each pool.
            let store = if n % 2 == 0 {
                store.clone()
            } else {
                replica.clone()
            };
            let (claimed, running) = (claimed.clone(), running.clone());
            tokio::spawn(async move {
                let worker = format!("w{n}");
                loop {
                    assert!(Instant::now() < deadline, "the jobs did not drain");
                    if claimed.lock().unwrap().len() == total {
                        return;
                    }
                    let Some(job) = store.claim(&worker, LONG).await.unwrap() else {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        continue;
                    };
                    *claimed.lock().unwrap().entry(job.id).or_default() += 1;
                    let fresh = running.lock().unwrap().insert(job.request.pr);
                    assert!(fresh, "two running jobs of {:?}", job.request.pr);
                    tokio::task::yield_now().await;
                    running.lock().unwrap().remove(&job.request.pr);
                    assert!(store.complete(&job, &worker, "posted").await.unwrap());
                }
            })
        })
        .collect();
    for worker in workers {
        worker.await.unwrap();
    }
    let claimed = claimed.lock().unwrap().clone();
    assert_eq!(claimed.keys().copied().collect::<HashSet<_>>(), ids);
    assert!(claimed.values().all(|n| *n == 1), "a job claimed twice");
    assert_eq!(
        count(&store, JobState::Done).await,
        i64::try_from(total).unwrap()
    );
}

async fn migrations_are_idempotent(db: TestDb) {
    let id = enqueued(&enqueue(&db.store, &request(1, 'a', false)).await);
    db.store.close().await;
    // Two replicas starting at once on a migrated database, then one more.
    let (a, b) = tokio::join!(Store::connect(&db.url), Store::connect(&db.url));
    let (a, b) = (a.unwrap(), b.unwrap());
    let c = db.reconnect().await;
    for store in [&a, &b, &c] {
        store.ping().await.unwrap();
        assert_eq!(state(store, id).await, JobState::Queued);
        assert_eq!(store.delivery_count().await.unwrap(), 1);
    }
}

async fn rounds_and_lens_runs_are_recorded(db: TestDb) {
    let store = db.store;
    let id = enqueued(&enqueue(&store, &request(4, 'a', false)).await);
    let round = RoundRecord {
        job: id,
        repo: repo(),
        pr: PrNumber(4),
        head: Some(sha('a')),
        round: Some(2),
        posted: true,
        blocking: 1,
        advisory: 3,
        review_id: Some(80_000_000_001),
        skipped: None,
    };
    let skipped = RoundRecord {
        round: None,
        posted: false,
        blocking: 0,
        advisory: 0,
        review_id: None,
        skipped: Some("superseded".into()),
        ..round.clone()
    };
    store.record_round(&round).await.unwrap();
    store.record_round(&skipped).await.unwrap();
    assert_eq!(
        store.rounds_for(id).await.unwrap(),
        vec![round.clone(), skipped.clone()]
    );

    let api = LensRunRecord {
        job: id,
        round: Some(2),
        lens: LensName::new("claude"),
        requested_backend: "claude-cli".into(),
        actual_backend: "anthropic".into(),
        auth_class: "api".into(),
        model: Some("claude-sonnet-4-5".into()),
        fallback_source: Some("claude-cli".into()),
        status: "ok".into(),
        error: None,
        latency_ms: 12_345,
        input_tokens: Some(20_000),
        output_tokens: Some(1_500),
        cost_usd: Some(0.0825),
        installation: Some(InstallationId(7)),
    };
    let failed = LensRunRecord {
        lens: LensName::new("builtin"),
        requested_backend: "builtin".into(),
        actual_backend: "builtin".into(),
        auth_class: "none".into(),
        model: None,
        fallback_source: None,
        status: "failed".into(),
        error: Some("timed out after 300s".into()),
        input_tokens: None,
        output_tokens: None,
        cost_usd: None,
        ..api.clone()
    };
    store.record_lens_run(&api).await.unwrap();
    store.record_lens_run(&failed).await.unwrap();
    assert_eq!(
        store.lens_runs_for(id).await.unwrap(),
        vec![api.clone(), failed.clone()]
    );

    // By PR: every job of the PR, no other PR's.
    let later = enqueued(&enqueue(&store, &request(4, 'b', false)).await);
    let elsewhere = enqueued(&enqueue(&store, &request(5, 'a', false)).await);
    let third = LensRunRecord {
        job: later,
        round: Some(3),
        ..api.clone()
    };
    let unrelated = LensRunRecord {
        job: elsewhere,
        ..api.clone()
    };
    store.record_lens_run(&third).await.unwrap();
    store.record_lens_run(&unrelated).await.unwrap();
    let next_round = RoundRecord {
        job: later,
        head: Some(sha('b')),
        round: Some(3),
        ..round.clone()
    };
    store.record_round(&next_round).await.unwrap();
    store
        .record_round(&RoundRecord {
            job: elsewhere,
            pr: PrNumber(5),
            ..round.clone()
        })
        .await
        .unwrap();
    let pr4 = PrNumber(4);
    assert_eq!(
        store.rounds_for_pr(&repo(), pr4).await.unwrap(),
        vec![round, skipped, next_round]
    );
    assert_eq!(
        store.lens_runs_for_pr(&repo(), pr4).await.unwrap(),
        vec![api, failed, third]
    );
    let jobs = store.jobs_for_pr(&repo(), pr4).await.unwrap();
    let ids: Vec<JobId> = jobs.iter().map(|j| j.id).collect();
    assert_eq!(ids, vec![id, later]);
    assert_eq!(jobs[0].state, JobState::Superseded);
    assert!(store.lens_runs_for(JobId(9_999)).await.unwrap().is_empty());
}

async fn the_days_cost_is_summed_per_installation_and_a_job_waits(db: TestDb) {
    let store = db.store;
    let id = enqueued(&enqueue(&store, &request(6, 'a', false)).await);
    let run = |cost_usd, installation: Option<u64>| priced_run(id, cost_usd, installation);
    let since = now_ms() - 1;
    for (cost, installation) in [
        (Some(0.5), Some(7)),
        (Some(0.25), Some(7)),
        (None, Some(7)),
        (Some(9.0), Some(8)),
        (Some(3.0), None),
    ] {
        store
            .record_lens_run(&run(cost, installation))
            .await
            .unwrap();
    }
    assert_eq!(
        store
            .spent_since(InstallationId(7), since)
            .await
            .unwrap()
            .usd,
        0.75
    );
    assert_eq!(
        store
            .spent_since(InstallationId(8), since)
            .await
            .unwrap()
            .usd,
        9.0
    );
    assert_eq!(
        store
            .spent_since(InstallationId(9), since)
            .await
            .unwrap()
            .usd,
        0.0
    );
    // The one run of installation 7 with no cost spent 10 + 2 tokens: the token budget's.
    assert_eq!(
        store
            .spent_since(InstallationId(7), since)
            .await
            .unwrap()
            .unpriced_tokens,
        12
    );
    assert_eq!(
        store
            .spent_since(InstallationId(8), since)
            .await
            .unwrap()
            .unpriced_tokens,
        0
    );
    // Runs recorded before the day began do not count.
    let tomorrow = since + 86_400_000;
    assert_eq!(
        store
            .spent_since(InstallationId(7), tomorrow)
            .await
            .unwrap()
            .usd,
        0.0
    );
    assert_eq!(
        store.lens_runs_for(id).await.unwrap()[3].installation,
        Some(InstallationId(8))
    );

    // Over budget, the job waits: queued until tomorrow, the attempt not counted.
    let job = store.claim("w1", LONG).await.unwrap().unwrap();
    assert!(
        !store.defer(&job, "w2", tomorrow, "budget").await.unwrap(),
        "not w2's"
    );
    assert!(store.defer(&job, "w1", tomorrow, "budget").await.unwrap());
    let waiting = store.job(id).await.unwrap().unwrap();
    assert_eq!((waiting.state, waiting.attempts), (JobState::Queued, 0));
    assert_eq!(waiting.outcome.as_deref(), Some("budget"));
    assert_eq!(waiting.lease_owner, None);
    assert!(
        store.claim("w1", LONG).await.unwrap().is_none(),
        "not before tomorrow"
    );
}

/// A claude lens run of `job`'s round 1 that cost `cost_usd` for `installation`.
pub(crate) fn priced_run(
    job: JobId,
    cost_usd: Option<f64>,
    installation: Option<u64>,
) -> LensRunRecord {
    LensRunRecord {
        job,
        round: Some(1),
        lens: LensName::new("claude"),
        requested_backend: "claude-cli".into(),
        actual_backend: "claude-cli".into(),
        auth_class: "subscription".into(),
        model: None,
        fallback_source: None,
        status: "ok".into(),
        error: None,
        latency_ms: 1,
        input_tokens: Some(10),
        output_tokens: Some(2),
        cost_usd,
        installation: installation.map(InstallationId),
    }
}

fn now_ms() -> i64 {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    i64::try_from(since_epoch.as_millis()).unwrap()
}

async fn a_closed_store_answers_with_errors(db: TestDb) {
    let store = db.store.clone();
    let id = enqueued(&enqueue(&store, &request(1, 'a', false)).await);
    store.close().await;
    let answers = async {
        let accepted = store.accept_delivery(&delivery("late-1"), None).await;
        (accepted, store.claim("w1", LONG).await, store.ping().await)
    };
    let (accepted, claimed, ping) = tokio::time::timeout(Duration::from_secs(20), answers)
        .await
        .expect("answers, not a hang");
    assert!(accepted.is_err() && claimed.is_err() && ping.is_err());
    // Nothing was lost: the job is there on the next start.
    let again = db.reconnect().await;
    assert_eq!(state(&again, id).await, JobState::Queued);
    assert_eq!(again.delivery_count().await.unwrap(), 1);
}

#[tokio::test]
async fn a_file_database_is_created_on_first_start_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fresh").join("reviewbot.db");
    std::fs::create_dir(path.parent().unwrap()).unwrap();
    assert!(!path.exists());
    let store = Store::connect(&format!("sqlite://{}", path.display()))
        .await
        .unwrap();
    assert_eq!(store.backend(), "sqlite");
    assert!(path.exists());
    store
        .accept_delivery(&delivery("wal-1"), None)
        .await
        .unwrap();
    assert!(
        dir.path().join("fresh").join("reviewbot.db-wal").exists(),
        "journal mode is WAL"
    );
    store.ping().await.unwrap();
}

/// The store holds what reviewers and repositories said (learnings, replies) and every lens run:
/// a file readable by other users of the machine would hand them all of it. SQLite gives its
/// journal files the database file's mode, so a private database keeps them private too.
#[tokio::test]
async fn a_new_sqlite_store_and_its_journal_are_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reviewbot.db");
    let store = Store::connect(&format!("sqlite://{}?mode=rwc", path.display()))
        .await
        .unwrap();
    store
        .accept_delivery(&delivery("mode-1"), None)
        .await
        .unwrap();
    for name in ["reviewbot.db", "reviewbot.db-wal", "reviewbot.db-shm"] {
        let meta = std::fs::metadata(dir.path().join(name)).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{name}");
    }
    store.close().await;

    // A store the operator made already keeps the mode the operator gave it.
    let shared = dir.path().join("shared.db");
    std::fs::write(&shared, "").unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o640)).unwrap();
    let store = Store::connect(&format!("sqlite://{}", shared.display()))
        .await
        .unwrap();
    store.ping().await.unwrap();
    let meta = std::fs::metadata(&shared).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o640);
    store.close().await;
}

#[tokio::test]
async fn a_bad_url_is_a_clear_error_without_its_password() {
    let cases = [
        ("mysql://bot:hunter2@db/x", "mysql://bot:***@db/x"),
        (
            "postgres://bot:hunter2@127.0.0.1:1/reviewbot",
            "postgres://bot:***@127.0.0.1:1/reviewbot",
        ),
        (
            "sqlite:///nonexistent-dir/reviewbot.db",
            "sqlite:///nonexistent-dir/reviewbot.db",
        ),
    ];
    for (url, shown) in cases {
        let error = Store::connect(url).await.unwrap_err().to_string();
        assert!(error.contains(shown), "{error}");
        assert!(!error.contains("hunter2"), "{error}");
        if url.contains(":1/") {
            assert!(error.contains("refused"), "says why: {error}");
        }
    }
}

/// A reply in a thread of PR 1, by comment `id`.
fn reply_request(id: u64) -> ReviewRequest {
    ReviewRequest {
        head: None,
        reason: Reason::Reply {
            comment: id,
            user: "alice".into(),
        },
        ..request(1, 'a', false)
    }
}

async fn reply_jobs_are_superseded_by_nothing_and_join_only_a_queued_reply_job(db: TestDb) {
    let store = db.store;
    let reply = enqueued(&enqueue(&store, &reply_request(10)).await);
    // A second reply joins the queued reply job: it answers every pending reply of the PR.
    let second = enqueue(&store, &reply_request(11)).await;
    assert!(
        matches!(second, Accepted::Coalesced { into } if into == reply),
        "{second:?}"
    );
    // A command (no head either) does not join it.
    let command = ReviewRequest {
        head: None,
        reason: Reason::Command {
            user: "alice".into(),
        },
        ..request(1, 'a', false)
    };
    let command = enqueued(&enqueue(&store, &command).await);
    assert!(reply != command);
    // A push supersedes the command's round, never a reply job.
    let push = enqueue(&store, &request(1, 'b', false)).await;
    let Accepted::Enqueued { superseded, .. } = push else {
        panic!("{push:?}");
    };
    assert_eq!(superseded, vec![command]);
    assert_eq!(state(&store, reply).await, JobState::Queued);
    // Once the reply job runs, a new reply is a job of its own (the running one may have read
    // its threads already).
    let claimed = store.claim("w1", LONG).await.unwrap();
    assert_eq!(claimed.map(|j| j.id), Some(reply));
    let third = enqueued(&enqueue(&store, &reply_request(12)).await);
    assert!(third != reply);
}

async fn learnings_are_kept_once_per_reply_listed_and_forgotten(db: TestDb) {
    use reviewbot::store::NewLearning;
    let store = db.store;
    let repo = RepoName::parse("octo/app").unwrap();
    let learning = NewLearning {
        repo: repo.clone(),
        learning: reviewbot::learning::Learning {
            path: "src/a.rs".into(),
            title: "Unchecked index".into(),
            reply: "Intended.".into(),
            author: "maintainer".into(),
        },
        fingerprint: "0123456789abcdef".into(),
        source: 42,
    };
    assert!(store.add_learning(&learning).await.unwrap());
    assert!(
        !store.add_learning(&learning).await.unwrap(),
        "the same reply again"
    );
    let other = RepoName::parse("octo/other").unwrap();
    assert!(
        store
            .add_learning(&NewLearning {
                repo: other.clone(),
                ..learning.clone()
            })
            .await
            .unwrap()
    );
    let kept = store.learnings(&repo).await.unwrap();
    assert_eq!(kept.len(), 1);
    assert_eq!(
        (
            kept[0].learning.title.as_str(),
            kept[0].learning.reply.as_str()
        ),
        ("Unchecked index", "Intended.")
    );
    assert!(store.forget_learning(kept[0].id).await.unwrap());
    assert!(!store.forget_learning(kept[0].id).await.unwrap());
    assert!(store.learnings(&repo).await.unwrap().is_empty());
    assert_eq!(
        store.learnings(&other).await.unwrap().len(),
        1,
        "per repository"
    );
}

/// A finding posted twice is one; its first outcome stands; a closed PR settles what still
/// holds once, however often the event comes, with the reactions of its comments; per lens,
/// a finding two lenses raised counts for each.
async fn outcomes_are_settled_once_and_counted_per_lens(db: TestDb) {
    use reviewbot::ids::{LensName, PrNumber};
    use reviewbot::store::{Outcome, PostedFinding};
    let store = db.store;
    let repo = RepoName::parse("octo/app").unwrap();
    let pr = PrNumber(7);
    let posted = |fingerprint: &str, lenses: &[&str]| PostedFinding {
        repo: repo.clone(),
        pr,
        fingerprint: fingerprint.to_owned(),
        lenses: lenses.iter().map(|l| LensName::new(*l)).collect(),
        round: 1,
        severity: reviewbot::review::Severity::Blocking,
        verified: None,
    };
    let findings = [
        posted("f-both", &["claude", "codex"]),
        posted("f-claude", &["claude"]),
        posted("f-codex", &["codex"]),
        posted("f-open", &["claude"]),
    ];
    assert_eq!(store.record_posted(&findings).await.unwrap(), 5);
    assert_eq!(
        store.record_posted(&findings[..1]).await.unwrap(),
        0,
        "posted again"
    );

    assert!(
        store
            .settle(&repo, pr, "f-both", Outcome::Addressed)
            .await
            .unwrap()
    );
    assert!(
        store
            .settle(&repo, pr, "f-codex", Outcome::Withdrawn)
            .await
            .unwrap()
    );
    assert!(
        !store
            .settle(&repo, pr, "f-codex", Outcome::Dismissed)
            .await
            .unwrap(),
        "the first outcome stands"
    );
    assert!(
        !store
            .settle(&repo, pr, "never-posted", Outcome::Addressed)
            .await
            .unwrap()
    );

    let reactions = [("f-claude".to_owned(), 0, 2), ("f-open".to_owned(), 3, 0)];
    assert_eq!(
        store
            .settle_closed(&repo, pr, true, &reactions)
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        store
            .settle_closed(&repo, pr, true, &reactions)
            .await
            .unwrap(),
        0
    );

    let stats = store.outcome_stats(Some(&repo), 0).await.unwrap();
    let of = |lens: &str| stats.iter().find(|s| s.lens == lens).unwrap().clone();
    let claude = of("claude");
    assert_eq!(
        (
            claude.posted,
            claude.addressed,
            claude.open_at_merge,
            claude.open
        ),
        (3, 1, 2, 0)
    );
    assert_eq!((claude.thumbs_up, claude.thumbs_down), (3, 2));
    assert_eq!(claude.addressed_rate(), Some(1.0 / 3.0));
    let codex = of("codex");
    assert_eq!((codex.posted, codex.addressed, codex.withdrawn), (2, 1, 1));
    let other = RepoName::parse("octo/other").unwrap();
    assert!(
        store
            .outcome_stats(Some(&other), 0)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.outcome_stats(None, 0).await.unwrap().len(), 2);
    assert!(
        store
            .outcome_stats(None, i64::MAX)
            .await
            .unwrap()
            .is_empty()
    );
}

/// `reviewbot stats` through the binary, on the store a round wrote: per lens and in all, as a
/// table and as JSON; a repository with nothing kept says so; a bad `--repo` is exit 2.
async fn stats_prints_what_the_store_kept(db: TestDb) {
    use reviewbot::ids::{LensName, PrNumber};
    use reviewbot::store::{Outcome, PostedFinding};
    let repo = RepoName::parse("octo/app").unwrap();
    let finding = |fingerprint: &str, lens: &str| PostedFinding {
        repo: repo.clone(),
        pr: PrNumber(3),
        fingerprint: fingerprint.to_owned(),
        lenses: vec![LensName::new(lens)],
        round: 1,
        severity: reviewbot::review::Severity::Advisory,
        verified: None,
    };
    let kept = [
        finding("a", "claude"),
        finding("b", "claude"),
        finding("c", "codex"),
    ];
    db.store.record_posted(&kept).await.unwrap();
    db.store
        .settle(&repo, PrNumber(3), "a", Outcome::Addressed)
        .await
        .unwrap();
    db.store
        .settle(&repo, PrNumber(3), "b", Outcome::Dismissed)
        .await
        .unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_reviewbot"))
            .args(args)
            .env("REVIEWBOT_DATABASE_URL", &db.url)
            .output()
            .unwrap()
    };
    let o = run(&["stats", "--repo", "octo/app", "--json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let lenses = doc["lenses"].as_array().unwrap();
    assert_eq!(lenses[0]["lens"], "claude");
    assert_eq!(
        (
            &lenses[0]["posted"],
            &lenses[0]["addressed"],
            &lenses[0]["dismissed"]
        ),
        (&2.into(), &1.into(), &1.into())
    );
    assert_eq!(lenses[0]["addressed_rate"], 0.5);
    assert_eq!(
        (&lenses[1]["lens"], &lenses[1]["open"]),
        (&"codex".into(), &1.into())
    );
    assert_eq!(doc["all"]["posted"], 3);

    let o = run(&["stats", "--since", "7d"]);
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("every repository, the last 7 days"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("all ") && l.contains(" 3 ")),
        "{text}"
    );
    let o = run(&["stats", "--repo", "octo/none"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "No findings recorded for octo/none, the last 30 days.\n"
    );
    assert_eq!(run(&["stats", "--repo", "nope"]).status.code(), Some(2));
}
