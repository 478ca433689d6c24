//! Threads: the conversation under each finding reviewbot posted as a line comment — who
//! replied, what reviewbot answered, and what that leaves of the finding (`docs/contract.md`
//! "Conversations").
//!
//! A thread is our finding comment (its root) and every reply GitHub files under it. Every human
//! reply that no answer of ours follows waits for one. What counts is another matter: only a
//! writer (write access or more) changes it. A writer's reply disputes the finding until our
//! next answer settles it as withdrawn or still holding; a writer who resolves the thread
//! dismisses it. Anyone else is answered, and changes nothing — otherwise the author of a change
//! could lift its blocking findings by replying "no". Replies by bots are never answered, nor
//! are replies that call on another bot (they are not addressed to us).

use std::collections::{BTreeMap, BTreeSet};

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
    /// A human reply by someone with write access or more: it may change what counts.
    pub writer: bool,
    /// Our answer, when this is one.
    pub answer: Option<ReplyMarker>,
}

/// Where a thread's finding stands in what a round counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// No writer replied (nobody did, or only bots and people without write access did).
    Open,
    /// A writer replied and no answer of ours came after: the reply with this id.
    Disputed { reply: u64 },
    /// Our first answer after the latest writer's reply.
    Answered(Outcome),
    /// A writer resolved the thread on GitHub: the code owner decided.
    Dismissed,
}

/// What GitHub says about who may change what counts: the repliers with write access or more,
/// and the threads (by root comment) that such a person resolved.
#[derive(Debug, Clone, Default)]
pub struct Rulings {
    /// Logins, compared without case (GitHub's logins are case-insensitive).
    writers: BTreeSet<String>,
    dismissed: BTreeSet<u64>,
}

impl Rulings {
    /// `login` may write to the repository.
    pub fn writer(&mut self, login: &str) {
        self.writers.insert(login.to_ascii_lowercase());
    }

    /// A writer resolved the thread whose first comment is `root`.
    pub fn dismissed(&mut self, root: u64) {
        self.dismissed.insert(root);
    }

    fn is_writer(&self, login: &str) -> bool {
        self.writers.contains(&login.to_ascii_lowercase())
    }
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
    /// A writer resolved it on GitHub.
    pub dismissed: bool,
}

impl Thread {
    /// Every thread under one of our finding comments. `ours` says which reviews are our
    /// rounds (only their comments are roots); `who` is reviewbot's own identity, whose
    /// mention in a reply does not count as calling on another bot; `rulings` who may change
    /// what counts.
    pub fn collect(
        comments: &[ReviewComment],
        who: &Identity,
        ours: impl Fn(u64) -> bool,
        rulings: &Rulings,
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
                    dismissed: rulings.dismissed.contains(&c.id),
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
            let writer = human && rulings.is_writer(&author);
            thread.messages.push(Message {
                id: c.id,
                author,
                body: c.body.clone(),
                human,
                writer,
                answer,
            });
        }
        let mut out: Vec<Thread> = threads.into_values().collect();
        for t in &mut out {
            t.messages.sort_by_key(|m| m.id);
        }
        out
    }

    /// Where the thread's finding stands: dismissed when a writer resolved the thread; else
    /// decided by the latest writer's reply and our first answer after it (an answer to a later
    /// reply by anyone read the writer's reply too). A later answer to someone else's reply
    /// changes nothing.
    pub fn state(&self) -> State {
        if self.dismissed {
            return State::Dismissed;
        }
        let Some(writer) = self.messages.iter().rev().find(|m| m.writer) else {
            return State::Open;
        };
        match self.answers().find(|a| a.reply_to >= writer.id) {
            Some(a) => State::Answered(a.outcome),
            None => State::Disputed { reply: writer.id },
        }
    }

    /// Our answers in the thread, in order.
    fn answers(&self) -> impl Iterator<Item = &ReplyMarker> {
        self.messages.iter().filter_map(|m| m.answer.as_ref())
    }

    /// Whether an answer of ours names reply `id` or a later one (it read that reply too).
    fn answered_since(&self, id: u64) -> bool {
        self.answers().any(|a| a.reply_to >= id)
    }

    /// The human reply waiting for an answer, if one is: the latest, when no answer of ours
    /// names it or a later reply (two replies before an answer get one answer).
    pub fn pending(&self) -> Option<&Message> {
        let last = self.messages.iter().rev().find(|m| m.human)?;
        (!self.answered_since(last.id)).then_some(last)
    }

    /// The writer's reply that an answer to reply `id`, posted now, settles: the latest
    /// writer's reply at or before it that no answer of ours followed yet. A withdrawal files a
    /// learning under that writer, in their words — never under someone else's argument, and
    /// never when no writer's dispute was open.
    pub fn ruling_writer(&self, id: u64) -> Option<&Message> {
        let writer = self
            .messages
            .iter()
            .rev()
            .filter(|m| m.id <= id)
            .find(|m| m.writer)?;
        (!self.answered_since(writer.id)).then_some(writer)
    }

    /// The logins of the humans who replied in `threads`, once each (whose permission decides
    /// whether their reply changes what counts).
    pub fn repliers(threads: &[Thread]) -> BTreeSet<String> {
        threads
            .iter()
            .flat_map(|t| t.messages.iter().filter(|m| m.human))
            .map(|m| m.author.clone())
            .collect()
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
