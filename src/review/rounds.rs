//! Rounds: what earlier rounds said (read back from reviewbot's own markers), what a new round
//! posts, and what it counts.
//!
//! Only reviews authored by reviewbot's identity count — a marker pasted by a human is text, not
//! a round. A finding already posted on code that has not changed is not posted again; one a
//! writer disputed (replied to) or dismissed (resolved its thread) is not raised again unless
//! its lines change; the verdict counts every finding that holds at this head, new or carried
//! over.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::diff::{Diff, Side};
use crate::github::model::{Review, ReviewComment};
use crate::ids::{DeliveryId, HeadSha};
use crate::lens::contract::Severity;
use crate::review::finding::{Finding, fingerprint};
use crate::review::markers::{Identity, Outcome, RoundMarker, comment_fingerprint};
use crate::review::threads::{Rulings, State as ThreadState, Thread};
use crate::review::verdict::Verdict;

/// A finding an earlier round reported, as far as it can be read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PastFinding {
    pub fingerprint: String,
    pub severity: Severity,
    /// Where it sat, when known (from its line comment or the body's list).
    pub place: Option<Place>,
    /// A writer replied in its thread and no answer of ours followed (yet).
    pub disputed: bool,
    /// Our answer to a writer's dispute withdrew it.
    pub withdrawn: bool,
    /// A writer resolved its thread on GitHub.
    pub dismissed: bool,
    /// Its thread: our line comment's id, when it was posted as one.
    pub thread: Option<u64>,
    /// Its title as posted, when its comment or list item can be read back.
    pub title: Option<String>,
    /// A human replied in its thread (then only humans resolve it).
    pub human_replied: bool,
}

impl PastFinding {
    fn listed(fingerprint: String, severity: Severity, place: Option<Place>) -> PastFinding {
        PastFinding {
            fingerprint,
            severity,
            place,
            disputed: false,
            withdrawn: false,
            dismissed: false,
            thread: None,
            title: None,
            human_replied: false,
        }
    }

    /// Whether it counts in a verdict if it still holds: not waiting on a writer's dispute,
    /// not withdrawn, not dismissed.
    pub fn standing(&self) -> bool {
        !self.disputed && !self.withdrawn && !self.dismissed
    }
}

/// A finding's place: path, side and line range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub path: String,
    pub side: Side,
    pub start: u32,
    pub end: u32,
}

/// What the earlier rounds of a PR said.
#[derive(Debug, Clone, Default)]
pub struct History {
    /// One per round review of ours, in posting order.
    pub rounds: Vec<(u64, RoundMarker)>,
    /// Every finding the latest round(s) reported, by fingerprint.
    pub findings: BTreeMap<String, PastFinding>,
    /// The threads under our finding comments.
    pub threads: Vec<Thread>,
}

impl History {
    /// Reads reviewbot's earlier rounds from a PR's reviews and review comments; `rulings`
    /// says whose replies and resolutions change what counts. In per-lens mode (`lens`), only
    /// that lens's rounds count.
    pub fn read(
        reviews: &[Review],
        comments: &[ReviewComment],
        who: &Identity,
        rulings: &Rulings,
        lens: Option<&str>,
    ) -> History {
        let mut history = History::default();
        let ours: BTreeSet<u64> = reviews
            .iter()
            .filter(|r| who.owns(r.user.as_ref()))
            .filter_map(|r| {
                let marker = RoundMarker::find(&r.body)?;
                (marker.lens.as_deref() == lens).then(|| {
                    history.rounds.push((r.id, marker));
                    r.id
                })
            })
            .collect();

        // Findings: every fingerprint our markers listed, with severity and place from our own
        // line comments or body lists; where their threads stand (`review::threads`).
        for thread in Thread::collect(comments, who, |id| ours.contains(&id), rulings) {
            let severity = severity_of(&thread.text).unwrap_or(Severity::Advisory);
            let place = thread.line.map(|line| Place {
                path: thread.path.clone(),
                side: thread.side,
                start: line,
                end: line,
            });
            let state = thread.state();
            history.findings.insert(
                thread.fingerprint.clone(),
                PastFinding {
                    disputed: matches!(state, ThreadState::Disputed { .. }),
                    withdrawn: state == ThreadState::Answered(Outcome::Withdrawn),
                    dismissed: state == ThreadState::Dismissed,
                    thread: Some(thread.root),
                    title: Some(thread.title()),
                    human_replied: thread.human_replied(),
                    ..PastFinding::listed(thread.fingerprint.clone(), severity, place)
                },
            );
            history.threads.push(thread);
        }
        // Findings listed only in a body (off the diff, or over the comment cap).
        for r in reviews.iter().filter(|r| ours.contains(&r.id)) {
            for (fp, severity, place) in body_listed(&r.body) {
                history
                    .findings
                    .entry(fp.clone())
                    .or_insert(PastFinding::listed(fp, severity, place));
            }
        }
        // Only what the latest round still reported is open; older fingerprints were settled.
        if let Some((_, latest)) = history.rounds.iter().max_by_key(|(_, m)| m.round) {
            let listed: BTreeSet<&String> = latest.findings.iter().collect();
            // A settled thread (disputed, withdrawn, dismissed) stays known, so it is not
            // raised again.
            let settled: BTreeSet<String> = history
                .findings
                .values()
                .filter(|f| !f.standing())
                .map(|f| f.fingerprint.clone())
                .collect();
            history
                .findings
                .retain(|fp, _| listed.contains(fp) || settled.contains(fp));
            for fp in &latest.findings {
                history
                    .findings
                    .entry(fp.clone())
                    .or_insert(PastFinding::listed(fp.clone(), Severity::Advisory, None));
            }
        }
        history
    }

    /// What the latest round's findings come to now that their threads have spoken: those
    /// withdrawn, disputed or dismissed no longer count.
    pub fn standing_verdict(&self) -> Verdict {
        let mut v = Verdict::default();
        for f in self.findings.values().filter(|f| f.standing()) {
            match f.severity {
                Severity::Blocking => v.blocking += 1,
                Severity::Advisory => v.advisory += 1,
            }
        }
        v
    }

    /// Whether a thread took one of the findings out of the count (withdrawn, disputed or
    /// dismissed).
    pub fn any_settled(&self) -> bool {
        self.findings.values().any(|f| !f.standing())
    }

    /// The highest round so far (0 before the first).
    pub fn last_round(&self) -> u32 {
        self.rounds.iter().map(|(_, m)| m.round).max().unwrap_or(0)
    }

    /// The marker of the latest round, whose head the next round's interdiff starts from.
    pub fn latest(&self) -> Option<&RoundMarker> {
        self.rounds.iter().map(|(_, m)| m).max_by_key(|m| m.round)
    }

    /// Whether a round of ours answered the delivery `ask` already.
    pub fn answered(&self, ask: &DeliveryId) -> bool {
        self.rounds.iter().any(|(_, m)| m.ask.as_ref() == Some(ask))
    }

    /// The round that already reviewed `head`, if one did.
    pub fn reviewed(&self, head: &HeadSha) -> Option<&RoundMarker> {
        self.rounds
            .iter()
            .map(|(_, m)| m)
            .filter(|m| &m.head == head)
            .max_by_key(|m| m.round)
    }
}

/// `**Blocking.**` / `**Advisory.**` at the start of one of our texts.
fn severity_of(text: &str) -> Option<Severity> {
    let t = text.trim_start();
    if t.starts_with("**Blocking.**") {
        Some(Severity::Blocking)
    } else if t.starts_with("**Advisory.**") {
        Some(Severity::Advisory)
    } else {
        None
    }
}

/// Findings a body lists as `- **Blocking.** Title (`path:12-14`; high confidence) <!-- fp -->`.
fn body_listed(body: &str) -> Vec<(String, Severity, Option<Place>)> {
    body.lines()
        .filter_map(|line| {
            let item = line.strip_prefix("- ")?;
            let severity = severity_of(item)?;
            let fp = comment_fingerprint(item)?.to_owned();
            Some((fp, severity, place_in(item)))
        })
        .collect()
}

/// The `` `path:start-end` `` or `` `path:line (old)` `` of a listed finding.
fn place_in(item: &str) -> Option<Place> {
    let open = item.rfind("(`")? + 2;
    let close = open + item[open..].find('`')?;
    let mut spec = &item[open..close];
    let side = match spec.strip_suffix(" (old)") {
        Some(s) => {
            spec = s;
            Side::Left
        }
        None => Side::Right,
    };
    let (path, lines) = spec.rsplit_once(':')?;
    let (start, end) = match lines.split_once('-') {
        Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
        None => {
            let n = lines.parse().ok()?;
            (n, n)
        }
    };
    Some(Place {
        path: path.to_owned(),
        side,
        start,
        end,
    })
}

/// A finding an earlier round reported that still holds at this head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Carried {
    pub fingerprint: String,
    pub severity: Severity,
}

/// What a new round posts and counts.
#[derive(Debug, Clone, Default)]
pub struct Settled {
    /// Findings to post now: new ones, in output order.
    pub post: Vec<Finding>,
    /// Earlier findings that still hold (code unchanged, not disputed).
    pub carried: Vec<Carried>,
    /// Findings found again that were not posted: already posted, or disputed.
    pub suppressed: Vec<(Finding, &'static str)>,
    /// Threads of earlier findings that were addressed: their lines changed and no lens raised
    /// them again.
    pub addressed: Vec<Addressed>,
}

/// An earlier finding's thread to resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Addressed {
    /// The thread's root comment.
    pub thread: u64,
    pub fingerprint: String,
    /// Our "Addressed in …" note is in the thread already (a run stopped before resolving it).
    pub noted: bool,
}

/// Decides a round: drops what was already posted on unchanged code, disputed or withdrawn;
/// carries over earlier findings whose lines are still in the PR's diff unchanged, and those
/// a lens raised again after their lines changed (same file, same title: their thread stays
/// open, nothing is posted twice). When every lens answered (`all_answered`), an earlier
/// finding whose lines changed and that no lens raised again is addressed — unless a human
/// replied in its thread.
pub fn settle(found: Vec<Finding>, history: &History, diff: &Diff, all_answered: bool) -> Settled {
    let mut settled = Settled::default();
    let mut seen = BTreeSet::new();
    for f in found {
        match history.findings.get(&f.fingerprint) {
            Some(past) if past.withdrawn => settled
                .suppressed
                .push((f, "withdrawn in its thread; its lines have not changed")),
            Some(past) if past.disputed => settled
                .suppressed
                .push((f, "disputed by a writer; its lines have not changed")),
            Some(past) if past.dismissed => settled
                .suppressed
                .push((f, "dismissed by a writer; its lines have not changed")),
            Some(past) => {
                seen.insert(f.fingerprint.clone());
                settled.carried.push(Carried {
                    fingerprint: past.fingerprint.clone(),
                    severity: f.severity,
                });
                settled
                    .suppressed
                    .push((f, "already posted; its lines have not changed"));
            }
            None => match raised_again(&f, history, diff, &seen) {
                Some(past) => {
                    seen.insert(past.fingerprint.clone());
                    settled.carried.push(Carried {
                        fingerprint: past.fingerprint.clone(),
                        severity: f.severity,
                    });
                    settled.suppressed.push((
                        f,
                        "still holds after its lines changed; its thread stays open",
                    ));
                }
                None => settled.post.push(f),
            },
        }
    }
    for past in history.findings.values() {
        if !past.standing() || seen.contains(&past.fingerprint) {
            continue;
        }
        if still_there(past, diff) {
            settled.carried.push(Carried {
                fingerprint: past.fingerprint.clone(),
                severity: past.severity,
            });
        } else if let Some(thread) = past.thread.filter(|_| all_answered && !past.human_replied) {
            let noted = history.threads.iter().any(|t| {
                t.root == thread
                    && t.messages.iter().any(|m| {
                        m.answer
                            .as_ref()
                            .is_some_and(|a| a.outcome == Outcome::Addressed)
                    })
            });
            settled.addressed.push(Addressed {
                thread,
                fingerprint: past.fingerprint.clone(),
                noted,
            });
        }
    }
    settled
}

/// The earlier, still standing finding that `f` repeats after its lines changed: same file,
/// same title.
fn raised_again<'h>(
    f: &Finding,
    history: &'h History,
    diff: &Diff,
    seen: &BTreeSet<String>,
) -> Option<&'h PastFinding> {
    let title = normalized(&f.title);
    history.findings.values().find(|past| {
        past.standing()
            && !seen.contains(&past.fingerprint)
            // Its thread names the file even once GitHub marks the comment outdated.
            && history
                .threads
                .iter()
                .any(|t| Some(t.root) == past.thread && t.path == f.path)
            && past.title.as_deref().map(normalized).is_some_and(|t| {
                !t.is_empty() && (t == title || title.starts_with(&format!("{t}. ")))
            })
            && !still_there(past, diff)
    })
}

/// A title compared loosely: case, spacing and a final period aside.
fn normalized(title: &str) -> String {
    title
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .trim_end_matches('.')
        .to_lowercase()
}

/// Whether an earlier finding's lines are still in the diff, unchanged — possibly moved by edits
/// above them: some window of the same length on the same file and side has its fingerprint.
fn still_there(past: &PastFinding, diff: &Diff) -> bool {
    let Some(place) = &past.place else {
        return false;
    };
    let Some(file) = diff.file(&place.path) else {
        return false;
    };
    let len = place.end.saturating_sub(place.start) as usize + 1;
    let lines: Vec<(u32, &str)> = diff
        .file_lines(file)
        .filter_map(|l| {
            let n = match place.side {
                Side::Right => l.new,
                Side::Left => l.old,
            }?;
            Some((n, l.text))
        })
        .collect();
    lines.windows(len).any(|w| {
        // Consecutive line numbers only: a window must not jump across hunks.
        w.windows(2).all(|p| p[1].0 == p[0].0 + 1)
            && fingerprint(&place.path, place.side, w.iter().map(|(_, t)| *t)) == past.fingerprint
    })
}

/// The verdict of a round: what it posts plus what it carries over.
pub fn verdict(post: &[Finding], carried: &[Carried]) -> Verdict {
    let mut v = Verdict::of(post);
    for c in carried {
        match c.severity {
            Severity::Blocking => v.blocking += 1,
            Severity::Advisory => v.advisory += 1,
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::model::User;
    use crate::ids::LensName;
    use crate::lens::contract::RawFinding;
    use crate::review::Confidence;

    const SHA1: &str = "ec26c3e57ca3a959ca5aad62de7213c562f8c821";
    const SHA2: &str = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e";

    fn bot() -> User {
        User {
            login: "reviewbot[bot]".into(),
            kind: "Bot".into(),
        }
    }

    fn human(login: &str) -> User {
        User {
            login: login.into(),
            kind: "User".into(),
        }
    }

    /// `alice` may write to the repository; nobody else may.
    fn alice_writes() -> Rulings {
        let mut r = Rulings::default();
        r.writer("Alice");
        r
    }

    fn review(id: u64, user: User, body: &str) -> Review {
        Review {
            id,
            user: Some(user),
            body: body.into(),
            commit_id: Some(SHA1.into()),
            state: "COMMENTED".into(),
        }
    }

    fn comment(
        id: u64,
        review: u64,
        user: User,
        body: &str,
        reply_to: Option<u64>,
    ) -> ReviewComment {
        ReviewComment {
            id,
            review_id: Some(review),
            in_reply_to_id: reply_to,
            user: Some(user),
            body: body.into(),
            path: "src/a.rs".into(),
            line: Some(2),
            side: Some(Side::Right),
            commit_id: Some(SHA1.into()),
        }
    }

    fn marker(round: u32, head: &str, findings: &[&str]) -> String {
        RoundMarker {
            round,
            head: HeadSha::parse(head).unwrap(),
            verdict: Verdict {
                blocking: 1,
                advisory: 0,
            },
            findings: findings.iter().map(|s| (*s).to_owned()).collect(),
            lens: None,
            ask: None,
        }
        .render()
    }

    const DIFF: &str = "diff --git a/src/a.rs b/src/a.rs\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,2 +1,3 @@\n fn a() {}\n+let x = y.unwrap();\n fn c() {}\n";

    fn found(diff: &Diff, line: u32, title: &str) -> Finding {
        let raw = RawFinding {
            path: "src/a.rs".into(),
            line,
            start_line: None,
            side: Side::Right,
            severity: Severity::Blocking,
            confidence: Confidence::High,
            title: title.into(),
            body: "b".into(),
            quote: None,
            suggestion: None,
        };
        Finding::locate(raw, &LensName::new("claude"), diff)
    }

    #[test]
    fn markers_round_trip_and_reject_junk() {
        let m = RoundMarker {
            round: 3,
            head: HeadSha::parse(SHA1).unwrap(),
            verdict: Verdict {
                blocking: 1,
                advisory: 3,
            },
            findings: vec!["0123456789abcdef".into(), "fedcba9876543210".into()],
            lens: Some("claude".into()),
            ask: DeliveryId::parse("72d3162e-cc78-11e3-81ab-4c9367dc0958"),
        };
        let body = format!("Round 3 — reviewed head ec26c3e5\n\n{}\n", m.render());
        assert_eq!(RoundMarker::find(&body), Some(m));
        // An ask that is not a delivery id is dropped; the round still counts.
        let odd = body.replace("ask=72d3162e", "ask=<b>72d3162e");
        assert_eq!(
            RoundMarker::find(&odd).map(|m| (m.round, m.ask)),
            Some((3, None))
        );
        assert_eq!(RoundMarker::find("<!-- reviewbot round=x head=1 -->"), None);
        assert_eq!(
            RoundMarker::find("<!-- reviewbot round=2 head=abc verdict=1,0 findings= -->"),
            None
        );
        assert_eq!(
            comment_fingerprint("**Blocking.** x\n<!-- reviewbot finding=0123456789abcdef -->"),
            Some("0123456789abcdef")
        );
        assert_eq!(
            comment_fingerprint("<!-- reviewbot finding=nothex!! -->"),
            None
        );
    }

    #[test]
    fn only_our_identity_counts() {
        let reviews = vec![
            review(1, human("mallory"), &marker(7, SHA2, &[])),
            review(2, bot(), &marker(1, SHA1, &[])),
        ];
        let h = History::read(&reviews, &[], &Identity::AnyBot, &Rulings::default(), None);
        assert_eq!(h.last_round(), 1);
        let h = History::read(
            &reviews,
            &[],
            &Identity::Login("someone-else".into()),
            &Rulings::default(),
            None,
        );
        assert_eq!(h.last_round(), 0);
        let h = History::read(
            &reviews,
            &[],
            &Identity::Login("REVIEWBOT[bot]".into()),
            &Rulings::default(),
            None,
        );
        assert_eq!(h.last_round(), 1);
        assert!(h.reviewed(&HeadSha::parse(SHA1).unwrap()).is_some());
        assert!(h.reviewed(&HeadSha::parse(SHA2).unwrap()).is_none());
    }

    #[test]
    fn per_lens_rounds_are_separate() {
        let mut m = RoundMarker::find(&marker(2, SHA1, &[])).unwrap();
        m.lens = Some("claude".into());
        let reviews = vec![
            review(1, bot(), &m.render()),
            review(2, bot(), &marker(4, SHA1, &[])),
        ];
        assert_eq!(
            History::read(
                &reviews,
                &[],
                &Identity::AnyBot,
                &Rulings::default(),
                Some("claude")
            )
            .last_round(),
            2
        );
        assert_eq!(
            History::read(
                &reviews,
                &[],
                &Identity::AnyBot,
                &Rulings::default(),
                Some("terra")
            )
            .last_round(),
            0
        );
        assert_eq!(
            History::read(&reviews, &[], &Identity::AnyBot, &Rulings::default(), None).last_round(),
            4
        );
    }

    #[test]
    fn an_unchanged_finding_is_not_posted_again_but_still_counts() {
        let diff = Diff::parse(DIFF).unwrap();
        let f = found(&diff, 2, "unwrap may panic");
        let fp = f.fingerprint.clone();
        let body = format!(
            "**Blocking.** unwrap may panic. b\n\n(high confidence · claude)\n<!-- reviewbot finding={fp} -->"
        );
        let reviews = vec![review(10, bot(), &marker(1, SHA1, &[&fp]))];
        let comments = vec![comment(100, 10, bot(), &body, None)];
        let h = History::read(
            &reviews,
            &comments,
            &Identity::AnyBot,
            &alice_writes(),
            None,
        );

        // Found again, reworded: same lines, same fingerprint — not posted, carried over.
        let again = found(&diff, 2, "Calling unwrap here can crash");
        let s = settle(vec![again], &h, &diff, true);
        assert!(s.post.is_empty());
        assert_eq!(
            s.carried,
            vec![Carried {
                fingerprint: fp.clone(),
                severity: Severity::Blocking
            }]
        );
        assert_eq!(
            verdict(&s.post, &s.carried),
            Verdict {
                blocking: 1,
                advisory: 0
            }
        );

        // Not found again (an interdiff round did not look there): still there, carried over.
        let s = settle(vec![], &h, &diff, true);
        assert_eq!(s.carried.len(), 1);

        // The line changed: the old finding no longer holds; a new one on it is posted.
        let changed = Diff::parse(DIFF.replace("y.unwrap()", "y.expect(\"y\")")).unwrap();
        let s = settle(
            vec![found(&changed, 2, "expect may panic")],
            &h,
            &changed,
            true,
        );
        assert_eq!(s.post.len(), 1);
        assert!(s.carried.is_empty());
        // … and the old one's thread is addressed, unless a lens failed this round.
        assert_eq!(
            s.addressed,
            vec![Addressed {
                thread: 100,
                fingerprint: fp.clone(),
                noted: false,
            }]
        );
        assert!(settle(vec![], &h, &changed, false).addressed.is_empty());

        // Raised again under the same title after its lines changed: it still holds, its
        // thread stays open, and nothing is posted twice.
        let s = settle(
            vec![found(&changed, 2, "Unwrap may panic.")],
            &h,
            &changed,
            true,
        );
        assert!(s.post.is_empty() && s.addressed.is_empty());
        assert_eq!(s.carried[0].fingerprint, fp);

        // A thread a human replied in is left to the humans.
        let mut comments = comments.clone();
        comments.push(comment(101, 10, human("alice"), "hm", Some(100)));
        comments.push(comment(
            102,
            10,
            bot(),
            &format!(
                "Still holds. yes\n<!-- reviewbot reply-to=101 outcome=holds finding={fp} -->"
            ),
            Some(100),
        ));
        let h = History::read(
            &reviews,
            &comments,
            &Identity::AnyBot,
            &alice_writes(),
            None,
        );
        assert!(h.findings[&fp].standing() && h.findings[&fp].human_replied);
        assert!(settle(vec![], &h, &changed, true).addressed.is_empty());
    }

    #[test]
    fn a_withdrawn_finding_is_not_raised_again_nor_counted() {
        let diff = Diff::parse(DIFF).unwrap();
        let f = found(&diff, 2, "unwrap may panic");
        let fp = f.fingerprint.clone();
        let body = format!("**Blocking.** unwrap may panic. b\n<!-- reviewbot finding={fp} -->");
        let reviews = vec![review(10, bot(), &marker(1, SHA1, &[&fp]))];
        let comments = vec![
            comment(100, 10, bot(), &body, None),
            comment(101, 10, human("alice"), "intended", Some(100)),
            comment(
                102,
                10,
                bot(),
                &format!(
                    "Withdrawn. ok\n<!-- reviewbot reply-to=101 outcome=withdrawn finding={fp} -->"
                ),
                Some(100),
            ),
        ];
        let h = History::read(
            &reviews,
            &comments,
            &Identity::AnyBot,
            &alice_writes(),
            None,
        );
        assert!(h.findings[&fp].withdrawn && !h.findings[&fp].disputed);
        let s = settle(vec![f], &h, &diff, true);
        assert!(s.post.is_empty() && s.carried.is_empty());
        assert_eq!(verdict(&s.post, &s.carried), Verdict::default());
    }

    #[test]
    fn a_moved_finding_still_holds() {
        let diff = Diff::parse(DIFF).unwrap();
        let fp = found(&diff, 2, "t").fingerprint;
        let body = format!("**Advisory.** t. b\n<!-- reviewbot finding={fp} -->");
        let h = History::read(
            &[review(10, bot(), &marker(1, SHA1, &[&fp]))],
            &[comment(100, 10, bot(), &body, None)],
            &Identity::AnyBot,
            &Rulings::default(),
            None,
        );
        let moved = Diff::parse("diff --git a/src/a.rs b/src/a.rs\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1,2 +1,5 @@\n fn a() {}\n+// one\n+// two\n+let x = y.unwrap();\n fn c() {}\n").unwrap();
        let s = settle(vec![], &h, &moved, true);
        assert_eq!(
            s.carried,
            vec![Carried {
                fingerprint: fp,
                severity: Severity::Advisory
            }]
        );
    }

    #[test]
    fn a_disputed_finding_is_not_raised_again_nor_counted() {
        let diff = Diff::parse(DIFF).unwrap();
        let f = found(&diff, 2, "unwrap may panic");
        let fp = f.fingerprint.clone();
        let body = format!("**Blocking.** unwrap may panic. b\n<!-- reviewbot finding={fp} -->");
        let reviews = vec![review(10, bot(), &marker(1, SHA1, &[&fp]))];
        let comments = vec![
            comment(100, 10, bot(), &body, None),
            comment(
                101,
                11,
                human("alice"),
                "This cannot be None here.",
                Some(100),
            ),
        ];
        let h = History::read(
            &reviews,
            &comments,
            &Identity::AnyBot,
            &alice_writes(),
            None,
        );
        assert!(h.findings[&fp].disputed);
        let s = settle(vec![f], &h, &diff, true);
        assert!(s.post.is_empty() && s.carried.is_empty());
        assert_eq!(s.suppressed.len(), 1);
        // A bot replying is no dispute.
        let comments = vec![
            comment(100, 10, bot(), &body, None),
            comment(
                101,
                11,
                User {
                    login: "dependabot[bot]".into(),
                    kind: "Bot".into(),
                },
                "ok",
                Some(100),
            ),
        ];
        assert!(
            !History::read(
                &reviews,
                &comments,
                &Identity::AnyBot,
                &alice_writes(),
                None
            )
            .findings[&fp]
                .disputed
        );
    }

    /// The PR's author (a reader, `bob`) replies "no" under a blocking finding: answered or
    /// not, withdrawn or not, it still counts and is still carried over; only a writer's reply
    /// or resolution takes it out.
    #[test]
    fn only_a_writer_changes_what_counts() {
        let diff = Diff::parse(DIFF).unwrap();
        let f = found(&diff, 2, "unwrap may panic");
        let fp = f.fingerprint.clone();
        let body = format!("**Blocking.** unwrap may panic. b\n<!-- reviewbot finding={fp} -->");
        let reviews = vec![review(10, bot(), &marker(1, SHA1, &[&fp]))];
        let answer = |id: u64, to: u64, outcome: &str| {
            comment(
                id,
                10,
                bot(),
                &format!(
                    "Withdrawn. ok\n<!-- reviewbot reply-to={to} outcome={outcome} finding={fp} -->"
                ),
                Some(100),
            )
        };
        let counts = |comments: &[ReviewComment], rulings: &Rulings| {
            let h = History::read(&reviews, comments, &Identity::AnyBot, rulings, None);
            let s = settle(vec![f.clone()], &h, &diff, true);
            (
                h.standing_verdict().blocking,
                verdict(&s.post, &s.carried).blocking,
            )
        };
        let mut comments = vec![
            comment(100, 10, bot(), &body, None),
            comment(101, 11, human("bob"), "no", Some(100)),
        ];
        assert_eq!(
            counts(&comments, &alice_writes()),
            (1, 1),
            "a reader's dispute"
        );
        comments.push(answer(102, 101, "withdrawn"));
        assert_eq!(
            counts(&comments, &alice_writes()),
            (1, 1),
            "a reader's withdrawal"
        );

        // A writer's reply disputes it until the next answer.
        comments.push(comment(
            103,
            12,
            human("alice"),
            "agreed with bob",
            Some(100),
        ));
        assert_eq!(
            counts(&comments, &alice_writes()),
            (0, 0),
            "a writer's dispute"
        );
        comments.push(answer(104, 103, "holds"));
        assert_eq!(counts(&comments, &alice_writes()), (1, 1), "still holds");
        // The reader cannot undo that with another reply and withdrawal.
        comments.push(comment(105, 13, human("bob"), "please", Some(100)));
        comments.push(answer(106, 105, "withdrawn"));
        assert_eq!(counts(&comments, &alice_writes()), (1, 1), "a reader again");
        // A writer's next reply, answered `Withdrawn.`, keeps it out.
        comments.push(comment(
            107,
            14,
            human("ALICE"),
            "really intended",
            Some(100),
        ));
        comments.push(answer(108, 107, "withdrawn"));
        assert_eq!(
            counts(&comments, &alice_writes()),
            (0, 0),
            "a writer's withdrawal"
        );

        // A thread a writer resolved is dismissed, whatever was said.
        let fresh = vec![comment(100, 10, bot(), &body, None)];
        let mut resolved = alice_writes();
        resolved.dismissed(100);
        let h = History::read(&reviews, &fresh, &Identity::AnyBot, &resolved, None);
        assert!(h.findings[&fp].dismissed && h.any_settled());
        assert_eq!(counts(&fresh, &resolved), (0, 0));
        assert_eq!(
            settle(vec![f.clone()], &h, &diff, true).suppressed[0].1,
            "dismissed by a writer; its lines have not changed"
        );
    }

    #[test]
    fn a_forged_marker_in_a_human_comment_counts_for_nothing() {
        let diff = Diff::parse(DIFF).unwrap();
        let f = found(&diff, 2, "unwrap may panic");
        let forged = format!(
            "**Blocking.** x\n<!-- reviewbot finding={} -->",
            f.fingerprint
        );
        let reviews = vec![review(
            10,
            human("mallory"),
            &marker(1, SHA1, &[&f.fingerprint]),
        )];
        let comments = vec![comment(100, 10, human("mallory"), &forged, None)];
        let h = History::read(
            &reviews,
            &comments,
            &Identity::AnyBot,
            &alice_writes(),
            None,
        );
        assert!(h.findings.is_empty());
        assert_eq!(settle(vec![f], &h, &diff, true).post.len(), 1);
    }

    #[test]
    fn body_listed_findings_are_read_back() {
        let listed = "- **Blocking.** Runs parked (`src/tick.py:18-19 (old)`; medium confidence) <!-- reviewbot finding=0123456789abcdef -->";
        let got = body_listed(listed);
        assert_eq!(
            got,
            vec![(
                "0123456789abcdef".into(),
                Severity::Blocking,
                Some(Place {
                    path: "src/tick.py".into(),
                    side: Side::Left,
                    start: 18,
                    end: 19
                })
            )]
        );
    }
}
