//! Sharing CPU work on a multi-megabyte diff over the cores, without a thread-pool dependency.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// Below this much input, one thread is faster than starting more (docs/benchmarks.md). With
/// two halves a thread, 2 MiB was the measured threshold; with small pieces taken in turn, the
/// builtin lens gains from a second thread on the corpus's 1.5 MB diff (2.17 -> 1.29 ms).
pub const PARALLEL_FROM_BYTES: usize = 1024 * 1024;

/// How many threads CPU work may use (read once: it reads cgroup files).
pub fn threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8)
    })
}

/// How many pieces each thread's share is cut into: threads take the next piece as they
/// finish one, so a piece that costs more per byte than the rest (a file full of `=`, a long
/// minified line) does not leave a core idle while the other finishes its half.
const PIECES_PER_THREAD: usize = 16;

/// `work` applied to `items` cut into contiguous pieces of about equal `bytes`, which the
/// calling thread and one more per core take in turn until none is left. Results come back
/// in the order of `items`.
pub fn map_shares<T, R, F>(items: &[T], bytes: impl Fn(&T) -> usize, work: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&[T]) -> Vec<R> + Sync,
{
    map_shares_from(PARALLEL_FROM_BYTES, items, bytes, work)
}

/// [`map_shares`], on one thread below `from_bytes` of input rather than
/// [`PARALLEL_FROM_BYTES`]: for work that gains less from a second thread.
pub fn map_shares_from<T, R, F>(
    from_bytes: usize,
    items: &[T],
    bytes: impl Fn(&T) -> usize,
    work: F,
) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(&[T]) -> Vec<R> + Sync,
{
    // The size first: reading the core count reads cgroup files, which a small input need not.
    let total: usize = items.iter().map(&bytes).sum();
    if total < from_bytes {
        return work(items);
    }
    let threads = threads();
    if threads == 1 {
        return work(items);
    }
    let pieces = cut(items, bytes, total.div_ceil(threads * PIECES_PER_THREAD));
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, Vec<R>)>> = Mutex::new(Vec::with_capacity(pieces.len()));
    let take = || {
        let mut mine = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(piece) = pieces.get(i) else { break };
            mine.push((i, work(piece)));
        }
        done.lock().unwrap_or_else(|e| e.into_inner()).extend(mine);
    };
    std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..threads).map(|_| scope.spawn(take)).collect();
        take();
        for h in helpers {
            // A panicking piece is a bug; re-raise it on the calling thread.
            if let Err(panic) = h.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|e| e.into_inner());
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().flat_map(|(_, part)| part).collect()
}

/// `items` cut into contiguous pieces, each closed once it holds `per` bytes or more.
fn cut<T>(items: &[T], bytes: impl Fn(&T) -> usize, per: usize) -> Vec<&[T]> {
    let mut pieces = Vec::new();
    let (mut start, mut acc) = (0, 0);
    for (i, item) in items.iter().enumerate() {
        acc += bytes(item);
        if acc >= per {
            pieces.push(&items[start..=i]);
            start = i + 1;
            acc = 0;
        }
    }
    if start < items.len() {
        pieces.push(&items[start..]);
    }
    pieces
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
        let calls = AtomicUsize::new(0);
        map_shares(&items, String::len, |share| {
            calls.fetch_add(1, Ordering::Relaxed);
            share.to_vec()
        });
        let calls = calls.into_inner();
        assert!(
            threads() == 1 || calls >= threads() * PIECES_PER_THREAD,
            "{calls} pieces"
        );
        let firsts = map_shares(&items, String::len, |share| share.to_vec());
        assert_eq!(firsts, items);
        assert!(map_shares(&Vec::<String>::new(), String::len, |s| s.to_vec()).is_empty());
    }
}
