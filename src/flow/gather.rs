//! Gather: every GitHub read of the flow. Each call here is one step the flow needs; the
//! decisions about what it read are made in `review::{gate, scope, rounds}`.

use std::collections::{BTreeMap, BTreeSet};
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
use crate::review::threads::{Rulings, Thread};

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

/// The base branch's files a round reads — its settings, `.gitattributes` and review rules —
/// read together: a PR cannot change the settings and rules it is reviewed by.
pub(super) struct BaseFiles {
    git_ref: String,
    /// Every path asked for so far, with its text (`None`: no such file, or not text).
    read: BTreeMap<String, Option<String>>,
}

impl BaseFiles {
    /// Reads `paths` not read yet, all in one request (one per 100 paths).
    async fn read(
        &mut self,
        ctx: &FlowCtx<'_>,
        repo: &RepoName,
        paths: impl IntoIterator<Item = String>,
    ) -> Result<(), GithubError> {
        let wanted: Vec<String> = paths
            .into_iter()
            .filter(|p| !self.read.contains_key(p))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let texts = ctx
            .github
            .files_at_ref(repo, &self.git_ref, &wanted)
            .await?;
        self.read.extend(wanted.into_iter().zip(texts));
        Ok(())
    }

    fn text(&self, path: &str) -> Option<&str> {
        self.read.get(path).and_then(|t| t.as_deref())
    }
}

/// The files every round reads from the base branch, asked for with the settings in the first
/// request: the settings, `.gitattributes`, and the root's rules files.
fn first_read() -> impl Iterator<Item = String> {
    [REPO_CONFIG_PATH, GITATTRIBUTES, repo_rules::REVIEW_FILE]
        .into_iter()
        .chain(repo_rules::AGENT_FILES)
        .map(str::to_owned)
}

/// The PR, the settings that apply to it, and the base branch's files read with them.
pub(super) async fn pull_and_settings(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    pr: PrNumber,
) -> Result<(PullRequest, Settings, BaseFiles), FlowError> {
    let pull = ctx.github.pull_request(repo, pr).await?;
    let mut base = BaseFiles {
        git_ref: pull.base_ref.clone(),
        read: BTreeMap::new(),
    };
    base.read(ctx, repo, first_read()).await?;
    let settings = match base.text(REPO_CONFIG_PATH) {
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
    Ok((pull, settings, base))
}

/// The repository's review rules for `diff`'s files, read from the base branch only (a PR
/// cannot change the rules it is reviewed by): the `REVIEW.md` of every directory of a changed
/// file not read yet, in one request.
pub(super) async fn repo_rules(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    base: &mut BaseFiles,
    diff: &Diff,
) -> Result<Vec<RuleFile>, GithubError> {
    let candidates = repo_rules::review_files(diff.files().iter().map(|f| f.path()));
    base.read(ctx, repo, candidates.iter().cloned()).await?;
    let reviews = candidates
        .into_iter()
        .filter_map(|path| base.text(&path).map(|text| (path.clone(), text.to_owned())))
        .collect();
    let agents = repo_rules::AGENT_FILES.into_iter().find_map(|path| {
        base.text(path)
            .filter(|text| repo_rules::review_section(text).is_some())
            .map(|text| (path.to_owned(), text.to_owned()))
    });
    Ok(repo_rules::collect(reviews, agents))
}

/// The base branch's root `.gitattributes` (none: nothing is generated or vendored).
pub(super) fn attributes(base: &BaseFiles) -> Attributes {
    base.text(GITATTRIBUTES)
        .map(Attributes::parse)
        .unwrap_or_default()
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
) -> Vec<crate::learning::Learning> {
    let Some(store) = ctx.store else {
        return Vec::new();
    };
    match store.learnings(repo).await {
        Ok(learnings) => learnings.into_iter().map(|l| l.learning).collect(),
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

/// The most repliers whose permission one run asks for; a reply by anyone past them is
/// taken as a reader's (it changes nothing in what counts: the gate stays closed).
const MAX_REPLIERS: usize = 50;

/// Who may change what counts in our findings' threads (`threads`, collected without rulings):
/// each human replier's permission, once each, and — when we have threads — who resolved
/// them. Neither a bot nor reviewbot itself ever rules.
pub(super) async fn rulings(
    ctx: &FlowCtx<'_>,
    repo: &RepoName,
    pr: PrNumber,
    identity: &Identity,
    threads: &[Thread],
) -> Result<Rulings, GithubError> {
    let mut rulings = Rulings::default();
    if threads.is_empty() {
        return Ok(rulings);
    }
    let mut asked: BTreeMap<String, bool> = BTreeMap::new();
    let repliers = Thread::repliers(threads);
    if repliers.len() > MAX_REPLIERS {
        tracing::warn!(%repo, repliers = repliers.len(), "too many repliers: the rest count as readers");
    }
    for login in repliers.into_iter().take(MAX_REPLIERS) {
        let writes = permission(ctx, repo, &login).await?.can_write();
        asked.insert(login.to_ascii_lowercase(), writes);
        if writes {
            rulings.writer(&login);
        }
    }
    let roots: BTreeSet<u64> = threads.iter().map(|t| t.root).collect();
    for t in ctx.github.review_threads(repo, pr).await? {
        let (Some(root), Some(by)) = (t.root, t.resolved_by.as_deref()) else {
            continue;
        };
        let ours = matches!(identity, Identity::Login(own) if own.eq_ignore_ascii_case(by));
        if !roots.contains(&root) || ours || by.ends_with("[bot]") {
            continue;
        }
        let writes = match asked.get(&by.to_ascii_lowercase()) {
            Some(w) => *w,
            None => {
                let w = permission(ctx, repo, by).await?.can_write();
                asked.insert(by.to_ascii_lowercase(), w);
                w
            }
        };
        if writes {
            rulings.dismissed(root);
        }
    }
    Ok(rulings)
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
