//! Markers: the hidden HTML comments reviewbot writes into what it posts, and reads back to
//! know what it said before (`docs/contract.md` "Markers"). One module writes and parses each:
//! the round marker in a review's body, the finding marker in a line comment or list item, and
//! the answer marker in a thread reply; and says whose markers count.

use std::collections::BTreeMap;

use crate::github::model::{Review, User};
use crate::ids::{DeliveryId, HeadSha};
use crate::review::verdict::Verdict;

const REPLY_OPEN: &str = "<!-- reviewbot reply-to=";
const FINDING_OPEN: &str = "<!-- reviewbot finding=";
const ROUND_OPEN: &str = "<!-- reviewbot round=";

/// The author GitHub gives what a workflow's own `GITHUB_TOKEN` writes.
pub const ACTIONS_BOT: &str = "github-actions[bot]";

/// Whose reviews count as reviewbot's own (`docs/contract.md` "Whose markers count").
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// A known login: `[github] bot_login`, the token's user from `GET /user`, or in a
    /// workflow, [`ACTIONS_BOT`] for a token that cannot say who it is.
    Login(String),
    /// The token cannot say who it is (an installation token outside a workflow): any bot
    /// account.
    AnyBot,
}

impl Identity {
    pub fn owns(&self, user: Option<&User>) -> bool {
        match (self, user) {
            (Identity::Login(login), Some(u)) => u.login.eq_ignore_ascii_case(login),
            (Identity::AnyBot, Some(u)) => u.is_bot(),
            (_, None) => false,
        }
    }

    /// The bots, other than this identity, whose reviews in `reviews` carry something like a
    /// round marker: each once, in order.
    pub fn other_bots_with_rounds(&self, reviews: &[Review]) -> Vec<String> {
        let mut logins: Vec<String> = Vec::new();
        for review in reviews {
            if let Some(user) = &review.user
                && user.is_bot()
                && !self.owns(Some(user))
                && RoundMarker::mentioned(&review.body)
                && !logins.contains(&user.login)
            {
                logins.push(user.login.clone());
            }
        }
        logins
    }
}

/// A round marker: `<!-- reviewbot round=N head=<sha> verdict=B,A findings=… [lens=NAME] -->`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundMarker {
    pub round: u32,
    pub head: HeadSha,
    pub verdict: Verdict,
    pub findings: Vec<String>,
    pub lens: Option<String>,
    /// The delivery that asked for the round (App jobs).
    pub ask: Option<DeliveryId>,
}

const MARKER_OPEN: &str = "<!-- reviewbot ";

impl RoundMarker {
    /// The marker as posted.
    pub fn render(&self) -> String {
        let mut s = format!(
            "{MARKER_OPEN}round={} head={} verdict={},{} findings={}",
            self.round,
            self.head,
            self.verdict.blocking,
            self.verdict.advisory,
            self.findings.join(",")
        );
        if let Some(lens) = &self.lens {
            s.push_str(&format!(" lens={lens}"));
        }
        if let Some(ask) = &self.ask {
            s.push_str(&format!(" ask={ask}"));
        }
        s.push_str(" -->");
        s
    }

    /// The start of round `round`'s marker on `head`, which finds the review that posted it.
    pub fn prefix(round: u32, head: &HeadSha) -> String {
        format!("{MARKER_OPEN}round={round} head={head}")
    }

    /// Whether `text` holds something that starts like a round marker (well-formed or not).
    pub fn mentioned(text: &str) -> bool {
        text.contains(ROUND_OPEN)
    }

    /// Whether `line` is a round marker's line.
    pub fn is_line(line: &str) -> bool {
        line.trim_start().starts_with(ROUND_OPEN)
    }

    /// The last well-formed round marker in `body`, if any.
    pub fn find(body: &str) -> Option<RoundMarker> {
        body.match_indices(MARKER_OPEN)
            .filter_map(|(i, _)| {
                let rest = &body[i + MARKER_OPEN.len()..];
                let end = rest.find("-->")?;
                RoundMarker::parse_fields(&rest[..end])
            })
            .last()
    }

    fn parse_fields(inner: &str) -> Option<RoundMarker> {
        let fields: BTreeMap<&str, &str> = inner
            .split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .collect();
        let (b, a) = fields.get("verdict")?.split_once(',')?;
        let findings = fields.get("findings").copied().unwrap_or_default();
        Some(RoundMarker {
            round: fields.get("round")?.parse().ok().filter(|&n| n > 0)?,
            head: HeadSha::parse(fields.get("head")?)?,
            verdict: Verdict {
                blocking: b.parse().ok()?,
                advisory: a.parse().ok()?,
            },
            findings: findings
                .split(',')
                .filter(|f| is_fingerprint(f))
                .map(str::to_owned)
                .collect(),
            lens: fields.get("lens").map(|l| (*l).to_owned()),
            ask: fields.get("ask").and_then(|a| DeliveryId::parse(a)),
        })
    }
}

/// A finding's marker, as its line comment or list item ends.
pub fn finding(fingerprint: &str) -> String {
    format!("{FINDING_OPEN}{fingerprint} -->")
}

/// The fingerprint in a line comment's `<!-- reviewbot finding=… -->` marker.
pub fn comment_fingerprint(body: &str) -> Option<&str> {
    let start = body.rfind(FINDING_OPEN)? + FINDING_OPEN.len();
    let rest = &body[start..];
    let fp = rest[..rest.find(' ')?].trim();
    is_fingerprint(fp).then_some(fp)
}

fn is_fingerprint(s: &str) -> bool {
    (8..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// What an answer of ours said of its finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The lens did not raise the finding again: it stops counting.
    Withdrawn,
    /// The lens raised it again: it counts, as an open finding does.
    Holds,
    /// The finding's lines changed and no lens raised it again; the thread was resolved.
    Addressed,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Withdrawn => "withdrawn",
            Outcome::Holds => "holds",
            Outcome::Addressed => "addressed",
        }
    }

    fn parse(s: &str) -> Option<Outcome> {
        match s {
            "withdrawn" => Some(Outcome::Withdrawn),
            "holds" => Some(Outcome::Holds),
            "addressed" => Some(Outcome::Addressed),
            _ => None,
        }
    }
}

/// The hidden marker of an answer: `<!-- reviewbot reply-to=<id> outcome=<o> finding=<fp> -->`.
/// `reply-to` names the human reply it answers (the thread's root for `addressed`), so a
/// redelivered event or a job run again answers nothing twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyMarker {
    pub reply_to: u64,
    pub outcome: Outcome,
    pub finding: String,
}

impl ReplyMarker {
    pub fn render(&self) -> String {
        format!(
            "{REPLY_OPEN}{} outcome={} finding={} -->",
            self.reply_to,
            self.outcome.as_str(),
            self.finding
        )
    }

    /// The last well-formed answer marker in `body`.
    pub fn find(body: &str) -> Option<ReplyMarker> {
        body.match_indices(REPLY_OPEN)
            .filter_map(|(i, _)| {
                let rest = &body[i + REPLY_OPEN.len()..];
                let inner = &rest[..rest.find("-->")?];
                let mut words = inner.split_whitespace();
                let reply_to = words.next()?.parse().ok()?;
                let fields: BTreeMap<&str, &str> =
                    words.filter_map(|kv| kv.split_once('=')).collect();
                Some(ReplyMarker {
                    reply_to,
                    outcome: Outcome::parse(fields.get("outcome")?)?,
                    finding: (*fields.get("finding")?).to_owned(),
                })
            })
            .last()
    }
}
