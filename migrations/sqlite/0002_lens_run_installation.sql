-- Which App installation each lens run was for, so its daily cost can be summed
-- ([serve] daily_budget_usd). NULL for runs recorded before, and for jobs without one.
-- migrations/postgres/0002_lens_run_installation.sql is the same for PostgreSQL: keep the two alike.
ALTER TABLE lens_runs ADD COLUMN installation INTEGER;
CREATE INDEX lens_runs_by_installation ON lens_runs (installation, recorded_at);
