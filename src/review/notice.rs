//! What the review flow tells whoever started it, as data: the CLI prints each notice on
//! stderr, the App's worker logs and stores it. The words are in `render::notice`.

use crate::context::{ContextReport, LeftOut, Unavailable};
use crate::github::model::RepoName;
use crate::ids::{HeadSha, LensName, PrNumber};
use crate::review::gate::SkipReason;

/// One thing worth saying about a review run.
#[derive(Debug, Clone, PartialEq)]
pub enum Notice {
    /// The repository's config set a cap over the operator's; the operator's applies.
    CapNotRaised(crate::config::RaisedCap),
    /// A review by the bot `login` carries a round marker but is not counted: only `own`'s are
    /// (a workflow's assumed identity; an App's token posts as the App's bot).
    RoundsNotCounted { login: String, own: &'static str },
    /// The PR gets no round, and why.
    NotReviewing {
        repo: RepoName,
        pr: PrNumber,
        reason: SkipReason,
    },
    /// No lens was configured or named: the builtin lens reviews alone.
    BuiltinOnly,
    /// `head` already has its round (by `lens`, in per-lens mode); nothing to post.
    AlreadyReviewed {
        head: HeadSha,
        lens: Option<LensName>,
        round: u32,
        trigger_label: String,
    },
    /// The trigger named `asked`, but the PR's head had moved on to `reviewed` (a newer job
    /// follows for it).
    HeadMoved { asked: HeadSha, reviewed: HeadSha },
    /// Not posted: every lens failed.
    AllLensesFailed,
    /// Not posted: there is no token to post with.
    NoToken,
    /// Not posted: the opt-out `label` arrived while the round ran.
    OptedOutMeanwhile { label: String },
    /// GitHub refused the line comments (its `errors`); the round is posted with every finding
    /// in the body instead.
    CommentsRefused { errors: Vec<String> },
    /// Not posted: GitHub refused the write (`error`, a read-only token).
    PostForbidden { error: String },
    /// The trigger `label` could not be taken off after the round (`error`).
    LabelNotRemoved { label: String, error: String },
    /// The lenses have no snapshot of the repository, and why: they review from the diff alone.
    DiffAlone { why: Unavailable },
    /// The snapshot leaves out these entries of the archive.
    LeftOut(LeftOut),
    /// The installation's lenses spent today (UTC) at or over one of its daily budgets: its
    /// rounds wait for the next day.
    BudgetReached {
        installation: crate::ids::InstallationId,
        over: Budget,
    },
    /// The round's check run could not be created: the token may not write check runs
    /// (`error`, GitHub's 403). The round is posted without it.
    CheckRunForbidden { error: String },
    /// Creating or updating the round's check run failed otherwise (`error`).
    CheckRunFailed { error: String },
    /// A reply in a finding's thread was answered by `lens`.
    Answered {
        title: String,
        outcome: crate::review::markers::Outcome,
        lens: LensName,
    },
    /// A reply waits: its answer could not be made or posted (`error`); the next run tries
    /// again.
    AnswerFailed { title: String, error: String },
    /// Replies wait because no model lens is configured to answer them.
    NoLensToAnswer { replies: usize },
    /// A maintainer's ruling was not kept: there is no store.
    LearningsNotKept,
    /// Keeping a learning in the store failed (`error`).
    LearningFailed { error: String },
    /// A round posted with no store: what becomes of its findings is not kept.
    OutcomesNotKept,
    /// Keeping what became of findings failed (`error`).
    OutcomesFailed { error: String },
    /// Threads of findings whose lines changed and that no lens raised again were resolved.
    Addressed { threads: usize },
    /// Resolving an addressed thread failed (`error`).
    ResolveFailed { error: String },
}

impl Notice {
    /// What to say about a round's snapshot: why there is none, or what it left out. Quiet
    /// when no lens wanted one, and when the snapshot was turned off on purpose.
    pub fn for_context(report: &ContextReport) -> Option<Notice> {
        match &report.missing {
            Some(Unavailable::Disabled) => None,
            Some(why) => Some(Notice::DiffAlone { why: why.clone() }),
            None if report.left_out.total() > 0 => Some(Notice::LeftOut(report.left_out)),
            None => None,
        }
    }
}

/// A daily budget an installation reached, with what its lenses spent today (UTC).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Budget {
    /// `[serve] daily_budget_usd`: what the lenses cost, reported or at their declared prices.
    Dollars { spent: f64, budget: f64 },
    /// `[serve] daily_budget_tokens`: the tokens of the lenses with no cost to count.
    Tokens { spent: u64, budget: u64 },
}

/// A subscription lens falling back to a paid API: the warning its calls are billed (`first`:
/// the run's first such dispatch). Its words are in `render::notice`.
#[derive(Debug, Clone, Copy)]
pub struct BillingFallback<'a> {
    pub first: bool,
    pub lens: &'a str,
    pub from: &'a str,
    pub api: &'a str,
    pub model: &'a str,
    pub why: &'a str,
    pub key: &'a str,
}
