//! `iosat stat` and `iosat info`: formulas on recorded samples (hand-computed), replay,
//! selection, bad input, and a live loop device driven with a known number of O_DIRECT I/Os.

use crate::util::{assert_refusals, fixture, iosat, json_lines, stderr, stdout, LoopDev};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::run;

pub(crate) fn dev<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["disk_device"] == name)
        .unwrap_or_else(|| panic!("{name} not in {report}"))
}

pub(crate) fn names(report: &Value) -> Vec<String> {
    report["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["disk_device"].as_str().unwrap().to_string())
        .collect()
}

#[track_caller]
pub(crate) fn close(v: &Value, want: f64) {
    let got = v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    assert!(
        (got - want).abs() <= (want.abs() * 1e-3).max(1e-9),
        "got {got}, want {want} (0.1 %)"
    );
}

#[test]
fn recorded_pair_matches_hand_computed_sysstat_formulas() {
    let rec = fixture("stat/pair.rec");
    let o = run(&["stat", "--replay", rec.to_str().unwrap(), "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let reports = json_lines(&stdout(&o));
    // Two runs in the file: no interval spans the gap between them.
    assert_eq!(reports.len(), 2);
    let r = &reports[0];
    assert_eq!(r["schema_version"], 2);
    close(&r["interval_s"], 2.005);
    assert_eq!(r["timestamp"], "2025-11-22T03:50:02.005Z");
    assert_eq!(r["start_timestamp"], "2025-11-22T03:50:00.000Z");
    // nvme0n1 over 2.005 s: +2005 reads (+401 merged, +32080 sectors, +1002 ms),
    // +4010 writes (+160400 sectors, +8020 ms), +401 flushes (+802 ms), io_ms +1804,
    // weighted +9824, 7 in flight. Worked out by hand:
    let n = dev(r, "nvme0n1");
    close(&n["r/s"], 1000.0);
    close(&n["w/s"], 2000.0);
    close(&n["d/s"], 0.0);
    close(&n["f/s"], 200.0);
    close(&n["rkB/s"], 8000.0);
    close(&n["wkB/s"], 40000.0);
    close(&n["dkB/s"], 0.0);
    close(&n["rrqm/s"], 200.0);
    close(&n["wrqm/s"], 0.0);
    close(&n["rrqm"], 16.6667);
    close(&n["wrqm"], 0.0);
    close(&n["r_await"], 0.49975);
    close(&n["w_await"], 2.0);
    close(&n["f_await"], 2.0);
    assert!(n["d_await"].is_null(), "no discards: await undefined");
    close(&n["rareq-sz"], 8.0);
    close(&n["wareq-sz"], 20.0);
    close(&n["aqu-sz"], 4.89975);
    close(&n["util"], 89.975);
    close(&n["read_concurrency"], 0.49975);
    close(&n["write_concurrency"], 4.0);
    close(&n["flush_concurrency"], 0.4);
    assert_eq!(n["in_flight"], 7);
    assert_eq!(n["kind"], "disk");
    // md doesn't account time: await is 0 ms for 401 reads (not undefined).
    let md = dev(r, "md0");
    close(&md["r/s"], 200.0);
    close(&md["r_await"], 0.0);
    // dm-0's read counter went backwards: no value, not a spike or zero.
    let dm = dev(r, "vg0-root");
    assert!(dm["r/s"].is_null());
    assert_eq!(dm["no_value"], "counter_went_backwards");
    assert_eq!(dm["kernel_name"], "dm-0");
    // sdb appeared in the second sample (and has no sysfs facts recorded).
    let sdb = dev(r, "sdb");
    assert_eq!(sdb["no_value"], "new_device");
    assert!(sdb["kind"].is_null());
    assert_eq!(names(r), ["nvme0n1", "vg0-root", "md0", "sdb"]);
    // Second run: 500 reads in 1 s.
    close(&reports[1]["interval_s"], 1.0);
    close(&dev(&reports[1], "nvme0n1")["r/s"], 500.0);
}

#[test]
fn selection_partitions_all_names_globs() {
    let rec = fixture("stat/pair.rec");
    let rec = rec.to_str().unwrap();
    let sel = |extra: &[&str]| {
        let mut a = vec!["stat", "--replay", rec, "--json", "-c", "1"];
        a.extend_from_slice(extra);
        let o = run(&a);
        assert!(o.status.success(), "{}", stderr(&o));
        let r = json_lines(&stdout(&o));
        assert_eq!(r.len(), 1, "-c 1 gives one report");
        names(&r[0])
    };
    assert_eq!(
        sel(&["--partitions"]),
        ["nvme0n1", "nvme0n1p1", "vg0-root", "md0", "sdb"]
    );
    assert_eq!(
        sel(&["--all"]),
        [
            "nvme0n1",
            "nvme0n1p1",
            "vg0-root",
            "md0",
            "loop0",
            "zram0",
            "sdb"
        ]
    );
    assert_eq!(
        sel(&["/dev/mapper/vg0-root", "zram0"]),
        ["vg0-root", "zram0"]
    );
    assert_eq!(sel(&["dm-0"]), ["vg0-root"]);
    assert_eq!(sel(&["nvme*"]), ["nvme0n1"]);
    assert_eq!(sel(&["--partitions", "nvme*"]), ["nvme0n1", "nvme0n1p1"]);
}

#[test]
fn pt_stalk_samples_replay() {
    let f = fixture("stat/pt-stalk.diskstats");
    let o = run(&["stat", "--replay", f.to_str().unwrap(), "--json", "xvda"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = json_lines(&stdout(&o));
    assert_eq!(r.len(), 1);
    close(&r[0]["interval_s"], 1.25);
    let x = dev(&r[0], "xvda");
    // +250 reads, +2000 sectors, +1000 ms; +250 writes, +2000 sectors, +1250 ms;
    // io_ms +1000, weighted +2250, over 1.25 s.
    close(&x["r/s"], 200.0);
    close(&x["rkB/s"], 800.0);
    close(&x["r_await"], 4.0);
    close(&x["w/s"], 200.0);
    close(&x["w_await"], 5.0);
    close(&x["util"], 80.0);
    close(&x["aqu-sz"], 1.8);
    // A 14-field kernel: no discard or flush columns.
    assert!(x["d/s"].is_null() && x["f_await"].is_null());
    // No sysfs facts in such a file: xvda1 is told from xvda by its name (a documented
    // fallback), so the default shows the disk only, --partitions both, loop0 neither.
    let o = run(&["stat", "--replay", f.to_str().unwrap(), "--json"]);
    assert_eq!(names(&json_lines(&stdout(&o))[0]), ["xvda"]);
    let o = run(&[
        "stat",
        "--replay",
        f.to_str().unwrap(),
        "--json",
        "--partitions",
    ]);
    assert_eq!(names(&json_lines(&stdout(&o))[0]), ["xvda", "xvda1"]);
    let o = run(&["stat", "--replay", f.to_str().unwrap(), "--since-boot"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn replay_text_output() {
    let rec = fixture("stat/pair.rec");
    let o = run(&["stat", "--replay", rec.to_str().unwrap()]);
    assert!(o.status.success());
    let text = stdout(&o);
    for l in text.lines() {
        assert!(l.chars().count() <= 80, "wider than 80: {l}");
    }
    insta::assert_snapshot!("stat_replay_text", text);
    let o = run(&[
        "stat",
        "--replay",
        rec.to_str().unwrap(),
        "--csv",
        "-c",
        "1",
    ]);
    let csv = stdout(&o);
    let header = csv.lines().next().unwrap();
    assert!(header.contains(",r/s,w/s,d/s,f/s,rkB/s,"), "{header}");
    assert_eq!(csv.lines().count(), 5, "{csv}");
}

#[test]
fn bad_inputs_give_one_line_and_exit_2() {
    let rec = fixture("stat/pair.rec");
    let rec = rec.to_str().unwrap();
    let dir = crate::util::tempdir().unwrap();
    let bad = dir.path().join("bad.rec");
    std::fs::write(
        &bad,
        "#iosat-record 1\nT 1 2\n 8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n 8 0 sda 1 2 x 4 5 6 7 8 9 10 11\n",
    )
    .unwrap();
    let bad_line = format!("{}:4: bad diskstats line", bad.display());
    // A device the recording lacks is missing from the recording, not from the machine.
    let not_recorded = format!("the device 'sdz' matches no device in the recording {rec} (");
    assert_refusals(&[
        (
            &["stat", "-i", "abc"],
            2,
            "'-i' must be a number of seconds",
        ),
        (&["stat", "-i", "0"], 2, "(got '0')"),
        (&["stat", "-c", "0"], 2, "'-c'"),
        (&["stat", "--replay", rec, "sdz"], 2, &not_recorded),
        (&["stat", "-c", "1", "nosuchdisk9"], 2, "'nosuchdisk9'"),
        (&["info", "nosuchdisk9"], 2, "'nosuchdisk9'"),
        (&["stat", "--replay", bad.to_str().unwrap()], 2, &bad_line),
    ]);
    let o = run(&["stat", "--replay", "/nonexistent/rec"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    // The flag and the file.
    assert!(err.contains("--replay /nonexistent/rec"), "{err}");
    // One line, the OS reason said once (not repeated by the error chain).
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

#[test]
fn fractional_interval_on_a_fixture_root() {
    let root = fixture("sysroot1");
    let o = run(&[
        "stat",
        "-i",
        "0.5",
        "-c",
        "2",
        "--json",
        "--proc-root",
        root.join("proc").to_str().unwrap(),
        "--sys-root",
        root.join("sys").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r = json_lines(&stdout(&o));
    assert_eq!(r.len(), 2);
    // Reads are scheduled on deadlines 0.5 s apart from the first read (no drift), so the
    // measured intervals add up to at least 1 s, whatever each one measured.
    let sum: f64 = r.iter().map(|x| x["interval_s"].as_f64().unwrap()).sum();
    assert!(sum >= 1.0, "{sum}");
    for rep in &r {
        assert_eq!(names(rep), ["nvme0n1", "sda", "md0", "vg0-root"]);
        close(&dev(rep, "sda")["r/s"], 0.0);
    }
}

#[test]
fn broken_pipe_exits_0() {
    let mut child = iosat()
        .args(["stat", "-i", "0.02", "--all", "--no-bpf"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    drop(out);
    let status = wait_bounded(&mut child, Duration::from_secs(10));
    assert_eq!(status.code(), Some(0));
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(err.is_empty(), "{err}");
}

#[test]
fn help_explains_util() {
    let o = run(&["stat", "--help"]);
    let h = stdout(&o);
    assert!(h.contains("at least one request was in"), "{h}");
    assert!(h.contains("NVMe, SSD, RAID"), "{h}");
    assert!(h.contains("--since-boot"));
}

#[test]
fn info_on_fixture_tree() {
    let root = fixture("sysroot1");
    let p = root.join("proc");
    let s = root.join("sys");
    let args = |extra: &[&str]| {
        let mut a = vec![
            "info",
            "--proc-root",
            p.to_str().unwrap(),
            "--sys-root",
            s.to_str().unwrap(),
        ];
        a.extend_from_slice(extra);
        run(&a)
    };
    let o = args(&["--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["kernel"], "5.15.0-91-generic");
    let devs = v["devices"].as_array().unwrap();
    let names: Vec<&str> = devs.iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["nvme0n1", "sda", "md0", "dm-0"]);
    let nv = &devs[0];
    assert_eq!(nv["model"], "Samsung SSD 970 EVO Plus 1TB");
    assert_eq!(nv["scheduler"], "none");
    assert_eq!(nv["hw_queues"], 4);
    assert_eq!(nv["hw_queue_tags"], 1023);
    assert_eq!(
        nv["partitions"],
        serde_json::json!(["nvme0n1p1", "nvme0n1p2"])
    );
    assert_eq!(nv["mountpoints"], serde_json::json!(["/boot/efi"]));
    let notes = nv["notes"].to_string();
    assert!(notes.contains("5.0-6.9"), "{notes}");
    let sda = &devs[1];
    assert_eq!(sda["queue_depth"], 32);
    assert_eq!(sda["write_cache"], "write back");
    assert_eq!(sda["fua"], true);
    let md = &devs[2];
    assert_eq!(md["md_level"], "raid1");
    assert_eq!(md["members"], serde_json::json!(["sda2"]));
    assert_eq!(md["mountpoints"], serde_json::json!(["/srv/my data"]));
    let dm = &devs[3];
    assert_eq!(dm["display_name"], "vg0-root");
    assert_eq!(dm["dm_target"], "LVM");
    assert_eq!(dm["members"], serde_json::json!(["nvme0n1p2"]));
    let o = args(&["--all", "loop0"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("backing file  /var/lib/snapd/snaps/core_1.snap"));
    let o = args(&[]);
    insta::assert_snapshot!("info_fixture_text", stdout(&o));
    // One document, two writers: every note of the JSON result is said in the text and in
    // the Markdown (wrapping aside), under its device's heading.
    let flat = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let md = stdout(&args(&["--markdown"]));
    assert!(md.starts_with("# iosat info\n"), "{md}");
    assert!(md.contains("\n## md0  9:0  md\n"), "{md}");
    let (text, md) = (flat(&stdout(&o)), flat(&md));
    for d in devs {
        for n in d["notes"].as_array().unwrap() {
            let n = flat(n.as_str().unwrap());
            assert!(text.contains(&format!("note: {n}")), "text lacks {n}");
            assert!(md.contains(&format!("- note: {n}")), "Markdown lacks {n}");
        }
    }
}

// ---- live devices ----------------------------------------------------------------------

pub(crate) fn wait_bounded(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("process did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// 4 KiB O_DIRECT reads and writes, one at a time (no merging), at distinct offsets.
pub(crate) fn direct_io(dev: &str, reads: u64, writes: u64) {
    direct_io_within(dev, reads, writes, Duration::MAX);
}

/// Like `direct_io`'s reads, but ending after `limit` even if fewer than `reads` are done, so
/// that they lie inside an interval of `stat` however slow the machine is. The reads done.
pub(crate) fn direct_reads_within(dev: &str, reads: u64, limit: Duration) -> u64 {
    direct_io_within(dev, reads, 0, limit)
}

/// The writes, then the reads until `limit` has passed; the reads done.
fn direct_io_within(dev: &str, reads: u64, writes: u64, limit: Duration) -> u64 {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(writes > 0)
        .custom_flags(libc::O_DIRECT)
        .open(dev)
        .unwrap();
    let mut raw = vec![0xa5u8; 4096 * 2];
    let off = raw.as_ptr().align_offset(4096);
    let buf = &mut raw[off..off + 4096];
    for i in 0..writes {
        f.write_at(buf, i * 4096).unwrap();
    }
    let t0 = Instant::now();
    let mut done = 0;
    while done < reads && t0.elapsed() < limit {
        f.read_at(buf, (done % 512) * 4096 + 2 * 1024 * 1024)
            .unwrap();
        done += 1;
    }
    done
}

pub(crate) fn wait_for_first_sample(rec: &Path) {
    let t0 = Instant::now();
    while !std::fs::read_to_string(rec).is_ok_and(|s| s.contains("\nT ")) {
        assert!(t0.elapsed() < Duration::from_secs(10), "no sample recorded");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Ends a `stat --record` run (started with a count it will not reach) once the recording
/// holds a sample taken after the caller's I/O finished, by SIGINT as Ctrl-C would: the
/// recording ends on a whole sample. However busy the machine, the I/O then lies inside the
/// sampled window (a fixed `-c` ended before it on a loaded machine). The exit status.
pub(crate) fn stop_after_next_sample(child: &mut Child, rec: &Path) -> std::process::ExitStatus {
    let samples = || {
        std::fs::read_to_string(rec)
            .map(|s| s.matches("\nT ").count())
            .unwrap_or(0)
    };
    let n = samples();
    let t0 = Instant::now();
    while samples() <= n {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no sample recorded after the I/O"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // SAFETY: kill(2) on the child this test spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    wait_bounded(child, Duration::from_secs(30))
}

#[test]
fn live_loop_device_counts_exactly_and_replay_is_byte_identical() {
    let lo = LoopDev::new(16 << 20);
    let dir = crate::util::tempdir().unwrap();
    let rec = dir.path().join("live.rec");
    let (reads, writes) = (300u64, 120u64);
    let child = iosat()
        .args([
            "stat",
            lo.name(),
            "-i",
            "0.4",
            "-c",
            "1000",
            "--json",
            "--record",
        ])
        .arg(&rec)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = child;
    wait_for_first_sample(&rec);
    direct_io(&lo.path, reads, writes);
    let status = stop_after_next_sample(&mut child, &rec);
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
    assert_eq!(
        reps.len(),
        samples - 1,
        "an interval between each two samples"
    );
    let total = |key: &str| -> f64 {
        reps.iter()
            .map(|r| dev(r, lo.name())[key].as_f64().unwrap() * r["interval_s"].as_f64().unwrap())
            .sum()
    };
    assert_eq!(total("r/s").round() as u64, reads);
    assert_eq!(total("w/s").round() as u64, writes);
    assert_eq!(total("rkB/s").round() as u64, reads * 4);
    assert_eq!(total("wkB/s").round() as u64, writes * 4);
    assert!((total("r/s") - reads as f64).abs() < 1e-6);

    // Replaying the recording prints the same bytes.
    let o = run(&[
        "stat",
        lo.name(),
        "--json",
        "--replay",
        rec.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), live);
}

#[test]
fn live_text_run_replays_byte_identical_with_since_boot() {
    let lo = LoopDev::new(4 << 20);
    let dir = crate::util::tempdir().unwrap();
    let rec = dir.path().join("t.rec");
    let o = run(&[
        "stat",
        "--all",
        "--since-boot",
        "-i",
        "0.1",
        "-c",
        "3",
        "--record",
        rec.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("since boot"));
    assert!(stdout(&o).contains(lo.name()));
    let r = run(&[
        "stat",
        "--all",
        "--since-boot",
        "--replay",
        rec.to_str().unwrap(),
    ]);
    assert_eq!(stdout(&r), stdout(&o));
    // Appending a second run to the same file keeps both; the header appears once.
    let o2 = run(&[
        "stat",
        "-c",
        "1",
        "-i",
        "0.1",
        "--record",
        rec.to_str().unwrap(),
    ]);
    assert!(o2.status.success());
    let text = std::fs::read_to_string(&rec).unwrap();
    assert_eq!(text.matches("#iosat-record 1").count(), 1);
    assert_eq!(text.lines().filter(|l| l.starts_with("R ")).count(), 2);
}

/// iostat's JSON reports for one device.
fn iostat_reports(json: &str, name: &str) -> Vec<Value> {
    let v: Value = serde_json::from_str(json).unwrap();
    v["sysstat"]["hosts"][0]["statistics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| {
            s["disk"]
                .as_array()?
                .iter()
                .find(|d| d["disk_device"] == name)
                .cloned()
        })
        .collect()
}

#[test]
fn agrees_with_iostat_on_the_same_fio_load() {
    let lo = LoopDev::new(64 << 20);
    // A steady, rate-limited load so that two tools sampling at slightly different moments
    // must see the same rates.
    let fio = Command::new("fio")
        .args([
            "--name=xcheck",
            // One process: killing it ends the job (a forked job would run on, orphaned,
            // holding the loop device open past its teardown).
            "--thread",
            "--ioengine=psync",
            "--direct=1",
            "--rw=randrw",
            "--rwmixread=70",
            "--bs=4k",
            "--rate_iops=700,300",
            "--time_based",
            // Until both tools are done, killed then: a fixed runtime could end inside
            // iostat's window when a busy machine starts iostat late.
            "--runtime=120",
        ])
        .arg(format!("--filename={}", lo.path))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let fio = crate::util::KillOnDrop(fio);
    std::thread::sleep(Duration::from_millis(700));
    let iostat = Command::new("iostat")
        .args(["-x", "-d", "-y", "-o", "JSON", lo.name(), "1", "3"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let ours = run(&["stat", lo.name(), "-i", "1", "-c", "3", "--json"]);
    let theirs = iostat.wait_with_output().unwrap();
    drop(fio);
    assert!(ours.status.success() && theirs.status.success());
    let ours: Vec<Value> = json_lines(&stdout(&ours))
        .iter()
        .map(|r| dev(r, lo.name()).clone())
        .collect();
    let theirs = iostat_reports(&String::from_utf8(theirs.stdout).unwrap(), lo.name());
    assert_eq!((ours.len(), theirs.len()), (3, 3));
    let mean = |v: &[Value], k: &str| v.iter().map(|d| d[k].as_f64().unwrap()).sum::<f64>() / 3.0;
    for k in ["r/s", "w/s", "rkB/s", "wkB/s"] {
        let (a, b) = (mean(&ours, k), mean(&theirs, k));
        assert!(b > 50.0, "{k}: iostat saw almost no load ({b})");
        assert!(
            (a - b).abs() <= 0.1 * b,
            "{k}: iosat {a:.1} vs iostat {b:.1} differ by more than 10 %"
        );
    }
}

#[test]
fn fourteen_field_kernel_and_one_warning_per_malformed_line() {
    // A 4.14-era file (14 fields), with one old-style 7-field partition line, read live
    // three times through --proc-root; no sysfs, so loop0 (major 7) stays hidden and the
    // partitions are told by their names (the fallback when sysfs says nothing).
    let p = fixture("k414/proc");
    let o = run(&[
        "stat",
        "-i",
        "0.05",
        "-c",
        "3",
        "--json",
        "--proc-root",
        p.to_str().unwrap(),
        "--sys-root",
        "/nonexistent-sysfs",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "one warning, not one per sample: {e}");
    assert!(e.contains("diskstats line 4") && e.contains("sda3"), "{e}");
    let r = json_lines(&stdout(&o));
    assert_eq!(r.len(), 3);
    assert_eq!(names(&r[0]), ["sda", "md0", "dm-0"]);
    let sda = dev(&r[0], "sda");
    close(&sda["r/s"], 0.0);
    assert!(sda["d/s"].is_null() && sda["f/s"].is_null() && sda["kind"].is_null());
}

#[test]
fn sys_api_on_a_live_loop_device() {
    use iosat::sys::device::{self, DevKind};
    use iosat::sys::Root;
    let lo = LoopDev::new(8 << 20);
    let root = Root::default();
    let d = device::blockdev_for_node(&root, Path::new(&lo.path)).unwrap();
    assert_eq!((d.major, d.name.as_str()), (7, lo.name()));
    assert_eq!(device::kind(&root, &d), Some(DevKind::Loop));
    let q = device::queue_info(&root, &d);
    assert_eq!(q.size_bytes, Some(8 << 20));
    assert!(q.logical_block_size.is_some());
    let x = device::extra(&root, &d);
    assert!(x.loop_backing_file.unwrap().ends_with("backing.img"));
    // The DiskSample collector sees the device, keyed by major:minor.
    let s = iosat::monitor::DiskSample::take(&root).unwrap();
    assert_eq!(s.find(d.major, d.minor).unwrap().name, lo.name());
    // A regular file is not a device node: usage error, exit code 2.
    let e = device::blockdev_for_node(&root, Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap_err();
    assert_eq!(e.exit_code(), 2);
}

#[test]
fn ctrl_c_ends_a_recording_whole_and_draws_the_page_from_all_of_it() {
    let dir = crate::util::tempdir().unwrap();
    let rec = dir.path().join("r.rec");
    let page = dir.path().join("p.html");
    let mut child = iosat()
        .args(["stat", "--all", "-i", "0.2", "--record"])
        .arg(&rec)
        .arg("--html")
        .arg(&page)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Stopped once five samples are on disk, however long a busy machine took to write them
    // (a fixed sleep counts the machine's speed, not iosat's samples).
    let samples = || {
        std::fs::read_to_string(&rec)
            .map(|t| t.lines().filter(|l| l.starts_with("T ")).count())
            .unwrap_or(0)
    };
    let t0 = Instant::now();
    while samples() < 5 {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "no 5 samples recorded"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: kill(2) on the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    // Without -c the run never ends by itself: ending at all is ending on the signal.
    let status = wait_bounded(&mut child, Duration::from_secs(30));
    assert_eq!(status.code(), Some(130));
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    // The last line says why it stopped; a warning before it (the block-latency coverage
    // under load, say) is not this test's business.
    assert_eq!(
        err.trim_end().lines().last(),
        Some("iosat: interrupted"),
        "{err}"
    );
    // The page is the report of the whole recording (not a redraw seconds old), and the
    // recording replays cleanly: it ended on a whole sample.
    let full = iosat().arg("report").arg(&rec).output().unwrap();
    assert!(
        full.status.success(),
        "{}",
        String::from_utf8_lossy(&full.stderr)
    );
    assert_eq!(std::fs::read(&page).unwrap(), full.stdout);
    let replay = iosat()
        .args(["stat", "--all", "--replay"])
        .arg(&rec)
        .output()
        .unwrap();
    assert!(replay.status.success());
    let intervals = String::from_utf8_lossy(&replay.stdout)
        .lines()
        .filter(|l| l.contains("interval "))
        .count();
    assert!(
        intervals >= 4,
        "{intervals} intervals from 5 samples or more"
    );
}

/// pt-stalk-loop.diskstats with an extra, later `TS` line at the top and the clock stepped
/// back one hour before its 5th sample (tests/fixtures/import/README.md): every interval but
/// the one across the step is the original's, to the value; each oddity warned once, by line.
#[test]
fn time_going_back_in_a_sample_file_starts_a_new_base() {
    let replay = |f: &str| {
        let o = run(&[
            "stat",
            "--replay",
            fixture(f).to_str().unwrap(),
            "--json",
            // What is learned depends on every interval before (one fewer here).
            "--no-learn",
            "loop1",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        (json_lines(&stdout(&o)), stderr(&o))
    };
    let (orig, e) = replay("import/pt-stalk-loop.diskstats");
    assert!(e.is_empty(), "{e}");
    let (step, e) = replay("import/pt-stalk-clock-step.diskstats");
    assert_eq!(orig.len(), 7);
    assert_eq!(step.len(), 6, "only the interval across the step is gone");
    for (s, o) in step.iter().zip(orig[..3].iter().chain(&orig[4..])) {
        assert_eq!(s["interval_s"], o["interval_s"]);
        assert_eq!(s["devices"], o["devices"]);
    }
    assert_eq!(e.lines().count(), 2, "{e}");
    assert!(e.contains("pt-stalk-clock-step.diskstats: line 1: a sample without /proc/diskstats lines, ignored"), "{e}");
    assert!(
        e.contains(
            "line 46: time goes back 3599.486 s from the sample before; a new base starts here"
        ),
        "{e}"
    );
}

/// A 2.6.18-era pt-diskstats file (hand-made, tests/fixtures/import/README.md): partitions
/// with 4 counters (7 fields), which iostat -x and pt-diskstats skip, are skipped with one
/// warning each; the whole disks get iostat -x's values, computed here by hand.
#[test]
fn pre_2_6_25_partition_lines_are_skipped_and_disks_reported() {
    let f = fixture("import/pt-diskstats-2.6.18.diskstats");
    let o = run(&[
        "stat",
        "--replay",
        f.to_str().unwrap(),
        "--json",
        "--partitions",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 2, "one warning per partition: {e}");
    assert!(
        e.contains("partition sda1 as kernels before 2.6.25 print it"),
        "{e}"
    );
    assert!(e.contains("partition sda2"), "{e}");
    let r = json_lines(&stdout(&o));
    assert_eq!(r.len(), 2);
    assert_eq!(names(&r[0]), ["sda", "sdb"]);
    // 2 s: +400 reads, +6400 sectors, +1600 ms, +40 merged; +200 writes, +3200 sectors,
    // +3000 ms, +40 merged; io +1200 ms, weighted +4600 ms.
    let a = dev(&r[0], "sda");
    close(&a["r/s"], 200.0);
    close(&a["rkB/s"], 1600.0);
    close(&a["rrqm/s"], 20.0);
    close(&a["r_await"], 4.0);
    close(&a["w/s"], 100.0);
    close(&a["wkB/s"], 800.0);
    close(&a["w_await"], 15.0);
    close(&a["aqu-sz"], 2.3);
    close(&a["util"], 60.0);
    // Then +200 reads (+800 ms), +400 writes (+4000 ms), io +1600, weighted +4800.
    let b = dev(&r[1], "sda");
    close(&b["r/s"], 100.0);
    close(&b["w/s"], 200.0);
    close(&b["w_await"], 10.0);
    close(&b["aqu-sz"], 2.4);
    close(&b["util"], 80.0);
}

/// `--since-boot` divides by the uptime of the root it reads (`<proc-root>/uptime`, 86400 s
/// in the fixture), as iostat divides by /proc/uptime, not by this machine's monotonic clock;
/// the recording keeps it (`U`), so the replay prints the same.
#[test]
fn since_boot_divides_by_the_uptime_of_the_proc_root() {
    let root = fixture("sysroot1");
    let dir = crate::util::tempdir().unwrap();
    let rec = dir.path().join("b.rec");
    let args = |extra: &[&str]| {
        let mut a = vec![
            "stat".to_string(),
            "--since-boot".into(),
            "--json".into(),
            "--sys-root".into(),
            root.join("sys").to_str().unwrap().into(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let live = iosat()
        .args(args(&[
            "-c",
            "1",
            "--proc-root",
            root.join("proc").to_str().unwrap(),
            "--record",
            rec.to_str().unwrap(),
        ]))
        .output()
        .unwrap();
    assert!(live.status.success(), "{}", stderr(&live));
    let r = json_lines(&stdout(&live));
    assert_eq!(r[0]["since_boot"], true);
    close(&r[0]["interval_s"], 86_400.0);
    // iostat's since-boot values: counters ÷ uptime (nvme0n1: 212458 reads, 14532810
    // sectors, io_ticks 416528 ms).
    let n = dev(&r[0], "nvme0n1");
    close(&n["r/s"], 212_458.0 / 86_400.0);
    close(&n["rkB/s"], 14_532_810.0 / 2.0 / 86_400.0);
    close(&n["util"], 416_528.0 / 86_400_000.0 * 100.0);
    let text = std::fs::read_to_string(&rec).unwrap();
    assert!(text.contains("\nU 86400000000000\nT "), "{text}");
    let replay = iosat()
        .args(args(&["--replay", rec.to_str().unwrap()]))
        .output()
        .unwrap();
    assert_eq!(stdout(&replay), stdout(&live));
    // A root without an uptime file: one line naming it, exit 1.
    std::fs::copy(root.join("proc/diskstats"), dir.path().join("diskstats")).unwrap();
    let o = iosat()
        .args(args(&[
            "-c",
            "1",
            "--proc-root",
            dir.path().to_str().unwrap(),
        ]))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(&format!("{}/uptime", dir.path().display())),
        "{}",
        stderr(&o)
    );
}

/// Issue 28 item 5: a recording whose last line was cut off (ENOSPC, a kill) and which holds a
/// line that is not UTF-8 is read by every command that replays — the good lines kept, each
/// skipped line named once — and a later --record removes the partial line before appending,
/// so the file stays readable.
#[test]
fn a_cut_off_recording_is_replayed_and_appended_to() {
    let dir = crate::util::tempdir().unwrap();
    let rec = dir.path().join("cut.rec");
    let whole = std::fs::read(fixture("report/loop.rec")).unwrap();
    let lines = whole.iter().filter(|&&b| b == b'\n').count();
    let mut bytes = whole.clone();
    // A comment with a byte that is not UTF-8 and the start of a sample cut off.
    bytes.extend_from_slice(b"# \xff\nT 17953338");
    std::fs::write(&rec, &bytes).unwrap();
    let r = rec.to_str().unwrap();
    let good = run(&["stat", "--all", "--no-profile", "--json", "--replay"]
        .iter()
        .copied()
        .chain([fixture("report/loop.rec").to_str().unwrap()])
        .collect::<Vec<_>>());
    let o = run(&["stat", "--all", "--no-profile", "--json", "--replay", r]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), stdout(&good));
    let err = stderr(&o);
    assert!(
        err.contains(&format!("cut.rec:{}: not UTF-8", lines + 1)),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "cut.rec:{}: the last line has no newline",
            lines + 2
        )),
        "{err}"
    );
    assert_eq!(err.lines().count(), 2, "{err}");
    // report and analyze read it through the same opener.
    let o = run(&["report", r, "--format", "markdown"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the last line has no newline"),
        "{}",
        stderr(&o)
    );
    let o = run(&["analyze", r, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("the last line has no newline"),
        "{}",
        stderr(&o)
    );
}

/// Issue 28 item 5: `stat --record` onto a recording whose last line has no newline removes
/// that partial line (with a warning) before appending: the next run's lines are whole lines.
#[test]
fn record_removes_a_partial_last_line_before_appending() {
    let dir = crate::util::tempdir().unwrap();
    let rec = dir.path().join("r.rec");
    let root = fixture("sysroot1");
    let record = || {
        iosat()
            .args([
                "stat",
                "--all",
                "--no-profile",
                "--json",
                "-i",
                "0.05",
                "-c",
                "1",
            ])
            .arg("--proc-root")
            .arg(root.join("proc"))
            .arg("--sys-root")
            .arg(root.join("sys"))
            .arg("--record")
            .arg(&rec)
            .output()
            .unwrap()
    };
    let o = record();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let first = std::fs::read_to_string(&rec).unwrap();
    std::fs::write(&rec, format!("{first}T 12345 6")).unwrap();
    let o = record();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("its last line was cut off"),
        "{}",
        stderr(&o)
    );
    let text = std::fs::read_to_string(&rec).unwrap();
    assert!(text.starts_with(&first), "{text}");
    assert!(!text.contains("T 12345 6"), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("R ")).count(), 2);
    let o = run(&[
        "stat",
        "--all",
        "--no-profile",
        "--replay",
        rec.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

/// Issue 24 item 5: a recording's `#host` line is the host --proc-root points at (its
/// `sys/kernel/hostname`), read through sys/, and appending checks against that same host.
#[test]
fn the_host_line_reads_the_hostname_under_proc_root() {
    let root = crate::util::tempdir().unwrap();
    let kernel = root.path().join("proc/sys/kernel");
    std::fs::create_dir_all(&kernel).unwrap();
    std::fs::create_dir_all(root.path().join("sys")).unwrap();
    std::fs::write(kernel.join("hostname"), "fixture-host-7\n").unwrap();
    std::fs::write(
        root.path().join("proc/diskstats"),
        "   8 0 sda 1 2 3 4 5 6 7 8 0 10 11 0 0 0 0 0 0\n",
    )
    .unwrap();
    let rec = root.path().join("r.rec");
    let record = |fixture_root: bool| {
        let mut c = iosat();
        c.args(["stat", "--all", "--no-profile", "-c", "1", "-i", "0.05"]);
        if fixture_root {
            c.arg("--proc-root")
                .arg(root.path().join("proc"))
                .arg("--sys-root")
                .arg(root.path().join("sys"));
        }
        c.arg("--record").arg(&rec).output().unwrap()
    };
    let o = record(true);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = std::fs::read_to_string(&rec).unwrap();
    assert_eq!(text.lines().nth(1), Some("#host fixture-host-7"), "{text}");
    assert_eq!(record(true).status.code(), Some(0));
    // This machine is another host: its counters are not appended to that recording.
    let this = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    if this.trim() != "fixture-host-7" {
        let o = record(false);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("fixture-host-7"), "{}", stderr(&o));
    }
}
