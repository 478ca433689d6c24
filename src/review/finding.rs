//! The lens response (what every backend yields) and the findings made of it.

use serde::{Deserialize, Serialize};

use crate::diff::Side;
use crate::ids::LensName;
use crate::review::{Confidence, Severity};

/// One finding as a lens reports it (DESIGN.md "Lens response").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFinding {
    pub path: String,
    pub line: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u32>,
    #[serde(default)]
    pub side: Side,
    pub severity: Severity,
    pub confidence: Confidence,
    pub title: String,
    pub body: String,
}

/// A lens's whole answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LensResponse {
    pub findings: Vec<RawFinding>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// Why a lens's output could not be read as a lens response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResponseError {
    #[error("the reply is empty")]
    Empty,
    #[error("the reply holds no JSON object")]
    NoObject,
    #[error("the reply holds {0} JSON objects where one was expected")]
    Ambiguous(usize),
    #[error("the reply's JSON is not a lens response: {0}")]
    Invalid(String),
}

/// A finding after parsing, validation and merging: what the output shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub path: String,
    pub line: u32,
    pub start_line: Option<u32>,
    pub side: Side,
    pub severity: Severity,
    pub confidence: Confidence,
    pub title: String,
    pub body: String,
    /// Every lens that reported this finding.
    pub lenses: Vec<LensName>,
    /// Whether the finding's lines are inside a hunk, so it can be a line comment.
    pub in_diff: bool,
    pub fingerprint: String,
}
