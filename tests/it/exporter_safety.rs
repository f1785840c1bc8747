//! `iosat exporter` as a network service under real conditions (issue 28): overlapping
//! scrapes, idle connections, basic auth that tells nothing and cannot starve the host,
//! warnings at start about exposure and an expired certificate, and the block-latency
//! program's device slots. Against a real exporter on 127.0.0.1 where possible.

use crate::exporter::{fixture_exporter, Exporter};

/// A root whose diskstats has `n` whole disks: a scrape that takes a while.
fn many_disks(n: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("proc")).unwrap();
    std::fs::create_dir_all(dir.path().join("sys")).unwrap();
    let text: String = (0..n)
        .map(|i| format!(" 8 {i} sd{i} 1 2 3 4 5 6 7 8 0 10 11 0 0 0 0 0 0\n"))
        .collect();
    std::fs::write(dir.path().join("proc/diskstats"), text).unwrap();
    dir
}

const OK: &str = "iosat_scrape_collector_success{collector=\"diskstats\"} 1\n";

#[test]
fn overlapping_scrapes_all_get_data() {
    let dir = many_disks(2_000);
    let e = Exporter::start(dir.path(), &["--all", "--scrape.timeout", "60s"]);
    // Three clients scraping back to back: their scrapes overlap most of the time.
    let failed = std::sync::atomic::AtomicUsize::new(0);
    let served = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| {
                for _ in 0..10 {
                    let (status, head, body) = e.request("GET", "/metrics");
                    assert_eq!(status, 200, "{head}");
                    served.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if !body.contains(OK) || !body.contains("device=\"sd1999\"") {
                        failed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert_eq!(served.into_inner(), 30);
    assert_eq!(failed.into_inner(), 0, "scrapes answered without data");
}

#[test]
fn idle_connections_do_not_deny_a_scrape() {
    use std::io::Write;
    let e = fixture_exporter(&["--web.max-requests", "2", "--web.read-timeout", "60s"]);
    // Forty clients hold connections: some idle, some half-way through their head.
    let idle: Vec<_> = (0..40)
        .map(|i| {
            let mut s = e.connect();
            if i % 2 == 0 {
                s.write_all(b"GET /metrics HTTP/1.1\r\nHo").unwrap();
            }
            s
        })
        .collect();
    let (status, head, body) = e.request("GET", "/metrics");
    assert_eq!(status, 200, "{head}");
    assert!(body.contains(OK), "{body}");
    // Idle connections have a cap of their own: beyond it, 503 at once.
    let more: Vec<_> = (idle.len()..iosat::exporter::server::idle_cap(2))
        .map(|_| e.connect())
        .collect();
    let mut refused = false;
    for _ in 0..50 {
        if e.request("GET", "/").0 == 503 {
            refused = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(refused, "no cap on idle connections");
    drop((idle, more));
}

#[test]
fn a_malformed_hash_is_refused_at_start_naming_the_file_and_user() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("web.yml");
    let good = bcrypt::hash("pw", 4).unwrap();
    std::fs::write(
        &config,
        format!("basic_auth_users:\n  alice: '{good}'\n  bob: '$2y$10$tooshort'\n"),
    )
    .unwrap();
    let path = config.to_str().unwrap();
    crate::util::assert_refusals(&[(
        &["exporter", "--web.config.file", path],
        2,
        "basic_auth_users.bob: not a valid bcrypt hash",
    )]);
    let err = crate::util::stderr(&crate::util::run(&["exporter", "--web.config.file", path]));
    assert!(err.contains(path), "{err}");
}
