use serde_json::Value;

use super::*;

/// A payload from `fixtures/github-webhooks/`, as published.
pub(crate) fn fixture(path: &str) -> Vec<u8> {
    let full = format!(
        "{}/fixtures/github-webhooks/{path}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
}

/// A published payload with one edit, for cases no published payload shows.
pub(crate) fn edited(path: &str, edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let mut value: Value = serde_json::from_slice(&fixture(path)).unwrap();
    edit(&mut value);
    serde_json::to_vec(&value).unwrap()
}

fn pull_request(path: &str) -> PullRequestEvent {
    match Event::parse("pull_request", &fixture(path)).unwrap() {
        Event::PullRequest(e) => e,
        other => panic!("{path}: {other:?}"),
    }
}

fn issue_comment(body: &[u8]) -> IssueCommentEvent {
    match Event::parse("issue_comment", body).unwrap() {
        Event::IssueComment(e) => e,
        other => panic!("{other:?}"),
    }
}

#[test]
fn opened_reads_every_field_we_use() {
    let e = pull_request("pull_request/opened.payload.json");
    assert_eq!(e.action, "opened");
    assert_eq!(e.repo.to_string(), "codertocat/hello-world");
    assert_eq!(e.number, PrNumber(2));
    assert_eq!(e.head.as_str(), "ec26c3e57ca3a959ca5aad62de7213c562f8c821");
    assert!(!e.draft);
    assert_eq!(e.state, "open");
    assert_eq!(e.labels, ["bug"]);
    assert_eq!(e.label, None);
    assert_eq!(e.installation, Some(InstallationId(1)));
    assert_eq!(e.sender.login, "Codertocat");
    assert!(!e.sender.is_bot());
}

#[test]
fn labeled_carries_the_added_label_and_a_draft_is_a_draft() {
    let e = pull_request("pull_request/labeled.payload.json");
    assert_eq!(
        (e.action.as_str(), e.label.as_deref()),
        ("labeled", Some("bug"))
    );
    let e = pull_request("pull_request/converted_to_draft.with-installation.payload.json");
    assert!(e.draft);
    // No installation in octokit's plain example: deliveries to a repository hook lack it.
    let e = pull_request("pull_request/ready_for_review.payload.json");
    assert_eq!(e.installation, None);
}

#[test]
fn a_null_pr_body_is_fine_and_octocrab_deliveries_parse() {
    pull_request("pull_request/opened.with-null-body.json");
    let e = pull_request("octocrab/pull_request_synchronize_webhook_event.json");
    assert_eq!(e.number, PrNumber(5));
    assert_eq!(e.head.short(), "7e39d83f");
    assert_eq!(e.installation, Some(InstallationId(7777777)));
}

#[test]
fn a_comment_knows_whether_it_is_on_a_pr() {
    let plain = issue_comment(&fixture(
        "issue_comment/created.with-installation.payload.json",
    ));
    assert!(!plain.on_pr);
    assert_eq!(plain.action, "created");
    assert_eq!(plain.number, PrNumber(1));
    assert_eq!(plain.author.login, "Codertocat");

    let on_pr = issue_comment(&fixture("octocrab/issue_comment_edited_webhook_event.json"));
    assert!(on_pr.on_pr);
    assert_eq!(on_pr.number, PrNumber(5));
    assert_eq!(on_pr.author.login, "gagbo-test-app[bot]");
    assert!(on_pr.author.is_bot());
    assert_eq!(on_pr.installation, Some(InstallationId(7777777)));
}

#[test]
fn ping_and_other_events_are_recognised() {
    assert_eq!(
        Event::parse("ping", &fixture("ping/payload.json")).unwrap(),
        Event::Ping
    );
    let e = Event::parse(
        "installation",
        &fixture("installation/created.payload.json"),
    )
    .unwrap();
    assert_eq!(
        e,
        Event::Other {
            event: "installation".into(),
            action: Some("created".into())
        }
    );
    assert_eq!((e.name(), e.action()), ("installation", Some("created")));
}

fn error(event: &str, body: &[u8]) -> String {
    Event::parse(event, body).unwrap_err().to_string()
}

#[test]
fn an_unreadable_payload_names_the_field() {
    let no_sha = edited("pull_request/opened.payload.json", |v| {
        v["pull_request"]["head"]
            .as_object_mut()
            .unwrap()
            .remove("sha");
    });
    assert_eq!(
        error("pull_request", &no_sha),
        "pull_request.head.sha: missing"
    );

    let short_sha = edited("pull_request/opened.payload.json", |v| {
        v["pull_request"]["head"]["sha"] = "ec26c3e5".into();
    });
    assert_eq!(
        error("pull_request", &short_sha),
        "pull_request.head.sha: not a 40-hex commit SHA"
    );

    let text_number = edited("pull_request/opened.payload.json", |v| {
        v["number"] = "two".into();
    });
    let err = error("pull_request", &text_number);
    assert!(err.starts_with("number: invalid type: string"), "{err}");

    let bad_label = edited("pull_request/labeled.payload.json", |v| {
        v["pull_request"]["labels"][0]["name"] = 7.into();
    });
    let err = error("pull_request", &bad_label);
    assert!(
        err.starts_with("pull_request.labels[0].name: invalid type"),
        "{err}"
    );

    let no_label = edited("pull_request/labeled.payload.json", |v| {
        v.as_object_mut().unwrap().remove("label");
    });
    assert_eq!(error("pull_request", &no_label), "label: missing");

    let bad_repo = edited("pull_request/opened.payload.json", |v| {
        v["repository"]["full_name"] = "no-slash".into();
    });
    assert_eq!(
        error("pull_request", &bad_repo),
        "repository.full_name: not an owner/name"
    );

    let no_body = edited("octocrab/issue_comment_edited_webhook_event.json", |v| {
        v["comment"]["body"] = Value::Null;
    });
    assert_eq!(error("issue_comment", &no_body), "comment.body: missing");

    let no_author = edited("octocrab/issue_comment_edited_webhook_event.json", |v| {
        v["comment"].as_object_mut().unwrap().remove("user");
    });
    assert_eq!(
        error("issue_comment", &no_author),
        "comment.user.login: missing"
    );
}

#[test]
fn a_body_that_is_not_json_is_refused_for_every_event() {
    for event in ["pull_request", "issue_comment", "ping", "installation"] {
        let err = Event::parse(event, b"{\"action\": \"opened\"").unwrap_err();
        assert_eq!(err.path(), "body", "{event}");
        assert!(
            err.to_string().starts_with("body: not JSON"),
            "{event}: {err}"
        );
        let err = Event::parse(event, b"{} trailing").unwrap_err();
        assert_eq!(err.path(), "body", "{event}");
    }
    assert_eq!(error("pull_request", b"[]"), "body: not a JSON object");
    let err = error("pull_request", b"7");
    assert!(err.starts_with("body: invalid type: integer"), "{err}");
}

proptest::proptest! {
    /// Whatever a signed sender puts in the body, reading it answers; it never panics.
    #[test]
    fn any_body_is_read_or_refused(body in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
        for event in ["pull_request", "issue_comment", "ping", "installation"] {
            let _ = Event::parse(event, &body);
        }
    }

    /// The same for a real payload with one byte changed.
    #[test]
    fn a_corrupted_payload_is_read_or_refused(at in 0usize..28_011, byte in proptest::num::u8::ANY) {
        let mut body = fixture("pull_request/opened.payload.json");
        body[at] = byte;
        let _ = Event::parse("pull_request", &body);
    }
}
