//! The tables shared by the Markdown, CSV and HTML renderings of a saved result.

use super::html::num;
use crate::report::table::Table;
use serde_json::Value;

/// One row per level: the columns users compare across tools.
pub fn levels_table(doc: &Value) -> Table {
    let mut t = Table::new([
        "concurrency",
        "iops",
        "mb_per_s",
        "lat_avg_ms",
        "lat_p50_ms",
        "lat_p95_ms",
        "lat_p99_ms",
        "lat_p999_ms",
        "saturation_avg",
        "util_pct",
        "aqu_sz",
    ]);
    let base = num(doc, &["verdict", "baseline_latency_ns"]);
    let f = |v: Option<f64>, d: usize| v.map_or(String::new(), |x| format!("{x:.d$}"));
    let ms = |l: &Value, k: &str| num(l, &["latency_ns", k]).map(|n| n / 1e6);
    for l in doc
        .get("levels")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let mean = num(l, &["latency_ns", "mean"]);
        t.push([
            f(num(l, &["concurrency"]), 0),
            f(num(l, &["iops"]), 1),
            f(num(l, &["bytes_per_s"]).map(|b| b / 1e6), 2),
            f(mean.map(|n| n / 1e6), 4),
            f(ms(l, "p50"), 4),
            f(ms(l, "p95"), 4),
            f(ms(l, "p99"), 4),
            f(ms(l, "p999"), 4),
            match (mean, base) {
                (Some(m), Some(b)) if b > 0.0 => format!("{:.2}", m / b),
                _ => String::new(),
            },
            f(num(l, &["kernel", "util"]), 1),
            f(num(l, &["kernel", "aqu-sz"]), 2),
        ]);
    }
    t
}

/// A sweep or analysis in Markdown: the levels table, then the verdict's sentences and the
/// notes, so a ticket gets the conclusions with the numbers.
pub fn levels_markdown(doc: &Value) -> String {
    use std::fmt::Write;
    let title = match doc.get("kind").and_then(Value::as_str) {
        Some("sweep") => "iosat sweep".to_string(),
        _ => match doc.pointer("/source/tool").and_then(Value::as_str) {
            Some(tool) => format!("iosat analyze: {tool} results"),
            None => "iosat levels".to_string(),
        },
    };
    let mut s = format!("## {title}\n\n");
    s.push_str(&levels_table(doc).to_markdown());
    let lines = |ptr: &str| -> Vec<String> {
        doc.pointer(ptr)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let summary = lines("/verdict/summary");
    if !summary.is_empty() {
        s.push_str("\n### Verdict\n\n");
        for l in summary {
            let _ = writeln!(s, "- {l}");
        }
    }
    let notes = lines("/notes");
    if !notes.is_empty() {
        s.push_str("\n### Notes\n\n");
        for l in notes {
            let _ = writeln!(s, "- {l}");
        }
    }
    s
}
