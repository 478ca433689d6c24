//! A learning: a writer's ruling on a finding its lens then withdrew, in the writer's words. The
//! store keeps it per repository; later rounds show the lenses those near the files they review,
//! as the maintainers' notes (`docs/contract.md` "Conversations").

use serde::Serialize;

/// What a writer said about one finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Learning {
    pub path: String,
    /// The finding's title.
    pub title: String,
    /// The writer's reply, sanitized and capped.
    pub reply: String,
    /// The writer's login.
    pub author: String,
}
