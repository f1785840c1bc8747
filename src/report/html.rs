//! One self-contained HTML page (inline SVG, inline CSS, no network, no JavaScript) for any
//! iosat result: the page frame and helpers every kind's page uses, and the levels body (the
//! verdict, throughput with the USL fit of `analysis::usl`, latency, the hockey stick, the %util
//! trap, the levels table) shared by sweep and analyze pages. Returns strings; no IO.

use super::levels::{levels_table, LevelRow};
use super::svg::{LineChart, Marker, Series};
use crate::analysis::Verdict;
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

    // 1. Throughput vs concurrency, with the USL fit.
    let mut tput = LineChart::new(
        "throughput",
        "Throughput vs concurrency",
        "concurrency (requests in flight)",
        "IOPS",
    );
    tput.x_log = true;
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
    hs.series.push(Series::new("avg latency", pts));
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

    // 4. The %util trap: util and aqu-sz beside real throughput.
    let util = series(&|r| r.point.kernel_util_pct);
    let aqu = series(&|r| r.point.kernel_aqu_sz);
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
            vec![Series::new("IOPS", series(&|r| Some(r.point.iops))).dashed()],
        ));
        body.push_str("<h2>The %util trap</h2>");
        body.push_str(
            "<p class=\"note\">%util is the share of time with at least one request in flight; \
on a device that serves requests in parallel it reaches 100 % long before throughput stops growing.</p>",
        );
        body.push_str(&trap.to_svg());
    }

    body.push_str("<h2>Levels</h2>");
    body.push_str(&html_table(&levels_table(rows, verdict)));
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::evidence::Spread;
    use crate::analysis::{analyze, LatencyNs, LevelPoint};

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
            row(4, 3600.0, 1.11, 1.6, 0.08),
            row(8, 5300.0, 1.51, 2.6, 0.08),
            row(16, 6000.0, 2.67, 4.4, 0.02),
            row(32, 6100.0, 5.25, 9.0, 0.02),
        ];
        let points: Vec<LevelPoint> = rows.iter().map(|r| r.point.clone()).collect();
        let v = analyze(&points);
        let (lo, hi) = v.knee_range.expect("a range");
        let page = levels_body(&rows, Some(&v));
        assert!(page.contains(&format!("knee {lo}–{hi}")), "no range marker");
        assert!(page.contains("Unstable: the sub-windows"));
        let one = analyze(&points[..1]);
        let page = levels_body(&rows[..1], Some(&one));
        assert!(!page.contains("knee 1"));
        assert!(page.contains("a verdict needs at least two levels"));
    }
}
