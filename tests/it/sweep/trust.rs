//! What a sweep's verdict says when the run cannot be trusted as a quiet one (issue 38): the
//! known device stepping from 2 to 8 ms mid-sweep (a drift, no cap), the generator stopped
//! with SIGSTOP during the first baseline (a stall, set aside), and a busy host (a CPU hog on
//! every core: the headline carries it and the knee is a range holding the quiet answer).

use crate::busy::CpuHog;
use crate::knowndev::{KnownDev, Service, Spec};
use crate::util::ok_json;
use serde_json::Value;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// `iosat sweep --json` of `dev` at `levels`, `secs` a level, no adaptive re-measure (the
/// baseline is still measured again at the end).
fn sweep_args(dev: &KnownDev, levels: &str, secs: &str) -> Vec<String> {
    [
        "sweep",
        "--json",
        "--no-progress",
        "--levels",
        levels,
        "--duration",
        secs,
        "--ramp",
        "0.2s",
        "--budget",
        "0",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([dev.path.clone()])
    .collect()
}

fn sweep(dev: &KnownDev, levels: &str, secs: &str) -> Value {
    ok_json(
        &Command::new(env!("CARGO_BIN_EXE_iosat"))
            .args(sweep_args(dev, levels, secs))
            .output()
            .unwrap(),
    )
}

fn summary(v: &Value) -> Vec<String> {
    v["verdict"]["summary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_step_in_service_time_mid_sweep_is_a_drift_and_no_cap() {
    // Four units of 2 ms, 8 ms from the 2500th request on: during concurrency 4 (levels 1
    // and 2 take about 1800 requests at 2 ms), so the baseline re-measured at the end is 8 ms.
    let spec = Spec::new(4, ms(2)).step(Service::Fixed(ms(8)), Some(2500));
    let Some(dev) = KnownDev::start(spec) else {
        return;
    };
    let v = sweep(&dev, "1,2,4,8,16,32", "1s");
    assert!(
        dev.stepped(),
        "the device never stepped: {} requests",
        dev.requests_taken()
    );
    let verdict = &v["verdict"];
    let s = summary(&v);
    assert_eq!(verdict["baseline_drift"]["drifted"], true, "{s:#?}");
    assert!(verdict["cap"].is_null(), "{s:#?}");
    assert!(verdict["suspected_cap_iops"].is_null(), "{s:#?}");
    assert!(!s.iter().any(|l| l.contains("cap placed")), "{s:#?}");
    assert!(
        s[0].starts_with("Disturbed run: the baseline drifted +"),
        "{s:#?}"
    );
    assert!(
        !s.iter().any(|l| l.contains("same within the noise")),
        "{s:#?}"
    );
}

/// Reads the device has completed (diskstats field 4), to see the sweep's I/O begin.
fn reads(name: &str) -> u64 {
    let d = std::fs::read_to_string("/proc/diskstats").unwrap();
    d.lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&name)).then(|| f[3].parse().unwrap())
        })
        .unwrap_or(0)
}

#[test]
fn a_stalled_first_baseline_is_detected() {
    let Some(dev) = KnownDev::start(Spec::new(4, ms(2))) else {
        return;
    };
    let before = reads(dev.name());
    let child = Command::new(env!("CARGO_BIN_EXE_iosat"))
        .args(sweep_args(&dev, "1,2,4,8", "3s"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first level's requests (its ramp), then stop the generator for a second
    // inside the measured part of concurrency 1.
    let t0 = Instant::now();
    while reads(dev.name()) < before + 50 && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(ms(10));
    }
    std::thread::sleep(ms(800));
    let pid = child.id() as libc::pid_t;
    // SAFETY: kill on our own child's pid, which has not been waited for yet.
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    std::thread::sleep(ms(1000));
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let v = ok_json(&child.wait_with_output().unwrap());
    let verdict = &v["verdict"];
    let s = summary(&v);
    let stalled: Vec<u64> = verdict["stalled_levels"]
        .as_array()
        .map(|a| a.iter().map(|x| x.as_u64().unwrap()).collect())
        .unwrap_or_default();
    assert!(stalled.contains(&1), "{s:#?}");
    assert_eq!(verdict["baseline_drift"]["first_stalled"], true, "{s:#?}");
    assert!(
        s[0].starts_with("Disturbed run: the first baseline stalled"),
        "{s:#?}"
    );
    assert!(
        !s.iter().any(|l| l.contains("same within the noise")),
        "{s:#?}"
    );
}

/// The knee as a range: (lowest, highest) of `knee_range`, else the knee itself.
fn knee_range(v: &Value) -> (u64, u64) {
    let k = &v["verdict"];
    match k["knee_range"].as_array() {
        Some(r) => (r[0].as_u64().unwrap(), r[1].as_u64().unwrap()),
        None => {
            let n = k["knee_concurrency"].as_u64().unwrap();
            (n, n)
        }
    }
}

#[test]
fn on_a_busy_host_the_headline_says_so_and_three_knee_ranges_overlap_on_the_truth() {
    let Some(dev) = KnownDev::start(Spec::new(4, ms(2))) else {
        return;
    };
    // A spinning thread on every core, busy 90 % of the time: iosat's threads wait for a CPU.
    let hog = CpuHog::start(0.9);
    let runs: Vec<Value> = (0..3).map(|_| sweep(&dev, "1,2,4,8,16", "0.6s")).collect();
    drop(hog);
    let ranges: Vec<(u64, u64)> = runs.iter().map(knee_range).collect();
    for (v, r) in runs.iter().zip(&ranges) {
        let s = summary(v);
        assert!(s[0].starts_with("Disturbed run:"), "{s:#?}");
        // The quiet answer: four units make the knee 4.
        assert!(r.0 <= 4 && 4 <= r.1, "knee {r:?}: {s:#?}");
    }
    let lo = ranges.iter().map(|r| r.0).max().unwrap();
    let hi = ranges.iter().map(|r| r.1).min().unwrap();
    assert!(lo <= hi, "knee ranges {ranges:?} do not overlap");
}
