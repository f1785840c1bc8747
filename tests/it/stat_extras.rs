//! `iosat stat` and `iosat info` with device profiles (`iosat sweep --save-profile`):
//! saturation ratios on a hand-made recording (hand-computed) and on a live loop device.

use super::stat::{close, dev, direct_io, wait_for_first_sample};
use crate::util::run;
use crate::util::{fixture, iosat, json_lines, stderr, stdout, LoopDev};
use serde_json::Value;
use std::io::Read;
use std::path::Path;
use std::process::Stdio;

/// A profile as `iosat sweep --save-profile` writes it (the fields stat reads, plus some).
pub(crate) fn write_profile(dir: &Path, id: &str, baseline_ns: f64, knee: u32, max_iops: f64) {
    let json = serde_json::json!({
        "schema_version": 1,
        "kind": "sweep",
        "workload": {"engine": "sync", "pattern": "randread", "block_size": 4096},
        "levels": [],
        "verdict": {
            "baseline_concurrency": 1,
            "baseline_latency_ns": baseline_ns,
            "knee_concurrency": knee,
            "max_useful_iops": max_iops
        },
        "complete": true
    });
    std::fs::write(
        dir.join(format!("{id}.json")),
        serde_json::to_string_pretty(&json).unwrap(),
    )
    .unwrap();
}

#[test]
fn recorded_pair_judged_against_its_profile() {
    let pd = crate::util::tempdir().unwrap();
    write_profile(pd.path(), "eui.0025385b71b0a1f2", 250_000.0, 4, 5000.0);
    let rec = fixture("stat/profiled.rec");
    let rec = rec.to_str().unwrap();
    let pdir = pd.path().to_str().unwrap();
    let o = run(&["stat", "--replay", rec, "--json", "--profile-dir", pdir]);
    assert!(o.status.success(), "{}", stderr(&o));
    let reps = json_lines(&stdout(&o));
    // nvme0n1 over 2.005 s (see stat.rs): +2005 reads in 1002 ms, +4010 writes in 8020 ms,
    // weighted +9824 ms. Profile: baseline 0.25 ms, knee 4, max useful 5000 IOPS.
    let p = &dev(&reps[0], "nvme0n1")["profile"];
    assert_eq!(p["id"], "eui.0025385b71b0a1f2");
    assert_eq!(p["baseline_latency_ns"], 250_000.0);
    assert_eq!(p["knee_concurrency"], 4);
    assert_eq!(p["max_useful_iops"], 5000.0);
    assert_eq!(p["baseline_pattern"], "randread");
    assert_eq!(p["baseline_block_size"], 4096);
    close(&p["saturation_r"], 1002.0 / 2005.0 / 0.25);
    close(&p["saturation_w"], 8020.0 / 4010.0 / 0.25);
    // Request-weighted await: (1002 + 8020) ms / (2005 + 4010) requests.
    close(&p["saturation"], 9022.0 / 6015.0 / 0.25);
    close(&p["load_vs_knee"], 9824.0 / 2005.0 / 4.0);
    // 6x the baseline is overloaded (analysis::state): no headroom, though 3000 IOPS is below
    // the profile's 5000 (the one headroom: none once past the target).
    close(&p["headroom_iops"], 0.0);
    // No profile file for dm-0's id, none at all for md0: no `profile` key.
    assert!(dev(&reps[0], "vg0-root").get("profile").is_none());
    assert!(dev(&reps[0], "md0").get("profile").is_none());
    // Second run: 500 reads in 250 ms over 1 s, no writes.
    let p = &dev(&reps[1], "nvme0n1")["profile"];
    close(&p["saturation_r"], 2.0);
    assert!(p["saturation_w"].is_null());
    // 2x is saturated: no headroom either (analysis::state), and the judgement says why.
    close(&p["headroom_iops"], 0.0);
    let j = &dev(&reps[1], "nvme0n1")["judgement"];
    assert_eq!(j["state"], "saturated");
    assert_eq!(j["basis"], "swept");
    assert_eq!(j["no_headroom"], "saturated");
    close(&j["ratio"], 2.0);
    close(&j["headroom_iops"], 0.0);

    // Text: the judgement's state and headroom replace r_conc/w_conc/%util, still 80
    // columns: the worst direction, writes at 8x the (legacy, so read-and-write) profile's
    // baseline with 5.4 in flight while busy: overloaded, no headroom.
    let o = run(&["stat", "--replay", rec, "--profile-dir", pdir]);
    let text = stdout(&o);
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "{l}");
    }
    let header = text.lines().find(|l| l.starts_with("Device")).unwrap();
    assert!(header.ends_with("      state    +IOPS"), "{header}");
    let row = text.lines().find(|l| l.starts_with("nvme0n1")).unwrap();
    assert!(row.ends_with(" overloaded        0"), "{row}");
    let j = &dev(&reps[0], "nvme0n1")["judgement"];
    assert_eq!(
        (&j["state"], &j["direction"]),
        (&"overloaded".into(), &"write".into())
    );
    close(&j["ratio"], 8.0);
    // --wide adds every ratio; --no-profile drops them all.
    let o = run(&["stat", "--replay", rec, "--profile-dir", pdir, "--wide"]);
    let wide = stdout(&o);
    let header = wide.lines().find(|l| l.starts_with("Device")).unwrap();
    assert!(
        header.contains("sat_r") && header.contains("headroom"),
        "{header}"
    );
    let o = run(&["stat", "--replay", rec, "--no-profile", "--json"]);
    assert!(!stdout(&o).contains("\"profile\""));
    let o = run(&["stat", "--replay", rec, "--no-profile"]);
    assert!(!stdout(&o).contains(" sat "));
    // CSV: the profile columns are always there, filled for nvme0n1.
    let o = run(&["stat", "--replay", rec, "--csv", "--profile-dir", pdir]);
    let csv = stdout(&o);
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let row: Vec<&str> = lines
        .find(|l| l.contains(",nvme0n1,"))
        .unwrap()
        .split(',')
        .collect();
    assert_eq!(head.len(), row.len());
    let col = |k: &str| row[head.iter().position(|h| *h == k).unwrap()];
    assert_eq!(col("profile_id"), "eui.0025385b71b0a1f2");
    assert_eq!(col("saturation_w"), "8");
}

#[test]
fn bad_profile_is_one_warning_and_a_missing_dir_a_usage_error() {
    let pd = crate::util::tempdir().unwrap();
    std::fs::write(
        pd.path().join("eui.0025385b71b0a1f2.json"),
        "{\"verdict\":{}}",
    )
    .unwrap();
    let rec = fixture("stat/profiled.rec");
    let o = run(&[
        "stat",
        "--replay",
        rec.to_str().unwrap(),
        "--json",
        "--profile-dir",
        pd.path().to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("eui.0025385b71b0a1f2.json:1: expected a positive number at verdict.baseline_latency_ns"),
        "{err}"
    );
    assert!(!stdout(&o).contains("\"profile\""));
    let o = run(&[
        "stat",
        "--replay",
        rec.to_str().unwrap(),
        "--profile-dir",
        "/nonexistent/profiles",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("'--profile-dir' is not a directory"));
}

/// The profile id stat records for a device (the `I` line), from a one-interval run.
fn recorded_id(name: &str, dir: &Path) -> String {
    let rec = dir.join("id.rec");
    let o = iosat()
        .args([
            "stat",
            name,
            "-i",
            "0.05",
            "-c",
            "1",
            "--no-profile",
            "--record",
        ])
        .arg(&rec)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&rec).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("I ") && l.split(' ').nth(2) == Some(name))
        .unwrap_or_else(|| panic!("no identity line for {name}:\n{text}"));
    line.split(' ').nth(3).unwrap().to_string()
}

#[test]
fn live_loop_device_with_a_profile_and_identical_replay() {
    let lo = LoopDev::new(16 << 20);
    let dir = crate::util::tempdir().unwrap();
    let pd = crate::util::tempdir().unwrap();
    let id = recorded_id(lo.name(), dir.path());
    // A 16 MiB loop device has no wwid, serial or model: the id is its name and size.
    assert_eq!(id, format!("{}-{}", lo.name(), 16 << 20));
    let (base_ns, knee, max_iops) = (20_000.0, 8, 40_000.0);
    write_profile(pd.path(), &id, base_ns, knee, max_iops);

    let rec = dir.path().join("live.rec");
    let mut child = iosat()
        .args(["stat", lo.name(), "-i", "0.3", "-c", "1000", "--json"])
        .args(["--profile-dir", pd.path().to_str().unwrap(), "--record"])
        .arg(&rec)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_first_sample(&rec);
    direct_io(&lo.path, 200, 100);
    let status = crate::stat::stop_after_next_sample(&mut child, &rec);
    let mut live = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut live)
        .unwrap();
    assert_eq!(status.code(), Some(130));
    let reps = json_lines(&live);
    let samples = std::fs::read_to_string(&rec)
        .unwrap()
        .matches("\nT ")
        .count();
    assert_eq!(reps.len(), samples - 1);
    let mut reads_seen = 0.0;
    for r in &reps {
        let d = dev(r, lo.name());
        let p = &d["profile"];
        assert_eq!(p["id"], Value::String(id.clone()));
        let base_ms = base_ns / 1e6;
        match d["r_await"].as_f64() {
            Some(a) => close(&p["saturation_r"], a / base_ms),
            None => assert!(p["saturation_r"].is_null()),
        }
        match d["w_await"].as_f64() {
            Some(a) => close(&p["saturation_w"], a / base_ms),
            None => assert!(p["saturation_w"].is_null()),
        }
        close(
            &p["load_vs_knee"],
            d["aqu-sz"].as_f64().unwrap() / f64::from(knee),
        );
        // The one headroom (monitor::judge), which the profile object prints too: the
        // device's worst direction's, the profile's ceiling less that direction's IOPS (the
        // old profile judges both), and none while saturated, overloaded or slow, whatever
        // its IOPS; a loop device on a busy machine can be one in any interval.
        // The read sweep's ceiling was measured beside no writes: the reads' room is the
        // ceiling less the writes beside them and less the reads, and not known beside more
        // writes than a tenth of it (analysis::state::ceiling_for_mix); the writes it
        // judges as an old profile, the ceiling less the writes.
        let j = &d["judgement"];
        assert_eq!(p["headroom_iops"], j["headroom_iops"], "{d}");
        let (r_s, w_s) = (d["r/s"].as_f64().unwrap(), d["w/s"].as_f64().unwrap());
        let room = match j["direction"].as_str() {
            Some("read") => (w_s <= 0.1 * max_iops).then_some(max_iops - w_s - r_s),
            _ => Some(max_iops - w_s),
        };
        if j["no_headroom"].is_string() {
            close(&j["headroom_iops"], 0.0);
        } else {
            match room {
                Some(room) => close(&j["headroom_iops"], room.max(0.0)),
                None => assert!(j["headroom_iops"].is_null(), "{d}"),
            }
        }
        reads_seen += d["r/s"].as_f64().unwrap() * r["interval_s"].as_f64().unwrap();
    }
    assert_eq!(reads_seen.round() as u64, 200);

    // The recording names the device's identity, so a replay finds the same profile.
    let o = run(&[
        "stat",
        lo.name(),
        "--json",
        "--profile-dir",
        pd.path().to_str().unwrap(),
        "--replay",
        rec.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), live);

    // info shows the profile.
    let o = run(&[
        "info",
        lo.name(),
        "--profile-dir",
        pd.path().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let want = format!(
        "profile       {id} (baseline 20.0 µs, knee 8, max useful 40000 IOPS; randread 4096 B)"
    );
    assert!(stdout(&o).contains(&want), "{}", stdout(&o));
}

// ---- iosat analyze on recordings and pt-diskstats/pt-stalk samples -----------------------

/// `iosat stat --replay FILE DEVICE --json`: the per-interval objects of one device.
fn replayed(file: &Path, device: &str) -> Vec<(f64, Value)> {
    let o = run(&["stat", "--replay", file.to_str().unwrap(), device, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    json_lines(&stdout(&o))
        .iter()
        .map(|r| (r["interval_s"].as_f64().unwrap(), dev(r, device).clone()))
        .collect()
}

fn analyze_json(args: &[&str]) -> Value {
    let o = iosat().arg("analyze").args(args).output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).unwrap()
}

/// analyze's series of `device` is the replay of `iosat stat` interval for interval, and the
/// I/O counted over it is the I/O that was done.
fn check_series_against_replay(file: &Path, device: &str, reads: u64, writes: u64) -> Value {
    let a = analyze_json(&[file.to_str().unwrap(), "--device", device, "--json"]);
    assert_eq!(a["devices"].as_array().unwrap().len(), 1, "{a}");
    let d = &a["devices"][0];
    assert_eq!(d["device"], device);
    let samples = d["samples"].as_array().unwrap();
    let rep = replayed(file, device);
    assert_eq!(samples.len(), rep.len());
    let (mut r_total, mut w_total) = (0.0, 0.0);
    for (s, (dt, x)) in samples.iter().zip(&rep) {
        for k in [
            "r/s", "w/s", "rkB/s", "wkB/s", "r_await", "w_await", "aqu-sz", "util",
        ] {
            assert_eq!(s[k], x[k], "{k} at {}", s["time"]);
        }
        r_total += s["r/s"].as_f64().unwrap() * dt;
        w_total += s["w/s"].as_f64().unwrap() * dt;
    }
    assert_eq!(r_total.round() as u64, reads, "reads counted");
    assert_eq!(w_total.round() as u64, writes, "writes counted");
    assert!(
        d["diagnosis"][0].as_str().unwrap().starts_with(device),
        "{}",
        d["diagnosis"]
    );
    a
}

#[test]
fn analyze_golden_recording_and_pt_stalk_file_from_dd_on_a_loop_device() {
    // Both files watched the same dd load on loop1 (tests/fixtures/import/README.md):
    // 4000 writes, then 4000 + 4 × 2000 reads, all 4 KiB O_DIRECT.
    for (f, tool) in [
        ("import/iosat-loop.rec", "iosat"),
        ("import/pt-stalk-loop.diskstats", "pt-diskstats"),
    ] {
        let a = check_series_against_replay(&fixture(f), "loop1", 12_000, 4000);
        assert_eq!(a["source"]["tool"], tool);
        assert_eq!(a["source"]["files"][0]["tool"], tool);
        // 4 KiB requests: rkB/s is 4 × r/s in every interval.
        for s in a["devices"][0]["samples"].as_array().unwrap() {
            close(&s["rkB/s"], 4.0 * s["r/s"].as_f64().unwrap());
        }
    }
    // By default the report shows what `iosat stat` shows: the disk, not the loop devices.
    let a = analyze_json(&[fixture("import/iosat-loop.rec").to_str().unwrap(), "--json"]);
    let devs: Vec<&str> = a["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["device"].as_str().unwrap())
        .collect();
    assert_eq!(devs, ["vda"]);
    // Without sysfs facts, zram0 is hidden by its name, loop1 by its major.
    let a = analyze_json(&[
        fixture("import/pt-stalk-loop.diskstats").to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(a["devices"].as_array().unwrap().len(), 1);
    assert_eq!(a["devices"][0]["device"], "vda");
}

#[test]
fn analyze_text_of_a_recording() {
    let o = iosat()
        .current_dir(fixture("import"))
        .args(["analyze", "iosat-loop.rec", "--device", "loop1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    insta::assert_snapshot!("analyze_iosat_recording", stdout(&o));
}

/// /proc/diskstats as pt-stalk writes it: `TS <epoch.ns> <date>` then the file verbatim.
fn pt_sample(out: &mut String) -> f64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let stats = std::fs::read_to_string("/proc/diskstats").unwrap();
    out.push_str(&format!(
        "TS {}.{:09} 2026-01-01 00:00:00\n{stats}",
        now.as_secs(),
        now.subsec_nanos()
    ));
    now.as_secs_f64()
}

#[test]
fn analyze_pt_samples_taken_now_and_a_live_recording() {
    let lo = LoopDev::new(16 << 20);
    let dir = crate::util::tempdir().unwrap();
    // pt-stalk style samples around known O_DIRECT I/O.
    let mut pt = String::new();
    pt_sample(&mut pt);
    direct_io(&lo.path, 120, 40);
    pt_sample(&mut pt);
    direct_io(&lo.path, 30, 0);
    pt_sample(&mut pt);
    let f = dir.path().join("pt.diskstats");
    std::fs::write(&f, &pt).unwrap();
    check_series_against_replay(&f, lo.name(), 150, 40);

    // A live iosat recording of the same kind of load.
    let rec = dir.path().join("live.rec");
    let mut child = iosat()
        .args([
            "stat",
            lo.name(),
            "-i",
            "0.3",
            "-c",
            "1000",
            "--no-profile",
            "--record",
        ])
        .arg(&rec)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_first_sample(&rec);
    direct_io(&lo.path, 90, 25);
    let status = crate::stat::stop_after_next_sample(&mut child, &rec);
    assert_eq!(status.code(), Some(130));
    check_series_against_replay(&rec, lo.name(), 90, 25);
}

#[test]
fn analyze_truncated_or_foreign_samples_is_one_line_with_file_and_line() {
    let dir = crate::util::tempdir().unwrap();
    // Cut in the middle of a diskstats line: the cut line is skipped with a warning naming
    // it (issue 28 item 5: one partial line no longer refuses a whole recording), and what is
    // left here is one sample: one error line naming the file and line.
    let p = dir.path().join("cut.diskstats");
    std::fs::write(
        &p,
        "TS 100.0 x\n 8 0 sda 10 0 80 20 10 0 80 40 0 50 60\nTS 101.0 x\n 8 0 sda 20 0 9",
    )
    .unwrap();
    let o = iosat().arg("analyze").arg(&p).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    let lines: Vec<&str> = e.lines().collect();
    assert_eq!(lines.len(), 2, "{e}");
    assert!(
        lines[0].contains("cut.diskstats:4: the last line has no newline"),
        "{e}"
    );
    assert!(lines[1].contains("cut.diskstats:3: 1 usable sample"), "{e}");
    let cases = [
        // A single sample gives no interval.
        (
            "one.diskstats",
            "TS 100.0 x\n 8 0 sda 10 0 80 20 10 0 80 40 0 50 60\n",
            "one.diskstats:2: 1 usable sample: expected at least two samples",
        ),
        // A recording with something else in it.
        (
            "mixed.rec",
            "#iosat-record 1\nT 1 2\n 8 0 sda 1 0 8 1 0 0 0 0 0 1 1\nhello there\n",
            "mixed.rec:4: not a recording line (unknown marker 'hello')",
        ),
    ];
    for (name, text, want) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        let o = iosat()
            .current_dir(dir.path())
            .args(["analyze", name])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{name}");
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.starts_with(&format!("iosat: {want}")), "{e}");
    }
}

#[test]
fn readme_recording_example_is_what_the_binary_prints() {
    // The example's reference page (the README is a front door since issue 24).
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/analyze.md"))
            .unwrap();
    let cmd = "$ iosat analyze iosat-loop.rec --device loop1\n";
    let start = readme
        .find(cmd)
        .expect("docs/analyze.md has the recording example")
        + cmd.len();
    let shown = &readme[start..start + readme[start..].find("```").unwrap()];
    let o = iosat()
        .current_dir(fixture("import"))
        .args(["analyze", "iosat-loop.rec", "--device", "loop1"])
        .output()
        .unwrap();
    assert_eq!(shown, stdout(&o));
}

#[test]
fn legend_only_when_a_shown_device_has_a_profile() {
    let pd = crate::util::tempdir().unwrap();
    write_profile(pd.path(), "eui.0025385b71b0a1f2", 250_000.0, 4, 5000.0);
    let rec = fixture("stat/profiled.rec");
    let pdir = pd.path().to_str().unwrap();
    let o = run(&[
        "stat",
        "--replay",
        rec.to_str().unwrap(),
        "md0",
        "--profile-dir",
        pdir,
    ]);
    let text = stdout(&o);
    assert!(!text.contains("sat"), "{text}");
    // While learning, the judgement's columns; without it, r_conc/w_conc/%util.
    assert!(text.contains("state    +IOPS"), "{text}");
    let mut args = vec!["stat", "--replay", rec.to_str().unwrap(), "md0"];
    args.extend(["--profile-dir", pdir, "--no-learn"]);
    let text = stdout(&run(&args));
    assert!(!text.contains("sat"), "{text}");
    assert!(text.contains("r_conc w_conc"), "{text}");
}

#[test]
fn the_tables_columns_stay_the_same_when_a_baseline_is_learned() {
    // 60 one-second intervals of 200 reads of 4 KiB at 1 ms each (0.2 in flight): a baseline
    // is learned after 30 intervals and 3,000 requests, and the state changes from "learning"
    // to ok; the header, with the state and headroom, is the same from the first line
    // (issue 43: the table changed its columns when learning started).
    let dir = crate::util::tempdir().unwrap();
    let rec = dir.path().join("steady.rec");
    let mut text = String::from("#iosat-record 1\nR 1763783400000000000 1000000000\n");
    for s in 0..=60u64 {
        let (ios, ms) = (200 * s, 200 * s);
        text.push_str(&format!(
            "T {} {}\n   8       0 sda {ios} 0 {} {ms} 0 0 0 0 0 {ms} {ms} 0 0 0 0 0 0\n",
            1_000_000_000 * (s + 1),
            1_763_783_400_000_000_000 + 1_000_000_000 * s,
            ios * 8,
        ));
    }
    std::fs::write(&rec, text).unwrap();
    let out = stdout(&run(&["stat", "--replay", rec.to_str().unwrap()]));
    let headers: std::collections::BTreeSet<&str> =
        out.lines().filter(|l| l.starts_with("Device")).collect();
    assert_eq!(headers.len(), 1, "{out}");
    assert!(
        headers.iter().all(|h| h.ends_with("state    +IOPS")),
        "{out}"
    );
    let states: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("sda"))
        .map(|l| l.split_whitespace().nth(7).unwrap())
        .collect();
    assert_eq!(states.len(), 60, "{out}");
    assert_eq!(states[0], "learning", "{out}");
    // ok by the learned baseline (~), its ceiling not yet measured (*: at least).
    assert!(states[59].starts_with("ok~"), "{out}");
    let first_ok = states
        .iter()
        .position(|s| s.starts_with("ok~"))
        .expect("a baseline");
    assert!(states[..first_ok].iter().all(|s| *s == "learning"), "{out}");
}

#[test]
fn html_page_of_an_appended_recording_is_the_report_of_the_whole_file() {
    // The page is drawn from memory (monitor::series), starting from what earlier runs
    // recorded: it must be the bytes `iosat report` draws from the file.
    let dir = crate::util::tempdir().unwrap();
    let rec = dir.path().join("r.rec");
    let page = dir.path().join("p.html");
    let first = iosat()
        .args(["stat", "--all", "-i", "0.1", "-c", "2", "--record"])
        .arg(&rec)
        .output()
        .unwrap();
    assert!(first.status.success(), "{}", stderr(&first));
    let second = iosat()
        .args(["stat", "--all", "-i", "0.1", "-c", "3", "--record"])
        .arg(&rec)
        .arg("--html")
        .arg(&page)
        .output()
        .unwrap();
    assert!(second.status.success(), "{}", stderr(&second));
    let text = std::fs::read_to_string(&rec).unwrap();
    assert_eq!(text.lines().filter(|l| l.starts_with("R ")).count(), 2);
    let full = iosat().arg("report").arg(&rec).output().unwrap();
    assert!(full.status.success(), "{}", stderr(&full));
    assert_eq!(std::fs::read(&page).unwrap(), full.stdout);
}

/// A profile file as this version saves it: `<id>.read.json` or `<id>.write.json`.
fn write_direction_profile(dir: &Path, id: &str, pattern: &str, baseline_ns: f64, bs: u64) {
    let json = serde_json::json!({
        "schema_version": 1,
        "kind": "sweep",
        "workload": {"engine": "sync", "pattern": pattern, "block_size": bs},
        "levels": [],
        "verdict": {
            "baseline_concurrency": 1,
            "baseline_latency_ns": baseline_ns,
            "knee_concurrency": 4,
            "max_useful_iops": 5000.0
        },
        "complete": true
    });
    let dir_name = if pattern.contains("write") {
        "write"
    } else {
        "read"
    };
    std::fs::write(
        dir.join(format!("{id}.{dir_name}.json")),
        serde_json::to_string_pretty(&json).unwrap(),
    )
    .unwrap();
}

#[test]
fn reads_and_writes_are_judged_against_their_own_profiles() {
    let id = "eui.0025385b71b0a1f2";
    let pd = crate::util::tempdir().unwrap();
    let pdir = pd.path().to_str().unwrap();
    let rec = fixture("stat/profiled.rec");
    let rec = rec.to_str().unwrap();
    // A read profile only: writes are not divided by the read baseline.
    write_direction_profile(pd.path(), id, "randread", 250_000.0, 8192);
    let o = run(&["stat", "--replay", rec, "--json", "--profile-dir", pdir]);
    assert!(o.status.success(), "{}", stderr(&o));
    let reps = json_lines(&stdout(&o));
    let p = &dev(&reps[0], "nvme0n1")["profile"];
    close(&p["saturation_r"], 1002.0 / 2005.0 / 0.25);
    assert!(p["saturation_w"].is_null(), "{p}");
    // The sat column is the reads' ratio alone.
    close(&p["saturation"], 1002.0 / 2005.0 / 0.25);
    assert_eq!(p["notes"][0], "no write profile: writes are not judged");
    let text = stdout(&run(&["stat", "--replay", rec, "--profile-dir", pdir]));
    assert!(
        text.contains("# nvme0n1: no write profile: writes are not judged"),
        "{text}"
    );
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "{l}");
    }
    // A write profile beside it (2 ms writes of 20 KiB): writes judged against it.
    write_direction_profile(pd.path(), id, "randwrite", 2_000_000.0, 20480);
    let reps = json_lines(&stdout(&run(&[
        "stat",
        "--replay",
        rec,
        "--json",
        "--profile-dir",
        pdir,
    ])));
    let p = &dev(&reps[0], "nvme0n1")["profile"];
    close(&p["saturation_w"], 8020.0 / 4010.0 / 2.0);
    assert_eq!(p["write_baseline_latency_ns"], 2_000_000.0);
    assert!(p.get("notes").is_none(), "{p}");
    // The read profile measured with 64 KiB requests: stat says these reads are unlike.
    write_direction_profile(pd.path(), id, "randread", 250_000.0, 65536);
    let text = stdout(&run(&["stat", "--replay", rec, "--profile-dir", pdir]));
    assert!(
        text.contains("# nvme0n1: read profile measured at 64 KiB, requests here 8 KiB"),
        "{text}"
    );
}

/// `info` of a mounted loop device shows its read-ahead and largest request as sysfs has them,
/// and the mount with its filesystem and options, in text and JSON.
#[test]
fn info_shows_read_ahead_max_request_and_the_mounts_filesystem() {
    if !crate::util::is_root() {
        crate::util::skip("info_shows_read_ahead_max_request_and_the_mounts_filesystem: root");
        return;
    }
    let mut lo = LoopDev::new(16 << 20);
    let node = lo.path.clone();
    let Some(mnt) = lo.mount(&node) else {
        crate::util::skip_lacking("info_shows_read_ahead…: mkfs.ext4/mount failed");
        return;
    };
    let queue = Path::new("/sys/block").join(lo.name()).join("queue");
    let ra: u64 = std::fs::read_to_string(queue.join("read_ahead_kb"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let ms: u64 = std::fs::read_to_string(queue.join("max_sectors_kb"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let o = run(&["info", lo.name()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains(&format!("read-ahead    {ra} KiB")), "{text}");
    assert!(text.contains(&format!("max request   {ms} KiB")), "{text}");
    let mounted = text
        .lines()
        .find(|l| l.trim_start().starts_with("mounted on"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        mounted.contains(&format!("{} (ext4)", mnt.display())),
        "{mounted}"
    );
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!("mount options {}: rw,", mnt.display())),
        "{text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    let o = run(&["info", lo.name(), "--json"]);
    let j: Value = serde_json::from_str(&stdout(&o)).unwrap();
    let d = &j["devices"][0];
    assert_eq!(d["read_ahead_kb"], ra, "{d}");
    assert_eq!(d["max_sectors_kb"], ms, "{d}");
    assert_eq!(d["mounts"][0]["fstype"], "ext4", "{d}");
    assert_eq!(d["mounts"][0]["point"], mnt.to_str().unwrap(), "{d}");
}
