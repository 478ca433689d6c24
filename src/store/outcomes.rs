//! Outcomes: what became of each finding a round posted (`docs/contract.md` "Outcomes"), kept
//! per lens it is attributed to, so that `reviewbot stats` can say which lenses earn their cost.
//! Every write is idempotent: a finding posted again keeps its first record, and an outcome, once
//! set, is not overwritten by a later one (a redelivered event settles nothing twice).

use sqlx::Row;

use super::{Store, StoreError, now_ms, to_i64, to_u64};
use crate::github::model::RepoName;
use crate::ids::{LensName, PrNumber};
use crate::lens::contract::Severity;

/// What became of a posted finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Its lines changed and no lens raised it again.
    Addressed,
    /// Its lens withdrew it in its thread.
    Withdrawn,
    /// A writer disputed it and no model lens answered.
    Disputed,
    /// A writer resolved its thread without a code change.
    Dismissed,
    /// It still held when the PR was merged.
    OpenAtMerge,
    /// It still held when the PR was closed unmerged.
    OpenAtClose,
}

impl Outcome {
    pub const ALL: [Outcome; 6] = [
        Outcome::Addressed,
        Outcome::Withdrawn,
        Outcome::Disputed,
        Outcome::Dismissed,
        Outcome::OpenAtMerge,
        Outcome::OpenAtClose,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Addressed => "addressed",
            Outcome::Withdrawn => "withdrawn",
            Outcome::Disputed => "disputed",
            Outcome::Dismissed => "dismissed",
            Outcome::OpenAtMerge => "open_at_merge",
            Outcome::OpenAtClose => "open_at_close",
        }
    }
}

/// A finding a round posted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostedFinding {
    pub repo: RepoName,
    pub pr: PrNumber,
    pub fingerprint: String,
    pub lenses: Vec<LensName>,
    pub round: u32,
    pub severity: Severity,
    /// The cross-examination's verdict, when it was checked and not refuted.
    pub verified: Option<String>,
}

/// One lens's findings and what became of them, with what it spent.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct LensStats {
    pub lens: String,
    pub posted: u64,
    /// Findings still holding on an open PR.
    pub open: u64,
    pub addressed: u64,
    pub withdrawn: u64,
    pub disputed: u64,
    pub dismissed: u64,
    pub open_at_merge: u64,
    pub open_at_close: u64,
    pub thumbs_up: u64,
    pub thumbs_down: u64,
    /// Input and output tokens of its recorded runs.
    pub tokens: u64,
    /// What its recorded runs cost, where a cost is known.
    pub cost_usd: f64,
}

impl LensStats {
    /// Dollars per addressed finding, when any was addressed.
    pub fn cost_per_addressed(&self) -> Option<f64> {
        (self.addressed > 0).then(|| self.cost_usd / self.addressed as f64)
    }

    /// Findings whose fate is known.
    pub fn settled(&self) -> u64 {
        self.posted - self.open
    }

    /// Addressed among the settled, when any is.
    pub fn addressed_rate(&self) -> Option<f64> {
        match self.settled() {
            0 => None,
            n => Some(self.addressed as f64 / n as f64),
        }
    }

    fn add(&mut self, outcome: Option<Outcome>, n: u64) {
        self.posted += n;
        let slot = match outcome {
            None => &mut self.open,
            Some(Outcome::Addressed) => &mut self.addressed,
            Some(Outcome::Withdrawn) => &mut self.withdrawn,
            Some(Outcome::Disputed) => &mut self.disputed,
            Some(Outcome::Dismissed) => &mut self.dismissed,
            Some(Outcome::OpenAtMerge) => &mut self.open_at_merge,
            Some(Outcome::OpenAtClose) => &mut self.open_at_close,
        };
        *slot += n;
    }
}

fn parse_outcome(text: Option<&str>) -> Option<Outcome> {
    let text = text?;
    Outcome::ALL.into_iter().find(|o| o.as_str() == text)
}

fn severity(s: Severity) -> &'static str {
    match s {
        Severity::Blocking => "blocking",
        Severity::Advisory => "advisory",
    }
}

impl Store {
    /// Records the findings a round posted, one row per lens each is attributed to; a finding
    /// recorded before keeps its first record. Returns the rows added.
    pub async fn record_posted(&self, findings: &[PostedFinding]) -> Result<u64, StoreError> {
        let _turn = self.write_turn().await;
        let now = now_ms();
        let mut added = 0;
        on_pool!(&self.db, pool => {
            let mut tx = pool.begin().await?;
            for f in findings {
                for lens in &f.lenses {
                    added += sqlx::query(
                        "INSERT INTO finding_outcomes (repo, pr, fingerprint, lens, round, \
                           severity, verified, posted_at) \
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                         ON CONFLICT (repo, pr, fingerprint, lens) DO NOTHING",
                    )
                    .bind(f.repo.to_string())
                    .bind(to_i64(f.pr.0))
                    .bind(&f.fingerprint)
                    .bind(lens.as_str())
                    .bind(i64::from(f.round))
                    .bind(severity(f.severity))
                    .bind(f.verified.as_deref())
                    .bind(now)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                }
            }
            tx.commit().await?;
        });
        Ok(added)
    }

    /// Settles a finding that still holds with `outcome`; `false` when it was settled already
    /// (or never recorded).
    pub async fn settle(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        fingerprint: &str,
        outcome: Outcome,
    ) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        on_pool!(&self.db, pool => {
            let settled = sqlx::query(
                "UPDATE finding_outcomes SET outcome = $1, settled_at = $2 \
                 WHERE repo = $3 AND pr = $4 AND fingerprint = $5 AND outcome IS NULL",
            )
            .bind(outcome.as_str())
            .bind(now_ms())
            .bind(repo.to_string())
            .bind(to_i64(pr.0))
            .bind(fingerprint)
            .execute(pool)
            .await?
            .rows_affected();
            Ok(settled > 0)
        })
    }

    /// A closed PR: every finding still holding is settled `open_at_merge` or `open_at_close`,
    /// and the reactions on each finding's comment (`fingerprint, 👍, 👎`) are kept. Returns the
    /// findings settled (0 when the PR was settled already).
    pub async fn settle_closed(
        &self,
        repo: &RepoName,
        pr: PrNumber,
        merged: bool,
        reactions: &[(String, u64, u64)],
    ) -> Result<u64, StoreError> {
        let _turn = self.write_turn().await;
        let outcome = match merged {
            true => Outcome::OpenAtMerge,
            false => Outcome::OpenAtClose,
        };
        let now = now_ms();
        on_pool!(&self.db, pool => {
            let mut tx = pool.begin().await?;
            for (fingerprint, up, down) in reactions {
                sqlx::query(
                    "UPDATE finding_outcomes SET thumbs_up = $1, thumbs_down = $2 \
                     WHERE repo = $3 AND pr = $4 AND fingerprint = $5",
                )
                .bind(to_i64(*up))
                .bind(to_i64(*down))
                .bind(repo.to_string())
                .bind(to_i64(pr.0))
                .bind(fingerprint)
                .execute(&mut *tx)
                .await?;
            }
            let settled = sqlx::query(
                "UPDATE finding_outcomes SET outcome = $1, settled_at = $2 \
                 WHERE repo = $3 AND pr = $4 AND outcome IS NULL",
            )
            .bind(outcome.as_str())
            .bind(now)
            .bind(repo.to_string())
            .bind(to_i64(pr.0))
            .execute(&mut *tx)
            .await?
            .rows_affected();
            tx.commit().await?;
            Ok(settled)
        })
    }

    /// Per lens, the findings posted since `since_ms` (Unix milliseconds) in `repo`, or in every
    /// repository, and what became of them; by lens name.
    pub async fn outcome_stats(
        &self,
        repo: Option<&RepoName>,
        since_ms: i64,
    ) -> Result<Vec<LensStats>, StoreError> {
        let repo = repo.map(ToString::to_string);
        let rows = on_pool!(&self.db, pool => {
            sqlx::query(
                "SELECT lens, outcome, COUNT(*) AS n, CAST(SUM(thumbs_up) AS BIGINT) AS up, \
                   CAST(SUM(thumbs_down) AS BIGINT) AS down \
                 FROM finding_outcomes \
                 WHERE posted_at >= $1 AND ($2 IS NULL OR repo = $2) \
                 GROUP BY lens, outcome ORDER BY lens",
            )
            .bind(since_ms)
            .bind(repo.as_deref())
            .fetch_all(pool)
            .await?
            .iter()
            .map(|row| {
                Ok((
                    row.try_get::<String, _>("lens")?,
                    row.try_get::<Option<String>, _>("outcome")?,
                    to_u64(row.try_get::<i64, _>("n")?),
                    to_u64(row.try_get::<Option<i64>, _>("up")?.unwrap_or(0)),
                    to_u64(row.try_get::<Option<i64>, _>("down")?.unwrap_or(0)),
                ))
            })
            .collect::<Result<Vec<_>, StoreError>>()?
        });
        let mut stats: Vec<LensStats> = Vec::new();
        for (lens, outcome, n, up, down) in rows {
            if stats.last().is_none_or(|s| s.lens != lens) {
                stats.push(LensStats {
                    lens,
                    ..LensStats::default()
                });
            }
            let s = stats.last_mut().expect("pushed");
            s.add(parse_outcome(outcome.as_deref()), n);
            s.thumbs_up += up;
            s.thumbs_down += down;
        }
        for (lens, tokens, cost) in self.lens_spend(repo.as_deref(), since_ms).await? {
            let at = match stats.iter().position(|s| s.lens == lens) {
                Some(at) => at,
                None => {
                    stats.push(LensStats {
                        lens,
                        ..LensStats::default()
                    });
                    stats.len() - 1
                }
            };
            stats[at].tokens = tokens;
            stats[at].cost_usd = cost;
        }
        stats.sort_by(|a, b| a.lens.cmp(&b.lens));
        Ok(stats)
    }

    /// Per lens, the tokens and dollars its runs recorded since `since_ms` spent (in `repo`'s
    /// rounds, or all).
    async fn lens_spend(
        &self,
        repo: Option<&str>,
        since_ms: i64,
    ) -> Result<Vec<(String, u64, f64)>, StoreError> {
        on_pool!(&self.db, pool => {
            let rows: Vec<(String, i64, Option<f64>)> = sqlx::query_as(
                "SELECT lens, CAST(COALESCE(SUM(COALESCE(input_tokens, 0) \
                   + COALESCE(output_tokens, 0)), 0) AS BIGINT), SUM(cost_usd) \
                 FROM lens_runs WHERE recorded_at >= $1 \
                   AND ($2 IS NULL OR job_id IN (SELECT job_id FROM rounds WHERE repo = $2)) \
                 GROUP BY lens",
            )
            .bind(since_ms)
            .bind(repo)
            .fetch_all(pool)
            .await?;
            Ok(rows
                .into_iter()
                .map(|(lens, tokens, cost)| (lens, to_u64(tokens), cost.unwrap_or(0.0)))
                .collect())
        })
    }
}
