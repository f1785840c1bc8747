//! Unit tests of the verdict on published numbers (seeds 000, 001, 003) and synthetic curves
//! whose true knee is known.

use super::*;

fn level(n: u32, iops: f64, mean_ms: f64, p95_ms: Option<f64>) -> LevelPoint {
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
fn little(ns: &[u32], iops: &[f64]) -> Vec<LevelPoint> {
    ns.iter()
        .zip(iops)
        .map(|(&n, &x)| level(n, x, f64::from(n) / x * 1000.0, None))
        .collect()
}

/// [`little`]'s levels with the kernel's %util beside each.
fn with_util(ns: &[u32], iops: &[f64], util: &[f64]) -> Vec<LevelPoint> {
    let mut lv = little(ns, iops);
    set_util(&mut lv, util);
    lv
}

fn set_util(lv: &mut [LevelPoint], util: &[f64]) {
    for (l, &u) in lv.iter_mut().zip(util) {
        l.kernel_util_pct = Some(u);
    }
}

/// The levels of a device that follows the USL curve (λ `l`, σ `s`, κ `k`) exactly.
fn usl_levels(l: f64, s: f64, k: f64, levels: &[u32]) -> Vec<LevelPoint> {
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
fn seed000() -> Vec<LevelPoint> {
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
fn closed(k: f64, s_ms: f64, levels: &[u32]) -> Vec<LevelPoint> {
    levels
        .iter()
        .map(|&n| {
            let nf = f64::from(n);
            let r = s_ms * (nf / k).max(1.0);
            level(n, nf.min(k) / (s_ms / 1000.0), r, Some(r))
        })
        .collect()
}

const POW2: [u32; 9] = [1, 2, 4, 8, 16, 32, 64, 128, 256];

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

/// 32 units of 1 ms capped at 16000 IOPS: latency grows once the cap queues requests.
fn capped_at_16000() -> Vec<LevelPoint> {
    POW2.iter()
        .map(|&n| {
            let nf = f64::from(n);
            let x = (nf * 1000.0).min(16_000.0) * (1.0 + 0.001 * (nf.ln()));
            level(n, x, nf / x * 1000.0, None)
        })
        .collect()
}

/// The verdict's sentence that starts with `head`.
fn summary_line<'a>(v: &'a Verdict, head: &str) -> &'a str {
    v.summary
        .iter()
        .find(|s| s.starts_with(head))
        .unwrap_or_else(|| panic!("no '{head}' in {:#?}", v.summary))
}

/// Sub-windows of a level: the first at `first` IOPS, the second half at `late` with a CV.
fn windows(l: &LevelPoint, first: f64, late: f64, cv: f64) -> Spread {
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
fn at_block_size(bs: f64, cap_iops: f64, cap_bytes_per_s: f64) -> Vec<LevelPoint> {
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

// ---- How sure the verdict is (issue 10) ----

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
    // The issue's "knee at 0.28x the baseline": concurrency 1 measured 3.5x slower than the
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
