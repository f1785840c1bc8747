//! Whether a sweep's result is sound enough to become the device's profile (`--save-profile`): a
//! profile's baseline is the denominator of every saturation ratio `iosat stat` prints afterwards,
//! and its knee the concurrency it recommends, so an unstable or disturbed baseline or knee would
//! mislead every later judgement. [`profile_doubts`] is the one rule; it reads the verdict's own
//! flags and the evidence measured here (spread, drift at the re-measure, disturbance). Pure.
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
/// Other requests on the device above this share of iosat's own: another workload shared it.
pub const MAX_OTHER_SHARE: f64 = 0.10;

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
    if let Some(o) = d.other_iops {
        if o > MAX_OTHER_SHARE * l.iops {
            out.push(format!(
                "the disk served {o:.0} other requests/s during {what}"
            ));
        }
    }
    if let Some(sig) = &d.cut_by {
        out.push(format!("{what} was cut short by {sig}"));
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
            other_iops: Some(500.0),
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
        assert!(d[2].contains("500 other requests/s"), "{}", d[2]);
        assert_eq!(d[3], "baseline was cut short by SIGTERM");
        assert_eq!(
            d[4],
            "the baseline drifted from 100.0 to 200.0 µs by the end of the sweep"
        );
    }
}
