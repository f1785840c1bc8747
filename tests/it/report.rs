//! `iosat report` and `--html`: Markdown/CSV snapshots of the three result kinds (a sim sweep,
//! a real fsync run, a real recording of fio on a loop device), the numbers checked against
//! their sources, every page drawn in headless Chromium (DOM checked, screenshot kept under
//! target/test-artifacts/), and `--html` on sweep, fsync and stat refusing to overwrite.

use crate::util::{iosat, ok_stdout};
use serde_json::Value;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn fixture(name: &str) -> PathBuf {
    crate::util::fixture("report").join(name)
}

fn report(args: &[&str]) -> Output {
    iosat().arg("report").args(args).output().unwrap()
}

/// A profile directory holding one profile: the sim sweep saved under the id the recording
/// fixture's `I` line gives loop1.
fn profile_dir() -> tempfile::TempDir {
    let d = crate::util::tempdir().unwrap();
    std::fs::copy(fixture("sim_sweep.json"), d.path().join("loop1-test.json")).unwrap();
    d
}

fn recording(format: &str) -> String {
    let prof = profile_dir();
    let dir = prof.path().to_str().unwrap().to_string();
    let out = report(&[
        fixture("loop.rec").to_str().unwrap(),
        "--format",
        format,
        "--profile-dir",
        &dir,
    ]);
    ok_stdout(&out).replace(&dir, "PROFILE_DIR")
}

#[test]
fn sweep_markdown_and_csv() {
    let f = fixture("sim_sweep.json");
    insta::assert_snapshot!(
        "sweep_markdown",
        ok_stdout(&report(&[f.to_str().unwrap(), "--format", "markdown"]))
    );
    insta::assert_snapshot!(
        "sweep_csv",
        ok_stdout(&report(&[f.to_str().unwrap(), "--format", "csv"]))
    );
}

/// `iosat sweep --engine sim:... ARGS` with fast levels; the sim engine is deterministic
/// (simulated time, seeded), so two runs measure the same levels.
fn sim_sweep(args: &[&str]) -> String {
    crate::util::SimSweep::small().args(args).stdout()
}

#[test]
fn sweep_prints_what_report_prints_from_its_json() {
    let d = crate::util::tempdir().unwrap();
    let saved = d.path().join("sweep.json");
    let json = sim_sweep(&["--json"]);
    std::fs::write(&saved, &json).unwrap();
    // The same levels on a second run: what makes comparing two runs' bytes fair.
    let levels = |text: &str| serde_json::from_str::<Value>(text).unwrap()["levels"].clone();
    assert_eq!(levels(&json), levels(&sim_sweep(&["--json"])));
    for (flag, format) in [("--markdown", "markdown"), ("--csv", "csv")] {
        let live = sim_sweep(&[flag]);
        let from_json = ok_stdout(&report(&[saved.to_str().unwrap(), "--format", format]));
        assert_eq!(live, from_json, "sweep {flag} vs report --format {format}");
        assert!(live.lines().count() > 3, "{live}");
    }
}

#[test]
fn analyze_prints_what_report_prints_from_its_json() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/import");
    let analyze = |files: &[&str], flag: &str| {
        let out = iosat()
            .current_dir(&fixtures)
            .arg("analyze")
            .args(files)
            .arg(flag)
            .output()
            .unwrap();
        ok_stdout(&out)
    };
    let d = crate::util::tempdir().unwrap();
    let sets: [&[&str]; 3] = [
        &[
            "fio-qd1.json",
            "fio-qd4.json",
            "fio-qd16.json",
            "fio-qd64.json",
        ],
        &["sysbench-t1.txt", "sysbench-t4.txt", "sysbench-t16.txt"],
        &["iostat-x.txt"],
    ];
    for files in sets {
        let saved = d.path().join("analyze.json");
        std::fs::write(&saved, analyze(files, "--json")).unwrap();
        for (flag, format) in [("--markdown", "markdown"), ("--csv", "csv")] {
            let live = analyze(files, flag);
            let from_json = ok_stdout(&report(&[saved.to_str().unwrap(), "--format", format]));
            assert_eq!(live, from_json, "analyze {files:?} {flag} vs report");
            assert!(live.lines().count() >= 3, "{live}");
        }
    }
}

#[test]
fn a_result_of_a_newer_schema_is_refused_saying_why() {
    let d = crate::util::tempdir().unwrap();
    let p = d.path().join("future.json");
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("sim_sweep.json")).unwrap()).unwrap();
    doc["schema_version"] = 2.into();
    std::fs::write(&p, doc.to_string()).unwrap();
    let out = report(&[p.to_str().unwrap(), "--format", "markdown"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        err.contains("future.json") && err.contains("schema_version 2"),
        "{err}"
    );
}

#[test]
fn fsync_markdown_and_csv() {
    let f = fixture("fsync.json");
    insta::assert_snapshot!(
        "fsync_markdown",
        ok_stdout(&report(&[f.to_str().unwrap(), "--format", "markdown"]))
    );
    insta::assert_snapshot!(
        "fsync_csv",
        ok_stdout(&report(&[f.to_str().unwrap(), "--format", "csv"]))
    );
}

#[test]
fn recording_markdown_and_csv() {
    insta::assert_snapshot!("recording_markdown", recording("markdown"));
    insta::assert_snapshot!("recording_csv", recording("csv"));
}

#[test]
fn stat_has_one_csv_layout_live_replayed_and_reported() {
    // Issue 16: one CSV layout per result kind, the live command's and `report`'s alike.
    let prof = profile_dir();
    let dir = prof.path().to_str().unwrap();
    let rec = fixture("loop.rec");
    let stat = |fmt: &str| {
        ok_stdout(
            &iosat()
                .args(["stat", "--all", fmt, "--profile-dir", dir, "--replay"])
                .arg(&rec)
                .output()
                .unwrap(),
        )
    };
    let live_csv = stat("--csv");
    // A recording, reported.
    let csv = recording("csv").replace("PROFILE_DIR", dir);
    assert_eq!(csv, live_csv);
    // stat's JSON lines, reported.
    let tmp = crate::util::tempdir().unwrap();
    let lines = tmp.path().join("stat.jsonl");
    std::fs::write(&lines, stat("--json")).unwrap();
    let from_json = ok_stdout(&report(&[lines.to_str().unwrap(), "--format", "csv"]));
    assert_eq!(from_json, live_csv);
    let header = live_csv.lines().next().unwrap();
    assert!(
        header.starts_with("timestamp,") && !header.contains('%'),
        "{header}"
    );
    assert!(live_csv.lines().count() > 3, "{live_csv}");
}

/// `report` of a recording writes the CSV `stat --csv --replay` writes of it, learned
/// judgements included: the CSV path replayed without learning, so a device judged by what
/// its own traffic taught (`learned_estimate`, then `learned`) read `none` in the reported CSV
/// and the same intervals' rows in stat's differed. (The fixture above is too short to learn.)
#[test]
fn a_reported_recordings_csv_carries_what_learning_judged_as_stats_does() {
    // 1,000 reads of 4 KiB a second at one in flight, 1 ms each.
    let rec = crate::util::sdx_recording(60, |_| (1000, 8, 1000, 1000));
    let dir = crate::util::tempdir().unwrap();
    let path = dir.path().join("steady.rec");
    std::fs::write(&path, rec).unwrap();
    let stat = ok_stdout(
        &iosat()
            .args(["stat", "--all", "--csv", "--replay"])
            .arg(&path)
            .output()
            .unwrap(),
    );
    let reported = ok_stdout(&report(&[path.to_str().unwrap(), "--format", "csv"]));
    assert_eq!(reported, stat);
    let header: Vec<&str> = stat.lines().next().unwrap().split(',').collect();
    let basis = header.iter().position(|h| *h == "basis").unwrap();
    let last = stat.lines().last().unwrap().split(',').nth(basis).unwrap();
    assert_eq!(last, "learned", "{stat}");
}

/// The page's summary counts the time overloaded out of the time judged: a device learned
/// from its own traffic is unknown until its baseline (its first ~30 intervals here), and
/// those intervals are not "not overloaded". The figures are the judgements' own (stat's
/// JSON of the same recording), and the recorded time is said beside them.
#[test]
fn the_pages_time_overloaded_is_out_of_the_time_judged() {
    // 60 s at one in flight (1 ms a read), 20 s at 8 in flight and 8 ms (overloaded by the
    // baseline: loaded, 8x), then 10 s at one in flight again.
    let rec = crate::util::sdx_recording(90, |s| match s {
        60..80 => (1000, 8, 8000, 1000),
        _ => (1000, 8, 1000, 1000),
    });
    let dir = crate::util::tempdir().unwrap();
    let path = dir.path().join("overload.rec");
    std::fs::write(&path, rec).unwrap();
    let json = ok_stdout(
        &iosat()
            .args(["stat", "--json", "--replay"])
            .arg(&path)
            .output()
            .unwrap(),
    );
    let (mut over, mut judged, mut total) = (0.0, 0.0, 0.0);
    for l in json.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        let d = &v["devices"][0];
        let s = d["interval_s"].as_f64().unwrap_or(1.0);
        total += s;
        match d["judgement"]["state"].as_str().unwrap() {
            "unknown" => {}
            "overloaded" => (over, judged) = (over + s, judged + s),
            _ => judged += s,
        }
    }
    assert!((over - 20.0_f64).abs() < 1e-6, "{over} s overloaded");
    assert!(
        judged < total - 5.0,
        "{judged} s judged of {total} s: no learning time?"
    );
    let md = ok_stdout(&report(&[path.to_str().unwrap(), "--format", "markdown"]));
    let cell = format!("{over:.1} s of {judged:.1} s judged ({total:.1} s recorded)");
    let row = md.lines().find(|l| l.starts_with("| sdx")).unwrap_or("");
    assert!(
        row.contains(&cell),
        "no {cell:?} in the summary row: {row}\n{md}"
    );
}

/// A recording whose last second held 2 writes after 45 s of reads at one in flight (1 ms):
/// the last interval's learned judgement is the writes', which learned nothing. Its page, the
/// page of `stat --json` of it and `analyze` said "no baseline yet" or "saturation not judged
/// … let iosat learn the baseline from the traffic" of a device learned for 45 s; all three
/// judge by the reads' learned baseline.
#[test]
fn a_file_that_ends_on_a_few_writes_keeps_its_learned_baseline() {
    let mut rec = crate::util::sdx_recording(45, |_| (1000, 8, 1000, 1000));
    rec.push_str(&format!(
        "T {} {}\n   8       0 sdx 45000 0 360000 45000 2 0 16 1 0 45001 45001 0 0 0 0 0 0\n",
        1_000_000_000_000i64 + 46_000_000_000,
        1_795_333_857_000_000_000i64 + 46_000_000_000
    ));
    let dir = crate::util::tempdir().unwrap();
    let path = dir.path().join("writes-last.rec");
    std::fs::write(&path, rec).unwrap();
    let json = ok_stdout(
        &iosat()
            .args(["stat", "--json", "--replay"])
            .arg(&path)
            .output()
            .unwrap(),
    );
    // What stat said at the last interval: nothing learned judges its writes.
    let last: Value = serde_json::from_str(json.lines().last().unwrap()).unwrap();
    let d = &last["devices"][0];
    assert_eq!(d["judgement"]["direction"], "write", "{d}");
    assert!(d["learned"]["baseline_latency_ns"].is_null(), "{d}");
    let json_path = dir.path().join("stat.json");
    std::fs::write(&json_path, &json).unwrap();
    for input in [&path, &json_path] {
        let md = ok_stdout(&report(&[input.to_str().unwrap(), "--format", "markdown"]));
        assert!(
            md.contains(
                "sdx: judged against the baseline learned (read, <=8KiB) from its own traffic"
            ),
            "{}: {md}",
            input.display()
        );
        assert!(!md.contains("sdx: saturation not judged"), "{md}");
    }
    let out = iosat()
        .args(["analyze", "--json"])
        .arg(&path)
        .output()
        .unwrap();
    let a: Value = serde_json::from_str(&ok_stdout(&out)).unwrap();
    let l = &a["devices"][0]["learned"];
    assert_eq!(l["direction"], "read", "{l}");
    let b = l["baseline_latency_ns"]
        .as_f64()
        .expect("the reads' baseline");
    assert!((b / 1e6 - 1.0).abs() < 0.05, "{l}");
    let text = ok_stdout(&iosat().arg("analyze").arg(&path).output().unwrap());
    assert!(
        text.contains("sdx: learned (read, <=8KiB) from its own traffic"),
        "{text}"
    );
}

#[test]
fn fsync_tables_carry_the_json_numbers() {
    let f = fixture("fsync.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
    let csv = ok_stdout(&report(&[f.to_str().unwrap(), "--format", "csv"]));
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let cases = doc["cases"].as_array().unwrap();
    let levels = doc["group_commit"]["levels"].as_array().unwrap();
    assert_eq!(rows.len(), cases.len() + levels.len());
    for (row, c) in rows.iter().zip(cases) {
        assert_eq!(row[1], c["method"].as_str().unwrap());
        assert_eq!(row[12], c["latency_ns"]["p99"].to_string(), "p99_ns");
    }
    // The Markdown shows the same p99 in ms.
    let md = ok_stdout(&report(&[f.to_str().unwrap(), "--format", "markdown"]));
    let p99_ms = format!(
        "{:.3}",
        cases[0]["latency_ns"]["p99"].as_f64().unwrap() / 1e6
    );
    assert!(md.contains(&p99_ms), "{p99_ms} not in the Markdown");
    assert!(md.contains(doc["device"]["flush_verdict"].as_str().unwrap()));
}

#[test]
fn recording_rows_are_what_stat_replay_prints() {
    let csv = recording("csv");
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let ours: Vec<Vec<String>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .filter(|r: &Vec<String>| r[col("disk_device")] == "loop1")
        .collect();
    let prof = profile_dir();
    let out = iosat()
        .args(["stat", "--all", "--json", "loop1", "--replay"])
        .arg(fixture("loop.rec"))
        .arg("--profile-dir")
        .arg(prof.path())
        .output()
        .unwrap();
    let theirs: Vec<Value> = ok_stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(ours.len(), theirs.len());
    let mut busy = 0;
    for (o, t) in ours.iter().zip(&theirs) {
        let d = &t["devices"][0];
        let close = |cell: &str, v: &Value, d: i32| match v.as_f64() {
            Some(x) => (cell.parse::<f64>().unwrap() - x).abs() <= 0.5 * 10f64.powi(-d),
            None => cell.is_empty(),
        };
        assert!(close(&o[col("r/s")], &d["r/s"], 2), "{o:?} vs {d}");
        assert!(close(&o[col("r_await")], &d["r_await"], 3), "{o:?} vs {d}");
        assert!(close(&o[col("w_await")], &d["w_await"], 3), "{o:?} vs {d}");
        assert!(close(&o[col("util")], &d["util"], 2), "{o:?} vs {d}");
        assert!(close(&o[col("aqu-sz")], &d["aqu-sz"], 2), "{o:?} vs {d}");
        // Saturation: what stat computes against the same profile.
        assert!(close(
            &o[col("saturation_r")],
            &d["profile"]["saturation_r"],
            2
        ));
        assert!(close(
            &o[col("saturation_w")],
            &d["profile"]["saturation_w"],
            2
        ));
        if let Some(a) = d["r_await"].as_f64() {
            busy += 1;
            // await over the profile's baseline (the sim sweep's concurrency-1 mean).
            let sat = d["profile"]["saturation_r"].as_f64().unwrap();
            assert!((sat - a * 1e6 / 8_001_536.0).abs() < 1e-9, "{sat} vs {a}");
        }
    }
    assert!(busy >= 3, "the fixture has I/O on loop1");
}

#[test]
fn recording_without_profile_says_so() {
    let empty = crate::util::tempdir().unwrap();
    let out = report(&[
        fixture("loop.rec").to_str().unwrap(),
        "--profile-dir",
        empty.path().to_str().unwrap(),
    ]);
    let html = ok_stdout(&out);
    assert!(
        !html.contains("-saturation\""),
        "no saturation chart without a profile"
    );
    assert!(html.contains("no profile loop1-test.json in"));
    assert!(html.contains("id=\"loop1-latency\""));
}

#[test]
fn bad_input_names_the_file() {
    let d = crate::util::tempdir().unwrap();
    let p = d.path().join("junk.txt");
    std::fs::write(&p, "hello\n").unwrap();
    let out = report(&[p.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("junk.txt"));
}

#[test]
fn stat_json_renders_as_its_recording_does() {
    // `stat --json` of the recording (every device, its profile applied) through `report`
    // must give the very table the recording itself gives: same rows, same saturation.
    let prof = profile_dir();
    let out = iosat()
        .args(["stat", "--all", "--json", "--replay"])
        .arg(fixture("loop.rec"))
        .arg("--profile-dir")
        .arg(prof.path())
        .output()
        .unwrap();
    let d = crate::util::tempdir().unwrap();
    let json = d.path().join("stat.json");
    std::fs::write(&json, ok_stdout(&out)).unwrap();
    let from_json = ok_stdout(&report(&[json.to_str().unwrap(), "--format", "csv"]));
    assert!(from_json.lines().count() > 3, "{from_json}");
    assert_eq!(from_json, recording("csv"));
    // The page draws the saturation chart from the profile stat applied.
    let page = ok_stdout(&report(&[json.to_str().unwrap()]));
    assert!(
        page.contains("loop1: saturation (await"),
        "no saturation chart"
    );
    // A truncated line names the file and the line.
    let text = std::fs::read_to_string(&json).unwrap();
    let cut = &text[..text.len() - 40];
    std::fs::write(&json, cut).unwrap();
    let out = report(&[json.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let lines = text.lines().count();
    assert!(err.contains(&format!("stat.json:{lines}:")), "{err}");
}

#[test]
fn output_file_is_never_replaced_without_force() {
    let d = crate::util::tempdir().unwrap();
    let page = d.path().join("r.html");
    let src = fixture("sim_sweep.json");
    let src = src.to_str().unwrap();
    let dst = page.to_str().unwrap();
    // A new file is written whole.
    ok_stdout(&report(&[src, "-o", dst]));
    let first = std::fs::read_to_string(&page).unwrap();
    assert!(first.contains("<svg") && first.trim_end().ends_with("</html>"));
    // A user's file in the way: refused with one line, its content untouched.
    std::fs::write(&page, "mine\n").unwrap();
    let out = report(&[src, "-o", dst, "--format", "markdown"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--output") && err.contains("r.html") && err.contains("--force"));
    assert_eq!(std::fs::read_to_string(&page).unwrap(), "mine\n");
    // --force replaces it, and nothing but the page is left in the directory.
    ok_stdout(&report(&[
        src, "-o", dst, "--format", "markdown", "--force",
    ]));
    assert!(std::fs::read_to_string(&page)
        .unwrap()
        .starts_with("## iosat sweep"));
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
}

// ---------------------------------------------------------------------------------------
// Headless Chromium.

pub(crate) fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// Run Chromium headless on a file with a hard time limit (the whole process group is killed
/// on timeout). Returns (stdout, stderr).
fn run_chromium(bin: &Path, extra: &[&str], page: &Path) -> (String, String) {
    let profile = crate::util::tempdir().unwrap();
    let mut child = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = so.read_to_string(&mut s);
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = se.read_to_string(&mut s);
        s
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            // SAFETY: kill(2) on the process group of the child we spawned (process_group(0)).
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!("chromium did not finish within 90 s on {}", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    (t_out.join().unwrap(), t_err.join().unwrap())
}

/// Every number in a "points" or "d" attribute is finite, and there is at least one pair.
fn coords_ok(attr: &str) -> bool {
    let nums: Vec<&str> = attr
        .split(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c.is_alphabetic()))
        .filter(|t| !t.is_empty())
        .flat_map(|t| t.split(|c: char| c.is_ascii_uppercase() && c != 'E'))
        .filter(|t| !t.is_empty())
        .collect();
    nums.len() >= 2
        && nums
            .iter()
            .all(|n| n.parse::<f64>().is_ok_and(f64::is_finite))
}

/// The attribute values `name="..."` inside `text`.
fn attrs<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    let key = format!(" {name}=\"");
    text.split(&key)
        .skip(1)
        .map(|t| t.split('"').next().unwrap())
        .collect()
}

/// Run in the page by Chromium (the page itself has no script): every legend's box against
/// the plot area, the marker and point labels and the point markers of its chart; the boxes
/// that overlap are written into the DOM for the test to read.
const OVERLAP_PROBE: &str = r#"<script>
(function () {
  var bad = [];
  function hit(a, b) {
    return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  }
  document.querySelectorAll('svg.chart').forEach(function (svg) {
    var others = svg.querySelectorAll('rect.plot, text.marker, text.pointlabel, text.flaglabel, circle, polyline');
    svg.querySelectorAll('g.legend').forEach(function (g) {
      var a = g.getBoundingClientRect();
      others.forEach(function (o) {
        if (o.closest('g.legend')) return;
        if (hit(a, o.getBoundingClientRect())) {
          bad.push(svg.id + ': legend "' + g.textContent + '" over ' + o.tagName + ' ' + (o.getAttribute('class') || '') + ' ' + (o.textContent || ''));
        }
      });
    });
  });
  var out = document.createElement('pre');
  out.id = 'overlaps';
  out.textContent = JSON.stringify(bad);
  document.body.appendChild(out);
  // The layout a reader of a ticket sees in the window: tables that run past it (or past
  // their own box, behind a scrollbar), a page wider than the window, and where the verdict's
  // summary ends against where the first chart begins.
  var vw = document.documentElement.clientWidth;
  var wide = [];
  document.querySelectorAll('table').forEach(function (t, i) {
    var r = t.getBoundingClientRect();
    var box = t.parentElement.getBoundingClientRect();
    var room = Math.min(vw, box.right);
    if (r.right > room + 1) {
      var head = t.querySelector('th');
      wide.push(i + ' (' + (head ? head.textContent : '') + '): ' + Math.round(r.width) + ' px in ' + Math.round(room - r.left));
    }
  });
  var v = document.querySelector('.verdict');
  var c = document.querySelector('svg.chart');
  var layout = document.createElement('pre');
  layout.id = 'layout';
  layout.textContent = JSON.stringify({
    width: vw,
    page_scrolls: document.documentElement.scrollWidth > vw + 1,
    wide_tables: wide,
    verdict_bottom: v ? Math.round(v.getBoundingClientRect().bottom + window.scrollY) : null,
    first_chart_top: c ? Math.round(c.getBoundingClientRect().top + window.scrollY) : null
  });
  document.body.appendChild(layout);
})();
</script>"#;

/// The page's DOM after the overlap probe ran in Chromium, and Chromium's log. The probe goes
/// into a copy only; the screenshot is of the page as shipped.
fn probed_dom(bin: &Path, dir: &Path, name: &str, html: &str) -> (String, String) {
    let probed = dir.join(format!("{name}-probe.html"));
    std::fs::write(
        &probed,
        html.replace("</body>", &format!("{OVERLAP_PROBE}</body>")),
    )
    .unwrap();
    run_chromium(bin, &["--dump-dom", "--window-size=1280,2600"], &probed)
}

/// What the layout probe measured at 1280 px.
fn layout_in(dom: &str) -> Option<Value> {
    let text = dom
        .split("<pre id=\"layout\">")
        .nth(1)?
        .split("</pre>")
        .next()?;
    serde_json::from_str(&text.replace("&quot;", "\"").replace("&amp;", "&")).ok()
}

/// What the probe found: "[]" when no legend overlaps anything.
fn overlaps_in(dom: &str) -> Option<&str> {
    dom.split("<pre id=\"overlaps\">")
        .nth(1)
        .and_then(|t| t.split("</pre>").next())
}

pub(crate) fn check_page(bin: &Path, dir: &Path, name: &str, html: &str, charts: usize) {
    let page = dir.join(format!("{name}.html"));
    std::fs::write(&page, html).unwrap();
    let (dom, log) = probed_dom(bin, dir, name, html);
    // Every page says what was measured and where.
    assert!(
        dom.contains("class=\"context\"")
            && (dom.contains("<th>measured</th>") || dom.contains("<td>measured</td>")),
        "{name}: no context header"
    );
    // No legend covers a marker, a label, a point or a line.
    let overlaps =
        overlaps_in(&dom).unwrap_or_else(|| panic!("{name}: the overlap probe did not run"));
    assert_eq!(overlaps, "[]", "{name}: legends overlap");
    // At 1280 px: no table runs past the window or hides behind a scrollbar, the page does
    // not scroll sideways, and the verdict's summary ends above the first chart, which a
    // reader reaches without scrolling past a screen of words.
    let layout = layout_in(&dom).unwrap_or_else(|| panic!("{name}: the layout probe did not run"));
    assert_eq!(layout["width"].as_f64(), Some(1280.0), "{name}: {layout}");
    assert_eq!(
        layout["wide_tables"],
        serde_json::json!([]),
        "{name}: tables too wide: {layout}"
    );
    assert_eq!(layout["page_scrolls"], false, "{name}: {layout}");
    if let (Some(v), Some(c)) = (
        layout["verdict_bottom"].as_f64(),
        layout["first_chart_top"].as_f64(),
    ) {
        assert!(
            v <= c,
            "{name}: the summary ends below the first chart: {layout}"
        );
        assert!(
            c < 1000.0,
            "{name}: the first chart starts {c} px down: {layout}"
        );
    }
    eprintln!("{name}: layout at 1280 px {layout}");
    // No console errors (the pages have no script; a parse problem would show here too).
    let console: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(console.is_empty(), "{name}: console output: {console:?}");
    // Every chart was parsed as SVG and has drawn, finite geometry and labelled axes.
    let svgs: Vec<&str> = dom
        .split("<svg")
        .skip(1)
        .map(|s| s.split("</svg>").next().unwrap())
        .collect();
    assert_eq!(svgs.len(), charts, "{name}: charts in the DOM");
    assert!(
        !dom.contains(">iosat sweep</title>"),
        "{name}: the page is titled by what it shows"
    );
    for s in &svgs {
        let id = attrs(s, "id").first().copied().unwrap_or("?");
        let lines: Vec<&str> = attrs(s, "points")
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect();
        let paths: Vec<&str> = s
            .split("class=\"range\"")
            .skip(1)
            .flat_map(|t| attrs(t, "d").into_iter().take(1))
            .collect();
        assert!(
            !lines.is_empty() || !paths.is_empty(),
            "{name}/{id}: nothing drawn"
        );
        for p in lines.iter().chain(&paths) {
            assert!(coords_ok(p), "{name}/{id}: bad coordinates {p:?}");
        }
        assert!(s.contains("class=\"xlabel\""), "{name}/{id}: no x label");
        assert!(!s.contains("NaN") && !s.contains("inf"), "{name}/{id}");
    }
    // A screenshot, kept as a test artifact.
    let art = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .join("test-artifacts");
    std::fs::create_dir_all(&art).unwrap();
    let png = art.join(format!("report-{name}.png"));
    let _ = std::fs::remove_file(&png);
    let shot = format!("--screenshot={}", png.display());
    run_chromium(bin, &[&shot, "--window-size=1280,2600"], &page);
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}", png.display()));
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{name}: not a PNG");
    assert!(
        bytes.len() > 20_000,
        "{name}: screenshot too small to hold charts"
    );
}

#[test]
fn pages_render_in_headless_chromium() {
    let Some(bin) = chromium() else {
        crate::util::skip(
            "pages_render_in_headless_chromium: no chromium (scripts/test.sh installs it)",
        );
        return;
    };
    let dir = crate::util::tempdir().unwrap();
    let html = |f: &str| ok_stdout(&report(&[fixture(f).to_str().unwrap()]));
    // Sweep: throughput, latency, hockey stick (no kernel columns from the sim engine), the
    // latency distribution per level.
    check_page(&bin, dir.path(), "sweep", &html("sim_sweep.json"), 4);
    // A mixed pattern adds reads and writes apart (IOPS, latency).
    let rw = dir.path().join("randrw.json");
    std::fs::write(&rw, sim_sweep(&["--pattern", "randrw", "--json"])).unwrap();
    let page = ok_stdout(&report(&[rw.to_str().unwrap()]));
    check_page(&bin, dir.path(), "sweep-randrw", &page, 6);
    // With the kernel's view: %util beside IOPS, aqu-sz against the offered concurrency,
    // each chart one unit per axis.
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("sim_sweep.json")).unwrap()).unwrap();
    for l in doc["levels"].as_array_mut().unwrap() {
        let c = l["concurrency"].as_f64().unwrap();
        l["kernel"] = serde_json::json!({"util": (c * 30.0).min(100.0), "aqu-sz": c * 0.9,
            "r/s": l["iops"], "r_await": 1.0});
    }
    let kv = dir.path().join("kernel.json");
    std::fs::write(&kv, doc.to_string()).unwrap();
    let page = ok_stdout(&report(&[kv.to_str().unwrap()]));
    assert!(page.contains("id=\"util\"") && page.contains("id=\"queue\""));
    check_page(&bin, dir.path(), "sweep-kernel", &page, 6);
    // A level the verdict found disturbed is ringed on the throughput, latency and hockey
    // stick charts.
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("sim_sweep.json")).unwrap()).unwrap();
    doc["verdict"]["disturbed_levels"] = serde_json::json!([4]);
    let dv = dir.path().join("disturbed.json");
    std::fs::write(&dv, doc.to_string()).unwrap();
    let page = ok_stdout(&report(&[dv.to_str().unwrap()]));
    assert_eq!(page.matches(">disturbed</text>").count(), 3, "{page}");
    check_page(&bin, dir.path(), "sweep-disturbed", &page, 4);
    // An open loop at rates the simulated device (4 units of 1 ms: 4,000 IOPS) cannot all
    // keep, and a target search: the level behind schedule ringed, the search titled as one
    // and its answer above the first chart.
    let open = sim_sweep(&["--rate", "1000,3000,6000", "--json"]);
    let ov = dir.path().join("open.json");
    std::fs::write(&ov, &open).unwrap();
    let page = ok_stdout(&report(&[ov.to_str().unwrap()]));
    assert!(page.contains(">behind</text>"), "{page}");
    check_page(&bin, dir.path(), "open-loop", &page, 5);
    let search = sim_sweep(&["--target-p99", "3ms", "--json"]);
    let sv = dir.path().join("search.json");
    std::fs::write(&sv, &search).unwrap();
    let page = ok_stdout(&report(&[sv.to_str().unwrap()]));
    assert!(
        page.contains("<title>iosat target search (p99 &lt;= 3.00 ms)"),
        "{page}"
    );
    let answer = page
        .find("Measured with an offered load")
        .expect("an answer");
    assert!(
        answer < page.find("<svg").unwrap(),
        "the answer before the charts"
    );
    check_page(&bin, dir.path(), "target-search", &page, 5);
    // fsync: one dot chart per mode, commits/s and latency vs committers.
    check_page(&bin, dir.path(), "fsync", &html("fsync.json"), 4);
    // Recording: 3 busy devices × (throughput, request size, latency, %util, load) + the
    // saturation chart of loop1.
    let rec = recording("html");
    check_page(&bin, dir.path(), "recording", &rec, 16);
}

// ---------------------------------------------------------------------------------------
// --html on the commands.

fn assert_refused(out: &Output, page: &Path, before: &[u8]) {
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("--html"));
    assert_eq!(
        std::fs::read(page).unwrap(),
        before,
        "the existing file changed"
    );
}

#[test]
fn sweep_html_writes_the_page_and_never_overwrites() {
    let d = crate::util::tempdir().unwrap();
    let page = d.path().join("sweep.html");
    let args = [
        "sweep",
        "--engine",
        "sim:units=4,service=1ms",
        "--levels",
        "1,2,4,8",
        "--duration",
        "0.1",
        "--ramp",
        "0",
        "--json",
        "--no-progress",
    ];
    let out = iosat()
        .args(args)
        .arg("--html")
        .arg(&page)
        .output()
        .unwrap();
    let json: Value = serde_json::from_str(&ok_stdout(&out)).unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    // Throughput, latency, hockey stick, latency distribution per level.
    assert_eq!(html.matches("<svg").count(), 4);
    // The table shows the measured IOPS of each level.
    for l in json["levels"].as_array().unwrap() {
        let iops = format!("<td>{:.0}</td>", l["iops"].as_f64().unwrap());
        assert!(html.contains(&iops), "{iops} missing");
    }
    let before = std::fs::read(&page).unwrap();
    let out = iosat()
        .args(args)
        .arg("--html")
        .arg(&page)
        .output()
        .unwrap();
    assert_refused(&out, &page, &before);
    assert!(out.stdout.is_empty(), "refused before running");
}

#[test]
fn fsync_html_writes_the_page_and_never_overwrites() {
    let d = crate::util::tempdir().unwrap();
    let work = crate::util::tempdir().unwrap();
    let page = d.path().join("fsync.html");
    let run = || {
        iosat()
            .arg("fsync")
            .arg(work.path())
            .args([
                "--duration",
                "0.05",
                "--methods",
                "fsync,fdatasync",
                "--sizes",
                "4096",
                "--mode",
                "overwrite",
                "--committers",
                "1,2",
                "--json",
            ])
            .arg("--html")
            .arg(&page)
            .output()
            .unwrap()
    };
    let json: Value = serde_json::from_str(&ok_stdout(&run())).unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(
        html.matches("<svg").count(),
        3,
        "one mode + two group-commit charts"
    );
    assert!(html.contains(json["device"]["flush_verdict"].as_str().unwrap()));
    let before = std::fs::read(&page).unwrap();
    assert_refused(&run(), &page, &before);
    assert_eq!(
        std::fs::read_dir(work.path()).unwrap().count(),
        0,
        "test files left"
    );
}

#[test]
fn stat_html_needs_a_recording_and_never_overwrites() {
    let d = crate::util::tempdir().unwrap();
    let rec = d.path().join("r.rec");
    let page = d.path().join("stat.html");
    let out = iosat()
        .args(["stat", "--all", "-i", "0.1", "-c", "2", "--record"])
        .arg(&rec)
        .arg("--html")
        .arg(&page)
        .output()
        .unwrap();
    ok_stdout(&out);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("iosat stat recording"));
    // The same page as `iosat report` draws from the recording.
    let again = ok_stdout(&report(&[rec.to_str().unwrap(), "--format", "html"]));
    assert_eq!(html.matches("<svg").count(), again.matches("<svg").count());
    let before = std::fs::read(&page).unwrap();
    let out = iosat()
        .args(["stat", "--replay"])
        .arg(&rec)
        .arg("--html")
        .arg(&page)
        .output()
        .unwrap();
    assert_refused(&out, &page, &before);
    let out = iosat()
        .args(["stat", "-c", "1", "--html"])
        .arg(d.path().join("x.html"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--record"));
}

/// Issue 12 case 9: one huge value (reachable from a mangled import through `analyze --json`)
/// once made an axis step 0 and `report` loop until memory ran out. Every axis ends.
#[test]
fn a_result_with_a_huge_value_renders_and_ends() {
    let d = crate::util::tempdir().unwrap();
    let mut j: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("sim_sweep.json")).unwrap()).unwrap();
    j["levels"][0]["iops"] = serde_json::json!(1e16);
    let src = d.path().join("huge.json");
    std::fs::write(&src, j.to_string()).unwrap();
    let page = d.path().join("p.html");
    let mut child = iosat()
        .arg("report")
        .arg(&src)
        .arg("-o")
        .arg(&page)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("report did not end on a huge value");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success());
    assert!(std::fs::read_to_string(&page).unwrap().contains("<svg"));
}

/// Default text (stdout not a terminal: 80 columns, no colour) of every command that prints a
/// result table: no line passes 80 columns, no escape code; `--wide` still has every column.
#[test]
fn default_text_fits_80_columns() {
    let imp = |f: &str| crate::util::fixture("import").join(f).display().to_string();
    let dir = crate::util::tempdir().unwrap();
    let d = dir.path().display().to_string();
    let sweep = [
        "sweep",
        "--engine",
        "sim:units=4,service=1ms",
        "--levels",
        "1,2,4,8,16",
        "--duration",
        "200ms",
        "--ramp",
        "0",
        "--no-progress",
    ];
    let mixed = [&sweep[..], &["--pattern", "randrw"]].concat();
    let fsync = [
        "fsync",
        &d,
        "--methods",
        "fsync,fdatasync,odsync",
        "--sizes",
        "4k,16k",
        "--duration",
        "0.1",
        "--committers",
        "1,2",
        "--target-tps",
        "200",
    ];
    let fio = [
        "analyze".to_string(),
        imp("fio-qd1.json"),
        imp("fio-qd4.json"),
        imp("fio-qd16.json"),
        imp("fio-qd64.json"),
    ];
    let fio: Vec<&str> = fio.iter().map(String::as_str).collect();
    let logs: Vec<String> = ["iostat-x.txt", "iostat-xt.txt", "pt-stalk-loop.diskstats"]
        .iter()
        .map(|f| imp(f))
        .collect();
    let open = [
        &sweep[..3],
        &[
            "--rate",
            "1000,2000,3000",
            "--duration",
            "0.3",
            "--ramp",
            "0",
            "--no-progress",
        ],
    ]
    .concat();
    let like = [
        "fsync",
        &d,
        "--like",
        "postgres",
        "--duration",
        "0.05",
        "--committers",
        "1,2",
        "--no-bpf",
    ];
    let runs: Vec<Vec<&str>> = vec![
        sweep.to_vec(),
        mixed,
        open,
        fsync.to_vec(),
        like.to_vec(),
        fio.clone(),
        vec!["analyze", &logs[0]],
        vec!["analyze", &logs[1]],
        vec!["analyze", &logs[2]],
    ];
    for args in &runs {
        let out = ok_stdout(&iosat().args(args).env_remove("NO_COLOR").output().unwrap());
        for l in out.lines() {
            // A file the user named is printed as given: its length is the checkout's or
            // the temporary directory's, not iosat's (a 59-character checkout put an
            // analyze heading at 97 columns). Counted as the word FILE.
            let l = args
                .iter()
                .filter(|a| a.contains('/'))
                .fold(l.to_string(), |l, a| l.replace(a, "FILE"));
            let n = l.chars().count();
            assert!(n <= 80, "{args:?}: {n} columns: {l}");
        }
        assert!(!out.contains('\x1b'), "{args:?}: colour into a pipe");
        let wide = ok_stdout(&iosat().args(args).arg("--wide").output().unwrap());
        assert!(
            wide.lines().map(|l| l.chars().count()).max() > Some(80),
            "{args:?} --wide"
        );
    }
}

#[test]
fn analyze_text_at_80_columns() {
    // Run in the fixture directory: the notes name the files as given.
    let run = |files: &[&str]| {
        let out = iosat()
            .current_dir(crate::util::fixture("import"))
            .arg("analyze")
            .args(files)
            .output()
            .unwrap();
        ok_stdout(&out)
    };
    let fio = run(&[
        "fio-qd1.json",
        "fio-qd4.json",
        "fio-qd16.json",
        "fio-qd64.json",
    ]);
    insta::assert_snapshot!("analyze_fio_text_80", fio);
    insta::assert_snapshot!("analyze_iostat_text_80", run(&["iostat-x.txt"]));
}

/// On a terminal (a pty made by util-linux `script`) the knee row is green and the overload
/// row red; NO_COLOR turns colour off (no-color.org).
#[test]
fn colour_on_a_terminal_only_and_never_with_no_color() {
    if !crate::util::have("script", "--version") {
        crate::util::skip("util-linux script(1) is not installed");
        return;
    }
    let cmd = format!(
        "{} analyze fio-qd1.json fio-qd4.json fio-qd16.json",
        env!("CARGO_BIN_EXE_iosat")
    );
    let run = |no_color: bool| {
        let mut c = Command::new("script");
        c.args(["-qec", &cmd, "/dev/null"])
            .current_dir(crate::util::fixture("import"))
            .stdin(Stdio::null())
            .env_remove("NO_COLOR")
            .env("TERM", "xterm");
        if no_color {
            c.env("NO_COLOR", "1");
        }
        ok_stdout(&c.output().unwrap())
    };
    let tty = run(false);
    assert!(
        tty.lines()
            .any(|l| l.starts_with("\x1b[32m4 ") && l.contains("knee")),
        "{tty:?}"
    );
    assert!(
        tty.lines()
            .any(|l| l.starts_with("\x1b[31m16 ") && l.contains("overload")),
        "{tty:?}"
    );
    let plain = run(true);
    assert!(!plain.contains('\x1b'), "{plain:?}");
    assert!(plain.contains("knee"), "{plain:?}");
}

#[test]
fn an_analysis_of_device_logs_renders_their_series_and_diagnosis() {
    // Was an empty page titled "iosat sweep" with blank 0–1 axes: now every device's time
    // series and its diagnosis, titled by what it shows.
    let d = crate::util::tempdir().unwrap();
    let bin = chromium();
    for (i, f) in [
        "iostat-xt.txt",
        "iostat.json",
        "pt-stalk-loop.diskstats",
        "iosat-loop.rec",
    ]
    .into_iter()
    .enumerate()
    {
        let src = crate::util::fixture("import").join(f);
        let out = iosat()
            .arg("analyze")
            .arg(&src)
            .arg("--json")
            .output()
            .unwrap();
        let json = d.path().join(format!("{i}.json"));
        std::fs::write(&json, ok_stdout(&out)).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let devices = doc["devices"].as_array().unwrap();
        assert!(!devices.is_empty(), "{f}: no device series");
        let html = ok_stdout(&report(&[json.to_str().unwrap()]));
        assert!(
            html.contains("device series") && !html.contains("<title>iosat sweep"),
            "{f}: title"
        );
        // Requests per second, latency, %util and load per device that has them.
        let charts = html.matches("<svg").count();
        assert!(charts >= 3 * devices.len(), "{f}: {charts} charts");
        for dev in devices {
            for l in dev["diagnosis"].as_array().unwrap() {
                let line = l
                    .as_str()
                    .unwrap()
                    .replace('&', "&amp;")
                    .replace('<', "&lt;");
                let line = line.replace('>', "&gt;").replace('"', "&quot;");
                assert!(html.contains(&line), "{f}: diagnosis missing: {line}");
            }
        }
        if let Some(bin) = &bin {
            check_page(bin, d.path(), &format!("analyze-{i}"), &html, charts);
        }
    }
}

#[test]
fn the_overlap_probe_sees_a_legend_over_a_marker_label() {
    // The probe must be able to fail: a legend drawn inside the plot, over a marker label,
    // as the charts drew it before legends moved below the plot.
    let Some(bin) = chromium() else {
        crate::util::skip("the_overlap_probe_sees_a_legend_over_a_marker_label: no chromium");
        return;
    };
    let svg = r##"<svg xmlns="http://www.w3.org/2000/svg" id="bad" class="chart" viewBox="0 0 300 200" width="300" height="200"><rect class="plot" x="40" y="20" width="240" height="150" fill="none" stroke="#333"/><text class="marker" x="50" y="34">knee 4</text><g class="legend"><line x1="44" x2="64" y1="30" y2="30" stroke="#000"/><text x="70" y="34">measured IOPS</text></g></svg>"##;
    let html = format!("<!DOCTYPE html><html><body>{svg}</body></html>");
    let dir = crate::util::tempdir().unwrap();
    let (dom, _) = probed_dom(&bin, dir.path(), "bad", &html);
    let found = overlaps_in(&dom).expect("the probe ran");
    assert!(
        found.contains("bad: legend") && found.contains("marker"),
        "{found}"
    );
}

// ---------------------------------------------------------------------------------------
// One document per result: every sentence in every format.

/// `s` as words: whitespace runs (text wraps, Markdown breaks) made one space.
fn words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A page's words: tags dropped (each one a space), the entities iosat writes unescaped
/// (one_judgement.rs reads the recording page with it too).
pub(crate) fn page_words(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    let out = out
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    words(&out)
}

/// Every sentence is in the text, the Markdown and the page `render(format)` gives.
pub(crate) fn said_in_every_format(
    what: &str,
    render: impl Fn(&str) -> String,
    sentences: &[String],
) {
    assert!(!sentences.is_empty(), "{what}: nothing to look for");
    let formats = [
        ("text", words(&render("text"))),
        ("markdown", words(&render("markdown"))),
        ("html", page_words(&render("html"))),
    ];
    for s in sentences {
        let s = words(s);
        for (name, out) in &formats {
            assert!(out.contains(&s), "{what}: {name} lacks: {s}\n---\n{out}");
        }
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The library's format for a name ("text": plain 80 columns, as a pipe gets it).
pub(crate) fn format_named(name: &str) -> iosat::report::Format {
    match name {
        "text" => iosat::report::Format::TEXT,
        "markdown" => iosat::report::Format::Markdown,
        _ => iosat::report::Format::Html,
    }
}

/// A saved result rendered as `iosat report` (and the live command) renders it. Text is not
/// a format of `iosat report`, so the library renders all three.
fn report_as(file: &Path) -> impl Fn(&str) -> String + '_ {
    move |format| {
        let text = std::fs::read_to_string(file).unwrap();
        let r = iosat::report::load(&text).unwrap();
        iosat::report::render(&r, format_named(format))
    }
}

#[test]
fn every_sweep_sentence_and_footnote_is_in_every_format() {
    let d = crate::util::tempdir().unwrap();
    // A saved sweep with a note and a level cut short: the `*` footnote was text-only.
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("sim_sweep.json")).unwrap()).unwrap();
    doc["notes"] = serde_json::json!(["the target is a temporary file on tmpfs <not a disk>"]);
    doc["levels"][8]["interrupted"] = true.into();
    let f = d.path().join("sweep.json");
    std::fs::write(&f, doc.to_string()).unwrap();
    let v = &doc["verdict"];
    let mut said = strings(&v["summary"]);
    said.extend(v["util_lesson"].as_str().map(String::from));
    said.extend(strings(&doc["notes"]));
    said.push("* level cut short by a stop signal (Ctrl-C, SIGTERM or SIGHUP)".into());
    said_in_every_format("sweep", report_as(&f), &said);
    // A mixed pattern: the per-direction sentences and the kernel's %util lesson.
    let rw = d.path().join("randrw.json");
    std::fs::write(&rw, sim_sweep(&["--pattern", "randrw", "--json"])).unwrap();
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&rw).unwrap()).unwrap();
    let text = report_as(&rw)("text");
    let mut said = strings(&doc["verdict"]["summary"]);
    let reads = text
        .lines()
        .find(|l| l.trim_start().starts_with("Reads"))
        .unwrap();
    said.push(reads.trim().to_string());
    said_in_every_format("randrw sweep", report_as(&rw), &said);
}

#[test]
fn every_analyze_sentence_is_in_every_format() {
    let imp = |f: &str| crate::util::fixture("import").join(f);
    let d = crate::util::tempdir().unwrap();
    let sets: [&[&str]; 3] = [
        &[
            "fio-qd1.json",
            "fio-qd4.json",
            "fio-qd16.json",
            "fio-qd64.json",
        ],
        &["iostat-x.txt"],
        &["pt-stalk-loop.diskstats"],
    ];
    for (i, files) in sets.into_iter().enumerate() {
        let out = iosat()
            .arg("analyze")
            .args(files.iter().map(|f| imp(f)))
            .arg("--json")
            .output()
            .unwrap();
        let f = d.path().join(format!("{i}.json"));
        std::fs::write(&f, ok_stdout(&out)).unwrap();
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let mut said = strings(&doc["verdict"]["summary"]);
        said.extend(doc["verdict"]["util_lesson"].as_str().map(String::from));
        for dev in doc["devices"].as_array().into_iter().flatten() {
            said.extend(strings(&dev["diagnosis"]));
        }
        said.extend(strings(&doc["source"]["notes"]));
        said_in_every_format(&format!("analyze {files:?}"), report_as(&f), &said);
    }
}

#[test]
fn every_fsync_sentence_is_in_every_format() {
    let d = crate::util::tempdir().unwrap();
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("fsync.json")).unwrap()).unwrap();
    // A run cut short with a warning: the "partial" line was text-only.
    doc["interrupted"] = true.into();
    doc["warnings"] = serde_json::json!(["the directory is on tmpfs: \"durable\" means nothing"]);
    let f = d.path().join("fsync.json");
    std::fs::write(&f, doc.to_string()).unwrap();
    let mut said = strings(&doc["device"]["flush_reasoning"]);
    said.extend(strings(&doc["group_commit"]["summary"]));
    said.extend(strings(&doc["warnings"]));
    said.push(format!(
        "Flush honesty: {}",
        doc["device"]["flush_verdict"].as_str().unwrap()
    ));
    said.push("interrupted: the results above are partial".into());
    // The device section, one table in every format (was a line, a table, a table).
    let dev = &doc["device"];
    for k in ["name", "model", "write_cache"] {
        if let Some(v) = dev[k].as_str() {
            said.push(v.to_string());
        }
    }
    said_in_every_format("fsync", report_as(&f), &said);
}

#[test]
fn every_recording_sentence_is_in_every_format() {
    // stat's JSON lines of the recording: each busy device's saturation sentence (its
    // profile's baseline, or why it has none) and the idle devices.
    let prof = profile_dir();
    let out = iosat()
        .args(["stat", "--all", "--json", "--replay"])
        .arg(fixture("loop.rec"))
        .arg("--profile-dir")
        .arg(prof.path())
        .output()
        .unwrap();
    let lines = crate::util::json_lines(&ok_stdout(&out));
    let d = crate::util::tempdir().unwrap();
    let f = d.path().join("stat.json");
    std::fs::write(&f, ok_stdout(&out)).unwrap();
    let mut busy = Vec::new();
    let mut idle = Vec::new();
    for dev in lines[0]["devices"].as_array().unwrap() {
        let name = dev["kernel_name"].as_str().unwrap().to_string();
        if dev["kind"] == "partition" {
            continue;
        }
        let did_io = lines.iter().any(|l| {
            l["devices"].as_array().unwrap().iter().any(|x| {
                x["kernel_name"] == dev["kernel_name"]
                    && (x["r/s"].as_f64() > Some(0.0) || x["w/s"].as_f64() > Some(0.0))
            })
        });
        if !did_io {
            idle.push(name);
            continue;
        }
        busy.push(match dev["profile"]["id"].as_str() {
            Some(id) => format!(
                "{name}: saturation = await ÷ {:.3} ms, the baseline (mean latency at \
                 concurrency 1, {} {} B) of the profile {id}.",
                dev["profile"]["baseline_latency_ns"].as_f64().unwrap() / 1e6,
                dev["profile"]["baseline_pattern"].as_str().unwrap(),
                dev["profile"]["baseline_block_size"]
            ),
            None => format!("{name}: saturation not judged: iosat stat had no profile for it."),
        });
    }
    assert!(busy.len() >= 2 && !idle.is_empty(), "{busy:?} {idle:?}");
    let mut said = busy;
    said.push(format!("No I/O in the recording: {}", idle.join(", ")));
    said_in_every_format("recording", report_as(&f), &said);
}

/// A recording of a device judged by its sweep (reads at 2.5 ms against the profile's 1 ms,
/// 2.5 in flight: saturated), half of it on CPUs with 2.5 % idle: the page's, the CSV's and
/// `stat --replay`'s judgements say "busy CPUs" with each saturated interval on busy CPUs and
/// with no other, though learning (off here) judged none of them.
#[test]
fn a_swept_verdict_on_busy_cpus_says_so_in_the_replay_csv_and_page() {
    let d = crate::util::tempdir().unwrap();
    std::fs::write(
        d.path().join("sdx1.json"),
        r#"{"schema_version":1,"kind":"sweep","workload":{"pattern":"randread","block_size":4096},"verdict":{"baseline_latency_ns":1000000.0,"knee_concurrency":4,"max_useful_iops":4000.0}}"#,
    )
    .unwrap();
    let mut rec = String::from("#iosat-record 1\nR 0 0\nI 8:0 sdx sdx1\n");
    let (mut user, mut idle) = (0, 0);
    for t in 0..=60u64 {
        let busy = t > 30;
        user += if busy { 195 } else { 20 };
        idle += if busy { 5 } else { 180 };
        let (r, ticks) = (t * 1000, t * 2500);
        rec.push_str(&format!(
            "C {user} 0 0 {idle} 0 0 0 0\nT {} {}\n   8       0 sdx {r} 0 {} {ticks} 0 0 0 0 0 {r} {ticks} 0 0 0 0 0 0\n",
            t * 1_000_000_000,
            1_700_000_000_000_000_000 + t * 1_000_000_000,
            r * 8
        ));
    }
    let file = d.path().join("rec");
    std::fs::write(&file, rec).unwrap();
    let (file, dir) = (file.to_str().unwrap(), d.path().to_str().unwrap());

    let csv = ok_stdout(&report(&[file, "--format", "csv", "--profile-dir", dir]));
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 60, "{csv}");
    for (i, row) in rows.iter().enumerate() {
        assert!(row.contains(",saturated,read,swept,2.5,"), "{i}: {row}");
        // The first 30 intervals had 90 % idle CPUs, the last 30 2.5 %.
        assert_eq!(row.contains("busy CPUs"), i >= 30, "{i}: {row}");
    }
    let page = ok_stdout(&report(&[
        file,
        "--format",
        "markdown",
        "--profile-dir",
        dir,
    ]));
    assert!(page.contains("[busy CPUs] at the last interval"), "{page}");

    let out = iosat()
        .args([
            "stat",
            "--replay",
            file,
            "--no-learn",
            "--json",
            "--profile-dir",
            dir,
        ])
        .output()
        .unwrap();
    let lines: Vec<Value> = ok_stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 60);
    for (i, l) in lines.iter().enumerate() {
        let j = &l["devices"][0]["judgement"];
        assert_eq!(j["basis"], "swept", "{i}: {j}");
        assert_eq!(j["state"], "saturated", "{i}: {j}");
        assert_eq!(
            j["busy_cpus"].as_bool().unwrap_or(false),
            i >= 30,
            "{i}: {j}"
        );
    }
}
