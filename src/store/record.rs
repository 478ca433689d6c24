//! The `record` stage: what each round did and what each lens run cost. Append-only: a job run
//! twice (a lease that expired) records twice, as it really ran twice.

use sqlx::Row;

use super::{Scope, Store, StoreError, now_ms, to_i64, to_u64};
use crate::github::model::RepoName;
use crate::ids::{HeadSha, InstallationId, JobId, LensName, PrNumber};
use crate::lens::{AuthClass, LensStatus, Provenance};

/// One round of a job: posted or skipped, with its verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct RoundRecord {
    pub job: JobId,
    pub repo: RepoName,
    pub pr: PrNumber,
    pub head: Option<HeadSha>,
    /// The round's number on the PR; `None` when no round ran.
    pub round: Option<u32>,
    pub posted: bool,
    pub blocking: u32,
    pub advisory: u32,
    /// The GitHub review posted, when known.
    pub review_id: Option<u64>,
    /// Why no round was posted (`draft`, `opt_out`, `superseded`, …).
    pub skipped: Option<String>,
}

/// What an installation's lens runs spent since some moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spent {
    pub usd: f64,
    /// Tokens of the runs with no cost.
    pub unpriced_tokens: u64,
}

/// One lens run of a round: provenance, usage and cost.
#[derive(Debug, Clone, PartialEq)]
pub struct LensRunRecord {
    pub job: JobId,
    pub round: Option<u32>,
    pub lens: LensName,
    pub requested_backend: String,
    pub actual_backend: String,
    pub auth_class: String,
    pub model: Option<String>,
    pub fallback_source: Option<String>,
    /// `ok` or `failed`.
    pub status: String,
    pub error: Option<String>,
    pub latency_ms: u64,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
    /// The App installation the run was for (whose daily budget it counts against).
    pub installation: Option<InstallationId>,
}

impl LensRunRecord {
    /// The record of a lens's provenance, as the flow reports it.
    pub fn new(job: JobId, round: Option<u32>, run: &Provenance) -> LensRunRecord {
        LensRunRecord {
            job,
            round,
            lens: run.lens.clone(),
            requested_backend: run.requested_backend.as_str().to_owned(),
            actual_backend: run.actual_backend.as_str().to_owned(),
            auth_class: match run.auth_class {
                AuthClass::None => "none",
                AuthClass::Subscription => "subscription",
                AuthClass::Api => "api",
            }
            .to_owned(),
            model: run.model.clone(),
            fallback_source: run.fallback_source.map(|b| b.as_str().to_owned()),
            status: match run.status {
                LensStatus::Ok => "ok",
                LensStatus::Failed => "failed",
            }
            .to_owned(),
            error: run.error.clone(),
            latency_ms: run.latency_ms,
            input_tokens: run.usage.map(|u| u.input_tokens),
            output_tokens: run.usage.map(|u| u.output_tokens),
            cost_usd: run.cost_usd,
            installation: None,
        }
    }
}

impl Store {
    pub async fn record_round(&self, round: &RoundRecord) -> Result<(), StoreError> {
        let _turn = self.write_turn().await;
        on_pool!(&self.db, pool => {
            sqlx::query(
                "INSERT INTO rounds (job_id, repo, pr, head, round, posted, blocking, advisory, \
                   review_id, skipped, recorded_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            )
            .bind(round.job.0)
            .bind(round.repo.to_string())
            .bind(to_i64(round.pr.0))
            .bind(round.head.as_ref().map(|h| h.as_str()))
            .bind(round.round.map(i64::from))
            .bind(round.posted)
            .bind(i64::from(round.blocking))
            .bind(i64::from(round.advisory))
            .bind(round.review_id.map(to_i64))
            .bind(round.skipped.as_deref())
            .bind(now_ms())
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    pub async fn record_lens_run(&self, run: &LensRunRecord) -> Result<(), StoreError> {
        let _turn = self.write_turn().await;
        on_pool!(&self.db, pool => {
            sqlx::query(
                "INSERT INTO lens_runs (job_id, round, lens, requested_backend, actual_backend, \
                   auth_class, model, fallback_source, status, error, latency_ms, input_tokens, \
                   output_tokens, cost_usd, recorded_at, installation) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)",
            )
            .bind(run.job.0)
            .bind(run.round.map(i64::from))
            .bind(run.lens.as_str())
            .bind(&run.requested_backend)
            .bind(&run.actual_backend)
            .bind(&run.auth_class)
            .bind(run.model.as_deref())
            .bind(run.fallback_source.as_deref())
            .bind(&run.status)
            .bind(run.error.as_deref())
            .bind(to_i64(run.latency_ms))
            .bind(run.input_tokens.map(to_i64))
            .bind(run.output_tokens.map(to_i64))
            .bind(run.cost_usd)
            .bind(now_ms())
            .bind(run.installation.map(|i| to_i64(i.0)))
            .execute(pool)
            .await?;
        });
        Ok(())
    }

    /// The rounds a job recorded, oldest first.
    pub async fn rounds_for(&self, job: JobId) -> Result<Vec<RoundRecord>, StoreError> {
        self.rounds_in(Scope::Job(job)).await
    }

    /// The rounds recorded for a PR, by every job, oldest first.
    pub async fn rounds_for_pr(
        &self,
        repo: &RepoName,
        pr: PrNumber,
    ) -> Result<Vec<RoundRecord>, StoreError> {
        self.rounds_in(Scope::Pr(repo, pr)).await
    }

    async fn rounds_in(&self, scope: Scope<'_>) -> Result<Vec<RoundRecord>, StoreError> {
        let (job, repo, pr) = scope.binds();
        on_pool!(&self.db, pool => {
            let rows = sqlx::query(
                "SELECT job_id, repo, pr, head, round, posted, blocking, advisory, review_id, \
                   skipped FROM rounds \
                 WHERE ($1 IS NULL OR job_id = $1) AND ($2 IS NULL OR (repo = $2 AND pr = $3)) \
                 ORDER BY id",
            )
            .bind(job)
            .bind(repo)
            .bind(pr)
            .fetch_all(pool)
            .await?;
            rows.iter()
                .map(|row| {
                    let repo: String = row.try_get("repo")?;
                    let head: Option<String> = row.try_get("head")?;
                    Ok(RoundRecord {
                        job: JobId(row.try_get("job_id")?),
                        repo: RepoName::parse(&repo).ok_or_else(|| corrupt("repo", &repo))?,
                        pr: PrNumber(to_u64(row.try_get("pr")?)),
                        head: match head {
                            Some(h) => Some(HeadSha::parse(&h).ok_or_else(|| corrupt("head", &h))?),
                            None => None,
                        },
                        round: row.try_get::<Option<i64>, _>("round")?.map(to_u32),
                        posted: row.try_get("posted")?,
                        blocking: to_u32(row.try_get("blocking")?),
                        advisory: to_u32(row.try_get("advisory")?),
                        review_id: row.try_get::<Option<i64>, _>("review_id")?.map(to_u64),
                        skipped: row.try_get("skipped")?,
                    })
                })
                .collect()
        })
    }

    /// The lens runs a job recorded, oldest first.
    pub async fn lens_runs_for(&self, job: JobId) -> Result<Vec<LensRunRecord>, StoreError> {
        self.lens_runs_in(Scope::Job(job)).await
    }

    /// The lens runs recorded for a PR, by every job, oldest first.
    pub async fn lens_runs_for_pr(
        &self,
        repo: &RepoName,
        pr: PrNumber,
    ) -> Result<Vec<LensRunRecord>, StoreError> {
        self.lens_runs_in(Scope::Pr(repo, pr)).await
    }

    async fn lens_runs_in(&self, scope: Scope<'_>) -> Result<Vec<LensRunRecord>, StoreError> {
        let (job, repo, pr) = scope.binds();
        on_pool!(&self.db, pool => {
            let rows = sqlx::query(
                "SELECT job_id, round, lens, requested_backend, actual_backend, auth_class, \
                   model, fallback_source, status, error, latency_ms, input_tokens, \
                   output_tokens, cost_usd, installation FROM lens_runs \
                 WHERE ($1 IS NULL OR job_id = $1) \
                   AND ($2 IS NULL OR job_id IN (SELECT id FROM jobs WHERE repo = $2 AND pr = $3)) \
                 ORDER BY id",
            )
            .bind(job)
            .bind(repo)
            .bind(pr)
            .fetch_all(pool)
            .await?;
            rows.iter()
                .map(|row| {
                    Ok(LensRunRecord {
                        job: JobId(row.try_get("job_id")?),
                        round: row.try_get::<Option<i64>, _>("round")?.map(to_u32),
                        lens: LensName::new(row.try_get::<String, _>("lens")?),
                        requested_backend: row.try_get("requested_backend")?,
                        actual_backend: row.try_get("actual_backend")?,
                        auth_class: row.try_get("auth_class")?,
                        model: row.try_get("model")?,
                        fallback_source: row.try_get("fallback_source")?,
                        status: row.try_get("status")?,
                        error: row.try_get("error")?,
                        latency_ms: to_u64(row.try_get("latency_ms")?),
                        input_tokens: row.try_get::<Option<i64>, _>("input_tokens")?.map(to_u64),
                        output_tokens: row.try_get::<Option<i64>, _>("output_tokens")?.map(to_u64),
                        cost_usd: row.try_get("cost_usd")?,
                        installation: row
                            .try_get::<Option<i64>, _>("installation")?
                            .map(|i| InstallationId(to_u64(i))),
                    })
                })
                .collect()
        })
    }
}

impl Store {
    /// What `installation`'s lens runs recorded at or after `since` (unix milliseconds) spent,
    /// in one read: their cost in dollars (runs with none count as nothing), and the input and
    /// output tokens of the runs with no cost, which only a token budget bounds.
    pub async fn spent_since(
        &self,
        installation: InstallationId,
        since_ms: i64,
    ) -> Result<Spent, StoreError> {
        on_pool!(&self.db, pool => {
            let (usd, tokens): (Option<f64>, i64) = sqlx::query_as(
                "SELECT SUM(cost_usd), CAST(COALESCE(SUM(CASE WHEN cost_usd IS NULL \
                 THEN COALESCE(input_tokens, 0) + COALESCE(output_tokens, 0) ELSE 0 END), 0) \
                 AS BIGINT) FROM lens_runs WHERE installation = $1 AND recorded_at >= $2",
            )
            .bind(to_i64(installation.0))
            .bind(since_ms)
            .fetch_one(pool)
            .await?;
            Ok(Spent {
                usd: usd.unwrap_or(0.0),
                unpriced_tokens: u64::try_from(tokens).unwrap_or(0),
            })
        })
    }
}

fn to_u32(n: i64) -> u32 {
    u32::try_from(n).unwrap_or(0)
}

fn corrupt(what: &str, value: &str) -> StoreError {
    StoreError::Corrupt {
        what: what.to_owned(),
        reason: format!("{value:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lens::{BackendKind, Usage};

    #[test]
    fn a_lens_run_is_recorded_from_its_provenance() {
        let run = Provenance {
            lens: LensName::new("claude"),
            role: Default::default(),
            requested_backend: BackendKind::ClaudeCli,
            actual_backend: BackendKind::Anthropic,
            auth_class: AuthClass::Api,
            model: Some("claude-sonnet-4-5".into()),
            fallback_source: Some(BackendKind::ClaudeCli),
            status: LensStatus::Failed,
            error: Some("timed out".into()),
            latency_ms: 42,
            usage: Some(Usage {
                input_tokens: 10,
                output_tokens: 2,
            }),
            cost_usd: Some(0.5),
            calls: None,
            findings_dropped: None,
            tool_calls: None,
            summary: None,
        };
        let record = LensRunRecord::new(JobId(3), Some(2), &run);
        assert_eq!(
            (
                record.requested_backend.as_str(),
                record.actual_backend.as_str(),
                record.auth_class.as_str(),
                record.fallback_source.as_deref(),
                record.status.as_str(),
            ),
            (
                "claude-cli",
                "anthropic",
                "api",
                Some("claude-cli"),
                "failed"
            )
        );
        assert_eq!(
            (record.input_tokens, record.output_tokens),
            (Some(10), Some(2))
        );
        assert_eq!(
            (record.job, record.round, record.latency_ms),
            (JobId(3), Some(2), 42)
        );
    }
}
