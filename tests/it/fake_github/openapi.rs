//! The fake held to GitHub's own REST description (the `api.github.com` JSON of the npm package
//! `@octokit/openapi`, named by `REVIEWBOT_GITHUB_OPENAPI`; `.ci/run` installs it and sets it).
//!
//! Every request the fake serves must be an operation of the description (method and path
//! template, matched per segment), with only the query parameters it declares (values of their
//! type) and a JSON body its request schema accepts; every 2xx JSON answer must be one of the
//! operation's declared answers and validate against that answer's schema. A miss is a
//! violation, kept in the world; the fake's `Drop` fails the test on any.
//!
//! The description is OpenAPI 3.0: its schemas are JSON Schema draft 4 plus `nullable`, which is
//! rewritten into draft 4 here, after every (local) `$ref` is inlined.

use std::collections::HashMap;
use std::io::Write as _;
use std::sync::{Arc, Mutex, OnceLock};

use jsonschema::Validator;
use percent_encoding::percent_decode_str;
use serde_json::{Map, Value};

/// Names the `api.github.com` JSON description file.
pub const ENV: &str = "REVIEWBOT_GITHUB_OPENAPI";

/// Schema errors reported per request or answer: enough to see the pattern.
const MAX_ERRORS: usize = 10;
/// A schema error quotes the whole value it rejects; past this many characters it is cut.
const MAX_MESSAGE: usize = 240;

/// A loaded description: its path templates, and validators compiled on first use.
pub(super) struct Description {
    doc: Value,
    operations: Vec<Operation>,
    validators: Mutex<HashMap<String, Arc<Validator>>>,
}

/// One operation: `GET /repos/{owner}/{repo}` and where it sits in the document.
pub(super) struct Operation {
    pub method: String,
    pub template: String,
    segments: Vec<Segment>,
    /// JSON pointer of the operation object (`/paths/~1repos~1…/get`).
    pointer: String,
}

enum Segment {
    Literal(String),
    /// One parameter, the whole segment (`{owner}`).
    Param(String),
    /// Parameters between literal text (`{base}...{head}`): the literal pieces, in order.
    Mixed(Vec<String>),
}

/// The description, loaded once per test process; `None` (said once) when the variable is unset.
pub(super) fn description() -> Option<&'static Description> {
    static LOADED: OnceLock<Option<Description>> = OnceLock::new();
    LOADED
        .get_or_init(|| {
            let Some(path) = std::env::var_os(ENV) else {
                // Straight to stderr: the test harness would capture `eprintln!` and show it
                // only for a failing test.
                let _ = writeln!(
                    std::io::stderr(),
                    "fake github: {ENV} is not set, so requests and answers are not checked \
                     against GitHub's REST description"
                );
                return None;
            };
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("fake github: {ENV}={}: {e}", path.display()));
            let doc: Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("fake github: {ENV}={}: {e}", path.display()));
            Some(Description::new(doc))
        })
        .as_ref()
}

impl Description {
    fn new(doc: Value) -> Description {
        let mut operations = Vec::new();
        for (template, item) in doc["paths"].as_object().into_iter().flatten() {
            for method in item.as_object().into_iter().flatten().map(|(m, _)| m) {
                if !matches!(
                    method.as_str(),
                    "get" | "put" | "post" | "delete" | "patch" | "head" | "options"
                ) {
                    continue;
                }
                let segments = template
                    .trim_start_matches('/')
                    .split('/')
                    .map(segment)
                    .collect();
                operations.push(Operation {
                    method: method.to_ascii_uppercase(),
                    template: template.clone(),
                    segments,
                    pointer: format!("/paths/{}/{method}", escape(template)),
                });
            }
        }
        Description {
            doc,
            operations,
            validators: Mutex::new(HashMap::new()),
        }
    }

    /// The operation a request is for: the template matching the most literal segments. A
    /// trailing `{path}` or `{ref}` may span segments, as a file path or a branch name does on
    /// GitHub, when no template matches segment for segment.
    pub fn operation(&self, method: &str, path: &str) -> Option<&Operation> {
        let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        let candidates = self.operations.iter().filter(|op| op.method == method);
        let exact = candidates
            .clone()
            .filter(|op| op.matches(&segments, false))
            .max_by_key(|op| op.literals());
        exact.or_else(|| {
            candidates
                .filter(|op| op.matches(&segments, true))
                .max_by_key(|op| op.literals())
        })
    }

    /// What is wrong with a request for `op`: undeclared or ill-typed query parameters, a body
    /// where none is taken, or one its schema rejects.
    pub fn check_request(
        &self,
        op: &Operation,
        query: &[(String, String)],
        body: &[u8],
    ) -> Vec<String> {
        let mut problems = Vec::new();
        let declared = self.query_parameters(op);
        for (key, raw) in query {
            let key = decode(key);
            let Some(schema) = declared.get(&key) else {
                problems.push(format!("query parameter `{key}` is not declared"));
                continue;
            };
            let value = decode(raw);
            let instance = typed(schema, &value);
            let cache = format!("{} query {key}", op.pointer);
            for e in self.errors(&cache, schema, &instance) {
                problems.push(format!("query parameter `{key}={value}`: {e}"));
            }
        }
        let request_body = self.resolved(&self.operation_object(op)["requestBody"]);
        let schema = self.resolved(&request_body["content"]["application/json"]["schema"]);
        let sent = !body.iter().all(u8::is_ascii_whitespace);
        match (sent, request_body.is_null()) {
            (false, false) if request_body["required"] == Value::Bool(true) => {
                problems.push("no body, but the operation requires one".to_owned());
            }
            (true, true) => problems.push("a body, but the operation takes none".to_owned()),
            (true, false) if !schema.is_null() => match serde_json::from_slice::<Value>(body) {
                Err(e) => problems.push(format!("a body that is not JSON: {e}")),
                Ok(instance) => {
                    let cache = format!("{} request", op.pointer);
                    for e in self.errors(&cache, &schema, &instance) {
                        problems.push(format!("request body: {e}"));
                    }
                }
            },
            _ => {}
        }
        problems
    }

    /// What is wrong with a 2xx answer `status` to `op` (its JSON body, when it has one).
    pub fn check_response(&self, op: &Operation, status: u16, body: Option<&Value>) -> Vec<String> {
        let responses = &self.operation_object(op)["responses"];
        let declared = self.resolved(&responses[status.to_string()]);
        if declared.is_null() {
            let listed: Vec<&String> = responses
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| k)
                .collect();
            return vec![format!(
                "answered {status}, which is not among its answers {listed:?}"
            )];
        }
        let schema = self.resolved(&declared["content"]["application/json"]["schema"]);
        match body {
            None => Vec::new(),
            Some(_) if schema.is_null() => {
                vec![format!(
                    "answered {status} with a JSON body, but that answer has none"
                )]
            }
            Some(instance) => {
                let cache = format!("{} answer {status}", op.pointer);
                self.errors(&cache, &schema, instance)
                    .into_iter()
                    .map(|e| format!("answer {status}: {e}"))
                    .collect()
            }
        }
    }

    fn operation_object(&self, op: &Operation) -> &Value {
        self.doc
            .pointer(&op.pointer)
            .expect("an operation of the description")
    }

    /// The query parameters `op` declares (the path item's and its own), with their schemas.
    fn query_parameters(&self, op: &Operation) -> HashMap<String, Value> {
        let item_pointer = &op.pointer[..op.pointer.rfind('/').expect("a pointer")];
        [item_pointer, op.pointer.as_str()]
            .iter()
            .filter_map(|p| self.doc.pointer(p)?.get("parameters")?.as_array())
            .flatten()
            .map(|p| self.resolved(p))
            .filter(|p| p["in"] == "query")
            .filter_map(|p| Some((p["name"].as_str()?.to_owned(), p["schema"].clone())))
            .collect()
    }

    /// `value` itself, or what its `$ref` points at (one level: components hold no ref chains
    /// that matter here).
    fn resolved(&self, value: &Value) -> Value {
        match value.get("$ref").and_then(Value::as_str) {
            Some(r) => self
                .doc
                .pointer(r.trim_start_matches('#'))
                .cloned()
                .unwrap_or(Value::Null),
            None => value.clone(),
        }
    }

    /// The errors of `instance` against `schema` (an OpenAPI schema), the first few; the
    /// compiled validator is kept under `cache`.
    fn errors(&self, cache: &str, schema: &Value, instance: &Value) -> Vec<String> {
        let validator = {
            let mut validators = self.validators.lock().unwrap_or_else(|e| e.into_inner());
            validators
                .entry(cache.to_owned())
                .or_insert_with(|| {
                    let converted = draft4(&self.doc, schema, &mut Vec::new());
                    let validator = jsonschema::draft4::options()
                        .should_validate_formats(true)
                        .build(&converted)
                        .unwrap_or_else(|e| panic!("fake github: {cache}: schema: {e}"));
                    Arc::new(validator)
                })
                .clone()
        };
        validator
            .iter_errors(instance)
            .take(MAX_ERRORS)
            .map(|e| describe(&e))
            .collect()
    }
}

/// One segment of a path template.
fn segment(s: &str) -> Segment {
    let name = s.strip_prefix('{').and_then(|s| s.strip_suffix('}'));
    match name {
        Some(name) if !name.contains('{') => Segment::Param(name.to_owned()),
        _ if !s.contains('{') => Segment::Literal(s.to_owned()),
        // `a{x}b{y}c` → the pieces outside braces: `a`, `b`, `c`.
        _ => Segment::Mixed(
            s.split('{')
                .enumerate()
                .map(|(i, part)| match part.split_once('}') {
                    Some((_, after)) if i > 0 => after.to_owned(),
                    _ => part.to_owned(),
                })
                .collect(),
        ),
    }
}

impl Segment {
    fn matches(&self, p: &str) -> bool {
        match self {
            Segment::Literal(l) => l == p,
            Segment::Param(_) => !p.is_empty(),
            Segment::Mixed(pieces) => {
                let (first, rest) = pieces.split_first().expect("a piece");
                let Some(mut tail) = p.strip_prefix(first.as_str()) else {
                    return false;
                };
                for (i, piece) in rest.iter().enumerate() {
                    if i + 1 == rest.len() {
                        // The last parameter takes what is left before the closing piece.
                        return tail.len() > piece.len() && tail.ends_with(piece.as_str());
                    }
                    // A parameter of at least one character, then the piece.
                    match tail.get(1..).and_then(|t| t.find(piece.as_str())) {
                        Some(at) => tail = &tail[1 + at + piece.len()..],
                        None => return false,
                    }
                }
                true
            }
        }
    }

    /// How specific it is: a literal beats literal text around parameters, which beats a
    /// parameter alone.
    fn weight(&self) -> usize {
        match self {
            Segment::Literal(_) => 2,
            Segment::Mixed(_) => 1,
            Segment::Param(_) => 0,
        }
    }
}

impl Operation {
    fn matches(&self, path: &[&str], spanning: bool) -> bool {
        let n = self.segments.len();
        let trailing =
            matches!(self.segments.last(), Some(Segment::Param(p)) if p == "path" || p == "ref");
        let lengths_ok = path.len() == n || (spanning && trailing && path.len() > n);
        lengths_ok && self.segments.iter().zip(path).all(|(s, p)| s.matches(p))
    }

    fn literals(&self) -> usize {
        self.segments.iter().map(Segment::weight).sum()
    }

    /// `GET /repos/{owner}/{repo}` for messages.
    pub fn name(&self) -> String {
        format!("{} {}", self.method, self.template)
    }
}

/// An OpenAPI 3.0 schema as a draft 4 one: every `$ref` inlined (a reference back into itself
/// becomes `{}`, which accepts anything), `nullable: true` as "null or the rest", examples dropped.
fn draft4(doc: &Value, schema: &Value, seen: &mut Vec<String>) -> Value {
    match schema {
        Value::Object(o) => {
            if let Some(r) = o.get("$ref").and_then(Value::as_str) {
                if seen.iter().any(|s| s == r) {
                    return Value::Object(Map::new());
                }
                let target = doc
                    .pointer(r.trim_start_matches('#'))
                    .cloned()
                    .unwrap_or(Value::Null);
                seen.push(r.to_owned());
                let out = draft4(doc, &target, seen);
                seen.pop();
                return out;
            }
            let mut out = Map::new();
            for (k, v) in o {
                match k.as_str() {
                    "example" | "examples" | "nullable" | "description" | "title" => {}
                    // Values, not schemas.
                    "enum" | "default" | "required" => {
                        out.insert(k.clone(), v.clone());
                    }
                    // Names of schemas, not schemas.
                    "properties" | "patternProperties" => {
                        let props = v
                            .as_object()
                            .into_iter()
                            .flatten()
                            .map(|(name, s)| (name.clone(), draft4(doc, s, seen)))
                            .collect();
                        out.insert(k.clone(), Value::Object(props));
                    }
                    _ => {
                        out.insert(k.clone(), draft4(doc, v, seen));
                    }
                }
            }
            if o.get("nullable") == Some(&Value::Bool(true)) {
                let composed = ["allOf", "anyOf", "oneOf"]
                    .iter()
                    .any(|k| out.contains_key(*k));
                if let (Some(Value::String(t)), false) = (out.get("type"), composed) {
                    // A plain typed schema: the type may also be null (kept flat, for messages
                    // that point inside the value rather than at a failed alternative).
                    let types = serde_json::json!([t, "null"]);
                    out.insert("type".to_owned(), types);
                    if let Some(Value::Array(values)) = out.get_mut("enum")
                        && !values.contains(&Value::Null)
                    {
                        values.push(Value::Null);
                    }
                    return Value::Object(out);
                }
                return serde_json::json!({"anyOf": [{"type": "null"}, out]});
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|s| draft4(doc, s, seen)).collect()),
        other => other.clone(),
    }
}

/// A query value as the JSON its schema types it (`per_page=100` is the integer 100).
fn typed(schema: &Value, value: &str) -> Value {
    let parsed = match schema["type"].as_str() {
        Some("integer") => value.parse::<i64>().ok().map(Value::from),
        Some("number") => value.parse::<f64>().ok().map(Value::from),
        Some("boolean") => value.parse::<bool>().ok().map(Value::from),
        _ => None,
    };
    parsed.unwrap_or_else(|| Value::String(value.to_owned()))
}

/// Where and why: for a value that fits none of the alternatives of a `oneOf` or `anyOf`, why it
/// fits none, each alternative's first error.
fn describe(e: &jsonschema::ValidationError<'_>) -> String {
    use jsonschema::error::ValidationErrorKind;
    let at = e.instance_path().to_string();
    let at = if at.is_empty() { "/".to_owned() } else { at };
    match e.kind() {
        ValidationErrorKind::OneOfNotValid { context } | ValidationErrorKind::AnyOf { context } => {
            let why: Vec<String> = context
                .iter()
                .enumerate()
                .filter_map(|(i, errors)| {
                    Some(format!("[{}] {}", i + 1, describe(errors.first()?)))
                })
                .collect();
            format!("at {at}: fits none of its alternatives: {}", why.join("; "))
        }
        _ => format!("at {at}: {}", shortened(&e.to_string())),
    }
}

/// `message` cut to [`MAX_MESSAGE`] characters.
fn shortened(message: &str) -> String {
    match message.char_indices().nth(MAX_MESSAGE) {
        Some((i, _)) => format!("{}…", &message[..i]),
        None => message.to_owned(),
    }
}

/// A path template as one JSON-pointer token.
fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn decode(s: &str) -> String {
    percent_decode_str(&s.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}
