//! `iosat exporter --cgroups` (issue 40) on this machine's real cgroup hierarchy: two v1 blkio
//! cgroups of the test's own, fio in each on a loop device of its own (one at depth 16, one at
//! depth 4 held at its own read limit), and a real scrape: each cgroup's requests within 10 %
//! of what fio reports, the deep one with the larger share of device time, the verdict's role
//! (throttled) while the device (judged by a profile with a knee of 4) is saturated;
//! `top --cgroups` in a real terminal showing the same in its pane; and the flags' refusals.

use crate::exporter::{profile_dir_for, Exporter, Prometheus};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A v1 blkio cgroup made by the test; on drop (failure included) its child is killed and
/// reaped, then the directory removed.
struct OwnCgroup {
    dir: PathBuf,
    child: Option<Child>,
    _reap: crate::support::reap::Held,
}

impl OwnCgroup {
    fn new(hierarchy: &Path, tag: &str) -> OwnCgroup {
        // Short: top shows 20 characters of a name.
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = hierarchy.join(format!("cg{}-{n}{tag}", std::process::id()));
        std::fs::create_dir(&dir).unwrap();
        let _reap = crate::support::reap::cgroup(&dir);
        OwnCgroup {
            dir,
            child: None,
            _reap,
        }
    }

    /// `fio` reading `dev` at `depth` for `secs`, started from inside the cgroup (the shell
    /// puts itself in and execs fio, which keeps the pid; its job a thread, so killing it
    /// leaves nothing in the cgroup); its JSON on stdout.
    fn fio(&mut self, dev: &str, depth: u32, secs: u32) {
        let child = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "echo $$ > {}/cgroup.procs && exec fio --thread --name=j --filename={dev} --direct=1 \
                 --rw=randread --bs=4k --ioengine=libaio --iodepth={depth} --runtime={secs} \
                 --time_based --output-format=json",
                self.dir.display()
            ))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    /// fio's read count, once it has ended.
    fn reads(&mut self) -> f64 {
        let out = self.child.take().unwrap().wait_with_output().unwrap();
        assert!(out.status.success(), "fio failed: {}", out.status);
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        j["jobs"][0]["read"]["total_ios"].as_f64().unwrap()
    }

    /// Hold its reads on the loop device `name` at `iops` (blkio.throttle.read_iops_device).
    fn limit_reads(&self, name: &str, iops: u32) {
        let dev = std::fs::read_to_string(format!("/sys/block/{name}/dev")).unwrap();
        std::fs::write(
            self.dir.join("blkio.throttle.read_iops_device"),
            format!("{} {iops}\n", dev.trim()),
        )
        .unwrap();
    }

    /// The `cgroup` label: the path in its hierarchy.
    fn label(&self) -> String {
        format!("/{}", self.dir.file_name().unwrap().to_string_lossy())
    }
}

impl Drop for OwnCgroup {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        for _ in 0..100 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            // EBUSY while the exited task is still being released from the cgroup.
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// The test's own loop device and a profile with a knee of 4; None (skipped) when the machine
/// lacks root, a v1 blkio hierarchy with throttling or fio.
fn setup() -> Option<(crate::util::LoopDev, tempfile::TempDir)> {
    if !crate::util::is_root() {
        crate::util::skip("needs root");
        return None;
    }
    if !Path::new(BLKIO)
        .join("blkio.throttle.read_iops_device")
        .exists()
    {
        crate::util::skip_lacking("no cgroup v1 blkio hierarchy with throttling");
        return None;
    }
    if !crate::util::have("fio", "--version") {
        crate::util::skip_lacking("fio not installed");
        return None;
    }
    let lo = crate::util::LoopDev::new(256 << 20);
    let profiles = profile_dir_for(
        lo.name(),
        r#"{"baseline_latency_ns":20000.0,"knee_concurrency":4,"max_useful_iops":50000.0}"#,
    );
    Some((lo, profiles))
}

const BLKIO: &str = "/sys/fs/cgroup/blkio";
/// The shallow cgroup's read limit, IOPS.
const LIMIT: u32 = 300;

/// The value of the sample `name{labels}` (labels in exposition order) in a text scrape.
fn value(body: &str, name: &str, labels: &str) -> Option<f64> {
    let head = format!("{name}{{{labels}}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&head))
        .and_then(|v| v.trim().parse().ok())
}

fn scrape(e: &Exporter) -> String {
    let (status, _, body) = e.request("GET", "/metrics");
    assert_eq!(status, 200, "{body}");
    body
}

#[test]
fn two_cgroups_on_a_loop_device_are_counted_as_fio_counts_them() {
    // Dropped last: the cgroups (and the fio runs that hold the device open) go first.
    let Some((lo, profiles)) = setup() else {
        return;
    };
    let name = lo.name().to_string();
    let blkio = Path::new(BLKIO);
    let mut deep = OwnCgroup::new(blkio, "deep");
    let mut shallow = OwnCgroup::new(blkio, "shallow");
    let e = Exporter::start(
        Path::new("/"),
        &[
            "--all",
            "--device-include",
            &name,
            "--profile-dir",
            profiles.path().to_str().unwrap(),
            "--no-learn",
            "--cgroups",
        ],
    );
    if e.before.iter().any(|l| l.contains("per-cgroup")) {
        crate::util::skip_lacking(&format!("no BPF source: {:?}", e.before));
        return;
    }
    // A real Prometheus with the shipped rules scraping it (issue 40's rules and dashboard).
    let prom = (crate::exporter::have_promtool() && crate::util::have("prometheus", "--version"))
        .then(|| Prometheus::start(&[e.addr]));
    let (dl, sl) = (deep.label(), shallow.label());
    let dev = format!("device=\"{name}\"");
    // The shallow one held at its own limit, the deep one not: while both run the device is
    // saturated (20 in flight against a knee of 4) and the verdict names the shallow one as
    // throttled, which the role family serves.
    shallow.limit_reads(&name, LIMIT);
    shallow.fio(&lo.path, 4, 9);
    std::thread::sleep(Duration::from_secs(2));
    deep.fio(&lo.path, 16, 5);
    let t0 = Instant::now();
    let mut shares = None;
    let mut throttled = false;
    while t0.elapsed() < Duration::from_millis(4500) {
        std::thread::sleep(Duration::from_millis(500));
        let body = scrape(&e);
        let share = |cg: &str| {
            value(
                &body,
                "iosat_cgroup_disk_device_time_share",
                &format!("{dev},cgroup=\"{cg}\""),
            )
        };
        if let (Some(d), Some(s)) = (share(&dl), share(&sl)) {
            shares = Some((d, s));
        }
        let role = |cg: &str, r: &str| {
            value(
                &body,
                "iosat_cgroup_disk_role",
                &format!("{dev},cgroup=\"{cg}\",role=\"{r}\""),
            ) == Some(1.0)
        };
        throttled |= role(&sl, "throttled");
    }
    let (want_deep, want_shallow) = (deep.reads(), shallow.reads());
    // Every completion counted by a tick (one a second) after fio's end: until the counts
    // reach fio's or stop moving for two seconds.
    let mut got = (0.0, 0.0);
    let mut body = String::new();
    let mut still = Instant::now();
    let t1 = Instant::now();
    while t1.elapsed() < Duration::from_secs(15) {
        body = scrape(&e);
        let reads = |cg: &str| {
            value(
                &body,
                "iosat_cgroup_disk_requests_total",
                &format!("{dev},cgroup=\"{cg}\",op=\"read\""),
            )
            .unwrap_or(0.0)
        };
        let now = (reads(&dl), reads(&sl));
        if now != got {
            still = Instant::now();
        }
        got = now;
        if (got.0 >= want_deep && got.1 >= want_shallow) || still.elapsed() > Duration::from_secs(2)
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    eprintln!(
        "deep: {} exported, fio {want_deep}; shallow: {} exported, fio {want_shallow}; \
         shares {shares:?}; throttled named {throttled}",
        got.0, got.1
    );
    for (cg, g, w) in [(&dl, got.0, want_deep), (&sl, got.1, want_shallow)] {
        assert!(
            w > 100.0 && (g - w).abs() <= w * 0.1,
            "{cg}: {g} exported, fio read {w}\n{body}"
        );
        let bytes = value(
            &body,
            "iosat_cgroup_disk_bytes_total",
            &format!("{dev},cgroup=\"{cg}\",op=\"read\""),
        );
        assert_eq!(bytes, Some(g * 4096.0), "{cg}");
        let lat = value(
            &body,
            "iosat_cgroup_disk_latency_seconds_total",
            &format!("{dev},cgroup=\"{cg}\",op=\"read\""),
        )
        .unwrap();
        assert!(lat > 0.0, "{cg}: no latency summed");
    }
    assert_eq!(
        value(&body, "iosat_cgroup_disk_cut_cgroups", &dev),
        Some(0.0)
    );
    let (d, s) = shares.expect("no share of device time while both ran");
    assert!(d > s && d + s <= 1.0 + 1e-9, "shares {d} {s}");
    // The verdict is analysis::who's (victims and aggressors: the known-device test); here,
    // that a role it gives is served.
    assert!(
        throttled,
        "the saturated device's verdict never named the shallow cgroup throttled"
    );
    crate::exporter::every_type_has_help(&body);
    if crate::exporter::have_promtool() {
        crate::exporter::promtool_check_metrics(&body).unwrap();
    }
    match &prom {
        Some(prom) => the_rules_see_them(prom, &name, &dl, &sl),
        None => crate::util::skip("prometheus not installed"),
    }
}

/// The shipped recording rules and the dashboard's cgroup panels over what a real Prometheus
/// scraped: the deep cgroup with the larger share of the device's time over the minute, the
/// device's shares summing to 1, the held one named throttled in the role rule, and every
/// cgroup panel with data.
fn the_rules_see_them(prom: &Prometheus, name: &str, deep: &str, shallow: &str) {
    let dev = format!("device=\"{name}\"");
    let has = |got: &[(serde_json::Value, f64)], cg: &str| {
        got.iter().find(|(l, _)| l["cgroup"] == cg).map(|x| x.1)
    };
    let mut shares = vec![];
    for _ in 0..100 {
        shares = prom.query(&format!(
            "device_cgroup:iosat_cgroup_disk_device_time_share:ratio1m{{{dev}}}"
        ));
        if has(&shares, deep).is_some() && has(&shares, shallow).is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    eprintln!("shares over the minute: {shares:?}");
    let (d, s) = (has(&shares, deep), has(&shares, shallow));
    let (Some(d), Some(s)) = (d, s) else {
        panic!("no share recorded for both cgroups: {shares:?}");
    };
    assert!(d > s, "deep {d}, shallow {s}");
    let total: f64 = shares.iter().map(|x| x.1).sum();
    assert!(
        (total - 1.0).abs() < 1e-9,
        "shares sum to {total}: {shares:?}"
    );
    let role = prom.query(&format!(
        "max_over_time(device_cgroup_role:iosat_cgroup_disk_role:ratio1m\
         {{{dev},cgroup=\"{shallow}\",role=\"throttled\"}}[2m])"
    ));
    assert!(
        role.len() == 1 && role[0].1 > 0.0 && role[0].1 <= 1.0,
        "throttled: {role:?}"
    );
    let board = crate::exporter::dashboard();
    let panels = crate::exporter::cgroup_panel_titles(&board);
    assert_eq!(panels.len(), 3, "{panels:?}");
    for (title, expr) in crate::exporter::dashboard_queries(&board) {
        if !panels.contains(&title) {
            continue;
        }
        let filled = expr
            .replace("$job", ".*")
            .replace("$instance", ".*")
            .replace("$device", name);
        // The latest minute: the roles' rule is over a range, the others at the instant.
        let got = prom.query(&format!("last_over_time(({filled})[2m:1s])"));
        assert!(!got.is_empty(), "{title}: {filled}: no data");
    }
}

#[test]
fn cgroup_flags_are_refused_in_one_line() {
    crate::util::assert_refusals(&[
        (&["exporter", "--cgroups", "--no-bpf"], 2, "--cgroups"),
        (&["top", "--cgroups", "--no-bpf"], 2, "--cgroups"),
        (&["exporter", "--cgroup-limit", "5"], 2, "--cgroup-limit"),
        (
            &["exporter", "--cgroups", "--cgroup-limit", "0"],
            2,
            "--cgroup-limit",
        ),
        (
            &["exporter", "--cgroups", "--cgroup-limit", "many"],
            2,
            "--cgroup-limit",
        ),
        (&["exporter", "--cgroup-depth", "2"], 2, "--cgroup-depth"),
        (
            &["exporter", "--cgroups", "--cgroup-depth", "0"],
            2,
            "--cgroup-depth",
        ),
        (
            &["exporter", "--cgroups", "--cgroup-depth", "17"],
            2,
            "--cgroup-depth",
        ),
    ]);
}

#[test]
fn top_shows_who_loads_the_selected_device_in_its_cgroups_pane() {
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        crate::util::skip_lacking("needs BTF for the BPF source");
        return;
    }
    let Some((lo, profiles)) = setup() else {
        return;
    };
    let Some(t) = crate::top::Tmux::start_sized(100, 30) else {
        return;
    };
    let blkio = Path::new(BLKIO);
    let mut deep = OwnCgroup::new(blkio, "deep");
    let mut shallow = OwnCgroup::new(blkio, "shallow");
    let cmd = format!(
        "{} top -i 0.5 --cgroups --no-learn --profile-dir {} --all {}",
        env!("CARGO_BIN_EXE_iosat"),
        profiles.path().display(),
        lo.name()
    );
    t.keys(&[&cmd, "Enter"]);
    t.wait_for("devices (1)");
    t.keys(&["Tab", "Tab", "Tab"]);
    t.wait_for(&format!("cgroups on {}", lo.name()));
    // The shallow one held at its own limit, then the deep one joins: the saturated device's
    // verdict names the shallow one throttled.
    shallow.limit_reads(lo.name(), LIMIT);
    shallow.fio(&lo.path, 4, 12);
    std::thread::sleep(Duration::from_secs(2));
    deep.fio(&lo.path, 16, 8);
    let end = Instant::now() + Duration::from_secs(8);
    let line = |s: &str, who: &str| {
        s.lines()
            .find(|l| l.contains(&format!("{who} ")))
            .map(str::to_string)
    };
    let (dl, sl) = (deep.label(), shallow.label());
    let s = loop {
        let s = t.screen();
        let named = line(&s, &dl).is_some()
            && line(&s, &sl).is_some_and(|l| l.contains("throttled"))
            && s.lines().any(|l| l.contains("who: ") && l.contains(&sl));
        if named || Instant::now() > end {
            break s;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let (d, v) = (line(&s, &dl), line(&s, &sl));
    assert!(d.is_some(), "the deep cgroup listed:\n{s}");
    assert!(
        v.as_deref().is_some_and(|l| l.contains("throttled")),
        "the shallow cgroup as throttled:\n{s}"
    );
    // The shares of the device's time: the deep one's the larger.
    let pct = |l: &str| -> f64 {
        l.split_whitespace()
            .find_map(|w| w.strip_suffix('%').and_then(|n| n.parse().ok()))
            .unwrap()
    };
    assert!(pct(&d.unwrap()) > pct(&v.unwrap()), "{s}");
    assert!(
        s.lines().any(|l| l.contains("who: ") && l.contains(&sl)),
        "the verdict's sentence naming the throttled cgroup:\n{s}"
    );
    t.quit();
    t.keys(&["clear; echo top_rc=$?", "Enter"]);
    t.wait_for("top_rc=0");
}
