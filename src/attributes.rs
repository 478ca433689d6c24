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
//!
//! A file no line says anything about takes Linguist's defaults, as GitHub does: vendored when
//! its path matches Linguist's own `vendor.yml` (from the `linguist` crate, which carries
//! Linguist's data: `node_modules/`, `vendor/`, `dist/`, `*.min.js`, …), generated when it is a
//! lock file, a source map or a protocol-buffer output ([`generated_by_default`]). A line that
//! unsets either attribute turns its default off for the files it matches.

use std::sync::LazyLock;

use globset::{GlobBuilder, GlobMatcher};
use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::nfa::thompson::{self, WhichCaptures};
use regex_automata::util::syntax;
use regex_automata::{Input, MatchKind};

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
        let generated = generated.unwrap_or_else(|| generated_by_default(path));
        let vendored = vendored.unwrap_or_else(|| vendored_by_default(path));
        match (generated, vendored) {
            (true, _) => Some(Guard::Generated),
            (_, true) => Some(Guard::Vendored),
            _ => None,
        }
    }
}

/// Linguist's vendor patterns left out. Its list is for language statistics, which also leave
/// out a repository's own configuration; a review must not. Out go CI and editor settings that
/// run commands (`.github/`, `Jenkinsfile`, `.teamcity/`, `.vscode/`), build-tool wrappers
/// that download and run the build (`gradlew`, `mvnw` and their `wrapper/` directories), git's
/// own files (`.gitmodules` names the submodules' sources), and names as often first-party as
/// third-party (`cache/`: Django's `django/core/cache/`; `env/`, `*.d.ts`, `fabfile.py`,
/// `Vagrantfile`, `debian/`, ProGuard rules).
const NOT_VENDORED: &[&str] = &[
    r"(^|/)cache/",
    r"(^|/)env/",
    r"(.*?)\.d\.ts$",
    r"(^|/)fabfile\.py$",
    r"(^|/)Vagrantfile$",
    r"^debian/",
    r"(^|/)\.vscode/",
    r"(^|/)\.gitattributes$",
    r"(^|/)\.gitignore$",
    r"(^|/)\.gitmodules$",
    r"(^|/)gradlew$",
    r"(^|/)gradlew\.bat$",
    r"(^|/)gradle/wrapper/",
    r"(^|/)mvnw$",
    r"(^|/)mvnw\.cmd$",
    r"(^|/)\.mvn/wrapper/",
    r"(^|/)activator$",
    r"(^|/)activator\.bat$",
    r"(^|/)proguard\.pro$",
    r"(^|/)proguard-rules\.pro$",
    r"(^|/)Jenkinsfile$",
    r"(^|/)\.gitpod\.Dockerfile$",
    r"(^|/)\.github/",
    r"(^|/)\.teamcity/",
];

/// Linguist's vendor patterns as one lazy DFA (no captures, bytes, ASCII classes): built in
/// under a millisecond, where a `RegexSet` of the same patterns takes several.
static VENDOR: LazyLock<Option<DFA>> = LazyLock::new(|| {
    let nfa = thompson::Compiler::new()
        .syntax(syntax::Config::new().unicode(false).utf8(false))
        .configure(
            thompson::Config::new()
                .which_captures(WhichCaptures::None)
                .shrink(false),
        )
        .build_many(
            &linguist::definitions::VENDOR
                .iter()
                .filter(|p| !NOT_VENDORED.contains(&p.as_str()))
                .collect::<Vec<_>>(),
        )
        .ok()?;
    DFA::builder()
        .configure(DFA::config().match_kind(MatchKind::All))
        .build_from_nfa(nfa)
        .ok()
});

thread_local! {
    static VENDOR_CACHE: std::cell::RefCell<Option<Cache>> = const { std::cell::RefCell::new(None) };
}

/// Builds the vendor matcher ahead of its first use (a caller with a thread to spare).
pub fn prepare() {
    LazyLock::force(&VENDOR);
}

/// Whether Linguist calls `path` vendored by default (its `vendor.yml`).
pub fn vendored_by_default(path: &str) -> bool {
    let Some(dfa) = VENDOR.as_ref() else {
        return false;
    };
    VENDOR_CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        let cache = cache.get_or_insert_with(|| dfa.create_cache());
        let input = Input::new(path.as_bytes()).earliest(true);
        // A search that gives up (a cache thrashed by a pathological path) marks nothing.
        matches!(dfa.try_search_fwd(cache, &input), Ok(Some(_)))
    })
}

/// Files Linguist calls generated by their path alone (its `generated.rb`: lock files, source
/// maps, protocol-buffer and similar outputs). Linguist's checks that read a file's content
/// are not repeated: a diff does not hold the whole file.
pub fn generated_by_default(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    const NAMES: &[&str] = &[
        "Cargo.lock",
        "composer.lock",
        "deno.lock",
        "flake.lock",
        "Gemfile.lock",
        "go.sum",
        "MODULE.bazel.lock",
        "npm-shrinkwrap.json",
        "package-lock.json",
        "pdm.lock",
        "Pipfile.lock",
        "pixi.lock",
        "pnpm-lock.yaml",
        "poetry.lock",
        "uv.lock",
        "yarn.lock",
        ".pnp.js",
        ".pnp.cjs",
        ".pnp.mjs",
    ];
    const SUFFIXES: &[&str] = &[
        ".js.map",
        ".css.map",
        ".pb.go",
        ".pb.cc",
        ".pb.h",
        "_pb2.py",
        "_pb2_grpc.py",
        ".pb.swift",
        ".designer.cs",
    ];
    NAMES.contains(&name)
        || SUFFIXES.iter().any(|s| name.ends_with(s))
        || path.split('/').rev().skip(1).any(|d| d == "htmlcov")
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
    fn linguist_defaults_mark_vendored_and_generated_files() {
        for path in [
            "django/contrib/admin/static/admin/js/vendor/xregexp/xregexp.min.js",
            "web/node_modules/react/index.js",
            "vendor/github.com/x/y.go",
            "static/app.min.css",
            "dist/bundle.js",
            "js/jquery-3.7.1.js",
        ] {
            assert_eq!(guard("", path), Some(Guard::Vendored), "{path}");
        }
        for path in [
            "Cargo.lock",
            "web/package-lock.json",
            "yarn.lock",
            "api/v1/user.pb.go",
            "static/app.js.map",
            "proto/user_pb2.py",
        ] {
            assert_eq!(guard("", path), Some(Guard::Generated), "{path}");
        }
        for path in [
            "src/main.rs",
            "django/contrib/admin/static/admin/js/actions.js",
            "docs/vendoring.md",
            "django/core/cache/backends/base.py",
            ".github/workflows/ci.yml",
            "Jenkinsfile",
            ".gitmodules",
            "gradle/wrapper/gradle-wrapper.properties",
            "web/src/types.d.ts",
            "debian/postinst",
            "locale/he/LC_MESSAGES/django.po",
            "src/min.js",
        ] {
            assert_eq!(guard("", path), None, "{path}");
        }
        // What is left out of Linguist's list is still in it: a new list is looked at again.
        for p in NOT_VENDORED {
            assert!(linguist::definitions::VENDOR.iter().any(|v| v == p), "{p}");
        }
    }

    #[test]
    fn gitattributes_turn_each_default_off_or_on() {
        let a = "vendor/** -linguist-vendored\nCargo.lock linguist-generated=false\n";
        assert_eq!(guard(a, "vendor/lib/a.go"), None);
        assert_eq!(guard(a, "Cargo.lock"), None);
        // `!attr` is as if no line had spoken: the default holds again.
        assert_eq!(
            guard("*.min.js !linguist-vendored\n", "a.min.js"),
            Some(Guard::Vendored)
        );
        // And a line marks what Linguist would not.
        assert_eq!(
            guard("src/gen/** linguist-generated\n", "src/gen/a.rs"),
            Some(Guard::Generated)
        );
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
        // `ext/` is no Linguist default, so only the line marks it.
        let a = "ext/** linguist-vendored\n/gen/*.rs linguist-generated\n";
        assert_eq!(guard(a, "ext/a/b.c"), Some(Guard::Vendored));
        assert_eq!(guard(a, "src/ext/b.c"), None);
        assert_eq!(guard(a, "gen/x.rs"), Some(Guard::Generated));
        // `*` stops at a slash.
        assert_eq!(guard(a, "gen/sub/x.rs"), None);
        assert_eq!(guard(a, "src/gen/x.rs"), None);
    }

    #[test]
    fn a_directory_pattern_reaches_no_file() {
        assert_eq!(guard("ext/ linguist-vendored\n", "ext/a.c"), None);
        assert_eq!(guard("ext linguist-vendored\n", "ext/a.c"), None);
    }

    #[test]
    fn the_last_line_that_says_something_wins() {
        let a = "out/** linguist-generated\nout/keep.js -linguist-generated\n";
        assert_eq!(guard(a, "out/app.js"), Some(Guard::Generated));
        assert_eq!(guard(a, "out/keep.js"), None);
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
