//! The gate: whether a pull request gets a round at all, decided from what was gathered (the
//! PR, its labels, its files, who asked). No I/O.

use serde::{Serialize, Serializer};

use crate::config::ReviewConfig;
use crate::diff::Diff;
use crate::github::model::{Permission, PullRequest};

/// Why no round ran. [`SkipReason::as_str`] is the JSON `skipped` value; the details are for
/// the notice that says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    Closed,
    /// Skipped until `ready_for_review`.
    Draft,
    /// The PR carries the opt-out `label` (at the start, or by the time the round would post).
    OptOut {
        label: String,
    },
    TooManyFiles {
        max_files: usize,
    },
    /// The PR was opened by a bot account, and `review_bots` is off.
    BotAuthor {
        login: String,
    },
    /// Every changed file is in `ignore_paths`.
    AllIgnored,
    /// This head has its round, and nobody asked for another.
    AlreadyReviewed,
    /// A `labeled` event for a label that is not the (repository's) trigger label.
    NotTriggerLabel {
        label: String,
    },
    /// A `/reviewbot review` from someone who may not write to the repository.
    NotPermitted {
        user: String,
        permission: Permission,
    },
}

impl SkipReason {
    /// The stable name: `closed`, `draft`, `opt_out`, `too_many_files`, `bot_author`, `all_ignored`,
    /// `already_reviewed`, `not_trigger_label`, `not_permitted`.
    pub fn as_str(&self) -> &'static str {
        match self {
            SkipReason::Closed => "closed",
            SkipReason::Draft => "draft",
            SkipReason::OptOut { .. } => "opt_out",
            SkipReason::TooManyFiles { .. } => "too_many_files",
            SkipReason::BotAuthor { .. } => "bot_author",
            SkipReason::AllIgnored => "all_ignored",
            SkipReason::AlreadyReviewed => "already_reviewed",
            SkipReason::NotTriggerLabel { .. } => "not_trigger_label",
            SkipReason::NotPermitted { .. } => "not_permitted",
        }
    }
}

impl Serialize for SkipReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Why a PR gets no round, from the PR and the settings that apply to it.
pub fn skip_reason(pr: &PullRequest, review: &ReviewConfig) -> Option<SkipReason> {
    if pr.state != "open" {
        Some(SkipReason::Closed)
    } else if pr.draft {
        Some(SkipReason::Draft)
    } else if opted_out(&pr.labels, review) {
        Some(SkipReason::OptOut {
            label: review.opt_out_label.clone(),
        })
    } else if pr.author.is_bot() && !review.review_bots {
        Some(SkipReason::BotAuthor {
            login: pr.author.login.clone(),
        })
    } else if pr.changed_files > review.max_files as u64 {
        Some(SkipReason::TooManyFiles {
            max_files: review.max_files,
        })
    } else {
        None
    }
}

/// Whether `labels` hold the opt-out label (checked at the start and again before posting).
pub fn opted_out(labels: &[String], review: &ReviewConfig) -> bool {
    labels.iter().any(|l| l == &review.opt_out_label)
}

/// Whether `labels` hold the trigger label: an explicit ask for a round, not yet answered.
pub fn trigger_label_on(labels: &[String], review: &ReviewConfig) -> bool {
    labels.iter().any(|l| l == &review.trigger_label)
}

/// A `labeled` event asks for a round only with the trigger label (the repository may have
/// renamed it).
pub fn labeled(label: &str, review: &ReviewConfig) -> Result<(), SkipReason> {
    if label == review.trigger_label {
        Ok(())
    } else {
        Err(SkipReason::NotTriggerLabel {
            label: label.to_owned(),
        })
    }
}

/// A `/reviewbot review` counts only from someone who may write: `admin`, `maintain`, `write`.
pub fn command(user: &str, permission: Permission) -> Result<(), SkipReason> {
    if permission.can_write() {
        Ok(())
    } else {
        Err(SkipReason::NotPermitted {
            user: user.to_owned(),
            permission,
        })
    }
}

/// Whether every changed file — with a patch or without — is in `ignore_paths`.
pub fn all_ignored(diff: &Diff, no_patch: &[String], review: &ReviewConfig) -> bool {
    if review.ignore_paths.is_empty() {
        return false;
    }
    let set = review.ignored();
    let paths: Vec<&str> = diff
        .files()
        .iter()
        .map(|f| f.path())
        .chain(no_patch.iter().map(String::as_str))
        .collect();
    !paths.is_empty() && paths.iter().all(|p| set.is_match(p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::model::User;
    use crate::ids::{HeadSha, PrNumber};

    fn pr() -> PullRequest {
        PullRequest {
            number: PrNumber(7),
            title: "t".into(),
            body: String::new(),
            state: "open".into(),
            draft: false,
            head: HeadSha::parse(&"a".repeat(40)).expect("sha"),
            base: HeadSha::parse(&"b".repeat(40)).expect("sha"),
            base_ref: "main".into(),
            labels: Vec::new(),
            author: User {
                login: "octocat".into(),
                kind: "User".into(),
            },
            changed_files: 2,
        }
    }

    #[test]
    fn the_gate_names_the_first_reason_in_order() {
        let review = ReviewConfig::default();
        assert_eq!(skip_reason(&pr(), &review), None);
        let closed = PullRequest {
            state: "closed".into(),
            draft: true,
            ..pr()
        };
        assert_eq!(skip_reason(&closed, &review), Some(SkipReason::Closed));
        let draft = PullRequest {
            draft: true,
            labels: vec![review.opt_out_label.clone()],
            ..pr()
        };
        assert_eq!(skip_reason(&draft, &review), Some(SkipReason::Draft));
        let opted = PullRequest {
            labels: vec!["bug".into(), review.opt_out_label.clone()],
            ..pr()
        };
        assert_eq!(
            skip_reason(&opted, &review).map(|r| r.as_str()),
            Some("opt_out")
        );
        let big = PullRequest {
            changed_files: review.max_files as u64 + 1,
            ..pr()
        };
        assert_eq!(
            skip_reason(&big, &review),
            Some(SkipReason::TooManyFiles {
                max_files: review.max_files
            })
        );
    }

    #[test]
    fn a_bots_pr_is_skipped_unless_review_bots() {
        let bot = PullRequest {
            author: User {
                login: "dependabot[bot]".into(),
                kind: "Bot".into(),
            },
            ..pr()
        };
        let review = ReviewConfig::default();
        assert_eq!(
            skip_reason(&bot, &review).map(|r| r.as_str()),
            Some("bot_author")
        );
        let drafted = PullRequest {
            draft: true,
            ..bot.clone()
        };
        assert_eq!(skip_reason(&drafted, &review), Some(SkipReason::Draft));
        let bots_too = ReviewConfig {
            review_bots: true,
            ..review
        };
        assert_eq!(skip_reason(&bot, &bots_too), None);
    }

    #[test]
    fn only_the_trigger_label_and_writers_ask_for_a_round() {
        let review = ReviewConfig {
            trigger_label: "bot:again".into(),
            ..ReviewConfig::default()
        };
        assert_eq!(labeled("bot:again", &review), Ok(()));
        let other = labeled("reviewbot:review", &review).unwrap_err();
        assert_eq!(other.as_str(), "not_trigger_label");
        for p in [Permission::Admin, Permission::Maintain, Permission::Write] {
            assert_eq!(command("ann", p), Ok(()), "{p:?}");
        }
        for p in [Permission::Triage, Permission::Read, Permission::None] {
            let refused = command("bob", p).unwrap_err();
            assert_eq!(refused.as_str(), "not_permitted", "{p:?}");
        }
    }

    #[test]
    fn a_custom_role_counts_as_its_base_permission() {
        let p = |role, base| Permission::from_api(role, base);
        assert_eq!(p(Some("maintain"), Some("write")), Permission::Maintain);
        assert_eq!(p(Some("triage"), Some("read")), Permission::Triage);
        assert!(p(Some("release-manager"), Some("write")).can_write());
        assert!(!p(Some("auditor"), Some("read")).can_write());
        assert_eq!(p(None, None), Permission::None);
        assert_eq!(p(Some("owner?"), Some("sudo")), Permission::None);
    }

    #[test]
    fn skip_reasons_serialise_as_their_names() {
        let json = serde_json::to_string(&SkipReason::OptOut { label: "x".into() }).unwrap();
        assert_eq!(json, "\"opt_out\"");
    }
}
