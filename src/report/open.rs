//! The open-loop part of a sweep result (`sweep --rate`) as document blocks and CSV: the table
//! of offered rates (achieved, latency from the intended start with the p99's 95 % interval,
//! from submission, lateness, kept, and with a target each level's decision on it), the chart of latency against offered IOPS with the closed loop's curve beside it,
//! and the open loop's verdict. Used by report/sweep.rs; returns values, no IO.
//! Must not import: cli/, config/, cmd/, ui/, exporter/.

use super::doc::{chart, Block, Item, List, TableBlock};
use super::levels::{us_cell, LAT_NS_HEADERS};
use super::svg::{LineChart, Marker, Series};
use super::table::Table;
use crate::analysis::open::{decide, Target};
use crate::load::open::result::{OpenLevelResult, SLOW_WAKEUP_P99_NS};
use crate::load::result::SweepReport;

/// The open loop's blocks: heading, table, chart, verdict; none without open-loop levels.
pub fn blocks(r: &SweepReport) -> Vec<Block> {
    let Some(info) = &r.open_loop else {
        return Vec::new();
    };
    // Which generator ran (results written before it was recorded don't say).
    let generator = match info.generator.as_str() {
        "" => String::new(),
        g => format!(", {g}"),
    };
    let mut out = vec![Block::Heading(format!(
        "Open loop: latency at an offered rate ({}, <= {} in flight{generator})",
        info.arrivals.as_str(),
        info.max_inflight
    ))];
    if !r.open_levels.is_empty() {
        let mut t = TableBlock::new(table(&by_rate(r), info.target)).narrow(&NARROW);
        t.legend = Some((
            "--wide adds lat_p50, the p99's 95 % interval, p99.9 and svc (from submission)",
            "every column (the 80-column view keeps offered, IOPS, lat_avg, lat_p99, late_p99, \
             kept and target)",
        ));
        out.push(Block::Table(t));
        out.push(chart(latency_chart(r).to_svg()));
    }
    let mut items: Vec<Item> = info
        .verdict
        .iter()
        .flat_map(|v| v.words.iter().map(Item::plain))
        .collect();
    items.push(Item::plain(
        "lat = from the intended start (what a user arriving on schedule waits); svc = from \
         submission (what the device took); late = how late submissions were; kept = the \
         rate was offered (nothing unsent, achieved within 3 %, under 1 % of requests \
         waiting for a free thread or, on io_uring, a free slot; MACHINE: behind because of \
         this machine, not the device); p99_95% = the range the \
         p99 lies in with 95 % confidence (the level's requests are a sample; consecutive \
         ones in a busy queue wait alike).",
    ));
    if let Some(t) = info.target {
        items.push(Item::plain(format!(
            "target = whether the level met {} <= {:.2} ms: met or missed when the whole 95 % \
             interval is on one side, undecided when it holds the target (within the noise), \
             machine when the level fell behind because of this machine (left out).",
            t.percentile.as_str(),
            t.limit_ns / 1e6
        )));
    }
    if r.open_levels
        .iter()
        .any(|l| l.behind.kept && l.behind.p99_ns > SLOW_WAKEUP_P99_NS)
    {
        items.push(Item::note(
            "submissions were more than 1 ms late at p99 while the pool had room: the \
             machine woke the generator late (busy CPUs); that lateness is in the latency from \
             the intended start",
        ));
    }
    out.push(Block::List(List::titled("Open loop", items)));
    out
}

/// The open-loop levels in order of the offered rate (a target search measures them in the
/// search's order; the JSON keeps that order).
fn by_rate(r: &SweepReport) -> Vec<OpenLevelResult> {
    let mut v = r.open_levels.clone();
    v.sort_by(|a, b| a.offered_iops.total_cmp(&b.offered_iops));
    v
}

/// A target search's answer, for the top of its page: the sentence of
/// [`crate::analysis::open::target_words`], or None when the run searched for no target.
pub fn answer(r: &SweepReport) -> Option<String> {
    let v = r.open_loop.as_ref()?.verdict.as_ref()?;
    v.max_iops_at_target
        .as_ref()
        .map(crate::analysis::open::target_words)
}

/// What text shows in 80 columns: the rate, the latency a user meets (mean, p99), the
/// lateness and the decisions.
const NARROW: [&str; 7] = [
    "offered",
    "IOPS",
    "lat_avg_us",
    "lat_p99_us",
    "late_p99_us",
    "kept",
    "target",
];

fn table(levels: &[OpenLevelResult], target: Option<Target>) -> Table {
    let mut head = vec![
        "offered",
        "IOPS",
        "lat_avg_us",
        "lat_p50_us",
        "lat_p99_us",
        "lat_p99_95%_us",
        "lat_p99.9_us",
        "svc_avg_us",
        "svc_p99_us",
        "late_p99_us",
        "kept",
    ];
    if target.is_some() {
        head.push("target");
    }
    let mut t = Table::new(head);
    for l in levels {
        let (a, s) = (&l.latency_ns, &l.service_latency_ns);
        let us = |v: u64| us_cell(Some(v as f64));
        let mut row = vec![
            format!("{:.0}", l.offered_iops),
            format!("{:.0}", l.iops),
            us(a.mean),
            us(a.p50),
            us(a.p99),
            l.latency_ns_ci95
                .map_or("-".into(), |c| format!("{}-{}", us(c.p99[0]), us(c.p99[1]))),
            us(a.p999),
            us(s.mean),
            us(s.p99),
            us(l.behind.p99_ns),
            match (l.behind.kept, l.behind.lag) {
                (true, _) => "yes".to_string(),
                (false, Some(crate::analysis::open::Lag::Machine)) => "MACHINE".to_string(),
                (false, _) => "BEHIND".to_string(),
            },
        ];
        if let Some(t) = target {
            row.push(decide(&l.point(), t).as_str().to_string());
        }
        t.push(row);
    }
    t
}

/// p99 and mean against offered IOPS, from the intended start and from submission, and the
/// closed loop's p99 against its throughput when the sweep measured one.
fn latency_chart(r: &SweepReport) -> LineChart {
    let mut c = LineChart::new(
        "open-latency",
        "Latency at an offered rate",
        "IOPS (offered; closed loop: achieved)",
        "latency (ms)",
    );
    let ms = |ns: u64| ns as f64 / 1e6;
    // In order of the offered rate: a target search measures its rates in the search's order,
    // and a line drawn in that order zigzags.
    let levels = by_rate(r);
    let pts = |f: &dyn Fn(&OpenLevelResult) -> u64| -> Vec<(f64, f64)> {
        levels.iter().map(|l| (l.offered_iops, ms(f(l)))).collect()
    };
    // A level behind schedule is ringed: its latency is the generator's backlog (or this
    // machine's), not what the device gives at that rate.
    let behind: Vec<String> = levels
        .iter()
        .map(|l| match (l.behind.kept, l.behind.lag) {
            (true, _) => String::new(),
            (false, Some(crate::analysis::open::Lag::Machine)) => "behind (machine)".into(),
            (false, _) => "behind".into(),
        })
        .collect();
    c.series = vec![
        Series::new("p99 from intended start", pts(&|l| l.latency_ns.p99))
            .colour(0)
            .flagged(behind),
        Series::new("mean from intended start", pts(&|l| l.latency_ns.mean))
            .colour(0)
            .dashed(),
        Series::new("p99 from submission", pts(&|l| l.service_latency_ns.p99)).colour(1),
    ];
    // The p99's 95 % interval, where the levels have one.
    for (end, name) in [
        (0, "p99 95 % interval, low"),
        (1, "p99 95 % interval, high"),
    ] {
        let band: Vec<(f64, f64)> = levels
            .iter()
            .filter_map(|l| Some((l.offered_iops, ms(l.latency_ns_ci95?.p99[end]))))
            .collect();
        if !band.is_empty() {
            c.series.push(Series::new(name, band).colour(3).dashed());
        }
    }
    // --target-p99's answer, with its interval.
    let answer = r.open_loop.as_ref().and_then(|i| i.verdict.as_ref());
    if let Some(a) = answer.and_then(|v| v.max_iops_at_target.as_ref()) {
        if a.iops > 0.0 {
            c.markers.push(Marker {
                x: a.iops,
                label: format!(
                    "{} <= {:.2} ms: about {:.0}{}",
                    a.target.percentile.as_str(),
                    a.target.limit_ns / 1e6,
                    a.iops,
                    a.high_iops
                        .map_or(String::new(), |h| format!(" ({:.0}-{h:.0})", a.low_iops))
                ),
            });
        }
    }
    let closed: Vec<(f64, f64)> = r
        .points()
        .iter()
        .filter_map(|p| Some((p.iops, p.latency_ns.p99? / 1e6)))
        .collect();
    if !closed.is_empty() {
        c.series
            .push(Series::new("closed loop p99", closed).colour(2).dashed());
    }
    c.y_log = true;
    c
}

/// The 95 % intervals of the latency from the intended start, in CSV (empty when the file
/// has none).
const CI_HEADERS: [&str; 12] = [
    "lat_mean_ci95_lo_ns",
    "lat_mean_ci95_hi_ns",
    "lat_p50_ci95_lo_ns",
    "lat_p50_ci95_hi_ns",
    "lat_p90_ci95_lo_ns",
    "lat_p90_ci95_hi_ns",
    "lat_p95_ci95_lo_ns",
    "lat_p95_ci95_hi_ns",
    "lat_p99_ci95_lo_ns",
    "lat_p99_ci95_hi_ns",
    "lat_p999_ci95_lo_ns",
    "lat_p999_ci95_hi_ns",
];

/// The open-loop levels as CSV: integer nanoseconds, `lat_*` from the intended start (the
/// closed loop's column names), `svc_*` from submission, `late_*` the lateness, then the
/// `lat_*_ci95_*` intervals and, with a target, each level's decision on it (met, missed,
/// undecided).
pub fn csv(r: &SweepReport) -> Table {
    let mut t = Table::new(
        [
            "rate_iops",
            "offered_iops",
            "iops",
            "ios",
            "elapsed_ns",
            "arrivals",
            "max_inflight",
        ]
        .into_iter()
        .chain(LAT_NS_HEADERS)
        .chain([
            "svc_mean_ns",
            "svc_p50_ns",
            "svc_p99_ns",
            "svc_max_ns",
            "late_p50_ns",
            "late_p99_ns",
            "late_max_ns",
            "unsent",
            "pool_waits",
            "kept",
            "interrupted",
        ])
        .chain(CI_HEADERS)
        .chain(["target"]),
    );
    let target = r.open_loop.as_ref().and_then(|i| i.target);
    for l in &r.open_levels {
        let (a, s, b) = (&l.latency_ns, &l.service_latency_ns, &l.behind);
        let mut row = vec![
            format!("{:.1}", l.rate_iops),
            format!("{:.1}", l.offered_iops),
            format!("{:.1}", l.iops),
            l.ios.to_string(),
            l.elapsed_ns.to_string(),
            l.arrivals.as_str().to_string(),
            l.max_inflight.to_string(),
        ];
        row.extend(
            [a.min, a.mean, a.p50, a.p90, a.p95, a.p99, a.p999, a.max].map(|v| v.to_string()),
        );
        row.extend([s.mean, s.p50, s.p99, s.max].map(|v| v.to_string()));
        row.extend([b.p50_ns, b.p99_ns, b.max_ns, b.unsent, b.pool_waits].map(|v| v.to_string()));
        row.push(b.kept.to_string());
        row.push(l.interrupted.to_string());
        match &l.latency_ns_ci95 {
            Some(c) => row.extend(
                [c.mean, c.p50, c.p90, c.p95, c.p99, c.p999]
                    .iter()
                    .flat_map(|[lo, hi]| [lo.to_string(), hi.to_string()]),
            ),
            None => row.extend(CI_HEADERS.map(|_| String::new())),
        }
        row.push(target.map_or(String::new(), |t| decide(&l.point(), t).as_str().into()));
        t.push(row);
    }
    t
}

/// `compare`: every run's open-loop levels in one table (letter, offered, achieved, latency
/// from the intended start, from submission, kept); None when no run has any.
pub fn compare_table(runs: &[(String, &SweepReport)]) -> Option<Table> {
    if runs.iter().all(|(_, r)| r.open_levels.is_empty()) {
        return None;
    }
    let mut t = Table::new([
        "run",
        "offered",
        "IOPS",
        "lat_avg_us",
        "lat_p99_us",
        "svc_p99_us",
        "late_p99_us",
        "kept",
    ]);
    for (letter, r) in runs {
        for l in &r.open_levels {
            let us = |v: u64| us_cell(Some(v as f64));
            t.push([
                letter.clone(),
                format!("{:.0}", l.offered_iops),
                format!("{:.0}", l.iops),
                us(l.latency_ns.mean),
                us(l.latency_ns.p99),
                us(l.service_latency_ns.p99),
                us(l.behind.p99_ns),
                if l.behind.kept { "yes" } else { "BEHIND" }.to_string(),
            ]);
        }
    }
    Some(t)
}

/// `compare`: what the open loop found in `b` against `a`, in words; None when either has
/// no open-loop verdict.
pub fn compare_words(a: &SweepReport, b: &SweepReport) -> Option<String> {
    let va = a.open_loop.as_ref()?.verdict.as_ref()?;
    let vb = b.open_loop.as_ref()?.verdict.as_ref()?;
    let rate = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.0}"));
    let mut parts = vec![format!(
        "open loop kept up to {} IOPS offered (was {})",
        rate(vb.max_kept_iops),
        rate(va.max_kept_iops)
    )];
    // The p99 at each rate both runs offered (within 2 %) and kept: what the same load waits.
    // "Within the noise" when the two 95 % intervals overlap.
    for lb in b.open_levels.iter().filter(|l| l.behind.kept) {
        let Some(la) = a.open_levels.iter().find(|l| {
            l.behind.kept && (l.offered_iops - lb.offered_iops).abs() <= 0.02 * lb.offered_iops
        }) else {
            continue;
        };
        let (pa, pb) = (la.latency_ns.p99, lb.latency_ns.p99);
        let apart = match (la.latency_ns_ci95, lb.latency_ns_ci95) {
            (Some(x), Some(y)) => x.p99[1] < y.p99[0] || y.p99[1] < x.p99[0],
            _ => true,
        };
        parts.push(format!(
            "p99 at {:.0} IOPS offered {:.2} ms (was {:.2} ms{})",
            lb.offered_iops,
            pb as f64 / 1e6,
            pa as f64 / 1e6,
            if apart { "" } else { ", within the noise" }
        ));
    }
    if let (Some(x), Some(y)) = (&va.max_iops_at_target, &vb.max_iops_at_target) {
        // The measured answers' 95 % intervals: two runs whose intervals overlap may not
        // differ at all.
        let interval = |a: &crate::analysis::open::TargetAnswer| match (a.estimate, a.high_iops) {
            (false, Some(h)) => format!(" ({:.0}-{h:.0})", a.low_iops),
            _ => String::new(),
        };
        parts.push(format!(
            "most IOPS at {} <= {:.2} ms {:.0}{} (was {:.0}{} at {} <= {:.2} ms)",
            y.target.percentile.as_str(),
            y.target.limit_ns / 1e6,
            y.iops,
            interval(y),
            x.iops,
            interval(x),
            x.target.percentile.as_str(),
            x.target.limit_ns / 1e6
        ));
    }
    Some(parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::open::result::{Behind, OpenLoopInfo};
    use crate::report::Format;

    fn report() -> SweepReport {
        let level = |offered: f64, p99_us: u64, kept: bool| OpenLevelResult {
            rate_iops: offered,
            offered_iops: offered,
            iops: if kept { offered } else { offered * 0.8 },
            ios: 1000,
            elapsed_ns: 1_000_000_000,
            max_inflight: 64,
            latency_ns: crate::latency::LatencySummary {
                mean: p99_us * 400,
                p50: p99_us * 300,
                p99: p99_us * 1000,
                ..Default::default()
            },
            latency_ns_ci95: Some(crate::analysis::open::LatencyCi {
                p99: [p99_us * 900, p99_us * 1100],
                ..Default::default()
            }),
            behind: Behind {
                p99_ns: 50_000,
                kept,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut r = SweepReport {
            open_loop: Some(OpenLoopInfo {
                rates: "500,1000,3000".into(),
                max_inflight: 64,
                // p99 <= 3.1 ms: met surely at 500 (1.8-2.2 ms), undecided at 1000
                // (2.7-3.3 ms), missed at 3000 (not kept).
                target: Some(crate::analysis::open::Target {
                    percentile: crate::analysis::open::Percentile::P99,
                    limit_ns: 3.1e6,
                }),
                ..Default::default()
            }),
            open_levels: vec![
                level(500.0, 2000, true),
                level(1000.0, 3000, true),
                level(3000.0, 90_000, false),
            ],
            ..Default::default()
        };
        r.refresh_open_verdict();
        r
    }

    #[test]
    fn a_target_search_is_titled_and_answered_first_in_rate_order_with_the_behind_ringed() {
        let mut r = report();
        // Measured in the search's order, not the rates'.
        r.open_levels.swap(0, 2);
        let page = crate::report::sweep::render(&r, Format::Html);
        assert!(
            page.contains("<title>iosat target search (p99 &lt;= 3.10 ms):"),
            "{page}"
        );
        assert!(page.contains("target search: the highest offered rate with p99 &lt;= 3.10 ms"));
        // The answer is the first thing after the header line, before the open loop's table.
        let answer = page
            .find("Measured with an offered load")
            .expect("the answer");
        assert!(answer < page.find("Open loop: latency at an offered rate").unwrap());
        // The chart runs in rate order (x rising along the line) and rings the level behind.
        let svg = &page[page.find("id=\"open-latency\"").unwrap()..];
        let line = svg
            .split("data-series=\"p99 from intended start\"")
            .nth(1)
            .and_then(|t| t.split("points=\"").nth(1))
            .and_then(|t| t.split('"').next())
            .unwrap();
        let xs: Vec<f64> = line
            .split(' ')
            .map(|p| p.split(',').next().unwrap().parse().unwrap())
            .collect();
        assert!(xs.windows(2).all(|w| w[0] < w[1]), "{line}");
        assert_eq!(svg.matches("class=\"flag\"").count(), 1, "one level behind");
        assert!(svg.contains(">behind</text>"));
        // The text table lists the rates in order too.
        let text = crate::report::sweep::render(&r, Format::TEXT);
        let at = |rate: &str| text.find(&format!("\n{rate} ")).unwrap_or(usize::MAX);
        assert!(at("500") < at("1000") && at("1000") < at("3000"), "{text}");
    }

    #[test]
    fn an_open_loop_sweep_shows_its_rates_and_flags_the_one_behind() {
        let r = report();
        let text = crate::report::sweep::render(&r, Format::TEXT);
        assert!(
            text.contains("Open loop: latency at an offered rate"),
            "{text}"
        );
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        let text = crate::report::sweep::render(
            &r,
            Format::Text {
                wide: true,
                width: 80,
                color: false,
            },
        );
        assert!(text.contains("BEHIND"), "{text}");
        assert!(
            text.contains("From 3000 IOPS offered the schedule was not kept"),
            "{text}"
        );
        assert!(!text.contains("no verdict"), "{text}");
        // The p99's interval and each level's decision on the target.
        assert!(
            text.contains("lat_p99_95%_us") && text.contains("2700-3300"),
            "{text}"
        );
        let decisions: Vec<&str> = ["met", "undecided", "missed"]
            .into_iter()
            .filter(|d| {
                text.lines()
                    .any(|l| l.trim_end().ends_with(&format!(" {d}")))
            })
            .collect();
        assert_eq!(decisions, ["met", "undecided", "missed"], "{text}");
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            flat.contains("(500-3,000, 95 %: surely met at 500, surely missed at 3,000; within the noise at 1,000)"),
            "{text}"
        );
        let csv = crate::report::sweep::render(&r, Format::Csv);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 4, "{csv}");
        let cols = lines[0].split(',').count();
        assert!(lines.iter().all(|l| l.split(',').count() == cols), "{csv}");
        assert!(lines[0].contains("lat_p99_ns") && lines[0].contains("svc_p99_ns"));
        let head: Vec<&str> = lines[0].split(',').collect();
        let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
        assert_eq!(
            r.open_levels[1].target_decision,
            Some(crate::analysis::open::Decision::Undecided),
            "in the JSON too"
        );
        let second: Vec<&str> = lines[2].split(',').collect();
        assert_eq!(second[col("lat_p99_ci95_lo_ns")], "2700000", "{csv}");
        assert_eq!(second[col("lat_p99_ci95_hi_ns")], "3300000", "{csv}");
        assert_eq!(second[col("target")], "undecided", "{csv}");
        let html = crate::report::sweep::render(&r, Format::Html);
        assert!(html.contains("Latency at an offered rate"));
        assert!(html.contains("p99 95 % interval, high"), "the p99's band");
        let w = compare_words(&r, &r).unwrap();
        // The same levels against themselves: each rate's p99 overlaps its own interval.
        assert!(w.contains("(was 3.00 ms, within the noise)"), "{w}");
        let mut slower = r.clone();
        for l in &mut slower.open_levels {
            l.latency_ns.p99 *= 3;
            if let Some(ci) = l.latency_ns_ci95.as_mut() {
                ci.p99 = [ci.p99[0] * 3, ci.p99[1] * 3];
            }
        }
        let w2 = compare_words(&r, &slower).unwrap();
        assert!(w2.contains("9.00 ms (was 3.00 ms)"), "{w2}");
        assert!(!w2.contains("within the noise"), "{w2}");
        assert!(
            w.contains("most IOPS at p99 <= 3.10 ms 1040 (500-3000) (was 1040 (500-3000) at"),
            "{w}"
        );
        assert!(
            html.contains("p99 &lt;= 3.10 ms: about 1040 (500-3000)"),
            "the answer's marker"
        );
    }

    #[test]
    fn the_heading_names_the_generator_when_the_result_records_it() {
        let mut r = report();
        let text = crate::report::sweep::render(&r, Format::TEXT);
        assert!(!text.contains("in flight, "), "an older result: {text}");
        r.open_loop.as_mut().unwrap().generator = "io_uring".into();
        let text = crate::report::sweep::render(&r, Format::TEXT);
        assert!(text.contains("<= 64 in flight, io_uring)"), "{text}");
    }
}
