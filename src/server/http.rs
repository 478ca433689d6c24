//! Serving the router over TCP. HTTP/1.1 only (GitHub delivers webhooks over it), with a
//! deadline for each request's headers: `axum::serve` gives hyper no timer, so a client that
//! sent its headers a byte at a time, or opened a connection and said nothing, held a task and
//! a socket for as long as it liked. The body has its own deadline in the webhook handler.

use std::future::Future;
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

/// How long a request's headers may take to arrive (an idle keep-alive connection is closed
/// after the same time).
pub const HEADER_DEADLINE: Duration = Duration::from_secs(10);

/// Accept errors (too many open files, say) are waited out, not fatal.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Serves `router` on `listener` until `stop` completes, then stops accepting, lets each open
/// connection finish the request in hand, and returns once they have all closed (the caller
/// bounds that wait).
pub async fn listen(
    listener: TcpListener,
    router: Router,
    header_deadline: Duration,
    stop: impl Future<Output = ()>,
) {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(header_deadline);
    let graceful = GracefulShutdown::new();
    let mut stop = std::pin::pin!(stop);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "accepting a connection failed");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        // Answers are small and written once: no reason to wait for more bytes to send.
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(router.clone());
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            // A client that hung up or sent junk is its own problem; nothing to report.
            let _ = conn.await;
        });
    }
    drop(listener);
    graceful.shutdown().await;
}
