//! A review's time by stage, for `RUST_LOG=reviewbot::timing=debug` (the table in
//! docs/benchmarks.md): each mark logs the microseconds since [`start`], which `main` calls
//! first. Off, a mark costs a check of the log filter.

use std::sync::OnceLock;
use std::time::Instant;

static START: OnceLock<Instant> = OnceLock::new();

/// Where the marks count from.
pub fn start() {
    START.get_or_init(Instant::now);
}

/// `stage` is done.
pub fn mark(stage: &'static str) {
    tracing::debug!(
        stage,
        us = START.get_or_init(Instant::now).elapsed().as_micros() as u64,
        "stage done"
    );
}
