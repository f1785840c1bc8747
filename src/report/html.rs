//! One self-contained HTML page (inline SVG, inline CSS, no network, no JavaScript) for any
//! iosat JSON result: sweep, fsync, analyze, stat. Works on `serde_json::Value` so a file saved
//! by an older iosat of the same schema major version still renders. Returns a string; no IO.

use super::svg::{LineChart, Marker, Series};
use serde_json::Value;
use std::fmt::Write as _;

const CSS: &str = "body{font-family:sans-serif;max-width:980px;margin:24px auto;padding:0 12px;color:#222}\
h1{font-size:22px}h2{font-size:18px;margin-top:32px}table{border-collapse:collapse;margin:12px 0;font-size:13px}\
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}\
.verdict{background:#f6f8fa;border-left:4px solid #0072B2;padding:8px 14px}.note{color:#555;font-size:13px}\
svg.chart{display:block;margin:12px 0;max-width:100%;height:auto}";

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A number at `path` (keys separated by '/'; a key may itself contain '/', e.g. "r/s", so the
/// lookup tries the longest key first).
pub(crate) fn num(v: &Value, path: &[&str]) -> Option<f64> {
    let mut cur = v;
    for k in path {
        cur = cur.get(*k)?;
    }
    cur.as_f64()
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

pub(crate) fn html_table(t: &crate::report::table::Table) -> String {
    let mut s = String::from("<table><thead><tr>");
    for h in &t.headers {
        let _ = write!(s, "<th>{}</th>", esc(h));
    }
    s.push_str("</tr></thead><tbody>");
    for r in &t.rows {
        s.push_str("<tr>");
        for c in r {
            let _ = write!(s, "<td>{}</td>", esc(c));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table>");
    s
}

fn verdict_block(v: &Value) -> String {
    let mut s = String::new();
    let lines: Vec<String> = match v.get("summary") {
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|l| l.as_str().map(str::to_string))
            .collect(),
        Some(Value::String(t)) => t.lines().map(str::to_string).collect(),
        _ => Vec::new(),
    };
    if lines.is_empty() {
        return s;
    }
    s.push_str("<div class=\"verdict\"><h2>Verdict</h2>");
    for l in lines {
        let _ = write!(s, "<p>{}</p>", esc(&l));
    }
    if let Some(u) = v.get("util_lesson").and_then(Value::as_str) {
        let _ = write!(s, "<p><strong>%util:</strong> {}</p>", esc(u));
    }
    s.push_str("</div>");
    s
}

fn ms(ns: Option<f64>) -> Option<f64> {
    ns.map(|n| n / 1e6)
}

/// The sweep (or analyze) page: throughput, latency, the hockey stick, the %util trap, USL.
pub fn sweep_page(doc: &Value) -> String {
    let empty = Vec::new();
    let levels = doc
        .get("levels")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let verdict = doc.get("verdict").cloned().unwrap_or(Value::Null);
    let c = |l: &Value| num(l, &["concurrency"]).unwrap_or(0.0);
    let series = |f: &dyn Fn(&Value) -> Option<f64>| -> Vec<(f64, f64)> {
        levels
            .iter()
            .filter_map(|l| f(l).map(|y| (c(l), y)))
            .collect()
    };
    let knee = num(&verdict, &["knee_concurrency"]);
    let overload = num(&verdict, &["overload_concurrency"]);
    let mut markers = Vec::new();
    if let Some(k) = knee {
        markers.push(Marker {
            x: k,
            label: format!("knee {k}"),
        });
    }
    if let Some(o) = overload {
        markers.push(Marker {
            x: o,
            label: format!("overload {o}"),
        });
    }

    let mut body = verdict_block(&verdict);

    // 1. Throughput vs concurrency, with the USL fit.
    let mut tput = LineChart::new(
        "throughput",
        "Throughput vs concurrency",
        "concurrency (requests in flight)",
        "IOPS",
    );
    tput.x_log = true;
    tput.series
        .push(Series::new("measured IOPS", series(&|l| num(l, &["iops"]))));
    if let (Some(lambda), Some(sigma), Some(kappa)) = (
        num(&verdict, &["usl", "lambda"]),
        num(&verdict, &["usl", "sigma"]),
        num(&verdict, &["usl", "kappa"]),
    ) {
        let max_c = levels.iter().map(c).fold(1.0, f64::max);
        let pts: Vec<(f64, f64)> = (0..=48)
            .map(|i| {
                let n = 2f64.powf(i as f64 * max_c.log2() / 48.0);
                (
                    n,
                    lambda * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0)),
                )
            })
            .collect();
        tput.series
            .push(Series::new(format!("USL fit (σ={sigma:.3}, κ={kappa:.5})"), pts).dashed());
    }
    tput.markers = markers.clone();
    body.push_str("<h2>Throughput</h2>");
    body.push_str(&tput.to_svg());

    // 2. Latency vs concurrency (log: latency spans decades when a device saturates).
    let mut lat = LineChart::new(
        "latency",
        "Latency vs concurrency",
        "concurrency (requests in flight)",
        "latency (ms)",
    );
    lat.x_log = true;
    lat.y_log = true;
    for (name, key) in [("avg", "mean"), ("p95", "p95"), ("p99", "p99")] {
        let pts = series(&|l| ms(num(l, &["latency_ns", key])));
        if !pts.is_empty() {
            lat.series.push(Series::new(name, pts));
        }
    }
    lat.markers = markers.clone();
    body.push_str("<h2>Latency</h2>");
    body.push_str(&lat.to_svg());

    // 3. The hockey stick: latency against throughput.
    let mut hs = LineChart::new(
        "hockey",
        "Latency vs throughput (the hockey stick)",
        "IOPS",
        "average latency (ms)",
    );
    hs.y_log = true;
    let pts: Vec<(f64, f64)> = levels
        .iter()
        .filter_map(|l| Some((num(l, &["iops"])?, ms(num(l, &["latency_ns", "mean"]))?)))
        .collect();
    hs.series.push(Series::new("avg latency", pts));
    if let Some(k) = knee {
        if let Some(l) = levels.iter().find(|l| c(l) == k) {
            if let Some(x) = num(l, &["iops"]) {
                hs.markers.push(Marker {
                    x,
                    label: format!("knee (concurrency {k})"),
                });
            }
        }
    }
    body.push_str("<h2>The hockey stick</h2>");
    body.push_str(&hs.to_svg());

    // 4. The %util trap: util and aqu-sz beside real throughput.
    let util = series(&|l| num(l, &["kernel", "util"]));
    let aqu = series(&|l| num(l, &["kernel", "aqu-sz"]));
    if !util.is_empty() || !aqu.is_empty() {
        let mut trap = LineChart::new(
            "util",
            "%util and aqu-sz beside real throughput",
            "concurrency (requests in flight)",
            "%util, aqu-sz",
        );
        trap.x_log = true;
        if !util.is_empty() {
            trap.series.push(Series::new("%util (kernel)", util));
        }
        if !aqu.is_empty() {
            trap.series.push(Series::new("aqu-sz (kernel)", aqu));
        }
        trap.right = Some((
            "IOPS".to_string(),
            vec![Series::new("IOPS", series(&|l| num(l, &["iops"]))).dashed()],
        ));
        body.push_str("<h2>The %util trap</h2>");
        body.push_str(
            "<p class=\"note\">%util is the share of time with at least one request in flight; \
on a device that serves requests in parallel it reaches 100 % long before throughput stops growing.</p>",
        );
        body.push_str(&trap.to_svg());
    }

    // The table.
    let mut t = crate::report::table::Table::new([
        "concurrency",
        "IOPS",
        "MB/s",
        "avg ms",
        "p95 ms",
        "p99 ms",
        "saturation",
        "%util",
        "aqu-sz",
    ]);
    let base = num(&verdict, &["baseline_latency_ns"]);
    let f = |v: Option<f64>, d: usize| v.map_or("-".to_string(), |x| format!("{x:.d$}"));
    for l in levels {
        let mean = num(l, &["latency_ns", "mean"]);
        t.push([
            f(Some(c(l)), 0),
            f(num(l, &["iops"]), 0),
            f(num(l, &["bytes_per_s"]).map(|b| b / 1e6), 1),
            f(ms(mean), 3),
            f(ms(num(l, &["latency_ns", "p95"])), 3),
            f(ms(num(l, &["latency_ns", "p99"])), 3),
            match (mean, base) {
                (Some(m), Some(b)) if b > 0.0 => format!("{:.2}x", m / b),
                _ => "-".into(),
            },
            f(num(l, &["kernel", "util"]), 1),
            f(num(l, &["kernel", "aqu-sz"]), 2),
        ]);
    }
    body.push_str("<h2>Levels</h2>");
    body.push_str(&html_table(&t));
    let title = doc
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or("iosat sweep");
    page(title, &body)
}
