//! Threads: the conversation under each finding reviewbot posted as a line comment — who
//! replied, what reviewbot answered, and what that leaves of the finding (`docs/contract.md`
//! "Conversations").
//!
//! A thread is our finding comment (its root) and every reply GitHub files under it. Its state
//! is decided by its last word: a human reply that no answer of ours follows is a dispute
//! waiting for an answer; our answer settles it as withdrawn or still holding. Replies by bots
//! never count, nor do replies that call on another bot (they are not addressed to us).

use std::collections::BTreeMap;

use crate::diff::Side;
use crate::github::model::ReviewComment;
use crate::ids::LensName;
use crate::review::markers::{Identity, Outcome, ReplyMarker, comment_fingerprint};

/// One message of a thread, after its root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub id: u64,
    pub author: String,
    pub body: String,
    /// A human's reply (not a bot, not ours) that is addressed to us (calls on no other bot).
    pub human: bool,
    /// Our answer, when this is one.
    pub answer: Option<ReplyMarker>,
}

/// Where a thread stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// Nobody replied, or only bots did.
    Open,
    /// A human replied and no answer of ours came after: the reply with this id waits.
    Disputed { reply: u64 },
    /// Our last answer, with no human reply after it.
    Answered(Outcome),
}

/// A finding's thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thread {
    /// Our finding comment's id (GitHub files every reply under it).
    pub root: u64,
    pub fingerprint: String,
    pub path: String,
    /// The comment's line at the PR's current head (none once GitHub marks it outdated).
    pub line: Option<u32>,
    pub side: Side,
    /// The finding as posted (our comment's text).
    pub text: String,
    /// The lenses the comment attributes the finding to, in order.
    pub lenses: Vec<LensName>,
    pub messages: Vec<Message>,
}

impl Thread {
    /// Every thread under one of our finding comments. `ours` says which reviews are our
    /// rounds (only their comments are roots); `who` is reviewbot's own identity, whose
    /// mention in a reply does not count as calling on another bot.
    pub fn collect(
        comments: &[ReviewComment],
        who: &Identity,
        ours: impl Fn(u64) -> bool,
    ) -> Vec<Thread> {
        let mut threads: BTreeMap<u64, Thread> = BTreeMap::new();
        for c in comments {
            let root = c.in_reply_to_id.is_none()
                && c.review_id.is_some_and(&ours)
                && who.owns(c.user.as_ref());
            if !root {
                continue;
            }
            let Some(fp) = comment_fingerprint(&c.body) else {
                continue;
            };
            threads.insert(
                c.id,
                Thread {
                    root: c.id,
                    fingerprint: fp.to_owned(),
                    path: c.path.clone(),
                    line: c.line,
                    side: c.side.unwrap_or_default(),
                    text: c.body.clone(),
                    lenses: attribution(&c.body),
                    messages: Vec::new(),
                },
            );
        }
        let own = match who {
            Identity::Login(login) => Some(login.as_str()),
            Identity::AnyBot => None,
        };
        for c in comments {
            let Some(thread) = c.in_reply_to_id.and_then(|r| threads.get_mut(&r)) else {
                continue;
            };
            let author = c.user.as_ref().map(|u| u.login.clone()).unwrap_or_default();
            let by_bot = c.user.as_ref().is_none_or(|u| u.is_bot()) || author.ends_with("[bot]");
            let answer = who
                .owns(c.user.as_ref())
                .then(|| ReplyMarker::find(&c.body))
                .flatten();
            let human = !by_bot && !who.owns(c.user.as_ref()) && !calls_on_a_bot(&c.body, own);
            thread.messages.push(Message {
                id: c.id,
                author,
                body: c.body.clone(),
                human,
                answer,
            });
        }
        let mut out: Vec<Thread> = threads.into_values().collect();
        for t in &mut out {
            t.messages.sort_by_key(|m| m.id);
        }
        out
    }

    /// Where the thread stands: its last human reply or our last answer, whichever is later.
    pub fn state(&self) -> State {
        let last_human = self.messages.iter().rev().find(|m| m.human);
        let last_answer = self
            .messages
            .iter()
            .rev()
            .find_map(|m| m.answer.as_ref().map(|a| (m.id, a)));
        match (last_human, last_answer) {
            (None, None) => State::Open,
            (Some(h), None) => State::Disputed { reply: h.id },
            // An answer to this reply (or a later one) settles it, wherever it sits.
            (Some(h), Some((_, a))) if a.reply_to < h.id && !self.answered(h.id) => {
                State::Disputed { reply: h.id }
            }
            (_, Some((_, a))) => State::Answered(a.outcome),
        }
    }

    /// Whether an answer of ours names reply `id`.
    pub fn answered(&self, id: u64) -> bool {
        self.messages
            .iter()
            .any(|m| m.answer.as_ref().is_some_and(|a| a.reply_to == id))
    }

    /// The human reply waiting for an answer, if one is.
    pub fn pending(&self) -> Option<&Message> {
        match self.state() {
            State::Disputed { reply } => self.messages.iter().find(|m| m.id == reply),
            _ => None,
        }
    }

    /// Whether any human replied in the thread (its resolution is then left to humans).
    pub fn human_replied(&self) -> bool {
        self.messages.iter().any(|m| m.human)
    }

    /// The finding's title as the comment states it (`**Blocking.** Title. Body…`).
    pub fn title(&self) -> String {
        let first = self.text.lines().next().unwrap_or_default();
        let rest = first
            .trim_start()
            .strip_prefix("**Blocking.**")
            .or_else(|| first.trim_start().strip_prefix("**Advisory.**"))
            .unwrap_or(first)
            .trim();
        match rest.find(". ") {
            Some(i) => rest[..i].to_owned(),
            None => rest.trim_end_matches('.').to_owned(),
        }
    }
}

/// The lenses a finding comment names on its `(<confidence> confidence · a, b)` line.
fn attribution(body: &str) -> Vec<LensName> {
    body.lines()
        .rev()
        .find_map(|line| {
            let inner = line.trim().strip_prefix('(')?.strip_suffix(')')?;
            let (confidence, lenses) = inner.split_once(" · ")?;
            confidence.ends_with(" confidence").then(|| {
                lenses
                    .split(',')
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(LensName::new)
                    .collect()
            })
        })
        .unwrap_or_default()
}

/// Whether `body` mentions a bot account other than ours (`@name[bot]`): such a reply asks
/// another bot, and is left alone.
fn calls_on_a_bot(body: &str, own_login: Option<&str>) -> bool {
    body.match_indices('@').any(|(i, _)| {
        let rest = &body[i + 1..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '[' || c == ']'))
            .unwrap_or(rest.len());
        let name = &rest[..end];
        name.ends_with("[bot]") && own_login.is_none_or(|own| !name.eq_ignore_ascii_case(own))
    })
}

#[cfg(test)]
mod tests;
