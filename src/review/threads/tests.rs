use super::*;
use crate::github::model::User;

const BOT: &str = "reviewbot[bot]";

fn user(login: &str) -> User {
    User {
        login: login.into(),
        kind: if login.ends_with("[bot]") {
            "Bot"
        } else {
            "User"
        }
        .into(),
    }
}

fn comment(id: u64, by: &str, body: &str, reply_to: Option<u64>) -> ReviewComment {
    ReviewComment {
        id,
        review_id: Some(if reply_to.is_some() { 900 + id } else { 1 }),
        in_reply_to_id: reply_to,
        user: Some(user(by)),
        body: body.into(),
        path: "src/a.rs".into(),
        line: Some(2),
        side: Some(Side::Right),
        commit_id: None,
    }
}

const ROOT: &str = "**Blocking.** Unchecked index. `v[i]` panics when empty.\n\n(high confidence · claude, codex)\n<!-- reviewbot finding=0123456789abcdef -->";

fn answer(id: u64, to: u64, outcome: Outcome) -> ReviewComment {
    let marker = ReplyMarker {
        reply_to: to,
        outcome,
        finding: "0123456789abcdef".into(),
    };
    comment(
        id,
        BOT,
        &format!("Withdrawn. ok\n\n{}", marker.render()),
        Some(10),
    )
}

/// `alice` may write to the repository; `bob` may not.
fn threads(comments: &[ReviewComment]) -> Vec<Thread> {
    let mut rulings = Rulings::default();
    rulings.writer("alice");
    Thread::collect(comments, &Identity::Login(BOT.into()), |r| r == 1, &rulings)
}

#[test]
fn a_root_carries_its_finding_title_and_lenses() {
    let t = &threads(&[comment(10, BOT, ROOT, None)])[0];
    assert_eq!(t.fingerprint, "0123456789abcdef");
    assert_eq!(t.title(), "Unchecked index");
    assert_eq!(
        t.lenses,
        vec![LensName::new("claude"), LensName::new("codex")]
    );
    assert_eq!(t.state(), State::Open);
}

#[test]
fn a_human_reply_waits_until_an_answer_names_it() {
    let mut c = vec![
        comment(10, BOT, ROOT, None),
        comment(11, "alice", "intended", Some(10)),
    ];
    assert_eq!(threads(&c)[0].state(), State::Disputed { reply: 11 });
    assert_eq!(threads(&c)[0].pending().map(|m| m.id), Some(11));
    c.push(answer(12, 11, Outcome::Withdrawn));
    assert_eq!(threads(&c)[0].state(), State::Answered(Outcome::Withdrawn));
    assert!(threads(&c)[0].pending().is_none());
    // A new human reply reopens it; the answer to it settles it again.
    c.push(comment(13, "alice", "still?", Some(10)));
    assert_eq!(threads(&c)[0].state(), State::Disputed { reply: 13 });
    c.push(answer(14, 13, Outcome::Holds));
    assert_eq!(threads(&c)[0].state(), State::Answered(Outcome::Holds));
}

#[test]
fn two_replies_before_an_answer_get_one_answer_to_the_latest() {
    let c = vec![
        comment(10, BOT, ROOT, None),
        comment(11, "alice", "no", Some(10)),
        comment(12, "bob", "agree with alice", Some(10)),
    ];
    assert_eq!(threads(&c)[0].pending().map(|m| m.id), Some(12));
}

#[test]
fn bots_and_replies_calling_on_another_bot_are_not_disputes() {
    let c = vec![
        comment(10, BOT, ROOT, None),
        comment(11, "dependabot[bot]", "rebased", Some(10)),
        comment(12, "alice", "@copilot[bot] please fix this", Some(10)),
    ];
    let t = &threads(&c)[0];
    assert_eq!(t.state(), State::Open);
    assert!(!t.human_replied());
    // Mentioning reviewbot itself is talking to it.
    let c = vec![
        comment(10, BOT, ROOT, None),
        comment(11, "alice", "@reviewbot[bot] this is intended", Some(10)),
    ];
    assert_eq!(threads(&c)[0].state(), State::Disputed { reply: 11 });
}

#[test]
fn a_marker_pasted_by_a_human_is_not_an_answer() {
    let pasted = format!(
        "done {}",
        ReplyMarker {
            reply_to: 11,
            outcome: Outcome::Withdrawn,
            finding: "0123456789abcdef".into()
        }
        .render()
    );
    let c = vec![
        comment(10, BOT, ROOT, None),
        comment(11, "alice", &pasted, Some(10)),
    ];
    assert_eq!(threads(&c)[0].state(), State::Disputed { reply: 11 });
}

#[test]
fn markers_round_trip() {
    for outcome in [Outcome::Withdrawn, Outcome::Holds, Outcome::Addressed] {
        let m = ReplyMarker {
            reply_to: 42,
            outcome,
            finding: "00ff00ff00ff00ff".into(),
        };
        assert_eq!(
            ReplyMarker::find(&format!("text\n{}\n", m.render())),
            Some(m)
        );
    }
    assert_eq!(
        ReplyMarker::find("<!-- reviewbot reply-to=x outcome=holds finding=a -->"),
        None
    );
}

#[test]
fn a_readers_reply_waits_for_an_answer_but_disputes_nothing() {
    let mut c = vec![
        comment(10, BOT, ROOT, None),
        comment(11, "bob", "no", Some(10)),
    ];
    let t = &threads(&c)[0];
    assert_eq!(t.pending().map(|m| m.id), Some(11));
    assert_eq!(t.state(), State::Open);
    assert!(t.ruling_writer(11).is_none(), "no learning under a reader");
    // Answered `Withdrawn.`: still open, still counted.
    c.push(answer(12, 11, Outcome::Withdrawn));
    assert_eq!(threads(&c)[0].state(), State::Open);
    assert!(threads(&c)[0].pending().is_none());
}

#[test]
fn a_learning_is_filed_under_the_writer_whose_dispute_an_answer_settles() {
    // bob argues, alice (a writer) replies after: the answer to alice's reply settles her
    // dispute, filed under her words.
    let mut c = vec![
        comment(10, BOT, ROOT, None),
        comment(11, "bob", "the caller checks first", Some(10)),
        comment(12, "alice", "+1", Some(10)),
    ];
    let t = &threads(&c)[0];
    assert_eq!(t.pending().map(|m| m.id), Some(12));
    assert_eq!(
        t.ruling_writer(12).map(|m| m.author.as_str()),
        Some("alice")
    );
    // Once her dispute was answered, a reader's later reply settles no writer's dispute.
    c.push(answer(13, 12, Outcome::Holds));
    c.push(comment(14, "bob", "look again", Some(10)));
    let t = &threads(&c)[0];
    assert_eq!(t.pending().map(|m| m.id), Some(14));
    assert!(t.ruling_writer(14).is_none());
    assert_eq!(t.state(), State::Answered(Outcome::Holds));
}

#[test]
fn a_thread_a_writer_resolved_is_dismissed() {
    let c = vec![comment(10, BOT, ROOT, None)];
    let mut rulings = Rulings::default();
    rulings.dismissed(10);
    let t = &Thread::collect(&c, &Identity::Login(BOT.into()), |r| r == 1, &rulings)[0];
    assert_eq!(t.state(), State::Dismissed);
}
