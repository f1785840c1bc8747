//! The open loop on this machine's own disk (a file in a temporary directory on the root
//! filesystem, never the device node) and on a busy host reproduced on purpose (busy.rs):
//! issue 38's acceptance. Up to half the closed loop's maximum the schedule is kept, with
//! `--rate auto` and with an explicit list (a level not kept is excused only by the machine's
//! measured CPU wait or the disk's own slowdown, and a try with neither keeps them all); with
//! iosat's CPU held to a quota, the levels that fall behind are marked as the machine's,
//! never "beyond what the device delivers", and the same rates run outside the quota right
//! after are kept (so that marking everything the machine's cannot pass).

use crate::busy::CpuQuota;
use crate::util::{iosat, is_root, ok_json, stdout};
use serde_json::Value;
use std::time::Duration;

/// Below this closed-loop maximum the disk is too slow for the open loop's generator to
/// matter (the lateness the issue is about comes at tens of thousands of requests per second).
const FAST_ENOUGH_IOPS: f64 = 2_000.0;

/// `iosat sweep DIR ARGS --json` on a 64 MiB test file.
fn sweep(dir: &str, args: &[&str]) -> Value {
    let out = iosat()
        .args(["sweep", dir, "--size", "64m", "--no-progress", "--json"])
        .args(args)
        .output()
        .unwrap();
    ok_json(&out)
}

/// How one open-loop level up to half the closed-loop maximum went.
#[derive(Debug, PartialEq)]
enum Level {
    Kept,
    /// Not kept, and the machine's with its own evidence: iosat's generator threads waited for
    /// a CPU for at least 5 % of their time (analysis::open::MACHINE_CPU_WAIT_SHARE).
    Machine,
    /// Not kept while the disk itself slowed: the kernel's own await was more than
    /// [`DISK_SLOWED`] times the closed loop's latency at that throughput (other traffic on
    /// the machine's disk, the host's disk shared with other guests).
    DiskSlowed,
    /// Not kept with neither excuse: the open loop failed.
    Failed,
}

/// The kernel's await over the closed loop's mean latency at the same throughput beyond which
/// the disk slowed during the level: queueing at the same throughput cannot explain it (the
/// closed loop measured that queue), and this disk's await went from 0.1-0.5 ms to 4.7 ms
/// while other builds wrote to it (2026-11-28).
const DISK_SLOWED: f64 = 3.0;

/// ... and beyond this await in ms, whatever the closed loop's: Poisson arrivals into a disk
/// with the host's short stalls raise the await of levels this disk kept to 0.17-0.44 ms
/// against 0.05-0.12 ms in the closed loop, while the levels it did not keep under other
/// traffic had 0.75-3 ms (2026-11-28, load average 8-11).
const SLOWED_FLOOR_MS: f64 = 0.5;

/// The closed loop's mean latency at `iops` in ms: the first closed level (in concurrency
/// order) that reached it, else the last one.
fn closed_mean_ms(closed: &Value, iops: f64) -> f64 {
    let levels = closed["levels"].as_array().unwrap();
    let at = levels
        .iter()
        .find(|l| l["iops"].as_f64().unwrap() >= iops)
        .unwrap_or_else(|| levels.last().unwrap());
    at["latency_ns"]["mean"].as_f64().unwrap() / 1e6
}

/// How `l` went, against the closed loop's latency in `closed`: a level not kept is excused
/// only with the machine's measured CPU wait or the disk's own slowdown, never by being
/// marked the machine's (which alone would let a generator that keeps nothing pass).
fn judge(l: &Value, closed: &Value, what: &str) -> Level {
    let b = &l["behind"];
    let offered = l["offered_iops"].as_f64().unwrap();
    let cpu = b["cpu_wait_share"].as_f64().unwrap_or(0.0);
    assert!((0.0..=1.0).contains(&cpu), "{what}: a share: {l}");
    let r_await = l["kernel"]["r_await"].as_f64().unwrap_or(0.0);
    let ref_ms = closed_mean_ms(closed, offered);
    let verdict = if b["kept"] == true {
        Level::Kept
    } else if b["lag"] == "machine" && cpu >= 0.05 {
        Level::Machine
    } else if r_await > (DISK_SLOWED * ref_ms).max(SLOWED_FLOOR_MS) {
        Level::DiskSlowed
    } else {
        Level::Failed
    };
    eprintln!(
        "{what}: offered {offered:.0}, achieved {:.0}, device p99 {:.3} ms, lateness p99 \
         {:.3} ms, pool waits {}, generator CPU wait {:.1} % of its time, kernel await {r_await:.3} ms \
         (closed loop {ref_ms:.3} ms), lag {}: {verdict:?}",
        l["iops"].as_f64().unwrap(),
        l["service_latency_ns"]["p99"].as_f64().unwrap() / 1e6,
        b["p99_ns"].as_f64().unwrap() / 1e6,
        b["pool_waits"],
        100.0 * cpu,
        b["lag"]
    );
    verdict
}

/// The levels of a try up to `top` IOPS offered: Ok(true) every one kept, Ok(false) the
/// machine or the disk excused one (the try says nothing), Err(why) one failed.
fn all_kept(levels: &[Value], closed: &Value, top: f64, what: &str) -> Result<bool, String> {
    let mut excused = false;
    for l in levels {
        if l["offered_iops"].as_f64().unwrap() > top {
            continue;
        }
        match judge(l, closed, what) {
            Level::Kept => {}
            Level::Machine | Level::DiskSlowed => excused = true,
            Level::Failed => return Err(format!("{what}: not kept, no excuse: {l}")),
        }
    }
    Ok(!excused)
}

#[test]
fn up_to_half_the_closed_maximum_is_kept_on_this_disk_with_auto_and_a_list() {
    // On the root filesystem (/var/tmp, not a tmpfs /tmp), the machine's own disk.
    let dir = crate::util::tempdir_in("/var/tmp").unwrap();
    let d = dir.path().to_str().unwrap();
    let common = ["--duration", "1", "--ramp", "0.2"];
    // Three tries: on a shared machine a try can be excused (its CPU wait or the disk's own
    // slowdown, measured); a try without excuse must keep every level up to half the maximum.
    for attempt in 1..=3 {
        let auto = sweep(
            d,
            &[
                &["--levels", "1,4,16,64", "--budget", "0", "--rate", "auto"],
                &common[..],
            ]
            .concat(),
        );
        let max = auto["verdict"]["peak_iops"].as_f64().unwrap();
        if max < FAST_ENOUGH_IOPS {
            eprintln!("skipped: this disk's maximum is {max:.0} IOPS, too slow to matter");
            return;
        }
        let levels = auto["open_levels"].as_array().unwrap();
        assert_eq!(levels.len(), 5, "auto offers five shares");
        let words = auto["open_loop"]["verdict"]["words"].to_string();
        // The verdict never calls a rate below a kept one the device's capacity.
        let v = &auto["open_loop"]["verdict"];
        if let (Some(from), Some(top)) = (
            v["beyond_capacity_from_iops"].as_f64(),
            v["max_kept_iops"].as_f64(),
        ) {
            assert!(
                from > top,
                "capacity from {from} below a kept {top}: {words}"
            );
        }
        // auto's shares up to half (25 and 50 %), then an explicit list up to half.
        let clean_auto = all_kept(levels, &auto, 0.55 * max, "auto").unwrap();
        let list = format!("{:.0},{:.0}", max / 4.0, max / 2.0);
        let open = sweep(d, &[&["--rate", list.as_str()], &common[..]].concat());
        let listed = open["open_levels"].as_array().unwrap();
        assert_eq!(listed.len(), 2, "{open}");
        let clean_list = all_kept(listed, &auto, f64::MAX, "list").unwrap();
        if clean_auto && clean_list {
            eprintln!("try {attempt}: every level up to half of {max:.0} IOPS kept");
            return;
        }
        eprintln!("try {attempt}: excused by the machine or the disk; again");
    }
    eprintln!("inconclusive: the machine or its disk was disturbed in every try");
}

#[test]
fn with_its_cpu_held_to_a_quota_the_open_loop_marks_the_machine_not_the_device() {
    if !is_root() {
        eprintln!("skipped: needs root to create a cgroup");
        return;
    }
    // A twentieth of one CPU per 100 ms: the generator is stopped for most of every period,
    // while the disk answers in a fraction of a millisecond. (A fifth was not enough on a
    // fast machine: this test's debug build sent 2,000 and 8,000 IOPS to a disk answering
    // in 60 µs within it, never throttled while a level ran, 2026-12-06.)
    let Some(cg) = CpuQuota::new(0.05, Duration::from_millis(100)) else {
        eprintln!("skipped: no cpu cgroup controller (v2 cpu.max or v1 cfs quota)");
        return;
    };
    let dir = crate::util::tempdir_in("/var/tmp").unwrap();
    let d = dir.path().to_str().unwrap();
    let out = cg
        .iosat()
        .args(["sweep", d, "--size", "64m", "--no-progress", "--json"])
        .args(["--rate", "2000,8000", "--duration", "1", "--ramp", "0.2"])
        .output()
        .unwrap();
    let j = ok_json(&out);
    assert!(
        cg.throttled_periods() > 0,
        "the quota never throttled iosat"
    );
    let notes = j["notes"].to_string();
    // A level the quota stopped for its whole window completed nothing: its first
    // measurement stands when it was measured again, else it is left out, said so either
    // way (the suite on CI's 2-core machine once wrote no open level at all).
    let empty = Vec::new();
    let levels = j["open_levels"].as_array().unwrap_or(&empty);
    assert_eq!(
        notes
            .matches("completed no I/O in its window: it is left out")
            .count(),
        2 - levels.len(),
        "a level left out without a word: {}",
        stdout(&out)
    );
    if levels.is_empty() {
        // Nothing measured, nothing claimed of the device.
        let v = &j["open_loop"]["verdict"];
        assert!(v["beyond_capacity_from_iops"].is_null(), "{v}");
        eprintln!("inconclusive: under the quota no level completed any I/O: {notes}");
        return;
    }
    for l in levels {
        let b = &l["behind"];
        eprintln!(
            "under the quota: offered {:.0}, achieved {:.0}, kept {}, lag {}, device p99 {:.3} \
             ms, lateness p99 {:.3} ms, pool waits {}, generator CPU wait {}",
            l["offered_iops"].as_f64().unwrap(),
            l["iops"].as_f64().unwrap(),
            b["kept"],
            b["lag"],
            l["service_latency_ns"]["p99"].as_f64().unwrap() / 1e6,
            b["p99_ns"].as_f64().unwrap() / 1e6,
            b["pool_waits"],
            b["cpu_wait_share"]
        );
    }
    let v = &j["open_loop"]["verdict"];
    let words = v["words"].to_string();
    // The quota shows: at least one level late beyond a millisecond, or not kept.
    let lagged: Vec<&Value> = levels
        .iter()
        .filter(|l| !l["behind"]["lag"].is_null())
        .collect();
    assert!(!lagged.is_empty(), "no level showed the quota: {levels:?}");
    for l in &lagged {
        assert_eq!(l["behind"]["lag"], "machine", "{l}");
    }
    assert!(v["beyond_capacity_from_iops"].is_null(), "{words}");
    assert!(
        !words.contains("beyond what the device delivers"),
        "{words}"
    );
    if levels.iter().any(|l| l["behind"]["kept"] == false) {
        assert!(words.contains("because of this machine"), "{words}");
        assert!(notes.contains("was measured again"), "{notes}");
    }
    // The same rates outside the quota, right after: kept, where the machine and the disk
    // let them be (up to half the closed loop's maximum; three tries on a shared machine).
    for attempt in 1..=3 {
        let free = sweep(
            d,
            &[
                "--levels",
                "1,16",
                "--budget",
                "0",
                "--rate",
                "2000,8000",
                "--duration",
                "1",
                "--ramp",
                "0.2",
            ],
        );
        let half = free["verdict"]["peak_iops"].as_f64().unwrap() / 2.0;
        let levels = free["open_levels"].as_array().unwrap();
        match all_kept(levels, &free, half, "outside the quota") {
            Ok(true) => return,
            Ok(false) => eprintln!("try {attempt} outside the quota excused; again"),
            Err(why) => panic!("{why}"),
        }
    }
    eprintln!("inconclusive outside the quota: the machine or its disk was disturbed");
}
