//! Sharing CPU work on a multi-megabyte diff over the cores, without a thread-pool dependency.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// Below this much input, the work stays on one thread (docs/benchmarks.md). With one core
/// busy, a second thread cost 0.6-1.1 ms on every diff measured (1.5 to 8.7 MB): it waits for
/// a core the other process holds. With both cores free it paid nothing on 1.5 MB, 1.8-2.5 ms
/// on 4.6 MB and 7 ms on 8.7 MB: from here, the gain alone outweighs the loss under load.
pub const PARALLEL_FROM_BYTES: usize = 8 * 1024 * 1024;

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
/// calling thread and one more per core take in turn, the largest first, until none is left.
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
    let pieces = cut(items, bytes, total.div_ceil(threads * PIECES_PER_THREAD));
    // The largest pieces are taken first, so that each thread's last one is a small one: a
    // piece can be far larger than the rest (one line of 300 KB), and taken last, it would
    // leave the other cores idle while it runs.
    let mut order: Vec<usize> = (0..pieces.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(pieces[i].1));
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, Vec<R>)>> = Mutex::new(Vec::with_capacity(pieces.len()));
    let take = || {
        let mut mine = Vec::new();
        while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
            mine.push((i, work(pieces[i].0)));
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

/// `text` cut into consecutive ranges that cover it, each ending just after a line break
/// once it holds `size` bytes or more (the last one at the text's end): work that looks at
/// a line at a time can share one large text over the cores, a range per item.
pub fn line_pieces(bytes: &[u8], size: usize) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start == bytes.len() {
            return None;
        }
        let from = (start + size.max(1) - 1).min(bytes.len());
        let end = memchr::memchr(b'\n', &bytes[from..]).map_or(bytes.len(), |n| from + n + 1);
        let piece = start..end;
        start = end;
        Some(piece)
    })
}

/// `items` cut into contiguous pieces, each closed once it holds `per` bytes or more, with
/// the bytes each holds.
fn cut<T>(items: &[T], bytes: impl Fn(&T) -> usize, per: usize) -> Vec<(&[T], usize)> {
    let mut pieces = Vec::new();
    let (mut start, mut acc) = (0, 0);
    for (i, item) in items.iter().enumerate() {
        acc += bytes(item);
        if acc >= per {
            pieces.push((&items[start..=i], acc));
            start = i + 1;
            acc = 0;
        }
    }
    if start < items.len() {
        pieces.push((&items[start..], acc));
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

    proptest::proptest! {
        #[test]
        fn line_pieces_cover_the_text_and_end_after_line_breaks(
            text in "[ab\n]{0,200}",
            size in 0usize..40,
        ) {
            let pieces: Vec<_> = line_pieces(text.as_bytes(), size).collect();
            let mut at = 0;
            for (n, piece) in pieces.iter().enumerate() {
                proptest::prop_assert_eq!(piece.start, at);
                proptest::prop_assert!(piece.end > piece.start);
                let last = n + 1 == pieces.len();
                if !last {
                    proptest::prop_assert!(text[..piece.end].ends_with('\n'));
                    proptest::prop_assert!(piece.len() >= size);
                    // Closed at the first line break that makes it long enough.
                    let early = &text[piece.start..piece.end - 1];
                    proptest::prop_assert!(
                        early.rfind('\n').is_none_or(|k| k + 1 < size.max(1)),
                        "{piece:?} of {text:?}"
                    );
                }
                at = piece.end;
            }
            proptest::prop_assert_eq!(at, text.len());
        }
    }
}
