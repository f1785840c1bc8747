//! The acceptance cases through the command line: `--engine sim:...` runs the whole
//! pipeline (levels → JSON → verdict) against a device whose answers are known in closed form.
//! A closed system of N clients with no think time on k units of fixed service time S does
//! min(N, k)/S IOPS (or the cap C, whichever is lower) at a latency of max(S, N/IOPS).

use super::*;

/// A sim sweep is simulated time: `secs` seconds per level cost milliseconds. The run is
/// bounded (killed after 60 s) so a sim that slept in real time fails instead of hanging:
/// nine levels of `--duration 20` would take over three minutes of wall time.
fn sim_json(engine: &str, extra: &[&str]) -> Value {
    SimSweep::new(engine).args(extra).json()
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"))
}

fn near(got: f64, want: f64, rel: f64) -> bool {
    (got - want).abs() <= want.abs() * rel
}

fn summary(v: &Value) -> String {
    let s = v["summary"].as_array().expect("summary is a list of lines");
    assert!(!s.is_empty());
    s.iter()
        .map(|l| l.as_str().expect("summary lines are text"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// USL parameters are present and physically meaningful, and the curve's best
/// IOPS-per-latency point lies within one level of `knee`.
fn check_usl(v: &Value, knee: f64) {
    let u = &v["usl"];
    let lambda = f(u, "lambda");
    let (sigma, kappa, r2) = (f(u, "sigma"), f(u, "kappa"), f(u, "r_squared"));
    assert!(lambda > 0.0, "{u}");
    assert!((0.0..=1.0).contains(&sigma) && kappa >= 0.0, "{u}");
    assert!((0.0..=1.0).contains(&r2), "{u}");
    let pk = f(u, "power_peak_concurrency");
    assert!(pk >= knee / 2.0 && pk <= knee * 2.0, "{u}");
    assert!(
        f(u, "peak_concurrency") > 0.0 && f(u, "peak_iops") > 0.0,
        "{u}"
    );
}

#[test]
fn four_units_of_8ms_plateau_near_500_iops_with_the_knee_at_4() {
    let j = sim_json("sim:units=4,service=8ms", &[]);
    assert_eq!(j["workload"]["engine"], "sim");
    assert_eq!(j["target"]["kind"], "none");
    let levels = j["levels"].as_array().unwrap();
    let conc: Vec<u64> = levels
        .iter()
        .map(|l| l["concurrency"].as_u64().unwrap())
        .collect();
    assert_eq!(
        conc,
        [1, 2, 4, 8, 16, 32, 64, 128, 256],
        "the default levels"
    );
    for l in levels {
        check_level(l, 4096.0);
        // The measured window is exactly the simulated --duration (default 2 s).
        assert_eq!(l["elapsed_ns"].as_u64(), Some(2_000_000_000), "{l}");
        let n = l["concurrency"].as_f64().unwrap();
        let want_iops = n.min(4.0) * 125.0;
        assert!(near(f(l, "iops"), want_iops, 0.01), "{l}");
        let want_ns = (n / 500.0 * 1e9).max(8e6);
        assert!(near(f(&l["latency_ns"], "mean"), want_ns, 0.01), "{l}");
        assert!(
            l["kernel"].is_null(),
            "a simulated device has no kernel view"
        );
    }
    let v = &j["verdict"];
    assert!(near(f(v, "baseline_latency_ns"), 8e6, 0.01), "{v}");
    // Power (IOPS ÷ latency) is N·125/8 ms up to N = 4 and 500/(N/500) after: it peaks at 4.
    assert_eq!(v["knee_concurrency"], 4, "{v}");
    assert!(near(f(v, "max_useful_iops"), 500.0, 0.01), "{v}");
    // p95 = N/500 s past the knee passes 3 × 8 ms once N > 12: the first such level is 16.
    assert_eq!(v["overload_concurrency"], 16, "{v}");
    check_usl(v, 4.0);
    let s = summary(v);
    for needle in ["8.00 ms", "Knee (optimal concurrency): 4", "500 IOPS", "16"] {
        assert!(s.contains(needle), "summary lacks {needle:?}:\n{s}");
    }
}

#[test]
fn exponential_service_keeps_the_plateau_and_the_knee() {
    // Exponential service times: the same closed-system plateau (all min(N, 4) units are
    // always busy) and the same knee. 20 simulated seconds a level give ~2500 samples at
    // concurrency 1. A mean of n exponential draws has a relative standard error of
    // 1/√n, so each figure is allowed 3 of those (6 % at concurrency 1, 3 % on the plateau).
    let j = sim_json("sim:units=4,service=8ms,dist=exp", &["--duration", "20"]);
    let tol = |ios: f64| 3.0 / ios.sqrt();
    for l in j["levels"].as_array().unwrap() {
        let n = l["concurrency"].as_f64().unwrap();
        let want = n.min(4.0) * 125.0;
        assert!(near(f(l, "iops"), want, tol(want * 20.0)), "{l}");
    }
    let v = &j["verdict"];
    assert!(near(f(v, "baseline_latency_ns"), 8e6, tol(2500.0)), "{v}");
    assert_eq!(v["knee_concurrency"], 4, "{v}");
    assert!(near(f(v, "max_useful_iops"), 500.0, tol(10000.0)), "{v}");
    // Baseline p95 of an exponential is ln 20 × 8 ms ≈ 24 ms; 3× that is 72 ms. At 64
    // clients the mean alone is 64/500 s = 128 ms, so the overload point is at most 64; at
    // 4 or fewer nobody queues, so it is above 4.
    let o = v["overload_concurrency"].as_u64().expect("overloaded");
    assert!(o > 4 && o <= 64, "{v}");
    check_usl(v, 4.0);
}

#[test]
fn no_overloaded_level_gives_null() {
    // Up to 4 clients on 4 units nobody waits: latency stays at the baseline.
    let j = sim_json("sim:units=4,service=8ms", &["--levels", "1,2,4"]);
    let v = &j["verdict"];
    let o = v
        .as_object()
        .unwrap()
        .get("overload_concurrency")
        .expect("the key is always present");
    assert!(o.is_null(), "{v}");
    assert_eq!(v["knee_concurrency"], 4, "{v}");
}

#[test]
fn thirty_two_units_under_an_iops_cap_give_the_cap() {
    // 32 units of 8 ms could do 4000 IOPS; the cap holds them at 2000 from 16 clients on.
    let j = sim_json("sim:units=32,service=8ms,cap=2000", &[]);
    for l in j["levels"].as_array().unwrap() {
        let n = l["concurrency"].as_f64().unwrap();
        assert!(near(f(l, "iops"), (n * 125.0).min(2000.0), 0.01), "{l}");
    }
    let v = &j["verdict"];
    // Issue 25: a plateau at 2000 IOPS, and nothing else, can't be told from the device's own
    // limit: no cap is claimed, and the verdict says so.
    assert!(v["suspected_cap_iops"].is_null(), "{v}");
    assert!(near(f(&v["limit"], "iops"), 2000.0, 0.01), "{v}");
    // Power peaks where the cap is first reached (16 × 125 = 2000) ...
    assert_eq!(v["knee_concurrency"], 16, "{v}");
    assert!(near(f(v, "max_useful_iops"), 2000.0, 0.01), "{v}");
    // ... and p95 = N/2000 s passes 24 ms once N > 48.
    assert_eq!(v["overload_concurrency"], 64, "{v}");
    check_usl(v, 16.0);
    let s = summary(v);
    assert!(
        s.contains("2000 IOPS") && s.contains("the device's limit, or a cap placed on it"),
        "{s}"
    );

    // With 2000 requests of burst credit (1 s of the device's 4000 IOPS against the cap's
    // 2000: the last 0.5 s of it in the measured window), the burst before the plateau is the
    // evidence: the cap is named with its figure.
    let j = sim_json("sim:units=32,service=8ms,cap=2000,burst=2000", &[]);
    let v = &j["verdict"];
    assert!(near(f(v, "suspected_cap_iops"), 2000.0, 0.01), "{v}");
    assert_eq!(v["cap"]["evidence"], "burst", "{v}");
    let s = summary(v);
    assert!(
        s.contains("after a burst") && s.contains("a cap placed on the device"),
        "{s}"
    );

    // The same device without a cap, at 7 ms (32/7 ms = 4571 IOPS, not a round figure):
    // the plateau is the device's own and no cap is claimed.
    let j = sim_json("sim:units=32,service=7ms", &[]);
    let v = &j["verdict"];
    assert!(v["suspected_cap_iops"].is_null(), "{v}");
    assert!(near(f(v, "max_useful_iops"), 32.0 / 0.007, 0.01), "{v}");
}
