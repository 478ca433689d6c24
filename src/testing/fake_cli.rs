//! Test support shared by the `claude-cli` and `codex-cli` tests: a fake CLI from
//! `tests/fixtures/fake-cli/`, symlinked into a temp dir with its `mode` file beside it (argv and
//! the environment must stay as the lens builds them), and what the fake recorded there.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::diff::Diff;
use crate::lens::agent_cli::{self, AgentCli};
use crate::lens::cli_env::CliEnv;
use crate::lens::process::DEFAULT_MAX_OUTPUT;
use crate::lens::{Answer, BackendKind, LensRequest, LensSpec};

pub(crate) const DIFF: &str = "\
diff --git a/src/lib.rs b/src/lib.rs
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,2 +1,3 @@
 fn a() {}
+fn b() {}
 fn c() {}
";

/// Shell variables a `sh` script has whatever its environment.
const SHELL_OWN: [&str; 4] = ["PWD", "SHLVL", "_", "OLDPWD"];

pub(crate) struct Fake {
    pub(crate) dir: tempfile::TempDir,
    cli: &'static str,
}

impl Fake {
    pub(crate) fn new(cli: &'static str, mode: &str) -> Self {
        let dir = tempfile::TempDir::new().expect("temp dir");
        let fixture: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests/fixtures/fake-cli", cli]
            .iter()
            .collect();
        // A symlink, not a copy: executing a file just written can fail with ETXTBSY when
        // another test thread forks meanwhile.
        std::os::unix::fs::symlink(&fixture, dir.path().join(cli)).expect("symlink");
        std::fs::write(dir.path().join("mode"), mode).expect("mode");
        Self { dir, cli }
    }

    pub(crate) fn bin(&self) -> String {
        self.dir
            .path()
            .join(self.cli)
            .to_string_lossy()
            .into_owned()
    }

    pub(crate) fn lens(&self, backend: BackendKind, model: Option<&str>) -> LensSpec {
        let mut spec = LensSpec::new(self.cli, backend);
        spec.bin = Some(self.bin());
        spec.model = model.map(str::to_owned);
        spec.timeout = Duration::from_secs(5);
        spec
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A file the fake wrote ("" when it did not).
    pub(crate) fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    pub(crate) fn ran(&self) -> bool {
        self.path("argv").exists()
    }

    pub(crate) fn argv(&self) -> Vec<String> {
        self.read("argv")
            .lines()
            .map(|l| {
                l.strip_prefix('<')
                    .and_then(|l| l.strip_suffix('>'))
                    .expect("<arg>")
                    .to_owned()
            })
            .collect()
    }

    /// The fake's environment, without what the shell adds itself, sorted by name.
    pub(crate) fn env(&self) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = self
            .read("env")
            .lines()
            .filter_map(|l| l.split_once('='))
            .filter(|(k, _)| {
                !SHELL_OWN.contains(k) && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            })
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        env.sort();
        env
    }

    pub(crate) fn env_names(&self) -> Vec<String> {
        self.env().into_iter().map(|(k, _)| k).collect()
    }
}

/// What reviewbot's own environment might hold: the basics, both CLIs' settings, and every
/// credential a CLI child must never see.
pub(crate) fn cli_env(home: &Path, codex_home: &Path) -> CliEnv {
    let home = home.to_string_lossy().into_owned();
    let codex_home = codex_home.to_string_lossy().into_owned();
    CliEnv::from_vars([
        ("PATH", "/usr/bin:/bin".to_owned()),
        ("HOME", home.clone()),
        ("USER", "reviewbot".to_owned()),
        ("LANG", "C.UTF-8".to_owned()),
        ("LC_ALL", "C.UTF-8".to_owned()),
        (
            "TMPDIR",
            std::env::temp_dir().to_string_lossy().into_owned(),
        ),
        ("TERM", "xterm-256color".to_owned()),
        ("CLAUDE_CONFIG_DIR", format!("{home}/.claude-review")),
        (
            "CLAUDE_CODE_OAUTH_TOKEN",
            "sk-ant-oat01-subscription".to_owned(),
        ),
        ("CODEX_HOME", codex_home),
        ("ANTHROPIC_API_KEY", "sk-ant-api03-paid".to_owned()),
        ("ANTHROPIC_AUTH_TOKEN", "gateway-bearer".to_owned()),
        ("ANTHROPIC_BASE_URL", "https://gateway.example".to_owned()),
        ("OPENAI_API_KEY", "sk-proj-paid".to_owned()),
        ("OPENAI_BASE_URL", "https://gateway.example/v1".to_owned()),
        ("CODEX_API_KEY", "sk-codex-paid".to_owned()),
        ("GITHUB_TOKEN", "ghs_installation".to_owned()),
        ("GH_TOKEN", "ghs_installation".to_owned()),
        ("REVIEWBOT_WEBHOOK_SECRET", "hook-secret".to_owned()),
        (
            "REVIEWBOT_PRIVATE_KEY",
            "-----BEGIN RSA PRIVATE KEY-----".to_owned(),
        ),
    ])
}

pub(crate) fn request(prompt: &str) -> LensRequest {
    LensRequest {
        prompt: prompt.to_owned(),
        diff: Arc::new(Diff::parse(DIFF).expect("diff")),
        pr: None,
        checkout: None,
        answer: crate::lens::contract::AnswerKind::Review,
    }
}

/// The text of `src/lib.rs` in a [`Snapshot`]: quotes, a backslash and a tab, which a fake
/// must escape to put it into its JSON.
pub(crate) const SNAPSHOT_LIB: &str = "fn a() {}\n\tfn b() { let s = \"q\\\\t\"; }\nfn c() {}\n";

/// A repository snapshot for a lens to read: `src/lib.rs` ([`SNAPSHOT_LIB`]) and
/// `src/util/helpers.rs`.
pub(crate) struct Snapshot {
    dir: tempfile::TempDir,
}

impl Snapshot {
    pub(crate) fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("reviewbot-snapshot-")
            .tempdir()
            .expect("snapshot dir");
        std::fs::create_dir_all(dir.path().join("src/util")).expect("src/util");
        std::fs::write(dir.path().join("src/lib.rs"), SNAPSHOT_LIB).expect("lib.rs");
        std::fs::write(
            dir.path().join("src/util/helpers.rs"),
            "pub fn helper() -> u32 { 42 }\n",
        )
        .expect("helpers.rs");
        Self { dir }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Every file under the snapshot with its text, sorted: equal before and after a run
    /// when nothing was written.
    pub(crate) fn contents(&self) -> Vec<(PathBuf, String)> {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
            for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
                let path = entry.path();
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    walk(&path, out);
                } else {
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    out.push((path, text));
                }
            }
        }
        let mut out = Vec::new();
        walk(self.path(), &mut out);
        out.sort();
        out
    }

    /// `request(prompt)` over this snapshot.
    pub(crate) fn request(&self, prompt: &str) -> LensRequest {
        LensRequest {
            checkout: Some(Arc::from(self.path())),
            answer: crate::lens::contract::AnswerKind::Review,
            ..request(prompt)
        }
    }
}

/// The paragraph the prompt of a lens that reads the repository (`true`) or sees the diff
/// alone ends with.
pub(crate) fn repository_note(reads: bool) -> String {
    crate::lens::contract::with_repository("", reads)
        .trim()
        .to_owned()
}

/// Runs the fake CLI `C` as a lens over a fresh [`Snapshot`], 40 tool rounds allowed, and
/// checks that the run wrote nothing there and that the prompt said whether the lens
/// `reads` the repository.
pub(crate) async fn review_snapshot<C: AgentCli>(
    kind: BackendKind,
    fake: &Fake,
    env: &CliEnv,
    reads: bool,
) -> (Snapshot, Answer) {
    let spec = fake.lens(kind, None);
    let snapshot = Snapshot::new();
    let before = snapshot.contents();
    let req = snapshot.request("Review this change.");
    let answer = agent_cli::run::<C>(&spec, &req, env, 40, DEFAULT_MAX_OUTPUT)
        .await
        .expect("an answer");
    assert_eq!(snapshot.contents(), before, "the snapshot changed");
    let stdin = fake.read("stdin");
    assert!(
        stdin.ends_with(&format!("{}\n", repository_note(reads))),
        "{stdin}"
    );
    (snapshot, answer)
}

/// A prompt larger than a pipe buffer, with a marker to look for in argv.
pub(crate) fn big_prompt() -> String {
    let mut prompt = String::from("PROMPT-MARKER-7f3a: review this change.\n");
    while prompt.len() < 200_000 {
        prompt.push_str("+fn b() {} // untrusted diff text, quotes ' \" and $HOME\n");
    }
    prompt
}

/// Waits for `pid` to be gone (or a zombie, when PID 1 here never reaps).
pub(crate) async fn gone_soon(pid: i32) -> bool {
    for _ in 0..100 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.is_empty()
            || stat
                .rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

pub(crate) fn pid(fake: &Fake, name: &str) -> i32 {
    fake.read(name).trim().parse().expect("pid file")
}

/// The real CLI `name` under `REVIEWBOT_REAL_CLI_DIR` (an `npm install --prefix` folder), or
/// `None` after saying plainly that the test is skipped. Written to stderr directly, so that
/// the notice shows even though the test harness captures `eprintln!`.
pub(crate) fn real_cli(name: &str, test: &str) -> Option<PathBuf> {
    use std::io::Write;
    let Some(dir) = std::env::var_os("REVIEWBOT_REAL_CLI_DIR").filter(|d| !d.is_empty()) else {
        // CI installs the real CLIs (.ci/run): there, a missing install is a failure.
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: CI must set REVIEWBOT_REAL_CLI_DIR (see .ci/run)"
        );
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: set REVIEWBOT_REAL_CLI_DIR to an `npm install --prefix` folder \
             holding @anthropic-ai/claude-code and @openai/codex to run it"
        );
        return None;
    };
    let dir = PathBuf::from(dir);
    let found = [
        dir.join("node_modules/.bin").join(name),
        dir.join("bin").join(name),
        dir.join(name),
    ]
    .into_iter()
    .find(|p| p.is_file());
    assert!(
        found.is_some(),
        "REVIEWBOT_REAL_CLI_DIR={} holds no `{name}`",
        dir.display()
    );
    found
}

/// The basics of a real CLI's environment: our `PATH` (the Codex launcher needs `node`), a
/// home of its own, and nothing else.
pub(crate) fn real_env(home: &Path, extra: &[(&str, &Path)]) -> CliEnv {
    let mut vars = vec![
        (
            "PATH".to_owned(),
            std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned()),
        ),
        ("HOME".to_owned(), home.to_string_lossy().into_owned()),
        ("USER".to_owned(), "reviewbot".to_owned()),
        ("LANG".to_owned(), "C.UTF-8".to_owned()),
    ];
    for (k, v) in extra {
        vars.push(((*k).to_owned(), v.to_string_lossy().into_owned()));
    }
    CliEnv::from_vars(vars)
}

/// Pids of live processes whose environment holds `needle` (e.g. `CODEX_HOME=/tmp/x`).
pub(crate) fn processes_with_env(needle: &str) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'));
            !zombie
                && environ
                    .split(|&b| b == 0)
                    .any(|var| var == needle.as_bytes())
        })
        .collect()
}
