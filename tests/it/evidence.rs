//! The evidence a sweep hands the verdict (issue 10): each level as sub-windows and their
//! spread, the baseline re-measured at the end, `--repeat` passes, the disturbance around each
//! level, the kernel's I/O limits on the process, the engine chosen for loop and zram targets,
//! and `--save-profile` refusing an unstable baseline.

use crate::util::{iosat, is_root, ok_json, stderr, LoopDev, Zram};
use serde_json::Value;

/// A sim sweep of `--duration 2` per level costs milliseconds of real time.
fn sim(engine: &str, extra: &[&str]) -> Value {
    ok_json(
        &iosat()
            .args(["sweep", "--engine", engine, "--json", "--no-progress"])
            .args(extra)
            .output()
            .unwrap(),
    )
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"))
}

#[test]
fn every_level_is_measured_as_eight_windows_with_their_spread() {
    let j = sim("sim:units=4,service=8ms", &["--levels", "1,4,16"]);
    for l in j["levels"].as_array().unwrap() {
        let w = l["windows"].as_array().unwrap();
        assert_eq!(w.len(), 8, "{l}");
        // A fixed service time is a device without noise: every window alike.
        let s = &l["spread"];
        assert_eq!(s["windows"], 8);
        assert!(f(s, "iops_cv") < 0.02, "{s}");
        assert!(f(s, "iops_min") <= f(l, "iops") && f(l, "iops") <= f(s, "iops_max"));
        let ios: u64 = w.iter().map(|x| x["ios"].as_u64().unwrap()).sum();
        assert_eq!(ios, l["ios"].as_u64().unwrap());
    }
}

#[test]
fn a_noisy_device_spreads_more_than_a_steady_one() {
    let args = ["--levels", "1,2", "--duration", "0.5"];
    let steady = sim("sim:units=4,service=8ms", &args);
    let noisy = sim("sim:units=4,service=8ms,dist=exp", &args);
    let cv = |j: &Value| f(&j["levels"][0]["spread"], "mean_ns_cv");
    // Exponential service over ~8 requests per 62 ms window: the means scatter by tens of %.
    assert!(cv(&noisy) > 0.1, "{}", noisy["levels"][0]);
    assert!(cv(&steady) < 0.01, "{}", steady["levels"][0]);
    assert!(noisy["levels"][0]["spread"]["p95_ns_cv"].is_null() || cv(&noisy) > cv(&steady));
}

#[test]
fn the_baseline_is_measured_again_after_the_last_level() {
    let j = sim("sim:units=4,service=8ms", &["--levels", "1,2,4"]);
    let again = &j["baseline_remeasured"];
    assert_eq!(again["concurrency"], 1, "{j}");
    // The same deterministic device: no drift.
    let first = &j["levels"][0];
    assert!((f(again, "iops") - f(first, "iops")).abs() <= f(first, "iops") * 0.01);
    assert_eq!(j["levels"].as_array().unwrap().len(), 3);
}

#[test]
fn repeat_runs_the_series_again_and_the_verdict_sees_every_pass() {
    let j = sim(
        "sim:units=4,service=8ms,dist=exp",
        &["--levels", "1,2,4", "--repeat", "3", "--duration", "0.5"],
    );
    assert_eq!(j["workload"]["repeat"], 3);
    let levels = j["levels"].as_array().unwrap();
    let order: Vec<(u64, u64)> = levels
        .iter()
        .map(|l| {
            (
                l["concurrency"].as_u64().unwrap(),
                l["repeat"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    // Interleaved: the whole series, then again.
    assert_eq!(
        order,
        [
            (1, 0),
            (2, 0),
            (4, 0),
            (1, 1),
            (2, 1),
            (4, 1),
            (1, 2),
            (2, 2),
            (4, 2)
        ]
    );
    // Other offsets (and service draws) each pass.
    assert_ne!(levels[0]["latency_ns"], levels[3]["latency_ns"]);
    // One verdict row per concurrency.
    let v = &j["verdict"]["levels"];
    assert_eq!(v.as_array().map(Vec::len), Some(3), "{}", j["verdict"]);
    // A single pass of the same series: 3 levels; the default has no repeat key.
    let once = sim("sim:units=4,service=8ms", &["--levels", "1,2"]);
    assert!(once["workload"]["repeat"].is_null());
}

#[test]
fn repeat_zero_and_force_without_save_profile_are_refused() {
    let o = iosat()
        .args([
            "sweep",
            "--engine",
            "sim:units=1,service=1ms",
            "--repeat",
            "0",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--repeat"), "{}", stderr(&o));
    let o = iosat()
        .args(["sweep", "--engine", "sim:units=1,service=1ms", "--force"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--force"), "{}", stderr(&o));
}

#[test]
fn the_sim_has_no_disturbance_but_real_levels_do() {
    let j = sim("sim:units=4,service=8ms", &["--levels", "1,2"]);
    assert!(
        j["levels"][0]["disturbance"].is_null(),
        "{}",
        j["levels"][0]
    );
    if !is_root() {
        eprintln!("skipped the real half: needs root for a loop device");
        return;
    }
    let lo = LoopDev::new(64 << 20);
    let o = iosat()
        .args(["sweep", &lo.path, "--levels", "1,2", "--duration", "0.3"])
        .args(["--ramp", "0.05", "--json", "--no-progress"])
        .output()
        .unwrap();
    let j = ok_json(&o);
    for l in j["levels"].as_array().unwrap() {
        let d = &l["disturbance"];
        assert!(d["cpu_wait_ns_per_io"].as_f64().is_some(), "{d}");
        assert!(d["cpu_busy_pct"].as_f64().is_some(), "{d}");
        assert!(d["other_iops"].as_f64().is_some(), "{d}");
        assert!(d["cut_by"].is_null(), "{d}");
    }
}

/// A quick real sweep of `node`: (exit JSON, stderr).
fn quick(node: &str, extra: &[&str]) -> (Value, String) {
    let o = iosat()
        .args(["sweep", node, "--levels", "1,2", "--duration", "0.2"])
        .args(["--ramp", "0.02", "--json", "--no-progress"])
        .args(extra)
        .output()
        .unwrap();
    (ok_json(&o), stderr(&o))
}

#[test]
fn zram_and_loop_targets_default_to_the_sync_engine_and_say_so() {
    if !is_root() {
        eprintln!("skipped: needs root for zram and loop devices");
        return;
    }
    let Some(z) = Zram::new("64M") else {
        eprintln!("skipped: no zram");
        return;
    };
    let (j, err) = quick(&z.dev(), &[]);
    assert_eq!(j["workload"]["engine"], "sync", "{err}");
    let name = z.dev().trim_start_matches("/dev/").to_string();
    let note = format!("{name} is a zram device: using the sync engine");
    assert!(err.contains(&note), "{err}");
    assert!(j["notes"].to_string().contains(&note), "{}", j["notes"]);
    // Asked for explicitly, io_uring it is.
    let (j, err) = quick(&z.dev(), &["--engine", "uring"]);
    assert_eq!(j["workload"]["engine"], "uring", "{err}");
    assert!(!err.contains("using the sync engine"), "{err}");

    // A loop device over a sparse file: the same choice, and the holes named.
    let lo = LoopDev::new(64 << 20);
    let (j, err) = quick(&lo.path, &[]);
    assert_eq!(j["workload"]["engine"], "sync", "{err}");
    assert!(
        err.contains("is a loop device: using the sync engine"),
        "{err}"
    );
    assert!(
        err.contains("is sparse (0 B of 64.0 MiB allocated)"),
        "{err}"
    );
}

#[test]
fn a_sparse_file_and_a_cache_sized_buffered_run_are_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("holes.img");
    std::fs::File::create(&f).unwrap().set_len(8 << 20).unwrap();
    let (j, err) = quick(
        f.to_str().unwrap(),
        &["--engine", "sync", "--direct", "false"],
    );
    assert!(err.contains("holes.img is sparse"), "{err}");
    assert!(err.contains("fits in free memory"), "{err}");
    assert!(
        j["notes"].to_string().contains("is sparse"),
        "{}",
        j["notes"]
    );
}
