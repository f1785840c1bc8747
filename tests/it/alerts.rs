//! The shipped alerts beyond `promtool test rules` (tests/it/exporter.rs runs that): the
//! Alertmanager inhibition (a real Alertmanager on loopback), the physical-disk labels on a
//! real stacked device (a loop device with a partition and a dm volume on it), and the
//! acceptance of issue 29: a real Prometheus with the shipped rules, unchanged, scraping a real
//! `iosat exporter` on the known-truth device while fio overloads it: the p95 alert pending
//! within two minutes of the load and resolved within two minutes after it.

use crate::exporter::{have_promtool, prometheus_dir, Exporter, Prometheus};
use crate::util::{have, is_root};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child process killed on drop (also when the test fails).
pub(crate) struct Killed(pub(crate) Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `amtool ARGS --alertmanager.url URL`: its stdout, panicking with its stderr on failure.
fn amtool(url: &str, args: &[&str]) -> String {
    let o = Command::new("amtool")
        .args(args)
        .arg(format!("--alertmanager.url={url}"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "amtool {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// (alertname, device, op) of each alert in `amtool alert query -o json`'s answer, sorted.
fn alert_keys(json: &str) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    let mut keys: Vec<String> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let l = &a["labels"];
            format!(
                "{} {} {}",
                l["alertname"].as_str().unwrap(),
                l["device"].as_str().unwrap(),
                l["op"].as_str().unwrap()
            )
        })
        .collect();
    keys.sort();
    keys
}

#[test]
fn overloaded_inhibits_saturated_in_a_real_alertmanager() {
    if !have("amtool", "--version") || !have("prometheus-alertmanager", "--version") {
        crate::util::skip(
            "needs amtool and prometheus-alertmanager (Debian package prometheus-alertmanager)",
        );
        return;
    }
    let config = prometheus_dir().join("alertmanager.yml");
    let o = Command::new("amtool")
        .arg("check-config")
        .arg(&config)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.contains("2 inhibit rules"), "{out}");

    let dir = crate::util::tempdir().unwrap();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let _am = Killed(
        Command::new("prometheus-alertmanager")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--storage.path={}", dir.path().display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            // No cluster: it would listen on every interface.
            .arg("--cluster.listen-address=")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let t0 = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "alertmanager did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // One host: sda's reads overloaded and its writes saturated and slow (one condition, one
    // page); sdb saturated only (its own page, a warning).
    let host = ["job=node", "instance=h1:9019"];
    for (name, dev, op, severity) in [
        ("IosatDiskOverloaded", "sda", "read", "critical"),
        ("IosatDiskSaturated", "sda", "write", "warning"),
        ("IosatDiskSlowNotLoaded", "sda", "write", "warning"),
        ("IosatDiskSaturated", "sdb", "read", "warning"),
    ] {
        let mut args = vec!["alert", "add", name];
        args.extend(host);
        let (d, o, s) = (
            format!("device={dev}"),
            format!("op={op}"),
            format!("severity={severity}"),
        );
        args.extend([d.as_str(), o.as_str(), s.as_str()]);
        amtool(&url, &args);
    }
    let want_active = [
        "IosatDiskOverloaded sda read",
        "IosatDiskSaturated sdb read",
    ];
    let mut active = vec![];
    while t0.elapsed() < Duration::from_secs(60) {
        active = alert_keys(&amtool(&url, &["alert", "query", "-o", "json"]));
        if active == want_active {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(active, want_active, "the alerts not inhibited");
    // The muted ones are there, inhibited (not lost): Saturated and the slow warning of the
    // overloaded disk.
    let muted = alert_keys(&amtool(
        &url,
        &["alert", "query", "--inhibited", "-o", "json"],
    ));
    assert_eq!(
        muted,
        [
            "IosatDiskSaturated sda write",
            "IosatDiskSlowNotLoaded sda write"
        ]
    );
}

/// A loop device over the block device `under` (`/dev/<under>`), detached on drop.
/// The loop device, and its undoing if the run is interrupted (support::reap).
struct LoopOver(String, #[allow(dead_code)] crate::support::reap::Held);

impl LoopOver {
    fn new(under: &str) -> LoopOver {
        let o = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(format!("/dev/{under}"))
            .output()
            .unwrap();
        assert!(o.status.success(), "losetup over /dev/{under}");
        let dev = String::from_utf8_lossy(&o.stdout).trim().to_string();
        let reap = crate::support::reap::loop_device(&dev);
        LoopOver(dev, reap)
    }

    fn name(&self) -> &str {
        self.0.trim_start_matches("/dev/")
    }
}

impl Drop for LoopOver {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

#[test]
fn stacked_devices_on_a_loop_device_name_it_as_their_disk() {
    if !is_root() {
        crate::util::skip("needs root (loop devices)");
        return;
    }
    // With a partition where the kernel scans loop devices for them (losetup -P with the
    // MBR format built in; this test machine's kernel has neither dm, md nor that: the
    // partition and dm/md cases are covered on the fixture trees of sys::topology's unit
    // tests), and a loop device over it: a device stacked on the disk the kernel does not
    // list in slaves/.
    let (lo, part) = match crate::util::LoopDev::try_new(16 << 20, true, None) {
        Some(lo) => {
            let p = format!("{}p1", lo.name());
            (lo, Some(p))
        }
        None => {
            eprintln!("no partitions on loop devices here: loop over loop only");
            (crate::util::LoopDev::new(16 << 20), None)
        }
    };
    let disk = lo.name().to_string();
    let upper = LoopOver::new(part.as_deref().unwrap_or(&disk));
    let mut stacked = vec![upper.name().to_string()];
    stacked.extend(part.clone());

    let root = iosat::sys::Root::default();
    use iosat::sys::topology::physical_disks_in;
    assert_eq!(physical_disks_in(&root, &disk), [disk.as_str()]);
    for d in &stacked {
        assert_eq!(physical_disks_in(&root, d), [disk.as_str()], "{d}");
    }

    // The exporter serves it, one series per device.
    let mut args = vec!["--all", "--no-learn", "--no-bpf", "--device-include", &disk];
    for d in &stacked {
        args.extend(["--device-include", d.as_str()]);
    }
    let e = Exporter::start(std::path::Path::new("/"), &args);
    let (status, _, body) = e.request("GET", "/metrics");
    assert_eq!(status, 200);
    let expect = std::iter::once((&disk, "false")).chain(stacked.iter().map(|d| (d, "true")));
    for (dev, stacked) in expect {
        let line = format!(
            "iosat_disk_physical_info{{device=\"{dev}\",disk=\"{disk}\",stacked=\"{stacked}\"}} 1"
        );
        assert!(body.lines().any(|l| l == line), "{line} not in:\n{body}");
    }
}

/// fio reading `dev` at `iodepth` requests in flight for at most `secs`, killed on drop.
pub(crate) fn fio(dev: &str, iodepth: u32, secs: u32) -> Killed {
    Killed(
        Command::new("fio")
            .args([
                "--name=load",
                "--rw=randread",
                "--bs=4k",
                "--direct=1",
                "--ioengine=libaio",
                "--time_based",
                // Jobs as threads of the one process, so that killing it stops the load.
                "--thread",
            ])
            .arg(format!("--filename={dev}"))
            .arg(format!("--iodepth={iodepth}"))
            .arg(format!("--runtime={secs}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    )
}

/// The state of `alert` for `device` in Prometheus's ALERTS: "pending", "firing" or None.
fn alert_state(prom: &Prometheus, alert: &str, device: &str) -> Option<String> {
    let q = format!("ALERTS{{alertname=\"{alert}\",device=\"{device}\"}}");
    let got = prom.query(&q);
    let states: Vec<&str> = got
        .iter()
        .filter_map(|(l, _)| l["alertstate"].as_str())
        .collect();
    if states.contains(&"firing") {
        Some("firing".into())
    } else {
        states.first().map(|s| s.to_string())
    }
}

/// Poll (every 250 ms, at most `limit`) until `done`; how long it took, or None.
fn within(limit: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
    let t0 = Instant::now();
    while t0.elapsed() < limit {
        if done() {
            return Some(t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    None
}

#[test]
fn a_real_prometheus_pages_within_two_minutes_of_an_overload_and_clears_within_two_after() {
    if !have_promtool() || !have("prometheus", "--version") || !have("fio", "--version") {
        crate::util::skip("needs prometheus and fio");
        return;
    }
    use crate::knowndev::{KnownDev, Spec};
    // One unit of 2 ms: at 8 in flight every request waits for 7 others, 8x the baseline.
    let Some(dev) = KnownDev::start(Spec::new(1, Duration::from_millis(2))) else {
        return;
    };
    let name = dev.name().to_string();
    // A swept profile for the device: baseline 2 ms mean, 2.2 ms p95 at one in flight.
    let profiles = crate::exporter::profile_dir_for(
        &name,
        r#"{"baseline_latency_ns":2000000.0,"baseline_p95_ns":2200000.0,
            "knee_concurrency":1,"max_useful_iops":500.0}"#,
    );
    let pdir = profiles.path().to_str().unwrap().to_string();
    let e = Exporter::start(
        std::path::Path::new("/"),
        &[
            "--device-include",
            &name,
            "--profile-dir",
            &pdir,
            "--no-learn",
        ],
    );
    // The shipped rules as they are (1-minute windows, for: 1m), scraped and evaluated every
    // second.
    let prom = Prometheus::start(&[e.addr]);
    let up = within(Duration::from_secs(30), || {
        !prom
            .query(&format!("iosat_disk_info{{device=\"{name}\"}}"))
            .is_empty()
    });
    assert!(up.is_some(), "Prometheus never scraped {name}");

    let load = fio(&dev.path, 8, 150);
    let load_start = std::time::Instant::now();
    let pending = within(Duration::from_secs(120), || {
        alert_state(&prom, "IosatDiskOverloaded", &name).is_some()
    });
    let why = || {
        [
            "device_op:iosat_disk_latency_seconds:p95_1m",
            "device_op:iosat_disk_saturation:ratio1m",
            "device_op:iosat_disk_concurrency:rate1m",
            "device_op:iosat_disk_requests:rate1m",
            "ALERTS",
        ]
        .map(|q| format!("{q}: {:?}", prom.query(q)))
        .join("\n")
    };
    let pending = pending.unwrap_or_else(|| panic!("not pending 2 min into the load:\n{}", why()));
    eprintln!("IosatDiskOverloaded pending {pending:?} into the load");
    // Judged on the p95 from the histogram where the BPF source runs (root, BTF). The alert
    // can go pending on the mean fallback a scrape or two before the histogram's 1-minute
    // rate has two samples to take a p95 from: wait for it (bounded).
    let p95_query =
        format!("device_op:iosat_disk_latency_seconds:p95_1m{{device=\"{name}\",op=\"read\"}}");
    let _ = within(Duration::from_secs(30), || {
        !prom.query(&p95_query).is_empty()
    });
    let p95 = prom.query(&p95_query);
    eprintln!("p95 recorded: {p95:?}");
    let (_, _, metrics) = e.request("GET", "/metrics");
    let hist = format!("iosat_disk_request_duration_seconds_bucket{{device=\"{name}\"");
    if metrics.contains(&hist) {
        assert!(!p95.is_empty(), "no p95 with the BPF source:\n{}", why());
        assert!(p95[0].1 > 3.0 * 2.2e-3, "p95 {p95:?}");
    }
    // It fires (for: 1m) within two minutes of the load, and Saturated never does.
    let firing = within(
        Duration::from_secs(120).saturating_sub(load_start.elapsed()),
        || alert_state(&prom, "IosatDiskOverloaded", &name).as_deref() == Some("firing"),
    );
    firing.unwrap_or_else(|| panic!("not firing 2 min into the load:\n{}", why()));
    eprintln!("firing {:?} into the load", load_start.elapsed());
    assert_eq!(alert_state(&prom, "IosatDiskSaturated", &name), None);
    // Queue or device (issue 40), where the kernel stamps this queue's requests at issue: the
    // loop device takes all 8 reads at once (its 128 tags) and the known device's one unit
    // holds them, so from the block layer each read's wait is the device's: next to no
    // queueing, the device's own time at about 8x its 2 ms baseline, and the alert's split
    // annotation says the device is slow. The dashboard's split panels have data here.
    let queue_family = format!("iosat_disk_request_queue_seconds_bucket{{device=\"{name}\"");
    if metrics.contains(&queue_family) {
        let sel = format!("{{device=\"{name}\",op=\"read\"}}");
        let share = prom.query(&format!("device_op:iosat_disk_queue_share:ratio1m{sel}"));
        let ratio = prom.query(&format!(
            "max without (source) (device_op:iosat_disk_device_ratio:mean1m{sel})"
        ));
        eprintln!("queue share {share:?}, device ratio {ratio:?}");
        assert!(
            !share.is_empty() && share[0].1 < 0.25,
            "{share:?}\n{}",
            why()
        );
        assert!(
            !ratio.is_empty() && ratio[0].1 > 4.0,
            "{ratio:?}\n{}",
            why()
        );
        let (_, alerts) = prom.get("/api/v1/alerts");
        assert!(
            alerts.contains("the device is slow (garbage collection"),
            "no split annotation: {alerts}"
        );
        let d = crate::exporter::dashboard();
        let panels = crate::exporter::bpf_panel_titles(&d);
        assert!(!panels.is_empty());
        for (title, expr) in crate::exporter::dashboard_queries(&d) {
            if !panels.contains(&title) {
                continue;
            }
            let filled = expr
                .replace("$job", ".*")
                .replace("$instance", ".*")
                .replace("$device", &name);
            assert!(
                !prom.query(&filled).is_empty(),
                "{title}: {filled}: no data"
            );
        }
    } else {
        crate::util::skip("no queue/device split on this kernel's loop queue");
    }

    drop(load);
    let cleared = within(Duration::from_secs(120), || {
        alert_state(&prom, "IosatDiskOverloaded", &name).is_none()
    });
    let cleared =
        cleared.unwrap_or_else(|| panic!("still active 2 min after the load:\n{}", why()));
    eprintln!("resolved {cleared:?} after the load");
}
