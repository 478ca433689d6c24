//! Downloads a gzip'd tar from a URL and extracts it the way a round's snapshot is made (the
//! streamed download, the bounded channel, the safe extraction), for `scripts/bench-snapshot.sh`:
//!
//!     cargo run --release --example snapshot_fetch -- http://127.0.0.1:8000/repo.tar.gz
//!
//! It prints the snapshot's root and counts, and leaves the snapshot in place (the benchmark
//! removes it outside the timing, as it does `tar`'s output).

use reviewbot::context::{self, Caps};
use reviewbot::github::client::{ClientLimits, GithubClient};

fn main() -> anyhow::Result<()> {
    let Some(url) = std::env::args().nth(1) else {
        anyhow::bail!("usage: snapshot_fetch URL");
    };
    let uri: http::Uri = url.parse()?;
    let origin = format!(
        "{}://{}",
        uri.scheme_str().unwrap_or("http"),
        uri.authority().map(|a| a.as_str()).unwrap_or_default()
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let client = GithubClient::new(&origin, None, ClientLimits::default())?;
        let mut body = client.download(&uri, "the benchmark archive").await?;
        let caps = Caps::new(u64::MAX, u64::MAX);
        let snapshot = context::extract_download(&mut body, caps)
            .await
            .map_err(|why| anyhow::anyhow!("no snapshot: {why:?}"))?;
        let report = snapshot.report();
        println!(
            "{} files={} bytes={} left_out={}",
            snapshot.root().display(),
            report.files,
            report.bytes,
            report.left_out.total()
        );
        // Kept for the caller to remove, like tar's output.
        std::mem::forget(snapshot);
        anyhow::Ok(())
    })
}
