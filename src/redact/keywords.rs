//! The keyword index: one pass over a text tells which patterns can match in it, so a clean
//! text costs one literal search and no pattern runs.

use std::sync::LazyLock;

use regex::Regex;

use super::catalog::CATALOG;
use super::contextual::{AWS_SECRET_KEYWORDS, PEM_KEYWORD, URL_KEYWORD, aws_before};
use super::imported;
use super::rules::{RULES, is_word};

/// Words of [`Present::imported`]: one bit for each rule of [`CATALOG`].
const IMPORTED_WORDS: usize = 4;

pub(super) struct Compiled {
    /// Every literal some pattern needs ([`Compiled::literals`]), in one automaton: one pass
    /// over a text tells which patterns can match in it; all but `://` ([`Compiled::url_starts`]).
    any: aho_corasick::AhoCorasick,
    /// `://`, searched on its own.
    url: memchr::memmem::Finder<'static>,
    /// The literals of `any` by first byte, each under every byte it may start with (both cases unless
    /// its case must match): what [`Compiled::found`] checks at each byte of a match.
    by_first: Vec<Vec<Literal>>,
    /// Compiled on first need: most texts never hold most rules' keywords, and compiling every
    /// pattern up front was a measurable part of a short run.
    pub(super) rules: Vec<std::sync::OnceLock<Regex>>,
}

/// One literal of the automaton.
#[derive(Debug, Clone, Copy)]
struct Literal {
    text: &'static str,
    needs: Needs,
    exact: bool,
    /// It counts only where a word starts (no word byte before it).
    word_start: bool,
    /// It is in the name a rule assigns its value to: it counts only with an assignment after
    /// it ([`imported::assignment_follows`]).
    names_a_value: bool,
}

impl Literal {
    /// Whether `bytes` at `at` hold this literal where it counts.
    fn holds(&self, bytes: &[u8], at: usize) -> bool {
        let Some(found) = bytes.get(at..at + self.text.len()) else {
            return false;
        };
        let same = match self.exact {
            true => found == self.text.as_bytes(),
            false => found.eq_ignore_ascii_case(self.text.as_bytes()),
        };
        let starts_word = !self.word_start || at == 0 || !is_word(bytes[at - 1]);
        let assigned =
            !self.names_a_value || imported::assignment_follows(bytes, at + self.text.len());
        same && starts_word
            && assigned
            && match self.needs {
                Needs::AwsSecretName => aws_before(bytes, at),
                _ => true,
            }
    }
}

/// What a literal's presence lets run: one rule of [`RULES`], one of gitleaks' catalog
/// ([`CATALOG`]), or a pattern outside them.
#[derive(Debug, Clone, Copy)]
enum Needs {
    Rule(usize),
    Imported(usize),
    PrivateKey,
    AwsSecretName,
}

/// Which patterns can match in a text: their literals occur in it.
#[derive(Debug, Default)]
pub(super) struct Present {
    /// Bit `i`: rule `i` of [`RULES`].
    pub(super) rules: u64,
    /// Bit `i % 64` of word `i / 64`: rule `i` of [`CATALOG`].
    pub(super) imported: [u64; IMPORTED_WORDS],
    /// Where the keywords of the rules of [`CATALOG`] are: (rule, byte offset), in order.
    pub(super) imported_at: Vec<(usize, usize)>,
    pub(super) private_key: bool,
    pub(super) url: bool,
    pub(super) aws_secret_name: bool,
}

impl Present {
    fn add(&mut self, needs: Needs) {
        match needs {
            Needs::Rule(i) => self.rules |= 1 << i,
            Needs::Imported(i) => self.imported[i / 64] |= 1 << (i % 64),
            Needs::PrivateKey => self.private_key = true,
            Needs::AwsSecretName => self.aws_secret_name = true,
        }
    }

    pub(super) fn any(&self) -> bool {
        self.rules != 0
            || self.imported.iter().any(|&w| w != 0)
            || self.private_key
            || self.url
            || self.aws_secret_name
    }

    /// The rules of [`CATALOG`] whose keywords the text holds, by index.
    pub(super) fn imported(&self) -> impl Iterator<Item = usize> + '_ {
        self.imported.iter().enumerate().flat_map(|(w, &bits)| {
            (0..64)
                .filter(move |b| bits & (1 << b) != 0)
                .map(move |b| w * 64 + b)
        })
    }
}

impl Compiled {
    /// The literals in `text` (but `://`, [`Compiled::url_starts`]): where each starts and
    /// what it enables. The automaton matches every literal in any case and reports matches
    /// that do not overlap, so each of its matches is checked here for the literals that
    /// really start inside it (matches are rare: this runs only where a text holds a keyword).
    fn found<'t>(&'t self, bytes: &'t [u8]) -> impl Iterator<Item = (usize, Needs)> + 't {
        self.any.find_iter(bytes).flat_map(move |m| {
            (m.start()..m.end()).flat_map(move |q| {
                self.by_first[usize::from(bytes[q])]
                    .iter()
                    .filter(move |l| l.holds(bytes, q))
                    .map(move |l| (q, l.needs))
            })
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

    /// Which patterns can match in `text`.
    pub(super) fn present(&self, text: &str) -> Present {
        let bytes = text.as_bytes();
        let mut present = Present {
            url: self.url_starts(bytes).next().is_some(),
            ..Present::default()
        };
        for (at, needs) in self.found(bytes) {
            present.add(needs);
            if let Needs::Imported(i) = needs {
                present.imported_at.push((i, at));
            }
        }
        present
    }
}

pub(super) static COMPILED: LazyLock<Compiled> = LazyLock::new(|| {
    const _: () = assert!(RULES.len() <= 64, "Present::rules is a u64");
    const _: () = assert!(CATALOG.len() <= 64 * IMPORTED_WORDS, "Present::imported");
    let exact = |text, needs| Literal {
        text,
        needs,
        exact: true,
        word_start: false,
        names_a_value: false,
    };
    let mut literals: Vec<Literal> = RULES
        .iter()
        .enumerate()
        .flat_map(|(i, r)| r.keywords.iter().map(move |k| exact(k, Needs::Rule(i))))
        .collect();
    literals.push(exact(PEM_KEYWORD, Needs::PrivateKey));
    literals.extend(
        AWS_SECRET_KEYWORDS
            .iter()
            .map(|k| exact(k, Needs::AwsSecretName)),
    );
    literals.extend(imported::active().flat_map(|(i, r)| {
        r.keywords.iter().map(move |k| Literal {
            text: k.text,
            needs: Needs::Imported(i),
            exact: k.exact,
            word_start: k.word_start,
            names_a_value: imported::names_a_value(i, k.text),
        })
    }));
    Compiled {
        // Leftmost-first rather than standard semantics: only that enables the SIMD
        // prefilter ([`Compiled::present`] finds the overlapping literals it skips).
        any: aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostFirst)
            .ascii_case_insensitive(true)
            // The prefilter does the searching; a DFA would only cost start-up time to build.
            .kind(Some(aho_corasick::AhoCorasickKind::ContiguousNFA))
            .build(literals.iter().map(|l| l.text))
            .unwrap_or_else(|e| panic!("secret keywords: {e}")),
        url: memchr::memmem::Finder::new(URL_KEYWORD),
        by_first: by_first(&literals),
        rules: RULES.iter().map(|_| std::sync::OnceLock::new()).collect(),
    }
});

fn by_first(literals: &[Literal]) -> Vec<Vec<Literal>> {
    let mut by_first = vec![Vec::new(); 256];
    for l in literals {
        let b = l.text.as_bytes()[0];
        let mut firsts = vec![b];
        if !l.exact && b.to_ascii_lowercase() != b.to_ascii_uppercase() {
            firsts = vec![b.to_ascii_lowercase(), b.to_ascii_uppercase()];
        }
        for f in firsts {
            by_first[usize::from(f)].push(*l);
        }
    }
    by_first
}

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
    let mut starts: Vec<usize> = COMPILED.found(text).map(|(at, _)| at).collect();
    starts.extend(COMPILED.url_starts(text));
    starts.sort_unstable();
    starts.dedup();
    starts
}
