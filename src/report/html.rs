//! The page frame every HTML page shares: the CSS, escaping, the `<!DOCTYPE>` frame, tables
//! (marked rows tagged), and the context table that says what was measured and where (with the
//! envelope's rows every kind adds to its own). What goes on a page is each kind's document
//! (report/doc/html.rs writes it); this file knows no result kind. Returns strings; no IO.
//! Must not import: cli/, config/, cmd/, ui/, exporter/, report/doc/, report/sweep.rs, report/analyze.rs, report/fsync.rs, report/stat.rs,
//! report/compare.rs, report/levels.rs.

use crate::units::{printable, utc_of_unix_s};
use std::fmt::Write as _;

// The page uses the window (tables of twenty columns fit 1280 px); prose and charts keep a
// readable measure. A cell's value never wraps ("512 B"), a header may, and so may a context
// table's value (a file's path: two long checkout paths side by side ran 2 px past 1280); a
// table too wide even so scrolls inside its own box, never the page.
const CSS: &str = "body{font-family:sans-serif;max-width:1600px;margin:24px auto;padding:0 16px;color:#222}\
p,ul,.verdict,details.more,svg.chart{max-width:1100px}\
h1{font-size:22px}h2{font-size:18px;margin-top:32px}table{border-collapse:collapse;margin:12px 0;font-size:12px}\
td,th{border:1px solid #ccc;padding:2px 5px;text-align:right}td{white-space:nowrap}th{background:#f4f4f4;overflow-wrap:anywhere}\
td:first-child,th:first-child{text-align:left}\
.verdict{background:#f6f8fa;border-left:4px solid #0072B2;padding:8px 14px}.note{color:#555;font-size:13px}\
svg.chart{display:block;margin:12px 0;max-width:100%;height:auto}\
.scroll{overflow-x:auto;max-width:100%}.context table,table.context{font-size:13px}.context th,table.context th{text-align:left;background:#f4f4f4}\
.context td,table.context td{text-align:left;white-space:normal;overflow-wrap:anywhere}tr.knee td{background:#e6f4ea}tr.overload td{background:#fdecea}\
td:first-child{white-space:nowrap}.tag{font-size:11px;font-weight:bold;margin-left:4px}tr.knee .tag{color:#1e7b34}tr.overload .tag{color:#b3261e}\
details{margin:12px 0}summary{cursor:pointer}";

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

pub(crate) fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>{}</title><style>{CSS}</style></head><body>\n<h1>{}</h1>\n{body}\n\
<p class=\"note\">Made by iosat {}. Charts are inline SVG; this page needs no network and no script.</p>\n</body></html>\n",
        esc(title),
        esc(title),
        env!("CARGO_PKG_VERSION")
    )
}

/// A table; wide ones scroll inside the page instead of running off it.
pub(crate) fn html_table(t: &crate::report::table::Table) -> String {
    html_table_marked(t, &|_| None)
}

/// A table whose rows `mark` tags: (a CSS class, the word beside the first cell).
pub(crate) fn html_table_marked(
    t: &crate::report::table::Table,
    mark: &dyn Fn(usize) -> Option<(&'static str, &'static str)>,
) -> String {
    let mut s = String::from("<div class=\"scroll\"><table><thead><tr>");
    for h in &t.headers {
        let _ = write!(s, "<th>{}</th>", esc(h));
    }
    s.push_str("</tr></thead><tbody>");
    for (i, r) in t.rows.iter().enumerate() {
        let m = mark(i);
        match m {
            Some((class, _)) => {
                let _ = write!(s, "<tr class=\"{class}\">");
            }
            None => s.push_str("<tr>"),
        }
        for (j, c) in r.iter().enumerate() {
            let tag = match m {
                Some((_, tag)) if j == 0 => format!("<span class=\"tag\">{tag}</span>"),
                _ => String::new(),
            };
            let _ = write!(s, "<td>{}{tag}</td>", esc(c));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table></div>");
    s
}

/// Where and when a result was measured, from its envelope (fields an older file lacks are
/// left out).
pub(crate) fn envelope_rows(e: &crate::envelope::Envelope) -> Vec<(&'static str, String)> {
    let mut v = Vec::new();
    if !e.host.is_empty() {
        v.push(("host", printable(&e.host).into_owned()));
    }
    if !e.kernel.is_empty() {
        v.push(("kernel", printable(&e.kernel).into_owned()));
    }
    if e.cpus > 0 {
        v.push(("CPUs", e.cpus.to_string()));
    }
    v
}

/// When and by which iosat, from the envelope.
pub(crate) fn envelope_tail(e: &crate::envelope::Envelope) -> Vec<(&'static str, String)> {
    let mut v = Vec::new();
    if !e.started.is_empty() {
        v.push(("date", printable(&e.started).into_owned()));
    } else if e.started_unix_s > 0 {
        // A number from the file: a clear value when it is no date (issue 39 case 10).
        v.push(("date", utc_of_unix_s(e.started_unix_s)));
    }
    if !e.iosat_version.is_empty() {
        v.push(("iosat version", printable(&e.iosat_version).into_owned()));
    }
    v
}

/// The context header: a two-column table at the top of every page.
pub fn context_block(rows: &[(&'static str, String)]) -> String {
    let mut s = String::from("<table class=\"context\"><tbody>");
    for (k, v) in rows {
        let _ = write!(s, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(v));
    }
    s.push_str("</tbody></table>");
    s
}
