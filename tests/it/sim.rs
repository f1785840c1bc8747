//! The `sim` engine against queueing physics whose answers are known in closed form: a closed
//! system of N clients on k units of service time S plateaus at k/S (or the cap), and Little's
//! law ties IOPS × latency to N.

use iosat::load::sim::{SimEngine, SimSpec};
use iosat::load::{Engine, LevelCtl, LevelSpec, LevelStats, Pattern};
use std::sync::atomic::Ordering;

const S: u64 = 1_000_000_000;

fn level(concurrency: u32, pattern: Pattern, ramp_ns: u64, duration_ns: u64) -> LevelSpec {
    LevelSpec {
        threads: concurrency,
        queue_depth: 1,
        pattern,
        block_size: 4096,
        ramp_ns,
        duration_ns,
        seed: 1,
    }
}

fn run(engine: &str, spec: &LevelSpec) -> LevelStats {
    let sim: SimSpec = engine.parse().unwrap();
    SimEngine::new(sim)
        .run_level(spec, &LevelCtl::default())
        .unwrap()
}

struct Figures {
    ops: u64,
    iops: f64,
    bytes_per_s: f64,
    mean_ns: f64,
}

fn figures(st: &LevelStats) -> Figures {
    let (r, w) = (st.read_ns.len(), st.write_ns.len());
    let ops = r + w;
    let secs = st.elapsed_ns as f64 / 1e9;
    let mean_ns = if ops == 0 {
        0.0
    } else {
        (st.read_ns.mean() * r as f64 + st.write_ns.mean() * w as f64) / ops as f64
    };
    Figures {
        ops,
        iops: ops as f64 / secs,
        bytes_per_s: (st.read_bytes + st.write_bytes) as f64 / secs,
        mean_ns,
    }
}

fn within(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= want.abs() * rel
}

#[test]
fn four_units_of_8ms_plateau_at_500_iops_and_obey_littles_law() {
    for n in [1u32, 2, 3, 4, 5, 6, 8, 16, 32, 64, 128, 256] {
        // The ramp (1 s, simulated) outlasts the start-up transient even at 256 clients.
        let st = run(
            "sim:units=4,service=8ms",
            &level(n, Pattern::RandRead, S, 2 * S),
        );
        let f = figures(&st);
        assert_eq!(st.elapsed_ns, 2 * S);
        assert!(!st.interrupted);
        let want_iops = f64::from(n.min(4)) * 125.0;
        assert!(
            within(f.iops, want_iops, 0.02),
            "N={n}: {} IOPS, want {want_iops}",
            f.iops
        );
        if n <= 4 {
            // No queueing: every request takes exactly the service time.
            let h = &st.read_ns;
            assert!(
                h.equivalent(h.min(), h.max()),
                "N={n}: {}..{}",
                h.min(),
                h.max()
            );
            assert!(
                within(f.mean_ns, 8e6, 0.002),
                "N={n}: mean {} ns",
                f.mean_ns
            );
        } else {
            let want_ns = f64::from(n) / 500.0 * 1e9;
            assert!(
                within(f.mean_ns, want_ns, 0.01),
                "N={n}: mean {} ns, want {want_ns}",
                f.mean_ns
            );
        }
        let little = f.iops * f.mean_ns / 1e9;
        assert!(
            within(little, f64::from(n), 0.01),
            "N={n}: IOPS × latency = {little}"
        );
        assert_eq!(st.write_ns.len(), 0, "randread records no writes");
        assert_eq!(st.read_bytes, f.ops * 4096);
    }
}

#[test]
fn concurrency_is_threads_times_queue_depth() {
    let mut spec = level(2, Pattern::RandRead, S, 2 * S);
    spec.queue_depth = 8;
    let f = figures(&run("sim:units=4,service=8ms", &spec));
    // 16 in flight on 4 units of 8 ms: 500 IOPS at 32 ms.
    assert!(within(f.iops, 500.0, 0.02), "{}", f.iops);
    assert!(within(f.mean_ns, 32e6, 0.01), "{}", f.mean_ns);
}

#[test]
fn the_ramp_is_not_measured() {
    // One client, 8 ms fixed: completions at every multiple of 8 ms. The window (1 s, 3 s]
    // holds exactly 250 of them; counting the ramp would give 375.
    let st = run(
        "sim:units=1,service=8ms",
        &level(1, Pattern::RandRead, S, 2 * S),
    );
    assert_eq!(st.read_ns.len(), 250);
    assert_eq!(st.elapsed_ns, 2 * S);
    let st = run(
        "sim:units=1,service=8ms",
        &level(1, Pattern::RandRead, 0, 2 * S),
    );
    assert_eq!(st.read_ns.len(), 250);
}

#[test]
fn exponential_service_has_the_right_mean_and_shape() {
    // One client on one unit: latency is the service time itself. 40 simulated seconds give
    // about 40 000 draws, so the sample mean is within ±0.5 % (1 σ) of 1 ms.
    let st = run(
        "sim:units=1,service=1ms,dist=exp",
        &level(1, Pattern::RandRead, 0, 40 * S),
    );
    let h = &st.read_ns;
    assert!(within(h.mean(), 1e6, 0.02), "mean {}", h.mean());
    // Exponential, not fixed: median = ln 2 × mean, standard deviation = mean.
    let p50 = h.value_at_quantile(0.5) as f64;
    assert!(within(p50, 0.693e6, 0.03), "p50 {p50}");
    assert!(within(h.stdev(), 1e6, 0.03), "stdev {}", h.stdev());
    // p99 of an exponential is ln(100) × mean ≈ 4.6 ms.
    let p99 = h.value_at_quantile(0.99) as f64;
    assert!(within(p99, 4.605e6, 0.05), "p99 {p99}");

    // In a closed system with zero think time all min(N, k) units are always busy whatever
    // the distribution: 4 units of 8 ms mean still plateau at 500 IOPS.
    let f = figures(&run(
        "sim:units=4,service=8ms,dist=exp",
        &level(16, Pattern::RandRead, S, 40 * S),
    ));
    assert!(within(f.iops, 500.0, 0.03), "{}", f.iops);
    let little = f.iops * f.mean_ns / 1e9;
    assert!(within(little, 16.0, 0.01), "IOPS × latency = {little}");
}

#[test]
fn an_iops_cap_holds_throughput_at_the_cap() {
    let eng = "sim:units=32,service=8ms,cap=2000";
    // Below the cap the device is the limit: 1 client does 125 IOPS, 8 do 1000.
    for (n, want) in [
        (1u32, 125.0),
        (8, 1000.0),
        (16, 2000.0),
        (64, 2000.0),
        (256, 2000.0),
    ] {
        let f = figures(&run(eng, &level(n, Pattern::RandRead, S, 2 * S)));
        assert!(
            within(f.iops, want, 0.02),
            "N={n}: {} IOPS, want {want}",
            f.iops
        );
        let little = f.iops * f.mean_ns / 1e9;
        assert!(
            within(little, f64::from(n), 0.01),
            "N={n}: IOPS × latency = {little}"
        );
    }
    // Without the cap the same device would do 4000.
    let f = figures(&run(
        "sim:units=32,service=8ms",
        &level(256, Pattern::RandRead, S, 2 * S),
    ));
    assert!(within(f.iops, 4000.0, 0.02), "{}", f.iops);
}

#[test]
fn a_bandwidth_cap_limits_bytes_per_second() {
    // 4 MB/s of 4 KiB requests: 976.6 IOPS, below the 4000 the units could do.
    let eng = "sim:units=32,service=8ms,bw=4";
    let f = figures(&run(eng, &level(64, Pattern::RandWrite, S, 2 * S)));
    assert!(within(f.bytes_per_s, 4e6, 0.02), "{} B/s", f.bytes_per_s);
    // One client is not limited by it: 125 × 4096 B/s.
    let f = figures(&run(eng, &level(1, Pattern::RandWrite, S, 2 * S)));
    assert!(
        within(f.bytes_per_s, 512_000.0, 0.02),
        "{} B/s",
        f.bytes_per_s
    );
    // Bigger blocks hit the same byte rate with fewer I/Os.
    let mut spec = level(64, Pattern::RandWrite, S, 2 * S);
    spec.block_size = 65536;
    let f = figures(&run(eng, &spec));
    assert!(within(f.bytes_per_s, 4e6, 0.02), "{} B/s", f.bytes_per_s);
    assert!(within(f.iops, 4e6 / 65536.0, 0.02), "{} IOPS", f.iops);
}

#[test]
fn mixed_patterns_split_reads_and_writes() {
    let st = run(
        "sim:units=8,service=1ms,dist=exp",
        &level(16, Pattern::RandRw { read_pct: 70 }, 0, 10 * S),
    );
    let (r, w) = (st.read_ns.len(), st.write_ns.len());
    assert!(r > 0 && w > 0, "{r} reads, {w} writes");
    let share = r as f64 / (r + w) as f64;
    assert!(within(share, 0.70, 0.03), "read share {share}");
    assert_eq!(st.read_bytes, r * 4096);
    assert_eq!(st.write_bytes, w * 4096);

    let st = run("sim:units=8,service=1ms", &level(16, Pattern::Write, 0, S));
    assert_eq!(st.read_ns.len(), 0);
    assert!(!st.write_ns.is_empty());
}

#[test]
fn same_seed_same_result_other_seed_other_result() {
    let eng = "sim:units=4,service=2ms,dist=exp,cap=1500";
    let spec = level(12, Pattern::RandRw { read_pct: 50 }, S / 2, 2 * S);
    let a = run(eng, &spec);
    let b = run(eng, &spec);
    assert_eq!(a.read_ns, b.read_ns);
    assert_eq!(a.write_ns, b.write_ns);
    assert_eq!((a.read_bytes, a.write_bytes), (b.read_bytes, b.write_bytes));
    assert_eq!(a.read_ns.max(), b.read_ns.max());

    let mut other = spec.clone();
    other.seed = 2;
    let c = run(eng, &other);
    assert_ne!(
        (a.read_bytes, a.read_ns.mean(), a.write_ns.mean()),
        (c.read_bytes, c.read_ns.mean(), c.write_ns.mean())
    );
}

#[test]
fn stop_is_respected_and_progress_published() {
    let sim: SimSpec = "sim:units=4,service=8ms".parse().unwrap();
    let ctl = LevelCtl::default();
    ctl.stop.store(true, Ordering::Relaxed);
    let st = SimEngine::new(sim.clone())
        .run_level(&level(8, Pattern::RandRead, 0, 2 * S), &ctl)
        .unwrap();
    assert!(st.interrupted);
    assert!(st.elapsed_ns < 2 * S);
    assert_eq!(st.read_ns.len(), 0);

    let ctl = LevelCtl::default();
    let st = SimEngine::new(sim)
        .run_level(&level(8, Pattern::RandRead, 0, 2 * S), &ctl)
        .unwrap();
    assert!(!st.interrupted);
    assert_eq!(ctl.ops_done.load(Ordering::Relaxed), st.read_ns.len());
}

#[test]
fn a_level_too_big_to_simulate_is_a_usage_error() {
    let sim: SimSpec = "sim:units=100000,service=1ns".parse().unwrap();
    let err = SimEngine::new(sim)
        .run_level(
            &level(256, Pattern::RandRead, 0, 60 * S),
            &LevelCtl::default(),
        )
        .unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(
        err.to_string().starts_with("'--engine' would simulate"),
        "{err}"
    );
}

#[test]
fn engine_is_named_sim() {
    let sim: SimSpec = "sim:units=1,service=1ms".parse().unwrap();
    assert_eq!(SimEngine::new(sim).name(), "sim");
}

/// Issue 3's acceptance tests: the sim engine swept over levels 1..256 and judged by
/// `iosat::analysis::analyze`.
mod acceptance {
    use super::*;
    use iosat::analysis::{analyze, LatencyNs, LevelPoint, Verdict};

    /// What the analysis sees of one level: the same reduction a sweep makes (reads and writes
    /// merged; this workload is all reads).
    fn point(concurrency: u32, st: &LevelStats) -> LevelPoint {
        let f = figures(st);
        let mut h = st.read_ns.clone();
        h.add(&st.write_ns).unwrap();
        let q = |x: f64| Some(h.value_at_quantile(x) as f64);
        LevelPoint {
            concurrency,
            iops: f.iops,
            bytes_per_s: f.bytes_per_s,
            latency_ns: LatencyNs {
                min: Some(h.min() as f64),
                mean: h.mean(),
                p50: q(0.5),
                p90: q(0.9),
                p95: q(0.95),
                p99: q(0.99),
                p999: q(0.999),
                max: Some(h.max() as f64),
            },
            kernel_util_pct: None,
            kernel_aqu_sz: None,
            ..Default::default()
        }
    }

    /// The default levels 1, 2, 4 … 256, `secs` each after a 1 s ramp (simulated time:
    /// milliseconds of real time).
    fn sweep(engine: &str, secs: u64) -> (Vec<LevelPoint>, Verdict) {
        let points: Vec<LevelPoint> = (0..=8)
            .map(|i| {
                let n = 1u32 << i;
                point(n, &run(engine, &level(n, Pattern::RandRead, S, secs * S)))
            })
            .collect();
        let verdict = analyze(&points);
        (points, verdict)
    }

    #[test]
    fn sweep_of_4_units_of_8ms_plateaus_near_500_iops_with_the_knee_at_4() {
        for engine in [
            "sim:units=4,service=8ms",
            "sim:units=4,service=8ms,dist=exp",
        ] {
            // 20 s levels: about 2500 samples at concurrency 1, so an exponential device's
            // baseline mean settles within a few percent.
            let (points, v) = sweep(engine, 20);
            // The plateau: every level from 4 up within 3 % of k/S = 500 IOPS.
            for p in points.iter().filter(|p| p.concurrency >= 4) {
                assert!(
                    within(p.iops, 500.0, 0.03),
                    "{engine} N={}: {}",
                    p.concurrency,
                    p.iops
                );
            }
            assert!(
                within(v.peak_iops, 500.0, 0.03),
                "{engine}: peak {}",
                v.peak_iops
            );
            assert_eq!(v.knee_concurrency, 4, "{engine}: {:?}", v.summary);
            assert!(
                within(v.max_useful_iops, 500.0, 0.03),
                "{engine}: {}",
                v.max_useful_iops
            );
            assert!(
                within(v.baseline_latency_ns, 8e6, 0.03),
                "{engine}: {}",
                v.baseline_latency_ns
            );
            // Past the knee every extra client only queues: latency turns linear, and p95
            // passes 3x the baseline before 256.
            assert!(
                v.linear_from_concurrency
                    .is_some_and(|c| (4..=8).contains(&c)),
                "{engine}: {:?}",
                v.linear_from_concurrency
            );
            assert!(
                v.overload_concurrency.is_some_and(|c| c > 4),
                "{engine}: {:?}",
                v.overload_concurrency
            );
            // Little's law closes at every level of a simulated device.
            assert!(
                v.levels.iter().all(|f| f.littles_law_ok),
                "{engine}: {:?}",
                v.levels
            );
        }
    }

    #[test]
    fn sweep_of_32_units_under_an_iops_cap_plateaus_at_the_cap() {
        // The case (32 units of 8 ms, 4000 IOPS of their own, capped at 2000), and one
        // where the device's own limit (32 units of 7 ms: 4571 IOPS) is not a round figure.
        // Issue 25: one sweep at one block size can't tell a cap without a burst from the
        // device's own limit, round figure or not: the plateau is found at the cap, and no cap
        // is claimed (the burst that is the evidence is tested in analysis/tests.rs and the
        // CLI sweep tests).
        for (engine, want) in [
            ("sim:units=32,service=8ms,cap=2000", 2000.0),
            ("sim:units=32,service=7ms,cap=3000", 3000.0),
            ("sim:units=64,service=2ms,dist=exp,cap=16000", 16000.0),
        ] {
            let (_, v) = sweep(engine, 2);
            let t = v
                .limit
                .as_ref()
                .unwrap_or_else(|| panic!("{engine}: {:?}", v.summary));
            assert!(within(t.iops, want, 0.01), "{engine}: {}", t.iops);
            assert!(within(v.peak_iops, want, 0.02), "{engine}: {}", v.peak_iops);
            assert_eq!(v.suspected_cap_iops, None, "{engine}: {:?}", v.summary);
            assert!(
                v.summary
                    .iter()
                    .any(|s| s.contains("one sweep cannot tell them apart")),
                "{engine}: {:?}",
                v.summary
            );
        }
        // Same device without the cap: the plateau is its own (4571 IOPS), and no cap is claimed.
        let (_, free) = sweep("sim:units=32,service=7ms", 2);
        assert!(
            within(free.peak_iops, 32.0 / 0.007, 0.02),
            "{}",
            free.peak_iops
        );
        assert_eq!(free.suspected_cap_iops, None, "{:?}", free.summary);
    }
}
