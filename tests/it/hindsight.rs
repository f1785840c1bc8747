//! Hindsight (issue 41): `iosat stat` keeps the last minutes of samples and writes them out as
//! a recording on SIGUSR1 (and when a device turns overloaded: unit tests in
//! monitor::hindsight). On a loop device the test creates: the dump is what `--record` wrote
//! for the same samples, byte for byte, and replays to the same figures.

use crate::stat::{direct_io, stop_after_next_sample, wait_for_first_sample};
use crate::util::{iosat, json_lines, stderr, LoopDev};
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Each sample of a recording (`T` line and the diskstats lines up to the next element), by
/// its monotonic stamp.
fn samples(text: &str) -> BTreeMap<u64, String> {
    let mut out = BTreeMap::new();
    let mut cur: Option<(u64, String)> = None;
    for l in text.lines() {
        let first = l.split_whitespace().next().unwrap_or("");
        if first == "T" {
            if let Some((k, v)) = cur.take() {
                out.insert(k, v);
            }
            let mono = l.split_whitespace().nth(1).unwrap().parse().unwrap();
            cur = Some((mono, format!("{l}\n")));
        } else if first.chars().all(|c| c.is_ascii_digit()) && !first.is_empty() {
            if let Some((_, v)) = &mut cur {
                v.push_str(l);
                v.push('\n');
            }
        } else if let Some((k, v)) = cur.take() {
            out.insert(k, v);
        }
    }
    if let Some((k, v)) = cur {
        out.insert(k, v);
    }
    out
}

/// `stat --replay FILE --json DEV`: each interval's end time and the device's r/s and w/s.
fn replayed(file: &Path, dev: &str) -> BTreeMap<String, (f64, f64)> {
    let o = iosat()
        .args(["stat", "--no-learn", "--json", "--replay"])
        .arg(file)
        .arg(dev)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    json_lines(&String::from_utf8_lossy(&o.stdout))
        .iter()
        .map(|r| {
            let d = r["devices"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["disk_device"] == dev)
                .unwrap();
            (
                r["timestamp"].as_str().unwrap_or_default().to_string(),
                (d["r/s"].as_f64().unwrap(), d["w/s"].as_f64().unwrap()),
            )
        })
        .collect()
}

/// The dumps in `dir`, by their names (not a dump's temporary file while it is written); none
/// while `dir` does not exist.
fn dumps(dir: &Path) -> Vec<std::path::PathBuf> {
    let dump = |p: &Path| {
        let n = p.file_name().unwrap_or_default().to_string_lossy();
        n.starts_with("hindsight-") && n.ends_with(".rec")
    };
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| dump(p))
                .collect()
        })
        .unwrap_or_default()
}

/// The first file to appear in `dir`, waited for at most `limit`.
fn first_dump(dir: &Path, limit: Duration) -> std::path::PathBuf {
    let t0 = Instant::now();
    loop {
        if let Some(p) = dumps(dir).into_iter().next() {
            return p;
        }
        assert!(t0.elapsed() < limit, "no dump within {limit:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn sigusr1_writes_the_samples_held_as_a_recording_that_replays_the_same() {
    let lo = LoopDev::new(16 << 20);
    let dir = crate::util::tempdir().unwrap();
    let hs = dir.path().join("hs");
    let rec = dir.path().join("live.rec");
    let mut child = iosat()
        .args([
            "stat",
            lo.name(),
            "-i",
            "0.2",
            "-c",
            "1000",
            "--json",
            "--no-learn",
        ])
        .args([
            "--hindsight",
            "60s",
            "--hindsight-tail",
            "0.5s",
            "--hindsight-interval",
            "0.2s",
            "--hindsight-dir",
        ])
        .arg(&hs)
        .arg("--record")
        .arg(&rec)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_first_sample(&rec);
    direct_io(&lo.path, 200, 100);
    // SAFETY: a signal to our own child, not yet waited for.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGUSR1) };
    let dump = first_dump(&hs, Duration::from_secs(30));
    let status = stop_after_next_sample(&mut child, &rec);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    // One dump, named for its trigger, said where on stderr; the directory is iosat's own.
    let name = dump.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with("hindsight-") && name.ends_with("-signal.rec"),
        "{name}"
    );
    assert_eq!(std::fs::read_dir(&hs).unwrap().count(), 1);
    assert!(
        err.contains("hindsight: wrote") && err.contains(&name),
        "{err}"
    );
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&hs).unwrap().permissions().mode() & 0o777,
        0o700
    );
    // Every sample of the dump is the recording's, byte for byte, and they run without a gap
    // from the run's first sample (60 s held) to at least the trigger.
    let live = samples(&std::fs::read_to_string(&rec).unwrap());
    let held = samples(&std::fs::read_to_string(&dump).unwrap());
    assert!(held.len() >= 2, "{held:?}");
    for (mono, text) in &held {
        assert_eq!(live.get(mono), Some(text), "sample {mono}");
    }
    let live_keys: Vec<&u64> = live.keys().collect();
    let held_keys: Vec<&u64> = held.keys().collect();
    assert_eq!(&live_keys[..held_keys.len()], &held_keys[..]);
    // Replayed, the dump gives the recording's figures for the same intervals, the I/O in them.
    let a = replayed(&dump, lo.name());
    let b = replayed(&rec, lo.name());
    assert!(!a.is_empty());
    for (t, rw) in &a {
        assert_eq!(b.get(t), Some(rw), "interval ending {t}");
    }
    let (reads, writes): (f64, f64) = a.values().fold((0.0, 0.0), |s, v| (s.0 + v.0, s.1 + v.1));
    assert!(reads > 0.0 && writes > 0.0, "{a:?}");
}

#[test]
fn bad_hindsight_flags_are_one_line_naming_the_flag() {
    for (flag, value) in [
        ("--hindsight", "soon"),
        ("--hindsight-tail", "later"),
        ("--hindsight-max-mb", "0"),
        ("--hindsight-interval", "1ms"),
    ] {
        let o = iosat()
            .args(["stat", "-c", "1", "--no-learn", flag, value])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{flag} {value}");
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains(flag) && e.contains(value), "{e}");
    }
}

#[test]
fn a_device_that_turns_overloaded_writes_the_minutes_before_it_by_itself() {
    if !crate::util::have("fio", "--version") {
        crate::util::skip("needs fio");
        return;
    }
    use crate::knowndev::{KnownDev, Spec};
    // One unit of 2 ms: at 8 in flight every request waits for 7 others, 8x the baseline.
    let Some(dev) = KnownDev::start(Spec::new(1, Duration::from_millis(2))) else {
        return;
    };
    let name = dev.name().to_string();
    let profiles = crate::exporter::profile_dir_for(
        &name,
        r#"{"baseline_latency_ns":2000000.0,"baseline_p95_ns":2200000.0,
            "knee_concurrency":1,"max_useful_iops":500.0}"#,
    );
    let dir = crate::util::tempdir().unwrap();
    let hs = dir.path().join("hs");
    let rec = dir.path().join("live.rec");
    let mut child = iosat()
        .args([
            "stat",
            &name,
            "-i",
            "0.5",
            "-c",
            "1000",
            "--no-learn",
            "--no-bpf",
        ])
        .arg("--profile-dir")
        .arg(profiles.path())
        .args([
            "--hindsight",
            "10m",
            "--hindsight-tail",
            "2s",
            "--hindsight-interval",
            "0.5s",
            "--hindsight-dir",
        ])
        .arg(&hs)
        .arg("--record")
        .arg(&rec)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_first_sample(&rec);
    // Quiet for a second, then the overload.
    std::thread::sleep(Duration::from_secs(1));
    assert!(dumps(&hs).is_empty(), "a dump before any overload");
    let load = crate::alerts::fio(&dev.path, 8, 30);
    let dump = first_dump(&hs, Duration::from_secs(40));
    drop(load);
    let status = stop_after_next_sample(&mut child, &rec);
    assert_eq!(status.code(), Some(130));
    let file = dump.file_name().unwrap().to_string_lossy().into_owned();
    assert!(file.ends_with(&format!("-overloaded-{name}.rec")), "{file}");
    // Still overloaded after the tail: one incident, one dump.
    assert_eq!(dumps(&hs).len(), 1, "{:?}", dumps(&hs));
    // Replayed against the same profile: quiet intervals before the overload (the minutes
    // before it are kept), overloaded ones after, and at least the 2 s tail of them.
    let o = iosat()
        .args(["stat", "--no-learn", "--json", "--profile-dir"])
        .arg(profiles.path())
        .arg("--replay")
        .arg(&dump)
        .arg(&name)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let states: Vec<String> = json_lines(&String::from_utf8_lossy(&o.stdout))
        .iter()
        .map(|r| {
            let d = r["devices"]
                .as_array()
                .unwrap()
                .iter()
                .find(|d| d["disk_device"] == name.as_str())
                .unwrap();
            d["judgement"]["state"].as_str().unwrap_or("-").to_string()
        })
        .collect();
    let first = states.iter().position(|s| s == "overloaded");
    let first = first.unwrap_or_else(|| panic!("no overloaded interval: {states:?}"));
    assert!(first >= 1, "nothing before the overload: {states:?}");
    // (The interval fio starts in may read ok or saturated.)
    assert!(states[..first].iter().any(|s| s == "idle"), "{states:?}");
    let after = states[first..]
        .iter()
        .filter(|s| *s == "overloaded")
        .count();
    assert!(after >= 4, "the 2 s tail at 0.5 s: {states:?}");
    // The dump names its trigger: the device and the direction judged overloaded live.
    let text = std::fs::read_to_string(&dump).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("#trigger ") && l.ends_with(&format!(" overloaded {name} read"))),
        "{}",
        &text[..text.len().min(600)]
    );
    // `analyze` says when the incident started, within one interval of the first interval
    // the replay judges overloaded.
    let o = iosat().arg("analyze").arg(&dump).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    // The text view wraps its notes: read it as one run of words.
    let said = String::from_utf8_lossy(&o.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let line = said
        .split("hindsight: the incident: ")
        .nth(1)
        .and_then(|t| t.split(" as judged live").next())
        .unwrap_or_else(|| panic!("no incident in:\n{said}"));
    assert!(
        line.contains(&format!("{name} turned overloaded (read)")),
        "{line}"
    );
    let first_end =
        json_lines(&String::from_utf8_lossy(&o_replay_stdout(
            &profiles, &dump, &name,
        )))
        .iter()
        .find(|r| {
            r["devices"].as_array().unwrap().iter().any(|d| {
                d["disk_device"] == name.as_str() && d["judgement"]["state"] == "overloaded"
            })
        })
        .map(|r| r["timestamp"].as_str().unwrap().to_string())
        .unwrap();
    let at = line
        .split("ended at ")
        .nth(1)
        .map(|t| t.trim_end_matches(','))
        .unwrap();
    let gap = (seconds_of(at) - seconds_of(&first_end)).abs();
    assert!(
        gap <= 0.5,
        "trigger {at}, first overloaded interval ended {first_end}"
    );
    // `report` draws it, the trigger marked on every chart.
    let page = dir.path().join("page.html");
    let o = iosat()
        .args(["report", "--profile-dir"])
        .arg(profiles.path())
        .arg(&dump)
        .arg("-o")
        .arg(&page)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    let charts = html.matches("<svg").count();
    let marked = html.matches("trigger: overloaded").count();
    assert!(
        charts >= 5 && marked >= charts,
        "{charts} charts, {marked} trigger marks"
    );
    if let Some(bin) = crate::report::chromium() {
        crate::report::check_page(&bin, dir.path(), "hindsight-dump", &html, charts);
    }
}

/// `stat --replay DUMP --json DEV` against `profiles`.
fn o_replay_stdout(profiles: &tempfile::TempDir, dump: &Path, dev: &str) -> Vec<u8> {
    let o = iosat()
        .args(["stat", "--no-learn", "--json", "--profile-dir"])
        .arg(profiles.path())
        .arg("--replay")
        .arg(dump)
        .arg(dev)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    o.stdout
}

/// `2026-11-29T18:50:37.123Z` as seconds since the epoch (UTC, days from the civil date).
fn seconds_of(iso: &str) -> f64 {
    let (date, time) = iso.trim().trim_end_matches('Z').split_once('T').unwrap();
    let d: Vec<i64> = date.split('-').map(|x| x.parse().unwrap()).collect();
    let (y, m, day) = (d[0] - i64::from(d[1] <= 2), d[1], d[2]);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    let t: Vec<f64> = time.split(':').map(|x| x.parse().unwrap()).collect();
    days as f64 * 86_400.0 + t[0] * 3600.0 + t[1] * 60.0 + t[2]
}

/// The exporter's ring, at its own cadence: `POST /hindsight` answers where the dump will go
/// and it is written there; the exposition counts it and states the ring's samples; other
/// methods, and an exporter with hindsight off, are refused in one line. With learning off
/// (`--no-learn`) and a 100 ms ring, the dump holds samples ten a second, not the learner's
/// one.
#[test]
fn post_hindsight_to_the_exporter_writes_a_dump_and_counts_it() {
    use crate::exporter::Exporter;
    let dir = crate::util::tempdir().unwrap();
    let hs = dir.path().join("hs");
    let hs_arg = hs.to_str().unwrap();
    let e = Exporter::start(
        Path::new("/"),
        &["--hindsight-dir", hs_arg, "--hindsight-tail", "0"],
    );
    // Two ticks of the learner: two samples held.
    std::thread::sleep(Duration::from_millis(2500));
    let (code, _, body) = e.request("GET", "/hindsight");
    assert_eq!(code, 405, "{body}");
    let (code, _, body) = e.request("POST", "/hindsight");
    assert_eq!(code, 202, "{body}");
    assert!(body.contains(hs_arg), "{body}");
    let dump = first_dump(&hs, Duration::from_secs(10));
    let text = std::fs::read_to_string(&dump).unwrap();
    assert!(text.starts_with("#iosat-record 1\n"), "{text}");
    assert!(text.matches("\nT ").count() >= 2, "{text}");
    assert!(dump.to_string_lossy().ends_with("-request.rec"), "{dump:?}");
    let (_, _, metrics) = e.request("GET", "/metrics");
    assert!(
        metrics
            .lines()
            .any(|l| l == "iosat_hindsight_dumps_total 1"),
        "{metrics}"
    );
    let figure = |m: &str, name: &str| -> Option<f64> {
        m.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .map(|v| v.parse().unwrap())
    };
    assert!(
        figure(&metrics, "iosat_hindsight_held_samples").unwrap() >= 2.0,
        "{metrics}"
    );
    assert_eq!(
        figure(&metrics, "iosat_hindsight_dropped_samples_total"),
        Some(0.0)
    );
    let took = figure(&metrics, "iosat_hindsight_last_dump_duration_seconds").unwrap();
    assert!(took > 0.0, "{metrics}");
    drop(e);
    // Off: 404.
    let e = Exporter::start(
        Path::new("/"),
        &["--hindsight", "0", "--hindsight-dir", hs_arg],
    );
    let (code, _, body) = e.request("POST", "/hindsight");
    assert_eq!(code, 404, "{body}");
    assert!(body.contains("hindsight is off"), "{body}");
    drop(e);
    // Without learning, at 100 ms.
    let fine = dir.path().join("fine");
    let e = Exporter::start(
        Path::new("/"),
        &[
            "--no-learn",
            "--hindsight-interval",
            "100ms",
            "--hindsight-tail",
            "0",
            "--hindsight-dir",
            fine.to_str().unwrap(),
        ],
    );
    std::thread::sleep(Duration::from_millis(2500));
    let (code, _, body) = e.request("POST", "/hindsight");
    assert_eq!(code, 202, "{body}");
    let dump = first_dump(&fine, Duration::from_secs(10));
    let (_, _, metrics) = e.request("GET", "/metrics");
    drop(e);
    let text = std::fs::read_to_string(&dump).unwrap();
    let stamps: Vec<u64> = samples(&text).into_keys().collect();
    // About 25 in 2.5 s; more than the 3 a one-second tick would have kept, whatever the load.
    assert!(stamps.len() >= 8, "{} samples: {text}", stamps.len());
    // The dump's run line carries the ring's interval.
    assert!(
        text.lines()
            .any(|l| l.starts_with("R ") && l.ends_with(" 100000000")),
        "{text}"
    );
    let held = figure(&metrics, "iosat_hindsight_held_samples").unwrap();
    assert!(held >= stamps.len() as f64, "{held} {}", stamps.len());
    // The CPU times ride along (the dump's avg-cpu and CPU-noise judgement).
    assert!(text.lines().any(|l| l.starts_with("C ")), "{text}");
}

/// `stat -i 1 --hindsight-interval 100ms`: the ring samples between the view's ticks, so a
/// dump holds ten samples a second while the recording holds one; replayed, the dump's
/// intervals add up to the I/O the recording saw in the same span.
#[test]
fn the_ring_samples_at_its_own_interval_between_the_views_ticks() {
    let lo = LoopDev::new(16 << 20);
    let dir = crate::util::tempdir().unwrap();
    let hs = dir.path().join("hs");
    let rec = dir.path().join("live.rec");
    let mut child = iosat()
        .args([
            "stat",
            lo.name(),
            "-i",
            "1",
            "-c",
            "1000",
            "--json",
            "--no-learn",
        ])
        .args([
            "--hindsight",
            "60s",
            "--hindsight-tail",
            "0",
            "--hindsight-interval",
            "100ms",
            "--hindsight-dir",
        ])
        .arg(&hs)
        .arg("--record")
        .arg(&rec)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_first_sample(&rec);
    direct_io(&lo.path, 200, 100);
    std::thread::sleep(Duration::from_millis(2200));
    // SAFETY: a signal to our own child, not yet waited for.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGUSR1) };
    let dump = first_dump(&hs, Duration::from_secs(30));
    let status = stop_after_next_sample(&mut child, &rec);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(130), "{err}");
    // The ring's memory is stated once.
    assert_eq!(
        err.matches("hindsight: keeping 60 s of samples every 100 ms")
            .count(),
        1,
        "{err}"
    );
    let live = samples(&std::fs::read_to_string(&rec).unwrap());
    let held = samples(&std::fs::read_to_string(&dump).unwrap());
    let (first, last) = (*held.keys().next().unwrap(), *held.keys().last().unwrap());
    let live_in: Vec<&u64> = live
        .keys()
        .filter(|k| (first..=last).contains(*k))
        .collect();
    assert!(live_in.len() >= 2, "{live_in:?}");
    assert!(
        held.len() >= 4 * live_in.len(),
        "{} held against {} recorded in the same span",
        held.len(),
        live_in.len()
    );
    // The same I/O: the dump's reads over its span are the recording's between the same
    // samples' neighbours, at least the 200 reads done.
    let a = replayed(&dump, lo.name());
    let reads: f64 = a.values().map(|v| v.0).sum();
    assert!(a.len() >= 4 * (live_in.len() - 1), "{a:?}");
    assert!(reads > 0.0, "{a:?}");
}

/// Two incidents compare: `iosat compare` reads two dumps (recordings) as `analyze` reads
/// them, side by side.
#[test]
fn two_dumps_compare() {
    let lo = LoopDev::new(16 << 20);
    let dir = crate::util::tempdir().unwrap();
    let hs = dir.path().join("hs");
    let rec = dir.path().join("live.rec");
    let mut child = iosat()
        .args(["stat", lo.name(), "-i", "0.2", "-c", "1000", "--no-learn"])
        .args(["--hindsight", "60s", "--hindsight-tail", "0"])
        .args(["--hindsight-interval", "0.2s", "--hindsight-dir"])
        .arg(&hs)
        .arg("--record")
        .arg(&rec)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_first_sample(&rec);
    let mut got = Vec::new();
    for n in 1..=2 {
        direct_io(&lo.path, 100 * n, 0);
        std::thread::sleep(Duration::from_millis(500));
        // SAFETY: a signal to our own child, not yet waited for.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGUSR1) };
        let t0 = Instant::now();
        while dumps(&hs).len() < n as usize {
            assert!(t0.elapsed() < Duration::from_secs(30), "no dump {n}");
            std::thread::sleep(Duration::from_millis(20));
        }
        got = dumps(&hs);
        // Dumps are named by the second: the next one a second later.
        std::thread::sleep(Duration::from_millis(1100));
    }
    stop_after_next_sample(&mut child, &rec);
    got.sort();
    let o = iosat().arg("compare").args(&got).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    for d in &got {
        let name = d.file_name().unwrap().to_string_lossy();
        assert!(out.contains(name.as_ref()), "{name} not in:\n{out}");
    }
    assert!(out.contains("analyze results"), "{out}");
}

/// A dump that cannot be written (its directory on a full, then on a read-only filesystem):
/// `stat` goes on to its last interval and exits 0, says "no dump written" once per dump
/// asked for, and leaves no temporary file behind.
#[test]
fn a_full_or_read_only_dump_directory_is_a_warning_not_a_crash() {
    if !crate::util::is_root() {
        crate::util::skip("needs root (mounts a tmpfs)");
        return;
    }
    for case in ["full", "read-only"] {
        let fs = crate::util::Tmpfs::mount("64k");
        let hs = fs.path().join("hs");
        std::fs::create_dir(&hs).unwrap();
        if case == "full" {
            // Filled to the last block.
            let mut f = std::fs::File::create(fs.path().join("filler")).unwrap();
            let block = vec![7u8; 4096];
            while std::io::Write::write_all(&mut f, &block).is_ok() {}
        } else {
            let st = std::process::Command::new("mount")
                .args(["-o", "remount,ro"])
                .arg(fs.path())
                .status()
                .unwrap();
            assert!(st.success(), "remount read-only");
        }
        let before: Vec<_> = crate::util::entries(&hs);
        let mut child = crate::util::KillOnDrop(
            iosat()
                .args(["stat", "-i", "0.2", "-c", "12", "--json", "--no-learn"])
                .args(["--hindsight-interval", "0.2s", "--hindsight-tail", "0"])
                .arg("--hindsight-dir")
                .arg(&hs)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        {
            use std::io::BufRead;
            let pid = child.0.id() as libc::pid_t;
            let mut lines = std::io::BufReader::new(child.0.stdout.as_mut().unwrap()).lines();
            for k in 0..8 {
                lines.next().unwrap().unwrap();
                if k == 1 || k == 4 {
                    // SAFETY: a signal to our own child, not yet waited for.
                    unsafe { libc::kill(pid, libc::SIGUSR1) };
                }
            }
        }
        let mut err = String::new();
        child
            .0
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = child.0.wait().unwrap();
        assert_eq!(status.code(), Some(0), "{case}: {err}");
        assert!(!err.contains("panicked"), "{case}: {err}");
        let warned = err.matches("no dump written").count();
        assert!(
            (1..=2).contains(&warned),
            "{case}: {warned} warnings: {err}"
        );
        assert!(!err.contains("hindsight: wrote"), "{case}: {err}");
        assert_eq!(crate::util::entries(&hs), before, "{case}: left behind");
    }
}

/// With hindsight off, a SIGUSR1 no longer ends the run (its default action): `stat` goes on
/// to its last interval and says once that there is nothing to write.
#[test]
fn sigusr1_with_hindsight_off_is_one_warning_not_the_end_of_the_run() {
    let mut child = crate::util::KillOnDrop(
        iosat()
            .args(["stat", "-i", "0.2", "-c", "8", "--json", "--no-learn"])
            .args(["--hindsight", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let mut got = 0;
    {
        use std::io::BufRead;
        let pid = child.0.id() as libc::pid_t;
        let lines = std::io::BufReader::new(child.0.stdout.as_mut().unwrap()).lines();
        for (k, l) in lines.enumerate() {
            l.unwrap();
            got += 1;
            if k == 1 || k == 3 {
                // SAFETY: a signal to our own child, not yet waited for.
                unsafe { libc::kill(pid, libc::SIGUSR1) };
            }
        }
    }
    let mut err = String::new();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.0.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert_eq!(got, 8, "{err}");
    assert_eq!(err.matches("SIGUSR1: hindsight is off").count(), 1, "{err}");
}

/// The fixture exporter started with `extra` and hindsight into a directory of its own (no
/// tail), a dump asked of it (`POST /hindsight`) once `ready` has looked at it: the
/// directory (kept while the dump is read), the dump's path and its text.
fn an_exporter_dump(
    extra: &[&str],
    ready: impl FnOnce(&crate::exporter::Exporter),
) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let dir = crate::util::tempdir().unwrap();
    let hs = dir.path().join("hs");
    let mut args = extra.to_vec();
    args.extend([
        "--hindsight-dir",
        hs.to_str().unwrap(),
        "--hindsight-tail",
        "0",
    ]);
    let e = crate::exporter::fixture_exporter(&args);
    ready(&e);
    let (code, _, body) = e.request("POST", "/hindsight");
    assert_eq!(code, 202, "{body}");
    let dump = first_dump(&hs, Duration::from_secs(30));
    let text = std::fs::read_to_string(&dump).unwrap();
    (dir, dump, text)
}

/// The lines of `text` that start with `prefix`.
fn lines_starting<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.starts_with(prefix)).collect()
}

/// The exporter's dumps carry the caps it was told of (`K` lines), so a dump is judged by
/// them as the exporter judged its intervals.
#[test]
fn an_exporter_dump_carries_its_declared_caps() {
    let (_dir, _, text) = an_exporter_dump(&["--cap", "sda:iops=1000"], |_| {});
    assert_eq!(lines_starting(&text, "K "), ["K iops=1000 sda"], "{text}");
    // The default selection, recorded as such.
    assert_eq!(
        lines_starting(&text, "#S "),
        [r#"#S {"patterns":[],"partitions":false,"all":false}"#],
        "{text}"
    );
}

/// An exporter's dump shows the devices it exported: its selection (`#S`) goes with the
/// samples, so the dump's replay shows the partitions `--partitions` exported, which `stat`'s
/// default selection leaves out.
#[test]
fn an_exporter_dump_shows_the_devices_it_exported() {
    let (_dir, dump, text) =
        an_exporter_dump(&["--partitions", "--hindsight-interval", "0.1"], |e| {
            // The partitions exported.
            let (_, _, metrics) = e.request("GET", "/metrics");
            assert!(metrics.contains("device=\"sda1\""), "{metrics}");
            // Samples enough for intervals to replay (the ring samples every 0.1 s).
            std::thread::sleep(Duration::from_millis(600));
        });
    assert_eq!(
        lines_starting(&text, "#S "),
        [r#"#S {"patterns":[],"partitions":true,"all":false}"#],
        "{text}"
    );
    // Replayed without naming devices: the partition is shown, as exported.
    let out = iosat()
        .args(["stat", "--replay", dump.to_str().unwrap(), "--no-learn"])
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.lines().any(|l| l.starts_with("sda1 ")),
        "{shown}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
