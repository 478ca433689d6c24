//! Sharing CPU work on a multi-megabyte diff over the cores, without a thread-pool dependency.

use std::sync::OnceLock;

/// Below this much input, one thread is faster than starting more. Measured on two cores
/// that gain little from running two threads at once (docs/benchmarks.md): from 256 KiB to
/// 2 MiB, the diffs in between ran 4 to 16% faster on one thread.
pub const PARALLEL_FROM_BYTES: usize = 2 * 1024 * 1024;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_the_order_of_the_items() {
        // Enough to be shared out, not done on the calling thread alone.
        let n = PARALLEL_FROM_BYTES / 300 + 1000;
        let items: Vec<String> = (0..n).map(|i| format!("{i:0>300}")).collect();
        let out = map_shares(&items, String::len, |share| {
            share.iter().map(|s| s.len() + 1).collect()
        });
        assert_eq!(out.len(), n);
        assert!(out.iter().all(|&n| n == 301));
        let calls = std::sync::atomic::AtomicUsize::new(0);
        map_shares(&items, String::len, |share| {
            calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            share.to_vec()
        });
        assert_eq!(calls.into_inner(), threads(), "one share per thread");
        let firsts = map_shares(&items, String::len, |share| share.to_vec());
        assert_eq!(firsts, items);
        assert!(map_shares(&Vec::<String>::new(), String::len, |s| s.to_vec()).is_empty());
    }
}
