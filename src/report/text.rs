//! Text-output helpers every renderer shares: word wrapping to the terminal's width and the
//! few ANSI colours (knee, overload, warnings) a terminal gets. Pure string functions; the
//! width and whether to colour are chosen once in config/ (`Format::Text`). No IO.
//! Imports only: nothing.

/// Word-wrap `text` to `width` columns, the first line after `first`, the others after `rest`.
/// A word longer than a line stays whole (never cut mid-word).
pub fn wrap(text: &str, first: &str, rest: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut empty = true;
    for w in text.split(' ') {
        if !empty && line.chars().count() + 1 + w.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = rest.to_string();
            empty = true;
        }
        if !empty {
            line.push(' ');
        }
        line.push_str(w);
        empty = false;
    }
    out.push_str(&line);
    out.push('\n');
    out
}

/// Each line of `text` (which may hold several) wrapped to `width`, continuation lines
/// indented by `indent` spaces more than the line's own indentation.
pub fn wrap_lines(text: &str, width: usize, indent: usize) -> String {
    text.lines()
        .map(|l| {
            let body = l.trim_start();
            let lead = &l[..l.len() - body.len()];
            wrap(body, lead, &format!("{lead}{}", " ".repeat(indent)), width)
        })
        .collect()
}

/// What a coloured piece of text means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paint {
    /// The optimal concurrency: green.
    Knee,
    /// Overloaded levels: red.
    Overload,
    /// Warnings: yellow.
    Warning,
}

/// `s` in the colour for `p` when `color`, else unchanged. Whole lines only, so widths and
/// wrapping are computed on the plain text.
pub fn paint(s: &str, p: Paint, color: bool) -> String {
    if !color {
        return s.to_string();
    }
    let code = match p {
        Paint::Knee => "32",
        Paint::Overload => "31",
        Paint::Warning => "33",
    };
    format!("\x1b[{code}m{s}\x1b[0m")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_word_boundaries() {
        let s = wrap("aaa bbb ccc ddd", "> ", "  ", 9);
        assert_eq!(s, "> aaa bbb\n  ccc ddd\n");
        assert_eq!(wrap("abcdefghijkl x", "", "", 5), "abcdefghijkl\nx\n");
        let s = wrap_lines("  one two three\nfour", 10, 2);
        assert_eq!(s, "  one two\n    three\nfour\n");
    }

    #[test]
    fn paints_only_when_asked() {
        assert_eq!(paint("knee", Paint::Knee, false), "knee");
        assert_eq!(paint("x", Paint::Overload, true), "\x1b[31mx\x1b[0m");
    }
}
