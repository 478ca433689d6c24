//! Learnings: maintainers' rulings on findings, kept per repository (`docs/contract.md`
//! "Conversations"). A later round gives the lenses those near the files under review.

use sqlx::Row;

use super::{Store, StoreError, now_ms, to_i64};
use crate::github::model::RepoName;
use crate::learning::Learning;

/// A learning to keep, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewLearning {
    pub repo: RepoName,
    pub learning: Learning,
    /// The finding's fingerprint.
    pub fingerprint: String,
    /// The reply's review-comment id: one learning per reply, however often it is seen.
    pub source: u64,
}

/// A learning as kept.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct KeptLearning {
    pub id: i64,
    pub repo: String,
    #[serde(flatten)]
    pub learning: Learning,
    pub fingerprint: String,
    /// Unix milliseconds.
    pub created_at: i64,
}

impl Store {
    /// Keeps `learning`; `false` when the same reply was kept already.
    pub async fn add_learning(&self, learning: &NewLearning) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        on_pool!(&self.db, pool => {
            let added = sqlx::query(
                "INSERT INTO learnings (repo, path, title, reply, author, fingerprint, source, \
                   created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                 ON CONFLICT (repo, source) DO NOTHING",
            )
            .bind(learning.repo.to_string())
            .bind(&learning.learning.path)
            .bind(&learning.learning.title)
            .bind(&learning.learning.reply)
            .bind(&learning.learning.author)
            .bind(&learning.fingerprint)
            .bind(to_i64(learning.source))
            .bind(now_ms())
            .execute(pool)
            .await?
            .rows_affected();
            Ok(added > 0)
        })
    }

    /// Every learning of `repo`, oldest first.
    pub async fn learnings(&self, repo: &RepoName) -> Result<Vec<KeptLearning>, StoreError> {
        on_pool!(&self.db, pool => {
            let rows = sqlx::query(
                "SELECT id, repo, path, title, reply, author, fingerprint, created_at \
                 FROM learnings WHERE repo = $1 ORDER BY id",
            )
            .bind(repo.to_string())
            .fetch_all(pool)
            .await?;
            rows.iter()
                .map(|row| {
                    Ok(KeptLearning {
                        id: row.try_get("id")?,
                        repo: row.try_get("repo")?,
                        learning: Learning {
                            path: row.try_get("path")?,
                            title: row.try_get("title")?,
                            reply: row.try_get("reply")?,
                            author: row.try_get("author")?,
                        },
                        fingerprint: row.try_get("fingerprint")?,
                        created_at: row.try_get("created_at")?,
                    })
                })
                .collect()
        })
    }

    /// Forgets learning `id`; `false` when there is none.
    pub async fn forget_learning(&self, id: i64) -> Result<bool, StoreError> {
        let _turn = self.write_turn().await;
        on_pool!(&self.db, pool => {
            let gone = sqlx::query("DELETE FROM learnings WHERE id = $1")
                .bind(id)
                .execute(pool)
                .await?
                .rows_affected();
            Ok(gone > 0)
        })
    }
}
