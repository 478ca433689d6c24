//! The command line: `reviewbot review`, and its exit codes (`docs/contract.md` "Exit codes").
//!
//! 0 review done · 1 `--fail-on` threshold met · 2 usage, config or input error ·
//! 3 runtime failure (every lens failed).

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Parser, Subcommand};

use crate::config::{self, Config, FailOn};
use crate::context::{Context, Snapshot, Unavailable};
use crate::diff::Diff;
use crate::evidence::Evidence;
use crate::flow::{self, FlowCtx, Reason, ReviewRequest};
use crate::github::{self, client::ClientLimits, model::RepoName};
use crate::ids::PrNumber;
use crate::lens::LensSpec;
use crate::lens::builtin::KeywordSearch;
use crate::redact::KnownSecrets;
use crate::render::markdown::BodyOptions;
use crate::render::{self, Format};
use crate::review::notice::Notice;
use crate::review::panel::{Panel, PanelObserver, SubscriptionSlots};
use crate::review::{Report, pipeline};

#[derive(Debug, Parser)]
#[command(
    name = "reviewbot",
    version,
    about = "Reviews code changes with a panel of lenses"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Review a change and print the findings.
    Review(ReviewArgs),
    /// Check that the configured lenses and GitHub access can work, without a billed call.
    Doctor(DoctorArgs),
    /// Run the GitHub App: answer webhooks, queue rounds durably, review and post.
    Serve(ServeArgs),
    /// The learnings kept from maintainers' rulings on findings (the store of
    /// $REVIEWBOT_DATABASE_URL, default sqlite://reviewbot.db).
    #[command(subcommand)]
    Learnings(LearningsCommand),
    /// Measure the lenses on a golden set: cases whose problems are known.
    Eval(EvalArgs),
    /// What became of the findings each lens posted, and what it cost (the store of
    /// $REVIEWBOT_DATABASE_URL, default sqlite://reviewbot.db).
    Stats(StatsArgs),
}

#[derive(Debug, Args)]
struct StatsArgs {
    /// One repository (default: every repository in the store).
    #[arg(long, value_name = "OWNER/NAME")]
    repo: Option<String>,

    /// How far back: findings posted in this long (`30d`, `12h`).
    #[arg(long, value_name = "DURATION", default_value = "30d", value_parser = humantime::parse_duration)]
    since: std::time::Duration,

    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct EvalArgs {
    /// The golden set: one directory a case, each with diff.patch, expected.json and
    /// optionally checkout/.
    #[arg(long, value_name = "DIR")]
    set: PathBuf,

    /// Lenses to measure (default: those a review would run).
    #[arg(long = "lens", value_name = "NAME[,NAME]", value_delimiter = ',')]
    lenses: Vec<String>,

    /// Output format: a table, or one JSON document.
    #[arg(long, value_enum, default_value_t = EvalFormat::Text)]
    format: EvalFormat,

    /// Cases reviewed at once.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..))]
    jobs: u16,

    /// Config file (default: $REVIEWBOT_CONFIG, else ./reviewbot.toml outside GitHub Actions).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum EvalFormat {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
enum LearningsCommand {
    /// List a repository's learnings.
    List {
        /// The repository.
        #[arg(long, value_name = "OWNER/NAME")]
        repo: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Forget one learning: later rounds no longer see it.
    Forget {
        /// The learning's id, as `learnings list` shows it.
        id: i64,
    },
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Config file (default: $REVIEWBOT_CONFIG, else ./reviewbot.toml).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct DoctorArgs {
    /// Config file (default: $REVIEWBOT_CONFIG, else ./reviewbot.toml outside GitHub Actions).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Lenses to check (default: those a review would run).
    #[arg(long = "lens", value_name = "NAME[,NAME]", value_delimiter = ',')]
    lenses: Vec<String>,

    /// Also check access to this repository (default: $GITHUB_REPOSITORY).
    #[arg(long, value_name = "OWNER/NAME")]
    repo: Option<String>,
}

#[derive(Debug, Args)]
struct ReviewArgs {
    /// A unified diff to review (`git diff` output), or `-` for standard input. No network.
    #[arg(long, value_name = "FILE|-", conflicts_with_all = ["pr", "repo", "post", "again"])]
    diff: Option<PathBuf>,

    /// With --diff: a directory holding the diff's new side (e.g. `.`), which the lenses may
    /// read; without it they review from the diff alone.
    #[arg(long, value_name = "DIR", requires = "diff")]
    checkout: Option<PathBuf>,

    /// A pull request on GitHub (in a workflow, read from GITHUB_EVENT_PATH when omitted).
    #[arg(long, value_name = "N")]
    pr: Option<u64>,

    /// The repository (default: $GITHUB_REPOSITORY, else the `origin` remote).
    #[arg(long, value_name = "OWNER/NAME")]
    repo: Option<String>,

    /// Post the round as a review on the PR (needs GITHUB_TOKEN with pull-requests: write).
    #[arg(long)]
    post: bool,

    /// Review the head even if a round already reviewed it (what the trigger label and
    /// `/reviewbot review` ask for).
    #[arg(long)]
    again: bool,

    #[command(flatten)]
    common: CommonArgs,
}

#[derive(Debug, Args)]
struct CommonArgs {
    /// Lenses to run, by name (configured, or a preset: builtin, claude, codex). Repeatable,
    /// or comma-separated.
    #[arg(long = "lens", value_name = "NAME[,NAME]", value_delimiter = ',')]
    lenses: Vec<String>,

    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,

    /// Config file (default: $REVIEWBOT_CONFIG, else ./reviewbot.toml outside GitHub Actions).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Exit 1 when a finding at this level holds (default: `[review] fail_on`, else never).
    #[arg(long, value_enum)]
    fail_on: Option<FailOn>,

    /// Never fall back from a subscription lens to its vendor's paid API.
    #[arg(long)]
    no_api_fallback: bool,

    /// Keep every lens exchange (prompt, raw reply, parsed findings, merge decisions) as
    /// redacted JSON lines in a new file in DIR.
    #[arg(long, value_name = "DIR")]
    evidence: Option<PathBuf>,
}

/// What went wrong, and which exit status it earns.
#[derive(Debug, thiserror::Error)]
enum CliError {
    /// Usage, configuration or input error: exit 2.
    #[error("{0}")]
    Usage(String),
    /// Runtime failure: GitHub refused or stayed unreachable: exit 3.
    #[error("{0}")]
    Runtime(String),
}

impl CliError {
    fn exit_code(&self) -> ExitCode {
        match self {
            CliError::Usage(_) => ExitCode::from(2),
            CliError::Runtime(_) => ExitCode::from(3),
        }
    }
}

pub fn main() -> ExitCode {
    crate::timing::start();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // clap prints help and version to stdout (exit 0) and usage errors to stderr (2).
            let _ = e.print();
            return ExitCode::from(e.exit_code().clamp(0, 255) as u8);
        }
    };
    match &cli.command {
        Command::Serve(_) => init_service_logging(),
        _ => init_logging(),
    }
    // Before anything can print, log or post: every credential is masked by value.
    crate::credentials::remember_from_env(&crate::lens::registry::secret_vars());
    // A command reviews once: what its review remembers is masked until the process ends (in
    // the error below too), not only while the review runs.
    let secrets = KnownSecrets::new();
    match run(cli, &secrets) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", crate::redact::redact(&e.to_string()));
            e.exit_code()
        }
    }
}

fn run(cli: Cli, secrets: &KnownSecrets) -> Result<ExitCode, CliError> {
    match cli.command {
        Command::Review(args) => review(args, secrets),
        Command::Doctor(args) => doctor(args),
        Command::Serve(args) => serve_app(args),
        Command::Learnings(command) => learnings(command),
        Command::Eval(args) => eval(args, secrets),
        Command::Stats(args) => stats(args),
    }
}

/// The store named by `REVIEWBOT_DATABASE_URL`, when it is set: where a review run keeps
/// learnings (without one they are not kept, and a notice says so).
async fn open_store() -> Result<Option<crate::store::Store>, CliError> {
    let Some(url) = std::env::var("REVIEWBOT_DATABASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
    else {
        return Ok(None);
    };
    connect_store(&url).await.map(Some)
}

async fn connect_store(url: &str) -> Result<crate::store::Store, CliError> {
    crate::store::Store::connect(url).await.map_err(|e| {
        CliError::Runtime(format!(
            "cannot open the store {}: {e}",
            crate::credentials::mask_url(url)
        ))
    })
}

/// The store of `REVIEWBOT_DATABASE_URL`, else the App's default: what `learnings` and `stats`
/// read.
fn store_url() -> String {
    std::env::var("REVIEWBOT_DATABASE_URL")
        .ok()
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| crate::server::serve::DEFAULT_DATABASE_URL.to_owned())
}

/// `reviewbot stats`: exit 2 for a bad repository, 3 when the store cannot be reached.
fn stats(args: StatsArgs) -> Result<ExitCode, CliError> {
    let repo = match &args.repo {
        Some(r) => Some(
            RepoName::parse(r)
                .ok_or_else(|| CliError::Usage(format!("--repo `{r}` is not OWNER/NAME")))?,
        ),
        None => None,
    };
    let since_ms = crate::store::now_ms()
        .saturating_sub(i64::try_from(args.since.as_millis()).unwrap_or(i64::MAX));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Runtime(format!("cannot start the runtime: {e}")))?;
    let stats = runtime.block_on(async {
        let store = connect_store(&store_url()).await?;
        let stats = store.outcome_stats(repo.as_ref(), since_ms).await;
        store.close().await;
        stats.map_err(|e| CliError::Runtime(e.to_string()))
    })?;
    let shown = repo.as_ref().map(ToString::to_string);
    write_stdout(&match args.json {
        true => render::stats::json(shown.as_deref(), since_ms, &stats),
        false => {
            let scope = format!(
                "{}, the last {}",
                shown.as_deref().unwrap_or("every repository"),
                render::stats::span(args.since)
            );
            render::stats::text(&scope, &stats)
        }
    });
    Ok(ExitCode::SUCCESS)
}

/// `reviewbot learnings list|forget`: against the store of `REVIEWBOT_DATABASE_URL` (the
/// App's default when unset). Exit 2 for a bad repository or an unknown id, 3 when the store
/// cannot be reached.
fn learnings(command: LearningsCommand) -> Result<ExitCode, CliError> {
    let url = store_url();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Runtime(format!("cannot start the runtime: {e}")))?;
    runtime.block_on(async {
        let store = connect_store(&url).await?;
        let result = match command {
            LearningsCommand::List { repo, json } => {
                let repo = RepoName::parse(&repo)
                    .ok_or_else(|| CliError::Usage(format!("--repo `{repo}` is not OWNER/NAME")))?;
                let learnings = store
                    .learnings(&repo)
                    .await
                    .map_err(|e| CliError::Runtime(e.to_string()))?;
                let text = match json {
                    true => render::conversation::learnings_json(&learnings),
                    false => render::conversation::learnings_text(&repo, &learnings),
                };
                write_stdout(&text);
                Ok(ExitCode::SUCCESS)
            }
            LearningsCommand::Forget { id } => {
                match store
                    .forget_learning(id)
                    .await
                    .map_err(|e| CliError::Runtime(e.to_string()))?
                {
                    true => {
                        write_stdout(&render::conversation::forgotten(id));
                        Ok(ExitCode::SUCCESS)
                    }
                    false => Err(CliError::Usage(format!("no learning has id {id}"))),
                }
            }
        };
        store.close().await;
        result
    })
}

/// `reviewbot eval`: exit 2 for a malformed set (naming the case), 3 when a lens failed on a
/// case (its rows are still printed), else 0.
fn eval(args: EvalArgs, secrets: &KnownSecrets) -> Result<ExitCode, CliError> {
    let config = load_config(args.config.as_deref())?;
    let cases = crate::eval::load(&args.set).map_err(|e| CliError::Usage(e.to_string()))?;
    let lenses = select_lenses(&config, &args.lenses)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Runtime(format!("cannot start the runtime: {e}")))?;
    let mut panel = Panel::from_env(
        SubscriptionSlots::new(config.limits.subscription_concurrency),
        false,
        config.api_key_vars(),
    );
    panel.max_tool_calls = config.context.max_tool_calls;
    panel.max_call_tokens = config.context.max_call_tokens;
    let progress = |done: usize, total: usize| eprintln!("{}", render::eval::progress(done, total));
    let report = runtime.block_on(secrets.scope(crate::eval::run(
        cases,
        &lenses,
        &config.review,
        &panel,
        usize::from(args.jobs),
        &progress,
    )));
    write_stdout(&match args.format {
        EvalFormat::Text => render::eval::text(&report),
        EvalFormat::Json => render::eval::json(&report),
    });
    Ok(match report.failed_cases() {
        0 => ExitCode::SUCCESS,
        _ => ExitCode::from(3),
    })
}

/// `reviewbot serve`: exit 2 for a configuration problem (the config file, a missing secret or
/// key), 3 when the store or GitHub cannot be reached at start; 0 after SIGTERM.
fn serve_app(args: ServeArgs) -> Result<ExitCode, CliError> {
    let config = load_config(args.config.as_deref())?;
    let env = crate::server::serve::ServeEnv::from_vars(|name| std::env::var(name).ok())
        .map_err(|e| CliError::Usage(format!("{e:#}")))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Runtime(format!("cannot start the async runtime: {e}")))?;
    runtime
        .block_on(crate::server::serve::serve(config, env))
        .map_err(|e| CliError::Runtime(format!("{e:#}")))?;
    Ok(ExitCode::SUCCESS)
}

/// `reviewbot doctor`: one line per check, exit 3 when any fails.
fn doctor(args: DoctorArgs) -> Result<ExitCode, CliError> {
    let path = config::locate(args.config.as_deref());
    let config = load_config(path.as_deref())?;
    let lenses = select_lenses(&config, &args.lenses)?;
    let repo = match args.repo.or_else(|| {
        std::env::var("GITHUB_REPOSITORY")
            .ok()
            .filter(|r| !r.is_empty())
    }) {
        Some(r) => Some(
            RepoName::parse(&r)
                .ok_or_else(|| CliError::Usage(format!("--repo `{r}` is not OWNER/NAME")))?,
        ),
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Runtime(format!("cannot start the runtime: {e}")))?;
    let mut env = crate::doctor::DoctorEnv::from_env(&config, path);
    env.github.repo = repo;
    let report = runtime.block_on(crate::doctor::run(&config, &lenses, &env));
    write_stdout(&report.render());
    Ok(if report.all_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(3)
    })
}

fn review(args: ReviewArgs, secrets: &KnownSecrets) -> Result<ExitCode, CliError> {
    // What the secret pass and the builtin lens build on first use is built meanwhile, while
    // this thread reads the config and the diff.
    std::thread::spawn(crate::lens::builtin::prepare);
    let config = load_config(args.common.config.as_deref())?;
    // One thread drives the I/O (lens processes, HTTP); the CPU work runs on threads of its
    // own (`spawn_blocking`, `par`). Starting a worker per core cost more than a small
    // offline review.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Runtime(format!("cannot start the runtime: {e}")))?;
    let mut panel = Panel::from_env(
        SubscriptionSlots::new(config.limits.subscription_concurrency),
        !args.common.no_api_fallback,
        config.api_key_vars(),
    );
    panel.max_tool_calls = config.context.max_tool_calls;
    panel.max_call_tokens = config.context.max_call_tokens;
    panel.verify = config.verify;
    if let Some(dir) = &args.common.evidence {
        let evidence = Evidence::create(dir).map_err(|e| {
            CliError::Usage(format!(
                "cannot write evidence in {}: {}",
                dir.display(),
                io_reason(&e)
            ))
        })?;
        eprintln!("notice: evidence goes to {}", evidence.path().display());
        panel.evidence = Some(Arc::new(evidence));
    }

    let (reports, diff, review) = match &args.diff {
        Some(path) => {
            let (diff, keywords) = read_diff(path)?;
            let lenses = select_lenses(&config, &args.common.lenses)?;
            let mut context = diff_context(args.checkout.as_deref(), &lenses)?;
            if let Some(dir) = &args.checkout
                && config.review.repo_rules
                && crate::lens::wants_snapshot(&lenses)
            {
                context.rules = checkout_rules(dir, &diff);
            }
            if let Some(dir) = &args.checkout {
                context.attributes = Arc::new(checkout_attributes(dir));
            }
            let observer = progress_observer();
            // Only the text format shows lines from the diff; the others need no copy of it.
            let keep = (args.common.format == Format::Text).then(|| diff.clone());
            let report = runtime.block_on(secrets.scope(pipeline::review(
                pipeline::ReviewInput {
                    diff,
                    keywords: Some(keywords),
                },
                None,
                &lenses,
                &config.review,
                context,
                &panel,
                observer.as_ref(),
            )));
            // Includes dropping the diff, which the pipeline owned.
            crate::timing::mark("reviewed");
            (
                vec![report],
                keep.unwrap_or_default(),
                config.review.clone(),
            )
        }
        None => {
            let request = pr_request(&args)?;
            let limits = ClientLimits::from_config(&config.github);
            let outcome = runtime.block_on(secrets.scope(async {
                let client = github::client::from_env(limits)
                    .map_err(|e| CliError::Runtime(e.to_string()))?;
                let observer = progress_observer();
                let store = open_store().await?;
                let ctx = FlowCtx {
                    github: &client,
                    has_token: client.sends_token(),
                    config: &config,
                    panel: &panel,
                    observer: observer.as_ref(),
                    store: store.as_ref(),
                    workflow: std::env::var_os("GITHUB_ACTIONS").is_some(),
                };
                let result = flow::review_pr(&ctx, &request).await;
                tracing::info!(requests = client.request_count(), "GitHub requests made");
                result.map_err(|e| match e.is_github() {
                    true => CliError::Runtime(e.to_string()),
                    false => CliError::Usage(e.to_string()),
                })
            }))?;
            for notice in &outcome.notices {
                eprintln!("{}", crate::redact::redact(&notice.to_string()));
            }
            (outcome.reports, outcome.diff, outcome.review)
        }
    };

    let color = use_color(
        std::io::stdout().is_terminal(),
        std::env::var_os("NO_COLOR").as_deref(),
    );
    let per_lens = reports.len() > 1;
    let opts = BodyOptions {
        opt_out_label: &review.opt_out_label,
        max_comments: review.max_comments,
        per_lens,
    };
    let out = match args.common.format {
        Format::Text => reports
            .iter()
            .map(|r| render::text::render(r, &diff, color))
            .collect::<Vec<_>>()
            .join("\n"),
        Format::Markdown => reports
            .iter()
            .map(|r| render::markdown::render(r, &opts))
            .collect::<Vec<_>>()
            .join("\n"),
        // One document, whatever the mode: per-lens reviews are combined.
        Format::Json => render::json::render(&Report::combine(reports.clone())),
        Format::Sarif => render::sarif::render(&Report::combine(reports.clone())),
    };
    crate::timing::mark("rendered");
    write_stdout(&out);
    let fail_on = args.common.fail_on.unwrap_or(review.fail_on);
    let code = exit_code(&Report::combine(reports), fail_on);
    // The process ends now: freeing a multi-megabyte diff piece by piece is wasted time, and
    // so is waiting for the runtime's idle threads to stop.
    std::mem::forget(diff);
    runtime.shutdown_background();
    Ok(code)
}

/// What `--pr` asks: the repository and number from the flags, the workflow's environment, or
/// the `origin` remote.
fn pr_request(args: &ReviewArgs) -> Result<ReviewRequest, CliError> {
    let (number, reason) = match args.pr {
        Some(n) => (PrNumber(n), Reason::Cli),
        None => {
            let n = event_pr().ok_or_else(|| {
                CliError::Usage(
                    "give --diff FILE or --pr N (in a workflow, the PR comes from GITHUB_EVENT_PATH)"
                        .to_owned(),
                )
            })?;
            (n, Reason::Action)
        }
    };
    let repo = match &args.repo {
        Some(r) => Some(r.clone()),
        None => std::env::var("GITHUB_REPOSITORY")
            .ok()
            .filter(|r| !r.is_empty()),
    };
    let repo = match repo {
        Some(r) => RepoName::parse(&r)
            .ok_or_else(|| CliError::Usage(format!("--repo `{r}` is not OWNER/NAME")))?,
        None => origin_repo().ok_or_else(|| {
            CliError::Usage(
                "no repository: pass --repo OWNER/NAME (or set GITHUB_REPOSITORY)".to_owned(),
            )
        })?,
    };
    Ok(ReviewRequest {
        repo,
        pr: number,
        head: None,
        installation: None,
        reason,
        force: args.again,
        post: args.post,
        lenses: args.common.lenses.clone(),
        ask: None,
        fail_on: args.common.fail_on,
    })
}

/// The PR of the workflow event at `GITHUB_EVENT_PATH`, if any.
fn event_pr() -> Option<PrNumber> {
    let path = std::env::var_os("GITHUB_EVENT_PATH")?;
    pr_from_event(&std::fs::read_to_string(path).ok()?)
}

/// `owner/name` of the `origin` remote of the repository we are in.
fn origin_repo() -> Option<RepoName> {
    let out = std::process::Command::new("git")
        .args(["remote", "get-url", "origin"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| repo_from_remote(&String::from_utf8_lossy(&out.stdout)))
        .flatten()
}

/// Reads the PR number from a GitHub Actions event payload (`pull_request.number`, or an
/// `issue_comment` on a PR).
pub fn pr_from_event(payload: &str) -> Option<PrNumber> {
    let v: serde_json::Value = serde_json::from_str(payload).ok()?;
    let n = v.pointer("/pull_request/number").or_else(|| {
        v.pointer("/issue/pull_request")
            .and(v.pointer("/issue/number"))
    })?;
    n.as_u64().map(PrNumber)
}

/// `owner/name` from a git remote URL (`git@github.com:o/r.git`, `https://host/o/r`).
pub fn repo_from_remote(url: &str) -> Option<RepoName> {
    let url = url.trim().trim_end_matches('/').trim_end_matches(".git");
    let tail = url.rsplit_once(':').map_or(url, |(_, t)| t);
    let mut parts = tail.rsplit('/');
    let name = parts.next()?;
    let owner = parts.next()?;
    RepoName::parse(&format!("{owner}/{name}"))
}

/// Colour when stdout is a terminal and `NO_COLOR` is unset or empty (no-color.org).
fn use_color(terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    terminal && no_color.is_none_or(|v| v.is_empty())
}

/// 3 when every lens failed, 1 when the `--fail-on` threshold holds, else 0.
fn exit_code(report: &Report, fail_on: FailOn) -> ExitCode {
    if report.all_lenses_failed() {
        return ExitCode::from(3);
    }
    if report.verdict().fails(fail_on) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The config (`--config`, `REVIEWBOT_CONFIG` or `./reviewbot.toml`), and the values of the
/// variables its `command` lenses are given masked from here on, like reviewbot's own.
fn load_config(flag: Option<&Path>) -> Result<Config, CliError> {
    let config = match config::locate(flag) {
        Some(path) => Config::load(&path).map_err(|e| CliError::Usage(e.to_string()))?,
        None => Config::default(),
    };
    let handed = config
        .lens
        .iter()
        .flat_map(|l| crate::lens::command::passed_through(&l.env));
    crate::credentials::remember_vars(
        &crate::lens::registry::secret_vars(),
        handed.chain(config.api_key_vars()),
        |name| std::env::var(name).ok(),
    );
    // A lens's own base URL may hold a gateway's password.
    crate::credentials::remember(
        config
            .lens
            .iter()
            .filter_map(|l| l.base_url.as_deref())
            .flat_map(crate::credentials::url_passwords),
    );
    Ok(config)
}

/// The lenses named with `--lens`, else the config's default set, else `builtin` (with a notice).
fn select_lenses(config: &Config, names: &[String]) -> Result<Vec<LensSpec>, CliError> {
    let selection = config
        .select_lenses(&config.review, names)
        .map_err(CliError::Usage)?;
    if selection.fallback {
        eprintln!("{}", Notice::BuiltinOnly);
    }
    Ok(selection.lenses)
}

/// What the lenses of a `--diff` review may read: the `--checkout` directory (exit 2 when it
/// is not one), else nothing — said once when a model lens runs, never for the builtin lens.
fn diff_context(checkout: Option<&Path>, lenses: &[LensSpec]) -> Result<Context, CliError> {
    if let Some(dir) = checkout {
        return Snapshot::checkout(dir)
            .map(|snapshot| snapshot.context())
            .map_err(|e| {
                CliError::Usage(format!("--checkout {}: {}", dir.display(), io_reason(&e)))
            });
    }
    if !crate::lens::wants_snapshot(lenses) {
        return Ok(Context::default());
    }
    let context = Context::missing(Unavailable::NoCheckout);
    if let Some(notice) = Notice::for_context(&context.report) {
        eprintln!("{notice}");
    }
    Ok(context)
}

/// A repository file of a `--checkout` directory, read as the base branch's would be: none
/// when it is not a regular file, not UTF-8 text, or over a megabyte (as the contents API).
fn checkout_file(dir: &Path, path: &str) -> Option<String> {
    const MOST_BYTES: u64 = 1 << 20;
    let full = dir.join(path);
    let meta = std::fs::symlink_metadata(&full).ok()?;
    if !meta.is_file() || meta.len() > MOST_BYTES {
        return None;
    }
    std::fs::read_to_string(full).ok()
}

/// The `.gitattributes` at the root of a `--checkout` directory (its only source).
fn checkout_attributes(dir: &Path) -> crate::attributes::Attributes {
    checkout_file(dir, crate::attributes::GITATTRIBUTES)
        .as_deref()
        .map(crate::attributes::Attributes::parse)
        .unwrap_or_default()
}

/// The review rules of a `--checkout` directory (there it is the only source).
fn checkout_rules(dir: &Path, diff: &Diff) -> Vec<crate::repo_rules::RuleFile> {
    use crate::repo_rules::{AGENT_FILES, collect, review_files, review_section};
    let read = |path: &str| checkout_file(dir, path);
    let reviews = review_files(diff.files().iter().map(|f| f.path()))
        .into_iter()
        .filter_map(|path| read(&path).map(|text| (path, text)))
        .collect();
    let agents = AGENT_FILES.iter().find_map(|path| {
        read(path)
            .filter(|text| review_section(text).is_some())
            .map(|text| ((*path).to_owned(), text))
    });
    collect(reviews, agents)
}

/// Reads and parses the diff, and begins the search for secret keywords in it; a missing file
/// or text that is not a diff is a usage error.
fn read_diff(path: &Path) -> Result<(Diff, KeywordSearch), CliError> {
    let (name, bytes): (String, &'static [u8]) = if path == Path::new("-") {
        let mut buf = Vec::new();
        std::io::stdin().read_to_end(&mut buf).map_err(|e| {
            CliError::Usage(format!("cannot read the diff from standard input: {e}"))
        })?;
        // Never given back: the process ends after its one review, and the diff borrows its
        // text from these bytes rather than a copy.
        ("standard input".to_owned(), &*buf.leak())
    } else {
        let name = path.display().to_string();
        let bytes = crate::diff::file::read_static(path).map_err(|e| {
            CliError::Usage(format!("cannot read diff file {name}: {}", io_reason(&e)))
        })?;
        (name, bytes)
    };
    crate::timing::mark("read");
    // The secret keywords are searched for on another core while this one parses.
    let keywords = crate::lens::builtin::search_keywords(bytes);
    let parsed = Diff::parse_static_bytes(bytes);
    crate::timing::mark("parsed");
    // Diffs of Latin-1 or mixed files are still reviewable: undecodable bytes read as U+FFFD.
    if parsed.as_ref().is_ok_and(Diff::is_lossy) {
        eprintln!("notice: {name} is not valid UTF-8; undecodable bytes are shown as \u{FFFD}");
    }
    parsed
        .map(|diff| (diff, keywords))
        .map_err(|e| match e.coloured {
            true => CliError::Usage(render::coloured_diff(&name)),
            false => CliError::Usage(format!("{name} is not a diff reviewbot can read: {e}")),
        })
}

/// `No such file or directory` without Rust's `(os error 2)` suffix.
fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

/// Logs go to stderr, quiet by default (`RUST_LOG=reviewbot=info` shows each lens's provenance).
/// Only reviewbot's own lines by default: a dependency's (`ERROR octocrab: …`) would repeat, in
/// other words, what reviewbot's own message says.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("reviewbot=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(crate::redact::redacting_stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

/// `serve` logs JSON lines on stderr (one object a line, with the job and delivery spans),
/// `reviewbot=info` by default, masked like every other channel.
fn init_service_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("reviewbot=info"));
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_writer(crate::redact::redacting_stderr)
        .try_init();
}

fn progress_observer() -> Box<dyn PanelObserver> {
    render::progress::observer()
}

/// Writes the result; a closed pipe (`| head`) is not an error worth a panic.
fn write_stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        use std::ffi::OsStr;
        assert!(use_color(true, None));
        assert!(use_color(true, Some(OsStr::new(""))));
        assert!(!use_color(true, Some(OsStr::new("1"))));
        assert!(!use_color(false, None));
    }

    #[test]
    fn pr_number_from_events() {
        assert_eq!(
            pr_from_event(r#"{"action":"opened","pull_request":{"number":2}}"#),
            Some(PrNumber(2))
        );
        assert_eq!(
            pr_from_event(r#"{"issue":{"number":5,"pull_request":{"url":"u"}},"comment":{}}"#),
            Some(PrNumber(5))
        );
        assert_eq!(pr_from_event(r#"{"issue":{"number":5}}"#), None);
        assert_eq!(pr_from_event("not json"), None);
        let real = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/github/pull_request.opened.json"
        ))
        .unwrap();
        assert_eq!(pr_from_event(&real), Some(PrNumber(2)));
    }

    #[test]
    fn repo_from_remotes() {
        let r = |s| repo_from_remote(s).map(|r| r.to_string());
        assert_eq!(
            r("git@github.com:Octo/Hello-World.git").as_deref(),
            Some("octo/hello-world")
        );
        assert_eq!(
            r("https://github.com/octo/hello.world/").as_deref(),
            Some("octo/hello.world")
        );
        assert_eq!(
            r("ssh://git@ghe.example.com:2222/team/app.git").as_deref(),
            Some("team/app")
        );
        assert_eq!(r("nonsense").as_deref(), None);
    }
}
