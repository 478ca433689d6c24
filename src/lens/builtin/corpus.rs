//! The builtin lens held to its corpus of real diffs (`fixtures/builtin-corpus/`): every
//! expected finding given, nothing else, rule by rule.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::attributes::{Attributes, Guard};
use crate::diff::Diff;

/// One finding, or one file left out: (diff, path, line or `-`, rule).
type Entry = (String, String, String, String);

fn corpus_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/builtin-corpus")
}

fn expected() -> BTreeSet<Entry> {
    let text = std::fs::read_to_string(corpus_dir().join("expected.tsv"))
        .unwrap_or_else(|e| panic!("expected.tsv: {e}"));
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 4, "four fields: {l}");
            (f[0].into(), f[1].into(), f[2].into(), f[3].into())
        })
        .collect()
}

/// What a round gives on `name`: files left out as the pipeline leaves them out (Linguist's
/// defaults, no `.gitattributes`), then the builtin lens's findings on the rest.
fn found(name: &str) -> Vec<Entry> {
    let bytes = std::fs::read(corpus_dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let bytes: &'static [u8] = bytes.leak();
    let mut diff = Diff::parse_static_bytes(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
    let attributes = Attributes::default();
    let mut out = Vec::new();
    diff.retain(|f| match attributes.guard(f.path()) {
        Some(guard) => {
            let reason = match guard {
                Guard::Generated => "generated",
                Guard::Vendored => "vendored",
            };
            out.push((name.into(), f.path().into(), "-".into(), reason.into()));
            false
        }
        None => true,
    });
    for f in super::review(&diff).findings {
        out.push((name.into(), f.path, f.line.to_string(), f.title));
    }
    out
}

#[test]
fn the_builtin_lens_gives_its_corpus_findings_and_no_others() {
    let expected = expected();
    // Every diff of the directory, those that should give nothing too.
    let diffs: BTreeSet<String> = std::fs::read_dir(corpus_dir())
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".diff"))
        .collect();
    assert!(diffs.len() >= 5, "{diffs:?}");
    let mut got = BTreeSet::new();
    for name in &diffs {
        for e in found(name) {
            // Never two findings of one rule in one file.
            let twice = got
                .iter()
                .any(|g: &Entry| g.0 == e.0 && g.1 == e.1 && g.3 == e.3);
            assert!(!twice, "two findings of one rule in one file: {e:?}");
            got.insert(e);
        }
    }
    // Per rule: (expected and given, given only, expected only).
    let mut per_rule: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    for e in expected.union(&got) {
        let counts = per_rule.entry(e.3.as_str()).or_default();
        match (expected.contains(e), got.contains(e)) {
            (true, true) => counts.0 += 1,
            (false, true) => counts.1 += 1,
            _ => counts.2 += 1,
        }
    }
    let lines: Vec<String> = per_rule
        .iter()
        .map(|(rule, (tp, fp, missed))| {
            let ratio = |n: usize, d: usize| if d == 0 { 1.0 } else { n as f64 / d as f64 };
            format!(
                "| {rule} | {tp} | {fp} | {missed} | {:.2} | {:.2} |",
                ratio(*tp, tp + fp),
                ratio(*tp, tp + missed)
            )
        })
        .collect();
    // `cargo test corpus -- --nocapture` prints the table docs/benchmarks.md gives.
    println!("| rule | found | wrong | missed | precision | recall |");
    println!("|---|---|---|---|---|---|");
    println!("{}", lines.join("\n"));
    let wrong: Vec<&Entry> = got.difference(&expected).collect();
    let missed: Vec<&Entry> = expected.difference(&got).collect();
    assert!(
        wrong.is_empty() && missed.is_empty(),
        "wrong: {wrong:#?}\nmissed: {missed:#?}"
    );
}
