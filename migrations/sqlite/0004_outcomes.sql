-- Outcomes: what became of each finding a round posted, one row per lens it is attributed to.
-- migrations/postgres/0004_outcomes.sql is the same for PostgreSQL: keep the two alike.

CREATE TABLE finding_outcomes (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    repo        TEXT NOT NULL,             -- owner/name, lower-case
    pr          INTEGER NOT NULL,
    fingerprint TEXT NOT NULL,
    lens        TEXT NOT NULL,             -- one of the lenses that raised it
    round       INTEGER NOT NULL,             -- the round that first posted it
    severity    TEXT NOT NULL,             -- blocking | advisory
    verified    TEXT,                      -- the verifier's confirmed | unsure, when checked
    outcome     TEXT,                      -- NULL while it holds; then addressed | withdrawn |
                                           -- disputed | dismissed | open_at_merge | open_at_close
    thumbs_up   INTEGER NOT NULL DEFAULT 0,
    thumbs_down INTEGER NOT NULL DEFAULT 0,
    posted_at   INTEGER NOT NULL,
    settled_at  INTEGER,
    UNIQUE (repo, pr, fingerprint, lens)
);
CREATE INDEX finding_outcomes_by_time ON finding_outcomes (posted_at, repo);
CREATE INDEX finding_outcomes_open ON finding_outcomes (repo, pr) WHERE outcome IS NULL;
