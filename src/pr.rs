//! Reviewing a pull request on GitHub: gate, gather, scope, review, settle the round, post.
//!
//! GitHub is reached only through [`GithubClient`]; the decisions — what to skip, what a round
//! reviews, posts and counts — are made by the pure modules (`review::rounds`, `render`).
//! Requests for a first round of an F-file PR: the PR, ⌈F/100⌉ file pages, the base branch's
//! config, the reviews, the identity (unless `bot_login` is set), the label re-check and the
//! POST. A later round adds the thread comments and the compare call.

use std::path::Path;

use crate::config::{Config, PostMode, ReviewConfig};
use crate::diff::{Diff, LineKind, PatchFile};
use crate::evidence::Record;
use crate::github::client::{GithubClient, GithubError};
use crate::github::model::{NewComment, NewReview, PrFile, PullRequest, RepoName, Review};
use crate::ids::{HeadSha, LensName, PrNumber};
use crate::lens::{LensSpec, PrInfo, Provenance};
use crate::render::markdown::{self, BodyOptions};
use crate::review::finding::Finding;
use crate::review::merge::merge;
use crate::review::panel::{Panel, PanelObserver};
use crate::review::pipeline;
use crate::review::rounds::{History, Identity, settle};
use crate::review::{NotReviewed, NotReviewedReason, Report};

/// Where the repository's own settings live, read from the PR's base branch.
pub const REPO_CONFIG_PATH: &str = ".github/reviewbot.toml";

/// GitHub's compare endpoint lists at most this many files; at the cap the interdiff is
/// incomplete and the round reviews everything again.
const COMPARE_FILE_CAP: usize = 300;

/// What to review and whether to post.
#[derive(Debug, Clone)]
pub struct PrRequest {
    pub repo: RepoName,
    pub number: PrNumber,
    pub post: bool,
    /// An explicit request (trigger label, `/reviewbot review`): review even a head already
    /// reviewed.
    pub force: bool,
    /// Lenses named on the command line (they win over every config).
    pub lenses: Vec<String>,
}

/// The outcome: one report per review (several in per-lens mode), the PR's diff, and what the
/// user should be told on stderr.
#[derive(Debug)]
pub struct PrOutcome {
    pub reports: Vec<Report>,
    pub diff: Diff,
    pub notices: Vec<String>,
    /// The `[review]` settings that applied (operator's plus the repository's).
    pub review: ReviewConfig,
}

/// Why a PR review could not run: a GitHub refusal (exit 3) or a bad configuration (exit 2).
#[derive(Debug, thiserror::Error)]
pub enum PrError {
    #[error(transparent)]
    Github(#[from] GithubError),
    #[error("{0}")]
    Config(String),
}

/// Reviews one pull request and, when asked, posts the round.
pub async fn review_pr(
    client: &GithubClient,
    has_token: bool,
    config: &Config,
    req: &PrRequest,
    panel: &Panel,
    observer: &dyn PanelObserver,
) -> Result<PrOutcome, PrError> {
    let pr = client.pull_request(&req.repo, req.number).await?;
    let repo_text = client
        .file_at_ref(&req.repo, REPO_CONFIG_PATH, &pr.base_ref)
        .await?;
    let review = match &repo_text {
        Some(text) => config
            .review_for_repo(text, Path::new(REPO_CONFIG_PATH))
            .map_err(|e| PrError::Config(format!("the repository's {e}")))?,
        None => config.review.clone(),
    };
    let mut outcome = PrOutcome {
        reports: Vec::new(),
        diff: Diff::default(),
        notices: Vec::new(),
        review,
    };
    let head = pr.head.clone();

    if let Some(reason) = gate(&pr, &outcome.review) {
        outcome.notices.push(format!(
            "notice: not reviewing {}{}: {}",
            req.repo,
            req.number,
            skip_text(reason, &outcome.review)
        ));
        outcome.reports.push(skipped(reason, &head));
        return Ok(outcome);
    }

    let files = client
        .pull_request_files(&req.repo, req.number, outcome.review.max_files)
        .await?;
    let (diff, no_patch) =
        diff_of(&files).map_err(|e| PrError::Config(format!("GitHub's patch for {e}")))?;
    outcome.diff = diff.clone();
    if all_ignored(&diff, &no_patch, &outcome.review) {
        outcome.notices.push(format!(
            "notice: not reviewing {}{}: every changed file is ignored by ignore_paths",
            req.repo, req.number
        ));
        outcome.reports.push(skipped("all_ignored", &head));
        return Ok(outcome);
    }

    let selection = config
        .select_lenses(&outcome.review, &req.lenses)
        .map_err(PrError::Config)?;
    if selection.fallback {
        outcome
            .notices
            .push(crate::render::NOTICE_BUILTIN_ONLY.to_owned());
    }
    let lenses = selection.lenses;
    let identity = match &config.github.bot_login {
        Some(login) => Identity::Login(login.clone()),
        None => match client.current_user().await? {
            Some(user) => Identity::Login(user.login),
            None => Identity::AnyBot,
        },
    };
    let reviews = client.reviews(&req.repo, req.number).await?;
    let any_round = History::read(&reviews, &[], &identity, None).last_round() > 0
        || reviews
            .iter()
            .any(|r| identity.owns(r.user.as_ref()) && r.body.contains("<!-- reviewbot round="));
    // Thread replies matter only once we have posted something.
    let comments = if any_round {
        client.review_comments(&req.repo, req.number).await?
    } else {
        Vec::new()
    };
    let pr_info = PrInfo {
        title: pr.title.clone(),
        body: pr.body.clone(),
        number: req.number.0,
        head: head.to_string(),
    };

    let per_lens = outcome.review.post == PostMode::PerLens;
    let groups: Vec<Option<LensName>> = if per_lens {
        lenses.iter().map(|l| Some(l.name.clone())).collect()
    } else {
        vec![None]
    };
    let histories: Vec<History> = groups
        .iter()
        .map(|lens| {
            History::read(
                &reviews,
                &comments,
                &identity,
                lens.as_ref().map(LensName::as_str),
            )
        })
        .collect();

    // The trigger label asks for a round now, even on a head already reviewed.
    let triggered = pr.labels.iter().any(|l| l == &outcome.review.trigger_label);
    let force = req.force || triggered;
    // Which groups still need a round on this head.
    let mut todo = Vec::new();
    for (lens, history) in groups.iter().zip(&histories) {
        match history.reviewed(&head) {
            Some(done) if !force => {
                let mut report = skipped("already_reviewed", &head);
                report.round = Some(done.round);
                report.held_verdict = Some(done.verdict);
                let who = lens
                    .as_ref()
                    .map(|l| format!(" by lens {l}"))
                    .unwrap_or_default();
                outcome.notices.push(format!(
                    "notice: head {} was already reviewed{who} in round {}; nothing to post (add the `{}` label or comment `/reviewbot review` to ask for a new round)",
                    head.short(),
                    done.round,
                    outcome.review.trigger_label
                ));
                outcome.reports.push(report);
            }
            _ => todo.push((lens.clone(), history)),
        }
    }
    if todo.is_empty() {
        return Ok(outcome);
    }
    let run_lenses: Vec<LensSpec> = match per_lens {
        true => lenses
            .iter()
            .filter(|l| todo.iter().any(|(n, _)| n.as_ref() == Some(&l.name)))
            .cloned()
            .collect(),
        false => lenses.clone(),
    };

    // Scope: a later round reviews the interdiff since the last reviewed head, when that head
    // is an ancestor of this one (all groups share the latest round's head in practice).
    let latest = todo
        .iter()
        .filter_map(|(_, h)| h.latest())
        .max_by_key(|m| m.round)
        .cloned();
    let (scoped, scope) = match &latest {
        Some(last) if last.head != head => {
            let (d, s) =
                interdiff_scope(client, &req.repo, &diff, &last.head, &head, last.round).await;
            (d, Some(s))
        }
        _ => (diff.clone(), None),
    };

    let reviewed = pipeline::review_with(
        scoped,
        Some(&diff),
        Some(pr_info),
        &run_lenses,
        &outcome.review,
        panel,
        observer,
    )
    .await;
    let mut not_reviewed = reviewed.report.not_reviewed.clone();
    not_reviewed.extend(no_patch.iter().map(|p| NotReviewed {
        path: p.clone(),
        reason: NotReviewedReason::NoPatch,
    }));

    for (lens, history) in todo {
        let (findings, lenses_prov): (Vec<Finding>, Vec<Provenance>) = match &lens {
            None => (
                reviewed.report.findings.clone(),
                reviewed.report.lenses.clone(),
            ),
            Some(name) => (
                merge(
                    reviewed
                        .located
                        .iter()
                        .filter(|f| f.lenses.contains(name))
                        .cloned()
                        .collect(),
                    outcome.review.min_blocking_confidence,
                ),
                reviewed
                    .report
                    .lenses
                    .iter()
                    .filter(|p| &p.lens == name)
                    .cloned()
                    .collect(),
            ),
        };
        let settled = settle(findings, history, &diff);
        if let Some(ev) = &panel.evidence {
            for (f, why) in &settled.suppressed {
                ev.record(&Record::Suppressed {
                    fingerprint: &f.fingerprint,
                    title: &f.title,
                    reason: why,
                });
            }
        }
        let mut report = Report {
            head: Some(head.clone()),
            round: Some(history.last_round() + 1),
            findings: settled.post,
            carried_over: settled.carried,
            lenses: lenses_prov,
            not_reviewed: not_reviewed.clone(),
            scope: scope.clone(),
            ..Report::empty()
        };
        if req.post && !report.all_lenses_failed() {
            post(
                client,
                has_token,
                req,
                &outcome.review,
                per_lens,
                &mut report,
                &identity,
                &mut outcome.notices,
            )
            .await?;
        } else if req.post {
            outcome.notices.push(
                "notice: not posted: every lens failed, so there is no review to post".to_owned(),
            );
        }
        outcome.reports.push(report);
    }
    // The request is answered: take the trigger label off, so the next push is a normal round.
    if triggered
        && outcome.reports.iter().any(|r| r.posted)
        && let Err(e) = client
            .remove_label(&req.repo, req.number, &outcome.review.trigger_label)
            .await
    {
        outcome.notices.push(format!(
            "warning: could not remove the `{}` label: {e}",
            outcome.review.trigger_label
        ));
    }
    Ok(outcome)
}

/// Why a PR gets no round, before anything is fetched beyond the PR and its config.
fn gate(pr: &PullRequest, review: &ReviewConfig) -> Option<&'static str> {
    if pr.state != "open" {
        Some("closed")
    } else if pr.draft {
        Some("draft")
    } else if pr.labels.iter().any(|l| l == &review.opt_out_label) {
        Some("opt_out")
    } else if pr.changed_files > review.max_files as u64 {
        Some("too_many_files")
    } else {
        None
    }
}

fn skip_text(reason: &str, review: &ReviewConfig) -> String {
    match reason {
        "closed" => "it is closed".to_owned(),
        "draft" => "it is a draft (a round starts when it is ready for review)".to_owned(),
        "opt_out" => format!("it carries the `{}` label", review.opt_out_label),
        "too_many_files" => format!(
            "it changes more than max_files = {} files",
            review.max_files
        ),
        other => other.to_owned(),
    }
}

fn skipped(reason: &str, head: &HeadSha) -> Report {
    Report {
        head: Some(head.clone()),
        skipped: Some(reason.to_owned()),
        ..Report::empty()
    }
}

/// The PR's diff from its file records; files GitHub gave no patch for are listed apart.
fn diff_of(files: &[PrFile]) -> Result<(Diff, Vec<String>), crate::diff::ParseError> {
    let no_patch = files
        .iter()
        .filter(|f| f.patch.is_none())
        .map(|f| f.filename.clone())
        .collect();
    let diff = Diff::from_patches(
        files
            .iter()
            .filter(|f| f.patch.is_some())
            .map(|f| PatchFile {
                filename: &f.filename,
                previous_filename: f.previous_filename.as_deref(),
                status: &f.status,
                patch: f.patch.as_deref(),
            }),
    )?;
    Ok((diff, no_patch))
}

fn all_ignored(diff: &Diff, no_patch: &[String], review: &ReviewConfig) -> bool {
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

/// The part of the PR a later round reviews: the PR's hunks that hold a line added since the
/// last reviewed head. After an "Update branch" merge the interdiff also carries base code,
/// which the PR's own diff does not: intersecting drops it. A rewritten branch (not a
/// descendant), a missing old head or a compare at its file cap means reviewing everything.
async fn interdiff_scope(
    client: &GithubClient,
    repo: &RepoName,
    diff: &Diff,
    last: &HeadSha,
    head: &HeadSha,
    last_round: u32,
) -> (Diff, String) {
    let everything = |why: &str| {
        (
            diff.clone(),
            format!(
                "Reviewed the whole change again: {why} since round {last_round} (head {}).",
                last.short()
            ),
        )
    };
    let cmp = match client.compare(repo, last.as_str(), head.as_str()).await {
        Ok(cmp) => cmp,
        Err(_) => return everything("the last reviewed head is no longer reachable"),
    };
    if cmp.status != "ahead" {
        return everything("the branch was rewritten");
    }
    if cmp.files.len() >= COMPARE_FILE_CAP {
        return everything("too many files changed");
    }
    let Ok((inter, _)) = diff_of(&cmp.files) else {
        return everything("the changes since could not be read");
    };
    let mut added: std::collections::BTreeMap<&str, std::collections::BTreeSet<u32>> =
        Default::default();
    for f in inter.files() {
        let lines = added.entry(f.path()).or_default();
        lines.extend(
            inter
                .file_lines(f)
                .filter(|l| l.kind == LineKind::Added)
                .filter_map(|l| l.new),
        );
    }
    let scoped = diff.subset(|_, f| {
        added.get(f.path()).is_some_and(|lines| {
            diff.file_lines(f)
                .any(|l| l.kind == LineKind::Added && l.new.is_some_and(|n| lines.contains(&n)))
                || (f.hunks.is_empty() && !lines.is_empty())
        })
    });
    let mut scoped = scoped;
    scoped.retain_hunks(|f, h| {
        let Some(lines) = added.get(f.path()) else {
            return false;
        };
        (h.new_start..h.new_start.saturating_add(h.new_count)).any(|n| lines.contains(&n))
    });
    (
        scoped,
        format!(
            "Reviewed what changed since round {last_round} (head {}).",
            last.short()
        ),
    )
}

/// Posts one round: checks the opt-out label again, sends the review with its line comments,
/// and on a 422 sends it again with every finding in the body. Never blindly re-sends a write
/// that may have landed: it looks for its marker first.
#[allow(clippy::too_many_arguments)]
async fn post(
    client: &GithubClient,
    has_token: bool,
    req: &PrRequest,
    review: &ReviewConfig,
    per_lens: bool,
    report: &mut Report,
    identity: &Identity,
    notices: &mut Vec<String>,
) -> Result<(), PrError> {
    if !has_token {
        notices.push(
            "notice: not posted: GITHUB_TOKEN is not set; the review is printed above instead"
                .to_owned(),
        );
        return Ok(());
    }
    let labels = client.labels(&req.repo, req.number).await?;
    if labels.iter().any(|l| l == &review.opt_out_label) {
        notices.push(format!(
            "notice: not posted: the PR got the `{}` label meanwhile",
            review.opt_out_label
        ));
        report.skipped = Some("opt_out".to_owned());
        return Ok(());
    }
    let opts = BodyOptions {
        opt_out_label: &review.opt_out_label,
        max_comments: review.max_comments,
        per_lens,
    };
    let Some(head) = report.head.clone() else {
        return Ok(());
    };
    let event = if review.request_changes && report.verdict().blocking > 0 {
        "REQUEST_CHANGES"
    } else {
        "COMMENT"
    };
    let full = NewReview {
        commit_id: head.to_string(),
        body: markdown::body(report, &opts),
        event: event.to_owned(),
        comments: markdown::attached(report, review.max_comments)
            .into_iter()
            .map(new_comment)
            .collect(),
    };
    match send(client, req, &full, report, identity, per_lens).await {
        Ok(()) => {}
        Err(GithubError::Unprocessable { errors, .. }) => {
            // GitHub named no comment: put every finding in the body (none is ever lost).
            notices.push(format!(
                "notice: GitHub refused the line comments ({}); posting the round with every finding in the body",
                errors.join("; ")
            ));
            let body_only = NewReview {
                body: markdown::body(
                    report,
                    &BodyOptions {
                        max_comments: 0,
                        ..opts
                    },
                ),
                comments: Vec::new(),
                ..full
            };
            send(client, req, &body_only, report, identity, per_lens).await?;
        }
        Err(e @ GithubError::Forbidden { .. }) => {
            notices.push(format!("notice: not posted: {e} A workflow run for a fork PR gets a read-only token; the review is printed above."));
            return Ok(());
        }
        Err(e) => return Err(e.into()),
    }
    report.posted = true;
    Ok(())
}

/// One review POST; when GitHub did not confirm it, looks for the round's marker before the
/// one retry, so a review that did land is never posted twice.
async fn send(
    client: &GithubClient,
    req: &PrRequest,
    review: &NewReview,
    report: &Report,
    identity: &Identity,
    per_lens: bool,
) -> Result<(), GithubError> {
    match client.create_review(&req.repo, req.number, review).await {
        Ok(_) => Ok(()),
        Err(GithubError::WriteUncertain { .. }) => {
            let reviews = client.reviews(&req.repo, req.number).await?;
            // In per-lens mode the report is that one lens's review.
            let lens = per_lens
                .then(|| report.lenses.first().map(|l| l.lens.as_str()))
                .flatten();
            if landed(&reviews, report, identity, lens) {
                return Ok(());
            }
            client
                .create_review(&req.repo, req.number, review)
                .await
                .map(|_| ())
        }
        Err(e) => Err(e),
    }
}

/// Whether a review of ours for this round and head exists (for `lens`, in per-lens mode).
fn landed(reviews: &[Review], report: &Report, identity: &Identity, lens: Option<&str>) -> bool {
    History::read(reviews, &[], identity, lens)
        .rounds
        .iter()
        .any(|(_, m)| Some(m.round) == report.round && Some(&m.head) == report.head.as_ref())
}

fn new_comment(f: &Finding) -> NewComment {
    NewComment {
        path: f.path.clone(),
        body: markdown::comment(f),
        line: f.line,
        side: f.side,
        start_line: f.start_line,
        start_side: f.start_line.map(|_| f.side),
    }
}

/// Reads the PR number from a GitHub Actions event payload (`pull_request.number`, or an
/// `issue_comment` on a PR).
pub fn pr_from_event(payload: &str) -> Option<PrNumber> {
    let v: serde_json::Value = serde_json::from_str(payload).ok()?;
    let n = v.pointer("/pull_request/number").or_else(|| {
        v.pointer("/issue/pull_request")
            .and(v.pointer("/issue/number"))
    })?;
    n.as_u64().map(PrNumber)
}

/// `owner/name` from a git remote URL (`git@github.com:o/r.git`, `https://host/o/r`).
pub fn repo_from_remote(url: &str) -> Option<RepoName> {
    let url = url.trim().trim_end_matches('/').trim_end_matches(".git");
    let tail = url.rsplit_once(':').map_or(url, |(_, t)| t);
    let mut parts = tail.rsplit('/');
    let name = parts.next()?;
    let owner = parts.next()?;
    RepoName::parse(&format!("{owner}/{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pr_number_from_events() {
        assert_eq!(
            pr_from_event(r#"{"action":"opened","pull_request":{"number":2}}"#),
            Some(PrNumber(2))
        );
        assert_eq!(
            pr_from_event(r#"{"issue":{"number":5,"pull_request":{"url":"u"}},"comment":{}}"#),
            Some(PrNumber(5))
        );
        assert_eq!(pr_from_event(r#"{"issue":{"number":5}}"#), None);
        assert_eq!(pr_from_event("not json"), None);
        let real = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/github/pull_request.opened.json"
        ))
        .unwrap();
        assert_eq!(pr_from_event(&real), Some(PrNumber(2)));
    }

    #[test]
    fn repo_from_remotes() {
        let r = |s| repo_from_remote(s).map(|r| r.to_string());
        assert_eq!(
            r("git@github.com:Octo/Hello-World.git").as_deref(),
            Some("octo/hello-world")
        );
        assert_eq!(
            r("https://github.com/octo/hello.world/").as_deref(),
            Some("octo/hello.world")
        );
        assert_eq!(
            r("ssh://git@ghe.example.com:2222/team/app.git").as_deref(),
            Some("team/app")
        );
        assert_eq!(r("nonsense").as_deref(), None);
    }
}
