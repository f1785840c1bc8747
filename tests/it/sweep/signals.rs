//! Ctrl-C during a sweep: the finished levels are kept, the test file is removed, also when
//! the signal comes during the layout.

use super::*;

/// `iosat sweep DIR --engine sync --size 8m --ramp 0 ARGS --json -o OUT_FILE`, sent `sig`
/// once the first level has been written to OUT_FILE and `after` has passed; its output.
pub(crate) fn stop_after_first_level(
    dir: &Path,
    out_file: &Path,
    args: &[&str],
    sig: libc::c_int,
    after: Duration,
) -> Output {
    let child = iosat()
        .arg("sweep")
        .arg(dir)
        .args(["--engine", "sync", "--size", "8m", "--ramp", "0"])
        .args(args)
        .args(["--json", "-o"])
        .arg(out_file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !out_file.exists() {
        assert!(t0.elapsed() < Duration::from_secs(30), "no level finished");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(after);
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, sig) };
    child.wait_with_output().unwrap()
}

#[test]
fn ctrl_c_keeps_finished_levels_and_removes_the_file() {
    let dir = crate::util::tempdir().unwrap();
    let out_dir = crate::util::tempdir().unwrap();
    let out_file = out_dir.path().join("partial.json");
    // Interrupt as soon as the first level has been written.
    let args = ["--levels", "1,2,4,8,16,32,64", "--duration", "0.4"];
    let out = stop_after_first_level(dir.path(), &out_file, &args, libc::SIGINT, Duration::ZERO);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let j: Value = serde_json::from_slice(&out.stdout).expect("results printed on Ctrl-C");
    assert_eq!(j["interrupted"], true);
    assert_eq!(j["complete"], false);
    let levels = j["levels"].as_array().unwrap();
    assert!(!levels.is_empty() && levels.len() < 7, "{}", levels.len());
    assert_eq!(levels[0]["concurrency"], 1);
    assert_eq!(levels[0]["interrupted"], false);
    let saved: Value = serde_json::from_slice(&std::fs::read(&out_file).unwrap()).unwrap();
    assert_eq!(saved["levels"].as_array().unwrap().len(), levels.len());
    assert!(
        entries(dir.path()).is_empty(),
        "test file left behind: {:?}",
        entries(dir.path())
    );
}

#[test]
fn ctrl_c_during_layout_removes_the_half_written_file() {
    let dir = crate::util::tempdir().unwrap();
    let child = iosat()
        .arg("sweep")
        .arg(dir.path())
        .args([
            "--engine",
            "sync",
            "--size",
            "256m",
            "--levels",
            "1",
            "--duration",
            "5",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The file appears as soon as layout starts (unnamed with O_TMPFILE: then as an open file
    // of the child's in the directory); interrupt then (during layout or, on a very fast disk,
    // during the level: either way nothing may be left behind).
    let t0 = Instant::now();
    while entries(dir.path()).is_empty() && !crate::safety::has_file_open_in(child.id(), dir.path())
    {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "layout never started"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(
        entries(dir.path()).is_empty(),
        "left behind: {:?}",
        entries(dir.path())
    );
}

#[test]
fn ctrl_c_during_an_open_loop_level_keeps_the_finished_rates_and_judges_no_partial_one() {
    let dir = crate::util::tempdir().unwrap();
    let out_dir = crate::util::tempdir().unwrap();
    let out_file = out_dir.path().join("partial.json");
    // The first rate's level written, then Ctrl-C 1.5 s into the second's 4 s.
    let args = ["--rate", "200,200", "--duration", "4"];
    let after = Duration::from_millis(1500);
    let out = stop_after_first_level(dir.path(), &out_file, &args, libc::SIGINT, after);
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let j: Value = serde_json::from_slice(&out.stdout).expect("results printed on Ctrl-C");
    assert_eq!(j["interrupted"], true);
    let levels = j["open_levels"].as_array().unwrap();
    assert_eq!(levels.len(), 1, "only the finished rate: {levels:?}");
    let notes = j["notes"].to_string();
    assert!(notes.contains("interrupted and is left out"), "{notes}");
    // A level cut short is never read as the device falling behind.
    let v = &j["open_loop"]["verdict"];
    assert!(
        v["beyond_capacity_from_iops"].is_null() || levels[0]["behind"]["kept"] == false,
        "{v}"
    );
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}
