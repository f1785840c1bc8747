//! One self-contained HTML page (inline SVG, inline CSS, no network, no JavaScript) for any
//! iosat result: the page frame and helpers every kind's page uses, the context header that
//! says what was measured and where ([`context_rows`], one function per kind), the levels body
//! (the verdict, throughput with the USL fit of `analysis::usl`, latency, the hockey stick, the
//! %util trap, the levels table with the knee and overload rows marked) shared by sweep and
//! analyze pages, the sweep page's per-direction and latency-distribution charts, and the
//! analyze page's device series. Returns strings; no IO.
//! Must not import: cli/, config/, cmd/, ui/, exporter/.

use super::levels::{levels_table, LevelRow};
use super::svg::{DotChart, LineChart, Marker, Series};
use super::Report;
use crate::analysis::Verdict;
use crate::import::report::AnalyzeReport;
use crate::load::result::SweepReport;
use crate::units::{block_size, human_bytes, iso_utc};
use std::fmt::Write as _;

const CSS: &str = "body{font-family:sans-serif;max-width:980px;margin:24px auto;padding:0 12px;color:#222}\
h1{font-size:22px}h2{font-size:18px;margin-top:32px}table{border-collapse:collapse;margin:12px 0;font-size:13px}\
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}\
.verdict{background:#f6f8fa;border-left:4px solid #0072B2;padding:8px 14px}.note{color:#555;font-size:13px}\
svg.chart{display:block;margin:12px 0;max-width:100%;height:auto}\
.scroll{overflow-x:auto;max-width:100%}.context table,table.context{font-size:13px}.context th,table.context th{text-align:left;background:#f4f4f4}\
.context td,table.context td{text-align:left}tr.knee td{background:#e6f4ea}tr.overload td{background:#fdecea}\
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

/// A table whose rows `mark` tags (a CSS class, and the word beside the first cell).
pub(crate) fn html_table_marked(
    t: &crate::report::table::Table,
    mark: &dyn Fn(usize) -> Option<&'static str>,
) -> String {
    let mut s = String::from("<div class=\"scroll\"><table><thead><tr>");
    for h in &t.headers {
        let _ = write!(s, "<th>{}</th>", esc(h));
    }
    s.push_str("</tr></thead><tbody>");
    for (i, r) in t.rows.iter().enumerate() {
        let m = mark(i);
        match m {
            Some(class) => {
                let _ = write!(s, "<tr class=\"{class}\">");
            }
            None => s.push_str("<tr>"),
        }
        for (j, c) in r.iter().enumerate() {
            let tag = match m {
                Some(class) if j == 0 => format!("<span class=\"tag\">{class}</span>"),
                _ => String::new(),
            };
            let _ = write!(s, "<td>{}{tag}</td>", esc(c));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table></div>");
    s
}

/// What was measured and where, as (label, value) rows: one function per result kind, from
/// the fields the result carries. Host, kernel and CPU count are not in today's results; they
/// join here when the results carry them (issue 16's common envelope).
pub fn context_rows(r: &Report) -> Vec<(&'static str, String)> {
    match r {
        Report::Sweep(s) => sweep_context(s),
        Report::Analyze(a) => analyze_context(a),
        Report::Fsync(f) => fsync_context(f),
        Report::Stat { devices, idle } => stat_context(devices, idle),
    }
}

/// Where and when a result was measured, from its envelope (fields an older file lacks are
/// left out).
fn envelope_rows(e: &crate::envelope::Envelope) -> Vec<(&'static str, String)> {
    let mut v = Vec::new();
    if !e.host.is_empty() {
        v.push(("host", e.host.clone()));
    }
    if !e.kernel.is_empty() {
        v.push(("kernel", e.kernel.clone()));
    }
    if e.cpus > 0 {
        v.push(("CPUs", e.cpus.to_string()));
    }
    v
}

/// When and by which iosat, from the envelope.
fn envelope_tail(e: &crate::envelope::Envelope) -> Vec<(&'static str, String)> {
    let mut v = Vec::new();
    if !e.started.is_empty() {
        v.push(("date", e.started.clone()));
    } else if e.started_unix_s > 0 {
        v.push(("date", iso_utc(e.started_unix_s as i64 * 1_000_000_000)));
    }
    if !e.iosat_version.is_empty() {
        v.push(("iosat version", e.iosat_version.clone()));
    }
    v
}

fn sweep_context(r: &SweepReport) -> Vec<(&'static str, String)> {
    let (w, t) = (&r.workload, &r.target);
    let mut v = vec![("measured", "concurrency sweep".to_string())];
    v.extend(envelope_rows(&r.envelope));
    if let Some(d) = &t.disk_device {
        let about: Vec<String> = [t.disk_model.clone(), t.disk_size_bytes.map(human_bytes)]
            .into_iter()
            .flatten()
            .collect();
        v.push((
            "device",
            if about.is_empty() {
                d.clone()
            } else {
                format!("{d} ({})", about.join(", "))
            },
        ));
    }
    if t.kind != "none" {
        v.push((
            "target",
            format!("{} ({}, {})", t.path, t.kind, human_bytes(t.size_bytes)),
        ));
    }
    v.push((
        "pattern",
        if w.pattern == "randrw" {
            format!("randrw, {} % reads", w.read_pct)
        } else {
            w.pattern.clone()
        },
    ));
    v.push(("block size", block_size(w.block_size)));
    v.push((
        "engine",
        if w.engine_spec.is_empty() {
            w.engine.clone()
        } else {
            format!("{} ({})", w.engine, w.engine_spec)
        },
    ));
    v.push((
        "O_DIRECT",
        if w.direct { "yes" } else { "no (buffered)" }.into(),
    ));
    // Each concurrency once: --repeat passes and re-measures measure some again.
    let lv: Vec<u32> = r.points().iter().map(|p| p.concurrency).collect();
    v.push((
        "levels",
        lv.iter().map(u32::to_string).collect::<Vec<_>>().join(", "),
    ));
    v.push((
        "duration",
        format!(
            "{} s per level after {} s ramp{}",
            w.duration_ns as f64 / 1e9,
            w.ramp_ns as f64 / 1e9,
            if w.repeat > 1 {
                format!(", {} passes", w.repeat)
            } else {
                String::new()
            }
        ),
    ));
    v.extend(envelope_tail(&r.envelope));
    v
}

fn analyze_context(r: &AnalyzeReport) -> Vec<(&'static str, String)> {
    let src = &r.source;
    let mut v = vec![(
        "measured",
        if r.levels.is_empty() {
            "device time series (diagnosis)".to_string()
        } else {
            "levels of concurrency (verdict)".to_string()
        },
    )];
    v.extend(envelope_rows(&r.envelope));
    v.push(("source", src.tool.name().to_string()));
    if !src.files.is_empty() {
        let files: Vec<String> = src
            .files
            .iter()
            .map(|f| match &f.version {
                Some(ver) => format!("{} ({} {ver})", f.path, f.tool.name()),
                None => f.path.clone(),
            })
            .collect();
        v.push(("files", files.join(", ")));
    }
    if !r.devices.is_empty() {
        let names: Vec<&str> = r.devices.iter().map(|d| d.device.as_str()).collect();
        v.push(("device", names.join(", ")));
    }
    if let Some(p) = &src.pattern {
        v.push(("pattern", p.clone()));
    }
    if let Some(b) = src.block_size {
        v.push(("block size", block_size(b)));
    }
    if !r.levels.is_empty() {
        let lv: Vec<String> = r.levels.iter().map(|l| l.concurrency.to_string()).collect();
        v.push(("levels", lv.join(", ")));
    }
    v.extend(envelope_tail(&r.envelope));
    v
}

pub(crate) fn fsync_context(r: &crate::fsync::FsyncReport) -> Vec<(&'static str, String)> {
    let d = &r.device;
    let mut v = vec![("measured", "commit latency (fsync and friends)".to_string())];
    v.extend(envelope_rows(&r.envelope));
    let dev: Vec<String> = [
        d.name.clone(),
        d.model.clone(),
        d.dev.clone().map(|x| format!("dev {x}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !dev.is_empty() {
        v.push(("device", dev.join(", ")));
    }
    v.push(("directory", r.dir.clone()));
    if let Some(wc) = &d.write_cache {
        v.push(("write cache", wc.clone()));
    }
    if let Some(rot) = d.rotational {
        v.push(("rotational", if rot { "yes" } else { "no" }.into()));
    }
    let mut sizes: Vec<u32> = r.cases.iter().map(|c| c.size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    let mut methods: Vec<&str> = Vec::new();
    for c in &r.cases {
        if !methods.contains(&c.method.name()) {
            methods.push(c.method.name());
        }
    }
    v.push(("methods", methods.join(", ")));
    v.push((
        "block size",
        sizes
            .iter()
            .map(|&b| block_size(u64::from(b)))
            .collect::<Vec<_>>()
            .join(", "),
    ));
    v.push(("duration", format!("{} s per case", r.duration_s_per_case)));
    v.extend(envelope_tail(&r.envelope));
    v
}

pub(crate) fn stat_context(
    devs: &[crate::monitor::series::StatSeries],
    idle: &[String],
) -> Vec<(&'static str, String)> {
    let mut v = vec![("measured", "device statistics over time (stat)".to_string())];
    // TODO(issue 16 envelope): host, kernel, cpus once recordings carry them.
    let names: Vec<&str> = devs.iter().map(|d| d.name.as_str()).collect();
    if !names.is_empty() {
        v.push(("device", names.join(", ")));
    }
    if !idle.is_empty() {
        v.push(("idle devices", idle.join(", ")));
    }
    let ends = devs.iter().flat_map(|d| d.points.iter());
    let first = ends
        .clone()
        .map(|p| p.end_wall_ns - (p.interval_s * 1e9) as i64)
        .min();
    let last = ends.clone().map(|p| p.end_wall_ns).max();
    if let (Some(a), Some(b)) = (first, last) {
        v.push(("date", format!("{} to {}", iso_utc(a), iso_utc(b))));
        v.push(("duration", format!("{:.1} s", (b - a) as f64 / 1e9)));
    }
    if let Some(p) = devs.iter().find_map(|d| d.points.first()) {
        v.push(("interval", format!("{:.2} s", p.interval_s)));
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

fn verdict_block(v: &Verdict) -> String {
    let mut s = String::new();
    if v.summary.is_empty() {
        return s;
    }
    s.push_str("<div class=\"verdict\"><h2>Verdict</h2>");
    for l in &v.summary {
        let _ = write!(s, "<p>{}</p>", esc(l));
    }
    if let Some(u) = &v.util_lesson {
        let _ = write!(s, "<p><strong>%util:</strong> {}</p>", esc(u));
    }
    s.push_str("</div>");
    s
}

/// The body of a sweep or analyze page: the verdict, throughput (with the USL fit), latency,
/// the hockey stick, the %util trap when the kernel's view is known, and the levels table.
pub fn levels_body(rows: &[LevelRow], verdict: Option<&Verdict>) -> String {
    let ms = |ns: Option<f64>| ns.map(|n| n / 1e6);
    let c = |r: &LevelRow| f64::from(r.point.concurrency);
    let series = |f: &dyn Fn(&LevelRow) -> Option<f64>| -> Vec<(f64, f64)> {
        rows.iter()
            .filter_map(|r| f(r).map(|y| (c(r), y)))
            .collect()
    };
    // The markers carry the verdict's uncertainty: "knee 4–8", "overload 16 (perhaps 8)";
    // none at all when there is no verdict (fewer than two levels).
    let judged = verdict.filter(|v| !v.too_few_levels);
    let mut markers = Vec::new();
    if let Some(v) = judged {
        let k = v.knee_concurrency;
        markers.push(Marker {
            x: f64::from(k),
            label: match v.knee_range {
                Some((lo, hi)) => format!("knee {lo}–{hi}"),
                None => format!("knee {k}"),
            },
        });
    }
    if let Some(v) = judged {
        if let Some(o) = v.overload_concurrency {
            markers.push(Marker {
                x: f64::from(o),
                label: match v.overload_range {
                    Some((lo, _)) if lo < o => format!("overload {o} (perhaps {lo})"),
                    _ => format!("overload {o}"),
                },
            });
        }
    }

    let mut body = verdict.map(verdict_block).unwrap_or_default();
    // The x axes tick at the levels measured (1, 2, 4 … 256), not at powers of ten.
    let ticks: Vec<f64> = rows.iter().map(c).collect();

    // 1. Throughput vs concurrency, with the USL fit.
    let mut tput = LineChart::new(
        "throughput",
        "Throughput vs concurrency",
        "concurrency (requests in flight)",
        "IOPS",
    );
    tput.x_log = true;
    tput.x_ticks = ticks.clone();
    tput.series.push(Series::new(
        "measured IOPS",
        series(&|r| Some(r.point.iops)),
    ));
    if let Some(fit) = verdict.and_then(|v| v.usl.as_ref()).filter(|u| u.trusted()) {
        let max_c = rows.iter().map(c).fold(1.0, f64::max);
        let pts: Vec<(f64, f64)> = (0..=48)
            .map(|i| {
                let n = 2f64.powf(i as f64 * max_c.log2() / 48.0);
                (n, fit.predict(n))
            })
            .collect();
        tput.series.push(
            Series::new(
                format!("USL fit (σ={:.3}, κ={:.5})", fit.sigma, fit.kappa),
                pts,
            )
            .dashed(),
        );
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
    lat.x_ticks = ticks.clone();
    for name in ["avg", "p95", "p99"] {
        let pts = series(&|r| {
            let l = &r.point.latency_ns;
            ms(match name {
                "avg" => Some(l.mean),
                "p95" => l.p95,
                _ => l.p99,
            })
        });
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
    let pts: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| (r.point.iops, r.point.latency_ns.mean / 1e6))
        .collect();
    let mut avg = Series::new("avg latency (points: concurrency)", pts);
    avg.labels = rows
        .iter()
        .map(|r| r.point.concurrency.to_string())
        .collect();
    hs.series.push(avg);
    if let Some(k) = judged.map(|v| v.knee_concurrency) {
        if let Some(r) = rows.iter().find(|r| r.point.concurrency == k) {
            hs.markers.push(Marker {
                x: r.point.iops,
                label: format!("knee (concurrency {k})"),
            });
        }
    }
    body.push_str("<h2>The hockey stick</h2>");
    body.push_str(&hs.to_svg());

    // 4. The %util trap: util (one unit: %) beside real throughput on the right axis, and
    // the kernel's queue (requests) against the offered concurrency (requests) apart.
    let util = series(&|r| r.point.kernel_util_pct);
    let aqu = series(&|r| r.point.kernel_aqu_sz);
    if !util.is_empty() {
        let mut trap = LineChart::new(
            "util",
            "%util beside real throughput",
            "concurrency (requests in flight)",
            "%util (kernel)",
        );
        trap.x_log = true;
        trap.x_ticks = ticks.clone();
        trap.series.push(Series::new("%util (kernel)", util));
        trap.right = Some((
            "IOPS".to_string(),
            vec![Series::new("IOPS", series(&|r| Some(r.point.iops))).dashed()],
        ));
        body.push_str("<h2>The %util trap</h2>");
        body.push_str(
            "<p class=\"note\">%util is the share of time with at least one request in flight; \
on a device that serves requests in parallel it reaches 100 % long before throughput stops growing.</p>",
        );
        body.push_str(&trap.to_svg());
    }
    if !aqu.is_empty() {
        let mut q = LineChart::new(
            "queue",
            "The kernel's queue against the offered concurrency",
            "concurrency (requests in flight)",
            "requests",
        );
        q.x_log = true;
        q.y_log = true;
        q.x_ticks = ticks.clone();
        q.series.push(Series::new("aqu-sz (kernel)", aqu));
        q.series
            .push(Series::new("offered concurrency", series(&|r| Some(c(r)))).dashed());
        body.push_str(&q.to_svg());
    }

    body.push_str("<h2>Levels</h2>");
    if judged.is_some() {
        body.push_str(
            "<p class=\"note\">The knee row is marked green, the first overloaded row red.</p>",
        );
    }
    let knee = judged.map(|v| v.knee_concurrency);
    let over = judged.and_then(|v| v.overload_concurrency);
    let mark = |i: usize| -> Option<&'static str> {
        let n = rows.get(i)?.point.concurrency;
        if Some(n) == knee {
            Some("knee")
        } else if Some(n) == over {
            Some("overload")
        } else {
            None
        }
    };
    body.push_str(&html_table_marked(&levels_table(rows, verdict), &mark));
    body
}

/// The sweep page: what was measured, the levels body, then per-direction charts for a
/// mixed pattern and the latency distribution of every level.
pub fn sweep_page(r: &SweepReport) -> String {
    let rows = super::sweep::rows(r);
    let mut body = context_block(&sweep_context(r));
    body.push_str(&levels_body(&rows, r.verdict.as_ref()));
    let ticks: Vec<f64> = rows
        .iter()
        .map(|r| f64::from(r.point.concurrency))
        .collect();
    let mixed: Vec<_> = r
        .levels
        .iter()
        .filter_map(|l| {
            Some((
                f64::from(l.concurrency),
                l.read.as_ref()?,
                l.write.as_ref()?,
            ))
        })
        .collect();
    if !mixed.is_empty() {
        body.push_str("<h2>Reads and writes</h2>");
        let mut tput = LineChart::new(
            "directions-throughput",
            "Reads and writes: IOPS vs concurrency",
            "concurrency (requests in flight)",
            "IOPS",
        );
        let mut lat = LineChart::new(
            "directions-latency",
            "Reads and writes: latency vs concurrency (avg solid, p99 dashed)",
            "concurrency (requests in flight)",
            "latency (ms)",
        );
        tput.x_log = true;
        lat.x_log = true;
        lat.y_log = true;
        tput.x_ticks = ticks.clone();
        lat.x_ticks = ticks.clone();
        type Pick = fn(&crate::load::result::DirectionResult) -> f64;
        for (i, (name, dir)) in [("reads", 0usize), ("writes", 1)].into_iter().enumerate() {
            let pts = |f: Pick| -> Vec<(f64, f64)> {
                mixed
                    .iter()
                    .map(|(c, rd, wr)| (*c, f(if dir == 0 { rd } else { wr })))
                    .collect()
            };
            tput.series
                .push(Series::new(name, pts(|d| d.iops)).colour(i));
            lat.series.push(
                Series::new(
                    format!("{name} avg"),
                    pts(|d| d.latency_ns.mean as f64 / 1e6),
                )
                .colour(i),
            );
            lat.series.push(
                Series::new(
                    format!("{name} p99"),
                    pts(|d| d.latency_ns.p99 as f64 / 1e6),
                )
                .colour(i)
                .dashed(),
            );
        }
        body.push_str(&tput.to_svg());
        body.push_str(&lat.to_svg());
    }
    if !r.levels.is_empty() {
        body.push_str("<h2>Latency distribution per level</h2>");
        body.push_str(
            "<p class=\"note\">The percentiles of every level's recorded latency histogram: a \
widening spread at higher concurrency is requests queueing.</p>",
        );
        let chart = DotChart {
            id: "distribution".into(),
            title: "Latency distribution per level".into(),
            x_label: "latency (ms)".into(),
            x_log: true,
            keys: ["p50", "p90", "p99", "p99.9", "max"]
                .map(String::from)
                .to_vec(),
            rows: r
                .levels
                .iter()
                .map(|l| {
                    let s = &l.latency_ns;
                    (
                        format!("concurrency {}", l.concurrency),
                        [s.p50, s.p90, s.p99, s.p999, s.max]
                            .iter()
                            .map(|&n| (n > 0).then(|| n as f64 / 1e6))
                            .collect(),
                    )
                })
                .collect(),
        };
        body.push_str(&chart.to_svg());
    }
    let title = format!(
        "iosat sweep: {} {}{}",
        r.workload.pattern,
        block_size(r.workload.block_size),
        r.target
            .disk_device
            .as_ref()
            .map(|d| format!(" on {d}"))
            .unwrap_or_default()
    );
    page(&title, &body)
}

/// The analyze page: what was read, the levels page when there are levels, and every
/// device's time series (throughput, latency, %util, queue) with its diagnosis.
pub fn analyze_page(r: &AnalyzeReport) -> String {
    use super::analyze::{devices_table, headline, rows};
    let mut body = context_block(&analyze_context(r));
    let _ = write!(body, "<p>{}</p>", esc(&headline(r)));
    if !r.levels.is_empty() {
        body.push_str(&levels_body(&rows(r), r.verdict.as_ref()));
    }
    for d in &r.devices {
        let id = d.device.replace(|c: char| !c.is_ascii_alphanumeric(), "_");
        let _ = write!(body, "<h2>{}</h2>", esc(&d.device));
        if !d.diagnosis.is_empty() {
            body.push_str("<div class=\"verdict\">");
            for l in &d.diagnosis {
                let _ = write!(body, "<p>{}</p>", esc(l));
            }
            body.push_str("</div>");
        }
        // A wall-clock axis when every sample carries a UTC time (pt-diskstats, recordings),
        // else the sample number (iostat -t prints local time in the locale's format).
        let clock: Option<Vec<f64>> = d
            .samples
            .iter()
            .map(|s| Some(crate::units::parse_iso_utc(s.time.as_deref()?)? as f64 / 1e9))
            .collect();
        let clock = clock.filter(|c| c.windows(2).all(|w| w[1] > w[0]));
        let x_of = |i: usize| clock.as_ref().map_or((i + 1) as f64, |c| c[i]);
        let x_label = if clock.is_some() {
            "time (UTC)"
        } else {
            "sample (interval number)"
        };
        let pts = |f: &dyn Fn(&crate::analysis::device::DeviceSample) -> Option<f64>| {
            d.samples
                .iter()
                .enumerate()
                .filter_map(|(i, s)| Some((x_of(i), f(s)?)))
                .collect::<Vec<_>>()
        };
        let n = d.samples.len();
        let extent = if n > 0 {
            vec![x_of(0), x_of(n - 1)]
        } else {
            Vec::new()
        };
        // A gap: more than one and a half of the usual (median) step between samples.
        let mut steps: Vec<f64> = (1..n).map(|i| x_of(i) - x_of(i - 1)).collect();
        steps.sort_by(f64::total_cmp);
        let step = steps.get(steps.len() / 2).copied().unwrap_or(1.0);
        let chart = |name: &str, title: &str, y: &str, ss: Vec<Series>| -> String {
            let mut c = LineChart::new(&format!("{id}-{name}"), title, x_label, y);
            c.series = ss.into_iter().filter(|s| !s.points.is_empty()).collect();
            c.x_extent = extent.clone();
            c.x_gap = Some(step * 1.5);
            c.x_clock = clock.is_some();
            if c.series.is_empty() {
                return String::new();
            }
            c.to_svg()
        };
        body.push_str(&chart(
            "throughput",
            &format!("{}: requests per second", d.device),
            "requests/s",
            vec![
                Series::new("r/s", pts(&|s| s.r_per_s)),
                Series::new("w/s", pts(&|s| s.w_per_s)),
            ],
        ));
        body.push_str(&chart(
            "latency",
            &format!("{}: latency", d.device),
            "await (ms)",
            vec![
                Series::new(
                    "r_await",
                    pts(&|s| s.r_await.filter(|_| s.r_per_s != Some(0.0))),
                ),
                Series::new(
                    "w_await",
                    pts(&|s| s.w_await.filter(|_| s.w_per_s != Some(0.0))),
                ),
            ],
        ));
        body.push_str(&chart(
            "util",
            &format!("{}: %util", d.device),
            "%util",
            vec![Series::new("%util", pts(&|s| s.util_pct))],
        ));
        body.push_str(&chart(
            "queue",
            &format!("{}: load", d.device),
            "aqu-sz (requests in flight)",
            vec![Series::new("aqu-sz", pts(&|s| s.aqu_sz))],
        ));
    }
    if !r.devices.is_empty() {
        body.push_str("<h2>Samples</h2>");
        body.push_str(&html_table(&devices_table(r)));
    }
    for n in &r.source.notes {
        let _ = write!(body, "<p class=\"note\">{}</p>", esc(n));
    }
    let title = if r.levels.is_empty() {
        let names: Vec<&str> = r.devices.iter().map(|d| d.device.as_str()).collect();
        format!(
            "iosat analyze: {} device series ({})",
            r.source.tool.name(),
            names.join(", ")
        )
    } else {
        format!("iosat analyze: {} levels", r.source.tool.name())
    };
    page(&title, &body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::evidence::Spread;
    use crate::analysis::{analyze, LatencyNs, LevelPoint};

    #[test]
    fn the_sweep_header_names_where_and_on_what() {
        let mut r = SweepReport::default();
        r.envelope.host = "db7".into();
        r.envelope.kernel = "6.18.0".into();
        r.envelope.cpus = 2;
        r.target.kind = "temp-file".into();
        r.target.disk_device = Some("nvme0n1".into());
        r.target.disk_model = Some("Samsung SSD 990".into());
        r.target.disk_size_bytes = Some(1 << 40);
        // A pass measured again (--repeat, the adaptive re-measure) lists each level once.
        for (c, rep) in [(1, 0), (2, 0), (4, 0), (2, 1), (4, 1)] {
            r.levels.push(crate::load::result::LevelResult {
                concurrency: c,
                repeat: rep,
                ios: 100,
                elapsed_ns: 1_000_000,
                ..Default::default()
            });
        }
        let rows = sweep_context(&r);
        let get = |k: &str| rows.iter().find(|(l, _)| *l == k).map(|(_, v)| v.clone());
        assert_eq!(get("host").as_deref(), Some("db7"));
        assert_eq!(get("kernel").as_deref(), Some("6.18.0"));
        assert_eq!(get("CPUs").as_deref(), Some("2"));
        assert_eq!(get("levels").as_deref(), Some("1, 2, 4"));
        let dev = get("device").unwrap();
        assert!(
            dev.starts_with("nvme0n1 (Samsung SSD 990, ") && dev.contains("TiB"),
            "{dev}"
        );
    }

    fn row(n: u32, iops: f64, mean_ms: f64, p95_ms: f64, w: f64) -> LevelRow {
        let mean = mean_ms * 1e6;
        LevelRow {
            point: LevelPoint {
                concurrency: n,
                iops,
                bytes_per_s: iops * 4096.0,
                latency_ns: LatencyNs {
                    mean,
                    p95: Some(p95_ms * 1e6),
                    ..Default::default()
                },
                spread: Some(Spread {
                    windows: 6,
                    iops_cv: w / 2.0,
                    iops_min: iops * (1.0 - w),
                    iops_max: iops * (1.0 + w),
                    mean_ns_cv: w / 2.0,
                    mean_ns_min: mean * (1.0 - w),
                    mean_ns_max: mean * (1.0 + w),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn markers_carry_the_knee_range_and_no_verdict_draws_none() {
        let rows = vec![
            row(1, 1000.0, 1.0, 1.2, 0.02),
            row(2, 1950.0, 1.03, 1.3, 0.02),
            // Windows scattering beyond a healthy device's (CV 20 %): unstable, and a range.
            row(4, 3600.0, 1.11, 1.6, 0.4),
            row(8, 5300.0, 1.51, 2.6, 0.4),
            row(16, 6000.0, 2.67, 4.4, 0.02),
            row(32, 6100.0, 5.25, 9.0, 0.02),
        ];
        let points: Vec<LevelPoint> = rows.iter().map(|r| r.point.clone()).collect();
        let v = analyze(&points);
        let (lo, hi) = v.knee_range.expect("a range");
        let page = levels_body(&rows, Some(&v));
        assert!(page.contains(&format!("knee {lo}–{hi}")), "no range marker");
        assert!(page.contains("Unstable: the sub-windows"));
        // The knee and overload rows are marked in the table.
        let knee = format!(
            "<tr class=\"knee\"><td>{}<span class=\"tag\">knee</span>",
            v.knee_concurrency
        );
        assert!(page.contains(&knee), "knee row not marked");
        if let Some(o) = v.overload_concurrency {
            assert!(page.contains(&format!("<tr class=\"overload\"><td>{o}")));
        }
        let one = analyze(&points[..1]);
        let page = levels_body(&rows[..1], Some(&one));
        assert!(!page.contains("knee 1"));
        assert!(page.contains("a verdict needs at least two levels"));
    }
}
