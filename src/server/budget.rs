//! `[serve] daily_budget_usd`: whether an installation's round may run today, from what its
//! lens runs recorded since the UTC day began. No I/O: the job runner asks the store.

use crate::flow::request::Reason;

/// A day, in the store's unix milliseconds.
pub const DAY_MS: i64 = 86_400_000;

/// When the UTC day holding `now_ms` began.
pub fn day_start(now_ms: i64) -> i64 {
    now_ms - now_ms.rem_euclid(DAY_MS)
}

/// What the budget says of one round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    Run,
    /// The day's budget is spent: wait until `until_ms`, the next UTC day.
    Wait {
        until_ms: i64,
    },
}

/// Whether a round asked for by `reason` runs, with `spent` dollars recorded today against a
/// `budget` (none: no limit). A `/reviewbot review` runs whatever was spent: a maintainer asked
/// for that one round (the flow checks that the commenter may write).
pub fn verdict(budget: Option<f64>, spent: f64, reason: &Reason, now_ms: i64) -> Verdict {
    match budget {
        Some(budget) if spent >= budget && !matches!(reason, Reason::Command { .. }) => {
            Verdict::Wait {
                until_ms: day_start(now_ms) + DAY_MS,
            }
        }
        _ => Verdict::Run,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-12-03 13:45:06 UTC.
    const NOW: i64 = 1_796_305_506_000;

    #[test]
    fn the_day_begins_at_utc_midnight() {
        assert_eq!(day_start(NOW), 1_796_256_000_000);
        assert_eq!(day_start(1_796_256_000_000), 1_796_256_000_000);
        assert_eq!(day_start(1_796_255_999_999), 1_796_169_600_000);
    }

    #[test]
    fn a_spent_budget_makes_rounds_wait_for_the_next_day_except_a_command() {
        let push = Reason::Synchronize;
        let next_day = Verdict::Wait {
            until_ms: 1_796_342_400_000,
        };
        assert_eq!(verdict(None, 1e9, &push, NOW), Verdict::Run);
        assert_eq!(verdict(Some(5.0), 4.99, &push, NOW), Verdict::Run);
        assert_eq!(verdict(Some(5.0), 5.0, &push, NOW), next_day);
        let label = Reason::Labeled {
            label: "reviewbot:review".into(),
        };
        assert_eq!(verdict(Some(5.0), 7.0, &label, NOW), next_day);
        let command = Reason::Command {
            user: "maintainer".into(),
        };
        assert_eq!(verdict(Some(5.0), 7.0, &command, NOW), Verdict::Run);
    }
}
