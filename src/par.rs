//! Sharing CPU work on a multi-megabyte diff over the cores, without a thread-pool dependency.

use std::sync::OnceLock;

/// Below this much input, one thread is faster than starting more.
pub const PARALLEL_FROM_BYTES: usize = 256 * 1024;

/// How many threads CPU work may use (read once: it reads cgroup files).
pub fn threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8)
    })
}

/// `work` applied to `items` split into one contiguous share per core, balanced by `bytes`
/// (so one big file does not leave a core idle); the calling thread takes the first share.
/// Results come back in the order of `items`.
pub fn map_shares<T, R, F>(items: &[T], bytes: impl Fn(&T) -> usize, work: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&[T]) -> Vec<R> + Sync,
{
    // The size first: reading the core count reads cgroup files, which a small input need not.
    let total: usize = items.iter().map(&bytes).sum();
    if total < PARALLEL_FROM_BYTES {
        return work(items);
    }
    let threads = threads();
    if threads == 1 {
        return work(items);
    }
    let per = total.div_ceil(threads);
    let mut shares: Vec<&[T]> = Vec::with_capacity(threads);
    let (mut start, mut acc) = (0, 0);
    for (i, item) in items.iter().enumerate() {
        acc += bytes(item);
        if acc >= per && shares.len() + 1 < threads {
            shares.push(&items[start..=i]);
            start = i + 1;
            acc = 0;
        }
    }
    shares.push(&items[start..]);
    let work = &work;
    std::thread::scope(|scope| {
        let handles: Vec<_> = shares[1..]
            .iter()
            .map(|share| scope.spawn(move || work(share)))
            .collect();
        let mut out = work(shares[0]);
        for h in handles {
            // A panicking share is a bug; re-raise it on the calling thread.
            match h.join() {
                Ok(part) => out.extend(part),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        out
    })
}

/// Where a big text is cut in two for work side by side: the start of the first line from the
/// middle on that begins with `prefix` (any line, for `b""`). `None` below
/// [`PARALLEL_FROM_BYTES`], on one core, or when no such line follows the middle.
pub fn cut_at_line(bytes: &[u8], prefix: &[u8]) -> Option<usize> {
    if bytes.len() < PARALLEL_FROM_BYTES || threads() < 2 {
        return None;
    }
    let needle = [b"\n", prefix].concat();
    let half = bytes.len() / 2;
    memchr::memmem::find(&bytes[half..], &needle).map(|i| half + i + 1)
}

/// `first` on the calling thread and `second` on another, side by side. A panic in `second`
/// is raised again here.
pub fn join<A, B: Send>(first: impl FnOnce() -> A, second: impl FnOnce() -> B + Send) -> (A, B) {
    std::thread::scope(|scope| {
        let second = scope.spawn(second);
        let a = first();
        match second.join() {
            Ok(b) => (a, b),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_order_of_the_items() {
        let items: Vec<String> = (0..2000).map(|i| format!("{i:0>300}")).collect();
        let out = map_shares(&items, String::len, |share| {
            share.iter().map(|s| s.len() + 1).collect()
        });
        assert_eq!(out.len(), 2000);
        assert!(out.iter().all(|&n| n == 301));
        let firsts = map_shares(&items, String::len, |share| share.to_vec());
        assert_eq!(firsts, items);
        assert!(map_shares(&Vec::<String>::new(), String::len, |s| s.to_vec()).is_empty());
    }

    #[test]
    fn a_big_text_is_cut_at_the_first_line_from_the_middle_with_the_prefix() {
        let section = "diff --git a/x b/x\n+diff --git inside a line\n context\n";
        let text = section.repeat(PARALLEL_FROM_BYTES / section.len() + 2);
        match cut_at_line(text.as_bytes(), b"diff --git ") {
            Some(mid) => {
                assert!(mid > text.len() / 2 && mid <= text.len() / 2 + section.len());
                assert!(text[mid..].starts_with("diff --git a/x"));
                assert_eq!(&text[mid - 1..mid], "\n");
            }
            None => assert_eq!(threads(), 1),
        }
        assert_eq!(
            cut_at_line(section.as_bytes(), b"diff --git "),
            None,
            "too small"
        );
        let (a, b) = join(|| 1, || "two");
        assert_eq!((a, b), (1, "two"));
    }
}
