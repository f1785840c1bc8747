//! The AWS EBS / instance-store statistics in `iosat info` (issue 42, docs/caps.md): on this
//! machine's own disks nothing is opened, read or printed about them (traced when strace is
//! installed); on a sysfs fixture that shows an EBS volume, `info` names the volume from its
//! serial and says why its counters were not read.

use crate::util::{fixture, ok_json, ok_stdout, run, stderr};
use std::path::Path;
use std::process::Command;

/// `iosat info` of the machine's own disks (read only): no `aws` entry, no "aws" line, and,
/// traced, no NVMe admin ioctl and no device node opened.
#[test]
fn info_on_this_machine_reads_and_prints_nothing_about_aws() {
    let v = ok_json(&run(&["info", "--json"]));
    let devs = v["devices"].as_array().unwrap();
    assert!(!devs.is_empty(), "{v}");
    for d in devs {
        let model = d["model"].as_str().unwrap_or("");
        if model.starts_with("Amazon") {
            crate::util::skip_lacking("this machine has an Amazon NVMe device");
            return;
        }
        assert!(d.get("aws").is_none(), "{d}");
    }
    let text = ok_stdout(&run(&["info"]));
    assert!(!text.contains("aws"), "{text}");
    if !crate::util::have("strace", "-V") {
        crate::util::skip("info_on_this_machine_reads_and_prints_nothing_about_aws: no strace");
        return;
    }
    let dir = crate::util::tempdir().unwrap();
    let log = dir.path().join("trace");
    let o = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=openat,open,ioctl", "-o"])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_iosat"))
        .args(["info", "--json"])
        .env("IOSAT_STATE_DIR", "")
        .env("IOSAT_PROFILE_DIRS", "")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let trace = std::fs::read_to_string(&log).unwrap();
    assert!(
        trace.contains("openat("),
        "the trace saw the opens: {trace}"
    );
    // The machine's block devices, as their nodes would be opened.
    let nodes: Vec<String> = std::fs::read_dir("/sys/block")
        .unwrap()
        .map(|e| format!("\"/dev/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    assert!(!nodes.is_empty());
    for line in trace.lines() {
        assert!(
            !line.contains("NVME_IOCTL_ADMIN_CMD") && !line.contains("0xc0484e41"),
            "{line}"
        );
        assert!(
            !nodes.iter().any(|n| line.contains(n.as_str())),
            "a device node opened: {line}"
        );
    }
}

/// A copy of the sysfs fixture whose nvme0n1 says it is an EBS volume.
fn ebs_sysroot(dir: &Path) -> (String, String) {
    let src = fixture("sysroot1");
    let ok = Command::new("cp")
        .args(["-a"])
        .arg(&src)
        .arg(dir.join("root"))
        .status()
        .unwrap();
    assert!(ok.success());
    let pci = dir.join("root/sys/devices/pci0000:00/0000:00:1d.0/0000:3d:00.0");
    let ctrl = pci.join("nvme/nvme0");
    std::fs::write(
        ctrl.join("model"),
        "Amazon Elastic Block Store              \n",
    )
    .unwrap();
    std::fs::write(ctrl.join("serial"), "vol0123456789abcdef0\n").unwrap();
    std::os::unix::fs::symlink("../..", ctrl.join("device")).unwrap();
    std::fs::write(pci.join("vendor"), "0x1d0f\n").unwrap();
    let root = dir.join("root");
    (
        root.join("proc").to_str().unwrap().to_string(),
        root.join("sys").to_str().unwrap().to_string(),
    )
}

#[test]
fn info_names_an_ebs_volume_from_its_serial() {
    if Path::new("/dev/nvme0n1").exists() {
        // The fixture's device name is a real device here: info would ask the real
        // controller, which is not the fixture's.
        crate::util::skip_lacking("this machine has its own /dev/nvme0n1");
        return;
    }
    let dir = crate::util::tempdir().unwrap();
    let (proc_root, sys_root) = ebs_sysroot(dir.path());
    let args = [
        "info",
        "nvme0n1",
        "--proc-root",
        &proc_root,
        "--sys-root",
        &sys_root,
    ];
    let mut json = args.to_vec();
    json.push("--json");
    let v = ok_json(&run(&json));
    let aws = &v["devices"][0]["aws"];
    assert_eq!(aws["identity"]["kind"], "ebs_volume", "{v}");
    assert_eq!(aws["identity"]["volume_id"], "vol-0123456789abcdef0");
    // No such node here: the counters were not read, and the entry says why.
    assert!(
        aws["not_read"].as_str().unwrap().contains("/dev/nvme0n1"),
        "{aws}"
    );
    assert!(aws.get("counters").is_none());
    let text = ok_stdout(&run(&args));
    assert!(text.contains("EBS volume vol-0123456789abcdef0"), "{text}");
    assert!(
        text.contains("aws counters") && text.contains("not read"),
        "{text}"
    );
    // The same fixture without Amazon's vendor id is not an EBS volume by sysfs.
    let pci = Path::new(&sys_root).join("devices/pci0000:00/0000:00:1d.0/0000:3d:00.0");
    std::fs::write(pci.join("vendor"), "0x144d\n").unwrap();
    let v = ok_json(&run(&json));
    assert!(v["devices"][0]["aws"].get("identity").is_none(), "{v}");
}

/// Live `stat --wide` and `--json` on this machine's own disks: no `thr%` column, no clause,
/// no `aws` object and, traced, no NVMe admin ioctl and no device node opened (the reader
/// looks only at each device's sysfs model).
#[test]
fn live_stat_on_this_machine_reads_and_prints_nothing_about_aws() {
    let model_is_amazon = std::fs::read_dir("/sys/block").unwrap().any(|e| {
        let p = e.unwrap().path().join("device/model");
        std::fs::read_to_string(p).is_ok_and(|m| m.trim().starts_with("Amazon"))
    });
    if model_is_amazon {
        crate::util::skip_lacking("this machine has an Amazon NVMe device");
        return;
    }
    let args = ["stat", "--no-bpf", "--no-learn", "-i", "0.2", "-c", "2"];
    let wide = ok_stdout(&run(&[&args[..], &["--wide"]].concat()));
    assert!(
        !wide.contains("thr%") && !wide.contains("throttled"),
        "{wide}"
    );
    let json = ok_stdout(&run(&[&args[..], &["--json"]].concat()));
    assert!(!json.contains("\"aws\""), "{json}");
    if !crate::util::have("strace", "-V") {
        crate::util::skip(
            "live_stat_on_this_machine_reads_and_prints_nothing_about_aws: no strace",
        );
        return;
    }
    let dir = crate::util::tempdir().unwrap();
    let log = dir.path().join("trace");
    let o = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=openat,open,ioctl", "-o"])
        .arg(&log)
        .arg(env!("CARGO_BIN_EXE_iosat"))
        .args(args)
        .env("IOSAT_STATE_DIR", "")
        .env("IOSAT_PROFILE_DIRS", "")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let trace = std::fs::read_to_string(&log).unwrap();
    assert!(
        trace.contains("device/model"),
        "the models were looked at: {trace}"
    );
    let nodes: Vec<String> = std::fs::read_dir("/sys/block")
        .unwrap()
        .map(|e| format!("\"/dev/{}", e.unwrap().file_name().to_string_lossy()))
        .collect();
    for line in trace.lines() {
        assert!(
            !line.contains("NVME_IOCTL_ADMIN_CMD") && !line.contains("0xc0484e41"),
            "{line}"
        );
        assert!(
            !nodes.iter().any(|n| line.contains(n.as_str())),
            "a device node opened: {line}"
        );
    }
}

/// `analyze --aws-stats`: two `nvme amzn stats -o json` runs (a fixture built from the
/// documented layout: no EBS device here) set beside a recording of the same 600 s, whose
/// diskstats counted 599,000 requests to the device's 600,000: the share of the period each
/// cap throttled it, and that the two counts agree. Beside a recording of another period (half
/// the requests), it says the counters are not of it.
#[test]
fn analyze_sets_nvme_amzn_stats_beside_a_recording() {
    let dir = crate::util::tempdir().unwrap();
    let rec = |reads: u64, name: &str| {
        let p = dir.path().join(name);
        let t0 = 1_000_000_000_000u64;
        let text = format!(
            "#iosat-record 1\nR 1763000000000000000 1000000000\nD 259:0 nvme1n1 disk nvme1n1\n\
             T {t0} 1763000000000000000\n 259 0 nvme1n1 1000 0 8000 500 1000 0 8000 500 0 900 1000\n\
             T {} 1763000600000000000\n 259 0 nvme1n1 {} 0 8000 500 101000 0 8000 500 0 900 1000\n",
            t0 + 600_000_000_000,
            1000 + reads
        );
        std::fs::write(&p, text).unwrap();
        p
    };
    let stats = fixture("aws/nvme-amzn-stats.json");
    let arg = format!("nvme1n1={}", stats.display());
    let same = rec(499_000, "same.rec");
    let out = crate::util::iosat()
        .arg("analyze")
        .arg(&same)
        .args(["--device", "nvme1n1", "--aws-stats", &arg])
        .output()
        .unwrap();
    let text = ok_stdout(&out).replace('\n', " ").replace("  ", " ");
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        text.contains("throttled by the volume's IOPS cap 63.0 % of the time"),
        "{text}"
    );
    assert!(text.contains("instance's IOPS limit 1.0 %"), "{text}");
    assert!(
        text.contains("the device counted 600000 requests, /proc/diskstats 599000"),
        "{text}"
    );
    assert!(text.contains("the same period"), "{text}");

    let other = rec(199_000, "other.rec");
    let out = crate::util::iosat()
        .arg("analyze")
        .arg(&other)
        .args(["--device", "nvme1n1", "--aws-stats", &arg])
        .output()
        .unwrap();
    let text = ok_stdout(&out)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(text.contains("not of the recording's period"), "{text}");

    // A bad argument is one line naming the flag, exit 2.
    let out = crate::util::iosat()
        .arg("analyze")
        .arg(&same)
        .args(["--aws-stats", "nvme1n1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--aws-stats"), "{}", stderr(&out));
}
