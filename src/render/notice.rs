//! The words of the flow's notices and of a round's scope. The CLI prints a notice as one
//! stderr line (`notice: …` or `warning: …`); the worker logs the same line.

use std::fmt;

use crate::context::{ContextReport, LeftOut, Unavailable};
use crate::github::model::Permission;
use crate::ids::HeadSha;
use crate::render::NOTICE_BUILTIN_ONLY;
use crate::review::Report;
use crate::review::gate::SkipReason;
use crate::review::notice::Notice;
use crate::review::scope::{Rescope, Scope};
use crate::unicode::escape as reveal_invisible;

impl fmt::Display for Notice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Notice::NotReviewing { repo, pr, reason } => {
                write!(f, "notice: not reviewing {repo}{pr}: {}", why_not(reason))
            }
            Notice::BuiltinOnly => f.write_str(NOTICE_BUILTIN_ONLY),
            Notice::RoundsNotCounted { login, own } => write!(
                f,
                "notice: a review by {login} carries a reviewbot round marker but does not count: \
                 in a workflow only {own}'s rounds count. If reviewbot posts as {login} (an App's \
                 token given as `github-token`), set `[github] bot_login = \"{login}\"`"
            ),
            Notice::CapNotRaised(cap) => write!(
                f,
                "notice: {} sets {} = {}, over the operator's {}; using {} (a repository may \
                 lower a cap, never raise it)",
                cap.file, cap.key, cap.asked, cap.kept, cap.kept
            ),
            Notice::AlreadyReviewed {
                head,
                lens,
                round,
                trigger_label,
            } => {
                let who = lens
                    .as_ref()
                    .map(|l| format!(" by lens {l}"))
                    .unwrap_or_default();
                write!(
                    f,
                    "notice: head {} was already reviewed{who} in round {round}; nothing to post \
                     (add the `{trigger_label}` label or comment `/reviewbot review` to ask for a \
                     new round)",
                    head.short()
                )
            }
            Notice::HeadMoved { asked, reviewed } => write!(
                f,
                "notice: the PR's head moved from {} to {} after the round was asked for; \
                 reviewing {}",
                asked.short(),
                reviewed.short(),
                reviewed.short()
            ),
            Notice::AllLensesFailed => {
                f.write_str("notice: not posted: every lens failed, so there is no review to post")
            }
            Notice::NoToken => f.write_str(
                "notice: not posted: GITHUB_TOKEN is not set; the review is printed above instead",
            ),
            Notice::OptedOutMeanwhile { label } => {
                write!(
                    f,
                    "notice: not posted: the PR got the `{label}` label meanwhile"
                )
            }
            Notice::CommentsRefused { errors } => write!(
                f,
                "notice: GitHub refused the line comments ({}); posting the round with every \
                 finding in the body",
                errors.join("; ")
            ),
            Notice::PostForbidden { error } => write!(
                f,
                "notice: not posted: {error} A workflow run for a fork PR gets a read-only \
                 token; the review is printed above."
            ),
            Notice::LabelNotRemoved { label, error } => {
                write!(f, "warning: could not remove the `{label}` label: {error}")
            }
            Notice::DiffAlone { why } => {
                write!(f, "notice: the lenses review from the diff alone: {why}")
            }
            Notice::LeftOut(left_out) => {
                write!(f, "notice: the snapshot {}", left_out_text(left_out))
            }
            Notice::BudgetReached { installation, over } => write!(
                f,
                "notice: daily review budget reached: installation {installation}'s lenses {} \
                 today (UTC); its rounds wait for the next UTC day (a `/reviewbot review` from a \
                 maintainer still runs one)",
                crate::render::check::spending(over)
            ),
            Notice::CheckRunForbidden { error } => write!(
                f,
                "notice: the check run could not be created: {error} The round is posted without \
                 it (an App installed before it asked for `checks: write` needs that permission \
                 accepted in the installation's settings)."
            ),
            Notice::CheckRunFailed { error } => {
                write!(f, "warning: the check run could not be written: {error}")
            }
            Notice::Answered {
                title,
                outcome,
                lens,
            } => write!(
                f,
                "notice: answered the reply to \"{title}\" in its thread ({}, by {lens})",
                crate::render::conversation::outcome_word(*outcome)
            ),
            Notice::AnswerFailed { title, error } => write!(
                f,
                "warning: the reply to \"{title}\" was not answered ({error}); the next run answers it"
            ),
            Notice::NoLensToAnswer { replies } => write!(
                f,
                "notice: {replies} {} in finding threads {} unanswered: only a model lens answers \
                 replies, and none is configured",
                plural(*replies, "reply", "replies"),
                plural(*replies, "stays", "stay"),
            ),
            Notice::LearningsNotKept => f.write_str(
                "notice: a maintainer's ruling on a finding was not kept as a learning: there is \
                 no store (set REVIEWBOT_DATABASE_URL to keep learnings)",
            ),
            Notice::LearningFailed { error } => {
                write!(f, "warning: a learning could not be stored: {error}")
            }
            Notice::OutcomesNotKept => f.write_str(
                "notice: what becomes of this round's findings is not kept: there is no store \
                 (set REVIEWBOT_DATABASE_URL for `reviewbot stats`)",
            ),
            Notice::OutcomesFailed { error } => {
                write!(
                    f,
                    "warning: what became of findings could not be stored: {error}"
                )
            }
            Notice::Addressed { threads } => write!(
                f,
                "notice: resolved {threads} {} whose finding was addressed",
                plural(*threads, "thread", "threads")
            ),
            Notice::ResolveFailed { error } => {
                write!(
                    f,
                    "warning: an addressed thread could not be resolved: {error}"
                )
            }
        }
    }
}

/// Why there is no snapshot, after "review from the diff alone: ".
impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::Disabled => {
                f.write_str("the snapshot is turned off ([context] enabled = false)")
            }
            Unavailable::NoCheckout => f.write_str(
                "no snapshot of the repository (give --checkout DIR, a directory holding the \
                 diff's new side, to let them read more)",
            ),
            Unavailable::Refused(error) => {
                write!(f, "GitHub refused the repository's archive: {error}")
            }
            Unavailable::Download(error) => {
                write!(
                    f,
                    "the repository's archive could not be downloaded: {error}"
                )
            }
            Unavailable::OverBytes { max } => write!(
                f,
                "the repository's files are larger than max_snapshot = {}",
                size(*max)
            ),
            Unavailable::OverFiles { max } => write!(
                f,
                "the repository's archive holds more than max_snapshot_files = {max} entries"
            ),
            Unavailable::OverHeaders { max } => write!(
                f,
                "the repository's archive holds more than {max} tar headers (two for each of \
                 max_snapshot_files, and 16)"
            ),
            Unavailable::OverRead { max } => write!(
                f,
                "reading the repository's archive took more than {} (max_snapshot, 8 KiB for \
                 each of max_snapshot_files, and 2 MiB), compressed or not",
                // A sum of caps in different units: in whole MB once it is that large.
                match *max {
                    m if m >= 10_000_000 => format!("{} MB", m / 1_000_000),
                    m => size(m),
                }
            ),
            Unavailable::TooDeep { max } => write!(
                f,
                "the repository's archive holds a path more than {max} levels deep"
            ),
            Unavailable::TooSlow { max } => write!(
                f,
                "the repository's archive took longer than {} s to extract",
                max.as_secs()
            ),
            Unavailable::Corrupt(error) => {
                write!(f, "the repository's archive could not be read: {error}")
            }
            Unavailable::Disk(error) => write!(f, "the snapshot could not be written: {error}"),
        }
    }
}

/// "leaves out 3 entries of the archive: 2 links, 1 special file".
fn left_out_text(left_out: &LeftOut) -> String {
    let kinds: Vec<String> = [
        (
            left_out.links,
            "symbolic or hard link",
            "symbolic or hard links",
        ),
        (left_out.special, "special file", "special files"),
        (
            left_out.refused,
            "entry with an unsafe or taken name",
            "entries with unsafe or taken names",
        ),
    ]
    .into_iter()
    .filter(|(n, _, _)| *n > 0)
    .map(|(n, one, many)| format!("{n} {}", if n == 1 { one } else { many }))
    .collect();
    let total = left_out.total();
    format!(
        "leaves out {total} {} of the archive: {}",
        if total == 1 { "entry" } else { "entries" },
        kinds.join(", ")
    )
}

/// A lens that could not read the round's snapshot and reviewed the diff alone: Codex's sandbox
/// cannot start on this host. `why` is what the probe said; only its `bwrap:` line when it has
/// one (the rest is the CLI's own chatter, paths of this machine included).
fn codex_sandbox_unavailable(lens: &str, why: &str) -> String {
    let why = why
        .split(['\n', ';'])
        .map(str::trim)
        .find(|l| l.starts_with("bwrap:"))
        .unwrap_or(why.trim());
    format!(
        "lens {lens}: codex cannot start its sandbox on this host, so it reviews the diff alone ({why})"
    )
}

/// A lens whose OpenAI-compatible (or Anthropic) server refused tools: it reviewed the diff alone.
fn no_tool_support(lens: &str, backend: &str) -> String {
    format!("lens {lens}: the {backend} server does not take tools, so it reviews the diff alone")
}

impl fmt::Display for crate::lens::LensNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            crate::lens::LensNotice::NoSandbox { lens, why } => {
                f.write_str(&codex_sandbox_unavailable(lens.as_str(), why))
            }
            crate::lens::LensNotice::NoTools { lens, backend } => {
                f.write_str(&no_tool_support(lens.as_str(), backend.as_str()))
            }
        }
    }
}

/// The JSON `context.note`: why there is no snapshot, or what it left out.
pub fn context_note(report: &ContextReport) -> Option<String> {
    report.note().map(|n| n.to_string())
}

/// A byte count in the unit it was most likely written in ("500MB", "2GiB"), else bytes.
fn size(bytes: u64) -> String {
    let units: [(u64, &str); 6] = [
        (1 << 30, "GiB"),
        (1_000_000_000, "GB"),
        (1 << 20, "MiB"),
        (1_000_000, "MB"),
        (1 << 10, "KiB"),
        (1000, "KB"),
    ];
    units
        .iter()
        .find(|(unit, _)| bytes >= *unit && bytes.is_multiple_of(*unit))
        .map_or_else(
            || format!("{bytes} bytes"),
            |(unit, name)| format!("{}{name}", bytes / unit),
        )
}

/// Why a PR gets no round, after "not reviewing o/r#7: ".
fn why_not(reason: &SkipReason) -> String {
    match reason {
        SkipReason::Closed => "it is closed".to_owned(),
        SkipReason::Draft => {
            "it is a draft (a round starts when it is ready for review)".to_owned()
        }
        SkipReason::OptOut { label } => format!("it carries the `{label}` label"),
        SkipReason::TooManyFiles { max_files } => {
            format!("it changes more than max_files = {max_files} files")
        }
        SkipReason::AllIgnored => "every changed file is ignored by ignore_paths".to_owned(),
        SkipReason::BotAuthor { login } => format!(
            "the bot account {} opened it ([review] review_bots = true reviews bots' PRs)",
            reveal_invisible(login)
        ),
        SkipReason::AlreadyReviewed => "its head was already reviewed".to_owned(),
        // The label's name comes from an event: shown, never acted on.
        SkipReason::NotTriggerLabel { label } => format!(
            "the label `{}` is not the trigger label",
            reveal_invisible(label)
        ),
        SkipReason::NotPermitted { user, permission } => format!(
            "{} asked with `/reviewbot review` but has {} permission (it takes write, maintain \
             or admin)",
            reveal_invisible(user),
            match permission {
                Permission::None => "no",
                p => p.as_str(),
            }
        ),
    }
}

/// `Reviewed what changed since round 1 (head 1a2b3c4).`, or why everything was reviewed again.
impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (round, head) = (self.since_round, self.since_head.short());
        match self.everything {
            None => write!(
                f,
                "Reviewed what changed since round {round} (head {head})."
            ),
            Some(why) => {
                let why = match why {
                    Rescope::Unreachable => "the last reviewed head is no longer reachable",
                    Rescope::Rewritten => "the branch was rewritten",
                    Rescope::TooManyFiles => "too many files changed",
                    Rescope::Unreadable => "the changes since could not be read",
                };
                write!(
                    f,
                    "Reviewed the whole change again: {why} since round {round} (head {head})."
                )
            }
        }
    }
}

/// Why a model lens had nothing to review: no file fits its token budget beside the fixed
/// prompt. The lens's error, and (with `warning: `) a line on stderr.
impl fmt::Display for crate::plan::NothingFits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&nothing_fits(self))
    }
}

fn nothing_fits(why: &crate::plan::NothingFits) -> String {
    format!(
        "nothing fits the token budget of {} tokens ({} after a {}% margin): the fixed prompt \
         takes {} and the smallest of the {} files {}; raise `[review] token_budget` to at \
         least {} to review it",
        why.token_budget,
        why.usable,
        why.margin_percent,
        why.fixed,
        why.files,
        why.smallest,
        why.needed,
    )
}

/// The warning when a subscription lens falls back to a paid API: the run's first leads with
/// "billing", so the first paid dispatch is the one the user hears about.
impl fmt::Display for crate::review::notice::BillingFallback<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lead = if self.first {
            "warning: billing"
        } else {
            "warning"
        };
        write!(
            f,
            "{lead}: lens {} falls back from {} to the {} API with model {} ({}); these calls are \
             billed to {}. Pass --no-api-fallback to prevent this.",
            self.lens, self.from, self.api, self.model, self.why, self.key
        )
    }
}

/// What cross-examination says when it could not check every finding it meant to.
impl fmt::Display for crate::review::verify::VerifyNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::review::verify::VerifyNotice;
        let findings = |n: usize| match n {
            1 => "1 finding".to_owned(),
            n => format!("{n} findings"),
        };
        match self {
            VerifyNotice::NoVerifier { unchecked } => write!(
                f,
                "notice: {} {} not cross-examined: no other model lens answered this round.",
                findings(*unchecked),
                if *unchecked == 1 { "was" } else { "were" }
            ),
            VerifyNotice::Failed {
                verifier,
                unchecked,
                error,
            } => write!(
                f,
                "notice: cross-examination by {verifier} failed ({}); {} stay as the review \
                 left them.",
                crate::render::clean(error),
                findings(*unchecked)
            ),
        }
    }
}

/// The JSON `context.note` and the evidence's: why there is no snapshot, or what it left out.
impl fmt::Display for crate::context::ContextNote<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0.missing {
            Some(why) => write!(f, "the lenses reviewed from the diff alone: {why}"),
            None => write!(f, "the snapshot {}", left_out_text(&self.0.left_out)),
        }
    }
}

/// A job's outcome in a few words, as the App's store keeps it: each review's fate, and the
/// replies answered in threads.
pub fn job_outcome(reports: &[Report], head: &HeadSha, answers: usize) -> String {
    let mut parts = Vec::new();
    for r in reports {
        parts.push(match (&r.skipped, r.round, r.posted) {
            (Some(why), _, _) => format!("skipped: {}", why.as_str()),
            (None, Some(n), true) => format!("round {n} posted"),
            (None, Some(n), false) => format!("round {n} not posted"),
            (None, None, _) => "no round".to_owned(),
        });
    }
    if answers > 0 {
        parts.push(format!(
            "{answers} {} answered",
            plural(answers, "reply", "replies")
        ));
    }
    if parts.is_empty() {
        parts.push("no round".to_owned());
    }
    format!("{} (head {})", parts.join("; "), head.short())
}

/// `one` for 1, else `many`.
fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 { one } else { many }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{ContextReport, LeftOut, Unavailable};
    use crate::github::model::RepoName;
    use crate::ids::{HeadSha, LensName, PrNumber};

    fn sha(c: char) -> HeadSha {
        HeadSha::parse(&c.to_string().repeat(40)).expect("sha")
    }

    #[test]
    fn every_notice_reads_as_one_line() {
        let repo = RepoName::parse("octo/app").expect("repo");
        let skip = |reason| Notice::NotReviewing {
            repo: repo.clone(),
            pr: PrNumber(7),
            reason,
        };
        let notices = [
            skip(SkipReason::Closed),
            skip(SkipReason::Draft),
            skip(SkipReason::OptOut {
                label: "reviewbot:no-review".into(),
            }),
            skip(SkipReason::TooManyFiles { max_files: 300 }),
            skip(SkipReason::AllIgnored),
            skip(SkipReason::BotAuthor {
                login: "dependabot[bot]".into(),
            }),
            skip(SkipReason::NotTriggerLabel {
                label: "bug\u{202E}".into(),
            }),
            skip(SkipReason::NotPermitted {
                user: "mallory".into(),
                permission: Permission::Read,
            }),
            Notice::BuiltinOnly,
            Notice::AlreadyReviewed {
                head: sha('a'),
                lens: Some(LensName::new("terra")),
                round: 2,
                trigger_label: "reviewbot:review".into(),
            },
            Notice::HeadMoved {
                asked: sha('a'),
                reviewed: sha('b'),
            },
            Notice::AllLensesFailed,
            Notice::NoToken,
            Notice::OptedOutMeanwhile {
                label: "reviewbot:no-review".into(),
            },
            Notice::CommentsRefused {
                errors: vec!["line must be part of the diff".into(), "x".into()],
            },
            Notice::PostForbidden {
                error: "GitHub refused creating a review (403): no.".into(),
            },
            Notice::LabelNotRemoved {
                label: "reviewbot:review".into(),
                error: "boom".into(),
            },
            Notice::DiffAlone {
                why: Unavailable::NoCheckout,
            },
            Notice::CheckRunForbidden {
                error: "GitHub refused creating the check run `reviewbot` on octo/app (403): \
                        Resource not accessible by integration. the token needs the \"Checks\" \
                        permission with read and write access (`checks: write` in a workflow's \
                        `permissions:`)."
                    .into(),
            },
            Notice::CheckRunFailed {
                error: "GitHub rejected updating check run 7 on octo/app (422): Invalid request"
                    .into(),
            },
            Notice::DiffAlone {
                why: Unavailable::Refused(
                    "downloading the archive of octo/app at 1a2b3c4d was not found (404): Not Found."
                        .into(),
                ),
            },
            Notice::DiffAlone {
                why: Unavailable::Download(
                    "GitHub is unreachable: downloading the archive: HTTP 502 (after 3 attempts)"
                        .into(),
                ),
            },
            Notice::DiffAlone {
                why: Unavailable::OverBytes { max: 500_000_000 },
            },
            Notice::DiffAlone {
                why: Unavailable::OverFiles { max: 100_000 },
            },
            Notice::DiffAlone {
                why: Unavailable::OverHeaders { max: 200_016 },
            },
            Notice::DiffAlone {
                why: Unavailable::OverRead {
                    max: 1_321_297_152,
                },
            },
            Notice::DiffAlone {
                why: Unavailable::TooDeep { max: 100 },
            },
            Notice::DiffAlone {
                why: Unavailable::TooSlow {
                    max: std::time::Duration::from_secs(180),
                },
            },
            Notice::DiffAlone {
                why: Unavailable::Corrupt("invalid gzip header".into()),
            },
            Notice::DiffAlone {
                why: Unavailable::Disk("No space left on device (os error 28)".into()),
            },
            Notice::LeftOut(LeftOut {
                links: 2,
                special: 1,
                refused: 0,
            }),
            Notice::LeftOut(LeftOut {
                links: 0,
                special: 0,
                refused: 1,
            }),
            Notice::BudgetReached {
                installation: crate::ids::InstallationId(77),
                over: crate::review::notice::Budget::Dollars {
                    spent: 5.0312,
                    budget: 5.0,
                },
            },
            Notice::BudgetReached {
                installation: crate::ids::InstallationId(77),
                over: crate::review::notice::Budget::Tokens {
                    spent: 2_000_512,
                    budget: 2_000_000,
                },
            },
        ];
        let text: Vec<String> = notices.iter().map(ToString::to_string).collect();
        assert!(text.iter().all(|t| !t.contains('\n')));
        insta::assert_snapshot!(text.join("\n"));
    }

    #[test]
    fn context_notes() {
        let report = |missing, left_out| ContextReport {
            missing,
            left_out,
            ..ContextReport::default()
        };
        let notes: Vec<String> = [
            report(None, LeftOut::default()),
            report(Some(Unavailable::Disabled), LeftOut::default()),
            report(
                Some(Unavailable::OverBytes { max: 2 << 30 }),
                LeftOut::default(),
            ),
            report(
                Some(Unavailable::OverBytes { max: 1234 }),
                LeftOut::default(),
            ),
            report(
                None,
                LeftOut {
                    links: 1,
                    special: 2,
                    refused: 3,
                },
            ),
        ]
        .iter()
        .map(|r| context_note(r).unwrap_or_else(|| "null".into()))
        .collect();
        insta::assert_snapshot!(notes.join("\n"));
        // A snapshot turned off on purpose is said in the JSON, never on stderr.
        assert_eq!(
            Notice::for_context(&report(Some(Unavailable::Disabled), LeftOut::default())),
            None
        );
        assert_eq!(Notice::for_context(&ContextReport::default()), None);
    }

    #[test]
    fn scopes() {
        let since = Scope {
            since_round: 1,
            since_head: sha('c'),
            everything: None,
        };
        assert_eq!(
            since.to_string(),
            "Reviewed what changed since round 1 (head cccccccc)."
        );
        let again = Scope {
            everything: Some(Rescope::Rewritten),
            ..since
        };
        assert_eq!(
            again.to_string(),
            "Reviewed the whole change again: the branch was rewritten since round 1 (head cccccccc)."
        );
    }

    #[test]
    fn lens_notices_read_well() {
        let text = [
            codex_sandbox_unavailable(
                "terra",
                "WARNING: proceeding, even though we could not create PATH aliases\nbwrap: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)\n",
            ),
            codex_sandbox_unavailable("terra", "`codex` was not found"),
            no_tool_support("local", "openai"),
        ];
        insta::assert_snapshot!(text.join("\n"));
    }

    #[test]
    fn what_cross_examination_says_when_it_cannot_check() {
        use crate::review::verify::VerifyNotice;
        let text = [
            VerifyNotice::NoVerifier { unchecked: 1 },
            VerifyNotice::NoVerifier { unchecked: 3 },
            VerifyNotice::Failed {
                verifier: LensName::new("terra"),
                unchecked: 2,
                error: "timed out after 300s\u{202E}".to_owned(),
            },
        ]
        .map(|n| n.to_string());
        insta::assert_snapshot!(text.join("\n"));
    }
}
