//! Scope: what a round reviews. A first round reviews the PR's whole diff; a later one the PR's
//! hunks that hold a line added since the last reviewed head. No I/O: the PR's files and the
//! compare result come in gathered.

use std::collections::{BTreeMap, BTreeSet};

use crate::diff::{Diff, FileStatus, LineKind, ParseError, PatchFile};
use crate::github::model::{Comparison, PrFile};
use crate::ids::HeadSha;

/// GitHub's compare endpoint lists at most this many files; at the cap the interdiff is
/// incomplete and the round reviews everything again.
pub const COMPARE_FILE_CAP: usize = 300;

/// What a later round looked at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// The round and head it follows.
    pub since_round: u32,
    pub since_head: HeadSha,
    /// `None`: what changed since; else why the whole change was reviewed again.
    pub everything: Option<Rescope>,
}

/// Why a later round reviewed the whole change again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rescope {
    /// The last reviewed head is gone (the compare call failed).
    Unreachable,
    /// The branch was rewritten: the new head does not descend from the last one.
    Rewritten,
    /// The compare result is at GitHub's file cap, so it may be incomplete.
    TooManyFiles,
    /// The compare result's patches could not be read.
    Unreadable,
}

/// The PR's diff from its file records; files GitHub gave no patch for are listed apart.
pub fn diff_of(files: &[PrFile]) -> Result<(Diff, Vec<String>), ParseError> {
    let no_patch = files
        .iter()
        .filter(|f| f.patch.is_none())
        .map(|f| f.filename.clone())
        .collect();
    let diff = Diff::from_patches(
        files
            .iter()
            .filter(|f| f.patch.is_some())
            .map(|f| PatchFile {
                filename: &f.filename,
                previous_filename: f.previous_filename.as_deref(),
                status: &f.status,
                patch: f.patch.as_deref(),
            }),
    )?;
    Ok((diff, no_patch))
}

/// The part of the PR a later round reviews, given the compare result from the last reviewed
/// head (`Err` when GitHub could not compare). After an "Update branch" merge the interdiff
/// also carries base code, which the PR's own diff does not: intersecting drops it. A rewritten
/// branch, a missing old head or a compare at its file cap means reviewing everything.
pub fn interdiff<E>(
    diff: &Diff,
    compare: Result<&Comparison, E>,
    last: &HeadSha,
    last_round: u32,
) -> (Diff, Scope) {
    let scope = |everything| Scope {
        since_round: last_round,
        since_head: last.clone(),
        everything,
    };
    let everything = |why| (diff.clone(), scope(Some(why)));
    let cmp = match compare {
        Ok(cmp) => cmp,
        Err(_) => return everything(Rescope::Unreachable),
    };
    if cmp.status != "ahead" {
        return everything(Rescope::Rewritten);
    }
    if cmp.files.len() >= COMPARE_FILE_CAP {
        return everything(Rescope::TooManyFiles);
    }
    let Ok((inter, _)) = diff_of(&cmp.files) else {
        return everything(Rescope::Unreadable);
    };
    let mut added: BTreeMap<&str, BTreeSet<u32>> = BTreeMap::new();
    for f in inter.files() {
        let lines = added.entry(f.path()).or_default();
        lines.extend(
            inter
                .file_lines(f)
                .filter(|l| l.kind == LineKind::Added)
                .filter_map(|l| l.new),
        );
    }
    let mut scoped = diff.subset(|_, f| {
        added.get(f.path()).is_some_and(|lines| {
            diff.file_lines(f)
                .any(|l| l.kind == LineKind::Added && l.new.is_some_and(|n| lines.contains(&n)))
                || (f.hunks.is_empty() && !lines.is_empty())
        })
    });
    scoped.retain_hunks(|f, h| {
        let Some(lines) = added.get(f.path()) else {
            return false;
        };
        (h.new_start..h.new_start.saturating_add(h.new_count)).any(|n| lines.contains(&n))
    });
    // Only the lines that changed since, with their context: a 3-line fix in a file the PR
    // added is not the file's whole hunk again (a lens reads more in the snapshot).
    let trimmed = trimmed(&scoped, &added).unwrap_or(scoped);
    (trimmed, scope(None))
}

/// Lines of context kept around each line added since the last round.
const CONTEXT: usize = 3;

/// `diff` with each hunk cut down to the lines `added` names and [`CONTEXT`] lines either side
/// of them (in the PR's own numbering, so findings still anchor on its diff); `None` when the
/// cut diff cannot be read back.
fn trimmed(diff: &Diff, added: &BTreeMap<&str, BTreeSet<u32>>) -> Option<Diff> {
    let mut patches: Vec<(String, Option<String>, &'static str, String)> = Vec::new();
    for file in diff.files() {
        let new_lines = added.get(file.path());
        let mut patch = String::new();
        for hunk in &file.hunks {
            let lines: Vec<_> = diff.hunk_lines(hunk).collect();
            let changed: Vec<usize> = lines
                .iter()
                .enumerate()
                .filter(|(_, l)| {
                    l.kind == LineKind::Added
                        && l.new
                            .is_some_and(|n| new_lines.is_some_and(|set| set.contains(&n)))
                })
                .map(|(i, _)| i)
                .collect();
            let keep = |i: usize| changed.iter().any(|&c| i.abs_diff(c) <= CONTEXT);
            // Where a segment starts when its first line has no number on a side: after the
            // last numbered line before it (git's convention for an empty range).
            let (mut old_before, mut new_before) = (
                hunk.old_start.saturating_sub(1),
                hunk.new_start.saturating_sub(1),
            );
            let mut i = 0;
            while i < lines.len() {
                if !keep(i) {
                    old_before = lines[i].old.unwrap_or(old_before);
                    new_before = lines[i].new.unwrap_or(new_before);
                    i += 1;
                    continue;
                }
                let start = i;
                while i < lines.len() && keep(i) {
                    i += 1;
                }
                let seg = &lines[start..i];
                let old_count = seg.iter().filter(|l| l.old.is_some()).count();
                let new_count = seg.iter().filter(|l| l.new.is_some()).count();
                let old_start = seg.iter().find_map(|l| l.old).unwrap_or(old_before);
                let new_start = seg.iter().find_map(|l| l.new).unwrap_or(new_before);
                patch.push_str(&format!(
                    "@@ -{old_start},{old_count} +{new_start},{new_count} @@\n"
                ));
                for l in seg {
                    patch.push(match l.kind {
                        LineKind::Added => '+',
                        LineKind::Removed => '-',
                        LineKind::Context => ' ',
                    });
                    patch.push_str(l.text);
                    patch.push('\n');
                }
                if let Some(last) = seg.last() {
                    old_before = last.old.unwrap_or(old_before);
                    new_before = last.new.unwrap_or(new_before);
                }
            }
        }
        let status = match file.status {
            FileStatus::Added => "added",
            FileStatus::Deleted => "removed",
            FileStatus::Modified => "modified",
            FileStatus::Renamed { .. } => "renamed",
            FileStatus::Copied { .. } => "copied",
        };
        let previous = file.old_path.clone().filter(|old| old != file.path());
        patches.push((file.path().to_owned(), previous, status, patch));
    }
    Diff::from_patches(
        patches
            .iter()
            .map(|(name, previous, status, patch)| PatchFile {
                filename: name,
                previous_filename: previous.as_deref(),
                status,
                patch: Some(patch.as_str()),
            }),
    )
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, patch: &str) -> PrFile {
        PrFile {
            filename: name.into(),
            previous_filename: None,
            status: "modified".into(),
            patch: Some(patch.into()),
        }
    }

    fn last() -> HeadSha {
        HeadSha::parse(&"1".repeat(40)).expect("sha")
    }

    /// The PR: two files. Since the last round only `a.rs` line 3 was added.
    fn pr_diff() -> Diff {
        let files = [
            file("a.rs", "@@ -1,2 +1,4 @@\n x\n+one\n+two\n y\n"),
            file("b.rs", "@@ -1,1 +1,2 @@\n x\n+old\n"),
        ];
        diff_of(&files).expect("diff").0
    }

    #[test]
    fn a_later_round_reviews_the_prs_hunks_with_new_lines_only() {
        let cmp = Comparison {
            status: "ahead".into(),
            files: vec![
                file("a.rs", "@@ -1,3 +1,4 @@\n x\n one\n+two\n y\n"),
                // Base code brought in by a merge: not in the PR's diff, so not reviewed.
                file("c.rs", "@@ -1,1 +1,2 @@\n x\n+base\n"),
            ],
        };
        let (scoped, scope) = interdiff(&pr_diff(), Ok::<_, ()>(&cmp), &last(), 1);
        let paths: Vec<&str> = scoped.files().iter().map(|f| f.path()).collect();
        assert_eq!(paths, ["a.rs"]);
        assert_eq!(scope.everything, None);
        assert_eq!(scope.since_round, 1);
    }

    #[test]
    fn a_small_push_to_a_long_hunk_sends_its_lines_with_their_context_only() {
        // The PR added a 40-line file; the last push changed its line 20.
        let body: String = (1..=40).map(|n| format!("+line {n}\n")).collect();
        let pr = diff_of(&[PrFile {
            status: "added".into(),
            ..file("new.py", &format!("@@ -0,0 +1,40 @@\n{body}"))
        }])
        .expect("diff")
        .0;
        let cmp = Comparison {
            status: "ahead".into(),
            files: vec![file(
                "new.py",
                "@@ -17,7 +17,7 @@\n line 17\n line 18\n line 19\n-old 20\n+line 20\n line 21\n line 22\n line 23\n",
            )],
        };
        let (scoped, _) = interdiff(&pr, Ok::<_, ()>(&cmp), &last(), 1);
        let lines: Vec<(Option<u32>, &str)> = scoped
            .file_lines(&scoped.files()[0])
            .map(|l| (l.new, l.text))
            .collect();
        assert_eq!(lines.len(), 7, "{lines:?}");
        assert_eq!(lines.first(), Some(&(Some(17), "line 17")));
        assert_eq!(lines.last(), Some(&(Some(23), "line 23")));
        assert!(
            scoped.files()[0]
                .hunks
                .iter()
                .all(|h| h.new_start == 17 && h.new_count == 7)
        );

        // Two changes far apart are two hunks; a change next to a removal keeps the removal.
        let pr = diff_of(&[file(
            "m.rs",
            "@@ -1,12 +1,12 @@\n a\n-b\n+B\n c\n d\n e\n f\n g\n h\n i\n j\n-k\n+K\n l\n",
        )])
        .expect("diff")
        .0;
        let cmp = Comparison {
            status: "ahead".into(),
            files: vec![file(
                "m.rs",
                "@@ -1,3 +1,3 @@\n a\n-x\n+B\n c\n@@ -10,3 +10,3 @@\n j\n-y\n+K\n l\n",
            )],
        };
        let (scoped, _) = interdiff(&pr, Ok::<_, ()>(&cmp), &last(), 1);
        let f = &scoped.files()[0];
        let spans: Vec<(u32, u32, u32, u32)> = f
            .hunks
            .iter()
            .map(|h| (h.old_start, h.old_count, h.new_start, h.new_count))
            .collect();
        assert_eq!(spans, [(1, 5, 1, 5), (9, 4, 9, 4)]);
        let removed: Vec<&str> = scoped
            .file_lines(f)
            .filter(|l| l.kind == LineKind::Removed)
            .map(|l| l.text)
            .collect();
        assert_eq!(removed, ["b", "k"]);
    }

    #[test]
    fn everything_again_when_the_interdiff_cannot_be_trusted() {
        let diff = pr_diff();
        let rewritten = Comparison {
            status: "diverged".into(),
            files: Vec::new(),
        };
        let capped = Comparison {
            status: "ahead".into(),
            files: (0..COMPARE_FILE_CAP)
                .map(|i| file(&format!("f{i}.rs"), "@@ -1 +1,2 @@\n x\n+y\n"))
                .collect(),
        };
        let cases = [
            (Err(()), Rescope::Unreachable),
            (Ok(&rewritten), Rescope::Rewritten),
            (Ok(&capped), Rescope::TooManyFiles),
        ];
        for (cmp, why) in cases {
            let (scoped, scope) = interdiff(&diff, cmp, &last(), 2);
            assert_eq!(scope.everything, Some(why));
            assert_eq!(scoped.files().len(), 2);
        }
    }
}
