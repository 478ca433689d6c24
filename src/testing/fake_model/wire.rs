//! The three wire formats the fake speaks: reading a request (turn count, tools, tool results,
//! prompt text) and writing a turn as each API would.
//!
//! - Anthropic Messages: turns are `assistant` messages; tool results are `tool_result` blocks
//!   in user messages; a stream is `message_start`, per block `content_block_start` / `_delta`
//!   (`text_delta`, `input_json_delta`) / `_stop`, `message_delta` (stop reason, usage),
//!   `message_stop`.
//! - OpenAI Responses: turns are runs of model output items (`function_call`, assistant
//!   `message`, `reasoning`) supplied back as input; tool results are `function_call_output`
//!   items; a stream is `response.created`, `response.in_progress`, per item
//!   `response.output_item.added` / deltas / `response.output_item.done`, `response.completed`
//!   with usage.
//! - OpenAI Chat Completions: turns are `assistant` messages; tool results are `role: tool`
//!   messages; the answer has `tool_calls` and a `finish_reason`.
//! - Gemini `generateContent`: the model is in the path; turns are `model` contents; tool
//!   results are `functionResponse` parts of user contents; the answer is a candidate whose
//!   parts hold text and `functionCall`s (the first with a thought signature), and
//!   `usageMetadata`.

use serde_json::{Value, json};

use super::{ApiError, ToolResult, Turn};

/// Which API a request spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    Anthropic,
    Responses,
    Chat,
    Gemini,
}

impl Api {
    pub(crate) fn from_path(path: &str) -> Option<Api> {
        match path {
            "/v1/messages" => Some(Api::Anthropic),
            "/v1/responses" => Some(Api::Responses),
            "/v1/chat/completions" => Some(Api::Chat),
            _ => Self::gemini_model(path).map(|_| Api::Gemini),
        }
    }

    /// The model a Gemini path names: `/v1beta/models/{model}:generateContent`.
    pub(crate) fn gemini_model(path: &str) -> Option<&str> {
        path.strip_prefix("/v1beta/models/")?
            .strip_suffix(":generateContent")
            .filter(|m| !m.is_empty() && !m.contains('/'))
    }

    /// The prefix each API's call ids carry.
    fn call_prefix(self) -> &'static str {
        match self {
            Api::Anthropic => "toolu_",
            Api::Responses | Api::Chat | Api::Gemini => "call_",
        }
    }
}

/// What the fake reads from a request.
#[derive(Debug, Default)]
pub(super) struct Seen {
    pub(super) stream: bool,
    pub(super) model: Option<String>,
    pub(super) model_turns: usize,
    pub(super) tools: Vec<String>,
    pub(super) tool_results: Vec<ToolResult>,
    pub(super) system: String,
    pub(super) user_text: Vec<String>,
}

pub(super) fn read_request(api: Api, body: &Value) -> Seen {
    let mut seen = Seen {
        stream: body["stream"].as_bool().unwrap_or(false),
        model: body["model"].as_str().map(str::to_owned),
        tools: advertised_tools(api, &body["tools"]),
        ..Seen::default()
    };
    match api {
        Api::Anthropic => read_anthropic(body, &mut seen),
        Api::Responses => read_responses(body, &mut seen),
        Api::Chat => read_chat(body, &mut seen),
        Api::Gemini => read_gemini(body, &mut seen),
    }
    seen
}

fn advertised_tools(api: Api, tools: &Value) -> Vec<String> {
    // Gemini groups its functions in one tool.
    let tools: Vec<&Value> = match api {
        Api::Gemini => array(tools)
            .iter()
            .flat_map(|t| array(&t["functionDeclarations"]))
            .collect(),
        _ => array(tools).iter().collect(),
    };
    tools
        .into_iter()
        .filter_map(|t| {
            let name = match api {
                Api::Chat => &t["function"]["name"],
                Api::Anthropic | Api::Responses | Api::Gemini => &t["name"],
            };
            name.as_str()
                .or_else(|| t["type"].as_str())
                .map(str::to_owned)
        })
        .collect()
}

/// The elements of an array value (none for anything else).
fn array(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// The text of a content value: a string, or the `text` of each part of an array.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

fn push_text(into: &mut String, text: &str) {
    if text.is_empty() {
        return;
    }
    if !into.is_empty() {
        into.push('\n');
    }
    into.push_str(text);
}

fn result(api: Api, id: &str, text: String, is_error: bool) -> ToolResult {
    ToolResult {
        id: id.strip_prefix(api.call_prefix()).unwrap_or(id).to_owned(),
        text,
        is_error,
    }
}

fn read_anthropic(body: &Value, seen: &mut Seen) {
    seen.system = text_of(&body["system"]);
    for msg in array(&body["messages"]) {
        match msg["role"].as_str() {
            Some("assistant") => seen.model_turns += 1,
            Some("user") => match &msg["content"] {
                Value::Array(blocks) => {
                    let mut text = String::new();
                    for b in blocks {
                        match b["type"].as_str() {
                            Some("tool_result") => seen.tool_results.push(result(
                                Api::Anthropic,
                                b["tool_use_id"].as_str().unwrap_or_default(),
                                text_of(&b["content"]),
                                b["is_error"].as_bool().unwrap_or(false),
                            )),
                            Some("text") => push_text(&mut text, b["text"].as_str().unwrap_or("")),
                            _ => {}
                        }
                    }
                    if !text.is_empty() {
                        seen.user_text.push(text);
                    }
                }
                other => seen.user_text.push(text_of(other)),
            },
            _ => {}
        }
    }
}

/// Whether a Responses input item is model output handed back.
fn is_model_item(item: &Value) -> bool {
    match item["type"].as_str() {
        Some("function_call" | "custom_tool_call" | "local_shell_call" | "reasoning") => true,
        Some("web_search_call") => true,
        Some("message") | None => item["role"] == "assistant",
        _ => false,
    }
}

fn read_responses(body: &Value, seen: &mut Seen) {
    seen.system = body["instructions"].as_str().unwrap_or_default().to_owned();
    let items = match &body["input"] {
        Value::String(s) => {
            seen.user_text.push(s.clone());
            return;
        }
        Value::Array(items) => items.as_slice(),
        _ => &[],
    };
    let mut in_run = false;
    for item in items {
        let model = is_model_item(item);
        if model && !in_run {
            seen.model_turns += 1;
        }
        in_run = model;
        match (item["type"].as_str(), item["role"].as_str()) {
            (Some("function_call_output" | "custom_tool_call_output"), _) => {
                seen.tool_results.push(result(
                    Api::Responses,
                    item["call_id"].as_str().unwrap_or_default(),
                    text_of(&item["output"]),
                    false,
                ));
            }
            (Some("message") | None, Some("developer" | "system")) => {
                push_text(&mut seen.system, &text_of(&item["content"]));
            }
            (Some("message") | None, Some("user")) => {
                seen.user_text.push(text_of(&item["content"]));
            }
            _ => {}
        }
    }
}

fn read_chat(body: &Value, seen: &mut Seen) {
    for msg in array(&body["messages"]) {
        match msg["role"].as_str() {
            Some("assistant") => seen.model_turns += 1,
            Some("tool") => seen.tool_results.push(result(
                Api::Chat,
                msg["tool_call_id"].as_str().unwrap_or_default(),
                text_of(&msg["content"]),
                false,
            )),
            Some("system" | "developer") => push_text(&mut seen.system, &text_of(&msg["content"])),
            Some("user") => seen.user_text.push(text_of(&msg["content"])),
            _ => {}
        }
    }
}

fn read_gemini(body: &Value, seen: &mut Seen) {
    seen.system = text_of(&body["systemInstruction"]["parts"]);
    for content in array(&body["contents"]) {
        match content["role"].as_str() {
            Some("model") => seen.model_turns += 1,
            Some("user") | None => {
                let mut text = String::new();
                for part in array(&content["parts"]) {
                    if let Some(t) = part["text"].as_str() {
                        push_text(&mut text, t);
                    }
                    let answer = &part["functionResponse"];
                    if answer.is_object() {
                        let response = &answer["response"];
                        let is_error = response.get("error").is_some();
                        let out = if is_error {
                            &response["error"]
                        } else {
                            &response["output"]
                        };
                        seen.tool_results.push(result(
                            Api::Gemini,
                            answer["id"].as_str().unwrap_or_default(),
                            out.as_str().map_or_else(|| out.to_string(), str::to_owned),
                            is_error,
                        ));
                    }
                }
                if !text.is_empty() {
                    seen.user_text.push(text);
                }
            }
            _ => {}
        }
    }
}

/// A scripted turn about to be written in some API's format.
pub(super) struct Reply<'a> {
    pub(super) turn: &'a Turn,
    /// The turn's index in the script (makes ids unique).
    pub(super) number: usize,
    pub(super) model: &'a str,
    pub(super) input_tokens: u64,
}

impl Reply<'_> {
    fn output_tokens(&self) -> u64 {
        let text = self.turn.text.as_deref().map_or(0, str::len);
        let calls: usize = self
            .turn
            .calls
            .iter()
            .map(|c| c.input.to_string().len() + c.name.len())
            .sum();
        u64::try_from((text + calls) / 4 + 1).unwrap_or(u64::MAX)
    }

    fn text(&self) -> Option<&str> {
        self.turn.text.as_deref().filter(|t| !t.is_empty())
    }

    fn call_id(&self, api: Api, id: &str) -> String {
        format!("{}{id}", api.call_prefix())
    }
}

/// `s` in two pieces split near the middle (on a char boundary), so that clients must join
/// deltas; one piece when it is short.
fn halves(s: &str) -> Vec<&str> {
    let mut mid = s.len() / 2;
    while !s.is_char_boundary(mid) {
        mid += 1;
    }
    if mid == 0 || mid == s.len() {
        return vec![s];
    }
    vec![&s[..mid], &s[mid..]]
}

pub(super) fn error_body(api: Api, err: &ApiError) -> Value {
    match api {
        Api::Anthropic => json!({
            "type": "error",
            "error": {"type": err.kind, "message": err.message},
            "request_id": "req_fake",
        }),
        Api::Responses | Api::Chat => json!({
            "error": {"message": err.message, "type": err.kind, "code": null, "param": null},
        }),
        Api::Gemini => json!({
            "error": {"code": err.status, "message": err.message, "status": err.kind},
        }),
    }
}

// --- Anthropic Messages -------------------------------------------------------------------

fn anthropic_stop_reason(reply: &Reply<'_>) -> &'static str {
    if reply.turn.calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    }
}

fn anthropic_usage(input: u64, output: u64) -> Value {
    json!({
        "input_tokens": input,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output,
    })
}

fn anthropic_blocks(reply: &Reply<'_>) -> Vec<Value> {
    let text = reply.text().map(|t| json!({"type": "text", "text": t}));
    let calls = reply.turn.calls.iter().map(|c| {
        json!({
            "type": "tool_use",
            "id": reply.call_id(Api::Anthropic, &c.id),
            "name": c.name,
            "input": c.input,
        })
    });
    text.into_iter().chain(calls).collect()
}

/// The non-streaming answer: one `message` object.
pub(super) fn anthropic_message(reply: &Reply<'_>) -> Value {
    json!({
        "id": format!("msg_fake_{}", reply.number),
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": anthropic_blocks(reply),
        "stop_reason": anthropic_stop_reason(reply),
        "stop_sequence": null,
        "usage": anthropic_usage(reply.input_tokens, reply.output_tokens()),
    })
}

/// The streaming answer, event by event, in the order the Messages API sends them.
pub(super) fn anthropic_events(reply: &Reply<'_>) -> Vec<(&'static str, Value)> {
    let mut events = vec![(
        "message_start",
        json!({"type": "message_start", "message": {
            "id": format!("msg_fake_{}", reply.number),
            "type": "message",
            "role": "assistant",
            "model": reply.model,
            "content": [],
            "stop_reason": null,
            "stop_sequence": null,
            "usage": anthropic_usage(reply.input_tokens, 1),
        }}),
    )];
    for (index, block) in anthropic_blocks(reply).into_iter().enumerate() {
        let (start, deltas) = if block["type"] == "text" {
            let text = block["text"].as_str().unwrap_or_default();
            let deltas: Vec<Value> = halves(text)
                .into_iter()
                .map(|t| json!({"type": "text_delta", "text": t}))
                .collect();
            (json!({"type": "text", "text": ""}), deltas)
        } else {
            let input = block["input"].to_string();
            // The API's first tool delta is an empty one.
            let deltas: Vec<Value> = std::iter::once("")
                .chain(halves(&input))
                .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                .collect();
            let start =
                json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}});
            (start, deltas)
        };
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        if index == 0 {
            events.push(("ping", json!({"type": "ping"})));
        }
        for delta in deltas {
            events.push((
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            ));
        }
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events.push((
        "message_delta",
        json!({
            "type": "message_delta",
            "delta": {"stop_reason": anthropic_stop_reason(reply), "stop_sequence": null},
            "usage": {"output_tokens": reply.output_tokens()},
        }),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    events
}

// --- OpenAI Responses ---------------------------------------------------------------------

/// The turn's output items, complete.
fn responses_items(reply: &Reply<'_>) -> Vec<Value> {
    let n = reply.number;
    let text = reply.text().map(|t| {
        json!({
            "type": "message",
            "id": format!("msg_fake_{n}"),
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": t, "annotations": []}],
        })
    });
    let calls = reply.turn.calls.iter().enumerate().map(|(i, c)| {
        json!({
            "type": "function_call",
            "id": format!("fc_fake_{n}_{i}"),
            "call_id": reply.call_id(Api::Responses, &c.id),
            "name": c.name,
            "arguments": c.input.to_string(),
            "status": "completed",
        })
    });
    text.into_iter().chain(calls).collect()
}

fn responses_usage(reply: &Reply<'_>) -> Value {
    let output = reply.output_tokens();
    json!({
        "input_tokens": reply.input_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.input_tokens.saturating_add(output),
    })
}

fn responses_envelope(reply: &Reply<'_>, status: &str, output: Vec<Value>) -> Value {
    let mut response = json!({
        "id": format!("resp_fake_{}", reply.number),
        "object": "response",
        "created_at": 1_767_225_600,
        "status": status,
        "model": reply.model,
        "output": output,
    });
    if status == "completed" {
        response["usage"] = responses_usage(reply);
    }
    response
}

/// The non-streaming answer: one `response` object.
pub(super) fn responses_object(reply: &Reply<'_>) -> Value {
    responses_envelope(reply, "completed", responses_items(reply))
}

/// The streaming answer, event by event, each with its `sequence_number`.
pub(super) fn responses_events(reply: &Reply<'_>) -> Vec<(&'static str, Value)> {
    let items = responses_items(reply);
    let mut events: Vec<(&'static str, Value)> = vec![
        (
            "response.created",
            json!({"response": responses_envelope(reply, "in_progress", vec![])}),
        ),
        (
            "response.in_progress",
            json!({"response": responses_envelope(reply, "in_progress", vec![])}),
        ),
    ];
    for (index, item) in items.iter().enumerate() {
        let id = &item["id"];
        let mut added = item.clone();
        added["status"] = json!("in_progress");
        if item["type"] == "message" {
            added["content"] = json!([]);
            let text = item["content"][0]["text"].as_str().unwrap_or_default();
            let at = json!({"item_id": id, "output_index": index, "content_index": 0});
            events.push((
                "response.output_item.added",
                json!({"output_index": index, "item": added}),
            ));
            let mut part = at.clone();
            part["part"] = json!({"type": "output_text", "text": "", "annotations": []});
            events.push(("response.content_part.added", part));
            for piece in halves(text) {
                let mut delta = at.clone();
                delta["delta"] = json!(piece);
                events.push(("response.output_text.delta", delta));
            }
            let mut done = at.clone();
            done["text"] = json!(text);
            events.push(("response.output_text.done", done));
            let mut part = at;
            part["part"] = item["content"][0].clone();
            events.push(("response.content_part.done", part));
        } else {
            added["arguments"] = json!("");
            let args = item["arguments"].as_str().unwrap_or_default();
            events.push((
                "response.output_item.added",
                json!({"output_index": index, "item": added}),
            ));
            for piece in halves(args) {
                events.push((
                    "response.function_call_arguments.delta",
                    json!({"item_id": id, "output_index": index, "delta": piece}),
                ));
            }
            events.push((
                "response.function_call_arguments.done",
                json!({"item_id": id, "output_index": index, "arguments": args}),
            ));
        }
        events.push((
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        ));
    }
    events.push((
        "response.completed",
        json!({"response": responses_envelope(reply, "completed", items)}),
    ));
    for (seq, (name, data)) in events.iter_mut().enumerate() {
        data["type"] = json!(*name);
        data["sequence_number"] = json!(seq);
    }
    events
}

// --- OpenAI Chat Completions --------------------------------------------------------------

/// The non-streaming answer: one `chat.completion` object.
pub(super) fn chat_completion(reply: &Reply<'_>) -> Value {
    let mut message = json!({"role": "assistant", "content": reply.text()});
    let finish = if reply.turn.calls.is_empty() {
        "stop"
    } else {
        let calls: Vec<Value> = reply
            .turn
            .calls
            .iter()
            .map(|c| {
                json!({
                    "id": reply.call_id(Api::Chat, &c.id),
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.input.to_string()},
                })
            })
            .collect();
        message["tool_calls"] = json!(calls);
        "tool_calls"
    };
    let output = reply.output_tokens();
    json!({
        "id": format!("chatcmpl-fake-{}", reply.number),
        "object": "chat.completion",
        "created": 1_767_225_600,
        "model": reply.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": null}],
        "usage": {
            "prompt_tokens": reply.input_tokens,
            "completion_tokens": output,
            "total_tokens": reply.input_tokens.saturating_add(output),
        },
    })
}

// --- Gemini generateContent ---------------------------------------------------------------

/// The answer: one candidate; a turn with calls carries a thought signature on its first part,
/// which a client must send back with the turn.
pub(super) fn gemini_response(reply: &Reply<'_>) -> Value {
    let n = reply.number;
    let text = reply.text().map(|t| json!({"text": t}));
    let calls = reply.turn.calls.iter().enumerate().map(|(i, c)| {
        let mut part = json!({"functionCall": {
            "id": reply.call_id(Api::Gemini, &c.id),
            "name": c.name,
            "args": c.input,
        }});
        if i == 0 {
            part["thoughtSignature"] = json!(format!("fake-signature-{n}"));
        }
        part
    });
    let parts: Vec<Value> = text.into_iter().chain(calls).collect();
    let output = reply.output_tokens();
    json!({
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                        "index": 0}],
        "usageMetadata": {
            "promptTokenCount": reply.input_tokens,
            "candidatesTokenCount": output,
            "totalTokenCount": reply.input_tokens.saturating_add(output),
        },
        "modelVersion": reply.model,
        "responseId": format!("fake-response-{n}"),
    })
}
