//! Parses a diff file and prints its file and hunk counts (used to measure peak memory):
//!
//!     cargo run --release --example parse_diff -- target/bench/django.diff

use reviewbot::diff::Diff;

fn main() -> anyhow::Result<()> {
    let Some(path) = std::env::args_os().nth(1) else {
        anyhow::bail!("usage: parse_diff FILE");
    };
    let text = std::fs::read_to_string(&path)?;
    let bytes = text.len();
    let diff = Diff::parse(text)?;
    let hunks: usize = diff.files().iter().map(|f| f.hunks.len()).sum();
    let lines: usize = diff
        .files()
        .iter()
        .map(|f| diff.file_lines(f).count())
        .sum();
    println!(
        "{bytes} bytes, {} files, {hunks} hunks, {lines} lines",
        diff.files().len()
    );
    Ok(())
}
