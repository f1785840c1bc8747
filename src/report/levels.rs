//! What sweep and analyze results share: the one levels table (text, Markdown, CSV and the
//! HTML page all show it), the verdict's lines, and telling a saved levels document apart
//! (sweep or analyze) and loading it into its typed report, its `schema_version` checked.
//! Returns values and strings; no IO.
//! Must not import: cli/, config/, cmd/, ui/, exporter/.

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

/// The levels table and its legend as text: the narrow columns, or every column with `wide`;
/// the notes and the legend wrapped to `width`; on a terminal the knee row green and the
/// overloaded rows red.
pub fn levels_text(
    rows: &[LevelRow],
    v: Option<&Verdict>,
    format: super::Format,
) -> (String, String) {
    let super::Format::Text { wide, width, color } = format else {
        return levels_text(rows, v, super::Format::TEXT);
    };
    let full = levels_table(rows, v);
    let note = full.headers.len() - 1;
    let paint = |i: usize| {
        let n = &full.rows[i][note];
        if n.contains("overload") {
            Some(super::text::Paint::Overload)
        } else if n.split(", ").any(|w| w == "knee") {
            Some(super::text::Paint::Knee)
        } else {
            None
        }
    };
    let (table, legend) = if wide {
        (full.to_text_fit(usize::MAX, color, paint), LEGEND)
    } else {
        let narrow = full.select(NARROW);
        (
            narrow.to_text_fit(width.min(80), color, paint),
            LEGEND_NARROW,
        )
    };
    (table, super::text::wrap(legend, "", "", width))
}

/// Lines indented under a heading line (`Verdict:`, `Notes:`), each wrapped at word
/// boundaries to `width` with a hanging indent.
pub fn indented_fit(heading: &str, lines: &[String], width: usize) -> String {
    let mut s = format!("{heading}\n");
    for l in lines {
        s.push_str(&super::text::wrap(l, "  ", "    ", width));
    }
    s
}

/// A latency in microseconds with sensible precision for a table cell; "-" when unknown.
pub fn us_cell(ns: Option<f64>) -> String {
    let Some(v) = ns.filter(|v| v.is_finite()).map(|ns| ns / 1e3) else {
        return "-".into();
    };
    if v < 10.0 {
        format!("{v:.2}")
    } else if v < 1000.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

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

/// Lines as a Markdown bullet list, each behind `prefix`.
pub fn bullets(lines: &[String], prefix: &str) -> String {
    lines.iter().map(|l| format!("- {prefix}{l}\n")).collect()
}

/// Lines indented under a heading line (`Verdict:`, `Notes:`), for text output.
pub fn indented(heading: &str, lines: &[String]) -> String {
    let mut s = format!("{heading}\n");
    for l in lines {
        s.push_str("  ");
        s.push_str(l);
        s.push('\n');
    }
    s
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
        assert!(indented("Verdict:", &v.summary).starts_with("Verdict:\n  Baseline"));
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
        let v = analyze(&points);
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
}
