//! The router's [`Intake`] on the real store: a delivery and the job it asks for go in one
//! transaction, and a new job wakes an idle worker at once (other replicas find it by polling).

use std::sync::Arc;

use tokio::sync::Notify;

use super::{Intake, IntakeError, NewDelivery, Received};
use crate::request::ReviewRequest;
use crate::store::{self, Store};

#[derive(Clone)]
pub struct StoreIntake {
    store: Store,
    wake: Arc<Notify>,
}

impl StoreIntake {
    pub fn new(store: Store, wake: Arc<Notify>) -> Self {
        Self { store, wake }
    }
}

impl Intake for StoreIntake {
    async fn accept(
        &self,
        d: &NewDelivery,
        req: Option<&ReviewRequest>,
    ) -> Result<Received, IntakeError> {
        let accepted = self
            .store
            .accept_delivery(d, req)
            .await
            .map_err(IntakeError::new)?;
        tracing::debug!(outcome = accepted.outcome(), "delivery stored");
        Ok(match accepted {
            store::Accepted::Duplicate => Received::Duplicate,
            store::Accepted::Enqueued { job, .. } => {
                self.wake.notify_one();
                Received::New { job: Some(job) }
            }
            other => Received::New { job: other.job() },
        })
    }

    async fn healthy(&self) -> bool {
        self.store.ping().await.is_ok()
    }

    async fn job_counts(&self) -> Vec<(String, i64)> {
        match self.store.jobs_by_state().await {
            Ok(counts) => counts
                .into_iter()
                .map(|(state, n)| (state.as_str().to_owned(), n))
                .collect(),
            Err(e) => {
                tracing::warn!(error = %e, "counting jobs failed");
                Vec::new()
            }
        }
    }
}
