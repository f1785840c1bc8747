//! Whether a sweep's result is sound enough to become the device's profile (`--save-profile`): a
//! profile's baseline is the denominator of every saturation ratio `iosat stat` prints afterwards,
//! and its knee the concurrency it recommends, so an unstable or disturbed baseline or knee would
//! mislead every later judgement. [`profile_doubts`] is the one rule; it reads the verdict's own
//! flags and the evidence measured here (spread, drift at the re-measure, disturbance). Other
//! traffic on the device (a live host) is no doubt by itself: the verdict judged each level
//! against it and widened its intervals by what it explains; it is one when it varied between
//! the levels (the verdict calls those levels disturbed), outweighed iosat's own at a level
//! that matters, or widened the baseline beyond [`MAX_OTHER_WIDENING`]. Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/, sys/.

use super::result::{LevelResult, SweepReport};

/// Mean latency varying between a level's sub-windows by more than this (CV) makes the level
/// an unstable reference: with eight windows a single window then strays ±25 % and more, the
/// size of the ratios `stat` reports as the first signs of saturation (1.2x-1.5x).
pub const MAX_MEAN_CV: f64 = 0.25;
/// The baseline re-measured after the last level more than this far (relative mean latency)
/// from the first measurement: the device or the machine changed during the sweep.
pub const MAX_BASELINE_DRIFT: f64 = 0.25;
/// Waiting for a CPU above this share of a level's mean latency: the level measured the CPU
/// as much as the disk.
pub const MAX_CPU_WAIT_SHARE: f64 = 0.10;
/// Other traffic that explains more than this (relative, ±) of the baseline's latency leaves
/// the profile's denominator too loose to judge `stat`'s first signs of saturation (1.2x-1.5x)
/// by: the same bound as a drifted baseline.
pub const MAX_OTHER_WIDENING: f64 = 0.25;

/// Reasons not to store `r` as a profile, one short phrase each; empty when it is sound. The
/// verdict's own flags come first ([`crate::analysis::Verdict::profile_refusal`]: a baseline
/// or knee it judged unstable against the differences it relies on, disturbed or cut, a
/// drifted baseline); then the absolute limits above, which hold whatever the neighbours do.
pub fn profile_doubts(r: &SweepReport) -> Vec<String> {
    let mut out: Vec<String> = r
        .verdict
        .as_ref()
        .and_then(crate::analysis::Verdict::profile_refusal)
        .into_iter()
        .flat_map(|why| why.split("; ").map(str::to_string).collect::<Vec<_>>())
        .collect();
    let Some(base) = r.levels.iter().min_by_key(|l| l.concurrency) else {
        return out;
    };
    level_doubts("baseline", base, &mut out);
    if let Some(again) = &r.baseline_remeasured {
        let (a, b) = (base.latency_ns.mean as f64, again.latency_ns.mean as f64);
        if a > 0.0 && ((b - a) / a).abs() > MAX_BASELINE_DRIFT {
            out.push(format!(
                "the baseline drifted from {:.1} to {:.1} µs by the end of the sweep",
                a / 1e3,
                b / 1e3
            ));
        }
    }
    if let Some(t) = r.verdict.as_ref().and_then(|v| v.other_traffic.as_ref()) {
        if t.baseline_widened_rel > MAX_OTHER_WIDENING {
            out.push(format!(
                "the other traffic, {}, explains ±{:.0} % of the baseline's latency, more than \
                 ±{:.0} %",
                other_words(base),
                t.baseline_widened_rel * 100.0,
                MAX_OTHER_WIDENING * 100.0
            ));
        }
    }
    let knee = r.verdict.as_ref().map(|v| v.knee_concurrency);
    if let Some(k) = knee.filter(|&k| k != base.concurrency) {
        for l in r.levels.iter().filter(|l| l.concurrency == k) {
            level_doubts(&format!("the knee ({k})"), l, &mut out);
        }
    }
    out.dedup();
    out
}

fn level_doubts(what: &str, l: &LevelResult, out: &mut Vec<String>) {
    if let Some(s) = &l.spread {
        if s.mean_ns_cv > MAX_MEAN_CV {
            out.push(format!(
                "{what} is unstable (mean latency varied {:.0} % between its {} windows)",
                s.mean_ns_cv * 100.0,
                s.windows
            ));
        }
    }
    let Some(d) = &l.disturbance else { return };
    let mean = l.latency_ns.mean as f64;
    if let Some(w) = d.cpu_wait_ns_per_io {
        if mean > 0.0 && w > MAX_CPU_WAIT_SHARE * mean {
            out.push(format!(
                "{what} includes {:.1} µs/IO of waiting for a CPU ({:.0} % of its latency)",
                w / 1e3,
                w / mean * 100.0
            ));
        }
    }
    // More of someone else's requests in flight than iosat's own: the level measured the
    // other workload as much as the device.
    let outweighs = match (d.other_in_flight, d.other_iops) {
        (Some(q), _) => q > f64::from(l.concurrency),
        (None, Some(o)) => o > l.iops,
        _ => false,
    };
    if outweighs {
        out.push(format!(
            "the disk served {} during {what}, more than iosat's own",
            other_words(l)
        ));
    }
    if let Some(sig) = &d.cut_by {
        out.push(format!("{what} was cut short by {sig}"));
    }
}

/// "1500 other requests/s (2.0 in flight)".
fn other_words(l: &LevelResult) -> String {
    let d = l.disturbance.as_ref();
    let o = d.and_then(|d| d.other_iops).unwrap_or(0.0);
    match d.and_then(|d| d.other_in_flight) {
        Some(q) => format!("{o:.0} other requests/s ({q:.1} in flight)"),
        None => format!("{o:.0} other requests/s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::evidence::{Disturbance, Spread};
    use crate::load::result::LatencySummary;

    fn level(c: u32, mean: u64, cv: f64) -> LevelResult {
        LevelResult {
            concurrency: c,
            iops: 1000.0,
            ios: 1000,
            latency_ns: LatencySummary {
                mean,
                ..Default::default()
            },
            spread: Some(Spread {
                windows: 8,
                mean_ns_cv: cv,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn a_steady_quiet_sweep_has_no_doubts() {
        let r = SweepReport {
            levels: vec![level(1, 100_000, 0.05), level(2, 110_000, 0.05)],
            baseline_remeasured: Some(level(1, 105_000, 0.05)),
            ..Default::default()
        };
        assert!(profile_doubts(&r).is_empty());
    }

    #[test]
    fn noise_drift_cpu_wait_other_traffic_and_a_cut_are_each_named() {
        let mut base = level(1, 100_000, 0.4);
        base.disturbance = Some(Disturbance {
            cpu_wait_ns_per_io: Some(40_000.0),
            other_iops: Some(1500.0),
            cut_by: Some("SIGTERM".into()),
            ..Default::default()
        });
        let r = SweepReport {
            levels: vec![base, level(2, 110_000, 0.05)],
            baseline_remeasured: Some(level(1, 200_000, 0.05)),
            ..Default::default()
        };
        let d = profile_doubts(&r);
        assert_eq!(d.len(), 5, "{d:?}");
        assert_eq!(
            d[0],
            "baseline is unstable (mean latency varied 40 % between its 8 windows)"
        );
        assert!(
            d[1].contains("40.0 µs/IO of waiting for a CPU (40 %"),
            "{}",
            d[1]
        );
        assert!(
            d[2].contains("1500 other requests/s during baseline, more than iosat's own"),
            "{}",
            d[2]
        );
        assert_eq!(d[3], "baseline was cut short by SIGTERM");
        assert_eq!(
            d[4],
            "the baseline drifted from 100.0 to 200.0 µs by the end of the sweep"
        );
    }

    /// The issue-27 shape: a device whose knee is at 4, each level's eight windows agreeing
    /// within a CV of `cv[i]`, IOPS and latency alike; `other`: the same other traffic (r/s,
    /// in flight) at every level.
    fn curve(cv: &[f64], other: Option<(f64, f64)>) -> SweepReport {
        let rows = [
            (1, 1000.0, 1.00),
            (2, 1980.0, 1.01),
            (4, 3900.0, 1.03),
            (8, 5000.0, 1.60),
            (16, 5500.0, 2.90),
            (32, 5600.0, 5.70),
        ];
        let levels = rows
            .iter()
            .zip(cv)
            .map(|(&(c, iops, ms), &cv)| {
                let mean = (ms * 1e6) as u64;
                LevelResult {
                    concurrency: c,
                    iops,
                    ios: (iops * 2.0) as u64,
                    elapsed_ns: 2_000_000_000,
                    latency_ns: LatencySummary {
                        mean,
                        p95: mean * 13 / 10,
                        ..Default::default()
                    },
                    spread: Some(Spread {
                        windows: 8,
                        iops_cv: cv,
                        mean_ns_cv: cv,
                        p95_ns_cv: Some(cv),
                        ..Default::default()
                    }),
                    disturbance: other.map(|(r_s, q)| Disturbance {
                        other_iops: Some(r_s),
                        other_r_s: Some(r_s),
                        other_w_s: Some(0.0),
                        other_in_flight: Some(q),
                        ..Default::default()
                    }),
                    ..Default::default()
                }
            })
            .collect();
        let mut r = SweepReport {
            levels,
            complete: true,
            ..Default::default()
        };
        r.refresh_verdict();
        r
    }

    #[test]
    fn one_to_nine_percent_spreads_on_an_idle_host_do_not_block_a_save() {
        // Issue 27 (as issue 25): "the knee (concurrency 4) is unstable" with sub-window
        // spreads of 1-9 % refused an idle host's profile.
        let r = curve(&[0.01, 0.03, 0.09, 0.05, 0.02, 0.07], None);
        let v = r.verdict.as_ref().unwrap();
        assert_eq!(v.knee_concurrency, 4, "{:#?}", v.summary);
        assert!(v.unstable_levels.is_empty(), "{:?}", v.unstable_levels);
        assert_eq!(profile_doubts(&r), Vec::<String>::new());
        // A knee whose windows really scatter (CV 30 %: single windows ±50 % off) still is.
        let r = curve(&[0.01, 0.03, 0.30, 0.05, 0.02, 0.07], None);
        let d = profile_doubts(&r);
        assert!(
            d.iter()
                .any(|x| x == "the knee (concurrency 4) is unstable"),
            "{d:?}"
        );
    }

    #[test]
    fn steady_other_traffic_is_no_doubt_and_too_much_of_it_is() {
        // A live host: 410 other reads/s, 0.4 in flight, at every level.
        let r = curve(&[0.03; 6], Some((410.0, 0.4)));
        assert_eq!(profile_doubts(&r), Vec::<String>::new());
        let t = r.verdict.as_ref().unwrap().other_traffic.clone().unwrap();
        assert!(
            t.baseline_widened_rel > 0.0 && t.baseline_widened_rel < 0.02,
            "{t:?}"
        );
        // 3 in flight beside the baseline's one: refused, and said why.
        let r = curve(&[0.03; 6], Some((3000.0, 3.0)));
        let d = profile_doubts(&r);
        assert!(
            d.iter().any(|x| x
                == "the disk served 3000 other requests/s (3.0 in flight) during baseline, more \
                    than iosat's own"),
            "{d:?}"
        );
        assert!(
            d.iter().any(|x| x
                == "the baseline (concurrency 1) was disturbed by other traffic on the device"),
            "{d:?}"
        );
    }

    #[test]
    fn other_traffic_explaining_more_than_a_quarter_of_the_baseline_is_a_doubt() {
        // A queueing device (latency doubles from 1 to 2) with 0.5 other requests in flight
        // beside the baseline's one: (1 + 0.5)^1 - 1 = ±50 % of its latency is explained.
        let mut r = curve(&[0.03; 6], Some((400.0, 0.5)));
        r.levels[1].latency_ns.mean = r.levels[0].latency_ns.mean * 2;
        r.refresh_verdict();
        let d = profile_doubts(&r);
        assert!(
            d.iter().any(|x| x.starts_with(
                "the other traffic, 400 other requests/s (0.5 in flight), explains ±50 % of the baseline's latency, more than ±25 %"
            )),
            "{d:?}"
        );
    }
}
