//! Declared caps (issue 42) on the suite's known device: a token bucket of 1,000 IOPS in front
//! of four units of 2 ms (2,000 IOPS of their own), declared as a 1,000 IOPS cap, is named by
//! the sweep's verdict, by live `stat` and by the exporter's ratio, each within 5 %; the same
//! declaration on a device of four units of 8 ms (500 IOPS, no cap) is not claimed, and the
//! sweep says the device's own limit is lower. Bad values are one line naming the flag and the
//! value, exit 2.
//!
//! Tolerance: 5 % (the acceptance), which is what `analysis::declared::AT_CAP` uses. A
//! token bucket paces to well under 1 %; an interval of `stat` or of the exporter is measured
//! on the monotonic clock around its reads, so the host's pauses (1–3.5 ms about 9 times a
//! second here) move the interval and its count together and the rate stays within a few
//! tenths of a percent; fio keeps 16 requests waiting at the bucket, so it never runs dry.

use crate::alerts::fio;
use crate::exporter::Exporter;
use crate::knowndev::{Cap, KnownDev, Spec};
use crate::util::*;
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The capped device: 2,000 IOPS of its own behind a bucket of 1,000 a second, no burst.
fn capped() -> Spec {
    Spec::new(4, ms(2)).cap(Cap::Iops {
        per_s: 1000.0,
        burst: 0.0,
    })
}

/// A sweep of the known device with a declared cap of 1,000 IOPS.
fn sweep(dev: &KnownDev) -> Value {
    let out = iosat()
        .args([
            "sweep",
            "--json",
            "--no-progress",
            "--levels",
            "1,2,4,8,16",
            "--duration",
            "1s",
            "--ramp",
            "0.2s",
            "--budget",
            "0",
            "--cap-iops",
            "1000",
            &dev.path,
        ])
        .output()
        .unwrap();
    ok_json(&out)
}

fn summary(j: &Value) -> String {
    j["verdict"]["summary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A sweep of `dev` whose plateau levels the machine did not disturb, in up to three tries.
/// A try whose plateau it did disturb must leave the limit undecided (seen at a load of 4-6:
/// 934 IOPS, 93.4 % of the declared 1,000, on a device capped at 1,000, its levels waiting for
/// a CPU, once called "the device's own limit is lower than the cap"). None (after saying so)
/// when all three were disturbed: nothing was claimed, nothing to check.
fn undisturbed_plateau(dev: &KnownDev, what: &str) -> Option<(Value, String)> {
    for _ in 0..3 {
        let j = sweep(dev);
        let s = summary(&j);
        eprintln!("{what}:\n{s}");
        if !s.contains("in levels this machine disturbed") {
            return Some((j, s));
        }
        assert!(s.starts_with("Disturbed run"), "{s}");
        assert!(
            !s.contains("own limit is lower") && !s.contains("the cap, not the device"),
            "{s}"
        );
    }
    eprintln!("{what}: three sweeps whose plateau the machine disturbed, none claimed a limit");
    None
}

#[test]
fn the_sweep_names_a_declared_cap_at_its_plateau_and_not_one_the_device_never_reaches() {
    let Some(dev) = KnownDev::start(capped()) else {
        return;
    };
    let Some((j, s)) = undisturbed_plateau(&dev, "capped at 1,000 IOPS, declared 1,000") else {
        return;
    };
    let u = &j["verdict"]["declared_cap"];
    let ratio = u["ratio"].as_f64().unwrap_or_else(|| panic!("{u}\n{s}"));
    assert!((0.95..=1.05).contains(&ratio), "ratio {ratio}\n{s}");
    assert_eq!(u["cap"], "iops", "{u}");
    // On a quiet machine the plateau is the cap's; when the host's load made the baseline
    // drift (another test's CPU, the hypervisor's steal), the levels alone name no limit and
    // the declaration is said to point at the cap, to be confirmed.
    assert!(
        s.contains("of the declared 1,000 IOPS cap: the cap, not the device, is the limit")
            || s.contains("of the declared 1,000 IOPS cap, which points at the cap"),
        "{s}"
    );
    assert!(!s.contains("one sweep cannot tell them apart"), "{s}");
    drop(dev);

    // Four units of 8 ms: 500 IOPS of the device's own, no cap, the same declaration.
    let Some(dev) = KnownDev::start(Spec::new(4, ms(8))) else {
        return;
    };
    let Some((j, s)) = undisturbed_plateau(&dev, "uncapped (500 IOPS), declared 1,000") else {
        return;
    };
    let ratio = j["verdict"]["declared_cap"]["ratio"].as_f64().unwrap();
    // 500 of 1,000: well below the 0.95 of "at the cap". A busy host only lowers it (467 and
    // 460 IOPS measured with 40 % of the CPU stolen by the hypervisor), hence the wider floor.
    assert!((0.35..=0.55).contains(&ratio), "ratio {ratio}\n{s}");
    assert!(!s.contains("the cap, not the device"), "{s}");
    assert!(
        s.contains("the device's own limit is lower than the cap"),
        "{s}"
    );
}

/// The exporter's ratio gauge of `dev`'s IOPS cap in one exposition.
fn ratio_in(body: &str, dev: &str) -> Option<f64> {
    let head = format!("iosat_disk_cap_used_ratio{{device=\"{dev}\",cap=\"iops\"}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&head))
        .and_then(|v| v.trim().parse().ok())
}

#[test]
fn live_stat_and_the_exporter_name_the_declared_cap_under_load() {
    if !have("fio", "--version") {
        skip("fio is not installed");
        return;
    }
    let Some(dev) = KnownDev::start(capped()) else {
        return;
    };
    let name = dev.name().to_string();
    let root = std::path::Path::new("/");
    let exporter = Exporter::start_at(
        &root.join("proc"),
        &root.join("sys"),
        &[
            "--all",
            "--no-bpf",
            "--no-learn",
            "--device-include",
            &name,
            "--cap-iops",
            "1000",
        ],
    );
    let _load = fio(&dev.path, 16, 20);
    // The load settles on the bucket within its first second.
    std::thread::sleep(Duration::from_millis(1500));

    // stat's JSON: each interval's share of the declared cap, on the IOPS figure, against the
    // rate the device itself served over the same run (its units' count); recorded, with its
    // page.
    let dir = crate::util::tempdir().unwrap();
    let (rec, page) = (dir.path().join("rec"), dir.path().join("live.html"));
    let (out, truth) = served(&dev, || {
        iosat()
            .args([
                "stat",
                "--json",
                "--no-bpf",
                "--no-learn",
                "-i",
                "1",
                "-c",
                "3",
            ])
            .args(["--cap-iops", "1000", &name])
            .arg("--record")
            .arg(&rec)
            .arg("--html")
            .arg(&page)
            .output()
            .unwrap()
    });
    let lines = json_lines(&ok_stdout(&out));
    let ratios: Vec<f64> = lines
        .iter()
        .filter_map(|r| r["devices"][0]["judgement"]["cap"]["ratio"].as_f64())
        .collect();
    assert_eq!(ratios.len(), 3, "{lines:#?}");
    assert_eq!(lines[0]["devices"][0]["declared_cap"]["iops"], 1000.0);
    judged_at_the_cap("stat", &ratios, truth);
    the_recording_judges_by_the_cap(&name, &rec, &page, &ratios);

    // stat's text: the judgement in words, each interval against the cap.
    let (out, truth) = served(&dev, || {
        iosat()
            .args(["stat", "--no-bpf", "--no-learn", "-i", "1", "-c", "3"])
            .args(["--cap", &format!("/dev/{name}:iops=1000"), &name])
            .output()
            .unwrap()
    });
    let text = ok_stdout(&out);
    let said: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with(&format!("# {name}: at ")))
        .collect();
    assert_eq!(said.len(), 3, "{text}");
    let pct: Vec<f64> = said
        .iter()
        .map(|l| {
            assert!(l.contains("% of the declared 1,000 IOPS cap"), "{text}");
            let at_cap = l.ends_with("cap: the cap, not the device, is the limit");
            let p: f64 = l[format!("# {name}: at ").len()..]
                .split(' ')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            // The words follow the figure (printed rounded): from 95 % the cap is named,
            // never below.
            assert!(!at_cap || (95.0..=105.0).contains(&p), "{text}");
            assert!(at_cap || !(96.0..=104.0).contains(&p), "{text}");
            p / 100.0
        })
        .collect();
    judged_at_the_cap("stat's text", &pct, truth);

    // The exporter: the ratio of its latest one-second interval, scrape after scrape.
    let (got, truth) = served(&dev, || {
        let mut got = Vec::new();
        for _ in 0..5 {
            let (status, _, body) = exporter.request("GET", "/metrics");
            assert_eq!(status, 200);
            assert!(
                body.contains(&format!(
                    "iosat_disk_declared_cap_iops{{device=\"{name}\",cap=\"iops\"}} 1000"
                )),
                "{body}"
            );
            got.extend(ratio_in(&body, &name));
            std::thread::sleep(Duration::from_millis(1000));
        }
        got
    });
    assert!(got.len() >= 4, "ratios {got:?}");
    judged_at_the_cap("the exporter", &got, truth);
}

/// A cap given on `stat`'s command line is recorded (a `K` line): a replay of the recording
/// judges every interval by it exactly as the live run did (`live` its ratios), and both
/// pages, the live `--html` one and `iosat report`'s, name it. Without its `K` line the same
/// recording is judged by no cap (the line, not a profile, carried it).
fn the_recording_judges_by_the_cap(name: &str, rec: &Path, page: &Path, live: &[f64]) {
    let replay = |rec: &Path| -> Vec<Value> {
        let out = iosat()
            .args(["stat", "--json", "--no-bpf", "--no-learn", "--replay"])
            .arg(rec)
            .arg(name)
            .output()
            .unwrap();
        json_lines(&ok_stdout(&out))
    };
    let lines = replay(rec);
    let replayed: Vec<f64> = lines
        .iter()
        .filter_map(|r| r["devices"][0]["judgement"]["cap"]["ratio"].as_f64())
        .collect();
    assert_eq!(replayed.len(), live.len(), "{lines:#?}");
    for (r, l) in replayed.iter().zip(live) {
        assert!((r - l).abs() < 1e-9, "replayed {replayed:?}, live {live:?}");
    }
    assert_eq!(lines[0]["devices"][0]["declared_cap"]["iops"], 1000.0);

    let report = rec.with_extension("html");
    let out = iosat()
        .arg("report")
        .arg(rec)
        .arg("-o")
        .arg(&report)
        .output()
        .unwrap();
    ok_stdout(&out);
    for p in [page, report.as_path()] {
        let html = std::fs::read_to_string(p).unwrap();
        let said =
            format!("{name}: against the declared 1,000 IOPS cap: at the cap (95 to 105 %) in");
        assert!(html.contains(&said), "{}: no '{said}'", p.display());
    }

    let out = iosat()
        .arg("analyze")
        .arg(rec)
        .args(["--device", name])
        .output()
        .unwrap();
    let said = format!("{name}: against the declared 1,000 IOPS cap: at the cap");
    let analyzed = ok_stdout(&out);
    assert!(analyzed.contains(&said), "{analyzed}");

    let text = std::fs::read_to_string(rec).unwrap();
    let k = format!("K iops=1000 {name}\n");
    assert_eq!(text.matches(&k).count(), 1, "{text}");
    let bare = rec.with_extension("bare");
    std::fs::write(&bare, text.replace(&k, "")).unwrap();
    let lines = replay(&bare);
    assert!(
        lines
            .iter()
            .all(|r| r["devices"][0]["judgement"]["cap"].is_null()
                && r["devices"][0]["declared_cap"].is_null()),
        "{lines:#?}"
    );
}

/// What `f` returns and the rate the device's units served while it ran (requests a second):
/// the truth an interval's rate is held to.
fn served<T>(dev: &KnownDev, f: impl FnOnce() -> T) -> (T, f64) {
    let (n0, t0) = (dev.requests_taken(), std::time::Instant::now());
    let out = f();
    let n = dev.requests_taken() - n0;
    (out, n as f64 / t0.elapsed().as_secs_f64())
}

/// Shares of the 1,000 IOPS cap over a run whose device served `truth` a second. Their mean
/// (the intervals tile the run) agrees with the truth within 5 %; a second in which the two
/// shared cores were taken from the bucket's thread serves less, and iosat says so (0.81,
/// 0.86 and 0.93 measured beside a niced build). When the device sat at the cap (the truth
/// from 950 on) the cap is named: the median interval at least 0.95. A run the host starved
/// below the cap is said, not failed.
fn judged_at_the_cap(who: &str, ratios: &[f64], truth: f64) {
    let mut sorted = ratios.to_vec();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
    eprintln!("{who}: ratios {ratios:?}, the device served {truth:.0}/s");
    assert!(
        (mean * 1000.0 - truth).abs() <= truth * 0.05,
        "{who}: mean {mean} of {ratios:?}, the device served {truth:.0}/s"
    );
    assert!(ratios.iter().all(|r| *r <= 1.05), "{who}: {ratios:?}");
    if truth >= 950.0 {
        assert!(median >= 0.95, "{who}: {ratios:?}, truth {truth:.0}/s");
    } else {
        eprintln!("{who}: the host held the device below its cap ({truth:.0}/s)");
    }
}

#[test]
fn live_stat_does_not_claim_a_cap_the_device_stays_below() {
    if !have("fio", "--version") {
        skip("fio is not installed");
        return;
    }
    let Some(dev) = KnownDev::start(Spec::new(4, ms(8))) else {
        return;
    };
    let name = dev.name().to_string();
    let _load = fio(&dev.path, 16, 10);
    std::thread::sleep(Duration::from_millis(1000));
    let out = iosat()
        .args(["stat", "--no-bpf", "--no-learn", "-i", "1", "-c", "2"])
        .args(["--cap-iops", "1000", &name])
        .output()
        .unwrap();
    let text = ok_stdout(&out);
    let said: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with(&format!("# {name}: at ")))
        .collect();
    assert_eq!(said.len(), 2, "{text}");
    for l in said {
        // 500 of 1,000 IOPS: said as a share, never as the limit.
        let pct: f64 = l
            .trim_start_matches(&format!("# {name}: at "))
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!((45.0..=55.0).contains(&pct), "{text}");
        assert!(!l.contains("the cap, not the device"), "{text}");
    }
}

#[test]
fn a_bad_cap_is_one_line_naming_the_flag_and_the_value() {
    let d = crate::util::tempdir().unwrap();
    let result = d.path().join("r.json");
    std::fs::write(&result, "{}").unwrap();
    let result = result.to_str().unwrap();
    let commands: [&[&str]; 5] = [
        &["sweep", "--engine", "sim:units=4,service=8ms"],
        &["stat", "loop0", "-c", "1"],
        &["top", "loop0"],
        &["exporter", "--device-include", "loop0"],
        &["profile", "save", result, "--for", "loop0"],
    ];
    for cmd in commands {
        for (flag, bad) in [
            ("--cap-iops", "0"),
            ("--cap-iops", "-5"),
            ("--cap-iops", "abc"),
            ("--cap-mbps", "-5"),
        ] {
            let out = iosat().args(cmd).args([flag, bad]).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{cmd:?} {flag} {bad}: {err}");
            assert_eq!(err.lines().count(), 1, "{cmd:?} {flag} {bad}: {err}");
            assert!(
                err.contains(&format!("'{flag}'")) && err.contains(&format!("'{bad}'")),
                "{cmd:?} {flag} {bad}: {err}"
            );
        }
    }
    // Per device: the same, naming --cap; and a lone --cap-iops needs one named device.
    let out = iosat()
        .args(["stat", "--cap", "loop0:iops=abc", "-c", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("'--cap'") && err.contains("loop0:iops=abc"),
        "{err}"
    );
    let out = iosat()
        .args(["stat", "--cap-iops", "3000", "-c", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("exactly one device"), "{err}");
}

/// `iosat analyze` of fio runs at four iodepths (a plateau of about 69,050 IOPS from 16):
/// declared 70,000 it is the cap; declared 140,000 the device's own limit is lower.
#[test]
fn analyze_matches_imported_levels_to_a_declared_cap() {
    let dir = format!("{}/tests/fixtures/import", env!("CARGO_MANIFEST_DIR"));
    let run = |cap: &str| {
        let out = iosat()
            .current_dir(&dir)
            .args(["analyze", "--json", "--cap-iops", cap])
            .args([
                "fio-qd1.json",
                "fio-qd4.json",
                "fio-qd16.json",
                "fio-qd64.json",
            ])
            .output()
            .unwrap();
        ok_json(&out)
    };
    let j = run("70000");
    let s = summary(&j);
    assert!(
        s.contains("of the declared 70,000 IOPS cap: the cap, not the device, is the limit"),
        "{s}"
    );
    assert_eq!(j["declared_cap"]["iops"], 70000.0);
    let j = run("140000");
    let s = summary(&j);
    assert!(
        s.contains("the device's own limit is lower than the cap") && !s.contains("cap, not the"),
        "{s}"
    );
    // The same files without a declaration keep today's words.
    let out = iosat()
        .current_dir(&dir)
        .args(["analyze", "--json"])
        .args([
            "fio-qd1.json",
            "fio-qd4.json",
            "fio-qd16.json",
            "fio-qd64.json",
        ])
        .output()
        .unwrap();
    let s = summary(&ok_json(&out));
    assert!(
        s.contains("one sweep cannot tell them apart") && !s.contains("declared"),
        "{s}"
    );
}

/// A short sweep of `dev` (levels 1 and 4, half a second each) with `extra` arguments.
fn short_sweep(dev: &KnownDev, extra: &[&str]) -> Value {
    let out = iosat()
        .args(["sweep", "--json", "--no-progress", "--no-bpf"])
        .args(["--levels", "1,4", "--duration", "0.5s", "--ramp", "0.1s"])
        .args(["--budget", "0"])
        .args(extra)
        .arg(&dev.path)
        .output()
        .unwrap();
    ok_json(&out)
}

#[test]
fn a_sweep_takes_the_cap_from_the_devices_profile_and_says_so() {
    let Some(dev) = KnownDev::start(capped()) else {
        return;
    };
    let dir = crate::util::tempdir().unwrap();
    let pd = dir.path().join("profiles");
    let pd = pd.to_str().unwrap();
    // No profile yet: no cap, as before.
    let j = short_sweep(&dev, &["--profile-dir", pd]);
    assert!(j["declared_cap"].is_null(), "{}", j["declared_cap"]);
    assert!(j["verdict"]["declared_cap"].is_null());
    let result = dir.path().join("r.json");
    std::fs::write(&result, j.to_string()).unwrap();
    let out = iosat()
        .args(["profile", "save", "--force", "--profile-dir", pd])
        .args(["--cap-iops", "1000", "--cap-mbps", "50"])
        .arg(&result)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));

    // The profile's cap, named with the file it came from.
    let j = short_sweep(&dev, &["--profile-dir", pd]);
    assert_eq!(j["declared_cap"]["iops"], 1000.0, "{j:#}");
    assert_eq!(j["declared_cap"]["bytes_per_s"], 50e6, "{j:#}");
    assert!(!j["verdict"]["declared_cap"].is_null(), "{j:#}");
    let notes = j["notes"].to_string();
    assert!(
        notes.contains("declared cap 1,000 IOPS, 50 MB/s from the device's profile")
            && notes.contains(pd),
        "{notes}"
    );

    // The command line's figure wins; the profile fills the other.
    let j = short_sweep(&dev, &["--profile-dir", pd, "--cap-iops", "2000"]);
    assert_eq!(j["declared_cap"]["iops"], 2000.0);
    assert_eq!(j["declared_cap"]["bytes_per_s"], 50e6);
    let notes = j["notes"].to_string();
    assert!(
        notes.contains("declared cap 50 MB/s from the device's profile"),
        "{notes}"
    );
}
