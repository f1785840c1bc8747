//! What sweep and analyze results share: the one levels table (its text, Markdown and page
//! block with the knee and overload marked, its CSV), the verdict's list, the `*` footnote
//! and the levels charts (throughput with the USL fit, latency, the hockey stick, the %util
//! trap). Returns values and strings; no IO.
//! Must not import: cli/, config/, cmd/, ui/, exporter/, report/sweep.rs, report/analyze.rs,
//! report/compare.rs.

use super::doc::{chart, Block, Item, List, Mark, TableBlock};
use super::svg::{LineChart, Marker, Series};
use super::table::Table;
use crate::analysis::evidence::Spread;
use crate::analysis::text::fmt_ratio;
use crate::analysis::throttle::LimitPlace;
use crate::analysis::{LevelFinding, LevelPoint, LittleCheck, Verdict};
use crate::load::result::{KernelView, LittlesLaw};

/// One level as the table and the charts show it, whichever result it comes from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LevelRow {
    /// Throughput, latency, and the kernel's %util and aqu-sz.
    pub point: LevelPoint,
    /// The kernel's r/s, w/s and awaits over the level (a sweep on a disk).
    pub kernel: Option<KernelView>,
    /// The sweep's own Little's law check (it also compares the kernel's aqu-sz); None: the
    /// verdict's check is shown.
    pub littles: Option<LittlesLaw>,
    /// Cut short by a stop signal (Ctrl-C, SIGTERM, SIGHUP).
    pub interrupted: bool,
}

/// Under the text table: what the less obvious columns mean.
pub const LEGEND: &str = "x_base = avg latency / baseline avg (x_base_p95: the same for p95); \
r/s .. %util = the kernel's view of the disk (iostat -x); little = Little's law check (IOPS x \
latency vs concurrency); spread (when measured) = how far the level's sub-windows disagree (CV of \
IOPS or latency); note = what the verdict says of the level";

/// Under the narrow (80-column) text table: its columns, and where the rest are.
pub const LEGEND_NARROW: &str = "x_base = avg latency / baseline avg; %util = the kernel's \
view of the disk (iostat -x); note = what the verdict says of the level; --wide shows every \
column (p50 .. p99.9, x_base_p95, the kernel's r/s .. aqu-sz, Little's law, spread)";

/// The columns the default text table keeps so that it fits 80 columns: throughput, mean and
/// tail latency, the saturation ratio, the kernel's %util (what users came to question) and
/// the verdict's note.
const NARROW: &[&str] = &[
    "conc", "IOPS", "MB/s", "avg_us", "p95_us", "p99_us", "x_base", "%util", "note",
];

pub use crate::units::us_cell;

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.filter(|x| x.is_finite())
        .map(|x| format!("{x:.decimals$}"))
        .unwrap_or_else(|| "-".to_string())
}

/// One row per level: throughput, latency (µs), saturation against the baseline, the
/// kernel's view, Little's law, and what the verdict says about the level.
pub fn levels_table(rows: &[LevelRow], v: Option<&Verdict>) -> Table {
    let mut t = Table::new([
        "conc",
        "IOPS",
        "MB/s",
        "min_us",
        "avg_us",
        "p50_us",
        "p90_us",
        "p95_us",
        "p99_us",
        "p99.9_us",
        "max_us",
        "x_base",
        "x_base_p95",
        "r/s",
        "w/s",
        "r_await",
        "w_await",
        "aqu-sz",
        "%util",
        "little",
        "note",
    ]);
    let last = t.headers.len() - 1;
    t.right[last] = false;
    // The windows' spread, only when some level was measured in sub-windows (a column of
    // dashes for every older file would say nothing).
    let spread_col = rows.iter().any(|r| r.point.spread.is_some());
    if spread_col {
        t.headers.insert(last, "spread".into());
        t.right.insert(last, true);
    }
    for r in rows {
        let p = &r.point;
        let finding = v.and_then(|v| v.levels.iter().find(|f| f.concurrency == p.concurrency));
        let little = little_cell(finding, r.littles.as_ref(), p.kernel_aqu_sz);
        let k = r.kernel.clone().unwrap_or_default();
        let lat = &p.latency_ns;
        t.push([
            format!(
                "{}{}",
                p.concurrency,
                if r.interrupted || finding.is_some_and(|f| f.cut_by.is_some()) {
                    "*"
                } else {
                    ""
                }
            ),
            format!("{:.0}", p.iops),
            format!("{:.1}", p.bytes_per_s / 1e6),
            us_cell(lat.min),
            us_cell(Some(lat.mean)),
            us_cell(lat.p50),
            us_cell(lat.p90),
            us_cell(lat.p95),
            us_cell(lat.p99),
            us_cell(lat.p999),
            us_cell(lat.max),
            finding.map_or("-".into(), |f| fmt_ratio(f.saturation_avg)),
            finding
                .and_then(|f| f.saturation_p95)
                .map_or("-".into(), fmt_ratio),
            opt(k.r_s, 0),
            opt(k.w_s, 0),
            opt(k.r_await, 2),
            opt(k.w_await, 2),
            opt(p.kernel_aqu_sz, 2),
            opt(p.kernel_util_pct, 1),
            little,
            v.map(|v| notes(v, p, finding)).unwrap_or_default(),
        ]);
        if spread_col {
            let row = t.rows.last_mut().expect("just pushed");
            row.insert(row.len() - 1, spread_cell(p.spread.as_ref()));
        }
    }
    t
}

/// A number for a CSV cell: shortest exact decimal, empty when missing or not finite.
pub fn csv_num(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite())
        .map(|x| format!("{x}"))
        .unwrap_or_default()
}

/// The CSV header names of a latency summary, in `LatencySummary` order (min .. max).
pub const LAT_NS_HEADERS: [&str; 8] = [
    "lat_min_ns",
    "lat_mean_ns",
    "lat_p50_ns",
    "lat_p90_ns",
    "lat_p95_ns",
    "lat_p99_ns",
    "lat_p999_ns",
    "lat_max_ns",
];

/// The levels for machines (`analyze --csv`): base units in the header names (ns, bytes,
/// per second, percent as `_pct`), the verdict's ratios as plain numbers, an empty cell for
/// a missing value, and what the verdict says of the level as `;`-separated words.
pub fn levels_csv(rows: &[LevelRow], v: Option<&Verdict>) -> Table {
    let head = ["concurrency", "iops", "bytes_per_s"].into_iter();
    let mut t = Table::new(head.chain(LAT_NS_HEADERS).chain([
        "saturation_avg",
        "saturation_p95",
        "overloaded",
        "kernel_iops",
        "kernel_aqu_sz",
        "kernel_util_pct",
        "littles_implied_concurrency",
        "littles_ok",
        "spread_cv",
        "interrupted",
        "note",
    ]));
    let ns = |v: Option<f64>| csv_num(v.map(f64::round));
    for r in rows {
        let p = &r.point;
        let f = v.and_then(|v| v.levels.iter().find(|f| f.concurrency == p.concurrency));
        let lat = &p.latency_ns;
        let mut row = vec![p.concurrency.to_string(), csv_num(Some(p.iops))];
        row.push(csv_num(Some(p.bytes_per_s.round())));
        row.extend(
            [
                lat.min,
                Some(lat.mean),
                lat.p50,
                lat.p90,
                lat.p95,
                lat.p99,
                lat.p999,
                lat.max,
            ]
            .map(ns),
        );
        row.extend([
            csv_num(f.map(|f| f.saturation_avg)),
            csv_num(f.and_then(|f| f.saturation_p95)),
            f.map(|f| f.overloaded.to_string()).unwrap_or_default(),
            csv_num(p.kernel_iops),
            csv_num(p.kernel_aqu_sz),
            csv_num(p.kernel_util_pct),
            csv_num(f.map(|f| f.littles_law_concurrency)),
            f.map(|f| f.littles_law_ok.to_string()).unwrap_or_default(),
            csv_num(p.spread.as_ref().map(|s| s.iops_cv.max(s.mean_ns_cv))),
            (r.interrupted || f.is_some_and(|f| f.cut_by.is_some())).to_string(),
            v.map(|v| notes(v, p, f).replace(", ", ";"))
                .unwrap_or_default(),
        ]);
        t.push(row);
    }
    t
}

/// A level's spread as "±CV %" of the noisier of IOPS and mean latency; "-" without one.
fn spread_cell(s: Option<&Spread>) -> String {
    s.map_or("-".into(), |s| {
        format!("±{:.0}%", 100.0 * s.iops_cv.max(s.mean_ns_cv))
    })
}

/// The `little` column: the verdict's judgement of the level when there is a verdict (so the
/// table and the verdict never disagree), else the sweep's own check.
fn little_cell(f: Option<&LevelFinding>, own: Option<&LittlesLaw>, aqu: Option<f64>) -> String {
    if let Some(f) = f {
        return match f.little {
            LittleCheck::Throttled => "throttle".to_string(),
            LittleCheck::KernelQueueHigh | LittleCheck::KernelQueueLow => {
                format!("aqu {:.1}?", aqu.unwrap_or(0.0))
            }
            LittleCheck::Ok if f.littles_law_ok => "ok".to_string(),
            LittleCheck::Ok | LittleCheck::InFlightOff => {
                format!("{:.1}!", f.littles_law_concurrency)
            }
        };
    }
    match own {
        None => "-".to_string(),
        Some(l) => match (l.ok, l.kernel_ok) {
            (true, Some(false)) => format!("aqu {:.1}?", l.kernel_aqu_sz.unwrap_or(0.0)),
            (true, _) => "ok".to_string(),
            (false, _) => format!("{:.1}!", l.implied_concurrency),
        },
    }
}

/// What the verdict says of one level: baseline, knee (or within the knee's range), overload,
/// queueing, the throughput limit, Little's law, stability, disturbance, a cut.
fn notes(v: &Verdict, p: &LevelPoint, f: Option<&LevelFinding>) -> String {
    let mut notes: Vec<String> = Vec::new();
    if let Some(sig) = f.and_then(|f| f.cut_by.as_deref()) {
        return format!("cut short by {sig}: not judged");
    }
    if p.concurrency == v.baseline_concurrency {
        notes.push("baseline".into());
    }
    if v.too_few_levels {
        return notes.join(", ");
    }
    if p.concurrency == v.knee_concurrency {
        notes.push("knee".into());
    } else if v
        .knee_range
        .is_some_and(|(lo, hi)| (lo..=hi).contains(&p.concurrency))
    {
        notes.push("knee?".into());
    }
    if v.overload_concurrency == Some(p.concurrency) {
        notes.push("overload from here".into());
    } else if f.is_some_and(|f| f.overloaded) {
        notes.push("overloaded".into());
    } else if v
        .overload_range
        .is_some_and(|(lo, _)| lo <= p.concurrency && v.overload_concurrency > Some(p.concurrency))
    {
        notes.push("overloaded?".into());
    }
    if v.linear_from_concurrency == Some(p.concurrency) {
        notes.push("linear from here".into());
    }
    if let Some(t) = &v.limit {
        if t.from_concurrency == p.concurrency && t.place == LimitPlace::AboveBlockLayer {
            notes.push("throttled from here".into());
        }
    }
    if f.is_some_and(|f| !f.littles_law_ok) {
        notes.push("Little's law off".into());
    }
    if f.is_some_and(|f| f.unstable) {
        notes.push("unstable".into());
    }
    if v.disturbed_levels.contains(&p.concurrency) {
        notes.push("disturbed".into());
    }
    notes.join(", ")
}

/// The verdict's sentences, or the one line saying there is none yet.
pub fn verdict_lines(v: Option<&Verdict>) -> Vec<String> {
    match v {
        Some(v) => v.summary.clone(),
        None => vec!["no level completed: no verdict".into()],
    }
}

/// The footnote for levels marked `*`: cut short, by the signal the verdict names when it
/// knows it (never "Ctrl-C" for a SIGTERM); `interrupted`: some level was cut.
pub fn cut_footnote(v: Option<&Verdict>, interrupted: bool) -> Option<String> {
    let mut signals: Vec<&str> = v
        .into_iter()
        .flat_map(|v| v.levels.iter().filter_map(|f| f.cut_by.as_deref()))
        .collect();
    signals.dedup();
    if signals.is_empty() && !interrupted {
        return None;
    }
    Some(if signals.is_empty() {
        "* level cut short by a stop signal (Ctrl-C, SIGTERM or SIGHUP)".to_string()
    } else {
        format!("* level cut short by {}", signals.join(", "))
    })
}

/// A chart that opens a section of the page.
fn headed(heading: &str, svg: String) -> Block {
    Block::Chart {
        heading: Some(heading.into()),
        svg,
        note: None,
    }
}

/// The levels table as a document block: every column (text: the narrow ones unless
/// `--wide`), the knee row and the overloaded rows marked, the `*` footnote, the legend.
pub fn levels_block(
    rows: &[LevelRow],
    v: Option<&Verdict>,
    footnote: Option<String>,
) -> TableBlock {
    let table = levels_table(rows, v);
    let note = table.headers.len() - 1;
    let marks = table
        .rows
        .iter()
        .map(|r| {
            let n = &r[note];
            if n.contains("overload") {
                Some(Mark::Overload)
            } else if n.split(", ").any(|w| w == "knee") {
                Some(Mark::Knee)
            } else {
                None
            }
        })
        .collect();
    TableBlock {
        table,
        narrow: Some(NARROW),
        marks,
        footnotes: footnote.into_iter().collect(),
        legend: Some((LEGEND_NARROW, LEGEND)),
    }
}

/// The verdict as a document's verdict list: its sentences, the %util lesson (when they do
/// not say it), then `more`.
pub fn verdict_list(v: Option<&Verdict>, more: impl IntoIterator<Item = Item>) -> List {
    let mut items = super::doc::items(&verdict_lines(v));
    // The %util lesson, unless the sentences already say it.
    if let Some(u) = v.and_then(|v| v.util_lesson.as_ref()) {
        if !items.iter().any(|i| i.text.contains(u.as_str())) {
            items.push(Item::plain(format!("%util: {u}")));
        }
    }
    items.extend(more);
    List {
        verdict: true,
        ..List::titled("Verdict", items)
    }
}

/// "disturbed" when the verdict found level `c` disturbed (its figures may be the machine's),
/// else "".
fn disturbed_flag(verdict: Option<&Verdict>, c: u32) -> String {
    if verdict.is_some_and(|v| v.disturbed_levels.contains(&c)) {
        "disturbed".into()
    } else {
        String::new()
    }
}

/// The charts of a sweep or analyze page: throughput (with the USL fit), latency, the hockey
/// stick, and the %util trap when the kernel's view is known; the knee and overload marked
/// with the verdict's uncertainty.
pub fn level_charts(rows: &[LevelRow], verdict: Option<&Verdict>) -> Vec<Block> {
    let ms = |ns: Option<f64>| ns.map(|n| n / 1e6);
    let c = |r: &LevelRow| f64::from(r.point.concurrency);
    let series = |f: &dyn Fn(&LevelRow) -> Option<f64>| -> Vec<(f64, f64)> {
        rows.iter()
            .filter_map(|r| f(r).map(|y| (c(r), y)))
            .collect()
    };
    // A level the verdict found disturbed is ringed on the charts, so that a reader does not
    // take its figure for the device's; one flag per point of `series(f)`.
    let disturbed = |f: &dyn Fn(&LevelRow) -> Option<f64>| -> Vec<String> {
        rows.iter()
            .filter(|r| f(r).is_some())
            .map(|r| disturbed_flag(verdict, r.point.concurrency))
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

    let mut body = Vec::new();
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
    tput.series.push(
        Series::new("measured IOPS", series(&|r| Some(r.point.iops)))
            .flagged(disturbed(&|r| Some(r.point.iops))),
    );
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
    body.push(headed("Throughput", tput.to_svg()));

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
        let pick = |r: &LevelRow| {
            let l = &r.point.latency_ns;
            ms(match name {
                "avg" => Some(l.mean),
                "p95" => l.p95,
                _ => l.p99,
            })
        };
        let pts = series(&pick);
        if !pts.is_empty() {
            let mut se = Series::new(name, pts);
            if name == "avg" {
                se = se.flagged(disturbed(&pick));
            }
            lat.series.push(se);
        }
    }
    lat.markers = markers.clone();
    body.push(headed("Latency", lat.to_svg()));

    body.push(hockey_stick(
        rows,
        judged.map(|v| v.knee_concurrency),
        rows.iter()
            .map(|r| disturbed_flag(verdict, r.point.concurrency))
            .collect(),
    ));
    body.extend(util_trap(rows, &ticks));
    body
}

/// The hockey stick: average latency against throughput, each point labelled with its
/// concurrency, the knee marked.
fn hockey_stick(rows: &[LevelRow], knee: Option<u32>, flags: Vec<String>) -> Block {
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
    hs.series.push(avg.flagged(flags));
    if let Some(k) = knee {
        if let Some(r) = rows.iter().find(|r| r.point.concurrency == k) {
            hs.markers.push(Marker {
                x: r.point.iops,
                label: format!("knee (concurrency {k})"),
            });
        }
    }
    headed("The hockey stick", hs.to_svg())
}

/// The %util trap, when the kernel's view is known: %util (one unit: %) beside real
/// throughput on the right axis, and the kernel's queue (requests) against the offered
/// concurrency (requests) apart.
fn util_trap(rows: &[LevelRow], ticks: &[f64]) -> Vec<Block> {
    let c = |r: &LevelRow| f64::from(r.point.concurrency);
    let series = |f: &dyn Fn(&LevelRow) -> Option<f64>| -> Vec<(f64, f64)> {
        rows.iter()
            .filter_map(|r| f(r).map(|y| (c(r), y)))
            .collect()
    };
    let mut body = Vec::new();
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
        trap.x_ticks = ticks.to_vec();
        trap.series.push(Series::new("%util (kernel)", util));
        trap.right = Some((
            "IOPS".to_string(),
            vec![Series::new("IOPS", series(&|r| Some(r.point.iops))).dashed()],
        ));
        body.push(Block::Chart {
            heading: Some("The %util trap".into()),
            svg: trap.to_svg(),
            note: Some(
                "%util is the share of time with at least one request in flight; on a device \
that serves requests in parallel it reaches 100 % long before throughput stops growing."
                    .into(),
            ),
        });
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
        q.x_ticks = ticks.to_vec();
        q.series.push(Series::new("aqu-sz (kernel)", aqu));
        q.series
            .push(Series::new("offered concurrency", series(&|r| Some(c(r)))).dashed());
        body.push(chart(q.to_svg()));
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{analyze, LatencyNs};
    use crate::load::result::SweepReport;
    use crate::report::Format;
    use serde_json::Value;

    fn rows(lv: &[(u32, f64, f64, f64)]) -> Vec<LevelRow> {
        lv.iter()
            .map(|&(n, x, m, p)| LevelRow {
                point: LevelPoint {
                    concurrency: n,
                    iops: x,
                    bytes_per_s: x * 4096.0,
                    latency_ns: LatencyNs {
                        mean: m * 1e6,
                        p95: Some(p * 1e6),
                        ..Default::default()
                    },
                    ..Default::default()
                },
                ..Default::default()
            })
            .collect()
    }

    #[test]
    fn table_marks_baseline_knee_and_overload() {
        let rows = rows(&[
            (1u32, 1000.0, 1.0, 1.2),
            (4, 3900.0, 1.03, 1.5),
            (16, 4000.0, 4.0, 9.0),
        ]);
        let points: Vec<LevelPoint> = rows.iter().map(|r| r.point.clone()).collect();
        let v = analyze(&points);
        let t = levels_table(&rows, Some(&v));
        let col = |name: &str| t.headers.iter().position(|h| h == name).unwrap();
        assert_eq!(t.rows.len(), 3);
        assert_eq!(t.rows[0][col("note")], "baseline");
        assert_eq!(t.rows[1][col("note")], "knee, linear from here");
        assert!(
            t.rows[2][col("note")].starts_with("overload from here"),
            "{:?}",
            t.rows[2]
        );
        assert_eq!(t.rows[2][col("x_base")], "4.0x");
        assert_eq!(t.rows[2][col("x_base_p95")], "7.5x");
        assert_eq!(t.rows[0][col("p50_us")], "-");
        assert_eq!(t.rows[0][col("avg_us")], "1000");
        let doc = crate::report::doc::Doc {
            blocks: vec![Block::List(verdict_list(Some(&v), []))],
            ..Default::default()
        };
        let text = crate::report::doc::write(&doc, Format::TEXT);
        assert!(text.starts_with("Verdict:\n  Baseline"), "{text}");
    }

    #[test]
    fn little_column_agrees_with_the_verdict_on_a_throttled_run() {
        // 3000 IOPS from concurrency 4 on, the kernel's queue at one request: a throttle.
        let mut rows = rows(&[
            (1u32, 1000.0, 1.0, 1.2),
            (2, 2000.0, 1.0, 1.2),
            (4, 3000.0, 4.0 / 3.0, 1.6),
            (16, 3000.0, 16.0 / 3.0, 6.4),
            (64, 3000.0, 64.0 / 3.0, 25.6),
        ]);
        for r in &mut rows {
            r.point.kernel_aqu_sz = Some(f64::from(r.point.concurrency).min(1.0));
            // The sweep's own check (offered vs aqu-sz) would call these "aqu 1.0?".
            r.littles = Some(LittlesLaw {
                implied_concurrency: f64::from(r.point.concurrency),
                ok: true,
                kernel_aqu_sz: r.point.kernel_aqu_sz,
                kernel_ok: Some(r.point.concurrency <= 2),
            });
        }
        let points: Vec<LevelPoint> = rows.iter().map(|r| r.point.clone()).collect();
        // A throttle is one only when it is set (issue 38): without a limit read from the
        // cgroup, the short kernel queue is not called one.
        let unset = analyze(&points);
        let t = levels_table(&rows, Some(&unset));
        let col = |name: &str| t.headers.iter().position(|h| h == name).unwrap();
        assert!(t.rows.iter().all(|r| r[col("little")] != "throttle"));
        let limits = [crate::analysis::evidence::IoLimit {
            kind: crate::analysis::evidence::LimitKind::ReadIops,
            value: 3000.0,
            dev: "7:0".into(),
            source: "/sys/fs/cgroup/t/io.max".into(),
        }];
        let ctx = crate::analysis::Context {
            limits: &limits,
            read_share: Some(1.0),
            ..Default::default()
        };
        let v = crate::analysis::analyze_with(&points, &ctx);
        assert!(
            !v.summary.iter().any(|s| s.contains("cache hits")),
            "{:#?}",
            v.summary
        );
        let t = levels_table(&rows, Some(&v));
        let col = |name: &str| t.headers.iter().position(|h| h == name).unwrap();
        let little: Vec<&str> = t.rows.iter().map(|r| r[col("little")].as_str()).collect();
        assert_eq!(little, ["ok", "ok", "throttle", "throttle", "throttle"]);
        assert!(
            t.rows[2][col("note")].contains("throttled from here"),
            "{:?}",
            t.rows[2]
        );
    }

    #[test]
    fn spread_column_only_when_measured_and_cut_levels_named() {
        let mut rows = rows(&[(1u32, 1000.0, 1.0, 1.2), (4, 3900.0, 1.03, 1.5)]);
        let points: Vec<LevelPoint> = rows.iter().map(|r| r.point.clone()).collect();
        let t = levels_table(&rows, Some(&analyze(&points)));
        assert!(!t.headers.iter().any(|h| h == "spread"));
        rows[1].point.spread = Some(crate::analysis::evidence::Spread {
            windows: 6,
            iops_cv: 0.04,
            mean_ns_cv: 0.07,
            ..Default::default()
        });
        rows.push(LevelRow {
            point: LevelPoint {
                disturbance: Some(crate::analysis::evidence::Disturbance {
                    cut_by: Some("SIGTERM".into()),
                    ..Default::default()
                }),
                ..rows[1].point.clone()
            },
            ..Default::default()
        });
        rows[2].point.concurrency = 16;
        let points: Vec<LevelPoint> = rows.iter().map(|r| r.point.clone()).collect();
        let t = levels_table(&rows, Some(&analyze(&points)));
        let col = |name: &str| t.headers.iter().position(|h| h == name).unwrap();
        assert_eq!(col("spread") + 1, col("note"));
        assert_eq!(t.rows[0][col("spread")], "-");
        assert_eq!(t.rows[1][col("spread")], "±7%");
        assert_eq!(t.rows[2][col("conc")], "16*");
        assert_eq!(t.rows[2][col("note")], "cut short by SIGTERM: not judged");
        assert!(t.to_text().lines().all(|l| !l.contains("Ctrl-C")));
    }

    #[test]
    fn us_cells() {
        assert_eq!(us_cell(Some(1_234.0)), "1.23");
        assert_eq!(us_cell(Some(140_000.0)), "140.0");
        assert_eq!(us_cell(Some(13_690_000.0)), "13690");
        assert_eq!(us_cell(None), "-");
    }

    #[test]
    fn a_saved_sweep_loads_typed_and_writes_back_the_same_bytes() {
        let text = include_str!("../../tests/fixtures/report/sim_sweep.json");
        let r: SweepReport = serde_json::from_str(text).unwrap();
        assert_eq!(r.levels.len(), 9);
        // Every key comes back where it was, in the same order; the
        // numbers may differ in their last digit (serde_json parses floats fast, not exactly).
        fn keys(v: &Value, at: &str, out: &mut Vec<String>) {
            match v {
                Value::Object(m) => m.iter().for_each(|(k, v)| {
                    out.push(format!("{at}/{k}"));
                    keys(v, &format!("{at}/{k}"), out)
                }),
                Value::Array(a) => a.iter().for_each(|v| keys(v, &format!("{at}[]"), out)),
                _ => {}
            }
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        keys(&serde_json::from_str(text).unwrap(), "", &mut a);
        let back = super::super::sweep::render(&r, Format::Json);
        keys(&serde_json::from_str(&back).unwrap(), "", &mut b);
        assert_eq!(a, b);
        assert_eq!(back.lines().count(), text.lines().count());
    }

    /// The levels part of a sweep or analyze page: charts, table, verdict.
    fn levels_page(rows: &[LevelRow], v: Option<&Verdict>) -> String {
        let mut blocks = level_charts(rows, v);
        blocks.push(Block::Table(levels_block(rows, v, None)));
        blocks.push(Block::List(verdict_list(v, [])));
        let doc = crate::report::doc::Doc {
            blocks,
            ..Default::default()
        };
        crate::report::doc::write(&doc, Format::Html)
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
        let page = levels_page(&rows, Some(&v));
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
        let page = levels_page(&rows[..1], Some(&one));
        assert!(!page.contains("knee 1"));
        assert!(page.contains("a verdict needs at least two levels"));
    }
}
