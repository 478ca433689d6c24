//! The `gemini` backend: the Gemini API's `generateContent` over HTTPS (`docs/contract.md`
//! "Backends").
//!
//! `POST {GEMINI_BASE_URL or https://generativelanguage.googleapis.com}/v1beta/models/{model}:
//! generateContent` with the key in `x-goog-api-key`, never in the URL (a URL ends up in proxy
//! and server logs). The prompt is the one user turn; the answer is asked for as JSON under the
//! lens-response JSON Schema (`generationConfig.responseJsonSchema`), and a model that refuses
//! structured output (older ones do while tools are offered) is asked once more without it.
//! The repository tools are function declarations; the model's turn goes back verbatim (its
//! thought signatures with it) and the results as `functionResponse` parts.
//!
//! Cost is not computed, as for the other APIs: declare the lens's prices in its config for the
//! daily budget to count it.

use std::borrow::Cow;

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::api::{self, ApiVendor, ToolCall, ToolUse};
use super::api_call::{self, CallError, DEFAULT_MAX_OUTPUT_TOKENS};
use super::keys::{EnvVars, Sources};
use super::tools::{ToolDef, ToolResult};
use super::{Answer, BackendKind, Failure, LensSpec, Usage, Vendor};
use crate::lens::contract::LensResponse;

/// Used when `GEMINI_BASE_URL` is unset; without the API version, which the path names.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com";

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerateRequest<'a> {
    contents: &'a [Value],
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<[Tools<'a>; 1]>,
    generation_config: GenerationConfig,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Tools<'a> {
    function_declarations: &'a [Value],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig {
    /// Covers the answer and the model's thinking.
    max_output_tokens: u32,
    /// Omitted unless the lens sets it: the model's default applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_json_schema: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GenerateResponse {
    #[serde(default)]
    candidates: Vec<Candidate>,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    usage_metadata: Option<UsageMetadata>,
    #[serde(default)]
    model_version: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    #[serde(default)]
    text: Option<String>,
    /// A thought summary, not the answer.
    #[serde(default)]
    thought: bool,
    #[serde(default)]
    function_call: Option<FunctionCall>,
}

#[derive(Deserialize)]
struct FunctionCall {
    /// Set by newer models; the result must carry it back.
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: String,
    #[serde(default)]
    args: Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    #[serde(default)]
    prompt_token_count: u64,
    #[serde(default)]
    tool_use_prompt_token_count: u64,
    #[serde(default)]
    candidates_token_count: u64,
    /// Thinking is billed as output.
    #[serde(default)]
    thoughts_token_count: u64,
}

impl UsageMetadata {
    fn total(&self) -> Usage {
        Usage {
            input_tokens: self.prompt_token_count + self.tool_use_prompt_token_count,
            output_tokens: self.candidates_token_count + self.thoughts_token_count,
        }
    }
}

/// The `gemini` backend's wire format.
pub struct Gemini;

impl ApiVendor for Gemini {
    const KIND: BackendKind = BackendKind::Gemini;
    const VENDOR: Vendor = Vendor::Google;
    const VARS: EnvVars = EnvVars {
        key: "GEMINI_API_KEY",
        base_url: "GEMINI_BASE_URL",
    };
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;

    /// The model is a path segment: `gemini-2.5-pro` or `models/gemini-2.5-pro`, encoded so
    /// that no model name can reach another path or a query.
    fn path(model: &str) -> Cow<'static, str> {
        let model = model.strip_prefix("models/").unwrap_or(model);
        let model = utf8_percent_encode(model, NON_ALPHANUMERIC_BUT_NAME);
        Cow::Owned(format!("v1beta/models/{model}:generateContent"))
    }

    fn headers(key: &str, from: &Sources) -> Result<HeaderMap, Failure> {
        let mut headers = HeaderMap::new();
        headers.insert("x-goog-api-key", api_call::secret_header(key, from)?);
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        Ok(headers)
    }

    fn body(
        spec: &LensSpec,
        _model: &str,
        contents: &[Value],
        structured: Option<&Value>,
        tools: Option<&[Value]>,
    ) -> Result<Vec<u8>, Failure> {
        api::encode(&GenerateRequest {
            contents,
            tools: tools.map(|function_declarations| {
                [Tools {
                    function_declarations,
                }]
            }),
            generation_config: GenerationConfig {
                max_output_tokens: spec.max_output_tokens.unwrap_or(DEFAULT_MAX_OUTPUT_TOKENS),
                temperature: spec.temperature,
                response_mime_type: structured.map(|_| "application/json"),
                response_json_schema: structured.cloned(),
            },
        })
    }

    fn prompt_message(prompt: &str) -> Value {
        json!({"role": "user", "parts": [{"text": prompt}]})
    }

    /// A function declaration whose parameters are the tool's JSON Schema as it is.
    fn tool_def(def: &ToolDef) -> Value {
        json!({
            "name": def.name,
            "description": def.description,
            "parametersJsonSchema": def.input_schema,
        })
    }

    /// A candidate with `functionCall` parts; its content goes back verbatim.
    fn tool_use(body: &[u8]) -> Option<ToolUse> {
        let resp: Value = serde_json::from_slice(body).ok()?;
        let content = resp.get("candidates")?.get(0)?.get("content")?;
        let parts: Vec<Part> = serde_json::from_value(content.get("parts")?.clone()).ok()?;
        let calls: Vec<ToolCall> = parts
            .into_iter()
            .filter_map(|p| p.function_call)
            .map(|c| ToolCall {
                id: c.id.unwrap_or_default(),
                name: c.name,
                input: c.args,
            })
            .collect();
        if calls.is_empty() {
            return None;
        }
        let usage = resp
            .get("usageMetadata")
            .and_then(|u| serde_json::from_value::<UsageMetadata>(u.clone()).ok())
            .map(|u| u.total());
        // The role is the model's even when a proxy leaves it out.
        let mut assistant = content.clone();
        assistant["role"] = json!("model");
        Some(ToolUse {
            assistant,
            calls,
            usage,
        })
    }

    /// Every result as a `functionResponse` part of one user turn, in the order of the calls,
    /// with the call's id when the model gave one.
    fn push_results(contents: &mut Vec<Value>, turn: ToolUse, results: Vec<ToolResult>) {
        let parts: Vec<Value> = turn
            .calls
            .iter()
            .zip(results)
            .map(|(call, r)| {
                let response = match r.is_error {
                    true => json!({"error": r.content}),
                    false => json!({"output": r.content}),
                };
                let mut answer = json!({"name": call.name, "response": response});
                if !call.id.is_empty() {
                    answer["id"] = json!(call.id);
                }
                json!({"functionResponse": answer})
            })
            .collect();
        contents.push(turn.assistant);
        contents.push(json!({"role": "user", "parts": parts}));
    }

    /// A 400 about the JSON response settings (older models do not take them beside tools).
    fn rejects_structured_output(err: &CallError) -> bool {
        let detail = err.detail.to_ascii_lowercase();
        err.status == Some(400)
            && [
                "response_mime_type",
                "responsemimetype",
                "response mime type",
                "response_json_schema",
                "responsejsonschema",
                "response_schema",
            ]
            .iter()
            .any(|w| detail.contains(w))
    }

    fn answer(body: &[u8], key: &str) -> Result<Answer, Failure> {
        answer(body, key)
    }
}

/// What a model name may hold unencoded: letters, digits and `-._` (every Gemini model name).
const NON_ALPHANUMERIC_BUT_NAME: &percent_encoding::AsciiSet =
    &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_');

/// Reads a 2xx `generateContent` response as the lens's answer.
fn answer(body: &[u8], key: &str) -> Result<Answer, Failure> {
    let unreadable = |why: String| {
        let info = api_call::ErrorInfo::parse(body);
        Failure::fatal(format!("{why}: {}", api_call::scrub(&info.message, key)))
    };
    let resp: GenerateResponse = serde_json::from_slice(body)
        .map_err(|e| unreadable(format!("unreadable generateContent response ({e})")))?;
    let Some(candidate) = resp.candidates.into_iter().next() else {
        let blocked = resp.prompt_feedback.and_then(|f| f.block_reason);
        return Err(match blocked {
            Some(reason) => Failure::fatal(format!(
                "the prompt was blocked ({})",
                api_call::scrub(&api_call::clean(&reason), key)
            )),
            None => unreadable("no candidates in the response".to_owned()),
        });
    };
    if let Some(problem) = candidate.finish_reason.as_deref().and_then(finish_problem) {
        return Err(Failure::fatal(problem));
    }
    let text: String = candidate
        .content
        .map(|c| c.parts)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| !p.thought)
        .filter_map(|p| p.text)
        .collect::<Vec<_>>()
        .join("");
    if text.trim().is_empty() {
        return Err(Failure::fatal("the model's answer is empty"));
    }
    let response = LensResponse::parse(&text).map_err(|e| {
        Failure::fatal(format!(
            "unreadable answer: {e}; it begins: {}",
            api_call::opening(&text, key)
        ))
    })?;
    Ok(Answer {
        response,
        usage: resp.usage_metadata.map(|u| u.total()),
        cost_usd: None,
        model: resp.model_version.filter(|m| !m.is_empty()),
        raw: text,
        tool_calls: None,
        tool_records: Vec::new(),
        notice: None,
    })
}

/// Why a candidate that ended with `reason` holds no usable answer; `None` for a normal end.
fn finish_problem(reason: &str) -> Option<String> {
    match reason {
        "STOP" | "FINISH_REASON_UNSPECIFIED" => None,
        "MAX_TOKENS" => Some(
            "answer truncated at maxOutputTokens; raise the lens's max_output_tokens".to_owned(),
        ),
        "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" => Some(format!(
            "the model made a tool call it could not ({reason})"
        )),
        other => Some(format!(
            "the answer was withheld ({})",
            api_call::clean(other)
        )),
    }
}

#[cfg(test)]
mod tests;
