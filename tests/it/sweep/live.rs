//! A sweep saved on a live host (issue 27): on the known-truth device (4 units of 2 ms) with a
//! known background load — fio reading at a fixed 150 IOPS on the same device, started and
//! killed here — `iosat sweep DEVICE --save-profile` (a read-only sweep) succeeds, writes the
//! profile into a temporary --profile-dir, states how much other traffic there was, and its
//! baseline agrees with a quiet run's within the uncertainty both state. The gentle mode
//! (`--max-concurrency`, `--rate-limit`) under the same load stops where asked, keeps to its
//! rate, and gives the knee it did not reach as a lower bound.

use crate::knowndev;
use crate::util::{ok_json, stderr};
use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The background load's rate, requests per second.
const BG_IOPS: f64 = 150.0;

/// fio reading `dev` at [`BG_IOPS`] until dropped (killed by its own pid, then reaped).
struct Background(Child);

impl Background {
    fn start(dev: &str) -> Background {
        let child = Command::new("fio")
            .args([
                "--name=background",
                &format!("--filename={dev}"),
                "--readonly",
                "--rw=randread",
                "--bs=4k",
                "--direct=1",
                "--ioengine=psync",
                &format!("--rate_iops={BG_IOPS}"),
                // Threads, not processes: killing fio then ends its job too (a forked job
                // would read on, orphaned, until its runtime ran out).
                "--thread",
                "--time_based",
                "--runtime=60",
                "--output=/dev/null",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run fio");
        // Past fio's start-up, so every level sees the load.
        std::thread::sleep(Duration::from_secs(1));
        Background(child)
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `iosat sweep` of `dev` at real-time priority 1, as the known device's threads run (on a
/// busy 2-core machine the sweep's threads otherwise wait for a CPU), levels 1-8 of 1 s.
fn sweep(dev: &str, extra: &[&str]) -> std::process::Output {
    Command::new("chrt")
        .args(["-f", "1", env!("CARGO_BIN_EXE_iosat")])
        .args(["sweep", "--json", "--no-progress", "--levels", "1,2,4,8"])
        .args(["--duration", "1", "--ramp", "0.1", "--budget", "0"])
        .args(extra)
        .arg(dev)
        .output()
        .expect("run chrt iosat")
}

/// Attempts at a sweep the machine may disturb: two sweeps on two cores shared with other
/// builds sometimes see a stall (a window without a completion, the baseline moving between
/// the start and the end), which `--save-profile` rightly refuses. A refusal (or a baseline
/// that misses the quiet run's) is retried only when the run's own measures excuse it
/// ([`machine_excuse`]); one that names the other traffic, or one nothing excuses, fails. Run
/// alone five times at load average 6-7 (2026-11-28), 1 of 5 runs met three refusals in a
/// row, each "the baseline drifted" or "the knee is unstable": five attempts.
const ATTEMPTS: usize = 5;

/// PSI `cpu some` from which a level ran on a contended CPU (iosat's
/// `analysis::confidence::CPU_CONTENDED_PSI_PCT`). The sweep runs at real-time priority, so
/// its own threads hardly wait (20-46 µs per I/O measured beside two compilers), but the
/// known device's path does: the loop device's kernel worker runs at normal priority, and
/// its wait, which no figure of iosat's can see, moves the baseline between runs by more
/// than either run's own spread (a profile whose baseline missed the quiet run's interval,
/// 2026-11-28, load average 4-11).
const CONTENDED_PSI_PCT: f64 = 50.0;

/// Why, by the run's own measures, the machine may have moved its figures: the verdict
/// leads with the machine's disturbance (a wait for a CPU, a stall, a drifting or scattered
/// baseline; not the other traffic, which is the case under test), or a level ran on a
/// contended CPU ([`CONTENDED_PSI_PCT`]). None: nothing excuses a refusal or a miss.
fn machine_excuse(v: &Value) -> Option<String> {
    let head = v["verdict"]["summary"][0].as_str().unwrap_or_default();
    let machine = [
        "waited for a CPU",
        "other processes kept the CPUs",
        "stalled",
        "drifted",
        "scatter",
    ];
    if head.starts_with("Disturbed run") && machine.iter().any(|m| head.contains(m)) {
        return Some(head.to_string());
    }
    v["levels"].as_array()?.iter().find_map(|l| {
        let psi = l["disturbance"]["psi_cpu_some_pct"].as_f64()?;
        (psi >= CONTENDED_PSI_PCT).then(|| {
            format!(
                "c={}: the CPU was contended {psi:.0} % of the level (PSI cpu some)",
                l["concurrency"]
            )
        })
    })
}

/// `sweep(dev, extra)` under fio's background load until it exits 0, until `excuses` holds
/// [`ATTEMPTS`] (the tries of the whole test); a refusal met on the way must never name the other traffic and must be excused by
/// the run's measures ([`machine_excuse`]), else the test fails. `excuses` collects what
/// excused each refusal. None (said so: inconclusive) when every attempt was refused for the
/// machine: after the merge of 2026-11-28, 1 run in 7 met five such refusals at load average
/// 4-7.
fn saved_under_load(
    dev: &str,
    extra: &[&str],
    excuses: &mut Vec<String>,
) -> Option<std::process::Output> {
    while excuses.len() < ATTEMPTS {
        let out = {
            let _load = Background::start(dev);
            sweep(dev, extra)
        };
        if out.status.code() == Some(0) {
            eprintln!("saved after {} excused tries: {excuses:#?}", excuses.len());
            return Some(out);
        }
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(4), "{err}");
        assert!(
            !err.contains("other requests") && !err.contains("other traffic"),
            "refused for the other traffic: {err}"
        );
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("a refused sweep still prints its result: {e}: {err}"));
        let why = machine_excuse(&v)
            .unwrap_or_else(|| panic!("refused with nothing measured to excuse it: {err}"));
        excuses.push(format!("refused ({err}): {why}"));
    }
    eprintln!(
        "inconclusive: --save-profile refused {ATTEMPTS} times, each excused by the machine: \
         {excuses:#?}"
    );
    None
}

fn baseline(v: &Value) -> (f64, f64) {
    let verdict = &v["verdict"];
    (
        verdict["baseline_latency_ns"].as_f64().expect("baseline"),
        verdict["baseline_uncertainty_rel"].as_f64().unwrap_or(0.0),
    )
}

/// The device's own path at depth 1, as fio measures it right after a sweep (ms): what the
/// device was doing then, so that a move of the path between the quiet run and the live one
/// is told from a wrong baseline.
fn path_ms(dev: &str) -> f64 {
    crate::learn::fio_mean_ms(dev, 1, 1.5)
}

/// The quiet run and the saved live run of one try, their baselines compared: Ok when they
/// agree within the uncertainty both state, Err with what excused a miss (a miss nothing
/// excuses fails here). `path_quiet`, `path_live`: [`path_ms`] right after each run. Besides
/// the runs' own measures ([`machine_excuse`]), a miss is excused when the device's path
/// itself moved between the runs by at least the miss beyond both uncertainties: the loop
/// device's worker and the FUSE requests run at normal priority and wait for a CPU that other
/// work takes, which neither run can see (2026-11-30: quiet 2.378 ms ±3.4 % against live
/// 2.241 ms ±1.5 %, PSI below the contended mark, cachegrind on one of the two cores). In
/// either direction: fio's depth-1 runs after each sweep measure how far the path moves from
/// one run to the next, not where it was during the sweep (2026-12-02, two full runs of the
/// suite in three: quiet 2.194 ms ±2.4 % against live 2.107 ms ±1.0 %, fio after each 2.133
/// and 2.203 ms: the path moved 0.070 ms, five times the 0.013 ms the miss went beyond both
/// uncertainties; under the background load the FUSE threads wait less for a wake-up). And
/// the path under the background load itself (`path_loaded`, fio at depth 1 beside the same
/// load, measured only for a miss): the device's server answers faster while the other
/// traffic keeps its threads awake (2026-12-04, a full run and its retry: live 2.098 and
/// 2.087 ms ±0.7 % against quiet 2.143 and 2.141 ms ±0.8 %, fio quiet after each 2.127 and
/// 2.128 ms; alone, one try in eight, quiet 2.174 against live 2.097 ms), which the fio runs
/// after each sweep, both quiet, cannot see. Excused only when the loaded path is that much
/// faster or slower in the miss's own direction. A miss beyond what the path moved still
/// fails, and an excused one is tried again.
fn baselines_agree(
    quiet: &Value,
    live: &Value,
    path_quiet: f64,
    path_live: f64,
    path_loaded: impl FnOnce() -> f64,
) -> Result<(), String> {
    let (q, uq) = baseline(quiet);
    let (l, ul) = baseline(live);
    assert!(
        uq > 0.0 && ul > 0.0,
        "both runs state an uncertainty: {uq} {ul}"
    );
    let said = format!(
        "live baseline {:.3} ms ±{:.1} % against quiet {:.3} ms ±{:.1} % (fio at depth 1 \
         after each: {path_live:.3} and {path_quiet:.3} ms)",
        l / 1e6,
        ul * 100.0,
        q / 1e6,
        uq * 100.0
    );
    eprintln!("{said}");
    let beyond = (l - q).abs() - (q * uq + l * ul);
    if beyond <= 0.0 {
        return Ok(());
    }
    let moved = (path_quiet - path_live) * 1e6;
    let path_moved = moved.abs() >= beyond;
    let why = machine_excuse(quiet)
        .map(|w| format!("quiet: {w}"))
        .or_else(|| machine_excuse(live).map(|w| format!("live: {w}")))
        .or_else(|| {
            path_moved.then(|| {
                format!(
                    "the device's own path moved {:.3} ms between the runs",
                    moved.abs() / 1e6
                )
            })
        })
        .or_else(|| {
            // The path under the load, against the quiet one, the way the live run moved.
            let loaded = path_loaded();
            let under_load = (loaded - path_quiet) * 1e6;
            eprintln!("fio at depth 1 beside the background load: {loaded:.3} ms");
            (under_load * (l - q) > 0.0 && under_load.abs() >= beyond).then(|| {
                format!(
                    "the device's own path is {:.3} ms {} beside the background load \
                     ({loaded:.3} against {path_quiet:.3} ms at depth 1)",
                    under_load.abs() / 1e6,
                    if under_load < 0.0 { "faster" } else { "slower" }
                )
            })
        });
    Err(format!(
        "{said}: {}",
        why.unwrap_or_else(|| panic!("{said}, and nothing measured excuses it"))
    ))
}

#[test]
fn a_sweep_under_a_known_background_load_is_saved_and_agrees_with_a_quiet_one() {
    let Some(dev) = knowndev::four_units_of_2ms_and_fio() else {
        return;
    };
    let mut excuses = Vec::new();
    while excuses.len() < ATTEMPTS {
        let quiet = ok_json(&sweep(&dev.path, &[]));
        let path_quiet = path_ms(&dev.path);
        assert!(
            quiet["verdict"].get("other_traffic").is_none(),
            "a quiet device has no other traffic: {}",
            quiet["verdict"]
        );
        let profiles = crate::util::tempdir().unwrap();
        let pd = profiles.path().to_str().unwrap();
        let args = ["--save-profile", "--profile-dir", pd];
        let Some(live) = saved_under_load(&dev.path, &args, &mut excuses) else {
            return;
        };
        let path_live = path_ms(&dev.path);
        let live = saved_profile_says_the_traffic(&live, &profiles);
        let path_loaded = || {
            let _load = Background::start(&dev.path);
            path_ms(&dev.path)
        };
        match baselines_agree(&quiet, &live, path_quiet, path_live, path_loaded) {
            Ok(()) => return,
            Err(why) => excuses.push(why),
        }
    }
    eprintln!("inconclusive: every try excused by the machine: {excuses:#?}");
}

/// One profile saved in `profiles`; the live run states how much other traffic there was:
/// fio's rate, read-only, in every level and in the verdict's sentence. Its JSON.
fn saved_profile_says_the_traffic(
    live: &std::process::Output,
    profiles: &tempfile::TempDir,
) -> Value {
    let pd = profiles.path().display();
    let saved: Vec<_> = std::fs::read_dir(profiles.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .collect();
    assert_eq!(saved.len(), 1, "one profile in {pd}: {}", stderr(live));
    let live = ok_json(live);

    // How much other traffic there was: fio's rate, read-only, and said in the verdict.
    let t = &live["verdict"]["other_traffic"];
    let r_s = t["r_s"]
        .as_f64()
        .unwrap_or_else(|| panic!("other_traffic {t}"));
    assert!(
        (r_s - BG_IOPS).abs() <= BG_IOPS * 0.3,
        "other reads {r_s:.0}/s against fio's {BG_IOPS}: {t}"
    );
    assert!(t["w_s"].as_f64().unwrap() < 5.0, "{t}");
    let in_flight = t["in_flight"].as_f64().expect("in flight");
    assert!(in_flight > 0.0 && in_flight < 1.0, "{t}");
    for l in live["levels"].as_array().unwrap() {
        assert!(l["disturbance"]["other_r_s"].is_number(), "{l}");
    }
    let summary: Vec<&str> = live["verdict"]["summary"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let line = summary
        .iter()
        .find(|s| s.contains("other traffic"))
        .unwrap_or_else(|| panic!("no other-traffic sentence: {summary:#?}"));
    assert!(
        line.contains(" r/s, ") && line.contains("in flight") && line.contains("widened by ±"),
        "{line}"
    );

    for l in live["levels"].as_array().unwrap() {
        eprintln!(
            "live {}: {:.0} IOPS {:.3} ms cv {} other {}",
            l["concurrency"],
            l["iops"].as_f64().unwrap(),
            l["latency_ns"]["mean"].as_f64().unwrap() / 1e6,
            l["spread"]["mean_ns_cv"],
            l["disturbance"]
        );
    }
    eprintln!("{line}");
    live
}

#[test]
fn a_gentle_sweep_stops_where_asked_caps_its_rate_and_gives_the_knee_as_a_lower_bound() {
    // Four units: the knee is at 4; a sweep stopped at 2 can only say it is above 2.
    let Some(dev) = knowndev::four_units_of_2ms_and_fio() else {
        return;
    };
    let profiles = crate::util::tempdir().unwrap();
    let pd = profiles.path().to_str().unwrap();
    let Some(out) = saved_under_load(
        &dev.path,
        &[
            "--max-concurrency",
            "2",
            "--rate-limit",
            "1500",
            "--save-profile",
            "--profile-dir",
            pd,
        ],
        &mut Vec::new(),
    ) else {
        return;
    };
    let v = ok_json(&out);
    assert_eq!(
        v["workload"]["limits"],
        serde_json::json!({"max_concurrency": 2, "rate_limit_iops": 1500.0})
    );
    assert_eq!(
        v["workload"]["engine"], "sync",
        "--rate-limit paces the sync engine"
    );
    let levels: Vec<u64> = v["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["concurrency"].as_u64().unwrap())
        .collect();
    assert_eq!(levels, [1, 2]);
    for l in v["levels"].as_array().unwrap() {
        let iops = l["iops"].as_f64().unwrap();
        assert!(iops <= 1500.0 * 1.05, "{iops:.0} IOPS above the cap: {l}");
    }
    let verdict = &v["verdict"];
    assert_eq!(verdict["knee_above"], 2, "{verdict}");
    let summary = verdict["summary"].to_string();
    assert!(
        summary.contains("the knee is above 2 in flight and the ceiling above"),
        "{summary}"
    );
    assert!(verdict["other_traffic"]["r_s"].is_number(), "{verdict}");
}
