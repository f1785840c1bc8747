//! Loop devices a test makes and removes itself, through /dev/loop-control, so they come and
//! go from /proc/diskstats (the block-latency program's device slots, device churn).
//! Imports only: std, libc, tempfile, support::reap.

/// A loop device made through /dev/loop-control (LOOP_CTL_ADD) over a file of its own, so it
/// leaves /proc/diskstats when dropped (detached, then LOOP_CTL_REMOVE), also on failure.
pub struct OwnLoop {
    nr: i32,
    path: String,
    _backing: tempfile::TempDir,
    /// The same undoing if the run is interrupted (support::reap).
    _reap: super::reap::Held,
}

const LOOP_CTL_ADD: libc::c_ulong = 0x4C80;
const LOOP_CTL_REMOVE: libc::c_ulong = 0x4C81;

impl OwnLoop {
    pub fn new() -> OwnLoop {
        OwnLoop::from(3000)
    }

    /// The first number from `first` that is free: a test that needs devices never seen
    /// before in this boot's diskstats asks for numbers of its own.
    pub fn from(first: i32) -> OwnLoop {
        use std::os::fd::AsRawFd;
        let ctl = std::fs::File::open("/dev/loop-control").unwrap();
        let nr = (first..first + 200)
            // SAFETY: LOOP_CTL_ADD takes the device number as its argument; fd is open.
            .find(|&nr| unsafe { libc::ioctl(ctl.as_raw_fd(), LOOP_CTL_ADD, nr) } >= 0)
            .expect("LOOP_CTL_ADD");
        let backing = crate::util::tempdir().unwrap();
        let img = backing.path().join("backing.img");
        std::fs::File::create(&img)
            .unwrap()
            .set_len(4 << 20)
            .unwrap();
        let dir = backing.path().to_path_buf();
        let l = OwnLoop {
            nr,
            path: format!("/dev/loop{nr}"),
            _backing: backing,
            _reap: super::reap::on_interrupt("a loop device of /dev/loop-control", move || {
                remove(nr);
                super::reap::remove_dir(&dir);
            }),
        };
        for _ in 0..100 {
            if std::path::Path::new(&l.path).exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let st = std::process::Command::new("losetup")
            .arg(&l.path)
            .arg(&img)
            .status()
            .unwrap();
        assert!(st.success(), "losetup {}", l.path);
        l
    }

    /// `/dev/loopN`.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// (major, minor) from sysfs.
    pub fn number(&self) -> (u32, u32) {
        let t = std::fs::read_to_string(format!("/sys/block/loop{}/dev", self.nr)).unwrap();
        let (a, b) = t.trim().split_once(':').unwrap();
        (a.parse().unwrap(), b.parse().unwrap())
    }

    /// `count` direct 4 KiB reads.
    pub fn read(&self, count: u32) {
        let st = std::process::Command::new("dd")
            .arg(format!("if={}", self.path))
            .args(["of=/dev/null", "bs=4k", "iflag=direct"])
            .arg(format!("count={count}"))
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
    }
}

impl Drop for OwnLoop {
    fn drop(&mut self) {
        remove(self.nr);
    }
}

/// Loop device `nr` detached and removed (LOOP_CTL_REMOVE).
fn remove(nr: i32) {
    use std::os::fd::AsRawFd;
    let _ = std::process::Command::new("losetup")
        .args(["-d", &format!("/dev/loop{nr}")])
        .status();
    let Ok(ctl) = std::fs::File::open("/dev/loop-control") else {
        return;
    };
    for _ in 0..100 {
        // SAFETY: LOOP_CTL_REMOVE takes the device number as its argument; fd is open.
        if unsafe { libc::ioctl(ctl.as_raw_fd(), LOOP_CTL_REMOVE, nr) } >= 0 {
            return;
        }
        // EBUSY while the detach settles.
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// (major, minor) of every line of /proc/diskstats.
pub fn diskstats_numbers() -> std::collections::HashSet<(u32, u32)> {
    std::fs::read_to_string("/proc/diskstats")
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<_> = l.split_whitespace().collect();
            Some((f.first()?.parse().ok()?, f.get(1)?.parse().ok()?))
        })
        .collect()
}
