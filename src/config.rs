//! The config file (TOML, `docs/contract.md` "Config file").
//!
//! Every key has a default; an unknown key or a bad value is an error naming the key and the
//! line, so a typo never silently turns a setting off.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use crate::lens::contract::Confidence;
use crate::lens::{BackendKind, LensSpec};

/// The operator's configuration.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub lens: Vec<LensConfig>,
    #[serde(default)]
    pub review: ReviewConfig,
    #[serde(default)]
    pub github: GithubConfig,
    #[serde(default)]
    pub limits: LimitsConfig,
    #[serde(default)]
    pub serve: ServeConfig,
    #[serde(default)]
    pub context: ContextConfig,
    #[serde(default)]
    pub verify: VerifyConfig,
}

/// One `[[lens]]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LensConfig {
    pub name: String,
    pub backend: BackendKind,
    pub model: Option<String>,
    pub bin: Option<String>,
    pub api_fallback_model: Option<String>,
    pub focus: Option<String>,
    pub temperature: Option<f32>,
    pub max_output_tokens: Option<u32>,
    /// Dollars per million input tokens: what the lens costs when its backend reports no cost.
    pub price_in_per_mtok: Option<f64>,
    /// Dollars per million output tokens.
    pub price_out_per_mtok: Option<f64>,
    #[serde(default, deserialize_with = "duration_opt")]
    pub timeout: Option<Duration>,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: Vec<String>,
    /// An API lens's own base URL, instead of its vendor's variable.
    pub base_url: Option<String>,
    /// The variable an API lens reads its key from, instead of its vendor's.
    pub api_key_env: Option<String>,
}

/// How a round is posted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PostMode {
    #[default]
    Merged,
    PerLens,
}

/// When a round counts as failed: the exit status of `review` and the check run's conclusion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum FailOn {
    /// Any blocking finding holds.
    Blocking,
    /// Any finding holds.
    Advisory,
    #[default]
    Never,
}

/// The `[review]` table (also what a repository's `.github/reviewbot.toml` may set).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReviewConfig {
    pub opt_out_label: String,
    pub trigger_label: String,
    pub post: PostMode,
    pub max_comments: usize,
    pub min_blocking_confidence: Confidence,
    pub request_changes: bool,
    pub ignore_paths: Vec<String>,
    pub max_files: usize,
    pub token_budget: usize,
    /// Which configured lenses run by default; `None` means all of them.
    pub lenses: Option<Vec<String>>,
    pub path: Vec<PathRule>,
    /// Whether lenses get the repository's review rules (`REVIEW.md`, the review section of
    /// `AGENTS.md`/`CLAUDE.md`). Either the operator or the repository may turn them off.
    pub repo_rules: bool,
    /// Whether PRs opened by bot accounts are reviewed; by default they are skipped.
    pub review_bots: bool,
    /// When the round fails (`--fail-on` overrides it).
    pub fail_on: FailOn,
}

impl Default for ReviewConfig {
    fn default() -> Self {
        Self {
            opt_out_label: "reviewbot:no-review".into(),
            trigger_label: "reviewbot:review".into(),
            post: PostMode::Merged,
            max_comments: 30,
            min_blocking_confidence: Confidence::Medium,
            request_changes: false,
            ignore_paths: Vec::new(),
            max_files: 3000,
            token_budget: 120_000,
            lenses: None,
            path: Vec::new(),
            repo_rules: true,
            review_bots: false,
            fail_on: FailOn::Never,
        }
    }
}

impl ReviewConfig {
    /// The `ignore_paths` globs as one matcher (validated when the config was loaded, so a
    /// pattern that does not compile here is skipped rather than failing a review).
    pub fn ignored(&self) -> globset::GlobSet {
        let mut builder = globset::GlobSetBuilder::new();
        for pattern in &self.ignore_paths {
            if let Ok(glob) = globset::Glob::new(pattern) {
                builder.add(glob);
            }
        }
        builder
            .build()
            .unwrap_or_else(|_| globset::GlobSet::empty())
    }
}

/// A `[[review.path]]` rule: extra instructions for files matching a glob.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PathRule {
    pub glob: String,
    pub instructions: String,
}

/// The `[github]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GithubConfig {
    pub bot_login: Option<String>,
    #[serde(deserialize_with = "duration")]
    pub max_rate_limit_wait: Duration,
    #[serde(deserialize_with = "duration")]
    pub rate_limit_floor: Duration,
    /// The longest one request to GitHub may take (connect, send, headers and body): a hung
    /// connection fails after this, a read is retried, a write is looked for by its marker.
    #[serde(deserialize_with = "duration")]
    pub request_timeout: Duration,
}

impl Default for GithubConfig {
    fn default() -> Self {
        Self {
            bot_login: None,
            max_rate_limit_wait: Duration::from_secs(15 * 60),
            rate_limit_floor: Duration::from_secs(60),
            request_timeout: Duration::from_secs(90),
        }
    }
}

/// The `[limits]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsConfig {
    pub subscription_concurrency: usize,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            subscription_concurrency: 2,
        }
    }
}

/// The `[serve]` table: the App's worker pool.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServeConfig {
    /// Rounds reviewed at once by this process.
    pub workers: usize,
    /// How long a claimed job is a worker's without a heartbeat; a dead worker's job runs again
    /// once it lapses.
    #[serde(deserialize_with = "duration")]
    pub lease: Duration,
    /// Tries of one job before it is marked failed with its error.
    pub max_attempts: u32,
    /// Wait before a failed job is tried again.
    #[serde(deserialize_with = "duration")]
    pub retry_after: Duration,
    /// Most dollars one installation's lenses may cost in a UTC day; once its recorded cost
    /// reaches it, its rounds wait for the next day. `None`: no limit.
    pub daily_budget_usd: Option<f64>,
    /// Most tokens one installation's lenses without a cost (no price declared, none reported)
    /// may spend in a UTC day; past it, its rounds wait too. `None`: no limit.
    pub daily_budget_tokens: Option<u64>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        Self {
            workers: 4,
            lease: Duration::from_secs(60),
            max_attempts: 3,
            retry_after: Duration::from_secs(30),
            daily_budget_usd: None,
            daily_budget_tokens: None,
        }
    }
}

/// The `[context]` table: the read-only snapshot of the reviewed head that model lenses read.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContextConfig {
    /// Whether model lenses get a snapshot; `false` reviews from the diff alone.
    pub enabled: bool,
    /// Most bytes a snapshot may write; over it, the round goes on from the diff alone.
    #[serde(deserialize_with = "max_snapshot")]
    pub max_snapshot: u64,
    /// Most entries a snapshot's archive may hold (files, directories and anything left out).
    pub max_snapshot_files: u64,
    /// Most tool calls of one lens call (API lenses' tool loop, CLI lenses' turns).
    pub max_tool_calls: u32,
    /// Most input tokens one API lens call's tool loop may send over all its turns; past it the
    /// lens is asked for its final answer.
    pub max_call_tokens: u64,
}

impl Default for ContextConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_snapshot: 500_000_000,
            max_snapshot_files: 100_000,
            max_tool_calls: 40,
            max_call_tokens: crate::lens::tools::DEFAULT_MAX_CALL_TOKENS,
        }
    }
}

/// A size in bytes: a plain integer, or a number with `B`, `KB`/`MB`/`GB` (powers of 1000) or
/// `KiB`/`MiB`/`GiB` (powers of 1024). `None` when it is none of these or does not fit.
/// Which findings cross-examination checks (`[verify] mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VerifyMode {
    /// Findings only one model lens raised.
    #[default]
    Single,
    /// Every finding a model lens raised.
    All,
    /// None.
    Off,
}

/// The `[verify]` table: a lens of another vendor checks findings before a round is settled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VerifyConfig {
    pub mode: VerifyMode,
    /// The most findings checked a round, most severe first.
    pub max_findings: usize,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        Self {
            mode: VerifyMode::Single,
            max_findings: 20,
        }
    }
}

pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (digits, unit) = text.split_at(split);
    let number: u64 = digits.parse().ok()?;
    let factor: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1000,
        "mb" => 1000_u64.pow(2),
        "gb" => 1000_u64.pow(3),
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        _ => return None,
    };
    number.checked_mul(factor)
}

/// `max_snapshot`: a size as [`parse_size`] reads it, given as a string or an integer.
fn max_snapshot<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Bytes(u64),
        Text(String),
    }
    let bad = |shown: &str| {
        serde::de::Error::custom(format!(
            "max_snapshot: `{shown}` is not a size like \"500MB\", \"2GiB\" or a number of bytes"
        ))
    };
    match Raw::deserialize(d).map_err(|_| bad("?"))? {
        Raw::Bytes(n) => Ok(n),
        Raw::Text(s) => parse_size(&s).ok_or_else(|| bad(&s)),
    }
}

/// A config that could not be used, with the file, line and key where that is known.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config {path}{}: {message}", line.map(|l| format!(" line {l}")).unwrap_or_default())]
    Invalid {
        path: PathBuf,
        line: Option<usize>,
        message: String,
    },
}

fn duration<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = String::deserialize(d)?;
    humantime::parse_duration(&s).map_err(|e| {
        serde::de::Error::custom(format!(
            "`{s}` is not a duration like \"90s\" or \"5m\" ({e})"
        ))
    })
}

fn duration_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    duration(d).map(Some)
}

/// Where the config comes from: `--config`, else `REVIEWBOT_CONFIG`, else `./reviewbot.toml`
/// when it exists — the last only outside GitHub Actions, where the workspace is the PR's own
/// checkout and must not configure the bot.
pub fn locate(flag: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = flag {
        return Some(p.to_owned());
    }
    if let Some(p) = std::env::var_os("REVIEWBOT_CONFIG").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    let local = PathBuf::from("reviewbot.toml");
    (std::env::var_os("GITHUB_ACTIONS").is_none() && local.is_file()).then_some(local)
}

impl Config {
    /// Reads and validates a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Config::parse(&text, path)
    }

    /// Parses and validates config text; `path` only names the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let invalid = |line, message| ConfigError::Invalid {
            path: path.to_owned(),
            line,
            message,
        };
        let config: Config = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start));
            invalid(line, e.message().trim().to_owned())
        })?;
        config.validate().map_err(|(key, message)| {
            invalid(find_key_line(text, &key), format!("{key}: {message}"))
        })?;
        Ok(config)
    }

    /// Cross-field checks serde cannot express, as (key, problem).
    fn validate(&self) -> Result<(), (String, String)> {
        let mut names = std::collections::BTreeSet::new();
        for lens in &self.lens {
            let key = format!("lens \"{}\"", lens.name);
            if lens.name.is_empty()
                || !lens
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err((key, "a lens name is letters, digits, `-` and `_`".into()));
            }
            if !names.insert(lens.name.as_str()) {
                return Err((key, "this lens name is defined twice".into()));
            }
            let named_program = crate::lens::registry::backend(lens.backend).runs_named_program();
            if named_program && lens.bin.is_none() {
                return Err((
                    key,
                    "a `command` lens needs `bin`, the program to run".into(),
                ));
            }
            if !named_program && (!lens.args.is_empty() || !lens.env.is_empty()) {
                return Err((key, "`args` and `env` are for `command` lenses only".into()));
            }
            lens.check_endpoint()
                .map_err(|problem| (key.clone(), problem))?;
            if lens.timeout.is_some_and(|t| t.is_zero()) {
                return Err((key, "`timeout` must be more than zero".into()));
            }
            if let Some(t) = lens.temperature
                && !(0.0..=2.0).contains(&t)
            {
                return Err((key, "`temperature` must be between 0 and 2".into()));
            }
        }
        if let Some(list) = &self.review.lenses {
            for name in list {
                if !names.contains(name.as_str()) && preset(name).is_none() {
                    return Err(("lenses".into(), format!("no lens is named `{name}`")));
                }
            }
        }
        for rule in &self.review.ignore_paths {
            globset::Glob::new(rule).map_err(|e| ("ignore_paths".to_owned(), e.to_string()))?;
        }
        for rule in &self.review.path {
            globset::Glob::new(&rule.glob).map_err(|e| ("glob".to_owned(), e.to_string()))?;
        }
        if self.serve.workers == 0 {
            return Err(("workers".into(), "must be at least 1".into()));
        }
        if self.serve.lease < Duration::from_secs(1) {
            return Err(("lease".into(), "must be at least 1s".into()));
        }
        if let Some(budget) = self.serve.daily_budget_usd
            && !(budget.is_finite() && budget > 0.0)
        {
            return Err((
                "daily_budget_usd".into(),
                "must be a number of dollars above zero".into(),
            ));
        }
        if self.serve.daily_budget_tokens == Some(0) {
            return Err((
                "daily_budget_tokens".into(),
                "must be a number of tokens above zero".into(),
            ));
        }
        for lens in &self.lens {
            for (key, price) in [
                ("price_in_per_mtok", lens.price_in_per_mtok),
                ("price_out_per_mtok", lens.price_out_per_mtok),
            ] {
                if price.is_some_and(|p| !(p.is_finite() && p >= 0.0)) {
                    return Err((
                        key.into(),
                        "must be a number of dollars, zero or more".into(),
                    ));
                }
            }
            if lens.price_in_per_mtok.is_some() != lens.price_out_per_mtok.is_some() {
                return Err((
                    "price_in_per_mtok".into(),
                    format!(
                        "lens {:?} declares one price: declare both price_in_per_mtok and \
                         price_out_per_mtok",
                        lens.name
                    ),
                ));
            }
        }
        if self.serve.max_attempts == 0 {
            return Err(("max_attempts".into(), "must be at least 1".into()));
        }
        if self.context.max_snapshot == 0 {
            return Err(("max_snapshot".into(), "must be more than zero".into()));
        }
        if self.context.max_snapshot_files == 0 {
            return Err(("max_snapshot_files".into(), "must be at least 1".into()));
        }
        if self.context.max_call_tokens == 0 {
            return Err(("max_call_tokens".into(), "must be at least 1".into()));
        }
        if self.context.max_tool_calls == 0 {
            return Err(("max_tool_calls".into(), "must be at least 1".into()));
        }
        if self.verify.max_findings == 0 {
            return Err((
                "max_findings".into(),
                "must be at least 1; `mode = \"off\"` checks none".into(),
            ));
        }
        if self.limits.subscription_concurrency == 0 {
            return Err((
                "subscription_concurrency".into(),
                "must be at least 1".into(),
            ));
        }
        Ok(())
    }

    /// The lens called `name`: a configured one, else a preset.
    pub fn lens(&self, name: &str) -> Option<LensSpec> {
        self.lens
            .iter()
            .find(|l| l.name == name)
            .map(LensConfig::spec)
            .or_else(|| preset(name))
    }

    /// The lenses a review runs when none are named on the command line: `[review] lenses`,
    /// else every configured lens, else `None` (the caller falls back to `builtin`).
    fn default_lenses_for(&self, review: &ReviewConfig) -> Option<Vec<LensSpec>> {
        match &review.lenses {
            Some(names) => Some(names.iter().filter_map(|n| self.lens(n)).collect()),
            None if !self.lens.is_empty() => Some(self.lens.iter().map(LensConfig::spec).collect()),
            None => None,
        }
    }

    /// The lenses to run: those named (on the command line), else `review`'s default set,
    /// else `builtin` — `fallback` says so, for a notice. An unknown name is an error listing
    /// the known ones.
    pub fn select_lenses(
        &self,
        review: &ReviewConfig,
        names: &[String],
    ) -> Result<Selection, String> {
        let names: Vec<&str> = names
            .iter()
            .map(|n| n.trim())
            .filter(|n| !n.is_empty())
            .collect();
        if names.is_empty() {
            return Ok(
                match self.default_lenses_for(review).filter(|l| !l.is_empty()) {
                    Some(lenses) => Selection {
                        lenses,
                        fallback: false,
                    },
                    None => Selection {
                        lenses: preset("builtin").into_iter().collect(),
                        fallback: true,
                    },
                },
            );
        }
        let mut lenses: Vec<LensSpec> = Vec::new();
        for name in names {
            let spec = self.lens(name).ok_or_else(|| {
                let mut known: Vec<&str> = self.lens.iter().map(|l| l.name.as_str()).collect();
                for p in PRESETS {
                    if !known.contains(&p) {
                        known.push(p);
                    }
                }
                format!("unknown lens `{name}` (known: {})", known.join(", "))
            })?;
            if !lenses.iter().any(|s| s.name == spec.name) {
                lenses.push(spec);
            }
        }
        Ok(Selection {
            lenses,
            fallback: false,
        })
    }
}

/// Which lenses run, and whether that is the `builtin` fallback for want of any configured.
#[derive(Debug, Clone)]
pub struct Selection {
    pub lenses: Vec<LensSpec>,
    pub fallback: bool,
}

/// The names of the lenses that work with no config.
pub const PRESETS: [&str; 3] = ["builtin", "claude", "codex"];

impl Config {
    /// The variables lenses read their keys from instead of their vendor's (`api_key_env`).
    pub fn api_key_vars(&self) -> impl Iterator<Item = &str> {
        self.lens.iter().filter_map(|l| l.api_key_env.as_deref())
    }
}

impl LensConfig {
    /// `base_url` and `api_key_env`: for API lenses only; an http(s) URL; a variable's name,
    /// never one of reviewbot's own credentials (the key is sent to the lens's server).
    fn check_endpoint(&self) -> Result<(), String> {
        if self.base_url.is_none() && self.api_key_env.is_none() {
            return Ok(());
        }
        if crate::lens::registry::backend(self.backend)
            .api_vars()
            .is_none()
        {
            return Err("`base_url` and `api_key_env` are for API lenses only".into());
        }
        if let Some(url) = &self.base_url {
            let ok = reqwest::Url::parse(url.trim())
                .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some());
            if !ok {
                return Err("`base_url` must be an http(s) URL".into());
            }
        }
        if let Some(name) = &self.api_key_env {
            let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(format!("`api_key_env` must name a variable, not {name:?}"));
            }
            let known = crate::lens::registry::secret_vars();
            if crate::credentials::never_to_a_lens(&known, name) {
                return Err(format!(
                    "`api_key_env` cannot be {name}: reviewbot never hands it to a lens"
                ));
            }
        }
        Ok(())
    }

    pub fn spec(&self) -> LensSpec {
        let mut spec = LensSpec::new(self.name.clone(), self.backend);
        spec.model = self.model.clone();
        spec.focus = self.focus.clone();
        spec.timeout = self.timeout.unwrap_or(LensSpec::DEFAULT_TIMEOUT);
        spec.bin = self.bin.clone();
        spec.args = self.args.clone();
        spec.env = self.env.clone();
        spec.base_url = self.base_url.clone();
        spec.api_key_env = self.api_key_env.clone();
        spec.api_fallback_model = self.api_fallback_model.clone();
        spec.temperature = self.temperature;
        spec.max_output_tokens = self.max_output_tokens;
        spec.prices = match (self.price_in_per_mtok, self.price_out_per_mtok) {
            (Some(input_per_mtok), Some(output_per_mtok)) => Some(crate::lens::Prices {
                input_per_mtok,
                output_per_mtok,
            }),
            _ => None,
        };
        spec
    }
}

/// A repository's `.github/reviewbot.toml`: the `[review]` table, and `[context] enabled`. It
/// can never define a lens, a binary or a URL, nor raise a cap — those are the operator's.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RepoConfig {
    #[serde(default)]
    review: Option<toml::Table>,
    #[serde(default)]
    context: Option<RepoContext>,
}

/// The one `[context]` key a repository may set.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RepoContext {
    enabled: Option<bool>,
}

/// The `[review]` settings for one repository, and the caps its file asked to raise.
#[derive(Debug, Clone)]
pub struct RepoReview {
    pub review: ReviewConfig,
    /// Caps the repository set above the operator's: the operator's value applies to each.
    pub raised: Vec<RaisedCap>,
}

/// A cap a repository's file (`file`) set to `asked`, over the operator's `kept`, which applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaisedCap {
    pub file: String,
    pub key: &'static str,
    pub asked: usize,
    pub kept: usize,
}

impl Config {
    /// The `[review]` settings for one repository: the operator's, with what the repository's
    /// own file (read from the PR's base branch) sets on top. `path` names the file in errors.
    /// A cap may be lowered, never raised: the operator pays for what it bounds.
    pub fn review_for_repo(&self, text: &str, path: &Path) -> Result<RepoReview, ConfigError> {
        let invalid = |line, message| ConfigError::Invalid {
            path: path.to_owned(),
            line,
            message,
        };
        let parse_error = |e: toml::de::Error| {
            let line = e.span().map(|s| line_of(text, s.start));
            invalid(line, e.message().trim().to_owned())
        };
        let repo: RepoConfig = toml::from_str(text).map_err(parse_error)?;
        let Some(table) = repo.review else {
            return Ok(RepoReview {
                review: self.review.clone(),
                raised: Vec::new(),
            });
        };
        // Checked alone first, so an error names the repository file's own line.
        let alone: ReviewConfig = toml::from_str(text)
            .map(|r: RepoReviewOnly| r.review)
            .map_err(parse_error)?;
        if let Some(names) = &alone.lenses {
            for name in names {
                if self.lens(name).is_none() {
                    return Err(invalid(
                        find_key_line(text, "lenses"),
                        format!("lenses: the operator has no lens named `{name}`"),
                    ));
                }
            }
        }
        let mut merged = toml::Table::try_from(&self.review).map_err(|e| {
            invalid(
                None,
                format!("cannot combine with the operator's config: {e}"),
            )
        })?;
        merged.extend(table);
        let mut review: ReviewConfig = merged
            .try_into()
            .map_err(|e: toml::de::Error| invalid(None, e.message().trim().to_owned()))?;
        for rule in review
            .ignore_paths
            .iter()
            .chain(review.path.iter().map(|p| &p.glob))
        {
            globset::Glob::new(rule)
                .map_err(|e| invalid(find_key_line(text, "ignore_paths"), e.to_string()))?;
        }
        // The repository may turn its rules off, never on where the operator turned them off.
        review.repo_rules &= self.review.repo_rules;
        let mut raised = Vec::new();
        let caps = [
            ("max_files", &mut review.max_files, self.review.max_files),
            (
                "token_budget",
                &mut review.token_budget,
                self.review.token_budget,
            ),
            (
                "max_comments",
                &mut review.max_comments,
                self.review.max_comments,
            ),
        ];
        for (key, value, kept) in caps {
            if *value > kept {
                raised.push(RaisedCap {
                    file: path.display().to_string(),
                    key,
                    asked: *value,
                    kept,
                });
                *value = kept;
            }
        }
        Ok(RepoReview { review, raised })
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RepoReviewOnly {
    #[serde(default)]
    review: ReviewConfig,
    /// Checked by [`RepoConfig`]; read by [`Config::context_for_repo`].
    #[serde(default, rename = "context")]
    _context: Option<toml::Table>,
}

impl Config {
    /// Whether lenses get a snapshot in one repository: the operator's `[context] enabled`,
    /// unless the repository's own file turns it off (it cannot turn on what the operator
    /// turned off). `path` names the file in errors.
    pub fn context_for_repo(&self, text: &str, path: &Path) -> Result<bool, ConfigError> {
        let repo: RepoConfig = toml::from_str(text).map_err(|e| ConfigError::Invalid {
            path: path.to_owned(),
            line: e.span().map(|s| line_of(text, s.start)),
            message: e.message().trim().to_owned(),
        })?;
        let repo_enabled = repo.context.and_then(|c| c.enabled).unwrap_or(true);
        Ok(self.context.enabled && repo_enabled)
    }
}

/// Lenses that work with no config: `builtin`, `claude` and `codex` (their CLIs' default models).
pub fn preset(name: &str) -> Option<LensSpec> {
    let backend = match name {
        "builtin" => BackendKind::Builtin,
        "claude" => BackendKind::ClaudeCli,
        "codex" => BackendKind::CodexCli,
        _ => return None,
    };
    Some(LensSpec::new(name, backend))
}

/// 1-based line of a byte offset.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The line where a validation error's key is written, best effort: `lens "x"` finds the
/// `name = "x"` line, other keys their `key =` line.
fn find_key_line(text: &str, key: &str) -> Option<usize> {
    let needle = match key
        .strip_prefix("lens \"")
        .and_then(|k| k.strip_suffix('"'))
    {
        Some(name) => format!("\"{name}\""),
        None => key.to_owned(),
    };
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            l.starts_with(needle.as_str())
                || (key.starts_with("lens \"") && l.starts_with("name") && l.contains(&needle))
        })
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, Path::new("reviewbot.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn the_design_example_parses() {
        let c = parse(
            r#"
[[lens]]
name = "claude"
backend = "claude-cli"
model = "claude-opus-5"

[[lens]]
name = "terra"
backend = "codex-cli"
model = "gpt-5.6-terra"
timeout = "300s"

[review]
opt_out_label = "reviewbot:no-review"
trigger_label = "reviewbot:review"
post = "merged"
max_comments = 30
min_blocking_confidence = "medium"
request_changes = false
ignore_paths = ["vendor/**", "*.lock"]
max_files = 3000
token_budget = 120000
lenses = ["claude", "terra"]

[[review.path]]
glob = "migrations/**"
instructions = "Check that every migration is reversible."

[github]
max_rate_limit_wait = "15m"
rate_limit_floor = "60s"
request_timeout = "45s"

[limits]
subscription_concurrency = 2

[serve]
workers = 4
"#,
        )
        .unwrap();
        assert_eq!(c.lens.len(), 2);
        assert_eq!(c.lens[1].timeout, Some(Duration::from_secs(300)));
        let selected = c.select_lenses(&c.review, &[]).unwrap();
        let names: Vec<_> = selected.lenses.iter().map(|l| l.name.to_string()).collect();
        assert_eq!(names, ["claude", "terra"]);
        assert!(!selected.fallback);
        assert_eq!(c.github.max_rate_limit_wait, Duration::from_secs(900));
        assert_eq!(c.github.request_timeout, Duration::from_secs(45));
        assert_eq!(c.serve.workers, 4);
        assert_eq!(c.serve.lease, Duration::from_secs(60));
    }

    #[test]
    fn empty_config_has_defaults_and_presets() {
        let c = parse("").unwrap();
        assert_eq!(c.review.max_comments, 30);
        let selected = c.select_lenses(&c.review, &[]).unwrap();
        assert!(selected.fallback);
        assert_eq!(selected.lenses[0].name.as_str(), "builtin");
        assert_eq!(c.lens("claude").unwrap().backend, BackendKind::ClaudeCli);
        assert!(c.lens("nope").is_none());
    }

    #[test]
    fn unknown_key_names_key_and_line() {
        let e = parse("[review]\nmax_comments = 3\nmax_coments = 4\n").unwrap_err();
        assert!(
            e.starts_with("config reviewbot.toml line 3: unknown field `max_coments`"),
            "{e}"
        );
    }

    #[test]
    fn bad_values_name_key_and_line() {
        let e = parse("[[lens]]\nname = \"x\"\nbackend = \"gpt\"\n").unwrap_err();
        assert!(
            e.contains("line 3") && e.contains("unknown variant `gpt`"),
            "{e}"
        );
        let e = parse("[github]\nrate_limit_floor = \"soon\"\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains("not a duration"), "{e}");
        let e = parse("[review]\nmax_comments = \"many\"\n").unwrap_err();
        assert!(e.contains("line 2"), "{e}");
        let e = parse("[serve]\n\nworkers = 0\n").unwrap_err();
        assert!(e.contains("line 3") && e.contains("workers"), "{e}");
        let e = parse("[serve]\nlease = \"10ms\"\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains("lease"), "{e}");
    }

    #[test]
    fn fail_on_defaults_to_never_and_reads_each_level() {
        assert_eq!(parse("").unwrap().review.fail_on, FailOn::Never);
        let c = parse("[review]\nfail_on = \"advisory\"\n").unwrap();
        assert_eq!(c.review.fail_on, FailOn::Advisory);
        let e = parse("[review]\nfail_on = \"sometimes\"\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains("`blocking`"), "{e}");
    }

    #[test]
    fn prices_come_in_pairs_and_budgets_are_positive() {
        let c = parse("[[lens]]\nname = \"gpt\"\nbackend = \"openai\"\nmodel = \"gpt-5.6\"\nprice_in_per_mtok = 1.25\nprice_out_per_mtok = 10\n[serve]\ndaily_budget_tokens = 2000000\n").unwrap();
        assert_eq!(
            c.lens("gpt").unwrap().prices,
            Some(crate::lens::Prices {
                input_per_mtok: 1.25,
                output_per_mtok: 10.0
            })
        );
        assert_eq!(c.serve.daily_budget_tokens, Some(2_000_000));
        let e = parse("[[lens]]\nname = \"gpt\"\nbackend = \"openai\"\nprice_in_per_mtok = 1.0\n")
            .unwrap_err();
        assert!(e.contains("declare both"), "{e}");
        let e = parse("[[lens]]\nname = \"gpt\"\nbackend = \"openai\"\nprice_in_per_mtok = -1.0\nprice_out_per_mtok = 1.0\n")
            .unwrap_err();
        assert!(e.contains("price_in_per_mtok"), "{e}");
        let e = parse("[serve]\ndaily_budget_tokens = 0\n").unwrap_err();
        assert!(e.contains("daily_budget_tokens"), "{e}");
    }

    #[test]
    fn validation_errors_name_the_lens() {
        let e = parse("[[lens]]\nname = \"mine\"\nbackend = \"command\"\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains("needs `bin`"), "{e}");
        let e = parse("[[lens]]\nname = \"a\"\nbackend = \"builtin\"\n[[lens]]\nname = \"a\"\nbackend = \"builtin\"\n").unwrap_err();
        assert!(e.contains("defined twice"), "{e}");
        let e = parse("[review]\nlenses = [\"ghost\"]\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains("`ghost`"), "{e}");
    }

    /// One panel holds the vendor's API and a local server, each with its own key variable;
    /// the key never comes from a credential of reviewbot's own.
    #[test]
    fn an_api_lens_may_name_its_own_base_url_and_key_variable() {
        let c = parse(
            r#"
[[lens]]
name = "gpt"
backend = "openai"
model = "gpt-5"

[[lens]]
name = "local"
backend = "openai"
model = "qwen3-coder"
base_url = "http://127.0.0.1:11434/v1"
api_key_env = "OLLAMA_KEY"
"#,
        )
        .expect("parses");
        let local = c.lens("local").expect("lens");
        assert_eq!(local.base_url.as_deref(), Some("http://127.0.0.1:11434/v1"));
        assert_eq!(local.api_key_env.as_deref(), Some("OLLAMA_KEY"));
        assert_eq!(c.lens("gpt").expect("lens").base_url, None);
        assert_eq!(c.api_key_vars().collect::<Vec<_>>(), ["OLLAMA_KEY"]);

        let lens = |extra: &str| {
            parse(&format!(
                "[[lens]]\nname = \"x\"\nbackend = \"openai\"\nmodel = \"m\"\n{extra}\n"
            ))
        };
        for (extra, problem) in [
            (
                "api_key_env = \"GITHUB_TOKEN\"",
                "reviewbot never hands it to a lens",
            ),
            (
                "api_key_env = \"CLAUDE_CODE_OAUTH_TOKEN\"",
                "never hands it",
            ),
            ("api_key_env = \"MY KEY\"", "must name a variable"),
            (
                "base_url = \"file:///etc/passwd\"",
                "must be an http(s) URL",
            ),
            ("base_url = \"localhost:11434\"", "must be an http(s) URL"),
        ] {
            let e = lens(extra).unwrap_err();
            assert!(
                e.contains("lens \"x\"") && e.contains(problem),
                "{extra}: {e}"
            );
        }
        let e =
            parse("[[lens]]\nname = \"c\"\nbackend = \"claude-cli\"\nbase_url = \"http://h\"\n")
                .unwrap_err();
        assert!(e.contains("for API lenses only"), "{e}");
    }

    #[test]
    fn a_repository_may_set_review_keys_but_never_a_lens() {
        let op = parse(
            "[[lens]]\nname = \"terra\"\nbackend = \"codex-cli\"\n[review]\nmax_comments = 10\n",
        )
        .unwrap();
        let repo = Path::new(".github/reviewbot.toml");
        let r = op
            .review_for_repo(
                "[review]\nopt_out_label = \"skip-bot\"\nlenses = [\"terra\"]\n",
                repo,
            )
            .unwrap()
            .review;
        assert_eq!(r.opt_out_label, "skip-bot");
        assert_eq!(
            r.max_comments, 10,
            "the operator's value stays where the repo is silent"
        );
        assert_eq!(r.lenses, Some(vec!["terra".to_owned()]));
        let e = op
            .review_for_repo(
                "[[lens]]\nname = \"x\"\nbackend = \"command\"\nbin = \"/bin/sh\"\n",
                repo,
            )
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(".github/reviewbot.toml line 1") && e.contains("unknown field `lens`"),
            "{e}"
        );
        let e = op
            .review_for_repo("[review]\nlenses = [\"mine\"]\n", repo)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("line 2") && e.contains("no lens named `mine`"),
            "{e}"
        );
        let e = op
            .review_for_repo("[review]\nmax_coments = 1\n", repo)
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("max_coments"), "{e}");
        assert_eq!(
            op.review_for_repo("", repo).unwrap().review.max_comments,
            10
        );
    }

    #[test]
    fn context_defaults_and_sizes() {
        let c = parse("").unwrap();
        assert!(c.context.enabled);
        assert_eq!(c.context.max_snapshot, 500_000_000);
        assert_eq!(c.context.max_snapshot_files, 100_000);
        assert_eq!(c.context.max_tool_calls, 40);
        let c = parse(
            "[context]\nenabled = false\nmax_snapshot = \"2GiB\"\nmax_snapshot_files = 10\nmax_tool_calls = 5\n",
        )
        .unwrap();
        assert!(!c.context.enabled);
        assert_eq!(c.context.max_snapshot, 2 << 30);
        assert_eq!(c.context.max_snapshot_files, 10);
        assert_eq!(c.context.max_tool_calls, 5);
        assert_eq!(
            parse("[context]\nmax_snapshot = 1234\n")
                .unwrap()
                .context
                .max_snapshot,
            1234
        );
        for (text, bytes) in [
            ("500MB", 500_000_000),
            ("500 MB", 500_000_000),
            ("1KB", 1000),
            ("1kib", 1024),
            ("3MiB", 3 << 20),
            ("1GB", 1_000_000_000),
            ("7", 7),
            ("7B", 7),
        ] {
            assert_eq!(parse_size(text), Some(bytes), "{text}");
        }
        for bad in ["", "MB", "1.5GB", "-1MB", "10 apples", "99999999999GiB"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }

    #[test]
    fn bad_context_values_name_the_key() {
        let e = parse("[context]\nmax_snapshot = \"lots\"\n").unwrap_err();
        assert!(
            e.contains("line 2") && e.contains("max_snapshot") && e.contains("`lots`"),
            "{e}"
        );
        let e = parse("[context]\nmax_snapshot = 0\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains("max_snapshot"), "{e}");
        let e = parse("[context]\n\nmax_snapshot_files = 0\n").unwrap_err();
        assert!(
            e.contains("line 3") && e.contains("max_snapshot_files"),
            "{e}"
        );
        let e = parse("[context]\nmax_tool_calls = 0\n").unwrap_err();
        assert!(e.contains("max_tool_calls"), "{e}");
        let e = parse("[context]\nenable = false\n").unwrap_err();
        assert!(
            e.contains("line 2") && e.contains("unknown field `enable`"),
            "{e}"
        );
    }

    #[test]
    fn a_repository_may_turn_the_snapshot_off_and_nothing_else() {
        let op = parse("").unwrap();
        let repo = Path::new(".github/reviewbot.toml");
        assert!(op.context_for_repo("", repo).unwrap());
        assert!(
            op.context_for_repo("[review]\nmax_comments = 3\n", repo)
                .unwrap()
        );
        let off = "[review]\nmax_comments = 3\n[context]\nenabled = false\n";
        assert!(!op.context_for_repo(off, repo).unwrap());
        assert_eq!(
            op.review_for_repo(off, repo).unwrap().review.max_comments,
            3
        );
        for key in [
            "max_snapshot = \"9GB\"",
            "max_snapshot_files = 1",
            "max_tool_calls = 99",
        ] {
            let text = format!("[context]\n{key}\n");
            let e = op.review_for_repo(&text, repo).unwrap_err().to_string();
            assert!(e.contains("line 2") && e.contains("unknown field"), "{e}");
            assert!(op.context_for_repo(&text, repo).is_err());
        }
        // What the operator turned off stays off.
        let op_off = parse("[context]\nenabled = false\n").unwrap();
        assert!(
            !op_off
                .context_for_repo("[context]\nenabled = true\n", repo)
                .unwrap()
        );
    }

    /// The operator pays for what `max_files` and `token_budget` bound, and `max_comments`
    /// bounds how much a round posts: a repository may lower each, never raise it.
    #[test]
    fn a_repository_may_lower_a_cap_but_never_raise_it() {
        let op =
            parse("[review]\nmax_files = 100\ntoken_budget = 4000\nmax_comments = 10\n").unwrap();
        let file = Path::new(".github/reviewbot.toml");
        let raised = |key, asked, kept| RaisedCap {
            file: ".github/reviewbot.toml".to_owned(),
            key,
            asked,
            kept,
        };
        let r = op
            .review_for_repo(
                "[review]\nmax_files = 5000\ntoken_budget = 200000\nmax_comments = 50\n",
                file,
            )
            .unwrap();
        let caps = (
            r.review.max_files,
            r.review.token_budget,
            r.review.max_comments,
        );
        assert_eq!(caps, (100, 4000, 10));
        assert_eq!(
            r.raised,
            [
                raised("max_files", 5000, 100),
                raised("token_budget", 200_000, 4000),
                raised("max_comments", 50, 10),
            ]
        );
        let r = op
            .review_for_repo("[review]\nmax_files = 7\ntoken_budget = 4000\n", file)
            .unwrap();
        let caps = (
            r.review.max_files,
            r.review.token_budget,
            r.review.max_comments,
        );
        assert_eq!((caps, r.raised), ((7, 4000, 10), Vec::new()));
    }

    #[test]
    fn repo_rules_may_be_turned_off_by_either_and_on_by_neither_alone() {
        // (operator's [review], repository's [review]) → the (repo_rules, review_bots) that apply.
        let applied = |operator: &str, repository: &str| {
            let op = parse(&format!("[review]\n{operator}\n")).unwrap();
            let text = format!("[review]\n{repository}\n");
            let review = op
                .review_for_repo(&text, Path::new(".github/reviewbot.toml"))
                .unwrap()
                .review;
            (review.repo_rules, review.review_bots)
        };
        assert_eq!(applied("", ""), (true, false));
        assert_eq!(applied("", "repo_rules = false"), (false, false));
        assert_eq!(
            applied("repo_rules = false", "repo_rules = true"),
            (false, false)
        );
        // Whether bots' PRs are reviewed is the repository's review policy: it may say either.
        assert_eq!(applied("", "review_bots = true"), (true, true));
        assert_eq!(
            applied("review_bots = true", "review_bots = false"),
            (true, false)
        );
        assert_eq!(applied("review_bots = true", ""), (true, true));
    }

    #[test]
    fn a_config_may_redefine_a_preset() {
        let c = parse(
            "[[lens]]\nname = \"claude\"\nbackend = \"claude-cli\"\nmodel = \"claude-opus-5\"\n",
        )
        .unwrap();
        assert_eq!(
            c.lens("claude").unwrap().model.as_deref(),
            Some("claude-opus-5")
        );
    }
}
