//! Pipeline benchmarks (`cargo bench --bench pipeline`).
//!
//! Diff parsing needs its input built first: `scripts/bench-input.sh` (a `git diff -M` between
//! two Django releases, ~4.6 MB). Without it the diff benches print how to build it and skip.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use reviewbot::diff::Diff;

/// Where the diff-parsing input lives: `$REVIEWBOT_BENCH_DIFF`, else `target/bench/django.diff`.
fn bench_diff_path() -> PathBuf {
    std::env::var_os("REVIEWBOT_BENCH_DIFF").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench/django.diff"),
        PathBuf::from,
    )
}

fn diff_benches(c: &mut Criterion) {
    let path = bench_diff_path();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!(
                "diff benches skipped: cannot read {} ({e}); build it with scripts/bench-input.sh",
                path.display()
            );
            return;
        }
    };
    // Fail loudly here, not inside the timing loop, if the input does not parse.
    let parsed = match Diff::parse(text.as_str()) {
        Ok(d) => d,
        Err(e) => {
            eprintln!(
                "diff benches skipped: {} does not parse: {e}",
                path.display()
            );
            return;
        }
    };
    let hunks: usize = parsed.files().iter().map(|f| f.hunks.len()).sum();
    eprintln!(
        "diff bench input: {} ({} bytes, {} files, {hunks} hunks)",
        path.display(),
        text.len(),
        parsed.files().len()
    );

    let diffy_files =
        diffy::patch_set::PatchSet::parse(text.as_str(), diffy::patch_set::ParseOptions::gitdiff())
            .map(|p| p.map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>();
    match &diffy_files {
        Ok(files) => eprintln!("diffy parses the same input into {} files", files.len()),
        Err(e) => eprintln!("diffy stops early on this input: {e}"),
    }

    let mut g = c.benchmark_group("diff");
    g.throughput(Throughput::Bytes(text.len() as u64));
    // Parse plus index (the per-file hunk ranges); the String clone is setup, not timed.
    g.bench_function("parse", |b| {
        b.iter_batched(|| text.clone(), Diff::parse, BatchSize::LargeInput)
    });
    // diffy's multi-file (git) patch-set parser over the same text, for a same-run comparison.
    g.bench_function("diffy", |b| {
        b.iter(|| {
            let set = diffy::patch_set::PatchSet::parse(
                black_box(text.as_str()),
                diffy::patch_set::ParseOptions::gitdiff(),
            );
            set.map(|p| p.map(|_| ()).map_err(|_| ()))
                .collect::<Result<Vec<()>, ()>>()
        })
    });
    g.finish();
}

criterion_group!(benches, diff_benches);
criterion_main!(benches);
