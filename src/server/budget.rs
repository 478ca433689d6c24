//! `[serve] daily_budget_usd` and `daily_budget_tokens`: whether an installation's round may
//! run today, from what its lens runs recorded since the UTC day began — dollars (reported by
//! the backend, or at the lens's declared prices) and the tokens of lenses with no cost. No
//! I/O: the job runner asks the store.

use crate::request::Reason;
use crate::review::notice::Budget;

/// A day, in the store's unix milliseconds.
pub const DAY_MS: i64 = 86_400_000;

/// When the UTC day holding `now_ms` began.
pub fn day_start(now_ms: i64) -> i64 {
    now_ms - now_ms.rem_euclid(DAY_MS)
}

/// What the budget says of one round.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Decision {
    Run,
    /// A day's budget is spent (`over`): wait until `until_ms`, the next UTC day.
    Wait {
        until_ms: i64,
        over: Budget,
    },
}

/// The daily budgets (none: no limit) and what was spent of each today.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Day {
    pub budget_usd: Option<f64>,
    pub budget_tokens: Option<u64>,
    pub spent_usd: f64,
    /// Tokens of lens runs with no cost.
    pub unpriced_tokens: u64,
}

impl Day {
    /// The first budget reached, if any.
    fn over(&self) -> Option<Budget> {
        let dollars = self
            .budget_usd
            .filter(|b| self.spent_usd >= *b)
            .map(|budget| Budget::Dollars {
                spent: self.spent_usd,
                budget,
            });
        let tokens = self
            .budget_tokens
            .filter(|b| self.unpriced_tokens >= *b)
            .map(|budget| Budget::Tokens {
                spent: self.unpriced_tokens,
                budget,
            });
        dollars.or(tokens)
    }
}

/// Whether a round asked for by `reason` runs, given what was spent today. A `/reviewbot
/// review` runs whatever was spent: a maintainer asked for that one round (the flow checks that
/// the commenter may write).
pub fn decide(day: &Day, reason: &Reason, now_ms: i64) -> Decision {
    match day.over() {
        Some(over) if !matches!(reason, Reason::Command { .. }) => Decision::Wait {
            until_ms: day_start(now_ms) + DAY_MS,
            over,
        },
        _ => Decision::Run,
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

    fn dollars(budget: Option<f64>, spent_usd: f64) -> Day {
        Day {
            budget_usd: budget,
            spent_usd,
            ..Day::default()
        }
    }

    #[test]
    fn a_spent_budget_makes_rounds_wait_for_the_next_day_except_a_command() {
        let push = Reason::Synchronize;
        let next_day = |spent| Decision::Wait {
            until_ms: 1_796_342_400_000,
            over: Budget::Dollars { spent, budget: 5.0 },
        };
        assert_eq!(decide(&dollars(None, 1e9), &push, NOW), Decision::Run);
        assert_eq!(decide(&dollars(Some(5.0), 4.99), &push, NOW), Decision::Run);
        assert_eq!(decide(&dollars(Some(5.0), 5.0), &push, NOW), next_day(5.0));
        let label = Reason::Labeled {
            label: "reviewbot:review".into(),
        };
        assert_eq!(decide(&dollars(Some(5.0), 7.0), &label, NOW), next_day(7.0));
        let command = Reason::Command {
            user: "maintainer".into(),
        };
        assert_eq!(
            decide(&dollars(Some(5.0), 7.0), &command, NOW),
            Decision::Run
        );
    }

    /// Lenses without a price cost nothing in dollars: the token budget bounds them.
    #[test]
    fn tokens_without_a_price_have_a_budget_of_their_own() {
        let push = Reason::Synchronize;
        let day = Day {
            budget_usd: Some(5.0),
            budget_tokens: Some(1_000_000),
            spent_usd: 0.0,
            unpriced_tokens: 999_999,
        };
        assert_eq!(decide(&day, &push, NOW), Decision::Run);
        let spent = Day {
            unpriced_tokens: 1_000_000,
            ..day
        };
        assert_eq!(
            decide(&spent, &push, NOW),
            Decision::Wait {
                until_ms: 1_796_342_400_000,
                over: Budget::Tokens {
                    spent: 1_000_000,
                    budget: 1_000_000
                }
            }
        );
        // Without a token budget they are not bounded (the dollars budget cannot see them).
        let unbounded = Day {
            budget_tokens: None,
            ..spent
        };
        assert_eq!(decide(&unbounded, &push, NOW), Decision::Run);
    }
}
