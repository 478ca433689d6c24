//! `action/action.yml` run as a GitHub runner would run it, against the fake GitHub.
//!
//! The file is parsed structurally (`yaml_serde`), checked against GitHub's composite-action rules
//! (`shell` on every `run` step, no `INPUT_*` variables, runner defaults not overwritten), and then
//! its `run` steps are executed in order with `bash --noprofile --norc -eo pipefail` (what
//! `shell: bash` means on a runner). Each step's `env:`
//! is built by evaluating the `${{ … }}` expressions the action uses; any other expression fails
//! the test. The runner's files (`GITHUB_OUTPUT`, `GITHUB_STEP_SUMMARY`, `GITHUB_PATH`) are
//! honoured, and the log is read back the way the runner reads it: `::add-mask::` registers a
//! secret, `::stop-commands::T` … `::T::` turns workflow commands off.
//!
//! Where reviewbot comes from is tested too: a release asset downloaded from a fake release server
//! (real GitHub semantics: `releases/download/<tag>/<asset>` redirects to storage, an unknown
//! asset is a 404), checked against its `.sha256`, kept in the runner's tool cache; a build only
//! when there is no release.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::fake_github::{FakeGithub, FileSpec, PrSpec, TokenKind, sha};

const REPO: &str = "octo/app";
const PR: u64 = 12;
const TOKEN: &str = "ghs_ActionsTokenOfTheTest0123456789abcdefXYZ";
const TRIGGER: &str = "reviewbot:review";
/// The action's own repository and a release tag of it.
const ACTION_REPO: &str = "octo/reviewbot";
const TAG: &str = "v9.9.9";

/// A leftover `dbg!` (advisory) and a Python `breakpoint()` (blocking) for the builtin lens.
const RS_PATCH: &str = "@@ -1,4 +1,6 @@\n fn main() {\n-    run();\n+    let total = run();\n+    dbg!(&total);\n+    report(total);\n }\n \n";
const PY_PATCH: &str =
    "@@ -10,3 +10,4 @@ def work():\n     x = load()\n+    breakpoint()\n     return x\n \n";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------------------------------------
// action.yml, as a typed document. Unknown keys are refused: a step key this emulation does not
// model (`if`, `working-directory`, `continue-on-error`, `uses`) must fail here, not be ignored.

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ActionYml {
    name: String,
    description: String,
    // Marketplace metadata: allowed, not checked.
    #[serde(default)]
    #[allow(dead_code)]
    author: Option<String>,
    #[serde(default)]
    #[allow(dead_code)]
    branding: Option<BTreeMap<String, String>>,
    inputs: BTreeMap<String, InputDef>,
    #[serde(default)]
    outputs: BTreeMap<String, OutputDef>,
    runs: Runs,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct InputDef {
    description: String,
    #[serde(default)]
    required: bool,
    default: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputDef {
    description: String,
    value: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Runs {
    using: String,
    steps: Vec<Step>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    shell: Option<String>,
    #[serde(default)]
    run: Option<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
}

fn action_yml() -> ActionYml {
    let path = root().join("action/action.yml");
    let text = std::fs::read_to_string(&path).expect("read action/action.yml");
    yaml_serde::from_str(&text).unwrap_or_else(|e| panic!("action/action.yml: {e}"))
}

/// Every `${{ … }}` in `text`, trimmed.
fn expressions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        let after = &rest[start + 3..];
        let end = after
            .find("}}")
            .unwrap_or_else(|| panic!("unclosed expression in {text:?}"));
        out.push(after[..end].trim().to_owned());
        rest = &after[end + 2..];
    }
    out
}

#[test]
fn action_yml_is_a_composite_action_that_keeps_expressions_out_of_scripts() {
    let action = action_yml();
    assert!(!action.name.is_empty() && !action.description.is_empty());
    assert_eq!(action.runs.using, "composite");

    // Inputs and their defaults. `required: true` is not enforced by GitHub, so none claims it.
    let default = |name: &str| {
        let input = action
            .inputs
            .get(name)
            .unwrap_or_else(|| panic!("input {name} missing"));
        input.default.clone()
    };
    assert_eq!(
        default("github-token").as_deref(),
        Some("${{ github.token }}")
    );
    assert_eq!(default("config").as_deref(), Some(""));
    assert_eq!(default("lenses").as_deref(), Some(""));
    assert_eq!(default("fail-on").as_deref(), Some("never"));
    assert_eq!(default("trigger-label").as_deref(), Some(TRIGGER));
    for (name, input) in &action.inputs {
        assert!(!input.description.trim().is_empty(), "input {name}");
        assert!(!input.required, "input {name}: `required` is not enforced");
    }
    for (name, output) in &action.outputs {
        assert!(!output.description.trim().is_empty(), "output {name}");
        assert!(
            output.value.starts_with("${{ steps."),
            "output {name}: {}",
            output.value
        );
    }

    assert!(!action.runs.steps.is_empty());
    for (i, step) in action.runs.steps.iter().enumerate() {
        let what = step.name.clone().unwrap_or_else(|| format!("step {i}"));
        let script = step
            .run
            .as_deref()
            .unwrap_or_else(|| panic!("{what}: only `run` steps"));
        assert_eq!(step.shell.as_deref(), Some("bash"), "{what}: `shell`");
        assert!(
            !script.contains("${{"),
            "{what}: an expression inside `run:`; map it through `env:`"
        );
        assert!(
            script.trim_start().starts_with("set -euo pipefail"),
            "{what}: start with `set -euo pipefail`"
        );
        let syntax = Command::new("bash")
            .args(["-n", "-c", script])
            .output()
            .unwrap();
        assert!(
            syntax.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&syntax.stderr)
        );
        for (key, value) in &step.env {
            // Runner defaults cannot be overwritten; GITHUB_TOKEN is not one of them.
            assert!(
                key == "GITHUB_TOKEN"
                    || !(key.starts_with("GITHUB_") || key.starts_with("RUNNER_")),
                "{what}: env {key} is reserved"
            );
            for expr in expressions(value) {
                if let Some(input) = expr.strip_prefix("inputs.") {
                    assert!(action.inputs.contains_key(input), "{what}: {expr}");
                }
            }
        }
        let sees_token = step
            .env
            .values()
            .any(|v| v.contains("inputs.github-token") || v.contains("github.token"));
        if script.contains("cargo build") || script.contains("setup.sh") {
            assert!(
                !sees_token,
                "{what}: the download and the build must not see the token"
            );
        }
    }
    let first = &action.runs.steps[0];
    assert!(
        first.run.as_deref().unwrap().contains("::add-mask::")
            && first.env.get("GITHUB_TOKEN").map(String::as_str)
                == Some("${{ inputs.github-token }}"),
        "the first step masks the token"
    );
}

/// The linter binary that `var` names (`.ci/run` installs them). Unset, the test is skipped
/// with a line saying so, except under CI, where it fails.
fn linter(var: &str, test: &str) -> Option<std::ffi::OsString> {
    use std::io::Write;
    let bin = std::env::var_os(var).filter(|v| !v.is_empty());
    if bin.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must set {var} (see .ci/run)"
        );
        // Straight to stderr, so that it shows although the harness captures `eprintln!`.
        let _ = writeln!(std::io::stderr(), "SKIPPED {test}: set {var} to the binary");
    }
    bin
}

/// shellcheck over `setup.sh` and every `run` script (`REVIEWBOT_SHELLCHECK` names the binary;
/// `.ci/run` installs it).
#[test]
fn the_action_scripts_pass_shellcheck() {
    let Some(shellcheck) = linter("REVIEWBOT_SHELLCHECK", "the_action_scripts_pass_shellcheck")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut files = vec![root().join("action/setup.sh")];
    for (i, step) in action_yml().runs.steps.iter().enumerate() {
        let path = dir.path().join(format!("step-{i}.sh"));
        std::fs::write(&path, step.run.as_deref().unwrap()).unwrap();
        files.push(path);
    }
    lint_passes(
        Command::new(shellcheck)
            .args(["--shell=bash", "--severity=style"])
            .args(&files),
    );
}

/// Runs a linter and fails with what it printed unless it exits 0.
fn lint_passes(linter: &mut Command) {
    let out = linter.output().unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

// ---------------------------------------------------------------------------------------------
// The runner.

/// One job that runs the action once.
struct Job<'a> {
    fake: &'a FakeGithub,
    dir: tempfile::TempDir,
    event: Value,
    event_name: &'static str,
    inputs: BTreeMap<String, String>,
    /// `github.token`.
    token: String,
    /// Extra job-level environment (what a workflow's `env:` would set).
    env: BTreeMap<String, String>,
    /// Where `action.yml` lives (`GITHUB_ACTION_PATH`).
    action_path: PathBuf,
    /// `github.action_repository` and `github.action_ref`: empty for a local action (`uses: ./…`),
    /// and often inside a composite action too.
    action_repository: String,
    action_ref: String,
    /// `GITHUB_SERVER_URL`. By default a closed port on loopback: nothing is downloaded.
    server_url: String,
    /// Put the suite's `reviewbot` on PATH (else the action must download or build one).
    reviewbot_on_path: bool,
    /// The `cargo` on PATH "builds" (links the suite's binary where the build would put it);
    /// else it fails if called.
    cargo_builds: bool,
}

/// What a job left behind.
struct Ran {
    /// Exit status of the last step that ran (the failing one, if any).
    status: i32,
    /// stdout and stderr of every step, in order, as the runner reads them.
    raw: String,
    /// `$GITHUB_STEP_SUMMARY` of every step, concatenated.
    summary: String,
    /// The action's outputs.
    outputs: BTreeMap<String, String>,
    /// The arguments of every `cargo` call.
    cargo_calls: Vec<String>,
}

fn pr_event(action: &str) -> Value {
    let text =
        std::fs::read_to_string(root().join("fixtures/github/pull_request.opened.json")).unwrap();
    let mut event: Value = serde_json::from_str(&text).unwrap();
    event["action"] = action.into();
    event["number"] = PR.into();
    event["pull_request"]["number"] = PR.into();
    event["pull_request"]["head"]["sha"] = sha("head").into();
    event["pull_request"]["head"]["repo"]["full_name"] = REPO.into();
    event["pull_request"]["base"]["repo"]["full_name"] = REPO.into();
    event["repository"]["full_name"] = REPO.into();
    event
}

fn labeled_event(label: &str) -> Value {
    let mut event = pr_event("labeled");
    event["label"] =
        serde_json::json!({"id": 1, "name": label, "color": "ededed", "default": false});
    event
}

fn write_script(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

impl<'a> Job<'a> {
    fn new(fake: &'a FakeGithub) -> Job<'a> {
        Job {
            fake,
            dir: tempfile::tempdir().unwrap(),
            event: pr_event("opened"),
            event_name: "pull_request",
            inputs: BTreeMap::new(),
            token: TOKEN.to_owned(),
            env: BTreeMap::new(),
            action_path: root().join("action"),
            action_repository: String::new(),
            action_ref: String::new(),
            server_url: "http://127.0.0.1:9".to_owned(),
            reviewbot_on_path: true,
            cargo_builds: false,
        }
    }

    /// Runs as `uses: octo/reviewbot/action@v9.9.9` does on a runner without reviewbot: the
    /// release comes from `releases`; `cargo` fails if called.
    fn release_from(mut self, releases: &FakeReleases) -> Self {
        self.action_repository = ACTION_REPO.to_owned();
        self.action_ref = TAG.to_owned();
        self.server_url = releases.url();
        self.reviewbot_on_path = false;
        self
    }

    /// The runner's tool cache (`RUNNER_TOOL_CACHE`); it outlives one run of the job.
    fn tool_cache(&self) -> PathBuf {
        self.dir.path().join("tool-cache")
    }

    fn input(mut self, name: &str, value: &str) -> Self {
        self.inputs.insert(name.to_owned(), value.to_owned());
        self
    }

    fn env(mut self, name: &str, value: &str) -> Self {
        self.env.insert(name.to_owned(), value.to_owned());
        self
    }

    /// A config file in the job's temp dir, with quick rate-limit waits.
    fn config_file(&self, extra: &str) -> String {
        let path = self.dir.path().join("operator.toml");
        let text =
            format!("[github]\nmax_rate_limit_wait = \"10s\"\nrate_limit_floor = \"1s\"\n{extra}");
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    }

    fn run(&self) -> Ran {
        let action: ActionYml = {
            let text = std::fs::read_to_string(self.action_path.join("action.yml")).unwrap();
            yaml_serde::from_str(&text).unwrap()
        };
        for name in self.inputs.keys() {
            assert!(action.inputs.contains_key(name), "unexpected input {name}");
        }
        let tmp = self.dir.path();
        let workspace = tmp.join("workspace");
        let runner_temp = tmp.join("runner-temp");
        let fake_bin = tmp.join("fake-bin");
        for d in [&workspace, &runner_temp, &fake_bin] {
            std::fs::create_dir_all(d).unwrap();
        }
        // The PR's checkout carries its own config: a lens that always fails. The action must
        // never read it (and if it did, every lens would fail and the step would exit 3).
        std::fs::write(
            workspace.join("reviewbot.toml"),
            "[[lens]]\nname = \"pr-owned\"\nbackend = \"command\"\nbin = \"/bin/false\"\n\n[review]\nlenses = [\"pr-owned\"]\n",
        )
        .unwrap();
        let event_path = tmp.join("event.json");
        std::fs::write(&event_path, self.event.to_string()).unwrap();

        let cargo_log = tmp.join("cargo-calls");
        if !self.cargo_builds {
            // A `cargo` first on PATH that only records it was called: the action must not build.
            write_script(
                &fake_bin.join("cargo"),
                &format!(
                    "#!/bin/sh\necho \"$*\" >>'{}'\necho 'cargo must not run' >&2\nexit 97\n",
                    cargo_log.display()
                ),
            );
        } else {
            // A `cargo` that "builds" by linking the suite's binary where the build would put it.
            write_script(
                &fake_bin.join("cargo"),
                &format!(
                    "#!/bin/bash\nset -eu\necho \"$*\" >>'{log}'\nwhile [ $# -gt 0 ]; do\n  if [ \"$1\" = --target-dir ]; then dir=\"$2\"; fi\n  shift\ndone\nmkdir -p \"$dir/release\"\nln -sf '{bin}' \"$dir/release/reviewbot\"\n",
                    log = cargo_log.display(),
                    bin = env!("CARGO_BIN_EXE_reviewbot"),
                ),
            );
        }
        let bin_dir = Path::new(env!("CARGO_BIN_EXE_reviewbot")).parent().unwrap();
        let mut path: Vec<String> = vec![fake_bin.display().to_string()];
        if self.reviewbot_on_path {
            path.push(bin_dir.display().to_string());
        }
        path.extend(["/usr/bin".to_owned(), "/bin".to_owned()]);

        let mut base: BTreeMap<String, String> = BTreeMap::new();
        for (k, v) in [
            ("CI", "true"),
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_EVENT_NAME", self.event_name),
            ("GITHUB_REPOSITORY", REPO),
            ("GITHUB_SHA", &sha("merge")),
            ("GITHUB_REF", &format!("refs/pull/{PR}/merge")),
            ("RUNNER_OS", runner_platform().0),
            ("RUNNER_ARCH", runner_platform().1),
            ("LANG", "C.UTF-8"),
        ] {
            base.insert(k.to_owned(), v.to_owned());
        }
        for (k, v) in [
            ("GITHUB_API_URL", self.fake.url()),
            ("GITHUB_EVENT_PATH", event_path.display().to_string()),
            ("GITHUB_WORKSPACE", workspace.display().to_string()),
            ("GITHUB_ACTION_PATH", self.action_path.display().to_string()),
            ("RUNNER_TEMP", runner_temp.display().to_string()),
            ("RUNNER_TOOL_CACHE", self.tool_cache().display().to_string()),
            ("GITHUB_SERVER_URL", self.server_url.clone()),
            ("HOME", tmp.display().to_string()),
        ] {
            base.insert(k.to_owned(), v);
        }
        base.extend(self.env.clone());

        let mut steps: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        let mut raw = Vec::new();
        let mut summary = String::new();
        let mut status = 0;
        for (i, step) in action.runs.steps.iter().enumerate() {
            let script = step.run.as_deref().expect("a run step");
            assert_eq!(step.shell.as_deref(), Some("bash"));
            let files = tmp.join(format!("step-{i}"));
            std::fs::create_dir_all(&files).unwrap();
            let file = |name: &str| {
                let p = files.join(name);
                std::fs::write(&p, "").unwrap();
                p
            };
            let (output, step_summary, add_path, add_env) =
                (file("output"), file("summary"), file("path"), file("env"));
            let script_path = files.join("script.sh");
            std::fs::write(&script_path, script).unwrap();
            let log = files.join("log");
            let log_file = std::fs::File::create(&log).unwrap();

            let mut cmd = Command::new("bash");
            cmd.args(["--noprofile", "--norc", "-eo", "pipefail"])
                .arg(&script_path)
                .current_dir(&workspace)
                .env_clear()
                .envs(&base)
                .env("PATH", path.join(":"))
                .env("GITHUB_OUTPUT", &output)
                .env("GITHUB_STEP_SUMMARY", &step_summary)
                .env("GITHUB_PATH", &add_path)
                .env("GITHUB_ENV", &add_env)
                .stdin(Stdio::null())
                .stdout(log_file.try_clone().unwrap())
                .stderr(log_file);
            for (key, value) in &step.env {
                cmd.env(key, self.expand(value, &action, &steps, &runner_temp));
            }
            status = cmd.status().unwrap().code().expect("exited, not killed");

            raw.extend(std::fs::read(&log).unwrap());
            summary.push_str(&std::fs::read_to_string(&step_summary).unwrap());
            if let Some(id) = &step.id {
                let text = std::fs::read_to_string(&output).unwrap();
                steps.insert(id.clone(), parse_output_file(&text));
            }
            // `$GITHUB_PATH` prepends for the steps after this one.
            let added = std::fs::read_to_string(&add_path).unwrap();
            for dir in added.lines().filter(|l| !l.is_empty()) {
                path.insert(0, dir.to_owned());
            }
            assert_eq!(
                std::fs::read_to_string(&add_env).unwrap(),
                "",
                "this runner emulation does not apply $GITHUB_ENV"
            );
            if status != 0 {
                break;
            }
        }
        let outputs = action
            .outputs
            .iter()
            .map(|(name, def)| {
                (
                    name.clone(),
                    self.expand(&def.value, &action, &steps, &runner_temp),
                )
            })
            .collect();
        let cargo_calls = std::fs::read_to_string(&cargo_log)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect();
        Ran {
            status,
            raw: String::from_utf8(raw).expect("a UTF-8 log"),
            summary,
            outputs,
            cargo_calls,
        }
    }

    /// `text` with every `${{ … }}` evaluated, as far as this action needs.
    fn expand(
        &self,
        text: &str,
        action: &ActionYml,
        steps: &BTreeMap<String, BTreeMap<String, String>>,
        runner_temp: &Path,
    ) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(start) = rest.find("${{") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 3..];
            let end = after.find("}}").expect("closed expression");
            let expr = after[..end].trim();
            out.push_str(&self.eval(expr, action, steps, runner_temp));
            rest = &after[end + 2..];
        }
        out.push_str(rest);
        out
    }

    fn eval(
        &self,
        expr: &str,
        action: &ActionYml,
        steps: &BTreeMap<String, BTreeMap<String, String>>,
        runner_temp: &Path,
    ) -> String {
        // Property paths only: an operator, a function or a literal is beyond this emulation.
        assert!(
            !expr.is_empty()
                && expr
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')),
            "the test cannot evaluate `${{{{ {expr} }}}}`"
        );
        if let Some(name) = expr.strip_prefix("inputs.") {
            let def = action
                .inputs
                .get(name)
                .unwrap_or_else(|| panic!("`{expr}`: no such input"));
            return match self.inputs.get(name) {
                Some(v) => v.clone(),
                None => self.expand(
                    def.default.as_deref().unwrap_or(""),
                    action,
                    steps,
                    runner_temp,
                ),
            };
        }
        if let Some(path) = expr.strip_prefix("github.event.") {
            // A missing property is null, and null is the empty string in `env:`.
            let mut v = &self.event;
            for key in path.split('.') {
                v = v.get(key).unwrap_or(&Value::Null);
            }
            return match v {
                Value::Null => String::new(),
                Value::String(s) => s.clone(),
                Value::Bool(_) | Value::Number(_) => v.to_string(),
                _ => panic!("`{expr}` is an object or an array"),
            };
        }
        if let Some(rest) = expr.strip_prefix("steps.") {
            let (id, name) = rest
                .split_once(".outputs.")
                .unwrap_or_else(|| panic!("the test cannot evaluate `{expr}`"));
            return steps
                .get(id)
                .and_then(|o| o.get(name))
                .cloned()
                .unwrap_or_default();
        }
        match expr {
            "github.token" => self.token.clone(),
            "github.action_path" => self.action_path.display().to_string(),
            "github.action_repository" => self.action_repository.clone(),
            "github.action_ref" => self.action_ref.clone(),
            "github.event_name" => self.event_name.to_owned(),
            "github.repository" => REPO.to_owned(),
            "runner.temp" => runner_temp.display().to_string(),
            _ => panic!("the test cannot evaluate `${{{{ {expr} }}}}`"),
        }
    }
}

/// `name=value` lines and `name<<DELIM` … `DELIM` blocks, as `$GITHUB_OUTPUT` holds them.
fn parse_output_file(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.is_empty() {
            continue;
        }
        if let Some((name, delim)) = line.split_once("<<") {
            let mut value = Vec::new();
            for l in lines.by_ref() {
                if l == delim {
                    break;
                }
                value.push(l);
            }
            out.insert(name.to_owned(), value.join("\n"));
        } else {
            let (name, value) = line
                .split_once('=')
                .unwrap_or_else(|| panic!("bad $GITHUB_OUTPUT line {line:?}"));
            out.insert(name.to_owned(), value.to_owned());
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The log, as the runner reads it.

struct Log {
    /// Each raw line, and whether it sits between `::stop-commands::T` and `::T::`.
    lines: Vec<(String, bool)>,
    /// What the log page shows: no processed command, every mask applied.
    shown: String,
    masks: Vec<String>,
    stop_tokens: Vec<String>,
    /// Workflow commands the runner acted on (outside stop-commands).
    commands: Vec<String>,
}

impl Log {
    fn read(raw: &str) -> Log {
        let mut lines = Vec::new();
        let mut shown = Vec::new();
        let mut masks = Vec::new();
        let mut stop_tokens = Vec::new();
        let mut commands = Vec::new();
        let mut stopped: Option<String> = None;
        for line in raw.lines() {
            if let Some(token) = &stopped {
                if line.trim() == format!("::{token}::") {
                    stopped = None;
                    lines.push((line.to_owned(), false));
                } else {
                    lines.push((line.to_owned(), true));
                    shown.push(line.to_owned());
                }
                continue;
            }
            lines.push((line.to_owned(), false));
            let Some(command) = line.trim_start().strip_prefix("::") else {
                shown.push(line.to_owned());
                continue;
            };
            let name_end = command.find([' ', ':']).unwrap_or(command.len());
            let name = &command[..name_end];
            let message = command[name_end..]
                .split_once("::")
                .map_or("", |(_, m)| m)
                .to_owned();
            commands.push(name.to_owned());
            match name {
                "add-mask" => masks.push(message),
                "stop-commands" => {
                    stop_tokens.push(message.clone());
                    stopped = Some(message);
                }
                _ => {}
            }
        }
        assert!(stopped.is_none(), "`::stop-commands::` left open:\n{raw}");
        let mut shown = shown.join("\n");
        for mask in masks.iter().filter(|m| !m.is_empty()) {
            shown = shown.replace(mask.as_str(), "***");
        }
        Log {
            lines,
            shown,
            masks,
            stop_tokens,
            commands,
        }
    }

    /// Lines outside every stop-commands region.
    fn outside(&self) -> impl Iterator<Item = &str> {
        self.lines
            .iter()
            .filter(|(_, inside)| !inside)
            .map(|(l, _)| l.as_str())
    }

    fn inside(&self) -> impl Iterator<Item = &str> {
        self.lines
            .iter()
            .filter(|(_, inside)| *inside)
            .map(|(l, _)| l.as_str())
    }
}

/// The log is safe: the token is masked before anything else prints, never shown, and nothing
/// reviewbot printed sits outside a stop-commands region (only the action's own lines do).
fn assert_log_safe(ran: &Ran, token: &str) -> Log {
    let log = Log::read(&ran.raw);
    let first = ran.raw.lines().next().unwrap_or_default();
    assert_eq!(first, format!("::add-mask::{token}"), "log:\n{}", ran.raw);
    assert_eq!(log.masks, vec![token.to_owned()]);
    assert_eq!(
        ran.raw.matches(token).count(),
        1,
        "the token appears only in its mask command:\n{}",
        ran.raw
    );
    assert!(!log.shown.contains(token));
    for t in &log.stop_tokens {
        assert!(
            t.len() == 32 && t.chars().all(|c| c.is_ascii_hexdigit()),
            "stop token {t:?}"
        );
    }
    // The action's own lines; anything else outside a region came from reviewbot or the PR.
    let own = regex::Regex::new(concat!(
        r"^(::add-mask::.*",
        r"|::stop-commands::[0-9a-f]{32}|::[0-9a-f]{32}::",
        r"|Using reviewbot from PATH: /.*|reviewbot \d+\.\d+\.\d+",
        r"|Downloading reviewbot v[0-9.]+ \(reviewbot-[a-z0-9_-]+\.tar\.gz\) from http://127\.0\.0\.1:\d+/.*",
        r"|(Cached|Using) reviewbot v[0-9.]+ (in|from) the tool cache: /.*",
        r"|::notice title=reviewbot::No reviewbot release to download: .*",
        r"|::group::Building reviewbot from /.*|::endgroup::",
        r"|The trigger label was added: reviewing this head again\.",
        r"|::error title=reviewbot::.*)$"
    ))
    .unwrap();
    for line in log.outside() {
        assert!(
            own.is_match(line),
            "not the action's own line, outside stop-commands: {line:?}\nlog:\n{}",
            ran.raw
        );
    }
    for command in &log.commands {
        assert!(
            matches!(
                command.as_str(),
                "add-mask" | "stop-commands" | "group" | "endgroup" | "error" | "notice"
            ) || log.stop_tokens.contains(command),
            "unexpected workflow command {command:?}"
        );
    }
    // What reviewbot printed is in the log, inside a region (so the check above means something).
    for line in ran.summary.lines().filter(|l| l.len() > 3) {
        assert!(
            log.inside().any(|l| l == line),
            "{line:?} not in a region:\n{}",
            ran.raw
        );
    }
    log
}

fn world(token_kind: TokenKind) -> FakeGithub {
    let fake = FakeGithub::start();
    fake.add_token(TOKEN, token_kind);
    fake.add_pr(
        REPO,
        PrSpec {
            number: PR,
            files: vec![
                FileSpec::modified("src/main.rs", RS_PATCH),
                FileSpec::modified("app/work.py", PY_PATCH),
            ],
            ..PrSpec::default()
        },
    );
    fake
}

fn bodies(fake: &FakeGithub) -> Vec<String> {
    fake.reviews(REPO, PR)
        .iter()
        .map(|r| r["body"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A job whose operator config (quick rate-limit waits) comes from `REVIEWBOT_CONFIG`.
fn configured_job(fake: &FakeGithub) -> Job<'_> {
    let job = Job::new(fake);
    let config = job.config_file("");
    job.env("REVIEWBOT_CONFIG", &config)
}

#[test]
fn the_action_posts_one_round_then_nothing_on_the_same_head() {
    let fake = world(TokenKind::actions());
    let job = configured_job(&fake);
    let ran = job.run();
    assert_eq!(ran.status, 0, "log:\n{}", ran.raw);
    assert!(
        ran.cargo_calls.is_empty(),
        "cargo ran: {:?}",
        ran.cargo_calls
    );

    let reviews = fake.reviews(REPO, PR);
    assert_eq!(reviews.len(), 1);
    // The reviewed head, never GITHUB_SHA (the merge commit).
    assert_eq!(reviews[0]["commit_id"], sha("head"));
    let body = reviews[0]["body"].as_str().unwrap();
    let round1 = format!("Round 1 — reviewed head {}", &sha("head")[..8]);
    assert!(body.starts_with(&round1), "{body}");
    assert_eq!(fake.review_comments(REPO, PR).len(), 2);

    // The job summary holds the round's Markdown: the body, then the findings.
    assert!(ran.summary.starts_with(&round1), "{}", ran.summary);
    assert!(ran.summary.contains("Verdict: 1 blocking, 1 advisory."));
    assert!(ran.summary.contains("**Blocking.**") && ran.summary.contains("**Advisory.**"));
    assert!(ran.summary.contains(&format!(
        "<!-- reviewbot round=1 head={} verdict=1,1",
        sha("head")
    )));
    assert_eq!(ran.outputs["verdict"], "1 blocking, 1 advisory");
    assert_eq!(ran.outputs["exit-code"], "0");

    let log = assert_log_safe(&ran, TOKEN);
    assert_eq!(log.stop_tokens.len(), 1);
    assert!(log.inside().any(|l| l.starts_with(&round1)));
    assert!(fake.unexpected().is_empty(), "{:?}", fake.unexpected());

    // The round's check run: created `in_progress` on the reviewed head (not `GITHUB_SHA`),
    // completed with the verdict.
    let runs = fake.check_runs(REPO);
    assert_eq!(runs.len(), 1, "{runs:#?}");
    let run = &runs[0];
    assert_eq!(run["name"], "reviewbot");
    assert_eq!(run["head_sha"], sha("head"));
    assert_eq!(run["external_id"], format!("reviewbot:pr={PR}"));
    assert_eq!(run["status"], "completed");
    assert_eq!(
        run["conclusion"], "neutral",
        "findings hold, fail-on is never"
    );
    assert_eq!(run["output"]["title"], "Round 1: 1 blocking, 1 advisory");
    let summary = run["output"]["summary"].as_str().unwrap();
    assert!(summary.starts_with("Round 1 — reviewed head"), "{summary}");
    let annotations = run["annotations"].as_array().unwrap();
    let level = |l: &str| {
        annotations
            .iter()
            .filter(|a| a["annotation_level"] == l)
            .count()
    };
    assert_eq!(
        (level("failure"), level("warning")),
        (1, 1),
        "{annotations:#?}"
    );
    let id = run["id"].as_u64();
    let writes: Vec<_> = fake
        .check_run_writes(REPO)
        .into_iter()
        .map(|w| (w.method, w.run, w.status, w.conclusion, w.answered))
        .collect();
    assert_eq!(
        writes,
        [
            ("POST", id, Some("in_progress".to_owned()), None, 201),
            (
                "PATCH",
                id,
                Some("completed".to_owned()),
                Some("neutral".to_owned()),
                200
            ),
        ]
    );

    // Again on the same head (a re-run, a redelivery): nothing posted, exit 0, explained.
    let again = job.run();
    assert_eq!(again.status, 0, "log:\n{}", again.raw);
    assert_eq!(fake.reviews(REPO, PR).len(), 1);
    assert_eq!(
        fake.check_runs(REPO),
        runs,
        "the head's run is left as it is"
    );
    let log2 = assert_log_safe(&again, TOKEN);
    assert!(log2.shown.contains("already reviewed"), "{}", log2.shown);
    assert_ne!(
        log.stop_tokens, log2.stop_tokens,
        "a fresh stop token per run"
    );
    assert!(again.cargo_calls.is_empty());
}

#[test]
fn fail_on_blocking_turns_the_job_red_and_a_rerun_stays_red() {
    let fake = world(TokenKind::actions());
    let job = Job::new(&fake);
    let config = job.config_file("");
    let job = job
        .input("config", &config)
        .input("lenses", " builtin ")
        .input("fail-on", "blocking");
    let ran = job.run();
    assert_eq!(ran.status, 1, "log:\n{}", ran.raw);
    assert_eq!(fake.reviews(REPO, PR).len(), 1);
    assert_eq!(ran.outputs["exit-code"], "1");
    assert_eq!(ran.outputs["verdict"], "1 blocking, 1 advisory");
    let log = assert_log_safe(&ran, TOKEN);
    assert!(
        log.outside()
            .any(|l| l.starts_with("::error title=reviewbot::fail-on=blocking holds")),
        "{}",
        ran.raw
    );
    // The check run fails with the job.
    let runs = fake.check_runs(REPO);
    assert_eq!(runs.len(), 1, "{runs:#?}");
    assert_eq!(runs[0]["conclusion"], "failure");

    let rerun = job.run();
    assert_eq!(rerun.status, 1, "log:\n{}", rerun.raw);
    assert_eq!(fake.reviews(REPO, PR).len(), 1);
    assert_log_safe(&rerun, TOKEN);
    // The head's run keeps its verdict; no second run.
    assert_eq!(fake.check_runs(REPO), runs);
}

/// The workflow's token cannot say who it is (`GET /user` answers 403), but what it writes is
/// authored by `github-actions[bot]`: only that bot's markers count. Another bot (another App,
/// or `github-actions[bot]`'s neighbour in a different workflow with its own token) that posts a
/// green round for this head neither stops the round nor turns a red job green.
#[test]
fn in_the_action_another_bots_round_marker_counts_for_nothing() {
    let fake = world(TokenKind::actions());
    fake.add_review_by(
        REPO,
        PR,
        "other-app[bot]",
        &format!(
            "All good. <!-- reviewbot round=1 head={} verdict=0,0 findings= -->",
            sha("head")
        ),
        &sha("head"),
    );
    let job = Job::new(&fake);
    let config = job.config_file("");
    let job = job
        .input("config", &config)
        .input("lenses", "builtin")
        .input("fail-on", "blocking");
    let ran = job.run();
    assert_eq!(ran.status, 1, "log:\n{}", ran.raw);
    let reviews = fake.reviews(REPO, PR);
    assert_eq!(reviews.len(), 2, "{reviews:#?}");
    assert_eq!(reviews[1]["user"]["login"], "github-actions[bot]");
    let round1 = format!("Round 1 — reviewed head {}", &sha("head")[..8]);
    assert!(reviews[1]["body"].as_str().unwrap().starts_with(&round1));
    let log = assert_log_safe(&ran, TOKEN);
    assert!(
        log.shown.contains(
            "notice: a review by other-app[bot] carries a reviewbot round marker but does not \
             count"
        ),
        "{}",
        log.shown
    );

    // Its own round counts: a re-run posts nothing and stays red.
    let rerun = job.run();
    assert_eq!(rerun.status, 1, "log:\n{}", rerun.raw);
    assert_eq!(fake.reviews(REPO, PR).len(), 2);
    assert!(
        assert_log_safe(&rerun, TOKEN)
            .shown
            .contains("already reviewed")
    );
}

/// An App's installation token given as `github-token` posts as the App's bot: its rounds count
/// once `[github] bot_login` names it; without it a notice says what to set.
#[test]
fn an_app_token_in_the_action_counts_its_rounds_by_bot_login() {
    let fake = world(TokenKind::app());
    let job = Job::new(&fake);
    let config = job.config_file("bot_login = \"reviewbot[bot]\"\n");
    let job = job.input("config", &config).input("lenses", "builtin");
    for _ in 0..2 {
        let ran = job.run();
        assert_eq!(ran.status, 0, "log:\n{}", ran.raw);
        assert_eq!(fake.reviews(REPO, PR).len(), 1);
    }

    let fake = world(TokenKind::app());
    let job = Job::new(&fake);
    let config = job.config_file("");
    let job = job.input("config", &config).input("lenses", "builtin");
    assert_eq!(job.run().status, 0);
    let again = job.run();
    assert_eq!(again.status, 0, "log:\n{}", again.raw);
    let log = assert_log_safe(&again, TOKEN);
    assert!(
        log.shown
            .contains("a review by reviewbot[bot] carries a reviewbot round marker")
            && log
                .shown
                .contains("set `[github] bot_login = \"reviewbot[bot]\"`"),
        "{}",
        log.shown
    );
}

#[test]
fn a_fork_pr_with_a_read_only_token_posts_nothing_and_says_why() {
    let fake = world(TokenKind::ReadOnly);
    let mut job = Job::new(&fake);
    job.event["pull_request"]["head"]["repo"]["full_name"] = "mallory/app".into();
    // No config at all: the workspace's (the fork's) reviewbot.toml must still not be read.
    let ran = job.run();
    assert_eq!(ran.status, 0, "log:\n{}", ran.raw);
    assert!(fake.reviews(REPO, PR).is_empty());
    assert_eq!(
        fake.count("POST", &format!("/repos/{REPO}/pulls/{PR}/reviews")),
        1,
        "one refused attempt"
    );
    let log = assert_log_safe(&ran, TOKEN);
    assert!(
        log.shown.contains("not posted") && log.shown.contains("pull-requests: write"),
        "{}",
        log.shown
    );
    assert!(
        ran.summary.contains("Round 1 — reviewed head"),
        "{}",
        ran.summary
    );
    assert_eq!(ran.outputs["exit-code"], "0");
}

#[test]
fn the_trigger_label_asks_for_a_new_round_and_other_labels_do_not() {
    let fake = world(TokenKind::actions());
    let mut job = configured_job(&fake);
    assert_eq!(job.run().status, 0);
    assert_eq!(fake.reviews(REPO, PR).len(), 1);

    // A label whose name is a shell injection: it only ever reaches the script as data.
    let pwned = job.dir.path().join("pwned");
    job.event = labeled_event(&format!(
        "$(touch {})\"; touch '{}'",
        pwned.display(),
        pwned.display()
    ));
    let ran = job.run();
    assert_eq!(ran.status, 0, "log:\n{}", ran.raw);
    assert!(!pwned.exists());
    assert_eq!(
        fake.reviews(REPO, PR).len(),
        1,
        "another label asks for nothing"
    );
    assert!(!ran.raw.contains("The trigger label was added"));

    job.event = labeled_event(TRIGGER);
    let ran = job.run();
    assert_eq!(ran.status, 0, "log:\n{}", ran.raw);
    let bodies = bodies(&fake);
    assert_eq!(bodies.len(), 2);
    assert!(
        bodies[1].starts_with(&format!("Round 2 — reviewed head {}", &sha("head")[..8])),
        "{}",
        bodies[1]
    );
    let log = assert_log_safe(&ran, TOKEN);
    assert!(log.shown.contains("The trigger label was added"));
}

/// A workflow whose `permissions` lack `checks: write`: GitHub answers the check-run writes 403
/// and the round still posts, the log saying why there is no check run.
#[test]
fn without_checks_write_the_action_posts_the_round_and_says_so() {
    let fake = world(TokenKind::actions());
    fake.forbid_checks(true);
    let ran = configured_job(&fake).run();
    assert_eq!(ran.status, 0, "log:\n{}", ran.raw);
    assert_eq!(fake.reviews(REPO, PR).len(), 1);
    assert_eq!(ran.outputs["verdict"], "1 blocking, 1 advisory");
    assert!(fake.check_runs(REPO).is_empty());
    let refused: Vec<u16> = fake
        .check_run_writes(REPO)
        .iter()
        .map(|w| w.answered)
        .collect();
    assert_eq!(refused, [403], "one refused create, no update");
    let log = assert_log_safe(&ran, TOKEN);
    let notice = log
        .shown
        .lines()
        .find(|l| l.starts_with("notice: the check run could not be created"))
        .unwrap_or_else(|| panic!("no notice:\n{}", log.shown));
    assert!(notice.contains("checks: write"), "{notice}");
    assert!(notice.contains("The round is posted without"), "{notice}");
}

/// The README's workflow for the Action grants what the Action needs, `checks: write` included.
#[test]
fn the_readmes_action_workflow_grants_the_permissions_the_action_needs() {
    let workflow: Value =
        yaml_serde::from_str(&readme_workflow("README.md", "## The GitHub Action")).unwrap();
    assert_eq!(
        workflow["permissions"],
        serde_json::json!({
            "contents": "read",
            "pull-requests": "write",
            "checks": "write",
        })
    );
    let step = &workflow["jobs"]["review"]["steps"][0];
    assert!(
        step["uses"]
            .as_str()
            .unwrap()
            .contains("/reviewbot/action@"),
        "{step:#}"
    );
}

/// The first yaml block after `heading` in the repository's `file`: a workflow example.
fn readme_workflow(file: &str, heading: &str) -> String {
    let readme = std::fs::read_to_string(root().join(file)).unwrap();
    let section = &readme[readme.find(heading).expect("the Action's section")..];
    let start = section.find("```yaml\n").expect("a yaml block") + "```yaml\n".len();
    section[start..start + section[start..].find("```").unwrap()].to_string()
}

/// The workflow examples people copy pass zizmor (`REVIEWBOT_ZIZMOR`; `.ci/run` installs it):
/// among others, the action is pinned by commit SHA (`unpinned-uses`).
#[test]
fn the_readmes_workflow_examples_pass_zizmor() {
    let Some(zizmor) = linter(
        "REVIEWBOT_ZIZMOR",
        "the_readmes_workflow_examples_pass_zizmor",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let workflows = dir.path().join(".github/workflows");
    std::fs::create_dir_all(&workflows).unwrap();
    for (file, heading, name) in [
        ("README.md", "## The GitHub Action", "readme.yml"),
        (
            "action/README.md",
            "# reviewbot action",
            "action-readme.yml",
        ),
    ] {
        std::fs::write(workflows.join(name), readme_workflow(file, heading)).unwrap();
    }
    lint_passes(
        Command::new(zizmor)
            .args(["--offline", "--no-progress"])
            .arg(&workflows),
    );
}

/// A copy of the action's files at `dir/action`, with an (empty) `Cargo.toml` beside it for the
/// fake `cargo`; returns the action's path.
fn copy_action(dir: &Path) -> PathBuf {
    let action = dir.join("action");
    std::fs::create_dir_all(&action).unwrap();
    for entry in std::fs::read_dir(root().join("action")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), action.join(entry.file_name())).unwrap();
    }
    std::fs::write(dir.join("Cargo.toml"), "").unwrap();
    action
}

fn cargo_build_of(src: &Path) -> Vec<String> {
    vec![format!(
        "build --release --locked --manifest-path {0}/Cargo.toml --target-dir {0}/target",
        src.display()
    )]
}

#[test]
fn a_local_action_without_reviewbot_on_path_builds_it_from_its_own_source() {
    let fake = world(TokenKind::actions());
    let mut job = Job::new(&fake);
    let src = job.dir.path().join("src");
    job.action_path = copy_action(&src);
    job.reviewbot_on_path = false;
    job.cargo_builds = true;
    let ran = job.run();
    assert_eq!(ran.status, 0, "log:\n{}", ran.raw);
    assert_eq!(ran.cargo_calls, cargo_build_of(&src));
    assert!(
        ran.raw.contains(
            "::notice title=reviewbot::No reviewbot release to download: the action does not run \
             from a repository ref (a local action). Building it from source"
        ),
        "{}",
        ran.raw
    );
    assert_eq!(fake.reviews(REPO, PR).len(), 1);
    assert_log_safe(&ran, TOKEN);
}

// ---------------------------------------------------------------------------------------------
// Release assets.

/// `RUNNER_OS`, `RUNNER_ARCH` and the release target of this machine.
fn runner_platform() -> (&'static str, &'static str, &'static str) {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => ("Linux", "X64", "x86_64-unknown-linux-gnu"),
        ("linux", "aarch64") => ("Linux", "ARM64", "aarch64-unknown-linux-gnu"),
        ("macos", "x86_64") => ("macOS", "X64", "x86_64-apple-darwin"),
        ("macos", "aarch64") => ("macOS", "ARM64", "aarch64-apple-darwin"),
        (os, arch) => panic!("no release target for {os}/{arch}"),
    }
}

fn asset_name() -> String {
    format!("reviewbot-{}.tar.gz", runner_platform().2)
}

/// The suite's own binary packed as the release workflow packs one: `reviewbot` alone at the root
/// of a gzip'd tar. Built once per test process.
fn release_archive() -> &'static [u8] {
    static ARCHIVE: OnceLock<Vec<u8>> = OnceLock::new();
    ARCHIVE.get_or_init(|| {
        let bin = Path::new(env!("CARGO_BIN_EXE_reviewbot"));
        assert_eq!(bin.file_name().unwrap(), "reviewbot");
        let out = Command::new("bash")
            .args(["-c", "tar -C \"$1\" -cf - reviewbot | gzip -1", "pack"])
            .arg(bin.parent().unwrap())
            .stderr(Stdio::inherit())
            .output()
            .unwrap();
        assert!(out.status.success(), "packing the release archive failed");
        out.stdout
    })
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// One request the release server got.
#[derive(Debug, Clone)]
struct ReleaseRequest {
    path: String,
    status: u16,
    authorization: bool,
}

#[derive(Default)]
struct ReleaseState {
    /// `owner/repo/tag/asset` → the asset's bytes.
    assets: BTreeMap<String, bytes::Bytes>,
    /// Answer every request with this status instead.
    fail_with: Option<u16>,
    log: Vec<ReleaseRequest>,
}

/// GitHub's release downloads on loopback: `GET /{owner}/{repo}/releases/download/{tag}/{asset}`
/// answers 302 to the asset's storage URL (as github.com does), which serves the bytes; an
/// unknown tag or asset is a 404.
struct FakeReleases {
    state: Arc<Mutex<ReleaseState>>,
    url: String,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl FakeReleases {
    fn start() -> FakeReleases {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(ReleaseState::default()));
        let app = axum::Router::new()
            .fallback(serve_release)
            .with_state(state.clone());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = rx.await;
                    })
                    .await;
            });
        });
        FakeReleases {
            state,
            url,
            shutdown: Some(tx),
        }
    }

    fn url(&self) -> String {
        self.url.clone()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, ReleaseState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Publishes this machine's asset of the suite's binary under `tag`, with `checksum` as the
    /// content of its `.sha256` file (`None`: the right one, in `sha256sum` format).
    fn publish(&self, tag: &str, checksum: Option<&str>) {
        let archive = release_archive();
        let asset = asset_name();
        let sum = match checksum {
            Some(text) => text.to_owned(),
            None => format!("{}  {asset}\n", sha256_hex(archive)),
        };
        let mut state = self.state();
        let key = format!("{ACTION_REPO}/{tag}/{asset}");
        state.assets.insert(
            format!("{key}.sha256"),
            bytes::Bytes::from(sum.into_bytes()),
        );
        state.assets.insert(key, bytes::Bytes::from_static(archive));
    }

    fn requests(&self) -> Vec<ReleaseRequest> {
        self.state().log.clone()
    }
}

impl Drop for FakeReleases {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

async fn serve_release(
    axum::extract::State(state): axum::extract::State<Arc<Mutex<ReleaseState>>>,
    req: axum::extract::Request,
) -> axum::response::Response {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;

    let path = req.uri().path().to_owned();
    let mut state = state.lock().unwrap_or_else(|e| e.into_inner());
    let response = if let Some(code) = state.fail_with {
        // `Retry-After: 0` only keeps curl's retries quick in the test.
        let status = StatusCode::from_u16(code).unwrap();
        (status, [(header::RETRY_AFTER, "0")]).into_response()
    } else if req.method() != axum::http::Method::GET {
        StatusCode::NOT_FOUND.into_response()
    } else if let Some(key) = path.strip_prefix("/storage/") {
        match state.assets.get(key) {
            Some(bytes) => (
                [(header::CONTENT_TYPE, "application/octet-stream")],
                bytes.clone(),
            )
                .into_response(),
            None => StatusCode::NOT_FOUND.into_response(),
        }
    } else {
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match parts.as_slice() {
            [owner, repo, "releases", "download", tag, asset] => {
                let key = format!("{owner}/{repo}/{tag}/{asset}");
                if state.assets.contains_key(&key) {
                    (
                        StatusCode::FOUND,
                        [(header::LOCATION, format!("/storage/{key}"))],
                    )
                        .into_response()
                } else {
                    (StatusCode::NOT_FOUND, "Not Found").into_response()
                }
            }
            _ => (StatusCode::NOT_FOUND, "Not Found").into_response(),
        }
    };
    state.log.push(ReleaseRequest {
        path,
        status: response.status().as_u16(),
        authorization: req.headers().contains_key(header::AUTHORIZATION),
    });
    response
}

fn paths(requests: &[ReleaseRequest]) -> Vec<String> {
    requests
        .iter()
        .map(|r| format!("{} {}", r.status, r.path))
        .collect()
}

/// `app.yml` is a GitHub App manifest asking for exactly what `reviewbot serve` uses, no more.
#[test]
fn the_app_manifest_asks_for_exactly_the_permissions_and_events_reviewbot_uses() {
    let text = std::fs::read_to_string(root().join("app.yml")).unwrap();
    let manifest: Value = yaml_serde::from_str(&text).unwrap();
    let keys: Vec<&str> = manifest
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    // Only keys of GitHub's manifest format.
    for key in &keys {
        assert!(
            [
                "name",
                "url",
                "description",
                "public",
                "hook_attributes",
                "redirect_url",
                "callback_urls",
                "setup_url",
                "request_oauth_on_install",
                "setup_on_update",
                "default_permissions",
                "default_events",
            ]
            .contains(key),
            "{key} is not a manifest key"
        );
    }
    assert!(manifest["url"].as_str().unwrap().starts_with("https://"));
    assert_eq!(manifest["hook_attributes"]["active"], true);
    assert!(
        manifest["hook_attributes"]["url"]
            .as_str()
            .unwrap()
            .ends_with("/webhook")
    );
    assert_eq!(
        manifest["default_permissions"],
        serde_json::json!({
            "pull_requests": "write",
            "contents": "read",
            "metadata": "read",
            "issues": "write",
            "checks": "write",
        })
    );
    assert_eq!(
        manifest["default_events"],
        serde_json::json!([
            "pull_request",
            "issue_comment",
            "pull_request_review_comment"
        ])
    );
}

/// The release workflow builds, `cargo binstall` looks for, and `setup.sh` downloads the same
/// four archives.
#[test]
fn the_release_workflow_binstall_and_the_action_agree_on_the_assets() {
    let read = |path: &str| std::fs::read_to_string(root().join(path)).unwrap();

    // setup.sh: `RUNNER_OS/RUNNER_ARCH) target=<triple> ;;` lines.
    let setup = read("action/setup.sh");
    let mapped = regex::Regex::new(r"(?m)^\s*\w+/\w+\) target=([a-z0-9_-]+) ;;$").unwrap();
    let mut action_targets: Vec<String> = mapped
        .captures_iter(&setup)
        .map(|c| c[1].to_owned())
        .collect();
    action_targets.sort();
    assert!(setup.contains(r#"asset="reviewbot-$target.tar.gz""#));

    // release.yml: the matrix, and the archive it packs.
    let workflow: Value = yaml_serde::from_str(&read(".github/workflows/release.yml")).unwrap();
    let build = &workflow["jobs"]["build"];
    let mut built: Vec<String> = build["strategy"]["matrix"]["include"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["target"].as_str().unwrap().to_owned())
        .collect();
    built.sort();
    assert_eq!(
        built, action_targets,
        "release.yml builds what setup.sh downloads"
    );
    let steps = build["steps"].as_array().unwrap();
    let package = steps
        .iter()
        .find(|s| s["name"] == "Package")
        .and_then(|s| s["run"].as_str())
        .unwrap();
    assert!(package.contains(r#"asset="reviewbot-$TARGET.tar.gz""#));
    assert!(
        package.contains(r#"-cf - reviewbot"#),
        "the binary alone, at the root"
    );
    assert!(package.contains(r#""$asset.sha256""#));

    // Cargo.toml: binstall's template, expanded as binstall does, names the same archive under
    // the `v{version}` tag the release job checks.
    let manifest: toml::Table = toml::from_str(&read("Cargo.toml")).unwrap();
    let binstall = &manifest["package"]["metadata"]["binstall"];
    assert_eq!(binstall["pkg-fmt"].as_str(), Some("tgz"));
    assert_eq!(binstall["bin-dir"].as_str(), Some("{ bin }{ binary-ext }"));
    let version = manifest["package"]["version"].as_str().unwrap();
    for target in &built {
        let url = binstall["pkg-url"]
            .as_str()
            .unwrap()
            .replace("{ repo }", "https://github.com/octo/reviewbot")
            .replace("{ version }", version)
            .replace("{ name }", "reviewbot")
            .replace("{ target }", target);
        assert_eq!(
            url,
            format!(
                "https://github.com/octo/reviewbot/releases/download/v{version}/reviewbot-{target}.tar.gz"
            )
        );
    }
}

#[test]
fn a_release_asset_is_verified_cached_and_used_without_cargo() {
    let fake = world(TokenKind::actions());
    let releases = FakeReleases::start();
    releases.publish(TAG, None);
    let job = Job::new(&fake).release_from(&releases);
    let config = job.config_file("");
    let job = job.env("REVIEWBOT_CONFIG", &config);

    let ran = job.run();
    assert_eq!(ran.status, 0, "log:\n{}", ran.raw);
    assert!(ran.cargo_calls.is_empty(), "{:?}", ran.cargo_calls);
    assert_eq!(fake.reviews(REPO, PR).len(), 1, "the downloaded binary ran");
    let asset = asset_name();
    let download = format!("/{ACTION_REPO}/releases/download/{TAG}/{asset}");
    let storage = format!("/storage/{ACTION_REPO}/{TAG}/{asset}");
    assert_eq!(
        paths(&releases.requests()),
        vec![
            format!("302 {download}.sha256"),
            format!("200 {storage}.sha256"),
            format!("302 {download}"),
            format!("200 {storage}"),
        ]
    );
    assert!(
        releases.requests().iter().all(|r| !r.authorization),
        "a release download sends no token"
    );
    let log = assert_log_safe(&ran, TOKEN);
    assert!(
        log.shown.contains(&format!(
            "Downloading reviewbot {TAG} ({asset}) from {}/{ACTION_REPO}/releases/download/{TAG}",
            releases.url()
        )),
        "{}",
        log.shown
    );
    // The runner's tool cache holds the binary, byte for byte the suite's.
    let target = runner_platform().2;
    let cached = job
        .tool_cache()
        .join(format!("reviewbot/{TAG}/{target}/reviewbot"));
    assert_eq!(
        std::fs::read(&cached).unwrap(),
        std::fs::read(env!("CARGO_BIN_EXE_reviewbot")).unwrap()
    );
    assert!(
        job.tool_cache()
            .join(format!("reviewbot/{TAG}/{target}.complete"))
            .exists()
    );

    // The next run asks only for the checksum and runs the cached binary.
    let again = job.run();
    assert_eq!(again.status, 0, "log:\n{}", again.raw);
    assert!(again.cargo_calls.is_empty());
    assert_eq!(
        paths(&releases.requests()[4..]),
        vec![
            format!("302 {download}.sha256"),
            format!("200 {storage}.sha256")
        ]
    );
    let log = assert_log_safe(&again, TOKEN);
    assert!(
        log.shown.contains(&format!(
            "Using reviewbot {TAG} from the tool cache: {}",
            cached.display()
        )),
        "{}",
        log.shown
    );
    assert!(log.shown.contains("already reviewed"), "{}", log.shown);
}

#[test]
fn a_checksum_mismatch_is_refused_and_nothing_runs() {
    let fake = world(TokenKind::actions());
    let releases = FakeReleases::start();
    let wrong = sha256_hex(b"another archive");
    releases.publish(TAG, Some(&format!("{wrong}  {}\n", asset_name())));
    let job = Job::new(&fake).release_from(&releases);
    let ran = job.run();
    assert_eq!(ran.status, 3, "log:\n{}", ran.raw);
    let log = assert_log_safe(&ran, TOKEN);
    let error = format!(
        "::error title=reviewbot::checksum mismatch for {} of release {TAG}: expected {wrong}, got {}.",
        asset_name(),
        sha256_hex(release_archive())
    );
    assert!(log.outside().any(|l| l.starts_with(&error)), "{}", ran.raw);
    // Nothing ran: no reviewbot (the fake GitHub saw no request), no cargo, nothing cached.
    assert!(fake.requests().is_empty(), "{:?}", fake.requests());
    assert!(ran.cargo_calls.is_empty());
    assert!(!job.tool_cache().join("reviewbot").join(TAG).exists());
    assert!(ran.outputs["exit-code"].is_empty());

    // A checksum file that holds no checksum is refused the same way.
    releases.publish(TAG, Some("<html>moved</html>\n"));
    let ran = job.run();
    assert_eq!(ran.status, 3, "log:\n{}", ran.raw);
    assert!(
        ran.raw
            .contains(".sha256 holds no SHA-256 checksum; not running anything from that release"),
        "{}",
        ran.raw
    );
    assert!(fake.requests().is_empty());
}

#[test]
fn no_release_for_the_ref_falls_back_to_a_build_and_says_so() {
    let fake = world(TokenKind::actions());
    let releases = FakeReleases::start();
    let mut job = Job::new(&fake).release_from(&releases);
    let src = job.dir.path().join("src");
    job.action_path = copy_action(&src);
    job.cargo_builds = true;
    let ran = job.run();
    assert_eq!(ran.status, 0, "log:\n{}", ran.raw);
    assert_eq!(ran.cargo_calls, cargo_build_of(&src));
    let asset = asset_name();
    assert_eq!(
        paths(&releases.requests()),
        vec![format!(
            "404 /{ACTION_REPO}/releases/download/{TAG}/{asset}.sha256"
        )]
    );
    let log = assert_log_safe(&ran, TOKEN);
    assert!(
        log.outside().any(|l| l.starts_with(&format!(
            "::notice title=reviewbot::No reviewbot release to download: {ACTION_REPO} has no \
             release {TAG} with {asset}. Building it from source"
        ))),
        "{}",
        ran.raw
    );
    assert_eq!(fake.reviews(REPO, PR).len(), 1);
}

#[test]
fn a_release_server_error_fails_clearly_and_builds_nothing() {
    let fake = world(TokenKind::actions());
    let releases = FakeReleases::start();
    releases.publish(TAG, None);
    releases.state().fail_with = Some(503);
    let job = Job::new(&fake).release_from(&releases);
    let ran = job.run();
    assert_eq!(ran.status, 3, "log:\n{}", ran.raw);
    assert!(ran.cargo_calls.is_empty(), "a 503 is no reason to build");
    assert!(
        ran.raw.contains(&format!(
            "::error title=reviewbot::downloading {}/{ACTION_REPO}/releases/download/{TAG}/{}.sha256 answered HTTP 503",
            releases.url(),
            asset_name()
        )),
        "{}",
        ran.raw
    );
    // curl retried the 503 before giving up.
    assert!(releases.requests().len() > 1, "{:?}", releases.requests());
    assert!(fake.requests().is_empty());
}

#[test]
fn the_release_follows_the_action_path_when_the_ref_is_empty_or_an_outer_actions() {
    let fake = world(TokenKind::actions());
    let releases = FakeReleases::start();
    releases.publish(TAG, None);
    for (repository, reference) in [("", ""), ("someone/wrapper", "v2")] {
        let mut job = Job::new(&fake).release_from(&releases);
        // Where the runner unpacks `uses: octo/reviewbot/action@v9.9.9`.
        job.action_path = copy_action(
            &job.dir
                .path()
                .join(format!("runner/_work/_actions/{ACTION_REPO}/{TAG}")),
        );
        job.action_repository = repository.to_owned();
        job.action_ref = reference.to_owned();
        let before = releases.requests().len();
        let ran = job.run();
        assert_eq!(ran.status, 0, "log:\n{}", ran.raw);
        assert!(ran.cargo_calls.is_empty());
        let asked = paths(&releases.requests()[before..]);
        assert_eq!(
            asked.first().map(String::as_str),
            Some(
                format!(
                    "302 /{ACTION_REPO}/releases/download/{TAG}/{}.sha256",
                    asset_name()
                )
                .as_str()
            ),
            "{asked:?}"
        );
        assert_log_safe(&ran, TOKEN);
    }
}

#[test]
fn a_commit_sha_pin_uses_the_release_of_the_version_its_cargo_toml_names() {
    let fake = world(TokenKind::actions());
    let releases = FakeReleases::start();
    releases.publish(TAG, None);
    let sha = "0123456789abcdef0123456789abcdef01234567";
    let mut job = Job::new(&fake).release_from(&releases);
    // Where the runner unpacks `uses: octo/reviewbot/action@<sha>`; that commit's Cargo.toml.
    let pinned = job
        .dir
        .path()
        .join(format!("runner/_work/_actions/{ACTION_REPO}/{sha}"));
    job.action_path = copy_action(&pinned);
    let version = TAG.trim_start_matches('v');
    std::fs::write(
        pinned.join("Cargo.toml"),
        format!("[package]\nname = \"reviewbot\"\nversion = \"{version}\"\n\n[dependencies]\nversion = \"0.0.1\"\n"),
    )
    .unwrap();
    job.action_ref = sha.to_owned();
    let ran = job.run();
    assert_eq!(ran.status, 0, "log:\n{}", ran.raw);
    assert!(ran.cargo_calls.is_empty(), "{:?}", ran.cargo_calls);
    assert!(
        ran.raw.contains(&format!(
            "pinned to commit {sha} (version {version}): using release {TAG}"
        )),
        "{}",
        ran.raw
    );
    let asked = paths(&releases.requests());
    assert_eq!(
        asked.first().map(String::as_str),
        Some(
            format!(
                "302 /{ACTION_REPO}/releases/download/{TAG}/{}.sha256",
                asset_name()
            )
            .as_str()
        ),
        "{asked:?}"
    );

    // A commit whose Cargo.toml names no version is built from source, saying why.
    let mut job = Job::new(&fake).release_from(&releases);
    let bare = job
        .dir
        .path()
        .join(format!("runner/_work/_actions/{ACTION_REPO}/{sha}"));
    job.action_path = copy_action(&bare);
    job.action_ref = sha.to_owned();
    job.reviewbot_on_path = false;
    job.cargo_builds = true;
    let ran = job.run();
    assert_eq!(ran.status, 0, "log:\n{}", ran.raw);
    assert!(
        ran.raw.contains(&format!(
            "the action is pinned to commit {sha}, whose Cargo.toml names no version"
        )),
        "{}",
        ran.raw
    );
}

#[test]
fn workflow_commands_in_review_text_never_run() {
    let fake = world(TokenKind::actions());
    let job = Job::new(&fake);
    // An operator-configured command lens whose reply carries workflow commands, a fake verdict
    // line and a forged mask, and which writes a command to stderr. It also records the
    // environment it got: the token must not be in it.
    let seen = job.dir.path().join("lens-env");
    let lens = job.dir.path().join("hostile.sh");
    let finding = serde_json::json!({"findings": [{
        "path": "src/main.rs", "line": 4, "severity": "advisory", "confidence": "medium",
        "title": "::error::pwned",
        "body": "Fine.\n::add-mask::Round\n::set-output name=verdict::9 blocking\n::stop-commands::x\nVerdict: 9 blocking, 9 advisory",
    }]});
    write_script(
        &lens,
        &format!(
            "#!/bin/sh\ncat >/dev/null\nenv >'{}'\necho '::warning::from the lens' >&2\ncat <<'EOF'\n{finding}\nEOF\n",
            seen.display()
        ),
    );
    let config = job.config_file(&format!(
        "[[lens]]\nname = \"hostile\"\nbackend = \"command\"\nbin = \"{}\"\n",
        lens.display()
    ));
    let job = job
        .input("config", &config)
        .input("lenses", "builtin, hostile");
    let ran = job.run();
    assert_eq!(ran.status, 0, "log:\n{}", ran.raw);
    assert_eq!(fake.reviews(REPO, PR).len(), 1);
    assert!(ran.summary.contains("pwned"), "{}", ran.summary);
    // Only the action's own commands ran, the only mask is the token, the verdict is the round's.
    let log = assert_log_safe(&ran, TOKEN);
    assert!(
        !log.commands
            .iter()
            .any(|c| c == "warning" || c == "set-output")
    );
    assert_eq!(ran.outputs["verdict"], "1 blocking, 2 advisory");
    let env = std::fs::read_to_string(&seen).expect("the lens ran");
    assert!(!env.contains(TOKEN), "the lens saw the token");
}
