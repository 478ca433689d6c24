//! The shape of an imported rule: what `catalog.rs` (generated from gitleaks' catalog) is
//! written in, and what `imported.rs` compiles and runs.

/// One rule of gitleaks' catalog, its pattern already in the regex crate's syntax.
pub(super) struct Imported {
    pub(super) id: &'static str,
    pub(super) name: &'static str,
    pub(super) pattern: &'static str,
    /// Literals one of which the text must hold.
    pub(super) keywords: &'static [Keyword],
    /// The secret must have more Shannon entropy than this (0: no threshold).
    pub(super) entropy: f64,
    /// The capture group that is the secret (0: the first that matched, or the whole match).
    pub(super) secret_group: usize,
    /// The rule applies only to files whose path this matches.
    pub(super) path: Option<&'static str>,
    pub(super) allow: &'static [Allow],
}

/// A literal a rule's matches hold.
#[derive(Debug, Clone, Copy)]
pub(super) struct Keyword {
    pub(super) text: &'static str,
    /// Its case must match; otherwise any ASCII case does, as gitleaks matches its lower-case
    /// keywords on lower-cased text.
    pub(super) exact: bool,
    /// It starts a word in every match (the pattern starts with `\b` and it).
    pub(super) word_start: bool,
}

/// What an allowlist's regexes are matched against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Target {
    Secret,
    /// The whole match of the rule's pattern.
    Match,
    /// The lines the match is on.
    Line,
}

/// An allowlist: a finding is dropped when one of its checks holds (all of them with `all`).
pub(super) struct Allow {
    pub(super) target: Target,
    pub(super) all: bool,
    pub(super) regexes: &'static [&'static str],
    pub(super) paths: &'static [&'static str],
    /// Lower-case words the secret must not contain.
    pub(super) stopwords: &'static [&'static str],
}
