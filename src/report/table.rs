//! One table model rendered as aligned text, Markdown or CSV, shared by every command so the
//! three formats always carry the same columns. Returns strings; does no IO.
//! Imports only: report/text.rs, units.

/// A table: a header row and data rows of preformatted cells. Numeric columns are
/// right-aligned in text and Markdown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Per column: true to right-align (numbers). Missing entries mean left-aligned.
    pub right: Vec<bool>,
}

impl Table {
    pub fn new<S: Into<String>>(headers: impl IntoIterator<Item = S>) -> Self {
        let headers: Vec<String> = headers.into_iter().map(Into::into).collect();
        let right = (0..headers.len()).map(|i| i > 0).collect();
        Table {
            headers,
            rows: Vec::new(),
            right,
        }
    }

    pub fn push<S: Into<String>>(&mut self, row: impl IntoIterator<Item = S>) {
        self.rows.push(row.into_iter().map(Into::into).collect());
    }

    fn widths(&self) -> Vec<usize> {
        let mut w: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, c) in row.iter().enumerate() {
                if i < w.len() {
                    w[i] = w[i].max(c.chars().count());
                }
            }
        }
        w
    }

    fn pad(&self, i: usize, cell: &str, width: usize) -> String {
        crate::units::pad(cell, width, self.right.get(i).copied().unwrap_or(false))
    }

    /// Aligned plain text, columns separated by two spaces, no trailing spaces.
    pub fn to_text(&self) -> String {
        let w = self.widths();
        let mut out = String::new();
        for row in std::iter::once(&self.headers).chain(self.rows.iter()) {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(i, c)| self.pad(i, c, w.get(i).copied().unwrap_or(0)))
                .collect();
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
        }
        out
    }

    /// The named columns only, in the order given (names the table lacks are skipped): the
    /// narrow view of a wide table, cells unchanged.
    pub fn select(&self, names: &[&str]) -> Table {
        let idx: Vec<usize> = names
            .iter()
            .filter_map(|n| self.headers.iter().position(|h| h == n))
            .collect();
        let pick = |row: &Vec<String>| -> Vec<String> {
            idx.iter()
                .map(|&i| row.get(i).cloned().unwrap_or_default())
                .collect()
        };
        Table {
            headers: pick(&self.headers),
            rows: self.rows.iter().map(pick).collect(),
            right: idx
                .iter()
                .map(|&i| self.right.get(i).copied().unwrap_or(false))
                .collect(),
        }
    }

    /// Aligned text as [`Table::to_text`], except that a last column of words (left-aligned:
    /// notes) wraps under itself at word boundaries so no line passes `width`, and a data row
    /// `paint(row index)` names is coloured when `color` (widths count the plain text).
    pub fn to_text_fit(
        &self,
        width: usize,
        color: bool,
        paint: impl Fn(usize) -> Option<super::text::Paint>,
    ) -> String {
        let last = self.headers.len().saturating_sub(1);
        let wrap_last = !self.right.get(last).copied().unwrap_or(true);
        let w = self.widths();
        let mut out = String::new();
        for (n, row) in std::iter::once(&self.headers)
            .chain(self.rows.iter())
            .enumerate()
        {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(i, c)| self.pad(i, c, w.get(i).copied().unwrap_or(0)))
                .collect();
            let mut text = cells.join("  ").trim_end().to_string();
            if wrap_last && n > 0 && text.chars().count() > width && row.len() > last {
                let lead: usize = w[..last].iter().map(|x| x + 2).sum();
                if lead + 12 <= width {
                    let head = cells[..last].join("  ");
                    let wrapped = super::text::wrap(
                        &row[last],
                        &format!("{head}  "),
                        &" ".repeat(lead),
                        width,
                    );
                    text = wrapped.trim_end().to_string();
                }
            }
            let text = match (n, color) {
                (0, _) | (_, false) => text,
                (n, true) => match paint(n - 1) {
                    Some(p) => text
                        .lines()
                        .map(|l| super::text::paint(l, p, true))
                        .collect::<Vec<_>>()
                        .join("\n"),
                    None => text,
                },
            };
            out.push_str(&text);
            out.push('\n');
        }
        out
    }

    /// A GitHub-flavoured Markdown table.
    pub fn to_markdown(&self) -> String {
        let w = self.widths();
        let esc = |s: &str| s.replace('|', "\\|");
        let mut out = String::new();
        let line = |row: &Vec<String>| {
            let cells: Vec<String> = row
                .iter()
                .enumerate()
                .map(|(i, c)| self.pad(i, &esc(c), w.get(i).copied().unwrap_or(0)))
                .collect();
            format!("| {} |\n", cells.join(" | "))
        };
        out.push_str(&line(&self.headers));
        let seps: Vec<String> = w
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let n = n.max(3);
                if self.right.get(i).copied().unwrap_or(false) {
                    format!("{}:", "-".repeat(n - 1))
                } else {
                    "-".repeat(n)
                }
            })
            .collect();
        out.push_str(&format!("| {} |\n", seps.join(" | ")));
        for row in &self.rows {
            out.push_str(&line(row));
        }
        out
    }

    /// RFC 4180 CSV: fields with a comma, quote or newline are quoted.
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        for row in std::iter::once(&self.headers).chain(self.rows.iter()) {
            let cells: Vec<String> = row.iter().map(|c| csv_field(c)).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        out
    }
}

/// One CSV cell (RFC 4180): quoted, with its quotes doubled, when it holds a comma, a quote or
/// a line break.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Table {
        let mut t = Table::new(["device", "r/s", "note"]);
        t.right[2] = false;
        t.push(["nvme0n1", "7612.80", "a, b"]);
        t.push(["sda", "1.00", "say \"hi\""]);
        t
    }

    #[test]
    fn narrow_selects_and_wraps_the_notes() {
        let mut t = Table::new(["a", "b", "note"]);
        t.right[2] = false;
        t.push(["1", "22", "knee, linear from here"]);
        let n = t.select(&["a", "note"]);
        assert_eq!(n.headers, ["a", "note"]);
        let s = n.to_text_fit(17, false, |_| None);
        assert_eq!(s, "a  note\n1  knee, linear\n   from here\n");
        let s = n.to_text_fit(80, true, |_| Some(super::super::text::Paint::Knee));
        assert!(
            s.ends_with("\x1b[32m1  knee, linear from here\x1b[0m\n"),
            "{s:?}"
        );
    }

    #[test]
    fn text_is_aligned() {
        let s = sample().to_text();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "device       r/s  note");
        assert_eq!(lines[1], "nvme0n1  7612.80  a, b");
        assert_eq!(lines[2], "sda         1.00  say \"hi\"");
    }

    #[test]
    fn a_cell_of_65536_characters_or_more_renders() {
        // Issue 28 #6: format!'s width is a u16, so such a cell panicked every text and
        // Markdown renderer ("Formatting argument out of range").
        let mut t = sample();
        let name = "d".repeat(70_000);
        t.push([name.as_str(), "2.00", "n"]);
        let text = t.to_text();
        let last = text.lines().last().unwrap();
        assert!(
            last.starts_with(&name) && last.ends_with("2.00  n"),
            "{}",
            &last[69_990..]
        );
        // Every other row is padded to the long cell's width: the r/s column ends at one place.
        let row = text.lines().nth(1).unwrap();
        let end = |l: &str, v: &str| l.find(v).unwrap() + v.len();
        assert_eq!(end(row, "7612.80"), end(last, "2.00"));
        assert!(t.to_markdown().contains(&name));
        assert!(t.to_text_fit(80, false, |_| None).contains(&name));
    }

    #[test]
    fn csv_quotes_when_needed() {
        let s = sample().to_csv();
        assert_eq!(
            s,
            "device,r/s,note\nnvme0n1,7612.80,\"a, b\"\nsda,1.00,\"say \"\"hi\"\"\"\n"
        );
    }

    #[test]
    fn markdown_aligns_numbers_right() {
        let s = sample().to_markdown();
        assert!(s.lines().nth(1).unwrap().contains("------:"), "{s}");
        assert_eq!(s.lines().count(), 4);
    }
}
