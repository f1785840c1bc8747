//! `iosat fsync --like postgres|innodb|mariadb` end to end (issue 31): the JSON's shape (one
//! entry per setting, the recommendation), every block read back, the reports of a saved run;
//! on the known test device with a set flush time, a commit is the flush plus the write; on a
//! device that says "write through", the kernel sends no flush and the verdict says so; and
//! pg_test_fsync on the same directory agrees setting by setting (a ratio of two measurements,
//! never a timing of iosat itself).

use crate::knowndev::{self, KnownDev, Spec};
use crate::util::{iosat, is_root, ok_json, stderr, LoopDev};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn like(dir: &Path, db: &str, duration: &str, extra: &[&str]) -> Value {
    like_with(iosat(), dir, db, duration, extra)
}

/// At real-time priority (chrt -f 1) where chrt runs, as truth.rs times the known device: on
/// two shared cores a commit otherwise waits for a CPU as long as for the device.
fn like_rt(dir: &Path, db: &str, duration: &str, extra: &[&str]) -> Value {
    let rt = Command::new("chrt").args(["-f", "1", "true"]).status();
    if rt.is_ok_and(|s| s.success()) {
        let mut c = Command::new("chrt");
        c.args(["-f", "1", env!("CARGO_BIN_EXE_iosat")]);
        like_with(c, dir, db, duration, extra)
    } else {
        like(dir, db, duration, extra)
    }
}

fn like_with(mut cmd: Command, dir: &Path, db: &str, duration: &str, extra: &[&str]) -> Value {
    let out = cmd
        .arg("fsync")
        .arg(dir)
        .args(["--like", db, "--duration", duration, "--json"])
        .args(extra)
        .output()
        .unwrap();
    ok_json(&out)
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("{k} in {v}"))
}

/// The entry of `method` with `wpc` writes per commit (the commit pattern).
fn entry<'a>(j: &'a Value, method: &str, wpc: u64) -> &'a Value {
    j["like"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| {
            e["method"] == method && e["writes_per_commit"] == wpc && e["pattern"] == "commit"
        })
        .unwrap_or_else(|| panic!("no {method} x{wpc} in {}", j["like"]))
}

#[test]
fn postgres_json_has_one_entry_per_wal_sync_method_and_a_recommendation() {
    let dir = crate::util::tempdir().unwrap();
    let j = like(dir.path(), "postgres", "0.05", &["--committers", "1,2"]);
    let l = &j["like"];
    assert_eq!(l["database"], "postgres");
    assert_eq!(l["variable"], "wal_sync_method");
    let measured: Vec<(String, u64)> = l["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            for k in ["commits_per_s", "writes_per_commit", "latency_ns", "method"] {
                assert!(!e[k].is_null(), "{k} in {e}");
            }
            for p in ["p50", "p99", "p999", "max"] {
                assert!(e["latency_ns"][p].as_u64().unwrap() > 0, "{e}");
            }
            assert_eq!(e["write_bytes"], 8192, "{e}");
            assert_eq!(e["verify"], "ok", "every block read back: {e}");
            (
                e["method"].as_str().unwrap().to_string(),
                e["writes_per_commit"].as_u64().unwrap(),
            )
        })
        .collect();
    let skipped: Vec<&str> = l["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["method"].as_str().unwrap())
        .collect();
    for m in ["open_datasync", "fdatasync", "fsync", "open_sync", "write"] {
        for wpc in [1, 2] {
            assert!(
                measured.contains(&(m.to_string(), wpc)) || skipped.contains(&m),
                "{m} x{wpc} neither measured nor skipped: {l}"
            );
        }
    }
    // The buffered methods always run; the open_* ones are opened with O_DIRECT.
    assert!(measured.contains(&("fdatasync".into(), 2)));
    let o = entry(&j, "fdatasync", 1);
    assert_eq!(o["access"], "buffered + fdatasync");
    if let Some(e) = measured.iter().find(|m| m.0 == "open_datasync") {
        assert_eq!(
            entry(&j, &e.0, 1)["access"],
            "O_DSYNC|O_DIRECT + no sync call"
        );
    }
    let r = &l["recommendations"][0];
    assert_eq!(r["variable"], "wal_sync_method", "{r}");
    assert_ne!(
        r["value"], "write",
        "the non-synced ceiling is never recommended"
    );
    // A disturbed run (this machine may be busy) says its advice is provisional first.
    let text = r["text"].as_str().unwrap();
    let text = match text.split_once("before acting): ") {
        Some((head, rest)) if head.starts_with("Provisional (") => {
            assert_eq!(r["provisional"], true, "{r}");
            rest
        }
        _ => text,
    };
    assert!(
        text.starts_with(&format!(
            "wal_sync_method = {}: commit p99 ",
            r["value"].as_str().unwrap()
        )),
        "{text}"
    );
    // The group-commit curve runs on the WAL's 8 KiB records.
    assert_eq!(j["group_commit"]["size"], 8192);
    assert!(
        j["cases"].as_array().unwrap().is_empty(),
        "--like replaces the methods"
    );
}

#[test]
fn innodb_and_mariadb_name_their_variables_and_the_pages_read_back() {
    let dir = crate::util::tempdir().unwrap();
    let j = like(dir.path(), "innodb", "0.05", &["--committers", "none"]);
    let l = &j["like"];
    assert_eq!(l["variable"], "innodb_flush_method");
    let pages: Vec<&Value> = l["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["pattern"] == "page_flush")
        .collect();
    assert!(!pages.is_empty(), "{l}");
    for p in &pages {
        assert_eq!(p["write_bytes"], 16384, "{p}");
        assert_eq!(
            p["writes_per_commit"], 9,
            "a doublewrite batch and 8 pages: {p}"
        );
        assert_eq!(p["verify"], "ok", "the tablespace read back: {p}");
    }
    assert_eq!(entry(&j, "O_DSYNC", 1)["access"], "O_SYNC + no sync call");
    assert_eq!(entry(&j, "fsync", 1)["write_bytes"], 4096);
    let r = &l["recommendations"][0];
    assert_eq!(r["variable"], "innodb_flush_method", "{r}");
    assert!(
        l["caveats"].to_string().contains("O_DIRECT_NO_FSYNC"),
        "{l}"
    );

    let j = like(dir.path(), "mariadb", "0.05", &["--committers", "none"]);
    let vars: Vec<&str> = j["like"]["recommendations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["variable"].as_str().unwrap())
        .collect();
    assert!(
        vars.iter().any(|v| v.starts_with("innodb_log_file_")),
        "{vars:?}"
    );
    assert!(
        vars.iter().any(|v| v.starts_with("innodb_data_file_")),
        "{vars:?}"
    );
}

#[test]
fn a_saved_like_run_renders_in_every_format_and_compares() {
    let dir = crate::util::tempdir().unwrap();
    let j = like(dir.path(), "postgres", "0.03", &["--committers", "none"]);
    let saved = dir.path().join("pg.json");
    std::fs::write(&saved, serde_json::to_string(&j).unwrap()).unwrap();
    let report = |fmt: &str| {
        let o = iosat()
            .args(["report", saved.to_str().unwrap(), "--format", fmt])
            .output()
            .unwrap();
        assert!(o.status.success(), "{fmt}: {}", stderr(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let value = j["like"]["recommendations"][0]["value"]
        .as_str()
        .unwrap()
        .to_string();
    let md = report("markdown");
    assert!(md.contains("Like PostgreSQL: wal_sync_method"), "{md}");
    assert!(md.contains(&format!("wal_sync_method = {value}")), "{md}");
    let csv = report("csv");
    assert!(
        csv.lines()
            .any(|l| l.starts_with("postgres,fdatasync,commit_2_writes,8192,")),
        "{csv}"
    );
    let html = report("html");
    assert!(
        html.contains("Like PostgreSQL") && html.contains("<svg"),
        "html"
    );
    let again = dir.path().join("pg2.json");
    std::fs::copy(&saved, &again).unwrap();
    let o = iosat()
        .args([
            "compare",
            saved.to_str().unwrap(),
            again.to_str().unwrap(),
            "--markdown",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let cmp = String::from_utf8(o.stdout).unwrap();
    assert!(cmp.contains("fdatasync commit x1"), "{cmp}");
    assert!(
        cmp.contains(&format!(
            "recommendation unchanged (wal_sync_method = {value})"
        )),
        "{cmp}"
    );
}

#[test]
fn like_refuses_methods_and_an_unknown_database() {
    let dir = crate::util::tempdir().unwrap();
    let o = iosat()
        .arg("fsync")
        .arg(dir.path())
        .args(["--like", "oracle"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--like"), "{}", stderr(&o));
    let o = iosat()
        .arg("fsync")
        .arg(dir.path())
        .args(["--like", "postgres", "--methods", "fsync"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// --commit-delay: the shared-log curve runs once per delay (and 0), each level saying its
/// delay, and the recommendations end with a commit_delay line (a value or "keep 0"); the
/// flag needs --like postgres.
#[test]
fn fsync_like_postgres_commit_delay_runs_the_curve_per_delay_and_advises() {
    let dir = crate::util::tempdir().unwrap();
    let j = like(
        dir.path(),
        "postgres",
        "0.05",
        &["--committers", "1,8", "--commit-delay", "0,1ms"],
    );
    let levels = j["group_commit"]["levels"].as_array().unwrap();
    let got: Vec<(u64, String, u64)> = levels
        .iter()
        .map(|l| {
            (
                l["committers"].as_u64().unwrap(),
                l["layout"].as_str().unwrap().to_string(),
                l["commit_delay_us"].as_u64().unwrap(),
            )
        })
        .collect();
    for n in [1, 8] {
        for (layout, d) in [
            ("shared_log", 0),
            ("shared_log", 1000),
            ("separate_files", 0),
        ] {
            // One committer has no commit_siblings: PostgreSQL would not wait, nor is it run.
            assert_eq!(
                got.contains(&(n, layout.to_string(), d)),
                n == 8 || d == 0,
                "{n} {layout} {d}: {got:?}"
            );
        }
    }
    assert_eq!(got.len(), 5, "{got:?}");
    let recs = j["like"]["recommendations"].as_array().unwrap();
    let cd = recs
        .iter()
        .find(|r| r["variable"] == "commit_delay")
        .unwrap_or_else(|| panic!("no commit_delay line: {recs:?}"));
    let text = cd["text"].as_str().unwrap();
    assert!(
        text.starts_with("commit_delay = 1000: raises commits/s at 8 backends")
            || text.starts_with("keep commit_delay = 0"),
        "{text}"
    );
    assert_eq!(recs[0]["variable"], "wal_sync_method", "{recs:?}");
    let o = iosat()
        .arg("fsync")
        .arg(dir.path())
        .args(["--like", "innodb", "--commit-delay", "100"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--like postgres"), "{}", stderr(&o));
}

/// On the known device (writes of W, flushes of F), ext4 without a journal: an fdatasync or
/// fsync commit of one 8 KiB WAL write is the write plus one flush. Both go through FUSE and
/// the loop device's worker, whose cost per request `o` the device's own counters show
/// (f_await - F); so the truth of a commit is F + W + 2·o, and the median commit is within
/// 10 % of it, or above it by the committer's own wake-up after the flush (one more o; fsync
/// may add the inode's block: one more write). The kernel saw one flush per commit.
#[test]
fn on_a_device_with_a_set_flush_time_a_commit_is_the_flush_plus_the_write() {
    const WRITE_MS: f64 = 1.0;
    const FLUSH_MS: f64 = 20.0;
    if !knowndev::available() {
        return;
    }
    let ms = |n: f64| Duration::from_micros((n * 1000.0) as u64);
    let mut dev = KnownDev::start(Spec::new(4, ms(WRITE_MS)).flush(ms(FLUSH_MS))).unwrap();
    let dir = dev.mount_ext4();
    let j = like_rt(&dir, "postgres", "1", &["--committers", "none"]);
    for m in ["fdatasync", "fsync"] {
        let e = entry(&j, m, 1);
        let fl = &e["device_flushes"];
        let per_commit = f(fl, "flushes") / f(e, "commits");
        assert!(
            (0.9..=1.6).contains(&per_commit),
            "{m}: {per_commit} flushes a commit\n{e}"
        );
        let f_await = f(fl, "f_await_ms");
        let o = f_await - FLUSH_MS;
        // The flush is F at the device, plus the path's cost (FUSE and the loop worker, more
        // on a busy machine): not free, not two flushes.
        assert!(
            (-0.5..FLUSH_MS * 0.25).contains(&o),
            "{m}: the device flushed in {f_await} ms, truth {FLUSH_MS} ms\n{e}"
        );
        let o = o.max(0.0);
        let p50 = f(&e["latency_ns"], "p50") / 1e6;
        let want = FLUSH_MS + WRITE_MS + 2.0 * o;
        // fsync may add the inode's block; and the committing thread, asleep for the whole
        // flush, pays its own wake-up after it, which on a busy VM costs about one more o
        // (CI, 2026-11-29: 27.2 ms against 24.5 + 10 %, with o 1.8 ms).
        let extra = o + if m == "fsync" { WRITE_MS + o } else { 0.0 };
        eprintln!("{m}: commit p50 {p50:.2} ms, F + W + 2o = {want:.2} ms");
        // The floor is the device's own times, F + W: o comes from the flushes' mean, which
        // one slow flush of a few dozen pulls up (2026-12-04, in the known-device lane: a
        // 106 ms p99 made o 3.2 ms, F + W + 2o 27.3 ms, against a commit p50 of 23.9 ms and
        // a block-layer flush p50 of 20.2 ms), while the commit's p50 does not move with it.
        // A commit that skipped its flush would still be far below the floor.
        assert!(
            p50 >= (FLUSH_MS + WRITE_MS) * 0.95 && p50 <= (want + extra) * 1.10,
            "{m}: commit p50 {p50:.2} ms, outside F + W = {:.2} ms less 5 % .. F + W + 2o (+ extra) \
             = {:.2} ms plus 10 %\n{e}",
            FLUSH_MS + WRITE_MS,
            want + extra
        );
        assert!(
            e["flush_evidence"]
                .to_string()
                .contains("flush requests completed"),
            "{e}"
        );
        // The block-latency source (root + BTF) times the flushes at the device itself: its
        // median is the set flush time within 15 % (the loop worker's fsync of the backing
        // file is the flush). Measurement against the set truth; skipped without BPF.
        let Some(why) = j["like"]["block_latency_absent"].as_str().map(String::from) else {
            let b = &fl["block_layer"];
            let p50 = f(b, "p50_ms");
            eprintln!(
                "{m}: block-layer flush p50 {p50:.2} ms p99 {:.2} ms over {} flushes, set {FLUSH_MS} ms",
                f(b, "p99_ms"),
                b["flushes"]
            );
            assert!(
                (p50 - FLUSH_MS).abs() <= FLUSH_MS * 0.15,
                "{m}: the block layer timed flushes at {p50} ms p50, truth {FLUSH_MS} ms\n{e}"
            );
            assert!(b["flushes"].as_u64().unwrap() > 0, "{e}");
            assert!(
                e["flush_evidence"]
                    .to_string()
                    .contains("the device's own flushes took"),
                "{e}"
            );
            continue;
        };
        eprintln!("block-layer flush latency not checked: {why}");
        assert!(
            e["flush_evidence"].to_string().contains("source is absent"),
            "{e}"
        );
    }
    assert_eq!(j["device"]["write_cache"], "write back");
    assert_ne!(
        j["device"]["flush_verdict"], "flushes_not_reaching_device",
        "{}",
        j["device"]
    );
}

/// --no-bpf: no block-layer figures, and the result and the evidence say the source was
/// absent and why.
#[test]
fn fsync_like_without_bpf_says_the_block_latency_source_is_absent() {
    let dir = crate::util::tempdir().unwrap();
    let j = like(
        dir.path(),
        "postgres",
        "0.05",
        &["--committers", "none", "--no-bpf"],
    );
    assert_eq!(
        j["like"]["block_latency_absent"], "turned off by --no-bpf",
        "{}",
        j["like"]
    );
    for e in j["like"]["entries"].as_array().unwrap() {
        assert!(e["device_flushes"]["block_layer"].is_null(), "{e}");
        if !e["device_flushes"].is_null() {
            assert!(
                e["flush_evidence"]
                    .to_string()
                    .contains("block-latency source is absent (turned off by --no-bpf)"),
                "{e}"
            );
        }
    }
}

/// A loop device told "write through" (queue/write_cache): the kernel drops every flush before
/// the device, so the counters show none for any setting and the evidence says why.
#[test]
fn on_a_write_through_device_the_verdict_says_flushes_are_no_ops() {
    if !is_root() {
        crate::util::skip("needs root for losetup and mount");
        return;
    }
    let mut lo = LoopDev::try_new(96 << 20, false, None).expect("losetup");
    let node = lo.path.clone();
    let name = lo.name().to_string();
    let wc = format!("/sys/block/{name}/queue/write_cache");
    if std::fs::write(&wc, "write through").is_err() {
        crate::util::skip_lacking(&format!("{wc} is not writable on this kernel"));
        return;
    }
    // The setting outlives the attachment (the next user of this loop device would get a
    // write-through device): put it back before the device is detached, panic or not.
    struct Restore(String, #[allow(dead_code)] crate::support::reap::Held);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = std::fs::write(&self.0, "write back");
        }
    }
    let _restore = {
        let w = wc.clone();
        let reap = crate::support::reap::on_interrupt("a write cache setting", move || {
            let _ = std::fs::write(&w, "write back");
        });
        Restore(wc.clone(), reap)
    };
    let mnt = lo.mount(&node).expect("mkfs.ext4 and mount");
    let j = like(&mnt, "postgres", "0.1", &["--committers", "none"]);
    assert_eq!(
        j["device"]["write_cache"], "write through",
        "{}",
        j["device"]
    );
    for e in j["like"]["entries"].as_array().unwrap() {
        let flushes = e["device_flushes"]["flushes"].as_u64().unwrap();
        assert_eq!(
            flushes, 0,
            "the kernel sent a flush to a write-through device: {e}"
        );
        if e["writes_per_commit"] == 1 {
            let ev = e["flush_evidence"].to_string();
            assert!(ev.contains(&format!("{wc} = write through")), "{ev}");
            assert!(ev.contains("no-op"), "{ev}");
            assert!(ev.contains("0 flush requests completed"), "{ev}");
        }
    }
    let reasons = j["device"]["flush_reasoning"].to_string();
    assert!(reasons.contains("write-through"), "{reasons}");
}

/// pg_test_fsync (the PostgreSQL package's) on the same directory as iosat --like postgres:
/// each synced setting's operations per second agree, as a ratio of the two tools' own
/// figures (generous: 0.6–1.6 in one run of 1 s each; bench/fsync_vs_pg.sh holds them to
/// 15 % with interleaved repeats). On the known device the flush time dominates, so both
/// measure the same 20-odd ms.
#[test]
fn pg_test_fsync_agrees_setting_by_setting() {
    let Some(pg) = glob_pg_test_fsync() else {
        crate::util::skip("pg_test_fsync not installed (scripts/test.sh installs postgresql)");
        return;
    };
    if !knowndev::available() {
        return;
    }
    let ms = Duration::from_millis;
    let mut dev = KnownDev::start(Spec::new(4, ms(1)).flush(ms(20))).unwrap();
    let dir = dev.mount_ext4();
    let out = Command::new(&pg)
        .args(["-s", "1", "-f"])
        .arg(dir.join("pg_test_fsync.out"))
        .output()
        .expect("run pg_test_fsync");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let theirs = parse_pg_test_fsync(&text);
    let j = like_rt(&dir, "postgres", "1", &["--committers", "none"]);
    let mut compared = 0;
    for ((method, wpc), ops) in &theirs {
        if method == "write" {
            continue;
        }
        let e = entry(&j, method, *wpc);
        let ratio = f(e, "commits_per_s") / ops;
        eprintln!(
            "{method} x{wpc}: pg_test_fsync {ops:.1} ops/s, iosat {:.1}: {ratio:.2}",
            f(e, "commits_per_s")
        );
        assert!(
            (0.6..=1.6).contains(&ratio),
            "{method} x{wpc}: ratio {ratio:.2}\n{text}\n{e}"
        );
        compared += 1;
    }
    assert!(compared >= 6, "compared {compared} settings\n{text}");
}

fn glob_pg_test_fsync() -> Option<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|d| Some(d.ok()?.path().join("bin/pg_test_fsync")))
        .filter(|p| p.exists())
        .collect();
    found.sort();
    found.pop()
}

/// ops/s per (wal_sync_method, writes per op) from pg_test_fsync's two method tables and its
/// non-synced line ("n/a" rows left out), as bench/pg_test_fsync_parse.py reads them.
fn parse_pg_test_fsync(text: &str) -> BTreeMap<(String, u64), f64> {
    let mut out = BTreeMap::new();
    let mut wpc = None;
    for line in text.lines() {
        if line.contains("using one 8kB write") || line.starts_with("Non-sync") {
            wpc = Some(1);
        } else if line.contains("using two 8kB writes") {
            wpc = Some(2);
        } else if !line.is_empty() && !line.starts_with([' ', '\t', '(']) {
            wpc = None;
        }
        let w: Vec<&str> = line.split_whitespace().collect();
        if let (Some(n), [m, ops, "ops/sec", ..]) = (wpc, w.as_slice()) {
            if ["open_datasync", "fdatasync", "fsync", "open_sync", "write"].contains(m) {
                out.insert((m.to_string(), n), ops.parse().unwrap());
            }
        }
    }
    out
}

#[test]
fn pg_test_fsync_output_parses() {
    let text = "Compare file sync methods using one 8kB write:\n(in wal_sync_method preference order)\n        open_datasync                      2025.570 ops/sec     494 usecs/op\n        fsync_writethrough                              n/a\n        fdatasync   13351.295 ops/sec      75 usecs/op\n\nCompare file sync methods using two 8kB writes:\n        open_sync                          1918.085 ops/sec     521 usecs/op\n\nCompare open_sync with different write sizes:\n         1 * 16kB open_sync write          6543.405 ops/sec     153 usecs/op\nTest if fsync on non-write file descriptor is honored:\n        write, fsync, close               11226.443 ops/sec      89 usecs/op\n\nNon-sync'ed 8kB writes:\n        write                           1645270.135 ops/sec       1 usecs/op\n";
    let p = parse_pg_test_fsync(text);
    assert_eq!(p.len(), 4, "{p:?}");
    assert_eq!(p[&("open_datasync".to_string(), 1)], 2025.570);
    assert_eq!(p[&("open_sync".to_string(), 2)], 1918.085);
    assert_eq!(p[&("write".to_string(), 1)], 1645270.135);
}

/// For bench/fsync_vs_pg.sh --knowndev: a known device (KNOWNDEV_WRITE_MS per write, 1;
/// KNOWNDEV_FLUSH_MS per flush, 20) with ext4 mounted, its directory printed as "held: DIR",
/// kept until the file KNOWNDEV_STOP_FILE exists (at most KNOWNDEV_HOLD_S seconds, 900), then
/// torn down by the test itself. `cargo test --test it fsync_like::hold -- --ignored
/// --nocapture`.
#[test]
#[ignore]
fn hold() {
    let var = |k: &str, d: f64| std::env::var(k).map_or(d, |v| v.parse().expect(k));
    let us = |ms: f64| Duration::from_micros((ms * 1000.0) as u64);
    let (w, fl) = (
        var("KNOWNDEV_WRITE_MS", 1.0),
        var("KNOWNDEV_FLUSH_MS", 20.0),
    );
    let Some(mut dev) = KnownDev::start(Spec::new(4, us(w)).flush(us(fl))) else {
        return;
    };
    let dir = dev.mount_ext4();
    println!(
        "held: {} ({}: writes {w} ms, flushes {fl} ms)",
        dir.display(),
        dev.path
    );
    let stop = std::env::var("KNOWNDEV_STOP_FILE").expect("KNOWNDEV_STOP_FILE");
    let until = std::time::Instant::now() + Duration::from_secs_f64(var("KNOWNDEV_HOLD_S", 900.0));
    while !Path::new(&stop).exists() && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A block corrupted before the read-back (the test hook) fails the run with exit 3, naming
/// the setting.
#[test]
fn a_corrupted_wal_block_fails_verification() {
    let dir = crate::util::tempdir().unwrap();
    let o = iosat()
        .arg("fsync")
        .arg(dir.path())
        .args([
            "--like",
            "postgres",
            "--duration",
            "0.02",
            "--committers",
            "none",
        ])
        .args(["--test-corrupt-block", "0", "--json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("open_datasync commit x1")
            || stderr(&o).contains("fdatasync commit x1"),
        "{}",
        stderr(&o)
    );
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(j["like"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["verify"] == "failed"));
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "test files removed"
    );
}

/// Issue 38: three runs on the same directory give the same recommendation, or say that the
/// settings they chose between are equivalent within the noise (a repeat may rank those
/// either way).
#[test]
fn three_runs_on_one_directory_agree_or_say_the_settings_are_equivalent() {
    let d = crate::util::tempdir().unwrap();
    let runs: Vec<Value> = (0..3)
        .map(|_| like(d.path(), "postgres", "0.4s", &[]))
        .collect();
    let rec: Vec<(String, Vec<String>)> = runs
        .iter()
        .map(|j| {
            let r = &j["like"]["recommendations"][0];
            let eq = r["equivalent"]
                .as_array()
                .map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
                .unwrap_or_default();
            (r["value"].as_str().unwrap().to_string(), eq)
        })
        .collect();
    // Each run's commit rates, their windows' CV and repeat, and its disturbance, for a failure.
    let figures: Vec<String> = runs
        .iter()
        .map(|j| {
            let e = j["like"]["entries"].as_array().cloned().unwrap_or_default();
            let rates: Vec<String> = e
                .iter()
                .filter(|e| e["writes_per_commit"] == 1)
                .map(|e| {
                    format!(
                        "{} {:.0}/s cv {} repeat {}",
                        e["method"].as_str().unwrap_or("?"),
                        f(e, "commits_per_s"),
                        e["rate_cv"],
                        e["repeat_per_s"]
                    )
                })
                .collect();
            format!(
                "{} | {}",
                rates.join("; "),
                j["like"]["recommendations"][0]["text"]
            )
        })
        .collect();
    for (a, ea) in &rec {
        for (b, eb) in &rec {
            assert!(
                a == b || ea.contains(b) || eb.contains(a),
                "{a} against {b} with neither called equivalent: {rec:?}\n{figures:#?}"
            );
        }
    }
}
