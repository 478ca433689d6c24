-- Outcomes: what became of each finding a round posted, one row per lens it is attributed to.
-- PostgreSQL's copy of migrations/sqlite/0004_outcomes.sql: keep the two alike.

CREATE TABLE finding_outcomes (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    repo        TEXT NOT NULL,             -- owner/name, lower-case
    pr          BIGINT NOT NULL,
    fingerprint TEXT NOT NULL,
    lens        TEXT NOT NULL,             -- one of the lenses that raised it
    round       BIGINT NOT NULL,             -- the round that first posted it
    severity    TEXT NOT NULL,             -- blocking | advisory
    verified    TEXT,                      -- the verifier's confirmed | unsure, when checked
    outcome     TEXT,                      -- NULL while it holds; then addressed | withdrawn |
                                           -- disputed | dismissed | open_at_merge | open_at_close
    thumbs_up   BIGINT NOT NULL DEFAULT 0,
    thumbs_down BIGINT NOT NULL DEFAULT 0,
    posted_at   BIGINT NOT NULL,
    settled_at  BIGINT,
    UNIQUE (repo, pr, fingerprint, lens)
);
CREATE INDEX finding_outcomes_by_time ON finding_outcomes (posted_at, repo);
CREATE INDEX finding_outcomes_open ON finding_outcomes (repo, pr) WHERE outcome IS NULL;
