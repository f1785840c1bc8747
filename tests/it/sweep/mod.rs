//! `iosat sweep` end to end, one file per theme: real runs with both engines on small files
//! (engines), bad input and its exit codes (refusals), Ctrl-C (signals), the sim engine's
//! closed-form answers through the command line (sim_cli), the open loop on this
//! machine's own disk and on a busy host (openhost), a profile saved under a known
//! background load (live), loop, zram and ext4 devices the tests
//! set up and tear down (own_devices), the knee fio finds (fio_agreement), and what the verdict
//! says of a run it cannot trust (trust). The helpers
//! they share are here.

mod engines;
mod fio_agreement;
mod live;
mod openhost;
mod openloop;
mod opensim;
mod opentarget;
mod openuring;
mod own_devices;
mod refusals;
pub(crate) mod signals;
mod sim_cli;
mod trust;

use crate::util::{entries, iosat, ok_json as json_of, run_sub, stderr, LoopDev, SimSweep, Zram};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Short levels so the suite stays quick; never asserted on.
/// Short levels, and no adaptive re-measure (its own tests are in evidence.rs): these tests
/// check the levels they ask for.
const QUICK: [&str; 6] = ["--duration", "0.2", "--ramp", "0.05", "--budget", "0"];

fn run(args: &[&str]) -> Output {
    run_sub("sweep", args)
}

/// The invariants every measured level must satisfy, whatever the device.
fn check_level(l: &Value, bs: f64) {
    let lat = &l["latency_ns"];
    let g = |k: &str| {
        lat[k]
            .as_u64()
            .unwrap_or_else(|| panic!("latency_ns.{k} in {l}"))
    };
    assert!(g("min") > 0, "{l}");
    assert!(
        g("min") <= g("p50") && g("p50") <= g("p90") && g("p90") <= g("p95"),
        "{l}"
    );
    assert!(
        g("p95") <= g("p99") && g("p99") <= g("p999") && g("p999") <= g("max"),
        "{l}"
    );
    assert!(g("min") <= g("mean") && g("mean") <= g("max"), "{l}");
    let ios = l["ios"].as_f64().unwrap();
    let elapsed_s = l["elapsed_ns"].as_f64().unwrap() / 1e9;
    let iops = l["iops"].as_f64().unwrap();
    assert!(ios > 0.0);
    assert!((iops - ios / elapsed_s).abs() <= 1e-6 * iops, "{l}");
    let bps = l["bytes_per_s"].as_f64().unwrap();
    assert!((bps - iops * bs).abs() <= 1e-6 * bps, "{l}");
    assert_eq!(
        l["concurrency"].as_u64().unwrap(),
        l["threads"].as_u64().unwrap() * l["iodepth"].as_u64().unwrap()
    );
}
