//! `iosat exporter`: the /metrics exposition over a fixture root (snapshot, `promtool check
//! metrics`), the HTTP server's robustness on loopback, and the shipped rules and alerts
//! (`promtool check rules`, `promtool test rules`).

use crate::util::{fixture, have};
use iosat::exporter::metrics;
use iosat::exporter::scrape::{Devices, Scraper};
use iosat::monitor::select::Selection;
use iosat::profile::ProfileCache;
use iosat::sys::Root;
use std::io::Write;
use std::process::{Command, Stdio};

pub(crate) fn fixture_root() -> Root {
    let dir = fixture("exporter/root");
    Root {
        proc: dir.join("proc"),
        sys: dir.join("sys"),
    }
}

/// One scrape of the fixture root with every device, durations zeroed (the only values that
/// are not the fixture's).
fn fixture_metrics(devices: Devices) -> String {
    let root = fixture_root();
    let profiles = ProfileCache::new(Some(fixture("exporter/profiles")), root.clone());
    let mut s = Scraper::new(root, devices, profiles).scrape();
    for h in &mut s.health {
        h.duration_s = 0.0;
    }
    metrics::render(&s)
}

fn all() -> Devices {
    Devices {
        selection: Selection {
            all: true,
            ..Selection::default()
        },
        exclude: vec![],
    }
}

/// `promtool check metrics` on `text`: Err with its complaints.
pub(crate) fn promtool_check_metrics(text: &str) -> Result<(), String> {
    let mut c = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let o = c.wait_with_output().unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    if o.status.success() && all.trim().is_empty() {
        Ok(())
    } else {
        Err(all)
    }
}

pub(crate) fn have_promtool() -> bool {
    let ok = have("promtool", "--version");
    if !ok {
        eprintln!("skipped: promtool not installed (Debian package prometheus; scripts/test.sh installs it)");
    }
    ok
}

#[test]
fn metrics_of_the_fixture_root() {
    let text = fixture_metrics(all());
    insta::assert_snapshot!("exporter_fixture_metrics", text);
    // 14-field sda: no discard or flush series; 18-field md0: discards, no flushes.
    assert!(!text.contains("{device=\"sda\",op=\"discard\"}"));
    assert!(text.contains("iosat_disk_bytes_total{device=\"md0\",op=\"discard\"} 0\n"));
    assert!(!text.contains("{device=\"md0\",op=\"flush\"}"));
    // nvme0n1: 3061 discards of 2376520 sectors, 48512 flushes taking 50715 ms.
    assert!(text.contains("iosat_disk_bytes_total{device=\"nvme0n1\",op=\"discard\"} 1216778240\n"));
    assert!(text.contains(
        "iosat_disk_request_time_seconds_total{device=\"nvme0n1\",op=\"flush\"} 50.715\n"
    ));
    assert!(text.contains("iosat_disk_in_flight_requests{device=\"nvme0n1\",op=\"read\"} 2\n"));
    assert!(text.contains(
        "iosat_profile_baseline_latency_seconds{device=\"nvme0n1\",op=\"read\"} 0.000085\n"
    ));
    if have_promtool() {
        promtool_check_metrics(&text).unwrap();
    }
}

#[test]
fn devices_are_selected_like_stat_with_excludes() {
    let text = fixture_metrics(Devices::default());
    for shown in ["nvme0n1", "sda", "md0", "dm-0"] {
        assert!(text.contains(&format!("device=\"{shown}\"")), "{shown}");
    }
    for hidden in ["nvme0n1p1", "sda1", "loop0", "zram0"] {
        assert!(!text.contains(&format!("device=\"{hidden}\"")), "{hidden}");
    }
    let text = fixture_metrics(Devices {
        selection: Selection {
            partitions: true,
            ..Selection::default()
        },
        exclude: vec!["sd*".into(), "vg0-*".into()],
    });
    assert!(text.contains("device=\"nvme0n1p2\""));
    assert!(!text.contains("device=\"sda"));
    // dm-0 is excluded by its dm name (vg0-root).
    assert!(!text.contains("device=\"dm-0\""));
    assert!(text.contains("device=\"md0\""));
}
