//! [`ClientLimits`]: the client's waits, pacing and attempts, and where its notices go.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::config::GithubConfig;

/// Where rate-limit notices go (a line for the user, e.g. on stderr).
pub type NoticeSink = Arc<dyn Fn(&str) + Send + Sync>;

/// Waits, pacing and attempts of the client. Tests shorten them.
#[derive(Clone)]
pub struct ClientLimits {
    /// The longest single wait for a rate limit; a longer one fails with `RateLimited`.
    pub max_rate_limit_wait: Duration,
    /// The shortest wait for a secondary rate limit that gave no `retry-after`.
    pub rate_limit_floor: Duration,
    /// The least time between the end of one write and the start of the next.
    pub write_spacing: Duration,
    /// Attempts of a `GET` against transport errors and 5xx (1 = no retry).
    pub retries: u32,
    /// The first backoff after a failed `GET` (then doubled); also the short wait after a
    /// rate-limit reset that is already past.
    pub backoff_base: Duration,
    /// The longest one attempt may take, connect to last body byte (`github.request_timeout`);
    /// a server that accepts and never answers is a timeout after this.
    pub request_timeout: Duration,
    /// Told before every rate-limit wait. Default: a line on stderr.
    pub notice: NoticeSink,
    /// Told the status of every response (0 when none came): the App's request metrics.
    pub observe: ResponseSink,
}

/// Where each response's status goes (see [`ClientLimits::observe`]).
pub type ResponseSink = Arc<dyn Fn(u16) + Send + Sync>;

impl ClientLimits {
    /// The configured rate-limit bounds with the other defaults.
    pub fn from_config(config: &GithubConfig) -> Self {
        Self {
            max_rate_limit_wait: config.max_rate_limit_wait,
            rate_limit_floor: config.rate_limit_floor,
            request_timeout: config.request_timeout,
            ..Self::default()
        }
    }
}

impl Default for ClientLimits {
    fn default() -> Self {
        let config = GithubConfig::default();
        Self {
            max_rate_limit_wait: config.max_rate_limit_wait,
            rate_limit_floor: config.rate_limit_floor,
            write_spacing: Duration::from_secs(1),
            retries: 3,
            backoff_base: Duration::from_secs(1),
            request_timeout: config.request_timeout,
            notice: Arc::new(|line: &str| eprintln!("{line}")),
            observe: Arc::new(|_: u16| {}),
        }
    }
}

impl fmt::Debug for ClientLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientLimits")
            .field("max_rate_limit_wait", &self.max_rate_limit_wait)
            .field("rate_limit_floor", &self.rate_limit_floor)
            .field("write_spacing", &self.write_spacing)
            .field("retries", &self.retries)
            .field("backoff_base", &self.backoff_base)
            .field("request_timeout", &self.request_timeout)
            .finish_non_exhaustive()
    }
}
