-- Conversations: what a job is for (a round, or answering a reply in a finding's thread), and
-- the learnings kept from maintainers' rulings on findings.
-- migrations/postgres/0003_conversations.sql is the same for PostgreSQL: keep the two alike.

-- A reply job is superseded by nothing and coalesces with nothing but a job for the same reply.
ALTER TABLE jobs ADD COLUMN kind TEXT NOT NULL DEFAULT 'round';

CREATE TABLE learnings (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    repo        TEXT NOT NULL,             -- owner/name, lower-case
    path        TEXT NOT NULL,             -- the finding's file
    title       TEXT NOT NULL,             -- the finding's title
    reply       TEXT NOT NULL,             -- the maintainer's reply, sanitized and capped
    author      TEXT NOT NULL,             -- the maintainer's login
    fingerprint TEXT NOT NULL,
    source      INTEGER NOT NULL,          -- the reply's review-comment id: one learning a reply
    created_at  INTEGER NOT NULL,
    UNIQUE (repo, source)
);
CREATE INDEX learnings_by_repo ON learnings (repo, id);
