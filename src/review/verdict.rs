//! A round's verdict: how many findings of each severity hold. Its own module, so that the
//! stages that count (`rounds`) and the report that shows it need not import each other.

use serde::Serialize;

use crate::config::FailOn;
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

    /// Whether a round with this verdict failed under `fail_on`.
    pub fn fails(self, fail_on: FailOn) -> bool {
        match fail_on {
            FailOn::Blocking => self.blocking > 0,
            FailOn::Advisory => self.blocking + self.advisory > 0,
            FailOn::Never => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_on_decides_from_the_counts() {
        let v = |blocking, advisory| Verdict { blocking, advisory };
        assert!(v(1, 0).fails(FailOn::Blocking) && !v(0, 3).fails(FailOn::Blocking));
        assert!(v(0, 1).fails(FailOn::Advisory) && !v(0, 0).fails(FailOn::Advisory));
        assert!(!v(5, 5).fails(FailOn::Never));
    }
}
