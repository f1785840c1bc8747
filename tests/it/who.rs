//! Who loads a disk (issue 40) on the known device: two cgroups of the test's own, a victim
//! reading at one in flight and an aggressor at 16, then the aggressor held by a read-IOPS
//! throttle. `stat --cgroups --json --record` watches all three phases; the test checks the
//! requests each cgroup is charged with against fio's own counts, the aggressor's share of the
//! device's time against its share of the requests, the victim's latency ratio against the
//! ratio fio measured, the verdict naming both (as correlation, with the setting that would
//! protect the victim), the throttled aggressor named as such with the victim back at its
//! baseline, and a replay of the recording saying the same.

use crate::knowndev::{KnownDev, Spec};
use crate::util::*;
use serde_json::Value;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The read IOPS phase 3 holds the aggressor to.
const LIMIT: u64 = 100;

/// A cgroup made by the test in the hierarchy that holds the io controller here (v2 where the
/// io controller is enabled, else v1 blkio); removed on drop, failure included.
struct TestCgroup {
    dir: PathBuf,
    v1: bool,
    _reap: crate::support::reap::Held,
}

impl TestCgroup {
    fn new(tag: &str) -> Option<TestCgroup> {
        let v2 = Path::new("/sys/fs/cgroup");
        let v2_io = std::fs::read_to_string(v2.join("cgroup.subtree_control"))
            .is_ok_and(|c| c.split_whitespace().any(|x| x == "io"));
        let (base, v1) = if v2_io {
            (v2.to_path_buf(), false)
        } else if Path::new("/sys/fs/cgroup/blkio/blkio.throttle.read_iops_device").exists() {
            (PathBuf::from("/sys/fs/cgroup/blkio"), true)
        } else {
            return None;
        };
        let dir = base.join(format!("iosat-who-{}-{tag}", std::process::id()));
        std::fs::create_dir(&dir).ok()?;
        let _reap = crate::support::reap::cgroup(&dir);
        Some(TestCgroup { dir, v1, _reap })
    }

    /// Hold its reads on `major:minor` at `iops`.
    fn throttle_reads(&self, major: u32, minor: u32, iops: u64) {
        let (file, text) = if self.v1 {
            (
                "blkio.throttle.read_iops_device",
                format!("{major}:{minor} {iops}\n"),
            )
        } else {
            ("io.max", format!("{major}:{minor} riops={iops}\n"))
        };
        std::fs::write(self.dir.join(file), text).unwrap();
    }

    /// fio random 4 KiB direct reads at `depth` for `secs`, run inside the cgroup.
    fn fio(&self, dev: &str, name: &str, depth: u32, secs: u32) -> Child {
        let procs = self.dir.join("cgroup.procs");
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "echo $$ > {} && exec fio --thread --name={name} --filename={dev} --direct=1 \
                 --rw=randread --bs=4k --norandommap \
                 --ioengine=io_uring --iodepth={depth} --runtime={secs} --time_based \
                 --output-format=json",
                procs.display()
            ))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        // A test that failed midway leaves its fio running in the cgroup: ended first, so the
        // directory can go.
        if let Ok(pids) = std::fs::read_to_string(self.dir.join("cgroup.procs")) {
            for pid in pids.split_whitespace() {
                let _ = Command::new("kill").args(["-KILL", pid]).status();
            }
        }
        for _ in 0..100 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// fio's read ios and mean completion latency (ms) of a finished run.
fn fio_result(c: Child) -> (u64, f64) {
    let o = c.wait_with_output().unwrap();
    assert!(o.status.success(), "fio failed");
    let v: Value = serde_json::from_slice(&o.stdout).expect("fio's JSON");
    let r = &v["jobs"][0]["read"];
    (
        r["total_ios"].as_u64().unwrap(),
        r["lat_ns"]["mean"].as_f64().unwrap() / 1e6,
    )
}

/// The rows of cgroup `name` on the device over the intervals, with the device's verdict.
fn rows<'a>(lines: &'a [Value], name: &str) -> Vec<(&'a Value, &'a Value)> {
    lines
        .iter()
        .filter_map(|l| {
            let c = &l["devices"][0]["cgroups"];
            let row = c["cgroups"]
                .as_array()?
                .iter()
                .find(|r| r["path"].as_str().is_some_and(|p| p.ends_with(name)))?;
            Some((row, &c["verdict"]))
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    assert!(!v.is_empty());
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn the_victim_and_the_aggressor_on_the_known_device_then_the_aggressor_throttled() {
    if !is_root() {
        skip("needs root");
        return;
    }
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        skip_lacking("kernel without BTF");
        return;
    }
    if !have("fio", "--version") {
        skip("needs fio");
        return;
    }
    let Some(dev) = KnownDev::start(Spec::new(4, Duration::from_millis(2))) else {
        return;
    };
    let (Some(victim), Some(aggressor)) = (TestCgroup::new("victim"), TestCgroup::new("batch"))
    else {
        skip_lacking("no cgroup hierarchy with the io controller");
        return;
    };
    let (major, minor) = {
        let t = std::fs::read_to_string(format!("/sys/block/{}/dev", dev.name())).unwrap();
        let (a, b) = t.trim().split_once(':').unwrap();
        (a.parse::<u32>().unwrap(), b.parse::<u32>().unwrap())
    };
    let profiles = crate::exporter::profile_dir_for(
        dev.name(),
        r#"{"baseline_latency_ns":2300000.0,"baseline_p95_ns":2500000.0,
            "knee_concurrency":4,"max_useful_iops":1700.0}"#,
    );
    let tmp = crate::util::tempdir().unwrap();
    let rec = tmp.path().join("rec");
    let mut stat = iosat()
        .args([
            "stat",
            "--json",
            "--no-learn",
            "--all",
            "--cgroups",
            "-i",
            "1",
        ])
        .arg("--profile-dir")
        .arg(profiles.path())
        .arg("--record")
        .arg(&rec)
        .arg(dev.name())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(stat.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(!first.is_empty(), "stat printed nothing");
    // Drained as it comes: a full pipe would stall stat.
    let reader = std::thread::spawn(move || {
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
        rest
    });
    // 1: the victim alone; 2: with the aggressor at 16 in flight; 3: the aggressor throttled.
    let (v1_ios, v1_ms) = fio_result(victim.fio(&dev.path, "victim", 1, 6));
    let a2 = aggressor.fio(&dev.path, "batch", 16, 8);
    let (v2_ios, v2_ms) = fio_result(victim.fio(&dev.path, "victim", 1, 8));
    let (a2_ios, _) = fio_result(a2);
    aggressor.throttle_reads(major, minor, LIMIT);
    let a3 = aggressor.fio(&dev.path, "batch", 16, 6);
    let (v3_ios, v3_ms) = fio_result(victim.fio(&dev.path, "victim", 1, 6));
    let (a3_ios, _) = fio_result(a3);
    std::thread::sleep(Duration::from_millis(1500));
    let _ = Command::new("kill")
        .args(["-INT", &stat.id().to_string()])
        .status();
    let text = first + &reader.join().unwrap();
    let o = stat.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    let lines = json_lines(&text);
    for l in &lines {
        crate::schema::assert_valid("stat", l, "stat --cgroups");
    }
    eprintln!(
        "fio: victim alone {v1_ios} reads {v1_ms:.2} ms; with the aggressor {v2_ios} reads \
         {v2_ms:.2} ms (aggressor {a2_ios}); aggressor throttled {a3_ios} reads, victim \
         {v3_ios} reads {v3_ms:.2} ms"
    );

    // Every request is charged to the cgroup that sent it: iosat's counts against fio's.
    let count = |name: &str| -> u64 {
        rows(&lines, name)
            .iter()
            .map(|(r, _)| r["read"]["requests"].as_u64().unwrap())
            .sum()
    };
    let (v_all, a_all) = (count("victim"), count("batch"));
    let (fv, fa) = (v1_ios + v2_ios + v3_ios, a2_ios + a3_ios);
    eprintln!("charged: victim {v_all} (fio {fv}), aggressor {a_all} (fio {fa})");
    assert!(
        (v_all as f64 - fv as f64).abs() <= 0.02 * fv as f64,
        "victim {v_all} vs fio {fv}\n{err}"
    );
    assert!(
        (a_all as f64 - fa as f64).abs() <= 0.02 * fa as f64,
        "aggressor {a_all} vs fio {fa}"
    );

    // Phase 2: the intervals where both ran and the aggressor was not held (the first and the
    // last left out: the load ramps).
    let both: Vec<&Value> = lines
        .iter()
        .filter(|l| {
            let c = &l["devices"][0]["cgroups"]["cgroups"];
            // The victim reading, the batch far above the limit phase 3 holds it to.
            let has = |n: &str, more_than: u64| {
                c.as_array().is_some_and(|a| {
                    a.iter().any(|r| {
                        r["path"].as_str().is_some_and(|p| p.ends_with(n))
                            && r["read"]["requests"].as_u64().unwrap_or(0) > more_than
                            && r.get("held_by").is_none()
                    })
                })
            };
            has("victim", 20) && has("batch", 3 * LIMIT)
        })
        .collect();
    assert!(
        both.len() >= 5,
        "{} intervals with both\n{text}",
        both.len()
    );
    let steady = &both[1..both.len() - 1];
    let mut shares = Vec::new();
    let mut ratios = Vec::new();
    let mut means = Vec::new();
    let mut bases = Vec::new();
    for l in steady {
        let c = &l["devices"][0]["cgroups"];
        let find = |n: &str| {
            c["cgroups"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["path"].as_str().unwrap().ends_with(n))
                .unwrap()
        };
        let (a, v) = (find("batch"), find("victim"));
        assert_eq!(a["share_of"], "device_time", "{c}");
        let (ar, vr) = (
            a["read"]["requests"].as_f64().unwrap(),
            v["read"]["requests"].as_f64().unwrap(),
        );
        shares.push((a["share"].as_f64().unwrap(), ar / (ar + vr)));
        ratios.push(v["ratio"].as_f64().unwrap());
        means.push(v["read"]["mean_ms"].as_f64().unwrap());
        bases.push(v["baseline_ms"].as_f64().unwrap());
        // The verdict: the victim, the aggressor ranked first, as correlation, and the
        // setting that would protect the victim.
        let verdict = &c["verdict"];
        assert!(verdict.is_object(), "no verdict while saturated: {c}");
        let vname = verdict["victims"][0]["name"].as_str().unwrap_or("");
        let aname = verdict["aggressors"][0]["name"].as_str().unwrap_or("");
        assert!(vname.ends_with("victim"), "{c}");
        assert!(aname.ends_with("batch"), "{verdict}");
        assert_eq!(v["role"], "victim");
        assert_eq!(a["role"], "aggressor");
        let sentence = verdict["sentence"].as_str().unwrap();
        assert!(sentence.contains("not proof") || sentence.contains("not measurable"));
        let protect = verdict["protect"].as_str().unwrap();
        let want = if victim.v1 {
            "blkio.throttle.read_iops_device"
        } else {
            "io.latency target="
        };
        assert!(protect.contains(want), "{protect}");
    }
    // The aggressor's share of the device's time is its share of the requests (every request
    // holds a unit for the same 2 ms), within 10 %.
    for (share, req) in &shares {
        assert!(
            (share - req).abs() <= 0.10 * req,
            "share {share} vs requests {req}"
        );
    }
    // The victim's latency is the device's truth: 17 requests in flight on 4 units of 2 ms
    // wait 17 / 4 x 2 ms each (Little's law on a closed loop), and its ratio is that over its
    // own baseline, itself the device's 2 ms (plus the FUSE round trip). fio's own ratio is
    // printed beside: it adds fio's user-space time, which a busy CPU inflates.
    let truth_ms = 17.0 / 4.0 * 2.0;
    let got = median(ratios.clone());
    let mean = median(means);
    let base = median(bases);
    eprintln!(
        "aggressor share {:.3} (requests {:.3}); victim {mean:.2} ms (truth {truth_ms:.2}), \
         baseline {base:.2} ms, ratio {got:.2} (fio {:.2})",
        shares[0].0,
        shares[0].1,
        v2_ms / v1_ms
    );
    assert!(
        (mean - truth_ms).abs() <= 0.15 * truth_ms,
        "victim's mean {mean} ms vs the truth {truth_ms}"
    );
    assert!(
        (2.0..=2.0 * 1.35).contains(&base),
        "victim's baseline {base} ms"
    );
    assert!(
        (got - truth_ms / base).abs() <= 0.15 * truth_ms / base,
        "victim ratio {got} vs {}",
        truth_ms / base
    );
    // The last intervals of phase 2 have enough history for a stated correlation.
    let last = &steady.last().unwrap()["devices"][0]["cgroups"]["verdict"]["aggressors"][0];
    assert_eq!(last["strength"], "strong", "{last}");

    // Phase 3: the aggressor held at its limit is named throttled; the victim is back near
    // its baseline.
    let held: Vec<(&Value, &Value)> = rows(&lines, "batch")
        .into_iter()
        .filter(|(r, _)| r.get("held_by").is_some())
        .collect();
    assert!(held.len() >= 3, "{} held intervals\n{text}", held.len());
    for (r, _) in &held {
        assert_eq!(r["role"], "throttled", "{r}");
        assert_eq!(r["held_by"]["value"], LIMIT);
        assert_eq!(r["held_by"]["kind"], "riops");
    }
    let after: Vec<f64> = lines
        .iter()
        .filter(|l| {
            let c = &l["devices"][0]["cgroups"]["cgroups"];
            c.as_array()
                .is_some_and(|a| a.iter().any(|r| r.get("held_by").is_some()))
        })
        .filter_map(|l| {
            let c = &l["devices"][0]["cgroups"];
            // The throttle releases the held reads in bunches, so the device can still be
            // judged saturated for moments: then the verdict names no victim and the held
            // cgroup as throttled, never as an aggressor.
            if let Some(v) = c.get("verdict") {
                assert_eq!(v["victims"], serde_json::json!([]), "{c}");
                assert_eq!(v["aggressors"], serde_json::json!([]), "{c}");
                assert!(
                    v["sentence"].as_str().unwrap().contains("is throttled by"),
                    "{c}"
                );
            }
            c["cgroups"]
                .as_array()?
                .iter()
                .find(|r| r["path"].as_str().unwrap().ends_with("victim"))?["ratio"]
                .as_f64()
        })
        .collect();
    let back = median(after);
    eprintln!("victim ratio while the aggressor is throttled: {back:.2} (fio {v3_ms:.2} ms vs {v1_ms:.2} ms alone)");
    assert!(back < 1.3, "the victim is not back at its baseline: {back}");

    // A replay of the recording says the same: the verdict lines in text.
    let r = iosat()
        .args(["stat", "--no-learn", "--all", "--replay"])
        .arg(&rec)
        .arg(dev.name())
        .arg("--profile-dir")
        .arg(profiles.path())
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let replay = String::from_utf8_lossy(&r.stdout);
    // Whenever a victim is named it is the victim, with the batch as the aggressor; the held
    // batch is named throttled; a saturated moment with no one standing out says so.
    let who: Vec<&str> = replay.lines().filter(|l| l.contains(": who: ")).collect();
    let named: Vec<&&str> = who.iter().filter(|l| l.contains(" waits ")).collect();
    assert!(named.len() >= steady.len(), "{who:#?}");
    for l in &named {
        assert!(
            l.contains("-victim waits") && l.contains("-batch takes"),
            "{who:#?}"
        );
    }
    assert!(
        who.iter().any(|l| l.contains("-batch is throttled by")),
        "{who:#?}"
    );

    // `analyze` of the recording names who took the device's time, the batch first.
    let a = iosat()
        .args(["analyze", "--json", "--device", dev.name()])
        .arg(&rec)
        .output()
        .unwrap();
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let a: Value = serde_json::from_slice(&a.stdout).unwrap();
    let line = a["source"]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .find(|l| l.starts_with(&format!("{}: cgroups: the device's time over", dev.name())))
        .unwrap_or_else(|| panic!("{a}"));
    eprintln!("analyze: {line}");
    let (b, v) = (
        line.find("-batch ").unwrap(),
        line.find("-victim ").unwrap(),
    );
    assert!(b < v, "{line}");
}
