//! Safety refusals and bad input on devices and filesystems the tests make themselves: loop
//! devices over files in a temporary directory, a zram device, small ext4 filesystems mounted
//! in temporary directories. Everything is torn down on drop, also when an assertion fails.
//!
//! Also the zram device the test sets up: reads, writes and the refusals.

use super::*;

/// Entries a run might leave in a fresh ext4 root (mkfs makes lost+found).
fn left_in(dir: &Path) -> Vec<PathBuf> {
    entries(dir)
        .into_iter()
        .filter(|p| !p.ends_with("lost+found"))
        .collect()
}

fn refused(args: &[&str], code: i32, needles: &[&str]) -> String {
    let out = run(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: {err:?} lacks {n:?}");
    }
    assert!(err.starts_with("iosat: "), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    err
}

#[test]
fn too_little_free_space_on_a_small_filesystem() {
    let Some(mut lo) = LoopDev::try_new(16 << 20, false, None) else {
        crate::util::skip("cannot set up a loop device (needs root)");
        return;
    };
    let dev = lo.path.clone();
    let Some(mnt) = lo.mount(&dev) else {
        crate::util::skip_lacking("mkfs.ext4 or mount failed");
        return;
    };
    let m = mnt.to_str().unwrap();
    // The default size is a tenth of the free space, which is below the 16 MiB minimum.
    refused(&[m, "--levels", "1"], 4, &["too little free space", m]);
    // An explicit size must leave a tenth of the free space and 64 MiB for everyone else.
    refused(
        &[m, "--size", "8m", "--levels", "1"],
        4,
        &["too little free space for a 8.0 MiB test file", m],
    );
    assert!(left_in(&mnt).is_empty(), "{:?}", left_in(&mnt));
}

#[test]
fn a_mounted_device_is_refused_saying_where() {
    let Some(mut lo) = LoopDev::try_new(16 << 20, false, None) else {
        crate::util::skip("cannot set up a loop device (needs root)");
        return;
    };
    let dev = lo.path.clone();
    let Some(mnt) = lo.mount(&dev) else {
        crate::util::skip_lacking("mkfs.ext4 or mount failed");
        return;
    };
    std::fs::write(mnt.join("precious"), b"keep me").unwrap();
    let at = format!("mounted at {}", mnt.display());
    for pattern in ["randwrite", "randread"] {
        refused(
            &[
                &dev,
                "--destructive",
                "--pattern",
                pattern,
                "--engine",
                "sync",
                "--levels",
                "1",
            ],
            4,
            &[&dev, "is in use", &at],
        );
    }
    // Reading a mounted device harms nothing and stays allowed.
    let mut args = vec![dev.as_str(), "--engine", "sync", "--levels", "1", "--json"];
    args.extend(QUICK);
    let j = json_of(&run(&args));
    assert!(j["levels"][0]["ios"].as_u64().unwrap() > 0);
    assert_eq!(std::fs::read(mnt.join("precious")).unwrap(), b"keep me");
}

#[test]
fn a_device_with_a_mounted_partition_is_refused_naming_it() {
    let Some(mut lo) = LoopDev::try_new(32 << 20, true, None) else {
        crate::util::skip_lacking("cannot set up a partitioned loop device");
        return;
    };
    let (dev, part) = (lo.path.clone(), lo.part1());
    let Some(mnt) = lo.mount(&part) else {
        crate::util::skip_lacking("mkfs.ext4 or mount failed");
        return;
    };
    let want = format!(
        "its partition {}p1 is mounted at {}",
        lo.name(),
        mnt.display()
    );
    refused(
        &[
            &dev,
            "--destructive",
            "--pattern",
            "randwrite",
            "--levels",
            "1",
        ],
        4,
        &[&dev, &want],
    );
    // The partition itself, too.
    refused(
        &[
            &part,
            "--destructive",
            "--pattern",
            "randwrite",
            "--levels",
            "1",
        ],
        4,
        &[&format!("mounted at {}", mnt.display())],
    );
}

#[test]
fn a_device_held_by_device_mapper_is_refused_naming_the_holder() {
    let Some(mut lo) = LoopDev::try_new(16 << 20, false, None) else {
        crate::util::skip("cannot set up a loop device (needs root)");
        return;
    };
    let name = format!("iosat-it-{}", std::process::id());
    let table = format!("0 {} linear {} 0", 16 << 11, lo.path);
    let ok = Command::new("dmsetup")
        .args(["create", &name, "--table", &table])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        crate::util::skip_lacking("dmsetup create failed (no device mapper?)");
        return;
    }
    lo.dm.push(name.clone());
    let dev = lo.path.clone();
    let err = refused(
        &[
            &dev,
            "--destructive",
            "--pattern",
            "randwrite",
            "--levels",
            "1",
        ],
        4,
        &[&dev, "is in use", "held by dm-", &format!("({name})")],
    );
    assert!(!err.contains("mounted"), "{err}");
}

/// swapoff on drop; declared after the device so it is dropped (swapped off) first.
struct SwapOn(String, #[allow(dead_code)] crate::support::reap::Held);

impl Drop for SwapOn {
    fn drop(&mut self) {
        let _ = Command::new("swapoff").arg(&self.0).status();
    }
}

#[test]
fn a_device_in_use_as_swap_is_refused_saying_so() {
    let Some(z) = Zram::new("16M") else {
        crate::util::skip_lacking("no zram-control (needs root and the zram module)");
        return;
    };
    let dev = z.dev();
    let ok = Command::new("mkswap")
        .arg(&dev)
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        crate::util::skip("mkswap failed");
        return;
    }
    if !Command::new("swapon")
        .arg(&dev)
        .status()
        .is_ok_and(|s| s.success())
    {
        crate::util::skip("swapon failed");
        return;
    }
    let _swap = {
        let d = dev.clone();
        SwapOn(
            dev.clone(),
            crate::support::reap::on_interrupt("a swap device", move || {
                let _ = Command::new("swapoff").arg(&d).output();
            }),
        )
    };
    let err = refused(
        &[
            &dev,
            "--destructive",
            "--pattern",
            "randwrite",
            "--levels",
            "1",
        ],
        4,
        &[&dev, "is in use: used as swap"],
    );
    assert!(!err.contains("mounted"), "{err}");
}

#[test]
fn a_block_size_below_the_logical_block_size_is_refused_before_layout() {
    // zram's logical block size is 4096, and ext4 on it does direct I/O in 4096-byte units.
    let Some(mut z) = Zram::new("256M") else {
        crate::util::skip_lacking("no zram-control (needs root and the zram module)");
        return;
    };
    let Some(mnt) = z.mount(true) else {
        crate::util::skip_lacking("mkfs.ext4 or mount failed");
        return;
    };
    let m = mnt.to_str().unwrap();
    refused(
        &[m, "--bs", "512", "--size", "16m", "--levels", "1"],
        2,
        &[
            "'--bs' must be a multiple of the logical block size of",
            m,
            "(4096 bytes) (got '512')",
        ],
    );
    assert!(left_in(&mnt).is_empty(), "{:?}", left_in(&mnt));
    // 4 KiB is accepted there.
    let mut args = vec![m, "--engine", "sync", "--bs", "4k", "--size", "16m"];
    args.extend(["--levels", "1", "--json"]);
    args.extend(QUICK);
    let j = json_of(&run(&args));
    assert_eq!(j["target"]["logical_block_size"], 4096);
    assert!(left_in(&mnt).is_empty(), "{:?}", left_in(&mnt));
}

/// Write `bytes` at `off` on a device of our own (as a filesystem tool would).
fn poke(dev: &str, off: u64, bytes: &[u8]) {
    use std::os::unix::fs::FileExt;
    let f = std::fs::OpenOptions::new().write(true).open(dev).unwrap();
    f.write_all_at(bytes, off).unwrap();
    f.sync_all().unwrap();
}

fn head_of(dev: &str) -> Vec<u8> {
    let mut v = std::fs::read(dev).unwrap();
    v.truncate(1 << 20);
    v
}

fn destroy(dev: &str, extra: &[&str]) -> Output {
    let mut args = vec![dev, "--destructive", "--pattern", "randwrite"];
    args.extend(["--engine", "sync", "--levels", "1", "--json"]);
    args.extend(QUICK);
    args.extend(extra);
    run(&args)
}

/// Issue 12 case 1: signatures the old 12-entry table missed (exFAT, squashfs, ISO9660, md
/// superblocks at the end of the device, ZFS) and any data where signatures live are
/// refused, unless --overwrite-found names what was found; a blank device is written.
#[test]
fn a_device_that_is_not_blank_is_refused_unless_confirmed_by_name() {
    let size = 80u64 << 20;
    let cases: [(&str, u64, &[u8], &str); 6] = [
        ("exfat", 3, b"EXFAT   ", "exfat"),
        ("squashfs", 0, b"hsqs", "squashfs"),
        ("iso", 32769, b"CD001", "iso9660"),
        (
            "md 0.90",
            (size & !0xffff) - 0x10000,
            &[0xfc, 0x4e, 0x2b, 0xa9],
            "linux_raid_member",
        ),
        (
            "md 1.0",
            (size - 8192) & !4095,
            &[0xfc, 0x4e, 0x2b, 0xa9],
            "linux_raid_member",
        ),
        ("data at the end", size - 100, b"precious", "data"),
    ];
    for (label, off, magic, key) in cases {
        let Some(lo) = LoopDev::try_new(size, false, None) else {
            crate::util::skip("cannot set up a loop device (needs root)");
            return;
        };
        let dev = lo.path.clone();
        poke(&dev, off, magic);
        let before = std::fs::read(&dev).unwrap();
        let err = refused(
            &[
                &dev,
                "--destructive",
                "--pattern",
                "randwrite",
                "--levels",
                "1",
            ],
            4,
            &[&dev, "is not blank", "--overwrite-found"],
        );
        assert!(err.contains(key), "{label}: {err}");
        // A confirmation naming something else is no confirmation.
        refused(
            &[
                &dev,
                "--destructive",
                "--pattern",
                "randwrite",
                "--levels",
                "1",
                "--overwrite-found",
                "ext4",
            ],
            4,
            &["is not blank"],
        );
        assert!(
            std::fs::read(&dev).unwrap() == before,
            "{label}: the device changed"
        );
        if key == "data" || key == "exfat" {
            // Named: written.
            let j = json_of(&destroy(&dev, &["--overwrite-found", key]));
            assert!(j["levels"][0]["ios"].as_u64().unwrap() > 0, "{label}");
        }
    }
    // A blank device is written without asking; afterwards it holds iosat's random data,
    // which a second destructive run must be told about.
    let lo = LoopDev::new(size);
    let j = json_of(&destroy(&lo.path, &[]));
    assert!(j["levels"][0]["ios"].as_u64().unwrap() > 0);
    if head_of(&lo.path).iter().any(|&b| b != 0) {
        refused(
            &[
                &lo.path,
                "--destructive",
                "--pattern",
                "randwrite",
                "--levels",
                "1",
            ],
            4,
            &["--overwrite-found data"],
        );
    }
}

/// Detaches a loop device stacked on another one (dropped before the one below).
struct Stacked(String, #[allow(dead_code)] crate::support::reap::Held);

impl Drop for Stacked {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
    }
}

fn stack_loop_on(node: &str) -> Option<Stacked> {
    let out = Command::new("losetup")
        .args(["--find", "--show", node])
        .output()
        .ok()?;
    out.status.success().then(|| {
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let reap = crate::support::reap::loop_device(&dev);
        Stacked(dev, reap)
    })
}

/// Issue 12 case 2: a loop device stacked on the target (or on one of its partitions) does
/// not show in holders/; it is found through the loop devices' backing files.
#[test]
fn a_device_under_a_loop_device_is_refused_naming_it() {
    let Some(lo) = LoopDev::try_new(32 << 20, true, None) else {
        crate::util::skip_lacking("cannot set up a partitioned loop device (needs root)");
        return;
    };
    let (dev, part) = (lo.path.clone(), lo.part1());
    let Some(upper) = stack_loop_on(&part) else {
        crate::util::skip("losetup on a partition failed");
        return;
    };
    let upper_name = upper.0.trim_start_matches("/dev/").to_string();
    let confirm = ["--overwrite-found", "dos,data"];
    let args = |d: &str| {
        let mut a = vec![d.to_string(), "--destructive".into(), "--pattern".into()];
        a.extend(["randwrite", "--levels", "1"].map(String::from));
        a.extend(confirm.map(String::from));
        a
    };
    let a = args(&part);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    refused(
        &a,
        4,
        &[
            &part,
            "is in use",
            &format!("held by loop device {upper_name}"),
        ],
    );
    let a = args(&dev);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    refused(
        &a,
        4,
        &[&format!("loop device {upper_name} on {}p1", lo.name())],
    );
    drop(upper);
    // A whole loop device stacked on a whole loop device, too.
    let lo2 = LoopDev::new(16 << 20);
    let Some(upper) = stack_loop_on(&lo2.path) else {
        return;
    };
    let a = args(&lo2.path);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    refused(
        &a,
        4,
        &[&format!("held by {}", upper.0.trim_start_matches("/dev/"))],
    );
}

/// Issue 12 case 15: an I/O error while other io_uring requests are in flight ends the run
/// with one clear error (the worker cancels and reaps them before freeing their buffers).
#[test]
fn an_io_error_with_requests_in_flight_ends_the_uring_run_cleanly() {
    let Some(mut lo) = LoopDev::try_new(16 << 20, false, None) else {
        crate::util::skip("cannot set up a loop device (needs root)");
        return;
    };
    let name = format!("iosat-err-{}", std::process::id());
    // The first half reads the loop device, the second half fails every I/O.
    let table = format!("0 16384 linear {} 0\n16384 16384 error", lo.path);
    let ok = Command::new("dmsetup")
        .args(["create", &name, "--table", &table])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        crate::util::skip_lacking("dmsetup create failed (no device mapper?)");
        return;
    }
    lo.dm.push(name.clone());
    let dev = format!("/dev/mapper/{name}");
    let mut args = vec![dev.as_str(), "--engine", "uring", "--levels", "16"];
    args.extend(QUICK);
    let out = run(&args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Input/output error"), "{err}");
}

#[test]
fn zram_device_reads_writes_and_refusals() {
    let Some(mut z) = Zram::new("64M") else {
        crate::util::skip_lacking("no zram-control (needs root and the zram module)");
        return;
    };
    let dev = z.dev();
    // zram's logical block size is 4096: 512-byte direct I/O must be refused up front.
    let out = run(&[&dev, "--engine", "sync", "--bs", "512", "--levels", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("logical block size"),
        "{}",
        stderr(&out)
    );

    // Reads are always allowed; zram pushes io_uring onto workers, so use sync.
    let args = vec![
        dev.as_str(),
        "--engine",
        "sync",
        "--levels",
        "1,2",
        "--json",
        // Long enough that a late wake-up of the sampling thread on a busy CI machine (tens of
        // ms) stays well inside the 10 % the kernel cross-check below allows.
        "--duration",
        "1",
        "--ramp",
        "0.1",
    ];
    let j = json_of(&run(&args));
    assert_eq!(j["target"]["kind"], "block-device");
    assert_eq!(j["target"]["size_bytes"], 64 << 20);
    assert_eq!(j["target"]["disk_device"], format!("zram{}", z.id));
    for l in j["levels"].as_array().unwrap() {
        check_level(l, 4096.0);
        // The device is ours alone: the kernel's view over the measured interval must show
        // our reads and nothing else (sampling edges of a few ms against 1 s: within 10 %).
        let k = &l["kernel"];
        let iops = l["iops"].as_f64().unwrap();
        let r_s = k["r/s"]
            .as_f64()
            .unwrap_or_else(|| panic!("kernel view in {l}"));
        assert!(
            (r_s / iops - 1.0).abs() < 0.10,
            "kernel r/s {r_s} vs iosat {iops}"
        );
        assert_eq!(k["w/s"].as_f64().unwrap(), 0.0, "{k}");
        // The kernel's mean size of a read: 4 KiB to within a hundredth. Not exactly: two
        // random reads that happen to be adjacent may be merged into one of 8 KiB when
        // submitted together, and another program may probe the device. A suite's run read
        // 4.0000015 kB (4 KiB x N / (N - 1): one merge in ~2.7 million reads) and passed
        // when run again. A wrong block size (2 or 8 KiB) is far outside.
        let rareq = k["rareq-sz"].as_f64().unwrap();
        assert!(
            (rareq - 4.0).abs() < 0.04,
            "4 KiB reads, kernel says {rareq} kB (merged {} a second)",
            k["rrqm/s"]
        );
    }

    // One level of sync random writes on our device, plus `extra`.
    let write_one_level = |extra: &[&str]| {
        let mut args = vec![
            dev.as_str(),
            "--engine",
            "sync",
            "--pattern",
            "randwrite",
            "--levels",
            "1",
        ];
        args.extend(extra);
        run(&args)
    };

    // Writes need --destructive.
    let out = write_one_level(&[]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("--destructive"), "{}", stderr(&out));

    // A blank device of our own may be written with --destructive.
    let mut extra = vec!["--destructive", "--json"];
    extra.extend(QUICK);
    let j = json_of(&write_one_level(&extra));
    assert!(j["levels"][0]["ios"].as_u64().unwrap() > 0);

    // With a filesystem on it: refused.
    let mkfs = Command::new("mkfs.ext4").args(["-q", "-F", &dev]).status();
    if !mkfs.is_ok_and(|s| s.success()) {
        eprintln!("skipped the signature/mount part: no mkfs.ext4");
        return;
    }
    let out = write_one_level(&["--destructive"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("ext2/3/4"), "{}", stderr(&out));

    // Mounted: refused, even for a read pattern with --destructive.
    if z.mount(false).is_none() {
        eprintln!("skipped the mount part: mount failed");
        return;
    }
    let out = run(&[&dev, "--engine", "sync", "--destructive", "--levels", "1"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("mounted") || err.contains("in use"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}
