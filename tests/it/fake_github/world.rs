//! The fake's state: tokens, repositories, PRs and what was posted on them, faults, the log.

use std::collections::{BTreeMap, HashMap};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;

use super::{Fault, FileSpec, PrSpec, RequestRecord, Route, TokenKind, json, repo_key};

/// Everything the fake knows; one per [`super::FakeGithub`], behind a mutex.
pub(super) struct World {
    /// The fake's own base URL; API `url` fields point back at it.
    pub api: String,
    pub tokens: HashMap<String, TokenKind>,
    /// Keyed by lower-case `owner/name`.
    pub repos: BTreeMap<String, Repo>,
    pub log: Vec<RequestRecord>,
    /// Indices into `log` of requests to unknown routes.
    pub unexpected: Vec<usize>,
    /// Queued faults with how many more requests each applies to.
    pub faults: Vec<(Route, Fault, u32)>,
    /// Primary rate-limit window: requests used so far and when it resets.
    pub rate_used: u64,
    pub rate_reset: u64,
    /// The GitHub App, when a test registered one.
    pub app: Option<super::app::AppState>,
    /// The archive host's base URL (another loopback host than `api`).
    pub codeload: String,
    /// Archive URL tokens handed out by the tarball redirect.
    pub codeload_tokens: std::collections::HashSet<String>,
    /// Requests to the archive host that carried `Authorization` (refused).
    pub codeload_authorized: usize,
    /// Every check run, of every repository (key `owner/name`, lower-case), oldest first.
    pub check_runs: Vec<super::checks::CheckRun>,
    /// Every check-run write, refused or not, in arrival order.
    pub check_run_writes: Vec<super::checks::CheckRunWrite>,
    /// Every check-run write answers 403 (a token without `checks: write`).
    pub checks_forbidden: bool,
    /// Review threads resolved (by their first comment's id).
    /// Resolved threads by their first comment's id, with who resolved them.
    pub resolved_threads: std::collections::HashMap<u64, String>,
    /// Each GraphQL files-at-ref query: the `<ref>:<path>` expressions it asked for.
    pub files_asked: Vec<Vec<String>>,
    /// Where a request or an answer departed from GitHub's REST description.
    pub violations: Vec<Violation>,
    /// A test that sends requests GitHub's REST description does not allow, on purpose.
    pub allow_invalid_requests: bool,
    /// A test that calls routes the fake does not serve, on purpose.
    pub allow_unserved: bool,
    next_id: u64,
}

/// One departure from GitHub's REST description.
#[derive(Debug, Clone)]
pub(super) struct Violation {
    /// By the request (the client's doing), else by the fake's answer.
    pub request: bool,
    pub text: String,
}

impl Violation {
    pub fn request(text: String) -> Violation {
        Violation {
            request: true,
            text,
        }
    }

    pub fn answer(text: String) -> Violation {
        Violation {
            request: false,
            text,
        }
    }
}

/// One repository.
pub(super) struct Repo {
    pub owner: String,
    pub name: String,
    pub id: u64,
    pub default_branch: String,
    pub prs: BTreeMap<u64, Pr>,
    /// `(ref, path)` → file content.
    pub contents: HashMap<(String, String), String>,
    /// `(base, head)` → compare status and files.
    pub compares: HashMap<(String, String), (String, Vec<FileSpec>)>,
    /// Lower-case login → role (`admin`, `maintain`, `write`, `triage`, `read`); users not
    /// here are unknown to the permission endpoint (404).
    pub roles: HashMap<String, String>,
    /// Commit SHA → the tree its archive holds, when a test set one.
    pub trees: HashMap<String, Vec<super::TreeEntry>>,
}

/// One pull request with its history.
pub(super) struct Pr {
    pub id: u64,
    /// Title, body, refs, labels…; `head_sha`/`files` here are the first head only.
    pub spec: PrSpec,
    /// Every head the PR has had, oldest first, with its files; the last one is current.
    pub heads: Vec<(String, Vec<FileSpec>)>,
    /// Review JSON as the list endpoint returns it, in creation order.
    pub reviews: Vec<Value>,
    /// Review-comment JSON (replies included), in creation order.
    pub comments: Vec<Value>,
    pub created_at: String,
    pub updated_at: String,
}

impl World {
    /// An empty world served at `api`.
    pub fn new(api: &str) -> World {
        World {
            api: api.to_owned(),
            tokens: HashMap::new(),
            repos: BTreeMap::new(),
            log: Vec::new(),
            unexpected: Vec::new(),
            faults: Vec::new(),
            rate_used: 0,
            rate_reset: super::now_epoch() + 3600,
            app: None,
            codeload: String::new(),
            codeload_tokens: std::collections::HashSet::new(),
            codeload_authorized: 0,
            check_runs: Vec::new(),
            check_run_writes: Vec::new(),
            checks_forbidden: false,
            resolved_threads: std::collections::HashMap::new(),
            files_asked: Vec::new(),
            violations: Vec::new(),
            allow_invalid_requests: false,
            allow_unserved: false,
            next_id: 1_000_000,
        }
    }

    /// A fresh id for a review, comment, PR or repository (ids are global, like GitHub's).
    pub fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// The repository `owner/name`, created empty if absent.
    pub fn repo_mut_or_new(&mut self, repo: &str) -> &mut Repo {
        let id = self.next_id();
        self.repos
            .entry(repo_key(repo))
            .or_insert_with(|| Repo::new(repo, id, "main"))
    }

    /// The PR `n` of repository `key`, if any.
    pub fn pr_mut(&mut self, key: &str, n: u64) -> Option<&mut Pr> {
        self.repos.get_mut(key)?.prs.get_mut(&n)
    }

    /// Stores a submitted review by `user` in `state`; returns its id.
    pub fn add_review(
        &mut self,
        key: &str,
        n: u64,
        user: &str,
        body: &str,
        commit_id: &str,
        state: &str,
    ) -> Result<u64, String> {
        let id = self.next_id();
        let api = self.api.clone();
        let repo = self
            .repos
            .get_mut(key)
            .ok_or_else(|| format!("no repo {key}"))?;
        let (owner, name) = (repo.owner.clone(), repo.name.clone());
        let pr = repo
            .prs
            .get_mut(&n)
            .ok_or_else(|| format!("no PR {key}#{n}"))?;
        let review = json::review(&api, &owner, &name, n, id, user, body, commit_id, state);
        pr.reviews.push(review);
        Ok(id)
    }

    /// Stores a reply by `user` in the thread of comment `to`, with the review GitHub creates for
    /// it; returns the reply's id.
    pub fn add_reply(
        &mut self,
        key: &str,
        n: u64,
        to: u64,
        user: &str,
        body: &str,
    ) -> Result<u64, String> {
        let parent = self
            .pr_mut(key, n)
            .ok_or_else(|| format!("no PR {key}#{n}"))?
            .comments
            .iter()
            .find(|c| c["id"] == to)
            .cloned()
            .ok_or_else(|| format!("no review comment {to} on {key}#{n}"))?;
        let commit = parent["commit_id"].as_str().unwrap_or_default().to_owned();
        let review_id = self.add_review(key, n, user, "", &commit, "COMMENTED")?;
        let id = self.next_id();
        let api = self.api.clone();
        let repo = &self.repos[key];
        let mut reply = parent.clone();
        // A reply to a reply joins the thread of the top-level comment.
        let top = parent["in_reply_to_id"].as_u64().unwrap_or(to);
        let now = timestamp(SystemTime::now());
        let urls = json::comment_urls(&api, &repo.owner, &repo.name, n, id);
        for (k, v) in urls {
            reply[k] = v;
        }
        reply["id"] = id.into();
        reply["node_id"] = json::node_id("PullRequestReviewComment", id).into();
        reply["pull_request_review_id"] = review_id.into();
        reply["in_reply_to_id"] = top.into();
        reply["user"] = json::user(&api, user);
        reply["body"] = body.into();
        reply["created_at"] = now.clone().into();
        reply["updated_at"] = now.into();
        reply["author_association"] = json::association(user).into();
        self.pr_mut(key, n)
            .expect("checked above")
            .comments
            .push(reply);
        Ok(id)
    }
}

impl Repo {
    /// An empty repository `owner/name`.
    pub fn new(full_name: &str, id: u64, default_branch: &str) -> Repo {
        let (owner, name) = full_name
            .split_once('/')
            .unwrap_or_else(|| panic!("fake github: repo must be owner/name, got {full_name:?}"));
        Repo {
            owner: owner.to_owned(),
            name: name.to_owned(),
            id,
            default_branch: default_branch.to_owned(),
            prs: BTreeMap::new(),
            contents: HashMap::new(),
            compares: HashMap::new(),
            roles: HashMap::new(),
            trees: HashMap::new(),
        }
    }
}

impl Pr {
    /// A PR whose first head is the spec's.
    pub fn new(id: u64, spec: PrSpec) -> Pr {
        let now = timestamp(SystemTime::now());
        Pr {
            id,
            heads: vec![(spec.head_sha.clone(), spec.files.clone())],
            spec,
            reviews: Vec::new(),
            comments: Vec::new(),
            created_at: now.clone(),
            updated_at: now,
        }
    }

    /// The current head SHA.
    pub fn head_sha(&self) -> &str {
        &self.heads.last().expect("a PR has a head").0
    }

    /// The current head's files.
    pub fn files(&self) -> &[FileSpec] {
        &self.heads.last().expect("a PR has a head").1
    }

    /// The files of a head this PR has had, if `sha` is one.
    pub fn files_at(&self, sha: &str) -> Option<&[FileSpec]> {
        self.heads
            .iter()
            .rev()
            .find(|(h, _)| h == sha)
            .map(|(_, f)| f.as_slice())
    }
}

/// RFC 3339 UTC with seconds, as GitHub writes times (`2019-05-15T15:20:33Z`).
pub(super) fn timestamp(t: SystemTime) -> String {
    let secs = t
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Standard base64 with padding.
pub(super) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
