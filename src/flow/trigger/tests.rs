use serde_json::Value;

use super::*;
use crate::github::events::tests::{edited, fixture};

const OWN: &str = "reviewbot-app[bot]";

fn parse(event: &str, body: &[u8]) -> Event {
    Event::parse(event, body).unwrap()
}

/// Every fixture's decision, one line each: what a real delivery of it would start.
#[test]
fn decisions_over_the_real_payloads() {
    let files = [
        ("pull_request", "pull_request/opened.payload.json"),
        ("pull_request", "pull_request/opened.with-null-body.json"),
        ("pull_request", "pull_request/reopened.payload.json"),
        ("pull_request", "pull_request/synchronize.payload.json"),
        ("pull_request", "pull_request/ready_for_review.payload.json"),
        ("pull_request", "pull_request/labeled.payload.json"),
        ("pull_request", "pull_request/unlabeled.payload.json"),
        (
            "pull_request",
            "pull_request/converted_to_draft.with-installation.payload.json",
        ),
        ("pull_request", "pull_request/closed.payload.json"),
        (
            "pull_request",
            "octocrab/pull_request_synchronize_webhook_event.json",
        ),
        (
            "issue_comment",
            "issue_comment/created.with-installation.payload.json",
        ),
        (
            "issue_comment",
            "octocrab/issue_comment_created_webhook_event.json",
        ),
        (
            "issue_comment",
            "octocrab/issue_comment_edited_webhook_event.json",
        ),
        (
            "issue_comment",
            "octocrab/issue_comment_deleted_webhook_event.json",
        ),
        ("ping", "ping/payload.json"),
        ("ping", "ping/with-app_id.payload.json"),
        ("installation", "installation/created.payload.json"),
        (
            "installation_repositories",
            "installation_repositories/added.payload.json",
        ),
        (
            "pull_request_review",
            "pull_request_review/submitted.payload.json",
        ),
        (
            "pull_request_review_comment",
            "pull_request_review_comment/created.payload.json",
        ),
        (
            "pull_request_review_comment",
            "pull_request_review_comment/edited.payload.json",
        ),
    ];
    let lines: Vec<String> = files
        .iter()
        .map(|(event, path)| {
            let decision = request_for(&parse(event, &fixture(path)), OWN);
            format!("{path} → {}", serde_json::to_string(&decision).unwrap())
        })
        .collect();
    insta::assert_snapshot!(lines.join("\n"));
}

/// octocrab's comment on PR #5, re-authored by a human and made a fresh comment with `body`.
fn command_comment(body: &str) -> Vec<u8> {
    edited("octocrab/issue_comment_deleted_webhook_event.json", |v| {
        v["action"] = "created".into();
        v["comment"]["body"] = body.into();
        v["comment"]["user"]["login"] = "gagbo".into();
        v["comment"]["user"]["type"] = "User".into();
    })
}

#[test]
fn the_command_on_a_pr_asks_for_a_round_for_the_commenter() {
    let req = request_for(
        &parse("issue_comment", &command_comment("/reviewbot review")),
        OWN,
    )
    .unwrap();
    assert_eq!(
        req.reason,
        Reason::Command {
            user: "gagbo".into()
        }
    );
    assert_eq!(req.repo.to_string(), "gagbo/ouro-closures");
    assert_eq!(req.pr.0, 5);
    assert_eq!(req.head, None);
    assert_eq!(req.installation.map(|i| i.0), Some(7777777));
    assert!(req.post && !req.force && req.lenses.is_empty());
}

#[test]
fn only_the_command_itself_counts() {
    let yes = [
        "/reviewbot review",
        "  /reviewbot review  ",
        "\n/reviewbot   review\r\n\nThe tests changed, please look again.",
        "/reviewbot\treview",
    ];
    for body in yes {
        assert!(is_command(body), "{body:?}");
    }
    let no = [
        "",
        "/reviewbot",
        "/reviewbot reviews",
        "/reviewbot review now",
        "/Reviewbot Review",
        "> /reviewbot review",
        "Could someone run /reviewbot review?",
        "`/reviewbot review`",
        "```\n/reviewbot review\n```",
        "Thanks!\n/reviewbot review",
    ];
    for body in no {
        assert!(!is_command(body), "{body:?}");
    }
}

#[test]
fn the_command_is_ignored_when_edited_on_an_issue_or_by_reviewbot() {
    let edit = |f: fn(&mut Value)| {
        let body = edited("octocrab/issue_comment_deleted_webhook_event.json", |v| {
            v["action"] = "created".into();
            v["comment"]["body"] = "/reviewbot review".into();
            v["comment"]["user"]["login"] = "gagbo".into();
            f(v);
        });
        request_for(&parse("issue_comment", &body), "gagbo-test-app[bot]")
    };
    assert!(edit(|_| {}).is_some());
    assert!(edit(|v| v["action"] = "edited".into()).is_none());
    assert!(edit(|v| v["action"] = "deleted".into()).is_none());
    assert!(
        edit(|v| {
            v["issue"].as_object_mut().unwrap().remove("pull_request");
        })
        .is_none()
    );
    // Written by reviewbot, or sent by it (logins compare case-insensitively).
    assert!(edit(|v| v["comment"]["user"]["login"] = "gagbo-test-app[bot]".into()).is_none());
    assert!(edit(|v| v["sender"]["login"] = "Gagbo-Test-App[bot]".into()).is_none());
}

#[test]
fn reviewbots_own_pull_request_actions_start_nothing() {
    let opened = fixture("pull_request/opened.payload.json");
    assert!(request_for(&parse("pull_request", &opened), OWN).is_some());
    assert!(request_for(&parse("pull_request", &opened), "codertocat").is_none());
    // Removing the trigger label is reviewbot's own `unlabeled`; adding it back by reviewbot too.
    let own_label = edited("pull_request/labeled.payload.json", |v| {
        v["sender"]["login"] = OWN.into();
    });
    assert!(request_for(&parse("pull_request", &own_label), OWN).is_none());
}

#[test]
fn drafts_wait_for_ready_for_review() {
    let draft = |action: &'static str| {
        let body = edited("pull_request/opened.payload.json", |v| {
            v["action"] = action.into();
            v["pull_request"]["draft"] = true.into();
            v["label"] = serde_json::json!({"name": "reviewbot:review"});
        });
        request_for(&parse("pull_request", &body), OWN).map(|r| r.reason)
    };
    assert_eq!(draft("opened"), None);
    assert_eq!(draft("reopened"), None);
    assert_eq!(draft("synchronize"), None);
    assert_eq!(draft("converted_to_draft"), None);
    // The trigger label on a draft: the flow's gate decides, with the config at hand.
    assert_eq!(
        draft("labeled"),
        Some(Reason::Labeled {
            label: "reviewbot:review".into()
        })
    );
}

#[test]
fn a_closed_pr_starts_nothing() {
    let closed_labeled = edited("pull_request/labeled.payload.json", |v| {
        v["pull_request"]["state"] = "closed".into();
    });
    assert!(request_for(&parse("pull_request", &closed_labeled), OWN).is_none());
}

#[test]
fn an_empty_own_login_matches_no_one() {
    let body = edited("pull_request/opened.payload.json", |v| {
        v["sender"]["login"] = "".into();
    });
    assert!(request_for(&parse("pull_request", &body), "").is_some());
}

/// GitHub's `created` review comment, made a reply by `login` (of `kind`) in thread 10.
fn reply(login: &str, kind: &str) -> Vec<u8> {
    edited("pull_request_review_comment/created.payload.json", |v| {
        v["comment"]["in_reply_to_id"] = 10.into();
        v["comment"]["user"]["login"] = login.into();
        v["comment"]["user"]["type"] = kind.into();
        v["sender"]["login"] = login.into();
        v["sender"]["type"] = kind.into();
    })
}

#[test]
fn a_humans_reply_asks_for_answers_and_a_bots_never_does() {
    let req = request_for(
        &parse("pull_request_review_comment", &reply("alice", "User")),
        OWN,
    )
    .unwrap();
    assert!(matches!(req.reason, Reason::Reply { ref user, .. } if user == "alice"));
    assert_eq!((req.head, req.reason.job_kind()), (None, "reply"));
    for (login, kind) in [("dependabot[bot]", "Bot"), (OWN, "Bot"), ("x[bot]", "User")] {
        let event = parse("pull_request_review_comment", &reply(login, kind));
        assert_eq!(request_for(&event, OWN), None, "{login}");
    }
}
