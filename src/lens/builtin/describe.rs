//! What the builtin lens says: each finding's title and body, by the check it reports, and how
//! it names its lines.

use super::{Check, Hit, code_span};
use crate::{redact, unicode};

/// How a finding names its lines: "Line 4 adds", "Lines 4 to 9 add", "Line 4 and 2 more lines
/// (7, 9) add": a file's other hits are named, not made findings of their own, so that one
/// file cannot flood a review.
pub(super) struct Where {
    text: String,
    plural: bool,
}

/// How many of a finding's other lines it names.
const OTHER_LINES_NAMED: usize = 10;

impl Where {
    pub(super) fn new(run: &[u32], others: &[u32]) -> Self {
        let mut text = match run {
            [one] => format!("Line {one}"),
            [first, .., last] => format!("Lines {first} to {last}"),
            [] => String::from("A line"),
        };
        if !others.is_empty() {
            let mut named: Vec<String> = others
                .iter()
                .take(OTHER_LINES_NAMED)
                .map(u32::to_string)
                .collect();
            if others.len() > OTHER_LINES_NAMED {
                named.push("…".to_owned());
            }
            let n = others.len();
            let s = if n == 1 { "" } else { "s" };
            text.push_str(&format!(" and {n} more line{s} ({})", named.join(", ")));
        }
        Where {
            text,
            plural: run.len() + others.len() > 1,
        }
    }

    /// "Line 4 adds" / "Lines 4 to 9 add".
    fn says(&self, verb: &str) -> String {
        if self.plural {
            format!("{} {verb}", self.text)
        } else {
            format!("{} {verb}s", self.text)
        }
    }
}

fn distinct_chars(members: &[Hit]) -> Vec<char> {
    let mut out = Vec::new();
    for c in members.iter().flat_map(|h| &h.chars) {
        if !out.contains(c) {
            out.push(*c);
        }
    }
    out
}

fn list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// A finding's title and body, for the check it reports and the hits it groups.
pub(super) fn describe(check: Check, members: &[Hit], at: &Where) -> (String, String) {
    match check {
        Check::Secret(rule) => describe_secret(rule, members, at),
        Check::Bidi | Check::Tags | Check::Invisible => describe_hidden(check, members, at),
        Check::Conflict => {
            let mut markers: Vec<String> = Vec::new();
            for h in members {
                let m = code_span(&h.note);
                if !markers.contains(&m) {
                    markers.push(m);
                }
            }
            (
                "Unresolved merge-conflict markers".to_owned(),
                format!(
                    "{} merge-conflict markers ({}): a merge or rebase was committed unresolved. \
                     The file will not build or parse, or both sides of the conflict will ship. \
                     Resolve the conflict, keep the intended lines and delete the markers.",
                    at.says("hold"),
                    list(&markers),
                ),
            )
        }
        Check::Breakpoint => (
            "Leftover breakpoint() call".to_owned(),
            format!(
                "{} `breakpoint()`, which stops the program at an interactive debugger prompt \
                 (unless `PYTHONBREAKPOINT=0` is set): a server, worker or CI job hangs there \
                 waiting for input. Remove it before merging.",
                at.says("call"),
            ),
        ),
        Check::SetTrace(module) => (
            format!("Leftover {module}.set_trace() call"),
            format!(
                "{} `{module}.set_trace()`, which stops the program at an interactive debugger \
                 prompt: a server, worker or CI job hangs there waiting for input. Remove it \
                 before merging.",
                at.says("call"),
            ),
        ),
        Check::Debugger => (
            "Leftover debugger statement".to_owned(),
            format!(
                "{} a `debugger` statement. It pauses execution whenever developer tools are open \
                 or a debugger is attached (Node's `--inspect`), and lint rules such as ESLint's \
                 `no-debugger` reject it. Remove it before merging.",
                at.says("add"),
            ),
        ),
        Check::Dbg => (
            "Leftover dbg! macro".to_owned(),
            format!(
                "{} `dbg!`, which prints to stderr in every build, release included. It is a \
                 debugging aid, not logging: remove it, or use the project's logging if the output \
                 is wanted.",
                at.says("call"),
            ),
        ),
        Check::ConsoleLog => (
            "Leftover console.log call".to_owned(),
            format!(
                "{} `console.log`. Leftover debug output clutters the console and can leak data \
                 into browser consoles and server logs. Remove it, or use the project's logger if \
                 the output is wanted.",
                at.says("call"),
            ),
        ),
    }
}

/// A committed secret: what it looks like, masked, and what to do about a leaked credential.
fn describe_secret(rule: &'static str, members: &[Hit], at: &Where) -> (String, String) {
    if rule == redact::GENERIC {
        return (
            format!("Possible committed secret ({rule})"),
            format!(
                "{} what looks like a hard-coded credential: a key, token or password name \
                 assigned a random-looking value (rule `{rule}`). The value is masked here: {}. If \
                 it is real, treat it as leaked and revoke or rotate it now; deleting it from the \
                 branch is not enough once it has been pushed, because it stays in the Git history \
                 and in every clone. Then load it at runtime from the environment or a secret \
                 store. If it is a test value, make that obvious in its name or value.",
                at.says("assign"),
                code_span(&members[0].note),
            ),
        );
    }
    {
        let name = redact::rule_name(rule).unwrap_or("secret");
        let article = if name.starts_with(['A', 'E', 'I', 'O', 'U']) || name.starts_with("npm") {
            "an"
        } else {
            "a"
        };
        let key_note = if rule == "private-key" {
            " Replace the key pair and remove the public key wherever it is trusted."
        } else {
            ""
        };
        (
            format!("Committed secret: {name} ({rule})"),
            format!(
                "{} what looks like {article} {name} (rule `{rule}`). The value is masked \
                     here: {}. Treat it as leaked: revoke or rotate it now.{key_note} Deleting it \
                     from the branch is not enough once it has been pushed, because it stays in \
                     the Git history and in every clone and fork. Then load it at runtime from the \
                     environment or a secret store instead of committing it.",
                at.says("add"),
                code_span(&members[0].note),
            ),
        )
    }
}

/// Characters that make the code read differently from what runs.
fn describe_hidden(check: Check, members: &[Hit], at: &Where) -> (String, String) {
    match check {
        Check::Bidi => {
            let names: Vec<String> = distinct_chars(members)
                .into_iter()
                .map(unicode::name)
                .collect();
            (
                "Bidirectional control character (Trojan Source)".to_owned(),
                format!(
                    "{} {}. Bidirectional control characters make text display in a different \
                     order from the one the compiler or interpreter reads (the Trojan Source \
                     attack, CVE-2021-42574), so reviewers can be shown code that is not what \
                     runs. Delete {it}; if right-to-left text is really needed inside a string, \
                     write it with escape sequences so it stays visible.",
                    at.says("contain"),
                    list(&names),
                    it = if names.len() == 1 { "it" } else { "them" },
                ),
            )
        }
        Check::Tags => {
            let count = members.iter().map(|h| h.chars.len()).sum::<usize>();
            (
                "Hidden Unicode tag characters".to_owned(),
                format!(
                    "{} {count} Unicode tag character{} (U+E0000 to U+E007F). Tag characters \
                     render as nothing but map one-to-one onto ASCII, so they can smuggle hidden \
                     text past reviewers, including instructions aimed at AI assistants and review \
                     bots. Delete {it}.",
                    at.says("contain"),
                    if count == 1 { "" } else { "s" },
                    it = if count == 1 { "it" } else { "them" },
                ),
            )
        }
        // Check::Invisible, the only other one it is given.
        _ => {
            let names: Vec<String> = distinct_chars(members)
                .into_iter()
                .map(unicode::name)
                .collect();
            (
                "Invisible Unicode character".to_owned(),
                format!(
                    "{} {}. Invisible characters render as nothing, so identifiers or strings that \
                     look the same can differ, and comparisons, lookups or parsing fail in ways a \
                     reviewer cannot see. Delete {it}, or write {it} as an escape sequence if \
                     intended.",
                    at.says("contain"),
                    list(&names),
                    it = if names.len() == 1 { "it" } else { "them" },
                ),
            )
        }
    }
}
