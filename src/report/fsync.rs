//! The one renderer of the `iosat fsync` result: text, Markdown, CSV, JSON and the HTML page, all
//! from the typed `FsyncReport`, for the live command and `iosat report` alike (so `iosat fsync
//! --markdown` and `iosat report saved.json --format markdown` print the same bytes). One set of
//! tables: latency per case, the group-commit curve, the device. Only `is_fsync` looks at raw JSON
//! (to recognise the kind before it is read). No IO.
//! Must not import: cli/, config/, cmd/, ui/, exporter/.

use super::html::{esc, html_table, page};
use super::svg::{DotChart, LineChart, Series};
use super::text::{paint, wrap, Paint};
use super::Format;
use crate::fsync::report::*;
use crate::report::table::Table;
use crate::units::block_size;
use serde_json::Value;
use std::fmt::Write as _;

/// True for the JSON `iosat fsync --json` writes.
pub fn is_fsync(doc: &Value) -> bool {
    let kind = |k: &str| doc.get(k).and_then(Value::as_str) == Some("fsync");
    // `command` until schema 2, `kind` from then on (the envelope).
    (kind("kind") || kind("command")) && doc.get("cases").is_some_and(Value::is_array)
}

/// The result in `format`.
pub fn render(r: &FsyncReport, format: Format) -> String {
    match format {
        Format::Text { .. } => text(r, format),
        Format::Markdown => markdown(r),
        Format::Csv => csv(r),
        Format::Json => json(r),
        Format::Html => page_html(r),
    }
}

/// ns → ms with 3 decimals.
fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

fn opt<T: Copy>(v: Option<T>, f: impl Fn(T) -> String) -> String {
    v.map_or_else(|| "-".into(), f)
}

fn size(b: u32) -> String {
    block_size(u64::from(b))
}

fn verify_cell(v: VerifyStatus, size_cap: bool, interrupted: bool) -> String {
    let mut s = match v {
        VerifyStatus::Ok => "ok",
        VerifyStatus::Skipped => "skipped",
        VerifyStatus::Failed => "FAILED",
    }
    .to_string();
    if size_cap {
        s.push_str(" (size cap)");
    }
    if interrupted {
        s.push_str(" (interrupted)");
    }
    s
}

/// The JSON name of a verify status (CSV carries the raw value).
fn verify_name(v: VerifyStatus) -> &'static str {
    match v {
        VerifyStatus::Ok => "ok",
        VerifyStatus::Skipped => "skipped",
        VerifyStatus::Failed => "failed",
    }
}

/// One row per case (seed 002's rate and latency, plus percentiles and the device's flush
/// counters); with --target-tps, the connections that target needs.
pub fn cases_table(r: &FsyncReport) -> Table {
    let tps = r.capacity.target_tps;
    let mut head: Vec<String> = [
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
    ]
    .map(String::from)
    .into();
    if let Some(t) = tps {
        head.push(format!("conns@{t}tps"));
    }
    head.push("verify".into());
    let mut t = Table::new(head);
    t.right[1] = false;
    let last = t.right.len() - 1;
    t.right[last] = false;
    for c in &r.cases {
        let l = &c.latency_ns;
        let fl = c.device_flushes.as_ref();
        let mut row = vec![
            c.method.name().to_string(),
            c.mode.name().to_string(),
            size(c.size),
            format!("{:.1}", c.commits_per_s),
            ms(l.min),
            ms(l.mean),
            ms(l.p50),
            ms(l.p95),
            ms(l.p99),
            ms(l.p999),
            ms(l.max),
            opt(fl.map(|f| f.flushes), |n| n.to_string()),
            opt(fl.map(|f| f.f_s), |x| format!("{x:.1}")),
            opt(fl.and_then(|f| f.f_await_ms), |x| format!("{x:.3}")),
        ];
        if tps.is_some() {
            row.push(opt(c.connections_for_target_tps, |n| n.to_string()));
        }
        row.push(verify_cell(c.verify, c.stopped_at_size_cap, c.interrupted));
        t.push(row);
    }
    t
}

/// One row per group-commit level and layout.
pub fn group_table(g: &GroupCommit) -> Table {
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
    for l in &g.levels {
        let lat = &l.latency_ns;
        let syncs_per_s = (l.elapsed_ns > 0).then(|| l.syncs as f64 * 1e9 / l.elapsed_ns as f64);
        t.push([
            l.committers.to_string(),
            l.layout.name().to_string(),
            format!("{:.1}", l.commits_per_s),
            opt(syncs_per_s, |x| format!("{x:.1}")),
            format!("{:.2}", l.commits_per_sync),
            ms(lat.mean),
            ms(lat.p50),
            ms(lat.p95),
            ms(lat.p99),
            ms(lat.max),
            opt(l.device_flushes.as_ref().map(|f| f.flushes), |n| {
                n.to_string()
            }),
            verify_cell(l.verify, false, l.interrupted),
        ]);
    }
    t
}

/// The device facts as key/value rows.
pub fn device_table(d: &DeviceSection) -> Table {
    let mut t = Table::new(["device", "value"]);
    t.right[1] = false;
    let known = |v: Option<String>| v.unwrap_or_else(|| "unknown".into());
    let yes_no = |v: Option<bool>| known(v.map(|b| if b { "yes" } else { "no" }.to_string()));
    let rows = [
        ("name", known(d.name.clone())),
        ("major:minor", known(d.dev.clone())),
        ("model", known(d.model.clone())),
        ("write cache", known(d.write_cache.clone())),
        ("FUA", yes_no(d.fua)),
        ("rotational", yes_no(d.rotational)),
        (
            "logical block size (bytes)",
            known(d.logical_block_size.map(|b| b.to_string())),
        ),
        ("flush verdict", d.flush_verdict.name().to_string()),
    ];
    for (label, value) in rows {
        t.push([label.to_string(), value]);
    }
    t
}

/// The device in one line (the text header).
fn device_line(d: &DeviceSection) -> String {
    let Some(name) = &d.name else {
        return "unknown (not a block device iosat could identify)".into();
    };
    let flag = |v: Option<bool>| v.map_or_else(|| "?".into(), |b| (b as u8).to_string());
    format!(
        "{name} ({}){}: write_cache={} fua={} rotational={} logical_block_size={}",
        d.dev.as_deref().unwrap_or("?"),
        d.model
            .as_deref()
            .map(|m| format!(" {m}"))
            .unwrap_or_default(),
        d.write_cache
            .as_deref()
            .map_or_else(|| "?".into(), |s| format!("\"{s}\"")),
        flag(d.fua),
        flag(d.rotational),
        d.logical_block_size
            .map_or_else(|| "?".into(), |b| b.to_string()),
    )
}

/// What one connection can commit per second with the reference and the fastest durable
/// method (and, with --target-tps, how many connections the target needs).
pub fn capacity_lines(r: &FsyncReport) -> Vec<String> {
    let cap = &r.capacity;
    let mut out = Vec::new();
    for (label, line) in [
        ("write + fsync", &cap.fsync_reference),
        ("fastest durable", &cap.best_durable),
    ] {
        let Some(c) = line else { continue };
        let mut s = format!(
            "{label}: {} {} {}, {} ms per commit → {:.0} commits/s per connection",
            c.method.name(),
            c.mode.name(),
            size(c.size),
            ms(c.mean_latency_ns),
            c.per_connection_commits_per_s
        );
        if let (Some(t), Some(n)) = (cap.target_tps, c.connections_for_target_tps) {
            let _ = write!(
                s,
                "; {t} commits/s need at least {n} connection{}",
                if n == 1 { "" } else { "s" }
            );
        }
        out.push(s);
    }
    if out.is_empty() {
        out.push("no durable case measured".into());
    }
    out
}

fn skipped_lines(r: &FsyncReport) -> impl Iterator<Item = String> + '_ {
    r.skipped.iter().map(|k| {
        format!(
            "skipped {} {} {}: {}",
            k.method.name(),
            k.mode.name(),
            size(k.size),
            k.reason
        )
    })
}

/// Append each item as its own line after `prefix` (text indents, Markdown bullets).
fn push_lines<T: std::fmt::Display>(
    s: &mut String,
    prefix: &str,
    items: impl IntoIterator<Item = T>,
) {
    for l in items {
        let _ = writeln!(s, "{prefix}{l}");
    }
}

fn group_title(g: &GroupCommit) -> String {
    format!("Group commit ({} of {})", g.method.name(), size(g.size))
}

/// The cases' columns in 80 columns (`--wide`: min, p50, p95, p99.9, max, flushes, f/s,
/// connections for the target).
const CASES_NARROW: &[&str] = &[
    "method",
    "mode",
    "size",
    "commits/s",
    "avg ms",
    "p99 ms",
    "f_await ms",
    "verify",
];

/// The group-commit levels' columns in 80 columns.
const GROUP_NARROW: &[&str] = &[
    "committers",
    "layout",
    "commits/s",
    "commits/fsync",
    "avg ms",
    "p99 ms",
    "verify",
];

/// Each item wrapped to `width` after `prefix` (continuation lines indented under it),
/// coloured as `p` on a terminal.
fn push_wrapped<T: std::fmt::Display>(
    s: &mut String,
    prefix: &str,
    items: impl IntoIterator<Item = T>,
    (width, color, p): (usize, bool, Option<Paint>),
) {
    let rest = " ".repeat(prefix.chars().count() + 2);
    for l in items {
        let w = wrap(&l.to_string(), prefix, &rest, width);
        match p {
            Some(p) => {
                for line in w.lines() {
                    s.push_str(&paint(line, p, color));
                    s.push('\n');
                }
            }
            None => s.push_str(&w),
        }
    }
}

/// Text: narrow tables (80 columns) or every column with `--wide`, the prose wrapped to the
/// terminal's width; on a terminal failed verification red, a dishonest flush verdict and the
/// warnings yellow.
pub fn text(r: &FsyncReport, format: Format) -> String {
    let Format::Text { wide, width, color } = format else {
        return text(r, Format::TEXT);
    };
    let plain = (width, color, None);
    let mut s = String::new();
    push_wrapped(
        &mut s,
        "",
        [format!(
            "iosat fsync: {} ({} s per case, latency in ms; test files removed)",
            r.dir, r.duration_s_per_case
        )],
        plain,
    );
    push_wrapped(&mut s, "device: ", [device_line(&r.device)], plain);
    s.push('\n');
    let narrow = |t: Table, cols: &[&str]| if wide { t } else { t.select(cols) };
    let failed = |t: &Table, i: usize| {
        t.rows[i]
            .last()
            .is_some_and(|v| v.starts_with("FAILED"))
            .then_some(Paint::Overload)
    };
    let cases = narrow(cases_table(r), CASES_NARROW);
    s.push_str(&cases.to_text_fit(usize::MAX, color, |i| failed(&cases, i)));
    push_wrapped(&mut s, "", skipped_lines(r), plain);
    s.push_str("\nCommit capacity (one connection commits once per latency):\n");
    push_wrapped(&mut s, "  ", capacity_lines(r), plain);
    if let Some(g) = &r.group_commit {
        let _ = writeln!(
            s,
            "\nGroup commit ({} of {}, {} s per level):",
            g.method.name(),
            size(g.size),
            r.duration_s_per_case
        );
        let t = narrow(group_table(g), GROUP_NARROW);
        s.push_str(&t.to_text_fit(usize::MAX, color, |i| failed(&t, i)));
        push_wrapped(&mut s, "  ", &g.summary, plain);
    }
    let verdict = r.device.flush_verdict;
    let honest = matches!(verdict, FlushVerdict::Plausible | FlushVerdict::Unknown);
    s.push('\n');
    push_wrapped(
        &mut s,
        "",
        [format!("Flush honesty: {}", verdict.name())],
        (width, color, (!honest).then_some(Paint::Warning)),
    );
    push_wrapped(&mut s, "  ", &r.device.flush_reasoning, plain);
    push_wrapped(
        &mut s,
        "warning: ",
        &r.warnings,
        (width, color, Some(Paint::Warning)),
    );
    if r.interrupted {
        s.push_str("interrupted: the results above are partial\n");
    }
    s
}

/// GitHub-flavoured Markdown: the same tables as the text and the page, latency in ms.
pub fn markdown(r: &FsyncReport) -> String {
    let mut s = format!(
        "## iosat fsync: {}\n\n{} s per case, latency in ms.\n\n### Commit latency per method\n\n",
        r.dir, r.duration_s_per_case
    );
    s.push_str(&cases_table(r).to_markdown());
    if !r.skipped.is_empty() {
        s.push('\n');
        push_lines(&mut s, "- ", skipped_lines(r));
    }
    s.push_str("\n### Commit capacity\n\n");
    push_lines(&mut s, "- ", capacity_lines(r));
    if let Some(g) = &r.group_commit {
        let _ = write!(s, "\n### {}\n\n", group_title(g));
        s.push_str(&group_table(g).to_markdown());
        if !g.summary.is_empty() {
            s.push('\n');
        }
        push_lines(&mut s, "- ", &g.summary);
    }
    s.push_str("\n### Device\n\n");
    s.push_str(&device_table(&r.device).to_markdown());
    let _ = write!(
        s,
        "\n### Flush honesty: `{}`\n\n",
        r.device.flush_verdict.name()
    );
    push_lines(&mut s, "- ", &r.device.flush_reasoning);
    push_lines(&mut s, "\n> warning: ", &r.warnings);
    s
}

/// CSV: one table, a row per case and per group-commit level, the JSON's raw numbers (ns).
pub fn csv(r: &FsyncReport) -> String {
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
    let verdict = r.device.flush_verdict.name();
    let f3 = |x: Option<f64>| x.map_or(String::new(), |x| format!("{x:.3}"));
    // The cells after kind, method, mode and size: what one case or level measured.
    let measured = |committers: u32,
                    commits: u64,
                    elapsed_ns: u64,
                    commits_per_s: f64,
                    l: &LatencySummary,
                    fl: Option<&FlushStats>,
                    verify: VerifyStatus| {
        let mut row = vec![
            committers.to_string(),
            commits.to_string(),
            elapsed_ns.to_string(),
            format!("{commits_per_s:.3}"),
        ];
        row.extend([l.min, l.mean, l.p50, l.p95, l.p99, l.p999, l.max].map(|n| n.to_string()));
        row.push(fl.map_or(String::new(), |f| f.flushes.to_string()));
        row.push(f3(fl.map(|f| f.f_s)));
        row.push(f3(fl.and_then(|f| f.f_await_ms)));
        row.push(verify_name(verify).to_string());
        row.push(verdict.to_string());
        row
    };
    for c in &r.cases {
        let mut row = vec![
            "case".to_string(),
            c.method.name().to_string(),
            c.mode.name().to_string(),
            c.size.to_string(),
        ];
        row.extend(measured(
            1,
            c.commits,
            c.elapsed_ns,
            c.commits_per_s,
            &c.latency_ns,
            c.device_flushes.as_ref(),
            c.verify,
        ));
        t.push(row);
    }
    if let Some(g) = &r.group_commit {
        for l in &g.levels {
            let mut row = vec![
                format!("group_{}", l.layout.name()),
                g.method.name().to_string(),
                "overwrite".to_string(),
                g.size.to_string(),
            ];
            row.extend(measured(
                l.committers,
                l.commits,
                l.elapsed_ns,
                l.commits_per_s,
                &l.latency_ns,
                l.device_flushes.as_ref(),
                l.verify,
            ));
            t.push(row);
        }
    }
    t.to_csv()
}
/// The JSON `iosat fsync --json` prints (schema_version 2), pretty, with a final newline.
pub fn json(r: &FsyncReport) -> String {
    let mut s = serde_json::to_string_pretty(r).expect("an fsync report serialises");
    s.push('\n');
    s
}

/// The page: verdict, latency per method, group commit, device, tables.
pub fn page_html(r: &FsyncReport) -> String {
    let mut body = super::html::context_block(&super::html::fsync_context(r));
    let d = &r.device;
    let _ = write!(
        body,
        "<p>Test directory <code>{}</code>, {} s per case. Latency is the time from the write \
to the moment the commit is durable (the method's flush returned).</p>",
        esc(&r.dir),
        r.duration_s_per_case
    );
    let _ = write!(
        body,
        "<div class=\"verdict\"><h2>Flush honesty: <code>{}</code></h2>",
        esc(d.flush_verdict.name())
    );
    for l in &d.flush_reasoning {
        let _ = write!(body, "<p>{}</p>", esc(l));
    }
    body.push_str("</div>");
    for w in &r.warnings {
        let _ = write!(
            body,
            "<p class=\"note\"><strong>warning:</strong> {}</p>",
            esc(w)
        );
    }

    // Latency per method, one chart per mode (rows: method × size).
    body.push_str("<h2>Commit latency per method</h2>");
    let mut modes = Vec::new();
    for c in &r.cases {
        if !modes.contains(&c.mode) {
            modes.push(c.mode);
        }
    }
    for mode in modes {
        let rows = r
            .cases
            .iter()
            .filter(|c| c.mode == mode)
            .map(|c| {
                let l = &c.latency_ns;
                // The device's own flush time beside the commit: how much of a commit is
                // the device's flush.
                let flush = c.device_flushes.as_ref().and_then(|f| f.f_await_ms);
                (
                    format!("{} {}", c.method.name(), size(c.size)),
                    [l.p50, l.p95, l.p99]
                        .iter()
                        .map(|&n| Some(n as f64 / 1e6))
                        .chain([flush])
                        .collect(),
                )
            })
            .collect();
        let chart = DotChart {
            id: format!("latency-{}", mode.name()),
            title: format!("Commit latency, {} mode", mode.name()),
            x_label: "latency (ms)".into(),
            x_log: true,
            keys: vec![
                "p50".into(),
                "p95".into(),
                "p99".into(),
                "device flush (f_await)".into(),
            ],
            rows,
        };
        body.push_str(&chart.to_svg());
    }
    body.push_str(
        "<p class=\"note\">device flush (f_await): the mean time the device took to complete a \
flush request over the case (the kernel's f_await); a commit far slower than it waits elsewhere \
(the filesystem journal), one faster than any flush did not reach the device.</p>",
    );
    body.push_str("<h2>Commit capacity</h2><ul>");
    for l in capacity_lines(r) {
        let _ = write!(body, "<li>{}</li>", esc(&l));
    }
    body.push_str("</ul>");

    if let Some(g) = &r.group_commit {
        let _ = write!(body, "<h2>{}</h2>", esc(&group_title(g)));
        body.push_str(
            "<p class=\"note\">shared_log: all committers append to one log and one fsync \
covers every commit waiting (group commit); separate_files: each committer writes and fsyncs \
its own file.</p>",
        );
        let pts = |layout: Layout, f: &dyn Fn(&GroupLevel) -> f64| -> Vec<(f64, f64)> {
            g.levels
                .iter()
                .filter(|l| l.layout == layout)
                .map(|l| (f64::from(l.committers), f(l)))
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
        // The committer counts measured are the x ticks.
        let mut counts: Vec<f64> = g.levels.iter().map(|l| f64::from(l.committers)).collect();
        counts.sort_by(f64::total_cmp);
        counts.dedup();
        tput.x_ticks = counts.clone();
        latc.x_ticks = counts;
        for (colour, layout) in [Layout::SharedLog, Layout::SeparateFiles]
            .into_iter()
            .enumerate()
        {
            let p = pts(layout, &|l| l.commits_per_s);
            if p.is_empty() {
                continue;
            }
            let name = layout.name();
            tput.series.push(Series::new(name, p).colour(colour));
            latc.series.push(
                Series::new(
                    format!("{name} avg"),
                    pts(layout, &|l| l.latency_ns.mean as f64 / 1e6),
                )
                .colour(colour),
            );
            latc.series.push(
                Series::new(
                    format!("{name} p99"),
                    pts(layout, &|l| l.latency_ns.p99 as f64 / 1e6),
                )
                .dashed()
                .colour(colour),
            );
        }
        body.push_str(&tput.to_svg());
        body.push_str(&latc.to_svg());
        if !g.summary.is_empty() {
            body.push_str("<ul>");
            for l in &g.summary {
                let _ = write!(body, "<li>{}</li>", esc(l));
            }
            body.push_str("</ul>");
        }
        body.push_str(&html_table(&group_table(g)));
    }

    body.push_str("<h2>Device</h2>");
    body.push_str(&html_table(&device_table(d)));
    body.push_str("<h2>Cases</h2>");
    body.push_str(&html_table(&cases_table(r)));
    page(&format!("iosat fsync: commit latency in {}", r.dir), &body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fsync::{Method, Mode};

    fn case(
        method: Method,
        mode: Mode,
        size: u32,
        p50_us: u64,
        flushes: Option<u64>,
    ) -> CaseResult {
        let l = LatencySummary {
            min: p50_us * 700,
            mean: p50_us * 1100,
            p50: p50_us * 1000,
            p90: p50_us * 1000,
            p95: p50_us * 1500,
            p99: p50_us * 2000,
            p999: p50_us * 4000,
            max: p50_us * 5000,
        };
        let mut c = CaseResult::measured(
            (method, mode, size),
            l,
            (1_000_000 / (p50_us * 11 / 10), 1_000_000_000),
            Some(200.0),
            flushes.map(|f| FlushStats::sample(f, 0.125, 0.1)),
        );
        // The seed's rate is its latency's, not the rounded count's.
        c.commits_per_s = 1e9 / l.mean as f64;
        c
    }

    /// The seed's 7200 rpm disk: 18 ms fsync, 8.5 ms fdatasync, 0.22 ms O_DIRECT into the cache.
    fn seed_report() -> FsyncReport {
        let cases = vec![
            case(Method::Fsync, Mode::Overwrite, 512, 18_000, Some(112)),
            case(Method::Fdatasync, Mode::Overwrite, 512, 8_500, Some(118)),
            case(Method::Odirect, Mode::Overwrite, 512, 220, Some(0)),
        ];
        let level = |n: u32, layout: Layout, cps: f64, per_sync: f64| GroupLevel {
            committers: n,
            layout,
            commits: cps as u64,
            elapsed_ns: 1_000_000_000,
            commits_per_s: cps,
            syncs: (cps / per_sync) as u64,
            commits_per_sync: per_sync,
            latency_ns: LatencySummary {
                min: 9_000_000,
                mean: (n as f64 * 1e9 / cps) as u64,
                p50: (n as f64 * 1e9 / cps) as u64,
                p90: (n as f64 * 1e9 / cps) as u64,
                p95: 30_000_000,
                p99: 40_000_000,
                p999: 50_000_000,
                max: 60_000_000,
            },
            device_flushes: None,
            verify: VerifyStatus::Ok,
            verify_error: None,
            interrupted: false,
        };
        let levels = vec![
            level(1, Layout::SharedLog, 55.0, 1.0),
            level(1, Layout::SeparateFiles, 56.0, 1.0),
            level(4, Layout::SharedLog, 160.0, 3.0),
            level(4, Layout::SeparateFiles, 60.0, 1.0),
        ];
        let dev = crate::fsync::device::DiskFacts {
            name: "sda".into(),
            major: 8,
            minor: 0,
            model: Some("WDC WD2502ABYS-18B7A0".into()),
            write_cache: Some("write back".into()),
            fua: Some(false),
            rotational: Some(true),
            logical_block_size: Some(512),
        };
        let (flush_verdict, flush_reasoning) =
            crate::fsync::verdict::judge(Some(&dev), &cases, false);
        FsyncReport {
            envelope: crate::envelope::Envelope {
                kind: "fsync".into(),
                schema_version: SCHEMA_VERSION,
                iosat_version: "0.1.0".into(),
                host: "db1".into(),
                kernel: "6.1.0".into(),
                cpus: 8,
                started_unix_s: 1_795_336_333,
                started: "2026-11-22T08:32:13.000Z".into(),
            },
            dir: "/var/lib/mysql".into(),
            duration_s_per_case: 1.0,
            verify: true,
            interrupted: false,
            capacity: Capacity {
                target_tps: Some(200.0),
                best_durable: None,
                fsync_reference: Some(CapacityLine {
                    method: Method::Fsync,
                    size: 512,
                    mode: Mode::Overwrite,
                    mean_latency_ns: cases[0].latency_ns.mean,
                    per_connection_commits_per_s: cases[0].per_connection_commits_per_s,
                    connections_for_target_tps: cases[0].connections_for_target_tps,
                }),
            },
            cases,
            skipped: vec![],
            group_commit: Some(GroupCommit {
                method: Method::Fsync,
                size: 4096,
                knee_shared_log: Some(4),
                knee_separate_files: Some(1),
                summary: vec!["shared log: example".into()],
                levels,
            }),
            device: DeviceSection {
                name: Some("sda".into()),
                dev: Some("8:0".into()),
                model: dev.model.clone(),
                write_cache: dev.write_cache.clone(),
                fua: dev.fua,
                rotational: dev.rotational,
                logical_block_size: Some(512),
                flush_verdict,
                flush_reasoning,
            },
            warnings: vec![],
        }
    }

    #[test]
    fn text_output() {
        insta::assert_snapshot!(text(&seed_report(), Format::TEXT));
    }

    #[test]
    fn text_fits_80_columns_and_wide_has_every_column() {
        let narrow = text(&seed_report(), Format::TEXT);
        for l in narrow.lines() {
            assert!(l.chars().count() <= 80, "{l}");
        }
        assert!(!narrow.contains('\x1b'));
        let wide = Format::Text {
            wide: true,
            width: 80,
            color: true,
        };
        let wide = text(&seed_report(), wide);
        for col in ["p99.9 ms", "conns@200tps", "fsyncs/s", "min ms"] {
            assert!(wide.contains(col) && !narrow.contains(col), "{col}");
        }
    }

    #[test]
    fn markdown_output() {
        insta::assert_snapshot!(markdown(&seed_report()));
    }

    #[test]
    fn csv_output() {
        insta::assert_snapshot!(csv(&seed_report()));
    }

    #[test]
    fn json_keys_are_the_issue_s() {
        let v = serde_json::to_value(seed_report()).unwrap();
        assert_eq!(v["schema_version"], 2);
        let c = &v["cases"][0];
        for k in ["method", "size", "mode", "commits_per_s", "latency_ns"] {
            assert!(c.get(k).is_some(), "case lacks {k}");
        }
        assert_eq!(c["method"], "fsync");
        assert_eq!(c["mode"], "overwrite");
        for k in ["min", "mean", "p50", "p95", "p99", "p999", "max"] {
            assert!(c["latency_ns"][k].is_u64(), "latency_ns lacks {k}");
        }
        let d = &v["device"];
        assert_eq!(d["write_cache"], "write back");
        assert_eq!(d["fua"], false);
        assert_eq!(d["rotational"], true);
        assert_eq!(d["flush_verdict"], "plausible");
        assert!(d["flush_reasoning"].as_array().unwrap().len() >= 2);
        insta::assert_json_snapshot!(v);
    }
}
