//! The review stages that turn lens answers into one verdict: `finding` (parse and validate),
//! `panel` (run the lenses), `merge` (cluster and decide).

pub mod finding;
pub mod merge;
pub mod panel;
pub mod parse;

use serde::{Deserialize, Serialize};

/// How much a finding matters. Ordered most severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Blocking,
    Advisory,
}

/// How sure the panel is. Ordered most confident first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Confidence {
    High,
    Medium,
    Low,
}

impl Confidence {
    /// One step more confident, at most `High`.
    pub fn raised(self) -> Self {
        match self {
            Confidence::Low => Confidence::Medium,
            Confidence::Medium | Confidence::High => Confidence::High,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Confidence::High => "high",
            Confidence::Medium => "medium",
            Confidence::Low => "low",
        }
    }
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Blocking => "blocking",
            Severity::Advisory => "advisory",
        }
    }
}
