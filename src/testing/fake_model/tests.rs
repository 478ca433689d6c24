//! The fake over real HTTP: each API's answer, reassembled as a client would, is the scripted
//! turn; turns are chosen by the conversation; the log holds what was sent, never a credential.

use serde_json::{Value, json};

use super::*;

fn script() -> Vec<Turn> {
    vec![
        Turn::calls([
            ToolCall::new("read1", "Read", json!({"file_path": "/s/a.rs"})),
            ToolCall::new("grep1", "Grep", json!({"pattern": "é", "path": "src"})),
        ])
        .with_text("Let me look."),
        Turn::text(r#"{"findings":[],"summary":"fine"}"#),
    ]
}

async fn post(url: &str, headers: &[(&str, &str)], body: &Value) -> (u16, String, String) {
    let mut req = reqwest::Client::new().post(url).json(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("send");
    let status = resp.status().as_u16();
    let ctype = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (status, ctype, resp.text().await.expect("body"))
}

/// `(event, data)` pairs of an SSE body; each event's name must match its data's `type`.
fn events(body: &str) -> Vec<(String, Value)> {
    body.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let event = e
                .lines()
                .find_map(|l| l.strip_prefix("event: "))
                .expect("event line");
            let data = e
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .expect("data line");
            let data: Value = serde_json::from_str(data).expect("data json");
            assert_eq!(data["type"], event, "{e}");
            (event.to_owned(), data)
        })
        .collect()
}

/// An Anthropic stream folded back into a message, as the SDKs do.
fn fold_anthropic(events: &[(String, Value)]) -> Value {
    let mut message = Value::Null;
    let mut partial: Vec<String> = Vec::new();
    for (name, data) in events {
        match name.as_str() {
            "message_start" => message = data["message"].clone(),
            "content_block_start" => {
                message["content"]
                    .as_array_mut()
                    .expect("content")
                    .push(data["content_block"].clone());
                partial.push(String::new());
            }
            "content_block_delta" => {
                let i = usize::try_from(data["index"].as_u64().expect("index")).expect("usize");
                let delta = &data["delta"];
                match delta["type"].as_str() {
                    Some("text_delta") => {
                        let t = message["content"][i]["text"].as_str().expect("text");
                        message["content"][i]["text"] =
                            json!(format!("{t}{}", delta["text"].as_str().expect("delta")));
                    }
                    Some("input_json_delta") => {
                        partial[i].push_str(delta["partial_json"].as_str().expect("partial"));
                    }
                    other => panic!("delta type {other:?}"),
                }
            }
            "content_block_stop" => {
                let i = usize::try_from(data["index"].as_u64().expect("index")).expect("usize");
                if message["content"][i]["type"] == "tool_use" {
                    message["content"][i]["input"] =
                        serde_json::from_str(&partial[i]).expect("tool input json");
                }
            }
            "message_delta" => {
                message["stop_reason"] = data["delta"]["stop_reason"].clone();
                message["usage"]["output_tokens"] = data["usage"]["output_tokens"].clone();
            }
            "message_stop" | "ping" => {}
            other => panic!("event {other}"),
        }
    }
    message
}

#[tokio::test]
async fn anthropic_stream_and_json_carry_the_scripted_turn() {
    let fake = FakeModel::start(script());
    let url = format!("{}/v1/messages?beta=true", fake.url());
    let head = reqwest::Client::new()
        .head(format!("{}/", fake.url()))
        .send()
        .await
        .expect("head");
    assert_eq!(head.status().as_u16(), 200);

    let first = json!({
        "model": "claude-fake", "stream": true, "max_tokens": 100,
        "system": [{"type": "text", "text": "You are Claude Code."}, {"type": "text", "text": "Be brief."}],
        "tools": [{"name": "Read", "input_schema": {}}, {"name": "Grep", "input_schema": {}}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Review it."}]}],
    });
    let (status, ctype, body) = post(&url, &[], &first).await;
    assert_eq!((status, ctype.as_str()), (200, "text/event-stream"));
    let ev = events(&body);
    let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(&names[names.len() - 2..], ["message_delta", "message_stop"]);
    let streamed = fold_anthropic(&ev);
    assert_eq!(
        streamed["content"],
        json!([
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_read1", "name": "Read", "input": {"file_path": "/s/a.rs"}},
            {"type": "tool_use", "id": "toolu_grep1", "name": "Grep", "input": {"pattern": "é", "path": "src"}},
        ])
    );
    assert_eq!(streamed["stop_reason"], "tool_use");

    // The same conversation without streaming gets the same turn as one message.
    let mut plain = first.clone();
    plain["stream"] = json!(false);
    let (status, _, body) = post(&url, &[], &plain).await;
    assert_eq!(status, 200);
    let message: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(message["content"], streamed["content"]);
    assert_eq!(message["stop_reason"], "tool_use");

    // One assistant turn in: the final turn, whatever the number of results.
    let second = json!({
        "model": "claude-fake", "stream": true,
        "messages": [
            {"role": "user", "content": "Review it."},
            {"role": "assistant", "content": streamed["content"]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_read1", "content": "1\tfn a() {}"},
                {"type": "tool_result", "tool_use_id": "toolu_grep1", "is_error": true,
                 "content": [{"type": "text", "text": "denied"}]},
            ]},
        ],
    });
    let (_, _, body) = post(&url, &[], &second).await;
    let done = fold_anthropic(&events(&body));
    assert_eq!(
        done["content"],
        json!([{"type": "text", "text": r#"{"findings":[],"summary":"fine"}"#}])
    );
    assert_eq!(done["stop_reason"], "end_turn");

    let log = fake.model_requests();
    assert_eq!(log.len(), 3);
    assert_eq!(log[0].path, "/v1/messages?beta=true");
    assert_eq!(log[0].tools, ["Read", "Grep"]);
    assert_eq!(log[0].system, "You are Claude Code.\nBe brief.");
    assert_eq!(log[0].user_text, ["Review it."]);
    assert_eq!(
        [log[0].model_turns, log[1].model_turns, log[2].model_turns],
        [0, 0, 1]
    );
    assert_eq!(
        fake.tool_results(),
        [
            ToolResult {
                id: "read1".into(),
                text: "1\tfn a() {}".into(),
                is_error: false
            },
            ToolResult {
                id: "grep1".into(),
                text: "denied".into(),
                is_error: true
            },
        ]
    );
    assert_eq!(
        fake.tool_result_containing("fn a()").map(|t| t.id),
        Some("read1".to_owned())
    );
    assert_eq!(fake.requests()[0].method, "HEAD");
}

/// A Responses stream folded back into its output items, as Codex does.
fn fold_responses(events: &[(String, Value)]) -> (Vec<Value>, Value) {
    let mut items: Vec<Value> = Vec::new();
    let mut args = String::new();
    let mut text = String::new();
    let mut usage = Value::Null;
    for (seq, (name, data)) in events.iter().enumerate() {
        assert_eq!(data["sequence_number"], json!(seq));
        match name.as_str() {
            "response.output_item.added" => {
                args.clear();
                text.clear();
            }
            "response.function_call_arguments.delta" => {
                args.push_str(data["delta"].as_str().expect("delta"));
            }
            "response.output_text.delta" => text.push_str(data["delta"].as_str().expect("delta")),
            "response.output_item.done" => {
                let item = data["item"].clone();
                if item["type"] == "function_call" {
                    assert_eq!(item["arguments"], json!(args));
                } else {
                    assert_eq!(item["content"][0]["text"], json!(text));
                }
                items.push(item);
            }
            "response.completed" => usage = data["response"]["usage"].clone(),
            _ => {}
        }
    }
    (items, usage)
}

#[tokio::test]
async fn responses_stream_carries_items_and_counts_runs_of_model_output() {
    let fake = FakeModel::start(vec![
        Turn::calls([
            ToolCall::new("c1", "exec_command", json!({"cmd": "cat a"})),
            ToolCall::new("c2", "exec_command", json!({"cmd": "cat b"})),
        ]),
        Turn::calls([ToolCall::new("c3", "exec_command", json!({"cmd": "env"}))])
            .with_text("One more."),
        Turn::text("final"),
    ]);
    let url = format!("{}/responses", fake.v1_url());
    let user = json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Review."}]});
    let first = json!({
        "model": "gpt-fake", "stream": true, "instructions": "You are Codex.",
        "tools": [{"type": "function", "name": "exec_command"}, {"type": "web_search"}],
        "input": [
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Sandbox: read-only."}]},
            user,
        ],
    });
    let (status, ctype, body) = post(&url, &[], &first).await;
    assert_eq!((status, ctype.as_str()), (200, "text/event-stream"));
    let ev = events(&body);
    assert_eq!(ev[0].0, "response.created");
    assert_eq!(ev[1].0, "response.in_progress");
    assert_eq!(ev.last().expect("last").0, "response.completed");
    let (items, usage) = fold_responses(&ev);
    let calls: Vec<(&str, &str, &str)> = items
        .iter()
        .map(|i| {
            (
                i["call_id"].as_str().expect("call_id"),
                i["name"].as_str().expect("name"),
                i["arguments"].as_str().expect("arguments"),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("call_c1", "exec_command", r#"{"cmd":"cat a"}"#),
            ("call_c2", "exec_command", r#"{"cmd":"cat b"}"#)
        ]
    );
    assert!(
        usage["input_tokens"].as_u64().expect("input") > 0,
        "{usage}"
    );

    // Two parallel calls and their outputs are one model turn.
    let output = |id: &str, text: &str| json!({"type": "function_call_output", "call_id": id, "output": text});
    let mut second = first.clone();
    second["input"] = json!([
        user,
        items[0],
        items[1],
        output("call_c1", "A"),
        output("call_c2", "B")
    ]);
    let (_, _, body) = post(&url, &[], &second).await;
    let (items2, _) = fold_responses(&events(&body));
    assert_eq!(items2[0]["content"][0]["text"], "One more.");
    assert_eq!(items2[1]["call_id"], "call_c3");

    // A message and a call in a row are one turn too: two runs so far, so the final turn.
    let mut third = second.clone();
    let input = third["input"].as_array_mut().expect("input");
    input.extend([
        items2[0].clone(),
        items2[1].clone(),
        output("call_c3", "PATH=/bin"),
    ]);
    let (_, _, body) = post(&url, &[], &third).await;
    let (items3, _) = fold_responses(&events(&body));
    assert_eq!(items3.len(), 1);
    assert_eq!(items3[0]["type"], "message");
    assert_eq!(items3[0]["content"][0]["text"], "final");

    let log = fake.model_requests();
    let turns: Vec<usize> = log.iter().map(|r| r.model_turns).collect();
    assert_eq!(turns, [0, 1, 2]);
    assert_eq!(log[0].tools, ["exec_command", "web_search"]);
    assert_eq!(log[0].system, "You are Codex.\nSandbox: read-only.");
    assert_eq!(log[0].user_text, ["Review."]);
    let texts: Vec<(String, String)> = fake
        .tool_results()
        .into_iter()
        .map(|t| (t.id, t.text))
        .collect();
    assert_eq!(
        texts,
        [
            ("c1".to_owned(), "A".to_owned()),
            ("c2".to_owned(), "B".to_owned()),
            ("c3".to_owned(), "PATH=/bin".to_owned())
        ]
    );

    // Without `stream`, the same turn as one response object.
    let mut plain = third.clone();
    plain["stream"] = json!(false);
    let (_, ctype, body) = post(&url, &[], &plain).await;
    assert_eq!(ctype, "application/json");
    let obj: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(obj["status"], "completed");
    assert_eq!(obj["output"], json!(items3));
}

#[tokio::test]
async fn chat_completions_answer_with_tool_calls_then_stop() {
    let fake = FakeModel::start(script());
    let url = format!("{}/chat/completions", fake.v1_url());
    let first = json!({
        "model": "gpt-fake",
        "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {}}}],
        "messages": [{"role": "system", "content": "Review."}, {"role": "user", "content": "The diff."}],
    });
    let (status, _, body) = post(&url, &[], &first).await;
    assert_eq!(status, 200);
    let answer: Value = serde_json::from_str(&body).expect("json");
    let choice = &answer["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["content"], "Let me look.");
    assert_eq!(
        choice["message"]["tool_calls"][0],
        json!({"id": "call_read1", "type": "function",
               "function": {"name": "Read", "arguments": r#"{"file_path":"/s/a.rs"}"#}})
    );
    let mut second = first.clone();
    let messages = second["messages"].as_array_mut().expect("messages");
    messages.push(choice["message"].clone());
    messages.push(json!({"role": "tool", "tool_call_id": "call_read1", "content": "fn a() {}"}));
    let (_, _, body) = post(&url, &[], &second).await;
    let answer: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(answer["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        answer["choices"][0]["message"]["content"],
        r#"{"findings":[],"summary":"fine"}"#
    );
    assert!(answer["choices"][0]["message"].get("tool_calls").is_none());
    let log = fake.model_requests();
    assert_eq!(log[0].tools, ["read_file"]);
    assert_eq!(log[0].system, "Review.");
    assert_eq!(log[1].model_turns, 1);
    assert_eq!(
        fake.tool_result("read1").map(|t| t.text),
        Some("fn a() {}".to_owned())
    );
}

#[tokio::test]
async fn errors_come_in_each_apis_shape_and_a_short_script_fails_loudly() {
    let fake = FakeModel::start(vec![Turn::error(
        529,
        "overloaded_error",
        "fake overloaded",
    )]);
    let (status, _, body) = post(
        &format!("{}/v1/messages", fake.url()),
        &[],
        &json!({"messages": [], "stream": true}),
    )
    .await;
    assert_eq!(status, 529);
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("json"),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "fake overloaded"},
               "request_id": "req_fake"})
    );
    let (status, _, body) = post(
        &format!("{}/responses", fake.v1_url()),
        &[],
        &json!({"input": [], "stream": true}),
    )
    .await;
    assert_eq!(status, 529);
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("json")["error"]["message"],
        "fake overloaded"
    );
    // A conversation past the script's end.
    let (status, _, body) = post(
        &format!("{}/chat/completions", fake.v1_url()),
        &[],
        &json!({"messages": [{"role": "assistant", "content": "x"}]}),
    )
    .await;
    assert_eq!(status, 400);
    assert!(body.contains("the script has 1 turns"), "{body}");
    let (status, _, _) = post(&format!("{}/v1/models", fake.url()), &[], &json!({})).await;
    assert_eq!(status, 404);
    let statuses: Vec<u16> = fake.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [529, 529, 400, 404]);
}

#[tokio::test]
async fn credentials_in_headers_are_named_never_kept() {
    let fake = FakeModel::start(script());
    let _ = post(
        &format!("{}/v1/messages", fake.url()),
        &[
            ("x-api-key", "sk-ant-SECRET-1"),
            ("authorization", "Bearer SECRET-2"),
            ("anthropic-version", "2023-06-01"),
        ],
        &json!({"messages": []}),
    )
    .await;
    let log = fake.requests();
    let r = &log[0];
    assert!(r.header_names.iter().any(|h| h == "x-api-key"));
    assert!(r.header_names.iter().any(|h| h == "authorization"));
    assert_eq!(r.header("x-api-key"), None);
    assert_eq!(r.header("Authorization"), None);
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
    let debug = format!("{log:?}");
    assert!(!debug.contains("SECRET"), "{debug}");
}

#[test]
fn a_sync_test_can_use_the_fake() {
    let fake = FakeModel::start(vec![Turn::text("hi")]);
    let mut stream =
        std::net::TcpStream::connect(fake.url().trim_start_matches("http://")).expect("connect");
    use std::io::{Read, Write};
    let body = r#"{"messages":[]}"#;
    write!(
        stream,
        "POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut answer = String::new();
    stream.read_to_string(&mut answer).expect("read");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#""text":"hi""#), "{answer}");
    assert_eq!(fake.model_requests().len(), 1);
}
