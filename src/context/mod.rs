//! The repository context of one round: a read-only snapshot of the repository at the
//! reviewed head, which model lenses read through tools.
//!
//! A snapshot comes from GitHub's archive of the head commit (`review --pr`, the Action,
//! `serve`), streamed through an [`Extraction`] into a private directory (mode 0700) below
//! [`parent_dir`], or it is the user's own directory (`review --diff --checkout DIR`), which
//! is never written or removed. An extracted snapshot is removed when its [`Snapshot`] is
//! dropped or [`Snapshot::remove`]d: when the round ends, fails or panics. `serve` calls
//! [`sweep`] at start for what a crash left behind.
//!
//! Whatever goes wrong — a refused or failed download, a cap passed, a broken archive, a full
//! disk — the round goes on from the diff alone, and [`ContextReport`] says why.
//!
//! Memory stays small whatever the archive's size: the download's chunks pass through a
//! bounded channel to one blocking thread that decodes and writes as they come.

mod extract;
#[cfg(test)]
mod tests;

use std::io::{self, Read};
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;
use tokio::sync::mpsc;

use crate::config::ContextConfig;
use crate::github::client::{Download, GithubError};
pub use extract::{Caps, MAX_DEPTH, MAX_TIME};
use extract::{Stop, Written};

/// Chunks of the download waiting for the extracting thread: the most the archive holds in
/// memory at once (a chunk is at most a few hundred KiB).
const CHANNEL_DEPTH: usize = 16;

/// Where a snapshot came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// GitHub's archive of the head commit.
    Tarball,
    /// `--checkout DIR`.
    Checkout,
}

impl Source {
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Tarball => "tarball",
            Source::Checkout => "checkout",
        }
    }
}

/// What a review's lenses may read beyond the diff: the snapshot's root, if any, and the
/// report of it.
#[derive(Debug, Clone, Default)]
pub struct Context {
    pub root: Option<Arc<Path>>,
    pub report: ContextReport,
    /// The repository's review rules that apply to the round (nearest first).
    pub rules: Vec<crate::repo_rules::RuleFile>,
    /// The base branch's `.gitattributes`: which files are generated or vendored, kept from
    /// every lens.
    pub attributes: Arc<crate::attributes::Attributes>,
    /// The repository's learnings: maintainers' rulings on earlier findings, for the prompts.
    pub notes: Vec<crate::learning::Learning>,
}

impl Context {
    /// No snapshot, for this reason.
    pub fn missing(why: Unavailable) -> Context {
        Context {
            root: None,
            report: ContextReport::missing(why),
            ..Context::default()
        }
    }
}

/// Entries of the archive that were not written, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// Symbolic and hard links.
    pub links: u64,
    /// Devices, FIFOs, sparse files and other special entries.
    pub special: u64,
    /// Names that are absolute, hold `..`, or that something else already took.
    pub refused: u64,
}

impl LeftOut {
    pub fn total(&self) -> u64 {
        self.links + self.special + self.refused
    }
}

/// Why a round has no snapshot: its lenses review from the diff alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// `[context] enabled = false`, the operator's or the repository's.
    Disabled,
    /// `review --diff` without `--checkout`.
    NoCheckout,
    /// GitHub refused the archive (401, 403, 404): its error, naming the permission.
    Refused(String),
    /// The download failed after its retries, or stopped part-way.
    Download(String),
    /// The archive holds more than `max_snapshot` bytes.
    OverBytes { max: u64 },
    /// The archive holds more than `max_snapshot_files` entries.
    OverFiles { max: u64 },
    /// The archive holds more headers than its entries may have (extension headers too).
    OverHeaders { max: u64 },
    /// Reading the archive took more bytes than its caps allow, compressed or decompressed.
    OverRead { max: u64 },
    /// A name in the archive is more than `max` levels deep.
    TooDeep { max: usize },
    /// The extraction took longer than `max`.
    TooSlow { max: std::time::Duration },
    /// The archive is not a readable gzip'd tar.
    Corrupt(String),
    /// The disk refused a write (full, read-only, no private directory).
    Disk(String),
}

/// What a round's snapshot holds, or why there is none: the JSON `context` field and the
/// evidence record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextReport {
    pub source: Option<Source>,
    /// Regular files written.
    pub files: u64,
    /// Bytes of regular files written.
    pub bytes: u64,
    pub left_out: LeftOut,
    /// Why there is no snapshot (`None` when there is one, or when no lens wanted one).
    pub missing: Option<Unavailable>,
}

/// What to say of a round's snapshot: why there is none, or what it left out. Its words are in
/// `render::notice`.
#[derive(Debug, Clone, Copy)]
pub struct ContextNote<'a>(pub &'a ContextReport);

impl ContextReport {
    /// What to say of it, when there is something: no snapshot, or entries left out.
    pub fn note(&self) -> Option<ContextNote<'_>> {
        (self.missing.is_some() || self.left_out.total() > 0).then_some(ContextNote(self))
    }

    /// No snapshot, for this reason.
    pub fn missing(why: Unavailable) -> ContextReport {
        ContextReport {
            missing: Some(why),
            ..ContextReport::default()
        }
    }
}

/// The caps of an extraction, from the config.
pub fn caps(config: &ContextConfig) -> Caps {
    Caps::new(config.max_snapshot, config.max_snapshot_files)
}

/// A round's read-only view of the repository. An extracted one is removed when dropped.
#[derive(Debug)]
pub struct Snapshot {
    root: Arc<Path>,
    source: Source,
    written: Written,
    /// The private directory of an extracted snapshot (`None` for a checkout, which is the
    /// user's and never removed).
    dir: Option<tempfile::TempDir>,
}

impl Snapshot {
    /// The user's directory `dir` (`--checkout`), as an absolute path. An error when it does
    /// not exist or is not a directory.
    pub fn checkout(dir: &Path) -> io::Result<Snapshot> {
        let root = std::fs::canonicalize(dir)?;
        if !std::fs::metadata(&root)?.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                "not a directory",
            ));
        }
        Ok(Snapshot {
            root: Arc::from(root),
            source: Source::Checkout,
            written: Written::default(),
            dir: None,
        })
    }

    /// The snapshot's root, for every lens request.
    pub fn root(&self) -> Arc<Path> {
        Arc::clone(&self.root)
    }

    /// Its root and report, for the review.
    pub fn context(&self) -> Context {
        Context {
            root: Some(self.root()),
            report: self.report(),
            ..Context::default()
        }
    }

    /// What it holds.
    pub fn report(&self) -> ContextReport {
        ContextReport {
            source: Some(self.source),
            files: self.written.files,
            bytes: self.written.bytes,
            left_out: self.written.left_out,
            missing: None,
        }
    }

    /// Removes an extracted snapshot off the async threads (tens of thousands of files take a
    /// while); dropping it does the same in place.
    pub async fn remove(mut self) {
        if let Some(dir) = self.dir.take() {
            let _ = tokio::task::spawn_blocking(move || drop(dir)).await;
        }
    }
}

/// One archive being extracted: feed it the download's chunks in order, then
/// [`finish`](Self::finish) it. Dropped part-way, it removes what it wrote.
pub struct Extraction {
    tx: mpsc::Sender<Msg>,
    task: tokio::task::JoinHandle<Result<(tempfile::TempDir, Written), Stop>>,
    caps: Caps,
    /// Where it writes (owned by the thread, which removes it on failure).
    #[cfg_attr(not(test), allow(dead_code))]
    root: PathBuf,
}

enum Msg {
    Data(Bytes),
    /// The download is complete; without it a closed channel is a download cut short.
    End,
}

impl Extraction {
    /// A fresh private directory below [`parent_dir`] and the thread that writes into it.
    /// Must be called inside a Tokio runtime.
    pub fn start(caps: Caps) -> Result<Extraction, Unavailable> {
        let dir = new_dir().map_err(|e| Unavailable::Disk(e.to_string()))?;
        Ok(Self::start_in(dir, caps))
    }

    fn start_in(dir: tempfile::TempDir, caps: Caps) -> Extraction {
        let (tx, rx) = mpsc::channel(CHANNEL_DEPTH);
        let root = dir.path().to_owned();
        let task = tokio::task::spawn_blocking(move || {
            let reader = ChannelReader {
                rx,
                chunk: Bytes::new(),
                ended: false,
            };
            // On failure `dir` is dropped here, which removes what was written.
            extract::extract(reader, dir.path(), caps).map(|written| (dir, written))
        });
        Extraction {
            tx,
            task,
            caps,
            root,
        }
    }

    /// Passes on one chunk of the archive. `false` once the extraction has stopped (a cap, a
    /// broken archive): download no more, and [`finish`](Self::finish) for the reason.
    pub async fn push(&mut self, chunk: Bytes) -> bool {
        self.tx.send(Msg::Data(chunk)).await.is_ok()
    }

    /// The download is complete: the snapshot, or why there is none.
    pub async fn finish(self) -> Result<Snapshot, Unavailable> {
        let _ = self.tx.send(Msg::End).await;
        drop(self.tx);
        match self.task.await {
            Ok(Ok((dir, written))) => Ok(Snapshot {
                root: Arc::from(dir.path()),
                source: Source::Tarball,
                written,
                dir: Some(dir),
            }),
            Ok(Err(stop)) => Err(match stop {
                Stop::OverBytes => Unavailable::OverBytes {
                    max: self.caps.max_bytes,
                },
                Stop::OverEntries => Unavailable::OverFiles {
                    max: self.caps.max_entries,
                },
                Stop::OverHeaders => Unavailable::OverHeaders {
                    max: self.caps.max_headers(),
                },
                Stop::OverRead => Unavailable::OverRead {
                    max: self.caps.max_read(),
                },
                Stop::TooDeep => Unavailable::TooDeep {
                    max: self.caps.max_depth,
                },
                Stop::TooSlow => Unavailable::TooSlow {
                    max: self.caps.max_time,
                },
                Stop::Corrupt(why) => Unavailable::Corrupt(why),
                Stop::Disk(why) => Unavailable::Disk(why),
            }),
            Err(e) => Err(Unavailable::Corrupt(format!("the extraction failed: {e}"))),
        }
    }

    /// The download failed: waits until what was written is removed, then returns `why`.
    pub async fn abandon(self, why: Unavailable) -> Unavailable {
        drop(self.tx);
        let _ = self.task.await;
        why
    }
}

/// Extracts an archive as it downloads: the snapshot, or why there is none.
pub async fn extract_download(body: &mut Download, caps: Caps) -> Result<Snapshot, Unavailable> {
    let mut extraction = Extraction::start(caps)?;
    loop {
        match body.chunk().await {
            Ok(Some(chunk)) => {
                if !extraction.push(chunk).await {
                    // The extraction stopped (a cap, a broken archive): its reason follows.
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => return Err(extraction.abandon(Unavailable::from_github(e)).await),
        }
    }
    extraction.finish().await
}

impl Unavailable {
    /// A download GitHub refused (401, 403, 404), or one that failed otherwise.
    pub fn from_github(e: GithubError) -> Unavailable {
        match e {
            GithubError::NotFound { .. }
            | GithubError::Forbidden { .. }
            | GithubError::Unauthorized { .. } => Unavailable::Refused(e.to_string()),
            e => Unavailable::Download(e.to_string()),
        }
    }
}

/// The extracting thread's view of the channel.
struct ChannelReader {
    rx: mpsc::Receiver<Msg>,
    chunk: Bytes,
    ended: bool,
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if !self.chunk.is_empty() {
                let n = buf.len().min(self.chunk.len());
                buf[..n].copy_from_slice(&self.chunk.split_to(n));
                return Ok(n);
            }
            if self.ended {
                return Ok(0);
            }
            match self.rx.blocking_recv() {
                Some(Msg::Data(chunk)) => self.chunk = chunk,
                Some(Msg::End) => self.ended = true,
                None => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the download stopped before the archive's end",
                    ));
                }
            }
        }
    }
}

/// The directory reviewbot's snapshots live in, one per user: `<tmp>/reviewbot-snapshots-<uid>`.
pub fn parent_dir() -> PathBuf {
    std::env::temp_dir().join(format!(
        "reviewbot-snapshots-{}",
        nix::unistd::getuid().as_raw()
    ))
}

/// [`parent_dir`], made if missing, and checked to be this user's private directory (not a
/// link, nobody else's, nobody else may write in it).
fn private_parent() -> io::Result<PathBuf> {
    let parent = parent_dir();
    match std::fs::DirBuilder::new().mode(0o700).create(&parent) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(&parent)?;
    let mine = meta.uid() == nix::unistd::getuid().as_raw();
    if !meta.file_type().is_dir() || !mine {
        return Err(io::Error::other(format!(
            "{} is not a directory of this user",
            parent.display()
        )));
    }
    // Ours, and a real directory: made private if it was not.
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(&parent, std::fs::Permissions::from_mode(0o700))?;
    }
    Ok(parent)
}

/// A new snapshot directory, mode 0700, named `<pid>-<random>` so [`sweep`] can tell whose it
/// is.
fn new_dir() -> io::Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix(&format!("{}-", std::process::id()))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir_in(private_parent()?)
}

/// Removes the snapshots that processes no longer running left in [`parent_dir`] (a crash, a
/// kill); those of live processes stay. Returns how many were removed.
pub fn sweep() -> io::Result<usize> {
    let parent = parent_dir();
    let entries = match std::fs::read_dir(&parent) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e),
    };
    let mut removed = 0;
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
            .filter(|&pid| pid > 0)
        else {
            continue;
        };
        if alive(pid) {
            continue;
        }
        let path = entry.path();
        let gone = if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        match gone {
            Ok(()) => removed += 1,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "could not remove a leftover snapshot")
            }
        }
    }
    Ok(removed)
}

/// Whether process `pid` exists (one of another user's counts as alive).
fn alive(pid: i32) -> bool {
    !matches!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
        Err(nix::errno::Errno::ESRCH)
    )
}
