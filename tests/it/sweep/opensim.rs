//! The open loop on the sim engine through the command line (`sweep --engine sim:... --rate`,
//! `--target-p99`): the whole open-loop pipeline (schedule, levels, JSON, verdict, target
//! search, compare) against a device whose answers queueing theory gives. With Poisson
//! arrivals and exponential service on c units the sim is the M/M/c queue, so the latency
//! from the intended start must be Erlang C's (mean C/(cμ − λ) + 1/μ, and the response time's
//! distribution for the percentiles: iosat::load::open::sim::theory); beyond capacity a level
//! must say it was not kept; the target search must land on the rate where theory's p99
//! crosses the target; and a seed must repeat every number. All in simulated time: each run
//! costs well under a second of real time.

use super::*;
use iosat::load::open::sim::theory::{mmc_mean_response_s, mmc_response_quantile_s};

/// 4 units of 2 ms mean, exponential: M/M/4 with μ = 500/s per unit, 2000/s in all.
const MMC: &str = "sim:units=4,service=2ms,dist=exp";
const MU: f64 = 500.0;

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"))
}

fn rel(got: f64, want: f64) -> f64 {
    (got / want - 1.0).abs()
}

fn open_levels(j: &Value) -> &Vec<Value> {
    j["open_levels"].as_array().expect("open_levels")
}

/// The run's open-loop figures: the levels and the verdict, without the envelope's clock.
fn numbers(j: &Value) -> (Value, Value, Value) {
    (
        j["open_levels"].clone(),
        j["open_loop"].clone(),
        j["levels"].clone(),
    )
}

/// The M/M/4 queue at ρ = 0.25, 0.5 and 0.75 for 200 simulated seconds each (100 000 to
/// 300 000 requests). Tolerances: over 20 seeds of such levels the mean missed Erlang C by
/// 0.25 % (one standard deviation) at ρ = 0.5 and 0.7 % at ρ = 0.75, the p99 by 0.4 % and
/// 1.6 % (about 0.6 % at ρ = 0.25), with no bias; the bounds are four standard deviations or
/// more, plus HdrHistogram's 0.1 % (the unit tests in load/open/sim.rs hold longer levels
/// tighter). A wrong queue misses them by far: one unit fewer is M/M/3 at ρ = 1 at 1500/s.
#[test]
fn poisson_on_exponential_units_is_erlang_c_through_the_command_line() {
    let j = SimSweep::new(MMC)
        .args(&[
            "--rate",
            "500,1000,1500",
            "--duration",
            "200",
            "--ramp",
            "1",
            "--no-progress",
        ])
        .json();
    assert_eq!(j["workload"]["engine"], "sim", "{}", j["workload"]);
    assert_eq!(j["open_loop"]["generator"], "sim", "{}", j["open_loop"]);
    assert!(
        j["levels"].as_array().unwrap().is_empty(),
        "a list of rates alone"
    );
    let levels = open_levels(&j);
    assert_eq!(levels.len(), 3);
    for (l, (rate, mean_tol, p99_tol)) in levels.iter().zip([
        (500.0, 0.01, 0.02),
        (1000.0, 0.01, 0.02),
        (1500.0, 0.03, 0.06),
    ]) {
        assert_eq!(f(l, "rate_iops"), rate);
        // Poisson counts: about 0.3 % (one standard deviation) over 200 s at these rates.
        assert!(rel(f(l, "offered_iops"), rate) < 0.015, "{l}");
        assert!(rel(f(l, "iops"), f(l, "offered_iops")) < 0.005, "{l}");
        assert_eq!(l["behind"]["kept"], true, "{l}");
        assert!(
            l["kernel"].is_null(),
            "a simulated device has no kernel view: {l}"
        );
        let lat = &l["latency_ns"];
        let want_mean = mmc_mean_response_s(4, rate, MU) * 1e9;
        assert!(
            rel(f(lat, "mean"), want_mean) < mean_tol,
            "{rate}: {lat} vs {want_mean}"
        );
        let want_p99 = mmc_response_quantile_s(4, rate, MU, 0.99) * 1e9;
        assert!(
            rel(f(lat, "p99"), want_p99) < p99_tol,
            "{rate}: {lat} vs {want_p99}"
        );
        // The default pool of 64 never filled: no request went out late, so the device's
        // time from submission is the whole of it.
        assert!(l["behind"]["p99_ns"].as_u64().unwrap() <= 1, "{l}");
        let svc = &l["service_latency_ns"];
        assert!(rel(f(svc, "mean"), f(lat, "mean")) < 1e-3, "{l}");
        // The sim feeds the levels' 95 % intervals (load/open/ci.rs) like a real generator.
        let ci = l["latency_ns_ci95"]["p99"]
            .as_array()
            .expect("p99 interval");
        let (lo, hi) = (ci[0].as_f64().unwrap(), ci[1].as_f64().unwrap());
        assert!(lo <= f(lat, "p99") && f(lat, "p99") <= hi && lo < hi, "{l}");
    }
}

/// The brief's device (4 units of 2 ms, fixed) at 25, 50, 75 and 120 % of its 2000 IOPS:
/// the first three kept, the last flagged as beyond capacity with the device's own rate
/// achieved, in the JSON, the verdict's words and the text table.
#[test]
fn at_120_percent_of_capacity_the_level_is_not_kept() {
    let run = SimSweep::new("sim:units=4,service=2ms").args(&[
        "--rate",
        "500,1000,1500,2400",
        "--duration",
        "20",
        "--no-progress",
    ]);
    let j = run.json();
    let levels = open_levels(&j);
    let kept: Vec<bool> = levels
        .iter()
        .map(|l| l["behind"]["kept"].as_bool().unwrap())
        .collect();
    assert_eq!(kept, [true, true, true, false]);
    for l in &levels[..3] {
        // M/D/4: never below the 2 ms service time.
        assert!(l["latency_ns"]["min"].as_u64() == Some(2_000_000), "{l}");
    }
    let over = &levels[3];
    assert!(rel(f(over, "iops"), 2000.0) < 0.01, "{over}");
    assert!(over["behind"]["unsent"].as_u64().unwrap() > 0, "{over}");
    // Requests waited for the pool for seconds: their latency from the intended start shows
    // it, their time on the device does not.
    assert!(f(&over["latency_ns"], "p99") > 10.0 * f(&over["service_latency_ns"], "p99"));
    let v = &j["open_loop"]["verdict"];
    assert_eq!(f(v, "beyond_capacity_from_iops"), f(over, "offered_iops"));
    assert_eq!(f(v, "max_kept_iops"), f(&levels[2], "offered_iops"));
    let words = v["words"].to_string();
    assert!(words.contains("was not kept"), "{words}");
    assert!(words.contains("beyond what the device delivers"), "{words}");
    let text = run.stdout();
    assert_eq!(text.matches("BEHIND").count(), 1, "{text}");
}

/// `--target-p99 15ms` on M/M/4: theory's p99 crosses 15 ms at λ* ≈ 1645/s (82 % of the
/// capacity; a 5 ms target is out of reach on this device at any rate: exponential service
/// alone has a p99 of ln(100) × 2 ms = 9.2 ms). The search must bracket λ* and interpolate near it. The pool is made large
/// (`--max-inflight 512`): the default, 4x the closed loop's knee of 4, fills for over 1 % of
/// requests at this load, which rightly marks a level not kept, and the search would then
/// answer for that pool rather than for the queue.
#[test]
fn target_p99_lands_where_the_mmc_p99_crosses_the_target() {
    let target = 0.015;
    let (mut lo, mut hi) = (1.0, 4.0 * MU - 1.0);
    while hi - lo > 1e-6 {
        let mid = (lo + hi) / 2.0;
        if mmc_response_quantile_s(4, mid, MU, 0.99) > target {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    let truth = lo;
    assert!((1600.0..1700.0).contains(&truth), "{truth}");
    let j = SimSweep::new(MMC)
        .args(&[
            "--target-p99",
            "15ms",
            "--max-inflight",
            "512",
            "--duration",
            "400",
            "--no-progress",
        ])
        .json();
    assert!(
        !j["levels"].as_array().unwrap().is_empty(),
        "closed loop first"
    );
    let a = &j["open_loop"]["verdict"]["max_iops_at_target"];
    assert_eq!(a["estimate"], false, "{a}");
    let (low, high, iops) = (f(a, "low_iops"), f(a, "high_iops"), f(a, "iops"));
    // Levels of 400 s keep the p99's own sampling noise to about 1 % (a 100 s level's 2-3 %
    // moved the crossing by 1-2 %). Over 8 seeds of 400 s the answer was within 0.5 % of λ*
    // and the interval held it; the bounds allow half a percent at the ends and 2 %.
    assert!(
        low <= truth * 1.005 && truth * 0.995 <= high,
        "{a} vs {truth}"
    );
    assert!(rel(iops, truth) < 0.02, "{a} vs {truth}");
    // Each level's decision at 95 % agrees with the truth: a level surely met is one where
    // theory's p99 is within the target, surely missed one where it is above.
    let probes = open_levels(&j);
    for l in probes {
        let theory_p99 = mmc_response_quantile_s(4, f(l, "offered_iops"), MU, 0.99);
        match l["target_decision"].as_str() {
            Some("met") => assert!(theory_p99 < target, "{l}: theory {theory_p99}"),
            Some("missed") if l["behind"]["kept"] == true => {
                assert!(theory_p99 > target, "{l}: theory {theory_p99}")
            }
            Some("missed" | "undecided") => {}
            other => panic!("target_decision {other:?} in {l}"),
        }
    }
    // The search stopped by its resolution (no gap between the rates that met, were within
    // the noise and missed wider than 5 % of the lowest) within its ten probes.
    let mut edges = vec![low, high];
    edges.extend(
        a["undecided_iops"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap()),
    );
    edges.sort_by(f64::total_cmp);
    let widest = edges.windows(2).map(|w| w[1] - w[0]).fold(0.0, f64::max);
    assert!(widest <= 0.05 * low || probes.len() == 10, "{a}");
    assert!((2..=10).contains(&probes.len()), "{}", probes.len());
}

/// The brief's example: `--target-p99 5ms` on 4 fixed units of 2 ms gives the same document,
/// number for number, every time; another seed gives other numbers.
#[test]
fn a_seed_repeats_every_number() {
    let run = |seed: &str| {
        SimSweep::new("sim:units=4,service=2ms")
            .args(&[
                "--target-p99",
                "5ms",
                "--duration",
                "10",
                "--seed",
                seed,
                "--no-progress",
            ])
            .json()
    };
    let a = run("7");
    assert!(!open_levels(&a).is_empty());
    assert!(
        a["open_loop"]["verdict"]["max_iops_at_target"].is_object(),
        "{}",
        a["open_loop"]
    );
    assert_eq!(numbers(&a), numbers(&run("7")));
    assert_ne!(numbers(&a).0, numbers(&run("8")).0);
}

/// A provisioned cap of 1000 IOPS on a device that could do 8000: whatever is offered, the
/// achieved rate stays at or under the cap (plus the one token a window can open with), and
/// the rates above it are not kept.
#[test]
fn a_cap_is_never_exceeded() {
    let secs = 10.0;
    let j = SimSweep::new("sim:units=8,service=1ms,cap=1000")
        .args(&[
            "--rate",
            "500,900,1500,3000",
            "--duration",
            "10",
            "--no-progress",
        ])
        .json();
    let levels = open_levels(&j);
    assert_eq!(levels.len(), 4);
    for l in levels {
        assert!(f(l, "iops") <= 1000.0 + 1.0 / secs, "{l}");
    }
    let kept: Vec<bool> = levels
        .iter()
        .map(|l| l["behind"]["kept"].as_bool().unwrap())
        .collect();
    assert_eq!(kept, [true, true, false, false]);
    assert!(rel(f(&levels[3], "iops"), 1000.0) < 0.01, "{}", levels[3]);
}

/// `compare` reads two sim open-loop runs like real ones: a device with twice the units keeps
/// twice the rate.
#[test]
fn compare_reads_sim_open_loops() {
    let dir = crate::util::tempdir().unwrap();
    let save = |units: u32, name: &str| {
        SimSweep::new(&format!("sim:units={units},service=2ms"))
            .args(&[
                "--rate",
                "1000,1800,3600",
                "--duration",
                "5",
                "--no-progress",
            ])
            .save(dir.path().join(name))
    };
    let (a, b) = (save(4, "a.json"), save(8, "b.json"));
    let out = iosat().arg("compare").arg(&a).arg(&b).output().unwrap();
    let text = crate::util::ok_stdout(&out);
    // The offered rates are the schedule's (Poisson counts), not the round rates asked for.
    let offered = |p: &Path, i: usize| {
        let j: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        f(&open_levels(&j)[i], "offered_iops")
    };
    let want = format!(
        "open loop kept up to {:.0} IOPS offered (was {:.0})",
        offered(&b, 2),
        offered(&a, 1)
    );
    assert!(text.contains(&want), "{want} in {text}");
}
