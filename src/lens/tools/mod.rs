//! reviewbot's own read-only tools for the API lenses (`anthropic`, `openai`): `read_file`,
//! `grep` and `list_files` over the round's snapshot directory, and the vendor-neutral parts of
//! the tool loop (the call budget and the record of calls for the evidence log).
//!
//! Everything here is synchronous; a backend calls it through `spawn_blocking`. Bad input from
//! the model never panics and never aborts the loop: it is an `is_error` result the model can
//! act on. Confinement to the root is [`confine`]'s job.
//!
//! Every result is masked ([`crate::redact::redact`]) before it is capped, as the prompt is:
//! the model never sees a secret of the snapshot that the prompt would have masked. A tool
//! that cuts a line masks what it read first (`grep` searches the masked file; `read_file`
//! reads [`text::MASK_SLACK`] bytes past its cut, and masks a range with the lines around it),
//! so a cut never shows part of a secret.

mod confine;
mod grep;
mod list;
mod read;
#[cfg(test)]
pub(crate) mod tests;
mod text;

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub const READ_FILE: &str = "read_file";
pub const GREP: &str = "grep";
pub const LIST_FILES: &str = "list_files";

/// `[context] max_tool_calls` when the config does not say.
pub const DEFAULT_MAX_TOOL_CALLS: u32 = 40;

/// Most input tokens one lens call's tool loop may send, all its turns together (`[context]
/// max_call_tokens`): each turn resends the conversation so far, so the sum grows with the
/// square of the turns.
pub const DEFAULT_MAX_CALL_TOKENS: u64 = 600_000;

/// What one API lens call's tool loop may spend: tool calls, and input tokens over all turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolCaps {
    pub max_tool_calls: u32,
    pub max_call_tokens: u64,
}

impl Default for ToolCaps {
    fn default() -> Self {
        ToolCaps {
            max_tool_calls: DEFAULT_MAX_TOOL_CALLS,
            max_call_tokens: DEFAULT_MAX_CALL_TOKENS,
        }
    }
}

/// What a tool call gets once its lens call has sent `max_call_tokens`.
pub const TOKENS_SPENT: &str = "token budget of this review spent; give your final answer now";

/// What a call answers once the budget is spent.
pub const BUDGET_SPENT: &str = "tool budget spent; give your final answer now";

/// The caps of every tool. One result never exceeds `max_result_bytes`, whatever the tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolLimits {
    /// Bytes of one result's content, every tool.
    pub max_result_bytes: usize,
    /// Lines one `read_file` answers.
    pub read_max_lines: usize,
    /// Bytes of one line `read_file` shows; the rest of the line is cut.
    pub read_line_bytes: usize,
    /// Bytes `read_file` reads through to count a file's lines; past them the count is "more than".
    pub read_scan_bytes: u64,
    /// Matching lines one `grep` answers.
    pub grep_max_matches: usize,
    /// Files larger than this are not searched.
    pub grep_max_file_bytes: u64,
    /// Bytes of one matching line `grep` shows.
    pub grep_line_bytes: usize,
    /// Bytes one `grep` reads over all files before it stops.
    pub grep_scan_bytes: u64,
    /// Longest regex `grep` compiles, in bytes.
    pub grep_pattern_bytes: usize,
    /// The regex crate's compiled-size limit for one pattern.
    pub grep_regex_size: usize,
    /// Paths one `list_files` answers.
    pub list_max_entries: usize,
    /// Directory entries one `grep` or `list_files` walks before it stops.
    pub walk_max_entries: usize,
    /// The longest one call may run; the lens's remaining time bounds it further.
    pub call_time: Duration,
}

impl Default for ToolLimits {
    fn default() -> Self {
        ToolLimits {
            max_result_bytes: 64 * 1024,
            read_max_lines: 2_000,
            read_line_bytes: 2_000,
            read_scan_bytes: 32 * 1024 * 1024,
            grep_max_matches: 200,
            grep_max_file_bytes: 1_000_000,
            grep_line_bytes: 300,
            // A costly pattern runs at about 0.1 s a MiB in a release build (docs/security.md).
            grep_scan_bytes: 16 * 1024 * 1024,
            grep_pattern_bytes: 1_000,
            grep_regex_size: 1024 * 1024,
            list_max_entries: 1_000,
            walk_max_entries: 100_000,
            call_time: Duration::from_secs(15),
        }
    }
}

/// A tool as the model is told about it, vendor-neutral; the schema is strict-mode ready for
/// both APIs (no extra properties, every property required, optional ones nullable).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolDef {
    pub name: &'static str,
    pub description: String,
    pub input_schema: Value,
}

impl ToolDef {
    /// Anthropic Messages: `{"name","description","input_schema"}`.
    pub fn anthropic(&self) -> Value {
        json!({
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        })
    }

    /// OpenAI Chat Completions: `{"type":"function","function":{…,"strict":true}}`.
    pub fn openai_chat(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema,
                "strict": true,
            },
        })
    }

    /// OpenAI Responses: the same function, flat.
    pub fn openai_responses(&self) -> Value {
        json!({
            "type": "function",
            "name": self.name,
            "description": self.description,
            "parameters": self.input_schema,
            "strict": true,
        })
    }
}

fn schema(properties: Value) -> Value {
    let required: Vec<&String> = properties
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

// Optional arguments are nullable rather than absent: OpenAI's strict mode requires them all.
const NULLABLE_INTEGER: [&str; 2] = ["integer", "null"];
const NULLABLE_STRING: [&str; 2] = ["string", "null"];

fn property(ty: impl Serialize, description: &str) -> Value {
    json!({ "type": ty, "description": description })
}

/// The three tools, their descriptions naming `limits`' caps.
pub fn definitions(limits: &ToolLimits) -> Vec<ToolDef> {
    let per_call = text::size(limits.max_result_bytes as u64);
    let glob_path = "A directory or file relative to the repository root, or a glob such as \
                     `src/**/*.rs` (a glob without `/` matches file names anywhere, e.g. \
                     `*.toml`); null for the whole repository.";
    vec![
        ToolDef {
            name: READ_FILE,
            description: format!(
                "Read a text file of the repository under review, as numbered lines (the line \
                 number, a tab, the text). At most {} lines and {per_call} per call, lines \
                 longer than {} bytes cut; the last line says which lines were shown and how \
                 many the file has, so ask for the next range to read on. Binary files are not \
                 shown. Symbolic links, .git/ and paths outside the repository are refused.",
                limits.read_max_lines, limits.read_line_bytes
            ),
            input_schema: schema(json!({
                "path": property(
                    "string",
                    "The file, relative to the repository root, e.g. `src/main.rs`.",
                ),
                "start_line": property(
                    NULLABLE_INTEGER,
                    "First line to show, 1-based; null for the first line.",
                ),
                "end_line": property(
                    NULLABLE_INTEGER,
                    "Last line to show, inclusive; null for the end of the file.",
                ),
            })),
        },
        ToolDef {
            name: GREP,
            description: format!(
                "Search the repository's files for a regular expression (Rust regex syntax, \
                 case-sensitive; start it with `(?i)` to ignore case), matched line by line. \
                 Answers `path:line: text` for each matching line, in path order: at most {} \
                 matches and {per_call} per call, each line cut at {} bytes. Binary files, files \
                 over {}, symbolic links and .git/ are skipped. One call reads at most {} of \
                 files and runs at most {} s; past either it answers what it found so far.",
                limits.grep_max_matches,
                limits.grep_line_bytes,
                text::size(limits.grep_max_file_bytes),
                text::size(limits.grep_scan_bytes),
                limits.call_time.as_secs()
            ),
            input_schema: schema(json!({
                "pattern": property("string", "The regular expression, e.g. `fn parse_\\w+`."),
                "path": property(NULLABLE_STRING, &format!("Where to search. {glob_path}")),
            })),
        },
        ToolDef {
            name: LIST_FILES,
            description: format!(
                "List the repository's files recursively, one path per line relative to the \
                 repository root, sorted. At most {} paths per call; the answer says how many \
                 more there are. Symbolic links and .git/ are not listed.",
                limits.list_max_entries
            ),
            input_schema: schema(json!({
                "path": property(NULLABLE_STRING, &format!("What to list. {glob_path}")),
            })),
        },
    ]
}

/// One call's answer, for the model (`content`, `is_error`) and for the evidence log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolResult {
    pub content: String,
    pub is_error: bool,
    /// Bytes of `content`.
    pub bytes: usize,
    /// A cap cut the answer short.
    pub capped: bool,
}

impl ToolResult {
    fn ok(content: String, capped: bool) -> Self {
        ToolResult {
            bytes: content.len(),
            content,
            is_error: false,
            capped,
        }
    }

    pub(crate) fn error(content: impl Into<String>) -> Self {
        let content = content.into();
        ToolResult {
            bytes: content.len(),
            content,
            is_error: true,
            capped: false,
        }
    }

    /// The result as the model may see it: masked as every other byte a model is sent
    /// ([`redact`](crate::redact::redact), the review's remembered values included).
    fn masked(mut self) -> Self {
        if let Cow::Owned(masked) = crate::redact::redact(&self.content) {
            self.content = masked;
        }
        self
    }

    /// The cap every tool's result obeys, whatever the tool computed.
    fn cap(mut self, max_bytes: usize) -> Self {
        if text::cut_bytes(
            &mut self.content,
            max_bytes.saturating_sub(text::CUT_NOTE.len()),
        ) {
            self.content.push_str(text::CUT_NOTE);
            self.capped = true;
        }
        self.bytes = self.content.len();
        self
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
    start_line: Option<u64>,
    end_line: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrepArgs {
    pattern: String,
    path: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    path: Option<String>,
}

/// Anthropic sends the arguments as an object, OpenAI as a JSON string holding one; an empty
/// or null input is no arguments.
fn arguments(input: &Value) -> Result<Value, String> {
    let value = match input {
        Value::String(s) if s.trim().is_empty() => return Ok(json!({})),
        Value::String(s) => serde_json::from_str(s)
            .map_err(|e| format!("the arguments are not valid JSON ({e}); send a JSON object"))?,
        Value::Null => return Ok(json!({})),
        other => other.clone(),
    };
    if value.is_object() {
        Ok(value)
    } else {
        Err("the arguments must be a JSON object".to_owned())
    }
}

fn parse<T: for<'de> Deserialize<'de>>(tool: &str, input: &Value) -> Result<T, ToolResult> {
    let args = arguments(input).map_err(|e| ToolResult::error(format!("{tool}: {e}")))?;
    serde_json::from_value(args).map_err(|e| ToolResult::error(format!("{tool}: {e}")))
}

/// Stops a lens's tool work: set when the lens ends (its timeout, an error, the lens's task
/// dropped), and checked by every walk and scan, since the thread the tools run on cannot be
/// stopped from outside.
#[derive(Debug, Clone, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// A guard that cancels when dropped: however the lens's call ends, its tools stop.
    pub fn on_drop(&self) -> CancelOnDrop {
        CancelOnDrop(self.clone())
    }
}

/// See [`Cancel::on_drop`].
#[derive(Debug)]
pub struct CancelOnDrop(Cancel);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// When one call must stop: at its own time limit, at the lens's deadline, or when the lens
/// ends.
#[derive(Debug, Clone)]
pub(super) struct Until {
    deadline: Instant,
    cancel: Cancel,
}

impl Until {
    fn new(limit: Duration, lens_deadline: Option<Instant>, cancel: Cancel) -> Self {
        let own = Instant::now().checked_add(limit);
        let deadline = match (own, lens_deadline) {
            (Some(own), Some(lens)) => own.min(lens),
            (own, lens) => own.or(lens).unwrap_or_else(Instant::now),
        };
        Until { deadline, cancel }
    }

    /// Whether the call must stop now.
    pub(super) fn passed(&self) -> bool {
        self.cancel.is_cancelled() || Instant::now() >= self.deadline
    }
}

/// The tools over one root directory.
#[derive(Debug, Clone)]
pub struct RepoTools {
    root: PathBuf,
    limits: ToolLimits,
}

impl RepoTools {
    pub fn new(root: impl Into<PathBuf>, limits: ToolLimits) -> Self {
        RepoTools {
            root: root.into(),
            limits,
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn limits(&self) -> &ToolLimits {
        &self.limits
    }

    pub fn definitions(&self) -> Vec<ToolDef> {
        definitions(&self.limits)
    }

    /// Runs one call within [`ToolLimits::call_time`]. `input` is the call's arguments: a JSON
    /// object or a string holding one.
    pub fn call(&self, name: &str, input: &Value) -> ToolResult {
        let until = Until::new(self.limits.call_time, None, Cancel::default());
        self.call_until(name, input, &until)
    }

    fn call_until(&self, name: &str, input: &Value, until: &Until) -> ToolResult {
        let result = match name {
            READ_FILE => parse::<ReadArgs>(READ_FILE, input)
                .map(|a| read::read_file(self, &a.path, a.start_line, a.end_line, until)),
            GREP => parse::<GrepArgs>(GREP, input)
                .map(|a| grep::grep(self, &a.pattern, a.path.as_deref(), until)),
            LIST_FILES => parse::<ListArgs>(LIST_FILES, input)
                .map(|a| list::list_files(self, a.path.as_deref(), until)),
            _ => Err(ToolResult::error(format!(
                "unknown tool `{}`; the tools are {READ_FILE}, {GREP} and {LIST_FILES}",
                text::clip_bytes(name, 64)
            ))),
        };
        // Every result passes here: masked before the cap, so a cut never splits a secret.
        result
            .unwrap_or_else(|e| e)
            .masked()
            .cap(self.limits.max_result_bytes)
    }
}

/// How many tool calls a lens may still make in one review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolBudget {
    max_calls: u32,
    used: u32,
}

impl ToolBudget {
    pub fn new(max_calls: u32) -> Self {
        ToolBudget { max_calls, used: 0 }
    }

    pub fn max_calls(&self) -> u32 {
        self.max_calls
    }

    pub fn used(&self) -> u32 {
        self.used
    }

    pub fn remaining(&self) -> u32 {
        self.max_calls.saturating_sub(self.used)
    }

    pub fn is_spent(&self) -> bool {
        self.remaining() == 0
    }

    /// Takes one call from the budget; false when none was left.
    pub fn take(&mut self) -> bool {
        if self.is_spent() {
            return false;
        }
        self.used += 1;
        true
    }
}

impl Default for ToolBudget {
    fn default() -> Self {
        ToolBudget::new(DEFAULT_MAX_TOOL_CALLS)
    }
}

/// Bytes of a call's arguments kept in its record.
pub const RECORD_ARGUMENT_BYTES: usize = 512;

/// One call, as the evidence log keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    pub name: String,
    /// The arguments as compact JSON, cut at [`RECORD_ARGUMENT_BYTES`].
    pub arguments: String,
    pub bytes: usize,
    pub capped: bool,
    pub is_error: bool,
}

impl ToolCallRecord {
    pub fn new(name: &str, input: &Value, result: &ToolResult) -> Self {
        let arguments = match input {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        ToolCallRecord {
            name: text::clip_bytes(name, 64),
            arguments: text::clip_bytes(&arguments, RECORD_ARGUMENT_BYTES),
            bytes: result.bytes,
            capped: result.capped,
            is_error: result.is_error,
        }
    }
}

/// One lens's tool calls in one review: the tools, the budget, and the record of every call
/// (calls refused for the spent budget included).
#[derive(Debug, Clone)]
pub struct ToolSession {
    tools: RepoTools,
    budget: ToolBudget,
    records: Vec<ToolCallRecord>,
    /// The lens's deadline, which bounds every call.
    deadline: Option<Instant>,
    cancel: Cancel,
}

impl ToolSession {
    pub fn new(tools: RepoTools, budget: ToolBudget) -> Self {
        ToolSession {
            tools,
            budget,
            records: Vec::new(),
            deadline: None,
            cancel: Cancel::default(),
        }
    }

    /// Bounds every call by the lens's `deadline` as well as by its own time limit.
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// What stops the calls under way when the lens ends.
    pub fn cancel(&self) -> Cancel {
        self.cancel.clone()
    }

    pub fn tools(&self) -> &RepoTools {
        &self.tools
    }

    pub fn budget(&self) -> &ToolBudget {
        &self.budget
    }

    /// Runs one call within the budget and records it.
    pub fn call(&mut self, name: &str, input: &Value) -> ToolResult {
        let result = if self.cancel.is_cancelled() {
            ToolResult::error(text::CANCELLED)
        } else if self.budget.take() {
            let until = Until::new(
                self.tools.limits.call_time,
                self.deadline,
                self.cancel.clone(),
            );
            self.tools.call_until(name, input, &until)
        } else {
            ToolResult::error(BUDGET_SPENT)
        };
        self.records.push(ToolCallRecord::new(name, input, &result));
        result
    }

    pub fn records(&self) -> &[ToolCallRecord] {
        &self.records
    }

    pub fn into_records(self) -> Vec<ToolCallRecord> {
        self.records
    }
}
