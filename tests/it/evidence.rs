//! The evidence a sweep hands the verdict (issue 10): each level as sub-windows and their
//! spread, the baseline re-measured at the end, `--repeat` passes, the disturbance around each
//! level, the kernel's I/O limits on the process, the engine chosen for loop and zram targets,
//! and `--save-profile` refusing an unstable baseline.

use crate::util::{iosat, is_root, ok_json, stderr, LoopDev, SimSweep, Zram};
use serde_json::Value;

/// A sim sweep of `--duration 2` per level costs milliseconds of real time.
fn sim(engine: &str, extra: &[&str]) -> Value {
    SimSweep::new(engine)
        .args(&["--no-progress"])
        .args(extra)
        .json()
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
        // No adaptive re-measure: the passes' order is what is checked.
        &[
            "--levels",
            "1,2,4",
            "--repeat",
            "3",
            "--duration",
            "0.5",
            "--budget",
            "0",
        ],
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

/// A quick real sweep of `node`: (exit JSON, stderr). `extra` may override the short
/// defaults (levels 1,2 of 0.2 s after 0.02 s).
fn quick(node: &str, extra: &[&str]) -> (Value, String) {
    let mut args = vec!["sweep", node, "--json", "--no-progress"];
    for (flag, v) in [
        ("--levels", "1,2"),
        ("--duration", "0.2"),
        ("--ramp", "0.02"),
    ] {
        if !extra.contains(&flag) {
            args.extend([flag, v]);
        }
    }
    let o = iosat().args(args).args(extra).output().unwrap();
    (ok_json(&o), stderr(&o))
}

#[test]
fn zram_and_loop_targets_default_to_the_sync_engine_and_say_so() {
    if !is_root() {
        crate::util::skip_lacking("needs root for zram and loop devices");
        return;
    }
    let Some(z) = Zram::new("64M") else {
        crate::util::skip_lacking("no zram");
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
    let dir = crate::util::tempdir().unwrap();
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

/// A cgroup the test makes under /sys/fs/cgroup with a read-IOPS limit on one device; removed
/// on drop. cgroup v2 (`io.max`) where the io controller is available, else v1 blkio
/// (`blkio.throttle.read_iops_device`); None when neither is.
struct ThrottleCgroup {
    dir: std::path::PathBuf,
    /// The file the limit was written to.
    file: std::path::PathBuf,
    _reap: crate::support::reap::Held,
}

impl ThrottleCgroup {
    fn new(dev: &str, riops: u32) -> Option<ThrottleCgroup> {
        let name = format!("iosat-test-{}", std::process::id());
        for base in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
            let base = std::path::Path::new(base);
            let ctrls =
                std::fs::read_to_string(base.join("cgroup.controllers")).unwrap_or_default();
            if !ctrls.split_whitespace().any(|c| c == "io") {
                continue;
            }
            // Children get the io controller only when the parent hands it down. Left enabled
            // on drop: other cgroups may rely on it by then.
            let sub =
                std::fs::read_to_string(base.join("cgroup.subtree_control")).unwrap_or_default();
            if !sub.split_whitespace().any(|c| c == "io")
                && std::fs::write(base.join("cgroup.subtree_control"), "+io").is_err()
            {
                continue;
            }
            let dir = base.join(&name);
            std::fs::create_dir(&dir).ok()?;
            let file = dir.join("io.max");
            let _reap = crate::support::reap::cgroup(&dir);
            let cg = ThrottleCgroup { dir, file, _reap };
            std::fs::write(&cg.file, format!("{dev} riops={riops}")).ok()?;
            return Some(cg);
        }
        let v1 = std::path::Path::new("/sys/fs/cgroup/blkio");
        if v1.join("blkio.throttle.read_iops_device").exists() {
            let dir = v1.join(&name);
            std::fs::create_dir(&dir).ok()?;
            let file = dir.join("blkio.throttle.read_iops_device");
            let _reap = crate::support::reap::cgroup(&dir);
            let cg = ThrottleCgroup { dir, file, _reap };
            std::fs::write(&cg.file, format!("{dev} {riops}")).ok()?;
            return Some(cg);
        }
        None
    }

    /// `iosat ARGS` run inside the cgroup (a shell moves itself in, then execs iosat).
    fn run(&self, args: &[&str]) -> std::process::Output {
        let bin = env!("CARGO_BIN_EXE_iosat");
        let procs = self.dir.join("cgroup.procs");
        std::process::Command::new("sh")
            .env("IOSAT_STATE_DIR", "") // learned state in memory only
            .arg("-c")
            .arg(format!(
                "echo $$ > {} && exec \"$0\" \"$@\"",
                procs.display()
            ))
            .arg(bin)
            .args(args)
            .output()
            .unwrap()
    }
}

impl Drop for ThrottleCgroup {
    fn drop(&mut self) {
        // Its processes have exited; an empty cgroup is removed with rmdir.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

#[test]
fn a_cgroup_read_iops_limit_is_read_named_and_plateaus_the_sweep() {
    if !is_root() {
        crate::util::skip("needs root for cgroups and loop devices");
        return;
    }
    let lo = LoopDev::new(64 << 20);
    let name = lo.name().to_string();
    let rdev = std::fs::read_to_string(format!("/sys/block/{name}/dev")).unwrap();
    const CAP: u32 = 400;
    let Some(cg) = ThrottleCgroup::new(rdev.trim(), CAP) else {
        crate::util::skip_lacking(
            "no cgroup io controller (v2 io.max or v1 blkio) to throttle with",
        );
        return;
    };
    let o = cg.run(&[
        "sweep",
        &lo.path,
        "--levels",
        "1,8,32",
        "--duration",
        "1",
        "--ramp",
        "0.3",
        "--budget",
        "0",
        "--json",
        "--no-progress",
    ]);
    let j = ok_json(&o);
    let limits = j["limits"].as_array().expect("limits in the sweep result");
    assert_eq!(limits.len(), 1, "{limits:?}");
    assert_eq!(limits[0]["kind"], "read_iops");
    assert_eq!(limits[0]["value"].as_f64(), Some(f64::from(CAP)));
    assert_eq!(limits[0]["dev"], rdev.trim());
    assert_eq!(limits[0]["source"], cg.file.display().to_string());
    let sentence = format!(
        "this process may do at most {CAP} read IOPS on {name}: cgroup {}",
        cg.file.display()
    );
    assert!(j["notes"].to_string().contains(&sentence), "{}", j["notes"]);
    // The throttle holds the deeper levels at the cap (its first slice may let a little more
    // through), whatever the loop device could do.
    for l in &j["levels"].as_array().unwrap()[1..] {
        let iops = l["iops"].as_f64().unwrap();
        assert!(
            iops <= f64::from(CAP) * 1.2 && iops >= f64::from(CAP) * 0.7,
            "{l}"
        );
    }
    // `iosat info` inside the same cgroup names it too; outside, there is no limit.
    let text = crate::util::ok_stdout(&cg.run(&["info", &name]));
    assert!(
        text.contains(&format!(
            "limit: this process may do at most {CAP} read IOPS on {name}"
        )),
        "{text}"
    );
    let outside = crate::util::ok_stdout(&iosat().args(["info", &name]).output().unwrap());
    assert!(!outside.contains("limit:"), "{outside}");
}

#[test]
fn save_profile_refuses_an_unstable_baseline_unless_forced() {
    let dir = crate::util::tempdir().unwrap();
    let pd = dir.path().to_str().unwrap();
    // One unit of exponential 10 ms service, 0.4 s per level: a handful of requests per
    // window, whose means scatter beyond MAX_MEAN_CV.
    let args = |extra: &[&str]| {
        let mut v = vec![
            "sweep",
            "--engine",
            "sim:units=1,service=10ms,dist=exp",
            "--levels",
            "1,2",
            "--duration",
            "0.4",
            "--no-progress",
            "--save-profile",
            "--profile-dir",
            pd,
        ];
        v.extend_from_slice(extra);
        iosat().args(v).output().unwrap()
    };
    let o = args(&[]);
    assert_eq!(o.status.code(), Some(4), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--force stores it anyway"), "{err}");
    // The results were printed all the same.
    assert!(
        crate::util::stdout(&o).contains("Verdict"),
        "{}",
        crate::util::stdout(&o)
    );
    // Forced: past the refusal (a sim has no device to save a profile for).
    let o = args(&["--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("no device identity"), "{}", stderr(&o));
    // A steady device is not refused.
    let o = iosat()
        .args([
            "sweep",
            "--engine",
            "sim:units=1,service=10ms",
            "--levels",
            "1,2",
        ])
        .args(["--no-progress", "--save-profile", "--profile-dir", pd])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

/// Threads spinning on every CPU (twice over) until dropped.
struct CpuHog {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl CpuHog {
    fn start() -> CpuHog {
        let n = std::thread::available_parallelism().map_or(2, |n| n.get()) * 2;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..n)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                })
            })
            .collect();
        CpuHog { stop, threads }
    }
}

impl Drop for CpuHog {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

#[test]
fn a_cpu_hog_during_a_sweep_shows_as_cpu_wait_and_a_busy_machine() {
    if !is_root() {
        crate::util::skip_lacking("needs root for a zram device");
        return;
    }
    let Some(z) = Zram::new("64M") else {
        crate::util::skip_lacking("no zram");
        return;
    };
    let hog = CpuHog::start();
    let (j, err) = quick(&z.dev(), &["--levels", "1,4", "--duration", "0.5"]);
    drop(hog);
    for l in j["levels"].as_array().unwrap() {
        let d = &l["disturbance"];
        assert!(d["cpu_wait_ns_per_io"].as_f64().unwrap() > 0.0, "{d} {err}");
        assert!(d["cpu_busy_pct"].as_f64().unwrap() > 50.0, "{d}");
    }
}

#[test]
fn a_competing_reader_on_the_same_device_shows_as_other_traffic() {
    if !is_root() || !crate::util::have("fio", "--version") {
        crate::util::skip("needs root and fio");
        return;
    }
    let lo = LoopDev::new(64 << 20);
    // fio reads the same device in one process (--thread) until killed.
    let mut fio = std::process::Command::new("fio")
        .args([
            "--name=other",
            "--rw=randread",
            "--bs=4k",
            "--direct=1",
            "--thread",
        ])
        .args([
            "--ioengine=psync",
            "--time_based",
            "--runtime=60",
            "--output=/dev/null",
        ])
        .arg(format!("--filename={}", lo.path))
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    let (j, err) = quick(&lo.path, &["--duration", "0.5"]);
    let _ = fio.kill();
    let _ = fio.wait();
    for l in j["levels"].as_array().unwrap() {
        let other = l["disturbance"]["other_iops"].as_f64().unwrap();
        assert!(other > 50.0, "{l} {err}");
    }
    let summary = j["verdict"]["summary"].to_string();
    assert!(
        summary.contains("The device served other traffic beside iosat's"),
        "{summary}"
    );
}

#[test]
fn a_level_cut_by_sigterm_names_its_signal() {
    let dir = crate::util::tempdir().unwrap();
    let out_dir = crate::util::tempdir().unwrap();
    let out_file = out_dir.path().join("partial.json");
    let args = ["--levels", "1,2,4,8", "--duration", "1", "--no-progress"];
    // Well inside the second level (1 s long).
    let out = crate::sweep::signals::stop_after_first_level(
        dir.path(),
        &out_file,
        &args,
        libc::SIGTERM,
        std::time::Duration::from_millis(300),
    );
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    let levels = j["levels"].as_array().unwrap();
    let cut: Vec<&Value> = levels.iter().filter(|l| l["interrupted"] == true).collect();
    assert_eq!(cut.len(), 1, "{levels:?}");
    assert_eq!(cut[0]["disturbance"]["cut_by"], "SIGTERM", "{}", cut[0]);
    assert!(levels[0]["disturbance"]["cut_by"].is_null());
    // Cut short: no re-measure of the baseline.
    assert!(j["baseline_remeasured"].is_null());
}

#[test]
fn a_jittery_sim_is_unstable_at_every_level_and_the_same_every_run() {
    let args = ["--levels", "1,4,16"];
    let a = sim("sim:units=4,service=1ms,jitter=40", &args);
    let b = sim("sim:units=4,service=1ms,jitter=40", &args);
    assert_eq!(a["levels"], b["levels"], "deterministic");
    for l in a["levels"].as_array().unwrap() {
        assert!(f(&l["spread"], "mean_ns_cv") > 0.1, "{}", l["spread"]);
    }
    assert_eq!(
        a["workload"]["engine_spec"],
        "sim:units=4,service=1ms,jitter=40"
    );
}

#[test]
fn the_adaptive_default_measures_again_only_the_levels_that_decide() {
    // Exponential service: noisy windows leave the knee or the overload point open.
    let eng = "sim:units=4,service=8ms,dist=exp";
    let base = [
        "--levels",
        "1,2,4,8,16,32",
        "--duration",
        "0.5",
        "--ramp",
        "0.1",
    ];
    let count = |j: &Value, c: u64| {
        j["levels"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["concurrency"].as_u64() == Some(c))
            .count()
    };
    let fixed = sim(eng, &[&base[..], &["--budget", "0"]].concat());
    assert_eq!(fixed["levels"].as_array().unwrap().len(), 6);
    assert!(!fixed["notes"].to_string().contains("Measured concurrency"));
    let deciding: Vec<u64> = {
        // What the fixed run's verdict leaves open is what the adaptive run measures again.
        let v = &fixed["verdict"];
        let mut d = Vec::new();
        for r in ["knee_range", "overload_range"] {
            if let Some(a) = v[r].as_array() {
                d.push(a[0].as_u64().unwrap());
                d.push(a[1].as_u64().unwrap());
            }
        }
        d
    };
    assert!(
        !deciding.is_empty(),
        "the fixture must leave something open: {fixed}"
    );
    let adaptive = sim(eng, &base);
    let n = adaptive["levels"].as_array().unwrap().len();
    assert!(n > 6, "{n} levels");
    // Within the budget: 50 s of 0.6 s levels, minus the series and the re-measured baseline.
    assert!(n <= 6 + 3 * 6, "{n}");
    for c in deciding {
        assert!(count(&adaptive, c) >= 2, "{c} measured once");
    }
    // The baseline level never decides a range here and is not measured again.
    assert_eq!(count(&adaptive, 1), 1);
    let notes = adaptive["notes"].to_string();
    assert!(notes.contains("Measured concurrency"), "{notes}");
    // A budget that the series already spends: nothing re-measured, and the note says so.
    let tight = sim(eng, &[&base[..], &["--budget", "3s"]].concat());
    assert_eq!(tight["levels"].as_array().unwrap().len(), 6);
    let note = tight["notes"].to_string();
    assert!(note.contains("too little to measure"), "{note}");
    // It says which --budget buys one more pass, and that budget does measure them again.
    let want = note
        .split("give --budget ")
        .nth(1)
        .and_then(|t| t.split('s').next())
        .unwrap_or_else(|| panic!("no --budget named: {note}"));
    let enough = sim(
        eng,
        &[&base[..], &["--budget", &format!("{want}s")]].concat(),
    );
    let again = enough["notes"].to_string();
    assert!(
        again.contains("Measured concurrency"),
        "--budget {want}s: {again}"
    );
    assert!(
        enough["levels"].as_array().unwrap().len() > 6,
        "--budget {want}s measured nothing again: {again}"
    );
}
