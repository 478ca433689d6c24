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

use std::sync::{LazyLock, OnceLock};

use aho_corasick::{AhoCorasick, AhoCorasickKind};
use globset::{GlobBuilder, GlobMatcher};
use regex::bytes::{Regex, RegexBuilder};

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
/// `Vagrantfile`, `debian/`, ProGuard rules). [`VENDOR_LITERALS`] is the list without them.
#[cfg(test)]
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

/// Linguist's vendor patterns, each beside a literal every match of it must contain ("" when it
/// has none): a path holding none of a pattern's literal cannot match it, so most paths are
/// settled by one Aho-Corasick pass and only the few patterns whose literal they hold are ever
/// compiled. Compiling all of them for every run cost more than the rest of a small review.
/// Kept in step with the `linguist` crate's list (less [`NOT_VENDORED`]) by a test that
/// recomputes it.
const VENDOR_LITERALS: &[(&str, &str)] = &[
    ("^[Dd]ependencies/", "ependencies/"),
    ("(^|/)dist/", "dist/"),
    ("^deps/", "deps/"),
    ("(^|/)configure$", "configure"),
    ("(^|/)config\\.guess$", "config.guess"),
    ("(^|/)config\\.sub$", "config.sub"),
    ("(^|/)aclocal\\.m4", "aclocal.m4"),
    ("(^|/)libtool\\.m4", "libtool.m4"),
    ("(^|/)ltoptions\\.m4", "ltoptions.m4"),
    ("(^|/)ltsugar\\.m4", "ltsugar.m4"),
    ("(^|/)ltversion\\.m4", "ltversion.m4"),
    ("(^|/)lt~obsolete\\.m4", "lt~obsolete.m4"),
    ("(^|/)dotnet-install\\.(ps1|sh)$", "dotnet-install."),
    ("(^|/)cpplint\\.py", "cpplint.py"),
    ("(^|/)node_modules/", "node_modules/"),
    ("(^|/)\\.yarn/releases/", ".yarn/releases/"),
    ("(^|/)\\.yarn/plugins/", ".yarn/plugins/"),
    ("(^|/)\\.yarn/sdks/", ".yarn/sdks/"),
    ("(^|/)\\.yarn/versions/", ".yarn/versions/"),
    ("(^|/)\\.yarn/unplugged/", ".yarn/unplugged/"),
    ("(^|/)_esy$", "_esy"),
    ("(^|/)bower_components/", "bower_components/"),
    ("^rebar$", "rebar"),
    ("(^|/)erlang\\.mk", "erlang.mk"),
    ("(^|/)Godeps/_workspace/", "Godeps/_workspace/"),
    ("(^|/)testdata/", "testdata/"),
    ("(^|/)\\.indent\\.pro", ".indent.pro"),
    ("(\\.|-)min\\.(js|css)$", "min."),
    ("([^\\s]*)import\\.(css|less|scss|styl)$", "import."),
    (
        "(^|/)bootstrap([^/.]*)(\\..*)?\\.(js|css|less|scss|styl)$",
        "bootstrap",
    ),
    (
        "(^|/)custom\\.bootstrap([^\\s]*)(js|css|less|scss|styl)$",
        "custom.bootstrap",
    ),
    ("(^|/)font-?awesome\\.(css|less|scss|styl)$", "awesome."),
    ("(^|/)font-?awesome/.*\\.(css|less|scss|styl)$", "awesome/"),
    ("(^|/)foundation\\.(css|less|scss|styl)$", "foundation."),
    ("(^|/)normalize\\.(css|less|scss|styl)$", "normalize."),
    ("(^|/)skeleton\\.(css|less|scss|styl)$", "skeleton."),
    ("(^|/)[Bb]ourbon/.*\\.(css|less|scss|styl)$", "ourbon/"),
    ("(^|/)animate\\.(css|less|scss|styl)$", "animate."),
    (
        "(^|/)materialize\\.(css|less|scss|styl|js)$",
        "materialize.",
    ),
    ("(^|/)select2/.*\\.(css|scss|js)$", "select2/"),
    ("(^|/)bulma\\.(css|sass|scss)$", "bulma."),
    ("(3rd|[Tt]hird)[-_]?[Pp]arty/", "arty/"),
    ("(^|/)vendors?/", "vendor"),
    ("(^|/)[Ee]xtern(als?)?/", "xtern"),
    ("(^|/)[Vv]+endor/", "endor/"),
    ("(^|/)run\\.n$", "run.n"),
    ("(^|/)bootstrap-datepicker/", "bootstrap-datepicker/"),
    ("(^|/)jquery([^.]*)\\.js$", "jquery"),
    ("(^|/)jquery\\-\\d\\.\\d+(\\.\\d+)?\\.js$", "jquery-"),
    (
        "(^|/)jquery\\-ui(\\-\\d\\.\\d+(\\.\\d+)?)?(\\.\\w+)?\\.(js|css)$",
        "jquery-ui",
    ),
    (
        "(^|/)jquery\\.(ui|effects)\\.([^.]*)\\.(js|css)$",
        "jquery.",
    ),
    ("(^|/)jquery\\.fn\\.gantt\\.js", "jquery.fn.gantt.js"),
    ("(^|/)jquery\\.fancybox\\.(js|css)", "jquery.fancybox."),
    ("(^|/)fuelux\\.js", "fuelux.js"),
    (
        "(^|/)jquery\\.fileupload(-\\w+)?\\.js$",
        "jquery.fileupload",
    ),
    ("(^|/)jquery\\.dataTables\\.js", "jquery.dataTables.js"),
    ("(^|/)bootbox\\.js", "bootbox.js"),
    ("(^|/)pdf\\.worker\\.js", "pdf.worker.js"),
    ("(^|/)slick\\.\\w+.js$", "slick."),
    (
        "(^|/)Leaflet\\.Coordinates-\\d+\\.\\d+\\.\\d+\\.src\\.js$",
        "Leaflet.Coordinates-",
    ),
    ("(^|/)leaflet\\.draw-src\\.js", "leaflet.draw-src.js"),
    ("(^|/)leaflet\\.draw\\.css", "leaflet.draw.css"),
    ("(^|/)Control\\.FullScreen\\.css", "Control.FullScreen.css"),
    ("(^|/)Control\\.FullScreen\\.js", "Control.FullScreen.js"),
    ("(^|/)leaflet\\.spin\\.js", "leaflet.spin.js"),
    ("(^|/)wicket-leaflet\\.js", "wicket-leaflet.js"),
    ("(^|/)\\.sublime-project", ".sublime-project"),
    ("(^|/)\\.sublime-workspace", ".sublime-workspace"),
    ("(^|/)prototype(.*)\\.js$", "prototype"),
    ("(^|/)effects\\.js$", "effects.js"),
    ("(^|/)controls\\.js$", "controls.js"),
    ("(^|/)dragdrop\\.js$", "dragdrop.js"),
    (
        "(^|/)mootools([^.]*)\\d+\\.\\d+.\\d+([^.]*)\\.js$",
        "mootools",
    ),
    ("(^|/)dojo\\.js$", "dojo.js"),
    ("(^|/)MochiKit\\.js$", "MochiKit.js"),
    ("(^|/)yahoo-([^.]*)\\.js$", "yahoo-"),
    ("(^|/)yui([^.]*)\\.js$", "yui"),
    ("(^|/)ckeditor\\.js$", "ckeditor.js"),
    ("(^|/)tiny_mce([^.]*)\\.js$", "tiny_mce"),
    ("(^|/)tiny_mce/(langs|plugins|themes|utils)", "tiny_mce/"),
    ("(^|/)ace-builds/", "ace-builds/"),
    ("(^|/)fontello(.*?)\\.css$", "fontello"),
    ("(^|/)MathJax/", "MathJax/"),
    ("(^|/)Chart\\.js$", "Chart.js"),
    (
        "(^|/)[Cc]ode[Mm]irror/(\\d+\\.\\d+/)?(lib|mode|theme|addon|keymap|demo)",
        "irror/",
    ),
    ("(^|/)shBrush([^.]*)\\.js$", "shBrush"),
    ("(^|/)shCore\\.js$", "shCore.js"),
    ("(^|/)shLegacy\\.js$", "shLegacy.js"),
    ("(^|/)angular([^.]*)\\.js$", "angular"),
    ("(^|\\/)d3(\\.v\\d+)?([^.]*)\\.js$", ".js"),
    ("(^|/)react(-[^.]*)?\\.js$", "react"),
    ("(^|/)flow-typed/.*\\.js$", "flow-typed/"),
    ("(^|/)modernizr\\-\\d\\.\\d+(\\.\\d+)?\\.js$", "modernizr-"),
    ("(^|/)modernizr\\.custom\\.\\d+\\.js$", "modernizr.custom."),
    ("(^|/)knockout-(\\d+\\.){3}(debug\\.)?js$", "knockout-"),
    ("(^|/)docs?/_?(build|themes?|templates?|static)/", "doc"),
    ("(^|/)admin_media/", "admin_media/"),
    ("(^|/)waf$", "waf"),
    ("(^|/)\\.osx$", ".osx"),
    ("\\.xctemplate/", ".xctemplate/"),
    ("\\.imageset/", ".imageset/"),
    ("(^|/)Carthage/", "Carthage/"),
    ("(^|/)Sparkle/", "Sparkle/"),
    ("(^|/)Crashlytics\\.framework/", "Crashlytics.framework/"),
    ("(^|/)Fabric\\.framework/", "Fabric.framework/"),
    (
        "(^|/)BuddyBuildSDK\\.framework/",
        "BuddyBuildSDK.framework/",
    ),
    ("(^|/)Realm\\.framework", "Realm.framework"),
    ("(^|/)RealmSwift\\.framework", "RealmSwift.framework"),
    ("-vsdoc\\.js$", "-vsdoc.js"),
    ("\\.intellisense\\.js$", ".intellisense.js"),
    (
        "(^|/)jquery([^.]*)\\.validate(\\.unobtrusive)?\\.js$",
        ".validate",
    ),
    (
        "(^|/)jquery([^.]*)\\.unobtrusive\\-ajax\\.js$",
        ".unobtrusive-ajax.js",
    ),
    (
        "(^|/)[Mm]icrosoft([Mm]vc)?([Aa]jax|[Vv]alidation)(\\.debug)?\\.js$",
        "icrosoft",
    ),
    ("(^|/)[Pp]ackages\\/.+\\.\\d+\\/", "ackages/"),
    ("(^|/)extjs/.*?\\.js$", "extjs/"),
    ("(^|/)extjs/.*?\\.xml$", "extjs/"),
    ("(^|/)extjs/.*?\\.txt$", "extjs/"),
    ("(^|/)extjs/.*?\\.html$", "extjs/"),
    ("(^|/)extjs/.*?\\.properties$", ".properties"),
    ("(^|/)extjs/\\.sencha/", "extjs/.sencha/"),
    ("(^|/)extjs/docs/", "extjs/docs/"),
    ("(^|/)extjs/builds/", "extjs/builds/"),
    ("(^|/)extjs/cmd/", "extjs/cmd/"),
    ("(^|/)extjs/examples/", "extjs/examples/"),
    ("(^|/)extjs/locale/", "extjs/locale/"),
    ("(^|/)extjs/packages/", "extjs/packages/"),
    ("(^|/)extjs/plugins/", "extjs/plugins/"),
    ("(^|/)extjs/resources/", "extjs/resources/"),
    ("(^|/)extjs/src/", "extjs/src/"),
    ("(^|/)extjs/welcome/", "extjs/welcome/"),
    ("(^|/)html5shiv\\.js$", "html5shiv.js"),
    ("(^|/)[Tt]ests?/fixtures/", "/fixtures/"),
    ("(^|/)[Ss]pecs?/fixtures/", "/fixtures/"),
    ("(^|/)cordova([^.]*)\\.js$", "cordova"),
    ("(^|/)cordova\\-\\d\\.\\d(\\.\\d)?\\.js$", "cordova-"),
    ("(^|/)foundation(\\..*)?\\.js$", "foundation"),
    ("(^|/)\\.[Dd][Ss]_[Ss]tore$", "tore"),
    ("(^|/)inst/extdata/", "inst/extdata/"),
    ("(^|/)octicons\\.css", "octicons.css"),
    ("(^|/)sprockets-octicons\\.scss", "sprockets-octicons.scss"),
    ("(^|/)puphpet/", "puphpet/"),
    ("(^|/)\\.google_apis/", ".google_apis/"),
    ("(^|/)\\.obsidian/", ".obsidian/"),
    ("(^|/)xvba_modules/", "xvba_modules/"),
];

/// The literals, each once, and the patterns that require each.
struct Prefilter {
    literals: AhoCorasick,
    patterns: Vec<Vec<usize>>,
}

static PREFILTER: LazyLock<Option<Prefilter>> = LazyLock::new(|| {
    let mut literals: Vec<&str> = Vec::new();
    let mut patterns: Vec<Vec<usize>> = Vec::new();
    for (i, (_, literal)) in VENDOR_LITERALS.iter().enumerate() {
        if literal.is_empty() {
            continue;
        }
        match literals.iter().position(|l| l == literal) {
            Some(at) => patterns[at].push(i),
            None => {
                literals.push(literal);
                patterns.push(vec![i]);
            }
        }
    }
    let literals = AhoCorasick::builder()
        .kind(Some(AhoCorasickKind::NoncontiguousNFA))
        .build(&literals)
        .ok()?;
    Some(Prefilter { literals, patterns })
});

/// Each pattern's regex, compiled on its first need.
static VENDOR_REGEX: [OnceLock<Option<Regex>>; VENDOR_LITERALS.len()] =
    [const { OnceLock::new() }; VENDOR_LITERALS.len()];

/// The patterns that require no literal, compiled together once.
static UNFILTERED: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let all: Vec<String> = VENDOR_LITERALS
        .iter()
        .filter(|(_, literal)| literal.is_empty())
        .map(|(pattern, _)| format!("(?:{pattern})"))
        .collect();
    (!all.is_empty())
        .then(|| vendor_regex(&all.join("|")))
        .flatten()
});

/// One pattern as Linguist's list means it: bytes, ASCII classes.
fn vendor_regex(pattern: &str) -> Option<Regex> {
    RegexBuilder::new(pattern).unicode(false).build().ok()
}

/// Builds the vendor matcher ahead of its first use (a caller with a thread to spare).
pub fn prepare() {
    LazyLock::force(&PREFILTER);
    LazyLock::force(&UNFILTERED);
}

/// Whether Linguist calls `path` vendored by default (its `vendor.yml`).
pub fn vendored_by_default(path: &str) -> bool {
    let path = path.as_bytes();
    if UNFILTERED.as_ref().is_some_and(|re| re.is_match(path)) {
        return true;
    }
    let Some(prefilter) = PREFILTER.as_ref() else {
        return false;
    };
    prefilter
        .literals
        .find_overlapping_iter(path)
        .flat_map(|m| &prefilter.patterns[m.pattern().as_usize()])
        .any(|&i| {
            VENDOR_REGEX[i]
                .get_or_init(|| vendor_regex(VENDOR_LITERALS[i].0))
                .as_ref()
                .is_some_and(|re| re.is_match(path))
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
    use regex_syntax::hir::{Hir, HirKind};

    /// A literal every match of `hir` contains: a concatenation requires the longest of what its
    /// parts require; a group or a repetition of at least one what its inside requires;
    /// alternations, optional parts and classes (`[Vv]`) require nothing.
    fn required_literal(hir: &Hir) -> Vec<u8> {
        match hir.kind() {
            HirKind::Literal(literal) => literal.0.to_vec(),
            HirKind::Capture(capture) => required_literal(&capture.sub),
            HirKind::Repetition(rep) if rep.min > 0 => required_literal(&rep.sub),
            HirKind::Concat(parts) => {
                parts
                    .iter()
                    .map(required_literal)
                    .fold(
                        Vec::new(),
                        |best, l| if l.len() > best.len() { l } else { best },
                    )
            }
            _ => Vec::new(),
        }
    }

    #[test]
    fn the_vendor_literals_are_recomputed_from_linguists_list() {
        let expected: Vec<(String, String)> = linguist::definitions::VENDOR
            .iter()
            .filter(|p| !NOT_VENDORED.contains(&p.as_str()))
            .map(|p| {
                let hir = parse(p);
                let literal = String::from_utf8(required_literal(&hir)).expect(p);
                (p.to_string(), literal)
            })
            .collect();
        let table: Vec<(String, String)> = VENDOR_LITERALS
            .iter()
            .map(|(p, l)| (p.to_string(), l.to_string()))
            .collect();
        let listing: String = expected
            .iter()
            .map(|(p, l)| format!("    ({p:?}, {l:?}),\n"))
            .collect();
        assert_eq!(table, expected, "the table, recomputed:\n{listing}");
    }

    fn parse(pattern: &str) -> Hir {
        regex_syntax::ParserBuilder::new()
            .unicode(false)
            .utf8(false)
            .build()
            .parse(pattern)
            .expect(pattern)
    }

    /// A text `hir` matches, taking each alternation's first branch (its last with `last`),
    /// a printable byte of each class and the fewest repetitions.
    fn sample(hir: &Hir, last: bool) -> String {
        match hir.kind() {
            HirKind::Literal(literal) => String::from_utf8_lossy(&literal.0).into_owned(),
            HirKind::Class(class) => {
                let bytes: Vec<u8> = match class {
                    regex_syntax::hir::Class::Bytes(c) => {
                        c.iter().flat_map(|r| r.start()..=r.end()).collect()
                    }
                    regex_syntax::hir::Class::Unicode(c) => c
                        .iter()
                        .flat_map(|r| r.start()..=r.end())
                        .filter_map(|c| u8::try_from(c).ok())
                        .collect(),
                };
                let printable = |b: &&u8| b.is_ascii_graphic() && **b != b'/';
                let pick = if last {
                    bytes.iter().rev().find(printable)
                } else {
                    bytes.iter().find(printable)
                };
                pick.map(|&b| char::from(b).to_string()).unwrap_or_default()
            }
            HirKind::Capture(capture) => sample(&capture.sub, last),
            HirKind::Repetition(rep) => sample(&rep.sub, last).repeat(rep.min as usize),
            HirKind::Concat(parts) => parts.iter().map(|h| sample(h, last)).collect(),
            HirKind::Alternation(branches) => {
                let branch = if last {
                    branches.last()
                } else {
                    branches.first()
                };
                branch.map(|h| sample(h, last)).unwrap_or_default()
            }
            HirKind::Empty | HirKind::Look(_) => String::new(),
        }
    }

    /// What may follow a literal in a vendored path.
    const AFTER: &[&str] = &[
        "",
        "/",
        "x",
        "js",
        "css",
        ".js",
        ".css",
        "/a.css",
        "-1.2.3.js",
        "1.2/lib",
        "/a.b.1/",
    ];

    #[test]
    fn the_prefilter_gives_the_verdict_of_every_pattern_at_once() {
        // Every pattern of the list, run on every path, as the matcher ran before the prefilter.
        let all = regex::bytes::RegexSetBuilder::new(VENDOR_LITERALS.iter().map(|(p, _)| p))
            .unicode(false)
            .build()
            .unwrap();
        let mut paths = vec![String::new(), "a".to_string(), "src/main.rs".to_string()];
        // Each literal at the start, inside and at the end of paths, with the suffixes and
        // names the patterns look for around it; the literals less their first byte; and a
        // path each pattern matches by its first and by its last choices.
        for (pattern, literal) in VENDOR_LITERALS {
            let hir = parse(pattern);
            for lit in [
                literal.to_string(),
                literal[1..].to_string(),
                sample(&hir, false),
                sample(&hir, true),
            ] {
                for before in ["", "/", "a/", "x", "a.", "a/b-", "3rd-"] {
                    for after in AFTER {
                        paths.push(format!("{before}{lit}{after}"));
                    }
                }
            }
        }
        for path in &paths {
            assert_eq!(
                vendored_by_default(path),
                all.is_match(path.as_bytes()),
                "{path}"
            );
        }
        // Every pattern is matched by some path, so each one's literal is put to the test.
        let mut hit = vec![false; VENDOR_LITERALS.len()];
        for path in &paths {
            for i in all.matches(path.as_bytes()).iter() {
                hit[i] = true;
            }
        }
        let missed: Vec<_> = (0..hit.len())
            .filter(|&i| !hit[i])
            .map(|i| VENDOR_LITERALS[i].0)
            .collect();
        assert!(missed.is_empty(), "{missed:?}");
        // The walk above reaches both verdicts often.
        let vendored = paths.iter().filter(|p| vendored_by_default(p)).count();
        assert!(
            vendored > 1000 && paths.len() - vendored > 1000,
            "{vendored}"
        );
    }

    #[test]
    fn every_pattern_holds_its_literal_and_compiles() {
        for (pattern, literal) in VENDOR_LITERALS {
            assert!(vendor_regex(pattern).is_some(), "{pattern}");
            // A literal is only of use when the pattern spells it out.
            let unescaped = pattern.replace('\\', "");
            assert!(unescaped.contains(literal), "{pattern} {literal}");
        }
    }

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
