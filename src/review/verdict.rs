//! A round's verdict: how many findings of each severity hold. Its own module, so that the
//! stages that count (`rounds`) and the report that shows it need not import each other.

use serde::Serialize;

use crate::lens::contract::Severity;
use crate::review::finding::Finding;

/// How many findings of each severity a round holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub blocking: usize,
    pub advisory: usize,
}

impl Verdict {
    pub fn of(findings: &[Finding]) -> Verdict {
        let blocking = findings
            .iter()
            .filter(|f| f.severity == Severity::Blocking)
            .count();
        Verdict {
            blocking,
            advisory: findings.len() - blocking,
        }
    }
}
