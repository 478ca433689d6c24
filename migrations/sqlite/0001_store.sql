-- The store: deliveries, the job queue, and the record of rounds and lens runs.
-- migrations/postgres/0001_store.sql is the same schema for PostgreSQL: keep the two alike.
-- Times are unix milliseconds computed by the app (the same on SQLite and PostgreSQL).

CREATE TABLE deliveries (
    id          TEXT PRIMARY KEY,          -- X-GitHub-Delivery
    event       TEXT NOT NULL,
    action      TEXT,
    received_at INTEGER NOT NULL,
    outcome     TEXT NOT NULL,             -- stored | enqueued | coalesced
    job_id      INTEGER REFERENCES jobs (id)
);

-- One row a PR that ever had a job: enqueues for one PR lock it, so two deliveries cannot both
-- miss each other's job (coalescing, supersede) on a database with row locks.
CREATE TABLE pulls (
    repo            TEXT NOT NULL,
    pr              INTEGER NOT NULL,
    last_request_at INTEGER NOT NULL,
    PRIMARY KEY (repo, pr)
);

CREATE TABLE jobs (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id   TEXT REFERENCES deliveries (id),
    repo          TEXT NOT NULL,
    pr            INTEGER NOT NULL,
    head          TEXT,
    forced        BOOLEAN NOT NULL,
    request       TEXT NOT NULL,           -- the ReviewRequest, JSON
    state         TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'superseded')),
    attempts      INTEGER NOT NULL DEFAULT 0,
    claims        INTEGER NOT NULL DEFAULT 0,  -- lease generation: bumps on every claim
    run_after     INTEGER NOT NULL,
    lease_owner   TEXT,
    lease_until   INTEGER,
    superseded_by INTEGER REFERENCES jobs (id),
    outcome       TEXT,
    error         TEXT,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    FOREIGN KEY (repo, pr) REFERENCES pulls (repo, pr)
);

CREATE INDEX jobs_runnable ON jobs (state, run_after, id);
CREATE INDEX jobs_by_pr ON jobs (repo, pr, state);
-- The invariant the claim keeps, enforced: at most one running job a PR.
CREATE UNIQUE INDEX jobs_one_running_per_pr ON jobs (repo, pr) WHERE state = 'running';

CREATE TABLE rounds (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id      INTEGER NOT NULL REFERENCES jobs (id),
    repo        TEXT NOT NULL,
    pr          INTEGER NOT NULL,
    head        TEXT,
    round       INTEGER,
    posted      BOOLEAN NOT NULL,
    blocking    INTEGER NOT NULL,
    advisory    INTEGER NOT NULL,
    review_id   INTEGER,
    skipped     TEXT,
    recorded_at INTEGER NOT NULL
);
CREATE INDEX rounds_by_job ON rounds (job_id);

CREATE TABLE lens_runs (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id            INTEGER NOT NULL REFERENCES jobs (id),
    round             INTEGER,
    lens              TEXT NOT NULL,
    requested_backend TEXT NOT NULL,
    actual_backend    TEXT NOT NULL,
    auth_class        TEXT NOT NULL,
    model             TEXT,
    fallback_source   TEXT,
    status            TEXT NOT NULL,
    error             TEXT,
    latency_ms        INTEGER NOT NULL,
    input_tokens      INTEGER,
    output_tokens     INTEGER,
    cost_usd          REAL,
    recorded_at       INTEGER NOT NULL
);
CREATE INDEX lens_runs_by_job ON lens_runs (job_id);
