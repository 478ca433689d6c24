//! What reviewbot writes in a finding's thread (`docs/contract.md` "Conversations"): its
//! answer to a reply, the note on a thread it resolves, and the check run after answers.

use crate::github::model::RepoName;
use crate::ids::{HeadSha, LensName};
use crate::render::{clean_code, disarm, mask};
use crate::review::Verdict;
use crate::review::markers::{Outcome, ReplyMarker};
use crate::store::KeptLearning;

/// The most characters of a lens's answer posted in a thread.
pub const MAX_ANSWER_CHARS: usize = 3_000;

/// The word that opens an answer.
pub fn outcome_word(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::Withdrawn => "withdrawn",
        Outcome::Holds => "still holds",
        Outcome::Addressed => "addressed",
    }
}

/// An answer in a thread: `Withdrawn.` or `Still holds.`, the lens's own words (its summary,
/// cleaned like every lens text and capped), who answered, and the hidden marker.
/// `still_counts`: a withdrawal answering someone without write access, which changes nothing
/// in what counts — the answer says so.
pub fn answer(
    marker: &ReplyMarker,
    said: Option<&str>,
    lens: &LensName,
    head: &HeadSha,
    still_counts: bool,
) -> String {
    let opening = match marker.outcome {
        Outcome::Withdrawn => "Withdrawn.",
        Outcome::Holds => "Still holds.",
        Outcome::Addressed => "Addressed.",
    };
    // Cleaning can leave runs of blank lines where hidden text was: one blank line is enough.
    // Masked, cut, then disarmed as it will be read: a cut through a code span could free a
    // mention.
    let said = said
        .map(mask)
        .map(|s| {
            s.split("\n\n")
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
                .join("\n\n")
        })
        .filter(|s| !s.is_empty());
    let said = match said {
        Some(text) => disarm::prose(&crate::chars::cut(&text, MAX_ANSWER_CHARS, "… (truncated)")),
        None => match marker.outcome {
            Outcome::Holds => "The lens raised this finding again on the current code.".to_owned(),
            _ => "The lens did not raise this finding again on the current code.".to_owned(),
        },
    };
    let counts = match still_counts {
        true => {
            "\n\nThe finding still counts: only someone with write access to the repository \
                 changes that, by replying here or by resolving this thread."
        }
        false => "",
    };
    format!(
        "{opening} {said}{counts}\n\n(answered by {lens} at head {})\n{}",
        head.short(),
        marker.render()
    )
}

/// The note on a thread resolved because its finding was addressed.
pub fn addressed(marker: &ReplyMarker, head: &HeadSha) -> String {
    format!("Addressed in {}.\n{}", head.short(), marker.render())
}

/// The check run's summary once the replies in the round's threads were answered.
pub fn check_summary(verdict: Verdict, withdrawn: usize) -> String {
    let mut out = format!(
        "After the replies in the findings' threads: {} blocking, {} advisory.",
        verdict.blocking, verdict.advisory
    );
    if withdrawn > 0 {
        out.push_str(&format!(
            " {withdrawn} {} withdrawn in {} thread{} and no longer {}.",
            if withdrawn == 1 {
                "finding was"
            } else {
                "findings were"
            },
            if withdrawn == 1 { "its" } else { "their" },
            if withdrawn == 1 { "" } else { "s" },
            if withdrawn == 1 { "counts" } else { "count" },
        ));
    }
    out
}

/// `reviewbot learnings list`: one paragraph a learning, oldest first.
pub fn learnings_text(repo: &RepoName, learnings: &[KeptLearning]) -> String {
    if learnings.is_empty() {
        return format!("No learnings for {repo}.\n");
    }
    let mut out = String::new();
    for kept in learnings {
        let when = date(kept.created_at);
        let l = &kept.learning;
        out.push_str(&format!(
            "#{} {} — \"{}\"\n    {} on {when}: {}\n",
            kept.id,
            clean_code(&l.path),
            clean_code(&l.title),
            clean_code(&l.author),
            clean_code(&l.reply.split_whitespace().collect::<Vec<_>>().join(" ")),
        ));
    }
    out
}

/// `reviewbot learnings list --json`: an array of the learnings as kept.
pub fn learnings_json(learnings: &[KeptLearning]) -> String {
    let mut out = serde_json::to_string_pretty(learnings).unwrap_or_else(|_| "[]".to_owned());
    out.push('\n');
    out
}

/// `reviewbot learnings forget`.
pub fn forgotten(id: i64) -> String {
    format!("Forgot learning #{id}; later rounds no longer see it.\n")
}

/// A UTC date (`2026-12-03`) from unix milliseconds.
fn date(ms: i64) -> String {
    let at =
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    let mut text = humantime::format_rfc3339_seconds(at).to_string();
    text.truncate(10);
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::learning::Learning;

    fn head() -> HeadSha {
        HeadSha::parse("db4ca9af0c1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e").unwrap()
    }

    fn marker(outcome: Outcome) -> ReplyMarker {
        ReplyMarker {
            reply_to: 1_000_042,
            outcome,
            finding: "0123456789abcdef".into(),
        }
    }

    #[test]
    fn learnings_as_listed() {
        let repo = RepoName::parse("octo/app").unwrap();
        let learning = KeptLearning {
            id: 7,
            repo: "octo/app".into(),
            learning: Learning {
                path: "src/load.rs".into(),
                title: "Unchecked index".into(),
                reply: "Intended: `load` checks\nthe length first.".into(),
                author: "maintainer".into(),
            },
            fingerprint: "0123456789abcdef".into(),
            created_at: 1_796_256_000_000,
        };
        insta::assert_snapshot!("learnings_empty", learnings_text(&repo, &[]));
        insta::assert_snapshot!(
            "learnings_list",
            learnings_text(&repo, std::slice::from_ref(&learning))
        );
        insta::assert_snapshot!("learnings_json", learnings_json(&[learning]));
        insta::assert_snapshot!("forgotten", forgotten(7));
        assert_eq!(date(0), "1970-01-01");
        assert_eq!(date(951_782_400_000), "2000-02-29");
    }

    #[test]
    fn answers_as_posted() {
        let lens = LensName::new("claude");
        insta::assert_snapshot!(
            "answer_withdrawn",
            answer(
                &marker(Outcome::Withdrawn),
                Some(
                    "Right: `parse` never sees an empty slice; `load` checks it first (src/load.rs:40)."
                ),
                &lens,
                &head(),
                false
            )
        );
        insta::assert_snapshot!(
            "answer_holds",
            answer(
                &marker(Outcome::Holds),
                Some(
                    "The check in `load` is skipped on the retry path (src/load.rs:61), so the index still panics.\n\n<!-- reviewbot round=9 -->"
                ),
                &lens,
                &head(),
                false
            )
        );
        insta::assert_snapshot!(
            "answer_silent",
            answer(&marker(Outcome::Holds), None, &lens, &head(), false)
        );
        insta::assert_snapshot!(
            "answer_withdrawn_for_a_reader",
            answer(
                &marker(Outcome::Withdrawn),
                Some("Right, the caller checks it."),
                &lens,
                &head(),
                true
            )
        );
        insta::assert_snapshot!("addressed", addressed(&marker(Outcome::Addressed), &head()));
        insta::assert_snapshot!(
            "check_summary",
            format!(
                "{}\n{}",
                check_summary(
                    Verdict {
                        blocking: 0,
                        advisory: 1
                    },
                    1
                ),
                check_summary(
                    Verdict {
                        blocking: 2,
                        advisory: 0
                    },
                    0
                )
            )
        );
    }
}
