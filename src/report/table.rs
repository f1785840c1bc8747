//! One table model rendered as aligned text, Markdown or CSV, shared by every command so the
//! three formats always carry the same columns. Returns strings; does no IO.

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
        if self.right.get(i).copied().unwrap_or(false) {
            format!("{cell:>width$}")
        } else {
            format!("{cell:<width$}")
        }
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
        let field = |s: &str| {
            if s.contains([',', '"', '\n', '\r']) {
                format!("\"{}\"", s.replace('"', "\"\""))
            } else {
                s.to_string()
            }
        };
        let mut out = String::new();
        for row in std::iter::once(&self.headers).chain(self.rows.iter()) {
            let cells: Vec<String> = row.iter().map(|c| field(c)).collect();
            out.push_str(&cells.join(","));
            out.push('\n');
        }
        out
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
    fn text_is_aligned() {
        let s = sample().to_text();
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "device       r/s  note");
        assert_eq!(lines[1], "nvme0n1  7612.80  a, b");
        assert_eq!(lines[2], "sda         1.00  say \"hi\"");
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
