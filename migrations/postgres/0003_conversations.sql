-- Conversations: what a job is for (a round, or answering a reply in a finding's thread), and
-- the learnings kept from maintainers' rulings on findings.
-- PostgreSQL's copy of migrations/sqlite/0003_conversations.sql: keep the two alike.

-- A reply job is superseded by nothing and coalesces with nothing but a job for the same reply.
ALTER TABLE jobs ADD COLUMN kind TEXT NOT NULL DEFAULT 'round';

CREATE TABLE learnings (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    repo        TEXT NOT NULL,             -- owner/name, lower-case
    path        TEXT NOT NULL,             -- the finding's file
    title       TEXT NOT NULL,             -- the finding's title
    reply       TEXT NOT NULL,             -- the maintainer's reply, sanitized and capped
    author      TEXT NOT NULL,             -- the maintainer's login
    fingerprint TEXT NOT NULL,
    source      BIGINT NOT NULL,          -- the reply's review-comment id: one learning a reply
    created_at  BIGINT NOT NULL,
    UNIQUE (repo, source)
);
CREATE INDEX learnings_by_repo ON learnings (repo, id);
