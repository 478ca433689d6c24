//! Scope: what a round reviews. A first round reviews the PR's whole diff; a later one the PR's
//! hunks that hold a line added since the last reviewed head. No I/O: the PR's files and the
//! compare result come in gathered.

use std::collections::{BTreeMap, BTreeSet};

use crate::diff::{Diff, LineKind, ParseError, PatchFile};
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
    (scoped, scope(None))
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
