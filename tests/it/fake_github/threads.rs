//! Conversations on the fake: replies in a review comment's thread (REST) and the GraphQL
//! endpoint, for exactly the three operations reviewbot sends — listing a PR's review threads
//! (paged, 100 at a time), `resolveReviewThread`, and files at a ref
//! (`object(expression: "<ref>:<path>")` under aliases). Anything else GraphQL is answered as
//! GitHub answers a query it cannot run: 200 with `errors`.

use serde_json::{Value, json};

use super::TokenKind;
use super::world::World;

/// The node id of the thread whose first comment is `root`.
pub(super) fn thread_id(root: u64) -> String {
    format!("PRRT_kwDO{root}")
}

/// `POST /repos/{o}/{r}/pulls/{n}/comments/{id}/replies`.
pub(super) fn post_reply(
    w: &mut World,
    kind: &TokenKind,
    key: &str,
    n: u64,
    to: u64,
    body: &[u8],
) -> (u16, Value) {
    let author = match kind {
        TokenKind::User(login) | TokenKind::Installation(login) => login.clone(),
        TokenKind::ReadOnly => {
            return (403, super::json::error(403, super::server::NOT_ACCESSIBLE));
        }
    };
    let Ok(req) = serde_json::from_slice::<Value>(body) else {
        return (400, super::json::error(400, "Problems parsing JSON"));
    };
    let Some(text) = req["body"].as_str().filter(|b| !b.trim().is_empty()) else {
        return (422, super::json::unprocessable("body is missing"));
    };
    match w.add_reply(key, n, to, &author, text) {
        Ok(id) => {
            let comment = w
                .pr_mut(key, n)
                .and_then(|pr| pr.comments.iter().find(|c| c["id"] == id).cloned())
                .unwrap_or(Value::Null);
            (201, comment)
        }
        Err(_) => (404, super::json::error(404, "Not Found")),
    }
}

/// `POST /graphql`; a mutation is made by the token's account (a read-only token may not).
pub(super) fn graphql(w: &mut World, kind: &TokenKind, body: &[u8]) -> (u16, Value) {
    let Ok(req) = serde_json::from_slice::<Value>(body) else {
        return (400, json!({ "message": "Problems parsing JSON" }));
    };
    let query = req["query"].as_str().unwrap_or_default();
    let vars = &req["variables"];
    if query.contains("resolveReviewThread") {
        let who = match kind {
            TokenKind::User(login) | TokenKind::Installation(login) => login.clone(),
            TokenKind::ReadOnly => {
                return errors("Resource not accessible by integration");
            }
        };
        let id = vars["id"].as_str().unwrap_or_default();
        let root = id
            .strip_prefix("PRRT_kwDO")
            .and_then(|r| r.parse::<u64>().ok())
            .filter(|root| {
                w.repos
                    .values()
                    .any(|r| r.prs.values().any(|p| is_root(p, *root)))
            });
        return match root {
            Some(root) => {
                w.resolved_threads.entry(root).or_insert(who);
                (
                    200,
                    json!({ "data": { "resolveReviewThread": { "thread": { "id": id, "isResolved": true } } } }),
                )
            }
            None => errors(&format!(
                "Could not resolve to a node with the global id of '{id}'"
            )),
        };
    }
    if query.contains("object(expression:") {
        return files_at_ref(w, query, vars);
    }
    if query.contains("reviewThreads") {
        let owner = vars["owner"].as_str().unwrap_or_default();
        let name = vars["name"].as_str().unwrap_or_default();
        let Some(number) = vars["number"].as_u64() else {
            return errors("Variable $number of type Int! was provided invalid value");
        };
        let key = super::repo_key(&format!("{owner}/{name}"));
        let Some(repo) = w.repos.get(&key) else {
            return errors(&format!(
                "Could not resolve to a Repository with the name '{owner}/{name}'."
            ));
        };
        let Some(pr) = repo.prs.get(&number) else {
            return (
                200,
                json!({ "data": { "repository": { "pullRequest": null } } }),
            );
        };
        let roots: Vec<u64> = pr
            .comments
            .iter()
            .filter(|c| c["in_reply_to_id"].is_null())
            .filter_map(|c| c["id"].as_u64())
            .collect();
        let start: usize = vars["after"]
            .as_str()
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let page: Vec<Value> = roots
            .iter()
            .skip(start)
            .take(100)
            .map(|root| {
                json!({
                    "id": thread_id(*root),
                    "isResolved": w.resolved_threads.contains_key(root),
                    "resolvedBy": w.resolved_threads.get(root).map(|login| json!({ "login": login })),
                    "comments": { "nodes": [{ "databaseId": root }] },
                })
            })
            .collect();
        let end = start + page.len();
        return (
            200,
            json!({ "data": { "repository": { "pullRequest": { "reviewThreads": {
                "pageInfo": { "hasNextPage": end < roots.len(), "endCursor": end.to_string() },
                "nodes": page,
            } } } } }),
        );
    }
    errors("the fake GitHub does not serve this query")
}

/// `repository { fN: object(expression: $eN) { ... on Blob { text isBinary isTruncated } } }`:
/// a file is a Blob, a path with files below it a Tree (on which the Blob fragment selects
/// nothing: `{}`), anything else `null`. Every alias must name a declared variable, as GitHub
/// refuses a query using an undeclared one.
fn files_at_ref(w: &mut World, query: &str, vars: &Value) -> (u16, Value) {
    let owner = vars["owner"].as_str().unwrap_or_default();
    let name = vars["name"].as_str().unwrap_or_default();
    let key = super::repo_key(&format!("{owner}/{name}"));
    let Some(repo) = w.repos.get(&key) else {
        return errors(&format!(
            "Could not resolve to a Repository with the name '{owner}/{name}'."
        ));
    };
    let mut found = serde_json::Map::new();
    let mut asked = Vec::new();
    for i in 0.. {
        let alias = format!("f{i}: object(expression: $e{i})");
        if !query.contains(&alias) {
            break;
        }
        if !query.contains(&format!("$e{i}: String!")) {
            return errors(&format!(
                "Variable $e{i} is used by anonymous query but not declared"
            ));
        }
        let Some((git_ref, path)) = vars[format!("e{i}")]
            .as_str()
            .and_then(|e| e.split_once(':'))
        else {
            return errors(&format!(
                "Variable $e{i} of type String! was provided invalid value"
            ));
        };
        asked.push(format!("{git_ref}:{path}"));
        let below = format!("{path}/");
        let value = match repo.contents.get(&(git_ref.to_owned(), path.to_owned())) {
            Some(text) => json!({ "text": text, "isBinary": false, "isTruncated": false }),
            None if repo
                .contents
                .keys()
                .any(|(r, p)| r == git_ref && p.starts_with(&below)) =>
            {
                json!({})
            }
            None => Value::Null,
        };
        found.insert(format!("f{i}"), value);
    }
    w.files_asked.push(asked);
    (200, json!({ "data": { "repository": found } }))
}

fn is_root(pr: &super::world::Pr, root: u64) -> bool {
    pr.comments
        .iter()
        .any(|c| c["id"] == root && c["in_reply_to_id"].is_null())
}

fn errors(message: &str) -> (u16, Value) {
    (200, json!({ "errors": [{ "message": message }] }))
}
