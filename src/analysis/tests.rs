//! Unit tests of the verdict on published numbers (seeds 000, 001, 003) and synthetic curves
//! whose true knee is known.

use super::evidence::Spread;
use super::*;

pub(super) fn level(n: u32, iops: f64, mean_ms: f64, p95_ms: Option<f64>) -> LevelPoint {
    LevelPoint {
        concurrency: n,
        iops,
        bytes_per_s: iops * 16384.0,
        latency_ns: LatencyNs {
            mean: mean_ms * 1e6,
            p95: p95_ms.map(|p| p * 1e6),
            ..Default::default()
        },
        kernel_util_pct: None,
        kernel_aqu_sz: None,
        ..Default::default()
    }
}

/// A closed loop that ran `iops[i]` at concurrency `ns[i]`: each level's mean latency is the
/// one Little's law gives, n / X.
pub(super) fn little(ns: &[u32], iops: &[f64]) -> Vec<LevelPoint> {
    ns.iter()
        .zip(iops)
        .map(|(&n, &x)| level(n, x, f64::from(n) / x * 1000.0, None))
        .collect()
}

/// [`little`]'s levels with the kernel's %util beside each.
pub(super) fn with_util(ns: &[u32], iops: &[f64], util: &[f64]) -> Vec<LevelPoint> {
    let mut lv = little(ns, iops);
    set_util(&mut lv, util);
    lv
}

pub(super) fn set_util(lv: &mut [LevelPoint], util: &[f64]) {
    for (l, &u) in lv.iter_mut().zip(util) {
        l.kernel_util_pct = Some(u);
    }
}

/// The levels of a device that follows the USL curve (λ `l`, σ `s`, κ `k`) exactly.
pub(super) fn usl_levels(l: f64, s: f64, k: f64, levels: &[u32]) -> Vec<LevelPoint> {
    let iops: Vec<f64> = levels
        .iter()
        .map(|&n| usl::predict(l, s, k, f64::from(n)))
        .collect();
    little(levels, &iops)
}

/// The verdict on `lv` with its baseline measured again at the end as `again`.
pub(super) fn analyze_remeasured(lv: &[LevelPoint], again: &LevelPoint) -> Verdict {
    analyze_with(
        lv,
        &Context {
            baseline_remeasured: Some(again),
            ..Default::default()
        },
    )
}

/// Seed 000: sysbench fileio rndrd, O_DIRECT, Intel 750; reads/s, avg and p95 (ms) as
/// published, with the iostat %util and avgqu-sz printed beside each run.
pub(super) fn seed000() -> Vec<LevelPoint> {
    let rows = [
        (1, 7113.16, 0.14, 0.17, 93.68, 0.97),
        (4, 26248.44, 0.15, 0.21, 99.92, 4.05),
        (16, 76845.96, 0.21, 0.36, 100.00, 16.33),
        (64, 127840.59, 0.50, 1.25, 100.24, 65.99),
        (256, 131558.79, 1.95, 3.89, 100.00, 268.30),
    ];
    rows.iter()
        .map(|&(n, iops, avg, p95, util, aqu)| LevelPoint {
            kernel_util_pct: Some(util),
            kernel_aqu_sz: Some(aqu),
            ..level(n, iops, avg, Some(p95))
        })
        .collect()
}

#[test]
fn seed000_saturation_table() {
    let v = analyze(&seed000());
    let table: Vec<String> = v.levels[1..]
        .iter()
        .map(|f| text::fmt_ratio(f.saturation_avg))
        .collect();
    assert_eq!(table, ["1.07x", "1.5x", "3.6x", "13.9x"]);
    assert_eq!(v.baseline_concurrency, 1);
    assert!((v.baseline_latency_ns - 140_000.0).abs() < 1e-6);
    assert!((v.levels[0].saturation_avg - 1.0).abs() < 1e-12);
}

#[test]
fn seed000_knee_between_16_and_64() {
    let v = analyze(&seed000());
    assert!(
        (16..=64).contains(&v.knee_concurrency),
        "knee {}: {:#?}",
        v.knee_concurrency,
        v.summary
    );
    assert_eq!(v.max_useful_iops, 76845.96);
    assert_eq!(v.peak_iops, 131558.79);
    // 64 → 256: latency 3.9x for 4x concurrency, the article's "linear increase".
    assert_eq!(v.linear_from_concurrency, Some(64));
    // p95 1.25 ms at 64 is 7.4x the 0.17 ms baseline; 0.36 ms at 16 is 2.1x.
    assert_eq!(v.overload_concurrency, Some(64));
    assert!(!v.levels[2].overloaded);
    // 131 k against 128 k is 2.9 % apart: no provisioned-cap plateau.
    assert_eq!(v.suspected_cap_iops, None);
    let usl = v.usl.as_ref().unwrap();
    assert!(usl.r_squared > 0.95, "{usl:?}");
    let np = usl.power_peak_concurrency.unwrap();
    assert!((16.0..=64.0).contains(&np), "USL power optimum {np}");
}

#[test]
fn seed000_littles_law_closes() {
    let v = analyze(&seed000());
    for f in &v.levels {
        assert!(f.littles_law_ok, "{f:?}");
        let n = f64::from(f.concurrency);
        assert!((f.littles_law_concurrency / n - 1.0).abs() < 0.05, "{f:?}");
    }
    assert!(!v.summary.iter().any(|s| s.contains("Little")));
}

#[test]
fn seed000_util_lesson() {
    let v = analyze(&seed000());
    assert_eq!(
        v.util_lesson.as_deref(),
        Some(
            "%util reached 94 % at concurrency 1, yet IOPS still grew 18.5x up to concurrency 256."
        )
    );
}

#[test]
fn util_lesson_in_the_issue_words() {
    let v = analyze(&with_util(
        &[1, 2, 4, 8, 16, 32],
        &[600.0, 1000.0, 2000.0, 3500.0, 4500.0, 5100.0],
        &[60.0, 98.0, 100.0, 100.0, 100.0, 100.0],
    ));
    assert_eq!(
        v.util_lesson.as_deref(),
        Some("%util reached 98 % at concurrency 2, yet IOPS still grew 5.1x up to concurrency 32.")
    );
    assert!(v
        .summary
        .iter()
        .any(|s| s.starts_with("%util reached 98 %")));
}

#[test]
fn no_util_lesson_when_iops_stopped() {
    let mut lv = vec![
        level(1, 100.0, 10.0, None),
        level(2, 105.0, 19.0, None),
        level(4, 108.0, 37.0, None),
    ];
    for l in &mut lv {
        l.kernel_util_pct = Some(99.0);
    }
    assert_eq!(analyze(&lv).util_lesson, None);
}

/// Seed 001: sysbench OLTP on slow RAID; r/s and await from iostat, p95 from sysbench's
/// interval lines. Every published p95 sample combination must give the same verdict.
#[test]
fn seed001_overloaded_at_64_not_at_4() {
    for p1 in [171.82, 157.72, 215.38, 141.39] {
        for p4 in [312.09, 297.05, 335.34] {
            for p64 in [2516.43, 2613.15, 2404.49] {
                let v = analyze(&[
                    level(1, 127.90, 7.83, Some(p1)),
                    level(4, 295.40, 13.69, Some(p4)),
                    level(64, 601.20, 108.72, Some(p64)),
                ]);
                assert_eq!(v.overload_concurrency, Some(64), "{p1} {p4} {p64}");
                assert!(!v.levels[1].overloaded);
                assert!(v.levels[2].overloaded);
                assert_eq!(v.knee_concurrency, 4);
                assert!(v
                    .summary
                    .iter()
                    .any(|s| s.starts_with("Overloaded from concurrency 64")));
            }
        }
    }
}

/// A closed system of k parallel units of service time S: X = min(N, k)/S, R = S·max(1, N/k).
pub(super) fn closed(k: f64, s_ms: f64, levels: &[u32]) -> Vec<LevelPoint> {
    levels
        .iter()
        .map(|&n| {
            let nf = f64::from(n);
            let r = s_ms * (nf / k).max(1.0);
            level(n, nf.min(k) / (s_ms / 1000.0), r, Some(r))
        })
        .collect()
}

pub(super) const POW2: [u32; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];

#[test]
fn closed_system_knee_is_k() {
    for k in [1u32, 2, 4, 8, 16, 32, 64] {
        let v = analyze(&closed(f64::from(k), 8.0, &POW2));
        assert_eq!(v.knee_concurrency, k, "{:#?}", v.summary);
        assert_eq!(v.power_peak_concurrency, k);
        assert!((v.max_useful_iops - f64::from(k) * 125.0).abs() < 1e-6);
        if k < 256 {
            assert_eq!(v.linear_from_concurrency, Some(k));
        }
    }
}

#[test]
fn closed_system_with_four_units_plateaus_at_500() {
    let v = analyze(&closed(4.0, 8.0, &POW2));
    assert_eq!(v.knee_concurrency, 4);
    assert!((v.peak_iops - 500.0).abs() < 1e-9);
    // 500 IOPS over 4..256 is a plateau at a round figure, but a round figure is no evidence
    // (issue 25): one sweep can't tell the device's own limit from a cap, and says so.
    assert_eq!(v.suspected_cap_iops, None);
    assert_eq!(v.cap, None);
    assert!(
        v.summary.iter().any(|s| s.starts_with(
            "Throughput plateaus at about 500 IOPS (8.2 MB/s) from concurrency 4: the device's \
             limit, or a cap placed on it — one sweep cannot tell them apart"
        )),
        "{:#?}",
        v.summary
    );
    assert!(!v.summary.iter().any(|s| s.contains("provisioned")));
    // p95 = R: 4S at N = 16 is the first above 3x.
    assert_eq!(v.overload_concurrency, Some(16));
}

/// Issue 42: a declared cap decides what one sweep cannot. The same 500 IOPS plateau is the
/// cap when 500 is declared, the device's own limit when 1,000 is, and not held by a declared
/// 400 (the rates pass it); without a declaration the wording stays.
#[test]
fn a_declared_cap_is_matched_to_the_plateau() {
    use crate::analysis::declared::{CapDim, CapPlace, DeclaredCap};
    let lv = closed(4.0, 8.0, &POW2);
    let with = |iops: f64| {
        let cap = DeclaredCap {
            iops: Some(iops),
            ..Default::default()
        };
        analyze_with(
            &lv,
            &Context {
                declared_cap: Some(cap),
                read_share: Some(1.0),
                ..Default::default()
            },
        )
    };
    let v = with(500.0);
    let u = v.declared_cap.unwrap();
    assert_eq!((u.cap, u.place()), (CapDim::Iops, CapPlace::At));
    assert_eq!(
        summary_line(&v, "Throughput plateaus"),
        "Throughput plateaus at about 500 IOPS (8.2 MB/s) from concurrency 4: 100.0 % of the \
         declared 500 IOPS cap: the cap, not the device, is the limit."
    );
    let v = with(1000.0);
    assert_eq!(v.declared_cap.unwrap().place(), CapPlace::Below);
    let s = summary_line(&v, "Throughput plateaus");
    assert!(
        s.contains("50.0 % of the declared 1,000 IOPS cap")
            && s.contains("the device's own limit is lower than the cap")
            && !s.contains("the cap, not the device"),
        "{s}"
    );
    let v = with(400.0);
    let s = summary_line(&v, "Throughput plateaus");
    assert!(
        s.contains("125.0 % of the declared 400 IOPS cap: above it"),
        "{s}"
    );
    // Below the cap in levels that waited for a CPU (12 % of their latency): the machine may
    // have held the plateau down, so neither the cap nor the device's own limit is named.
    let mut shaken = lv.clone();
    for l in shaken.iter_mut().filter(|l| l.concurrency >= 4) {
        l.disturbance = Some(crate::analysis::evidence::Disturbance {
            cpu_wait_ns_per_io: Some(0.12 * l.latency_ns.mean),
            ..Default::default()
        });
    }
    let v = analyze_with(
        &shaken,
        &Context {
            declared_cap: Some(DeclaredCap {
                iops: Some(1000.0),
                ..Default::default()
            }),
            read_share: Some(1.0),
            ..Default::default()
        },
    );
    let s = summary_line(&v, "Throughput plateaus");
    assert!(
        s.contains("50.0 % of the declared 1,000 IOPS cap, in levels this machine disturbed")
            && s.contains("undecided")
            && !s.contains("own limit is lower")
            && !s.contains("the cap, not the device"),
        "{s}"
    );
    // No plateau (one unit per request in flight): how near the sweep came, in words.
    let v = with(1e6);
    assert!(
        !v.summary.iter().any(|s| s.contains("cap, not the device")),
        "{:#?}",
        v.summary
    );
    let plain = analyze(&lv);
    assert_eq!(plain.declared_cap, None);
    assert!(!plain.summary.iter().any(|s| s.contains("declared")));
}

/// 32 units of 1 ms capped at 16000 IOPS: latency grows once the cap queues requests.
pub(super) fn capped_at_16000() -> Vec<LevelPoint> {
    POW2.iter()
        .map(|&n| {
            let nf = f64::from(n);
            let x = (nf * 1000.0).min(16_000.0) * (1.0 + 0.001 * (nf.ln()));
            level(n, x, nf / x * 1000.0, None)
        })
        .collect()
}

/// The verdict's sentence that starts with `head`.
pub(super) fn summary_line<'a>(v: &'a Verdict, head: &str) -> &'a str {
    v.summary
        .iter()
        .find(|s| s.starts_with(head))
        .unwrap_or_else(|| panic!("no '{head}' in {:#?}", v.summary))
}

/// Sub-windows of a level: the first at `first` IOPS, the second half at `late` with a CV.
pub(super) fn windows(l: &LevelPoint, first: f64, late: f64, cv: f64) -> Spread {
    Spread {
        windows: 8,
        iops_cv: cv,
        iops_min: late * (1.0 - cv),
        iops_max: first.max(late),
        mean_ns_cv: cv,
        mean_ns_min: l.latency_ns.mean * (1.0 - cv),
        mean_ns_max: l.latency_ns.mean * (1.0 + cv),
        iops_first: Some(first),
        iops_late: Some(late),
        iops_late_cv: Some(cv),
        ..Default::default()
    }
}

#[test]
fn a_round_plateau_is_no_cap_and_a_burst_before_it_is() {
    // Issue 25: 16000 IOPS flat from 16 on is a round figure, and nothing else: not a cap.
    let v = analyze(&capped_at_16000());
    assert_eq!(v.suspected_cap_iops, None, "{:#?}", v.summary);
    assert!(
        v.summary.iter().any(|s| s.starts_with(
            "Throughput plateaus at about 16067 IOPS (263.2 MB/s) from concurrency 16: the \
             device's limit, or a cap placed on it"
        )),
        "{:#?}",
        v.summary
    );
    assert_eq!(v.knee_concurrency, 16);
    // The same levels whose windows are steady (CV 3 %) say the same.
    let mut lv = capped_at_16000();
    for l in &mut lv {
        l.spread = Some(windows(l, l.iops * 1.03, l.iops, 0.03));
    }
    assert_eq!(analyze(&lv).cap, None);
    // Concurrency 32 ran 31 000 IOPS in its first sub-window, then settled at the plateau:
    // a burst followed by a plateau, the mark of a token bucket. The cap is named with its
    // sustained figure.
    let burst = {
        let l = &lv[5];
        windows(l, 31_000.0, 16_000.0, 0.01)
    };
    lv[5].spread = Some(burst);
    let v = analyze(&lv);
    let c = v.cap.as_ref().expect("a cap");
    assert_eq!(c.evidence, cap::CapEvidence::Burst);
    let x = v.suspected_cap_iops.unwrap();
    assert!((x / 16_000.0 - 1.0).abs() < 0.01, "{x}");
    let line = summary_line(&v, "Throughput plateaus");
    assert!(
        line.contains("after a burst: concurrency 32's first sub-window ran 31000 IOPS")
            && line.contains("this is a cap placed on the device"),
        "{line}"
    );
    // A first window only a little faster (5 %, within four CVs of 3 %) is no burst.
    lv[5].spread = Some(windows(&lv[5], 16_800.0, 16_000.0, 0.03));
    assert_eq!(analyze(&lv).cap, None);
}

#[test]
fn plateau_at_an_odd_figure_is_not_a_cap() {
    let lv = vec![
        level(1, 5000.0, 0.2, None),
        level(4, 13456.0, 0.297, None),
        level(16, 13470.0, 1.19, None),
        level(64, 13490.0, 4.74, None),
    ];
    assert_eq!(analyze(&lv).suspected_cap_iops, None);
}

#[test]
fn seed003_single_level_at_16000_is_not_enough() {
    // numjobs 1, 2, 4 at iodepth 128: only the last reaches the 16000 limit.
    let lv = vec![
        level(128, 10903.0, 128.0 / 10903.0 * 1000.0, None),
        level(256, 13320.0, 256.0 / 13320.0 * 1000.0, None),
        level(512, 16204.0, 512.0 / 16204.0 * 1000.0, None),
    ];
    let v = analyze(&lv);
    assert_eq!(v.suspected_cap_iops, None);
    assert_eq!(v.baseline_concurrency, 128);
    assert!(
        v.summary[0].starts_with("No concurrency-1 level"),
        "{:?}",
        v.summary
    );
}

#[test]
fn usl_curve_is_recovered_through_analyze() {
    let (l, s, k) = (5000.0, 0.03, 0.0002);
    let v = analyze(&usl_levels(l, s, k, &POW2));
    let u = v.usl.unwrap();
    assert!((u.lambda / l - 1.0).abs() < 1e-4, "{u:?}");
    assert!((u.sigma - s).abs() < 1e-5, "{u:?}");
    assert!((u.kappa - k).abs() < 1e-7, "{u:?}");
    let np = usl::power_peak(s, k).unwrap();
    // The knee is a measured level within one doubling of the curve's power optimum.
    let kn = f64::from(v.knee_concurrency);
    assert!(kn / np < 2.0 && np / kn < 2.0, "knee {kn} vs {np}");
}

#[test]
fn usl_breaks_a_tie_of_measured_power() {
    // A curve whose power optimum is near 13 (nearer 16 than 8 on a log scale); the level at 8
    // measured 15 % high, so its power edges past 16's: a tie the measurement can't resolve.
    let (l, s, k) = (1000.0, 0.0, 0.002);
    let np = usl::power_peak(s, k).unwrap();
    assert!(np > 11.4 && np < 16.0, "{np}");
    let lv: Vec<LevelPoint> = [1u32, 2, 4, 8, 16, 32, 64]
        .iter()
        .map(|&n| {
            let nf = f64::from(n);
            let x = usl::predict(l, s, k, nf);
            let bump = if n == 8 { 1.15 } else { 1.0 };
            level(n, x * bump, nf / x * 1000.0, None)
        })
        .collect();
    let v = analyze(&lv);
    let p8 = v.levels[3].power;
    let p16 = v.levels[4].power;
    assert!(p8 > p16 && p16 / p8 > 1.0 - POWER_TIE, "{p8} {p16}");
    assert_eq!(v.power_peak_concurrency, 8);
    assert_eq!(v.knee_concurrency, 16, "{:#?}", v.summary);
    assert!(v.summary.iter().any(|s| s.contains("the USL fit")));
}

#[test]
fn knee_never_past_overload() {
    // Power peaks at 4, but its p95 is 4x the baseline.
    let lv = vec![
        level(1, 1000.0, 1.0, Some(1.0)),
        level(2, 1980.0, 1.01, Some(1.2)),
        level(4, 3800.0, 1.05, Some(4.0)),
        level(8, 4000.0, 2.0, Some(8.0)),
    ];
    let v = analyze(&lv);
    assert_eq!(v.power_peak_concurrency, 4);
    assert_eq!(v.overload_concurrency, Some(4));
    assert_eq!(v.knee_concurrency, 2);
    assert!(v.summary.iter().any(|s| s.contains("before overload")));
}

#[test]
fn littles_law_flags_a_cached_level() {
    // 16 offered, but 20000 IOPS × 0.2 ms = 4 in flight: served from a cache or misrecorded.
    let mut lv = closed(4.0, 1.0, &[1, 4, 16]);
    lv[2] = level(16, 20_000.0, 0.2, Some(0.3));
    lv[2].kernel_aqu_sz = Some(16.0);
    let v = analyze(&lv);
    assert!(v.levels[0].littles_law_ok && v.levels[1].littles_law_ok);
    assert!(!v.levels[2].littles_law_ok);
    let note = v.levels[2].littles_law_note.as_deref().unwrap();
    assert!(note.contains("4.00 in flight against 16 offered"), "{note}");
    assert!(note.contains("aqu-sz 16.00"), "{note}");
    assert!(v
        .summary
        .iter()
        .any(|s| s.starts_with("Little's law does not close at concurrency 16")));
}

#[test]
fn unsorted_input_is_sorted() {
    let mut lv = seed000();
    lv.reverse();
    let v = analyze(&lv);
    assert_eq!(v.levels[0].concurrency, 1);
    assert_eq!(v.baseline_concurrency, 1);
    assert_eq!(v, analyze(&seed000()));
}

#[test]
fn empty_and_single_level() {
    let v = analyze(&[]);
    assert_eq!(v.knee_concurrency, 0);
    assert!(v.levels.is_empty());
    let v = analyze(&[level(1, 100.0, 10.0, Some(12.0))]);
    assert_eq!(v.knee_concurrency, 1);
    assert_eq!(v.max_useful_iops, 100.0);
    assert!(v.usl.is_none());
    assert_eq!(v.linear_from_concurrency, None);
}

/// 32 units of 1 ms doing `bs`-byte requests, the device's own time growing with the size
/// (0.5 ms + 0.125 ms per KiB), capped at `cap_iops` and `cap_bytes_per_s`.
pub(super) fn at_block_size(bs: f64, cap_iops: f64, cap_bytes_per_s: f64) -> Vec<LevelPoint> {
    let service_ms = 0.5 + 0.125 * bs / 1024.0;
    POW2.iter()
        .map(|&n| {
            let nf = f64::from(n);
            let x = (nf / service_ms * 1000.0)
                .min(32.0 / service_ms * 1000.0)
                .min(cap_iops)
                .min(cap_bytes_per_s / bs);
            LevelPoint {
                bytes_per_s: x * bs,
                ..level(n, x, nf / x * 1000.0, None)
            }
        })
        .collect()
}

#[test]
fn a_second_block_size_tells_an_iops_cap_from_a_bandwidth_cap() {
    let ctx = |other: &'static [LevelPoint]| Context {
        other_block_size: Some(other),
        ..Default::default()
    };
    let leak = |v: Vec<LevelPoint>| -> &'static [LevelPoint] { Vec::leak(v) };
    // A bandwidth cap of 125 MB/s: 4 KiB and 16 KiB keep the bytes/s, not the IOPS.
    let a = at_block_size(4096.0, f64::INFINITY, 125e6);
    let v = analyze_with(&a, &ctx(leak(at_block_size(16384.0, f64::INFINITY, 125e6))));
    assert_eq!(v.suspected_cap_iops, None, "{:#?}", v.summary);
    let b = v.suspected_cap_bytes_per_s.expect("a bandwidth cap");
    assert!((b / 125e6 - 1.0).abs() < 0.01, "{b}");
    let line = summary_line(&v, "Throughput plateaus");
    assert!(
        line.contains("at 16 KiB per request the plateau is 7629 IOPS (125.0 MB/s)")
            && line.contains("a bandwidth cap placed on the device, at about 125.0 MB/s"),
        "{line}"
    );
    // An IOPS cap of 10 000 (below both sizes' own limits, 32 000 and 12 800): both keep the
    // IOPS.
    let a = at_block_size(4096.0, 10_000.0, f64::INFINITY);
    let v = analyze_with(
        &a,
        &ctx(leak(at_block_size(16384.0, 10_000.0, f64::INFINITY))),
    );
    assert_eq!(v.suspected_cap_bytes_per_s, None, "{:#?}", v.summary);
    let x = v.suspected_cap_iops.expect("an IOPS cap");
    assert!((x / 10_000.0 - 1.0).abs() < 0.01, "{x}");
    assert_eq!(
        v.cap.as_ref().unwrap().evidence,
        cap::CapEvidence::BlockSizes
    );
    // No cap: the device's own limit moves with the size (32 units of 1 ms at 4 KiB, of
    // 2.5 ms at 16 KiB), neither IOPS nor bytes/s is kept, and no cap is named.
    let a = at_block_size(4096.0, f64::INFINITY, f64::INFINITY);
    let v = analyze_with(
        &a,
        &ctx(leak(at_block_size(16384.0, f64::INFINITY, f64::INFINITY))),
    );
    assert_eq!(v.cap, None, "{:#?}", v.summary);
    assert!(v
        .summary
        .iter()
        .any(|s| s.contains("one sweep cannot tell them apart")));
}

#[test]
fn knee_at_the_top_level_says_to_measure_further() {
    // 64 units: nothing saturates up to 32.
    let v = analyze(&closed(64.0, 1.0, &[1, 2, 4, 8, 16, 32]));
    assert_eq!(v.knee_concurrency, 32);
    assert!(v
        .summary
        .iter()
        .any(|s| s.starts_with("The knee is the highest level measured")));
    let v = analyze(&closed(4.0, 1.0, &[1, 2, 4, 8, 16, 32]));
    assert!(!v
        .summary
        .iter()
        .any(|s| s.starts_with("The knee is the highest level measured")));
}

#[test]
fn aqu_sz_below_in_flight_is_the_software_path_not_a_fault() {
    // A virtio disk: the app measures 1.00 in flight, the block layer holds 0.76 of it.
    let mut lv = closed(4.0, 1.0, &[1, 4]);
    lv[0].kernel_aqu_sz = Some(0.76 * lv[0].iops * lv[0].latency_ns.mean / 1e9);
    lv[1].kernel_aqu_sz = Some(0.3 * lv[1].iops * lv[1].latency_ns.mean / 1e9);
    let v = analyze(&lv);
    assert!(
        v.levels[0].littles_law_ok,
        "{:?}",
        v.levels[0].littles_law_note
    );
    assert!(!v.levels[1].littles_law_ok);
    let note = v.levels[1].littles_law_note.as_deref().unwrap();
    assert!(note.contains("above the device"), "{note}");
}

#[test]
fn util_lesson_when_util_stays_flat() {
    // Measured on the development VM (kernel 6.18, virtio): %util 67 → 86 while IOPS 5.3x.
    let mut lv = with_util(
        &[1, 2, 4, 8, 16],
        &[12529.0, 18563.0, 33500.0, 51636.0, 66144.0],
        &[67.2, 72.0, 79.6, 84.0, 86.0],
    );
    assert_eq!(
        analyze(&lv).util_lesson.as_deref(),
        Some(
            "%util went only from 67 % to 86 % between concurrency 1 and 16, while IOPS grew \
             5.3x: %util is time busy, not capacity."
        )
    );
    // %util that grows with the load teaches nothing.
    set_util(&mut lv, &[10.0, 18.0, 33.0, 50.0, 64.0]);
    assert_eq!(analyze(&lv).util_lesson, None);
}

#[test]
fn util_lesson_when_util_reaches_busy_only_at_the_peak() {
    // A default sweep on this VM: %util 73 % at 1, 87 % at 64, 99.8 % only at the IOPS peak.
    let lv = with_util(
        &[1, 4, 64, 128, 256],
        &[14663.0, 53833.0, 149323.0, 192234.0, 171694.0],
        &[73.4, 79.2, 87.4, 99.8, 100.0],
    );
    assert_eq!(
        analyze(&lv).util_lesson.as_deref(),
        Some(
            "%util went only from 73 % to 100 % between concurrency 1 and 128, while IOPS grew \
             13.1x: %util is time busy, not capacity."
        )
    );
}

#[test]
fn set_percentile_keeps_99_9_apart_from_99() {
    let mut l = LatencyNs::default();
    for (p, ns) in [
        (50.0, 1.0),
        (90.0, 2.0),
        (95.0, 3.0),
        (99.0, 4.0),
        (99.9, 5.0),
        (75.0, 9.0),
    ] {
        l.set_percentile(p, ns);
    }
    assert_eq!(
        (l.p50, l.p90, l.p95, l.p99, l.p999),
        (Some(1.0), Some(2.0), Some(3.0), Some(4.0), Some(5.0))
    );
}
