use std::sync::Mutex;
use std::time::Duration;

use super::*;
use crate::diff::Side;
use crate::lens::contract::{Confidence, RawFinding, Severity};
use crate::lens::{AuthClass, BackendKind};
use crate::review::panel::SubscriptionSlots;

const DIFF: &str = "\
diff --git a/src/lib.rs b/src/lib.rs
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,2 +1,5 @@
 fn a() {}
+fn b() {}
+fn d() { x.unwrap() }
+fn e() {}
 fn c() {}
";

fn diff() -> Diff {
    Diff::parse(DIFF).expect("diff")
}

fn lens(name: &str, backend: BackendKind) -> LensSpec {
    LensSpec::new(name, backend)
}

/// A finding on `line` of `src/lib.rs`, raised by `lenses`.
fn found(line: u32, severity: Severity, confidence: Confidence, lenses: &[&str]) -> Finding {
    let raw = RawFinding {
        path: "src/lib.rs".into(),
        line,
        start_line: None,
        side: Side::Right,
        severity,
        confidence,
        title: format!("Problem on line {line}"),
        body: "Why.".into(),
        quote: None,
        suggestion: None,
    };
    let mut f = Finding::locate(raw, &LensName::new(lenses[0]), &diff());
    f.lenses = lenses.iter().map(|l| LensName::new(*l)).collect();
    f
}

fn config(mode: VerifyMode, max_findings: usize) -> VerifyConfig {
    VerifyConfig { mode, max_findings }
}

#[test]
fn single_mode_picks_findings_of_one_model_lens_most_severe_first() {
    let lenses = [
        lens("claude", BackendKind::ClaudeCli),
        lens("codex", BackendKind::CodexCli),
        lens("builtin", BackendKind::Builtin),
    ];
    let findings = [
        found(2, Severity::Advisory, Confidence::High, &["claude"]),
        found(
            3,
            Severity::Blocking,
            Confidence::Medium,
            &["claude", "codex"],
        ),
        found(4, Severity::Advisory, Confidence::Medium, &["builtin"]),
        found(3, Severity::Blocking, Confidence::Low, &["codex"]),
        found(
            2,
            Severity::Advisory,
            Confidence::Low,
            &["builtin", "claude"],
        ),
    ];
    assert_eq!(
        candidates(&findings, &lenses, config(VerifyMode::Single, 20)),
        [3, 0]
    );
    assert_eq!(
        candidates(&findings, &lenses, config(VerifyMode::All, 20)),
        [1, 3, 0]
    );
    assert_eq!(
        candidates(&findings, &lenses, config(VerifyMode::All, 2)),
        [1, 3]
    );
    assert!(candidates(&findings, &lenses, config(VerifyMode::Off, 20)).is_empty());
}

#[test]
fn the_verifier_is_of_another_vendor_else_another_lens_else_none() {
    let claude = lens("claude", BackendKind::ClaudeCli);
    let opus = lens("opus-api", BackendKind::Anthropic);
    let codex = lens("codex", BackendKind::CodexCli);
    let script = lens("script", BackendKind::Command);
    let builtin = lens("builtin", BackendKind::Builtin);
    let name = |l: Option<&LensSpec>| l.map(|l| l.name.to_string());

    // Another vendor first, even when a lens of the same vendor comes earlier.
    let usable = [&claude, &opus, &codex];
    assert_eq!(name(verifier(&[&claude], &usable)), Some("codex".into()));
    assert_eq!(name(verifier(&[&codex], &usable)), Some("claude".into()));
    // A command lens is its own vendor: any other lens is another vendor to it.
    assert_eq!(
        name(verifier(&[&script], &[&script, &claude])),
        Some("claude".into())
    );
    // Only the same vendor left: another lens of it checks.
    assert_eq!(
        name(verifier(&[&claude], &[&claude, &opus])),
        Some("opus-api".into())
    );
    // No other model lens (the builtin lens is none): nobody.
    assert_eq!(name(verifier(&[&claude], &[&claude, &builtin])), None);
    // A finding every lens raised has nobody left to check it.
    assert_eq!(name(verifier(&[&claude, &codex], &[&claude, &codex])), None);
}

/// A `command` lens running the scripted verifier, answering `verdict` when asked to verify.
fn scripted(name: &str, verdict: &str) -> LensSpec {
    let mut spec = LensSpec::new(name, BackendKind::Command);
    spec.bin = Some(format!(
        "{}/tests/fixtures/lenses/verifier.sh",
        env!("CARGO_MANIFEST_DIR")
    ));
    spec.args = vec![verdict.to_owned()];
    spec.timeout = Duration::from_secs(10);
    spec
}

/// `spec`'s provenance as a lens that answered the review.
pub(crate) fn answered(spec: &LensSpec) -> Provenance {
    Provenance {
        lens: spec.name.clone(),
        role: Role::Review,
        requested_backend: spec.backend,
        actual_backend: spec.backend,
        auth_class: AuthClass::None,
        model: None,
        fallback_source: None,
        status: LensStatus::Ok,
        error: None,
        latency_ms: 1,
        usage: None,
        cost_usd: None,
        calls: None,
        findings_dropped: None,
        tool_calls: None,
        summary: None,
    }
}

/// Runs cross-examination of `findings` with `lenses` (all of them answered the review);
/// returns the findings left, the verification and the notices said.
async fn examine(
    findings: Vec<Finding>,
    lenses: &[LensSpec],
    mode: VerifyMode,
) -> (Vec<Finding>, Option<Verification>, Vec<String>) {
    let mut panel = Panel::from_env(SubscriptionSlots::new(2), false, []);
    panel.verify = config(mode, 20);
    examine_on(panel, findings, lenses, &diff(), None).await
}

/// Cross-examination of `findings`, placed on `diff`, by `panel` with `lenses` (all of them
/// answered the review) over `checkout`; the findings left, the verification and the notices.
pub(crate) async fn examine_on(
    mut panel: Panel,
    mut findings: Vec<Finding>,
    lenses: &[LensSpec],
    diff: &Diff,
    checkout: Option<Arc<Path>>,
) -> (Vec<Finding>, Option<Verification>, Vec<String>) {
    let notices = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&notices);
    panel.notices = Arc::new(move |line: &str| sink.lock().expect("notices").push(line.into()));
    let runs: Vec<Provenance> = lenses.iter().map(answered).collect();
    let input = VerifyInput {
        lenses,
        runs: &runs,
        diff,
        pr: None,
        checkout,
        earlier: &BTreeSet::new(),
    };
    let verification = cross_examine(&mut findings, &input, &panel).await;
    let said = notices.lock().expect("notices").clone();
    (findings, verification, said)
}

#[tokio::test]
async fn refuted_findings_are_withdrawn_and_counted() {
    let lenses = [scripted("a", "confirmed"), scripted("b", "refuted")];
    let findings = vec![
        found(2, Severity::Advisory, Confidence::Medium, &["a"]),
        found(3, Severity::Blocking, Confidence::High, &["a"]),
        found(4, Severity::Advisory, Confidence::Low, &["b"]),
    ];
    let (left, v, said) = examine(findings, &lenses, VerifyMode::Single).await;
    let v = v.expect("verification");
    // `b` checked both of `a`'s findings in one call and refuted them; `a` confirmed `b`'s.
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0].line, 4);
    assert_eq!(left[0].confidence, Confidence::Medium, "raised one step");
    let checked = left[0].verified.as_ref().expect("checked");
    assert_eq!(checked.verdict, VerdictKind::Confirmed);
    assert_eq!(checked.by.as_str(), "a");
    assert_eq!(checked.evidence, "read src/lib.rs:2, confirmed");
    assert_eq!(
        (
            v.checked.len(),
            v.withdrawn(),
            v.count(VerdictKind::Confirmed)
        ),
        (3, 2, 1)
    );
    assert_eq!(v.runs.len(), 2, "one call per verifier");
    assert!(v.runs.iter().all(|r| r.role == Role::Verify));
    let names: Vec<&str> = v.verifiers().iter().map(|l| l.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(said.is_empty(), "{said:?}");
}

#[tokio::test]
async fn an_unanswered_finding_is_unsure_and_unchanged() {
    let lenses = [scripted("a", "silent"), scripted("b", "silent")];
    let findings = vec![found(2, Severity::Advisory, Confidence::Low, &["a"])];
    let (left, v, _) = examine(findings, &lenses, VerifyMode::Single).await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].confidence, Confidence::Low);
    assert_eq!(
        left[0].verified.as_ref().map(|c| c.verdict),
        Some(VerdictKind::Unsure)
    );
    assert_eq!(v.expect("verification").count(VerdictKind::Unsure), 1);
}

#[tokio::test]
async fn a_failed_verifier_is_a_notice_and_leaves_findings_alone() {
    let lenses = [scripted("a", "confirmed"), scripted("b", "broken")];
    let findings = vec![found(2, Severity::Blocking, Confidence::Low, &["a"])];
    let before = findings.clone();
    let (left, v, said) = examine(findings, &lenses, VerifyMode::Single).await;
    assert_eq!(left, before);
    let v = v.expect("verification");
    assert!(v.checked.is_empty());
    assert_eq!(v.runs.len(), 1);
    assert_eq!(v.runs[0].status, LensStatus::Failed);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(
        said[0].starts_with("notice: cross-examination by b failed (exited with status 4"),
        "{}",
        said[0]
    );
}

#[tokio::test]
async fn with_no_other_model_lens_nothing_is_checked_and_a_notice_says_why() {
    let lenses = [
        scripted("a", "refuted"),
        lens("builtin", BackendKind::Builtin),
    ];
    let findings = vec![found(2, Severity::Advisory, Confidence::Low, &["a"])];
    let (left, v, said) = examine(findings, &lenses, VerifyMode::Single).await;
    assert_eq!(left.len(), 1);
    assert!(left[0].verified.is_none());
    assert_eq!(v, Some(Verification::default()));
    assert_eq!(
        said,
        ["notice: 1 finding was not cross-examined: no other model lens answered this round."]
    );
}

#[tokio::test]
async fn off_checks_nothing() {
    let lenses = [scripted("a", "refuted"), scripted("b", "refuted")];
    let findings = vec![found(2, Severity::Advisory, Confidence::Low, &["a"])];
    let (left, v, _) = examine(findings, &lenses, VerifyMode::Off).await;
    assert_eq!(left.len(), 1);
    assert_eq!(v, None);
}

#[test]
fn per_lens_parts_keep_their_own_verdicts_and_calls() {
    let checked = |lens: &str, by: &str, verdict| CheckedFinding {
        fingerprint: format!("{lens}-{by}"),
        title: "t".into(),
        lenses: vec![LensName::new(lens)],
        verdict,
        by: LensName::new(by),
        evidence: String::new(),
    };
    let v = Verification {
        checked: vec![
            checked("a", "b", VerdictKind::Refuted),
            checked("b", "a", VerdictKind::Confirmed),
        ],
        runs: vec![
            answered(&lens("a", BackendKind::Command)),
            answered(&lens("b", BackendKind::Command)),
        ],
    };
    let a = v.for_lens(Some(&LensName::new("a")));
    assert_eq!(a.withdrawn(), 1);
    assert_eq!(a.runs.len(), 1);
    assert_eq!(a.runs[0].lens.as_str(), "a");
    let b = v.for_lens(Some(&LensName::new("b")));
    assert_eq!(Verification::combine([a, b]), v);
}

#[tokio::test]
async fn a_verifier_answering_findings_has_failed() {
    let mut reviewer = scripted("b", "confirmed");
    reviewer.bin = Some(format!(
        "{}/tests/fixtures/lenses/good.sh",
        env!("CARGO_MANIFEST_DIR")
    ));
    let lenses = [scripted("a", "confirmed"), reviewer];
    let findings = vec![found(2, Severity::Advisory, Confidence::Low, &["a"])];
    let (left, v, said) = examine(findings, &lenses, VerifyMode::Single).await;
    assert!(left[0].verified.is_none());
    let error = v.expect("verification").runs[0]
        .error
        .clone()
        .unwrap_or_default();
    assert_eq!(
        error,
        "unreadable answer: the reply's JSON is not a lens response: findings where verdicts \
         were asked for"
    );
    assert_eq!(said.len(), 1);
}
