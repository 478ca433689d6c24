//! The unified-diff parser: never panics or hangs; every line it yields lies inside its hunk.
#![no_main]

use libfuzzer_sys::fuzz_target;
use reviewbot::diff::{Diff, LineKind, Side};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    let Ok(diff) = Diff::parse(text) else { return };
    // Consume everything, so an early error does not hide a later panic.
    for file in diff.files() {
        let _ = file.path();
        for hunk in &file.hunks {
            let old = hunk.range(Side::Left);
            let new = hunk.range(Side::Right);
            for line in diff.hunk_lines(hunk) {
                match line.kind {
                    LineKind::Added => assert!(line.new.is_some_and(|n| new.contains(&n))),
                    LineKind::Removed => assert!(line.old.is_some_and(|n| old.contains(&n))),
                    LineKind::Context => {
                        assert!(line.new.is_some_and(|n| new.contains(&n)));
                        assert!(line.old.is_some_and(|n| old.contains(&n)));
                    }
                }
                if let Some(n) = line.new {
                    assert!(file.is_commentable(Side::Right, n));
                }
            }
        }
    }
    let _ = reviewbot::lens::builtin::review(&diff);
});
