//! The JSON shapes the fake answers, copied from the fixtures (octocrab's REST samples and the
//! `pull_request` webhook's PR object) so that octocrab's models accept them.

use std::time::SystemTime;

use serde_json::{Value, json};

use super::world::{Pr, Repo, base64, timestamp};
use super::{FileSpec, hunks, sha};

const DOCS: &str = "https://docs.github.com/rest";

/// A legacy-style node id: base64 of `0<len>:<Type><id>` (e.g. `MDQ6VXNlcjE=` for User 1).
pub(super) fn node_id(kind: &str, id: u64) -> String {
    let raw = format!("{kind}{id}");
    base64(format!("0{}:{raw}", kind.len()).as_bytes())
}

/// A stable account id for a login.
pub(super) fn user_id(login: &str) -> u64 {
    u64::from_str_radix(&sha(login)[..7], 16).unwrap_or(0) + 1_000
}

/// `NONE` for bots, `CONTRIBUTOR` for people: good enough for what reviewbot reads.
pub(super) fn association(login: &str) -> &'static str {
    if is_bot(login) { "NONE" } else { "CONTRIBUTOR" }
}

/// Bots are the `name[bot]` logins of Apps.
pub(super) fn is_bot(login: &str) -> bool {
    login.ends_with("[bot]")
}

/// A user object (`simple-user`).
pub(super) fn user(api: &str, login: &str) -> Value {
    let id = user_id(login);
    let bot = is_bot(login);
    let u = format!(
        "{api}/users/{}",
        login.replace('[', "%5B").replace(']', "%5D")
    );
    let html = match login.strip_suffix("[bot]") {
        Some(app) => format!("https://github.com/apps/{app}"),
        None => format!("https://github.com/{login}"),
    };
    json!({
        "login": login,
        "id": id,
        "node_id": node_id(if bot { "Bot" } else { "User" }, id),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{id}?v=4"),
        "gravatar_id": "",
        "url": u,
        "html_url": html,
        "followers_url": format!("{u}/followers"),
        "following_url": format!("{u}/following{{/other_user}}"),
        "gists_url": format!("{u}/gists{{/gist_id}}"),
        "starred_url": format!("{u}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{u}/subscriptions"),
        "organizations_url": format!("{u}/orgs"),
        "repos_url": format!("{u}/repos"),
        "events_url": format!("{u}/events{{/privacy}}"),
        "received_events_url": format!("{u}/received_events"),
        "type": if bot { "Bot" } else { "User" },
        "user_view_type": "public",
        "site_admin": false,
    })
}

/// `GET /user` for a personal token: the user with its profile and private fields
/// (`private-user`, what GitHub answers the account's own token).
pub(super) fn authenticated_user(api: &str, login: &str) -> Value {
    let mut u = user(api, login);
    let profile = json!({
        "name": login,
        "company": null,
        "blog": "",
        "location": null,
        "email": null,
        "hireable": null,
        "bio": null,
        "twitter_username": null,
        "public_repos": 2,
        "public_gists": 0,
        "followers": 0,
        "following": 0,
        "created_at": "2019-05-15T15:19:25Z",
        "updated_at": "2019-05-15T15:19:25Z",
        "private_gists": 0,
        "total_private_repos": 0,
        "owned_private_repos": 0,
        "disk_usage": 0,
        "collaborators": 0,
        "two_factor_authentication": true,
    });
    for (k, v) in profile.as_object().expect("an object") {
        u[k] = v.clone();
    }
    u
}

/// An App (`integration`): the one of `GET /app`, and the one a check run names.
pub(super) fn integration(api: &str, id: u64, slug: &str, client_id: &str) -> Value {
    let mut owner = user(api, "octo-org");
    owner["type"] = "Organization".into();
    json!({
        "id": id,
        "client_id": client_id,
        "slug": slug,
        "node_id": node_id("Integration", id),
        "name": slug,
        "owner": owner,
        "description": "",
        "external_url": "https://example.com",
        "html_url": format!("https://github.com/apps/{slug}"),
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "permissions": {
            "pull_requests": "write",
            "contents": "read",
            "metadata": "read",
            "issues": "write",
        },
        "events": ["pull_request", "issue_comment"],
    })
}

/// A repository object (`repository`, every field GitHub's description requires).
pub(super) fn repo(api: &str, r: &Repo) -> Value {
    repository(api, r.id, &r.owner, &r.name, &r.default_branch, false)
}

/// `r` as forked by `owner`: its own id, name and URLs, `fork: true`.
fn fork_repo(api: &str, r: &Repo, owner: &str) -> Value {
    let id = user_id(&format!("fork:{owner}/{}", r.name));
    repository(api, id, owner, &r.name, &r.default_branch, true)
}

fn repository(
    api: &str,
    id: u64,
    owner: &str,
    name: &str,
    default_branch: &str,
    fork: bool,
) -> Value {
    let full = format!("{owner}/{name}");
    let url = format!("{api}/repos/{full}");
    let html = format!("https://github.com/{full}");
    let mut v = json!({
        "id": id,
        "node_id": node_id("Repository", id),
        "name": name,
        "full_name": full,
        "private": false,
        "owner": user(api, owner),
        "html_url": html,
        "description": null,
        "fork": fork,
        "url": url,
        "default_branch": default_branch,
        "visibility": "public",
        "archived": false,
        "disabled": false,
        "git_url": format!("git://github.com/{full}.git"),
        "ssh_url": format!("git@github.com:{full}.git"),
        "clone_url": format!("{html}.git"),
        "svn_url": html,
        "mirror_url": null,
        "homepage": null,
        "language": null,
        "license": null,
        "forks": 0,
        "forks_count": 0,
        "stargazers_count": 0,
        "watchers": 0,
        "watchers_count": 0,
        "size": 108,
        "open_issues": 0,
        "open_issues_count": 0,
        "has_issues": true,
        "has_projects": true,
        "has_wiki": true,
        "has_pages": false,
        "has_downloads": true,
        "pushed_at": "2019-05-15T15:20:33Z",
        "created_at": "2019-05-15T15:19:25Z",
        "updated_at": "2019-05-15T15:20:33Z",
    });
    // The URL templates, as GitHub spells them.
    let templates = [
        ("archive_url", "/{archive_format}{/ref}"),
        ("assignees_url", "/assignees{/user}"),
        ("blobs_url", "/git/blobs{/sha}"),
        ("branches_url", "/branches{/branch}"),
        ("collaborators_url", "/collaborators{/collaborator}"),
        ("comments_url", "/comments{/number}"),
        ("commits_url", "/commits{/sha}"),
        ("compare_url", "/compare/{base}...{head}"),
        ("contents_url", "/contents/{+path}"),
        ("contributors_url", "/contributors"),
        ("deployments_url", "/deployments"),
        ("downloads_url", "/downloads"),
        ("events_url", "/events"),
        ("forks_url", "/forks"),
        ("git_commits_url", "/git/commits{/sha}"),
        ("git_refs_url", "/git/refs{/sha}"),
        ("git_tags_url", "/git/tags{/sha}"),
        ("hooks_url", "/hooks"),
        ("issue_comment_url", "/issues/comments{/number}"),
        ("issue_events_url", "/issues/events{/number}"),
        ("issues_url", "/issues{/number}"),
        ("keys_url", "/keys{/key_id}"),
        ("labels_url", "/labels{/name}"),
        ("languages_url", "/languages"),
        ("merges_url", "/merges"),
        ("milestones_url", "/milestones{/number}"),
        (
            "notifications_url",
            "/notifications{?since,all,participating}",
        ),
        ("pulls_url", "/pulls{/number}"),
        ("releases_url", "/releases{/id}"),
        ("stargazers_url", "/stargazers"),
        ("statuses_url", "/statuses/{sha}"),
        ("subscribers_url", "/subscribers"),
        ("subscription_url", "/subscription"),
        ("tags_url", "/tags"),
        ("teams_url", "/teams"),
        ("trees_url", "/git/trees{/sha}"),
    ];
    for (key, tail) in templates {
        v[key] = format!("{url}{tail}").into();
    }
    v
}

/// A label object.
pub(super) fn label(api: &str, r: &Repo, name: &str) -> Value {
    let id = user_id(&format!("label:{name}"));
    json!({
        "id": id,
        "node_id": node_id("Label", id),
        "url": format!("{api}/repos/{}/{}/labels/{}", r.owner, r.name, name.replace(' ', "%20")),
        "name": name,
        "color": "ededed",
        "default": false,
        "description": null,
    })
}

/// The PR object of `GET /pulls/{n}`, shaped like the webhook's `pull_request`.
pub(super) fn pull(api: &str, r: &Repo, pr: &Pr) -> Value {
    let (o, name, n) = (&r.owner, &r.name, pr.spec.number);
    let url = format!("{api}/repos/{o}/{name}/pulls/{n}");
    let html = format!("https://github.com/{o}/{name}/pull/{n}");
    let issue = format!("{api}/repos/{o}/{name}/issues/{n}");
    let head = pr.head_sha();
    let statuses = format!("{api}/repos/{o}/{name}/statuses/{head}");
    let (additions, deletions) = pr
        .files()
        .iter()
        .filter_map(|f| f.patch.as_deref())
        .map(hunks::stats)
        .fold((0, 0), |(a, d), (x, y)| (a + x, d + y));
    let closed = pr.spec.state == "closed";
    let side = |owner: &str, repo: Value, git_ref: &str, sha: &str| {
        json!({
            "label": format!("{owner}:{git_ref}"),
            "ref": git_ref,
            "sha": sha,
            "user": user(api, owner),
            "repo": repo,
        })
    };
    let head_side = match &pr.spec.fork_owner {
        Some(fork) => side(fork, fork_repo(api, r, fork), &pr.spec.head_ref, head),
        None => side(o, repo(api, r), &pr.spec.head_ref, head),
    };
    let links = json!({
        "self": {"href": url},
        "html": {"href": html},
        "issue": {"href": issue},
        "comments": {"href": format!("{issue}/comments")},
        "review_comments": {"href": format!("{url}/comments")},
        "review_comment": {"href": format!("{api}/repos/{o}/{name}/pulls/comments{{/number}}")},
        "commits": {"href": format!("{url}/commits")},
        "statuses": {"href": statuses},
    });
    let mut v = json!({
        "url": url,
        "id": pr.id,
        "node_id": node_id("PullRequest", pr.id),
        "html_url": html,
        "diff_url": format!("{html}.diff"),
        "patch_url": format!("{html}.patch"),
        "issue_url": issue,
        "number": n,
        "state": pr.spec.state,
        "locked": false,
        "title": pr.spec.title,
        "user": user(api, &pr.spec.author),
        "body": pr.spec.body,
        "created_at": pr.created_at,
        "updated_at": pr.updated_at,
        "closed_at": if closed { Value::from(pr.updated_at.clone()) } else { Value::Null },
        "merged_at": null,
        "merge_commit_sha": null,
        "assignee": null,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "labels": pr.spec.labels.iter().map(|l| label(api, r, l)).collect::<Vec<_>>(),
        "milestone": null,
        "draft": pr.spec.draft,
        "commits_url": format!("{url}/commits"),
        "review_comments_url": format!("{url}/comments"),
        "review_comment_url": format!("{api}/repos/{o}/{name}/pulls/comments{{/number}}"),
        "comments_url": format!("{issue}/comments"),
        "statuses_url": statuses,
        "head": head_side,
        "base": side(o, repo(api, r), &pr.spec.base_ref, &pr.spec.base_sha),
        "_links": links,
    });
    let tail = json!({
        "author_association": "CONTRIBUTOR",
        "auto_merge": null,
        "active_lock_reason": null,
        "merged": false,
        "mergeable": null,
        "rebaseable": null,
        "mergeable_state": "unknown",
        "merged_by": null,
        "comments": 0,
        "review_comments": pr.comments.len(),
        "maintainer_can_modify": false,
        "commits": pr.heads.len(),
        "additions": additions,
        "deletions": deletions,
        "changed_files": pr.files().len(),
    });
    for (k, val) in tail.as_object().expect("an object") {
        v[k] = val.clone();
    }
    v
}

/// A `DiffEntry` of the files and compare endpoints; `patch` is left out when absent.
pub(super) fn file(api: &str, r: &Repo, head: &str, f: &FileSpec) -> Value {
    let (additions, deletions) = f.patch.as_deref().map_or((0, 0), hunks::stats);
    let full = format!("{}/{}", r.owner, r.name);
    let path = f.filename.replace(' ', "%20");
    let mut v = json!({
        "sha": sha(&format!("{head}:{}", f.filename)),
        "filename": f.filename,
        "status": f.status,
        "additions": additions,
        "deletions": deletions,
        "changes": additions + deletions,
        "blob_url": format!("https://github.com/{full}/blob/{head}/{path}"),
        "raw_url": format!("https://github.com/{full}/raw/{head}/{path}"),
        "contents_url": format!("{api}/repos/{full}/contents/{path}?ref={head}"),
    });
    if let Some(p) = &f.patch {
        v["patch"] = p.as_str().into();
    }
    if let Some(prev) = &f.previous_filename {
        v["previous_filename"] = prev.as_str().into();
    }
    v
}

/// A submitted review (`submitted_at` absent while `PENDING`).
#[allow(clippy::too_many_arguments)]
pub(super) fn review(
    api: &str,
    owner: &str,
    name: &str,
    n: u64,
    id: u64,
    login: &str,
    body: &str,
    commit_id: &str,
    state: &str,
) -> Value {
    let html = format!("https://github.com/{owner}/{name}/pull/{n}#pullrequestreview-{id}");
    let pr_url = format!("{api}/repos/{owner}/{name}/pulls/{n}");
    let mut v = json!({
        "id": id,
        "node_id": node_id("PullRequestReview", id),
        "user": user(api, login),
        "body": body,
        "state": state,
        "html_url": html,
        "pull_request_url": pr_url,
        "author_association": association(login),
        "_links": {
            "html": {"href": html},
            "pull_request": {"href": pr_url},
        },
        "commit_id": commit_id,
    });
    if state != "PENDING" {
        v["submitted_at"] = timestamp(SystemTime::now()).into();
    }
    v
}

/// The URL fields of review comment `id`.
pub(super) fn comment_urls(
    api: &str,
    owner: &str,
    name: &str,
    n: u64,
    id: u64,
) -> Vec<(&'static str, Value)> {
    let url = format!("{api}/repos/{owner}/{name}/pulls/comments/{id}");
    let html = format!("https://github.com/{owner}/{name}/pull/{n}#discussion_r{id}");
    let pr_url = format!("{api}/repos/{owner}/{name}/pulls/{n}");
    vec![
        ("url", url.clone().into()),
        ("html_url", html.clone().into()),
        ("pull_request_url", pr_url.clone().into()),
        (
            "_links",
            json!({
                "self": {"href": url},
                "html": {"href": html},
                "pull_request": {"href": pr_url},
            }),
        ),
    ]
}

/// Where a new review comment is anchored.
pub(super) struct Anchor {
    pub path: String,
    pub line: u64,
    pub side: hunks::Side,
    pub start: Option<(u64, hunks::Side)>,
    pub position: u64,
    pub diff_hunk: String,
    pub body: String,
}

/// A top-level review comment of review `review_id` (no `in_reply_to_id`, as on GitHub).
#[allow(clippy::too_many_arguments)]
pub(super) fn review_comment(
    api: &str,
    owner: &str,
    name: &str,
    n: u64,
    id: u64,
    review_id: u64,
    login: &str,
    commit_id: &str,
    a: &Anchor,
) -> Value {
    let now = timestamp(SystemTime::now());
    let (start_line, start_side) = match a.start {
        Some((l, s)) => (Value::from(l), Value::from(s.as_str())),
        None => (Value::Null, Value::Null),
    };
    let mut v = json!({
        "pull_request_review_id": review_id,
        "id": id,
        "node_id": node_id("PullRequestReviewComment", id),
        "diff_hunk": a.diff_hunk,
        "path": a.path,
        "position": a.position,
        "original_position": a.position,
        "commit_id": commit_id,
        "original_commit_id": commit_id,
        "user": user(api, login),
        "body": a.body,
        "created_at": now,
        "updated_at": now,
        "author_association": association(login),
        "start_line": start_line,
        "original_start_line": start_line,
        "start_side": start_side,
        "line": a.line,
        "original_line": a.line,
        "side": a.side.as_str(),
        "subject_type": "line",
    });
    for (k, val) in comment_urls(api, owner, name, n, id) {
        v[k] = val;
    }
    v
}

/// `GET /contents/{path}`: a file with base64 content wrapped at 60 columns, as GitHub sends it.
pub(super) fn contents(api: &str, r: &Repo, git_ref: &str, path: &str, content: &str) -> Value {
    let encoded = base64(content.as_bytes());
    let wrapped: Vec<&str> = encoded
        .as_bytes()
        .chunks(60)
        .map(|c| std::str::from_utf8(c).expect("base64 is ascii"))
        .collect();
    let full = format!("{}/{}", r.owner, r.name);
    let blob = sha(&format!("blob:{content}"));
    let url = format!("{api}/repos/{full}/contents/{path}?ref={git_ref}");
    let html = format!("https://github.com/{full}/blob/{git_ref}/{path}");
    let git = format!("{api}/repos/{full}/git/blobs/{blob}");
    json!({
        "type": "file",
        "encoding": "base64",
        "size": content.len(),
        "name": path.rsplit('/').next().unwrap_or(path),
        "path": path,
        "content": wrapped.join("\n") + "\n",
        "sha": blob,
        "url": url,
        "git_url": git,
        "html_url": html,
        "download_url": format!("https://raw.githubusercontent.com/{full}/{git_ref}/{path}"),
        "_links": {"self": url, "git": git, "html": html},
    })
}

/// `GET /compare/{base}...{head}`: at most 300 files, like the real one.
pub(super) fn compare(
    api: &str,
    r: &Repo,
    base: &str,
    head: &str,
    status: &str,
    files: &[FileSpec],
) -> Value {
    let (ahead, behind) = match status {
        "identical" => (0, 0),
        "ahead" => (1, 0),
        "behind" => (0, 1),
        _ => (1, 1),
    };
    let full = format!("{}/{}", r.owner, r.name);
    // A `commit` object as the compare endpoint nests it.
    let commit = |sha: &str| {
        let url = format!("{api}/repos/{full}/commits/{sha}");
        let git = json!({"name": "Octo Cat", "email": "octocat@github.com", "date": "2019-05-15T15:20:33Z"});
        json!({
            "sha": sha,
            "node_id": node_id("Commit", user_id(sha)),
            "url": url,
            "html_url": format!("https://github.com/{full}/commit/{sha}"),
            "comments_url": format!("{url}/comments"),
            "commit": {
                "author": git,
                "committer": git,
                "message": "A commit",
                "tree": {"sha": super::sha(&format!("tree:{sha}")), "url": format!("{api}/repos/{full}/git/trees/x")},
                "url": format!("{api}/repos/{full}/git/commits/{sha}"),
                "comment_count": 0,
                "verification": {"verified": false, "reason": "unsigned", "signature": null, "payload": null, "verified_at": null},
            },
            "author": null,
            "committer": null,
            "parents": [],
        })
    };
    json!({
        "url": format!("{api}/repos/{full}/compare/{base}...{head}"),
        "html_url": format!("https://github.com/{full}/compare/{base}...{head}"),
        "permalink_url": format!("https://github.com/{full}/compare/{base}...{head}"),
        "diff_url": format!("https://github.com/{full}/compare/{base}...{head}.diff"),
        "patch_url": format!("https://github.com/{full}/compare/{base}...{head}.patch"),
        "base_commit": commit(base),
        "merge_base_commit": commit(if status == "diverged" { "0000000000000000000000000000000000000000" } else { base }),
        "status": status,
        "ahead_by": ahead,
        "behind_by": behind,
        "total_commits": ahead,
        "commits": [],
        "files": files.iter().take(300).map(|f| file(api, r, head, f)).collect::<Vec<_>>(),
    })
}

/// The collaborator permission of `login` with `role` (`repository-collaborator-permission`).
pub(super) fn permission(api: &str, login: &str, role: &str) -> Value {
    let base = match role {
        "admin" => "admin",
        "maintain" | "write" => "write",
        "triage" | "read" => "read",
        _ => "none",
    };
    let mut user = user(api, login);
    user["permissions"] = json!({
        "admin": base == "admin",
        "maintain": role == "maintain" || base == "admin",
        "push": base == "admin" || base == "write",
        "triage": base != "none",
        "pull": base != "none",
    });
    user["role_name"] = json!(role);
    json!({"permission": base, "role_name": role, "user": user})
}

/// A plain error body: `{"message", "documentation_url", "status"}` (status as a string).
pub(super) fn error(status: u16, message: &str) -> Value {
    json!({"message": message, "documentation_url": DOCS, "status": status.to_string()})
}

/// The review endpoint's 422: `errors` is an array of strings.
pub(super) fn unprocessable(message: &str) -> Value {
    json!({
        "message": "Unprocessable Entity",
        "errors": [message],
        "documentation_url": "https://docs.github.com/rest/pulls/reviews#create-a-review-for-a-pull-request",
        "status": "422",
    })
}

/// The `.diff` media type's 406 for a diff over GitHub's limits.
pub(super) fn diff_too_large(message: &str) -> Value {
    json!({
        "message": message,
        "errors": [{"resource": "PullRequest", "field": "diff", "code": "too_large"}],
        "documentation_url": "https://docs.github.com/rest/pulls/pulls#list-pull-requests-files",
        "status": "406",
    })
}
