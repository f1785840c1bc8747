//! Issue 30's acceptance for the open loop (`sweep --rate`): on the known device (4 units of
//! 2 ms) at 25, 50 and 80 % of the closed loop's maximum, iosat's mean and p99 from the
//! intended start agree with fio's (rate_iops, rate_process=poisson, iodepth enough to keep
//! up) measured on the same device at the same rates; at 120 % the level is flagged as not
//! kept; and on the page cache at half its maximum the achieved rate is the offered one, with
//! the lateness reported.
//!
//! At 80 % fio's figures are not the device's: with libaio at iodepth 64 (and with 64 psync
//! threads at a 64th of the rate each) fio's mean there came out at twice what iosat measured
//! and what an M/D/4 queue with this device's overhead gives (BENCHMARKS.md); at that rate
//! the test holds iosat to the bound fio's figure gives (iosat's mean at most fio's, plus
//! the 10 %) and to the device's own floor (the 2 ms service time), not to equality.
//!
//! Which fio figure: fio sleeps until a request is due, then stamps it and submits it; its
//! `lat` (submission + completion, from that stamp) is the time from the moment the request
//! was meant to go out, as long as fio kept its schedule (fio does not add the lateness of
//! a request it issued late). iosat's `latency_ns` is from the intended start, its lateness
//! included; at rates both keep, the two measure the same span. (fio's `clat` leaves out the
//! submission; on this device the difference is a few microseconds.)

use super::*;
use crate::knowndev::{self, KnownDev, Spec};

/// Run a command at real-time priority 1, as the device's own threads run (truth.rs): on a
/// busy two-core machine a generator otherwise wakes milliseconds late.
fn rt(prog: &str, args: &[String]) -> Output {
    Command::new("chrt")
        .args(["-f", "1", prog])
        .args(args)
        .output()
        .expect("run chrt")
}

/// fio's iodepth (and iosat's default pool).
const DEPTH: u32 = 64;

/// fio at `rate` IOPS with Poisson arrivals on `dev`: (mean ms, p99 ms, IOPS).
fn fio_at(dev: &str, rate: f64, secs: f64) -> (f64, f64, f64) {
    let out = rt(
        "fio",
        &[
            "--name=open".into(),
            format!("--filename={dev}"),
            "--rw=randread".into(),
            "--bs=4k".into(),
            "--direct=1".into(),
            "--ioengine=libaio".into(),
            // Enough in flight to keep any rate up to the device's maximum and beyond.
            format!("--iodepth={DEPTH}"),
            format!("--rate_iops={}", rate.round() as u64),
            "--rate_process=poisson".into(),
            "--ramp_time=0.3".into(),
            format!("--runtime={secs}"),
            "--time_based".into(),
            "--lat_percentiles=1".into(),
            "--output-format=json".into(),
        ],
    );
    let j: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("fio JSON: {e}: {}", stderr(&out)));
    let r = &j["jobs"][0]["read"];
    let lat = &r["lat_ns"];
    (
        lat["mean"].as_f64().unwrap() / 1e6,
        lat["percentile"]["99.000000"].as_f64().unwrap() / 1e6,
        r["iops"].as_f64().unwrap(),
    )
}

fn iosat_rt(args: &[&str]) -> Value {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    json_of(&rt(env!("CARGO_BIN_EXE_iosat"), &args))
}

/// One open-loop level's (offered, mean ms, p99 ms, kept).
fn level_of(l: &Value) -> (f64, f64, f64, bool) {
    (
        l["offered_iops"].as_f64().unwrap(),
        l["latency_ns"]["mean"].as_f64().unwrap() / 1e6,
        l["latency_ns"]["p99"].as_f64().unwrap() / 1e6,
        l["behind"]["kept"].as_bool().unwrap(),
    )
}

#[test]
fn open_loop_latency_agrees_with_fio_on_the_known_device() {
    if !Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        eprintln!("skipped: fio is not installed");
        return;
    }
    if !knowndev::available() {
        return;
    }
    let Some(dev) = KnownDev::start(Spec::new(4, Duration::from_millis(2))) else {
        return;
    };
    let p = dev.path.as_str();
    // The closed loop's maximum: at and past the device's four units.
    let closed = iosat_rt(&[
        "sweep",
        p,
        "--levels",
        "4,8",
        "--duration",
        "1",
        "--ramp",
        "0.2",
        "--budget",
        "0",
        "--no-progress",
        "--json",
    ]);
    let max = closed["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["iops"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert!(
        (1500.0..2100.0).contains(&max),
        "4 units of 2 ms give at most 2000 IOPS; the closed loop measured {max:.0}"
    );
    let shares = [0.25, 0.5, 0.8];
    let rates: Vec<f64> = shares.iter().map(|s| (s * max).round()).collect();
    // 120 %: beyond capacity, flagged, and said so.
    let over = format!("{:.0}", 1.2 * max);
    let open = iosat_rt(&[
        "sweep",
        p,
        "--rate",
        &over,
        "--duration",
        "2",
        "--ramp",
        "0.3",
        "--no-progress",
        "--json",
    ]);
    let l = &open["open_levels"][0];
    for k in ["offered_iops", "iops", "latency_ns", "service_latency_ns"] {
        assert!(l.get(k).is_some(), "{k} missing in {l}");
    }
    assert!(l["behind"]["p99_ns"].is_u64() && l["behind"]["p50_ns"].is_u64());
    let (o, _, _, kept) = level_of(l);
    assert!(
        !kept,
        "offered {o:.0} of a {max:.0} IOPS device was kept: {l}"
    );
    let beyond = open["open_loop"]["verdict"]["beyond_capacity_from_iops"].as_f64();
    assert_eq!(beyond, Some(o), "{}", open["open_loop"]);
    // Each rate: iosat then fio at once, so both see the machine in the same state; three
    // tries at most: a disagreement caused by the machine (a stall during one of the two
    // runs) does not repeat three times, a real difference in what is measured does.
    let mut failures = Vec::new();
    for (i, &rate) in rates.iter().enumerate() {
        let mut seen = Vec::new();
        for _ in 0..3 {
            let open = iosat_rt(&[
                "sweep",
                p,
                "--rate",
                &format!("{rate:.0}"),
                "--duration",
                "3",
                "--ramp",
                "0.3",
                "--no-progress",
                "--json",
            ]);
            let (offered, mean, p99, kept) = level_of(&open["open_levels"][0]);
            let (f_mean, f_p99, f_iops) = fio_at(p, rate, 3.0);
            let line = format!(
                "{:.0} % ({rate:.0}/s): iosat offered {offered:.0}, mean {mean:.2} ms, p99 \
                 {p99:.2} ms, kept {kept}; fio {f_iops:.0} IOPS, mean {f_mean:.2} ms, p99 \
                 {f_p99:.2} ms",
                shares[i] * 100.0
            );
            eprintln!("{line}");
            let agree = kept
                && mean >= 2.0
                && if shares[i] < 0.6 {
                    (mean - f_mean).abs() <= 0.10 * f_mean && (p99 - f_p99).abs() <= 0.20 * f_p99
                } else {
                    mean <= 1.10 * f_mean && p99 <= 1.20 * f_p99
                };
            seen.push(line);
            if agree {
                seen.clear();
                break;
            }
        }
        if !seen.is_empty() {
            failures.push(seen.join("\n"));
        }
    }
    assert!(
        failures.is_empty(),
        "iosat's open loop and fio disagree beyond mean 10 % / p99 20 % three times:\n{}",
        failures.join("\n--\n")
    );
}

#[test]
fn open_loop_keeps_half_the_page_cache_maximum() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let common = [
        "--size",
        "64m",
        "--direct",
        "false",
        "--duration",
        "2",
        "--ramp",
        "0.2",
        "--no-progress",
        "--json",
    ];
    let closed = json_of(&run(&[
        &[d, "--engine", "sync", "--levels", "1", "--budget", "0"],
        &common[..],
    ]
    .concat()));
    let max = closed["levels"][0]["iops"].as_f64().unwrap();
    let rate = format!("{:.0}", max / 2.0);
    // A busy two-core machine can stall a run for a tenth of a second; three tries.
    let mut seen = Vec::new();
    for _ in 0..3 {
        let open = json_of(&run(&[&[d, "--rate", rate.as_str()], &common[..]].concat()));
        let l = &open["open_levels"][0];
        let (offered, iops) = (
            l["offered_iops"].as_f64().unwrap(),
            l["iops"].as_f64().unwrap(),
        );
        // The lateness is reported, whatever it is.
        let late = &l["behind"];
        assert!(late["p99_ns"].as_u64().unwrap() >= late["p50_ns"].as_u64().unwrap());
        assert!(late["p50_ns"].as_u64().unwrap() > 0, "{late}");
        let line = format!(
            "offered {offered:.0} of {max:.0} max: achieved {iops:.0}, late p50 {} ns p99 {} ns",
            late["p50_ns"], late["p99_ns"]
        );
        eprintln!("{line}");
        if (iops - offered).abs() <= 0.01 * offered {
            return;
        }
        seen.push(line);
    }
    panic!(
        "achieved rate not within 1 % of offered in three tries:\n{}",
        seen.join("\n")
    );
}
