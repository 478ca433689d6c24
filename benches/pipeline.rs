//! Pipeline benchmarks (`cargo bench --bench pipeline`).
//!
//! Diff parsing and planning need their input built first: `scripts/bench-input.sh` (a
//! `git diff -M` between two Django releases, ~4.6 MB). Without it those benches print how to
//! build it and skip.
//!
//! - `diff/*`: parsing.
//! - `plan/django`: every prompt for the whole diff; `plan/estimate_raw_text`: the token
//!   estimate of the raw diff text on one core.
//! - `panel/N`: a panel of N instant `command` lenses plus one that sleeps 200 ms; the time
//!   reported is the panel's wall time minus the slowest lens's own `latency_ms`.
//! - `verify/N_findings`: what cross-examination adds to a round of two instant `command`
//!   lenses beyond the verifier's own `latency_ms` (one raises N findings alone, the other
//!   refutes them in one call), against the same round with `[verify] mode = "off"`.
//! - `secrets/compile_url_password/*`: compiling the URL-password pattern as shipped (open
//!   repeats) and as it was (bounded repeats of a Unicode class), the choice in
//!   `redact::URL_PASSWORD_PATTERN`.
//! - `secrets/compile_generic/shipped`: compiling the generic rule's pattern.
//! - `secrets/adversarial/*`: the secret search on texts built to make it quadratic.
//! - `intake/*`: what `POST /webhook` does to the real 28 KB `pull_request` payload before the
//!   store: the signature check and the parse into our own event.

use std::cell::RefCell;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, SamplingMode, Throughput, criterion_group};
use reviewbot::diff::Diff;
use reviewbot::lens::{BackendKind, LensRequest, LensSpec};
use reviewbot::plan::{self, PlanOptions};
use reviewbot::review::panel::{NoProgress, Panel, PanelInput, SubscriptionSlots};

/// Where the diff-parsing input lives: `$REVIEWBOT_BENCH_DIFF`, else `target/bench/django.diff`.
fn bench_diff_path() -> PathBuf {
    std::env::var_os("REVIEWBOT_BENCH_DIFF").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench/django.diff"),
        PathBuf::from,
    )
}

fn diff_benches(c: &mut Criterion) {
    let path = bench_diff_path();
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!(
                "diff benches skipped: cannot read {} ({e}); build it with scripts/bench-input.sh",
                path.display()
            );
            return;
        }
    };
    // Fail loudly here, not inside the timing loop, if the input does not parse.
    let parsed = match Diff::parse(text.as_str()) {
        Ok(d) => d,
        Err(e) => {
            eprintln!(
                "diff benches skipped: {} does not parse: {e}",
                path.display()
            );
            return;
        }
    };
    let hunks: usize = parsed.files().iter().map(|f| f.hunks.len()).sum();
    eprintln!(
        "diff bench input: {} ({} bytes, {} files, {hunks} hunks)",
        path.display(),
        text.len(),
        parsed.files().len()
    );

    let diffy_files =
        diffy::patch_set::PatchSet::parse(text.as_str(), diffy::patch_set::ParseOptions::gitdiff())
            .map(|p| p.map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>();
    match &diffy_files {
        Ok(files) => eprintln!("diffy parses the same input into {} files", files.len()),
        Err(e) => eprintln!("diffy stops early on this input: {e}"),
    }

    let mut g = c.benchmark_group("diff");
    g.throughput(Throughput::Bytes(text.len() as u64));
    // Parse plus index (the per-file hunk ranges); the String clone is setup, not timed.
    g.bench_function("parse", |b| {
        b.iter_batched(|| text.clone(), Diff::parse, BatchSize::LargeInput)
    });
    // diffy's multi-file (git) patch-set parser over the same text, for a same-run comparison.
    g.bench_function("diffy", |b| {
        b.iter(|| {
            let set = diffy::patch_set::PatchSet::parse(
                black_box(text.as_str()),
                diffy::patch_set::ParseOptions::gitdiff(),
            );
            set.map(|p| p.map(|_| ()).map_err(|_| ()))
                .collect::<Result<Vec<()>, ()>>()
        })
    });
    // The secret pre-pass's search for keywords over the whole text (one core).
    g.bench_function("secret_keywords", |b| {
        b.iter(|| reviewbot::redact::keyword_starts(black_box(text.as_bytes())))
    });
    utf8_checks(&mut g, text.as_bytes());
    g.finish();
}

/// The check of a whole diff as UTF-8 that `review --diff` makes ([`reviewbot::diff::utf8`]),
/// and the standard library's, over the same bytes.
fn utf8_checks(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    bytes: &[u8],
) {
    g.bench_function("utf8_check", |b| {
        b.iter(|| reviewbot::diff::utf8(black_box(bytes)).is_some())
    });
    g.bench_function("utf8_check_std", |b| {
        b.iter(|| std::str::from_utf8(black_box(bytes)).is_ok())
    });
}

/// The lossy decode of a diff that is not UTF-8, as a file of it is decoded when its text is
/// asked for (a lens's prompt): `target/bench/corpus/non-utf8.diff` (scripts/bench-corpus.sh), or
/// `$REVIEWBOT_BENCH_LOSSY_DIFF`.
fn lossy_benches(c: &mut Criterion) {
    let path = std::env::var_os("REVIEWBOT_BENCH_LOSSY_DIFF").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench/corpus/non-utf8.diff"),
        PathBuf::from,
    );
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!(
                "lossy decode bench skipped: cannot read {} ({e}); build it with scripts/bench-corpus.sh",
                path.display()
            );
            return;
        }
    };
    let mut g = c.benchmark_group("diff");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("lossy_decode", |b| {
        b.iter(|| reviewbot::diff::lossy_text(black_box(&bytes)))
    });
    g.finish();
    let out = reviewbot::diff::lossy_text(&bytes).into_bytes();
    let n = out.len();
    let mut g = c.benchmark_group("diff/decoded");
    g.throughput(Throughput::Bytes(n as u64));
    utf8_checks(&mut g, &out[..n]);
    // The secret pass's keyword search on one core, over a text dense in `=` and `:`.
    if let Some(text) = reviewbot::diff::utf8(&out[..n]) {
        g.bench_function("secret_keywords", |b| {
            b.iter(|| reviewbot::redact::keyword_starts(black_box(text.as_bytes())))
        });
    }
    g.finish();
}

fn plan_benches(c: &mut Criterion) {
    let path = bench_diff_path();
    let Some(diff) = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| Diff::parse(t).ok())
    else {
        eprintln!(
            "plan benches skipped: cannot read or parse {}; build it with scripts/bench-input.sh",
            path.display()
        );
        return;
    };
    let opts = PlanOptions {
        token_budget: 120_000,
        path_rules: &[],
        repo_rules: &[],
        notes: &[],
    };
    let p = plan::plan(&diff, None, &opts);
    eprintln!(
        "plan of {}: {} calls, {} tokens, {} prompt bytes, {} files over budget",
        path.display(),
        p.chunks.len(),
        p.chunks.iter().map(|c| c.tokens).sum::<usize>(),
        p.chunks.iter().map(|c| c.prompt.len()).sum::<usize>(),
        p.over_budget.len()
    );

    let mut g = c.benchmark_group("plan");
    g.throughput(Throughput::Bytes(diff.text().len() as u64));
    g.sample_size(20);
    g.bench_function("django", |b| {
        b.iter(|| plan::plan(black_box(&diff), None, &opts))
    });
    // For reading `plan/django`: one core's token estimate of the raw diff text (no line
    // numbers, no redaction), the floor of what counting every file once costs on one core.
    g.bench_function("estimate_raw_text", |b| {
        b.iter(|| plan::estimate_tokens(black_box(diff.text())))
    });
    g.finish();
}

/// A one-file diff: the panel bench measures the panel, not the request's size.
const SMALL_DIFF: &str = "\
diff --git a/src/lib.rs b/src/lib.rs
--- a/src/lib.rs
+++ b/src/lib.rs
@@ -1,2 +1,3 @@
 fn main() {
+    println!(\"hello\");
 }
";

fn write_script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("write lens script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .expect("chmod lens script");
    path
}

fn command_lens(name: &str, bin: &Path) -> LensSpec {
    let mut spec = LensSpec::new(name, BackendKind::Command);
    spec.bin = Some(bin.display().to_string());
    spec.timeout = Duration::from_secs(30);
    spec
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn panel_benches(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let fast = write_script(
        dir.path(),
        "instant.sh",
        "cat >/dev/null; echo '{\"findings\":[]}'",
    );
    let slow = write_script(
        dir.path(),
        "slow.sh",
        "cat >/dev/null; sleep 0.2; echo '{\"findings\":[]}'",
    );
    let diff = Arc::new(Diff::parse(SMALL_DIFF).expect("small diff parses"));
    let input = Arc::new(PanelInput::single(LensRequest {
        prompt: plan::build_prompt(&diff, None),
        diff: Arc::clone(&diff),
        pr: None,
        checkout: None,
        answer: reviewbot::lens::contract::AnswerKind::Review,
    }));
    let panel = Panel::from_env(SubscriptionSlots::new(2), false, []);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");

    let mut g = c.benchmark_group("panel");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    g.measurement_time(Duration::from_secs(4));
    for n in [1usize, 4, 8] {
        let mut lenses: Vec<LensSpec> = (0..n)
            .map(|i| command_lens(&format!("instant-{i}"), &fast))
            .collect();
        lenses.push(command_lens("sleeps-200ms", &slow));
        // (wall, slowest latency_ms) of every timed run, for the breakdown printed below.
        let seen: RefCell<Vec<(f64, f64)>> = RefCell::new(Vec::new());
        g.bench_function(format!("{n}_instant_plus_200ms"), |b| {
            b.iter_custom(|iters| {
                let mut overhead = Duration::ZERO;
                for _ in 0..iters {
                    let t = Instant::now();
                    let runs = rt.block_on(panel.run(&lenses, Arc::clone(&input), &NoProgress));
                    let wall = t.elapsed();
                    if let Some(failed) = runs.iter().find(|r| r.response.is_none()) {
                        panic!("lens failed: {:?}", failed.provenance.error);
                    }
                    let slowest = runs
                        .iter()
                        .map(|r| r.provenance.latency_ms)
                        .max()
                        .unwrap_or(0);
                    let slowest = Duration::from_millis(slowest);
                    seen.borrow_mut()
                        .push((wall.as_secs_f64() * 1e3, slowest.as_secs_f64() * 1e3));
                    overhead += wall.saturating_sub(slowest);
                }
                overhead
            })
        });
        let seen = seen.into_inner();
        if !seen.is_empty() {
            let mut walls: Vec<f64> = seen.iter().map(|s| s.0).collect();
            let mut slowest: Vec<f64> = seen.iter().map(|s| s.1).collect();
            let mut over: Vec<f64> = seen.iter().map(|s| s.0 - s.1).collect();
            let max_over = over.iter().copied().fold(0.0, f64::max);
            eprintln!(
                "panel/{n}_instant_plus_200ms over {} runs: median wall {:.1} ms, median slowest \
                 latency_ms {:.0} ms, median overhead {:.1} ms (max {max_over:.1} ms)",
                seen.len(),
                median(&mut walls),
                median(&mut slowest),
                median(&mut over)
            );
        }
    }
    g.finish();
}

/// A diff adding `n` lines to one file, and a lens response with one finding on each.
fn many_findings(n: usize) -> (String, String) {
    let mut diff = format!(
        "diff --git a/src/big.rs b/src/big.rs\n--- a/src/big.rs\n+++ b/src/big.rs\n@@ -1,1 +1,{} @@\n fn main() {{}}\n",
        n + 1
    );
    let mut findings = Vec::new();
    for i in 0..n {
        diff.push_str(&format!("+fn f{i}() {{ step_{i}().unwrap() }}\n"));
        findings.push(
            serde_json::json!({"path": "src/big.rs", "line": i + 2, "side": "RIGHT",
            "severity": "advisory", "confidence": "medium",
            "title": format!("step_{i} can fail"), "body": "Handle its error."}),
        );
    }
    let response = serde_json::json!({ "findings": findings }).to_string();
    (diff, response)
}

/// `verify/N_findings`: a round of two scripted lenses answering at once, one raising N findings
/// alone, the other checking them (`review::verify`, one call), against the same round with
/// `[verify] mode = "off"`. The time reported is what verification adds beyond the verifier's
/// own `latency_ms`: (wall − slowest review lens − verifier) with it, minus (wall − slowest
/// review lens) without it.
fn verify_benches(c: &mut Criterion) {
    use reviewbot::config::{ReviewConfig, VerifyMode};
    use reviewbot::context::Context;
    use reviewbot::lens::Role;
    use reviewbot::review::pipeline;

    let dir = tempfile::tempdir().expect("temp dir");
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lenses/verifier.sh");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let config = ReviewConfig::default();
    let mut g = c.benchmark_group("verify");
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    g.measurement_time(Duration::from_secs(4));
    for n in [1usize, 20] {
        let (text, response) = many_findings(n);
        let answer = dir.path().join(format!("findings-{n}.json"));
        std::fs::write(&answer, response).expect("write findings");
        let diff = Diff::parse(text).expect("bench diff parses");
        let mut author = command_lens("author", &script);
        author.args = vec!["confirmed".into(), answer.display().to_string()];
        let mut checker = command_lens("checker", &script);
        checker.args = vec!["refuted".into()];
        let lenses = [author, checker];
        // (extra ms, verifier ms, calls) of every timed run, for the breakdown printed below.
        let seen: RefCell<Vec<(f64, f64, usize)>> = RefCell::new(Vec::new());
        let round = |mode: VerifyMode| {
            let mut panel = Panel::from_env(SubscriptionSlots::new(2), false, []);
            panel.verify.mode = mode;
            let t = Instant::now();
            let report = rt.block_on(pipeline::review(
                diff.clone(),
                None,
                &lenses,
                &config,
                Context::default(),
                &panel,
                &NoProgress,
            ));
            let wall = t.elapsed().as_secs_f64() * 1e3;
            let slowest = report
                .lenses
                .iter()
                .map(|p| p.latency_ms)
                .max()
                .unwrap_or(0) as f64;
            let verify: Vec<_> = report
                .runs()
                .into_iter()
                .filter(|p| p.role == Role::Verify)
                .collect();
            let verifier = verify.iter().map(|p| p.latency_ms as f64).sum::<f64>();
            (
                wall - slowest - verifier,
                verifier,
                verify.len(),
                report.findings.len(),
            )
        };
        g.bench_function(format!("{n}_findings"), |b| {
            b.iter_custom(|iters| {
                let mut extra = Duration::ZERO;
                for _ in 0..iters {
                    let (off, _, _, kept) = round(VerifyMode::Off);
                    assert_eq!(kept, n, "without verification every finding stays");
                    let (on, verifier, calls, kept) = round(VerifyMode::Single);
                    assert_eq!(kept, 0, "the checker refutes every finding");
                    let added = (on - off).max(0.0);
                    seen.borrow_mut().push((on - off, verifier, calls));
                    extra += Duration::from_secs_f64(added / 1e3);
                }
                extra
            })
        });
        let seen = seen.into_inner();
        if !seen.is_empty() {
            let mut extra: Vec<f64> = seen.iter().map(|s| s.0).collect();
            let mut verifier: Vec<f64> = seen.iter().map(|s| s.1).collect();
            let calls: Vec<usize> = seen.iter().map(|s| s.2).collect();
            let max_extra = extra.iter().copied().fold(f64::MIN, f64::max);
            eprintln!(
                "verify/{n}_findings over {} runs: verifier calls {:?}, median verifier latency_ms \
                 {:.1} ms, median added beyond it {:.2} ms (max {max_extra:.2} ms)",
                seen.len(),
                calls.iter().min().zip(calls.iter().max()),
                median(&mut verifier),
                median(&mut extra),
            );
        }
    }
    g.finish();
}

/// The URL-password pattern before it lost its bounded repeats, for comparison.
const URL_PASSWORD_BOUNDED: &str =
    r"[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s/:@]{1,100}:([^\s/@]{1,200})@";

fn secret_benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("secrets/compile_url_password");
    g.sample_size(20);
    for (name, pattern) in [
        ("open", reviewbot::redact::URL_PASSWORD_PATTERN),
        ("bounded", URL_PASSWORD_BOUNDED),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| regex::Regex::new(black_box(pattern)).unwrap())
        });
    }
    g.finish();

    let mut g = c.benchmark_group("secrets/compile_generic");
    g.sample_size(20);
    g.bench_function("shipped", |b| {
        let generic = reviewbot::redact::catalog_pattern("generic-api-key").unwrap();
        // As `redact` compiles gitleaks' patterns: over bytes, ASCII classes.
        b.iter(|| {
            regex::bytes::RegexBuilder::new(black_box(generic))
                .unicode(false)
                .build()
                .unwrap()
        })
    });
    g.finish();

    // Texts built to make a secret search quadratic: a value run with no end that holds a
    // keyword and an operator every few bytes, and names just past the generic rule's reach.
    // Each must stay linear (both take milliseconds; searching anchored at every candidate
    // took 14 s and 71 s on these).
    let mut g = c.benchmark_group("secrets/adversarial");
    g.sample_size(10);
    let texts = [
        ("key_runs", format!("{}<", "key=".repeat(50_000))),
        ("long_names", "keyaaaaaaaaaaaaaaaaaaaaaaa=".repeat(8_000)),
    ];
    for (name, text) in &texts {
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_function(*name, |b| {
            b.iter(|| reviewbot::redact::find_secrets(black_box(text)))
        });
    }
    g.finish();
}

fn intake_benches(c: &mut Criterion) {
    use reviewbot::github::events::Event;
    use reviewbot::server::WebhookSecrets;
    let body = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/github-webhooks/pull_request/opened.payload.json"),
    )
    .expect("the pull_request fixture");
    let secrets = WebhookSecrets::new(["bench-secret"]).unwrap();
    let signature = secrets.sign(&body);
    let mut g = c.benchmark_group("intake");
    g.throughput(Throughput::Bytes(body.len() as u64));
    g.bench_function("verify", |b| {
        b.iter(|| secrets.verify(black_box(signature.as_bytes()), black_box(&body)))
    });
    g.bench_function("parse", |b| {
        b.iter(|| Event::parse("pull_request", black_box(&body)).unwrap())
    });
    g.finish();
}

criterion_group!(
    benches,
    diff_benches,
    lossy_benches,
    plan_benches,
    panel_benches,
    verify_benches,
    secret_benches,
    intake_benches
);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
}
