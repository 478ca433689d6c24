//! The keyword index: one pass over a text tells which patterns can match in it, so a clean
//! text costs one literal search and no pattern runs.

use std::sync::LazyLock;

use regex::Regex;

use super::contextual::{AWS_SECRET_KEYWORDS, PEM_KEYWORD, URL_KEYWORD, aws_before};
use super::generic::generic_candidates;
use super::rules::RULES;

pub(super) struct Compiled {
    /// Every literal some pattern needs ([`Compiled::literals`]), in one automaton: one pass
    /// over a text tells which patterns can match in it; all but `://` ([`Compiled::url_starts`]).
    any: aho_corasick::AhoCorasick,
    /// `://`, searched on its own.
    url: memchr::memmem::Finder<'static>,
    /// The literals of `any`, by pattern id, and what each one enables.
    literals: Vec<(&'static str, Needs)>,
    /// Compiled on first need: most texts never hold most rules' keywords, and compiling every
    /// pattern up front was a measurable part of a short run.
    pub(super) rules: Vec<std::sync::OnceLock<Regex>>,
}

/// What a literal's presence lets run: one rule of [`RULES`], or a pattern outside them.
#[derive(Debug, Clone, Copy)]
enum Needs {
    Rule(usize),
    PrivateKey,
    AwsSecretName,
}

/// Which patterns can match in a text: their literals occur in it.
#[derive(Debug, Default)]
pub(super) struct Present {
    /// Bit `i`: rule `i` of [`RULES`].
    pub(super) rules: u64,
    pub(super) private_key: bool,
    pub(super) url: bool,
    pub(super) aws_secret_name: bool,
}

impl Present {
    fn add(&mut self, needs: Needs) {
        match needs {
            Needs::Rule(i) => self.rules |= 1 << i,
            Needs::PrivateKey => self.private_key = true,
            Needs::AwsSecretName => self.aws_secret_name = true,
        }
    }

    pub(super) fn any(&self) -> bool {
        self.rules != 0 || self.private_key || self.url || self.aws_secret_name
    }
}

impl Compiled {
    /// The literals' matches in `text` (but `://`, [`Compiled::url_starts`]).
    fn matches<'t>(&'t self, bytes: &'t [u8]) -> impl Iterator<Item = aho_corasick::Match> + 't {
        self.any
            .find_iter(bytes)
            .filter(move |m| match self.literals[m.pattern().as_usize()].1 {
                Needs::AwsSecretName => aws_before(bytes, m.start()),
                _ => true,
            })
    }

    /// Where `://` starts in `text` with an `@` after it before the next `/` or blank:
    /// elsewhere the URL password pattern cannot match, and most texts that hold `://` hold
    /// plain links (a file of documentation holds hundreds). Searched apart from the other
    /// literals: each link stopped the automaton's vector search to check a match, and links
    /// are so common that this was most of its time (`diff/secret_keywords`,
    /// docs/benchmarks.md).
    fn url_starts<'t>(&'t self, bytes: &'t [u8]) -> impl Iterator<Item = usize> + 't {
        self.url.find_iter(bytes).filter(move |&at| {
            bytes[at + URL_KEYWORD.len()..]
                .iter()
                .find(|&&b| b == b'@' || b == b'/' || b.is_ascii_whitespace())
                .is_some_and(|&b| b == b'@')
        })
    }

    /// Which patterns can match in `text`. The automaton reports matches that do not overlap,
    /// so a literal starting inside another one's match is looked for by hand (matches are
    /// rare: this runs only on the parts of a text that hold a keyword).
    pub(super) fn present(&self, text: &str) -> Present {
        let bytes = text.as_bytes();
        let mut present = Present {
            url: self.url_starts(bytes).next().is_some(),
            ..Present::default()
        };
        for m in self.matches(bytes) {
            present.add(self.literals[m.pattern().as_usize()].1);
            for q in m.start() + 1..m.end() {
                for (literal, needs) in &self.literals {
                    if bytes[q..].starts_with(literal.as_bytes()) {
                        present.add(*needs);
                    }
                }
            }
        }
        present
    }
}

pub(super) static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    const _: () = assert!(RULES.len() <= 64, "Present::rules is a u64");
    let mut literals: Vec<(&'static str, Needs)> = RULES
        .iter()
        .enumerate()
        .flat_map(|(i, r)| r.keywords.iter().map(move |k| (*k, Needs::Rule(i))))
        .collect();
    literals.push((PEM_KEYWORD, Needs::PrivateKey));
    literals.extend(
        AWS_SECRET_KEYWORDS
            .iter()
            .map(|k| (*k, Needs::AwsSecretName)),
    );
    Compiled {
        // Leftmost-first rather than standard semantics: only that enables the SIMD
        // prefilter ([`Compiled::present`] finds the overlapping literals it skips).
        any: aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostFirst)
            // The prefilter does the searching; a DFA would only cost start-up time to build.
            .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
            .build(literals.iter().map(|l| l.0))
            .unwrap_or_else(|e| panic!("secret keywords: {e}")),
        url: memchr::memmem::Finder::new(URL_KEYWORD),
        literals,
        rules: RULES.iter().map(|_| std::sync::OnceLock::new()).collect(),
    }
});

/// Builds the keyword automaton every secret search starts with (it is built on first use
/// otherwise).
pub fn prepare() {
    LazyLock::force(&COMPILED);
}

/// Where in `text` a keyword of any secret rule starts, in order. A line of `text` that holds
/// none of them holds no secret ([`find_secrets`] returns nothing for it without looking
/// further), so a caller checking many lines of one text searches it once with this and
/// skips the lines without a keyword. (Keywords hold no line break, and neither does what
/// [`generic_candidates`] looks at: every line that holds one has a start inside it.)
pub fn keyword_starts(text: &[u8]) -> Vec<usize> {
    let mut starts: Vec<usize> = COMPILED.matches(text).map(|m| m.start()).collect();
    starts.extend(COMPILED.url_starts(text));
    starts.extend(generic_candidates(text));
    starts.sort_unstable();
    starts.dedup();
    starts
}
