//! `reviewbot serve`: the App. Reads its identity and secrets from the environment, opens the
//! store, asks GitHub who it is, then answers webhooks and runs the worker pool until SIGTERM.
//!
//! Shutdown: stop taking deliveries and jobs, give the rounds in hand [`JOB_GRACE`] to finish,
//! hand back the rest, and be gone well within GitHub's and the orchestrator's 30 s.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::Config;
use crate::github::app::{AppCredentials, GithubApp};
use crate::github::client::ClientLimits;
use crate::server::worker::{self, PoolConfig};
use crate::server::{self, Metrics, ServerConfig, WebhookSecrets};
use crate::store::Store;

/// How long the rounds in hand may run on after SIGTERM before they are handed back.
const JOB_GRACE: Duration = Duration::from_secs(20);
/// How long open connections may take to finish after SIGTERM.
const HTTP_GRACE: Duration = Duration::from_secs(5);

pub const DEFAULT_LISTEN: &str = "127.0.0.1:3000";
pub const DEFAULT_DATABASE_URL: &str = "sqlite://reviewbot.db";

/// What `serve` reads from its environment.
pub struct ServeEnv {
    pub listen: SocketAddr,
    pub database_url: String,
    pub api_url: String,
    pub secrets: WebhookSecrets,
    pub credentials: AppCredentials,
}

impl ServeEnv {
    /// `REVIEWBOT_LISTEN`, `REVIEWBOT_DATABASE_URL`, `GITHUB_API_URL`,
    /// `REVIEWBOT_WEBHOOK_SECRET`, `REVIEWBOT_APP_ID` and the private key. Every problem names
    /// the variable and never shows a value that could be a secret.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> anyhow::Result<ServeEnv> {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let listen = var("REVIEWBOT_LISTEN").unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
        let listen = listen.trim().parse().with_context(|| {
            format!("REVIEWBOT_LISTEN: {listen:?} is not an address like 127.0.0.1:3000")
        })?;
        let database_url =
            var("REVIEWBOT_DATABASE_URL").unwrap_or_else(|| DEFAULT_DATABASE_URL.to_owned());
        let api_url = var("GITHUB_API_URL")
            .unwrap_or_else(|| crate::github::client::DEFAULT_API_URL.to_owned());
        let secrets = var("REVIEWBOT_WEBHOOK_SECRET")
            .context("REVIEWBOT_WEBHOOK_SECRET is not set: the App's webhook secret (several, comma-separated, while rotating)")?;
        let secrets = WebhookSecrets::from_list(&secrets)
            .map_err(|e| anyhow::anyhow!("REVIEWBOT_WEBHOOK_SECRET: {e}"))?;
        let credentials = AppCredentials::from_vars(|n| var(n))?;
        Ok(ServeEnv {
            listen,
            database_url,
            api_url,
            secrets,
            credentials,
        })
    }
}

/// Runs the App until SIGTERM or SIGINT.
pub async fn serve(config: Config, env: ServeEnv) -> anyhow::Result<()> {
    // Snapshots a crash or a kill left behind; a live process's stay.
    match tokio::task::spawn_blocking(crate::context::sweep).await {
        Ok(Ok(0)) => {}
        Ok(Ok(removed)) => tracing::info!(removed, "removed leftover repository snapshots"),
        Ok(Err(e)) => tracing::warn!(error = %e, "could not sweep leftover repository snapshots"),
        Err(e) => tracing::warn!(error = %e, "the snapshot sweep failed"),
    }
    let store = Store::connect(&env.database_url)
        .await?
        .with_max_attempts(config.serve.max_attempts);
    let metrics = Arc::new(Metrics::new());
    let limits = service_limits(&config, &metrics);
    let app = Arc::new(GithubApp::new(
        &env.api_url,
        env.credentials,
        limits.clone(),
    )?);
    let own_login = match &config.github.bot_login {
        Some(login) => login.clone(),
        None => app
            .bot_login()
            .await
            .context("asking GitHub for the App's identity (GET /app)")?,
    };
    tracing::info!(identity = %own_login, "reviewbot App identity");

    let wake = Arc::new(Notify::new());
    let intake = server::store_intake::StoreIntake::new(store.clone(), Arc::clone(&wake));
    let router = server::router(
        intake,
        ServerConfig::new(env.secrets, own_login.clone()),
        Arc::clone(&metrics),
    );
    let listener = tokio::net::TcpListener::bind(env.listen)
        .await
        .with_context(|| format!("cannot listen on {}", env.listen))?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, "listening");

    let stop = CancellationToken::new();
    let tracker = TaskTracker::new();
    let runner = Arc::new(server::job::FlowRunner::new(
        config.clone(),
        Arc::clone(&app),
        own_login,
        limits,
        store.clone(),
        Arc::clone(&metrics),
    ));
    worker::spawn(
        store,
        runner,
        PoolConfig {
            workers: config.serve.workers,
            lease: config.serve.lease,
            max_attempts: config.serve.max_attempts,
            retry_after: config.serve.retry_after,
            process: process_name(addr),
        },
        wake,
        stop.clone(),
        JOB_GRACE,
        &tracker,
    );
    tracker.close();

    let http = {
        let stop = stop.clone();
        tokio::spawn(server::http::listen(
            listener,
            router,
            server::http::HEADER_DEADLINE,
            stop.cancelled_owned(),
        ))
    };
    shutdown_signal().await;
    tracing::info!("stopping: no new deliveries or jobs; finishing the rounds in hand");
    stop.cancel();
    // Connections that never close must not keep the process alive.
    if tokio::time::timeout(HTTP_GRACE, http).await.is_err() {
        tracing::warn!("open connections dropped at shutdown");
    }
    tracker.wait().await;
    tracing::info!("stopped");
    Ok(())
}

/// The client's limits for the App: rate-limit waits go to the log (there is no terminal), and
/// every response is counted in `reviewbot_github_requests_total`.
fn service_limits(config: &Config, metrics: &Arc<Metrics>) -> ClientLimits {
    let metrics = Arc::clone(metrics);
    ClientLimits {
        notice: Arc::new(|line: &str| tracing::warn!("{line}")),
        observe: Arc::new(move |status| metrics.github_request(status)),
        ..ClientLimits::from_config(&config.github)
    }
}

/// A name for this process's workers in the store, unique across replicas.
fn process_name(addr: SocketAddr) -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "host".to_owned());
    format!("{host}:{}:{}", addr.port(), std::process::id())
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
