//! `iosat exporter`: the /metrics exposition over a fixture root (snapshot, `promtool check
//! metrics`), the HTTP server's robustness on loopback, and the shipped rules and alerts
//! (`promtool check rules`, `promtool test rules`).

use crate::util::{fixture, have};
use iosat::exporter::metrics;
use iosat::exporter::scrape::{Devices, Scraper};
use iosat::monitor::select::Selection;
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
    // A read profile (an older `<id>.json`) and a write profile beside it.
    let mut s = Scraper::new(root, devices, Some(fixture("exporter/profiles-rw"))).scrape();
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
        crate::util::skip(
            "promtool not installed (Debian package prometheus; scripts/test.sh installs it)",
        );
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

/// A running `iosat exporter` on a free loopback port (`127.0.0.1:0`, the address read back
/// from its first line), killed on drop.
pub(crate) struct Exporter {
    child: std::process::Child,
    pub addr: std::net::SocketAddr,
    /// The lines printed before the "listening" line (warnings at start).
    pub before: Vec<String>,
}

impl Exporter {
    pub(crate) fn start(root: &std::path::Path, extra: &[&str]) -> Exporter {
        Exporter::start_at(&root.join("proc"), &root.join("sys"), extra)
    }

    pub(crate) fn start_at(
        proc: &std::path::Path,
        sys: &std::path::Path,
        extra: &[&str],
    ) -> Exporter {
        use std::io::BufRead;
        let mut child = crate::util::iosat()
            .arg("exporter")
            .args(["--web.listen-address", "127.0.0.1:0"])
            .arg("--proc-root")
            .arg(proc)
            .arg("--sys-root")
            .arg(sys)
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
        let mut before = Vec::new();
        let addr = loop {
            let mut line = String::new();
            if err.read_line(&mut line).unwrap() == 0 {
                let _ = child.kill();
                panic!("no address in {before:?}");
            }
            if !line.contains(" listening on ") {
                before.push(line);
                continue;
            }
            let addr = line
                .split("://")
                .nth(1)
                .and_then(|s| s.split('/').next())
                .and_then(|s| s.parse().ok());
            match addr {
                Some(a) => break a,
                None => {
                    let _ = child.kill();
                    panic!("no address in {line:?}");
                }
            }
        };
        // Keep draining stderr so the exporter never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
        Exporter {
            child,
            addr,
            before,
        }
    }

    /// The exporter's process id (its memory is read from /proc).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) fn connect(&self) -> std::net::TcpStream {
        let s = std::net::TcpStream::connect(self.addr).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        s
    }

    /// Send `raw` on a fresh connection and read the whole answer.
    pub(crate) fn raw(&self, raw: &[u8]) -> String {
        use std::io::Read;
        let mut s = self.connect();
        s.write_all(raw).unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    pub(crate) fn request(&self, method: &str, path: &str) -> (u16, String, String) {
        let resp = self.raw(format!("{method} {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        parse_response(&resp)
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// (status, head, body) of an HTTP/1.1 response.
pub(crate) fn parse_response(resp: &str) -> (u16, String, String) {
    let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((resp, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_string())
}

pub(crate) fn fixture_exporter(extra: &[&str]) -> Exporter {
    let profiles = fixture("exporter/profiles-rw");
    let mut args = vec!["--profile-dir", profiles.to_str().unwrap()];
    args.extend_from_slice(extra);
    Exporter::start(&fixture("exporter/root"), &args)
}

#[test]
fn http_endpoints_and_methods() {
    let e = fixture_exporter(&["--all"]);
    // On loopback, without TLS or auth, nothing to warn about.
    assert!(e.before.is_empty(), "{:?}", e.before);
    let (status, head, body) = e.request("GET", "/metrics");
    assert_eq!(status, 200, "{head}");
    assert!(
        head.contains("\r\ncontent-type: text/plain; version=0.0.4; charset=utf-8\r\n"),
        "{head}"
    );
    // The served text is the library's rendering (the snapshot), scrape duration aside, plus
    // the build it comes from (which the snapshot leaves out: it changes with each commit).
    let strip = |t: &str| {
        t.lines()
            .filter(|l| !l.starts_with("iosat_scrape_collector_duration_seconds{"))
            .filter(|l| !l.contains("iosat_build_info"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip(&body), strip(&fixture_metrics(all())));
    let build = format!(
        "\niosat_build_info{{version=\"{}\",commit=\"{}\",",
        iosat::build::VERSION,
        iosat::build::COMMIT
    );
    assert_eq!(body.matches(&build).count(), 1, "{body}");
    assert_eq!(body.matches("# TYPE iosat_build_info gauge\n").count(), 1);
    if have_promtool() {
        promtool_check_metrics(&body).unwrap();
    }
    let (status, head, body) = e.request("HEAD", "/metrics");
    assert_eq!(status, 200);
    assert!(head.contains("content-type: text/plain; version=0.0.4; charset=utf-8"));
    assert_eq!(body, "", "HEAD has no body");
    let (status, _, body) = e.request("GET", "/");
    assert_eq!(status, 200);
    assert!(body.contains("href=\"/metrics\""), "{body}");
    assert_eq!(e.request("GET", "/metricsx").0, 404);
    assert_eq!(e.request("HEAD", "/nope").0, 404);
    for m in ["POST", "PUT", "DELETE", "OPTIONS"] {
        let (status, head, _) = e.request(m, "/metrics");
        assert_eq!(status, 405, "{m}");
        assert!(head.contains("allow: get, head"), "{head}");
    }
}

#[test]
fn a_client_stalling_mid_header_is_disconnected() {
    use std::io::Read;
    let e = fixture_exporter(&["--web.read-timeout", "300ms"]);
    let mut s = e.connect();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHo").unwrap();
    // The server closes the connection at its read timeout: the read ends (EOF or reset)
    // long before this client's own 30 s read timeout would fire.
    let mut buf = Vec::new();
    match s.read_to_end(&mut buf) {
        Ok(_) => assert!(!String::from_utf8_lossy(&buf).contains("200 OK")),
        Err(err) => assert!(
            !matches!(
                err.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
            "the stalled connection was not cut: {err}"
        ),
    }
}

/// A root whose diskstats is a FIFO nobody writes: reading it blocks forever (a hung /proc).
fn hung_root() -> tempfile::TempDir {
    let dir = crate::util::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("proc")).unwrap();
    std::fs::create_dir_all(dir.path().join("sys")).unwrap();
    let fifo = dir.path().join("proc/diskstats");
    crate::util::mkfifo(&fifo);
    dir
}

#[test]
fn concurrent_requests_beyond_the_cap_get_503() {
    // Requests whose head has arrived count against the cap: two scrapes held by a hung
    // collector (diskstats is a FIFO nobody writes) until their 2 s deadline.
    let dir = hung_root();
    let e = Exporter::start(
        dir.path(),
        &["--web.max-requests", "2", "--scrape.timeout", "2s"],
    );
    let held: Vec<_> = (0..2)
        .map(|_| {
            let mut s = e.connect();
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
                .unwrap();
            s
        })
        .collect();
    // A first answer may race the arrival of the held ones; the third request is retried.
    let mut refused = None;
    for _ in 0..50 {
        let (status, _, body) = e.request("GET", "/");
        if status == 503 {
            refused = Some(body);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(refused.as_deref(), Some("too many concurrent requests\n"));
    // The slots come back when the held requests are answered (at their scrape deadline).
    let mut ok = false;
    for _ in 0..500 {
        if e.request("GET", "/").0 == 200 {
            ok = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(ok, "slots were not released");
    drop(held);
}

#[test]
fn an_oversized_request_head_is_refused() {
    let e = fixture_exporter(&[]);
    let big = format!(
        "GET /metrics HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n",
        "a".repeat(20_000)
    );
    let (status, _, _) = parse_response(&e.raw(big.as_bytes()));
    assert_eq!(status, 431);
    // A head under the cap is served.
    let ok = format!(
        "GET /metrics HTTP/1.1\r\nHost: t\r\nX-Small: {}\r\n\r\n",
        "a".repeat(1_000)
    );
    assert_eq!(parse_response(&e.raw(ok.as_bytes())).0, 200);
}

#[test]
fn a_hung_collector_never_hangs_the_scrape() {
    let dir = hung_root();
    // Reading a FIFO that nobody writes blocks forever: a hung /proc read.
    let e = Exporter::start(dir.path(), &["--scrape.timeout", "300ms"]);
    let (status, head, body) = e.request("GET", "/metrics");
    assert_eq!(status, 200, "{head}");
    assert!(
        body.contains("iosat_scrape_collector_success{collector=\"diskstats\"} 0\n"),
        "{body}"
    );
    // The next scrape finds the first one still stuck and says so at once.
    let (_, _, body) = e.request("GET", "/metrics");
    assert!(body.contains("iosat_scrape_collector_success{collector=\"diskstats\"} 0\n"));
    if have_promtool() {
        promtool_check_metrics(&body).unwrap();
    }
}

#[test]
fn bad_flags_name_the_flag() {
    for (args, flag) in [
        (
            vec!["--web.listen-address", "nowhere"],
            "--web.listen-address",
        ),
        (vec!["--web.read-timeout", "0"], "--web.read-timeout"),
        (vec!["--web.max-requests", "0"], "--web.max-requests"),
        (vec!["--scrape.timeout", "soon"], "--scrape.timeout"),
        (vec!["--device-exclude", ""], "--device-exclude"),
    ] {
        let o = crate::util::iosat()
            .arg("exporter")
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = crate::util::stderr(&o);
        assert!(err.contains(flag), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    // A port already taken is a usage error too, naming the flag.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let o = crate::util::iosat()
        .args(["exporter", "--web.listen-address", &addr])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(crate::util::stderr(&o).contains("--web.listen-address"));
}

pub(crate) fn prometheus_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("prometheus")
}

#[test]
fn the_binary_prints_the_shipped_rules() {
    for (flag, file) in [
        ("--print-rules", "recording.yml"),
        ("--print-alerts", "alerts.yml"),
        ("--print-dashboard", "grafana-dashboard.json"),
    ] {
        let o = crate::util::iosat()
            .args(["exporter", flag])
            .output()
            .unwrap();
        let printed = crate::util::ok_stdout(&o);
        let shipped = std::fs::read_to_string(prometheus_dir().join(file)).unwrap();
        assert_eq!(printed, shipped, "{flag}");
    }
}

/// `promtool <args>` in prometheus/: its output when it fails.
fn promtool(args: &[&str]) -> Result<String, String> {
    let o = Command::new("promtool")
        .args(args)
        .current_dir(prometheus_dir())
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    if o.status.success() {
        Ok(all)
    } else {
        Err(all)
    }
}

#[test]
fn rules_and_alerts_pass_promtool_check_and_unit_tests() {
    if !have_promtool() {
        return;
    }
    let out = promtool(&["check", "rules", "recording.yml", "alerts.yml"]).unwrap();
    assert!(out.contains("SUCCESS: 26 rules found"), "{out}");
    assert!(out.contains("SUCCESS: 7 rules found"), "{out}");
    // prometheus/tests.yml: every alert fires where it should and stays silent on the idle
    // disk, the few slow requests, the slow-below-the-knee device and the healthy one; the
    // cgroup alerts (issue 40) on a victim named for less than their wait, a flickering
    // verdict and an aggressor with no victim.
    promtool(&["test", "rules", "tests.yml"]).unwrap();
    let tests = std::fs::read_to_string(prometheus_dir().join("tests.yml")).unwrap();
    let alerts = std::fs::read_to_string(prometheus_dir().join("alerts.yml")).unwrap();
    for name in alerts
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert: "))
    {
        let firing = format!("alertname: {name}\n        exp_alerts:\n          - exp_labels");
        let silent = format!("alertname: {name}\n        exp_alerts: []");
        assert!(tests.contains(&firing), "no firing case for {name}");
        assert!(tests.contains(&silent), "no negative case for {name}");
    }
    // No alert on %util or on a fixed queue length.
    for banned in [
        "iosat_disk_busy",
        "queue_length",
        "iosat_disk_weighted_time",
        "iosat_disk_in_flight",
    ] {
        assert!(!alerts.contains(banned), "alerts.yml uses {banned}");
    }
}

/// A real Prometheus (Debian's package) on a free loopback port with a temporary config and
/// data directory, killed on drop.
/// `s` percent-encoded for a query string.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

pub(crate) struct Prometheus {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    pub(crate) fn start(targets: &[std::net::SocketAddr]) -> Prometheus {
        Prometheus::start_with(targets, &[])
    }

    /// With extra command-line flags (`--enable-feature=...`).
    pub(crate) fn start_with(targets: &[std::net::SocketAddr], flags: &[&str]) -> Prometheus {
        let dir = crate::util::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let targets: Vec<String> = targets.iter().map(|a| format!("'{a}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {}\n  - {}\n\
scrape_configs:\n  - job_name: iosat\n    static_configs:\n      - targets: [{}]\n",
            prometheus_dir().join("recording.yml").display(),
            prometheus_dir().join("alerts.yml").display(),
            targets.join(", ")
        );
        std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
        let child = Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.path().join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .args(flags)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        Prometheus {
            child,
            port,
            _dir: dir,
        }
    }

    /// GET `path_and_query` from Prometheus's HTTP API: (status, body); status 0 when it is
    /// not listening yet.
    pub(crate) fn get(&self, path_and_query: &str) -> (u16, String) {
        use std::io::Read;
        let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return (0, String::new());
        };
        s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
            .unwrap();
        let req = format!("GET {path_and_query} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).unwrap();
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        let (status, _, body) = parse_response(&String::from_utf8_lossy(&out));
        (status, body)
    }

    /// The instant vector of `query`: (labels, value) per series.
    /// Whether Prometheus accepts `query` (status success, whatever it returns).
    pub(crate) fn parses(&self, query: &str) -> bool {
        let (status, body) = self.get(&format!("/api/v1/query?query={}", encode(query)));
        status == 200 && body.contains("\"status\":\"success\"")
    }

    pub(crate) fn query(&self, query: &str) -> Vec<(serde_json::Value, f64)> {
        let (status, body) = self.get(&format!("/api/v1/query?query={}", encode(query)));
        if status != 200 {
            return vec![];
        }
        // Transfer-Encoding chunked is not used for these small answers; be lenient anyway.
        let json = &body[body.find('{').unwrap_or(0)..body.rfind('}').map_or(0, |i| i + 1)];
        let v: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
        v["data"]["result"]
            .as_array()
            .map(|r| {
                r.iter()
                    .map(|s| {
                        let val = s["value"][1].as_str().unwrap().parse().unwrap();
                        (s["metric"].clone(), val)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A /proc/diskstats that a thread advances: every 100 ms, `reads` more reads of the device
/// nvme0n1 each taking `read_ms_per_1000` ms per thousand. Stopped on drop.
struct AdvancingDiskstats {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    dir: tempfile::TempDir,
}

impl AdvancingDiskstats {
    fn start(read_ms_per_1000: u64) -> AdvancingDiskstats {
        use std::sync::atomic::Ordering;
        let dir = crate::util::tempdir().unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let path = dir.path().join("diskstats");
        let write = move |reads: u64, read_ms: u64| {
            // Writes, discards and flushes a tenth as many, at the same latency.
            let (w, w_ms) = (reads / 10, read_ms / 10);
            let text = format!(
                " 259       0 nvme0n1 {reads} 0 {} {read_ms} {w} 0 {} {w_ms} 0 {} {} {w} 0 {} {w_ms} {w} {w_ms}\n",
                reads * 8,
                w * 8,
                // Busy all the time: 100 ms per 100 ms, 1,000 reads.
                reads / 10,
                read_ms + 3 * w_ms,
                w * 8,
            );
            let tmp = path.with_extension("tmp");
            std::fs::write(&tmp, text).unwrap();
            std::fs::rename(&tmp, &path).unwrap();
        };
        write(0, 0);
        let flag = std::sync::Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut n = 0u64;
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(100));
                n += 1;
                write(n * 1000, n * read_ms_per_1000);
            }
        });
        AdvancingDiskstats {
            stop,
            thread: Some(thread),
            dir,
        }
    }
}

impl Drop for AdvancingDiskstats {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn a_real_prometheus_records_saturation_for_every_host() {
    if !have_promtool() || !have("prometheus", "--version") {
        crate::util::skip("prometheus not installed");
        return;
    }
    // Two hosts: nvme0n1 (profile baseline 85 us) serving reads at 0.5 ms and at 0.17 ms.
    let hosts = [
        AdvancingDiskstats::start(500),
        AdvancingDiskstats::start(170),
    ];
    let profiles = fixture("exporter/profiles");
    let sys = fixture("exporter/root/sys");
    let exporters: Vec<Exporter> = hosts
        .iter()
        .map(|h| {
            Exporter::start_at(
                h.dir.path(),
                &sys,
                &["--profile-dir", profiles.to_str().unwrap()],
            )
        })
        .collect();
    let addrs: Vec<_> = exporters.iter().map(|e| e.addr).collect();
    let prom = Prometheus::start(&addrs);
    // Poll (bounded) until both hosts' saturation is recorded, reads' and writes': the
    // profile is an old `<id>.json` of a read sweep, which judges the writes too
    // (profile.rs, `for_writes`), and the exporter serves the baseline that judges them.
    let mut got = vec![];
    for _ in 0..600 {
        got = prom.query("device_op:iosat_disk_saturation:ratio1m");
        if got.len() == 4 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(got.len(), 4, "recorded saturation: {got:?}");
    for (labels, value) in &got {
        assert_eq!(labels["job"], "iosat", "{labels}");
        assert_eq!(labels["device"], "nvme0n1");
        assert!(
            labels["op"] == "read" || labels["op"] == "write",
            "{labels}"
        );
        let instance = labels["instance"].as_str().unwrap();
        // Mean latency ÷ baseline: 0.5 ms / 85 us, 0.17 ms / 85 us (both counters advance
        // together, so the ratio does not depend on when the scrapes fell).
        let want = if instance == addrs[0].to_string() {
            0.5e-3 / 85e-6
        } else {
            assert_eq!(instance, addrs[1].to_string());
            0.17e-3 / 85e-6
        };
        assert!(
            (value - want).abs() / want < 0.01,
            "{instance}: saturation {value}, want {want}"
        );
    }
    let latency = prom.query("device_op:iosat_disk_latency_seconds:mean1m");
    // Every op completed requests at the same latency.
    assert_eq!(latency.len(), 8, "{latency:?}");
    for (labels, value) in &latency {
        let want = if labels["instance"] == addrs[0].to_string().as_str() {
            0.5e-3
        } else {
            0.17e-3
        };
        assert!((value - want).abs() / want < 0.01, "{labels}: {value}");
    }
    // The fleet table: the most saturated devices across instances (and directions).
    let fleet = prom.query("topk(10, device_op:iosat_disk_saturation:ratio1m)");
    assert_eq!(fleet.len(), 4, "{fleet:?}");
    let up = prom.query("iosat_scrape_collector_success");
    assert_eq!(up.len(), 2, "{up:?}");
    assert!(up.iter().all(|(_, v)| *v == 1.0));
    // The one vocabulary (analysis::state): host 1 reads at 5.9x its baseline, overloaded (3x
    // and more), with 5 in flight (queueing explains up to 2 x 5 = 10x: loaded, not "slow but
    // not loaded"); host 2 at 2x with 1.7 in flight is saturated (1.5x to 3x). In the first
    // minute of a series rate() over [1m] divides the little it has seen by the whole minute,
    // so the requests in flight read low and host 1 looks "slow but not loaded" for a while:
    // wait (bounded) for the alerts, pending or firing, of a full window.
    let name_of = |l: &serde_json::Value| {
        format!(
            "{} {} {}",
            l["alertname"].as_str().unwrap(),
            l["instance"].as_str().unwrap(),
            l["op"].as_str().unwrap_or("")
        )
    };
    // The writes, at the same latency and judged by the same (old, direction-less) profile,
    // alert alike.
    let mut want = [
        format!("IosatDiskOverloaded {} read", addrs[0]),
        format!("IosatDiskOverloaded {} write", addrs[0]),
        format!("IosatDiskSaturated {} read", addrs[1]),
        format!("IosatDiskSaturated {} write", addrs[1]),
    ];
    want.sort();
    let mut alerts = vec![];
    let mut names = vec![];
    for _ in 0..1200 {
        alerts = prom.query("ALERTS");
        names = alerts.iter().map(|(l, _)| name_of(l)).collect::<Vec<_>>();
        names.sort();
        if names == want {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let why: Vec<_> = [
        "device_op:iosat_disk_latency_ratio:mean1m",
        "device_op:iosat_disk_concurrency:rate1m{op=\"read\"}",
        "device_op:iosat_disk_loaded:bool1m{op=\"read\"}",
    ]
    .map(|q| prom.query(q))
    .into();
    assert_eq!(names, want, "{alerts:?}\n{why:?}");
    // Every dashboard query, its variables filled in, is valid PromQL that returns data from
    // both hosts; the panels that need the BPF source (the queue/device split), which these
    // fixture roots lack, are valid PromQL (tests/it/alerts.rs sees them with data); so are
    // the cgroup panels, which need `--cgroups` (tests/it/cgexport.rs sees them with data).
    let mut bpf_panels = bpf_panel_titles(&dashboard());
    bpf_panels.extend(cgroup_panel_titles(&dashboard()));
    for (title, expr) in dashboard_queries(&dashboard()) {
        let filled = expr
            .replace("$job", "iosat")
            .replace("$instance", ".*")
            .replace("$device", ".*");
        if bpf_panels.contains(&title) {
            assert!(
                prom.parses(&filled),
                "{title}: {filled} is not valid PromQL"
            );
            continue;
        }
        let got = prom.query(&filled);
        for a in &addrs {
            assert!(
                got.iter()
                    .any(|(l, _)| l["instance"] == a.to_string().as_str()),
                "{title}: {filled} gave no data for {a}: {got:?}"
            );
        }
    }
}

pub(crate) fn dashboard() -> serde_json::Value {
    let text = std::fs::read_to_string(prometheus_dir().join("grafana-dashboard.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The titles of the panels whose description contains `needs`.
fn panel_titles_needing(d: &serde_json::Value, needs: &str) -> Vec<String> {
    d["panels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["description"].as_str().is_some_and(|t| t.contains(needs)))
        .map(|p| p["title"].as_str().unwrap().to_string())
        .collect()
}

/// The titles of the panels whose data needs the BPF source (their description says so).
pub(crate) fn bpf_panel_titles(d: &serde_json::Value) -> Vec<String> {
    panel_titles_needing(d, "Needs the BPF source")
}

/// The titles of the panels whose data needs `iosat exporter --cgroups` (their description
/// says so).
pub(crate) fn cgroup_panel_titles(d: &serde_json::Value) -> Vec<String> {
    panel_titles_needing(d, "Needs `iosat exporter --cgroups`")
}

/// (panel title, expr) of every query of the dashboard.
pub(crate) fn dashboard_queries(d: &serde_json::Value) -> Vec<(String, String)> {
    let mut out = vec![];
    for p in d["panels"].as_array().unwrap() {
        for t in p["targets"].as_array().into_iter().flatten() {
            out.push((
                p["title"].as_str().unwrap().to_string(),
                t["expr"].as_str().unwrap().to_string(),
            ));
        }
    }
    out
}

/// Issue 40's cgroup panels: the device-time share stacked (so a device's cgroups add up to
/// it), latency and roles, each on a recording rule the alerts use too, and none counted as
/// a BPF-source panel (tests/it/alerts.rs wants data in those without `--cgroups`).
#[test]
fn the_dashboard_shows_who_loads_each_device() {
    let d = dashboard();
    let titles = cgroup_panel_titles(&d);
    assert_eq!(titles.len(), 3, "{titles:?}");
    let bpf = bpf_panel_titles(&d);
    let rules = std::fs::read_to_string(prometheus_dir().join("recording.yml")).unwrap();
    for p in d["panels"].as_array().unwrap() {
        let title = p["title"].as_str().unwrap_or("").to_string();
        if !titles.contains(&title) {
            continue;
        }
        assert!(!bpf.contains(&title), "{title}");
        for t in p["targets"].as_array().unwrap() {
            let expr = t["expr"].as_str().unwrap();
            let rule = expr.split('{').next().unwrap();
            assert!(
                rules.contains(&format!("- record: {rule}\n")),
                "{title}: {rule} is not a recording rule"
            );
        }
        if title.contains("share") {
            assert_eq!(
                p["fieldConfig"]["defaults"]["custom"]["stacking"]["mode"], "normal",
                "{title}"
            );
        }
    }
    let exprs: Vec<String> = dashboard_queries(&d).into_iter().map(|x| x.1).collect();
    for rule in [
        "device_cgroup:iosat_cgroup_disk_device_time_share:ratio1m",
        "device_cgroup_op:iosat_cgroup_disk_latency_seconds:mean1m",
        "device_cgroup_role:iosat_cgroup_disk_role:ratio1m",
    ] {
        assert!(
            exprs.iter().any(|e| e.starts_with(rule)),
            "no panel of {rule}"
        );
    }
}

#[test]
fn the_dashboard_follows_the_conventions() {
    let d = dashboard();
    let vars = d["templating"]["list"].as_array().unwrap();
    let ds = vars
        .iter()
        .find(|v| v["type"] == "datasource")
        .expect("a datasource variable");
    assert_eq!(ds["name"], "datasource");
    assert_eq!(ds["query"], "prometheus");
    for name in ["job", "instance", "device"] {
        assert!(
            vars.iter().any(|v| v["name"] == name),
            "no ${name} variable"
        );
    }
    let titles: Vec<&str> = d["panels"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["title"].as_str())
        .collect();
    assert!(
        titles.iter().any(|t| t.contains("not capacity")),
        "{titles:?}"
    );
    for p in d["panels"].as_array().unwrap() {
        if p["type"] == "row" {
            continue;
        }
        let title = p["title"].as_str().unwrap();
        assert_eq!(p["datasource"]["uid"], "${datasource}", "{title}");
        let unit = p["fieldConfig"]["defaults"]["unit"].as_str().unwrap_or("");
        assert!(!unit.is_empty(), "{title}: no unit");
        for t in p["targets"].as_array().unwrap() {
            assert_eq!(t["datasource"]["uid"], "${datasource}", "{title}");
            let expr = t["expr"].as_str().unwrap();
            assert!(expr.contains("job=~\"$job\""), "{title}: {expr}");
            // Only the fleet table looks across instances.
            if !title.contains("across instances") {
                assert!(expr.contains("instance=~\"$instance\""), "{title}: {expr}");
            }
            let queue = ["queue_length", "concurrency", "in_flight", "knee"];
            if queue.iter().any(|q| expr.contains(q)) {
                assert!(!unit.contains("percent"), "{title}: a queue in {unit}");
            }
        }
    }
}

#[test]
fn a_client_that_stops_reading_is_disconnected() {
    use std::io::Read;
    // 20,000 devices: a /metrics answer of megabytes, more than the socket buffers hold.
    let dir = crate::util::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("proc")).unwrap();
    std::fs::create_dir_all(dir.path().join("sys")).unwrap();
    let text: String = (0..20_000)
        .map(|i| format!(" 8 {i} sd{i} 1 2 3 4 5 6 7 8 0 10 11 0 0 0 0 0 0\n"))
        .collect();
    std::fs::write(dir.path().join("proc/diskstats"), text).unwrap();
    let e = Exporter::start(
        dir.path(),
        &[
            "--all",
            "--web.max-requests",
            "1",
            "--web.read-timeout",
            "1s",
            "--web.write-timeout",
            "1s",
            "--scrape.timeout",
            "20s",
        ],
    );
    let (status, head, body) = e.request("GET", "/metrics");
    assert_eq!(status, 200, "{head}");
    let full = body.len();
    assert!(full > 10_000_000, "{full}");
    // A client asks and never reads: it holds the only slot until the server cuts it.
    let mut stalled = e.connect();
    stalled
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut freed = false;
    for _ in 0..600 {
        if e.request("GET", "/").0 == 200 {
            freed = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(freed, "the stalled reader kept its slot");
    // What it can still read is what the socket buffers held: not the whole answer.
    let mut got = Vec::new();
    let _ = stalled.read_to_end(&mut got);
    assert!(got.len() < full, "{} of {full} bytes", got.len());
}

#[test]
fn tls_and_basic_auth_from_a_web_config_file() {
    if !have("openssl", "version") || !have("curl", "--version") {
        crate::util::skip("needs openssl and curl");
        return;
    }
    let dir = crate::util::tempdir().unwrap();
    let d = dir.path();
    let o = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args([
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ])
        .arg("-keyout")
        .arg(d.join("tls.key"))
        .arg("-out")
        .arg(d.join("tls.crt"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let hash = bcrypt::hash("s3cret", 4).unwrap();
    let config = d.join("web.yml");
    std::fs::write(
        &config,
        format!(
            "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\nbasic_auth_users:\n  alice: '{hash}'\n"
        ),
    )
    .unwrap();
    promtool_check_web_config(&config);
    let hs = d.join("hs");
    let e = fixture_exporter(&[
        "--web.config.file",
        config.to_str().unwrap(),
        "--hindsight-dir",
        hs.to_str().unwrap(),
        "--hindsight-tail",
        "0",
    ]);
    let url = format!("https://{}/metrics", e.addr);
    let curl_at = |url: &str, extra: &[&str]| {
        let o = Command::new("curl")
            .args([
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "--max-time",
                "30",
            ])
            .arg("--cacert")
            .arg(d.join("tls.crt"))
            .args(extra)
            .arg(url)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let curl = |extra: &[&str]| curl_at(&url, extra);
    assert_eq!(curl(&["-u", "alice:s3cret"]), "200");
    assert_eq!(curl(&[]), "401", "no credentials");
    assert_eq!(curl(&["-u", "alice:wrong"]), "401", "wrong password");
    assert_eq!(curl(&["-u", "bob:s3cret"]), "401", "unknown user");
    // The hindsight webhook sits behind the same TLS and credentials (issue 41): refused
    // without them, a dump with them.
    let hindsight = format!("https://{}/hindsight", e.addr);
    let post = |extra: &[&str]| curl_at(&hindsight, &[&["-X", "POST"], extra].concat());
    assert_eq!(post(&[]), "401", "hindsight without credentials");
    assert!(
        crate::util::entries_if_any(&hs).is_empty(),
        "a refused request wrote a dump"
    );
    assert_eq!(post(&["-u", "alice:s3cret"]), "202", "hindsight with them");
    let start = std::time::Instant::now();
    while crate::util::entries_if_any(&hs).is_empty() {
        assert!(
            start.elapsed().as_secs() < 30,
            "no dump after POST /hindsight"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // Plain HTTP to the TLS port gets no metrics.
    let plain = e.raw(b"GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n");
    assert!(!plain.contains("iosat_disk"), "{plain}");
    // A configuration iosat does not support is refused, naming the flag and the setting.
    std::fs::write(&config, "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n  client_auth_type: RequireAndVerifyClientCert\n").unwrap();
    let o = crate::util::iosat()
        .args(["exporter", "--web.config.file", config.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = crate::util::stderr(&o);
    assert!(
        err.contains("--web.config.file") && err.contains("client_auth_type"),
        "{err}"
    );
}

#[test]
fn a_live_scrape_of_this_machine_passes_promtool() {
    if !have_promtool() {
        return;
    }
    let e = Exporter::start(std::path::Path::new("/"), &["--all", "--no-profile"]);
    let (status, _, body) = e.request("GET", "/metrics");
    assert_eq!(status, 200);
    assert!(body.contains("iosat_scrape_collector_success{collector=\"diskstats\"} 1\n"));
    assert!(
        body.contains("iosat_disk_requests_completed_total{"),
        "{body}"
    );
    promtool_check_metrics(&body).unwrap();
    every_type_has_help(&body);
    let commit = checkout_commit();
    let build = body
        .lines()
        .find(|l| l.starts_with("iosat_build_info{"))
        .unwrap_or_else(|| panic!("no iosat_build_info in:\n{body}"));
    assert!(
        build.starts_with(&format!(
            "iosat_build_info{{version=\"{}\",commit=\"{}\",rustc=\"",
            env!("CARGO_PKG_VERSION"),
            commit.as_deref().unwrap_or("unknown")
        )) && build.ends_with("} 1"),
        "{build}"
    );
}

/// Every `# TYPE` of an exposition has a `# HELP` of the same family before it, and every
/// sample belongs to a typed family.
pub(crate) fn every_type_has_help(body: &str) {
    let mut helped = std::collections::HashSet::new();
    let mut typed = vec![];
    for l in body.lines() {
        if let Some(rest) = l.strip_prefix("# HELP ") {
            let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
            assert!(!text.trim().is_empty(), "empty HELP: {l}");
            helped.insert(name.to_string());
        } else if let Some(rest) = l.strip_prefix("# TYPE ") {
            let name = rest.split(' ').next().unwrap();
            assert!(
                helped.contains(name),
                "# TYPE {name} without a # HELP before it"
            );
            typed.push(name.to_string());
        }
    }
    assert!(typed.len() >= 10, "{typed:?}");
    for l in body
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let name = l.split(['{', ' ']).next().unwrap();
        assert!(
            typed.iter().any(|t| name == t
                || ["_bucket", "_sum", "_count"]
                    .iter()
                    .any(|s| name.strip_suffix(s) == Some(t.as_str()))),
            "{name} belongs to no typed family"
        );
    }
}

/// `git rev-parse --short HEAD` of this checkout; None outside one (or without git).
fn checkout_commit() -> Option<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    if !root.join(".git").exists() {
        return None;
    }
    let o = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

#[test]
fn version_names_the_commit_of_the_checkout() {
    let o = crate::util::iosat().arg("--version").output().unwrap();
    let out = crate::util::ok_stdout(&o);
    let commit = checkout_commit();
    let want = format!(
        "iosat {} (commit {}, rustc ",
        env!("CARGO_PKG_VERSION"),
        commit.as_deref().unwrap_or("unknown")
    );
    assert!(out.starts_with(&want), "{out:?}, want {want:?}");
    // Subcommands say the same.
    let o = crate::util::iosat()
        .args(["exporter", "--version"])
        .output()
        .unwrap();
    assert!(crate::util::ok_stdout(&o).contains(&want[6..]));
}

#[test]
fn a_profile_saved_while_the_exporter_runs_is_picked_up() {
    let dir = crate::util::tempdir().unwrap();
    let mut s = Scraper::new(fixture_root(), Devices::default(), Some(dir.path().into()))
        .with_profile_refresh(0);
    let text = metrics::render(&s.scrape());
    assert!(!text.contains("iosat_profile_info{"), "{text}");
    std::fs::copy(
        fixture("exporter/profiles/eui.0025385b71b2c3d4.json"),
        dir.path().join("eui.0025385b71b2c3d4.json"),
    )
    .unwrap();
    let text = metrics::render(&s.scrape());
    assert!(
        text.contains("iosat_profile_knee_concurrency{device=\"nvme0n1\",op=\"read\"} 32\n"),
        "{text}"
    );
}

#[test]
fn a_stop_signal_ends_the_exporter_and_frees_its_port() {
    let mut e = fixture_exporter(&[]);
    assert_eq!(e.request("GET", "/").0, 200);
    // SAFETY: kill(2) on the pid of the child this test started.
    assert_eq!(unsafe { libc::kill(e.child.id() as i32, libc::SIGTERM) }, 0);
    let status = e.child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{status:?}");
    std::net::TcpListener::bind(e.addr).expect("the port is free again");
}

/// The reads counter of `name` in this machine's /proc/diskstats.
fn live_reads(name: &str) -> f64 {
    let text = std::fs::read_to_string("/proc/diskstats").unwrap();
    text.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.get(2) == Some(&name))
        .map(|f| f[3].parse().unwrap())
        .unwrap()
}

/// A profile directory with a randread profile of 4 KiB requests for device `name` (saved
/// under its id as `iosat info` gives it) whose verdict is `verdict` (JSON).
pub(crate) fn profile_dir_for(name: &str, verdict: &str) -> tempfile::TempDir {
    profile_dir_with(name, r#"{"pattern":"randread","block_size":4096}"#, verdict)
}

/// [`profile_dir_for`] of a sweep of `workload` (JSON: its pattern, block size, share of
/// reads).
pub(crate) fn profile_dir_with(name: &str, workload: &str, verdict: &str) -> tempfile::TempDir {
    let info = crate::util::ok_json(
        &crate::util::iosat()
            .args(["info", "--all", "--json", name])
            .output()
            .unwrap(),
    );
    let id = info["devices"][0]["profile_id"].as_str().unwrap();
    let profiles = crate::util::tempdir().unwrap();
    std::fs::write(
        profiles.path().join(format!("{id}.json")),
        format!(r#"{{"workload":{workload},"verdict":{verdict}}}"#),
    )
    .unwrap();
    profiles
}

#[test]
fn on_a_loop_device_the_recorded_saturation_equals_stats() {
    if !crate::util::is_root() {
        crate::util::skip("needs root (loop device)");
        return;
    }
    if !have_promtool() {
        return;
    }
    if !have("prometheus", "--version") {
        crate::util::skip("prometheus not installed");
        return;
    }
    let lo = crate::util::LoopDev::new(16 << 20);
    let name = lo.name().to_string();
    let profiles = profile_dir_for(
        &name,
        r#"{"baseline_latency_ns":5000.0,"knee_concurrency":4,"max_useful_iops":50000.0}"#,
    );
    let pdir = profiles.path().to_str().unwrap().to_string();
    // Warm-up reads, so the first sample Prometheus takes has both counters well above 0 (its
    // rate() extrapolation then scales time and count alike).
    crate::stat::direct_io(lo.path.as_str(), 20_000, 0);
    let e = Exporter::start(
        std::path::Path::new("/"),
        &["--device-include", &name, "--profile-dir", &pdir],
    );
    let prom = Prometheus::start(&[e.addr]);
    let reads_q = format!("iosat_disk_requests_completed_total{{device=\"{name}\",op=\"read\"}}");
    // Until Prometheus has scraped every read the device has completed so far. The count is
    // read again at each poll: a stray read after the test's own (udev probing the new loop
    // device) moved a count taken once out of reach, and the test failed waiting for it.
    let scraped = || {
        let mut want = 0.0;
        for _ in 0..600 {
            want = live_reads(&name);
            if prom
                .query(&reads_q)
                .first()
                .is_some_and(|(_, v)| *v == want)
            {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("Prometheus never scraped the {want} reads of {name}");
    };
    scraped();
    // stat over one interval that spans the measured reads, nothing else on the device.
    let dir = crate::util::tempdir().unwrap();
    let rec = dir.path().join("s.rec");
    let stat = crate::util::iosat()
        .args([
            "stat",
            &name,
            "-i",
            "8",
            "-c",
            "1",
            "--json",
            "--profile-dir",
            &pdir,
        ])
        .arg("--record")
        .arg(&rec)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    crate::stat::wait_for_first_sample(&rec);
    // At most 4 s of reads inside the 8 s interval: on a slow machine (CI's, at 0.2 ms a read)
    // a fixed 60,000 outlasted stat's interval, Prometheus's window held reads stat never saw,
    // and the two means differed by 17 %.
    let reads = crate::stat::direct_reads_within(
        lo.path.as_str(),
        60_000,
        std::time::Duration::from_secs(4),
    );
    scraped();
    let out = stat.wait_with_output().unwrap();
    let line = crate::util::ok_stdout(&out);
    let report: serde_json::Value = serde_json::from_str(line.trim()).unwrap();
    let seen = crate::stat::dev(&report, &name)["r/s"].as_f64().unwrap()
        * report["interval_s"].as_f64().unwrap();
    assert!(
        seen.round() >= reads as f64,
        "stat's interval saw {seen} reads of the {reads} done: it does not span them"
    );
    let want = crate::stat::dev(&report, &name)["profile"]["saturation_r"]
        .as_f64()
        .unwrap();
    // The rules evaluate every second: wait for an evaluation after the last scrape.
    let sat_q = format!("device_op:iosat_disk_saturation:ratio1m{{device=\"{name}\",op=\"read\"}}");
    let mut got = None;
    for _ in 0..100 {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let v = prom.query(&sat_q);
        if let Some((_, v)) = v.first() {
            got = Some(*v);
            if (v - want).abs() / want < 0.05 {
                break;
            }
        }
    }
    let got = got.expect("no recorded saturation");
    eprintln!("recorded saturation {got}, stat's {want}");
    assert!(
        (got - want).abs() / want < 0.05,
        "recorded saturation {got}, stat's {want}"
    );
}

/// A learned judgement of `state` at `ratio` over a baseline of 1 ms mean, 1.5 ms p95 (reads).
pub(crate) fn learned(state: iosat::learn::State, ratio: f64) -> iosat::learn::Learned {
    iosat::learn::Learned {
        state,
        intervals: 4812,
        learned_s: 11_520.0,
        direction: Some(iosat::learn::model::Dir::Read),
        size_class: None,
        baseline_latency_ns: Some(1e6),
        baseline_p95_ns: Some(1.5e6),
        baseline_device_ns: None,
        baseline_interval_ns: Some([0.9e6, 1.1e6]),
        knee_concurrency: None,
        knee_range: None,
        knee_at_least: Some(6.0),
        max_iops: Some(3400.0),
        max_iops_at_least: Some(true),
        headroom_iops: Some(1200.0),
        ratio: Some(ratio),
        fit_r_squared: None,
        ceiling_other_iops: None,
        baseline_estimate: None,
        cpu_busy: false,
        profile_change: None,
        summary: None,
        flags: Default::default(),
        directions: vec![],
        classes: None,
    }
}

/// Serve `l` as what was learned of `d`, with the device's judgement (monitor::judge) of an
/// interval of 1,000 reads/s and 1,000 writes/s at the learned ratios, 64 in flight while busy
/// (loaded): what a scrape sets from the interval since the last one.
pub(crate) fn judged(d: &mut iosat::exporter::metrics::DeviceScrape, l: iosat::learn::Learned) {
    use iosat::monitor::judge::{judge_parts, learned_references};
    let rates = iosat::monitor::DiskRates {
        interval_s: 1.0,
        r_s: 1000.0,
        w_s: 1000.0,
        r_await: Some(1.0),
        w_await: Some(1.0),
        aqu_sz: 64.0,
        util_pct: 100.0,
        ..Default::default()
    };
    d.judgement = Some(judge_parts(
        d.profile.as_deref(),
        &learned_references(Some(&l)),
        Some(&rates),
        [None, None],
    ));
    d.learned = Some(std::sync::Arc::new(l));
}

/// A learned figure's seconds print as its own digits: a baseline of 46326.1827 ns (nine
/// significant digits, as learning gives every figure) is 0.0000463261827 s, where ns / 1e9
/// printed 0.000046326182699999996 (the VM's disk, stop 87).
#[test]
fn learned_seconds_print_as_the_figures_digits() {
    use iosat::learn::State;
    let mut s = Scraper::new(fixture_root(), all(), None).scrape();
    for d in &mut s.devices {
        if d.line.name == "sda" {
            let mut l = learned(State::Ok, 1.0);
            l.baseline_latency_ns = Some(46_326.182_7);
            l.baseline_p95_ns = Some(71_467.514_8);
            l.baseline_interval_ns = Some([45_100.123_4, 47_552.242_1]);
            judged(d, l);
        }
    }
    let text = metrics::render(&s);
    for line in [
        "iosat_disk_baseline_latency_seconds{device=\"sda\",op=\"read\",source=\"learned\"} 0.0000463261827",
        "iosat_disk_baseline_p95_latency_seconds{device=\"sda\",op=\"read\",source=\"learned\"} 0.0000714675148",
        "iosat_disk_baseline_latency_bound_seconds{device=\"sda\",op=\"read\",source=\"learned\",bound=\"low\"} 0.0000451001234",
        "iosat_disk_baseline_latency_bound_seconds{device=\"sda\",op=\"read\",source=\"learned\",bound=\"high\"} 0.0000475522421",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing from:\n{text}");
    }
}

#[test]
fn the_learned_judgement_is_served_with_its_source_and_state() {
    use iosat::learn::State;
    let mut s = Scraper::new(fixture_root(), all(), Some(fixture("exporter/profiles-rw"))).scrape();
    for d in &mut s.devices {
        // nvme0n1 has swept profiles (read and write): the sweep takes precedence there.
        if d.line.name == "sda" || d.line.name == "nvme0n1" {
            judged(d, learned(State::Saturated, 2.0));
        }
    }
    let text = metrics::render(&s);
    for line in [
        "iosat_disk_baseline_latency_seconds{device=\"sda\",op=\"read\",source=\"learned\"} 0.001",
        "iosat_disk_baseline_p95_latency_seconds{device=\"sda\",op=\"read\",source=\"learned\"} 0.0015",
        "iosat_disk_baseline_latency_bound_seconds{device=\"sda\",op=\"read\",source=\"learned\",bound=\"low\"} 0.0009",
        "iosat_disk_baseline_latency_bound_seconds{device=\"sda\",op=\"read\",source=\"learned\",bound=\"high\"} 0.0011",
        "iosat_disk_knee_at_least_concurrency{device=\"sda\",op=\"read\",source=\"learned\"} 6",
        // Saturated: no headroom, whatever the ceiling (analysis::state).
        "iosat_disk_headroom_iops{device=\"sda\",op=\"read\",source=\"learned\"} 0",
        "iosat_disk_baseline_latency_seconds{device=\"nvme0n1\",op=\"read\",source=\"sweep\"} 0.000085",
        "iosat_disk_state{device=\"sda\",state=\"saturated\"} 1",
        "iosat_disk_state{device=\"sda\",state=\"ok\"} 0",
        "iosat_disk_latency_ratio{device=\"sda\"} 2",
        "iosat_disk_learned_intervals{device=\"sda\"} 4812",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing from:\n{text}");
    }
    assert!(
        !text.contains("device=\"nvme0n1\",op=\"read\",source=\"learned\""),
        "a swept profile takes precedence over learning:\n{text}"
    );
    if have_promtool() {
        promtool_check_metrics(&text).unwrap();
    }
}

/// A learned knee is served as its words say it: one whose range starts at it and rises above
/// it ("knee at or above 1 in flight (1–16)": the traffic went from 1 in flight straight to
/// bursts at 17, as on the VM's own disk in stop 85) as a lower bound with its range, never as
/// a knee of 1 (the shipped load rule would read 17 in flight as 17x past it); one whose range
/// ends at it ("at or below 8 (2–8)") as its range alone (a knee of 8 would read a load past the
/// true knee as below it); one inside its range ("at 4 (2–8)") as the knee, with its range.
#[test]
fn a_learned_knee_range_is_served_and_one_rising_above_the_knee_is_a_lower_bound() {
    use iosat::learn::State;
    let mut s = Scraper::new(fixture_root(), all(), None).scrape();
    for d in &mut s.devices {
        let (k, range) = match d.line.name.as_str() {
            "sda" => (1, [1, 16]),
            "nvme0n1" => (8, [2, 8]),
            "md0" => (4, [2, 8]),
            _ => continue,
        };
        let mut l = learned(State::Ok, 1.0);
        (l.knee_concurrency, l.knee_range, l.knee_at_least) = (Some(k), Some(range), None);
        judged(d, l);
    }
    let text = metrics::render(&s);
    for line in [
        "iosat_disk_knee_at_least_concurrency{device=\"sda\",op=\"read\",source=\"learned\"} 1",
        "iosat_disk_knee_range_concurrency{device=\"sda\",op=\"read\",source=\"learned\",bound=\"low\"} 1",
        "iosat_disk_knee_range_concurrency{device=\"sda\",op=\"read\",source=\"learned\",bound=\"high\"} 16",
        "iosat_disk_knee_range_concurrency{device=\"nvme0n1\",op=\"read\",source=\"learned\",bound=\"low\"} 2",
        "iosat_disk_knee_range_concurrency{device=\"nvme0n1\",op=\"read\",source=\"learned\",bound=\"high\"} 8",
        "iosat_disk_knee_concurrency{device=\"md0\",op=\"read\",source=\"learned\"} 4",
        "iosat_disk_knee_range_concurrency{device=\"md0\",op=\"read\",source=\"learned\",bound=\"low\"} 2",
        "iosat_disk_knee_range_concurrency{device=\"md0\",op=\"read\",source=\"learned\",bound=\"high\"} 8",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing from:\n{text}");
    }
    assert!(
        !text.contains("iosat_disk_knee_concurrency{device=\"sda\""),
        "a knee of 1 served for a range 1-16:\n{text}"
    );
    assert!(
        !text.contains("iosat_disk_knee_concurrency{device=\"nvme0n1\""),
        "a knee of 8 served for a range 2-8 that ends at it:\n{text}"
    );
    for dev in ["nvme0n1", "md0"] {
        let at_least = format!("iosat_disk_knee_at_least_concurrency{{device=\"{dev}\"");
        assert!(!text.contains(&at_least), "{text}");
    }
    if have_promtool() {
        promtool_check_metrics(&text).unwrap();
    }
}

/// A learned direction whose requests span size classes (the kernel sized them: 4 KiB and
/// 64 KiB reads at once) is judged by its classes' curves, but the ceiling learning gives is
/// one class's: neither it nor a headroom from it is served as the device's (issue 37: no
/// headroom from a curve the current mix does not match), and the flag says why; the same
/// judgement without the flag serves both.
#[test]
fn a_direction_whose_requests_span_size_classes_serves_no_ceiling_nor_headroom() {
    use iosat::learn::State;
    let mut s = Scraper::new(fixture_root(), all(), None).scrape();
    for d in &mut s.devices {
        let mut l = learned(State::Ok, 1.0);
        match d.line.name.as_str() {
            "sda" => {
                l.flags.spans_classes = true;
                // Each class's own judgement: the 4 KiB class's (whose figures these are)
                // and a 64 KiB class with no baseline yet.
                let class = |size_class, share, ratio: Option<f64>, ns: Option<f64>| {
                    iosat::analysis::learned::ClassJudgement {
                        size_class,
                        share,
                        state: if ratio.is_some() {
                            State::Ok
                        } else {
                            State::Unknown
                        },
                        ratio,
                        baseline_latency_ns: ns,
                        baseline_p95_ns: ns,
                        max_iops: None,
                        max_iops_at_least: None,
                        estimate: false,
                    }
                };
                use iosat::analysis::learned::SizeClass;
                l.classes = Some(Box::new([
                    class(SizeClass::Small, 0.55, Some(1.0), Some(1e6)),
                    class(SizeClass::Medium, 0.45, None, None),
                ]));
            }
            "md0" => {}
            _ => continue,
        }
        judged(d, l);
    }
    let text = metrics::render(&s);
    for line in [
        "iosat_disk_class_request_share{device=\"sda\",op=\"read\",size_class=\"small\"} 0.55",
        "iosat_disk_class_request_share{device=\"sda\",op=\"read\",size_class=\"medium\"} 0.45",
        "iosat_disk_class_latency_ratio{device=\"sda\",op=\"read\",size_class=\"small\"} 1",
        "iosat_disk_class_baseline_latency_seconds{device=\"sda\",op=\"read\",size_class=\"small\"} 0.001",
        "iosat_disk_op_flag{device=\"sda\",op=\"read\",flag=\"spans_classes\"} 1",
        "iosat_disk_op_flag{device=\"md0\",op=\"read\",flag=\"spans_classes\"} 0",
        "iosat_disk_state{device=\"sda\",state=\"ok\"} 1",
        "iosat_disk_baseline_latency_seconds{device=\"sda\",op=\"read\",source=\"learned\"} 0.001",
        "iosat_disk_max_iops{device=\"md0\",op=\"read\",source=\"learned\"} 3400",
        "iosat_disk_headroom_iops{device=\"md0\",op=\"read\",source=\"learned\"} 2400",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing from:\n{text}"
        );
    }
    for family in ["iosat_disk_max_iops", "iosat_disk_headroom_iops"] {
        let series = format!("{family}{{device=\"sda\",op=\"read\"");
        assert!(!text.contains(&series), "{series} served:\n{text}");
    }
    // No figure the 64 KiB class does not have, and no class series for md0, which does not
    // span classes.
    for series in [
        "iosat_disk_class_latency_ratio{device=\"sda\",op=\"read\",size_class=\"medium\"}",
        "iosat_disk_class_baseline_latency_seconds{device=\"sda\",op=\"read\",size_class=\"medium\"}",
        "iosat_disk_class_request_share{device=\"md0\"",
    ] {
        assert!(!text.contains(series), "{series} served:\n{text}");
    }
    if have_promtool() {
        promtool_check_metrics(&text).unwrap();
    }
}

/// Without a baseline at about one in flight, learning's estimate is served labelled as one
/// (issue 37): `source="learned_estimate"`, its point as the baseline the state is judged by and
/// its interval as the bounds, never under `source="learned"`; with bounds only and nothing
/// judged by them (below 1.5x their upper end), the bounds alone and no state.
#[test]
fn an_estimate_is_served_under_its_own_source() {
    use iosat::analysis::learned::{Estimate, EstimateMethod};
    use iosat::analysis::shared::Shared;
    use iosat::learn::State;
    let estimated = |latency_ns: Option<f64>, ratio: Option<f64>| {
        let mut l = learned(State::Ok, 1.0);
        l.baseline_latency_ns = None;
        l.baseline_p95_ns = None;
        l.baseline_interval_ns = None;
        l.knee_at_least = None;
        l.max_iops = None;
        l.max_iops_at_least = None;
        l.headroom_iops = None;
        l.ratio = ratio;
        l.baseline_estimate = Some(Shared::new(Estimate {
            from_in_flight: 2.0,
            latency_ns,
            interval_ns: [0.5e6, 1.0e6],
            method: if latency_ns.is_some() {
                EstimateMethod::Flat
            } else {
                EstimateMethod::Bounds
            },
        }));
        l.flags.estimate = Some(Shared::new(iosat::analysis::state::Estimate {
            from_level: 2.0,
            interval_ns: Some([0.5e6, 1.0e6]),
        }));
        l
    };
    let mut s = Scraper::new(fixture_root(), all(), None).scrape();
    for d in &mut s.devices {
        // The interval's reads take 1 ms (tests/it/exporter.rs's `judged`).
        match d.line.name.as_str() {
            "sda" => judged(d, estimated(Some(0.8e6), Some(1.25))),
            "md0" => judged(d, estimated(None, None)),
            _ => {}
        }
    }
    let text = metrics::render(&s);
    for line in [
        "iosat_disk_baseline_latency_seconds{device=\"sda\",op=\"read\",source=\"learned_estimate\"} 0.0008",
        "iosat_disk_baseline_latency_bound_seconds{device=\"sda\",op=\"read\",source=\"learned_estimate\",bound=\"low\"} 0.0005",
        "iosat_disk_baseline_latency_bound_seconds{device=\"sda\",op=\"read\",source=\"learned_estimate\",bound=\"high\"} 0.001",
        "iosat_disk_state{device=\"sda\",state=\"ok\"} 1",
        "iosat_disk_latency_ratio{device=\"sda\"} 1.25",
        "iosat_disk_baseline_latency_bound_seconds{device=\"md0\",op=\"read\",source=\"learned_estimate\",bound=\"high\"} 0.001",
        "iosat_disk_state{device=\"md0\",state=\"unknown\"} 1",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing from:\n{text}");
    }
    for absent in [
        "source=\"learned\"}",
        "iosat_disk_baseline_latency_seconds{device=\"md0\"",
        "iosat_disk_headroom_iops{device=\"sda\"",
        "iosat_disk_latency_ratio{device=\"md0\"}",
    ] {
        assert!(!text.contains(absent), "{absent} served:\n{text}");
    }
    if have_promtool() {
        promtool_check_metrics(&text).unwrap();
    }
}

/// A change is served as one (issue 37): the learned one on the learned basis, a swept profile
/// the traffic disagrees with on the sweep's, each with from, to and when it began; nothing
/// of the kind while nothing changed.
#[test]
fn a_change_and_a_disagreeing_sweep_are_served() {
    use iosat::analysis::state::Change;
    use iosat::learn::State;
    let change = |from_ns: f64, to_ns: f64| Change {
        at_wall_ns: 1_700_000_000_000_000_000,
        from_ns,
        to_ns,
        evidence: "test".into(),
        confirmed: false,
    };
    let mut s = Scraper::new(fixture_root(), all(), Some(fixture("exporter/profiles-rw"))).scrape();
    let quiet = metrics::render(&s);
    assert!(!quiet.contains("iosat_disk_change"), "{quiet}");
    for d in &mut s.devices {
        let mut l = learned(State::Overloaded, 8.0);
        if d.line.name == "sda" {
            // Faster than the old baseline: ok by it, but judged by its ceiling before the
            // change, so no headroom, and the exporter says why.
            l = learned(State::Ok, 0.5);
            l.flags.change = Some(iosat::analysis::shared::Shared::new(change(1e6, 0.5e6)));
        } else if d.line.name == "nvme0n1" {
            // Swept read and write profiles: the read one disagrees with the traffic.
            l.profile_change = Some(iosat::analysis::shared::Shared::new(change(85e3, 340e3)));
        } else {
            continue;
        }
        judged(d, l);
    }
    let text = metrics::render(&s);
    for line in [
        "iosat_disk_change_latency_seconds{device=\"sda\",op=\"read\",source=\"learned\",side=\"from\"} 0.001",
        "iosat_disk_change_latency_seconds{device=\"sda\",op=\"read\",source=\"learned\",side=\"to\"} 0.0005",
        "iosat_disk_op_state{device=\"sda\",op=\"read\",state=\"ok\"} 1",
        "iosat_disk_headroom_iops{device=\"sda\",op=\"read\",source=\"learned\"} 0",
        "iosat_disk_op_no_headroom{device=\"sda\",op=\"read\",reason=\"changed\"} 1",
        "iosat_disk_op_no_headroom{device=\"sda\",op=\"read\",reason=\"overloaded\"} 0",
        "iosat_disk_change_latency_seconds{device=\"nvme0n1\",op=\"read\",source=\"sweep\",side=\"from\"} 0.000085",
        "iosat_disk_change_latency_seconds{device=\"nvme0n1\",op=\"read\",source=\"sweep\",side=\"to\"} 0.00034",
        "iosat_disk_change_start_timestamp_seconds{device=\"sda\",op=\"read\",source=\"learned\"} 1700000000",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing from:\n{text}");
    }
    assert!(
        !text.contains("device=\"nvme0n1\",op=\"write\",source=\"sweep\",side"),
        "only the direction that disagrees:\n{text}"
    );
    if have_promtool() {
        promtool_check_metrics(&text).unwrap();
    }
}

#[test]
fn reads_and_writes_are_judged_apart() {
    use iosat::learn::model::Dir;
    use iosat::learn::State;
    let mut s = Scraper::new(fixture_root(), all(), None).scrape();
    let mut read = learned(State::Overloaded, 4.0);
    read.fit_r_squared = Some(0.93);
    let mut write = learned(State::Ok, 1.1);
    write.direction = Some(Dir::Write);
    write.baseline_latency_ns = Some(2e6);
    write.baseline_interval_ns = Some([1.8e6, 2.3e6]);
    write.knee_at_least = None;
    write.knee_concurrency = Some(8);
    write.headroom_iops = Some(700.0);
    // The device's own judgement is the busier direction's, with the worst state.
    let mut dev = read.clone();
    dev.directions = vec![read, write];
    for d in &mut s.devices {
        if d.line.name == "sda" {
            judged(d, dev.clone());
        }
    }
    let text = metrics::render(&s);
    for line in [
        "iosat_disk_baseline_latency_seconds{device=\"sda\",op=\"read\",source=\"learned\"} 0.001",
        "iosat_disk_baseline_latency_seconds{device=\"sda\",op=\"write\",source=\"learned\"} 0.002",
        "iosat_disk_baseline_latency_bound_seconds{device=\"sda\",op=\"write\",source=\"learned\",bound=\"high\"} 0.0023",
        "iosat_disk_knee_at_least_concurrency{device=\"sda\",op=\"read\",source=\"learned\"} 6",
        "iosat_disk_knee_concurrency{device=\"sda\",op=\"write\",source=\"learned\"} 8",
        // The ceiling learned (3,400) less the interval's 1,000 writes/s.
        "iosat_disk_headroom_iops{device=\"sda\",op=\"write\",source=\"learned\"} 2400",
        "iosat_disk_curve_fit_r_squared{device=\"sda\",op=\"read\",source=\"learned\"} 0.93",
        "iosat_disk_op_state{device=\"sda\",op=\"read\",state=\"overloaded\"} 1",
        "iosat_disk_op_state{device=\"sda\",op=\"write\",state=\"ok\"} 1",
        "iosat_disk_op_state{device=\"sda\",op=\"write\",state=\"overloaded\"} 0",
        "iosat_disk_op_latency_ratio{device=\"sda\",op=\"write\"} 1.1",
        // Why the read headroom is 0; the writes' is their ceiling less their IOPS.
        "iosat_disk_op_no_headroom{device=\"sda\",op=\"read\",reason=\"overloaded\"} 1",
        "iosat_disk_op_no_headroom{device=\"sda\",op=\"read\",reason=\"saturated\"} 0",
        "iosat_disk_op_no_headroom{device=\"sda\",op=\"write\",reason=\"overloaded\"} 0",
        "iosat_disk_op_no_headroom{device=\"sda\",op=\"write\",reason=\"changed\"} 0",
        "iosat_disk_state{device=\"sda\",state=\"overloaded\"} 1",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing from:\n{text}");
    }
    assert!(
        !text.lines().any(|l| l
            == "iosat_disk_baseline_latency_seconds{device=\"sda\",op=\"write\",source=\"learned\"} 0.001"),
        "the write direction has its own baseline:\n{text}"
    );
    if have_promtool() {
        promtool_check_metrics(&text).unwrap();
    }
}

#[test]
fn the_exporter_feeds_the_learner_unless_told_not_to() {
    let spec = iosat::learn::LearnSpec::default(); // in memory: nothing written
    let mut on = Scraper::new(fixture_root(), all(), None).learn_with(Some(spec));
    assert_eq!(on.tick_every_ns(), Some(1_000_000_000));
    on.tick();
    assert!(
        on.scrape().devices.iter().all(|d| d.learned.is_none()),
        "no interval yet"
    );
    // Scrapes alone learn nothing (the learner has its own cadence, Scraper::tick).
    assert!(on.scrape().devices.iter().all(|d| d.learned.is_none()));
    on.tick();
    let s = on.scrape();
    // The fixture's counters stand still: every device is idle, and says so.
    assert!(s
        .devices
        .iter()
        .all(|d| d.learned.as_ref().map(|l| l.state) == Some(iosat::learn::State::Idle)));
    let text = metrics::render(&s);
    assert!(
        text.contains("iosat_disk_state{device=\"sda\",state=\"idle\"} 1"),
        "{text}"
    );
    let mut off = Scraper::new(fixture_root(), all(), None).learn_with(None);
    assert_eq!(off.tick_every_ns(), None);
    off.tick();
    off.scrape();
    off.tick();
    let text = metrics::render(&off.scrape());
    assert!(
        !text.contains("iosat_disk_state"),
        "--no-learn serves no state:\n{text}"
    );
}

/// What Prometheus sends with native histograms on.
const PROTOBUF_ACCEPT: &str = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3,*/*;q=0.2";

#[test]
fn the_exporter_negotiates_protobuf_by_the_accept_header() {
    let e = fixture_exporter(&[]);
    let resp = e.raw(
        format!("GET /metrics HTTP/1.1\r\nHost: t\r\nAccept: {PROTOBUF_ACCEPT}\r\n\r\n").as_bytes(),
    );
    let (status, head, body) = parse_response(&resp);
    assert_eq!(status, 200);
    assert!(
        head.contains("content-type: application/vnd.google.protobuf; proto=io.prometheus.client.metricfamily; encoding=delimited"),
        "{head}"
    );
    // Every family is there (names are plain strings inside the messages).
    for family in [
        "iosat_disk_info",
        "iosat_disk_requests_completed_total",
        "iosat_build_info",
        "iosat_scrape_collector_success",
    ] {
        assert!(body.contains(family), "{family} missing");
    }
    assert!(!body.contains("# TYPE"));
    // Without it: the text format.
    let (_, head, body) = e.request("GET", "/metrics");
    assert!(
        head.contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    assert!(body.contains("# TYPE iosat_build_info gauge"));
}

#[test]
fn a_real_prometheus_stores_native_histograms() {
    if !crate::util::is_root() || !std::path::Path::new("/sys/kernel/btf/vmlinux").exists() {
        crate::util::skip_lacking("needs root and BTF (block-latency source on a loop device)");
        return;
    }
    if !have("prometheus", "--version") {
        crate::util::skip("prometheus not installed");
        return;
    }
    let lo = crate::util::LoopDev::new(16 << 20);
    let name = lo.name().to_string();
    let e = Exporter::start(
        std::path::Path::new("/"),
        &["--device-include", &name, "--no-profile", "--no-learn"],
    );
    crate::stat::direct_io(lo.path.as_str(), 2_000, 0);
    let prom = Prometheus::start_with(&[e.addr], &["--enable-feature=native-histograms"]);
    let q = format!(
        "histogram_count(iosat_disk_request_duration_seconds{{device=\"{name}\",op=\"read\"}})"
    );
    // Bounded: 60 s at most (Prometheus starts, then scrapes every second).
    let mut got = vec![];
    for _ in 0..600 {
        got = prom.query(&q);
        if got.first().is_some_and(|(_, v)| *v >= 2_000.0) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let (_, count) = got
        .first()
        .unwrap_or_else(|| panic!("no native histogram stored for {name}: {q}"));
    assert!(*count >= 2_000.0, "histogram_count {count}");
    // A native sample: the series without _bucket holds a histogram, whose quantile is a
    // latency (a loop device's 4 KiB direct reads: between 128 ns and 1 s).
    let p95 = prom.query(&format!(
        "histogram_quantile(0.95, iosat_disk_request_duration_seconds{{device=\"{name}\",op=\"read\"}})"
    ));
    let (_, p95) = p95.first().expect("a quantile of the native histogram");
    assert!(*p95 > 1.28e-7 && *p95 < 1.0, "p95 {p95}");
    // The other families came in the same protobuf scrape.
    let reads = prom.query(&format!(
        "iosat_disk_requests_completed_total{{device=\"{name}\",op=\"read\"}}"
    ));
    assert!(
        reads.first().is_some_and(|(_, v)| *v >= 2_000.0),
        "{reads:?}"
    );
    let build = prom.query("iosat_build_info");
    assert_eq!(build.len(), 1, "{build:?}");
}

/// `promtool check web-config FILE` passes (exporter-toolkit reads the file), when promtool is
/// installed.
fn promtool_check_web_config(file: &std::path::Path) {
    if have_promtool() {
        let o = Command::new("promtool")
            .args(["check", "web-config"])
            .arg(file)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
}

/// `openssl ARGS` in `dir`, which must succeed.
fn openssl(dir: &std::path::Path, args: &[&str]) {
    let o = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate signed by it, and a
/// client certificate signed by nobody, in `d` (RSA, one day).
fn make_pki(d: &std::path::Path) {
    let days = ["-days", "1"];
    openssl(
        d,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=iosat test CA",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            days[0],
            days[1],
        ],
    );
    for (name, ext) in [
        ("server", "subjectAltName=IP:127.0.0.1"),
        ("client", "extendedKeyUsage=clientAuth"),
    ] {
        openssl(
            d,
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-subj",
                &format!("/CN={name}"),
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
            ],
        );
        std::fs::write(d.join(format!("{name}.ext")), ext).unwrap();
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                &format!("{name}.crt"),
                "-extfile",
                &format!("{name}.ext"),
                days[0],
                days[1],
            ],
        );
    }
    openssl(
        d,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=rogue",
            "-keyout",
            "rogue.key",
            "-out",
            "rogue.crt",
            days[0],
            days[1],
        ],
    );
}

#[test]
fn every_web_config_key_with_a_real_client() {
    if !have("openssl", "version") || !have("curl", "--version") {
        crate::util::skip("needs openssl and curl");
        return;
    }
    let dir = crate::util::tempdir().unwrap();
    let d = dir.path();
    make_pki(d);
    let hash = bcrypt::hash("s3cret", 4).unwrap();
    let config = d.join("web.yml");
    std::fs::write(
        &config,
        format!(
            "tls_server_config:
  cert_file: server.crt
  key_file: server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
  min_version: TLS12
  max_version: TLS12
  cipher_suites:
    - TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384
  prefer_server_cipher_suites: true
basic_auth_users:
  alice: '{hash}'
http_server_config:
  http2: false
  headers:
    X-Frame-Options: deny
    X-Content-Type-Options: nosniff
"
        ),
    )
    .unwrap();
    // The same file is valid for exporter-toolkit (node_exporter, Prometheus). Debian's
    // promtool (2.42) carries an exporter-toolkit older than rate_limit (newer ones read it),
    // so it checks the file before that section is added.
    promtool_check_web_config(&config);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&config)
        .unwrap();
    f.write_all(b"rate_limit:\n  interval: 1m\n  burst: 3\n")
        .unwrap();
    drop(f);
    let e = fixture_exporter(&["--web.config.file", config.to_str().unwrap()]);
    let url = format!("https://{}/metrics", e.addr);
    // (HTTP status, response head); status 0 when no HTTP answer came (TLS refused).
    let curl = |extra: &[&str]| {
        let o = Command::new("curl")
            .current_dir(d)
            .args([
                "-s",
                "-o",
                "/dev/null",
                "-D",
                "-",
                "-w",
                "%{http_code}",
                "--max-time",
                "30",
                "--cacert",
                "ca.crt",
            ])
            .args(extra)
            .arg(&url)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        let code = out
            .get(out.len().saturating_sub(3)..)
            .unwrap_or("")
            .parse()
            .unwrap_or(0u16);
        (code, out.to_ascii_lowercase())
    };
    let cert = ["--cert", "client.crt", "--key", "client.key"];
    fn with<'a>(cert: &[&'a str], more: &[&'a str]) -> Vec<&'a str> {
        [cert, more].concat()
    }
    // client_auth_type RequireAndVerifyClientCert, client_ca_file: no certificate, or one
    // the CA did not sign, gets no HTTP answer at all.
    assert_eq!(curl(&["-u", "alice:s3cret"]).0, 0, "no client certificate");
    assert_eq!(
        curl(&[
            "--cert",
            "rogue.crt",
            "--key",
            "rogue.key",
            "-u",
            "alice:s3cret"
        ])
        .0,
        0,
        "a certificate of another CA"
    );
    // max_version TLS12: a TLS 1.3-only client is refused.
    assert_eq!(
        curl(&with(&cert, &["--tlsv1.3", "-u", "alice:s3cret"])).0,
        0,
        "TLS 1.3 only"
    );
    // cipher_suites: a client offering only another suite is refused.
    assert_eq!(
        curl(&with(
            &cert,
            &[
                "--tls-max",
                "1.2",
                "--ciphers",
                "ECDHE-RSA-AES128-GCM-SHA256",
                "-u",
                "alice:s3cret"
            ]
        ))
        .0,
        0,
        "another cipher suite"
    );
    // The configured suite, a verified certificate and the password: served, with the headers.
    let (code, head) = curl(&with(
        &cert,
        &[
            "--tls-max",
            "1.2",
            "--ciphers",
            "ECDHE-RSA-AES256-GCM-SHA384",
            "-u",
            "alice:s3cret",
        ],
    ));
    assert_eq!(code, 200, "{head}");
    assert!(head.contains("\r\nx-frame-options: deny\r\n"), "{head}");
    assert!(
        head.contains("\r\nx-content-type-options: nosniff\r\n"),
        "{head}"
    );
    // basic_auth_users over the verified connection.
    let (code, head) = curl(&with(&cert, &["-u", "alice:wrong"]));
    assert_eq!(code, 401);
    assert!(
        head.contains("x-frame-options: deny"),
        "headers on every answer: {head}"
    );
    assert_eq!(curl(&with(&cert, &["-u", "alice:s3cret"])).0, 200);
    // rate_limit burst 3, one more a minute: the fourth request within the minute gets 429.
    assert_eq!(curl(&with(&cert, &["-u", "alice:s3cret"])).0, 429);
    // An unknown key is refused in one line naming it.
    std::fs::write(&config, "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_allowed_sans: [x]\n").unwrap();
    let o = crate::util::iosat()
        .args(["exporter", "--web.config.file", config.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = crate::util::stderr(&o);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("tls_server_config.client_allowed_sans: unknown setting"),
        "{err}"
    );
}

#[test]
fn verify_client_cert_if_given_serves_clients_without_one() {
    if !have("openssl", "version") || !have("curl", "--version") {
        crate::util::skip("needs openssl and curl");
        return;
    }
    let dir = crate::util::tempdir().unwrap();
    let d = dir.path();
    make_pki(d);
    let config = d.join("web.yml");
    std::fs::write(
        &config,
        "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ca.crt\n  min_version: TLS13\n",
    )
    .unwrap();
    let hs = d.join("hs");
    let e = fixture_exporter(&[
        "--web.config.file",
        config.to_str().unwrap(),
        "--hindsight-dir",
        hs.to_str().unwrap(),
        "--hindsight-tail",
        "0",
    ]);
    let url = format!("https://{}/metrics", e.addr);
    let curl = |extra: &[&str]| {
        let o = Command::new("curl")
            .current_dir(d)
            .args([
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "--max-time",
                "30",
                "--cacert",
                "ca.crt",
            ])
            .args(extra)
            .arg(&url)
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert_eq!(curl(&[]), "200", "no certificate: served");
    assert_eq!(
        curl(&["--cert", "client.crt", "--key", "client.key"]),
        "200"
    );
    assert_eq!(
        curl(&["--cert", "rogue.crt", "--key", "rogue.key"]),
        "000",
        "a certificate nobody vouches for"
    );
    // min_version TLS13: a TLS 1.2 client is refused.
    assert_eq!(curl(&["--tls-max", "1.2"]), "000");
}
