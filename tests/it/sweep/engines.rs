//! Real sweeps on small files in a temporary directory, with both engines: every level's
//! invariants, the uring loop's knobs, patterns, formats, a user's file only read, and `auto`
//! levels.

use super::*;

fn small_file_run(engine: &str) {
    let dir = crate::util::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let mut args = vec![
        d, "--engine", engine, "--size", "8m", "--levels", "1,4", "--json",
    ];
    args.extend(QUICK);
    let out = run(&args);
    let j = json_of(&out);
    assert_eq!(j["schema_version"], 1);
    assert_eq!(j["complete"], true);
    assert_eq!(j["workload"]["engine"], engine);
    assert_eq!(j["target"]["kind"], "temp-file");
    assert_eq!(j["target"]["size_bytes"], 8 << 20);
    let levels = j["levels"].as_array().unwrap();
    let conc: Vec<u64> = levels
        .iter()
        .map(|l| l["concurrency"].as_u64().unwrap())
        .collect();
    assert_eq!(conc, [1, 4]);
    for l in levels {
        check_level(l, 4096.0);
        assert!(l.get("read").is_none(), "no split for a pure read pattern");
    }
    if engine == "uring" {
        assert_eq!(levels[1]["threads"], 1);
        assert_eq!(levels[1]["iodepth"], 4);
    } else {
        assert_eq!(levels[1]["threads"], 4);
        assert_eq!(levels[1]["iodepth"], 1);
    }
    let v = &j["verdict"];
    assert!(v["baseline_latency_ns"].as_f64().unwrap() > 0.0);
    assert!([1, 4].contains(&v["knee_concurrency"].as_u64().unwrap()));
    assert!(entries(dir.path()).is_empty(), "test file left behind");
}

#[test]
fn uring_on_a_small_file() {
    small_file_run("uring");
}

/// The uring loop's experiment knobs ($IOSAT_URING_TUNING, for bench/uring_tuning.sh): a
/// tuned run still measures every level right and says it was tuned; a bad value is one line
/// naming the variable, exit 2.
#[test]
fn uring_tuning_from_the_environment() {
    let dir = crate::util::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let mut args = vec![
        d, "--engine", "uring", "--size", "8m", "--levels", "1,8", "--json",
    ];
    args.extend(QUICK);
    for tuning in [
        "submit_batch=1",
        "submit_batch=3,wait=4,mode=defer",
        "mode=coop",
        // Neither registered buffers nor the registered file: plain READ/WRITE on the fd.
        "fixed_bufs=0,fixed_file=0",
    ] {
        let out = iosat()
            .arg("sweep")
            .args(&args)
            .env("IOSAT_URING_TUNING", tuning)
            .output()
            .unwrap();
        let j = json_of(&out);
        let levels = j["levels"].as_array().unwrap();
        assert_eq!(levels[1]["iodepth"], 8, "{tuning}");
        for l in levels {
            check_level(l, 4096.0);
        }
        assert!(
            stderr(&out).contains("uring engine tuned by $IOSAT_URING_TUNING"),
            "{tuning}: {}",
            stderr(&out)
        );
    }
    // Buffered reads of a file in the page cache complete inline: the loop then submits each
    // round in one enter, probing now and then; every level still counts right.
    let mut buffered = args.clone();
    buffered.extend(["--direct", "false"]);
    let j = json_of(&iosat().arg("sweep").args(&buffered).output().unwrap());
    assert_eq!(j["levels"][1]["iodepth"], 8);
    for l in j["levels"].as_array().unwrap() {
        check_level(l, 4096.0);
    }
    let out = iosat()
        .arg("sweep")
        .args(&args)
        .env("IOSAT_URING_TUNING", "wait=0")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("$IOSAT_URING_TUNING") && err.contains("wait=0"),
        "{err}"
    );
    assert!(entries(dir.path()).is_empty(), "test file left behind");
}

#[test]
fn sync_on_a_small_file() {
    small_file_run("sync");
}

#[test]
fn mixed_pattern_keeps_reads_and_writes_apart() {
    let dir = crate::util::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let mut args = vec![
        d,
        "--engine",
        "sync",
        "--size",
        "8m",
        "--levels",
        "2",
        "--pattern",
        "randrw",
        "--read-pct",
        "50",
        "--bs",
        "8k",
        "--json",
    ];
    args.extend(QUICK);
    let j = json_of(&run(&args));
    let l = &j["levels"][0];
    check_level(l, 8192.0);
    let (r, w) = (&l["read"], &l["write"]);
    let ios = l["ios"].as_u64().unwrap();
    assert_eq!(r["ios"].as_u64().unwrap() + w["ios"].as_u64().unwrap(), ios);
    assert!(r["ios"].as_u64().unwrap() > 0 && w["ios"].as_u64().unwrap() > 0);
    let sum = r["iops"].as_f64().unwrap() + w["iops"].as_f64().unwrap();
    assert!((sum - l["iops"].as_f64().unwrap()).abs() < 1e-6 * sum);
    assert_eq!(j["workload"]["read_pct"], 50);
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn csv_and_markdown_carry_one_row_per_level() {
    let dir = crate::util::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let mut args = vec![
        "--csv", d, "--engine", "sync", "--size", "4m", "--levels", "1,2",
    ];
    args.extend(QUICK);
    let out = run(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("concurrency,threads,iodepth,"));
    assert!(lines[0].ends_with(",measured"), "{text}");
    // One row per level measured first; a level measured again (the baseline re-measured at
    // the end, a deciding level) is a row of its own, labelled in `measured` (issue 38.4).
    let first: Vec<&str> = lines[1..]
        .iter()
        .copied()
        .filter(|l| l.ends_with(",first"))
        .collect();
    assert!(
        first.len() == 2 && first[0].starts_with("1,1,1,") && first[1].starts_with("2,2,1,"),
        "{text}"
    );
    assert!(
        lines[1..]
            .iter()
            .all(|l| l.ends_with(",first") || l.ends_with(",end") || l.contains(",again ")),
        "{text}"
    );

    args[0] = "--markdown";
    let out = run(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(md.contains("| conc |") || md.contains("| conc  |"), "{md}");
    assert!(md.contains("### Verdict"), "{md}");
}

#[test]
fn an_existing_file_is_only_read() {
    let dir = crate::util::tempdir().unwrap();
    let f = dir.path().join("data");
    let content: Vec<u8> = (0..(4u32 << 20))
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(&f, &content).unwrap();
    // An old access time, which any read would move under relatime: iosat's reads must not
    // (O_NOATIME).
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(946_684_800);
    std::fs::File::options()
        .write(true)
        .open(&f)
        .unwrap()
        .set_times(std::fs::FileTimes::new().set_accessed(old))
        .unwrap();
    let p = f.to_str().unwrap();
    for direct in ["true", "false"] {
        let mut args = vec![p, "--engine", "uring", "--levels", "2", "--json"];
        args.extend(["--direct", direct]);
        args.extend(QUICK);
        let j = json_of(&run(&args));
        assert_eq!(j["target"]["kind"], "file");
        check_level(&j["levels"][0], 4096.0);
    }
    assert_eq!(
        std::fs::metadata(&f).unwrap().accessed().unwrap(),
        old,
        "the user's file keeps its access time"
    );

    let out = run(&[p, "--pattern", "randwrite", "--levels", "1"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("did not create"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read(&f).unwrap(),
        content,
        "the user's file must be untouched"
    );
    assert!(f.exists());
}

#[test]
fn write_and_sequential_patterns_run_on_a_laid_out_file() {
    let dir = crate::util::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    for (engine, pattern) in [("uring", "randwrite"), ("uring", "read"), ("sync", "write")] {
        let mut args = vec![d, "--engine", engine, "--pattern", pattern, "--size", "4m"];
        args.extend(["--levels", "1,8", "--json"]);
        args.extend(QUICK);
        let j = json_of(&run(&args));
        assert_eq!(j["workload"]["pattern"], pattern);
        for l in j["levels"].as_array().unwrap() {
            check_level(l, 4096.0);
        }
        assert!(
            entries(dir.path()).is_empty(),
            "{engine} {pattern} left a file"
        );
    }
}

#[test]
fn auto_levels_double_from_one_and_stop() {
    let dir = crate::util::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let args = [
        d,
        "--size",
        "8m",
        "--levels",
        "auto",
        "--duration",
        "0.1",
        "--ramp",
        "0",
        "--budget",
        "0",
        "--json",
    ];
    let j = json_of(&run(&args));
    assert_eq!(j["workload"]["levels"], "auto");
    let conc: Vec<u64> = j["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["concurrency"].as_u64().unwrap())
        .collect();
    assert!(conc.len() >= 3, "{conc:?}");
    for (i, c) in conc.iter().enumerate() {
        assert_eq!(*c, 1u64 << i, "{conc:?}");
    }
    assert!(*conc.last().unwrap() <= 4096);
    assert_eq!(j["complete"], true);
}
