//! The block-latency source (BPF): histograms against diskstats on a loop device the test
//! makes, flushes and discards in their own op, replay equal to live, the fallbacks (no
//! capabilities, no BTF, --no-bpf), and the committed object against its source.

use crate::util::*;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

/// The tests that compare timings run one at a time: each other's CPU load (a sweep's
/// io_uring workers on a 2-core machine) delays completions between the tracepoint and
/// diskstats' accounting.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Can this machine load the program at all (root, BTF)? Else the test says why it skips.
fn bpf_possible(test: &str) -> bool {
    if !is_root() {
        crate::util::skip(&format!("{test}: needs root"));
        return false;
    }
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        crate::util::skip_lacking(&format!("{test}: kernel without BTF"));
        return false;
    }
    true
}

/// Does this kernel's BTF name the block_io_done tracepoint (6.5+)? Then iosat attaches there.
fn kernel_has_block_io_done() -> bool {
    let btf = std::fs::read("/sys/kernel/btf/vmlinux").unwrap_or_default();
    let name = b"btf_trace_block_io_done";
    btf.windows(name.len()).any(|w| w == name)
}

/// Whether the running kernel is `major.minor` or later (uname's release).
fn kernel_at_least(major: u32, minor: u32) -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (a, b) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (a, b) >= (major, minor)
}

/// `iosat stat --json ARGS DEVICE --record REC` running, once it has taken its first sample
/// (the recording has a `T`; the BPF source is attached before it).
fn recording_stat(lo: &LoopDev, rec: &Path, args: &[&str]) -> std::process::Child {
    let child = iosat()
        .args(["stat", "--json"])
        .args(args)
        .arg(lo.name())
        .arg("--record")
        .arg(rec)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    crate::stat::wait_for_first_sample(rec);
    child
}

fn run(cmd: &mut Command) {
    let st = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success(), "{cmd:?}");
}

/// Sum of one op's field over the intervals of one device.
fn total(lines: &[Value], op: &str, key: &str) -> f64 {
    lines
        .iter()
        .filter_map(|l| l["devices"][0]["latency"][op][key].as_f64())
        .sum()
}

fn total_count(lines: &[Value], op: &str, key: &str) -> u64 {
    lines
        .iter()
        .map(|l| l["devices"][0]["latency"][op][key].as_u64().unwrap_or(0))
        .sum()
}

#[test]
fn histograms_match_diskstats_on_a_loop_device() {
    if !bpf_possible("histograms_match_diskstats_on_a_loop_device") {
        return;
    }
    let _one_at_a_time = serial();
    let lo = LoopDev::new(32 << 20);
    let dir = crate::util::tempdir().unwrap();
    let rec = dir.path().join("rec");
    let child = recording_stat(&lo, &rec, &["-i", "0.5", "-c", "12"]);
    // A known number of direct reads and writes, then one discard range and a flush.
    crate::stat::direct_io(&lo.path, 300, 200);
    run(Command::new("blkdiscard").args(["-o", "0", "-l", "1048576", &lo.path]));
    run(Command::new("python3").args([
        "-c",
        &format!(
            "import os; fd = os.open('{}', os.O_WRONLY); os.fsync(fd); os.close(fd)",
            lo.path
        ),
    ]));
    let o = child.wait_with_output().unwrap();
    let lines = json_lines(&ok_stdout(&o));
    assert_eq!(lines.len(), 12);
    assert!(
        !stderr(&o).contains("no live latency"),
        "the source should attach as root: {}",
        stderr(&o)
    );
    for op in ["read", "write", "discard", "flush"] {
        let seen = total_count(&lines, op, "count");
        let ds = total_count(&lines, op, "diskstats_count");
        // Within the coverage the run measured: nothing invented, at most 1 % missed.
        assert!(seen <= ds, "{op}: histogram {seen} > diskstats {ds}");
        assert!(
            seen as f64 >= ds as f64 * 0.99,
            "{op}: histogram {seen} vs diskstats {ds}"
        );
    }
    assert!(total_count(&lines, "read", "count") >= 300);
    assert!(total_count(&lines, "write", "count") >= 200);
    assert!(total_count(&lines, "discard", "count") >= 1);
    assert!(total_count(&lines, "flush", "count") >= 1);
    // The exact sum against Δread_ms/Δwrite_ms: the ms counters are truncated cumulative ns,
    // so their sum over the run is within 1 ms of the true sum. On kernels with the
    // block_io_done tracepoint (6.5+) the program runs inside blk_account_io_done, a clock
    // read after the `now` diskstats subtracts from: under 1 µs per request apart (a batch
    // completion takes one `now` for the whole batch). On older kernels it runs on
    // block_rq_complete, before the bios' completion callbacks, a few µs per request earlier
    // than diskstats' stamp (measured there: 2-10 µs), hence 10 µs each and 2 %.
    // Since 6.9 the block layer also reads its clock once per plug and keeps it
    // (blk_time_get_ns): a request's diskstats stamps may come from a clock read earlier in the
    // same plug, and its time in diskstats is then shorter than the program's. Measured on
    // 6.18: one run in three had diskstats 9.6 ms under the histogram's 22.6 ms over 300 reads
    // (~0.03 ms each), the others agreed within 0.3 ms. So on such kernels the sums agree
    // within 0.05 ms per request: a wrong unit, a lost bucket or a doubled count is still far
    // outside it.
    let io_done = kernel_has_block_io_done();
    let (per_request_ms, relative) = match (io_done, kernel_at_least(6, 9)) {
        (_, true) => (0.050, 0.02),
        (true, false) => (0.001, 0.0),
        (false, false) => (0.010, 0.02),
    };
    for (op, key, count_key) in [("read", "r_await", "r/s"), ("write", "w_await", "w/s")] {
        let hist_ms: f64 = lines
            .iter()
            .filter_map(|l| {
                let lat = &l["devices"][0]["latency"][op];
                Some(lat["mean_ms"].as_f64()? * lat["count"].as_f64()?)
            })
            .sum();
        let ds_ms: f64 = lines
            .iter()
            .filter_map(|l| {
                let d = &l["devices"][0];
                Some(d[key].as_f64()? * d[count_key].as_f64()? * l["interval_s"].as_f64()?)
            })
            .sum();
        eprintln!("{op}: histogram sum {hist_ms:.3} ms, diskstats {ds_ms:.3} ms");
        assert!(
            (hist_ms - ds_ms).abs()
                <= 1.0 + relative * ds_ms + per_request_ms * total(&lines, op, "count"),
            "{op}: histogram sum {hist_ms} ms vs diskstats {ds_ms} ms"
        );
    }
    // Percentiles are ordered and the coverage is reported.
    let busy = lines
        .iter()
        .find(|l| l["devices"][0]["latency"]["read"]["count"].as_u64() > Some(100))
        .expect("an interval with the reads");
    let r = &busy["devices"][0]["latency"]["read"];
    assert!(r["p50_ms"].as_f64() <= r["p95_ms"].as_f64());
    assert!(r["p95_ms"].as_f64() <= r["p99_ms"].as_f64());
    assert!(busy["devices"][0]["latency"]["coverage_pct"].as_f64() >= Some(99.0));

    // The recording replays to the same output, in the format `flag` asks for.
    let replay = |flag: &str| {
        let o = iosat()
            .args(["stat", flag, "--replay"])
            .arg(&rec)
            .arg(lo.name())
            .output()
            .unwrap();
        ok_stdout(&o)
    };
    assert_eq!(json_lines(&replay("--json")), lines);
    let text = std::fs::read_to_string(&rec).unwrap();
    assert!(text.lines().any(|l| l.starts_with("B ")), "{text}");
    // --wide shows the columns in replay too.
    let w = replay("--wide");
    assert!(w.contains("r_p95") && w.contains("cover%"), "{w}");
    // CSV carries the same percentiles, in ms, in its latency columns.
    let csv = replay("--csv");
    let mut rows = csv.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no {name} in {header:?}"))
    };
    let (p50, cover) = (col("r_p50_ms"), col("coverage_pct"));
    let rows: Vec<Vec<&str>> = rows.map(|r| r.split(',').collect()).collect();
    assert_eq!(rows.len(), lines.len(), "{csv}");
    for (row, l) in rows.iter().zip(&lines) {
        let lat = &l["devices"][0]["latency"];
        match lat["read"]["p50_ms"].as_f64() {
            Some(want) => {
                let got: f64 = row[p50].parse().unwrap();
                assert!(
                    (got - want).abs() <= 1e-6 * want.max(1e-3),
                    "{row:?} vs {lat}"
                );
            }
            None => assert_eq!(row[p50], "", "{row:?}"),
        }
        assert_eq!(
            row[cover].parse::<f64>().ok().map(|v| v.round()),
            lat["coverage_pct"].as_f64().map(|v| v.round()),
            "{row:?}"
        );
    }
}

/// The command line of `iosat stat` once, as JSON, on the loop device.
fn stat_once(lo: &LoopDev, wrap: &[&str], extra: &[&str]) -> std::process::Output {
    let exe = env!("CARGO_BIN_EXE_iosat");
    let mut c = Command::new(wrap.first().copied().unwrap_or(exe));
    c.env("IOSAT_STATE_DIR", ""); // learned state in memory only
    if !wrap.is_empty() {
        c.args(&wrap[1..]).arg(exe);
    }
    c.args(["stat", "--json", "-i", "0.2", "-c", "2", lo.name()])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn without_capabilities_one_line_and_stat_carries_on() {
    if !is_root() || !have("setpriv", "--version") {
        crate::util::skip("without_capabilities_one_line_and_stat_carries_on: root, setpriv");
        return;
    }
    let lo = LoopDev::new(4 << 20);
    let o = stat_once(
        &lo,
        &["setpriv", "--inh-caps=-all", "--bounding-set=-all", "--"],
        &[],
    );
    let lines = json_lines(&ok_stdout(&o));
    assert_eq!(lines.len(), 2);
    assert!(lines[1]["devices"][0].get("latency").is_none());
    let e = stderr(&o);
    let said: Vec<&str> = e.lines().filter(|l| l.contains("latency")).collect();
    assert_eq!(said.len(), 1, "{e}");
    assert!(said[0].contains("CAP_BPF"), "{e}");
}

#[test]
fn without_btf_one_line_and_no_bpf_says_nothing() {
    if !bpf_possible("without_btf_one_line_and_no_bpf_says_nothing") {
        return;
    }
    let lo = LoopDev::new(4 << 20);
    let empty = crate::util::tempdir().unwrap();
    let o = stat_once(&lo, &[], &["--sys-root", empty.path().to_str().unwrap()]);
    let lines = json_lines(&ok_stdout(&o));
    assert_eq!(lines.len(), 2);
    assert!(lines[1]["devices"][0].get("latency").is_none());
    let e = stderr(&o);
    assert_eq!(e.lines().filter(|l| l.contains("BTF")).count(), 1, "{e}");

    let o = stat_once(&lo, &[], &["--no-bpf"]);
    let lines = json_lines(&ok_stdout(&o));
    assert!(lines[1]["devices"][0].get("latency").is_none());
    assert!(!stderr(&o).contains("latency"), "{}", stderr(&o));

    // With the source: the device has a latency object.
    let o = stat_once(&lo, &[], &[]);
    let lines = json_lines(&ok_stdout(&o));
    assert!(lines[1]["devices"][0]["latency"]["read"].is_object());
}

#[test]
fn devices_without_requests_are_said_to_have_none() {
    if !bpf_possible("devices_without_requests_are_said_to_have_none") {
        return;
    }
    let Some(z) = Zram::new("8M") else {
        crate::util::skip_lacking("devices_without_requests_are_said_to_have_none: no zram");
        return;
    };
    let dev = z.dev();
    let name = dev.trim_start_matches("/dev/");
    let o = iosat()
        .args(["stat", "--json", "-i", "0.2", "-c", "1", name])
        .output()
        .unwrap();
    let lines = json_lines(&ok_stdout(&o));
    assert_eq!(
        lines[0]["devices"][0]["latency"]["none"], "no_request_queue",
        "{}",
        lines[0]
    );
}

#[test]
fn the_committed_object_is_built_from_its_source() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let built_with = std::fs::read_to_string(root.join("bpf/clang-version")).unwrap();
    let clang = Command::new("clang").arg("--version").output();
    let Ok(clang) = clang else {
        crate::util::skip("the_committed_object_is_built_from_its_source: no clang");
        return;
    };
    let version = String::from_utf8_lossy(&clang.stdout);
    // Byte equality holds for one clang: scripts/build-bpf.sh makes the output independent
    // of the directory and strips DWARF, but another clang release emits other code.
    if version.lines().next().unwrap_or("").trim() != built_with.trim() {
        eprintln!(
            "the_committed_object_is_built_from_its_source: skipped (clang is '{}', the object \
             was built with '{}')",
            version.lines().next().unwrap_or(""),
            built_with.trim()
        );
        return;
    }
    let dir = crate::util::tempdir().unwrap();
    let out = dir.path().join("iolat.bpf.o");
    let st = Command::new(root.join("scripts/build-bpf.sh"))
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    let want = std::fs::read(root.join("bpf/iolat.bpf.o")).unwrap();
    let got = std::fs::read(&out).unwrap();
    assert!(
        want == got,
        "bpf/iolat.bpf.o is not what scripts/build-bpf.sh builds from bpf/iolat.bpf.c: rebuild \
         and commit it"
    );
}

#[test]
fn the_exporter_serves_the_histogram() {
    if !bpf_possible("the_exporter_serves_the_histogram") {
        return;
    }
    if !have("curl", "--version") {
        crate::util::skip("the_exporter_serves_the_histogram: curl not installed");
        return;
    }
    use std::io::{BufRead, BufReader};
    let lo = LoopDev::new(8 << 20);
    let mut child = iosat()
        .args([
            "exporter",
            "--web.listen-address",
            "127.0.0.1:0",
            "--device-include",
        ])
        .arg(lo.name())
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let _guard = Kill(child);
    let mut url = String::new();
    for _ in 0..10 {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            break;
        }
        assert!(!line.contains("no live latency"), "{line}");
        if let Some(u) = line.trim().split("listening on ").nth(1) {
            url = u.to_string();
            break;
        }
    }
    assert!(!url.is_empty(), "no listening line");
    run(Command::new("dd").args([
        &format!("if={}", lo.path),
        "of=/dev/null",
        "bs=4k",
        "count=120",
        "iflag=direct",
    ]));
    let o = Command::new("curl").args(["-s", &url]).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let count = text
        .lines()
        .find_map(|l| {
            l.strip_prefix(&format!(
                "iosat_disk_request_duration_seconds_count{{device=\"{}\",op=\"read\"}} ",
                lo.name()
            ))
        })
        .unwrap_or_else(|| panic!("no read histogram for {}", lo.name()));
    assert!(count.parse::<f64>().unwrap() >= 120.0, "{count}");
    assert!(text.contains("# TYPE iosat_disk_request_duration_seconds histogram"));
    // The queue and device split (issue 40; loop queues carry the issue stamp): the same
    // reads in both stages' histograms as in the total.
    for stage in ["queue", "device"] {
        let n = text
            .lines()
            .find_map(|l| {
                l.strip_prefix(&format!(
                    "iosat_disk_request_{stage}_seconds_count{{device=\"{}\",op=\"read\"}} ",
                    lo.name()
                ))
            })
            .unwrap_or_else(|| panic!("no read {stage} histogram: {text}"));
        // The maps are read one after the other: a completion between (a late udev probe)
        // may be in one and not yet the other.
        let (n, all) = (n.parse::<f64>().unwrap(), count.parse::<f64>().unwrap());
        assert!((n - all).abs() <= 2.0, "{stage}: {n} of {all}");
    }
    if have("promtool", "--version") {
        crate::exporter::promtool_check_metrics(&text).unwrap();
    }
}

#[test]
fn sweep_shows_the_block_layer_beside_the_engine() {
    if !bpf_possible("sweep_shows_the_block_layer_beside_the_engine") {
        return;
    }
    let _one_at_a_time = serial();
    // On a loop device of its own, so that no other process's I/O is in the block layer's
    // percentiles (they are the device's, not the engine's).
    let mut lo = LoopDev::new(160 << 20);
    let node = lo.path.clone();
    let Some(mnt) = lo.mount(&node) else {
        crate::util::skip_lacking(
            "sweep_shows_the_block_layer_beside_the_engine: mkfs/mount failed",
        );
        return;
    };
    let dir = crate::util::tempdir_in(&mnt).unwrap();
    let outdir = crate::util::tempdir().unwrap();
    let out = outdir.path().join("sweep.json");
    // A short sweep of a 16 MiB file in `dir` at `levels`, JSON, with `extra` flags.
    let sweep = |levels: &str, duration: &str, extra: &[&std::ffi::OsStr]| {
        iosat()
            .args([
                "sweep",
                "--size",
                "16m",
                "--levels",
                levels,
                "--duration",
                duration,
            ])
            .args(["--ramp", "0.1s", "--no-progress", "--json"])
            .args(extra)
            .arg(dir.path())
            .output()
            .unwrap()
    };
    let o = sweep("1,4", "0.3s", &["-o".as_ref(), out.as_os_str()]);
    let j = ok_json(&o);
    for l in j["levels"].as_array().unwrap() {
        let b = &l["kernel"]["block_latency"];
        assert!(b["read"]["count"].as_u64() > Some(0), "{l}");
        // The block layer sees less of the path than the engine.
        let blk_p50_ns = b["read"]["p50_ms"].as_f64().unwrap() * 1e6;
        let engine_p50 = l["latency_ns"]["p50"].as_f64().unwrap();
        assert!(
            blk_p50_ns <= engine_p50 * 1.15,
            "{blk_p50_ns} vs {engine_p50}"
        );
    }
    let text = iosat()
        .args(["report", "--format", "markdown"])
        .arg(&out)
        .output()
        .unwrap();
    let t = ok_stdout(&text);
    assert!(t.contains("blk_p50_us"), "{t}");
    assert!(t.contains("The block layer accounts for"), "{t}");

    // --no-bpf: the same sweep without the program, so no block-layer figures at all.
    let o = sweep("1", "0.2s", &["--no-bpf".as_ref()]);
    let j = ok_json(&o);
    let levels = j["levels"].as_array().unwrap();
    assert!(!levels.is_empty(), "{j}");
    for l in levels {
        assert!(l["kernel"]["block_latency"].is_null(), "{l}");
        assert!(l["ios"].as_u64() > Some(0), "{l}");
    }
}

/// With a profile whose baseline p95 is known, each interval's live p95 is divided by it and
/// judged by the 3x-p95 rule; a replay against another profile judges the same recording
/// again, the other way.
#[test]
fn live_p95_is_judged_against_the_profile_baseline_p95() {
    if !bpf_possible("live_p95_is_judged_against_the_profile_baseline_p95") {
        return;
    }
    let _one_at_a_time = serial();
    let lo = LoopDev::new(16 << 20);
    let dir = crate::util::tempdir().unwrap();
    // A 16 MiB loop device has no wwid, serial or model: its profile id is its name and size.
    let id = format!("{}-{}", lo.name(), 16 << 20);
    // Two profile directories: a baseline p95 of 100 ns (any real p95 is far above 3x it: a
    // loop device over a cached file was seen answering at a p95 of 2.9 µs) and
    // one of 1 s (far below).
    let profile = |name: &str, p95_ns: f64| {
        let pd = dir.path().join(name);
        std::fs::create_dir(&pd).unwrap();
        crate::stat_extras::write_profile(&pd, &id, p95_ns, 4, 10_000.0);
        let file = pd.join(format!("{id}.json"));
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        v["verdict"]["baseline_p95_ns"] = p95_ns.into();
        std::fs::write(&file, v.to_string()).unwrap();
        pd
    };
    let (tight, loose) = (profile("tight", 100.0), profile("loose", 1e9));
    let rec = dir.path().join("rec");
    let pd = tight.to_str().unwrap();
    let child = recording_stat(&lo, &rec, &["-i", "0.5", "-c", "4", "--profile-dir", pd]);
    crate::stat::direct_io(&lo.path, 300, 0);
    let o = child.wait_with_output().unwrap();
    let lines = json_lines(&ok_stdout(&o));
    let judged: Vec<&Value> = lines
        .iter()
        .map(|l| &l["devices"][0]["latency"])
        .filter(|lat| lat["read"]["count"].as_u64() > Some(0))
        .collect();
    assert!(!judged.is_empty(), "no interval saw the reads: {lines:?}");
    for lat in &judged {
        let p95_ms = lat["read"]["p95_ms"].as_f64().unwrap();
        let ratio = lat["p95_vs_baseline_r"].as_f64().unwrap();
        assert!(
            (ratio - p95_ms * 1e6 / 100.0).abs() <= 1e-6 * ratio,
            "{lat}"
        );
        assert!(ratio > 3.0, "{lat}");
        assert_eq!(lat["overloaded"], true, "{lat}");
        // No writes: the write direction is not judged.
        assert!(lat.get("p95_vs_baseline_w").is_none(), "{lat}");
    }
    // The text shows the ratio (--wide) and the judgement.
    let text = |pd: &Path| {
        let o = iosat()
            .args(["stat", "--wide", lo.name(), "--replay"])
            .arg(&rec)
            .arg("--profile-dir")
            .arg(pd)
            .output()
            .unwrap();
        ok_stdout(&o)
    };
    let t = text(&tight);
    assert!(t.contains("p95/base_r"), "{t}");
    // The judgement in words, in the default view too.
    let note = format!("# {}: read p95 ", lo.name());
    let narrow = iosat()
        .args(["stat", lo.name(), "--replay"])
        .arg(&rec)
        .arg("--profile-dir")
        .arg(&tight)
        .output()
        .unwrap();
    let narrow = ok_stdout(&narrow);
    let line = narrow
        .lines()
        .find(|l| l.starts_with(&note))
        .unwrap_or_else(|| panic!("no judgement line:\n{narrow}"));
    assert!(
        line.ends_with("x the baseline p95: overloaded (the 3x-p95 rule)"),
        "{line}"
    );
    assert!(
        !text(&loose).contains("overloaded (the"),
        "{}",
        text(&loose)
    );
    // The same recording against a baseline p95 of 1 s: far under 3x, not overloaded.
    let o = iosat()
        .args(["stat", "--json", lo.name(), "--replay"])
        .arg(&rec)
        .arg("--profile-dir")
        .arg(&loose)
        .output()
        .unwrap();
    for l in json_lines(&ok_stdout(&o)) {
        let lat = &l["devices"][0]["latency"];
        if lat["read"]["count"].as_u64() > Some(0) {
            assert!(lat["p95_vs_baseline_r"].as_f64().unwrap() < 3.0, "{lat}");
            assert_eq!(lat["overloaded"], false, "{lat}");
        }
    }
}

/// fio's reads of a `4k/50:64k/50` bssplit at one in flight for `secs` on `dev`: (4 KiB reads,
/// 64 KiB reads), from its total requests and bytes (two sizes, two equations).
fn fio_mix_4k_64k(dev: &str, secs: u32) -> (u64, u64) {
    let out = Command::new("fio")
        .args([
            "--name=classes",
            &format!("--filename={dev}"),
            "--direct=1",
            "--rw=randread",
            "--bssplit=4k/50:64k/50",
            // Without it fio shortens a request to the blocks its random map has left free.
            "--norandommap",
            "--ioengine=psync",
            "--thread",
            &format!("--runtime={secs}"),
            "--time_based",
            "--size=32m",
            "--output-format=json",
        ])
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "fio");
    let v: Value = serde_json::from_slice(&out.stdout).expect("fio's JSON");
    let r = &v["jobs"][0]["read"];
    let (n, bytes) = (
        r["total_ios"].as_u64().unwrap(),
        r["io_bytes"].as_u64().unwrap(),
    );
    // 4096·a + 65536·(n − a) = bytes.
    let a = (65536 * n - bytes) / (65536 - 4096);
    (a, n - a)
}

/// Size classes per request (issue 37): on a known device whose service grows with size
/// (2.2 ms + 30 µs per KiB: 4 KiB 2.32 ms, 64 KiB 4.12 ms), an even mix of 4 and 64 KiB direct
/// reads at one in flight. The source's small and medium classes count what fio issued (no
/// merges at one in flight: udev's probe is over before the test starts, so nothing else
/// reads), carry their own mean size, and their mean latencies are each size's truth plus the
/// FUSE + loop path's overhead, the same for both sizes: so the classes' difference is the
/// truth's 1.8 ms.
#[test]
fn size_classes_count_and_time_each_size_on_a_known_device() {
    use crate::knowndev::{KnownDev, Spec};
    use std::time::Duration;
    if !bpf_possible("size_classes_count_and_time_each_size_on_a_known_device") {
        return;
    }
    if !have("fio", "--version") {
        crate::util::skip("needs fio");
        return;
    }
    let _one_at_a_time = serial();
    let spec = Spec::new(1, Duration::from_micros(2200)).per_kib(Duration::from_micros(30));
    let Some(dev) = KnownDev::start(spec) else {
        return;
    };
    let mut child = iosat()
        .args(["stat", "--json", "-i", "1", "-c", "10", dev.name()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reads start once stat has printed its first sample (its program loaded and its
    // counters read, however long a busy machine takes: a fixed wait lost requests to the time
    // before it in the full suite) and end, 5 s later, well before the tenth.
    use std::io::BufRead;
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(!first.is_empty(), "stat printed nothing");
    let (small, medium) = fio_mix_4k_64k(&dev.path, 5);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines = json_lines(&(first + &rest));
    let class = |i: usize, key: &str| -> Vec<(f64, f64)> {
        lines
            .iter()
            .filter_map(|l| {
                let c = &l["devices"][0]["latency"]["read_classes"][i];
                Some((c[key].as_f64()?, c["count"].as_f64()?))
            })
            .collect()
    };
    let count = |i: usize| class(i, "count").iter().map(|c| c.1).sum::<f64>() as u64;
    let mean = |i: usize, key: &str| {
        let v = class(i, key);
        v.iter().map(|(x, n)| x * n).sum::<f64>() / v.iter().map(|c| c.1).sum::<f64>()
    };
    let (got_s, got_m, got_l) = (count(0), count(1), count(2));
    eprintln!(
        "fio {small} 4 KiB, {medium} 64 KiB; classes {got_s} / {got_m} / {got_l}; \
         means {:.3} / {:.3} ms",
        mean(0, "mean_ms"),
        mean(1, "mean_ms")
    );
    assert!(small > 300 && medium > 300, "{small} / {medium}");
    // Each request counted at most once, in its own class: fio's own, but for a request at
    // either edge of stat's run, and a few left unclassed when another completion on the same
    // CPU took the request's size note first (the program never guesses a class). Measured:
    // 680 of 681 on a quiet machine; 3 of ~600-770 left out in 4 of 9 runs on 2026-11-29.
    for (got, fio) in [(got_s, small), (got_m, medium)] {
        assert!(
            got <= fio + 2 && got + 2 + fio / 100 >= fio,
            "{got} classed against fio's {fio}"
        );
    }
    assert_eq!(got_l, 0);
    assert!((mean(0, "mean_bytes") - 4096.0).abs() < 64.0);
    assert_eq!(mean(1, "mean_bytes"), 65536.0);
    let truth = |bs: u64| dev.spec.service_for(bs, false).as_secs_f64() * 1e3;
    let (s_ms, m_ms) = (mean(0, "mean_ms"), mean(1, "mean_ms"));
    // Above the truth by the path's overhead, never below it (a unit sleeps its service).
    // Measured: 4 KiB 2.590 ms (truth 2.32), 64 KiB 4.509 ms (truth 4.12): 0.27-0.39 ms of
    // FUSE + loop on a quiet machine, the larger copy costing more; 0.54-0.86 ms on the same
    // VM at 06:05 on 2026-11-29 (the host's stolen time lengthening the units' sleeps), so
    // the bound allows 1 ms: the classes' difference below is what separates them.
    for (got, want) in [(s_ms, truth(4096)), (m_ms, truth(65536))] {
        assert!(
            got >= want * 0.99 && got <= want * 1.10 + 1.0,
            "{got} vs {want}"
        );
    }
    // Measured 1.919 ms against 1.8 (+6.6 %: the 64 KiB copy's own cost through FUSE).
    let diff = truth(65536) - truth(4096);
    assert!(
        ((m_ms - s_ms) / diff - 1.0).abs() <= 0.15,
        "64 − 4 KiB: {:.3} ms against the truth's {diff:.3}",
        m_ms - s_ms
    );
    // The class percentiles are ordered and lie around the class's mean.
    let c = lines
        .iter()
        .map(|l| &l["devices"][0]["latency"]["read_classes"][1])
        .find(|c| c["count"].as_u64() > Some(50))
        .expect("an interval with 64 KiB reads");
    assert!(c["p50_ms"].as_f64() <= c["p95_ms"].as_f64());
    assert!(c["p95_ms"].as_f64() <= c["p99_ms"].as_f64());
    assert!(c["p50_ms"].as_f64().unwrap() >= truth(65536) * 0.8);
}
