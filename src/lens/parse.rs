//! Reading a lens's raw output as one lens response.
//!
//! Models wrap JSON in fences and prose, change the case of enum values, and sometimes answer
//! twice. We accept the one object we can identify and refuse to guess between several.

use serde_json::Value;

use crate::lens::contract::{LensResponse, ResponseError};

impl LensResponse {
    /// Reads a lens's output as exactly one lens response. A ```json fence or prose around the
    /// object is tolerated; no object, or several candidate objects, is an error.
    pub fn parse(text: &str) -> Result<LensResponse, ResponseError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(ResponseError::Empty);
        }
        let value = match serde_json::from_str::<Value>(text) {
            Ok(v @ Value::Object(_)) => v,
            Ok(Value::Array(_)) => {
                return Err(ResponseError::Invalid("a JSON array, not an object".into()));
            }
            _ => single_candidate(text)?,
        };
        from_value(value)
    }

    /// Keeps the first `max` findings and says how many were dropped: a lens that floods the
    /// review (500 findings) is cut, and the cut is counted, never silent.
    pub fn cap(&mut self, max: usize) -> usize {
        let dropped = self.findings.len().saturating_sub(max);
        self.findings.truncate(max);
        dropped
    }
}

/// The most findings one lens contributes to a round.
pub const MAX_FINDINGS_PER_LENS: usize = 50;

/// The one JSON object in `text`: inside fences when any fence holds an object, else anywhere
/// at the top level of the prose.
fn single_candidate(text: &str) -> Result<Value, ResponseError> {
    let fenced: Vec<Value> = fences(text)
        .into_iter()
        .flat_map(|body| match serde_json::from_str::<Value>(body.trim()) {
            Ok(v @ Value::Object(_)) => vec![v],
            _ => objects_in(body),
        })
        .collect();
    let mut candidates = if fenced.is_empty() {
        objects_in(text)
    } else {
        fenced
    };
    match candidates.len() {
        0 => Err(ResponseError::NoObject),
        1 => Ok(candidates.remove(0)),
        n => {
            // Prose often quotes a small example; only objects that look like a response count.
            let mut responses: Vec<Value> = candidates
                .into_iter()
                .filter(|v| v.get("findings").is_some() || v.get("verdicts").is_some())
                .collect();
            if responses.len() == 1 {
                Ok(responses.remove(0))
            } else {
                Err(ResponseError::Ambiguous(n))
            }
        }
    }
}

/// Bodies of Markdown code fences (```lang … ```), in order. An unterminated fence runs to
/// the end of the text.
fn fences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        // Skip the info string (`json`, `JSON`, …) up to the end of the line.
        let body_start = after.find('\n').map_or(after.len(), |i| i + 1);
        let body = &after[body_start..];
        match body.find("```") {
            Some(close) => {
                out.push(&body[..close]);
                rest = &body[close + 3..];
            }
            None => {
                out.push(body);
                break;
            }
        }
    }
    out
}

/// Every balanced top-level `{…}` span of `text` that parses as a JSON object.
fn objects_in(text: &str) -> Vec<Value> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'{', &bytes[i..]) {
        let start = i + off;
        match balanced_end(bytes, start) {
            Some(end) => match serde_json::from_str::<Value>(&text[start..end]) {
                Ok(v @ Value::Object(_)) => {
                    out.push(v);
                    i = end;
                }
                _ => i = start + 1,
            },
            None => i = start + 1,
        }
    }
    out
}

/// The end (exclusive) of the brace-balanced span starting at `start`, honouring JSON strings.
fn balanced_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Deserialises a candidate object, forgiving the case of enum values (`"Blocking"`, `"right"`).
fn from_value(mut value: Value) -> Result<LensResponse, ResponseError> {
    // Either key makes an answer; neither is no answer, never an empty one.
    if value.get("findings").is_none() && value.get("verdicts").is_none() {
        return Err(ResponseError::Invalid("missing field `findings`".into()));
    }
    if let Some(verdicts) = value.get_mut("verdicts").and_then(Value::as_array_mut) {
        for verdict in verdicts {
            if let Some(Value::String(s)) = verdict.get_mut("verdict") {
                *s = s.trim().to_ascii_lowercase();
            }
        }
    }
    if let Some(findings) = value.get_mut("findings").and_then(Value::as_array_mut) {
        for finding in findings {
            for (key, upper) in [("severity", false), ("confidence", false), ("side", true)] {
                if let Some(Value::String(s)) = finding.get_mut(key) {
                    *s = if upper {
                        s.trim().to_ascii_uppercase()
                    } else {
                        s.trim().to_ascii_lowercase()
                    };
                }
            }
            // `"side": null` means the default side.
            if finding.get("side").is_some_and(Value::is_null)
                && let Some(obj) = finding.as_object_mut()
            {
                obj.remove("side");
            }
        }
    }
    serde_json::from_value(value).map_err(|e| ResponseError::Invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::Side;
    use crate::lens::contract::{Confidence, Severity};

    const ONE: &str = r#"{"findings": [{"path": "src/lib.rs", "line": 42, "start_line": 40,
        "side": "RIGHT", "severity": "blocking", "confidence": "high",
        "title": "Wake dispatch skips the preflight", "body": "Why."}],
        "summary": "one paragraph"}"#;

    #[test]
    fn plain_object() {
        let r = LensResponse::parse(ONE).unwrap();
        assert_eq!(r.findings.len(), 1);
        let f = &r.findings[0];
        assert_eq!((f.line, f.start_line, f.side), (42, Some(40), Side::Right));
        assert_eq!(
            (f.severity, f.confidence),
            (Severity::Blocking, Confidence::High)
        );
        assert_eq!(r.summary.as_deref(), Some("one paragraph"));
    }

    #[test]
    fn fenced_with_prose_around() {
        let text = format!("Here is my review.\n\n```json\n{ONE}\n```\n\nLet me know!");
        assert_eq!(
            LensResponse::parse(&text).unwrap(),
            LensResponse::parse(ONE).unwrap()
        );
    }

    #[test]
    fn prose_around_a_bare_object() {
        let text = format!("Sure. {ONE} That is all.");
        assert_eq!(LensResponse::parse(&text).unwrap().findings.len(), 1);
    }

    #[test]
    fn optional_fields_and_case() {
        let r = LensResponse::parse(
            r#"{"findings":[{"path":"a","line":1,"start_line":null,"side":null,
            "severity":"Advisory","confidence":"LOW","title":"t","body":"b","category":"x"}],
            "summary":null}"#,
        )
        .unwrap();
        let f = &r.findings[0];
        assert_eq!(
            (f.side, f.severity, f.confidence),
            (Side::Right, Severity::Advisory, Confidence::Low)
        );
        assert_eq!(f.start_line, None);
        assert_eq!(r.summary, None);
    }

    #[test]
    fn no_findings_is_a_valid_answer() {
        assert!(
            LensResponse::parse(r#"{"findings": []}"#)
                .unwrap()
                .findings
                .is_empty()
        );
    }

    #[test]
    fn two_responses_are_ambiguous() {
        let text = format!("First: {ONE}\nActually: {ONE}");
        assert_eq!(LensResponse::parse(&text), Err(ResponseError::Ambiguous(2)));
        let fenced = format!("```json\n{ONE}\n```\n```json\n{ONE}\n```");
        assert_eq!(
            LensResponse::parse(&fenced),
            Err(ResponseError::Ambiguous(2))
        );
    }

    #[test]
    fn an_example_object_beside_the_response_is_not_ambiguous() {
        let text = format!("Lines look like {{\"line\": 3}}. Answer: {ONE}");
        assert_eq!(LensResponse::parse(&text).unwrap().findings.len(), 1);
    }

    #[test]
    fn errors() {
        assert_eq!(LensResponse::parse("  \n"), Err(ResponseError::Empty));
        assert_eq!(
            LensResponse::parse("I found nothing wrong."),
            Err(ResponseError::NoObject)
        );
        assert!(matches!(
            LensResponse::parse("[1,2]"),
            Err(ResponseError::Invalid(_))
        ));
        assert!(matches!(
            LensResponse::parse(r#"{"findings": [{"path": "a"}]}"#),
            Err(ResponseError::Invalid(_))
        ));
        assert!(matches!(
            LensResponse::parse(
                r#"{"findings":[{"path":"a","line":1,"severity":"fatal","confidence":"high","title":"t","body":"b"}]}"#
            ),
            Err(ResponseError::Invalid(_))
        ));
        assert_eq!(
            LensResponse::parse("{ not json"),
            Err(ResponseError::NoObject)
        );
    }

    #[test]
    fn braces_inside_strings_do_not_confuse_the_scanner() {
        let text = r#"Result: {"findings": [{"path": "a.rs", "line": 1, "severity": "advisory",
            "confidence": "low", "title": "Unbalanced } in format", "body": "use {{ and \" }"}]}"#;
        assert_eq!(
            LensResponse::parse(text).unwrap().findings[0].title,
            "Unbalanced } in format"
        );
    }

    #[test]
    fn cap_counts_what_it_drops() {
        let mut r = LensResponse::parse(ONE).unwrap();
        let one = r.findings[0].clone();
        r.findings = vec![one; 120];
        assert_eq!(r.cap(MAX_FINDINGS_PER_LENS), 70);
        assert_eq!(r.findings.len(), 50);
        assert_eq!(r.cap(MAX_FINDINGS_PER_LENS), 0);
    }

    proptest::proptest! {
        #[test]
        fn never_panics(s in "\\PC*") {
            let _ = LensResponse::parse(&s);
        }
    }
}
