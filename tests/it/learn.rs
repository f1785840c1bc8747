//! Production learning end to end (issue 26): `iosat stat` learns a loop device driven by fio
//! at a few iodepths, its `learned` object fills in, the state is saved in the --state-dir,
//! and `iosat analyze` of the run's recording says what the live run said last.

use crate::stat::wait_bounded;
use crate::util::{have, iosat, is_root, json_lines, ok_json, LoopDev};
use std::process::{Command, Stdio};
use std::time::Duration;

fn fio(dev: &str, depth: u32, secs: u32) {
    fio_rw(dev, "randread", depth, secs);
}

/// fio of 4 KiB random direct I/O on `dev`: `rw` is fio's (randread, randwrite, randrw: half
/// reads, half writes, the way a database's data disk mixes them).
fn fio_rw(dev: &str, rw: &str, depth: u32, secs: u32) {
    fio_mix(dev, rw, 50, depth, secs);
}

/// fio_rw with `read_pct` % of reads when `rw` mixes them.
fn fio_mix(dev: &str, rw: &str, read_pct: u32, depth: u32, secs: u32) {
    let st = Command::new("fio")
        .args([
            "--name=learn",
            &format!("--filename={dev}"),
            "--direct=1",
            &format!("--rw={rw}"),
            &format!("--rwmixread={read_pct}"),
            "--bs=4k",
            "--ioengine=libaio",
            &format!("--iodepth={depth}"),
            &format!("--runtime={secs}"),
            "--time_based",
            "--size=32m",
            "--output=/dev/null",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "fio {rw} at iodepth {depth}");
}

#[test]
fn stat_learns_a_loop_device_driven_by_fio_and_analyze_agrees() {
    if !is_root() || !have("fio", "--version") {
        crate::util::skip("needs root and fio");
        return;
    }
    let dev = LoopDev::new(64 << 20);
    let state = tempfile::tempdir().unwrap();
    let rec = state.path().join("run.rec");
    // 0.1 s intervals for 9 s: at iodepth 1 for 4 s (40 intervals at a queue of about one:
    // a baseline), then 4 and 16.
    // Output to a file: 90 JSON lines are more than a pipe holds while nobody reads it.
    let out_path = state.path().join("out.jsonl");
    let child = iosat()
        .args(["stat", "--json", "-i", "0.1", "-c", "90", "--state-dir"])
        .arg(state.path())
        .arg("--record")
        .arg(&rec)
        .arg(dev.name())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    fio(&dev.path, 1, 4);
    fio(&dev.path, 4, 2);
    fio(&dev.path, 16, 2);
    let mut child = child;
    let status = wait_bounded(&mut child, Duration::from_secs(60));
    let out = child.wait_with_output().unwrap();
    assert!(status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines = json_lines(&std::fs::read_to_string(&out_path).unwrap());
    assert!(lines.len() >= 80, "{} lines", lines.len());
    let last = &lines.last().unwrap()["devices"][0]["learned"];
    // Intervals with traffic: fio ran for 8 of the 9 s.
    assert!(last["intervals"].as_u64().unwrap() >= 60, "{last}");
    let base = last["baseline_latency_ns"].as_f64().expect("a baseline");
    assert!(base > 0.0 && base < 50e6, "{last}");
    assert!(last["baseline_p95_ns"].as_f64().unwrap() >= base * 0.5);
    assert!(last["max_iops"].as_f64().unwrap() > 0.0, "{last}");
    // A knee or a lower bound, never neither.
    assert!(
        last["knee_concurrency"].is_u64() || last["knee_at_least"].is_f64(),
        "{last}"
    );
    assert!(
        ["idle", "ok", "saturated", "overloaded"].contains(&last["state"].as_str().unwrap()),
        "{last}"
    );
    // Saved at the end of the run, in the state directory given.
    let files = crate::util::entries(&state.path().join("learned"));
    std::fs::remove_file(&out_path).unwrap();
    assert_eq!(files.len(), 1, "{files:?}");
    // The recording analysed: the same learner over the same intervals says the same.
    let a = ok_json(
        &iosat()
            .arg("analyze")
            .arg(&rec)
            .args(["--json", "--device", dev.name()])
            .output()
            .unwrap(),
    );
    assert_eq!(&a["devices"][0]["learned"], last);
    // The text view of the recording judges by the learned baseline (no profile here).
    let text = crate::util::ok_stdout(
        &iosat()
            .arg("stat")
            .arg("--replay")
            .arg(&rec)
            .arg(dev.name())
            .output()
            .unwrap(),
    );
    let last_table = text.rsplit("interval").next().unwrap();
    assert!(last_table.contains("state    +IOPS"), "{text}");
    // --forget removes it.
    let f = iosat()
        .args(["stat", "--forget", "--state-dir"])
        .arg(state.path())
        .output()
        .unwrap();
    assert!(f.status.success());
    assert!(crate::util::entries(&state.path().join("learned")).is_empty());
}

use iosat::learn::estimate::Curve;
use iosat::learn::model::{Dir, SizeClass};

/// The known device of these tests: 4 units of 2 ms (knee 4, 2,000 IOPS).
const UNITS: f64 = 4.0;
const S_NS: f64 = 2e6;

/// What `iosat stat` learned of a known device (4 units of 2 ms) while fio ran `rw` at the
/// given (iodepth, seconds) phases: the curves of 4 KiB reads and writes (None: not learned),
/// estimated from the state file the run saved (through the library: the state file is the
/// product). None when known devices or fio are not available here.
fn learn_known(rw: &str, phases: &[(u32, u32)]) -> Option<(Option<Curve>, Option<Curve>)> {
    use crate::knowndev::{KnownDev, Spec};
    if !have("fio", "--version") {
        crate::util::skip("needs fio");
        return None;
    }
    let dev = KnownDev::start(Spec::new(UNITS as usize, Duration::from_nanos(S_NS as u64)))?;
    let state = tempfile::tempdir().unwrap();
    let secs: u32 = phases.iter().map(|p| p.1).sum();
    let mut child = iosat()
        .args(["stat", "--json", "-i", "0.2", "--no-bpf", "--state-dir"])
        .arg(state.path())
        .args(["-c", &(secs * 5 + 5).to_string(), dev.name()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for &(depth, s) in phases {
        fio_rw(&dev.path, rw, depth, s);
    }
    let status = wait_bounded(&mut child, Duration::from_secs(u64::from(secs) + 60));
    assert!(status.success());
    let files = crate::util::entries(&state.path().join("learned"));
    assert_eq!(files.len(), 1, "{files:?}");
    let key = files[0].file_stem().unwrap().to_str().unwrap().to_string();
    let (model, note) = iosat::learn::store::load(state.path(), &key, None).unwrap();
    assert_eq!(note, None);
    let model = model.expect("a saved state");
    let curve = |dir: Dir| {
        let c = iosat::learn::estimate::estimate(model.series(dir, SizeClass::Small)?, None);
        eprintln!("{}: {}", dir.as_str(), c.summary);
        Some(c)
    };
    Some((curve(Dir::Read), curve(Dir::Write)))
}

/// The acceptance of one direction's curve on the known device, where that direction carries
/// `share` of the requests: the baseline within 10 % of the service time (plus the path's
/// overhead, at most 1.5 ms as the truth tests measure it), the knee within one level (of 1,
/// 2, 4, 8, 16) of the units, the ceiling within 20 % of the direction's share of units ÷
/// service time (the headroom is "in the current mix").
fn is_the_known_device(c: &Curve, share: f64) {
    let b = c.baseline.as_ref().expect("a baseline");
    assert!(
        b.latency_ns >= 0.9 * S_NS && b.latency_ns <= 1.1 * S_NS + 1.5e6,
        "{}",
        c.summary
    );
    let k = c.knee_concurrency.expect(&c.summary);
    assert!((2..=8).contains(&k), "knee {k}: {}", c.summary);
    let max = c.max_iops.unwrap();
    let truth = share * UNITS / (S_NS / 1e9);
    assert!(
        (max / truth - 1.0).abs() <= 0.20,
        "max {max:.0} vs {truth:.0}: {}",
        c.summary
    );
}

/// The acceptance test (issue 26) on a known device: a load wandering from 1 to 4x its units'
/// concurrency.
#[test]
fn a_known_device_is_learned_from_a_wandering_load() {
    let Some((r, _)) = learn_known(
        "randread",
        &[(1, 9), (2, 3), (4, 3), (8, 3), (16, 3), (4, 2), (1, 2)],
    ) else {
        return;
    };
    is_the_known_device(&r.expect("reads learned"), 1.0);
}

/// The same with reads and writes at once, half each, as a database's data disk: each
/// direction learned on its own curve. A direction's in-flight count is half the device's,
/// so each sees the units' knee at half its own in-flight count (still within one level of
/// the units) and serves half the ceiling.
#[test]
fn a_known_device_is_learned_from_a_wandering_mixed_load() {
    // Total in flight 2 for the baseline (1 per direction), then wandering between 4 and
    // 16 (1 to 4x the units) and back, about a minute in all.
    let Some((r, w)) = learn_known(
        "randrw",
        &[
            (2, 10),
            (4, 6),
            (8, 6),
            (16, 6),
            (12, 5),
            (6, 5),
            (2, 4),
            (16, 5),
            (4, 5),
        ],
    ) else {
        return;
    };
    is_the_known_device(&r.expect("reads learned"), 0.5);
    is_the_known_device(&w.expect("writes learned"), 0.5);
}

/// Driven only at concurrency <= 2 (4 units): no knee claimed, a lower bound stated.
fn is_a_lower_bound(c: &Curve) {
    assert!(c.baseline.is_some(), "{}", c.summary);
    assert_eq!(c.knee_concurrency, None, "{}", c.summary);
    let at_least = c.knee_at_least.expect(&c.summary);
    assert!((1.0..=3.0).contains(&at_least), "{}", c.summary);
    assert!(c.max_iops_at_least, "{}", c.summary);
    assert!(c.summary.contains("knee is at or above"), "{}", c.summary);
}

#[test]
fn a_known_device_driven_at_two_at_most_gives_a_lower_bound() {
    let Some((r, _)) = learn_known("randread", &[(1, 9), (2, 4)]) else {
        return;
    };
    is_a_lower_bound(&r.expect("reads learned"));
}

#[test]
fn a_known_device_written_at_two_at_most_gives_a_lower_bound() {
    let Some((_, w)) = learn_known("randwrite", &[(1, 9), (2, 4)]) else {
        return;
    };
    is_a_lower_bound(&w.expect("writes learned"));
}

/// `iosat analyze` of a log made by real `iostat -x -t 1` (sysstat) over a known device under
/// fio's mixed load learns each direction with the same estimator as live learning: the
/// baseline is the device's service time (plus the path's overhead), and the recording iosat
/// made of the same traffic at the same time says the same within iostat's rounding.
#[test]
fn an_iostat_log_is_learned_like_a_recording() {
    use crate::knowndev::{KnownDev, Spec};
    if !have("fio", "--version") || !have("iostat", "-V") {
        crate::util::skip("needs fio and iostat (sysstat)");
        return;
    }
    let Some(dev) = KnownDev::start(Spec::new(UNITS as usize, Duration::from_nanos(S_NS as u64)))
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (log, rec) = (dir.path().join("iostat.log"), dir.path().join("run.rec"));
    // 1 s intervals, iostat's least: 34 s at about one request in flight per direction (a
    // baseline needs 30 intervals), 12 s at 16 in flight (a level needs 10 intervals), then
    // 14 s at 2 again, so that the curve is estimated again after the level (every quarter
    // more intervals, as live). Mostly reads (70 %), so that the last interval's figures are
    // the reads' in both files.
    let n = "64";
    let mut iostat = Command::new("iostat")
        .args(["-x", "-t", "1", n, dev.name()])
        .env("LC_ALL", "C")
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stat = iosat()
        .args([
            "stat",
            "-i",
            "1",
            "-c",
            n,
            "--no-bpf",
            "--no-learn",
            "--record",
        ])
        .arg(&rec)
        .arg(dev.name())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    fio_mix(&dev.path, "randrw", 70, 2, 34);
    fio_mix(&dev.path, "randrw", 70, 16, 12);
    fio_mix(&dev.path, "randrw", 70, 2, 14);
    assert!(wait_bounded(&mut iostat, Duration::from_secs(60)).success());
    assert!(wait_bounded(&mut stat, Duration::from_secs(60)).success());
    let analyze = |path: &std::path::Path| {
        let a = ok_json(
            &iosat()
                .arg("analyze")
                .arg(path)
                .args(["--json", "--device", dev.name()])
                .output()
                .unwrap(),
        );
        let d = a["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["device"] == dev.name())
            .unwrap_or_else(|| panic!("{} in {a}", dev.name()))
            .clone();
        d["learned"].clone()
    };
    let from_log = analyze(&log);
    let from_rec = analyze(&rec);
    eprintln!("iostat log: {from_log}\nrecording: {from_rec}");
    let base = from_log["baseline_latency_ns"]
        .as_f64()
        .expect("a baseline");
    assert!(
        (0.9 * S_NS..=1.1 * S_NS + 1.5e6).contains(&base),
        "{from_log}"
    );
    // Every interval with traffic learned (the first report, since boot, is left out).
    let intervals = from_log["intervals"].as_u64().unwrap();
    assert!((58..=64).contains(&intervals), "{from_log}");
    // The same estimator over the same traffic, measured by two tools a few ms apart.
    let rec_base = from_rec["baseline_latency_ns"]
        .as_f64()
        .expect("a baseline");
    assert!((base / rec_base - 1.0).abs() < 0.05, "{base} vs {rec_base}");
    assert_eq!(from_log["direction"], "read", "{from_log}");
    assert_eq!(from_rec["direction"], "read", "{from_rec}");
    // Past the baseline: a knee, or a lower bound above the 16-deep phase's reads' level.
    assert!(
        from_log["knee_concurrency"].is_u64() || from_log["knee_at_least"].as_f64().unwrap() > 4.0,
        "{from_log}"
    );
    assert_eq!(from_log["knee_concurrency"], from_rec["knee_concurrency"]);
    let (m, rm) = (
        from_log["max_iops"].as_f64().unwrap(),
        from_rec["max_iops"].as_f64().unwrap(),
    );
    assert!((m / rm - 1.0).abs() < 0.10, "{m} vs {rm}");
    // The text says it too.
    let text = crate::util::ok_stdout(&iosat().arg("analyze").arg(&log).output().unwrap());
    assert!(
        text.contains(&format!("{}: learned", dev.name())) && text.contains("baseline"),
        "{text}"
    );
}
