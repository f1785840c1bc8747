//! The `iosat fsync` result (its JSON, schema_version 1) as an HTML page and as the tables its
//! Markdown and CSV share: latency per method, the group-commit curve, the device and the
//! flush-honesty verdict. Works on `serde_json::Value`; no IO. Imports report/ only.

use super::html::{esc, html_table, num, page};
use super::svg::{DotChart, LineChart, Series};
use crate::report::table::Table;
use serde_json::Value;
use std::fmt::Write as _;

/// True for the JSON `iosat fsync --json` writes.
pub fn is_fsync(doc: &Value) -> bool {
    doc.get("command").and_then(Value::as_str) == Some("fsync")
        && doc.get("cases").is_some_and(Value::is_array)
}

fn arr<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("-")
}

/// 512 → "512 B", 4096 → "4 KiB", 1048576 → "1 MiB".
fn size_label(b: f64) -> String {
    let b = b as u64;
    if b >= 1 << 20 && b % (1 << 20) == 0 {
        format!("{} MiB", b >> 20)
    } else if b >= 1024 && b % 1024 == 0 {
        format!("{} KiB", b >> 10)
    } else {
        format!("{b} B")
    }
}

/// ns → ms with 3 decimals, "-" when missing.
fn ms(v: Option<f64>) -> String {
    v.map_or("-".into(), |n| format!("{:.3}", n / 1e6))
}

fn opt(v: Option<f64>, d: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.d$}"))
}

fn lat(v: &Value, k: &str) -> Option<f64> {
    num(v, &["latency_ns", k])
}

fn verify(v: &Value) -> String {
    let mut s = match text(v, "verify") {
        "failed" => "FAILED".to_string(),
        x => x.to_string(),
    };
    if v.get("stopped_at_size_cap").and_then(Value::as_bool) == Some(true) {
        s.push_str(" (size cap)");
    }
    if v.get("interrupted").and_then(Value::as_bool) == Some(true) {
        s.push_str(" (interrupted)");
    }
    s
}

/// One row per case: method, mode, size, commits/s, latency in ms, device flushes.
pub fn cases_table(doc: &Value) -> Table {
    let mut t = Table::new([
        "method",
        "mode",
        "size",
        "commits/s",
        "min ms",
        "avg ms",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "p99.9 ms",
        "max ms",
        "flushes",
        "f/s",
        "f_await ms",
        "verify",
    ]);
    t.right[1] = false;
    t.right[14] = false;
    for c in arr(doc, "cases") {
        let fl = c.get("device_flushes").filter(|f| !f.is_null());
        t.push([
            text(c, "method").to_string(),
            text(c, "mode").to_string(),
            num(c, &["size"]).map_or("-".into(), size_label),
            opt(num(c, &["commits_per_s"]), 1),
            ms(lat(c, "min")),
            ms(lat(c, "mean")),
            ms(lat(c, "p50")),
            ms(lat(c, "p95")),
            ms(lat(c, "p99")),
            ms(lat(c, "p999")),
            ms(lat(c, "max")),
            opt(fl.and_then(|f| num(f, &["flushes"])), 0),
            opt(fl.and_then(|f| num(f, &["f_s"])), 1),
            opt(fl.and_then(|f| num(f, &["f_await_ms"])), 3),
            verify(c),
        ]);
    }
    t
}

/// One row per group-commit level and layout.
pub fn group_table(g: &Value) -> Table {
    let mut t = Table::new([
        "committers",
        "layout",
        "commits/s",
        "fsyncs/s",
        "commits/fsync",
        "avg ms",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "max ms",
        "flushes",
        "verify",
    ]);
    t.right[1] = false;
    t.right[11] = false;
    for l in arr(g, "levels") {
        let syncs_per_s = match (num(l, &["syncs"]), num(l, &["elapsed_ns"])) {
            (Some(s), Some(e)) if e > 0.0 => Some(s * 1e9 / e),
            _ => None,
        };
        t.push([
            opt(num(l, &["committers"]), 0),
            text(l, "layout").to_string(),
            opt(num(l, &["commits_per_s"]), 1),
            opt(syncs_per_s, 1),
            opt(num(l, &["commits_per_sync"]), 2),
            ms(lat(l, "mean")),
            ms(lat(l, "p50")),
            ms(lat(l, "p95")),
            ms(lat(l, "p99")),
            ms(lat(l, "max")),
            opt(num(l, &["device_flushes", "flushes"]), 0),
            verify(l),
        ]);
    }
    t
}

/// The device facts as key/value rows.
pub fn device_table(doc: &Value) -> Table {
    let d = doc.get("device").cloned().unwrap_or(Value::Null);
    let mut t = Table::new(["device", "value"]);
    t.right[1] = false;
    let show = |v: Option<&Value>| match v {
        None | Some(Value::Null) => "unknown".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => if *b { "yes" } else { "no" }.to_string(),
        Some(x) => x.to_string(),
    };
    for (label, key) in [
        ("name", "name"),
        ("major:minor", "dev"),
        ("model", "model"),
        ("write cache", "write_cache"),
        ("FUA", "fua"),
        ("rotational", "rotational"),
        ("logical block size (bytes)", "logical_block_size"),
        ("flush verdict", "flush_verdict"),
    ] {
        t.push([label.to_string(), show(d.get(key))]);
    }
    t
}

fn bullets(lines: &[Value]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|l| l.as_str().map(str::to_string))
        .collect()
}

/// What one connection can commit per second with the reference and the fastest durable
/// method (and, with --target-tps, how many connections the target needs).
pub fn capacity_lines(doc: &Value) -> Vec<String> {
    let cap = doc.get("capacity").cloned().unwrap_or(Value::Null);
    let tps = num(&cap, &["target_tps"]);
    let mut out = Vec::new();
    for (label, key) in [
        ("write + fsync", "fsync_reference"),
        ("fastest durable", "best_durable"),
    ] {
        let Some(c) = cap.get(key).filter(|c| !c.is_null()) else {
            continue;
        };
        let mut s = format!(
            "{label}: {} {} {} B, {} ms per commit → {:.0} commits/s per connection",
            text(c, "method"),
            text(c, "mode"),
            num(c, &["size"]).unwrap_or(0.0),
            ms(num(c, &["mean_latency_ns"])),
            num(c, &["per_connection_commits_per_s"]).unwrap_or(0.0)
        );
        if let (Some(t), Some(n)) = (tps, num(c, &["connections_for_target_tps"])) {
            let _ = write!(
                s,
                "; {t} commits/s need at least {n} connection{}",
                if n == 1.0 { "" } else { "s" }
            );
        }
        out.push(s);
    }
    out
}

fn group(doc: &Value) -> Option<&Value> {
    doc.get("group_commit").filter(|g| !g.is_null())
}

fn group_title(g: &Value) -> String {
    format!(
        "Group commit ({} of {} B)",
        text(g, "method"),
        num(g, &["size"]).unwrap_or(0.0)
    )
}

/// Markdown: the same tables as the page, latency in ms.
pub fn markdown(doc: &Value) -> String {
    let mut s = format!(
        "## iosat fsync: {}\n\n{} s per case, latency in ms.\n\n### Commit latency per method\n\n",
        text(doc, "dir"),
        num(doc, &["duration_s_per_case"]).unwrap_or(0.0)
    );
    s.push_str(&cases_table(doc).to_markdown());
    let cap = capacity_lines(doc);
    if !cap.is_empty() {
        s.push_str("\n### Commit capacity\n\n");
        for l in cap {
            let _ = writeln!(s, "- {l}");
        }
    }
    if let Some(g) = group(doc) {
        let _ = write!(s, "\n### {}\n\n", group_title(g));
        s.push_str(&group_table(g).to_markdown());
        for l in bullets(arr(g, "summary")) {
            let _ = writeln!(s, "- {l}");
        }
    }
    s.push_str("\n### Device\n\n");
    s.push_str(&device_table(doc).to_markdown());
    let d = doc.get("device").cloned().unwrap_or(Value::Null);
    let _ = write!(
        s,
        "\n### Flush honesty: `{}`\n\n",
        text(&d, "flush_verdict")
    );
    for l in bullets(arr(&d, "flush_reasoning")) {
        let _ = writeln!(s, "- {l}");
    }
    for w in bullets(arr(doc, "warnings")) {
        let _ = writeln!(s, "\n> warning: {w}");
    }
    s
}

/// CSV: one table, a row per case and per group-commit level, the JSON's raw numbers (ns).
pub fn csv(doc: &Value) -> String {
    let mut t = Table::new([
        "kind",
        "method",
        "mode",
        "size",
        "committers",
        "commits",
        "elapsed_ns",
        "commits_per_s",
        "min_ns",
        "mean_ns",
        "p50_ns",
        "p95_ns",
        "p99_ns",
        "p999_ns",
        "max_ns",
        "device_flushes",
        "f_s",
        "f_await_ms",
        "verify",
        "flush_verdict",
    ]);
    let raw = |v: &Value, path: &[&str], d: Option<usize>| {
        num(v, path).map_or(String::new(), |x| match d {
            Some(d) => format!("{x:.d$}"),
            None => format!("{x}"),
        })
    };
    let verdict = doc
        .get("device")
        .map(|d| text(d, "flush_verdict"))
        .unwrap_or("-")
        .to_string();
    let mut push = |kind: String, method: &str, mode: &str, size: String, v: &Value| {
        let mut row = vec![
            kind,
            method.to_string(),
            mode.to_string(),
            size,
            raw(v, &["committers"], None),
            raw(v, &["commits"], None),
            raw(v, &["elapsed_ns"], None),
            raw(v, &["commits_per_s"], Some(3)),
        ];
        if row[4].is_empty() {
            row[4] = "1".into();
        }
        for k in ["min", "mean", "p50", "p95", "p99", "p999", "max"] {
            row.push(raw(v, &["latency_ns", k], None));
        }
        row.push(raw(v, &["device_flushes", "flushes"], None));
        row.push(raw(v, &["device_flushes", "f_s"], Some(3)));
        row.push(raw(v, &["device_flushes", "f_await_ms"], Some(3)));
        row.push(text(v, "verify").to_string());
        row.push(verdict.clone());
        t.push(row);
    };
    for c in arr(doc, "cases") {
        push(
            "case".into(),
            text(c, "method"),
            text(c, "mode"),
            raw(c, &["size"], None),
            c,
        );
    }
    if let Some(g) = group(doc) {
        for l in arr(g, "levels") {
            push(
                format!("group_{}", text(l, "layout")),
                text(g, "method"),
                "overwrite",
                raw(g, &["size"], None),
                l,
            );
        }
    }
    t.to_csv()
}

/// The page: verdict, latency per method, group commit, device, tables.
pub fn page_html(doc: &Value) -> String {
    let mut body = String::new();
    let d = doc.get("device").cloned().unwrap_or(Value::Null);
    let _ = write!(
        body,
        "<p>Test directory <code>{}</code>, {} s per case. Latency is the time from the write \
to the moment the commit is durable (the method's flush returned).</p>",
        esc(text(doc, "dir")),
        num(doc, &["duration_s_per_case"]).unwrap_or(0.0)
    );
    let _ = write!(
        body,
        "<div class=\"verdict\"><h2>Flush honesty: <code>{}</code></h2>",
        esc(text(&d, "flush_verdict"))
    );
    for l in bullets(arr(&d, "flush_reasoning")) {
        let _ = write!(body, "<p>{}</p>", esc(&l));
    }
    body.push_str("</div>");
    for w in bullets(arr(doc, "warnings")) {
        let _ = write!(
            body,
            "<p class=\"note\"><strong>warning:</strong> {}</p>",
            esc(&w)
        );
    }

    // Latency per method, one chart per mode (rows: method × size).
    body.push_str("<h2>Commit latency per method</h2>");
    let cases = arr(doc, "cases");
    let mut modes: Vec<&str> = Vec::new();
    for c in cases {
        let m = text(c, "mode");
        if !modes.contains(&m) {
            modes.push(m);
        }
    }
    for mode in modes {
        let rows = cases
            .iter()
            .filter(|c| text(c, "mode") == mode)
            .map(|c| {
                (
                    format!(
                        "{} {}",
                        text(c, "method"),
                        num(c, &["size"]).map_or("-".into(), size_label)
                    ),
                    ["p50", "p95", "p99"]
                        .iter()
                        .map(|k| lat(c, k).map(|n| n / 1e6))
                        .collect(),
                )
            })
            .collect();
        let chart = DotChart {
            id: format!("latency-{mode}"),
            title: format!("Commit latency, {mode} mode"),
            x_label: "latency (ms)".into(),
            x_log: true,
            keys: vec!["p50".into(), "p95".into(), "p99".into()],
            rows,
        };
        body.push_str(&chart.to_svg());
    }
    let cap = capacity_lines(doc);
    if !cap.is_empty() {
        body.push_str("<h2>Commit capacity</h2><ul>");
        for l in cap {
            let _ = write!(body, "<li>{}</li>", esc(&l));
        }
        body.push_str("</ul>");
    }

    if let Some(g) = group(doc) {
        let _ = write!(body, "<h2>{}</h2>", esc(&group_title(g)));
        body.push_str(
            "<p class=\"note\">shared_log: all committers append to one log and one fsync \
covers every commit waiting (group commit); separate_files: each committer writes and fsyncs \
its own file.</p>",
        );
        let levels = arr(g, "levels");
        let pts = |layout: &str, f: &dyn Fn(&Value) -> Option<f64>| -> Vec<(f64, f64)> {
            levels
                .iter()
                .filter(|l| text(l, "layout") == layout)
                .filter_map(|l| Some((num(l, &["committers"])?, f(l)?)))
                .collect()
        };
        let mut tput = LineChart::new(
            "group-throughput",
            "Commits per second vs committers",
            "concurrent committers",
            "commits/s",
        );
        tput.x_log = true;
        let mut latc = LineChart::new(
            "group-latency",
            "Commit latency vs committers",
            "concurrent committers",
            "latency (ms)",
        );
        latc.x_log = true;
        latc.y_log = true;
        for (colour, layout) in ["shared_log", "separate_files"].into_iter().enumerate() {
            let p = pts(layout, &|l| num(l, &["commits_per_s"]));
            if p.is_empty() {
                continue;
            }
            tput.series.push(Series::new(layout, p).colour(colour));
            latc.series.push(
                Series::new(
                    format!("{layout} avg"),
                    pts(layout, &|l| lat(l, "mean").map(|n| n / 1e6)),
                )
                .colour(colour),
            );
            latc.series.push(
                Series::new(
                    format!("{layout} p99"),
                    pts(layout, &|l| lat(l, "p99").map(|n| n / 1e6)),
                )
                .dashed()
                .colour(colour),
            );
        }
        body.push_str(&tput.to_svg());
        body.push_str(&latc.to_svg());
        let summary = bullets(arr(g, "summary"));
        if !summary.is_empty() {
            body.push_str("<ul>");
            for l in summary {
                let _ = write!(body, "<li>{}</li>", esc(&l));
            }
            body.push_str("</ul>");
        }
        body.push_str(&html_table(&group_table(g)));
    }

    body.push_str("<h2>Device</h2>");
    body.push_str(&html_table(&device_table(doc)));
    body.push_str("<h2>Cases</h2>");
    body.push_str(&html_table(&cases_table(doc)));
    page(&format!("iosat fsync: {}", text(doc, "dir")), &body)
}
