-- The store: deliveries, the job queue, and the record of rounds and lens runs.
-- PostgreSQL's copy of migrations/sqlite/0001_store.sql: keep the two alike.
-- Times are unix milliseconds computed by the app (the same on SQLite and PostgreSQL).

CREATE TABLE deliveries (
    id          TEXT PRIMARY KEY,          -- X-GitHub-Delivery
    event       TEXT NOT NULL,
    action      TEXT,
    received_at BIGINT NOT NULL,
    outcome     TEXT NOT NULL,             -- stored | enqueued | coalesced
    job_id      BIGINT  -- REFERENCES jobs (id), added below: jobs does not exist yet
);

-- One row a PR that ever had a job: enqueues for one PR lock it, so two deliveries cannot both
-- miss each other's job (coalescing, supersede) on a database with row locks.
CREATE TABLE pulls (
    repo            TEXT NOT NULL,
    pr              BIGINT NOT NULL,
    last_request_at BIGINT NOT NULL,
    PRIMARY KEY (repo, pr)
);

CREATE TABLE jobs (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    delivery_id   TEXT REFERENCES deliveries (id),
    repo          TEXT NOT NULL,
    pr            BIGINT NOT NULL,
    head          TEXT,
    forced        BOOLEAN NOT NULL,
    request       TEXT NOT NULL,           -- the ReviewRequest, JSON
    state         TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'failed', 'superseded')),
    attempts      BIGINT NOT NULL DEFAULT 0,
    claims        BIGINT NOT NULL DEFAULT 0,  -- lease generation: bumps on every claim
    run_after     BIGINT NOT NULL,
    lease_owner   TEXT,
    lease_until   BIGINT,
    superseded_by BIGINT REFERENCES jobs (id),
    outcome       TEXT,
    error         TEXT,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL,
    FOREIGN KEY (repo, pr) REFERENCES pulls (repo, pr)
);

ALTER TABLE deliveries ADD FOREIGN KEY (job_id) REFERENCES jobs (id);

CREATE INDEX jobs_runnable ON jobs (state, run_after, id);
CREATE INDEX jobs_by_pr ON jobs (repo, pr, state);
-- The invariant the claim keeps, enforced: at most one running job a PR.
CREATE UNIQUE INDEX jobs_one_running_per_pr ON jobs (repo, pr) WHERE state = 'running';

CREATE TABLE rounds (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      BIGINT NOT NULL REFERENCES jobs (id),
    repo        TEXT NOT NULL,
    pr          BIGINT NOT NULL,
    head        TEXT,
    round       BIGINT,
    posted      BOOLEAN NOT NULL,
    blocking    BIGINT NOT NULL,
    advisory    BIGINT NOT NULL,
    review_id   BIGINT,
    skipped     TEXT,
    recorded_at BIGINT NOT NULL
);
CREATE INDEX rounds_by_job ON rounds (job_id);

CREATE TABLE lens_runs (
    id                BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id            BIGINT NOT NULL REFERENCES jobs (id),
    round             BIGINT,
    lens              TEXT NOT NULL,
    requested_backend TEXT NOT NULL,
    actual_backend    TEXT NOT NULL,
    auth_class        TEXT NOT NULL,
    model             TEXT,
    fallback_source   TEXT,
    status            TEXT NOT NULL,
    error             TEXT,
    latency_ms        BIGINT NOT NULL,
    input_tokens      BIGINT,
    output_tokens     BIGINT,
    cost_usd          DOUBLE PRECISION,
    recorded_at       BIGINT NOT NULL
);
CREATE INDEX lens_runs_by_job ON lens_runs (job_id);
