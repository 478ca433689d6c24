//! Gather: every GitHub read of the flow. Each call here is one step the flow needs; the
//! decisions about what it read are made in `review::{gate, scope, rounds}`.

use std::path::Path;

use crate::attributes::{Attributes, GITATTRIBUTES};
use crate::config::{RaisedCap, ReviewConfig};
use crate::context::{self, Snapshot, Unavailable};
use crate::diff::Diff;
use crate::flow::{FlowCtx, FlowError};
use crate::github::client::GithubError;
use crate::github::model::{Comparison, Permission, PullRequest, RepoName, Review, ReviewComment};
use crate::ids::{HeadSha, PrNumber};
use crate::repo_rules::{self, RuleFile};
use crate::review::markers::{ACTIONS_BOT, Identity, RoundMarker};
use crate::review::scope::diff_of;

/// Where the repository's own settings live, read from the PR's base branch.
pub const REPO_CONFIG_PATH: &str = ".github/reviewbot.toml";

/// The settings that apply to one PR: the operator's, overlaid with the repository's own file
/// on the base branch.
pub(super) struct Settings {
    pub review: ReviewConfig,
    /// Caps the repository asked to raise; the operator's apply.
    pub raised: Vec<RaisedCap>,
    /// Whether lenses get a snapshot (`[context] enabled`, the operator's and the repository's).
    pub snapshot: bool,
}

/// The PR, and the settings that apply to it.
pub(super) async fn pull_and_settings(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    pr: PrNumber,
) -> Result<(PullRequest, Settings), FlowError> {
    let pull = ctx.github.pull_request(repo, pr).await?;
    let text = ctx
        .github
        .file_at_ref(repo, REPO_CONFIG_PATH, &pull.base_ref)
        .await?;
    let settings = match &text {
        Some(text) => {
            let path = Path::new(REPO_CONFIG_PATH);
            let repo = ctx
                .config
                .review_for_repo(text, path)
                .map_err(FlowError::RepoConfig)?;
            Settings {
                review: repo.review,
                raised: repo.raised,
                snapshot: ctx
                    .config
                    .context_for_repo(text, path)
                    .map_err(FlowError::RepoConfig)?,
            }
        }
        None => Settings {
            review: ctx.config.review.clone(),
            raised: Vec::new(),
            snapshot: ctx.config.context.enabled,
        },
    };
    Ok((pull, settings))
}

/// The repository's review rules for `diff`'s files, read from the base branch only (a PR
/// cannot change the rules it is reviewed by): one request per candidate file, 404 = none.
/// A candidate GitHub cannot serve as a file (a directory, over the contents API's size) is
/// passed over.
pub(super) async fn repo_rules(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    base_ref: &str,
    diff: &Diff,
) -> Result<Vec<RuleFile>, GithubError> {
    let changed = diff.files().iter().map(|f| f.path());
    let mut reviews = Vec::new();
    for path in repo_rules::review_files(changed) {
        if let Some(text) = rules_file(ctx, repo, &path, base_ref).await? {
            reviews.push((path, text));
        }
    }
    let mut agents = None;
    for path in repo_rules::AGENT_FILES {
        if let Some(text) = rules_file(ctx, repo, path, base_ref).await?
            && repo_rules::review_section(&text).is_some()
        {
            agents = Some((path.to_owned(), text));
            break;
        }
    }
    Ok(repo_rules::collect(reviews, agents))
}

/// The base branch's root `.gitattributes` (none: nothing is generated or vendored).
pub(super) async fn attributes(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    base_ref: &str,
) -> Result<Attributes, GithubError> {
    let text = rules_file(ctx, repo, GITATTRIBUTES, base_ref).await?;
    Ok(text.as_deref().map(Attributes::parse).unwrap_or_default())
}

/// One file at the base, when GitHub serves it as a file.
async fn rules_file(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    path: &str,
    base_ref: &str,
) -> Result<Option<String>, GithubError> {
    match ctx.github.file_at_ref(repo, path, base_ref).await {
        Err(GithubError::InvalidResponse { message, .. }) => {
            tracing::warn!(%repo, path, %message, "repository file passed over");
            Ok(None)
        }
        other => other,
    }
}

/// The round's snapshot of the repository at `head`: GitHub's archive, extracted as it
/// downloads. Never an error: without a snapshot the round goes on from the diff alone, and
/// the report says why.
pub(super) async fn snapshot(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    head: &HeadSha,
) -> Result<Snapshot, Unavailable> {
    let mut body = ctx
        .github
        .tarball(repo, head)
        .await
        .map_err(Unavailable::from_github)?;
    context::extract_download(&mut body, context::caps(&ctx.config.context)).await
}

/// The snapshot a run's lenses read, once: none when no lens wants one (only the builtin lens
/// runs), and the reason when the repository or the operator turned it off.
pub(super) async fn snapshot_once(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    head: &HeadSha,
    wanted: bool,
    enabled: bool,
) -> Result<Option<Snapshot>, Unavailable> {
    match (wanted, enabled) {
        (false, _) => Ok(None),
        (true, false) => Err(Unavailable::Disabled),
        (true, true) => snapshot(ctx, repo, head).await.map(Some),
    }
}

/// The repository's learnings, as the prompts' notes (none without a store; a store that
/// cannot be read is a warning, and the round goes on without them).
pub(super) async fn notes(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    notices: &mut Vec<crate::review::notice::Notice>,
) -> Vec<crate::plan::Note> {
    let Some(store) = ctx.store else {
        return Vec::new();
    };
    match store.learnings(repo).await {
        Ok(learnings) => learnings
            .into_iter()
            .map(|l| crate::plan::Note {
                path: l.path,
                title: l.title,
                reply: l.reply,
                author: l.author,
            })
            .collect(),
        Err(e) => {
            notices.push(crate::review::notice::Notice::LearningFailed {
                error: e.to_string(),
            });
            Vec::new()
        }
    }
}

/// What `user` may do in `repo` (a user GitHub does not know has no permission).
pub(super) async fn permission(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    user: &str,
) -> Result<Permission, GithubError> {
    ctx.github.collaborator_permission(repo, user).await
}

/// The PR's diff, and the files GitHub gave no patch for.
pub(super) async fn files(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    pr: PrNumber,
    max_files: usize,
) -> Result<(Diff, Vec<String>), FlowError> {
    let files = ctx.github.pull_request_files(repo, pr, max_files).await?;
    diff_of(&files).map_err(FlowError::Patch)
}

/// Whose markers count as ours: the configured login, else the token's user; for a token that
/// cannot read `GET /user`, in a workflow `github-actions[bot]` (the author of what the
/// workflow's own token writes), elsewhere (an installation token) any bot. The flag says the
/// identity is the workflow's assumed one.
pub(super) async fn identity(ctx: &FlowCtx<'_>) -> Result<(Identity, bool), GithubError> {
    Ok(match &ctx.config.github.bot_login {
        Some(login) => (Identity::Login(login.clone()), false),
        None => match ctx.github.current_user().await? {
            Some(user) => (Identity::Login(user.login), false),
            None if ctx.workflow => (Identity::Login(ACTIONS_BOT.to_owned()), true),
            None => (Identity::AnyBot, false),
        },
    })
}

/// The PR's reviews, and — once we have posted a round — the review comments (thread replies
/// matter only then).
pub(super) async fn past_rounds(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    pr: PrNumber,
    identity: &Identity,
) -> Result<(Vec<Review>, Vec<ReviewComment>), GithubError> {
    let reviews = ctx.github.reviews(repo, pr).await?;
    // Whether we posted a round: our review holding something like a round marker.
    let any_round = reviews
        .iter()
        .any(|r| identity.owns(r.user.as_ref()) && RoundMarker::mentioned(&r.body));
    let comments = if any_round {
        ctx.github.review_comments(repo, pr).await?
    } else {
        Vec::new()
    };
    Ok((reviews, comments))
}

/// How `head` relates to the last reviewed head (an error when GitHub cannot compare them,
/// e.g. the old head is gone).
pub(super) async fn compare(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    last: &HeadSha,
    head: &HeadSha,
) -> Result<Comparison, GithubError> {
    ctx.github.compare(repo, last.as_str(), head.as_str()).await
}

/// The PR's labels now (the opt-out re-check right before posting).
pub(super) async fn labels(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    pr: PrNumber,
) -> Result<Vec<String>, GithubError> {
    ctx.github.labels(repo, pr).await
}

/// The PR's reviews now (to find out whether an unconfirmed write landed).
pub(super) async fn reviews(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    pr: PrNumber,
) -> Result<Vec<Review>, GithubError> {
    ctx.github.reviews(repo, pr).await
}
