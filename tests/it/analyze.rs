//! `iosat analyze` on real outputs of the installed fio, sysbench and iostat (golden fixtures
//! in tests/fixtures/import/, made on a test VM; see README there), on the outputs quoted in
//! the seed articles, and on fresh runs of the tools themselves.

use crate::util::{fixture, have, iosat, ok_stdout as stdout};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

fn fixtures() -> PathBuf {
    fixture("import")
}

/// Run `iosat analyze ARGS` from the fixtures directory (so paths in output are short).
fn analyze_in(dir: &Path, args: &[&str]) -> Output {
    iosat()
        .current_dir(dir)
        .arg("analyze")
        .args(args)
        .output()
        .expect("run iosat")
}

fn analyze(args: &[&str]) -> Output {
    analyze_in(&fixtures(), args)
}

fn json(args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.push("--json");
    serde_json::from_str(&stdout(&analyze(&a))).unwrap()
}

fn fixture_json(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixtures().join(name)).unwrap()).unwrap()
}

const FIO_QD: [&str; 4] = [
    "fio-qd1.json",
    "fio-qd4.json",
    "fio-qd16.json",
    "fio-qd64.json",
];

#[test]
fn fio_levels_match_fio_numbers() {
    let r = json(&FIO_QD);
    assert_eq!(r["schema_version"], 1);
    assert_eq!(r["source"]["tool"], "fio");
    assert_eq!(r["source"]["files"][0]["version"], "fio-3.33");
    assert_eq!(r["source"]["pattern"], "randread");
    assert_eq!(r["source"]["block_size"], 4096);
    let levels = r["levels"].as_array().unwrap();
    let conc: Vec<u64> = levels
        .iter()
        .map(|l| l["concurrency"].as_u64().unwrap())
        .collect();
    assert_eq!(conc, [1, 4, 16, 64]);
    for (l, f) in levels.iter().zip(FIO_QD) {
        let raw = &fixture_json(f)["jobs"][0]["read"];
        let same = |a: &Value, b: &Value| assert_eq!(a.as_f64(), b.as_f64(), "{f}: {a} {b}");
        same(&l["iops"], &raw["iops"]);
        same(&l["bytes_per_s"], &raw["bw_bytes"]);
        same(&l["latency_ns"]["mean"], &raw["lat_ns"]["mean"]);
        same(&l["latency_ns"]["min"], &raw["lat_ns"]["min"]);
        same(
            &l["latency_ns"]["p95"],
            &raw["clat_ns"]["percentile"]["95.000000"],
        );
        same(
            &l["latency_ns"]["p999"],
            &raw["clat_ns"]["percentile"]["99.900000"],
        );
        same(
            &l["kernel"]["util"],
            &fixture_json(f)["disk_util"][0]["util"],
        );
    }
}

#[test]
fn fio_verdict_follows_the_rules_on_real_numbers() {
    let r = json(&FIO_QD);
    let v = &r["verdict"];
    let raw: Vec<Value> = FIO_QD.iter().map(|f| fixture_json(f)).collect();
    let p95 = |i: usize| {
        raw[i]["jobs"][0]["read"]["clat_ns"]["percentile"]["95.000000"]
            .as_f64()
            .unwrap()
    };
    // Seed 001's rule, computed here from fio's own numbers.
    let first_over = (1..4)
        .find(|&i| p95(i) > 3.0 * p95(0))
        .map(|i| [1, 4, 16, 64][i]);
    assert_eq!(v["overload_concurrency"].as_u64(), first_over);
    assert_eq!(
        v["baseline_latency_ns"],
        raw[0]["jobs"][0]["read"]["lat_ns"]["mean"]
    );
    // The knee is a measured level, not past the overload point, and its IOPS are the
    // max useful IOPS.
    let knee = v["knee_concurrency"].as_u64().unwrap();
    let i = [1, 4, 16, 64].iter().position(|&c| c == knee).unwrap();
    assert_eq!(v["max_useful_iops"], raw[i]["jobs"][0]["read"]["iops"]);
    if let Some(o) = first_over {
        assert!(knee < o, "knee {knee} overload {o}");
    }
    let usl = &v["usl"];
    assert!(usl["r_squared"].as_f64().unwrap() > 0.9, "{usl}");
    assert!(v["summary"].as_array().unwrap().len() >= 5);
}

#[test]
fn fio_several_jobs_in_one_file() {
    // qd1 (io_uring, iodepth 1); psync numjobs=2 without group_reporting (two entries);
    // io_uring iodepth 8; libaio iodepth 4 × numjobs 4 with group_reporting (one entry).
    let r = json(&["fio-multi.json"]);
    let levels = r["levels"].as_array().unwrap();
    let conc: Vec<u64> = levels
        .iter()
        .map(|l| l["concurrency"].as_u64().unwrap())
        .collect();
    assert_eq!(conc, [1, 2, 8, 16]);
    let jobs = fixture_json("fio-multi.json")["jobs"].clone();
    let two = jobs[1]["read"]["iops"].as_f64().unwrap() + jobs[2]["read"]["iops"].as_f64().unwrap();
    assert!((levels[1]["iops"].as_f64().unwrap() - two).abs() < 1e-6);
    assert_eq!(levels[1]["label"], "psync-2jobs");
    assert_eq!(levels[3]["iops"], jobs[4]["read"]["iops"]);
    // disk_util spans all four levels: not attributed, and said so.
    assert!(levels.iter().all(|l| l.get("kernel").is_none()));
    let notes = r["source"]["notes"].to_string();
    assert!(notes.contains("disk_util covers the whole run"), "{notes}");
    assert!(notes.contains("I/O-weighted means"), "{notes}");
}

#[test]
fn fio_json_plus_percentiles_from_histogram_equal_fios() {
    // fio computes its printed percentiles from the same histogram json+ exports: merging
    // the bins must give back exactly fio's figures.
    let r = json(&["fio-plus-qd8.json"]);
    let l = &r["levels"][0];
    let raw = &fixture_json("fio-plus-qd8.json")["jobs"][0]["read"]["clat_ns"];
    assert!(raw["bins"].as_object().unwrap().len() > 10);
    for (ours, theirs) in [
        ("p50", "50.000000"),
        ("p90", "90.000000"),
        ("p95", "95.000000"),
        ("p99", "99.000000"),
        ("p999", "99.900000"),
    ] {
        assert_eq!(
            l["latency_ns"][ours].as_f64(),
            raw["percentile"][theirs].as_f64(),
            "{ours}"
        );
    }
    assert_eq!(l["concurrency"], 8);
}

#[test]
fn fio_mixed_read_write_sums_directions() {
    let r = json(&["fio-randrw-qd4.json"]);
    let raw = &fixture_json("fio-randrw-qd4.json")["jobs"][0];
    let (rd, wr) = (&raw["read"], &raw["write"]);
    let l = &r["levels"][0];
    let iops = rd["iops"].as_f64().unwrap() + wr["iops"].as_f64().unwrap();
    assert!((l["iops"].as_f64().unwrap() - iops).abs() < 1e-6);
    let (nr, nw) = (
        rd["total_ios"].as_f64().unwrap(),
        wr["total_ios"].as_f64().unwrap(),
    );
    let mean = (rd["lat_ns"]["mean"].as_f64().unwrap() * nr
        + wr["lat_ns"]["mean"].as_f64().unwrap() * nw)
        / (nr + nw);
    assert!((l["latency_ns"]["mean"].as_f64().unwrap() - mean).abs() < 1e-6);
    assert_eq!(r["verdict"]["baseline_concurrency"], 4);
    let s = r["verdict"]["summary"][0].as_str().unwrap();
    assert!(s.starts_with("No concurrency-1 level"), "{s}");
}

#[test]
fn fio_markdown_snapshot() {
    insta::assert_snapshot!(
        "fio_markdown",
        stdout(&analyze(&[&FIO_QD[..], &["--markdown"]].concat()))
    );
}

#[test]
fn sysbench_levels_match_sysbench_numbers() {
    let files = ["sysbench-t1.txt", "sysbench-t4.txt", "sysbench-t16.txt"];
    let r = json(&files);
    assert_eq!(r["source"]["tool"], "sysbench");
    assert_eq!(r["source"]["files"][0]["version"], "sysbench 1.0.20");
    assert_eq!(r["source"]["block_size"], 16384);
    for (l, f) in r["levels"].as_array().unwrap().iter().zip(files) {
        let text = std::fs::read_to_string(fixtures().join(f)).unwrap();
        let field = |k: &str| -> f64 {
            let line = text
                .lines()
                .find(|l| l.trim_start().starts_with(k))
                .unwrap();
            line.rsplit(':').next().unwrap().trim().parse().unwrap()
        };
        assert_eq!(l["iops"].as_f64().unwrap(), field("reads/s:"), "{f}");
        assert!((l["latency_ns"]["mean"].as_f64().unwrap() - field("avg:") * 1e6).abs() < 1e-3);
        assert!(
            (l["latency_ns"]["p95"].as_f64().unwrap() - field("95th percentile:") * 1e6).abs()
                < 1e-3
        );
        assert_eq!(
            l["concurrency"].as_f64().unwrap(),
            field("Number of threads:"),
            "{f}"
        );
    }
}

#[test]
fn sysbench_csv_snapshot() {
    insta::assert_snapshot!(
        "sysbench_csv",
        stdout(&analyze(&[
            "sysbench-t1.txt",
            "sysbench-t4.txt",
            "sysbench-t16.txt",
            "--csv"
        ]))
    );
}

#[test]
fn iostat_series_and_diagnosis() {
    let r = json(&["iostat-xt.txt"]);
    assert_eq!(r["source"]["tool"], "iostat");
    assert!(r["verdict"].is_null());
    assert_eq!(r["levels"].as_array().unwrap().len(), 0);
    let d = &r["devices"][0];
    assert_eq!(d["device"], "vda");
    // Three reports, the first (since boot) left out.
    let samples = d["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 2);
    assert_eq!(samples[0]["time"], "11/22/26 03:53:25");
    assert_eq!(samples[0]["r/s"], 42347.0);
    assert_eq!(samples[0]["w_await"], 0.13);
    assert_eq!(samples[0]["aqu-sz"], 5.23);
    assert_eq!(samples[0]["util"], 91.2);
    assert!(d["diagnosis"].as_array().unwrap().len() >= 2);
    let notes = r["source"]["notes"].to_string();
    assert!(notes.contains("since boot"), "{notes}");

    // The same run printed by -o JSON and by the ISO-timestamp layout parses alike.
    let j = json(&["iostat.json"]);
    assert_eq!(j["devices"][0]["samples"][0]["r/s"], 30309.0);
    assert_eq!(j["devices"][0]["samples"][0]["aqu-sz"], 2.83);
    let iso = json(&["iostat-xt-iso.txt"]);
    assert_eq!(
        iso["devices"][0]["samples"][0]["time"],
        "2026-11-22T03:53:27+0000"
    );
}

#[test]
fn iostat_markdown_snapshot() {
    insta::assert_snapshot!(
        "iostat_markdown",
        stdout(&analyze(&["iostat-x.txt", "--markdown"]))
    );
}

#[test]
fn iostat_device_filter() {
    let r = json(&["iostat-x.txt", "--device", "vda"]);
    assert_eq!(r["devices"].as_array().unwrap().len(), 1);
    let o = analyze(&["iostat-x.txt", "--device", "sdz"]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        e.trim(),
        "iosat: '--device' is not in the device input (devices: vda) (got 'sdz')"
    );
}

/// The iostat lines quoted in seed 001 (dm-0 at 1, 4 and 64 sysbench threads), pasted as
/// the article shows them: header and row glued on one line.
const SEED001_IOSTAT: &str = "Device: rrqm/s wrqm/s r/s w/s rsec/s wsec/s avgrq-sz avgqu-sz await svctm %utildm-0 0.00 0.00 127.90 0.70 4070.40 28.00 31.87 1.01 7.83 7.52 96.68
Device: rrqm/s wrqm/s r/s w/s rsec/s wsec/s avgrq-sz avgqu-sz await svctm %utildm-0 0.00 0.00 295.40 0.90 9372.80 35.20 31.75 4.06 13.69 3.38 100.01
Device: rrqm/s wrqm/s r/s w/s rsec/s wsec/s avgrq-sz avgqu-sz await svctm %utildm-0 0.00 0.00 601.20 0.80 19065.60 33.60 31.73 65.98 108.72 1.66 100.00
";

#[test]
fn seed001_iostat_lines_headroom_then_overload() {
    let dir = crate::util::tempdir().unwrap();
    std::fs::write(dir.path().join("seed001.txt"), SEED001_IOSTAT).unwrap();
    let text = stdout(&analyze_in(dir.path(), &["seed001.txt"]));
    assert!(
        text.contains("%util 96.7 % in sample 1 with only 1.01 requests in flight"),
        "{text}"
    );
    assert!(text.contains("headroom left"), "{text}");
    assert!(
        text.contains("overloaded in sample 3: await 108.72 ms is 13.9x"),
        "{text}"
    );
    assert!(
        text.contains("svctm fell from 7.52 ms to 1.66 ms"),
        "{text}"
    );
}

/// Seed 000's sysbench runs, as the article prints them: a command line and the blocks.
fn seed000_sysbench() -> String {
    let runs = [
        (1, "7113.16", "111.14", "0.07", "0.14", "6.18", "0.17"),
        (4, "26248.44", "410.13", "0.06", "0.15", "8.73", "0.21"),
        (16, "76845.96", "1200.72", "0.07", "0.21", "9.72", "0.36"),
        (64, "127840.59", "1997.51", "0.08", "0.50", "9.34", "1.25"),
        (256, "131558.79", "2055.61", "0.10", "1.95", "17.08", "3.89"),
    ];
    let mut s = String::new();
    for (t, reads, mib, min, avg, max, p95) in runs {
        s.push_str(&format!(
            "root@ts140i:/mnt/data# sysbench  --threads={t} --time=600 --max-requests=0  fileio --file-num=1 --file-total-size=100G --file-io-mode=sync --file-extra-flags=direct --file-test-mode=rndrd run
 
File operations:
   reads/s:                      {reads}
   writes/s:                     0.00
   fsyncs/s:                     0.00
 
Throughput:
   read, MiB/s:                  {mib}
   written, MiB/s:               0.00
 
General statistics:
   total time:                          600.0001s
   total number of events:              4267910
 
Latency (ms):
        min:                                  {min}
        avg:                                  {avg}
        max:                                  {max}
        95th percentile:                      {p95}
"
        ));
    }
    s
}

#[test]
fn seed000_sysbench_excerpts_give_the_article_table() {
    let dir = crate::util::tempdir().unwrap();
    std::fs::write(dir.path().join("seed000.txt"), seed000_sysbench()).unwrap();
    // The avg/baseline column of the levels table (shared with sweep: "x_base").
    let md = stdout(&analyze_in(dir.path(), &["seed000.txt", "--markdown"]));
    let cells = |l: &str| -> Vec<String> { l.split('|').map(|c| c.trim().to_string()).collect() };
    let mut table = md.lines().skip_while(|l| !l.starts_with("| conc"));
    let x_base = cells(table.next().unwrap())
        .iter()
        .position(|h| h == "x_base")
        .unwrap();
    let ratios: Vec<String> = table
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .map(|l| cells(l)[x_base].clone())
        .collect();
    assert_eq!(ratios, ["1.00x", "1.07x", "1.5x", "3.6x", "13.9x"]);
    // The CSV gives the same ratios as plain numbers (saturation_avg).
    let csv = stdout(&analyze_in(dir.path(), &["seed000.txt", "--csv"]));
    let col = csv
        .lines()
        .next()
        .unwrap()
        .split(',')
        .position(|h| h == "saturation_avg")
        .unwrap();
    let ratios: Vec<String> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(col).unwrap().parse::<f64>().unwrap())
        .map(iosat::analysis::text::fmt_ratio)
        .collect();
    assert_eq!(ratios, ["1.00x", "1.07x", "1.5x", "3.6x", "13.9x"]);
    let r: Value =
        serde_json::from_str(&stdout(&analyze_in(dir.path(), &["seed000.txt", "--json"]))).unwrap();
    let knee = r["verdict"]["knee_concurrency"].as_u64().unwrap();
    assert!((16..=64).contains(&knee), "{knee}");
    assert_eq!(r["verdict"]["linear_from_concurrency"], 64);
}

fn err_line(o: &Output) -> String {
    let e = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(e.lines().count(), 1, "one line: {e}");
    e.trim_end().to_string()
}

#[test]
fn truncated_and_unknown_input_is_one_line_with_file_and_line() {
    let dir = crate::util::tempdir().unwrap();
    let full = std::fs::read_to_string(fixtures().join("fio-qd4.json")).unwrap();
    let cut: String = full.lines().take(40).collect::<Vec<_>>().join("\n");
    std::fs::write(dir.path().join("cut.json"), cut).unwrap();
    let o = analyze_in(dir.path(), &["cut.json"]);
    assert_eq!(o.status.code(), Some(2));
    let e = err_line(&o);
    assert!(
        e.starts_with("iosat: cut.json:40: truncated fio JSON"),
        "{e}"
    );

    let sb = std::fs::read_to_string(fixtures().join("sysbench-t4.txt")).unwrap();
    // Cut after "File operations:" and its three lines: no latency block.
    let cut: String = sb.lines().take(26).collect::<Vec<_>>().join("\n");
    std::fs::write(dir.path().join("cut.txt"), cut).unwrap();
    let o = analyze_in(dir.path(), &["cut.txt"]);
    assert_eq!(o.status.code(), Some(2));
    let e = err_line(&o);
    assert!(
        e.starts_with("iosat: cut.txt:26: truncated sysbench output"),
        "{e}"
    );

    let io = std::fs::read_to_string(fixtures().join("iostat-x.txt")).unwrap();
    let all: Vec<&str> = io.lines().collect();
    let last = all.iter().rposition(|l| l.starts_with("vda")).unwrap();
    let mut lines: Vec<String> = io.lines().take(last + 1).map(String::from).collect();
    let keep: Vec<&str> = lines[last].split_whitespace().take(9).collect();
    lines[last] = keep.join(" ");
    std::fs::write(dir.path().join("cut.log"), lines.join("\n")).unwrap();
    let o = analyze_in(dir.path(), &["cut.log"]);
    assert_eq!(o.status.code(), Some(2));
    let e = err_line(&o);
    assert_eq!(
        e,
        format!(
            "iosat: cut.log:{}: truncated: expected 22 values for the columns of the header at line {}, got 8",
            last + 1,
            last
        )
    );

    std::fs::write(dir.path().join("notes.txt"), "just some notes\n").unwrap();
    let o = analyze_in(dir.path(), &["notes.txt"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err_line(&o).starts_with("iosat: notes.txt:1: not a known result"));

    let o = analyze_in(dir.path(), &["missing.json"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err_line(&o).starts_with("iosat: missing.json: "));

    let o = analyze_in(dir.path(), &["."]);
    assert_eq!(o.status.code(), Some(2));
    assert!(err_line(&o).contains("is a directory"));
}

#[test]
fn inconsistent_inputs_are_refused() {
    // fio and sysbench results in one analysis.
    let o = analyze(&["fio-qd1.json", "sysbench-t4.txt"]);
    assert_eq!(o.status.code(), Some(2));
    let e = err_line(&o);
    assert!(
        e.contains("holds sysbench results while fio-qd1.json holds fio results"),
        "{e}"
    );
    // Two results at concurrency 8.
    let o = analyze(&["fio-multi.json", "fio-plus-qd8.json"]);
    assert_eq!(o.status.code(), Some(2));
    let e = err_line(&o);
    assert!(e.starts_with("iosat: fio-plus-qd8.json:"), "{e}");
    assert!(
        e.contains("concurrency 8 (randread) was already given by fio-multi.json:"),
        "{e}"
    );
}

/// Fresh outputs of the installed tools, so a new fio/sysbench/sysstat release is caught:
/// 2 fio levels (1 s each), one sysbench run (1 s), one iostat interval (1 s).
#[test]
fn fresh_outputs_of_the_installed_tools() {
    if !(have("fio", "--version") && have("sysbench", "--version") && have("iostat", "-V")) {
        crate::util::skip("fio, sysbench or iostat is not installed");
        return;
    }
    let dir = crate::util::tempdir().unwrap();
    let d = dir.path();
    let data = d.join("data");
    for qd in [1, 8] {
        let out = std::process::Command::new("fio")
            .current_dir(d)
            .args([
                "--name=live",
                &format!("--filename={}", data.display()),
                "--size=16M",
                "--rw=randread",
                "--bs=4k",
                "--direct=1",
                "--ioengine=libaio",
                &format!("--iodepth={qd}"),
                "--runtime=1",
                "--time_based",
                "--output-format=json",
                &format!("--output=qd{qd}.json"),
            ])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let r: Value =
        serde_json::from_str(&stdout(&analyze_in(d, &["qd1.json", "qd8.json", "--json"]))).unwrap();
    let levels = r["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 2);
    assert_eq!(levels[1]["concurrency"], 8);
    for l in levels {
        // Little's law on a real run: fio's IOPS × lat closes on the iodepth.
        let n = l["concurrency"].as_f64().unwrap();
        let inflight =
            l["iops"].as_f64().unwrap() * l["latency_ns"]["mean"].as_f64().unwrap() / 1e9;
        assert!((inflight / n - 1.0).abs() < 0.2, "{inflight} vs {n}");
    }

    let prep = std::process::Command::new("sysbench")
        .current_dir(d)
        .args(["fileio", "--file-num=1", "--file-total-size=16M", "prepare"])
        .output()
        .unwrap();
    assert!(prep.status.success());
    let run = std::process::Command::new("sysbench")
        .current_dir(d)
        .args([
            "--threads=2",
            "--time=1",
            "fileio",
            "--file-num=1",
            "--file-total-size=16M",
            "--file-io-mode=sync",
            "--file-extra-flags=direct",
            "--file-test-mode=rndrd",
            "run",
        ])
        .output()
        .unwrap();
    assert!(run.status.success());
    std::fs::write(d.join("sb.txt"), &run.stdout).unwrap();
    let r: Value = serde_json::from_str(&stdout(&analyze_in(d, &["sb.txt", "--json"]))).unwrap();
    assert_eq!(r["levels"][0]["concurrency"], 2);
    assert!(r["levels"][0]["iops"].as_f64().unwrap() > 0.0);

    let io = std::process::Command::new("iostat")
        .args(["-x", "-y", "-t", "1", "1"])
        .output()
        .unwrap();
    assert!(io.status.success());
    std::fs::write(d.join("io.txt"), &io.stdout).unwrap();
    let r: Value = serde_json::from_str(&stdout(&analyze_in(d, &["io.txt", "--json"]))).unwrap();
    assert!(!r["devices"].as_array().unwrap().is_empty(), "{r}");
}

#[test]
fn fio_sync_latency_is_reported_and_little_sees_the_gap() {
    // psync randwrite with --fsync=4: fio's "sync" block holds the fsync latency. The write
    // latency alone leaves time unaccounted, which Little's law shows.
    let r = json(&["fio-randwrite-fsync4.json"]);
    let raw = &fixture_json("fio-randwrite-fsync4.json")["jobs"][0];
    let n = raw["sync"]["total_ios"].as_u64().unwrap();
    assert!(n > 0);
    let notes = r["source"]["notes"].to_string();
    assert!(notes.contains(&format!("also made {n} syncs")), "{notes}");
    let w = &raw["write"];
    let inflight = w["iops"].as_f64().unwrap() * w["lat_ns"]["mean"].as_f64().unwrap() / 1e9;
    let f = &r["verdict"]["levels"][0];
    assert!((f["littles_law_concurrency"].as_f64().unwrap() - inflight).abs() < 1e-9);
    assert_eq!(f["littles_law_ok"], (inflight - 1.0).abs() <= 0.2);
}

/// The last report of an iostat --pretty/-h file: for each block (header with "Device" last),
/// the header's columns and the row of `device`.
fn pretty_last_report(text: &str, device: &str) -> Vec<(Vec<String>, Vec<String>)> {
    let lines: Vec<&str> = text.lines().collect();
    // The second report starts at the second header whose first column is r/s.
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].trim_start().starts_with("r/s"))
        .collect();
    let mut out = Vec::new();
    let mut header: Vec<String> = Vec::new();
    for l in &lines[*starts.last().unwrap()..] {
        let toks: Vec<String> = l.split_whitespace().map(String::from).collect();
        if toks.last().map(String::as_str) == Some("Device") {
            header = toks[..toks.len() - 1].to_vec();
        } else if toks.last().map(String::as_str) == Some(device) {
            out.push((header.clone(), toks[..toks.len() - 1].to_vec()));
        }
    }
    out
}

#[test]
fn iostat_pretty_and_human_layouts_merge_a_report_per_device() {
    for (file, human) in [("iostat-pretty.txt", false), ("iostat-human.txt", true)] {
        let text = std::fs::read_to_string(fixtures().join(file)).unwrap();
        let r = json(&[file]);
        let devices = r["devices"].as_array().unwrap();
        assert!(devices.iter().any(|d| d["device"] == "vda"), "{file}");
        for d in devices {
            let name = d["device"].as_str().unwrap();
            // Two reports, the first since boot: one sample per device.
            assert_eq!(d["samples"].as_array().unwrap().len(), 1, "{file} {name}");
            let s = &d["samples"][0];
            let blocks = pretty_last_report(&text, name);
            assert_eq!(blocks.len(), 4, "{file} {name}: r, w, d, f blocks");
            for (cols, vals) in &blocks {
                for (c, v) in cols.iter().zip(vals) {
                    let key = match c.as_str() {
                        "r/s" | "w/s" | "rkB/s" | "wkB/s" | "aqu-sz" | "r_await" | "w_await" => {
                            c.as_str()
                        }
                        "%util" => "util",
                        _ => continue,
                    };
                    let expect = if human {
                        let (n, m) = match v.chars().last().unwrap() {
                            'k' | '%' => (&v[..v.len() - 1], 1.0),
                            'M' => (&v[..v.len() - 1], 1024.0),
                            'G' => (&v[..v.len() - 1], 1024.0 * 1024.0),
                            _ => (v.as_str(), 1.0),
                        };
                        n.parse::<f64>().unwrap() * m
                    } else {
                        v.parse::<f64>().unwrap()
                    };
                    let got = s[key].as_f64().unwrap();
                    assert!(
                        (got - expect).abs() < 1e-9,
                        "{file} {name} {key}: {got} vs {v}"
                    );
                }
            }
        }
    }
}

#[test]
fn seed001_sysbench_interval_lines_through_the_cli() {
    // Seed 001's paste, sysbench lines and iostat lines interleaved: the sysbench lines make
    // the levels; "not overloaded at 4 threads, overloaded at 64".
    let text = "[ 80s] threads: 1, tps: 9.30, reads/s: 130.20, writes/s: 0.00 response time: 171.82ms (95%)
[ 90s] threads: 1, tps: 9.20, reads/s: 128.80, writes/s: 0.00 response time: 157.72ms (95%)
[ 100s] threads: 1, tps: 9.00, reads/s: 126.00, writes/s: 0.00 response time: 215.38ms (95%)
[ 110s] threads: 1, tps: 9.30, reads/s: 130.20, writes/s: 0.00 response time: 141.39ms (95%)
Device: rrqm/s wrqm/s r/s w/s rsec/s wsec/s avgrq-sz avgqu-sz await svctm %utildm-0 0.00 0.00 127.90 0.70 4070.40 28.00 31.87 1.01 7.83 7.52 96.68
[ 110s] threads: 4, tps: 21.10, reads/s: 295.40, writes/s: 0.00 response time: 312.09ms (95%)
[ 120s] threads: 4, tps: 22.00, reads/s: 308.00, writes/s: 0.00 response time: 297.05ms (95%)
[ 130s] threads: 4, tps: 22.40, reads/s: 313.60, writes/s: 0.00 response time: 335.34ms (95%)
Device: rrqm/s wrqm/s r/s w/s rsec/s wsec/s avgrq-sz avgqu-sz await svctm %utildm-0 0.00 0.00 295.40 0.90 9372.80 35.20 31.75 4.06 13.69 3.38 100.01
[ 70s] threads: 64, tps: 42.90, reads/s: 600.60, writes/s: 0.00 response time: 2516.43ms (95%)
[ 80s] threads: 64, tps: 42.40, reads/s: 593.60, writes/s: 0.00 response time: 2613.15ms (95%)
[ 90s] threads: 64, tps: 44.80, reads/s: 627.20, writes/s: 0.00 response time: 2404.49ms (95%)
";
    let dir = crate::util::tempdir().unwrap();
    std::fs::write(dir.path().join("seed001.txt"), text).unwrap();
    let r: Value =
        serde_json::from_str(&stdout(&analyze_in(dir.path(), &["seed001.txt", "--json"]))).unwrap();
    assert_eq!(r["source"]["tool"], "sysbench");
    let f = r["verdict"]["levels"].as_array().unwrap();
    assert_eq!(f[1]["concurrency"], 4);
    assert_eq!(f[1]["overloaded"], false);
    assert_eq!(f[2]["concurrency"], 64);
    assert_eq!(f[2]["overloaded"], true);
    assert_eq!(r["verdict"]["overload_concurrency"], 64);
    assert_eq!(r["verdict"]["knee_concurrency"], 4);
}

#[test]
fn levels_without_throughput_or_latency_are_refused() {
    let dir = crate::util::tempdir().unwrap();
    std::fs::write(
        dir.path().join("zero.json"),
        r#"{"jobs": [{"jobname": "x", "read": {"iops": 100, "bw": 400, "lat_ns": {"mean": 0}}}]}"#,
    )
    .unwrap();
    let o = analyze_in(dir.path(), &["zero.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err_line(&o).starts_with("iosat: zero.json:1: x: expected a concurrency of at least 1 and positive IOPS and mean latency"),
        "{}",
        err_line(&o)
    );
    std::fs::write(
        dir.path().join("t0.txt"),
        "sysbench 1.0.20\nNumber of threads: 0\nFile operations:\n reads/s: 10\nLatency (ms):\n avg: 1.0\n",
    )
    .unwrap();
    let o = analyze_in(dir.path(), &["t0.txt"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err_line(&o).contains("got concurrency 0"),
        "{}",
        err_line(&o)
    );
}

#[test]
fn readme_example_is_what_the_binary_prints() {
    // The example's reference page (the README is a front door since issue 24).
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/analyze.md"))
            .unwrap();
    let cmd = "$ iosat analyze fio-qd1.json fio-qd4.json fio-qd16.json fio-qd64.json\n";
    let start = readme
        .find(cmd)
        .expect("docs/analyze.md has the fio example")
        + cmd.len();
    let shown = &readme[start..start + readme[start..].find("```").unwrap()];
    assert_eq!(shown, stdout(&analyze(&FIO_QD)));
}

/// A page-cache run whose avg prints as 0.00 ms (sysbench 1.0.20, README in the fixtures)
/// beside two direct-I/O runs: the mean is sum ÷ events, and the analysis goes through.
#[test]
fn sysbench_avg_of_zero_is_sum_over_events_in_a_multi_file_analysis() {
    let r = json(&[
        "sysbench-pagecache-t1.txt",
        "sysbench-t4.txt",
        "sysbench-t16.txt",
    ]);
    let l = &r["levels"][0];
    assert_eq!(l["concurrency"], 1);
    assert_eq!(l["iops"].as_f64().unwrap(), 536_439.84);
    // sysbench: sum 915.45 ms over 536860 events.
    let mean = l["latency_ns"]["mean"].as_f64().unwrap();
    assert!((mean - 915.45e6 / 536_860.0).abs() < 1e-3, "{mean}");
    assert_eq!(r["levels"].as_array().unwrap().len(), 3);
    let notes = r["source"]["notes"].to_string();
    assert!(notes.contains("sum ÷ events"), "{notes}");
}

/// sysbench 1.1's `Throughput:` layout (hand-made from sysbench-rndrw-t2.txt's numbers in
/// the layout of sysbench's own tests/t/test_fileio.t) reads as the 1.0 file does.
#[test]
fn sysbench_1_1_layout_reads_like_1_0() {
    let new = json(&["sysbench-1.1-rndrw-t2.txt"]);
    let old = json(&["sysbench-rndrw-t2.txt"]);
    assert_eq!(
        new["source"]["files"][0]["version"],
        "sysbench 1.1.0-df89d34"
    );
    let (l, o) = (&new["levels"][0], &old["levels"][0]);
    for k in ["concurrency", "iops", "bytes_per_s", "latency_ns"] {
        assert_eq!(l[k], o[k], "{k}");
    }
    // sysbench's events per second: 8401.28 reads + 5599.52 writes + 141.84 fsyncs.
    assert!((l["iops"].as_f64().unwrap() - 14_142.64).abs() < 1e-6);
    assert_eq!(l["latency_ns"]["mean"].as_f64().unwrap(), 140_000.0);
}

/// Time going back in a pt-stalk file (fixture: pt-stalk-loop.diskstats with an extra `TS`
/// line at the top and the clock stepped back an hour before the 5th sample) loses only the
/// interval across the step, and says so.
#[test]
fn pt_stalk_clock_step_keeps_every_other_interval() {
    let orig = json(&["pt-stalk-loop.diskstats", "--device", "loop1"]);
    let step = json(&["pt-stalk-clock-step.diskstats", "--device", "loop1"]);
    let samples = |r: &Value| r["devices"][0]["samples"].as_array().unwrap().clone();
    let (o, s) = (samples(&orig), samples(&step));
    assert_eq!((o.len(), s.len()), (7, 6));
    for (a, b) in s.iter().zip(o[..3].iter().chain(&o[4..])) {
        for k in [
            "r/s", "w/s", "rkB/s", "wkB/s", "r_await", "w_await", "aqu-sz", "util",
        ] {
            assert_eq!(a[k], b[k], "{k}");
        }
    }
    let notes = step["source"]["notes"].to_string();
    assert!(
        notes.contains("line 46: time goes back 3599.486 s"),
        "{notes}"
    );
    assert!(
        notes.contains("line 1: a sample without /proc/diskstats lines"),
        "{notes}"
    );
}

/// Partitions as kernels before 2.6.25 print them (7 fields) no longer stop the import; the
/// disk's intervals are iostat -x's (hand-computed in stat.rs's test of the same file).
#[test]
fn pre_2_6_25_file_reports_the_whole_disks() {
    let r = json(&["pt-diskstats-2.6.18.diskstats"]);
    let d = &r["devices"][0];
    assert_eq!(d["device"], "sda");
    let s = d["samples"].as_array().unwrap();
    assert_eq!(s.len(), 2);
    assert_eq!(
        (s[0]["r/s"].as_f64(), s[0]["w/s"].as_f64()),
        (Some(200.0), Some(100.0))
    );
    assert_eq!(
        (s[0]["r_await"].as_f64(), s[0]["w_await"].as_f64()),
        (Some(4.0), Some(15.0))
    );
    assert_eq!(
        (s[1]["util"].as_f64(), s[1]["aqu-sz"].as_f64()),
        (Some(80.0), Some(2.4))
    );
    let notes = r["source"]["notes"].to_string();
    assert!(
        notes.contains("partition sda1 as kernels before 2.6.25"),
        "{notes}"
    );
}

/// `LC_ALL=C iostat -xs -d -t 1 3` and `iostat -xs -o JSON -d 1 2` (sysstat 12.6.1, the
/// short extended layout): tps, kB/s and await as iostat printed them, no invented r/s or
/// w/s, and a device doing I/O is judged, not called idle.
#[test]
fn iostat_short_layout_reads_totals() {
    let r = json(&["iostat-xs.txt", "--device", "vda"]);
    let vda = r["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["device"] == "vda")
        .unwrap();
    let s = vda["samples"].as_array().unwrap();
    // The since-boot report is left out; then "vda 52.00 49868.00 0.00 2.33 959.00 0.12
    // 0.80" and "vda 24.00 220.00 0.00 0.29 9.17 0.01 0.00".
    assert_eq!(s.len(), 2);
    assert_eq!(s[0]["tps"], 52.0);
    assert_eq!(s[0]["kB/s"], 49868.0);
    assert_eq!(s[0]["await"], 2.33);
    assert_eq!(s[0]["aqu-sz"], 0.12);
    assert_eq!(s[0]["util"], 0.8);
    assert_eq!(s[1]["tps"], 24.0);
    for x in s {
        assert!(x["r/s"].is_null() && x["w/s"].is_null(), "{x}");
    }
    let d = vda["diagnosis"].to_string();
    assert!(!d.contains("nothing to judge"), "{d}");
    // The 52 requests a second of 959 KiB at 2.33 ms are no queue of the 9 KiB requests'
    // 0.29 ms (0.8 % busy, 15 in flight while busy): said, and not judged against it.
    assert!(d.contains("0.29 ms (median of 1 interval)"), "{d}");
    assert!(
        d.contains("1 interval of requests of another size (the first at 11/22/26 14:35:15: 959 KiB on average, await 2.33 ms) is not judged"),
        "{d}"
    );
    assert!(
        !d.contains("overloaded") && !d.contains("saturated but"),
        "{d}"
    );
    let notes = r["source"]["notes"].to_string();
    assert!(notes.contains("short layout (-s)"), "{notes}");
    // The JSON form: the same keys.
    let j = json(&["iostat-xs.json"]);
    let raw = fixture_json("iostat-xs.json");
    let last = raw["sysstat"]["hosts"][0]["statistics"][1]["disk"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["disk_device"] == "vda")
        .unwrap()
        .clone();
    let vda = j["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["device"] == "vda")
        .unwrap();
    let s = &vda["samples"][0];
    for k in ["tps", "kB/s", "await", "aqu-sz", "util"] {
        assert_eq!(s[k], last[k], "{k}");
    }
    assert!(s["r/s"].is_null());
}

/// Flushes kept apart from await (hand-made sysstat 12 `iostat -x` log, README in the
/// fixtures): vdb does only flushes (16/s at 60 ms), vdc 100 writes/s at 1 ms plus 50
/// flushes/s at 60 ms. sysstat's await (its -xs column) leaves flushes out: vdb has none,
/// vdc's is its writes' 1.00 ms; the flush latency is said apart as f_await.
#[test]
fn flushes_are_kept_apart_from_await() {
    let r = json(&["iostat-x-flushes.txt"]);
    let dev = |n: &str| {
        r["devices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["device"] == n)
            .unwrap()
            .clone()
    };
    let (vdb, vdc) = (dev("vdb"), dev("vdc"));
    assert_eq!(vdb["samples"][0]["f_await"], 60.0);
    let b = vdb["diagnosis"].to_string();
    assert!(!b.contains("baseline"), "{b}");
    assert!(
        b.contains("f_await 60.00 ms (median of 3 intervals with flushes)"),
        "{b}"
    );
    let c = vdc["diagnosis"].to_string();
    assert!(c.contains("the reference await is 1.00 ms"), "{c}");
    assert!(c.contains("f_await 60.00 ms"), "{c}");
    assert!(!c.contains("Little's law does not close"), "{c}");
    let t = stdout(&analyze(&["iostat-x-flushes.txt"]));
    let row = t.lines().find(|l| l.starts_with("vdc ")).unwrap();
    assert!(row.contains("   1.00    3.10  99.00"), "{row}");
}

#[test]
fn one_level_is_shown_but_not_judged() {
    // Exit 0 (single-level imports are valid input, and their JSON is what scripts read), but
    // the verdict says why there is none, and the typed verdict carries the flag.
    let out = stdout(&analyze(&["fio-qd1.json"]));
    assert!(out.contains("a verdict needs at least two levels"), "{out}");
    assert!(!out.contains("Knee"), "{out}");
    let j = json(&["fio-qd1.json"]);
    assert_eq!(j["verdict"]["too_few_levels"], true);
    assert!(j["verdict"].get("usl").map_or(true, Value::is_null));
    // Two levels are enough.
    let out = stdout(&analyze(&["fio-qd1.json", "fio-qd4.json"]));
    assert!(out.contains("Knee (optimal concurrency)"));
    assert!(out.contains("No USL fit: 2 levels are too few"), "{out}");
}
