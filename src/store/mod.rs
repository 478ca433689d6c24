//! The durable store: deliveries keyed by `X-GitHub-Delivery`, the job queue (claims with a
//! lease, per-PR coalescing and supersede, one running job a PR) and the `record` stage (rounds
//! and lens runs). SQLite by default, PostgreSQL for several replicas; the same SQL and the same
//! behaviour on both. Times are unix milliseconds computed here, never the database's clock, so
//! replicas' clocks must agree to well within a lease (NTP does).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sqlx::migrate::{MigrateError, Migration, MigrationType, Migrator};
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Connection, Database, Pool, Postgres, SqlSafeStr, Sqlite, Transaction};

use crate::github::model::RepoName;
use crate::ids::{JobId, PrNumber};

/// Runs `$body` with `$pool` bound to whichever pool the store has: the body is compiled once
/// per database, so one text of SQL serves both (`$1` placeholders work on SQLite too).
macro_rules! on_pool {
    ($db:expr, $pool:ident => $body:expr) => {
        match $db {
            $crate::store::Db::Sqlite($pool) => $body,
            $crate::store::Db::Postgres($pool) => $body,
        }
    };
}

mod delivery;
mod learnings;
mod outcomes;
mod queue;
mod record;
mod sqlite_intake;

pub use delivery::{Accepted, NewDelivery};
pub use learnings::{KeptLearning, NewLearning};
pub use outcomes::{LensStats, Outcome, PostedFinding};
pub use queue::{Job, JobRecord, JobState};
pub use record::{LensRunRecord, RoundRecord, Spent};

/// The migrations, one list a database, embedded with `include_str!` rather than sqlx's
/// `migrate!` macro: the macro needs sqlx's proc-macro crates, which build a second copy of
/// sqlx and its TLS stack for the host. Versions, descriptions and text are what `migrate!`
/// would read from the file names, so the checksums of databases already migrated still match.
/// A new migration is one more line in each list.
fn migrator(db: &Db) -> Migrator {
    let files: &[(i64, &'static str, &'static str)] = match db {
        Db::Sqlite(_) => &[
            (
                1,
                "store",
                include_str!("../../migrations/sqlite/0001_store.sql"),
            ),
            (
                2,
                "lens run installation",
                include_str!("../../migrations/sqlite/0002_lens_run_installation.sql"),
            ),
            (
                3,
                "conversations",
                include_str!("../../migrations/sqlite/0003_conversations.sql"),
            ),
            (
                4,
                "outcomes",
                include_str!("../../migrations/sqlite/0004_outcomes.sql"),
            ),
        ],
        Db::Postgres(_) => &[
            (
                1,
                "store",
                include_str!("../../migrations/postgres/0001_store.sql"),
            ),
            (
                2,
                "lens run installation",
                include_str!("../../migrations/postgres/0002_lens_run_installation.sql"),
            ),
            (
                3,
                "conversations",
                include_str!("../../migrations/postgres/0003_conversations.sql"),
            ),
            (
                4,
                "outcomes",
                include_str!("../../migrations/postgres/0004_outcomes.sql"),
            ),
        ],
    };
    Migrator::with_migrations(
        files
            .iter()
            .map(|&(version, description, sql)| {
                Migration::new(
                    version,
                    description.into(),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    false,
                )
            })
            .collect(),
    )
}

/// How long a writer waits for SQLite's write lock before giving up.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a caller waits for a pooled connection (and `connect` for the first one).
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);
/// Deliveries that may wait for SQLite's writer before senders wait too.
const INTAKE_QUEUE: usize = 1024;
/// The default bound on attempts for a job whose workers keep dying (see [`Store::claim`]).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;

/// The store. Cheap to clone: every clone shares one connection pool.
#[derive(Clone)]
pub struct Store {
    db: Db,
    max_attempts: u32,
    /// SQLite only: this process's writers queue here, in order, instead of polling SQLite's
    /// write lock (its busy handler sleeps up to 100 ms a try, which a webhook's latency
    /// cannot afford). Another process on the same file still waits on the busy timeout.
    write_gate: Option<Arc<tokio::sync::Mutex<()>>>,
    /// SQLite only: deliveries go to one writer thread that commits them in batches.
    intake: Option<tokio::sync::mpsc::Sender<sqlite_intake::Waiting>>,
    /// SQLite only: set by [`Store::close`], which stops the writer too.
    closed: Arc<AtomicBool>,
}

#[derive(Clone)]
pub(crate) enum Db {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("backend", &self.backend())
            .field("max_attempts", &self.max_attempts)
            .finish()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("unsupported store URL {url}: expected sqlite://… or postgres://…")]
    Scheme { url: String },
    #[error(
        "unsupported store URL {url}: an in-memory SQLite store cannot be shared; use sqlite://FILE"
    )]
    InMemory { url: String },
    #[error("invalid store URL {url}: {source}")]
    Url { url: String, source: sqlx::Error },
    #[error("cannot open the store at {url}: {source}")]
    Connect { url: String, source: sqlx::Error },
    #[error("cannot open the store at {url}: no answer within {}s", after.as_secs())]
    Timeout { url: String, after: Duration },
    #[error("cannot migrate the store at {url}: {source}")]
    Migrate { url: String, source: MigrateError },
    #[error("cannot start the store's writer: {0}")]
    Writer(std::io::Error),
    #[error("store write failed: {0}")]
    Write(String),
    #[error("store write failed: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("store query failed: {0}")]
    Query(#[from] sqlx::Error),
    #[error("the store holds an unreadable {what}: {reason}")]
    Corrupt { what: String, reason: String },
    #[error("no job {0} in the store")]
    UnknownJob(JobId),
}

impl Store {
    /// Opens (SQLite: creates on first start) the store at `url` and runs its migrations.
    /// `sqlite://reviewbot.db` or `postgres://…`. An in-memory SQLite database is refused: the
    /// delivery writer's own connection could not see it.
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        let shown = crate::credentials::mask_url(url);
        let db = if url.starts_with("sqlite:") {
            Db::Sqlite(connect_sqlite(url, &shown).await?)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Db::Postgres(connect_postgres(url, &shown).await?)
        } else {
            return Err(StoreError::Scheme { url: shown });
        };
        let migrations = migrator(&db);
        let migrated = match &db {
            Db::Sqlite(pool) => migrations.run(pool).await,
            Db::Postgres(pool) => migrations.run(pool).await,
        };
        migrated.map_err(|source| StoreError::Migrate { url: shown, source })?;
        let closed = Arc::new(AtomicBool::new(false));
        let (write_gate, intake) = match &db {
            Db::Sqlite(pool) => {
                let gate = Arc::new(tokio::sync::Mutex::new(()));
                let (intake, queued) = tokio::sync::mpsc::channel(INTAKE_QUEUE);
                let path = pool.connect_options().get_filename().to_owned();
                sqlite_intake::spawn(&path, gate.clone(), closed.clone(), queued)?;
                (Some(gate), Some(intake))
            }
            Db::Postgres(_) => (None, None),
        };
        Ok(Store {
            db,
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            write_gate,
            intake,
            closed,
        })
    }

    /// The bound on attempts [`Store::claim`] applies to a job whose lease expired (its worker
    /// died): on the last one it is marked failed instead of run again. Pass the same number to
    /// [`Store::fail`].
    pub fn with_max_attempts(mut self, max_attempts: u32) -> Store {
        self.max_attempts = max_attempts.max(1);
        self
    }

    /// Held for the length of a write (see `write_gate`); `None` on PostgreSQL.
    pub(crate) async fn write_turn(&self) -> Option<tokio::sync::OwnedMutexGuard<()>> {
        match &self.write_gate {
            Some(gate) => Some(gate.clone().lock_owned().await),
            None => None,
        }
    }

    /// `sqlite` or `postgres`.
    pub fn backend(&self) -> &'static str {
        match self.db {
            Db::Sqlite(_) => "sqlite",
            Db::Postgres(_) => "postgres",
        }
    }

    /// Whether the database answers (for `/healthz`).
    pub async fn ping(&self) -> Result<(), StoreError> {
        on_pool!(&self.db, pool => {
            sqlx::query("SELECT 1").execute(pool).await?;
        });
        Ok(())
    }

    /// Closes every connection; later calls fail.
    pub async fn close(&self) {
        self.closed.store(true, Ordering::Release);
        on_pool!(&self.db, pool => pool.close().await)
    }
}

async fn connect_sqlite(url: &str, shown: &str) -> Result<SqlitePool, StoreError> {
    let options = SqliteConnectOptions::from_str(url)
        .map_err(|source| StoreError::Url {
            url: shown.to_owned(),
            source,
        })?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        // FULL: a delivery answered 2xx survives a power cut, not only a crash; one fsync a
        // batch of deliveries (see `sqlite_intake`).
        .synchronous(SqliteSynchronous::Full)
        .busy_timeout(SQLITE_BUSY_TIMEOUT)
        .foreign_keys(true);
    if url.contains(":memory:") || url.contains("mode=memory") {
        return Err(StoreError::InMemory {
            url: shown.to_owned(),
        });
    }
    create_private(options.get_filename()).map_err(|source| StoreError::Connect {
        url: shown.to_owned(),
        source: sqlx::Error::Io(source),
    })?;
    SqlitePoolOptions::new()
        .max_connections(8)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect_with(options)
        .await
        .map_err(|source| StoreError::Connect {
            url: shown.to_owned(),
            source,
        })
}

/// Creates a new database file readable by its owner only (it holds replies, learnings and
/// every lens run); SQLite gives its `-wal` and `-shm` files the same mode. A file that exists
/// keeps the mode its operator gave it.
fn create_private(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}

async fn connect_postgres(url: &str, shown: &str) -> Result<PgPool, StoreError> {
    let options = PgConnectOptions::from_str(url).map_err(|source| StoreError::Url {
        url: shown.to_owned(),
        source,
    })?;
    // One connection first: a refused or unreachable server says why at once, where a pool
    // retries until its timeout and says only that it timed out.
    let first = tokio::time::timeout(ACQUIRE_TIMEOUT, PgConnection::connect_with(&options))
        .await
        .map_err(|_| StoreError::Timeout {
            url: shown.to_owned(),
            after: ACQUIRE_TIMEOUT,
        })?
        .map_err(|source| StoreError::Connect {
            url: shown.to_owned(),
            source,
        })?;
    // Closing it is a courtesy; the pool opens its own.
    let _ = first.close().await;
    PgPoolOptions::new()
        .max_connections(10)
        .acquire_timeout(ACQUIRE_TIMEOUT)
        .connect_with(options)
        .await
        .map_err(|source| StoreError::Connect {
            url: shown.to_owned(),
            source,
        })
}

/// What differs between the two databases, and nothing else.
pub(crate) trait Dialect {
    type Db: Database;
    /// A transaction that writes. On SQLite it takes the write lock at `BEGIN` (`IMMEDIATE`):
    /// a deferred transaction that upgrades later fails with SQLITE_BUSY at once, whatever the
    /// busy timeout.
    fn begin_write(
        &self,
    ) -> impl Future<Output = Result<Transaction<'static, Self::Db>, sqlx::Error>> + Send;
}

impl Dialect for Pool<Sqlite> {
    type Db = Sqlite;
    fn begin_write(
        &self,
    ) -> impl Future<Output = Result<Transaction<'static, Sqlite>, sqlx::Error>> + Send {
        self.begin_with("BEGIN IMMEDIATE")
    }
}

impl Dialect for Pool<Postgres> {
    type Db = Postgres;
    fn begin_write(
        &self,
    ) -> impl Future<Output = Result<Transaction<'static, Postgres>, sqlx::Error>> + Send {
        self.begin()
    }
}

/// Which rows a listing reads: one job's, or a PR's. Bound as `$1` (job), `$2` (repo), `$3`
/// (pr), NULL where unused, for `($1 IS NULL OR …) AND ($2 IS NULL OR …)`.
#[derive(Clone, Copy)]
pub(crate) enum Scope<'a> {
    Job(JobId),
    Pr(&'a RepoName, PrNumber),
}

impl Scope<'_> {
    pub(crate) fn binds(self) -> (Option<i64>, Option<String>, Option<i64>) {
        match self {
            Scope::Job(job) => (Some(job.0), None, None),
            Scope::Pr(repo, pr) => (None, Some(repo.to_string()), Some(to_i64(pr.0))),
        }
    }
}

/// Now, in unix milliseconds.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// A count or id for a BIGINT column (they never come near `i64::MAX`).
pub(crate) fn to_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

pub(crate) fn to_u64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}
