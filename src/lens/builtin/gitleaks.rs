//! The secret rules held to gitleaks' own rule tests (`data/gitleaks/cases.json`, extracted by
//! scripts/gitleaks-cases.sh): each test string is written as a new file in a diff and
//! reviewed with this lens; a string counts as found when the lens reports a secret in it or
//! when masking the diff (what a prompt gets) changes it, and a false positive as flagged when
//! its own rule does either ([`counts_against`]). Rule families are the first word of
//! gitleaks' rule ids (`gitlab-pat`, `gitlab-ptt` → `gitlab`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;

use crate::diff::Diff;
use crate::redact;

/// One gitleaks rule's test strings: plain ones and, for its path rules, by file path.
#[derive(Debug, Deserialize)]
struct Cases {
    rule: String,
    #[serde(default)]
    tps: Option<Vec<String>>,
    #[serde(default)]
    fps: Option<Vec<String>>,
    #[serde(default)]
    path_tps: BTreeMap<String, String>,
    #[serde(default)]
    path_fps: BTreeMap<String, String>,
}

/// gitleaks rules with no pattern: they flag a file by its name alone (`pkcs12-file`), which
/// the lens leaves to the review of a binary file.
const NAME_ONLY: &[&str] = &["pkcs12-file"];

fn cases() -> Vec<Cases> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/gitleaks/cases.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
}

/// `text` as the diff that adds it as the file `path`.
fn new_file_diff(path: &str, text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut diff = format!(
        "diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n\
         @@ -0,0 +1,{} @@\n",
        lines.len()
    );
    for line in lines {
        diff.push('+');
        diff.push_str(line);
        diff.push('\n');
    }
    diff
}

/// The rules that flag `text` added as `path`: those the lens reports a secret with, and those
/// masking the diff (what a prompt gets) names.
fn flagged_by(path: &str, text: &str) -> BTreeSet<String> {
    let diff_text = new_file_diff(path, text);
    let mut rules = BTreeSet::new();
    let masked = redact::redact(&diff_text);
    for part in masked.split("[REDACTED ").skip(1) {
        rules.insert(part.split(']').next().unwrap_or_default().to_owned());
    }
    let diff = Diff::parse(diff_text).unwrap_or_else(|e| panic!("{path}: {e}"));
    for f in super::review(&diff).findings {
        if f.title.contains("secret")
            && let Some(rule) = f.title.rsplit('(').next()
        {
            rules.insert(rule.trim_end_matches(')').to_owned());
        }
    }
    rules
}

fn family(rule: &str) -> &str {
    rule.split('-').next().unwrap_or_default()
}

/// Whether rule `by` counts against a false positive of gitleaks' rule `of`: gitleaks tests
/// each string with its own rule alone, and another rule may rightly flag it (a
/// `cloudflare-origin-ca-key` false positive is a `cloudflare-global-api-key` secret). A
/// catalog rule counts for itself; a rule of reviewbot's own (not in the catalog) for its
/// family.
fn counts_against(by: &str, of: &str, catalog: &BTreeSet<String>) -> bool {
    by == of || (!catalog.contains(by) && family(by) == family(of))
}

/// Per family: true positives and how many were found; false positives and how many their
/// own rule flags, and how many any rule flags.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    tps: usize,
    found: usize,
    fps: usize,
    flagged: usize,
    flagged_by_any: usize,
}

impl Tally {
    fn add(self, t: Tally) -> Tally {
        Tally {
            tps: self.tps + t.tps,
            found: self.found + t.found,
            fps: self.fps + t.fps,
            flagged: self.flagged + t.flagged,
            flagged_by_any: self.flagged_by_any + t.flagged_by_any,
        }
    }
}

fn tally() -> (BTreeMap<String, Tally>, Vec<String>) {
    let cases = cases();
    let catalog: BTreeSet<String> = cases.iter().map(|c| c.rule.clone()).collect();
    let mut families: BTreeMap<String, Tally> = BTreeMap::new();
    let mut missed = Vec::new();
    for case in cases {
        if NAME_ONLY.contains(&case.rule.as_str()) {
            continue;
        }
        let t = families.entry(family(&case.rule).to_owned()).or_default();
        let plain = |v: Option<Vec<String>>| {
            v.unwrap_or_default()
                .into_iter()
                .map(|s| ("case.txt".to_owned(), s))
        };
        for (path, text) in plain(case.tps).chain(case.path_tps) {
            t.tps += 1;
            match flagged_by(&path, &text).is_empty() {
                false => t.found += 1,
                true => missed.push(format!("TP {}: {text:?}", case.rule)),
            }
        }
        for (path, text) in plain(case.fps).chain(case.path_fps) {
            t.fps += 1;
            let by = flagged_by(&path, &text);
            t.flagged_by_any += usize::from(!by.is_empty());
            if by.iter().any(|r| counts_against(r, &case.rule, &catalog)) {
                t.flagged += 1;
                missed.push(format!("FP {} ({by:?}): {text:?}", case.rule));
            }
        }
    }
    (families, missed)
}

#[test]
fn gitleaks_rule_tests_are_found_and_their_false_positives_are_not() {
    let (families, missed) = tally();
    let total = families.values().fold(Tally::default(), |a, t| a.add(*t));
    eprintln!(
        "gitleaks cases: {}/{} true positives found, {}/{} false positives flagged by their \
         rule ({} by any rule)",
        total.found, total.tps, total.flagged, total.fps, total.flagged_by_any
    );
    for m in &missed {
        eprintln!("{m}");
    }
    for (family, t) in &families {
        eprintln!(
            "{family}\t{}/{} found\t{}/{} flagged by their rule\t{} by any",
            t.found, t.tps, t.flagged, t.fps, t.flagged_by_any
        );
    }
    let mut failing = Vec::new();
    for (family, t) in &families {
        let recall_ok = t.tps == 0 || t.found * 100 >= t.tps * 95;
        let fp_ok = t.fps == 0 || t.flagged * 100 <= t.fps * 5;
        if !recall_ok || !fp_ok || (t.tps > 0 && t.found == 0) {
            failing.push(format!("{family}: {t:?}"));
        }
    }
    assert!(total.tps >= 6000 && total.fps >= 300, "{total:?}");
    assert!(failing.is_empty(), "families below the goals: {failing:#?}");
}
