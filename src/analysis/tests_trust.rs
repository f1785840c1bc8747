//! Unit tests of the verdict's trust (issue 38): a disturbed or drifting run leads with it and
//! gives ranges, a stalled baseline is set aside, a slowdown is no cap, one decision feeds the
//! queueing and the limit sentences, and a throttle is named only when one is set.

use super::evidence::{Disturbance, Spread};
use super::tests::analyze_remeasured;
use super::tests_sure::held_at_3000;
use super::*;

fn level(n: u32, iops: f64, mean_ms: f64) -> LevelPoint {
    LevelPoint {
        concurrency: n,
        iops,
        bytes_per_s: iops * 4096.0,
        latency_ns: LatencyNs {
            mean: mean_ms * 1e6,
            p95: Some(mean_ms * 1.2e6),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Eight steady windows (CV `cv`), the slowest at `min_share` of the level's rate.
fn windows(l: &LevelPoint, cv: f64, min_share: f64) -> Spread {
    Spread {
        windows: 8,
        iops_cv: cv,
        iops_min: l.iops * min_share,
        iops_max: l.iops * (1.0 + cv),
        mean_ns_cv: cv,
        mean_ns_min: l.latency_ns.mean * (1.0 - cv),
        mean_ns_max: l.latency_ns.mean * (1.0 + cv),
        p95_ns_cv: Some(cv),
        iops_first: Some(l.iops),
        iops_late: Some(l.iops),
        iops_late_cv: Some(cv),
        ..Default::default()
    }
}

/// A closed loop over a device of `k` units of `s_ms`, each level with steady windows.
fn device(k: f64, s_ms: f64, levels: &[u32]) -> Vec<LevelPoint> {
    levels
        .iter()
        .map(|&n| {
            let nf = f64::from(n);
            let r = s_ms * (nf / k).max(1.0);
            let mut l = level(n, nf.min(k) / (s_ms / 1e3), r);
            l.spread = Some(windows(&l, 0.02, 0.95));
            l
        })
        .collect()
}

const LEVELS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];

#[test]
fn a_stalled_first_baseline_is_detected_and_set_aside() {
    // Issue 38: 3.78 ms at the start (the generator paused), 2.19 ms re-measured at the end.
    let mut lv = device(4.0, 2.19, &LEVELS);
    let l1 = &mut lv[0];
    l1.latency_ns.mean = 3.78e6;
    l1.iops = 1e3 / 3.78;
    let mut s = windows(l1, 0.6, 0.0);
    s.iops_min = 0.0;
    l1.spread = Some(s);
    let again = device(4.0, 2.19, &[1]).remove(0);
    let v = analyze_remeasured(&lv, &again);
    let d = v.baseline_drift.as_ref().unwrap();
    assert!(d.first_stalled, "{d:?}");
    assert_eq!(d.judged_against, confidence::DriftChoice::Remeasured);
    assert!((v.baseline_latency_ns - 2.19e6).abs() < 1.0);
    assert!(v.stalled_levels.contains(&1) && v.disturbed_levels.contains(&1));
    assert!(v.shaken());
    assert!(
        v.summary[0].starts_with("Disturbed run: the first baseline stalled"),
        "{:#?}",
        v.summary
    );
    assert!(!v
        .summary
        .iter()
        .any(|s| s.contains("same within the noise")));
    assert!(v.profile_refusal().is_some());
}

#[test]
fn a_stalled_first_baseline_that_agrees_with_its_remeasure_is_still_set_aside() {
    // Under a busy machine: the first took 4.46 ms with a window at 0 IOPS (the generator
    // stopped), the re-measure 4.83 ms: within the tolerance, yet the first is the stall's.
    let mut lv = device(4.0, 4.83, &LEVELS);
    let l1 = &mut lv[0];
    l1.latency_ns.mean = 4.46e6;
    l1.iops = 1e3 / 4.46;
    let mut s = windows(l1, 0.2, 0.0);
    s.iops_min = 0.0;
    l1.spread = Some(s);
    let again = device(4.0, 4.83, &[1]).remove(0);
    let v = analyze_remeasured(&lv, &again);
    let d = v.baseline_drift.as_ref().unwrap();
    assert!(
        d.first_stalled && !d.drifted && !d.remeasure_stalled,
        "{d:?}"
    );
    assert_eq!(d.judged_against, confidence::DriftChoice::Remeasured);
    assert!(v.summary[0].starts_with("Disturbed run: the first baseline stalled"));
    assert!(!v
        .summary
        .iter()
        .any(|s| s.contains("same within the noise")));
    // The other way round: the re-measure stalled, the first stands, and no "same".
    let lv = device(4.0, 4.46, &LEVELS);
    let mut again = device(4.0, 4.83, &[1]).remove(0);
    let mut s = windows(&again, 0.2, 0.0);
    s.iops_min = 0.0;
    again.spread = Some(s);
    let v = analyze_remeasured(&lv, &again);
    let d = v.baseline_drift.as_ref().unwrap();
    assert!(d.remeasure_stalled && !d.first_stalled, "{d:?}");
    assert_eq!(d.judged_against, confidence::DriftChoice::First);
    let all = v.summary.join(" ");
    assert!(all.contains("the re-measure stalled"), "{all}");
    assert!(!all.contains("same within the noise"), "{all}");
}

#[test]
fn a_remeasure_beyond_the_steady_ones_interval_is_a_drift_not_noise() {
    // The first measurement scatters (CV 30 %, no stall), the re-measure is steady and 40 %
    // faster: the first's wide interval must not swallow the change.
    let mut lv = device(4.0, 2.0, &LEVELS);
    lv[0].latency_ns.mean = 2.8e6;
    lv[0].spread = Some(windows(&lv[0], 0.3, 0.5));
    let again = device(4.0, 2.0, &[1]).remove(0);
    let v = analyze_remeasured(&lv, &again);
    let d = v.baseline_drift.as_ref().unwrap();
    assert!(d.drifted && !d.first_stalled, "{d:?}");
    assert!(!v
        .summary
        .iter()
        .any(|s| s.contains("same within the noise")));
    assert!(v.summary[0].starts_with("Disturbed run: the baseline drifted -29 %"));
}

#[test]
fn a_slowdown_mid_sweep_is_a_drift_and_no_cap() {
    // Four units of 2 ms until concurrency 4, whose first window still ran at 2 ms (2000 IOPS)
    // and the other seven at 8 ms (500 IOPS): the burst-then-plateau a token bucket also
    // makes. The baseline re-measured at the end takes 8 ms.
    let mut lv = device(4.0, 2.0, &[1, 2]);
    let mut step = level(4, 5500.0 / 8.0, (2000.0 * 2.0 + 3500.0 * 8.0) / 5500.0);
    step.spread = Some(Spread {
        iops_cv: 0.6,
        iops_min: 500.0,
        iops_first: Some(2000.0),
        iops_late: Some(500.0),
        iops_late_cv: Some(0.02),
        ..windows(&step, 0.3, 0.9)
    });
    lv.push(step);
    lv.append(&mut device(4.0, 8.0, &[8, 16, 32, 64]));
    let again = device(4.0, 8.0, &[1]).remove(0);
    // Without the re-measure the same levels name a cap after a burst: the evidence is a
    // cap's unless the drift says otherwise.
    let blind = analyze(&lv);
    assert!(blind.cap.is_some(), "{:#?}", blind.summary);
    let v = analyze_remeasured(&lv, &again);
    assert!(v.baseline_drift.as_ref().unwrap().drifted);
    assert_eq!(v.cap, None, "{:#?}", v.summary);
    assert_eq!(v.suspected_cap_iops, None);
    assert!(
        !v.summary.iter().any(|s| s.contains("cap placed")),
        "{:#?}",
        v.summary
    );
    assert!(v.summary[0].starts_with("Disturbed run: the baseline drifted +300 %"));
    assert!(v.summary.iter().any(
        |s| s.contains("while the baseline drifted") && s.contains("neither a limit nor a cap")
    ));
    // Issue 42: a declared cap the drifting plateau sits at points at it, to be confirmed; one
    // it stays well below was never what held it.
    let with = |iops: f64| {
        let cap = crate::analysis::declared::DeclaredCap {
            iops: Some(iops),
            ..Default::default()
        };
        let ctx = Context {
            baseline_remeasured: Some(&again),
            declared_cap: Some(cap),
            ..Default::default()
        };
        analyze_with(&lv, &ctx).summary.join("\n")
    };
    let s = with(500.0);
    assert!(
        s.contains("of the declared 500 IOPS cap, which points at the cap")
            && s.contains("to confirm it")
            && !s.contains("the cap, not the device"),
        "{s}"
    );
    let s = with(1000.0);
    assert!(
        s.contains("of the declared 1,000 IOPS cap, so the cap is not what held it"),
        "{s}"
    );
}

#[test]
fn queueing_and_a_hard_limit_are_one_decision() {
    // Flat within the windows' noise from 4 to 32 with latency grown 6.6x for 8x the
    // concurrency, but the last step grew only 1.7x: the limit holds, so must the queueing.
    let rows = [
        (1, 500.0, 2.0),
        (2, 1000.0, 2.0),
        (4, 2000.0, 2.0),
        (8, 2000.0, 4.0),
        (16, 2050.0, 7.8),
        (32, 2460.0, 13.0),
    ];
    let lv: Vec<LevelPoint> = rows
        .iter()
        .map(|&(n, x, r)| {
            let mut l = level(n, x, r);
            l.spread = Some(windows(&l, 0.12, 0.8));
            l
        })
        .collect();
    assert_eq!(judge::linear_from(&lv), None);
    let v = analyze(&lv);
    assert!(v.limit.is_some(), "{:#?}", v.summary);
    assert!(
        !v.summary
            .iter()
            .any(|s| s.contains("does not grow in proportion") || s.contains("never turns linear")),
        "{:#?}",
        v.summary
    );
    assert_eq!(v.linear_from_concurrency, Some(4));
}

/// 32 units of 1 ms whose levels from 8 on plateau at 3000 IOPS with a short kernel queue.
fn held_above(cpu_wait_share: f64) -> Vec<LevelPoint> {
    held_at_3000()
        .map(|(n, x, mean)| {
            let nf = f64::from(n);
            let mut l = level(n, x, mean);
            l.kernel_aqu_sz = Some(if nf * 1000.0 > 3000.0 { 1.0 } else { nf * 0.9 });
            l.disturbance = Some(Disturbance {
                cpu_wait_ns_per_io: Some(cpu_wait_share * mean * 1e6),
                ..Default::default()
            });
            l
        })
        .collect()
}

#[test]
fn a_throttle_is_named_only_when_one_is_set() {
    let v = analyze(&held_above(0.5));
    assert!(v.limit.is_some());
    assert!(
        !v.summary.iter().any(|s| s.contains("held by a throttle")),
        "{:#?}",
        v.summary
    );
    assert!(v.summary.iter().any(|s| s.contains("no throttle is set")));
    assert!(v.levels.iter().all(|f| f.little != LittleCheck::Throttled));
    assert_eq!(v.cap, None);
    // The same levels with a limit read from the cgroup: the throttle is named.
    let limits = [evidence::IoLimit {
        kind: evidence::LimitKind::ReadIops,
        value: 3000.0,
        dev: "7:0".into(),
        source: "/sys/fs/cgroup/t/io.max".into(),
    }];
    let v = analyze_with(
        &held_above(0.0),
        &Context {
            limits: &limits,
            read_share: Some(1.0),
            ..Default::default()
        },
    );
    assert!(
        v.summary.iter().any(|s| s.contains("held by a throttle")),
        "{:#?}",
        v.summary
    );
}

#[test]
fn a_busy_machine_leads_the_verdict_and_gives_ranges_that_hold_the_quiet_knee() {
    let quiet = analyze(&device(4.0, 2.0, &LEVELS));
    assert_eq!(quiet.knee_concurrency, 4);
    assert!(!quiet.shaken() && !quiet.summary[0].starts_with("Disturbed"));
    // The same device on a busy host: from concurrency 2 on, 30-50 % of each request's latency
    // is a wait for a CPU, and the closed loop's IOPS fall with it.
    let mut busy = device(4.0, 2.0, &LEVELS);
    for (i, l) in busy.iter_mut().enumerate().skip(1) {
        let share = [0.0, 0.3, 0.45, 0.35, 0.5, 0.4, 0.3][i];
        l.latency_ns.mean /= 1.0 - share;
        l.iops *= 1.0 - share;
        l.latency_ns.p95 = Some(l.latency_ns.mean * 1.2);
        l.disturbance = Some(Disturbance {
            cpu_wait_ns_per_io: Some(share * l.latency_ns.mean),
            ..Default::default()
        });
    }
    let v = analyze(&busy);
    assert!(
        v.summary[0].starts_with("Disturbed run:"),
        "{:#?}",
        v.summary
    );
    assert!(v.summary[0].contains("waited for a CPU"));
    let (lo, hi) = v.knee_range.expect("a range, not a point");
    assert!(lo <= 4 && 4 <= hi, "{lo}–{hi}: {:#?}", v.summary);
    let (x_lo, x_hi) = v.max_useful_iops_range.unwrap();
    assert!(x_lo <= x_hi);
    assert!(v
        .summary
        .iter()
        .any(|s| s.starts_with("Max useful IOPS: between")));
}

/// The knee-4 device with every level on a CPU `psi` % contended (PSI cpu some) and iosat's
/// own threads waiting `share` of each level's latency; c=1's p95 doubled (issue 38's run:
/// c=1 p95 5.18 ms against a 2.42 ms mean under a 90 % hog).
fn contended(psi: f64, share: f64) -> Vec<LevelPoint> {
    let mut lv = device(4.0, 2.0, &LEVELS);
    for l in &mut lv {
        l.disturbance = Some(Disturbance {
            cpu_wait_ns_per_io: Some(share * l.latency_ns.mean),
            cpu_busy_pct: Some(100.0),
            psi_cpu_some_pct: Some(psi),
            ..Default::default()
        });
    }
    lv[0].latency_ns.p95 = Some(lv[0].latency_ns.mean * 2.1);
    lv
}

#[test]
fn a_wait_under_a_tenth_of_the_mean_on_a_contended_cpu_still_shakes_the_run() {
    // Issue 38: a hog on every core, iosat's threads waiting 6 % of the mean (under the 10 %
    // that counts alone): the run leads with it, and the knee is a range holding 4.
    let v = analyze(&contended(99.0, 0.06));
    assert!(
        v.summary[0].starts_with("Disturbed run:") && v.summary[0].contains("waited for a CPU"),
        "{:#?}",
        v.summary
    );
    // Power doubles from 2 to 4 and halves from 4 to 8: the 10 % the machine may account for
    // can't move the knee, which stands out as a point, and the headline says so.
    let (lo, hi) = v
        .knee_range
        .unwrap_or((v.knee_concurrency, v.knee_concurrency));
    assert!(lo <= 4 && 4 <= hi, "{lo}–{hi}: {:#?}", v.summary);
    assert!(
        v.knee_range.is_some() || v.summary[0].contains("the knee stands out beyond it"),
        "{:#?}",
        v.summary
    );
    assert!(
        v.summary
            .iter()
            .any(|s| s.contains("6 % of it") && s.contains("falls whole on a few requests")),
        "{:#?}",
        v.summary
    );
    // The same wait on a CPU free most of the time is a machine's ordinary wake-up cost, and
    // a contended CPU that iosat's threads hardly waited for (real-time priority beside
    // compilers: 0.5-1.9 % measured), with no measure of what kept it busy (an older file),
    // shows nothing that reached its requests: both quiet runs.
    for (psi, share) in [(20.0, 0.06), (99.0, 0.019)] {
        let v = analyze(&contended(psi, share));
        assert!(
            !v.summary[0].starts_with("Disturbed"),
            "psi {psi} share {share}: {:#?}",
            v.summary
        );
        assert_eq!(v.knee_concurrency, 4);
    }
}

/// The knee-4 device with every level's CPUs kept `other_user` % busy by other processes'
/// user time, iosat's threads waiting 2.8 % of the mean and PSI cpu some 12 % (issue 38's
/// measured failure: a 90 % hog on each core of a quiet 2-core VM; c=1 mean 2.46 ms, p95
/// 5.61 ms).
fn hogged(other_user: f64) -> Vec<LevelPoint> {
    let mut lv = contended(12.0, 0.028);
    for l in &mut lv {
        let d = l.disturbance.as_mut().unwrap();
        d.cpu_busy_pct = Some(other_user + 4.0);
        d.cpu_other_user_pct = Some(other_user);
    }
    lv[0].latency_ns.p95 = Some(lv[0].latency_ns.mean * 2.3);
    lv
}

#[test]
fn cpus_other_processes_keep_busy_lead_the_headline_as_what_was_measured() {
    let v = analyze(&hogged(88.0));
    let head = &v.summary[0];
    assert!(
        head.starts_with("Disturbed run:")
            && head.contains("other processes kept the CPUs up to 88 % busy")
            && !head.contains("waited for a CPU"),
        "{:#?}",
        v.summary
    );
    let (lo, hi) = v
        .knee_range
        .unwrap_or((v.knee_concurrency, v.knee_concurrency));
    assert!(lo <= 4 && 4 <= hi, "{lo}–{hi}: {:#?}", v.summary);
    // The line names the measures, and says the path's wait is inferred, not measured.
    assert!(
        v.summary
            .iter()
            .any(|s| s.contains("88 % in other processes' user time")
                && s.contains("PSI cpu some 12 %")
                && s.contains("where iosat cannot measure it")),
        "{:#?}",
        v.summary
    );
    // A quiet machine's truth runs: others' user time a few percent; one compiler of two
    // CPUs' worth, under the bar.
    for quiet in [3.0, 50.0] {
        let v = analyze(&hogged(quiet));
        assert!(
            !v.summary[0].starts_with("Disturbed"),
            "{quiet} %: {:#?}",
            v.summary
        );
        assert_eq!(v.knee_concurrency, 4);
    }
}
