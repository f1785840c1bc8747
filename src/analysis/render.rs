//! A verdict as people read it: the levels table (report::table::Table, so text, Markdown and CSV
//! carry the same columns) and the summary lines. Returns strings; no IO. Shared by `sweep`
//! and `analyze` so both print the same thing. Imports only the analysis types and report::table;
//! must not import sys/, load/ or import/.

use super::{LevelPoint, Verdict};
use crate::report::table::Table;

/// A latency in ms for a table cell: three decimals below 1 ms, two below 100 ms, one above.
pub fn ms_cell(ns: Option<f64>) -> String {
    match ns {
        Some(ns) if ns.is_finite() && ns > 0.0 => {
            let ms = ns / 1e6;
            if ms < 1.0 {
                format!("{ms:.3}")
            } else if ms < 100.0 {
                format!("{ms:.2}")
            } else {
                format!("{ms:.1}")
            }
        }
        _ => "-".to_string(),
    }
}

fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map(|x| format!("{x:.decimals$}"))
        .unwrap_or_else(|| "-".to_string())
}

/// One row per level: throughput, latency, saturation against the baseline, Little's law, the
/// kernel's view, and what the verdict says about the level.
pub fn levels_table(levels: &[LevelPoint], v: &Verdict) -> Table {
    let mut t = Table::new([
        "concurrency",
        "IOPS",
        "MB/s",
        "avg ms",
        "p50 ms",
        "p95 ms",
        "p99 ms",
        "max ms",
        "avg/base",
        "p95/base",
        "IOPS×lat",
        "%util",
        "aqu-sz",
        "note",
    ]);
    let last = t.headers.len() - 1;
    t.right[last] = false;
    let mut sorted: Vec<&LevelPoint> = levels.iter().collect();
    sorted.sort_by_key(|l| l.concurrency);
    for (l, f) in sorted.iter().zip(&v.levels) {
        let mut notes = Vec::new();
        if l.concurrency == v.baseline_concurrency {
            notes.push("baseline");
        }
        if l.concurrency == v.knee_concurrency {
            notes.push("knee");
        }
        if v.overload_concurrency == Some(l.concurrency) {
            notes.push("overload from here");
        } else if f.overloaded {
            notes.push("overloaded");
        }
        if v.linear_from_concurrency == Some(l.concurrency) {
            notes.push("linear from here");
        }
        if !f.littles_law_ok {
            notes.push("Little's law off");
        }
        let lat = &l.latency_ns;
        t.push([
            l.concurrency.to_string(),
            format!("{:.0}", l.iops),
            format!("{:.1}", l.bytes_per_s / 1e6),
            ms_cell(Some(lat.mean)),
            ms_cell(lat.p50),
            ms_cell(lat.p95),
            ms_cell(lat.p99),
            ms_cell(lat.max),
            super::text::fmt_ratio(f.saturation_avg),
            f.saturation_p95
                .map(super::text::fmt_ratio)
                .unwrap_or_else(|| "-".to_string()),
            format!("{:.2}", f.littles_law_concurrency),
            opt(l.kernel_util_pct, 1),
            opt(l.kernel_aqu_sz, 2),
            notes.join(", "),
        ]);
    }
    t
}

/// The summary as indented text lines under a "Verdict:" heading.
pub fn verdict_text(v: &Verdict) -> String {
    let mut s = String::from("Verdict:\n");
    for line in &v.summary {
        s.push_str("  ");
        s.push_str(line);
        s.push('\n');
    }
    s
}

/// The summary as a Markdown bullet list.
pub fn verdict_markdown(v: &Verdict) -> String {
    v.summary.iter().map(|l| format!("- {l}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{analyze, LatencyNs};

    #[test]
    fn table_marks_baseline_knee_and_overload() {
        let lv: Vec<LevelPoint> = [
            (1u32, 1000.0, 1.0, 1.2),
            (4, 3900.0, 1.03, 1.5),
            (16, 4000.0, 4.0, 9.0),
        ]
        .iter()
        .map(|&(n, x, m, p)| LevelPoint {
            concurrency: n,
            iops: x,
            bytes_per_s: x * 4096.0,
            latency_ns: LatencyNs {
                mean: m * 1e6,
                p95: Some(p * 1e6),
                ..Default::default()
            },
            ..Default::default()
        })
        .collect();
        let v = analyze(&lv);
        let t = levels_table(&lv, &v);
        assert_eq!(t.rows.len(), 3);
        assert_eq!(t.rows[0][13], "baseline");
        assert_eq!(t.rows[1][13], "knee, linear from here");
        assert!(
            t.rows[2][13].starts_with("overload from here"),
            "{:?}",
            t.rows[2]
        );
        assert_eq!(t.rows[2][8], "4.0x");
        assert_eq!(t.rows[2][9], "7.5x");
        assert!(verdict_text(&v).starts_with("Verdict:\n  Baseline"));
    }

    #[test]
    fn ms_cells() {
        assert_eq!(ms_cell(Some(140_000.0)), "0.140");
        assert_eq!(ms_cell(Some(13_690_000.0)), "13.69");
        assert_eq!(ms_cell(Some(2_516_430_000.0)), "2516.4");
        assert_eq!(ms_cell(None), "-");
    }
}
