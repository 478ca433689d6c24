//! Running a child process for a lens: own process group, capped output, group kill on timeout.
//!
//! Every CLI lens (`command`, and later `claude-cli`/`codex-cli`) goes through [`run`]. The child
//! gets exactly the environment it is given, a working directory chosen by the caller, its input on
//! stdin (never argv), and its own process group, so that a timeout, an output overflow or a
//! cancelled review ends the child *and everything it started* (security checklist §5).

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::errno::Errno;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::{Pid, getpgrp};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};
use tokio::time::{Instant, sleep, sleep_until, timeout};

use super::{Failure, FailureKind};
use crate::chars::{one_line, one_line_tail};

/// Default cap on each of stdout and stderr.
pub const DEFAULT_MAX_OUTPUT: usize = 8 << 20;

/// Time between SIGTERM and SIGKILL when the group is ended.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// How long the pipes may stay open after the direct child has exited. Past it, a grandchild is
/// holding them, and the group is ended rather than waited for.
pub const PIPE_GRACE: Duration = Duration::from_millis(500);

/// How often the group is checked for survivors during [`KILL_GRACE`].
const POLL: Duration = Duration::from_millis(25);

/// What to run, and how.
#[derive(Debug, Clone)]
pub struct ProcessSpec {
    /// An executable path (absolute, or relative to our working directory) or a bare name looked
    /// up on the `PATH` of [`ProcessSpec::env`] — the child's, not ours.
    pub program: OsString,
    pub args: Vec<OsString>,
    /// The child's whole environment: nothing else is inherited.
    pub env: Vec<(OsString, OsString)>,
    pub cwd: PathBuf,
    /// Written to the child's stdin, which is then closed.
    pub stdin: Vec<u8>,
    pub timeout: Duration,
    /// Cap on each of stdout and stderr; past it the group is killed and the run fails.
    pub max_output: usize,
}

impl ProcessSpec {
    /// A spec with an empty environment and input, the default cap and the given timeout.
    pub fn new(program: impl Into<OsString>, cwd: impl Into<PathBuf>, timeout: Duration) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            cwd: cwd.into(),
            stdin: Vec::new(),
            timeout,
            max_output: DEFAULT_MAX_OUTPUT,
        }
    }
}

/// A child that ran to its end within its limits (whatever its exit status).
#[derive(Debug)]
pub struct ProcessOutput {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

/// One of the child's output streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl fmt::Display for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        })
    }
}

/// Why a child did not run to its end. Raw stderr is carried as bytes, unredacted: the caller
/// decides how much of it to show, after redaction.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("`{program}` was not found")]
    NotFound { program: String },
    #[error("`{program}` could not be started: {source}")]
    Spawn {
        program: String,
        #[source]
        source: io::Error,
    },
    #[error("timed out after {}", humantime::format_duration(*after))]
    /// The run outlived its time; what it printed so far comes along (a CLI's last event is
    /// often the best explanation).
    Timeout {
        after: Duration,
        stderr: Vec<u8>,
        stdout: Vec<u8>,
    },
    #[error("output exceeded {limit} bytes (on {stream})")]
    OutputTooLarge { stream: Stream, limit: usize },
    #[error("reading the child's {stream} failed: {source}")]
    Read {
        stream: Stream,
        #[source]
        source: io::Error,
    },
    #[error("waiting for the child failed: {0}")]
    Wait(#[source] io::Error),
}

/// Runs `spec` to its end, or until its timeout or output cap; the child's process group is ended
/// in every case, including when this future is dropped.
pub async fn run(spec: ProcessSpec) -> Result<ProcessOutput, ProcessError> {
    let started = Instant::now();
    let deadline = started + spec.timeout;
    let display = spec.program.to_string_lossy().into_owned();
    let program =
        resolve_program(&spec.program, &spec.env).ok_or_else(|| ProcessError::NotFound {
            program: display.clone(),
        })?;

    let mut cmd = Command::new(&program);
    cmd.args(&spec.args)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&spec.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Own group, so the whole tree can be signalled at once.
        .process_group(0)
        // Belt and braces: if everything else fails, tokio at least kills the direct child.
        .kill_on_drop(true);
    // The program was found above, so a failure here is about running it (permissions, a
    // missing `#!` interpreter, a missing working directory): say so, not "not found".
    let mut child = cmd.spawn().map_err(|source| ProcessError::Spawn {
        program: display.clone(),
        source,
    })?;

    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let pgid = child.id().and_then(group_of);
    let mut group = Group {
        child: Some(child),
        pgid,
        background_on_drop: true,
    };

    let mut out = Vec::new();
    let mut err = Vec::new();
    let mut exit: Option<ExitStatus> = None;
    let mut pipes_deadline: Option<Instant> = None;

    let end = {
        // Writing stdin and draining both pipes happen together: a prompt larger than the pipe
        // buffer would otherwise deadlock against a child blocked on writing its output.
        let input = spec.stdin;
        let write = async move {
            if let Some(mut pipe) = stdin {
                // A child that does not read its input (EPIPE) is the child's business.
                let _ = pipe.write_all(&input).await;
                let _ = pipe.shutdown().await;
            }
            Ok::<(), IoEnd>(())
        };
        let io = async {
            tokio::try_join!(
                write,
                read_capped(stdout, &mut out, spec.max_output, Stream::Stdout),
                read_capped(stderr, &mut err, spec.max_output, Stream::Stderr),
            )
        };
        tokio::pin!(io);
        let Some(child) = group.child.as_mut() else {
            return Err(ProcessError::Wait(io::Error::other("child lost")));
        };
        loop {
            let wake = pipes_deadline.map_or(deadline, |p| p.min(deadline));
            tokio::select! {
                r = &mut io => break match r {
                    Ok(_) => End::PipesClosed,
                    Err(e) => End::Io(e),
                },
                status = child.wait(), if exit.is_none() => match status {
                    Ok(status) => {
                        exit = Some(status);
                        pipes_deadline = Some(Instant::now() + PIPE_GRACE);
                    }
                    Err(e) => break End::WaitFailed(e),
                },
                () = sleep_until(wake) => break if exit.is_some() {
                    End::PipesHeld
                } else {
                    End::Timeout
                },
            }
        }
    };

    let result = match end {
        // Output is complete (or, pipes held by a grandchild, complete as far as the direct
        // child is concerned); the child's exit is still to be seen.
        End::PipesClosed | End::PipesHeld => match exit {
            Some(status) => Ok(status),
            None => match group.child.as_mut() {
                Some(child) => match timeout_at(deadline, child.wait()).await {
                    Some(Ok(status)) => Ok(status),
                    Some(Err(e)) => Err(ProcessError::Wait(e)),
                    None => Err(timeout_error(&spec.timeout, err.as_slice(), out.as_slice())),
                },
                None => Err(ProcessError::Wait(io::Error::other("child lost"))),
            },
        },
        End::Timeout => Err(timeout_error(&spec.timeout, err.as_slice(), out.as_slice())),
        End::WaitFailed(e) => Err(ProcessError::Wait(e)),
        End::Io(IoEnd::Overflow(stream)) => Err(ProcessError::OutputTooLarge {
            stream,
            limit: spec.max_output,
        }),
        End::Io(IoEnd::Read(stream, source)) => Err(ProcessError::Read { stream, source }),
    };

    // Whatever happened, nothing the child started outlives the run.
    group.terminate().await;

    result.map(|status| ProcessOutput {
        status,
        stdout: out,
        stderr: err,
    })
}

fn timeout_error(after: &Duration, stderr: &[u8], stdout: &[u8]) -> ProcessError {
    ProcessError::Timeout {
        after: *after,
        stderr: stderr.to_vec(),
        stdout: stdout.to_vec(),
    }
}

async fn timeout_at<F: Future>(deadline: Instant, fut: F) -> Option<F::Output> {
    tokio::time::timeout_at(deadline, fut).await.ok()
}

/// How the I/O phase of a run ended.
enum End {
    /// stdout and stderr reached EOF and stdin was written.
    PipesClosed,
    /// The direct child exited but its pipes stayed open past [`PIPE_GRACE`].
    PipesHeld,
    Timeout,
    WaitFailed(io::Error),
    Io(IoEnd),
}

enum IoEnd {
    Overflow(Stream),
    Read(Stream, io::Error),
}

/// Reads `pipe` to EOF into `buf`, failing once more than `cap` bytes arrive.
async fn read_capped<R: AsyncRead + Unpin>(
    pipe: Option<R>,
    buf: &mut Vec<u8>,
    cap: usize,
    stream: Stream,
) -> Result<(), IoEnd> {
    let Some(mut pipe) = pipe else {
        return Ok(());
    };
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) => return Ok(()),
            Ok(n) => {
                let room = cap.saturating_sub(buf.len());
                if n > room {
                    buf.extend_from_slice(&chunk[..room]);
                    return Err(IoEnd::Overflow(stream));
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(IoEnd::Read(stream, e)),
        }
    }
}

/// The process group a freshly spawned child leads, when it is safe to signal: never group 0 or 1
/// (`killpg(0)` would signal our own group) and never our own group.
fn group_of(pid: u32) -> Option<Pid> {
    let pid = i32::try_from(pid).ok().filter(|&p| p > 1)?;
    let pgid = Pid::from_raw(pid);
    (pgid != getpgrp()).then_some(pgid)
}

/// The child and its process group, ended on drop if the run did not end them itself.
struct Group {
    /// `None` once the group has been ended and the child reaped.
    child: Option<Child>,
    pgid: Option<Pid>,
    /// On drop, end the group gracefully on a background task (the normal case of a cancelled
    /// run); when false (that background task itself being dropped), SIGKILL at once.
    background_on_drop: bool,
}

impl Group {
    /// SIGTERM to the group, up to [`KILL_GRACE`] for it to go, SIGKILL to whatever is left,
    /// then reap the child. Quick when the group is already gone.
    async fn terminate(&mut self) {
        let Some(child) = self.child.as_mut() else {
            return;
        };
        let Some(pgid) = self.pgid else {
            // Not safe to signal a group: the direct child is all we can end.
            let _ = child.start_kill();
            let _ = timeout(KILL_GRACE, child.wait()).await;
            self.child = None;
            return;
        };
        let mut reaped = matches!(child.try_wait(), Ok(Some(_)));
        if !reaped || group_alive(pgid) {
            let _ = killpg(pgid, Signal::SIGTERM);
            let grace_ends = Instant::now() + KILL_GRACE;
            loop {
                if !reaped {
                    reaped = matches!(child.try_wait(), Ok(Some(_)));
                }
                // Once the leader is reaped and the group has no live member, the pgid may be
                // reused: stop signalling it.
                if reaped && !group_alive(pgid) {
                    break;
                }
                if Instant::now() >= grace_ends {
                    let _ = killpg(pgid, Signal::SIGKILL);
                    break;
                }
                sleep(POLL).await;
            }
        }
        // SIGKILL cannot be ignored; the bound only guards against a child stuck in the kernel,
        // which tokio then reaps in the background.
        let _ = timeout(KILL_GRACE, child.wait()).await;
        self.child = None;
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let Some(child) = self.child.take() else {
            return;
        };
        let pgid = self.pgid;
        // Drop cannot wait out a grace period: hand the group to a background task when there
        // is a runtime, else kill it outright.
        if self.background_on_drop
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                let mut group = Group {
                    child: Some(child),
                    pgid,
                    background_on_drop: false,
                };
                group.terminate().await;
            });
            return;
        }
        if let Some(pgid) = pgid {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
        // `child` drops here with kill_on_drop; tokio reaps it.
    }
}

/// Whether any process of group `pgid` is still alive. Zombies do not count: a reparented
/// grandchild stays a zombie for as long as PID 1 leaves it, which in a container may be forever.
fn group_alive(pgid: Pid) -> bool {
    match live_members_from_proc(pgid) {
        Some(alive) => alive,
        // No /proc (not Linux): signal 0 fails with ESRCH only once the group is empty.
        None => killpg(pgid, None::<Signal>) != Err(Errno::ESRCH),
    }
}

/// Scans /proc for a non-zombie process in group `pgid`; `None` when /proc is not readable.
fn live_members_from_proc(pgid: Pid) -> Option<bool> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let want = pgid.as_raw();
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.as_bytes().iter().all(u8::is_ascii_digit) {
            continue;
        }
        let Ok(stat) = std::fs::read(entry.path().join("stat")) else {
            continue; // gone meanwhile
        };
        if let Some((state, pgrp)) = parse_stat(&stat)
            && pgrp == want
            && state != b'Z'
            && state != b'X'
        {
            return Some(true);
        }
    }
    Some(false)
}

/// The state and process group from a /proc/PID/stat line: `pid (comm) state ppid pgrp …`,
/// where `comm` may itself contain spaces and parentheses.
fn parse_stat(stat: &[u8]) -> Option<(u8, i32)> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(stat.get(close + 1..)?).ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = *fields.next()?.as_bytes().first()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

/// Finds the executable to run. A name without a slash is looked up on the child's `PATH` (the
/// one in `env`); a relative path is taken from our working directory, not the child's.
fn resolve_program(program: &OsStr, env: &[(OsString, OsString)]) -> Option<PathBuf> {
    if program.is_empty() {
        return None;
    }
    let path = Path::new(program);
    if program.as_bytes().contains(&b'/') {
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            std::env::current_dir().ok()?.join(path)
        };
        // Exists: let spawn report a permission problem as such, not as "not found".
        return path.exists().then_some(path);
    }
    let search = env.iter().rev().find(|(k, _)| k == "PATH")?;
    std::env::split_paths(&search.1)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(path))
        .find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

// ---------------------------------------------------------------------------------------------
// Lens errors. They live here for now because every CLI lens maps a `ProcessError` to one; they
// can move to `lens/mod.rs` (or `lens/error.rs`) unchanged.

/// How much of a failing child's stderr an error shows (after redaction).
pub const STDERR_TAIL_CHARS: usize = 500;

/// How much of an unreadable reply an error shows (after redaction).
pub const OUTPUT_EXCERPT_CHARS: usize = 200;

/// A child that did not run to its end, as a lens failure: one clear line, safe to show and to
/// store (any child output it carries has been redacted, stripped of control characters and
/// shortened). A missing program may be fallen back from; a timeout is not retried.
pub fn failure_of(e: ProcessError) -> Failure {
    match e {
        ProcessError::NotFound { program } => Failure::new(
            FailureKind::Missing,
            format!("`{}` was not found", one_line(&program, 200)),
        ),
        ProcessError::Spawn { program, source } => Failure::fatal(format!(
            "`{}` could not be started: {source}",
            one_line(&program, 200)
        )),
        ProcessError::Timeout { after, stderr, .. } => Failure::new(
            FailureKind::Timeout,
            format!(
                "{}{}",
                timed_out(after),
                stderr_note(&child_text(&stderr, STDERR_TAIL_CHARS, Keep::Tail))
            ),
        ),
        ProcessError::OutputTooLarge { limit, .. } => {
            Failure::fatal(format!("output exceeded {limit} bytes"))
        }
        e @ (ProcessError::Read { .. } | ProcessError::Wait(_)) => Failure::fatal(e.to_string()),
    }
}

/// `timed out after 1m 30s`.
pub fn timed_out(after: Duration) -> String {
    format!("timed out after {}", humantime::format_duration(after))
}

/// `; stderr: <tail>`, or nothing when the child said nothing.
pub fn stderr_note(stderr: &str) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; stderr: {stderr}")
    }
}

/// `; it began: <excerpt>`, or nothing when it printed nothing.
pub fn excerpt_note(excerpt: &str) -> String {
    if excerpt.is_empty() {
        String::new()
    } else {
        format!("; it began: {excerpt}")
    }
}

/// How a child exited, for an error: `status 3` or `signal 9`.
pub fn describe_status(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("status {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => status.to_string(),
    }
}

/// Which end of a long text to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    Head,
    Tail,
}

/// Child output (untrusted: it may echo the prompt, or a secret) made fit for an error message:
/// redacted, on one line, without control characters, at most `max` characters.
pub fn child_text(bytes: &[u8], max: usize, keep: Keep) -> String {
    // Redact a window a few times larger than what is kept, so a secret cut by the window's edge
    // falls outside the part that is shown, while a huge stderr is not scanned whole.
    let window = max.saturating_mul(4);
    let slice = match keep {
        Keep::Head => &bytes[..bytes.len().min(window)],
        Keep::Tail => &bytes[bytes.len().saturating_sub(window)..],
    };
    let text = String::from_utf8_lossy(slice);
    let text = redact_text(&text);
    match keep {
        Keep::Head => one_line(&text, max),
        Keep::Tail => one_line_tail(&text, max),
    }
}

/// The one place child output is masked before it is shown or stored.
fn redact_text(text: &str) -> String {
    crate::redact::redact(text).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, cwd: &Path, timeout: Duration) -> ProcessSpec {
        let mut spec = ProcessSpec::new("/bin/sh", cwd, timeout);
        spec.args = vec!["-c".into(), script.into()];
        spec.env = vec![("PATH".into(), "/usr/bin:/bin".into())];
        spec
    }

    fn scratch() -> tempfile::TempDir {
        tempfile::TempDir::new().expect("temp dir")
    }

    /// Alive and not a zombie (PID 1 here may never reap reparented children).
    fn pid_alive(pid: i32) -> bool {
        if nix::sys::signal::kill(Pid::from_raw(pid), None::<Signal>) == Err(Errno::ESRCH) {
            return false;
        }
        match std::fs::read(format!("/proc/{pid}/stat")) {
            Ok(stat) => !matches!(parse_stat(&stat), Some((b'Z' | b'X', _))),
            Err(_) => false,
        }
    }

    async fn read_pid(path: &Path) -> i32 {
        for _ in 0..100 {
            if let Ok(text) = std::fs::read_to_string(path)
                && let Ok(pid) = text.trim().parse()
            {
                return pid;
            }
            sleep(Duration::from_millis(10)).await;
        }
        panic!("no pid written to {}", path.display());
    }

    async fn assert_dies(pid: i32) {
        for _ in 0..100 {
            if !pid_alive(pid) {
                return;
            }
            sleep(Duration::from_millis(20)).await;
        }
        panic!("process {pid} survived");
    }

    #[tokio::test]
    async fn big_stdin_and_big_output_do_not_deadlock() {
        let dir = scratch();
        // Reads all of its input before writing 2 MiB to stdout and some to stderr.
        let mut spec = sh(
            "wc -c > count; head -c 2097152 /dev/zero; echo done >&2",
            dir.path(),
            Duration::from_secs(2),
        );
        spec.stdin = vec![b'x'; 1 << 20];
        let out = run(spec).await.expect("run");
        assert!(out.status.success());
        assert_eq!(out.stdout.len(), 2 << 20);
        assert_eq!(out.stderr, b"done\n");
        let count = std::fs::read_to_string(dir.path().join("count")).expect("count");
        assert_eq!(count.trim(), (1 << 20).to_string());
    }

    #[tokio::test]
    async fn big_stdin_to_a_child_writing_while_reading() {
        let dir = scratch();
        // `cat` echoes as it reads: both pipes fill up unless both directions are served at once.
        let mut spec = sh("cat", dir.path(), Duration::from_secs(2));
        spec.stdin = (0..(1 << 20)).map(|i| (i % 251) as u8).collect();
        let expected = spec.stdin.clone();
        let out = run(spec).await.expect("run");
        assert_eq!(out.stdout, expected);
    }

    #[tokio::test]
    async fn output_over_the_cap_fails_and_kills_the_group() {
        let dir = scratch();
        let mut spec = sh(
            "echo $$ > pid; while :; do echo aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa; done",
            dir.path(),
            Duration::from_secs(2),
        );
        spec.max_output = 10_000;
        let started = std::time::Instant::now();
        let err = run(spec).await.expect_err("over the cap");
        assert!(
            matches!(
                err,
                ProcessError::OutputTooLarge {
                    stream: Stream::Stdout,
                    limit: 10_000
                }
            ),
            "{err:?}"
        );
        assert!(started.elapsed() < Duration::from_millis(1500));
        assert_dies(read_pid(&dir.path().join("pid")).await).await;
    }

    #[tokio::test]
    async fn stderr_over_the_cap_fails_too() {
        let dir = scratch();
        let mut spec = sh(
            "head -c 100000 /dev/zero >&2",
            dir.path(),
            Duration::from_secs(2),
        );
        spec.max_output = 1000;
        let err = run(spec).await.expect_err("over the cap");
        assert!(
            matches!(
                err,
                ProcessError::OutputTooLarge {
                    stream: Stream::Stderr,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[tokio::test]
    async fn timeout_kills_a_hanging_grandchild() {
        let dir = scratch();
        let spec = sh(
            "echo starting >&2; sleep 1000 & echo $! > grandchild; sleep 1000",
            dir.path(),
            Duration::from_millis(300),
        );
        let started = std::time::Instant::now();
        let err = run(spec).await.expect_err("timeout");
        let ProcessError::Timeout { after, stderr, .. } = err else {
            panic!("{err:?}");
        };
        assert_eq!(after, Duration::from_millis(300));
        assert_eq!(stderr, b"starting\n");
        // `sleep` dies on SIGTERM: no need to wait out the grace period.
        assert!(started.elapsed() < Duration::from_millis(1500));
        assert_dies(read_pid(&dir.path().join("grandchild")).await).await;
    }

    #[tokio::test]
    async fn sigterm_is_followed_by_sigkill() {
        let dir = scratch();
        let spec = sh(
            "trap '' TERM; sh -c 'trap \"\" TERM; echo $$ > grandchild; while :; do sleep 0.05; done' & wait",
            dir.path(),
            Duration::from_millis(200),
        );
        let err = run(spec).await.expect_err("timeout");
        assert!(matches!(err, ProcessError::Timeout { .. }), "{err:?}");
        assert_dies(read_pid(&dir.path().join("grandchild")).await).await;
    }

    #[tokio::test]
    async fn a_grandchild_holding_the_pipes_does_not_hang_the_reader() {
        let dir = scratch();
        // The child answers and exits; its background grandchild keeps stdout open.
        let spec = sh(
            "sleep 1000 & echo $! > grandchild; echo answer",
            dir.path(),
            Duration::from_secs(2),
        );
        let started = std::time::Instant::now();
        let out = run(spec).await.expect("run");
        assert!(out.status.success());
        assert_eq!(out.stdout, b"answer\n");
        assert!(started.elapsed() < Duration::from_millis(1500));
        assert_dies(read_pid(&dir.path().join("grandchild")).await).await;
    }

    #[tokio::test]
    async fn leftover_background_processes_are_ended_after_a_normal_exit() {
        let dir = scratch();
        let spec = sh(
            "sleep 1000 >/dev/null 2>&1 & echo $! > grandchild; echo ok",
            dir.path(),
            Duration::from_secs(2),
        );
        let out = run(spec).await.expect("run");
        assert_eq!(out.stdout, b"ok\n");
        assert_dies(read_pid(&dir.path().join("grandchild")).await).await;
    }

    #[tokio::test]
    async fn dropping_the_run_kills_the_group() {
        let dir = scratch();
        let spec = sh(
            "sleep 1000 & echo $! > grandchild; sleep 1000",
            dir.path(),
            Duration::from_secs(30),
        );
        let cancelled = timeout(Duration::from_millis(300), run(spec)).await;
        assert!(cancelled.is_err());
        assert_dies(read_pid(&dir.path().join("grandchild")).await).await;
    }

    #[tokio::test]
    async fn the_environment_is_exactly_the_given_one() {
        let dir = scratch();
        let mut spec = sh("env", dir.path(), Duration::from_secs(2));
        spec.env.push(("ONLY_THIS".into(), "yes".into()));
        let out = run(spec).await.expect("run");
        let text = String::from_utf8(out.stdout).expect("utf-8");
        let mut names: Vec<&str> = text
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, _)| k))
            // The shell itself may export these few.
            .filter(|k| !matches!(*k, "PWD" | "SHLVL" | "_" | "OLDPWD"))
            .collect();
        names.sort_unstable();
        assert_eq!(names, ["ONLY_THIS", "PATH"]);
    }

    #[tokio::test]
    async fn the_working_directory_is_the_given_one() {
        let dir = scratch();
        let spec = sh("pwd -P", dir.path(), Duration::from_secs(2));
        let out = run(spec).await.expect("run");
        let pwd = String::from_utf8(out.stdout).expect("utf-8");
        let want = dir.path().canonicalize().expect("canonical");
        assert_eq!(Path::new(pwd.trim()), want);
    }

    #[tokio::test]
    async fn a_missing_program_is_not_found() {
        let dir = scratch();
        let mut spec = ProcessSpec::new(
            "no-such-lens-binary-xyz",
            dir.path(),
            Duration::from_secs(1),
        );
        spec.env = vec![("PATH".into(), "/usr/bin:/bin".into())];
        let err = run(spec).await.expect_err("not found");
        assert!(matches!(err, ProcessError::NotFound { .. }), "{err:?}");
        assert_eq!(err.to_string(), "`no-such-lens-binary-xyz` was not found");

        let spec = ProcessSpec::new("/no/such/binary", dir.path(), Duration::from_secs(1));
        let err = run(spec).await.expect_err("not found");
        assert!(matches!(err, ProcessError::NotFound { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn a_name_is_looked_up_on_the_childs_path() {
        let dir = scratch();
        let mut spec = ProcessSpec::new("sh", dir.path(), Duration::from_secs(2));
        spec.args = vec!["-c".into(), "exit 3".into()];
        spec.env = vec![("PATH".into(), "/usr/bin:/bin".into())];
        let out = run(spec).await.expect("run");
        assert_eq!(out.status.code(), Some(3));

        // No PATH in the child's environment: nothing to look a bare name up on.
        let spec = ProcessSpec::new("sh", dir.path(), Duration::from_secs(2));
        assert!(matches!(
            run(spec).await,
            Err(ProcessError::NotFound { .. })
        ));
    }

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        assert_eq!(
            parse_stat(b"123 (a) b (c)) S 1 456 456 0 -1"),
            Some((b'S', 456))
        );
        assert_eq!(parse_stat(b"garbage"), None);
    }

    #[test]
    fn never_signal_group_zero_one_or_our_own() {
        assert_eq!(group_of(0), None);
        assert_eq!(group_of(1), None);
        assert_eq!(group_of(u32::MAX), None);
        let own = u32::try_from(getpgrp().as_raw()).expect("positive");
        assert_eq!(group_of(own), None);
    }

    #[test]
    fn child_text_is_one_short_clean_line() {
        let text = child_text(
            b"error:
	something [31mbad[0m

",
            100,
            Keep::Tail,
        );
        assert_eq!(text, "error: something [31mbad[0m");
        let long = "x".repeat(1000) + "END";
        let tail = child_text(long.as_bytes(), 10, Keep::Tail);
        assert_eq!(tail, "…xxxxxxEND");
        let head = child_text(long.as_bytes(), 10, Keep::Head);
        assert_eq!(head, "xxxxxxxxx…");
        assert_eq!(child_text(b"", 10, Keep::Tail), "");
    }

    #[test]
    fn child_text_masks_secrets() {
        let token = format!(
            "ghp_{}",
            "a1B2c3D4e5".repeat(4).get(..36).unwrap_or_default()
        );
        let stderr = format!("auth failed for {token}\n");
        let text = child_text(stderr.as_bytes(), STDERR_TAIL_CHARS, Keep::Tail);
        assert!(!text.contains(&token), "{text}");
        assert!(text.contains("[REDACTED"), "{text}");
    }

    #[test]
    fn process_failures_read_as_one_line() {
        let f = failure_of(ProcessError::Timeout {
            after: Duration::from_secs(90),
            stderr: b"still thinking\n".to_vec(),
            stdout: Vec::new(),
        });
        assert_eq!(f.kind, FailureKind::Timeout);
        assert_eq!(f.message, "timed out after 1m 30s; stderr: still thinking");
        let f = failure_of(ProcessError::OutputTooLarge {
            stream: Stream::Stdout,
            limit: 8 << 20,
        });
        assert_eq!(f.kind, FailureKind::Fatal);
        assert_eq!(f.message, "output exceeded 8388608 bytes");
        let f = failure_of(ProcessError::NotFound {
            program: "claude\nx".to_owned(),
        });
        assert_eq!(f.kind, FailureKind::Missing);
        assert!(!f.message.contains('\n'), "{}", f.message);
    }
}
