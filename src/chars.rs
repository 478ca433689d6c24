//! Text cut to a number of characters: the one place that finds where the cut falls, always on
//! a character boundary, so no caller slices a string by hand.
//!
//! Counts are in `char`s (Unicode scalar values). Byte budgets (a tool result's size cap) are
//! another idea and stay with their callers.

/// The first `max` characters of `text` when it has more than `max`; `None` when nothing
/// would be cut.
pub fn cut_head(text: &str, max: usize) -> Option<&str> {
    text.char_indices().nth(max).map(|(at, _)| &text[..at])
}

/// The first `max` characters of `text` (all of it when it is no longer).
pub fn head(text: &str, max: usize) -> &str {
    cut_head(text, max).unwrap_or(text)
}

/// `text` cut to its first `max` characters, followed by `mark` when anything was cut (the
/// mark is not counted in `max`).
pub fn cut(text: &str, max: usize, mark: &str) -> String {
    match cut_head(text, max) {
        Some(kept) => format!("{kept}{mark}"),
        None => text.to_owned(),
    }
}

/// Like [`cut_head`], but ending at the last line break when there is one in the kept part's
/// second half, and without trailing whitespace: a cut that reads as a whole paragraph.
pub fn cut_at_line(text: &str, max: usize) -> Option<&str> {
    let kept = cut_head(text, max)?;
    let end = match kept.rfind('\n') {
        Some(nl) if nl >= kept.len() / 2 => nl,
        _ => kept.len(),
    };
    Some(kept[..end].trim_end())
}

/// `text` in at most `max` characters all told: when it is longer, its first `max - 1` and `…`.
pub fn fit(text: &str, max: usize) -> String {
    if cut_head(text, max).is_none() {
        return text.to_owned();
    }
    match max.checked_sub(1) {
        Some(kept) => format!("{}…", head(text, kept)),
        None => String::new(),
    }
}

/// Like [`fit`], keeping the end: `…` and the last `max - 1` characters.
fn fit_tail(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    match max.checked_sub(1) {
        Some(kept) => {
            let at = text
                .char_indices()
                .nth(count - kept)
                .map_or(text.len(), |(at, _)| at);
            format!("…{}", &text[at..])
        }
        None => String::new(),
    }
}

/// `text` on one line: whitespace runs (line breaks included) become one space, control
/// characters are dropped, and ends are trimmed.
fn flat(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            space = !out.is_empty();
        } else if !c.is_control() {
            if space {
                out.push(' ');
                space = false;
            }
            out.push(c);
        }
    }
    out
}

/// `text` on one line (see [`flat`]) in at most `max` characters, its start kept.
pub fn one_line(text: &str, max: usize) -> String {
    fit(&flat(text), max)
}

/// `text` on one line in at most `max` characters, its end kept (a child's last words).
pub fn one_line_tail(text: &str, max: usize) -> String {
    fit_tail(&flat(text), max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_count_characters_and_fall_on_their_boundaries() {
        // é is two bytes, 😀 four: a byte count would cut inside them.
        assert_eq!(cut_head("ééé", 2), Some("éé"));
        assert_eq!(cut_head("😀😀😀", 1), Some("😀"));
        assert_eq!(head("a😀b", 2), "a😀");
        assert_eq!(cut("😀😀😀", 2, "…"), "😀😀…");
        assert_eq!(fit("ééééé", 3), "éé…");
        assert_eq!(one_line_tail("😀😀😀😀", 3), "…😀😀");
    }

    #[test]
    fn text_of_exactly_max_characters_is_not_cut() {
        assert_eq!(cut_head("abc", 3), None);
        assert_eq!(head("abc", 3), "abc");
        assert_eq!(cut("😀😀😀", 3, " (cut)"), "😀😀😀");
        assert_eq!(fit("abc", 3), "abc");
        assert_eq!(one_line_tail("abc", 3), "abc");
        assert_eq!(cut_head("abcd", 3), Some("abc"));
        assert_eq!(fit("abcd", 3), "ab…");
        assert_eq!(one_line_tail("abcd", 3), "…cd");
    }

    #[test]
    fn zero_keeps_nothing() {
        assert_eq!(cut_head("", 0), None);
        assert_eq!(cut_head("a", 0), Some(""));
        assert_eq!(head("😀", 0), "");
        assert_eq!(cut("a", 0, "…"), "…");
        // At most zero characters all told: not even the ellipsis fits.
        assert_eq!(fit("a", 0), "");
        assert_eq!(one_line_tail("a", 0), "");
        assert_eq!(fit("", 0), "");
        assert_eq!(fit("ab", 1), "…");
    }

    #[test]
    fn a_cut_at_a_line_takes_a_break_in_the_second_half() {
        assert_eq!(cut_at_line("short", 10), None);
        assert_eq!(cut_at_line("one two\nthree four", 12), Some("one two"));
        // The only break is in the first half: cut where the count falls.
        assert_eq!(cut_at_line("a\nbcdefghij", 8), Some("a\nbcdefg"));
        assert_eq!(cut_at_line("ab  \ncdef", 8), Some("ab"));
    }

    #[test]
    fn one_line_folds_whitespace_and_drops_controls() {
        assert_eq!(one_line(" a \n b\t", 10), "a b");
        assert_eq!(one_line("a\u{1b}[31mb \u{7} c", 20), "a[31mb c");
        assert_eq!(one_line("x".repeat(20).as_str(), 10), "xxxxxxxxx…");
        assert_eq!(
            one_line_tail(&format!("{}END", "x".repeat(20)), 10),
            "…xxxxxxEND"
        );
    }
}
