//! The verdict through the public API, on published numbers (seeds 000, 001) and on curves
//! whose true knee is known: a closed system of k units and a USL curve.

use iosat::analysis::{analyze, text::fmt_ratio, usl, LatencyNs, LevelPoint, Verdict};

fn level(n: u32, iops: f64, mean_ms: f64, p95_ms: f64) -> LevelPoint {
    LevelPoint {
        concurrency: n,
        iops,
        bytes_per_s: iops * 16384.0,
        latency_ns: LatencyNs {
            mean: mean_ms * 1e6,
            p95: Some(p95_ms * 1e6),
            ..Default::default()
        },
        kernel_util_pct: None,
        kernel_aqu_sz: None,
        ..Default::default()
    }
}

/// Seed 000's sysbench runs (threads, reads/s, avg ms, p95 ms).
fn seed000() -> Vec<LevelPoint> {
    vec![
        level(1, 7113.16, 0.14, 0.17),
        level(4, 26248.44, 0.15, 0.21),
        level(16, 76845.96, 0.21, 0.36),
        level(64, 127840.59, 0.50, 1.25),
        level(256, 131558.79, 1.95, 3.89),
    ]
}

#[test]
fn seed000_table_and_knee() {
    let v = analyze(&seed000());
    let ratios: Vec<String> = v
        .levels
        .iter()
        .map(|f| fmt_ratio(f.saturation_avg))
        .collect();
    assert_eq!(ratios, ["1.00x", "1.07x", "1.5x", "3.6x", "13.9x"]);
    assert!((16..=64).contains(&v.knee_concurrency), "{:#?}", v.summary);
    let knee_iops = seed000()
        .iter()
        .find(|l| l.concurrency == v.knee_concurrency)
        .unwrap()
        .iops;
    assert_eq!(v.max_useful_iops, knee_iops);
    assert_eq!(v.linear_from_concurrency, Some(64));
    // The summary says it in words, with the figures.
    let text = v.summary.join("\n");
    assert!(
        text.contains(
            "Baseline (concurrency 1): 0.140 ms average latency, 0.170 ms p95, 7113 IOPS."
        ),
        "{text}"
    );
    assert!(
        text.contains("Latency turns linear (queueing) from concurrency 64"),
        "{text}"
    );
}

#[test]
fn seed001_verdict() {
    let v = analyze(&[
        level(1, 127.90, 7.83, 171.82),
        level(4, 295.40, 13.69, 312.09),
        level(64, 601.20, 108.72, 2516.43),
    ]);
    let by_n = |n: u32| v.levels.iter().find(|f| f.concurrency == n).unwrap();
    assert!(!by_n(4).overloaded, "not overloaded at 4 threads");
    assert!(by_n(64).overloaded, "overloaded at 64 threads");
    assert_eq!(v.overload_concurrency, Some(64));
    let r64 = by_n(64).saturation_p95.unwrap();
    assert!(r64 > 14.0 && r64 < 15.0, "p95 ratio {r64}");
}

#[test]
fn closed_system_knee_at_k_with_uneven_levels() {
    // k = 12 units of 2 ms, levels 1..48 in steps that include 12.
    let k = 12.0;
    let lv: Vec<LevelPoint> = [1u32, 3, 6, 12, 24, 48]
        .iter()
        .map(|&n| {
            let nf = f64::from(n);
            let r = 2.0 * (nf / k).max(1.0);
            level(n, nf.min(k) / 0.002, r, r)
        })
        .collect();
    let v = analyze(&lv);
    assert_eq!(v.knee_concurrency, 12);
    assert!((v.max_useful_iops - 6000.0).abs() < 1e-6);
    assert_eq!(v.linear_from_concurrency, Some(12));
}

#[test]
fn usl_parameters_recovered_and_serialised() {
    let (l, s, k) = (3000.0, 0.08, 0.0001);
    let lv: Vec<LevelPoint> = [1u32, 2, 4, 8, 16, 32, 64, 128]
        .iter()
        .map(|&n| {
            let nf = f64::from(n);
            let x = usl::predict(l, s, k, nf);
            level(n, x, nf / x * 1000.0, nf / x * 1500.0)
        })
        .collect();
    let v = analyze(&lv);
    let u = v.usl.as_ref().unwrap();
    assert!((u.lambda / l - 1.0).abs() < 1e-4 && (u.sigma - s).abs() < 1e-5);
    assert!((u.kappa - k).abs() < 1e-7, "{u:?}");
    let peak = u.peak_concurrency.unwrap();
    assert!((peak - ((1.0 - s) / k).sqrt()).abs() < 0.5, "{peak}");
    // The verdict survives a JSON round trip with the keys the issue names.
    let json = serde_json::to_value(&v).unwrap();
    for key in [
        "baseline_latency_ns",
        "knee_concurrency",
        "max_useful_iops",
        "overload_concurrency",
        "usl",
        "summary",
    ] {
        assert!(json.get(key).is_some(), "no {key} in {json}");
    }
    let back: Verdict = serde_json::from_value(json).unwrap();
    assert_eq!(back, v);
}

/// A sweep of the sim engine, as its typed report.
fn sim_sweep(engine: &str, extra: &[&str]) -> iosat::load::result::SweepReport {
    crate::util::SimSweep::new(engine).args(extra).report()
}

#[test]
fn a_capped_sim_is_recognised_and_the_kernel_limit_named() {
    use iosat::analysis::evidence::{IoLimit, LimitKind};
    use iosat::analysis::throttle::LimitPlace;
    use iosat::analysis::{analyze_with, Context};
    // 32 units of 1 ms (32000 IOPS of their own) held at 3000 IOPS by the sim's cap.
    let r = sim_sweep("sim:units=32,service=1ms,cap=3000", &[]);
    let points: Vec<LevelPoint> = r.levels.iter().map(|l| l.point()).collect();
    let limits = [IoLimit {
        kind: LimitKind::ReadIops,
        value: 3000.0,
        dev: "253:0".into(),
        source: "/sys/fs/cgroup/test/io.max".into(),
    }];
    let ctx = Context {
        limits: &limits,
        simulated: true,
        read_share: Some(1.0),
        device: Some("vda"),
        ..Default::default()
    };
    let v = analyze_with(&points, &ctx);
    let t = v.limit.as_ref().expect("the cap is a plateau");
    assert!((t.iops / 3000.0 - 1.0).abs() < 0.01, "{t:?}");
    assert_eq!(t.from_concurrency, 4, "{t:?}");
    // No kernel view in a simulation: where requests wait is not claimed.
    assert_eq!(t.place, LimitPlace::Unknown);
    assert_eq!(t.io_limit.as_ref(), Some(&limits[0]));
    let line = v
        .summary
        .iter()
        .find(|s| s.starts_with("Throughput is flat at about 3000 IOPS"))
        .unwrap_or_else(|| panic!("{:#?}", v.summary));
    assert!(line.contains("at most 3000 read IOPS on vda: cgroup /sys/fs/cgroup/test/io.max"));
    // A simulated device's round limit is never "provisioned".
    assert_eq!(v.suspected_cap_iops, None);
    assert!(
        !v.summary.iter().any(|s| s.contains("provisioned")),
        "{:#?}",
        v.summary
    );
    // Too few levels: no fit.
    let short = sim_sweep("sim:units=32,service=1ms,cap=3000", &["--levels", "1,4,16"]);
    let v = short.verdict.unwrap();
    assert!(v.usl.is_none());
    assert!(v
        .summary
        .iter()
        .any(|s| s.starts_with("No USL fit: 3 levels")));
}

#[test]
fn a_mixed_sweep_is_judged_per_direction() {
    let o = crate::util::iosat()
        .args([
            "sweep",
            "--engine",
            "sim:units=4,service=1ms",
            "--pattern",
            "randrw",
            "--levels",
            "1,2,4,8,16",
        ])
        .output()
        .unwrap();
    let text = crate::util::ok_stdout(&o);
    // The verdict item of a direction, its wrapped continuation lines (deeper indented) joined.
    let line = |dir: &str| {
        let mut it = text
            .lines()
            .skip_while(|l| !l.trim_start().starts_with(dir));
        let first = it
            .next()
            .unwrap_or_else(|| panic!("no {dir} line in\n{text}"));
        let rest = it.take_while(|l| l.starts_with("    ")).map(str::trim);
        std::iter::once(first.trim_end())
            .chain(rest)
            .collect::<Vec<_>>()
            .join(" ")
    };
    for dir in ["Reads:", "Writes:"] {
        let l = line(dir);
        assert!(
            l.contains("baseline 1.00 ms at concurrency 1; knee 4"),
            "{l}"
        );
        assert!(l.contains("overloaded from concurrency 16"), "{l}");
    }
}
