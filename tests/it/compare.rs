//! `iosat compare`: two sim sweeps side by side (snapshot of the text, the page checked in
//! headless Chromium), a sweep beside analyzed fio runs, every format, fsync results, and the
//! refusals: mixed kinds (usage, 2),
//! a missing file (1), an existing --html file.

use crate::util::{assert_refusals, fixture, iosat, ok_json, ok_stdout, stderr, SimSweep};
use std::path::{Path, PathBuf};

/// A sim sweep saved as JSON in `dir/name`: `units` parallel units, so two devices of known
/// knees (the sim is deterministic: simulated time, seeded).
fn sim_sweep(dir: &Path, name: &str, units: u32) -> PathBuf {
    SimSweep::quick(&format!("sim:units={units},service=1ms"), "1,2,4,8,16").save(dir.join(name))
}

fn compare(args: &[&Path], extra: &[&str]) -> std::process::Output {
    iosat()
        .arg("compare")
        .args(args)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn two_sweeps_side_by_side_with_the_differences_in_words() {
    let d = crate::util::tempdir().unwrap();
    let a = sim_sweep(d.path(), "a.json", 4);
    let b = sim_sweep(d.path(), "b.json", 8);
    let text = ok_stdout(&compare(&[&a, &b], &[]));
    insta::assert_snapshot!("compare_two_sim_sweeps", text);
    // A device with twice the parallel units: the knee doubles, and it is said in words.
    assert!(text.contains("knee 4 → 8"), "{text}");
    assert!(text.contains("max useful IOPS +100 %"), "{text}");
    assert!(text.contains("baseline unchanged"), "{text}");
    // Markdown, CSV and JSON carry the same comparison.
    let md = ok_stdout(&compare(&[&a, &b], &["--markdown"]));
    assert!(md.starts_with("# iosat compare: sweep") && md.contains("| knee "));
    let csv = ok_stdout(&compare(&[&a, &b], &["--csv"]));
    assert!(csv.starts_with("conc,IOPS_A,IOPS_B,"), "{csv}");
    let json = ok_json(&compare(&[&a, &b], &["--json"]));
    assert_eq!(json["kind"], "compare");
    assert_eq!(json["schema_version"], 1);
    assert_eq!(json["of"], "sweep");
    assert_eq!(json["runs"].as_array().unwrap().len(), 2);
    assert!(json["differences"][0]
        .as_str()
        .unwrap()
        .contains("knee 4 → 8"));
}

#[test]
fn a_saved_older_file_compares_with_a_new_one() {
    // The fixture was written by an earlier iosat (report::load reads its schema version).
    let d = crate::util::tempdir().unwrap();
    let b = sim_sweep(d.path(), "new.json", 4);
    let old = fixture("report").join("sim_sweep.json");
    let text = ok_stdout(&compare(&[&old, &b], &[]));
    assert!(text.contains("A = sim_sweep.json") && text.contains("B = new.json"));
}

#[test]
fn fsync_results_compare_case_by_case() {
    let d = crate::util::tempdir().unwrap();
    let a = fixture("report").join("fsync.json");
    let b = d.path().join("again.json");
    std::fs::copy(&a, &b).unwrap();
    let text = ok_stdout(&compare(&[&a, &b], &[]));
    assert!(text.contains("Commit latency per case"), "{text}");
    assert!(text.contains("flush verdict unchanged"), "{text}");
    assert!(text.contains("32 other cases unchanged"), "{text}");
    // The page: both runs' percentiles per case on one chart.
    let page = d.path().join("fsync.html");
    ok_stdout(&compare(&[&a, &b], &["--html", page.to_str().unwrap()]));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("fsync 4 KiB overwrite (A)") && html.contains("fsync 4 KiB overwrite (B)")
    );
    if let Some(bin) = crate::report::chromium() {
        crate::report::check_page(&bin, d.path(), "compare-fsync", &html, 1);
    }
}

#[test]
fn mixed_kinds_are_refused_naming_both_files() {
    let d = crate::util::tempdir().unwrap();
    let a = sim_sweep(d.path(), "a.json", 4);
    let f = fixture("report").join("fsync.json");
    let out = compare(&[&a, &f], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    for w in ["fsync.json", "an fsync result", "a.json", "a sweep result"] {
        assert!(err.contains(w), "{w} missing: {err}");
    }
    assert!(out.stdout.is_empty());
}

/// The first thing a benchmarker tries: an iosat sweep beside fio runs at the same depths
/// (analyzed). Set side by side by concurrency, with the generators' difference said first; an
/// analysis without levels (an iostat log) still cannot stand beside a sweep.
#[test]
fn a_sweep_stands_beside_analyzed_fio_runs_at_the_same_depths() {
    let d = crate::util::tempdir().unwrap();
    let sweep =
        SimSweep::quick("sim:units=4,service=1ms", "1,4,16,64").save(d.path().join("sweep.json"));
    let fio = d.path().join("fio.json");
    let out = iosat()
        .arg("analyze")
        .args(
            [
                "fio-qd1.json",
                "fio-qd4.json",
                "fio-qd16.json",
                "fio-qd64.json",
            ]
            .map(|f| fixture("import").join(f)),
        )
        .arg("--json")
        .output()
        .unwrap();
    std::fs::write(&fio, ok_stdout(&out)).unwrap();
    let text = ok_stdout(&compare(&[&sweep, &fio], &[]));
    let caveat = text
        .find("B is fio's runs and A is iosat's sweep")
        .unwrap_or_else(|| panic!("no caveat naming the generators:\n{text}"));
    assert!(
        caveat < text.find("Levels:").expect("a levels table"),
        "{text}"
    );
    // Each depth on one row, the sim's figures beside fio's.
    let fio_json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&fio).unwrap()).unwrap();
    for l in fio_json["levels"].as_array().unwrap() {
        let c = l["concurrency"].as_u64().unwrap();
        let sim_iops = 1000 * c.min(4);
        let row = text
            .lines()
            .find(|r| r.split_whitespace().next() == Some(&c.to_string()))
            .unwrap_or_else(|| panic!("no row for {c}:\n{text}"));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cells[1], sim_iops.to_string(), "{row}");
        assert_eq!(
            cells[2],
            format!("{:.0}", l["iops"].as_f64().unwrap()),
            "{row}"
        );
    }
    let json = ok_json(&compare(&[&sweep, &fio], &["--json"]));
    assert_eq!(json["of"], "sweep and analyze", "{json}");
    // An iostat log's analysis has no levels: still refused beside a sweep.
    let log = d.path().join("log.json");
    let out = iosat()
        .arg("analyze")
        .arg(fixture("import").join("iostat-xt.txt"))
        .arg("--json")
        .output()
        .unwrap();
    std::fs::write(&log, ok_stdout(&out)).unwrap();
    let out = compare(&[&sweep, &log], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("log.json"), "{}", stderr(&out));
}

#[test]
fn a_missing_or_bad_file_is_one_line_naming_it() {
    let d = crate::util::tempdir().unwrap();
    let a = sim_sweep(d.path(), "a.json", 4);
    let missing = d.path().join("missing.json");
    let bad = d.path().join("bad.json");
    std::fs::write(&bad, "{not json").unwrap();
    let [a_, missing_, bad_] = [&a, &missing, &bad].map(|p| p.to_str().unwrap());
    assert_refusals(&[
        (&["compare", a_, missing_], 1, "missing.json: No such file"),
        (&["compare", a_, bad_], 2, "bad.json:1: not JSON"),
    ]);
    // One file is not a comparison (clap's usage error, several lines).
    let out = compare(&[&a], &[]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_page_overlays_the_runs_and_renders_in_chromium() {
    let d = crate::util::tempdir().unwrap();
    let a = sim_sweep(d.path(), "a.json", 4);
    let b = sim_sweep(d.path(), "b.json", 8);
    let page = d.path().join("c.html");
    let out = compare(&[&a, &b], &["--html", page.to_str().unwrap()]);
    ok_stdout(&out);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<title>iosat compare (sweep): a.json vs b.json</title>"));
    // Both runs on each chart: throughput, latency (avg and p95), the hockey stick.
    for id in ["compare-throughput", "compare-latency", "compare-hockey"] {
        let chart = html.split(&format!("id=\"{id}\"")).nth(1).unwrap();
        let chart = chart.split("</svg>").next().unwrap();
        for run in ["A: a.json", "B: b.json"] {
            assert!(chart.contains(run), "{id} lacks {run}");
        }
    }
    // An existing page is not replaced without --force.
    let before = std::fs::read(&page).unwrap();
    let out = compare(&[&a, &b], &["--html", page.to_str().unwrap()]);
    assert_ne!(out.status.code(), Some(0));
    assert_eq!(std::fs::read(&page).unwrap(), before);
    let out = compare(&[&a, &b], &["--html", page.to_str().unwrap(), "--force"]);
    ok_stdout(&out);
    let Some(bin) = crate::report::chromium() else {
        crate::util::skip("chromium check of the compare page: no chromium");
        return;
    };
    let dir = crate::util::tempdir().unwrap();
    crate::report::check_page(&bin, dir.path(), "compare", &html, 3);
}

#[test]
fn analyses_of_device_logs_compare_device_by_device() {
    // iostat on one host against pt-diskstats samples of the same device name, read from a
    // directory with a long path (a CI runner's checkout: each page names its files, and two
    // long paths side by side once ran the context table past 1280 px).
    let d = crate::util::tempdir().unwrap();
    let long = d
        .path()
        .join(format!("logs-{}", "of-a-host-in-a-fleet-".repeat(4)));
    std::fs::create_dir(&long).unwrap();
    let mut files = Vec::new();
    for (name, src) in [
        ("iostat.json", "iostat-xt.txt"),
        ("pt.json", "pt-stalk-loop.diskstats"),
    ] {
        let input = long.join(src);
        std::fs::copy(fixture("import").join(src), &input).unwrap();
        let out = iosat()
            .arg("analyze")
            .arg(&input)
            .arg("--json")
            .output()
            .unwrap();
        let path = d.path().join(name);
        std::fs::write(&path, ok_stdout(&out)).unwrap();
        files.push(path);
    }
    let text = ok_stdout(&compare(&[&files[0], &files[1]], &[]));
    assert!(
        text.contains("Devices:") && text.contains("peak_await_ms"),
        "{text}"
    );
    assert!(text.contains("B against A: vda: requests/s"), "{text}");
    let page = d.path().join("dev.html");
    ok_stdout(&compare(
        &[&files[0], &files[1]],
        &["--html", page.to_str().unwrap()],
    ));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("<svg").count(), 1, "one await chart for vda");
    if let Some(bin) = crate::report::chromium() {
        crate::report::check_page(&bin, d.path(), "compare-devices", &html, 1);
    }
}

#[test]
fn every_difference_is_in_every_format() {
    let d = crate::util::tempdir().unwrap();
    let a = sim_sweep(d.path(), "a.json", 4);
    let b = sim_sweep(d.path(), "b.json", 8);
    let f = fixture("report").join("fsync.json");
    let g = d.path().join("again.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    // A slower second run: its differences are sentences of their own.
    for c in doc["cases"].as_array_mut().unwrap() {
        let mean = c["latency_ns"]["mean"].as_u64().unwrap();
        c["latency_ns"]["mean"] = (mean * 2).into();
    }
    std::fs::write(&g, doc.to_string()).unwrap();
    for (what, x, y) in [("sweeps", &a, &b), ("fsync runs", &f, &g)] {
        let json = ok_json(&compare(&[x, y], &["--json"]));
        let said: Vec<String> = json["differences"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect();
        // Text and Markdown as `iosat compare` prints them, the page as it writes it.
        let render = |format: &str| -> String {
            match format {
                "text" => ok_stdout(&compare(&[x, y], &[])),
                "markdown" => ok_stdout(&compare(&[x, y], &["--markdown"])),
                _ => {
                    let page = d.path().join(format!("{}.html", what.replace(' ', "_")));
                    let _ = std::fs::remove_file(&page);
                    ok_stdout(&compare(&[x, y], &["--html", page.to_str().unwrap()]));
                    std::fs::read_to_string(&page).unwrap()
                }
            }
        };
        crate::report::said_in_every_format(what, render, &said);
    }
}

/// What makes two runs incomparable is said before any number (issue 38): a disturbed run
/// beside a clean one, and two runs of different patterns.
#[test]
fn caveats_come_before_the_numbers() {
    let d = crate::util::tempdir().unwrap();
    let clean = sim_sweep(d.path(), "clean.json", 4);
    // The same run, its levels from concurrency 2 on measured while 40 % of each request's
    // latency was a wait for a CPU; the verdict is left out, so the loader judges the levels.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&clean).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("verdict");
    for l in v["levels"].as_array_mut().unwrap() {
        let mean = l["latency_ns"]["mean"].as_f64().unwrap();
        if l["concurrency"].as_u64().unwrap() >= 2 {
            l["disturbance"] = serde_json::json!({ "cpu_wait_ns_per_io": 0.4 * mean });
        }
    }
    let busy = d.path().join("busy.json");
    std::fs::write(&busy, serde_json::to_string(&v).unwrap()).unwrap();
    let text = ok_stdout(&compare(&[&busy, &clean], &[]));
    let caveat = text
        .find("A was disturbed (concurrency 2, 4, 8 and 16 disturbed)")
        .unwrap_or_else(|| panic!("{text}"));
    let numbers = text.find("Levels").unwrap();
    assert!(caveat < numbers, "{text}");
    assert!(!text.contains("B was disturbed"), "{text}");
    let json = ok_json(&compare(&[&busy, &clean], &["--json"]));
    assert!(json["caveats"][0]
        .as_str()
        .unwrap()
        .starts_with("A was disturbed"));
    // Like for like: no caveat at all.
    let twin = sim_sweep(d.path(), "twin.json", 4);
    let text = ok_stdout(&compare(&[&clean, &twin], &[]));
    assert!(!text.contains("Caveats"), "{text}");

    // Two patterns: named, with both values, before the numbers.
    let writes = SimSweep::quick("sim:units=4,service=1ms", "1,2,4,8,16")
        .args(&["--pattern", "randwrite"])
        .save(d.path().join("writes.json"));
    let text = ok_stdout(&compare(&[&clean, &writes], &[]));
    let caveat = text
        .find("B is not like A — pattern randwrite against randread")
        .unwrap_or_else(|| panic!("{text}"));
    assert!(caveat < text.find("Levels").unwrap(), "{text}");
}
