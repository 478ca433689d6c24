//! The base branch's root `.gitattributes`, read for the two attributes that keep a file from
//! the lenses: `linguist-generated` and `linguist-vendored`. Patterns match as git matches
//! them in an attributes file; no I/O here.
//!
//! Git's rules kept: a pattern without a `/` (a trailing one aside) matches the file's name at
//! any depth; one with a `/` is relative to the root (a leading `/` only anchors it); `*`, `?`
//! and `[...]` never match a `/`, `**` matches across directories; a pattern that names a
//! directory does not reach the files in it (`vendor/` matches nothing: `vendor/**` does); for
//! each attribute, the last line that says anything about it wins. An attribute is set by
//! `attr` or `attr=<anything but false>`, unset by `-attr` or `attr=false`, and left as if no
//! line had said anything by `!attr`. Negative patterns, which git forbids here, and macro
//! lines (`[attr]…`) are passed over.

use globset::{GlobBuilder, GlobMatcher};

/// Where the attributes are read: the root of the base branch.
pub const GITATTRIBUTES: &str = ".gitattributes";

/// Why a file is kept from the lenses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guard {
    Generated,
    Vendored,
}

/// What one line says of one of the two attributes: set, unset, or back to unspecified.
#[derive(Debug, Clone, Copy)]
struct Says {
    guard: Guard,
    state: Option<bool>,
}

/// The parsed file: each usable line's matcher and what it says of the two attributes.
#[derive(Debug, Default)]
pub struct Attributes {
    lines: Vec<(GlobMatcher, Vec<Says>)>,
}

impl Attributes {
    pub fn parse(text: &str) -> Attributes {
        let lines = text
            .lines()
            .filter_map(|line| {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                    return None;
                }
                let mut fields = line.split_whitespace();
                let matcher = matcher(fields.next()?)?;
                let says: Vec<Says> = fields.filter_map(says).collect();
                (!says.is_empty()).then_some((matcher, says))
            })
            .collect();
        Attributes { lines }
    }

    /// Whether `path` is generated or vendored (generated first, when it is both).
    pub fn guard(&self, path: &str) -> Option<Guard> {
        let mut generated = None;
        let mut vendored = None;
        for (matcher, says) in &self.lines {
            if !matcher.is_match(path) {
                continue;
            }
            for s in says {
                match s.guard {
                    Guard::Generated => generated = s.state,
                    Guard::Vendored => vendored = s.state,
                }
            }
        }
        match (generated, vendored) {
            (Some(true), _) => Some(Guard::Generated),
            (_, Some(true)) => Some(Guard::Vendored),
            _ => None,
        }
    }
}

/// A pattern as git reads it in an attributes file; `None` for one that can match no file.
fn matcher(pattern: &str) -> Option<GlobMatcher> {
    if pattern.ends_with('/') || pattern.starts_with("[attr]") {
        // A directory pattern reaches no file in an attributes file; a macro names no path.
        return None;
    }
    let glob = match pattern.strip_prefix('/') {
        Some(anchored) => anchored.to_owned(),
        None if pattern.contains('/') => pattern.to_owned(),
        None => format!("**/{pattern}"),
    };
    GlobBuilder::new(&glob)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

/// What one attribute field says of the two attributes.
fn says(field: &str) -> Option<Says> {
    let (name, state) = if let Some(name) = field.strip_prefix('-') {
        (name, Some(false))
    } else if let Some(name) = field.strip_prefix('!') {
        (name, None)
    } else if let Some((name, value)) = field.split_once('=') {
        (name, Some(value != "false"))
    } else {
        (field, Some(true))
    };
    let guard = match name {
        "linguist-generated" => Guard::Generated,
        "linguist-vendored" => Guard::Vendored,
        _ => return None,
    };
    Some(Says { guard, state })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(text: &str, path: &str) -> Option<Guard> {
        Attributes::parse(text).guard(path)
    }

    #[test]
    fn a_pattern_without_a_slash_matches_at_any_depth() {
        let a = "*.pb.go linguist-generated\n";
        assert_eq!(guard(a, "api/v1/x.pb.go"), Some(Guard::Generated));
        assert_eq!(guard(a, "x.pb.go"), Some(Guard::Generated));
        assert_eq!(guard(a, "x.go"), None);
        assert_eq!(
            guard("Cargo.lock linguist-generated=true", "sub/Cargo.lock"),
            Some(Guard::Generated)
        );
    }

    #[test]
    fn a_pattern_with_a_slash_is_relative_to_the_root() {
        let a = "vendor/** linguist-vendored\n/gen/*.rs linguist-generated\n";
        assert_eq!(guard(a, "vendor/a/b.c"), Some(Guard::Vendored));
        assert_eq!(guard(a, "src/vendor/b.c"), None);
        assert_eq!(guard(a, "gen/x.rs"), Some(Guard::Generated));
        // `*` stops at a slash.
        assert_eq!(guard(a, "gen/sub/x.rs"), None);
        assert_eq!(guard(a, "src/gen/x.rs"), None);
    }

    #[test]
    fn a_directory_pattern_reaches_no_file() {
        assert_eq!(guard("vendor/ linguist-vendored\n", "vendor/a.c"), None);
        assert_eq!(guard("vendor linguist-vendored\n", "vendor/a.c"), None);
    }

    #[test]
    fn the_last_line_that_says_something_wins() {
        let a = "dist/** linguist-generated\ndist/keep.js -linguist-generated\n";
        assert_eq!(guard(a, "dist/app.js"), Some(Guard::Generated));
        assert_eq!(guard(a, "dist/keep.js"), None);
        let a = "*.js linguist-vendored\nlib/*.js linguist-vendored=false\n";
        assert_eq!(guard(a, "lib/a.js"), None);
        assert_eq!(guard(a, "web/a.js"), Some(Guard::Vendored));
        // `!attr` returns to unspecified: nothing marks it.
        let a = "*.js linguist-generated\nlib/*.js !linguist-generated\n";
        assert_eq!(guard(a, "lib/a.js"), None);
        // A later line about another attribute changes nothing.
        let a = "*.js linguist-generated\n*.js text eol=lf\n";
        assert_eq!(guard(a, "a.js"), Some(Guard::Generated));
    }

    #[test]
    fn comments_negations_and_unknown_attributes_are_passed_over() {
        let a = "# *.rs linguist-generated\n!*.rs linguist-generated\n*.rs diff=rust\n[attr]gen linguist-generated\n";
        assert_eq!(guard(a, "a.rs"), None);
    }

    #[test]
    fn generated_wins_over_vendored() {
        let a = "third_party/** linguist-vendored linguist-generated\n";
        assert_eq!(guard(a, "third_party/x.c"), Some(Guard::Generated));
    }
}
