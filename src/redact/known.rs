//! Values remembered as secrets, masked by value wherever they turn up.

use std::collections::HashSet;
use std::sync::{Arc, RwLock, Weak};

use super::contextual::{PEM_KEYWORD, PEM_WINDOW};
use super::keywords::keyword_starts;
use super::rules::is_word;
use super::{AWS_PAIR_LINES, PRIVATE_KEY, SecretMatch, find_secrets, left_boundary};

/// Values detected as secrets elsewhere (in the diff under review, in the environment),
/// masked wherever they appear: in a lens's echo, a log line, an error. Built whole and
/// replaced when a value is added, so a search never waits for a writer.
pub(super) struct Known {
    values: Vec<Value>,
    /// Every value, matches overlapping: a match that is not a whole token, or that another
    /// value's match overlaps, never hides one that is (each is masked, and overlaps merge).
    automaton: aho_corasick::AhoCorasick,
}

/// One remembered value.
#[derive(Clone)]
struct Value {
    text: String,
    rule: &'static str,
    /// Shorter than [`MIN_ANYWHERE_LEN`]: masked only where it stands as a whole token.
    token: bool,
}

impl Known {
    pub(super) fn find(&self, text: &str, found: &mut Vec<SecretMatch>) {
        let bytes = text.as_bytes();
        for m in self.automaton.find_overlapping_iter(text) {
            let value = &self.values[m.pattern().as_usize()];
            if value.token && !whole_token(bytes, m.range(), value.text.as_bytes()) {
                continue;
            }
            found.push(SecretMatch {
                rule: value.rule,
                range: m.range(),
            });
        }
    }
}

/// Whether `range` of `bytes`, a match of `value`, stands as a token of its own: no word
/// character glued to it on either side (a string escape or a colour code before it counts as
/// a separator, as for the rules). A value that starts or ends with a separator of its own is
/// bounded on that side by it.
fn whole_token(bytes: &[u8], range: std::ops::Range<usize>, value: &[u8]) -> bool {
    let left = value.first().is_none_or(|&b| !is_word(b)) || left_boundary(bytes, range.start);
    let right = value.last().is_none_or(|&b| !is_word(b))
        || bytes.get(range.end).is_none_or(|&b| !is_word(b));
    left && right
}

/// One set of remembered values that grows: a review's, or the process's.
#[derive(Default)]
struct Slot(RwLock<Option<Arc<Known>>>);

impl Slot {
    fn get(&self) -> Option<Arc<Known>> {
        self.0.read().ok().and_then(|k| k.clone())
    }

    /// Adds `secrets`, every one: there is no cap, so no value is ever let through for want of
    /// room. A review's values come from its diff, so their number and size are bounded by the
    /// diff's (`docs/benchmarks.md` "Remembered secrets" measures 5,000 of them).
    fn remember<'a>(&self, secrets: impl IntoIterator<Item = (&'static str, &'a str)>) {
        let fresh: Vec<Value> = secrets
            .into_iter()
            .map(|(rule, v)| Value {
                text: v.trim().to_owned(),
                rule,
                token: v.trim().len() < MIN_ANYWHERE_LEN,
            })
            .filter(|v| v.text.chars().count() >= MIN_TOKEN_CHARS && !v.text.contains("REDACTED"))
            .collect();
        if fresh.is_empty() {
            return;
        }
        let Ok(mut guard) = self.0.write() else {
            return;
        };
        let old = guard.as_ref().map_or(&[][..], |k| k.values.as_slice());
        let mut have: HashSet<&str> = old.iter().map(|v| v.text.as_str()).collect();
        let added: Vec<&Value> = fresh.iter().filter(|v| have.insert(&v.text)).collect();
        if added.is_empty() {
            return;
        }
        let mut values = old.to_vec();
        values.extend(added.into_iter().cloned());
        let automaton = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::Standard)
            .build(values.iter().map(|v| v.text.as_str()));
        // Building fails only past the automaton's own limits (billions of states), far beyond
        // any diff reviewbot reads; then the set stays as it was.
        if let Ok(automaton) = automaton {
            *guard = Some(Arc::new(Known { values, automaton }));
        }
    }
}

/// The process's own credentials ([`remember_for_process`]): kept for its whole life.
static PROCESS: Slot = Slot(RwLock::new(None));

/// Every review's values while the review lives. Weak: a review that ends forgets its own.
static LIVE: RwLock<Vec<Weak<Slot>>> = RwLock::new(Vec::new());

tokio::task_local! {
    /// The review whose task this is ([`KnownSecrets::scope`]).
    static CURRENT: KnownSecrets;
}

/// Values this long (in bytes) are masked wherever they appear, inside a longer word too.
const MIN_ANYWHERE_LEN: usize = 12;
/// Shorter values, down to this many characters, are masked where they stand as a whole token
/// ([`whole_token`]): the exact value, never a word that merely contains it, so a credential
/// `hunter22` is masked in `password hunter22.` but `hunter22x` is left alone. Values shorter
/// still are not remembered: no credential is three characters long, and masking `1` or `on`
/// everywhere would mask every line number and half the prose.
const MIN_TOKEN_CHARS: usize = 4;

/// The secret values remembered for one review: created per round, dropped with it. Under
/// `serve` one process runs many reviews for many installations, and a set shared by all of
/// them would grow for the life of the process and mask one installation's values in
/// another's output.
///
/// What [`redact`](super::redact) masks by value: the process's credentials, and
/// - in a task running in a review's [`scope`](KnownSecrets::scope), that review's values;
/// - anywhere else (a lens's worker thread, a log line written outside the review's task),
///   the values of every review still running: masking a value too many costs nothing,
///   showing one costs a rotation.
#[derive(Clone)]
pub struct KnownSecrets(Arc<Slot>);

impl Default for KnownSecrets {
    fn default() -> Self {
        KnownSecrets::new()
    }
}

impl KnownSecrets {
    /// An empty set for a review that starts.
    pub fn new() -> KnownSecrets {
        let slot = Arc::new(Slot::default());
        if let Ok(mut live) = LIVE.write() {
            live.retain(|w| w.strong_count() > 0);
            live.push(Arc::downgrade(&slot));
        }
        KnownSecrets(slot)
    }

    /// Remembers secret values so that [`redact`](super::redact) masks them from now on
    /// while this review lives, whatever rule found them (`generic-api-key` included) and
    /// whatever text they later turn up in. Values shorter than 12 bytes are masked only as
    /// whole tokens, and values under 4 characters not at all ([`MIN_TOKEN_CHARS`]).
    pub fn remember<'a>(&self, secrets: impl IntoIterator<Item = (&'static str, &'a str)>) {
        self.0.remember(secrets);
    }

    /// Runs `f` as this review's: [`remember`] inside it adds to this set, and
    /// [`redact`](super::redact) inside it masks this review's values and no other's.
    pub async fn scope<F: Future>(&self, f: F) -> F::Output {
        CURRENT.scope(self.clone(), f).await
    }

    /// Runs `f` in the review under way, or, outside any, as a review of its own whose
    /// values are forgotten when `f` ends.
    pub async fn scoped<F: Future>(f: F) -> F::Output {
        match CURRENT.try_with(|_| ()) {
            Ok(()) => f.await,
            Err(_) => KnownSecrets::new().scope(f).await,
        }
    }
}

/// Remembers secret values for the review under way ([`KnownSecrets::remember`]). Outside
/// any review's scope they are remembered for the process (a test, a one-off tool): a
/// warning says so, since under `serve` that is the set that grows.
pub fn remember<'a>(secrets: impl IntoIterator<Item = (&'static str, &'a str)>) {
    match CURRENT.try_with(KnownSecrets::clone) {
        Ok(review) => review.remember(secrets),
        Err(_) => {
            tracing::warn!("secret values remembered outside a review: kept for the process");
            PROCESS.remember(secrets);
        }
    }
}

/// Remembers values for the life of the process, in every review's output: the credentials
/// the process holds ([`crate::credentials`]).
pub fn remember_for_process<'a>(secrets: impl IntoIterator<Item = (&'static str, &'a str)>) {
    PROCESS.remember(secrets);
}

/// Adds the remembered values in `text` to `found`: see [`KnownSecrets`] for which.
pub(super) fn find_known(text: &str, found: &mut Vec<SecretMatch>) {
    if let Some(known) = PROCESS.get() {
        known.find(text, found);
    }
    match CURRENT.try_with(|review| review.0.get()) {
        Ok(known) => {
            if let Some(known) = known {
                known.find(text, found);
            }
        }
        Err(_) => {
            let Ok(live) = LIVE.read() else { return };
            for known in live
                .iter()
                .filter_map(Weak::upgrade)
                .filter_map(|s| s.get())
            {
                known.find(text, found);
            }
        }
    }
}

/// Every secret value in a multi-line `text` (a file's diff), each line of a private-key block
/// on its own: what [`remember`] needs so that each line is masked wherever it is shown alone.
pub fn secret_values(text: &str) -> Vec<(&'static str, &str)> {
    let keywords = keyword_starts(text.as_bytes());
    let found = keyword_regions(text.as_bytes(), &keywords)
        .into_iter()
        .flat_map(|region| {
            let base = region.start;
            find_secrets(&text[region])
                .into_iter()
                .map(move |m| SecretMatch {
                    rule: m.rule,
                    range: base + m.range.start..base + m.range.end,
                })
        });
    secret_values_of(text, found)
}

/// [`secret_values`] of a file's bytes, UTF-8 or not, given their [`keyword_starts`] (found
/// once, shared by callers). Each part that can hold a secret is decoded on its own, as the
/// decoded diff has it: the values are those of the text a review shows.
///
/// Each line's diff marker (`+`, `-`, ` `) is left out first, so that a value on the line after
/// its name (`<apiToken>` then the token) is found as in the file itself.
pub fn secret_values_in(bytes: &[u8], keywords: &[usize]) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for region in keyword_regions(bytes, keywords) {
        let text = without_markers(&String::from_utf8_lossy(&bytes[region]));
        let found = find_secrets(&text);
        out.extend(
            secret_values_of(&text, found)
                .into_iter()
                .map(|(rule, value)| (rule, value.to_owned())),
        );
    }
    out
}

/// `text`, lines of a diff, without each line's leading `+`, `-` or ` `.
fn without_markers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        out.push_str(line.strip_prefix(['+', '-', ' ']).unwrap_or(line));
    }
    out
}

/// The values of `found` in `text`, each line of a private-key block on its own.
pub(super) fn secret_values_of(
    text: &str,
    found: impl IntoIterator<Item = SecretMatch>,
) -> Vec<(&'static str, &str)> {
    let mut out = Vec::new();
    for m in found {
        let value = &text[m.range.clone()];
        if m.rule == PRIVATE_KEY {
            for line in value.lines() {
                let line = line.trim();
                // One diff marker (`+`, `-`, ` `) may lead; the BEGIN/END lines are rules' own.
                let line = if line.contains("-----") {
                    line
                } else {
                    line.strip_prefix(['+', '-']).unwrap_or(line).trim()
                };
                if !line.contains("-----") && !line.is_empty() {
                    out.push((m.rule, line));
                }
            }
        } else {
            out.push((m.rule, value));
        }
    }
    out
}

/// The parts of a multi-line `text` that can hold a secret, in order and apart: each line with
/// a keyword ([`keyword_starts`]; a line without one holds none), with the lines an AWS key
/// pair may span around it and, after a private-key keyword, the window its END line is looked
/// for in. Every part starts at a line's start and ends after a line break (or at the end), so
/// a secret found in a part is the one found in the whole text: a file's diff is mostly lines
/// without a keyword, and scanning only these parts is what keeps [`secret_values`] cheap.
fn keyword_regions(text: &[u8], keywords: &[usize]) -> Vec<std::ops::Range<usize>> {
    let mut regions: Vec<std::ops::Range<usize>> = Vec::new();
    // The line of the last keyword, and its part: the next keyword is often on the same line
    // (a minified file holds hundreds on one line of 100 KB), whose part is the same.
    let mut last_line = 0..0;
    let mut last_part = 0..0;
    let line_start = |i: usize| memchr::memrchr(b'\n', &text[..i]).map_or(0, |n| n + 1);
    let line_end = |i: usize| memchr::memchr(b'\n', &text[i..]).map_or(text.len(), |n| i + n + 1);
    for &at in keywords {
        if !last_line.contains(&at) {
            // The start of the keyword's line, then of each of the AWS_PAIR_LINES lines before
            // it; the end of its line, then of each of the AWS_PAIR_LINES lines after it.
            last_line = line_start(at)..line_end(at);
            let mut start = last_line.start;
            for _ in 0..AWS_PAIR_LINES {
                if start == 0 {
                    break;
                }
                start = line_start(start - 1);
            }
            let mut end = last_line.end;
            for _ in 0..AWS_PAIR_LINES {
                end = line_end(end);
            }
            last_part = start..end;
        }
        let (start, mut end) = (last_part.start, last_part.end);
        if text[at..].starts_with(PEM_KEYWORD.as_bytes()) {
            end = end.max(line_end(at.saturating_add(PEM_WINDOW).min(text.len())));
        }
        match regions.last_mut() {
            Some(last) if start <= last.end => last.end = last.end.max(end),
            _ => regions.push(start..end),
        }
    }
    regions
}
