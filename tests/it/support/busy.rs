//! A busy host reproduced on purpose, for the tests that must show what iosat says when the
//! machine, not the device, is the bottleneck (issue 38: "a busy host is reproduced in the
//! suite"). Two guards, each undone on drop, also when an assertion fails:
//!
//! - [`CpuHog`]: spinning threads on every core of the machine, each busy a chosen share of
//!   every 10 ms, so other processes (iosat) wait for a CPU;
//! - [`CpuQuota`]: a cgroup the test creates with a CPU quota (cgroup v2 `cpu.max`, else v1
//!   `cpu.cfs_quota_us`), into which a child (iosat) is placed: the child is stopped for the
//!   rest of every period once it used its quota, as a container with a CPU limit is.
//!
//! Both are real: the hog's time shows in /proc/stat, the quota's throttling in the cgroup's
//! `cpu.stat`; the tests below check each.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Spinning threads, `per_core` on each online CPU, each busy `share` of every 10 ms slice
/// (1.0: always). Stopped and joined on drop.
pub struct CpuHog {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl CpuHog {
    /// One thread per CPU, busy `share` (0 < share ≤ 1) of the time.
    pub fn start(share: f64) -> CpuHog {
        CpuHog::with_threads(cpus(), share)
    }

    /// `n` threads, each busy `share` of the time (more threads than CPUs oversubscribes).
    pub fn with_threads(n: usize, share: f64) -> CpuHog {
        assert!(share > 0.0 && share <= 1.0, "share {share} not in (0, 1]");
        let stop = Arc::new(AtomicBool::new(false));
        let slice = Duration::from_millis(10);
        let busy = slice.mul_f64(share);
        let threads = (0..n)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let t0 = Instant::now();
                        while t0.elapsed() < busy {
                            std::hint::spin_loop();
                        }
                        if let Some(rest) = slice.checked_sub(t0.elapsed()) {
                            if !rest.is_zero() {
                                std::thread::sleep(rest);
                            }
                        }
                    }
                })
            })
            .collect();
        CpuHog { stop, threads }
    }
}

impl Drop for CpuHog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Online CPUs of this machine.
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A cgroup created for the test with a CPU quota; children started through
/// [`CpuQuota::command`] run inside it. On drop, any process still inside is moved back to the
/// root cgroup and the cgroup is removed.
pub struct CpuQuota {
    dir: PathBuf,
    /// The hierarchy's root, where leftover processes go on drop.
    root: PathBuf,
    /// The `cpu.stat` file (throttling counters).
    stat: PathBuf,
    /// The same undoing if the run is interrupted (support::reap).
    _reap: super::reap::Held,
}

impl CpuQuota {
    /// The cgroup's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A cgroup whose processes together may use `cpus` CPUs' worth of time (0.2: a fifth of
    /// one CPU) per `period`. None without root or without a cpu controller to use.
    pub fn new(cpus: f64, period: Duration) -> Option<CpuQuota> {
        if !crate::util::is_root() {
            return None;
        }
        let period_us = period.as_micros().max(1000) as u64;
        let quota_us = ((period_us as f64 * cpus) as u64).max(1000);
        let name = format!("iosat-busy-{}-{}", std::process::id(), unique());
        for base in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
            let base = Path::new(base);
            let ctrls =
                std::fs::read_to_string(base.join("cgroup.controllers")).unwrap_or_default();
            if !ctrls.split_whitespace().any(|c| c == "cpu") {
                continue;
            }
            // Children get the cpu controller only when the parent hands it down. Left enabled
            // on drop: other cgroups may rely on it by then.
            let sub =
                std::fs::read_to_string(base.join("cgroup.subtree_control")).unwrap_or_default();
            if !sub.split_whitespace().any(|c| c == "cpu")
                && std::fs::write(base.join("cgroup.subtree_control"), "+cpu").is_err()
            {
                continue;
            }
            let dir = base.join(&name);
            std::fs::create_dir(&dir).ok()?;
            let cg = CpuQuota {
                stat: dir.join("cpu.stat"),
                _reap: super::reap::cgroup(&dir),
                dir,
                root: base.to_path_buf(),
            };
            std::fs::write(cg.dir.join("cpu.max"), format!("{quota_us} {period_us}")).ok()?;
            return Some(cg);
        }
        let v1 = Path::new("/sys/fs/cgroup/cpu");
        if v1.join("cpu.cfs_quota_us").exists() {
            let dir = v1.join(&name);
            std::fs::create_dir(&dir).ok()?;
            let cg = CpuQuota {
                stat: dir.join("cpu.stat"),
                _reap: super::reap::cgroup(&dir),
                dir,
                root: v1.to_path_buf(),
            };
            // The period first: a quota is checked against the period in force.
            std::fs::write(cg.dir.join("cpu.cfs_period_us"), period_us.to_string()).ok()?;
            std::fs::write(cg.dir.join("cpu.cfs_quota_us"), quota_us.to_string()).ok()?;
            return Some(cg);
        }
        None
    }

    /// `program`, to be given its arguments by the caller, started inside the cgroup (a shell
    /// moves itself in, then execs the program, so nothing runs outside the quota).
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg(format!(
                "echo $$ > '{}' && exec \"$0\" \"$@\"",
                self.dir.join("cgroup.procs").display()
            ))
            .arg(program);
        c
    }

    /// The iosat binary under test inside the cgroup, with the environment of
    /// [`crate::util::iosat`] (learned state in memory, no shared profiles).
    pub fn iosat(&self) -> Command {
        let mut c = self.command(env!("CARGO_BIN_EXE_iosat"));
        c.env("IOSAT_STATE_DIR", "").env("IOSAT_PROFILE_DIRS", "");
        c
    }

    /// How many periods the cgroup was throttled in so far (`nr_throttled` of `cpu.stat`).
    pub fn throttled_periods(&self) -> u64 {
        let text = std::fs::read_to_string(&self.stat).unwrap_or_default();
        text.lines()
            .find_map(|l| l.strip_prefix("nr_throttled "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for CpuQuota {
    fn drop(&mut self) {
        // A child still running (a failed test) is moved out, so the cgroup can be removed.
        for _ in 0..50 {
            let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
            for pid in procs.split_whitespace() {
                let _ = std::fs::write(self.root.join("cgroup.procs"), pid);
            }
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A number unique within this test process (tests run in parallel threads).
fn unique() -> u64 {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// Busy and total jiffies of all CPUs, from /proc/stat's `cpu` line (idle and iowait are idle).
fn cpu_jiffies() -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/stat").unwrap();
    let line = text.lines().find(|l| l.starts_with("cpu ")).unwrap();
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|x| x.parse().unwrap())
        .collect();
    let total: u64 = v.iter().sum();
    (total - v[3] - v[4], total)
}

/// user + system CPU time of a process so far, in clock ticks (/proc/PID/stat fields 14, 15).
fn process_ticks(pid: u32) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The command name (field 2) may hold spaces; the fields after it follow its ')'.
    let rest = &text[text.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap()
}

#[test]
fn the_hog_keeps_every_cpu_busy_while_it_runs() {
    let before = cpu_jiffies();
    let hog = CpuHog::start(0.9);
    std::thread::sleep(Duration::from_millis(800));
    let during = cpu_jiffies();
    drop(hog);
    let busy = (during.0 - before.0) as f64 / (during.1 - before.1) as f64;
    // Other work on the host can only add busy time, so this holds on a loaded machine too.
    assert!(
        busy >= 0.6,
        "machine busy {:.0} % with a 90 % hog on every CPU",
        busy * 100.0
    );
}

#[test]
fn the_quota_holds_a_spinning_child_to_its_share() {
    let Some(cg) = CpuQuota::new(0.1, Duration::from_millis(50)) else {
        crate::util::skip_lacking(
            "needs root and a cpu cgroup controller (v2 cpu.max or v1 cfs quota)",
        );
        return;
    };
    let child = cg
        .command("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap();
    let mut child = crate::util::KillOnDrop(child);
    let pid = child.0.id();
    // Give the shell time to join the cgroup and exec.
    std::thread::sleep(Duration::from_millis(100));
    let t0 = Instant::now();
    let c0 = process_ticks(pid);
    std::thread::sleep(Duration::from_millis(1500));
    let c1 = process_ticks(pid);
    let wall = t0.elapsed().as_secs_f64();
    let _ = child.0.kill();
    let _ = child.0.wait();
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let share = (c1 - c0) as f64 / hz / wall;
    assert!(
        share <= 0.25,
        "a child spinning under a 10 % quota used {:.0} % of a CPU",
        share * 100.0
    );
    assert!(cg.throttled_periods() > 0, "the cgroup was never throttled");
}
