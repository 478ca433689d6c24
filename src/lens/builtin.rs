//! The `builtin` lens: deterministic checks on added lines, no model.
//!
//! Only **added** lines are checked (the `RIGHT` side, new line numbers): what the PR removes
//! or leaves untouched is not its author's doing.
//!
//! | check | severity | confidence | why |
//! |---|---|---|---|
//! | committed secret (any specific rule, private-key BEGIN line) | blocking | high | a pushed secret is leaked until rotated |
//! | possible secret (`generic-api-key`) | advisory | medium | keyword + random-looking value; real often, but not always |
//! | merge-conflict markers | blocking | high | the file does not build, or both sides ship |
//! | bidi control (U+202A–U+202E, U+2066–U+2069) | blocking | high | Trojan Source: shown code differs from run code |
//! | Unicode tag characters (U+E0000–U+E007F) | blocking | high | invisible ASCII smuggling, aimed at AI reviewers |
//! | other invisible characters (zero-width, soft hyphen, marks, fillers, BOM not at file start, variation selectors after ASCII or in a run) | advisory | medium | often pasted by accident; legitimate in some RTL/Indic text |
//! | Python `breakpoint()`, `pdb`/`ipdb`/`pudb` `.set_trace()` | blocking | high | stops the program at a debugger prompt |
//! | JavaScript `debugger` statement | blocking | high | pauses whenever dev tools are open; ESLint's recommended set rejects it |
//! | Rust `dbg!` | advisory | high | surely leftover, but only prints to stderr |
//! | `console.log` | advisory | medium | may be intended output |
//!
//! Judgement calls:
//! - No debug check is made in tests (`test/`, `tests/`, `__tests__/`, `spec/`, `e2e/`,
//!   `*.test.*`, `*.spec.*`, `test_*.py`, `*_test.go`, `conftest.py`) or examples (`example/`,
//!   `examples/`): there a debug statement is what the file shows, or stops a test runner
//!   visibly. `console.log` is not reported in scripts and command-line entry points
//!   (`scripts/`, `bin/`) either, where printing is the point; the other debug checks are.
//! - The hidden-character checks read program text and the config and data files a program
//!   parses, and any file whose kind is not known. Prose and translation catalogs (Markdown,
//!   reStructuredText, `.txt`, `.po`, `.xliff`, `.strings`, …) take only the tag-character
//!   check: their marks and joiners are how some languages are written. PostScript, `.ai`,
//!   `.eps` and `.svg` take none: their text is drawing data ([`kinds`]). A file that is not
//!   UTF-8 (a legacy encoding) takes no invisible-character check: its byte pairs read as
//!   invisible characters by accident; bidi controls and tags are still looked for.
//! - Debug statements in comments or inside string literals (judged on the line alone) are not
//!   reported.
//! - `=======` counts only when the same file's added lines also hold a `<<<<<<<`, `|||||||`
//!   or `>>>>>>>` marker, so Markdown and reStructuredText underlines are not reported.
//! - A zero-width joiner between two emoji and tag characters inside an emoji flag sequence
//!   are how emoji are written, not hidden text.
//! - `generic-api-key` is not reported in lockfiles (integrity hashes and registry URLs).
//!
//! Findings are grouped: one finding per check (each secret rule its own) per file, so that a
//! file can never flood a review. It is placed on the check's first run of lines (30
//! `console.log` lines in a row span `start_line`..`line`; a conflict spans its first hunk's
//! markers) and names the file's other lines in its body ("and 49 more lines (688, 714, …)").
//! A finding's fingerprint is made from the lines it is placed on, so a later round that adds
//! another hit of the same check further down the same file does not post it again. Secrets are
//! never shown: the body quotes the first line with every secret masked.
//!
//! Every line is pre-filtered with cheap checks of its bytes, as the diff has them (an ASCII
//! test before any look for hidden characters, a first byte for conflict markers, `memmem` for
//! debug keywords on the whole file first, literal keywords before the secret regexes); only a
//! line that passes one is read as text. So the lens stays fast on multi-megabyte diffs, and a
//! diff in a legacy encoding is never decoded for it.

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem;

use crate::diff::{ByteLine, Diff, FileDiff, LineKind, Side};
use crate::lens::backend::{Backend, CallEnv, Pending, Runs};
use crate::lens::contract::{Confidence, LensResponse, RawFinding, Severity};
use crate::lens::preflight::{self, PreflightEnv};
use crate::lens::{Answer, AuthClass, Failure, LensRequest, LensSpec, Vendor};
use crate::redact;
use crate::unicode::{self, Hidden};

#[cfg(test)]
mod corpus;
mod describe;
use describe::{Where, describe};
#[cfg(test)]
mod gitleaks;
mod kinds;
mod secrets;

use kinds::{TextKind, printing_allowed, test_or_example, text_kind};
use secrets::{KeywordLines, is_lockfile};
pub use secrets::{KeywordSearch, SecretKeywords, remember_secrets, search_keywords};

/// The `builtin` backend: deterministic checks of the diff's added lines, in process. The panel
/// runs it on the whole diff ([`review_with`]); it takes no prompt and makes no call.
pub struct Builtin;

impl Backend for Builtin {
    fn auth_class(&self) -> AuthClass {
        AuthClass::None
    }

    fn runs(&self) -> Runs {
        Runs::InProcess
    }

    fn vendor(&self) -> Vendor {
        Vendor::None
    }

    fn call<'a>(
        &'a self,
        _spec: &'a LensSpec,
        _req: &'a LensRequest,
        _env: CallEnv<'a>,
    ) -> Pending<'a, Result<Answer, Failure>> {
        Box::pin(async { Err(Failure::fatal("the builtin lens takes no calls")) })
    }

    fn preflight<'a>(
        &'a self,
        subject: &'a str,
        _spec: &'a LensSpec,
        _env: &'a PreflightEnv,
    ) -> Pending<'a, Vec<preflight::Check>> {
        Box::pin(async move {
            vec![preflight::Check::ok(
                subject,
                "builtin checks (secrets, conflict markers, bidi characters, debug statements); \
                 nothing to set up",
            )]
        })
    }
}

/// Runs every check on the added lines of `diff`, files shared out over the cores (a
/// multi-megabyte diff is otherwise the slowest part of an offline review).
/// The review pipeline calls [`remember_secrets`] first, whichever lenses run.
pub fn review(diff: &Diff) -> LensResponse {
    review_with(diff, None)
}

/// [`review`], with the keywords [`remember_secrets`] found in the same `diff`.
pub fn review_with(diff: &Diff, keywords: Option<&SecretKeywords>) -> LensResponse {
    let files: Vec<(usize, &FileDiff)> = diff
        .files()
        .iter()
        .enumerate()
        .filter(|(_, f)| !f.binary && f.new_path.is_some() && !f.hunks.is_empty())
        .collect();
    let review_some = |files: &[(usize, &FileDiff)]| {
        let mut findings = Vec::new();
        for (i, file) in files {
            let text = diff.file_bytes(file);
            let found;
            let starts = match keywords.and_then(|k| k.0.get(*i)) {
                Some(starts) => starts.as_slice(),
                None => {
                    found = redact::keyword_starts(text);
                    found.as_slice()
                }
            };
            let hunks = file.hunks.iter().map(|h| diff.hunk_byte_lines(h));
            review_file(diff, file.path(), text, starts, hunks, &mut findings);
        }
        findings
    };
    let findings = crate::par::map_shares(&files, |f| diff.file_bytes(f.1).len(), review_some);
    LensResponse {
        findings,
        ..LensResponse::default()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Check {
    Secret(&'static str),
    Conflict,
    Bidi,
    Tags,
    Invisible,
    Breakpoint,
    SetTrace(&'static str),
    Debugger,
    Dbg,
    ConsoleLog,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    Rust,
    Js,
    Python,
    Other,
}

/// One check that fired on one added line.
#[derive(Debug)]
struct Hit {
    check: Check,
    hunk: usize,
    line: u32,
    /// Secrets: the line with every secret masked. Conflicts: the marker.
    note: String,
    /// Unicode checks: the offending code points, in order of appearance.
    chars: Vec<char>,
}

/// Searchers built once: building one per needle per file cost more than searching on a diff
/// of thousands of small files. (Conflict markers need none: a line's first byte rules one
/// out, cheaper than a search of the whole file's text, every side of it.)
static NEEDLES: LazyLock<[memmem::Finder<'static>; 5]> = LazyLock::new(|| {
    [
        "dbg!",
        "console.log",
        "debugger",
        "breakpoint(",
        "set_trace(",
    ]
    .map(memmem::Finder::new)
});

/// Builds what the secret pass and this lens build on first use: a caller with a thread to
/// spare runs this while it reads the diff, so the review itself does not wait for it.
pub fn prepare() {
    redact::prepare();
    crate::attributes::prepare();
    LazyLock::force(&NEEDLES);
}

/// What the whole file's text (all sides) may contain, and what kind of file it is: checks it
/// cannot trigger, or that do not apply to it, are skipped.
struct FileCtx<'a> {
    path: &'a str,
    text: &'a [u8],
    lang: Lang,
    /// Which hidden-character checks apply; `None` when the text is all ASCII.
    unicode: Option<TextKind>,
    /// Whether the file's text is UTF-8. In a legacy encoding (Shift JIS, EUC-JP, Big5) byte
    /// pairs that read as a soft hyphen or U+0602 are ordinary letters: the invisible-character
    /// check is not made there, while bidi controls and tags, whose encodings are three and
    /// four bytes long, still are. Decided on the file's first invisible character, once.
    utf8: std::cell::OnceCell<bool>,
    dbg: bool,
    console: bool,
    debugger: bool,
    python_debug: bool,
    lockfile: bool,
}

impl<'a> FileCtx<'a> {
    fn new(path: &'a str, text: &'a [u8]) -> Self {
        let lang = lang_of(path);
        let has = |i: usize| NEEDLES[i].find(text).is_some();
        // In tests and examples a debug statement is what the file runs or shows.
        let debug = lang != Lang::Other && !test_or_example(path);
        let unicode = match text.is_ascii() {
            true => None,
            false => Some(text_kind(path)).filter(|k| *k != TextKind::NotText),
        };
        FileCtx {
            path,
            text,
            lang,
            unicode,
            utf8: std::cell::OnceCell::new(),
            dbg: debug && lang == Lang::Rust && has(0),
            console: debug && lang == Lang::Js && !printing_allowed(path) && has(1),
            debugger: debug && lang == Lang::Js && has(2),
            python_debug: debug && lang == Lang::Python && (has(3) || has(4)),
            lockfile: is_lockfile(path),
        }
    }
}

fn review_file<'a, H, L>(
    diff: &'a Diff,
    path: &str,
    file_text: &[u8],
    keywords: &[usize],
    hunks: H,
    out: &mut Vec<RawFinding>,
) where
    H: IntoIterator<Item = L>,
    L: IntoIterator<Item = ByteLine<'a>>,
{
    let ctx = FileCtx::new(path, file_text);
    let mut keywords = KeywordLines::new(file_text, keywords);
    let mut hits = Vec::new();
    // Added lines, kept for the rules that read a whole file of some kinds.
    let mut added = redact::has_file_rules(path).then(Vec::new);
    for (hunk, lines) in hunks.into_iter().enumerate() {
        let lines: Vec<ByteLine<'a>> = lines.into_iter().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.kind != LineKind::Added {
                continue;
            }
            let may_hold_secret = keywords.holds(line.text);
            if let (Some(added), Some(n)) = (&mut added, line.new) {
                added.push((hunk, n, line.text));
            }
            if let Some(n) = line.new {
                let next = continuation(&lines[i + 1..]);
                let line = Line {
                    hunk,
                    number: n,
                    bytes: line.text,
                    next,
                };
                scan_line(diff, &ctx, &line, may_hold_secret, &mut hits);
            }
        }
    }
    if let Some(added) = added {
        file_rule_hits(diff, &ctx, &added, &mut hits);
    }
    // `=======` alone is a Markdown/RST underline unless real markers surround it.
    if !hits
        .iter()
        .any(|h| h.check == Check::Conflict && h.note != "=======")
    {
        hits.retain(|h| h.check != Check::Conflict);
    }
    out.extend(group(path, hits));
}

/// The secrets gitleaks' rules for the kind of file `ctx` is find in its `added` lines (hunk,
/// line number, bytes), each reported on the line its value starts on.
fn file_rule_hits(
    diff: &Diff,
    ctx: &FileCtx<'_>,
    added: &[(usize, u32, &[u8])],
    hits: &mut Vec<Hit>,
) {
    let mut text = String::new();
    let mut starts = Vec::with_capacity(added.len());
    for (_, _, bytes) in added {
        starts.push(text.len());
        text.push_str(&diff.as_text(bytes));
        text.push('\n');
    }
    for m in redact::find_file_secrets(ctx.path, &text) {
        let i = starts.partition_point(|&s| s <= m.range.start) - 1;
        let (hunk, line, _) = added[i];
        let end = starts.get(i + 1).map_or(text.len(), |&e| e - 1);
        let value = (m.range.start - starts[i])..(m.range.end.min(end) - starts[i]);
        let line_text = &text[starts[i]..end];
        let masked = redact::SecretMatch {
            rule: m.rule,
            range: value,
        };
        hits.push(Hit {
            check: Check::Secret(m.rule),
            hunk,
            line,
            note: masked_line(line_text, &[masked]),
            chars: Vec::new(),
        });
    }
}

/// Added lines after a line that opens a value (`<apiToken>`, `key:`, a private key's BEGIN
/// line) searched with it for the value: gitleaks' rules read a value on the next line.
const CONTINUATION_LINES: usize = 2;

/// The added lines right after a line, [`CONTINUATION_LINES`] at most.
fn continuation<'l, 'a>(after: &'l [ByteLine<'a>]) -> &'l [ByteLine<'a>] {
    let n = after
        .iter()
        .take(CONTINUATION_LINES)
        .take_while(|l| l.kind == LineKind::Added)
        .count();
    &after[..n]
}

/// One added line: where it is, its bytes, and the added lines right after it.
struct Line<'l, 'a> {
    hunk: usize,
    number: u32,
    bytes: &'a [u8],
    next: &'l [ByteLine<'a>],
}

/// Runs every check on one added line, given as the diff's bytes: the line is read as text
/// only when a byte check says that some check can fire on it.
fn scan_line(
    diff: &Diff,
    ctx: &FileCtx<'_>,
    line: &Line<'_, '_>,
    may_hold_secret: bool,
    hits: &mut Vec<Hit>,
) {
    let bytes = line.bytes;
    let holds = |needle: &[u8]| memmem::find(bytes, needle).is_some();
    let hidden = !bytes.is_ascii()
        && match ctx.unicode {
            Some(TextKind::Code) => unicode::holds_hidden_bytes(bytes),
            Some(TextKind::Prose) => holds_tag_bytes(bytes),
            Some(TextKind::NotText) | None => false,
        };
    let may_fire = may_hold_secret
        || hidden
        || conflict_marker(bytes).is_some()
        || (ctx.dbg && holds(b"dbg!("))
        || (ctx.console && holds(b"console.log"))
        || (ctx.debugger && holds(b"debugger"))
        || (ctx.python_debug && (holds(b"breakpoint(") || holds(b"set_trace(")));
    if may_fire {
        let text = diff.as_text(bytes);
        let secrets = may_hold_secret.then(|| line_secrets(diff, ctx, &text, line.next));
        scan_text(ctx, line.hunk, line.number, &text, secrets, hidden, hits);
    }
}

/// The secrets of an added line that holds a keyword, and the text their ranges are in: the
/// line, or the line and the ones after it when it opens a value and holds none itself.
fn line_secrets<'t>(
    diff: &Diff,
    ctx: &FileCtx<'_>,
    text: &'t str,
    next: &[ByteLine<'_>],
) -> (Cow<'t, str>, Vec<redact::SecretMatch>) {
    let found = redact::find_secrets_in(ctx.path, text);
    // A BEGIN line alone looks like a key; the lines after it say whether one follows.
    let begins_key = text.contains("PRIVATE KEY-----");
    if next.is_empty() || !(opens_value(text) || begins_key) || (!found.is_empty() && !begins_key) {
        return (Cow::Borrowed(text), found);
    }
    let mut window = text.to_owned();
    for l in next {
        window.push('\n');
        window.push_str(&diff.as_text(l.text));
    }
    let found = redact::find_secrets_in(ctx.path, &window);
    (Cow::Owned(window), found)
}

/// Whether a line ends where a value starts on the next line: an XML element or YAML key
/// (`<apiToken>`, `token: |`), an assignment.
fn opens_value(text: &str) -> bool {
    let end = text.trim_end();
    end.ends_with(['>', ':', '=', '|'])
}

/// The checks of [`scan_line`] on a line that may fire one, as text.
fn scan_text(
    ctx: &FileCtx<'_>,
    hunk: usize,
    line: u32,
    text: &str,
    secrets: Option<(Cow<'_, str>, Vec<redact::SecretMatch>)>,
    hidden: bool,
    hits: &mut Vec<Hit>,
) {
    let mut hit = |check, note: String, chars: Vec<char>| {
        hits.push(Hit {
            check,
            hunk,
            line,
            note,
            chars,
        })
    };

    let (shown, found) = secrets.unwrap_or_default();
    let secrets: Vec<_> = found
        .into_iter()
        .filter(|m| !(ctx.lockfile && m.rule == redact::GENERIC))
        .collect();
    if !secrets.is_empty() {
        let masked = masked_line(&shown, &secrets);
        let mut seen = Vec::new();
        for m in &secrets {
            if !seen.contains(&m.rule) {
                seen.push(m.rule);
                hit(Check::Secret(m.rule), masked.clone(), Vec::new());
            }
        }
    }

    if let Some(marker) = conflict_marker(text.as_bytes()) {
        hit(Check::Conflict, marker.to_owned(), Vec::new());
    }

    if hidden {
        let (mut bidi, tags, mut invisible) = unicode_hits(text, line == 1);
        if ctx.unicode == Some(TextKind::Prose) {
            // Marks and joiners are how some languages are written; tags are not.
            bidi.clear();
            invisible.clear();
        }
        if !invisible.is_empty()
            && !*ctx
                .utf8
                .get_or_init(|| simdutf8::basic::from_utf8(ctx.text).is_ok())
        {
            invisible.clear();
        }
        for (check, chars) in [
            (Check::Bidi, bidi),
            (Check::Tags, tags),
            (Check::Invisible, invisible),
        ] {
            if !chars.is_empty() {
                hit(check, String::new(), chars);
            }
        }
    }

    let b = text.as_bytes();
    if ctx.dbg
        && find_call(text, "dbg!(", ctx.lang, |i| {
            !b.get(i.wrapping_sub(1)).is_some_and(|&c| is_ident(c))
        })
    {
        hit(Check::Dbg, String::new(), Vec::new());
    }
    if ctx.console
        && find_call(text, "console.log", ctx.lang, |i| {
            let prev_ok = !b.get(i.wrapping_sub(1)).is_some_and(|&c| is_ident(c));
            let after = text[i + "console.log".len()..].trim_start();
            prev_ok && after.starts_with('(')
        })
    {
        hit(Check::ConsoleLog, String::new(), Vec::new());
    }
    if ctx.debugger
        && find_call(text, "debugger", ctx.lang, |i| {
            let prev_ok = !b
                .get(i.wrapping_sub(1))
                .is_some_and(|&c| is_ident(c) || c == b'.');
            // Not `debugger:` (a key or label), `debugger(`, `debugger.x` or `debugger = …`.
            let next_ok = !b
                .get(i + "debugger".len())
                .is_some_and(|&c| is_ident(c) || matches!(c, b':' | b'(' | b'.' | b'='));
            prev_ok && next_ok
        })
    {
        hit(Check::Debugger, String::new(), Vec::new());
    }
    if ctx.python_debug {
        let free = |i: usize| {
            !b.get(i.wrapping_sub(1))
                .is_some_and(|&c| is_ident(c) || c == b'.')
        };
        if find_call(text, "breakpoint(", ctx.lang, |i| {
            free(i) && !text[..i].trim_end().ends_with("def")
        }) {
            hit(Check::Breakpoint, String::new(), Vec::new());
        }
        for (module, needle) in [
            ("pdb", "pdb.set_trace("),
            ("ipdb", "ipdb.set_trace("),
            ("pudb", "pudb.set_trace("),
        ] {
            if memmem::find(b, needle.as_bytes()).is_some()
                && find_call(text, needle, ctx.lang, free)
            {
                hit(Check::SetTrace(module), String::new(), Vec::new());
            }
        }
    }
}

/// Whether `needle` occurs in live code (not a comment, not a string) where `accept` agrees.
fn find_call(text: &str, needle: &str, lang: Lang, accept: impl Fn(usize) -> bool) -> bool {
    memmem::find_iter(text.as_bytes(), needle.as_bytes())
        .any(|i| accept(i) && in_code(text, i, lang))
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

/// Whether byte `pos` of a single source line is code rather than comment or string literal.
/// A line judged alone cannot see block comments or strings opened on earlier lines.
fn in_code(line: &str, pos: usize, lang: Lang) -> bool {
    let trimmed = line.trim_start();
    let comment_line = match lang {
        Lang::Python => trimmed.starts_with('#'),
        _ => trimmed.starts_with("//") || trimmed.starts_with("/*") || trimmed.starts_with('*'),
    };
    if comment_line {
        return false;
    }
    let b = line.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < pos {
        let c = b[i];
        if let Some(q) = quote {
            if c == b'\\' {
                i += 2;
                continue;
            }
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        match c {
            b'#' if lang == Lang::Python => return false,
            b'/' if lang != Lang::Python && b.get(i + 1) == Some(&b'/') => return false,
            b'/' if lang != Lang::Python && b.get(i + 1) == Some(&b'*') => {
                match memmem::find(&b[i + 2..], b"*/") {
                    Some(close) if i + 2 + close + 2 <= pos => i += 2 + close + 2,
                    _ => return false,
                }
                continue;
            }
            b'"' => quote = Some(c),
            b'`' if lang == Lang::Js => quote = Some(c),
            b'\'' if lang == Lang::Rust => {
                // A char literal (`'"'`, `'\''`), not a lifetime.
                if b.get(i + 2) == Some(&b'\'') {
                    i += 3;
                    continue;
                }
                if b.get(i + 1) == Some(&b'\\') && b.get(i + 3) == Some(&b'\'') {
                    i += 4;
                    continue;
                }
            }
            b'\'' => quote = Some(c),
            _ => {}
        }
        i += 1;
    }
    quote.is_none()
}

/// The merge-conflict marker a line is, if any (`git` writes seven characters at column 0).
fn conflict_marker(b: &[u8]) -> Option<&'static str> {
    if !matches!(b.first(), Some(b'<' | b'>' | b'|' | b'=')) {
        return None;
    }
    let marker = |m: &'static str| {
        (b.starts_with(m.as_bytes()) && matches!(b.get(7), None | Some(b' ') | Some(b'\t')))
            .then_some(m)
    };
    marker("<<<<<<<")
        .or_else(|| marker(">>>>>>>"))
        .or_else(|| marker("|||||||"))
        .or_else(|| (b.trim_ascii_end() == b"=======").then_some("======="))
}

fn is_emoji(c: Option<char>) -> bool {
    c.is_some_and(|c| matches!(c, '\u{1F000}'..='\u{1FAFF}' | '\u{2600}'..='\u{27BF}' | '\u{FE0F}'))
}

/// Whether a line may hold a Unicode tag character (U+E0000–U+E007F: `F3 A0 80`/`81` in UTF-8).
fn holds_tag_bytes(b: &[u8]) -> bool {
    memchr::memchr_iter(0xF3, b)
        .any(|i| b.get(i + 1) == Some(&0xA0) && matches!(b.get(i + 2), Some(0x80 | 0x81)))
}

/// The bidi controls, tag characters and other invisible characters of one line.
fn unicode_hits(text: &str, first_line: bool) -> (Vec<char>, Vec<char>, Vec<char>) {
    let (mut bidi, mut tags, mut invisible) = (Vec::new(), Vec::new(), Vec::new());
    let mut prev: Option<char> = None;
    let mut in_flag = false;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|&(_, c)| c);
        let kind = unicode::hidden(c);
        match kind {
            Some(Hidden::Bidi) => bidi.push(c),
            // Subdivision flags: U+1F3F4, tag letters, U+E007F CANCEL TAG.
            Some(Hidden::Tag) if !in_flag => tags.push(c),
            Some(Hidden::Tag) => {}
            // One selector right after a visible non-ASCII character (an emoji, an
            // ideograph) is how such text is written; after ASCII or in a run it carries data.
            Some(Hidden::Selector) => {
                let after_glyph = prev.is_some_and(|p| !p.is_ascii() && !unicode::is_hidden(p));
                if !after_glyph {
                    invisible.push(c);
                }
            }
            Some(Hidden::Invisible) => {
                let bom_at_start = c == '\u{FEFF}' && first_line && i == 0;
                let emoji_joiner = c == '\u{200D}' && is_emoji(prev) && is_emoji(next);
                if !bom_at_start && !emoji_joiner {
                    invisible.push(c);
                }
            }
            None => {}
        }
        if c == '\u{1F3F4}' {
            in_flag = true;
        } else if kind != Some(Hidden::Tag) || c == '\u{E007F}' {
            in_flag = false;
        }
        prev = Some(c);
    }
    (bidi, tags, invisible)
}

fn lang_of(path: &str) -> Lang {
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    match ext {
        "rs" => Lang::Rust,
        "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs" | "mts" | "cts" | "vue" | "svelte" => Lang::Js,
        "py" | "pyw" => Lang::Python,
        _ => Lang::Other,
    }
}

/// The line with every secret masked, control and invisible characters dropped, shortened.
fn masked_line(text: &str, secrets: &[redact::SecretMatch]) -> String {
    let mut masked = String::with_capacity(text.len());
    let mut at = 0;
    for m in secrets {
        masked.push_str(&text[at..m.range.start]);
        masked.push_str("[REDACTED ");
        masked.push_str(m.rule);
        masked.push(']');
        at = m.range.end;
    }
    masked.push_str(&text[at..]);
    // Whatever `find_secrets` judged too weak to report is still masked here.
    let masked = redact::redact(&masked);
    let clean: String = masked
        .trim()
        .chars()
        .filter(|&c| !c.is_control() && !unicode::is_hidden(c))
        .collect();
    const MAX: usize = 160;
    crate::chars::cut(&clean, MAX, " …")
}

/// `text` as a Markdown code span, whatever backticks it holds.
fn code_span(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{text}{pad}{fence}")
}

fn grade(check: Check) -> (Severity, Confidence) {
    match check {
        Check::Secret(rule) if rule == redact::GENERIC => (Severity::Advisory, Confidence::Medium),
        Check::Secret(_)
        | Check::Conflict
        | Check::Bidi
        | Check::Tags
        | Check::Breakpoint
        | Check::SetTrace(_)
        | Check::Debugger => (Severity::Blocking, Confidence::High),
        Check::Invisible => (Severity::Advisory, Confidence::Medium),
        Check::Dbg => (Severity::Advisory, Confidence::High),
        Check::ConsoleLog => (Severity::Advisory, Confidence::Medium),
    }
}

/// Groups hits into findings: one per check in a file, placed on its first run of lines and
/// naming the others (see the module documentation).
fn group(path: &str, hits: Vec<Hit>) -> Vec<RawFinding> {
    let mut groups: Vec<(Check, Vec<Hit>)> = Vec::new();
    for h in hits {
        match groups.iter_mut().find(|(c, _)| *c == h.check) {
            Some((_, members)) => members.push(h),
            None => groups.push((h.check, vec![h])),
        }
    }
    groups.sort_by_key(|(check, members)| (members[0].hunk, members[0].line, *check));
    groups
        .into_iter()
        .map(|(check, members)| finding(path, check, &members))
        .collect()
}

fn finding(path: &str, check: Check, members: &[Hit]) -> RawFinding {
    // The first run: a conflict's markers in its first hunk, else the first lines in a row.
    let mut run: Vec<u32> = Vec::new();
    let mut others: Vec<u32> = Vec::new();
    for h in members {
        let joins = match run.last() {
            None => true,
            Some(_) if !others.is_empty() => false,
            Some(&last) => {
                h.hunk == members[0].hunk
                    && (check == Check::Conflict || last == h.line || last + 1 == h.line)
            }
        };
        let to = if joins { &mut run } else { &mut others };
        if to.last() != Some(&h.line) {
            to.push(h.line);
        }
    }
    let (first, last) = (run[0], run[run.len() - 1]);
    let (line, start_line) = if last > first {
        (last, Some(first))
    } else {
        (first, None)
    };
    let (severity, confidence) = grade(check);
    let at = Where::new(&run, &others);
    let (title, body) = describe(check, members, &at);
    RawFinding {
        path: path.to_owned(),
        line,
        start_line,
        side: Side::Right,
        severity,
        confidence,
        title,
        body,
        quote: None,
        suggestion: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::tests::{ALNUM, all_rules, fake, rand};

    fn review_patch(patch: &str) -> LensResponse {
        let diff =
            Diff::parse(patch).unwrap_or_else(|e| panic!("test diff does not parse: {e}\n{patch}"));
        review(&diff)
    }

    /// A diff adding the file `path` with `lines`.
    fn added(path: &str, lines: &[&str]) -> String {
        let mut out = format!(
            "diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n\
             +++ b/{path}\n@@ -0,0 +1,{} @@\n",
            lines.len()
        );
        for l in lines {
            out.push('+');
            out.push_str(l);
            out.push('\n');
        }
        out
    }

    fn titles(r: &LensResponse) -> Vec<(String, u32, String)> {
        r.findings
            .iter()
            .map(|f| (f.path.clone(), f.line, f.title.clone()))
            .collect()
    }

    fn only(r: &LensResponse) -> &RawFinding {
        assert_eq!(r.findings.len(), 1, "{:#?}", r.findings);
        &r.findings[0]
    }

    #[test]
    fn demo_patch() {
        let r = review_patch(include_str!("../../examples/demo.patch"));
        let expected = [
            ("app/worker.py", 38, "Leftover breakpoint() call"),
            (
                "config/production.toml",
                14,
                "Unresolved merge-conflict markers",
            ),
            (
                "config/production.toml",
                23,
                "Committed secret: AWS access key ID (aws-access-token)",
            ),
            ("src/orders.rs", 34, "Leftover dbg! macro"),
            (
                "src/orders.rs",
                59,
                "Bidirectional control character (Trojan Source)",
            ),
            ("web/src/cart.js", 13, "Leftover console.log call"),
        ];
        let expected: Vec<_> = expected
            .iter()
            .map(|(p, l, t)| (p.to_string(), *l, t.to_string()))
            .collect();
        assert_eq!(titles(&r), expected);
        let conflict = &r.findings[1];
        assert_eq!(conflict.start_line, Some(9));
        assert!(r.findings[4].body.contains("U+202E RIGHT-TO-LEFT OVERRIDE"));
        let json = serde_json::to_string(&r).unwrap_or_default();
        assert!(!json.contains("FAKEDEMO7KEY2ABC"), "{json}");
        assert!(json.contains("[REDACTED aws-access-token]"));
    }

    #[test]
    fn every_secret_rule_is_reported_masked() {
        for rule in all_rules() {
            for seed in 0..3 {
                let secret = fake(rule, seed);
                let line = match rule {
                    // One diff line holds the BEGIN line only.
                    "private-key" => secret.lines().next().unwrap_or_default().to_owned(),
                    _ => format!("TOKEN=\"{secret}\""),
                };
                let r = review_patch(&added("deploy/app.env", &[&line]));
                let f = only(&r);
                assert_eq!(f.line, 1);
                assert_eq!(
                    (f.severity, f.confidence),
                    (Severity::Blocking, Confidence::High)
                );
                assert!(
                    f.title.starts_with("Committed secret: ")
                        && f.title.ends_with(&format!("({rule})"))
                );
                assert!(f.body.contains(&format!("[REDACTED {rule}]")), "{}", f.body);
                let json = serde_json::to_string(&r).unwrap_or_default();
                if rule != "private-key" {
                    assert!(!json.contains(&secret[..secret.len() / 2]), "{json}");
                }
            }
        }
    }

    #[test]
    fn private_key_block_is_one_finding_and_never_shown() {
        let key = fake("private-key", 8);
        let lines: Vec<&str> = key.lines().collect();
        let r = review_patch(&added("certs/server.key", &lines));
        let f = only(&r);
        assert_eq!(
            (f.line, f.title.as_str()),
            (1, "Committed secret: private key (private-key)")
        );
        let json = serde_json::to_string(&r).unwrap_or_default();
        for body in &lines[1..lines.len() - 1] {
            assert!(!json.contains(body));
        }
    }

    #[test]
    fn example_aws_key_and_placeholders_are_not_reported() {
        let r = review_patch(&added(
            "docs/setup.md",
            &[
                "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
                "GITHUB_TOKEN=${GITHUB_TOKEN}",
                "api_key: \"{{ secrets.API_KEY }}\"",
                "password = changeme",
            ],
        ));
        assert_eq!(r.findings, vec![]);
    }

    #[test]
    fn generic_secret_is_advisory_and_skipped_in_lockfiles() {
        let value = format!("{}9z", rand(ALNUM, 24, 5));
        let line = format!("DB_PASSWORD = \"{value}\"");
        let r = review_patch(&added("settings.py", &[&line]));
        let f = only(&r);
        assert_eq!(f.title, "Possible committed secret (generic-api-key)");
        assert_eq!(
            (f.severity, f.confidence),
            (Severity::Advisory, Confidence::Medium)
        );
        assert!(
            !serde_json::to_string(&r)
                .unwrap_or_default()
                .contains(&value)
        );
        assert_eq!(
            review_patch(&added("Cargo.lock", &[&line])).findings,
            vec![]
        );
    }

    #[test]
    fn removed_and_context_lines_are_not_reported() {
        let secret = fake("github-pat", 3);
        let patch = format!(
            "diff --git a/app.js b/app.js\nindex 1111111..2222222 100644\n--- a/app.js\n+++ b/app.js\n\
             @@ -1,5 +1,4 @@\n const token = \"{secret}\";\n-console.log(token);\n-debugger;\n \
             dbg!(x);\n+const ok = 1;\n <<<<<<< HEAD\n"
        );
        assert_eq!(review_patch(&patch).findings, vec![]);
    }

    #[test]
    fn conflict_markers() {
        let r = review_patch(&added(
            "src/lib.rs",
            &[
                "fn a() {}",
                "<<<<<<< HEAD",
                "let x = 1;",
                "||||||| base",
                "let x = 0;",
                "=======",
                "let x = 2;",
                ">>>>>>> topic",
                "",
            ],
        ));
        let f = only(&r);
        assert_eq!((f.start_line, f.line), (Some(2), 8));
        assert_eq!(f.title, "Unresolved merge-conflict markers");
        assert!(
            f.body
                .contains("`<<<<<<<`, `|||||||`, `=======` and `>>>>>>>`"),
            "{}",
            f.body
        );
        // A Markdown or RST underline alone is not a marker.
        let md = review_patch(&added(
            "README.md",
            &["Title", "=======", "", "text <<<<<<< inline"],
        ));
        assert_eq!(md.findings, vec![]);
    }

    #[test]
    fn bidi_tags_and_invisible_characters() {
        let r = review_patch(&added(
            "src/auth.rs",
            &[
                "\u{FEFF}// the BOM at file start is fine",
                "let admin = false; // \u{202E} \u{2066}check\u{2069}",
                "let name = \"a\u{200B}b\";",
                "// family: \u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467} and flag \u{1F3F4}\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}",
                "let note = \"\u{E0069}\u{E0067}\u{E006E}\";",
                "let soft = \"co\u{00AD}op\";",
            ],
        ));
        let got: Vec<_> = r
            .findings
            .iter()
            .map(|f| {
                (
                    f.line,
                    f.start_line,
                    f.title.as_str(),
                    f.severity,
                    f.confidence,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    2,
                    None,
                    "Bidirectional control character (Trojan Source)",
                    Severity::Blocking,
                    Confidence::High
                ),
                (
                    3,
                    None,
                    "Invisible Unicode character",
                    Severity::Advisory,
                    Confidence::Medium
                ),
                (
                    5,
                    None,
                    "Hidden Unicode tag characters",
                    Severity::Blocking,
                    Confidence::High
                ),
            ]
        );
        assert!(r.findings[0].body.contains(
            "U+202E RIGHT-TO-LEFT OVERRIDE, U+2066 LEFT-TO-RIGHT ISOLATE and U+2069 POP DIRECTIONAL ISOLATE"
        ));
        // Lines 3 and 6 are one finding: one per rule per file, naming the other line.
        assert!(
            r.findings[1].body.starts_with(
                "Line 3 and 1 more line (6) contain U+200B ZERO WIDTH SPACE and U+00AD SOFT HYPHEN."
            ),
            "{}",
            r.findings[1].body
        );
        assert!(r.findings[2].body.contains("3 Unicode tag characters"));
        // A BOM that is not at the start of the file is reported.
        let bom = review_patch(&added("a.py", &["x", "\u{FEFF}y"]));
        assert_eq!(only(&bom).line, 2);
    }

    #[test]
    fn hidden_characters_only_where_a_program_reads_them() {
        let titles_of = |path: &str, lines: &[&str]| -> Vec<String> {
            let r = review_patch(&added(path, lines));
            r.findings.iter().map(|f| f.title.clone()).collect()
        };
        // A Hebrew catalog's marks, a Persian zero-width non-joiner, Markdown: how people write.
        let catalog = [
            "msgid \"Save\"",
            "msgstr \"\u{200F}\u{05E9}\u{05DE}\u{05D5}\u{05E8}\u{200E}\"",
            "msgstr \"\u{0645}\u{06CC}\u{200C}\u{0634}\u{0648}\u{062F}\"",
        ];
        for path in [
            "django/conf/locale/he/LC_MESSAGES/django.po",
            "ios/he.lproj/Localizable.strings",
            "l10n/he.xliff",
            "docs/intro.md",
        ] {
            assert_eq!(titles_of(path, &catalog), Vec::<String>::new(), "{path}");
        }
        // Drawing data that git diffs as text: nothing, whatever it holds.
        for path in ["art/logo.ai", "img/icon.svg", "fig/plot.eps"] {
            assert_eq!(
                titles_of(path, &["%\u{200B}\u{202E}\u{E0041}"]),
                Vec::<String>::new(),
                "{path}"
            );
        }
        // Tag characters still count in prose: they smuggle text to AI readers.
        assert_eq!(
            titles_of("AGENTS.md", &["Be kind.\u{E0049}\u{E0067}\u{E006E}"]),
            ["Hidden Unicode tag characters"]
        );
        // In code, a bidi control inside a string or a comment stays blocking.
        let r = review_patch(&added(
            "src/auth.js",
            &["const role = \"user\u{202E} \u{2066}// admin\u{2069}\";"],
        ));
        assert_eq!(
            (only(&r).title.as_str(), only(&r).severity),
            (
                "Bidirectional control character (Trojan Source)",
                Severity::Blocking
            )
        );
        // Config a program parses is code.
        assert_eq!(
            titles_of("config/app.json", &["{\"key\": \"a\u{200B}b\"}"]),
            ["Invisible Unicode character"]
        );
    }

    #[test]
    fn a_file_in_a_legacy_encoding_has_no_invisible_characters_but_keeps_bidi() {
        // Shift JIS text whose bytes D8 82 (an ordinary pair there) read as U+0602 in UTF-8,
        // with one byte (0x82 alone) that is not UTF-8 at all.
        let mut patch = added("tests/SHIFT_JIS/page.xml", &["<p>x</p>", "<p>y</p>"]).into_bytes();
        let at = patch.len() - "y</p>\n".len();
        patch.splice(at..at, [0xD8, 0x82, 0x82, b' ']);
        let r = review(&Diff::parse_static_bytes(patch.leak()).unwrap());
        assert_eq!(r.findings, vec![]);
        // A bidi control in such a file is still found.
        let mut patch = added("src/legacy.c", &["/* x */", "int y;"]).into_bytes();
        let at = patch.len() - "int y;\n".len();
        patch.splice(at..at, [0x82, b' ', 0xE2, 0x80, 0xAE, b' ']);
        let r = review(&Diff::parse_static_bytes(patch.leak()).unwrap());
        assert_eq!(
            only(&r).title,
            "Bidirectional control character (Trojan Source)"
        );
    }

    #[test]
    fn no_debug_statement_findings_in_tests_or_examples() {
        for (path, line) in [
            ("tests/test_jobs.py", "    breakpoint()"),
            ("app/test_views.py", "    import pdb; pdb.set_trace()"),
            ("examples/demo.rs", "    dbg!(x);"),
            ("web/__tests__/view.test.js", "  debugger;"),
            ("examples/client.js", "console.log(reply);"),
        ] {
            assert_eq!(
                review_patch(&added(path, &[line])).findings,
                vec![],
                "{path}"
            );
        }
        // A script prints on purpose, but a breakpoint there still stops it.
        assert_eq!(
            titles(&review_patch(&added(
                "scripts/release.py",
                &["breakpoint()"]
            ))),
            [(
                "scripts/release.py".to_owned(),
                1,
                "Leftover breakpoint() call".to_owned()
            )]
        );
    }

    #[test]
    fn one_finding_per_rule_per_file() {
        // An Illustrator-like flood, in code: 50 lines apart, each with a zero-width space.
        let lines: Vec<String> = (0..50)
            .flat_map(|i| [format!("let s{i} = \"a\u{200B}b\";"), String::from("x();")])
            .collect();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let r = review_patch(&added("src/flood.rs", &lines));
        let f = only(&r);
        assert_eq!((f.line, f.start_line), (1, None));
        assert!(
            f.body.starts_with(
                "Line 1 and 49 more lines (3, 5, 7, 9, 11, 13, 15, 17, 19, 21, …) contain"
            ),
            "{}",
            f.body
        );
        // Hits in other hunks join too; another rule, or another file, is its own finding.
        let two_hunks = "diff --git a/a.js b/a.js\nindex 1111111..2222222 100644\n--- a/a.js\n+++ b/a.js\n\
                         @@ -1,1 +1,3 @@\n x\n+debugger;\n+debugger;\n@@ -40,1 +42,2 @@\n y\n+debugger;\n";
        let mut patch = two_hunks.to_owned();
        patch.push_str(&added("b.js", &["debugger;", "console.log(1);"]));
        let got: Vec<_> = review_patch(&patch)
            .findings
            .iter()
            .map(|f| {
                (
                    f.path.clone(),
                    f.start_line,
                    f.line,
                    f.body[..30].to_owned(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "a.js".to_owned(),
                    Some(2),
                    3,
                    "Lines 2 to 3 and 1 more line (".to_owned()
                ),
                (
                    "b.js".to_owned(),
                    None,
                    1,
                    "Line 1 adds a `debugger` state".to_owned()
                ),
                (
                    "b.js".to_owned(),
                    None,
                    2,
                    "Line 2 calls `console.log`. Le".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn rust_dbg() {
        let r = review_patch(&added(
            "src/main.rs",
            &[
                "let a = dbg!(compute());",
                "// dbg!(a);",
                "let s = \"dbg!(\";",
                "let c = '\"'; dbg!(c);",
                "my_dbg!(x);",
            ],
        ));
        let got: Vec<_> = r
            .findings
            .iter()
            .map(|f| (f.line, f.title.as_str(), f.severity, f.confidence))
            .collect();
        assert_eq!(
            got,
            vec![(
                1,
                "Leftover dbg! macro",
                Severity::Advisory,
                Confidence::High
            )]
        );
        assert!(
            r.findings[0]
                .body
                .starts_with("Line 1 and 1 more line (4) call `dbg!`"),
            "{}",
            r.findings[0].body
        );
        assert_eq!(
            review_patch(&added("notes.py", &["dbg!(x)"])).findings,
            vec![]
        );
    }

    #[test]
    fn console_log_runs_collapse() {
        let mut lines = vec!["function f(x) {"];
        lines.extend(std::iter::repeat_n("  console.log(x);", 30));
        lines.push("}");
        let r = review_patch(&added("web/app.ts", &lines));
        let f = only(&r);
        assert_eq!((f.start_line, f.line), (Some(2), 31));
        assert_eq!(
            (f.severity, f.confidence),
            (Severity::Advisory, Confidence::Medium)
        );
        assert!(f.body.starts_with("Lines 2 to 31 call `console.log`"));

        let r = review_patch(&added(
            "web/app.js",
            &[
                "console.log(1);",
                "// console.log(2);",
                "const s = 'console.log(3)';",
                "myconsole.log(4);",
                " * console.log(5)",
                "console.log (6);",
            ],
        ));
        let f = only(&r);
        assert_eq!((f.start_line, f.line), (None, 1));
        assert!(
            f.body.starts_with("Line 1 and 1 more line (6) call"),
            "{}",
            f.body
        );

        for path in [
            "web/tests/app.js",
            "scripts/build.mjs",
            "src/app.test.ts",
            "lib/app.py",
        ] {
            assert_eq!(
                review_patch(&added(path, &["console.log(1);"])).findings,
                vec![],
                "{path}"
            );
        }
    }

    #[test]
    fn js_debugger() {
        let r = review_patch(&added(
            "src/view.vue",
            &[
                "  debugger;",
                "  if (x) { debugger }",
                "const o = { debugger: true };",
                "// debugger;",
                "debugger.attach();",
            ],
        ));
        let f = only(&r);
        assert_eq!(
            (f.start_line, f.line, f.title.as_str()),
            (Some(1), 2, "Leftover debugger statement")
        );
        assert_eq!(
            (f.severity, f.confidence),
            (Severity::Blocking, Confidence::High)
        );
    }

    #[test]
    fn python_breakpoints() {
        let r = review_patch(&added(
            "app/jobs.py",
            &[
                "    breakpoint()",
                "def breakpoint(self):",
                "    self.breakpoint()",
                "    # breakpoint()",
                "import pdb; pdb.set_trace()",
                "",
                "    ipdb.set_trace()",
                "    print(\"pdb.set_trace()\")",
            ],
        ));
        assert_eq!(
            titles(&r),
            vec![
                (
                    "app/jobs.py".to_owned(),
                    1,
                    "Leftover breakpoint() call".to_owned()
                ),
                (
                    "app/jobs.py".to_owned(),
                    5,
                    "Leftover pdb.set_trace() call".to_owned()
                ),
                (
                    "app/jobs.py".to_owned(),
                    7,
                    "Leftover ipdb.set_trace() call".to_owned()
                ),
            ]
        );
        assert_eq!(
            review_patch(&added("a.rs", &["breakpoint();"])).findings,
            vec![]
        );
    }

    #[test]
    fn variation_selectors_only_where_they_carry_data() {
        let flagged = |line: &str| {
            review_patch(&added("a.js", &[line]))
                .findings
                .iter()
                .any(|f| f.title == "Invisible Unicode character")
        };
        // An emoji or an ideograph with its selector is how such text is written.
        assert!(!flagged("const ok = \"\u{2764}\u{FE0F}\";"));
        assert!(!flagged("const kanji = \"\u{845B}\u{E0100}\";"));
        // After ASCII, or a run of them (variation-selector smuggling), they carry data.
        assert!(flagged("const a = \"a\u{FE0F}\";"));
        assert!(flagged(
            "const b = \"\u{1F600}\u{E0100}\u{E0101}\u{E0102}\";"
        ));
        assert!(flagged("let filler = \"\u{3164}\";"));
    }

    #[test]
    fn findings_use_new_line_numbers_in_later_hunks() {
        let patch = "diff --git a/m.py b/m.py\nindex 1111111..2222222 100644\n--- a/m.py\n+++ b/m.py\n\
                     @@ -1,2 +1,3 @@\n a = 1\n+b = 2\n c = 3\n@@ -40,3 +41,3 @@ def f():\n x = 1\n-y = 2\n\
                     +breakpoint()\n z = 3\n";
        let r = review_patch(patch);
        let f = only(&r);
        assert_eq!((f.line, f.side), (42, Side::Right));
    }

    #[test]
    fn a_search_begun_before_the_parse_finds_what_the_files_search_finds() {
        // Large enough for the helper thread, with keywords in many files and pieces.
        let mut patch = String::new();
        let mut n = 0;
        while patch.len() < crate::par::PARALLEL_FROM_BYTES + 4096 {
            let secret = fake("github-pat", n % 7);
            let body = format!(
                "const token = \"{secret}\";\napi_key = \"Zx9qW3rT8yU1iO4p\"\nplain line {n}"
            );
            let lines: Vec<&str> = body.lines().collect();
            patch.push_str(&added(&format!("src/f{n}.js"), &lines));
            n += 1;
        }
        let bytes: &'static [u8] = patch.into_bytes().leak();
        let search = search_keywords(bytes);
        let diff = Diff::parse_static_bytes(bytes).unwrap();
        let early = remember_secrets(&diff, Some(search));
        let late = remember_secrets(&diff, None);
        assert_eq!(early.0, late.0);
        assert!(early.0.iter().all(|starts| !starts.is_empty()));
        // A search of other bytes is not used.
        let other = search_keywords(b"token = \"Zx9qW3rT8yU1iO4p\"\n");
        assert_eq!(remember_secrets(&diff, Some(other)).0, late.0);
    }

    #[test]
    fn big_diff_is_fast() {
        let line = "    let value = compute(config.timeout, &items[index]); // keep it simple";
        let lines = vec![line; 100_000];
        let patch = added("src/big.rs", &lines);
        let start = std::time::Instant::now();
        assert_eq!(review_patch(&patch).findings, vec![]);
        // Generous: debug builds are slow; release handles this in milliseconds.
        assert!(
            start.elapsed() < std::time::Duration::from_secs(10),
            "{:?}",
            start.elapsed()
        );
    }
}
