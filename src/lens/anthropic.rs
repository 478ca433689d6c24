//! The `anthropic` backend: the Messages API over HTTPS (`docs/contract.md` "Backends").
//!
//! `POST {ANTHROPIC_BASE_URL or https://api.anthropic.com}/v1/messages` with `x-api-key` and
//! `anthropic-version: 2023-06-01`. The whole prompt is the one user message (the lens's focus
//! is already in it). The answer is asked for as structured output (`output_config.format`,
//! the lens-response JSON Schema); a model or proxy that does not know structured output is
//! asked once more without it, and a plain-text JSON answer (fenced, or with prose around it)
//! is read too.
//!
//! Cost is not computed (`cost_usd` is always `None`): prices change with every model
//! generation, and a figure we cannot vouch for is worse in the provenance than none.

use std::borrow::Cow;

use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::api::{self, ApiVendor, ToolCall, ToolUse};
use super::api_call::{self, CallError, DEFAULT_MAX_OUTPUT_TOKENS};
use super::keys::{EnvVars, Sources};
use super::tools::{ToolDef, ToolResult};
use super::{Answer, BackendKind, Failure, LensSpec, Usage, Vendor};
use crate::lens::contract::LensResponse;

/// Used when `ANTHROPIC_BASE_URL` is unset; like the SDKs, without `/v1`.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The API version every request names.
pub const API_VERSION: &str = "2023-06-01";

#[derive(Serialize)]
struct MessagesRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    messages: &'a [Value],
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a [Value]>,
    /// Omitted unless the lens sets it: the API's default applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig>,
}

#[derive(Serialize)]
struct OutputConfig {
    format: OutputFormat,
}

#[derive(Serialize)]
struct OutputFormat {
    #[serde(rename = "type")]
    kind: &'static str,
    schema: Value,
}

#[derive(Deserialize)]
struct MessagesResponse {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    content: Vec<ContentBlock>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    stop_details: Option<Value>,
    #[serde(default)]
    usage: Option<MessagesUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum ContentBlock {
    #[serde(rename = "text")]
    Text { text: String },
    /// Thinking, tool use and whatever comes later: not part of the answer.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct MessagesUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

/// The `anthropic` backend's wire format.
pub struct Anthropic;

impl ApiVendor for Anthropic {
    const KIND: BackendKind = BackendKind::Anthropic;
    const VENDOR: Vendor = Vendor::Anthropic;
    const VARS: EnvVars = EnvVars {
        key: "ANTHROPIC_API_KEY",
        base_url: "ANTHROPIC_BASE_URL",
    };
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;

    fn path(_model: &str) -> Cow<'static, str> {
        Cow::Borrowed("v1/messages")
    }

    fn headers(key: &str, from: &Sources) -> Result<HeaderMap, Failure> {
        let mut headers = HeaderMap::new();
        headers.insert("x-api-key", api_call::secret_header(key, from)?);
        headers.insert("anthropic-version", HeaderValue::from_static(API_VERSION));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Ok(headers)
    }

    fn body(
        spec: &LensSpec,
        model: &str,
        messages: &[Value],
        structured: Option<&Value>,
        tools: Option<&[Value]>,
    ) -> Result<Vec<u8>, Failure> {
        api::encode(&MessagesRequest {
            model,
            max_tokens: spec.max_output_tokens.unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS),
            messages,
            tools,
            temperature: spec.temperature,
            output_config: structured.map(|schema| OutputConfig {
                format: OutputFormat {
                    kind: "json_schema",
                    schema: schema.clone(),
                },
            }),
        })
    }

    fn tool_def(def: &ToolDef) -> Value {
        def.anthropic()
    }

    /// `stop_reason: "tool_use"` with `tool_use` blocks; the assistant turn goes back verbatim.
    fn tool_use(body: &[u8]) -> Option<ToolUse> {
        let resp: Value = serde_json::from_slice(body).ok()?;
        if resp.get("stop_reason").and_then(Value::as_str) != Some("tool_use") {
            return None;
        }
        let content = resp.get("content")?.as_array()?;
        let calls: Vec<ToolCall> = content
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
            .map(|b| ToolCall {
                id: text_of(b, "id"),
                name: text_of(b, "name"),
                input: b.get("input").cloned().unwrap_or(Value::Null),
            })
            .collect();
        if calls.is_empty() {
            return None;
        }
        let usage = resp
            .get("usage")
            .and_then(|u| serde_json::from_value::<MessagesUsage>(u.clone()).ok())
            .map(MessagesUsage::total);
        Some(ToolUse {
            assistant: json!({"role": "assistant", "content": content}),
            calls,
            usage,
        })
    }

    /// Every result in one user message, `tool_result` blocks only (they must come first).
    fn push_results(messages: &mut Vec<Value>, turn: ToolUse, results: Vec<ToolResult>) {
        let blocks: Vec<Value> = turn
            .calls
            .iter()
            .zip(results)
            .map(|(call, r)| {
                json!({"type": "tool_result", "tool_use_id": call.id, "content": r.content,
                       "is_error": r.is_error})
            })
            .collect();
        messages.push(turn.assistant);
        messages.push(json!({"role": "user", "content": blocks}));
    }

    fn rejects_structured_output(err: &CallError) -> bool {
        rejects_structured_output(err)
    }

    fn answer(body: &[u8], key: &str) -> Result<Answer, Failure> {
        answer(body, key)
    }
}

impl MessagesUsage {
    fn total(self) -> Usage {
        Usage {
            // Cached prompt tokens are still prompt tokens the model read.
            input_tokens: self.input_tokens
                + self.cache_creation_input_tokens.unwrap_or(0)
                + self.cache_read_input_tokens.unwrap_or(0),
            output_tokens: self.output_tokens,
        }
    }
}

/// A string field of a JSON object, or empty.
fn text_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// A 400 that names the structured-output field: an older model or a proxy that does not
/// forward it. The prompt carries the schema too, so the question stands without it.
fn rejects_structured_output(err: &CallError) -> bool {
    let detail = err.detail.to_ascii_lowercase();
    err.status == Some(400)
        && [
            "output_config",
            "output_format",
            "structured output",
            "json_schema",
        ]
        .iter()
        .any(|w| detail.contains(w))
}

/// Reads a 2xx Messages response as the lens's answer.
fn answer(body: &[u8], key: &str) -> Result<Answer, Failure> {
    let resp: MessagesResponse = serde_json::from_slice(body).map_err(|e| {
        let info = api_call::ErrorInfo::parse(body);
        Failure::fatal(format!(
            "unreadable Messages response ({e}): {}",
            api_call::scrub(&info.message, key)
        ))
    })?;
    match resp.stop_reason.as_deref() {
        Some("max_tokens") => {
            return Err(Failure::fatal(
                "answer truncated at max_tokens; raise the lens's max_output_tokens",
            ));
        }
        Some("model_context_window_exceeded") => {
            return Err(Failure::fatal(
                "answer truncated: the model's context window is full",
            ));
        }
        Some("refusal") => {
            let why = resp
                .stop_details
                .as_ref()
                .and_then(|d| d.get("explanation"))
                .and_then(Value::as_str)
                .map(|e| format!(": {}", api_call::scrub(&api_call::clean(e), key)))
                .unwrap_or_default();
            return Err(Failure::fatal(format!("the model refused to answer{why}")));
        }
        _ => {}
    }
    let text: String = resp
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.as_str()),
            ContentBlock::Other => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    if text.trim().is_empty() {
        return Err(Failure::fatal("the model's answer is empty"));
    }
    let response = LensResponse::parse(&text).map_err(|e| {
        Failure::fatal(format!(
            "unreadable answer: {e}; it begins: {}",
            api_call::opening(&text, key)
        ))
    })?;
    let usage = resp.usage.map(MessagesUsage::total);
    Ok(Answer {
        response,
        usage,
        cost_usd: None,
        model: resp.model.filter(|m| !m.is_empty()),
        raw: text,
        tool_calls: None,
        tool_records: Vec::new(),
        notice: None,
    })
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::json;

    use super::*;
    use crate::lens::api::run_with_policy;
    use crate::lens::contract::response_schema;
    use crate::lens::keys::ApiEnv;
    use crate::lens::{BackendKind, FailureKind, LensRequest};
    use crate::testing::api_server::{FakeServer, Reply, fast_policy};

    const KEY: &str = "sk-ant-api03-test-key-do-not-leak-0123456789";
    const MODEL: &str = "claude-sonnet-4-5";
    const PROMPT: &str = "Review this change.\n\n+fn b() {}";

    fn spec() -> LensSpec {
        let mut spec = LensSpec::new("claude-api", BackendKind::Anthropic);
        spec.model = Some(MODEL.to_owned());
        spec.timeout = Duration::from_secs(10);
        spec
    }

    fn request() -> LensRequest {
        crate::testing::fake_cli::request(PROMPT)
    }

    fn env(server: &FakeServer) -> ApiEnv {
        ApiEnv::new(
            Anthropic::VARS,
            Some(KEY.to_owned()),
            Some(server.base.clone()),
        )
    }

    fn lens_json() -> String {
        json!({"findings": [{"path": "src/lib.rs", "line": 2, "start_line": null, "side": "RIGHT",
            "severity": "advisory", "confidence": "medium", "title": "b is unused",
            "body": "Remove it or call it."}], "summary": "One finding."})
        .to_string()
    }

    fn message(text: &str, stop_reason: &str) -> Value {
        json!({"id": "msg_01MkoP42QB7TUf5m2NVVK2kE", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [{"type": "text", "text": text}],
            "stop_reason": stop_reason, "stop_sequence": null,
            "usage": {"input_tokens": 249, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0, "output_tokens": 26,
                      "service_tier": "standard"}})
    }

    fn ok() -> Reply {
        Reply::json(200, message(&lens_json(), "end_turn"))
    }

    fn error(status: u16, kind: &str, msg: &str) -> Reply {
        Reply::json(
            status,
            json!({"type": "error", "error": {"type": kind, "message": msg},
                   "request_id": "req_011CYK5mje9HkutJtmfPzzNC"}),
        )
    }

    async fn go(server: &FakeServer) -> Result<Answer, Failure> {
        run_with_policy::<Anthropic>(&spec(), MODEL, &request(), &env(server), &fast_policy()).await
    }

    #[tokio::test]
    async fn a_structured_answer_is_read_and_the_request_is_right() {
        let server = FakeServer::start(vec![ok()]).await;
        let answer = go(&server).await.expect("ok");
        assert_eq!(answer.response.findings.len(), 1);
        assert_eq!(answer.response.findings[0].title, "b is unused");
        assert_eq!(answer.response.summary.as_deref(), Some("One finding."));
        assert_eq!(
            answer.usage,
            Some(Usage {
                input_tokens: 249,
                output_tokens: 26
            })
        );
        assert_eq!(answer.model.as_deref(), Some("claude-sonnet-4-5-20250929"));
        assert_eq!(answer.cost_usd, None);
        assert_eq!(answer.raw, lens_json());

        let got = server.received();
        assert_eq!(got.len(), 1);
        let r = &got[0];
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/v1/messages");
        assert_eq!(r.header("x-api-key"), Some(KEY));
        assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.header("authorization"), None);
        assert_eq!(r.body["model"], MODEL);
        assert_eq!(r.body["max_tokens"], DEFAULT_MAX_OUTPUT_TOKENS);
        assert_eq!(
            r.body["messages"],
            json!([{"role": "user", "content": crate::lens::contract::with_repository(PROMPT, false)}])
        );
        assert_eq!(r.body["output_config"]["format"]["type"], "json_schema");
        assert_eq!(
            r.body["output_config"]["format"]["schema"],
            response_schema()
        );
        assert!(r.body.get("temperature").is_none(), "{}", r.body);
    }

    #[tokio::test]
    async fn temperature_and_max_tokens_come_from_the_spec() {
        let server = FakeServer::start(vec![ok()]).await;
        let mut spec = spec();
        spec.temperature = Some(0.25);
        spec.max_output_tokens = Some(1234);
        run_with_policy::<Anthropic>(&spec, MODEL, &request(), &env(&server), &fast_policy())
            .await
            .expect("ok");
        let body = &server.received()[0].body;
        assert_eq!(body["temperature"], 0.25);
        assert_eq!(body["max_tokens"], 1234);
    }

    #[tokio::test]
    async fn a_fenced_json_text_answer_is_read() {
        let text = format!(
            "Here is my review:\n\n```json\n{}\n```\nThanks.",
            lens_json()
        );
        let server = FakeServer::start(vec![Reply::json(200, message(&text, "end_turn"))]).await;
        let answer = go(&server).await.expect("ok");
        assert_eq!(answer.response.findings.len(), 1);
    }

    #[tokio::test]
    async fn a_429_is_retried_after_retry_after() {
        let server = FakeServer::start(vec![
            error(
                429,
                "rate_limit_error",
                "This request would exceed your rate limit.",
            )
            .header("retry-after", "1"),
            ok(),
        ])
        .await;
        let started = Instant::now();
        go(&server).await.expect("ok after the wait");
        assert!(started.elapsed() >= Duration::from_secs(1));
        assert_eq!(server.received().len(), 2);
    }

    #[tokio::test]
    async fn a_retry_after_beyond_the_limit_fails_at_once_naming_the_wait() {
        let server = FakeServer::start(vec![
            error(429, "rate_limit_error", "Slow down.").header("retry-after", "3600"),
        ])
        .await;
        let err = go(&server).await.expect_err("fails");
        assert_eq!(
            err.kind,
            FailureKind::Transient {
                retry_after: Some(Duration::from_secs(3600))
            }
        );
        assert_eq!(
            err.message,
            "rate limited (429): Slow down.; the server asks to wait 3600s, longer than the 5s we wait"
        );
        assert_eq!(server.received().len(), 1);
    }

    #[tokio::test]
    async fn overloaded_twice_then_an_answer() {
        let overloaded = error(529, "overloaded_error", "Overloaded");
        let server = FakeServer::start(vec![overloaded.clone(), overloaded, ok()]).await;
        go(&server).await.expect("ok on the third attempt");
        assert_eq!(server.received().len(), 3);
    }

    #[tokio::test]
    async fn overloaded_forever_is_a_transient_failure_after_three_attempts() {
        let server = FakeServer::start(vec![error(529, "overloaded_error", "Overloaded")]).await;
        let err = go(&server).await.expect_err("fails");
        assert_eq!(err.kind, FailureKind::Transient { retry_after: None });
        assert_eq!(
            err.message,
            "the API is overloaded (529): Overloaded (gave up after 3 attempts)"
        );
        assert_eq!(server.received().len(), 3);
    }

    #[tokio::test]
    async fn a_bad_key_fails_at_once_naming_authentication() {
        let server = FakeServer::start(vec![error(
            401,
            "authentication_error",
            "invalid x-api-key",
        )])
        .await;
        let err = go(&server).await.expect_err("fails");
        assert_eq!(err.kind, FailureKind::Fatal);
        assert_eq!(
            err.message,
            "authentication failed (401): invalid x-api-key; check ANTHROPIC_API_KEY"
        );
        assert_eq!(server.received().len(), 1);
    }

    #[tokio::test]
    async fn a_spend_limit_429_is_fatal_and_not_retried() {
        let server = FakeServer::start(vec![
            error(
                429,
                "rate_limit_error",
                "You have reached your spend limit.",
            )
            .header("retry-after", "1"),
        ])
        .await;
        let err = go(&server).await.expect_err("fails");
        assert_eq!(err.kind, FailureKind::Fatal);
        assert!(err.message.contains("billing or quota"), "{}", err.message);
        assert_eq!(server.received().len(), 1);
    }

    #[tokio::test]
    async fn x_should_retry_false_is_obeyed() {
        let server = FakeServer::start(vec![
            error(500, "api_error", "Internal error").header("x-should-retry", "false"),
        ])
        .await;
        let err = go(&server).await.expect_err("fails");
        assert_eq!(err.kind, FailureKind::Fatal);
        assert_eq!(server.received().len(), 1);
    }

    #[tokio::test]
    async fn an_unknown_model_is_named() {
        let server =
            FakeServer::start(vec![error(404, "not_found_error", "model: claude-nope")]).await;
        let err = go(&server).await.expect_err("fails");
        assert_eq!(
            err.message,
            format!("unknown model `{MODEL}` (404): model: claude-nope")
        );
    }

    #[tokio::test]
    async fn a_truncated_answer_fails() {
        let server = FakeServer::start(vec![Reply::json(
            200,
            message(r#"{"findings": [{"path": "src/lib.rs", "li"#, "max_tokens"),
        )])
        .await;
        let err = go(&server).await.expect_err("fails");
        assert_eq!(err.kind, FailureKind::Fatal);
        assert!(err.message.starts_with("answer truncated at max_tokens"));
    }

    #[tokio::test]
    async fn a_refusal_fails() {
        let mut body = message("", "refusal");
        body["stop_details"] = json!({"type": "refusal", "explanation": "Policy."});
        let server = FakeServer::start(vec![Reply::json(200, body)]).await;
        let err = go(&server).await.expect_err("fails");
        assert_eq!(err.kind, FailureKind::Fatal);
        assert_eq!(err.message, "the model refused to answer: Policy.");
    }

    #[tokio::test]
    async fn an_empty_or_unreadable_answer_fails() {
        let server = FakeServer::start(vec![Reply::json(200, message("  ", "end_turn"))]).await;
        let err = go(&server).await.expect_err("fails");
        assert_eq!(err.message, "the model's answer is empty");

        let server = FakeServer::start(vec![Reply::json(
            200,
            message("No issues found.", "end_turn"),
        )])
        .await;
        let err = go(&server).await.expect_err("fails");
        assert!(
            err.message.starts_with("unreadable answer"),
            "{}",
            err.message
        );

        let server = FakeServer::start(vec![Reply::raw(200, "<html>proxy login</html>")]).await;
        let err = go(&server).await.expect_err("fails");
        assert!(
            err.message.starts_with("unreadable Messages response"),
            "{}",
            err.message
        );
    }

    #[tokio::test]
    async fn missing_usage_is_tolerated() {
        let mut body = message(&lens_json(), "end_turn");
        body.as_object_mut().expect("object").remove("usage");
        let server = FakeServer::start(vec![Reply::json(200, body)]).await;
        let answer = go(&server).await.expect("ok");
        assert_eq!(answer.usage, None);
    }

    #[tokio::test]
    async fn a_proxy_without_structured_output_is_asked_again_without_it() {
        let server = FakeServer::start(vec![
            error(
                400,
                "invalid_request_error",
                "output_config: Extra inputs are not permitted",
            ),
            ok(),
        ])
        .await;
        go(&server).await.expect("ok");
        let got = server.received();
        assert_eq!(got.len(), 2);
        assert!(got[0].body.get("output_config").is_some());
        assert!(got[1].body.get("output_config").is_none());
    }

    #[tokio::test]
    async fn base_urls_work_with_or_without_a_trailing_slash() {
        for suffix in ["", "/"] {
            let server = FakeServer::start(vec![ok()]).await;
            let env = ApiEnv::new(
                Anthropic::VARS,
                Some(KEY.to_owned()),
                Some(format!("{}{suffix}", server.base)),
            );
            run_with_policy::<Anthropic>(&spec(), MODEL, &request(), &env, &fast_policy())
                .await
                .expect("ok");
            assert_eq!(server.received()[0].path, "/v1/messages");
        }
    }

    #[tokio::test]
    async fn a_missing_key_fails_before_any_request() {
        let env = ApiEnv::new(Anthropic::VARS, None, Some("http://127.0.0.1:9".to_owned()));
        let err = run_with_policy::<Anthropic>(&spec(), MODEL, &request(), &env, &fast_policy())
            .await
            .expect_err("fails");
        assert_eq!(err.kind, FailureKind::Fatal);
        assert_eq!(err.message, "ANTHROPIC_API_KEY is not set");
    }

    #[tokio::test]
    async fn an_unreachable_server_is_transient() {
        // A port that was just free: nothing listens there.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        let env = ApiEnv::new(
            Anthropic::VARS,
            Some(KEY.to_owned()),
            Some(format!("http://{addr}")),
        );
        let err = run_with_policy::<Anthropic>(&spec(), MODEL, &request(), &env, &fast_policy())
            .await
            .expect_err("fails");
        assert_eq!(err.kind, FailureKind::Transient { retry_after: None });
        assert!(
            err.message
                .starts_with(&format!("cannot connect to http://{addr}")),
            "{}",
            err.message
        );
        assert!(err.message.ends_with("(gave up after 3 attempts)"));
    }

    #[tokio::test]
    async fn the_key_never_appears_in_a_failure_or_debug_output() {
        let echo = format!("invalid x-api-key: {KEY}");
        let server = FakeServer::start(vec![
            error(401, "authentication_error", &echo),
            Reply::json(
                200,
                message(&format!("no JSON here, key {KEY}"), "end_turn"),
            ),
        ])
        .await;
        let env = env(&server);
        let first = go(&server).await.expect_err("401");
        let second = go(&server).await.expect_err("unreadable");
        for err in [&first, &second] {
            assert!(!err.message.contains(KEY), "{}", err.message);
            assert!(!format!("{err:?}").contains(KEY));
        }
        assert!(!format!("{env:?}").contains(KEY));
    }

    #[tokio::test]
    async fn an_oversized_body_fails() {
        let huge = "x".repeat(api_call::MAX_BODY + 1024);
        let server = FakeServer::start(vec![Reply::raw(200, huge)]).await;
        let err = go(&server).await.expect_err("fails");
        assert_eq!(err.kind, FailureKind::Fatal);
        assert_eq!(err.message, "the response body is over 8 MiB");
    }
}
