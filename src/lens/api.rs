//! What the `anthropic` and `openai` backends share around their wire formats: the key and
//! model checks, the endpoint and client, the structured-output fallback, and `doctor`'s checks.
//! Each vendor file says only how its requests and answers look ([`ApiVendor`]).

use std::marker::PhantomData;

use reqwest::Url;
use reqwest::header::HeaderMap;

use super::backend::{Backend, CallEnv, Pending, Runs};
use super::http::{self, ApiEnv, Call, CallError, EnvVars, RetryPolicy, origin_of};
use super::preflight::{Check, PreflightEnv};
use super::{Answer, AuthClass, BackendKind, Failure, LensRequest, LensSpec};

/// One vendor's API: where it is, how it is asked, how it answers.
pub(crate) trait ApiVendor: 'static {
    const KIND: BackendKind;
    const VARS: EnvVars;
    /// Used when the base URL variable is unset.
    const DEFAULT_BASE_URL: &'static str;
    /// The endpoint under the base URL.
    const PATH: &'static str;

    /// This vendor's credentials among everything a call has.
    fn api_env<'a>(env: &CallEnv<'a>) -> &'a ApiEnv;

    /// This vendor's credentials among what `doctor` read.
    fn preflight_env(env: &PreflightEnv) -> &ApiEnv;

    /// The request headers: the key (as a sensitive header), the version, the content type.
    fn headers(key: &str) -> Result<HeaderMap, Failure>;

    /// The request body asking `model` about `prompt`; with `structured`, the answer is asked
    /// for as the lens-response JSON Schema.
    fn body(
        spec: &LensSpec,
        model: &str,
        prompt: &str,
        structured: bool,
    ) -> Result<Vec<u8>, Failure>;

    /// Whether a failed call says the server or model does not take structured output: the
    /// question is then asked once more without it (the prompt carries the schema too).
    fn rejects_structured_output(err: &CallError) -> bool;

    /// Reads a 2xx body as the lens's answer.
    fn answer(body: &[u8], key: &str) -> Result<Answer, Failure>;
}

/// The backend of an API vendor `V`.
pub(crate) struct ApiBackend<V>(PhantomData<fn() -> V>);

impl<V> ApiBackend<V> {
    pub const NEW: Self = Self(PhantomData);
}

impl<V: ApiVendor> Backend for ApiBackend<V> {
    fn kind(&self) -> BackendKind {
        V::KIND
    }

    fn auth_class(&self) -> AuthClass {
        AuthClass::Api
    }

    fn runs(&self) -> Runs {
        Runs::Http
    }

    fn billed_to(&self) -> Option<&'static str> {
        Some(V::VARS.key)
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
    call_with::<V>(spec, model, req, V::api_env(&env), env.retry).await
}

/// One call with `model`, against the API in `api`, retrying under `policy`.
pub(crate) async fn call_with<V: ApiVendor>(
    spec: &LensSpec,
    model: &str,
    req: &LensRequest,
    api: &ApiEnv,
    policy: &RetryPolicy,
) -> Result<Answer, Failure> {
    let Some(key) = api.key() else {
        return Err(Failure::fatal(format!("{} is not set", V::VARS.key)));
    };
    let model = model.trim();
    if model.is_empty() {
        return Err(Failure::fatal("no model is configured for this lens"));
    }
    let base = api.base_url.as_deref().unwrap_or(V::DEFAULT_BASE_URL);
    let url = http::endpoint(base, V::PATH, V::VARS)?;
    let headers = V::headers(key)?;
    let client = http::client(&url, spec.timeout)?;

    let mut structured = true;
    let body = loop {
        let bytes = V::body(spec, model, &req.prompt, structured)?;
        let call = Call {
            client: &client,
            url: &url,
            headers: &headers,
            body: &bytes,
            vars: V::VARS,
            model,
            key,
        };
        match http::post_with_retries(&call, policy).await {
            Ok(body) => break body,
            Err(err) if structured && V::rejects_structured_output(&err) => structured = false,
            Err(err) => return Err(err.failure),
        }
    };
    V::answer(&body, key)
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
    let api = V::preflight_env(env);
    let mut problems = Vec::new();
    if api.key().is_none() {
        problems.push(format!("{} is not set", V::VARS.key));
    }
    let base = match base_origin::<V>(api) {
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
                V::VARS.key
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
    let api = V::preflight_env(env);
    let name = V::KIND.as_str();
    let key = V::VARS.key;
    match base_origin::<V>(api) {
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
        _ => Err(format!("{} is not an http(s) URL", V::VARS.base_url)),
    }
}
