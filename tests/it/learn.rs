//! Production learning end to end (issue 26): `iosat stat` learns a loop device driven by fio
//! at a few iodepths, its `learned` object fills in, the state is saved in the --state-dir,
//! and `iosat analyze` of the run's recording says what the live run said last.

use crate::stat::wait_bounded;
use crate::util::{have, iosat, is_root, json_lines, ok_json, LoopDev};
use std::process::{Command, Stdio};
use std::time::Duration;

fn fio(dev: &str, depth: u32, secs: u32) {
    let st = Command::new("fio")
        .args([
            "--name=learn",
            &format!("--filename={dev}"),
            "--direct=1",
            "--rw=randread",
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
    assert!(st.success(), "fio at iodepth {depth}");
}

#[test]
fn stat_learns_a_loop_device_driven_by_fio_and_analyze_agrees() {
    if !is_root() || !have("fio", "--version") {
        eprintln!("skipped: needs root and fio");
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
    assert!(last_table.contains("learned    +IOPS"), "{text}");
    // --forget removes it.
    let f = iosat()
        .args(["stat", "--forget", "--state-dir"])
        .arg(state.path())
        .output()
        .unwrap();
    assert!(f.status.success());
    assert!(crate::util::entries(&state.path().join("learned")).is_empty());
}
