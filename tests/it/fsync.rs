//! `iosat fsync` end to end: every method on real files, verification catching a corrupted
//! block, bad inputs and their exit codes, Ctrl-C, and the flush counters cross-checked
//! against the kernel's on a loop device with ext4 that the test sets up and tears down.

use crate::util::{assert_refusals, entries as leftovers, iosat, is_root, stderr, LoopDev, Tmpfs};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

fn run(dir: &Path, args: &[&str]) -> Output {
    iosat().arg("fsync").arg(dir).args(args).output().unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): stdout={} stderr={}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("{k} missing or not an integer in {v}"))
}

#[test]
fn help_is_what_users_see() {
    let out = iosat().args(["fsync", "--help"]).output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    assert!(
        !help.contains("test-corrupt-block"),
        "the test hook is hidden"
    );
    // The snapshot of this help is cli.rs's (every subcommand's help, one place).
}

#[test]
fn every_method_and_mode_runs_and_verifies() {
    let dir = crate::util::tempdir().unwrap();
    let out = run(
        dir.path(),
        &[
            "--duration",
            "0.1",
            "--sizes",
            "512,4096",
            "--committers",
            "1,3",
            "--target-tps",
            "200",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = json(&out);
    assert_eq!(r["schema_version"], 2);
    let cases = r["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 8 * 2 * 2, "{r:#}");
    let methods = [
        "fsync",
        "fdatasync",
        "odsync",
        "osync",
        "rwf_dsync",
        "odirect",
        "odirect_fsync",
        "odirect_fdatasync",
    ];
    for m in methods {
        for mode in ["overwrite", "append"] {
            for size in [512, 4096] {
                let c = cases
                    .iter()
                    .find(|c| c["method"] == m && c["mode"] == mode && c["size"] == size)
                    .unwrap_or_else(|| panic!("no case {m} {mode} {size}"));
                let commits = u(c, "commits");
                assert!(commits > 0, "{c}");
                assert_eq!(c["verify"], "ok", "{c}");
                assert_eq!(c["durable"], m != "odirect");
                let l = &c["latency_ns"];
                let (min, mean, max) = (u(l, "min"), u(l, "mean"), u(l, "max"));
                let ps = [u(l, "p50"), u(l, "p95"), u(l, "p99"), u(l, "p999")];
                assert!(min > 0 && min <= ps[0] && ps.windows(2).all(|w| w[0] <= w[1]));
                assert!(ps[3] <= max && min <= mean && mean <= max, "{l}");
                // commits/s is commits over the measured time.
                let cps = c["commits_per_s"].as_f64().unwrap();
                let expect = commits as f64 * 1e9 / u(c, "elapsed_ns") as f64;
                assert!((cps - expect).abs() <= expect * 1e-6, "{cps} vs {expect}");
                // Capacity: ceil(200 × mean latency).
                let need = (200.0 * mean as f64 / 1e9 - 1e-9).ceil().max(1.0) as u64;
                assert_eq!(u(c, "connections_for_target_tps"), need);
                // Each commit is at least its own latency: commits × min ≤ elapsed.
                assert!(commits * min <= u(c, "elapsed_ns"));
            }
        }
    }
    let g = &r["group_commit"];
    let levels = g["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 4);
    for l in levels {
        assert!(u(l, "commits") > 0, "{l}");
        assert_eq!(l["verify"], "ok");
        let syncs = u(l, "syncs");
        assert!(syncs > 0 && syncs <= u(l, "commits"), "{l}");
        if l["layout"] == "separate_files" {
            assert_eq!(syncs, u(l, "commits"), "one fsync per commit: {l}");
        }
    }
    let dev = &r["device"];
    for k in [
        "write_cache",
        "fua",
        "rotational",
        "flush_verdict",
        "flush_reasoning",
    ] {
        assert!(dev.get(k).is_some(), "device section lacks {k}: {dev}");
    }
    assert!([
        "plausible",
        "too_fast_for_physics",
        "flushes_not_reaching_device",
        "unknown"
    ]
    .contains(&dev["flush_verdict"].as_str().unwrap()));
    assert!(leftovers(dir.path()).is_empty(), "test files left behind");
}

#[test]
fn text_csv_and_markdown_carry_the_cases() {
    let dir = crate::util::tempdir().unwrap();
    let base = [
        "--duration",
        "0.05",
        "--methods",
        "fdatasync,odirect",
        "--sizes",
        "4k",
        "--mode",
        "overwrite",
        "--committers",
        "none",
    ];
    // --wide: every column (the default keeps those that fit 80 columns).
    let text = run(dir.path(), &[&base[..], &["--wide"]].concat());
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    let t = String::from_utf8(text.stdout).unwrap();
    assert!(t.contains("commits/s") && t.contains("p99.9"), "{t}");
    assert!(t
        .lines()
        .any(|l| l.starts_with("fdatasync") && l.contains("overwrite")));
    assert!(t.contains("Flush honesty: "), "{t}");

    let csv = run(dir.path(), &[&base[..], &["--csv"]].concat());
    let c = String::from_utf8(csv.stdout).unwrap();
    let lines: Vec<&str> = c.lines().collect();
    assert_eq!(lines.len(), 3, "{c}");
    assert!(lines[0].starts_with("kind,method,mode,size"));
    assert!(lines[1].starts_with("case,fdatasync,overwrite,4096,1,"));

    let md = run(dir.path(), &[&base[..], &["--markdown"]].concat());
    let m = String::from_utf8(md.stdout).unwrap();
    assert!(
        m.contains("| fdatasync") && m.contains("### Flush honesty"),
        "{m}"
    );
    assert!(leftovers(dir.path()).is_empty());
}

#[test]
fn verification_catches_a_corrupted_block() {
    let dir = crate::util::tempdir().unwrap();
    for mode in ["overwrite", "append"] {
        let out = run(
            dir.path(),
            &[
                "--duration",
                "0.05",
                "--methods",
                "fdatasync",
                "--sizes",
                "4096",
                "--mode",
                mode,
                "--committers",
                "none",
                "--test-corrupt-block",
                "3",
                "--json",
            ],
        );
        assert_eq!(out.status.code(), Some(3), "{mode}: {}", stderr(&out));
        let e = stderr(&out);
        assert!(
            e.contains("verification failed") && e.contains("checksum mismatch"),
            "{e}"
        );
        let r = json(&out);
        assert_eq!(r["cases"][0]["verify"], "failed");
        assert!(leftovers(dir.path()).is_empty());
    }
    // The same run without the hook verifies; with --no-verify nothing is checked.
    let ok = run(
        dir.path(),
        &[
            "--duration",
            "0.05",
            "--methods",
            "fdatasync",
            "--sizes",
            "4096",
            "--committers",
            "none",
            "--json",
        ],
    );
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    let skip = run(
        dir.path(),
        &[
            "--duration",
            "0.05",
            "--methods",
            "fdatasync",
            "--sizes",
            "4096",
            "--committers",
            "none",
            "--no-verify",
            "--test-corrupt-block",
            "3",
            "--json",
        ],
    );
    assert_eq!(skip.status.code(), Some(0));
    assert_eq!(json(&skip)["cases"][0]["verify"], "skipped");
}

#[test]
fn group_commit_verification_catches_corruption() {
    let dir = crate::util::tempdir().unwrap();
    let out = run(
        dir.path(),
        &[
            "--duration",
            "0.05",
            "--methods",
            "fsync",
            "--sizes",
            "512",
            "--mode",
            "overwrite",
            "--committers",
            "2",
            "--no-verify",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let bad = run(
        dir.path(),
        &[
            "--duration",
            "0.05",
            "--methods",
            "fsync",
            "--sizes",
            "512",
            "--mode",
            "overwrite",
            "--committers",
            "2",
            "--test-corrupt-block",
            "5",
            "--json",
        ],
    );
    assert_eq!(bad.status.code(), Some(3));
    let r = json(&bad);
    for l in r["group_commit"]["levels"].as_array().unwrap() {
        assert_eq!(l["verify"], "failed", "{l}");
    }
}

#[test]
fn bad_inputs_name_the_flag_and_exit_2() {
    let dir = crate::util::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let out = iosat().arg("fsync").arg(&missing).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = stderr(&out);
    assert!(
        e.contains("the directory '") && e.contains("nope' does not exist"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 1, "one line: {e}");

    let file = dir.path().join("f");
    std::fs::write(&file, b"x").unwrap();
    let out = iosat().arg("fsync").arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("is not a directory"));
    assert_eq!(
        std::fs::read(&file).unwrap(),
        b"x",
        "a file argument is never written"
    );

    let d = dir.path().to_str().unwrap();
    assert_refusals(&[
        (
            &["fsync", d, "--sizes", "1000"],
            2,
            "'--sizes' must be a multiple of 512",
        ),
        (
            &["fsync", d, "--methods", "fsync,fsnyc"],
            2,
            "'--methods' is not a method",
        ),
        (
            &["fsync", d, "--duration", "0"],
            2,
            "'--duration' must be more than 0",
        ),
        (
            &["fsync", d, "--mode", "sideways"],
            2,
            "'--mode' must be overwrite, append or both",
        ),
        (
            &["fsync", d, "--committers", "1,x"],
            2,
            "'--committers' must be a list of whole numbers",
        ),
        (
            &["fsync", d, "--target-tps", "0"],
            2,
            "'--target-tps' must be more than 0",
        ),
    ]);
    assert_eq!(leftovers(dir.path()), vec![file]);
}

#[test]
fn ramfs_refuses_o_direct_and_tmpfs_too_little_space() {
    if !is_root() {
        crate::util::skip("needs root to mount ramfs/tmpfs");
        return;
    }
    // ramfs has no direct-I/O support: open(O_DIRECT) fails with EINVAL. (tmpfs accepts
    // O_DIRECT since Linux 6.6.)
    let fs = Tmpfs::mount("ramfs");
    // Named explicitly: a usage error naming the methods.
    let out = run(
        fs.path(),
        &["--methods", "fsync,odirect", "--duration", "0.05"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(
        e.contains("'--methods'") && e.contains("O_DIRECT") && e.contains("(got 'odirect')"),
        "{e}"
    );
    // By default: the O_DIRECT methods are skipped with a warning, the rest runs.
    let out = run(
        fs.path(),
        &[
            "--duration",
            "0.03",
            "--sizes",
            "512",
            "--mode",
            "overwrite",
            "--committers",
            "none",
            "--json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = json(&out);
    assert_eq!(r["cases"].as_array().unwrap().len(), 5);
    assert_eq!(r["skipped"].as_array().unwrap().len(), 3);
    assert_eq!(r["device"]["flush_verdict"], "unknown");
    assert!(r["warnings"].to_string().contains("ramfs"));
    assert!(leftovers(fs.path()).is_empty());

    let tiny = Tmpfs::mount("256k");
    let out = run(tiny.path(), &["--duration", "0.05"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(e.contains("free") && e.contains("KiB"), "{e}");
    assert!(leftovers(tiny.path()).is_empty());
}

#[test]
fn ctrl_c_removes_the_file_and_prints_results_so_far() {
    let dir = crate::util::tempdir().unwrap();
    let child = iosat()
        .arg("fsync")
        .arg(dir.path())
        .args([
            "--methods",
            "fdatasync",
            "--sizes",
            "4096",
            "--duration",
            "30",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the measured case is running (its test file exists), then press Ctrl-C.
    let t0 = Instant::now();
    while leftovers(dir.path()).is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "no test file appeared"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    // SAFETY: sending SIGINT to our own child process.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let r = json(&out);
    assert_eq!(r["interrupted"], true);
    let cases = r["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 1, "{r:#}");
    assert_eq!(cases[0]["interrupted"], true);
    assert!(u(&cases[0], "commits") > 0);
    assert!(u(&cases[0], "elapsed_ns") < 30_000_000_000);
    assert!(
        leftovers(dir.path()).is_empty(),
        "test file left after Ctrl-C"
    );
}

#[test]
fn an_fsync_error_is_fatal_and_reported_with_errno() {
    if !is_root() {
        crate::util::skip("needs root for losetup and mount");
        return;
    }
    // ext4 on a loop device whose backing file lives on a 24 MiB tmpfs while ext4 believes it
    // has 96 MiB: appending fills the tmpfs, the loop device fails the writes, and the
    // fdatasync that should make them durable returns the error.
    let small = Tmpfs::mount("24m");
    let mut lo = LoopDev::try_new(96 << 20, false, Some(small.path())).expect("losetup");
    assert!(lo.name().starts_with("loop"));
    let dev = lo.path.clone();
    let mnt = lo.mount(&dev).expect("mkfs.ext4 and mount");
    let out = run(
        &mnt,
        &[
            "--methods",
            "fdatasync",
            "--mode",
            "append",
            "--sizes",
            "16k",
            "--duration",
            "20",
            "--committers",
            "none",
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let e = stderr(&out);
    assert!(e.contains("fdatasync failed (fatal, not retried)"), "{e}");
    assert!(e.contains("(os error "), "errno missing: {e}");
    assert!(
        out.stdout.is_empty(),
        "no results printed as if it had succeeded"
    );
    let left: Vec<PathBuf> = leftovers(&mnt)
        .into_iter()
        .filter(|p| !p.ends_with("lost+found"))
        .collect();
    assert!(left.is_empty(), "test file left: {left:?}");
}
/// The kernel's flush counter (diskstats field 16 after the name, token 18, kernel >= 5.5), read by the
/// test itself.
fn kernel_flushes(name: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/diskstats").unwrap();
    let line = text
        .lines()
        .find(|l| l.split_whitespace().nth(2) == Some(name))
        .unwrap_or_else(|| panic!("{name} not in /proc/diskstats"));
    let f: Vec<&str> = line.split_whitespace().collect();
    assert!(f.len() >= 20, "kernel without flush counters: {line}");
    f[18].parse().unwrap()
}

#[test]
fn flush_counts_match_the_kernel_on_a_loop_device() {
    if !is_root() {
        crate::util::skip("needs root for losetup and mount");
        return;
    }
    let mut lo = LoopDev::try_new(96 << 20, false, None).expect("losetup");
    let dev = lo.path.clone();
    let mnt = lo.mount(&dev).expect("mkfs.ext4 and mount");
    let name = lo.name().to_string();
    let before = kernel_flushes(&name);
    let out = run(
        &mnt,
        &[
            "--methods",
            "fsync,fdatasync,rwf_dsync,odirect,odirect_fdatasync",
            "--sizes",
            "4096",
            "--duration",
            "0.2",
            "--committers",
            "2",
            "--json",
        ],
    );
    let after = kernel_flushes(&name);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let r = json(&out);
    let dev = &r["device"];
    assert_eq!(dev["name"], name.as_str(), "{dev}");
    // A loop device says "write back" and passes flushes to its backing file.
    assert_eq!(dev["write_cache"], "write back", "{dev}");
    assert_ne!(dev["flush_verdict"], "flushes_not_reaching_device", "{dev}");

    let mut iosat_total = 0;
    let mut windows = 0;
    for c in r["cases"].as_array().unwrap() {
        assert_eq!(c["verify"], "ok");
        let f = u(&c["device_flushes"], "flushes");
        iosat_total += f;
        windows += 1;
        let commits = u(c, "commits");
        if c["method"] != "odirect" {
            // Every fsync/fdatasync/RWF_DSYNC on ext4 over a write-back device sends at least
            // one flush, and one committer never has two in flight to merge.
            assert!(
                f >= commits,
                "{}: {f} flushes < {commits} commits",
                c["method"]
            );
        }
    }
    for l in r["group_commit"]["levels"].as_array().unwrap() {
        assert_eq!(l["verify"], "ok");
        iosat_total += u(&l["device_flushes"], "flushes");
        windows += 1;
    }
    let kernel_delta = after - before;
    eprintln!("{name}: iosat counted {iosat_total} flushes in {windows} windows, the kernel {kernel_delta} over the whole process");
    // iosat's windows are inside the process's lifetime: never more than the kernel saw...
    assert!(
        iosat_total <= kernel_delta,
        "iosat {iosat_total} > kernel {kernel_delta}"
    );
    // ...and they miss only the flushes of setup and read-back between the windows.
    assert!(
        kernel_delta - iosat_total <= 10 * windows,
        "iosat {iosat_total} vs kernel {kernel_delta}: too many flushes outside the windows"
    );
}

/// One renderer for the live command and `iosat report` (issue 9): for one real run, what
/// `iosat fsync --markdown` (and `--csv`) prints is byte for byte what `iosat report` prints
/// from that run's `--json`. The run is made in-process through the same config, engine and
/// renderer calls cmd/fsync.rs makes (one run can print only one format); the report side is
/// the real binary reading the saved file.
#[test]
fn live_markdown_and_csv_are_what_report_prints_of_the_json() {
    use clap::Parser;
    use iosat::cli::{Cli, Command as Sub};
    let work = crate::util::tempdir().unwrap();
    let saved = crate::util::tempdir().unwrap();
    let build = |flag: &str| {
        let cli = Cli::try_parse_from([
            "iosat",
            "fsync",
            work.path().to_str().unwrap(),
            "--methods",
            "fsync,odirect",
            "--sizes",
            "4k",
            "--mode",
            "overwrite",
            "--duration",
            "0.2",
            "--committers",
            "1,2",
            flag,
        ])
        .unwrap();
        let Sub::Fsync(args) = &cli.command else {
            unreachable!("parsed an fsync command line")
        };
        iosat::config::fsync::build(args).unwrap()
    };
    let (md_run, csv_run, json_run) = (build("--markdown"), build("--csv"), build("--json"));
    let report = iosat::fsync::run(&md_run.spec, &mut |_| {}).unwrap();
    assert!(leftovers(work.path()).is_empty(), "test files left");
    assert_eq!(report.cases.len(), 2, "{report:?}");
    assert_eq!(report.group_commit.as_ref().unwrap().levels.len(), 4);
    let json = iosat::report::fsync::render(&report, json_run.format);
    let file = saved.path().join("fsync.json");
    std::fs::write(&file, &json).unwrap();
    for (run, name) in [(&md_run, "markdown"), (&csv_run, "csv")] {
        let live = iosat::report::fsync::render(&report, run.format);
        let out = iosat()
            .arg("report")
            .arg(&file)
            .args(["--format", name])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert_eq!(
            String::from_utf8(out.stdout).unwrap(),
            live,
            "{name} differs"
        );
    }
}

/// `fsync /proc`: a filesystem that holds no regular files is said in one line that names the
/// directory and the filesystem, exit 1, and nothing is left there.
#[test]
fn a_directory_where_no_test_file_can_be_made_is_one_line_naming_it() {
    let o = iosat()
        .args(["fsync", "/proc", "--duration", "1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    let line = err
        .lines()
        .find(|l| l.starts_with("iosat: /proc:"))
        .unwrap_or_else(|| panic!("one line naming /proc: {err}"));
    assert!(
        line.contains("cannot create a test file here on proc"),
        "{line}"
    );
    assert!(!line.contains(".iosat-fsync."), "no generated name: {line}");
    // sysfs refuses with EACCES rather than ENOENT: the same one line.
    let o = iosat()
        .args(["fsync", "/sys", "--duration", "1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("iosat: /sys: cannot create a test file here on sysfs"),
        "{}",
        stderr(&o)
    );
}

/// On a terminal, each measurement's progress line is numbered N/M with the time left: the plan
/// counts every case and group-commit level (and every --like entry) the run then measures, so
/// the numbers run 1..M without a gap and end at M/M. Run under `script`, a real pseudo-terminal.
#[test]
fn progress_on_a_terminal_counts_every_measurement_and_says_the_time_left() {
    if !crate::util::have("script", "--version") {
        crate::util::skip("script (util-linux) is not installed");
        return;
    }
    let dir = crate::util::tempdir().unwrap();
    for extra in [
        "--methods fsync,fdatasync --sizes 4k,8k --committers 1,2",
        "--like postgres --committers 1,2",
    ] {
        let cmd = format!(
            "{} fsync '{}' {extra} --duration 0.05 --no-bpf --no-verify",
            env!("CARGO_BIN_EXE_iosat"),
            dir.path().display()
        );
        let o = std::process::Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout).replace('\r', "");
        assert!(o.status.success(), "{extra}: {out}");
        let steps: Vec<(usize, usize, &str)> = out
            .lines()
            .filter_map(|l| {
                let rest = l.strip_prefix("iosat fsync: ")?;
                let (nm, tail) = rest.split_once([',', ':'])?;
                let (n, m) = nm.split_once('/')?;
                Some((n.parse().ok()?, m.parse().ok()?, tail))
            })
            .collect();
        assert!(steps.len() >= 4, "{extra}: {out}");
        let m = steps[0].1;
        for (i, (n, total, tail)) in steps.iter().enumerate() {
            assert_eq!((*n, *total), (i + 1, m), "{extra}: {out}");
            if *n < m {
                assert!(
                    tail.starts_with(" about ") && tail.contains(" left:"),
                    "{tail}"
                );
            }
        }
        assert_eq!(steps.last().unwrap().0, m, "ends at M/M: {out}");
    }
    assert!(leftovers(dir.path()).is_empty());
}
