//! What kind of text a file is, and where debug statements are expected: decided once a file,
//! from its path, so that no line pays for it.
//!
//! The hidden-character checks are for program text and the config or data files a program
//! parses (Linguist's `programming` and `data` languages: JSON, YAML, TOML…), where an invisible
//! character changes what runs. Prose and translation catalogs are how people write: a Hebrew
//! catalog holds left-to-right marks, a Persian one zero-width non-joiners. Some formats are
//! text only by accident (PostScript and the Illustrator files built on it, SVG path data).

/// Which hidden-character checks a file takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TextKind {
    /// Program text, config, data, markup and any file not known to be another kind: all.
    Code,
    /// Prose and translation catalogs: only Unicode tag characters, which no language writes
    /// (emoji flags aside) and which smuggle text to AI readers.
    Prose,
    /// Text only by accident: none.
    NotText,
}

/// Extensions of Linguist's `prose` languages (Markdown, reStructuredText, AsciiDoc, Text,
/// Org, Textile, RDoc, Pod, Texinfo, Wikitext, Creole, Gemini, Muse, RMarkdown, Gettext
/// Catalog), less those another language also claims as program text. `.md` stays: Linguist
/// gives it to GCC Machine Description too, but a `.md` file in a repository is Markdown.
const PROSE: &[&str] = &[
    "md",
    "markdown",
    "mdown",
    "mdwn",
    "mkd",
    "mkdn",
    "mkdown",
    "ronn",
    "livemd",
    "rst",
    "rest",
    "adoc",
    "asciidoc",
    "txt",
    "org",
    "textile",
    "rdoc",
    "pod",
    "texi",
    "texinfo",
    "txi",
    "mediawiki",
    "wiki",
    "wikitext",
    "creole",
    "gmi",
    "muse",
    "rmd",
    "qmd",
    "po",
    "pot",
];

/// Translation catalogs Linguist files under XML or not at all.
const CATALOGS: &[&str] = &["xliff", "xlf", "strings", "stringsdict"];

/// Program text under a prose extension (Literate CoffeeScript, TI-83+ programs): code.
const PROGRAM_COMPOUNDS: &[&str] = &[".coffee.md", ".8xp.txt"];

/// PostScript (`ps`, `eps`, and Illustrator's `ai`) and SVG: their text is drawing data.
const NOT_TEXT: &[&str] = &["ps", "eps", "epsf", "epsi", "ai", "svg"];

pub(super) fn text_kind(path: &str) -> TextKind {
    let name = path.rsplit('/').next().unwrap_or(path);
    let Some((_, ext)) = name.rsplit_once('.') else {
        return TextKind::Code;
    };
    let is = |list: &[&str]| list.iter().any(|e| ext.eq_ignore_ascii_case(e));
    let compound = || {
        PROGRAM_COMPOUNDS
            .iter()
            .any(|c| name.to_ascii_lowercase().ends_with(c))
    };
    if is(NOT_TEXT) {
        TextKind::NotText
    } else if (is(PROSE) || is(CATALOGS)) && !compound() {
        TextKind::Prose
    } else {
        TextKind::Code
    }
}

/// Tests and examples: a debug statement there is part of what the file shows or runs under a
/// test runner, which stops on it visibly.
pub(super) fn test_or_example(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or(path);
    let in_dir = path.split('/').rev().skip(1).any(|d| {
        matches!(
            d,
            "test" | "tests" | "__tests__" | "spec" | "e2e" | "example" | "examples"
        )
    });
    let stem = file.split('.').next().unwrap_or(file);
    in_dir
        || file.contains(".test.")
        || file.contains(".spec.")
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || file == "conftest.py"
}

/// Paths where printing to the console is the point, not a leftover: tests and examples, and
/// scripts and command-line entry points.
pub(super) fn printing_allowed(path: &str) -> bool {
    test_or_example(path)
        || path
            .split('/')
            .rev()
            .skip(1)
            .any(|d| matches!(d, "scripts" | "bin"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use linguist::definitions::LANGUAGES;

    /// The extensions Linguist gives to languages of `kind` ("programming", "prose", …).
    fn linguist_extensions(kind: &str) -> Vec<String> {
        LANGUAGES
            .values()
            .filter(|l| format!("{:?}", l.language_type).eq_ignore_ascii_case(kind))
            .flat_map(|l| l.extensions.iter().flatten())
            .map(|e| e.trim_start_matches('.').to_ascii_lowercase())
            .collect()
    }

    #[test]
    fn the_prose_list_is_linguists_and_claims_no_program_text() {
        let prose = linguist_extensions("prose");
        let programming = linguist_extensions("programming");
        for ext in PROSE {
            assert!(
                prose.iter().any(|e| e == ext),
                "{ext} is not prose to Linguist"
            );
            if *ext != "md" {
                assert!(
                    !programming.iter().any(|e| e == ext),
                    "{ext} is program text to Linguist too"
                );
            }
        }
        // Every program and data language's extensions are read as code.
        let data = linguist_extensions("data");
        let not_code: Vec<&String> = programming
            .iter()
            .chain(&data)
            // Linguist also files `.txt` under Adblock Filter List (data): a `.txt` is prose.
            .filter(|ext| !["md", "txt", "svg", "xliff", "xlf", "strings"].contains(&ext.as_str()))
            .filter(|ext| text_kind(&format!("a/b.{ext}")) != TextKind::Code)
            .collect();
        assert_eq!(not_code, Vec::<&String>::new());
    }

    #[test]
    fn kinds_of_files() {
        for (path, kind) in [
            (
                "django/conf/locale/he/LC_MESSAGES/django.po",
                TextKind::Prose,
            ),
            ("README.md", TextKind::Prose),
            ("ios/en.lproj/Localizable.strings", TextKind::Prose),
            ("l10n/app.fr.xliff", TextKind::Prose),
            ("docs/logo.ai", TextKind::NotText),
            ("img/icon.SVG", TextKind::NotText),
            ("src/auth.rs", TextKind::Code),
            ("config/app.yaml", TextKind::Code),
            ("Dockerfile", TextKind::Code),
            ("web/index.html", TextKind::Code),
        ] {
            assert_eq!(text_kind(path), kind, "{path}");
        }
    }

    #[test]
    fn tests_and_examples() {
        for path in [
            "tests/it/main.rs",
            "web/__tests__/a.js",
            "src/app.test.ts",
            "pkg/test_views.py",
            "pkg/views_test.go",
            "conftest.py",
            "examples/demo.rs",
        ] {
            assert!(test_or_example(path), "{path}");
        }
        for path in [
            "src/testing.rs",
            "src/latest.py",
            "lib/contest.js",
            "scripts/x.js",
        ] {
            assert!(!test_or_example(path), "{path}");
        }
        assert!(printing_allowed("scripts/build.mjs"));
    }
}
