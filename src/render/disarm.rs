//! Untrusted text made inert where it is posted: no `@mention` that notifies anyone, no hidden
//! marker, no workflow command.
//!
//! GitHub notifies `@user` and `@org/team` written outside code. Reading Markdown exactly as
//! GitHub does takes a full parser, so [`prose`] reads it the safe way round: an `@` is left as
//! written only where it is certainly inside code, and everywhere else it becomes the full-width
//! `＠` ([`INERT_AT`]), which reads the same and notifies nobody — in a paragraph, a table, a
//! raw HTML block, wherever Markdown puts it. Code is certain in two places:
//!
//! - a fenced block whose opening line starts at the first column after the text's first line
//!   (such a line always opens a fence at the top level, ending any list or quote), outside
//!   anything that may be a raw HTML block, up to its closing line as CommonMark reads one;
//! - a code span on one line whose backticks no earlier backtick, backslash, `<` or table pipe
//!   can pair differently ([`Spans`]).
//!
//! Anything else that looks like code (an indented fence, a span across lines, a stray
//! backtick) is treated as prose: at worst an `@` inside real code shows as `＠`, never the other
//! way round. The text's first line is taken to follow text of reviewbot's own on its line
//! (`**Blocking.** `, `- claude failed: `), so it opens no block. A fence left open is closed
//! at the end, so what reviewbot adds after the text is never swallowed into it, and a line that
//! would open a raw HTML block running past a blank line (`<pre>`, `<script>`, `<!…>`, `<?…>`)
//! has its `<` written as `&lt;`: the blank line reviewbot puts after the text ends any other.

use std::borrow::Cow;
use std::ops::Range;

/// What an `@` that could start a mention becomes.
pub const INERT_AT: char = '＠';

/// Untrusted prose made safe to post (see the module documentation): markers escaped,
/// workflow commands broken, every `@` outside certain code made [`INERT_AT`].
pub fn prose(text: &str) -> String {
    let text = text.replace("<!--", "&lt;!--").replace("-->", "--&gt;");
    let mut out = String::with_capacity(text.len() + 16);
    let mut fence: Option<Fence> = None;
    let mut html = false;
    let mut spans = Spans::default();
    for (i, (line, end)) in lines(&text).enumerate() {
        let line = no_workflow_command(line);
        let first = i == 0;
        if let Some(f) = &fence {
            if f.closed_by(&line) {
                fence = None;
                spans = Spans::default();
            }
            out.push_str(&line);
        } else if line.trim().is_empty() {
            html = false;
            spans = Spans::default();
            out.push_str(&line);
        } else if let Some(f) = Fence::opened_by(&line).filter(|_| !first && !html) {
            fence = Some(f);
            spans = Spans::default();
            out.push_str(&line);
        } else {
            let line = if first { line } else { no_lasting_html(line) };
            html |= !first && html_block_start(&line);
            let code = if html { Vec::new() } else { spans.line(&line) };
            mentions(&line, &code, &mut out);
        }
        out.push_str(end);
    }
    if let Some(f) = fence {
        out.push('\n');
        out.push_str(&f.closer());
    }
    out
}

/// A line of untrusted text (a file's path) as an inline code span that nothing in it can end
/// early, with every `@` that could start a mention made [`INERT_AT`] all the same: the span
/// may follow untrusted text that leaves a backtick open, which would turn it inside out.
pub fn code(text: &str) -> String {
    let mut inert = String::with_capacity(text.len() + 4);
    mentions(text, &[], &mut inert);
    let longest = inert.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    // A span's content may not start or end with its own backticks; one space each side is
    // taken off again when it is shown.
    let pad = if inert.is_empty() || inert.starts_with('`') || inert.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{inert}{pad}{fence}")
}

/// Every line with a workflow command broken ([`no_workflow_command`]), nothing else changed:
/// for code shown as code.
pub fn commands(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for (line, end) in lines(text) {
        out.push_str(&no_workflow_command(line));
        out.push_str(end);
    }
    out
}

/// The lines of `text` with what ends each (`\n`, `\r\n`, `\r`, or nothing for the last):
/// Markdown and the Actions runner both take a lone `\r` for a line break.
fn lines(text: &str) -> impl Iterator<Item = (&str, &str)> {
    let mut rest = text;
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        match rest.find(['\n', '\r']) {
            Some(at) => {
                let len = if rest[at..].starts_with("\r\n") { 2 } else { 1 };
                let (line, end) = (&rest[..at], &rest[at..at + len]);
                rest = &rest[at + len..];
                Some((line, end))
            }
            None => {
                done = true;
                Some((rest, ""))
            }
        }
    })
}

/// A line starting with `::` after white space gets a `\` in front: Markdown shows `\:` as
/// `:`, the runner sees no command.
fn no_workflow_command(line: &str) -> Cow<'_, str> {
    let trimmed = line.trim_start();
    if !trimmed.starts_with("::") {
        return Cow::Borrowed(line);
    }
    let lead = line.len() - trimmed.len();
    Cow::Owned(format!("{}\\{trimmed}", &line[..lead]))
}

/// A fenced code block that is certainly one.
struct Fence {
    ch: u8,
    len: usize,
}

impl Fence {
    /// A line that certainly opens a fenced code block at the top level: three or more
    /// backticks or tildes from the first column, and no backtick in a backtick fence's info.
    fn opened_by(line: &str) -> Option<Fence> {
        let ch = *line.as_bytes().first()?;
        if ch != b'`' && ch != b'~' {
            return None;
        }
        let len = line.bytes().take_while(|&c| c == ch).count();
        if len < 3 || (ch == b'`' && line[len..].contains('`')) {
            return None;
        }
        Some(Fence { ch, len })
    }

    /// Whether `line` closes it: at most three spaces, at least as many of its character, then
    /// nothing but blanks.
    fn closed_by(&self, line: &str) -> bool {
        let rest = line.trim_start_matches(' ');
        if line.len() - rest.len() > 3 {
            return false;
        }
        let n = rest.bytes().take_while(|&c| c == self.ch).count();
        n >= self.len && rest[n..].bytes().all(|c| c == b' ' || c == b'\t')
    }

    fn closer(&self) -> String {
        char::from(self.ch).to_string().repeat(self.len)
    }
}

/// Where a line's blocks start: past white space and what opens a list item or a quote.
fn block_start(line: &str) -> usize {
    let rest = line.trim_start_matches(|c: char| {
        c.is_ascii_whitespace()
            || c.is_ascii_digit()
            || matches!(c, '>' | '-' | '+' | '*' | '.' | ')')
    });
    line.len() - rest.len()
}

/// Whether `line` may open a raw HTML block (a tag, `</`, `<!`, `<?` where its blocks start):
/// inside one, backticks are not code, and it lasts until a blank line.
fn html_block_start(line: &str) -> bool {
    let b = &line.as_bytes()[block_start(line)..];
    b.first() == Some(&b'<')
        && b.get(1)
            .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, b'/' | b'!' | b'?'))
}

/// `line` with the `<` written `&lt;` where it would open a raw HTML block that a blank line
/// does not end (`<pre`, `<script`, `<style`, `<textarea`, `<!…`, `<?…`).
fn no_lasting_html(line: Cow<'_, str>) -> Cow<'_, str> {
    let at = block_start(&line);
    let rest = line[at..].as_bytes();
    let lasting = rest.first() == Some(&b'<')
        && (matches!(rest.get(1), Some(b'!' | b'?'))
            || ["pre", "script", "style", "textarea"].iter().any(|name| {
                rest.get(1..1 + name.len())
                    .is_some_and(|n| n.eq_ignore_ascii_case(name.as_bytes()))
            }));
    if !lasting {
        return line;
    }
    Cow::Owned(format!("{}&lt;{}", &line[..at], &line[at + 1..]))
}

/// One run of backticks on a line.
#[derive(Debug, Clone, Copy)]
struct Run {
    start: usize,
    len: usize,
    /// After an odd number of backslashes: outside code its first backtick is escaped.
    escaped: bool,
}

impl Run {
    fn end(&self) -> usize {
        self.start + self.len
    }
}

/// The code spans of a block's lines that are certainly code spans, read line by line.
///
/// `free` holds while nothing before can still be open: no code span, no HTML tag or autolink
/// (the text's start, a blank line, a fence, then after each certain span). There, a run of
/// backticks opens a span that the next run as long on the same line closes, unless a table's
/// `|` lies between. Once anything is in doubt (a run with no closer on its line, an escaped
/// run, a `<` that may open a tag), the block reads on unknown: a pair of runs next to each
/// other, of a length no run since the last free place had, with no `|` or `>` between, is
/// code whatever came before — an older span is of another length and goes on past it, and a
/// tag that held the first run would end at a `>` between.
#[derive(Default)]
struct Spans {
    unknown: bool,
    /// The run lengths seen since the last free place (an escaped run, both it may have).
    seen: Vec<usize>,
}

impl Spans {
    /// The certain code spans of `line` (the text between their backticks), in order.
    fn line(&mut self, line: &str) -> Vec<Range<usize>> {
        let runs = runs(line);
        let mut code = Vec::new();
        let mut at = 0;
        let mut i = 0;
        while i < runs.len() {
            let r = runs[i];
            if !self.unknown {
                let closer = runs[i + 1..].iter().position(|c| c.len == r.len);
                match closer {
                    Some(k)
                        if !r.escaped
                            && !may_open_tag(&line[at..r.start])
                            && !line[r.end()..runs[i + 1 + k].start].contains('|') =>
                    {
                        let c = runs[i + 1 + k];
                        code.push(r.end()..c.start);
                        at = c.end();
                        i += k + 2;
                    }
                    _ => self.unknown = true,
                }
                continue;
            }
            let pair = runs.get(i + 1).filter(|c| {
                c.len == r.len
                    && !r.escaped
                    && !c.escaped
                    && !self.seen.contains(&r.len)
                    && !line[r.end()..c.start].contains(['|', '>'])
            });
            self.see(r);
            if let Some(&c) = pair {
                self.see(c);
                code.push(r.end()..c.start);
                i += 2;
            } else {
                i += 1;
            }
        }
        if !self.unknown && may_open_tag(&line[at..]) {
            self.unknown = true;
        }
        code
    }

    fn see(&mut self, r: Run) {
        self.seen.push(r.len);
        if r.escaped {
            self.seen.push(r.len - 1);
        }
    }
}

/// The runs of backticks in `line`.
fn runs(line: &str) -> Vec<Run> {
    let bytes = line.as_bytes();
    let mut runs = Vec::new();
    let mut i = 0;
    while let Some(off) = memchr::memchr(b'`', &bytes[i..]) {
        let start = i + off;
        let len = bytes[start..].iter().take_while(|&&b| b == b'`').count();
        let slashes = bytes[..start]
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        runs.push(Run {
            start,
            len,
            escaped: slashes % 2 == 1,
        });
        i = start + len;
    }
    runs
}

/// Whether `text` holds a `<` that may open an HTML tag or an autolink (which may hold
/// backticks that open no span).
fn may_open_tag(text: &str) -> bool {
    let b = text.as_bytes();
    memchr::memchr_iter(b'<', b).any(|i| {
        b.get(i + 1)
            .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, b'/' | b'!' | b'?'))
    })
}

/// `line` into `out` with every `@` outside `code` that could start a mention made
/// [`INERT_AT`]: one after the start or a character that is not a word character, before a
/// letter, a digit or an entity, as GitHub reads a mention. An entity that stands for `@`
/// (`&#64;`, `&commat;`) becomes one too.
fn mentions(line: &str, code: &[Range<usize>], out: &mut String) {
    let bytes = line.as_bytes();
    let mut spans = code.iter().peekable();
    let mut last = 0;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(span) = spans.peek() {
            if i >= span.end {
                spans.next();
                continue;
            }
            if i >= span.start {
                i = span.end;
                continue;
            }
        }
        let at = match bytes[i] {
            b'@' => {
                let before = i == 0 || !is_word(bytes[i - 1]);
                let after = bytes
                    .get(i + 1)
                    .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'&');
                (before && after).then_some(1)
            }
            b'&' => at_entity(&line[i..]),
            _ => None,
        };
        match at {
            Some(len) => {
                out.push_str(&line[last..i]);
                out.push(INERT_AT);
                i += len;
                last = i;
            }
            None => i += 1,
        }
    }
    out.push_str(&line[last..]);
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The length of the entity for `@` that `text` starts with, if it does.
fn at_entity(text: &str) -> Option<usize> {
    let end = text.find(';')?;
    let body = &text[1..end];
    let is_at =
        body.eq_ignore_ascii_case("commat") || crate::sanitize::numeric_entity(body) == Some('@');
    (is_at && end <= 10).then_some(end + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain cases are `render::tests::clean_disarms_untrusted_text`.
    #[test]
    fn mentions_outside_code_notify_nobody() {
        assert_eq!(
            prose("`a` and `@b` and ``c ` @d``"),
            "`a` and `@b` and ``c ` @d``"
        );
        assert_eq!(
            prose("&#64;alice &#x40;bob &commat;carol"),
            "＠alice ＠bob ＠carol"
        );
        assert_eq!(prose("@&#98;ob"), "＠&#98;ob");
    }

    #[test]
    fn a_stray_backtick_or_an_indented_fence_opens_no_code() {
        for text in [
            // A stray backtick: nothing closes it, so the mention is prose.
            "a stray ` then @alice",
            "`x` then a stray ` then @alice",
            // Spans across lines are not certain: a heading or a list item may split them.
            "a `\n# @alice `",
            // Indented four spaces, this is no fence.
            "text\n    ```\n@alice\n    ```",
            // A fence in a list item ends with the item.
            "- item\n  ```\n@alice\n  ```",
            // On the first line a fence follows reviewbot's own text: it is no fence.
            "```\n@alice\n```",
            // Inside a raw HTML block backticks are plain characters.
            "x\n<div>\n`@alice`\n```\n@bob\n```\n</div>",
            "x\n> <div>\n> `@alice`",
            // A tag holding a backtick, or a table's pipe, pairs backticks differently.
            "<b title=\"`\">@alice `</b>",
            "| `a | @alice` |",
            // An escaped backtick is no delimiter.
            "\\`@alice`",
            // A backtick fence's info may hold no backtick.
            "x\n```a`b\n@alice\n```",
        ] {
            let out = prose(text);
            assert!(
                !out.contains("@alice") && !out.contains("@bob"),
                "{text:?} -> {out:?}"
            );
        }
    }

    #[test]
    fn certain_code_keeps_its_at_signs() {
        for text in [
            "x\n```python\n@property\ndef f(self): ...\n```\nafter",
            "x\n~~~\n@Override\n~~~~\n",
            "see `@Override` and `@Test` and ``@x``",
            "a `b` c\nand `@d` on the next line",
            // A lone carriage return is a line break, as for Markdown.
            "x\r```\r@alice\r```",
        ] {
            let out = prose(text);
            assert!(!out.contains('＠'), "{text:?} -> {out:?}");
        }
        // A fence left open is closed, so nothing after the text falls into it.
        assert_eq!(prose("x\n````\n@a"), "x\n````\n@a\n````");
    }

    #[test]
    fn a_block_that_outlasts_a_blank_line_is_shown_as_text() {
        for (text, want) in [
            ("x\n<pre>\n@a", "x\n&lt;pre>\n＠a"),
            ("x\n- <script>", "x\n- &lt;script>"),
            ("x\n<?php", "x\n&lt;?php"),
            ("<pre>", "<pre>"),
        ] {
            assert_eq!(prose(text), want, "{text:?}");
        }
    }

    #[test]
    fn a_path_is_one_code_span_that_nothing_breaks() {
        assert_eq!(code("docs/@victim-user.md"), "`docs/＠victim-user.md`");
        assert_eq!(code("a`b``c.rs"), "```a`b``c.rs```");
        assert_eq!(code("`x`"), "`` `x` ``");
        assert_eq!(code("me@example.rs"), "`me@example.rs`");
        assert_eq!(code("@a/@b &#64;c"), "`＠a/＠b ＠c`");
    }
}
