//! A config naming a `claude-cli` lens and a `codex-cli` lens, through the real binary: both
//! run (fake CLIs that print the real output formats), their findings merge, each keeps its
//! provenance, and neither child sees a credential it should not.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const DIFF: &str = "\
diff --git a/src/lib.rs b/src/lib.rs
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,2 +1,3 @@
 fn a() {}
+fn b() {}
 fn c() {}
";

/// A fake CLI symlinked into its own directory, with its `mode` file beside it.
fn fake(cli: &str, mode: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let fixture: PathBuf = [env!("CARGO_MANIFEST_DIR"), "tests/fixtures/fake-cli", cli]
        .iter()
        .collect();
    let bin = dir.path().join(cli);
    std::os::unix::fs::symlink(&fixture, &bin).unwrap();
    std::fs::write(dir.path().join("mode"), mode).unwrap();
    (dir, bin)
}

fn env_of(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("env")).unwrap_or_default()
}

#[test]
fn claude_and_codex_lenses_run_and_merge_with_their_provenance() {
    let (claude_dir, claude) = fake("claude", "ok");
    let (codex_dir, codex) = fake("codex", "ok");
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("panel.toml");
    std::fs::write(
        &config,
        format!(
            "[[lens]]\nname = \"claude\"\nbackend = \"claude-cli\"\nmodel = \"claude-opus-5\"\nbin = \"{}\"\n\n\
             [[lens]]\nname = \"terra\"\nbackend = \"codex-cli\"\nmodel = \"gpt-5.6-terra\"\nbin = \"{}\"\n",
            claude.display(),
            codex.display()
        ),
    )
    .unwrap();
    let diff = work.path().join("change.diff");
    std::fs::write(&diff, DIFF).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_reviewbot"))
        .args([
            "review",
            "--diff",
            &diff.display().to_string(),
            "--config",
            &config.display().to_string(),
            "--format",
            "json",
        ])
        .current_dir(work.path())
        .env("GITHUB_TOKEN", "ghs_should_never_reach_a_lens")
        .env("ANTHROPIC_API_KEY", "sk-ant-should-never-reach-claude")
        .env("OPENAI_API_KEY", "sk-should-never-reach-codex")
        .env("CLAUDE_CODE_OAUTH_TOKEN", "oauth-for-claude-only")
        .env_remove("CODEX_HOME")
        .env_remove("REVIEWBOT_CONFIG")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();

    let findings = doc["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{findings:#?}");
    assert_eq!(
        findings[0]["lenses"],
        serde_json::json!(["claude", "terra"])
    );
    assert_eq!(findings[0]["line"], 2);
    assert_eq!(findings[0]["confidence"], "high");

    let lenses = doc["lenses"].as_array().unwrap();
    let claude_p = &lenses[0];
    assert_eq!(claude_p["lens"], "claude");
    assert_eq!(claude_p["requested_backend"], "claude-cli");
    assert_eq!(claude_p["actual_backend"], "claude-cli");
    assert_eq!(claude_p["auth_class"], "subscription");
    assert_eq!(claude_p["status"], "ok");
    assert!(claude_p["usage"]["output_tokens"].as_u64().unwrap() > 0);
    assert!(claude_p["cost_usd"].as_f64().unwrap() > 0.0);
    // Only claude reports a cost: the round's is claude's.
    assert_eq!(doc["cost_usd"], claude_p["cost_usd"]);
    let terra = &lenses[1];
    assert_eq!(
        (terra["lens"].as_str(), terra["actual_backend"].as_str()),
        (Some("terra"), Some("codex-cli"))
    );
    assert_eq!(terra["model"], "gpt-5.6-terra");
    assert_eq!(
        terra["usage"],
        serde_json::json!({"input_tokens": 24763, "output_tokens": 122})
    );

    // Neither child saw the bot's or the other vendor's credentials; claude got its own token.
    let claude_env = env_of(claude_dir.path());
    let codex_env = env_of(codex_dir.path());
    for env in [&claude_env, &codex_env] {
        assert!(!env.is_empty());
        for secret in ["ghs_should_never", "sk-ant-should-never", "sk-should-never"] {
            assert!(!env.contains(secret), "a lens saw {secret}");
        }
    }
    assert!(claude_env.contains("CLAUDE_CODE_OAUTH_TOKEN=oauth-for-claude-only"));
    assert!(!codex_env.contains("oauth-for-claude-only"));
}

/// The two CLI lenses with `review --diff … --checkout DIR`: each reads its file from the
/// snapshot, and what each says it checked is posted under its name.
#[test]
fn with_checkout_each_cli_lens_reads_the_directory_and_its_summary_is_posted() {
    let (_claude_dir, claude) = fake("claude", "read-snapshot");
    let (_codex_dir, codex) = fake("codex", "read-snapshot");
    let work = tempfile::tempdir().unwrap();
    let checkout = work.path().join("checkout");
    std::fs::create_dir_all(checkout.join("src")).unwrap();
    std::fs::write(
        checkout.join("src/lib.rs"),
        "fn a() {}\nfn b() {}\n// CALLER_MARKER_93 calls b\n",
    )
    .unwrap();
    let config = work.path().join("panel.toml");
    std::fs::write(
        &config,
        format!(
            "[[lens]]\nname = \"claude\"\nbackend = \"claude-cli\"\nbin = \"{}\"\n\n\
             [[lens]]\nname = \"terra\"\nbackend = \"codex-cli\"\nbin = \"{}\"\n",
            claude.display(),
            codex.display()
        ),
    )
    .unwrap();
    let diff = work.path().join("change.diff");
    std::fs::write(&diff, DIFF).unwrap();
    let run = |format: &str| {
        Command::new(env!("CARGO_BIN_EXE_reviewbot"))
            .args(["review", "--diff"])
            .arg(&diff)
            .arg("--checkout")
            .arg(&checkout)
            .arg("--config")
            .arg(&config)
            .args(["--format", format])
            .current_dir(work.path())
            .env_remove("CODEX_HOME")
            .env_remove("REVIEWBOT_CONFIG")
            .output()
            .unwrap()
    };
    let o = run("markdown");
    let md = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for lens in ["claude", "terra"] {
        let line = md
            .lines()
            .find(|l| l.starts_with(&format!("**{lens}:**")))
            .unwrap_or_else(|| panic!("no summary of {lens}:\n{md}"));
        assert!(line.contains("CALLER_MARKER_93"), "{line}");
    }
    // The body's last line says what each lens used and, where its CLI says, cost.
    let body_end = md.find("\n---").unwrap_or(md.len());
    let last = md[..body_end].trim_end().lines().last().unwrap_or_default();
    insta::assert_snapshot!("cost_line", last);
    let doc: Value = serde_json::from_slice(&run("json").stdout).unwrap();
    assert_eq!(doc["context"]["source"], "checkout");
    assert_eq!(doc["lenses"][1]["tool_calls"], 1, "{doc:#}");
    // The user's directory is read, never written.
    let mut names: Vec<_> = std::fs::read_dir(checkout.join("src"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["lib.rs"]);
}
