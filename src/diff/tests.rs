//! Tests of the diff parser and model: hand-written cases, the real-git corpus in
//! `fixtures/diffs/`, and property tests.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::*;

fn parse(text: &str) -> Diff {
    match Diff::parse(text) {
        Ok(d) => d,
        Err(e) => panic!("parse failed: {e}\n---\n{text}"),
    }
}

fn parse_err(text: &str) -> ParseError {
    match Diff::parse(text) {
        Ok(d) => panic!("expected an error, parsed {:#?}", d.files()),
        Err(e) => e,
    }
}

type L = (LineKind, Option<u32>, Option<u32>, String);

fn lines_of(diff: &Diff, hunk: &Hunk) -> Vec<L> {
    diff.hunk_lines(hunk)
        .map(|l| (l.kind, l.old, l.new, l.text.to_owned()))
        .collect()
}

fn ctx(old: u32, new: u32, t: &str) -> L {
    (LineKind::Context, Some(old), Some(new), t.to_owned())
}
fn add(new: u32, t: &str) -> L {
    (LineKind::Added, None, Some(new), t.to_owned())
}
fn rem(old: u32, t: &str) -> L {
    (LineKind::Removed, Some(old), None, t.to_owned())
}

fn numbers(h: &Hunk) -> (u32, u32, u32, u32) {
    (h.old_start, h.old_count, h.new_start, h.new_count)
}

/// Commentable lines of `side`, probed over 0..=limit.
fn commentable(f: &FileDiff, side: Side, limit: u32) -> Vec<u32> {
    (0..=limit).filter(|&l| f.is_commentable(side, l)).collect()
}

// --- basic shapes ---------------------------------------------------------------------------

#[test]
fn empty_and_blank_input_is_an_empty_diff() {
    assert!(parse("").files().is_empty());
    assert!(parse("\n\n  \r\n").files().is_empty());
}

const MODIFY: &str = "\
diff --git a/src/lib.rs b/src/lib.rs
index 1111111..2222222 100644
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,4 +1,5 @@ mod a;
 one
-two
+deux
+zwei
 three

@@ -10,2 +11,2 @@ fn main() {
-ten
+TEN
 eleven
";

#[test]
fn modified_file_lines_numbers_and_commentable() {
    let d = parse(MODIFY);
    assert_eq!(d.files().len(), 1);
    let f = &d.files()[0];
    assert_eq!(f.status, FileStatus::Modified);
    assert_eq!(f.old_path.as_deref(), Some("src/lib.rs"));
    assert_eq!(f.new_path.as_deref(), Some("src/lib.rs"));
    assert_eq!(f.path(), "src/lib.rs");
    assert_eq!(f.old_mode.as_deref(), Some("100644"));
    assert_eq!(f.new_mode.as_deref(), Some("100644"));
    assert!(!f.binary);
    assert_eq!(f.hunks.len(), 2);
    assert_eq!(numbers(&f.hunks[0]), (1, 4, 1, 5));
    assert_eq!(numbers(&f.hunks[1]), (10, 2, 11, 2));
    assert_eq!(d.hunk_section(&f.hunks[0]), "mod a;");
    assert_eq!(d.hunk_section(&f.hunks[1]), "fn main() {");
    assert_eq!(d.hunk_header(&f.hunks[1]), "@@ -10,2 +11,2 @@ fn main() {");
    assert_eq!(
        lines_of(&d, &f.hunks[0]),
        vec![
            ctx(1, 1, "one"),
            rem(2, "two"),
            add(2, "deux"),
            add(3, "zwei"),
            ctx(3, 4, "three"),
            // The empty line is a context line whose leading space was stripped.
            ctx(4, 5, ""),
        ]
    );
    assert_eq!(
        lines_of(&d, &f.hunks[1]),
        vec![rem(10, "ten"), add(11, "TEN"), ctx(11, 12, "eleven")]
    );
    assert_eq!(commentable(f, Side::Right, 20), vec![1, 2, 3, 4, 5, 11, 12]);
    assert_eq!(commentable(f, Side::Left, 20), vec![1, 2, 3, 4, 10, 11]);
    assert_eq!(d.line_text(f, Side::Right, 3), Some("zwei"));
    assert_eq!(d.line_text(f, Side::Left, 10), Some("ten"));
    assert_eq!(d.line_text(f, Side::Left, 5), None);
    assert_eq!(d.file_text(f), MODIFY);
    assert_eq!(d.file("src/lib.rs"), Some(f));
}

#[test]
fn several_files_keep_their_own_text() {
    let second = "\
diff --git a/b.txt b/b.txt
--- a/b.txt
+++ b/b.txt
@@ -3 +3 @@
-x
+y
";
    let text = format!("{MODIFY}{second}");
    let d = parse(&text);
    assert_eq!(d.files().len(), 2);
    assert_eq!(d.file_text(&d.files()[0]), MODIFY);
    assert_eq!(d.file_text(&d.files()[1]), second);
    let f = d.file("b.txt").unwrap();
    assert_eq!(numbers(&f.hunks[0]), (3, 1, 3, 1));
    assert_eq!(lines_of(&d, &f.hunks[0]), vec![rem(3, "x"), add(3, "y")]);
    assert_eq!(commentable(f, Side::Right, 10), vec![3]);
}

#[test]
fn subset_and_retain_rebase_the_text() {
    let second = "diff --git a/b.txt b/b.txt\n--- a/b.txt\n+++ b/b.txt\n@@ -3 +3 @@ sec\n-x\n+y\n";
    let d = parse(&format!("{MODIFY}{second}"));
    let sub = d.subset(|i, _| i == 1);
    assert_eq!(sub.text(), second);
    assert_eq!(sub.files().len(), 1);
    let f = &sub.files()[0];
    assert_eq!(sub.file_text(f), second);
    assert_eq!(sub.hunk_section(&f.hunks[0]), "sec");
    assert_eq!(lines_of(&sub, &f.hunks[0]), vec![rem(3, "x"), add(3, "y")]);

    let mut all = d.clone();
    all.retain(|f| f.path() == "src/lib.rs");
    assert_eq!(all.files().len(), 1);
    // `retain` copies nothing; a subset of what is left has the kept file's text alone.
    assert_eq!(all.text(), d.text());
    assert_eq!(all.subset(|_, _| true).text(), MODIFY);
    assert_eq!(
        lines_of(&all, &all.files()[0].hunks[1]),
        lines_of(&d, &d.files()[0].hunks[1])
    );
    assert!(d.subset(|_, _| false).files().is_empty());
}

#[test]
fn pure_rename_has_no_hunks() {
    let d = parse(
        "diff --git a/old/name.rs b/new/name.rs\nsimilarity index 100%\nrename from old/name.rs\n\
         rename to new/name.rs\n",
    );
    let f = &d.files()[0];
    assert_eq!(
        f.status,
        FileStatus::Renamed {
            similarity: Some(100)
        }
    );
    assert_eq!(f.old_path.as_deref(), Some("old/name.rs"));
    assert_eq!(f.new_path.as_deref(), Some("new/name.rs"));
    assert!(f.hunks.is_empty());
    assert!(!f.is_commentable(Side::Right, 1));
    assert_eq!(d.file("old/name.rs"), Some(f));
}

#[test]
fn rename_with_edit_and_copy() {
    let d = parse(
        "\
diff --git a/a.txt b/b.txt
similarity index 87%
rename from a.txt
rename to b.txt
index 1..2 100644
--- a/a.txt
+++ b/b.txt
@@ -2,1 +2,1 @@
-x
+y
diff --git a/t.txt b/t2.txt
similarity index 95%
copy from t.txt
copy to t2.txt
",
    );
    let f = &d.files()[0];
    assert_eq!(
        f.status,
        FileStatus::Renamed {
            similarity: Some(87)
        }
    );
    assert_eq!(
        (f.old_path.as_deref(), f.new_path.as_deref()),
        (Some("a.txt"), Some("b.txt"))
    );
    assert_eq!(lines_of(&d, &f.hunks[0]), vec![rem(2, "x"), add(2, "y")]);
    let c = &d.files()[1];
    assert_eq!(
        c.status,
        FileStatus::Copied {
            similarity: Some(95)
        }
    );
    assert_eq!(
        (c.old_path.as_deref(), c.new_path.as_deref()),
        (Some("t.txt"), Some("t2.txt"))
    );
}

#[test]
fn mode_only_change() {
    let d = parse("diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n");
    let f = &d.files()[0];
    assert_eq!(f.status, FileStatus::Modified);
    assert_eq!(f.old_mode.as_deref(), Some("100644"));
    assert_eq!(f.new_mode.as_deref(), Some("100755"));
    assert!(f.hunks.is_empty());
    assert_eq!(f.path(), "run.sh");
}

#[test]
fn added_and_deleted_files_comment_on_one_side_only() {
    let d = parse(
        "\
diff --git a/new.txt b/new.txt
new file mode 100755
index 0000000..1111111
--- /dev/null
+++ b/new.txt
@@ -0,0 +1,2 @@
+a
+b
diff --git a/gone.txt b/gone.txt
deleted file mode 100644
index 1111111..0000000
--- a/gone.txt
+++ /dev/null
@@ -1,3 +0,0 @@
-x
-y
-z
diff --git a/empty.txt b/empty.txt
new file mode 100644
index 0000000..e69de29
",
    );
    let [added, deleted, empty] = d.files() else {
        panic!("3 files")
    };
    assert_eq!(added.status, FileStatus::Added);
    assert_eq!(
        (added.old_path.as_deref(), added.new_path.as_deref()),
        (None, Some("new.txt"))
    );
    assert_eq!(
        (added.old_mode.as_deref(), added.new_mode.as_deref()),
        (None, Some("100755"))
    );
    assert_eq!(
        lines_of(&d, &added.hunks[0]),
        vec![add(1, "a"), add(2, "b")]
    );
    assert_eq!(commentable(added, Side::Right, 5), vec![1, 2]);
    assert_eq!(commentable(added, Side::Left, 5), Vec::<u32>::new());

    assert_eq!(deleted.status, FileStatus::Deleted);
    assert_eq!(
        (deleted.old_path.as_deref(), deleted.new_path.as_deref()),
        (Some("gone.txt"), None)
    );
    assert_eq!(deleted.path(), "gone.txt");
    assert_eq!(commentable(deleted, Side::Left, 5), vec![1, 2, 3]);
    assert_eq!(commentable(deleted, Side::Right, 5), Vec::<u32>::new());

    assert_eq!(empty.status, FileStatus::Added);
    assert_eq!(empty.new_path.as_deref(), Some("empty.txt"));
    assert!(empty.hunks.is_empty());
}

#[test]
fn binary_files_are_flagged_and_git_binary_patches_skipped() {
    let d = parse(
        "\
diff --git a/img.png b/img.png
index 1111111..2222222 100644
Binary files a/img.png and b/img.png differ
diff --git a/blob.bin b/blob.bin
index 94540d0..ba8f550 100644
GIT binary patch
literal 17
YcmZQzWJ=1+ODw8naB&QA{Qpk?04NIuumAu6

literal 16
XcmZQzWJ=1+ODw8nNJ%V7{QnOCB%1~x

diff --git a/after.txt b/after.txt
--- a/after.txt
+++ b/after.txt
@@ -1 +1 @@
-a
+b
",
    );
    let [png, blob, after] = d.files() else {
        panic!("3 files")
    };
    assert!(png.binary && png.hunks.is_empty());
    assert!(blob.binary && blob.hunks.is_empty());
    assert_eq!(blob.path(), "blob.bin");
    assert!(!d.file_text(blob).contains("after.txt"));
    assert!(!after.binary);
    assert_eq!(
        lines_of(&d, &after.hunks[0]),
        vec![rem(1, "a"), add(1, "b")]
    );
}

#[test]
fn no_newline_markers_are_not_lines() {
    let d = parse(
        "\
diff --git a/x b/x
--- a/x
+++ b/x
@@ -1,2 +1,2 @@
 one
-two
\\ No newline at end of file
+two
\\ No newline at end of file
diff --git a/y b/y
--- a/y
+++ b/y
@@ -1 +1 @@
-y
+Y
",
    );
    assert_eq!(d.files().len(), 2);
    let f = &d.files()[0];
    assert_eq!(
        lines_of(&d, &f.hunks[0]),
        vec![ctx(1, 1, "one"), rem(2, "two"), add(2, "two")]
    );
    assert!(d.file_text(f).ends_with("\\ No newline at end of file\n"));
}

#[test]
fn crlf_headers_and_lines() {
    let text = MODIFY.replace('\n', "\r\n");
    let d = parse(&text);
    let f = &d.files()[0];
    assert_eq!(f.path(), "src/lib.rs");
    assert_eq!(f.old_mode.as_deref(), Some("100644"));
    assert_eq!(d.hunk_section(&f.hunks[0]), "mod a;");
    assert_eq!(lines_of(&d, &f.hunks[0])[1], rem(2, "two"));
    // The "\r\n" empty line is still a context line.
    assert_eq!(lines_of(&d, &f.hunks[0])[5], ctx(4, 5, ""));
    assert_eq!(f.hunks.len(), 2);
}

#[test]
fn quoted_paths_are_unquoted() {
    let d = parse(
        "\
diff --git \"a/caf\\303\\251 x.txt\" \"b/caf\\303\\251 x.txt\"
index 1..2 100644
--- \"a/caf\\303\\251 x.txt\"\t
+++ \"b/caf\\303\\251 x.txt\"\t
@@ -1 +1 @@
-a
+b
diff --git \"a/tab\\there\" \"b/q\\\"uote\\\\d\"
similarity index 100%
rename from \"tab\\there\"
rename to \"q\\\"uote\\\\d\"
diff --git \"a/bad\\377name\" \"a/bad\\377name\"
old mode 100644
new mode 100755
",
    );
    let [cafe, renamed, bad] = d.files() else {
        panic!("3 files")
    };
    assert_eq!(cafe.path(), "café x.txt");
    assert_eq!(cafe.old_path.as_deref(), Some("café x.txt"));
    assert_eq!(renamed.old_path.as_deref(), Some("tab\there"));
    assert_eq!(renamed.new_path.as_deref(), Some("q\"uote\\d"));
    assert_eq!(bad.path(), "bad\u{fffd}name");
}

#[test]
fn unquoted_paths_with_spaces() {
    let d = parse(
        "\
diff --git a/my file b/my file
index 1..2 100644
--- a/my file\t
+++ b/my file\t
@@ -1 +1 @@
-a
+b
diff --git a/dir b/x b/dir b/x
old mode 100644
new mode 100755
diff --git a/old name b/new name
similarity index 90%
rename from old name
rename to new name
--- a/old name\t
+++ b/new name\t
@@ -1 +1 @@
-a
+b
",
    );
    let [f, g, r] = d.files() else {
        panic!("3 files")
    };
    assert_eq!(
        (f.old_path.as_deref(), f.new_path.as_deref()),
        (Some("my file"), Some("my file"))
    );
    assert_eq!(g.path(), "dir b/x");
    assert_eq!(r.old_path.as_deref(), Some("old name"));
    assert_eq!(r.new_path.as_deref(), Some("new name"));
}

#[test]
fn asymmetric_unquoted_names_use_minus_plus_lines() {
    // No rename lines: the `---`/`+++` lines decide where the names split.
    let d = parse("diff --git a/x b/y b/x b/z\n--- a/x b/y\n+++ b/x b/z\n@@ -1 +1 @@\n-a\n+b\n");
    let f = &d.files()[0];
    assert_eq!(f.old_path.as_deref(), Some("x b/y"));
    assert_eq!(f.new_path.as_deref(), Some("x b/z"));
}

#[test]
fn no_prefix_diff_keeps_paths() {
    let d =
        parse("diff --git src/a.rs src/a.rs\n--- src/a.rs\n+++ src/a.rs\n@@ -1 +1 @@\n-a\n+b\n");
    assert_eq!(d.files()[0].path(), "src/a.rs");
    assert_eq!(d.files()[0].old_path.as_deref(), Some("src/a.rs"));
}

#[test]
fn omitted_counts_mean_one() {
    let d = parse("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n@@ -5 +5,0 @@\n-e\n");
    let f = &d.files()[0];
    assert_eq!(numbers(&f.hunks[0]), (1, 1, 1, 1));
    assert_eq!(numbers(&f.hunks[1]), (5, 1, 5, 0));
    assert_eq!(commentable(f, Side::Left, 9), vec![1, 5]);
    assert_eq!(commentable(f, Side::Right, 9), vec![1]);

    let d = parse(
        "diff --git a/n b/n\nnew file mode 100644\n--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+only\n",
    );
    let f = &d.files()[0];
    assert_eq!(numbers(&f.hunks[0]), (0, 0, 1, 1));
    assert_eq!(lines_of(&d, &f.hunks[0]), vec![add(1, "only")]);
}

#[test]
fn lines_that_look_like_headers_are_counted_as_hunk_lines() {
    let d = parse(
        "\
diff --git a/t b/t
--- a/t
+++ b/t
@@ -1,4 +1,4 @@
--- not a header
-+++ nor this
--- 
+diff --git a/x b/x
+@@ -1 +1 @@
++++ b/x
 -- 
diff --git a/u b/u
--- a/u
+++ b/u
@@ -1 +1 @@
-u
+U
",
    );
    let [t, u] = d.files() else { panic!("2 files") };
    assert_eq!(
        lines_of(&d, &t.hunks[0]),
        vec![
            rem(1, "-- not a header"),
            rem(2, "+++ nor this"),
            rem(3, "-- "),
            add(1, "diff --git a/x b/x"),
            add(2, "@@ -1 +1 @@"),
            add(3, "+++ b/x"),
            ctx(4, 4, "-- "),
        ]
    );
    assert_eq!(u.path(), "u");
}

#[test]
fn plain_unified_diff() {
    let d = parse(
        "\
Only in old: junk
diff -u old/a.c new/a.c
--- old/a.c\t2024-01-01 00:00:00.000000000 +0000
+++ new/a.c\t2024-01-02 00:00:00.000000000 +0000
@@ -1,2 +1,2 @@
 int x;
-int y;
+long y;
--- a/added.c
+++ b/added.c
@@ -0,0 +1 @@
+new
--- /dev/null
+++ b/created.c
@@ -0,0 +1 @@
+c
--- a/removed.c
+++ /dev/null
@@ -1 +0,0 @@
-r
",
    );
    let [a, added, created, removed] = d.files() else {
        panic!("4 files")
    };
    assert_eq!(a.old_path.as_deref(), Some("old/a.c"));
    assert_eq!(a.new_path.as_deref(), Some("new/a.c"));
    assert_eq!(
        lines_of(&d, &a.hunks[0]),
        vec![ctx(1, 1, "int x;"), rem(2, "int y;"), add(2, "long y;")]
    );
    assert!(d.file_text(a).starts_with("--- old/a.c"));
    assert_eq!(added.path(), "added.c");
    assert_eq!(added.status, FileStatus::Modified);
    assert_eq!(created.status, FileStatus::Added);
    assert_eq!(created.path(), "created.c");
    assert_eq!(removed.status, FileStatus::Deleted);
    assert_eq!(removed.path(), "removed.c");
}

#[test]
fn format_patch_mail_and_signature_are_skipped() {
    let text = "\
From 1234567890abcdef1234567890abcdef12345678 Mon Sep 17 00:00:00 2001
From: A U Thor <author@example.invalid>
Date: Tue, 2 Jan 2024 03:04:05 +0000
Subject: [PATCH] Fix it

Body text.
--- quoted
+++ quoted
 indented
---
 x | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/x b/x
index 1..2 100644
--- a/x
+++ b/x
@@ -1,2 +1,2 @@
--- a
+-- b
 keep
-- 
2.43.0

";
    let d = parse(text);
    assert_eq!(d.files().len(), 1);
    let f = &d.files()[0];
    assert_eq!(
        lines_of(&d, &f.hunks[0]),
        vec![rem(1, "-- a"), add(1, "-- b"), ctx(2, 2, "keep")]
    );
    assert!(d.file_text(f).starts_with("diff --git a/x b/x\n"));
    assert!(d.file_text(f).ends_with(" keep\n"));
}

#[test]
fn submodule_lines_are_ordinary() {
    let d = parse(
        "diff --git a/sub b/sub\nnew file mode 160000\nindex 0000000..5476558\n--- /dev/null\n\
         +++ b/sub\n@@ -0,0 +1 @@\n+Subproject commit 5476558fb310be162e8e1682bfb35f6a5e240327\n",
    );
    let f = &d.files()[0];
    assert_eq!(f.status, FileStatus::Added);
    assert_eq!(f.new_mode.as_deref(), Some("160000"));
    assert_eq!(f.hunks.len(), 1);
}

// --- errors ---------------------------------------------------------------------------------

#[test]
fn hunk_before_any_file_header_is_an_error() {
    let e = parse_err("@@ -1 +1 @@\n-a\n+b\n");
    assert_eq!(e.line, 1);
    assert!(e.message.contains("hunk before any file header"), "{e}");
}

#[test]
fn garbage_is_not_a_unified_diff() {
    let e = parse_err("hello\nworld\n");
    assert_eq!(
        e.to_string(),
        "line 1: not a unified diff: no \"diff --git\" or \"---\"/\"+++\" file header found"
    );
}

#[test]
fn a_coloured_diff_is_flagged_as_such() {
    let e =
        parse_err("\x1b[1mdiff --git a/x b/x\x1b[m\n\x1b[1m--- a/x\x1b[m\n\x1b[1m+++ b/x\x1b[m\n");
    assert!(e.coloured, "{e:?}");
    assert!(!parse_err("hello\nworld\n").coloured);
    // An escape inside a line is content, not colour.
    assert!(!parse_err("say \x1b[31mred\n").coloured);
}

#[test]
fn truncated_hunk() {
    let e = parse_err("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n-b\n");
    assert_eq!(e.line, 7);
    assert!(
        e.message
            .contains("input ends inside hunk \"@@ -1,3 +1,3 @@\" (line 4)"),
        "{e}"
    );
    assert!(e.message.contains("1 old and 2 new lines missing"), "{e}");
}

#[test]
fn overflowing_numbers() {
    let header = "diff --git a/x b/x\n--- a/x\n+++ b/x\n";
    let e = parse_err(&format!(
        "{header}@@ -2 +000000000000018446744073709551615 @@\n"
    ));
    assert_eq!(e.line, 4);
    assert!(e.message.contains("does not fit in 32 bits"), "{e}");
    let e = parse_err(&format!("{header}@@ -1,4294967295 +1 @@\n"));
    assert!(e.message.contains("line range overflows"), "{e}");
    let e = parse_err(&format!("{header}@@ -4294967295,1 +1 @@\n-a\n+b\n"));
    assert!(e.message.contains("line range overflows"), "{e}");
    let e = parse_err(&format!("{header}@@ -0,2 +1 @@\n-a\n+b\n"));
    assert!(e.message.contains("starts at line 0"), "{e}");
    // The largest range that fits is fine (and commentable at its end).
    let d = parse(&format!(
        "{header}@@ -4294967294,1 +4294967294 @@\n-a\n+b\n"
    ));
    assert!(d.files()[0].is_commentable(Side::Right, u32::MAX - 1));
    assert!(!d.files()[0].is_commentable(Side::Right, u32::MAX));
}

#[test]
fn malformed_hunk_headers() {
    for bad in [
        "@@ -1,3 +1,4",
        "@@ -a +1 @@",
        "@@ 1 +1 @@",
        "@@ -1, +1 @@",
        "@@ -1 1 @@",
        "@@",
    ] {
        let e = parse_err(&format!("diff --git a/x b/x\n--- a/x\n+++ b/x\n{bad}\n"));
        assert_eq!(e.line, 4, "{bad}");
        assert!(e.message.contains("is malformed"), "{bad}: {e}");
    }
    let e = parse_err("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,3 +1,4\n");
    assert_eq!(
        e.to_string(),
        "line 4: hunk header \"@@ -1,3 +1,4\" is malformed"
    );
}

#[test]
fn unexpected_line_in_hunk() {
    let e = parse_err("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n*b\n");
    assert_eq!(e.line, 6);
    assert!(e.message.contains("found \"*b\""), "{e}");
}

#[test]
fn more_lines_than_counted() {
    // An added line where only removals are left.
    let e = parse_err("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1 @@\n-a\n+b\n+c\n");
    assert_eq!(e.line, 7);
    assert!(e.message.contains("more added lines"), "{e}");
    // A stray hunk line after a complete hunk.
    let e = parse_err("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n+c\n");
    assert_eq!(e.line, 7);
    assert!(e.message.contains("after the end of hunk"), "{e}");
}

#[test]
fn overlapping_hunks_are_rejected() {
    let e = parse_err(
        "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -5 +5 @@\n-a\n+b\n@@ -1 +1 @@\n-a\n+b\n",
    );
    assert_eq!(e.line, 7);
    assert!(e.message.contains("overlaps or precedes"), "{e}");
}

#[test]
fn combined_diffs_are_rejected() {
    let e = parse_err("diff --cc x\nindex 1,2..3\n@@@ -1,1 -1,1 +1,1 @@@\n");
    assert!(e.message.contains("combined"), "{e}");
}

#[test]
fn errors_display_on_one_line() {
    let e = parse_err("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n\u{1}\n\n");
    let s = e.to_string();
    assert!(!s.contains('\n'), "{s}");
    assert!(s.starts_with("line 5: "), "{s}");
}

// --- from_patches ---------------------------------------------------------------------------

fn patch_file<'p>(
    filename: &'p str,
    previous: Option<&'p str>,
    status: &'p str,
    patch: Option<&'p str>,
) -> PatchFile<'p> {
    PatchFile {
        filename,
        previous_filename: previous,
        status,
        patch,
    }
}

#[test]
fn from_patches_builds_files() {
    let d = Diff::from_patches([
        patch_file(
            "src/a.rs",
            None,
            "modified",
            Some("@@ -1,2 +1,2 @@ fn a()\n x\n-y\n+z"),
        ),
        patch_file(
            "new.txt",
            None,
            "added",
            Some("@@ -0,0 +1 @@\n+hi\n\\ No newline at end of file"),
        ),
        patch_file("gone.txt", None, "removed", Some("@@ -1 +0,0 @@\n-bye\n")),
        patch_file("img.png", None, "added", None),
        patch_file("b.rs", Some("a b.rs"), "renamed", None),
        patch_file("c.rs", Some("b.rs"), "copied", Some("")),
        patch_file("d.rs", None, "changed", None),
        patch_file("e.rs", None, "unchanged", None),
    ])
    .unwrap();
    let files = d.files();
    assert_eq!(files.len(), 8);
    let a = &files[0];
    assert_eq!(a.status, FileStatus::Modified);
    assert_eq!(
        lines_of(&d, &a.hunks[0]),
        vec![ctx(1, 1, "x"), rem(2, "y"), add(2, "z")]
    );
    assert_eq!(d.hunk_section(&a.hunks[0]), "fn a()");
    assert_eq!(files[1].status, FileStatus::Added);
    assert_eq!(files[1].old_path, None);
    assert_eq!(commentable(&files[1], Side::Right, 3), vec![1]);
    assert_eq!(files[2].status, FileStatus::Deleted);
    assert_eq!(files[2].new_path, None);
    assert_eq!(commentable(&files[2], Side::Left, 3), vec![1]);
    assert!(files[3].hunks.is_empty() && !files[3].binary);
    assert_eq!(files[4].status, FileStatus::Renamed { similarity: None });
    assert_eq!(files[4].old_path.as_deref(), Some("a b.rs"));
    assert_eq!(files[5].status, FileStatus::Copied { similarity: None });
    assert_eq!(files[6].status, FileStatus::Modified);
    assert_eq!(files[7].status, FileStatus::Modified);

    // The synthesized text is itself a diff describing the same files.
    let again = parse(d.text());
    assert_eq!(again.files().len(), files.len());
    for (x, y) in again.files().iter().zip(files) {
        assert_eq!(x.old_path, y.old_path);
        assert_eq!(x.new_path, y.new_path);
        assert_eq!(x.status, y.status);
        assert_eq!(
            x.hunks.iter().map(numbers).collect::<Vec<_>>(),
            y.hunks.iter().map(numbers).collect::<Vec<_>>()
        );
        assert_eq!(d.file_text(y), again.file_text(x));
    }
}

#[test]
fn from_patches_errors_name_the_file() {
    let e = Diff::from_patches([
        patch_file("ok.rs", None, "modified", Some("@@ -1 +1 @@\n-a\n+b")),
        patch_file(
            "bad.rs",
            None,
            "modified",
            Some("@@ -1 +1 @@\n-a\n+b\n@@ -9,2 +9,2 @@\n x\n"),
        ),
    ])
    .unwrap_err();
    assert_eq!(e.file.as_deref(), Some("bad.rs"));
    assert_eq!(e.line, 6);
    assert!(
        e.to_string()
            .starts_with("file \"bad.rs\", line 6: input ends inside hunk"),
        "{e}"
    );

    let e = Diff::from_patches([patch_file("x", None, "sideways", None)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "file \"x\", line 1: unknown file status \"sideways\""
    );

    let e = Diff::from_patches([patch_file(
        "x",
        None,
        "modified",
        Some("diff --git a/x b/x\n"),
    )])
    .unwrap_err();
    assert!(e.message.contains("expected a hunk header"), "{e}");
}

// --- the real-git corpus ----------------------------------------------------------------------

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/diffs");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "diff"))
        .collect();
    v.sort();
    v
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// What must hold for any parsed diff.
fn check_invariants(d: &Diff) {
    let mut prev_end = 0;
    for f in d.files() {
        assert!(d.text().get(f.text.clone()).is_some(), "{f:?}");
        assert!(f.text.start >= prev_end, "file texts overlap");
        prev_end = f.text.end;
        assert!(!f.path().is_empty() || f.old_path.is_none() && f.new_path.is_none());
        match f.status {
            FileStatus::Added => assert!(f.old_path.is_none() && f.new_path.is_some()),
            FileStatus::Deleted => assert!(f.new_path.is_none() && f.old_path.is_some()),
            _ => assert!(f.old_path.is_some() && f.new_path.is_some()),
        }
        if f.binary {
            assert!(f.hunks.is_empty());
        }
        for (i, h) in f.hunks.iter().enumerate() {
            assert!(f.text.start <= h.header.start && h.body.end <= f.text.end);
            assert!(d.hunk_header(h).starts_with("@@ -"));
            let (mut old, mut new) = (0, 0);
            for l in d.hunk_lines(h) {
                if let Some(o) = l.old {
                    assert!(h.range(Side::Left).contains(&o), "{l:?} outside {h:?}");
                    assert_eq!(f.hunk_index(Side::Left, o), Some(i));
                    old += 1;
                }
                if let Some(n) = l.new {
                    assert!(h.range(Side::Right).contains(&n), "{l:?} outside {h:?}");
                    assert_eq!(f.hunk_index(Side::Right, n), Some(i));
                    new += 1;
                }
                assert!(!l.text.contains('\n') && !l.text.ends_with('\r'));
            }
            assert_eq!(
                (old, new),
                (h.old_count, h.new_count),
                "{}",
                d.hunk_header(h)
            );
        }
        for side in [Side::Left, Side::Right] {
            let max = f.hunks.iter().map(|h| h.range(side).end).max().unwrap_or(0);
            for line in 0..=max.saturating_add(2) {
                let inside = f.hunks.iter().any(|h| h.range(side).contains(&line));
                assert_eq!(f.is_commentable(side, line), inside, "{side:?} {line}");
            }
        }
        if f.status == FileStatus::Added {
            assert!(f.hunks.iter().all(|h| h.range(Side::Left).is_empty()));
        }
        if f.status == FileStatus::Deleted {
            assert!(f.hunks.iter().all(|h| h.range(Side::Right).is_empty()));
        }
        // Each file's text is a diff of that file alone.
        let alone = parse(d.file_text(f));
        assert_eq!(alone.files().len(), 1);
        let g = &alone.files()[0];
        assert_eq!(
            (&g.old_path, &g.new_path, &g.status, g.binary),
            (&f.old_path, &f.new_path, &f.status, f.binary)
        );
        assert_eq!(
            g.hunks.iter().map(numbers).collect::<Vec<_>>(),
            f.hunks.iter().map(numbers).collect::<Vec<_>>()
        );
    }
}

/// A compact, reviewable rendering of a parsed diff for snapshots.
fn summary(d: &Diff) -> String {
    let mut s = String::new();
    for f in d.files() {
        let _ = writeln!(
            s,
            "{:?} old={:?} new={:?} mode={:?}->{:?}{}",
            f.status,
            f.old_path,
            f.new_path,
            f.old_mode,
            f.new_mode,
            if f.binary { " BINARY" } else { "" }
        );
        for h in &f.hunks {
            let _ = writeln!(
                s,
                "  @@ -{},{} +{},{} @@ section={:?}",
                h.old_start,
                h.old_count,
                h.new_start,
                h.new_count,
                d.hunk_section(h)
            );
            for l in d.hunk_lines(h) {
                let kind = match l.kind {
                    LineKind::Context => ' ',
                    LineKind::Added => '+',
                    LineKind::Removed => '-',
                };
                let n = |x: Option<u32>| x.map_or("-".to_owned(), |n| n.to_string());
                let _ = writeln!(s, "    {kind} {:>3} {:>3} {:?}", n(l.old), n(l.new), l.text);
            }
        }
    }
    s
}

#[test]
fn fixture_corpus() {
    let all = fixtures();
    assert!(all.len() >= 20, "fixtures missing: {all:?}");
    for p in all {
        let text = read(&p);
        let d = Diff::parse(text.as_str()).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert!(!d.files().is_empty(), "{}", p.display());
        check_invariants(&d);
        let name = p.file_stem().unwrap().to_str().unwrap().to_owned();
        insta::with_settings!({ prepend_module_to_snapshot => false, omit_expression => true }, {
            insta::assert_snapshot!(name, summary(&d));
        });
    }
}

#[test]
fn fixture_specifics() {
    let get = |name: &str| {
        parse(&read(
            &Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fixtures/diffs")
                .join(name),
        ))
    };

    let d = get("rename-pure.diff");
    let f = &d.files()[0];
    assert_eq!(
        f.status,
        FileStatus::Renamed {
            similarity: Some(100)
        }
    );
    assert_eq!(f.new_path.as_deref(), Some("src/gamma-renamed.txt"));
    assert!(f.hunks.is_empty());

    let d = get("copy.diff");
    assert!(matches!(d.files()[0].status, FileStatus::Copied { similarity: Some(s) } if s >= 90));

    let d = get("binary-patch.diff");
    assert_eq!(d.files().len(), 2);
    assert!(d.files().iter().all(|f| f.binary && f.hunks.is_empty()));
    assert_eq!(d.files()[1].status, FileStatus::Added);

    let d = get("crlf.diff");
    let f = &d.files()[0];
    assert_eq!(d.line_text(f, Side::Right, 2), Some("second, edited"));
    assert_eq!(d.line_text(f, Side::Right, 5), Some("fifth"));

    let d = get("unicode-path.diff");
    assert_eq!(d.files()[0].path(), "docs/café menu.txt");
    assert_eq!(
        d.files()[1].old_path.as_deref(),
        Some("docs/say \"hi\".txt")
    );
    assert_eq!(
        d.files()[1].new_path.as_deref(),
        Some("docs/say \"bye\".txt")
    );

    let d = get("spaces-rename.diff");
    assert_eq!(d.files()[0].old_path.as_deref(), Some("docs/my notes.txt"));
    assert_eq!(
        d.files()[0].new_path.as_deref(),
        Some("docs/your notes.txt")
    );

    let d = get("mode-change.diff");
    let modes: Vec<_> = d
        .files()
        .iter()
        .map(|f| (f.old_mode.as_deref(), f.new_mode.as_deref(), f.hunks.len()))
        .collect();
    assert_eq!(
        modes,
        vec![
            (Some("100644"), Some("100755"), 1),
            (Some("100644"), Some("100755"), 0)
        ]
    );

    let d = get("zero-context.diff");
    assert_eq!(
        d.hunk_section(&d.files()[0].hunks[0]),
        "static int add(int a, int b)"
    );

    for name in ["format-patch.diff", "format-patch-nosig.diff"] {
        let d = get(name);
        let paths: Vec<_> = d.files().iter().map(FileDiff::path).collect();
        assert!(
            paths.contains(&"src/new file.txt") && paths.contains(&"docs/café menu.txt"),
            "{name}: {paths:?}"
        );
        assert!(
            !paths.iter().any(|p| p.contains("not a header")),
            "{name}: {paths:?}"
        );
    }

    let d = get("submodule-update.diff");
    assert_eq!(d.files()[0].new_mode.as_deref(), Some("160000"));
}

// --- property tests -------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct GenHunk {
    /// Unchanged lines skipped before this hunk (at least 1 between hunks, as git merges
    /// adjacent ones).
    gap: u32,
    lines: Vec<(LineKind, String)>,
}

#[derive(Debug, Clone)]
struct GenFile {
    path: String,
    hunks: Vec<GenHunk>,
}

fn line_strategy() -> impl Strategy<Value = (LineKind, String)> {
    (
        prop_oneof![
            Just(LineKind::Context),
            Just(LineKind::Added),
            Just(LineKind::Removed)
        ],
        // Content may itself look like diff syntax.
        "(-- |--- |\\+\\+\\+ |@@ |diff --git |\\\\ )?[a-zé \\t@+-]{0,12}",
    )
}

fn file_strategy() -> impl Strategy<Value = GenFile> {
    (
        "[a-z]{1,6}(/[a-z]{1,6})?( [a-zé]{1,4})?\\.txt",
        prop::collection::vec(
            (0u32..4, prop::collection::vec(line_strategy(), 1..8))
                .prop_map(|(gap, lines)| GenHunk { gap, lines }),
            0..4,
        ),
    )
        .prop_map(|(path, hunks)| GenFile { path, hunks })
}

/// Renders hunks (headers and bodies); returns the text and the expected parsed lines.
fn render_hunks(f: &GenFile, strip_empty: bool, eol: &str) -> (String, Vec<Vec<L>>) {
    let mut text = String::new();
    let mut expected = Vec::new();
    let (mut old, mut new) = (1u32, 1u32);
    for (i, h) in f.hunks.iter().enumerate() {
        let gap = if i == 0 { h.gap } else { h.gap + 1 };
        old += gap;
        new += gap;
        let old_count = h.lines.iter().filter(|l| l.0 != LineKind::Added).count() as u32;
        let new_count = h.lines.iter().filter(|l| l.0 != LineKind::Removed).count() as u32;
        // An empty side names the line before it (git's convention).
        let old_start = if old_count == 0 { old - 1 } else { old };
        let new_start = if new_count == 0 { new - 1 } else { new };
        let _ = write!(
            text,
            "@@ -{old_start},{old_count} +{new_start},{new_count} @@{eol}"
        );
        let mut lines = Vec::new();
        for (kind, t) in &h.lines {
            let (prefix, l) = match kind {
                LineKind::Context => {
                    old += 1;
                    new += 1;
                    (" ", ctx(old - 1, new - 1, t))
                }
                LineKind::Added => {
                    new += 1;
                    ("+", add(new - 1, t))
                }
                LineKind::Removed => {
                    old += 1;
                    ("-", rem(old - 1, t))
                }
            };
            if strip_empty && prefix == " " && t.is_empty() {
                text.push_str(eol);
            } else {
                let _ = write!(text, "{prefix}{t}{eol}");
            }
            lines.push(l);
        }
        expected.push(lines);
    }
    (text, expected)
}

fn check_generated(
    d: &Diff,
    files: &[GenFile],
    expected: &[Vec<Vec<L>>],
) -> Result<(), TestCaseError> {
    prop_assert_eq!(d.files().len(), files.len());
    for ((f, g), exp) in d.files().iter().zip(files).zip(expected) {
        prop_assert_eq!(f.path(), g.path.as_str());
        prop_assert_eq!(f.hunks.len(), exp.len());
        for (h, lines) in f.hunks.iter().zip(exp) {
            prop_assert_eq!(&lines_of(d, h), lines);
            for l in d.hunk_lines(h) {
                if let Some(o) = l.old {
                    prop_assert!(h.range(Side::Left).contains(&o));
                    prop_assert!(f.is_commentable(Side::Left, o));
                }
                if let Some(n) = l.new {
                    prop_assert!(h.range(Side::Right).contains(&n));
                    prop_assert!(f.is_commentable(Side::Right, n));
                }
            }
        }
        for side in [Side::Left, Side::Right] {
            for line in 0..60 {
                if f.is_commentable(side, line) {
                    prop_assert!(f.hunks.iter().any(|h| h.range(side).contains(&line)));
                }
            }
        }
    }
    Ok(())
}

fn unique_paths(files: Vec<GenFile>) -> Vec<GenFile> {
    files
        .into_iter()
        .enumerate()
        .map(|(i, mut f)| {
            f.path = format!("{i}/{}", f.path);
            f
        })
        .collect()
}

/// A diff parsed in pieces (every `diff --git` line starting one, the smallest there can be)
/// gives the files of the whole parsed at once, and fails where that fails (its error then
/// comes from the whole).
fn parses_the_same_in_pieces(text: &str) -> Result<(), TestCaseError> {
    let whole = Diff::parse(text.to_owned());
    match super::parse::parse_in_pieces(text.as_bytes(), 1) {
        Some(files) => prop_assert_eq!(Ok(&files[..]), whole.as_ref().map(|d| d.files())),
        // One piece only, or a piece that fails: the whole must fail too, unless it is one piece.
        None => prop_assert!(
            whole.is_err()
                || memchr::memmem::find(
                    text.as_bytes().get(1..).unwrap_or_default(),
                    b"\ndiff --git "
                )
                .is_none(),
            "pieces failed where the whole parses"
        ),
    }
    Ok(())
}

#[test]
fn every_fixture_parses_the_same_in_pieces() {
    let fixtures = fixtures();
    assert!(fixtures.len() > 5);
    for path in fixtures {
        parses_the_same_in_pieces(&read(&path))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// The decode of `bytes` is `String::from_utf8_lossy`'s, and `utf8` takes exactly the bytes
/// that are UTF-8.
fn decodes_as_from_utf8_lossy(bytes: &[u8]) -> Result<(), TestCaseError> {
    let expected = String::from_utf8_lossy(bytes);
    prop_assert_eq!(super::lossy_text(bytes), expected.as_ref());
    prop_assert_eq!(super::utf8(bytes), std::str::from_utf8(bytes).ok());
    Ok(())
}

// 256 cases each by default; `PROPTEST_CASES=20000` for a longer run.
proptest! {
    #[test]
    fn lossy_text_is_from_utf8_lossy_on_any_bytes(
        pieces in prop::collection::vec(prop_oneof![
            any::<u8>().prop_map(|b| vec![b]),
            "[ -~\n]{0,12}".prop_map(String::into_bytes),
            any::<char>().prop_map(|c| c.to_string().into_bytes()),
            // A character cut short, at the end or before more text.
            any::<char>().prop_map(|c| {
                let b = c.to_string().into_bytes();
                b[..b.len().saturating_sub(1)].to_vec()
            }),
        ], 0..64),
    ) {
        decodes_as_from_utf8_lossy(&pieces.concat())?;
    }

    /// Blocks are decoded at a time: a sequence, good or bad, cut by a block's end, and bad
    /// bytes on either side of it.
    #[test]
    fn a_decode_across_block_ends_is_from_utf8_lossy(
        // Up to a few bytes short of a block's end, so what follows straddles it.
        ascii in (1..3usize, 0..6usize).prop_map(|(n, back)| n * super::decode::LOSSY_BLOCK - back),
        tail in prop::collection::vec(prop_oneof![
            any::<u8>().prop_map(|b| vec![b]),
            any::<char>().prop_map(|c| c.to_string().into_bytes()),
            any::<char>().prop_map(|c| {
                let b = c.to_string().into_bytes();
                b[..b.len().saturating_sub(1)].to_vec()
            }),
        ], 0..8),
        more_ascii in 0..2 * super::decode::LOSSY_BLOCK,
        end in prop::collection::vec(any::<u8>(), 0..4),
    ) {
        let mut bytes = vec![b'a'; ascii];
        bytes.extend(tail.concat());
        bytes.extend(std::iter::repeat_n(b'b', more_ascii));
        bytes.extend(end);
        decodes_as_from_utf8_lossy(&bytes)?;
    }

    #[test]
    fn never_panics_on_arbitrary_text(s in any::<String>()) {
        let _ = Diff::parse(s);
    }

    #[test]
    fn never_panics_on_diffish_text(
        parts in prop::collection::vec(prop_oneof![
            Just("diff --git a/x b/x\n".to_owned()),
            Just("diff --git \"a/\\303\\251\" b/\\\n".to_owned()),
            Just("--- a/x\n".to_owned()),
            Just("+++ b/x\n".to_owned()),
            Just("GIT binary patch\n".to_owned()),
            Just("\\ No newline at end of file\n".to_owned()),
            "@@ -[0-9]{1,3}(,[0-9]{1,3})? \\+[0-9]{1,3}(,[0-9]{1,3})? @@[a-z ]{0,3}\r?\n",
            "[-+ \\\\]?[a-z]{0,3}\r?\n",
            "[\\x00-\\x7f]{0,5}",
        ], 0..30)
    ) {
        let _ = Diff::parse(parts.concat());
    }

    #[test]
    fn never_panics_on_mutated_fixtures(
        which in any::<prop::sample::Index>(),
        cut in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), "[-+ @\\\\\n0-9a,]{0,4}"), 0..4),
    ) {
        let all = fixtures();
        let path: &PathBuf = which.get(&all);
        let mut text = read(path);
        for (at, insert) in edits {
            let mut i = at.index(text.len() + 1);
            while !text.is_char_boundary(i) { i -= 1; }
            text.insert_str(i, &insert);
        }
        let mut end = cut.index(text.len() + 1);
        while !text.is_char_boundary(end) { end -= 1; }
        text.truncate(end);
        parses_the_same_in_pieces(&text)?;
        if let Ok(d) = Diff::parse(text) {
            for f in d.files() {
                for h in &f.hunks {
                    prop_assert_eq!(d.hunk_lines(h).filter(|l| l.old.is_some()).count() as u32, h.old_count);
                }
            }
        }
    }

    #[test]
    fn generated_diffs_round_trip(
        files in prop::collection::vec(file_strategy(), 1..5),
        strip_empty in any::<bool>(),
        crlf in any::<bool>(),
    ) {
        let files = unique_paths(files);
        let eol = if crlf { "\r\n" } else { "\n" };
        let mut text = String::new();
        let mut expected = Vec::new();
        for f in &files {
            let q = |prefix: &str| super::parse::quote(prefix, &f.path);
            let _ = write!(text, "diff --git {} {}{eol}index 1..2 100644{eol}", q("a/"), q("b/"));
            if !f.hunks.is_empty() {
                let _ = write!(text, "--- {}{eol}+++ {}{eol}", q("a/"), q("b/"));
            }
            let (body, exp) = render_hunks(f, strip_empty, eol);
            text.push_str(&body);
            expected.push(exp);
        }
        parses_the_same_in_pieces(&text)?;
        let d = Diff::parse(text.as_str()).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        check_generated(&d, &files, &expected)?;
    }

    #[test]
    fn generated_patches_round_trip(files in prop::collection::vec(file_strategy(), 1..5)) {
        let files = unique_paths(files);
        let rendered: Vec<_> = files.iter().map(|f| render_hunks(f, false, "\n")).collect();
        let d = Diff::from_patches(files.iter().zip(&rendered).map(|(f, (body, _))| PatchFile {
            filename: &f.path,
            previous_filename: None,
            status: "modified",
            patch: Some(body.trim_end_matches('\n')),
        }))
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let expected: Vec<_> = rendered.into_iter().map(|(_, e)| e).collect();
        check_generated(&d, &files, &expected)?;
    }
}

#[test]
fn retain_hunks_rebuilds_a_valid_diff() {
    let text = "diff --git a/a.rs b/a.rs\n--- a/a.rs\n+++ b/a.rs\n@@ -1,2 +1,3 @@ fn one\n a\n+b\n c\n@@ -10,2 +11,3 @@ fn two\n x\n+y\n z\ndiff --git a/b.rs b/b.rs\n--- a/b.rs\n+++ b/b.rs\n@@ -1 +1 @@\n-p\n+q\n";
    let mut diff = Diff::parse(text).unwrap();
    diff.retain_hunks(|f, h| f.path() == "a.rs" && h.new_start == 11);
    assert_eq!(diff.files().len(), 1);
    let f = &diff.files()[0];
    assert_eq!(f.hunks.len(), 1);
    assert!(f.is_commentable(Side::Right, 12) && !f.is_commentable(Side::Right, 2));
    let texts: Vec<&str> = diff.file_lines(f).map(|l| l.text).collect();
    assert_eq!(texts, ["x", "y", "z"]);
    let again = Diff::parse(diff.text().to_owned()).unwrap();
    assert_eq!(again.files()[0].hunks.len(), 1);
    assert_eq!(diff.hunk_section(&f.hunks[0]), "fn two");
}

/// Every first and second byte of a sequence, with third and fourth bytes from each side of
/// the bounds that matter (and the text cut short after each).
#[test]
fn every_short_sequence_decodes_as_from_utf8_lossy() {
    for b0 in 0x80..=0xFFu8 {
        for b1 in 0..=0xFFu8 {
            for b2 in [0x41, 0x80, 0xBF, 0xC0] {
                for b3 in [0x41, 0x80] {
                    let bytes = [b0, b1, b2, b3, b'x'];
                    for end in [2, 3, 5] {
                        decodes_as_from_utf8_lossy(&bytes[..end]).unwrap();
                    }
                }
            }
        }
    }
}

/// A block's end moved back over continuation bytes: a first byte then up to five
/// continuations (good sequences, over-long ones, lone continuations), placed at every
/// offset around the end of the first block.
#[test]
fn continuations_at_a_block_end_decode_as_from_utf8_lossy() {
    for first in [0xC3u8, 0xE2, 0xF0, 0xF4, 0xF5, 0x80, b'a'] {
        for continuations in 0..=5 {
            for back in 0..8 {
                let mut bytes = vec![b'a'; super::decode::LOSSY_BLOCK - back];
                bytes.push(first);
                bytes.extend(std::iter::repeat_n(0x90, continuations));
                bytes.extend(b"tail");
                decodes_as_from_utf8_lossy(&bytes).unwrap_or_else(|e| {
                    panic!("first {first:#x}, {continuations} continuations, {back} back: {e}")
                });
            }
        }
    }
}

#[test]
fn a_line_reads_as_the_text_it_is_a_part_of() {
    use std::borrow::Cow;
    let diff = Diff::parse(
        "diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1,2 @@\n-x\n+caf\u{e9} \u{202e}\n+y\n",
    )
    .unwrap();
    let hunk = &diff.files()[0].hunks[0];
    let lines: Vec<_> = diff.hunk_byte_lines(hunk).collect();
    let texts: Vec<_> = lines.iter().map(|l| diff.as_text(l.text)).collect();
    assert!(texts.iter().all(|t| matches!(t, Cow::Borrowed(_))));
    assert_eq!(texts, ["x", "caf\u{e9} \u{202e}", "y"]);
    // Bytes from elsewhere, and the bytes of a diff that is not UTF-8, are decoded.
    let elsewhere = b"caf\xe9".to_vec();
    assert_eq!(diff.as_text(&elsewhere), "caf\u{fffd}");
    let lossy = Diff::parse_static_bytes(b"--- a/a\n+++ b/a\n@@ -0,0 +1 @@\n+caf\xe9\n").unwrap();
    let line = lossy
        .hunk_byte_lines(&lossy.files()[0].hunks[0])
        .next()
        .unwrap();
    assert_eq!(lossy.as_text(line.text), "caf\u{fffd}");
}

#[test]
fn lossy_text_is_from_utf8_lossy() {
    let cases: [&[u8]; 6] = [
        b"plain",
        b"caf\xe9\n+cr\xe8me",
        b"\xff",
        b"trunc\xe2\x82",
        b"\xe2\x82\xac ok \xc3\x28 \xf0\x9f\x98",
        b"",
    ];
    for bytes in cases {
        decodes_as_from_utf8_lossy(bytes).unwrap();
    }
}

/// What a reader of `d` can see: each file's fields, its text, and each hunk's header, body and
/// lines (as text and as bytes read as text), then the whole text.
fn view(d: &Diff) -> String {
    let mut out = String::new();
    for f in d.files() {
        let _ = writeln!(
            out,
            "{:?} {:?} {:?} {:?} {:?} {}\n{:?}",
            f.old_path,
            f.new_path,
            f.status,
            f.old_mode,
            f.new_mode,
            f.binary,
            d.file_text(f)
        );
        let bytes = String::from_utf8_lossy(d.file_bytes(f));
        assert_eq!(bytes, d.file_text(f), "a file's bytes read as its text");
        for h in &f.hunks {
            let _ = writeln!(
                out,
                "{:?} {:?} {:?} {:?}",
                numbers(h),
                d.hunk_header(h),
                d.hunk_section(h),
                d.hunk_body(h)
            );
            for (l, b) in d.hunk_lines(h).zip(d.hunk_byte_lines(h)) {
                assert_eq!((l.kind, l.old, l.new), (b.kind, b.old, b.new));
                assert_eq!(String::from_utf8_lossy(b.text), l.text);
                let _ = writeln!(out, "{:?} {:?} {:?} {:?}", l.kind, l.old, l.new, l.text);
            }
            assert_eq!(d.hunk_lines(h).count(), d.hunk_byte_lines(h).count());
        }
    }
    out.push_str(d.text());
    out
}

/// A diff of bytes that are not UTF-8 reads as the diff of their lossy decoding: the same
/// files, texts and lines, whole, after `retain`, `subset` and `retain_hunks`, and the same
/// error line when it does not parse.
fn lossy_reads_as_decoded(bytes: Vec<u8>) -> Result<(), TestCaseError> {
    let decoded = String::from_utf8_lossy(&bytes).into_owned();
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    let (lossy, plain) = (Diff::parse_static_bytes(bytes), Diff::parse(decoded));
    let (mut lossy, mut plain) = match (lossy, plain) {
        (Ok(l), Ok(p)) => (l, p),
        (Err(l), Err(p)) => {
            prop_assert_eq!(l.line, p.line);
            return Ok(());
        }
        (l, p) => {
            return Err(TestCaseError::fail(format!(
                "{:?} against {:?}",
                l.err(),
                p.err()
            )));
        }
    };
    prop_assert_eq!(lossy.is_lossy(), std::str::from_utf8(bytes).is_err());
    prop_assert_eq!(view(&lossy), view(&plain));
    let odd = |i: usize, _: &FileDiff| i % 2 == 1;
    prop_assert_eq!(view(&lossy.subset(odd)), view(&plain.subset(odd)));
    let first_hunks = |_: &FileDiff, h: &Hunk| h.old_start < 20;
    let (mut l2, mut p2) = (lossy.clone(), plain.clone());
    l2.retain_hunks(first_hunks);
    p2.retain_hunks(first_hunks);
    prop_assert_eq!(view(&l2), view(&p2));
    // Some files, whichever their place.
    let keep = |f: &FileDiff| f.hunks.len().is_multiple_of(2);
    lossy.retain(keep);
    plain.retain(keep);
    prop_assert_eq!(view(&lossy), view(&plain));
    Ok(())
}

#[test]
fn every_fixture_reads_the_same_with_bytes_that_are_not_utf8() {
    for path in fixtures() {
        let mut bytes = read(&path).into_bytes();
        // A Latin-1 byte on every line, a cut sequence at the end of some.
        let mut out = Vec::new();
        for (i, line) in bytes.split_mut(|&b| b == b'\n').enumerate() {
            out.extend_from_slice(line);
            if !line.is_empty() {
                out.push(if i % 3 == 0 { 0xE2 } else { 0xE9 });
            }
            out.push(b'\n');
        }
        bytes = out;
        lossy_reads_as_decoded(bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

proptest! {
    #[test]
    fn a_lossy_diff_reads_as_its_decoded_text(
        which in any::<prop::sample::Index>(),
        edits in prop::collection::vec(
            (any::<prop::sample::Index>(), prop::collection::vec(prop_oneof![
                any::<u8>(),
                Just(0xE2u8), Just(0x80), Just(0xAE), Just(b'\n'), Just(b'+'),
            ], 0..4)),
            1..12,
        ),
    ) {
        let all = fixtures();
        let path: &PathBuf = which.get(&all);
        let mut bytes = read(path).into_bytes();
        for (at, insert) in edits {
            let i = at.index(bytes.len() + 1);
            bytes.splice(i..i, insert);
        }
        lossy_reads_as_decoded(bytes)?;
    }
}
