//! Evidence: every lens exchange of a review kept as redacted JSON lines — the prompt sent, the
//! raw reply, what was parsed, what the merge kept or combined and why — so "why did the bot
//! say this?" always has an answer.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;

use crate::redact::redact;

/// One line of the evidence file.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record<'a> {
    /// One call to one lens.
    Exchange {
        lens: &'a str,
        /// `verify` for a cross-examination's call; absent for a review's.
        #[serde(skip_serializing_if = "Option::is_none")]
        role: Option<&'a str>,
        /// 1-based call number, and how many calls the lens made (a split review makes several).
        call: usize,
        calls: usize,
        backend: &'a str,
        model: Option<&'a str>,
        prompt: &'a str,
        raw: Option<&'a str>,
        parsed: Option<serde_json::Value>,
        error: Option<&'a str>,
        /// Each repository tool call the lens made: name, arguments, bytes returned, capped.
        #[serde(skip_serializing_if = "<[_]>::is_empty")]
        tool_calls: &'a [crate::lens::tools::ToolCallRecord],
        latency_ms: u64,
    },
    /// A lens fell back from its subscription CLI to its vendor's API.
    Fallback {
        lens: &'a str,
        from: &'a str,
        to: &'a str,
        model: &'a str,
        reason: &'a str,
    },
    /// A lens's finding dropped because the file at the head holds nowhere the code it quotes.
    Unfounded {
        lens: &'a str,
        path: &'a str,
        line: u32,
        title: &'a str,
        quote: &'a str,
    },
    /// A cross-examination's verdict on a finding (`refuted`: withdrawn, never posted).
    Verdict {
        fingerprint: &'a str,
        title: &'a str,
        verifier: &'a str,
        verdict: &'a str,
        evidence: &'a str,
    },
    /// A finding found again but not posted: already posted on unchanged code, or disputed.
    Suppressed {
        fingerprint: &'a str,
        title: &'a str,
        reason: &'a str,
    },
    /// The repository's review rules the lenses were given: each file, the directory it
    /// applies to, and whether it was cut to fit.
    RepoRules {
        files: &'a [crate::repo_rules::RuleFile],
    },
    /// The round's repository snapshot: where it came from and what it holds, or why there
    /// is none (`note`).
    Context {
        source: Option<&'a str>,
        files: u64,
        bytes: u64,
        left_out: u64,
        note: Option<&'a str>,
    },
    /// What the merge did with one output finding: which lens findings it combined, and any
    /// change of severity with the reason.
    Merge {
        fingerprint: &'a str,
        members: Vec<MergeMember<'a>>,
        severity: &'a str,
        confidence: &'a str,
        note: Option<&'a str>,
    },
}

/// A lens finding that went into a merged one.
#[derive(Debug, Serialize)]
pub struct MergeMember<'a> {
    pub lens: &'a str,
    pub path: &'a str,
    pub line: u32,
    pub title: &'a str,
    pub severity: &'a str,
    pub confidence: &'a str,
}

/// An evidence file, written line by line as the review goes (safe to share between lenses).
#[derive(Debug)]
pub struct Evidence {
    path: PathBuf,
    out: Mutex<BufWriter<File>>,
}

impl Evidence {
    /// Creates `DIR/review-<unix seconds>-<pid>.jsonl` (and `DIR` if needed). The file holds
    /// prompts and replies (code, PR text): mode 0600, and any directory made for it 0700; a
    /// directory that exists keeps its mode.
    pub fn create(dir: &Path) -> std::io::Result<Evidence> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let path = dir.join(format!("review-{secs}-{}.jsonl", std::process::id()));
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)?;
        Ok(Evidence {
            path,
            out: Mutex::new(BufWriter::new(file)),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record. Every string in it is redacted: the prompt and the raw reply carry
    /// code, and a lens may echo a secret. Evidence is best effort — a full disk must not fail
    /// the review — so errors are reported once on stderr and otherwise ignored.
    pub fn record(&self, record: &Record<'_>) {
        let line = match serde_json::to_string(record) {
            Ok(line) => redact(&line).into_owned(),
            Err(_) => return,
        };
        if let Ok(mut out) = self.out.lock()
            && writeln!(out, "{line}").and_then(|()| out.flush()).is_err()
        {
            eprintln!(
                "warning: could not write evidence to {}",
                self.path.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_redacted_json_lines() {
        let dir = tempfile::tempdir().unwrap();
        let ev = Evidence::create(&dir.path().join("ev")).unwrap();
        let token = format!("ghp_{}", "Zq7Xk2Lm9Pw4".repeat(3));
        ev.record(&Record::Exchange {
            lens: "claude",
            role: None,
            call: 1,
            calls: 1,
            backend: "claude-cli",
            model: Some("m"),
            prompt: &format!("review this: token = \"{token}\""),
            raw: Some("{\"findings\":[]}"),
            parsed: Some(serde_json::json!({"findings": []})),
            error: None,
            tool_calls: &[],
            latency_ms: 5,
        });
        let text = std::fs::read_to_string(ev.path()).unwrap();
        assert_eq!(text.lines().count(), 1);
        let v: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(v["kind"], "exchange");
        assert!(!text.contains(&token));
        assert!(text.contains("REDACTED"));
    }

    /// Evidence holds prompts and raw replies (code, a PR's text): other users of the machine
    /// must not read it. Directories reviewbot makes are private; one that exists keeps its mode.
    #[test]
    fn evidence_files_and_the_directories_made_for_them_are_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let dir = tempfile::tempdir().unwrap();
        let existing = dir.path().join("existing");
        std::fs::create_dir(&existing).unwrap();
        std::fs::set_permissions(&existing, std::fs::Permissions::from_mode(0o755)).unwrap();
        let ev = Evidence::create(&existing.join("a").join("b")).unwrap();
        assert_eq!(mode(ev.path()), 0o600);
        assert_eq!(mode(&existing.join("a")), 0o700);
        assert_eq!(mode(&existing.join("a").join("b")), 0o700);
        assert_eq!(mode(&existing), 0o755);
    }
}
