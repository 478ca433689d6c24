//! Opt-in (`REVIEWBOT_REAL_CLI_DIR`): the real Claude Code and Codex as verifiers of
//! cross-examination (`review::verify`), run through the panel against the fake model: each
//! reads the quoted file through its own tools in the snapshot, and its verdicts land on the
//! findings.

use std::sync::Arc;

use serde_json::{Value, json};

use super::real_claude::{self, MODEL, lens, read};
use super::real_codex::{CodexRun, exec};
use super::snapshot::Hostile;
use super::{FakeModel, Turn};
use crate::diff::{Diff, Side};
use crate::lens::cli_env::CliEnv;
use crate::lens::contract::{Confidence, RawFinding, Severity};
use crate::lens::verdicts::{VerdictKind, verdicts_schema};
use crate::lens::{BackendKind, LensSpec, LensStatus, Role};
use crate::review::finding::Finding;
use crate::review::panel::{Panel, SubscriptionSlots};
use crate::review::verify::Verification;
use crate::review::verify::tests::examine_on;
use crate::testing::fake_cli::{DIFF, real_cli};

/// The finding under check: `b` on line 2 of `src/lib.rs`, raised by a `command` lens alone.
fn finding() -> Finding {
    let raw = RawFinding {
        path: "src/lib.rs".into(),
        line: 2,
        start_line: None,
        side: Side::Right,
        severity: Severity::Advisory,
        confidence: Confidence::Low,
        title: "b is unused".into(),
        body: "Nothing calls b.".into(),
        quote: None,
        suggestion: None,
    };
    let diff = Diff::parse(DIFF).expect("diff");
    Finding::locate(raw, &crate::ids::LensName::new("script"), &diff)
}

/// The verifier's answer for `id`.
fn verdicts(id: &str, verdict: &str, evidence: &str) -> String {
    json!({"verdicts": [{"id": id, "verdict": verdict, "evidence": evidence}]}).to_string()
}

/// Cross-examines [`finding`] with `verifier` (the real CLI, in `env`) over `hostile`'s
/// snapshot; returns what is left, the verification and the notices said.
async fn examine(
    verifier: LensSpec,
    env: CliEnv,
    hostile: &Hostile,
) -> (Vec<Finding>, Verification, Vec<String>) {
    let lenses = [LensSpec::new("script", BackendKind::Command), verifier];
    let mut panel = Panel::from_env(SubscriptionSlots::new(2), false, []);
    panel.cli_env = env;
    let diff = Diff::parse(DIFF).expect("diff");
    let snapshot = hostile.snapshot();
    let (left, v, said) = examine_on(
        panel,
        vec![finding()],
        &lenses,
        &diff,
        Some(Arc::from(snapshot.as_path())),
    )
    .await;
    (left, v.expect("verification on"), said)
}

/// What every verifier's request holds: the finding as untrusted JSON and the numbered diff.
fn assert_asked_to_verify(fake: &FakeModel, id: &str) {
    let asked = fake.model_requests().iter().any(|r| {
        r.user_text
            .iter()
            .any(|t| t.contains(id) && t.contains("<untrusted label=\"findings\">"))
    });
    assert!(asked, "{}", fake.summary());
}

#[tokio::test]
async fn real_claude_as_verifier_reads_the_quoted_file_and_confirms() {
    let Some(bin) = real_cli(
        "claude",
        "real_claude_as_verifier_reads_the_quoted_file_and_confirms",
    ) else {
        return;
    };
    let hostile = Hostile::new();
    let id = finding().fingerprint;
    let fake = FakeModel::start(vec![
        Turn::calls([read("quoted", &hostile.snapshot().join("src/lib.rs"))]),
        Turn::text(verdicts(
            &id,
            "confirmed",
            "src/lib.rs:2 defines b; nothing in src calls it",
        )),
    ]);
    let mut verifier = lens(BackendKind::ClaudeCli, &bin, MODEL);
    verifier.name = crate::ids::LensName::new("claude");
    let env = real_claude::env(&hostile, &fake);
    let (left, v, said) = examine(verifier, env, &hostile).await;
    eprintln!("{}", fake.summary());

    // The CLI read the quoted file in the snapshot through its own tool.
    let quoted = fake.tool_result("quoted").expect("the Read result");
    assert!(quoted.text.contains("fn b() {}"), "{quoted:?}");
    assert!(!quoted.is_error, "{quoted:?}");
    assert_asked_to_verify(&fake, &id);
    // Its verdict landed.
    assert!(said.is_empty(), "{said:?}");
    assert_eq!(left.len(), 1);
    let checked = left[0].verified.as_ref().expect("checked");
    assert_eq!(checked.verdict, VerdictKind::Confirmed);
    assert_eq!(checked.by.as_str(), "claude");
    assert_eq!(
        checked.evidence,
        "src/lib.rs:2 defines b; nothing in src calls it"
    );
    assert_eq!(left[0].confidence, Confidence::Medium);
    assert_eq!(v.runs.len(), 1);
    assert_eq!(v.runs[0].role, Role::Verify);
    assert_eq!(v.runs[0].status, LensStatus::Ok, "{:?}", v.runs[0].error);
    assert!(v.runs[0].usage.is_some_and(|u| u.input_tokens > 0));
}

#[tokio::test]
async fn real_codex_as_verifier_reads_the_quoted_file_and_refutes() {
    let Some(bin) = real_cli(
        "codex",
        "real_codex_as_verifier_reads_the_quoted_file_and_refutes",
    ) else {
        return;
    };
    let run = CodexRun::new(bin.clone());
    let id = finding().fingerprint;
    let fake = FakeModel::start(vec![
        Turn::calls([exec("quoted", "cat src/lib.rs")]),
        Turn::text(verdicts(&id, "refuted", "src/lib.rs:3 c calls b")),
    ]);
    let mut verifier = lens(BackendKind::CodexCli, &bin, "gpt-fake-1");
    verifier.name = crate::ids::LensName::new("codex");
    let env = run.env(&fake);
    let (left, v, said) = examine(verifier, env, &run.hostile).await;
    eprintln!("{}", fake.summary());

    let quoted = fake.tool_result("quoted").expect("the command's output");
    assert!(quoted.text.contains("fn b() {}"), "{quoted:?}");
    assert_asked_to_verify(&fake, &id);
    // `--output-schema` carried the verdicts' schema, not the review's.
    let first: Value = serde_json::from_str(&fake.model_requests()[0].body).expect("json request");
    assert_eq!(first["text"]["format"]["schema"], verdicts_schema());
    assert!(said.is_empty(), "{said:?}");
    // Refuted: withdrawn, and counted.
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(v.withdrawn(), 1);
    assert_eq!(v.checked[0].by.as_str(), "codex");
    assert_eq!(v.checked[0].evidence, "src/lib.rs:3 c calls b");
    assert_eq!(v.runs[0].role, Role::Verify);
    assert_eq!(v.runs[0].status, LensStatus::Ok, "{:?}", v.runs[0].error);
}
