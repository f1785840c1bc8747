//! Per-cgroup attribution's user-space side (issue 40) on this machine's real cgroup
//! hierarchy: a v1 blkio cgroup of the test's own with a read-IOPS throttle on a loop device
//! of its own, a child `dd` in it, and `sys::cgroups` finding the cgroup by its inode id,
//! counting exactly the child's reads, reading the limit and saying the child is held by it.

use crate::ownloop::OwnLoop;
use iosat::sys::cgroup::ThrottleKind;
use iosat::sys::cgroups::{self, Hierarchy};
use iosat::sys::Root;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static SEQ: AtomicUsize = AtomicUsize::new(0);

/// A v1 blkio cgroup made by the test and the child put in it: on drop (failure included) the
/// child is killed and reaped, then the directory removed (a cgroup is removed by rmdir once
/// it has no task).
struct OwnCgroup {
    dir: PathBuf,
    child: Option<Child>,
    _reap: crate::support::reap::Held,
}

impl OwnCgroup {
    fn new(hierarchy: &Path) -> OwnCgroup {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let dir = hierarchy.join(format!("iosat-test-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).unwrap();
        let _reap = crate::support::reap::cgroup(&dir);
        OwnCgroup {
            dir,
            child: None,
            _reap,
        }
    }

    /// A child in the cgroup that reads `count` 4 KiB blocks of `dev` with O_DIRECT once a line
    /// comes on the returned stdin: it waits for it before it starts dd, so every read it
    /// makes is made from inside the cgroup (exec keeps the pid).
    fn dd_inside(&mut self, dev: &str, count: u64) -> std::process::ChildStdin {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "read go && exec dd if={dev} of=/dev/null bs=4k iflag=direct count={count}"
            ))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let go = child.stdin.take().unwrap();
        let pid = child.id();
        self.child = Some(child);
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string()).unwrap();
        go
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

const LIMIT_IOPS: u64 = 100;
const READS: u64 = 300;

#[test]
fn a_v1_cgroup_is_found_by_its_inode_counted_and_held_by_its_throttle() {
    let blkio = Path::new("/sys/fs/cgroup/blkio");
    if !crate::util::is_root() {
        crate::util::skip("needs root");
        return;
    }
    if !blkio.join("blkio.throttle.read_iops_device").exists() {
        crate::util::skip_lacking("no cgroup v1 blkio hierarchy with throttling");
        return;
    }
    // Dropped last: the cgroup (and the child that holds the device open) go first.
    let lo = OwnLoop::from(4100);
    let (major, minor) = lo.number();
    let mut cg = OwnCgroup::new(blkio);
    std::fs::write(
        cg.dir.join("blkio.throttle.read_iops_device"),
        format!("{major}:{minor} {LIMIT_IOPS}\n"),
    )
    .unwrap();
    let mut go = cg.dd_inside(lo.path(), READS);

    let root = Root::default();
    let tree = cgroups::tree(&root, 100_000);
    let id = std::fs::metadata(&cg.dir).unwrap().ino();
    let found = tree
        .by_id(id)
        .unwrap_or_else(|| panic!("no cgroup with id {id} in {:?}", tree.hierarchies))
        .clone();
    let name = cg.dir.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(found.hierarchy, Hierarchy::V1);
    assert_eq!(found.path, format!("/{name}"));
    assert_eq!(found.name, found.path, "no unit or container in the path");
    assert_eq!(found.dir, cg.dir);

    let reads_now = |c: &cgroups::Counters| c.device(major, minor).map_or(0, |d| d.read_ios);
    let before = cgroups::read_counters(&root, &found);
    assert_eq!(before.pressure, None, "v1 has no io.pressure");
    assert_eq!(
        reads_now(&before),
        0,
        "nothing read from inside the cgroup yet"
    );

    writeln!(go, "go").unwrap();
    drop(go);
    // The rate is measured from the first read the cgroup counts to the child's exit, so the
    // shell's and dd's start-up are not in it.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut first: Option<(Instant, u64)> = None;
    let end = loop {
        let exited = cg.child.as_mut().unwrap().try_wait().unwrap();
        let now = Instant::now();
        if let Some(st) = exited {
            assert!(st.success(), "dd failed: {st}");
            break now;
        }
        if first.is_none() {
            let n = reads_now(&cgroups::read_counters(&root, &found));
            if n > 0 {
                first = Some((now, n));
            }
        }
        assert!(now < deadline, "dd did not end within 60 s");
        std::thread::sleep(Duration::from_millis(5));
    };
    let after = cgroups::read_counters(&root, &found);
    let dev = after
        .device(major, minor)
        .expect("the loop device in the counters");
    assert_eq!(dev.read_ios, READS, "{after:?}");
    assert_eq!(dev.read_bytes, READS * 4096);
    assert_eq!(dev.write_ios, 0);

    let own = cgroups::read_settings(&root, &found);
    assert_eq!(own.limits.len(), 1, "{own:?}");
    let l = &own.limits[0];
    assert_eq!(
        (l.major, l.minor, l.kind, l.value),
        (major, minor, ThrottleKind::ReadIops, LIMIT_IOPS)
    );
    assert!(l
        .file
        .ends_with(&format!("{name}/blkio.throttle.read_iops_device")));
    let up = cgroups::read_settings_up(&root, &found);
    assert!(up.limits.contains(l));

    let (t0, n0) = first.expect("the cgroup counted reads while dd ran");
    let rate = (READS - n0) as f64 / (end - t0).as_secs_f64();
    let held = cgroups::throttled(&up, (major, minor), rate, 0.0, rate * 4096.0, 0.0)
        .unwrap_or_else(|| panic!("{rate:.1} reads/s not held by {LIMIT_IOPS}"));
    assert_eq!(held.limit, *l);
    assert!(
        held.text().starts_with(&format!(
            "held by blkio.throttle.read_iops_device {LIMIT_IOPS} in /"
        )),
        "{}",
        held.text()
    );
    eprintln!(
        "cgroup {id} {}: {} reads, {rate:.1}/s against {LIMIT_IOPS}: {}",
        found.path,
        dev.read_ios,
        held.text()
    );
    // The same rates in a cgroup without the limit (the hierarchy's root) are held by nothing.
    let top = &tree.cgroups[0];
    assert_eq!(top.path, "/");
    if cgroups::read_settings(&root, top).limits.is_empty() {
        assert!(cgroups::throttled(
            &cgroups::read_settings_up(&root, top),
            (major, minor),
            rate,
            0.0,
            0.0,
            0.0
        )
        .is_none());
    }
}

/// The kernel side of attribution through cgroup churn (issue 40; containers come and go): a
/// cgroup's reads are counted by the BPF program under its own id, its entry leaves the map
/// when it is forgotten, and the next cgroups, which take the freed counters, start from zero:
/// each counts exactly its own child's reads, nothing of the one before.
#[test]
fn cgroups_that_come_and_go_are_each_counted_from_zero() {
    let blkio = Path::new("/sys/fs/cgroup/blkio");
    if !crate::util::is_root() {
        crate::util::skip("needs root");
        return;
    }
    if !blkio.join("cgroup.procs").exists() {
        crate::util::skip_lacking("no cgroup v1 blkio hierarchy");
        return;
    }
    if !Path::new("/sys/kernel/btf/vmlinux").exists() {
        crate::util::skip_lacking("kernel without BTF");
        return;
    }
    let lo = OwnLoop::from(4200);
    let (major, minor) = lo.number();
    let root = Root::default();
    let Some(mut blk) = iosat::sys::bpf::attach_with(&root, false, true).unwrap() else {
        crate::util::skip_lacking("the block-latency program did not attach");
        return;
    };
    let present = || -> std::collections::HashSet<(u32, u32)> {
        std::fs::read_to_string("/proc/diskstats")
            .unwrap()
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
            })
            .collect()
    };
    let ours = |blk: &iosat::sys::bpf::BlockLatency, id: u64| -> u64 {
        let (rows, _) = blk.read_cgroups().unwrap();
        rows.iter()
            .filter(|r| r.cgroup == id && (r.major, r.minor) == (major, minor) && r.op == 0)
            .map(|r| r.ios)
            .sum()
    };
    // Different counts, so a cgroup that inherited the one before's counters would show.
    for (round, reads) in [(0, 300u64), (1, 120), (2, 200)] {
        let mut cg = OwnCgroup::new(blkio);
        let mut go = cg.dd_inside(lo.path(), reads);
        let id = std::fs::metadata(&cg.dir).unwrap().ino();
        assert_eq!(ours(&blk, id), 0, "round {round}: nothing read yet");
        writeln!(go, "go").unwrap();
        drop(go);
        let st = cg.child.as_mut().unwrap().wait().unwrap();
        assert!(st.success(), "dd failed: {st}");
        cg.child = None;
        // A request whose note was lost (another completion on the CPU between the two
        // hooks) is not attributed: at most a few of them, never one more than dd read.
        let n = ours(&blk, id);
        assert!(
            n <= reads && n + 3 >= reads,
            "round {round}: {n} reads counted for the cgroup, dd read {reads}"
        );
        eprintln!("round {round}: cgroup {id}: {n} of {reads} reads");
        drop(cg);
        // Forgotten (as the live source does when a cgroup leaves the hierarchy), then two
        // ticks: its counters are zeroed and free for the next one.
        blk.forget_cgroups(&[id].into_iter().collect()).unwrap();
        assert_eq!(ours(&blk, id), 0, "round {round}: forgotten");
        for _ in 0..2 {
            let lines = blk.tend(&present(), 0);
            assert!(lines.is_empty(), "{lines:?}");
        }
    }
}
