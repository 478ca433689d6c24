//! The lens contract: what every lens answers (a [`LensResponse`] of [`RawFinding`]s graded by
//! [`Severity`] and [`Confidence`]) and the JSON Schema sent with every request. It sits below
//! the lenses and the review stages, which both speak it; and the prompt wording a lens adds at
//! call time (whether it reads the repository, the schema footer).

use serde::{Deserialize, Serialize};

use crate::diff::Side;

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

/// One finding as a lens reports it (`docs/contract.md` "Lens response").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
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
    /// The exact text of the line the finding is about, to anchor it when its line number is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
    /// The complete replacement for the finding's lines, posted as a committable suggestion
    /// when it is safe to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
}

/// A lens's whole answer: findings when it reviewed, verdicts when it cross-examined another
/// lens's findings ([`AnswerKind`] says which was asked; the parser reads either).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LensResponse {
    #[serde(default)]
    pub findings: Vec<RawFinding>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The verdicts of a cross-examination (`None` in a review's answer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdicts: Option<Vec<crate::lens::verdicts::Verdict>>,
}

/// Which answer a request asks for: a review's findings, or verdicts on findings
/// (cross-examination). It picks the JSON Schema a backend hands the model and the prompt's
/// footer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerKind {
    #[default]
    Review,
    Verify,
}

impl AnswerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerKind::Review => "review",
            AnswerKind::Verify => "verify",
        }
    }

    /// The answer's JSON Schema, in strict form.
    pub fn schema(self) -> serde_json::Value {
        match self {
            AnswerKind::Review => response_schema(),
            AnswerKind::Verify => crate::lens::verdicts::verdicts_schema(),
        }
    }

    /// The prompt's last paragraph: this answer's schema, spelled out.
    pub fn footer(self) -> String {
        schema_footer(&self.schema())
    }

    /// Whether a parsed answer is the kind asked for: a review answered with verdicts, or a
    /// cross-examination answered with findings, is an unreadable answer, never "nothing found".
    pub fn check(self, response: &LensResponse) -> Result<(), ResponseError> {
        match (self, response.verdicts.is_some()) {
            (AnswerKind::Review, true) => Err(ResponseError::Invalid(
                "verdicts where findings were asked for".into(),
            )),
            (AnswerKind::Verify, false) => Err(ResponseError::Invalid(
                "findings where verdicts were asked for".into(),
            )),
            _ => Ok(()),
        }
    }
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

/// The JSON Schema of the lens response, in OpenAI strict form (every property required,
/// `additionalProperties: false`; optional fields are nullable), sent to every lens.
pub fn response_schema() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["findings", "summary"],
        "properties": {
            "findings": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["path", "line", "start_line", "side", "severity", "confidence", "title", "body", "quote", "suggestion"],
                    "properties": {
                        "path": {"type": "string", "description": "File path as the diff names it (the new path)."},
                        "line": {"type": "integer", "minimum": 1, "description": "Last line the finding is about, in the file on `side`."},
                        "start_line": {"type": ["integer", "null"], "minimum": 1, "description": "First line of a multi-line finding, or null."},
                        "side": {"type": "string", "enum": ["RIGHT", "LEFT"], "description": "RIGHT: the new file (added or context lines); LEFT: the old file (removed lines)."},
                        "severity": {"type": "string", "enum": ["blocking", "advisory"]},
                        "confidence": {"type": "string", "enum": ["high", "medium", "low"]},
                        "title": {"type": "string", "description": "One line naming the problem."},
                        "body": {"type": "string", "description": "Why it is wrong, and what to do."},
                        "quote": {"type": ["string", "null"], "description": "The exact text of the line the finding is about (`line`), copied from the code, or null."},
                        "suggestion": {"type": ["string", "null"], "description": "The complete replacement text for lines start_line..line of the new file (at most 10 lines, no elisions), or null."}
                    }
                }
            },
            "summary": {"type": ["string", "null"], "description": "Optional one paragraph about the change."}
        }
    })
}

// The call-time prompt wording every backend adds: whether the lens reads the repository, and
// the footer a backend that gives the schema itself replaces.

/// Appended to the prompt of a lens that can read the repository at the reviewed head.
pub(crate) const WITH_REPOSITORY: &str = "\
The repository at the reviewed head is available to you read-only, through your tools (your
working directory is its root). Before you claim that something breaks, read what you need to be
sure: callers of a changed function, the definitions it relies on, tests, configuration. Do not
report what you could have checked and did not; say in `summary` what you verified and what the
repository could not tell you.";

/// Appended to the prompt of a lens that sees the diff alone.
const DIFF_ONLY: &str = "\
You see the diff alone, not the rest of the repository. When a problem depends on code you
cannot see, say so in the finding's body and lower its confidence, rather than guess; say in
`summary` what you could not check.";

/// `prompt` with the paragraph that tells the lens whether it can read the repository.
pub fn with_repository(prompt: &str, reads_repository: bool) -> String {
    let note = if reads_repository {
        WITH_REPOSITORY
    } else {
        DIFF_ONLY
    };
    format!("{prompt}\n{note}\n")
}

/// What a prompt's footer says instead when the backend hands the model the schema itself
/// (structured output, `--output-schema`): the schema is not sent twice.
pub(crate) const SCHEMA_GIVEN: &str = "Answer with exactly one JSON object in the response format you were given, and nothing else.\n";

/// `prompt` for a backend that gives the model the response schema itself: the footer that
/// spells the schema out (a review's or a cross-examination's) is replaced by one line (a
/// prompt without it is returned as it is).
pub fn schema_given(prompt: &str) -> String {
    for kind in [AnswerKind::Review, AnswerKind::Verify] {
        let footer = kind.footer();
        if prompt.contains(&footer) {
            return prompt.replacen(&footer, SCHEMA_GIVEN, 1);
        }
    }
    prompt.to_owned()
}

/// The prompt's last paragraph: the lens response's JSON Schema, spelled out.
pub fn footer() -> String {
    AnswerKind::Review.footer()
}

fn schema_footer(schema: &serde_json::Value) -> String {
    format!(
        "Answer with exactly one JSON object that follows this JSON Schema, and nothing else:\n{schema}\n"
    )
}
