//! Unit tests of how sure the verdict is (issue 10): the windows' spread, noisy neighbours,
//! the overload point's interval, a drifting baseline, disturbances, limits and caps. The
//! curves are built with the helpers of [`super::tests`].

use super::tests::*;
use super::*;

use super::evidence::{Disturbance, IoLimit, LimitKind, Spread};

/// Windows spread ±`w` (relative) around the level's IOPS, mean and p95.
fn spread(l: &LevelPoint, w: f64) -> Spread {
    let p95 = l.latency_ns.p95;
    Spread {
        windows: 6,
        iops_cv: w / 2.0,
        iops_min: l.iops * (1.0 - w),
        iops_max: l.iops * (1.0 + w),
        mean_ns_cv: w / 2.0,
        mean_ns_min: l.latency_ns.mean * (1.0 - w),
        mean_ns_max: l.latency_ns.mean * (1.0 + w),
        p95_ns_cv: p95.map(|_| w / 2.0),
        p95_ns_min: p95.map(|p| p * (1.0 - w)),
        p95_ns_max: p95.map(|p| p * (1.0 + w)),
        ..Default::default()
    }
}

fn with_spread(mut lv: Vec<LevelPoint>, w: &[f64]) -> Vec<LevelPoint> {
    for (l, &w) in lv.iter_mut().zip(w) {
        l.spread = Some(spread(l, w));
    }
    lv
}

/// A device whose knee sits between 4 and 8: power at 4 and 8 within 5 % of each other.
fn soft_knee() -> Vec<LevelPoint> {
    vec![
        level(1, 1000.0, 1.0, Some(1.2)),
        level(2, 1950.0, 1.03, Some(1.3)),
        level(4, 3600.0, 1.11, Some(1.6)),
        level(8, 5300.0, 1.51, Some(2.6)),
        level(16, 6000.0, 2.67, Some(4.4)),
        level(32, 6100.0, 5.25, Some(9.0)),
    ]
}

#[test]
fn without_spread_nothing_new_is_said() {
    let v = analyze(&soft_knee());
    assert_eq!(v.knee_range, None);
    assert_eq!(v.overload_range, None);
    assert!(v.unstable_levels.is_empty());
    assert!(v.levels.iter().all(|f| !f.unstable));
    assert!(!v
        .summary
        .iter()
        .any(|s| s.contains("Unstable") || s.contains("perhaps")));
}

#[test]
fn noisy_neighbours_make_the_knee_a_range_and_are_unstable() {
    let lv = with_spread(soft_knee(), &[0.02, 0.02, 0.08, 0.08, 0.02, 0.02]);
    let v = analyze(&lv);
    let p4 = v.levels[2].power;
    let p8 = v.levels[3].power;
    assert!((p4 / p8 - 1.0).abs() < 0.1, "{p4} {p8}");
    let (lo, hi) = v.knee_range.expect("a range");
    assert!(lo <= 4 && hi >= 8, "{:?}", v.knee_range);
    assert!(
        v.summary
            .iter()
            .any(|s| s.starts_with(&format!("Knee (optimal concurrency): {lo}–{hi} ("))),
        "{:#?}",
        v.summary
    );
    // Issue 25: windows within a CV of 4 % are a healthy device's, not unstable; the knee is
    // a range, which is honest and re-measured, but blocks nothing.
    assert!(v.unstable_levels.is_empty(), "{:?}", v.unstable_levels);
    assert!(!v.summary.iter().any(|s| s.starts_with("Unstable:")));
    // Windows that scatter beyond a healthy device's (CV 20 % at 4 and 8) are unstable.
    let v = analyze(&with_spread(
        soft_knee(),
        &[0.02, 0.02, 0.4, 0.4, 0.02, 0.02],
    ));
    assert_eq!(v.unstable_levels, [4, 8]);
    assert!(v
        .summary
        .iter()
        .any(|s| s.starts_with("Unstable: the sub-windows of concurrency 4 and 8")));
    // Quiet windows: the same means give a single knee.
    let v = analyze(&with_spread(soft_knee(), &[0.005; 6]));
    assert_eq!(v.knee_range, None, "{:#?}", v.summary);
}

#[test]
fn overload_point_with_its_uncertainty() {
    // p95 at 8 is 2.8x the baseline's (not overloaded by the point figures), 16 is 3.4x: with
    // 6 windows at a CV of 7.5 % (95 % interval ±8.6 %) 8 may be overloaded, and at 12.5 %
    // (±14 %) 16 is not surely so; 32 surely is.
    let mut lv = vec![
        level(1, 1000.0, 1.0, Some(1.0)),
        level(4, 3800.0, 1.05, Some(1.5)),
        level(8, 6000.0, 1.33, Some(2.8)),
        level(16, 7000.0, 2.29, Some(3.4)),
        level(32, 7100.0, 4.5, Some(9.0)),
    ];
    lv = with_spread(lv, &[0.02, 0.02, 0.15, 0.25, 0.05]);
    let v = analyze(&lv);
    assert_eq!(v.overload_concurrency, Some(16));
    assert_eq!(v.overload_range, Some((8, 32)), "{:#?}", v.summary);
    assert!(
        v.summary
            .iter()
            .any(|s| s
                .starts_with("Overloaded from concurrency 16, perhaps from 8, surely from 32:")),
        "{:#?}",
        v.summary
    );
}

/// A device whose concurrency 1 started cold, measured as `first`, and whose levels from 2 on
/// are faster than that.
fn after_a_cold_start(first: LevelPoint) -> Vec<LevelPoint> {
    vec![
        first,
        level(2, 2000.0, 1.0, Some(1.2)),
        level(4, 3900.0, 1.02, Some(1.3)),
        level(8, 4200.0, 1.9, Some(2.4)),
        level(16, 4300.0, 3.7, Some(4.8)),
    ]
}

#[test]
fn a_knee_is_never_faster_than_the_baseline() {
    // The "knee at 0.28x the baseline": concurrency 1 measured 3.5x slower than the
    // levels above it (a cold start). The fastest level becomes the baseline.
    let v = analyze(&after_a_cold_start(level(1, 290.0, 3.5, Some(4.0))));
    assert_eq!(v.baseline_concurrency, 2, "{:#?}", v.summary);
    let knee = v
        .levels
        .iter()
        .find(|f| f.concurrency == v.knee_concurrency)
        .unwrap();
    assert!(knee.saturation_avg >= 1.0, "{knee:?}");
    assert!(v.levels.iter().all(|f| f.saturation_avg >= 1.0 - 1e-9));
    assert!(v
        .summary
        .iter()
        .any(|s| s.contains("the verdict takes its baseline from concurrency 2")));
    assert!(!v
        .summary
        .iter()
        .any(|s| s.contains("0.28x") || s.contains("0.29x")));
    // Within the noise (5 % faster) the baseline stays, and the ratio never prints below 1.
    let mut lv = closed(4.0, 1.0, &[1, 2, 4, 8, 16]);
    lv[2].latency_ns.mean *= 0.95;
    let v = analyze(&lv);
    assert_eq!(v.baseline_concurrency, 1);
    assert!(v
        .summary
        .iter()
        .any(|s| s.starts_with("Knee (optimal concurrency): 4")
            && s.contains("(1.00x the baseline)")));
}

#[test]
fn one_level_is_no_verdict() {
    let v = analyze(&[level(4, 4000.0, 1.0, Some(1.2))]);
    assert!(v.too_few_levels);
    assert!(
        v.summary
            .iter()
            .any(|s| s.contains("a verdict needs at least two levels")),
        "{:?}",
        v.summary
    );
    assert!(!v.summary.iter().any(|s| s.starts_with("Knee")));
    assert_eq!(v.overload_concurrency, None);
    assert!(v.usl.is_none() && v.limit.is_none());
    assert!(!analyze(&closed(4.0, 1.0, &[1, 4])).too_few_levels);
}

#[test]
fn usl_needs_four_levels_and_a_good_fit() {
    // Three levels: any three-parameter curve passes through them; no fit, and it says why.
    let v = analyze(&closed(4.0, 1.0, &[1, 4, 16]));
    assert!(v.usl.is_none());
    assert!(v
        .summary
        .iter()
        .any(|s| s.starts_with("No USL fit: 3 levels are too few")));
    assert!(!v.summary.iter().any(|s| s.contains("predicted")));
    // A poor fit (a hard plateau) stays in the typed verdict with its R², but is not shown.
    let v = analyze(&closed(4.0, 8.0, &POW2));
    let u = v.usl.as_ref().unwrap();
    if !u.trusted() {
        assert!(v.summary.iter().any(|s| s.starts_with("No USL fit shown")));
        assert!(!v.summary.iter().any(|s| s.starts_with("USL fit:")));
    }
    // A good fit far from its peak does not predict it.
    let (l, s, k) = (1000.0, 0.01, 0.000_01);
    let v = analyze(&usl_levels(l, s, k, &[1, 2, 4, 8, 16]));
    let line = v
        .summary
        .iter()
        .find(|s| s.starts_with("USL fit:"))
        .unwrap();
    assert!(line.contains("too far beyond"), "{line}");
}

#[test]
fn baseline_drift_is_said_and_widens_the_overload_point() {
    let lv = vec![
        level(1, 1000.0, 1.0, Some(1.0)),
        level(4, 3800.0, 1.05, Some(2.0)),
        level(8, 6000.0, 1.33, Some(4.0)),
        level(16, 7000.0, 2.29, Some(9.0)),
    ];
    // The same baseline again: no drift.
    let v = analyze_remeasured(&lv, &level(1, 990.0, 1.01, Some(1.02)));
    let d = v.baseline_drift.as_ref().unwrap();
    assert!(!d.drifted);
    assert!(v
        .summary
        .iter()
        .any(|s| s.contains("the same within the noise")));
    assert_eq!(v.overload_concurrency, Some(8));
    // 1.6x slower at the end: drifted; against it, 8 is no longer overloaded.
    let again = level(1, 640.0, 1.6, Some(1.6));
    let v = analyze_remeasured(&lv, &again);
    let d = v.baseline_drift.as_ref().unwrap();
    assert!(d.drifted);
    assert_eq!(d.judged_against, confidence::DriftChoice::Both);
    // Every level is widened by half the drift (±30 %): 4 is perhaps overloaded, 16 surely.
    assert_eq!(v.overload_range, Some((4, 16)), "{:#?}", v.summary);
    assert!(v.summary[0].starts_with("Disturbed run: the baseline drifted +60 %"));
    assert!(v.summary.iter().any(|s| s.contains("the baseline drifted")));
    assert!(
        v.summary.iter().any(|s| s.starts_with(
            "Overloaded from concurrency 8, perhaps from 4, surely from 16, from 16 against the \
             re-measured baseline:"
        )),
        "{:#?}",
        v.summary
    );
    // With spreads, the quieter measurement is the better-supported one.
    let mut first = lv.clone();
    first[0].spread = Some(spread(&first[0], 0.3));
    let mut again = again.clone();
    again.spread = Some(spread(&again, 0.01));
    let v = analyze_remeasured(&first, &again);
    let d = v.baseline_drift.as_ref().unwrap();
    assert!(
        !d.drifted || d.judged_against == confidence::DriftChoice::Remeasured,
        "{d:?}"
    );
}

#[test]
fn disturbances_are_one_line_per_cause() {
    let mut lv = closed(4.0, 0.2, &[1, 2, 4, 8, 16, 32]);
    for (i, l) in lv.iter_mut().enumerate() {
        let wait = if i >= 4 { 0.3 * l.latency_ns.mean } else { 0.0 };
        l.disturbance = Some(Disturbance {
            cpu_wait_ns_per_io: Some(wait),
            cpu_busy_pct: Some(if i >= 4 { 97.0 } else { 20.0 }),
            other_iops: Some(if i == 1 || i == 2 { 1500.0 } else { 0.0 }),
            psi_cpu_some_pct: Some(40.0),
            ..Default::default()
        });
    }
    let v = analyze(&lv);
    let cpu: Vec<&String> = v
        .summary
        .iter()
        .filter(|s| s.contains("waiting for a CPU"))
        .collect();
    assert_eq!(cpu.len(), 1, "{:#?}", v.summary);
    assert!(cpu[0].starts_with("Latency at 16 includes"), "{}", cpu[0]);
    assert!(cpu[0].contains("at 32 includes"), "{}", cpu[0]);
    assert!(cpu[0].contains("CPU 97 % busy") && cpu[0].contains("PSI cpu some 40 %"));
    assert!(cpu[0].contains("these levels measure the CPU, not the disk"));
    let other: Vec<&String> = v
        .summary
        .iter()
        .filter(|s| s.contains("other traffic"))
        .collect();
    assert_eq!(other.len(), 1, "{:#?}", v.summary);
    assert!(
        other[0].contains("1500 IOPS at 2, 1500 IOPS at 4"),
        "{}",
        other[0]
    );
    assert_eq!(v.disturbed_levels, [2, 4, 16, 32]);
}

#[test]
fn a_level_cut_by_a_signal_never_decides() {
    // The top level, cut by SIGTERM after a fraction of its time, measured the most power: it
    // must not become the knee, and is labelled by its signal.
    let mut lv = closed(4.0, 1.0, &[1, 2, 4, 8, 16]);
    lv.push(LevelPoint {
        disturbance: Some(Disturbance {
            cut_by: Some("SIGTERM".into()),
            ..Default::default()
        }),
        ..level(32, 90_000.0, 0.2, Some(0.3))
    });
    let v = analyze(&lv);
    assert_eq!(v.knee_concurrency, 4, "{:#?}", v.summary);
    assert_eq!(v.cut_levels, [32]);
    assert_eq!(v.levels.len(), 6);
    let f = v.levels.last().unwrap();
    assert_eq!(f.cut_by.as_deref(), Some("SIGTERM"));
    assert!(v
        .summary
        .iter()
        .any(|s| s == "Concurrency 32 was cut short by SIGTERM: shown, but it decides nothing in this verdict."));
    assert!(!v.summary.iter().any(|s| s.contains("Ctrl-C")));
    assert!((v.peak_iops - 4000.0).abs() < 1e-6, "{}", v.peak_iops);
}

/// 32 units of 1 ms held to 3000 IOPS at concurrency 1 to 64: each level's concurrency, IOPS
/// and mean latency (ms).
pub(super) fn held_at_3000() -> impl Iterator<Item = (u32, f64, f64)> {
    [1u32, 2, 4, 8, 16, 32, 64].into_iter().map(|n| {
        let nf = f64::from(n);
        let x = (nf * 1000.0).min(3000.0);
        (n, x, nf / x * 1000.0)
    })
}

/// 32 units of 1 ms throttled to 3000 IOPS, with the kernel's queue as a fraction of the
/// offered concurrency.
fn throttled(queue_share: f64) -> Vec<LevelPoint> {
    held_at_3000()
        .map(|(n, x, mean)| {
            let nf = f64::from(n);
            let in_flight_below = if nf * 1000.0 > 3000.0 {
                // Only the requests the throttle lets through reach the block layer.
                (3.0 * queue_share.max(0.0)).max(nf * queue_share)
            } else {
                nf * 0.9
            };
            LevelPoint {
                bytes_per_s: x * 4096.0,
                kernel_aqu_sz: Some(in_flight_below.min(nf)),
                ..level(n, x, mean, Some(mean * 1.2))
            }
        })
        .collect()
}

#[test]
fn a_burst_cap_in_the_device_queue_is_placed_below_the_block_layer() {
    let mut lv = throttled(0.95);
    let l = &lv[3];
    lv[3].spread = Some(windows(l, 6000.0, 3000.0, 0.01));
    let v = analyze(&lv);
    let c = v.cap.as_ref().expect("a cap");
    assert_eq!(c.place, throttle::LimitPlace::DeviceQueue);
    let line = v
        .summary
        .iter()
        .find(|s| s.starts_with("Throughput plateaus at about 3000 IOPS"))
        .unwrap();
    assert!(
        line.contains("the cap sits at the device or below it")
            && line.contains("below the block layer"),
        "{line}"
    );
}

#[test]
fn a_throttle_above_the_block_layer_is_named_and_is_not_cache_hits() {
    let mut lv = throttled(0.03);
    for l in &mut lv[3..] {
        l.kernel_aqu_sz = Some(1.0);
    }
    let limits = [IoLimit {
        kind: LimitKind::ReadIops,
        value: 3000.0,
        dev: "253:0".into(),
        source: "/sys/fs/cgroup/iosat-test/io.max".into(),
    }];
    let ctx = Context {
        limits: &limits,
        read_share: Some(1.0),
        device: Some("vda"),
        ..Default::default()
    };
    let v = analyze_with(&lv, &ctx);
    let t = v.limit.as_ref().expect("a limit");
    assert_eq!(t.place, throttle::LimitPlace::AboveBlockLayer);
    assert_eq!(t.from_concurrency, 4);
    assert!((t.iops - 3000.0).abs() < 1.0);
    assert_eq!(t.io_limit.as_ref(), Some(&limits[0]));
    let line = v
        .summary
        .iter()
        .find(|s| s.starts_with("Throughput is flat"))
        .unwrap();
    assert!(line.contains("above the block layer"), "{line}");
    assert!(line.contains(
        "this process may do at most 3000 read IOPS on vda: cgroup /sys/fs/cgroup/iosat-test/io.max"
    ));
    // Never "cache hits" for a throttled level, and the table's judgement is the same.
    assert!(
        !v.summary.iter().any(|s| s.contains("cache hits")),
        "{:#?}",
        v.summary
    );
    for f in v.levels.iter().filter(|f| f.concurrency > 4) {
        assert_eq!(f.little, LittleCheck::Throttled, "{f:?}");
        assert!(f.littles_law_ok);
    }
    // The round figure is only a hint: no provisioned-cap sentence for a cgroup throttle.
    assert!(!v.summary.iter().any(|s| s.contains("provisioned")));
}

#[test]
fn a_limit_in_the_device_queue_is_placed_below_the_kernel() {
    let v = analyze(&throttled(0.95));
    let t = v.limit.as_ref().expect("a limit");
    assert_eq!(t.place, throttle::LimitPlace::DeviceQueue);
    let line = v
        .summary
        .iter()
        .find(|s| s.starts_with("Throughput plateaus at about 3000 IOPS"))
        .expect("the plateau is said");
    assert!(line.contains("at the device or below it"), "{line}");
    // A round figure in the device's queue is still no cap (issue 25).
    assert!(line.contains("cannot tell them apart"), "{line}");
    assert_eq!(v.suspected_cap_iops, None);
    assert!(v.levels.iter().all(|f| f.little != LittleCheck::Throttled));
}

#[test]
fn a_simulated_devices_round_limit_is_no_provisioned_cap() {
    let lv = closed(4.0, 8.0, &POW2);
    let v = analyze_with(
        &lv,
        &Context {
            simulated: true,
            ..Default::default()
        },
    );
    assert_eq!(v.suspected_cap_iops, None);
    assert!(!v.summary.iter().any(|s| s.contains("provisioned")));
    let t = v.limit.as_ref().expect("the plateau is still recognised");
    assert_eq!(t.place, throttle::LimitPlace::Unknown);
    assert_eq!(t.from_concurrency, 4);
}

#[test]
fn a_plateau_after_a_burst_is_still_a_plateau() {
    // The throttle's burst credit lets concurrency 4 run above the limit.
    let mut lv = throttled(0.03);
    lv[2].iops = 3600.0;
    lv[2].latency_ns.mean = 4.0 / 3600.0 * 1e9;
    let t = throttle::find(&lv, &Context::default()).expect("a limit");
    assert_eq!(t.from_concurrency, 8);
    assert_eq!(t.burst_concurrency, Some(4));
}

#[test]
fn kernel_limits_that_the_run_did_not_reach_are_still_said() {
    let limits = [IoLimit {
        kind: LimitKind::WriteIops,
        value: 100.0,
        dev: "7:0".into(),
        source: "/sys/fs/cgroup/x/io.max".into(),
    }];
    let v = analyze_with(
        &closed(4.0, 1.0, &[1, 2, 4, 8]),
        &Context {
            limits: &limits,
            ..Default::default()
        },
    );
    assert!(v.summary.iter().any(|s| s.starts_with(
        "The kernel limits this process's I/O (this process may do at most 100 write IOPS on 7:0"
    )));
}

#[test]
fn util_lesson_when_util_falls_or_stays() {
    let mk = |u: [f64; 4]| with_util(&[1, 4, 16, 64], &[10000.0, 30000.0, 60000.0, 70000.0], &u);
    let fell = analyze(&mk([75.0, 72.0, 70.0, 69.0])).util_lesson.unwrap();
    assert!(
        fell.starts_with("%util even fell from 75 % to 69 % between concurrency 1 and 64"),
        "{fell}"
    );
    let flat = analyze(&mk([75.0, 76.0, 76.0, 76.0])).util_lesson.unwrap();
    assert!(
        flat.starts_with("%util stayed at about 75 % (75 % to 76 %)"),
        "{flat}"
    );
    assert!(!flat.contains("went only"));
}

#[test]
fn profile_refusal_names_the_reasons() {
    assert_eq!(analyze(&soft_knee()).profile_refusal(), None);
    // Issue 25: 1–9 % sub-window spread is a healthy device's and never blocks a save, even
    // where it leaves the knee a range.
    for w in [0.02, 0.08, 0.18] {
        let v = analyze(&with_spread(soft_knee(), &[w; 6]));
        assert_eq!(
            v.profile_refusal(),
            None,
            "CV {}: {:#?}",
            w / 2.0,
            v.summary
        );
    }
    let v = analyze(&with_spread(
        soft_knee(),
        &[0.02, 0.02, 0.4, 0.4, 0.02, 0.02],
    ));
    let why = v.profile_refusal().expect("refused");
    assert!(
        why.contains(&format!(
            "the knee (concurrency {}) is unstable",
            v.knee_concurrency
        )),
        "{why}"
    );
    let mut lv = soft_knee();
    lv[0].disturbance = Some(Disturbance {
        cpu_wait_ns_per_io: Some(0.5e6),
        ..Default::default()
    });
    let why = analyze(&lv).profile_refusal().expect("refused");
    assert_eq!(
        why,
        "the baseline (concurrency 1) was disturbed by the machine (its requests waited for a CPU)"
    );
    let why = analyze(&[level(1, 1.0, 1.0, None)])
        .profile_refusal()
        .unwrap();
    assert_eq!(why, "fewer than two levels, no verdict");
}

#[test]
fn a_cached_level_is_neither_the_baseline_nor_the_knee() {
    // Concurrency 16 answered from a cache: 20000 IOPS × 0.2 ms = 4 in flight of 16.
    let mut lv = closed(4.0, 1.0, &[1, 2, 4, 8, 16]);
    lv[4] = level(16, 20_000.0, 0.2, Some(0.3));
    let v = analyze(&lv);
    assert_eq!(v.baseline_concurrency, 1, "{:#?}", v.summary);
    assert_eq!(v.knee_concurrency, 4, "{:#?}", v.summary);
    assert_eq!(v.levels[4].little, LittleCheck::InFlightOff);
}

#[test]
fn a_short_queue_without_our_requests_is_a_cache_not_a_throttle() {
    // The same plateau, but the kernel completed a tenth of the requests: the page cache.
    let mut lv = throttled(0.03);
    for l in &mut lv {
        l.kernel_iops = Some(l.iops / 10.0);
    }
    let v = analyze(&lv);
    assert_ne!(
        v.limit.as_ref().map(|t| t.place),
        Some(throttle::LimitPlace::AboveBlockLayer)
    );
    assert!(!v
        .summary
        .iter()
        .any(|s| s.contains("throttle on this process")));
    assert!(v.levels.iter().all(|f| f.little != LittleCheck::Throttled));
    // The kernel saw them all: the throttle.
    for l in &mut lv {
        l.kernel_iops = Some(l.iops);
    }
    let v = analyze(&lv);
    assert_eq!(
        v.limit.as_ref().map(|t| t.place),
        Some(throttle::LimitPlace::AboveBlockLayer)
    );
}

#[test]
fn more_windows_narrow_the_interval_and_min_max_does_not_matter() {
    // The same CV over 8 windows and over 24 (three passes): the 95 % interval narrows.
    let w8 = super::confidence::rel_half_width(0.1, 8);
    let w24 = super::confidence::rel_half_width(0.1, 24);
    assert!((w8 - 2.365 * 0.1 / 7f64.sqrt()).abs() < 1e-9, "{w8}");
    assert!(w24 < w8 * 0.6, "{w24} vs {w8}");
    assert_eq!(super::confidence::rel_half_width(0.1, 1), 0.0);
    // A knee range that 6 noisy windows can't resolve is resolved by 48 windows of the same CV.
    let mut lv = with_spread(soft_knee(), &[0.02, 0.02, 0.08, 0.08, 0.02, 0.02]);
    assert!(analyze(&lv).knee_range.is_some());
    for l in &mut lv {
        l.spread.as_mut().unwrap().windows = 48;
    }
    let v = analyze(&lv);
    assert_eq!(v.knee_range, None, "{:#?}", v.summary);
}

#[test]
fn the_levels_that_decide_are_the_ranges_and_unstable_neighbours() {
    let v = analyze(&with_spread(
        soft_knee(),
        &[0.02, 0.02, 0.08, 0.08, 0.02, 0.02],
    ));
    let (lo, hi) = v.knee_range.unwrap();
    let d = v.deciding_levels();
    assert!(
        d.contains(&lo) && d.contains(&hi),
        "{d:?} {:?}",
        v.knee_range
    );
    assert!(!d.contains(&1) && !d.contains(&32), "{d:?}");
    // Settled: nothing to re-measure.
    let v = analyze(&with_spread(soft_knee(), &[0.005; 6]));
    assert!(v.deciding_levels().is_empty(), "{:?}", v.deciding_levels());
}

#[test]
fn a_short_kernel_queue_is_explained_by_the_cpu_wait_when_that_was_measured() {
    // IOPS × latency = 1 at concurrency 1 but the kernel's queue holds 0.06: with 94 % of the
    // latency measured as waiting for a CPU, that is the explanation, not "cache hits".
    let mut lv = closed(2.0, 1.0, &[1, 2, 4, 8]);
    lv[0].kernel_aqu_sz = Some(0.06);
    lv[0].disturbance = Some(Disturbance {
        cpu_wait_ns_per_io: Some(lv[0].latency_ns.mean * 0.94),
        cpu_busy_pct: Some(100.0),
        ..Default::default()
    });
    let v = analyze(&lv);
    let line = v
        .summary
        .iter()
        .find(|s| s.starts_with("Little's law does not close at concurrency 1"))
        .unwrap_or_else(|| panic!("{:#?}", v.summary));
    assert!(line.contains("waiting for a CPU"), "{line}");
    assert!(!line.contains("cache hits"), "{line}");
    // Without the measured wait, the usual suspects.
    lv[0].disturbance = None;
    let v = analyze(&lv);
    assert!(v
        .summary
        .iter()
        .any(|s| s.contains("(cache hits, CPU-bound path)")));
}

#[test]
fn a_level_below_the_baseline_is_never_overloaded() {
    // Issue 25: a disturbed concurrency 1 (a cold start, 4x slower, its p95 10x) makes the
    // verdict re-base on concurrency 2; the slow level 1 is below that baseline and must not be
    // "overloaded from concurrency 1".
    let v = analyze(&after_a_cold_start(level(1, 250.0, 4.0, Some(12.0))));
    assert_eq!(v.baseline_concurrency, 2, "{:#?}", v.summary);
    assert!(!v.levels[0].overloaded, "{:?}", v.levels[0]);
    assert_eq!(v.overload_concurrency, Some(16), "{:#?}", v.summary);
    assert!(
        !v.summary
            .iter()
            .any(|s| s.starts_with("Overloaded from concurrency 1:")),
        "{:#?}",
        v.summary
    );
}

/// A default-length sweep (0.5 s ramp, 2 s measured) of the sim engine, as the analysis sees
/// it. Test-only: the verdict itself never imports load/.
fn sim_sweep(spec: &str, levels: &[u32], seed: u64) -> Vec<LevelPoint> {
    use crate::load::result::LevelResult;
    use crate::load::sim::SimEngine;
    use crate::load::{Engine, LevelCtl, LevelSpec, Pattern};
    let mut e = SimEngine::new(spec.parse().unwrap());
    levels
        .iter()
        .map(|&c| {
            let ls = LevelSpec {
                threads: c,
                queue_depth: 1,
                pattern: Pattern::RandRead,
                block_size: 4096,
                ramp_ns: 500_000_000,
                duration_ns: 2_000_000_000,
                seed: seed.wrapping_mul(1000) + u64::from(c),
            };
            let st = e.run_level(&ls, &LevelCtl::default()).unwrap();
            LevelResult::new(&ls, &st, None).unwrap().point()
        })
        .collect()
}

#[test]
fn cap_recognition_does_not_depend_on_noise() {
    // Issue 25: a device capped at 1000 IOPS was named a cap in two runs of three. Over five
    // seeds of an exponential-service device (4 units of 2 ms: 2000 IOPS of its own), the
    // capped one with burst credit is named every time within 5 %, and neither the same
    // device without a cap nor one whose speed wanders (jitter, a healthy machine's noise)
    // ever is. A cap without a burst can't be told from the device's limit: never named.
    let levels = [1, 2, 4, 8, 16, 32, 64];
    for seed in 1..=5 {
        let v = analyze(&sim_sweep(
            "sim:units=4,service=2ms,dist=exp,cap=1000,burst=1000",
            &levels,
            seed,
        ));
        let x = v
            .suspected_cap_iops
            .unwrap_or_else(|| panic!("seed {seed}: {:#?}", v.summary));
        assert!((x / 1000.0 - 1.0).abs() < 0.05, "seed {seed}: {x}");
        assert_eq!(v.cap.as_ref().unwrap().evidence, cap::CapEvidence::Burst);
        for spec in [
            "sim:units=4,service=2ms,dist=exp",
            "sim:units=4,service=2ms,dist=exp,jitter=8",
            "sim:units=4,service=2ms,dist=exp,cap=1000",
        ] {
            let v = analyze(&sim_sweep(spec, &levels, seed));
            assert!(v.limit.is_some(), "{spec} seed {seed}: {:#?}", v.summary);
            assert_eq!(v.cap, None, "{spec} seed {seed}: {:#?}", v.summary);
            assert_eq!(v.suspected_cap_iops, None);
            assert!(
                v.summary
                    .iter()
                    .any(|s| s.contains("one sweep cannot tell")),
                "{spec} seed {seed}: {:#?}",
                v.summary
            );
        }
    }
}

#[test]
fn a_burst_that_lifts_its_level_neither_moves_the_plateau_nor_its_figure() {
    // A token bucket that persists across levels (a cloud volume, issue 25's test device):
    // full while the load stays under the cap of 1000, it empties at concurrency 4, whose
    // level mean comes out at 1400 IOPS. The plateau starts at 4 and the cap is 1000.
    let mut lv: Vec<LevelPoint> = [1u32, 2, 4, 8, 16, 32, 64]
        .iter()
        .map(|&n| {
            let x = (f64::from(n) * 450.0).min(1000.0);
            let mut l = level(n, x, f64::from(n) / x * 1000.0, None);
            l.spread = Some(windows(&l, x * 1.01, x, 0.02));
            l
        })
        .collect();
    lv[2].iops = 1400.0;
    lv[2].latency_ns.mean = 4.0 / 1400.0 * 1e9;
    lv[2].spread = Some(Spread {
        iops_cv: 0.4,
        ..windows(&lv[2], 2000.0, 1000.0, 0.01)
    });
    let v = analyze(&lv);
    let t = v.limit.as_ref().expect("a plateau");
    assert_eq!(t.from_concurrency, 4, "{t:?}");
    assert!((t.iops / 1000.0 - 1.0).abs() < 0.01, "{t:?}");
    let c = v.cap.as_ref().expect("a cap");
    assert_eq!(c.burst.as_ref().map(|b| b.concurrency), Some(4));
    assert!((v.suspected_cap_iops.unwrap() / 1000.0 - 1.0).abs() < 0.01);
}

#[test]
fn the_numbers_are_judged_from_a_plain_curve_without_words() {
    // Seed 000's curve as a learner would have it: concurrency, IOPS, mean and p95 only.
    let pts: Vec<LevelPoint> = seed000()
        .iter()
        .map(|l| {
            LevelPoint::curve_point(l.concurrency, l.iops, l.latency_ns.mean, l.latency_ns.p95)
        })
        .collect();
    let j = judge::judge(&pts, &Context::default());
    assert_eq!(j.base.as_ref().map(|b| b.concurrency), Some(1));
    assert_eq!(j.overload_concurrency(), Some(64));
    assert!((16..=64).contains(&j.knee_concurrency().unwrap()));
    assert_eq!(j.shape.as_ref().unwrap().linear_from, Some(64));
    // The same numbers the worded verdict gives.
    let v = analyze(&pts);
    assert_eq!(j.knee_concurrency(), Some(v.knee_concurrency));
    // One point judges nothing.
    let one = judge::judge(&pts[..1], &Context::default());
    assert_eq!(
        (one.knee_concurrency(), one.overload_concurrency()),
        (None, None)
    );
}

#[test]
fn a_disturbed_level_does_not_drag_the_plateau_figure() {
    // Issue 25's known device (4 units of 8 ms, 500 IOPS): concurrency 16 measured while the
    // machine was busy, 440 IOPS with windows scattering (CV 30 %); 8 steady at 492.
    let mut lv = closed(4.0, 8.0, &[1, 8, 16]);
    lv[1].iops = 492.0;
    lv[2].iops = 440.0;
    for (l, cv) in lv.iter_mut().zip([0.02, 0.02, 0.3]) {
        l.spread = Some(Spread {
            windows: 8,
            iops_cv: cv,
            mean_ns_cv: cv,
            ..Default::default()
        });
    }
    let t = analyze(&lv).limit.expect("a plateau");
    assert!((t.iops / 492.0 - 1.0).abs() < 0.01, "{t:?}");
}

/// `lv` with the same other traffic at every level: `r_s` reads and `w_s` writes per second
/// of someone else's, `in_flight` of them in flight.
fn with_other(mut lv: Vec<LevelPoint>, r_s: f64, w_s: f64, in_flight: f64) -> Vec<LevelPoint> {
    for l in &mut lv {
        l.disturbance = Some(Disturbance {
            other_iops: Some(r_s + w_s),
            other_r_s: Some(r_s),
            other_w_s: Some(w_s),
            other_in_flight: Some(in_flight),
            ..Default::default()
        });
    }
    lv
}

#[test]
fn steady_other_traffic_is_judged_against_and_widens_the_intervals() {
    // Issue 27: a live host's steady 410 r/s + 120 w/s (0.4 in flight) does not disturb the
    // levels; the verdict says it and widens the baseline by what it explains at the curve's
    // own slope from 1 to 2 (latency 1.00 → 1.03 ms: elasticity ln 1.03 / ln 2).
    let quiet = with_spread(soft_knee(), &[0.04; 6]);
    let v = analyze(&with_other(quiet.clone(), 410.0, 120.0, 0.4));
    assert_eq!(v.profile_refusal(), None, "{:#?}", v.summary);
    assert!(v.disturbed_levels.is_empty(), "{:?}", v.disturbed_levels);
    let t = v.other_traffic.as_ref().expect("other traffic stated");
    assert_eq!((t.r_s, t.w_s), (410.0, 120.0));
    assert!((t.in_flight.unwrap() - 0.4).abs() < 1e-9, "{t:?}");
    let e = 1.03f64.ln() / 2f64.ln();
    assert!(
        (t.baseline_widened_rel - (1.4f64.powf(e) - 1.0)).abs() < 1e-9,
        "{t:?}"
    );
    assert!(t.unexplained_levels.is_empty());
    let line = summary_line(&v, "The device served other traffic");
    assert!(
        line.contains("410 r/s, 120 w/s on average (0.4 in flight), steady across the levels")
            && line.contains("uncertainty widened by ±1 % at the baseline"),
        "{line}"
    );
    // The same curve quiet says nothing of it.
    assert_eq!(analyze(&quiet).other_traffic, None);
    // What it explains reaches the intervals: 2 in flight beside 8 (elasticity 0.82 from 8 to
    // 16) widens concurrency 8 by a fifth, and the knee's range with it.
    let busy = analyze(&with_other(quiet.clone(), 4000.0, 0.0, 2.0));
    let (q, b) = (analyze(&quiet).knee_range, busy.knee_range);
    let width = |r: Option<(u32, u32)>| r.map_or(0, |(lo, hi)| hi - lo);
    assert!(width(b) > width(q), "quiet {q:?}, busy {b:?}");
    assert!(busy.other_traffic.unwrap().max_widened_rel > 0.15);
}

#[test]
fn other_traffic_that_varied_or_outweighed_iosat_is_a_disturbance() {
    // 400 IOPS at 1 and 2, 5000 from 4 on: the levels were not judged against one workload.
    let mut lv = with_other(with_spread(soft_knee(), &[0.04; 6]), 5000.0, 0.0, 0.5);
    for l in &mut lv[..2] {
        let d = l.disturbance.as_mut().unwrap();
        (d.other_iops, d.other_r_s) = (Some(400.0), Some(400.0));
    }
    let v = analyze(&lv);
    assert_eq!(v.disturbed_levels, [1, 2], "{:#?}", v.summary);
    let why = v.profile_refusal().expect("refused");
    assert!(
        why.contains("the baseline (concurrency 1) was disturbed by other traffic on the device"),
        "{why}"
    );
    let line = summary_line(&v, "The device served other traffic");
    assert!(
        line.contains(
            "varied between the levels or outweighed iosat's own (400 IOPS at 1, 400 IOPS at 2)"
        ),
        "{line}"
    );
    // Steady, but 1.5 requests in flight beside the baseline's one: the baseline measured the
    // other workload as much as the device.
    let v = analyze(&with_other(soft_knee(), 900.0, 0.0, 1.5));
    assert!(v.disturbed_levels.contains(&1), "{:?}", v.disturbed_levels);
    assert!(v.profile_refusal().is_some());
}

#[test]
fn the_baseline_uncertainty_holds_its_spread_other_traffic_and_re_measure() {
    let lv = with_spread(soft_knee(), &[0.04; 6]);
    let spread_only = analyze(&lv).baseline_uncertainty_rel.unwrap();
    // Six windows at a CV of 2 %: t(5) · 0.02 / √5.
    assert!((spread_only - 2.571 * 0.02 / 5f64.sqrt()).abs() < 1e-9);
    assert_eq!(analyze(&soft_knee()).baseline_uncertainty_rel, None);
    // Measured again 4 % slower at the end: half of that is added.
    let mut again = lv[0].clone();
    again.latency_ns.mean *= 1.04;
    let v = analyze_remeasured(&lv, &again);
    let u = v.baseline_uncertainty_rel.unwrap();
    assert!((u - spread_only - 0.02).abs() < 1e-9, "{u}");
    // Other traffic adds what it explains.
    let v = analyze(&with_other(lv, 4000.0, 0.0, 2.0));
    let t = v.other_traffic.as_ref().unwrap();
    let u = v.baseline_uncertainty_rel.unwrap();
    assert!(
        (u - spread_only - t.baseline_widened_rel).abs() < 1e-9,
        "{u} {t:?}"
    );
}

#[test]
fn a_gentle_sweep_states_the_knee_it_did_not_reach_as_a_lower_bound() {
    // Stopped at 8 on purpose, IOPS per unit of latency still rising there.
    let lv: Vec<LevelPoint> = soft_knee().into_iter().take(3).collect();
    let limits = evidence::SweepLimits {
        max_concurrency: Some(4),
        rate_limit_iops: Some(5000.0),
    };
    let v = analyze_with(
        &lv,
        &Context {
            sweep_limits: Some(limits),
            ..Default::default()
        },
    );
    assert_eq!(v.knee_above, Some(4));
    let line = summary_line(&v, "Gentle sweep");
    assert!(
        line.starts_with(
            "Gentle sweep (--max-concurrency 4, --rate-limit 5000 IOPS): the knee was not \
             reached, so the knee is above 4 in flight and the ceiling above 3600 IOPS"
        ),
        "{line}"
    );
    assert!(!v
        .summary
        .iter()
        .any(|s| s.contains("measure at higher concurrency")));
    // The same levels from an ordinary sweep: the knee lies beyond too, said the old way.
    let v = analyze(&lv);
    assert_eq!(v.knee_above, Some(4));
    assert!(v
        .summary
        .iter()
        .any(|s| s.contains("measure at higher concurrency")));
    // A knee inside the levels has no lower bound.
    assert_eq!(analyze(&soft_knee()).knee_above, None);
}

#[test]
fn the_kernel_queue_is_compared_with_ours_without_the_other_traffic() {
    // 4 in flight of ours (aqu-sz 3.6 of them, the block layer's part) and 2 of someone
    // else's: aqu-sz 5.6 is not "another workload?" once the measured 2 are taken out.
    let mut lv = with_other(soft_knee(), 1000.0, 0.0, 2.0);
    for l in &mut lv {
        l.kernel_aqu_sz = Some(0.9 * l.iops * l.latency_ns.mean / 1e9 + 2.0);
    }
    let v = analyze(&lv);
    assert!(
        v.levels
            .iter()
            .all(|f| f.little != LittleCheck::KernelQueueHigh),
        "{:#?}",
        v.levels
    );
    // Unmeasured, the same queue is flagged.
    for l in &mut lv {
        l.disturbance.as_mut().unwrap().other_in_flight = None;
    }
    let v = analyze(&lv);
    assert!(v
        .levels
        .iter()
        .any(|f| f.little == LittleCheck::KernelQueueHigh));
}
