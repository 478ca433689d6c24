//! `--format sarif`: SARIF 2.1.0 as GitHub code scanning accepts it.
//!
//! One rule per severity (code scanning groups alerts by rule), each finding a result with its
//! fingerprint as a partial fingerprint so alerts stay stable across runs.

use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use serde_json::{Value, json};

use crate::diff::Side;
use crate::lens::LensStatus;
use crate::render::clean;
use crate::review::{Report, Severity};

const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// Characters escaped in an artifact URI (SARIF wants a valid relative URI reference; `/`
/// stays as the separator).
const URI_ESCAPES: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b']')
    .add(b'\\')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

pub fn render(report: &Report) -> String {
    let rules = json!([
        rule(
            "reviewbot/blocking",
            "Blocking finding",
            "A defect the review panel thinks should stop the merge.",
            "error"
        ),
        rule(
            "reviewbot/advisory",
            "Advisory finding",
            "A problem worth a look; the code owner decides.",
            "warning"
        ),
    ]);
    let results: Vec<Value> = report
        .findings
        .iter()
        .map(|f| {
            let (rule_id, rule_index, level) = match f.severity {
                Severity::Blocking => ("reviewbot/blocking", 0, "error"),
                Severity::Advisory => ("reviewbot/advisory", 1, "warning"),
            };
            let mut text = format!("{}\n\n{}", clean(f.title.trim()), clean(f.body.trim()));
            let mut location = json!({
                "artifactLocation": {
                    "uri": utf8_percent_encode(&f.path, URI_ESCAPES).to_string(),
                    "uriBaseId": "%SRCROOT%"
                }
            });
            match f.side {
                Side::Right => {
                    location["region"] =
                        json!({"startLine": f.start_line.unwrap_or(f.line), "endLine": f.line});
                }
                // Removed lines are not in the tree code scanning looks at: the alert names the
                // file and says which old lines it means.
                Side::Left => {
                    text.push_str(&format!("\n\n(On removed lines, old line {}.)", f.line))
                }
            }
            json!({
                "ruleId": rule_id,
                "ruleIndex": rule_index,
                "level": level,
                "message": {"text": text},
                "locations": [{"physicalLocation": location}],
                "partialFingerprints": {"reviewbotFingerprint/v1": f.fingerprint},
                "properties": {
                    "confidence": f.confidence.as_str(),
                    "lenses": f.lenses,
                    "inDiff": f.in_diff
                }
            })
        })
        .collect();
    let notifications: Vec<Value> = report
        .lenses
        .iter()
        .filter(|l| l.status == LensStatus::Failed)
        .map(|l| {
            json!({
                "level": "error",
                "message": {"text": format!("lens {} failed: {}", l.lens, clean(l.error.as_deref().unwrap_or("no reason given")))}
            })
        })
        .collect();
    let doc = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "reviewbot",
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "rules": rules
            }},
            "invocations": [{
                "executionSuccessful": !report.all_lenses_failed(),
                "toolExecutionNotifications": notifications
            }],
            "results": results
        }]
    });
    let mut out = serde_json::to_string_pretty(&doc).unwrap_or_default();
    out.push('\n');
    out
}

fn rule(id: &str, name: &str, description: &str, level: &str) -> Value {
    json!({
        "id": id,
        "name": name.replace(' ', ""),
        "shortDescription": {"text": name},
        "fullDescription": {"text": description},
        "defaultConfiguration": {"level": level},
        "help": {"text": format!("{description} Findings come from reviewbot's panel of lenses; each result names the lenses that agree and their confidence.")},
        "properties": {"tags": ["reviewbot"]}
    })
}
