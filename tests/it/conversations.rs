//! Conversations end to end under the CLI (`docs/contract.md` "Conversations"): a reply in a
//! finding's thread is answered once by the lens that raised it; a maintainer's ruling that
//! withdraws it is kept as a learning, which later prompts carry and `reviewbot learnings`
//! lists and forgets; a thread whose lines were fixed is resolved; bots are never answered.

use std::process::{Command, Output};

use serde_json::Value;

use crate::fake_github::{FakeGithub, FileSpec};
use crate::pr::{REPO, Run, TOKEN, lens, stderr, world};

const BOT: &str = "reviewbot[bot]";

/// A command lens `talk`: in a round it reports one finding on `src/main.rs` line 3 (blocking
/// when `blocking` exists in its directory, else advisory); asked
/// about a reply it withdraws the finding when `withdraw` exists in its directory, else keeps
/// it. Every prompt it gets is appended to `prompts.txt`.
fn talking_run(extra: &str) -> Run {
    let run = Run::new("");
    let dir = run.dir.path();
    let script = dir.join("talk.sh");
    std::fs::write(
        &script,
        format!(
            r#"#!/bin/sh
req=$(cat)
printf '%s\n=====\n' "$req" >> '{dir}/prompts.txt'
case "$req" in
  *"finding under discussion"*)
    if [ -e '{dir}/withdraw' ]; then
      echo '{{"findings":[],"summary":"Right: the caller checks the total first, so this is intended."}}'
      exit 0
    fi ;;
esac
sev=advisory
if [ -e '{dir}/blocking' ]; then sev=blocking; fi
printf '{{"findings":[{{"path":"src/main.rs","line":3,"start_line":null,"side":"RIGHT","severity":"%s","confidence":"high","title":"Debug output left in","body":"dbg! prints to stderr in production.","quote":null,"suggestion":null}}],"summary":"The debug print is still there."}}\n' "$sev"
"#,
            dir = dir.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = format!(
        "[github]\nmax_rate_limit_wait = \"10s\"\nbot_login = \"{BOT}\"\n{}\n[review]\nlenses = [\"talk\"]\n{extra}",
        lens("talk", &script)
    );
    std::fs::write(dir.join("reviewbot.toml"), config).unwrap();
    run
}

fn db(run: &Run) -> String {
    format!("sqlite://{}/learnings.db", run.dir.path().display())
}

/// `review --post` with the store at `db` (when given).
fn post(run: &Run, fake: &FakeGithub, db: Option<&str>, extra: &[&str]) -> Output {
    let mut cmd = run.review_command(fake, Some(TOKEN), 7, &[&["--post"], extra].concat());
    match db {
        Some(url) => cmd.env("REVIEWBOT_DATABASE_URL", url),
        None => cmd.env_remove("REVIEWBOT_DATABASE_URL"),
    };
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    o
}

fn learnings(db: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_reviewbot"))
        .arg("learnings")
        .args(args)
        .env("REVIEWBOT_DATABASE_URL", db)
        .output()
        .unwrap()
}

/// Our finding comment (the thread's root).
fn root(fake: &FakeGithub) -> u64 {
    fake.review_comments(REPO, 7)
        .iter()
        .find(|c| c["in_reply_to_id"].is_null())
        .and_then(|c| c["id"].as_u64())
        .expect("a finding comment")
}

/// Our answers in threads, oldest first.
fn answers(fake: &FakeGithub) -> Vec<String> {
    fake.review_comments(REPO, 7)
        .iter()
        .filter(|c| !c["in_reply_to_id"].is_null() && c["user"]["login"] == BOT)
        .map(|c| c["body"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The bodies of our rounds (GitHub files every reply under a review of its own too).
fn rounds(fake: &FakeGithub) -> Vec<String> {
    fake.reviews(REPO, 7)
        .iter()
        .filter_map(|r| r["body"].as_str())
        .filter(|b| b.contains("<!-- reviewbot round="))
        .map(str::to_owned)
        .collect()
}

fn prompts(run: &Run) -> Vec<String> {
    std::fs::read_to_string(run.dir.path().join("prompts.txt"))
        .unwrap_or_default()
        .split("=====\n")
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            serde_json::from_str::<Value>(p).map_or(String::new(), |v| {
                v["prompt"].as_str().unwrap_or_default().to_owned()
            })
        })
        .collect()
}

#[test]
fn a_maintainers_dispute_is_answered_once_withdrawn_and_kept_as_a_learning() {
    let fake = world();
    fake.set_role(REPO, "maintainer", "write");
    let run = talking_run("");
    let db = db(&run);
    post(&run, &fake, Some(&db), &[]);
    let thread = root(&fake);
    assert_eq!(
        fake.check_runs(REPO)[0]["output"]["title"],
        "Round 1: 0 blocking, 1 advisory"
    );

    std::fs::write(run.dir.path().join("withdraw"), "").unwrap();
    let reply = fake.add_reply(
        REPO,
        7,
        thread,
        "maintainer",
        "Intended: `run` never returns an empty total here.",
    );
    // The head was reviewed already: no round, but the reply is answered.
    let o = post(&run, &fake, Some(&db), &[]);
    let said = stderr(&o);
    assert!(
        said.contains("answered the reply to \"Debug output left in\""),
        "{said}"
    );
    let answers_now = answers(&fake);
    assert_eq!(answers_now.len(), 1, "{answers_now:#?}");
    let answer = &answers_now[0];
    assert!(
        answer.starts_with("Withdrawn. Right: the caller checks"),
        "{answer}"
    );
    assert!(
        answer.contains(&format!(
            "<!-- reviewbot reply-to={reply} outcome=withdrawn "
        )),
        "{answer}"
    );
    assert_eq!(rounds(&fake).len(), 1, "no second round");
    // The lens was asked with the finding and the thread, as data.
    let asked = prompts(&run).pop().unwrap();
    assert!(
        asked.contains("<untrusted label=\"finding under discussion\">"),
        "{asked}"
    );
    assert!(
        asked.contains("maintainer wrote:\nIntended: `run` never returns"),
        "{asked}"
    );
    // The check run counts what the thread left standing.
    let runs = fake.check_runs(REPO);
    eprintln!(
        "WRITES {:?} {}",
        fake.requests()
            .iter()
            .map(|r| format!("{} {}", r.method, r.path))
            .collect::<Vec<_>>(),
        stderr(&o)
    );
    assert_eq!(
        runs[0]["output"]["title"],
        "Round 1: 0 blocking, 0 advisory"
    );
    assert_eq!(runs[0]["conclusion"], "success");

    // Run again (the same delivery, a retried job): nothing is answered twice.
    post(&run, &fake, Some(&db), &[]);
    post(&run, &fake, Some(&db), &[]);
    assert_eq!(answers(&fake).len(), 1);

    // Its outcome: withdrawn, once, however often the threads are read again.
    let stats = Command::new(env!("CARGO_BIN_EXE_reviewbot"))
        .args(["stats", "--repo", REPO, "--json"])
        .env("REVIEWBOT_DATABASE_URL", &db)
        .output()
        .unwrap();
    let stats: Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert_eq!(stats["all"]["withdrawn"], 1, "{stats:#}");
    assert_eq!(stats["all"]["posted"], 1, "{stats:#}");

    // The ruling is a learning of the repository.
    let listed = learnings(&db, &["list", "--repo", REPO, "--json"]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    let kept: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(kept.as_array().map(Vec::len), Some(1), "{kept}");
    assert_eq!(kept[0]["path"], "src/main.rs");
    assert_eq!(kept[0]["title"], "Debug output left in");
    assert_eq!(kept[0]["author"], "maintainer");
    let id = kept[0]["id"].as_i64().unwrap();
    let text = learnings(&db, &["list", "--repo", REPO]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("\"Debug output left in\""));

    // A later round in the repository gives the lens the learning as a note; the withdrawn
    // finding is not posted again.
    post(&run, &fake, Some(&db), &["--again"]);
    let round = prompts(&run).pop().unwrap();
    assert!(
        round.contains("<untrusted label=\"maintainers' notes\">"),
        "{round}"
    );
    assert!(
        round.contains("\"Debug output left in\" was withdrawn after maintainer replied"),
        "{round}"
    );
    let second = &rounds(&fake)[1];
    assert!(second.contains("0 blocking, 0 advisory"), "{second}");

    // Forgotten, it reaches no prompt.
    let forgot = learnings(&db, &["forget", &id.to_string()]);
    assert_eq!(forgot.status.code(), Some(0), "{}", stderr(&forgot));
    let again = learnings(&db, &["forget", &id.to_string()]);
    assert_eq!(
        again.status.code(),
        Some(2),
        "an unknown id is a usage error"
    );
    assert!(stderr(&again).contains(&format!("no learning has id {id}")));
    post(&run, &fake, Some(&db), &["--again"]);
    assert!(!prompts(&run).pop().unwrap().contains("maintainers' notes"));
}

#[test]
fn a_readers_reply_is_answered_but_not_kept_and_bots_are_never_answered() {
    let fake = world();
    fake.set_role(REPO, "reader", "read");
    let run = talking_run("");
    let db = db(&run);
    post(&run, &fake, Some(&db), &[]);
    let thread = root(&fake);

    // A bot's reply, and a human calling on another bot: nothing to answer.
    fake.add_reply(REPO, 7, thread, "dependabot[bot]", "Rebased.");
    fake.add_reply(REPO, 7, thread, "alice", "@copilot[bot] can you fix this?");
    let o = post(&run, &fake, Some(&db), &[]);
    assert!(answers(&fake).is_empty(), "{}", stderr(&o));

    // A reader disputes; the lens keeps the finding: answered, counted, not kept.
    fake.add_reply(REPO, 7, thread, "reader", "I do not think this matters.");
    post(&run, &fake, Some(&db), &[]);
    let said = answers(&fake);
    assert_eq!(said.len(), 1);
    assert!(
        said[0].starts_with("Still holds. The debug print is still there."),
        "{}",
        said[0]
    );
    assert_eq!(
        fake.check_runs(REPO)[0]["output"]["title"],
        "Round 1: 0 blocking, 1 advisory"
    );
    // Withdrawn for a reader: answered, no learning.
    std::fs::write(run.dir.path().join("withdraw"), "").unwrap();
    fake.add_reply(REPO, 7, thread, "reader", "Please look again.");
    post(&run, &fake, Some(&db), &[]);
    assert_eq!(answers(&fake).len(), 2);
    let listed = learnings(&db, &["list", "--repo", REPO, "--json"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&listed.stdout).unwrap(),
        serde_json::json!([])
    );

    // Without a store, a maintainer's ruling is answered and a notice says it is not kept.
    fake.set_role(REPO, "maintainer", "admin");
    fake.add_reply(REPO, 7, thread, "maintainer", "Still intended.");
    let o = post(&run, &fake, None, &[]);
    assert!(
        stderr(&o).contains("was not kept as a learning: there is no store"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_thread_whose_lines_were_fixed_is_resolved_unless_a_human_replied() {
    let fake = world();
    let run = talking_run("");
    post(&run, &fake, None, &[]);
    let thread = root(&fake);

    // The next push removes the debug print; the lens finds nothing there any more.
    let fixed = "@@ -1,4 +1,5 @@\n fn main() {\n-    run();\n+    let total = run();\n+    report(total);\n }\n \n";
    std::fs::write(run.dir.path().join("withdraw"), "").unwrap();
    std::fs::write(
        run.dir.path().join("talk.sh"),
        "#!/bin/sh\ncat >/dev/null\necho '{\"findings\":[]}'\n",
    )
    .unwrap();
    fake.set_head(REPO, 7, &crate::fake_github::sha("fixed"), vec![
        FileSpec::modified("src/main.rs", fixed),
        FileSpec::modified("app/work.py", "@@ -10,3 +10,4 @@ def work():\n     x = load()\n+    breakpoint()\n     return x\n \n"),
    ]);
    post(&run, &fake, None, &[]);
    assert_eq!(fake.resolved_threads(), vec![thread]);
    let said = answers(&fake);
    assert_eq!(said.len(), 1, "{said:#?}");
    let short = &crate::fake_github::sha("fixed")[..8];
    assert!(
        said[0].starts_with(&format!("Addressed in {short}.")),
        "{}",
        said[0]
    );

    // A round again resolves nothing twice and posts no second note.
    post(&run, &fake, None, &["--again"]);
    assert_eq!(answers(&fake).len(), 1);
    assert_eq!(fake.resolved_threads(), vec![thread]);
}

/// Outcomes through the binary: a round keeps what it posted, the round that addresses it
/// settles it, and `reviewbot stats` reads both; without a store one notice says nothing is kept.
#[test]
fn a_posted_finding_is_kept_and_settled_addressed_when_its_lines_are_fixed() {
    let fake = world();
    let run = talking_run("");
    let db = db(&run);
    let first = post(&run, &fake, Some(&db), &[]);
    assert!(
        !stderr(&first).contains("is not kept"),
        "{}",
        stderr(&first)
    );
    let stats = |db: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_reviewbot"))
            .args(["stats", "--repo", REPO, "--json"])
            .env("REVIEWBOT_DATABASE_URL", db)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()
    };
    let doc = stats(&db);
    assert_eq!(doc["lenses"][0]["lens"], "talk", "{doc:#}");
    assert_eq!(
        (&doc["lenses"][0]["posted"], &doc["lenses"][0]["open"]),
        (&1.into(), &1.into())
    );

    let fixed = "@@ -1,4 +1,5 @@\n fn main() {\n-    run();\n+    let total = run();\n+    report(total);\n }\n \n";
    std::fs::write(
        run.dir.path().join("talk.sh"),
        "#!/bin/sh\ncat >/dev/null\necho '{\"findings\":[]}'\n",
    )
    .unwrap();
    fake.set_head(
        REPO,
        7,
        &crate::fake_github::sha("fixed"),
        vec![FileSpec::modified("src/main.rs", fixed)],
    );
    post(&run, &fake, Some(&db), &[]);
    let doc = stats(&db);
    let talk = &doc["lenses"][0];
    assert_eq!(
        (&talk["posted"], &talk["addressed"], &talk["open"]),
        (&1.into(), &1.into(), &0.into())
    );
    assert_eq!(talk["addressed_rate"], 1.0);

    // Without a store: one notice, however many findings.
    let other = talking_run("");
    let o = post(&other, &world(), None, &[]);
    let said = stderr(&o);
    assert_eq!(
        said.matches("what becomes of this round's findings is not kept")
            .count(),
        1,
        "{said}"
    );
}

#[test]
fn a_thread_a_human_replied_in_is_left_to_the_humans() {
    let fake = world();
    let run = talking_run("");
    post(&run, &fake, None, &[]);
    let thread = root(&fake);
    fake.add_reply(REPO, 7, thread, "alice", "Will fix.");
    post(&run, &fake, None, &[]);
    // Fixed on the next push; the thread is not resolved: a human spoke in it.
    std::fs::write(
        run.dir.path().join("talk.sh"),
        "#!/bin/sh\ncat >/dev/null\necho '{\"findings\":[]}'\n",
    )
    .unwrap();
    let fixed = "@@ -1,4 +1,5 @@\n fn main() {\n-    run();\n+    let total = run();\n+    report(total);\n }\n \n";
    fake.set_head(
        REPO,
        7,
        &crate::fake_github::sha("fixed"),
        vec![FileSpec::modified("src/main.rs", fixed)],
    );
    post(&run, &fake, None, &[]);
    assert!(fake.resolved_threads().is_empty());
}

/// `review --post --again --fail-on blocking`: its exit code, its verdict line, and the check
/// run's conclusion and title afterwards.
fn gate(run: &Run, fake: &FakeGithub) -> (Option<i32>, String, String, String) {
    let o = run
        .review_command(
            fake,
            Some(TOKEN),
            7,
            &["--post", "--again", "--fail-on", "blocking"],
        )
        .env_remove("REVIEWBOT_DATABASE_URL")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let verdict = out
        .lines()
        .find(|l| l.starts_with("Verdict:"))
        .and_then(|l| l.split(" (").next())
        .unwrap_or_default()
        .to_owned();
    let check = fake.check_runs(REPO).last().cloned().unwrap_or_default();
    (
        o.status.code(),
        verdict,
        check["conclusion"].as_str().unwrap_or_default().to_owned(),
        check["output"]["title"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

/// The PR's author, with read access, replies "no" under a blocking finding, and the lens is
/// persuaded: the answer says so, but the finding still counts — in the verdict, the exit
/// status and the check run — and the author resolving the thread changes nothing either.
/// A writer resolving it dismisses it.
#[test]
fn the_prs_author_cannot_lift_a_blocking_finding_only_a_writer_can() {
    let fake = world();
    fake.set_role(REPO, "author", "read");
    fake.set_role(REPO, "maintainer", "maintain");
    let run = talking_run("");
    std::fs::write(run.dir.path().join("blocking"), "").unwrap();
    let (code, verdict, conclusion, _) = gate(&run, &fake);
    assert_eq!(
        (code, verdict.as_str()),
        (Some(1), "Verdict: 1 blocking, 0 advisory.")
    );
    assert_eq!(conclusion, "failure");
    let thread = root(&fake);

    std::fs::write(run.dir.path().join("withdraw"), "").unwrap();
    fake.add_reply(REPO, 7, thread, "author", "no");
    let (code, verdict, conclusion, title) = gate(&run, &fake);
    assert_eq!(
        (code, verdict.as_str()),
        (Some(1), "Verdict: 1 blocking, 0 advisory.")
    );
    assert_eq!(
        (conclusion.as_str(), title.as_str()),
        ("failure", "Round 2: 1 blocking, 0 advisory")
    );
    let said = answers(&fake);
    assert_eq!(
        said.len(),
        1,
        "the author is answered all the same: {said:#?}"
    );
    assert!(said[0].starts_with("Withdrawn."), "{}", said[0]);
    assert!(said[0].contains("The finding still counts"), "{}", said[0]);

    // The author resolves the thread: GitHub allows it; it changes nothing.
    fake.resolve_thread(thread, "author");
    let (code, verdict, conclusion, _) = gate(&run, &fake);
    assert_eq!(
        (code, verdict.as_str()),
        (Some(1), "Verdict: 1 blocking, 0 advisory.")
    );
    assert_eq!(conclusion, "failure");

    // A maintainer resolving it is the code owner's decision: dismissed, not raised again.
    fake.resolve_thread(thread, "maintainer");
    let (code, verdict, conclusion, _) = gate(&run, &fake);
    assert_eq!(
        (code, verdict.as_str()),
        (Some(0), "Verdict: 0 blocking, 0 advisory.")
    );
    assert_eq!(conclusion, "success");
    assert_eq!(answers(&fake).len(), 1, "nothing more was said");
}
