//! What the API backends (`anthropic`, `openai`, `gemini`) share around their wire formats: the
//! key and model checks, the endpoint and client, the tool loop, the structured-output fallback,
//! and `doctor`'s checks. Each vendor file says only where its API is, how its requests and
//! answers look and which variables it reads ([`ApiVendor`]); its registry arm makes it a backend.

use std::borrow::Cow;
use std::marker::PhantomData;

use reqwest::Url;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};

use super::api_call::{self, Call, CallError, RetryPolicy};
use super::backend::{Backend, CallEnv, Pending, Runs};
use super::keys::{ApiEnv, EnvVars, Sources, origin_of};
use super::preflight::{Check, PreflightEnv};
use super::process::timed_out;
use super::tools::{
    RepoTools, TOKENS_SPENT, ToolBudget, ToolCaps, ToolDef, ToolLimits, ToolResult, ToolSession,
};
use super::{
    Answer, AuthClass, BackendKind, Failure, FailureKind, LensRequest, LensSpec, Usage, Vendor,
};
use crate::credentials::{Holds, SecretVar, var};
use crate::lens::contract::{schema_given, with_repository};

/// One vendor's API: where it is, how it is asked, how it answers.
pub(crate) trait ApiVendor: 'static {
    const KIND: BackendKind;
    /// Who made the models it serves (an OpenAI-compatible server counts as OpenAI's: the
    /// operator chose it in that vendor's place).
    const VENDOR: Vendor;
    /// The variables its key and base URL are read from, unless a lens names its own.
    const VARS: EnvVars;
    /// Used when the base URL variable is unset.
    const DEFAULT_BASE_URL: &'static str;

    /// The endpoint under the base URL that `model` is asked at.
    fn path(model: &str) -> Cow<'static, str>;

    /// The request headers: the key (as a sensitive header, read from `from`), the version,
    /// the content type.
    fn headers(key: &str, from: &Sources) -> Result<HeaderMap, Failure>;

    /// The request body asking `model` to continue `messages` (the first is the prompt); with
    /// `structured`, the answer is asked for in that JSON Schema; `tools` are the
    /// repository tools in the vendor's own shape, when the lens may use them.
    fn body(
        spec: &LensSpec,
        model: &str,
        messages: &[Value],
        structured: Option<&Value>,
        tools: Option<&[Value]>,
    ) -> Result<Vec<u8>, Failure>;

    /// The conversation's opening message: the prompt.
    fn prompt_message(prompt: &str) -> Value {
        json!({"role": "user", "content": prompt})
    }

    /// A tool in the vendor's shape.
    fn tool_def(def: &ToolDef) -> Value;

    /// A 2xx body that asks for tool calls, read as such; `None` when it is a final answer.
    fn tool_use(body: &[u8]) -> Option<ToolUse>;

    /// Appends the model's tool-use turn and the results of its calls (in order) to `messages`.
    fn push_results(messages: &mut Vec<Value>, turn: ToolUse, results: Vec<ToolResult>);

    /// Whether a failed call says the server does not take tools (an OpenAI-compatible server
    /// without tool support): the lens then reviews the diff alone.
    fn rejects_tools(err: &CallError) -> bool {
        let detail = err.detail.to_ascii_lowercase();
        matches!(err.status, Some(400 | 422 | 501))
            && ["tool", "function"].iter().any(|w| detail.contains(w))
    }

    /// Whether a failed call says the server or model does not take structured output: the
    /// question is then asked once more without it (the prompt carries the schema too).
    fn rejects_structured_output(err: &CallError) -> bool;

    /// Reads a 2xx body as the lens's answer.
    fn answer(body: &[u8], key: &str) -> Result<Answer, Failure>;
}

/// A turn of the model asking for tool calls.
#[derive(Debug, Clone)]
pub(crate) struct ToolUse {
    /// The assistant's message as the API gave it, sent back verbatim.
    pub assistant: Value,
    pub calls: Vec<ToolCall>,
    pub usage: Option<Usage>,
}

/// One tool call the model asked for.
#[derive(Debug, Clone)]
pub(crate) struct ToolCall {
    pub id: String,
    pub name: String,
    /// An object, or a JSON string holding one (the tools accept both).
    pub input: Value,
}

/// The backend of an API vendor `V`.
pub(crate) struct ApiBackend<V>(PhantomData<fn() -> V>);

impl<V> ApiBackend<V> {
    pub const NEW: Self = Self(PhantomData);
}

impl<V: ApiVendor> Backend for ApiBackend<V> {
    fn auth_class(&self) -> AuthClass {
        AuthClass::Api
    }

    fn runs(&self) -> Runs {
        Runs::Http
    }

    fn vendor(&self) -> Vendor {
        V::VENDOR
    }

    fn api_vars(&self) -> Option<EnvVars> {
        Some(V::VARS)
    }

    /// The key, and the base URL (a gateway's may hold a password).
    fn secret_vars(&self) -> Vec<SecretVar> {
        vec![
            var(V::VARS.key, Holds::Value, true),
            var(V::VARS.base_url, Holds::Url, true),
        ]
    }

    fn call<'a>(
        &'a self,
        spec: &'a LensSpec,
        req: &'a LensRequest,
        env: CallEnv<'a>,
    ) -> Pending<'a, Result<Answer, Failure>> {
        Box::pin(call::<V>(spec, req, env))
    }

    fn preflight<'a>(
        &'a self,
        subject: &'a str,
        spec: &'a LensSpec,
        env: &'a PreflightEnv,
    ) -> Pending<'a, Vec<Check>> {
        Box::pin(async move { preflight::<V>(subject, spec, env) })
    }

    fn fallback_check(&self, subject: &str, model: &str, env: &PreflightEnv) -> Option<Check> {
        Some(fallback_check::<V>(subject, model, env))
    }
}

/// One call of an API lens with the lens's model, retrying transient failures under the
/// panel's policy.
pub(crate) async fn call<V: ApiVendor>(
    spec: &LensSpec,
    req: &LensRequest,
    env: CallEnv<'_>,
) -> Result<Answer, Failure> {
    let Some(model) = spec.model.as_deref() else {
        return Err(Failure::fatal(format!(
            "lens {} has no model for the {} API",
            spec.name,
            V::KIND.as_str()
        )));
    };
    call_with::<V>(
        spec,
        model,
        req,
        &env.apis.for_lens(spec, V::VARS),
        env.retry,
        ToolCaps {
            max_tool_calls: env.max_tool_calls,
            max_call_tokens: env.max_call_tokens,
        },
    )
    .await
}

/// One call with `model`, against the API in `api`, retrying under `policy`, reading the
/// snapshot through the repository tools when the request has one, within `caps`.
pub(crate) async fn call_with<V: ApiVendor>(
    spec: &LensSpec,
    model: &str,
    req: &LensRequest,
    api: &ApiEnv,
    policy: &RetryPolicy,
    caps: ToolCaps,
) -> Result<Answer, Failure> {
    let max_tool_calls = caps.max_tool_calls;
    let Some(key) = api.key() else {
        return Err(Failure::fatal(format!("{} is not set", api.from.key)));
    };
    let model = model.trim();
    if model.is_empty() {
        return Err(Failure::fatal("no model is configured for this lens"));
    }
    let base = api.base_url.as_deref().unwrap_or(V::DEFAULT_BASE_URL);
    let url = api_call::endpoint(base, &V::path(model), &api.from)?;
    let headers = V::headers(key, &api.from)?;
    let client = api_call::client(&url, spec.timeout)?;
    let post = |bytes: Vec<u8>| {
        let (client, url, headers) = (&client, &url, &headers);
        async move {
            let call = Call {
                client,
                url,
                headers,
                body: &bytes,
                from: &api.from,
                model,
                key,
            };
            api_call::post_with_retries(&call, policy).await
        }
    };

    // With tools, the lens's timeout bounds the whole loop, not each of its requests: every
    // request, and every tool call, which also stops when this call ends any other way.
    let deadline = tokio::time::Instant::now() + spec.timeout;
    let mut session = req.checkout.as_ref().map(|root| {
        let tools = RepoTools::new(root.to_path_buf(), ToolLimits::default());
        ToolSession::new(tools, ToolBudget::new(max_tool_calls)).with_deadline(deadline.into_std())
    });
    let _stop_tools = session.as_ref().map(|s| s.cancel().on_drop());
    let defs: Vec<Value> = session
        .as_ref()
        .map(|s| s.tools().definitions().iter().map(V::tool_def).collect())
        .unwrap_or_default();
    let mut notice = None;
    let mut structured = true;
    let schema = req.answer.schema();
    let mut usage: Option<Usage> = None;
    // The prompt says whether the lens reads the repository; a server that refuses tools gets
    // the other paragraph.
    // With structured output the server holds the schema: the prompt does not repeat it.
    let first = |structured: bool, reads: bool| {
        let prompt = with_repository(&req.prompt, reads);
        V::prompt_message(&match structured {
            true => schema_given(&prompt),
            false => prompt,
        })
    };
    let mut messages = vec![first(structured, session.is_some())];
    // The budget answers calls past it with "give your final answer"; a model that keeps
    // asking is then asked once without tools, so the loop always ends.
    let max_turns = max_tool_calls.saturating_add(2);
    let timeout = || Failure::new(FailureKind::Timeout, timed_out(spec.timeout));
    let mut turns = 0;
    // Past `max_call_tokens` of input, the calls asked are answered "give your final answer"
    // and no tools are offered again.
    let mut tokens_spent = false;
    let body = loop {
        turns += 1;
        let offer = session.is_some() && turns <= max_turns && !tokens_spent;
        let tools = offer.then_some(defs.as_slice());
        let bytes = V::body(spec, model, &messages, structured.then_some(&schema), tools)?;
        let sent = match session.is_some() {
            true => tokio::time::timeout_at(deadline, post(bytes))
                .await
                .map_err(|_| timeout())?,
            false => post(bytes).await,
        };
        let body = match sent {
            Ok(body) => body,
            Err(err) if structured && V::rejects_structured_output(&err) => {
                structured = false;
                messages[0] = first(false, session.is_some());
                continue;
            }
            Err(err) if session.is_some() && V::rejects_tools(&err) => {
                session = None;
                notice = Some(super::LensNotice::NoTools {
                    lens: spec.name.clone(),
                    backend: V::KIND,
                });
                messages = vec![first(structured, false)];
                continue;
            }
            Err(err) => return Err(err.failure),
        };
        // Tool calls are answered only while tools are offered; past that the body is read as
        // the final answer (and fails as one when it is none).
        let Some(turn) = offer.then(|| V::tool_use(&body)).flatten() else {
            break body;
        };
        let Some(open) = session.take() else {
            break body;
        };
        add_usage(&mut usage, turn.usage);
        tokens_spent = usage.is_some_and(|u| u.input_tokens >= caps.max_call_tokens);
        if tokens_spent {
            let results = turn
                .calls
                .iter()
                .map(|_| ToolResult::error(TOKENS_SPENT))
                .collect();
            session = Some(open);
            V::push_results(&mut messages, turn, results);
            continue;
        }
        let calls = turn.calls.clone();
        // The tools read files: off the async workers. A blocking thread cannot be stopped
        // from here: at the deadline this call stops waiting, and `_stop_tools` stops the work.
        let work = tokio::task::spawn_blocking(move || {
            let mut open = open;
            let results: Vec<ToolResult> =
                calls.iter().map(|c| open.call(&c.name, &c.input)).collect();
            (open, results)
        });
        let (open, results) = tokio::time::timeout_at(deadline, work)
            .await
            .map_err(|_| timeout())?
            .map_err(|_| Failure::fatal("a repository tool crashed"))?;
        session = Some(open);
        V::push_results(&mut messages, turn, results);
    };
    let mut answer = V::answer(&body, key)?;
    add_usage(&mut usage, answer.usage);
    answer.usage = usage;
    if let Some(open) = session {
        answer.tool_calls = Some(u32::try_from(open.records().len()).unwrap_or(u32::MAX));
        answer.tool_records = open.into_records();
    }
    answer.notice = notice;
    Ok(answer)
}

/// One call with `model` under `policy` and the default caps.
#[cfg(test)]
pub(crate) async fn run_with_policy<V: ApiVendor>(
    spec: &LensSpec,
    model: &str,
    req: &LensRequest,
    api: &ApiEnv,
    policy: &RetryPolicy,
) -> Result<Answer, Failure> {
    call_with::<V>(spec, model, req, api, policy, ToolCaps::default()).await
}

fn add_usage(sum: &mut Option<Usage>, more: Option<Usage>) {
    if let Some(u) = more {
        let s = sum.get_or_insert_default();
        s.input_tokens += u.input_tokens;
        s.output_tokens += u.output_tokens;
    }
}

/// The request body as JSON bytes.
pub(crate) fn encode(request: &impl serde::Serialize) -> Result<Vec<u8>, Failure> {
    serde_json::to_vec(request)
        .map_err(|e| Failure::fatal(format!("could not encode the request: {e}")))
}

/// `doctor`'s line for an API lens: the key is set, the base URL parses, a model is configured.
/// Nothing is called.
pub(crate) fn preflight<V: ApiVendor>(
    subject: &str,
    spec: &LensSpec,
    env: &PreflightEnv,
) -> Vec<Check> {
    let name = V::KIND.as_str();
    let api = env.apis.for_lens(spec, V::VARS);
    let mut problems = Vec::new();
    if api.key().is_none() {
        problems.push(format!("{} is not set", api.from.key));
    }
    let base = match base_origin::<V>(&api) {
        Ok(origin) => origin,
        Err(problem) => {
            problems.push(problem);
            String::new()
        }
    };
    let model = spec
        .model
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty());
    if model.is_none() {
        problems.push("no `model` is configured for this lens".to_owned());
    }
    vec![if problems.is_empty() {
        Check::ok(
            subject,
            format!(
                "{name} API at {base}, model {}; {} set (not called: a wrong key shows on the \
                 first review)",
                model.unwrap_or_default(),
                api.from.key
            ),
        )
    } else {
        Check::fail(subject, format!("{name}: {}", problems.join("; ")))
    }]
}

/// For a subscription lens falling back to this API with `model`: whether the fallback could run.
pub(crate) fn fallback_check<V: ApiVendor>(
    subject: &str,
    model: &str,
    env: &PreflightEnv,
) -> Check {
    let api = env.apis.of_vendor(V::VARS);
    let name = V::KIND.as_str();
    let key = V::VARS.key;
    match base_origin::<V>(&api) {
        _ if api.key().is_none() => Check::warn(
            subject,
            format!("api fallback to {name} (model {model}) could not run: {key} is not set"),
        ),
        Err(problem) => Check::warn(
            subject,
            format!("api fallback to {name} (model {model}) could not run: {problem}"),
        ),
        Ok(origin) => Check::ok(
            subject,
            format!(
                "api fallback to {name} (model {model}) could run: {key} set, {origin}; its calls \
                 are billed to that key"
            ),
        ),
    }
}

/// `scheme://host[:port]` of the API's base URL, or why it is unusable.
fn base_origin<V: ApiVendor>(api: &ApiEnv) -> Result<String, String> {
    let base = api.base_url.as_deref().unwrap_or(V::DEFAULT_BASE_URL);
    match Url::parse(base) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host_str().is_some() => {
            Ok(origin_of(&url))
        }
        _ => Err(format!("{} is not an http(s) URL", api.from.base_url)),
    }
}

#[cfg(test)]
mod tests;
