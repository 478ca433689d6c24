//! The repository's own review rules: `REVIEW.md` at the root and in the directories of the
//! changed files, and the review section of the root `AGENTS.md` or `CLAUDE.md`. Which files to
//! ask for, what of them counts, and how much of it reaches a lens. No I/O: the flow reads the
//! files (from the base branch, or `--checkout`) and hands them here.
//!
//! The rules are the repository's text: sanitized like every repository text, capped, and
//! given to lenses as data that guides the review, never as instructions to reviewbot.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::sanitize::sanitize;

/// The rules file looked for in the root and in each directory of a changed file.
pub const REVIEW_FILE: &str = "REVIEW.md";

/// Root files whose review section counts, in the order they are preferred.
pub const AGENT_FILES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// Most characters of one rules file a lens gets.
pub const MAX_CHARS_EACH: usize = 4_000;

/// Most characters of all rules files together.
pub const MAX_CHARS_TOTAL: usize = 12_000;

/// Most directories asked for a `REVIEW.md` (all in one query); the shallowest win, as they
/// cover the most files.
pub const MAX_DIRECTORIES: usize = 40;

/// One rules file as a lens gets it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleFile {
    /// The file's path in the repository (`src/db/REVIEW.md`, `AGENTS.md`).
    pub path: String,
    /// The directory whose files it applies to, with a trailing `/`; empty for the whole
    /// repository.
    pub applies_to: String,
    /// The text given to lenses: sanitized, at most [`MAX_CHARS_EACH`] characters.
    #[serde(skip)]
    pub text: String,
    /// Whether the text was cut to fit the caps.
    pub cut: bool,
}

impl RuleFile {
    /// Whether the rules apply to `path` (a file of the diff).
    pub fn applies(&self, path: &str) -> bool {
        path.starts_with(&self.applies_to)
    }

    /// How deep its directory lies: 0 for the root. Nearer rules (deeper) come first.
    fn depth(&self) -> usize {
        self.applies_to.matches('/').count()
    }
}

/// The `REVIEW.md` paths to ask for, root first then shallower directories before deeper:
/// the root and every directory holding a changed file or one of their parents, at most
/// [`MAX_DIRECTORIES`] of them (root included).
pub fn review_files<'a>(changed: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut dirs: BTreeSet<(usize, &str)> = BTreeSet::new();
    for path in changed {
        let mut dir = path;
        while let Some(i) = dir.rfind('/') {
            dir = &dir[..i];
            if !dir.is_empty() {
                dirs.insert((dir.matches('/').count() + 1, dir));
            }
        }
    }
    std::iter::once(REVIEW_FILE.to_owned())
        .chain(
            dirs.into_iter()
                .map(|(_, dir)| format!("{dir}/{REVIEW_FILE}")),
        )
        .take(MAX_DIRECTORIES)
        .collect()
}

/// The section of a Markdown file whose heading names review (`## Review guidelines`,
/// `# Code review`): from that heading up to the next heading of the same or a higher level.
/// Headings inside fenced code blocks do not count. `None` when no heading names review.
pub fn review_section(markdown: &str) -> Option<&str> {
    let mut start: Option<(usize, usize)> = None;
    let mut fence: Option<&str> = None;
    let mut at = 0;
    for line in markdown.split_inclusive('\n') {
        let here = at;
        at += line.len();
        let trimmed = line.trim_start();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fence = Some(&trimmed[..3]);
            continue;
        }
        let Some((level, title)) = heading(line) else {
            continue;
        };
        match start {
            Some((_, open_level)) if level <= open_level => {
                let (from, _) = start?;
                return Some(&markdown[from..here]);
            }
            Some(_) => {}
            None if names_review(title) => start = Some((here, level)),
            None => {}
        }
    }
    start.map(|(from, _)| &markdown[from..])
}

/// An ATX heading's level and title (`## Review` → (2, "Review")); at most three spaces before.
fn heading(line: &str) -> Option<(usize, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let level = rest.len() - rest.trim_start_matches('#').len();
    let title = &rest[level..];
    let spaced = title.is_empty() || title.starts_with([' ', '\t', '\n', '\r']);
    ((1..=6).contains(&level) && spaced).then(|| (level, title.trim().trim_end_matches('#')))
}

/// Whether a heading names review: a word starting with `review` (review, reviews, reviewing,
/// reviewer), so `Preview builds` does not.
fn names_review(title: &str) -> bool {
    title
        .split(|c: char| !c.is_alphanumeric())
        .any(|word| word.to_lowercase().starts_with("review"))
}

/// The rules a round uses, from the files that were found: `reviews` as (path, text) for each
/// `REVIEW.md` found, `agents` the first of [`AGENT_FILES`] that has a review section.
/// Each is sanitized and capped; the root's rules take the shared budget first, then shallower
/// directories before deeper ones. Returned nearest first (deepest directory first, the root's
/// last), the order a lens reads them in.
pub fn collect(reviews: Vec<(String, String)>, agents: Option<(String, String)>) -> Vec<RuleFile> {
    let mut found: Vec<(String, String, String)> = reviews
        .into_iter()
        .map(|(path, text)| {
            let applies_to = path
                .strip_suffix(REVIEW_FILE)
                .unwrap_or_default()
                .to_owned();
            (path, applies_to, text)
        })
        .collect();
    if let Some((path, text)) = agents
        && let Some(section) = review_section(&text)
    {
        found.push((path, String::new(), section.to_owned()));
    }
    // The budget goes to the broadest rules first.
    found.sort_by_key(|(path, applies_to, _)| {
        (applies_to.matches('/').count(), path != REVIEW_FILE)
    });
    let mut left = MAX_CHARS_TOTAL;
    let mut rules: Vec<RuleFile> = found
        .into_iter()
        .filter_map(|(path, applies_to, raw)| {
            let clean = sanitize(&raw);
            let clean = clean.trim();
            if clean.is_empty() {
                return None;
            }
            let room = left.min(MAX_CHARS_EACH);
            let (text, cut) = cap(clean, room);
            left -= text.chars().count();
            Some(RuleFile {
                path,
                applies_to,
                text,
                cut,
            })
        })
        .collect();
    rules.sort_by_key(|r| std::cmp::Reverse(r.depth()));
    rules
}

/// At most `room` characters of `text`, cut at a line end when there is one in the last half;
/// and whether anything was cut.
fn cap(text: &str, room: usize) -> (String, bool) {
    match crate::chars::cut_at_line(text, room) {
        Some(kept) => (kept.to_owned(), true),
        None => (text.to_owned(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn review_files_are_the_root_then_each_directory_shallow_first() {
        let files = review_files([
            "src/db/pool.rs",
            "src/db/migrate/up.rs",
            "README.md",
            "a/b.rs",
        ]);
        assert_eq!(
            files,
            [
                "REVIEW.md",
                "a/REVIEW.md",
                "src/REVIEW.md",
                "src/db/REVIEW.md",
                "src/db/migrate/REVIEW.md"
            ]
        );
    }

    #[test]
    fn review_files_are_capped() {
        let paths: Vec<String> = (0..100).map(|i| format!("d{i:03}/f.rs")).collect();
        let files = review_files(paths.iter().map(String::as_str));
        assert_eq!(files.len(), MAX_DIRECTORIES);
        assert_eq!(files[0], "REVIEW.md");
    }

    #[test]
    fn the_review_section_runs_to_the_next_heading_of_its_level() {
        let md = "# Agents\nBuild with make.\n## Review guidelines\nCheck locks.\n### Detail\nMore.\n```\n# Review not a heading\n```\n## Style\nTabs.\n";
        assert_eq!(
            review_section(md),
            Some(
                "## Review guidelines\nCheck locks.\n### Detail\nMore.\n```\n# Review not a heading\n```\n"
            )
        );
        assert_eq!(
            review_section("# Code review\nAll of it.\n"),
            Some("# Code review\nAll of it.\n")
        );
        assert_eq!(
            review_section("# Previews\n## Reviewing\nx\n"),
            Some("## Reviewing\nx\n")
        );
        assert_eq!(review_section("# Preview builds\nx\n#Review\n"), None);
    }

    #[test]
    fn collect_sanitizes_scopes_orders_nearest_first_and_caps() {
        let rules = collect(
            vec![
                ("REVIEW.md".into(), "Root rule.<!-- hidden -->".into()),
                ("src/db/REVIEW.md".into(), "x".repeat(MAX_CHARS_EACH + 10)),
                ("src/REVIEW.md".into(), "  \n".into()),
            ],
            Some((
                "AGENTS.md".into(),
                "# Build\nmake\n## Review\nNo unwrap.\n".into(),
            )),
        );
        let paths: Vec<&str> = rules.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(paths, ["src/db/REVIEW.md", "REVIEW.md", "AGENTS.md"]);
        assert_eq!(rules[1].text, "Root rule.");
        assert_eq!(rules[2].text, "## Review\nNo unwrap.");
        assert!(rules[0].cut && !rules[1].cut);
        assert_eq!(rules[0].text.len(), MAX_CHARS_EACH);
        assert!(rules[0].applies("src/db/pool.rs"));
        assert!(!rules[0].applies("src/dbx.rs"));
        assert!(rules[1].applies("anything"));
    }

    #[test]
    fn collect_keeps_to_the_total_budget() {
        let reviews = (0..5)
            .map(|i| (format!("d{i}/REVIEW.md"), "y".repeat(MAX_CHARS_EACH)))
            .collect();
        let rules = collect(reviews, None);
        let total: usize = rules.iter().map(|r| r.text.len()).sum();
        assert_eq!(total, MAX_CHARS_TOTAL);
        assert_eq!(rules.iter().filter(|r| r.cut).count(), 2);
    }
}
