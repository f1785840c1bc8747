//! What competes with a measurement for the CPU and the disk, as raw cumulative counters: this
//! process's per-thread scheduler delay (`<proc>/self/task/*/schedstat`, field 2: time spent
//! runnable but not running, ns; Documentation/scheduler/sched-stats.rst), its own user time
//! (`<proc>/self/stat`, field 14, USER_HZ ticks), the machine's CPU time
//! (`<proc>/stat`, the aggregate `cpu` line, USER_HZ ticks; proc(5)) and pressure stall totals
//! (`<proc>/pressure/{io,cpu}`, `total=` µs; Documentation/accounting/psi.rst). Thin readers over
//! pure parsers; [`SchedMark::between`] derives shares from two marks.
//! Imports only: sys/, error, units.

use super::Root;

/// The aggregate `cpu` line of /proc/stat: ticks since boot per state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    /// Every state (guest time is already inside user and nice).
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }
}

/// The share of the CPU time between two reads spent in the state `f` picks, in percent; None
/// when no time passed or that state's counter went backwards.
fn share(a: &CpuTimes, b: &CpuTimes, f: fn(&CpuTimes) -> u64) -> Option<f64> {
    let dt = b.total().checked_sub(a.total()).filter(|&d| d > 0)?;
    let d = f(b).checked_sub(f(a))?;
    Some(d as f64 / dt as f64 * 100.0)
}

/// iostat's avg-cpu report between two reads of the `cpu` line: the share of all CPUs' time
/// per state, in percent (sysstat: %system includes irq and softirq; %user includes guest
/// time, which the kernel counts inside user).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct AvgCpu {
    pub user: f64,
    pub nice: f64,
    pub system: f64,
    pub iowait: f64,
    pub steal: f64,
    pub idle: f64,
}

/// CPUs with less than this share idle (idle + iowait), or more than this share stolen, make
/// an interval's latency the machine's as much as the device's.
pub const CPU_BUSY_SHARE: f64 = 0.05;
pub const CPU_STEAL_SHARE: f64 = 0.10;

impl AvgCpu {
    /// The CPUs had next to no idle time ([`CPU_BUSY_SHARE`]) or lost a tenth of it to steal
    /// ([`CPU_STEAL_SHARE`]): a completion waits for a CPU too, so the machine may explain part
    /// of the interval's latency (learning's CPU noise, every judgement's `busy_cpus`).
    pub fn busy(&self) -> bool {
        self.idle + self.iowait < CPU_BUSY_SHARE * 100.0 || self.steal > CPU_STEAL_SHARE * 100.0
    }

    /// None when no tick passed or a counter went backwards.
    pub fn between(a: &CpuTimes, b: &CpuTimes) -> Option<AvgCpu> {
        Some(AvgCpu {
            user: share(a, b, |c| c.user)?,
            nice: share(a, b, |c| c.nice)?,
            system: share(a, b, |c| c.system + c.irq + c.softirq)?,
            iowait: share(a, b, |c| c.iowait)?,
            steal: share(a, b, |c| c.steal)?,
            idle: share(a, b, |c| c.idle)?,
        })
    }
}

/// The `cpu ` line of /proc/stat (kernels before 2.6.11 lack steal: it reads as 0).
pub fn parse_proc_stat(text: &str) -> Option<CpuTimes> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    if v.len() < 5 {
        return None;
    }
    let g = |i: usize| v.get(i).copied().unwrap_or(0);
    Some(CpuTimes {
        user: g(0),
        nice: g(1),
        system: g(2),
        idle: g(3),
        iowait: g(4),
        irq: g(5),
        softirq: g(6),
        steal: g(7),
    })
}

/// Field 2 of a schedstat file ("on-cpu-ns run-delay-ns timeslices").
pub fn parse_schedstat_delay(text: &str) -> Option<u64> {
    text.split_whitespace().nth(1)?.parse().ok()
}

/// `total=` of the `some` line of a /proc/pressure file, µs.
pub fn parse_psi_some_total_us(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// `utime` of a `/proc/PID/stat` line (field 14, USER_HZ ticks, all threads of the process,
/// exited ones included). The command name (field 2) is in parentheses and may hold spaces
/// and parentheses itself: the fields are counted after its last `)`.
pub fn parse_stat_utime(text: &str) -> Option<u64> {
    let rest = &text[text.rfind(')')? + 1..];
    // After the name: state (3), ppid (4) ... utime (14), the 12th field of the rest.
    rest.split_whitespace().nth(11)?.parse().ok()
}

/// This process's user time so far, USER_HZ ticks (`<proc>/self/stat`).
pub fn read_own_utime(root: &Root) -> Option<u64> {
    parse_stat_utime(&std::fs::read_to_string(root.proc.join("self/stat")).ok()?)
}

/// Run delay of each thread of this process: (tid, ns). Empty without schedstats
/// (CONFIG_SCHED_INFO off).
pub fn read_task_delays(root: &Root) -> Vec<(u32, u64)> {
    let Ok(dir) = std::fs::read_dir(root.proc.join("self/task")) else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let tid: u32 = e.file_name().to_str()?.parse().ok()?;
        let text = std::fs::read_to_string(e.path().join("schedstat")).ok()?;
        Some((tid, parse_schedstat_delay(&text)?))
    })
    .collect()
}

/// Run delay of the calling thread (`<proc>/thread-self/schedstat`, field 2), ns; None
/// without schedstats (CONFIG_SCHED_INFO off) or before Linux 3.17 (no thread-self). A thread
/// woken into a cgroup throttled by its CPU quota counts the throttled time here too: it is
/// runnable, and not running.
pub fn read_own_thread_delay(root: &Root) -> Option<u64> {
    parse_schedstat_delay(&std::fs::read_to_string(root.proc.join("thread-self/schedstat")).ok()?)
}

pub fn read_cpu_times(root: &Root) -> Option<CpuTimes> {
    parse_proc_stat(&std::fs::read_to_string(root.proc.join("stat")).ok()?)
}

/// `which`: "io" or "cpu". None where the kernel has no PSI (before 4.20, or psi=0).
pub fn read_psi_some_us(root: &Root, which: &str) -> Option<u64> {
    parse_psi_some_total_us(&std::fs::read_to_string(root.proc.join("pressure").join(which)).ok()?)
}

/// Every counter at one moment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchedMark {
    pub mono_ns: u64,
    pub tasks: Vec<(u32, u64)>,
    pub cpu: Option<CpuTimes>,
    /// This process's user time, USER_HZ ticks (the unit of `cpu`).
    pub own_utime: Option<u64>,
    pub psi_io_us: Option<u64>,
    pub psi_cpu_us: Option<u64>,
}

/// What happened between two marks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchedDelta {
    /// Run delay of this process's threads: tasks alive at the second mark, minus their value
    /// at the first (0 for threads started in between; threads gone by then are not seen).
    pub run_delay_ns: u64,
    pub cpu_busy_pct: Option<f64>,
    pub cpu_iowait_pct: Option<f64>,
    pub cpu_steal_pct: Option<f64>,
    /// The machine's user and nice time less this process's own user time, percent of all
    /// CPUs: what other processes computed in user space (compilers, a hog). The I/O path's
    /// kernel work (system, irq, softirq: a fast disk's completions, kernel workers) is left
    /// out, so a CPU-heavy path on a quiet machine does not count as other work.
    pub cpu_other_user_pct: Option<f64>,
    pub psi_io_some_pct: Option<f64>,
    pub psi_cpu_some_pct: Option<f64>,
}

impl SchedMark {
    pub fn read(root: &Root) -> SchedMark {
        SchedMark {
            mono_ns: super::clock::monotonic_ns(),
            tasks: read_task_delays(root),
            cpu: read_cpu_times(root),
            own_utime: read_own_utime(root),
            psi_io_us: read_psi_some_us(root, "io"),
            psi_cpu_us: read_psi_some_us(root, "cpu"),
        }
    }

    /// None when the interval is empty; each share None when its counter is missing or went
    /// backwards.
    pub fn between(a: &SchedMark, b: &SchedMark) -> Option<SchedDelta> {
        let dt_ns = b.mono_ns.checked_sub(a.mono_ns).filter(|&d| d > 0)?;
        let mut run_delay_ns = 0u64;
        for &(tid, d) in &b.tasks {
            let before = a.tasks.iter().find(|t| t.0 == tid).map_or(0, |t| t.1);
            // A tid reused by a new thread starts again from 0.
            run_delay_ns += d.checked_sub(before).unwrap_or(d);
        }
        let share = |f: fn(&CpuTimes) -> u64| share(a.cpu.as_ref()?, b.cpu.as_ref()?, f);
        let psi = |x: Option<u64>, y: Option<u64>| {
            let d = y?.checked_sub(x?)?;
            Some((d as f64 * 1000.0 / dt_ns as f64 * 100.0).min(100.0))
        };
        Some(SchedDelta {
            run_delay_ns,
            cpu_busy_pct: share(|c| c.total() - c.idle - c.iowait),
            cpu_iowait_pct: share(|c| c.iowait),
            cpu_steal_pct: share(|c| c.steal),
            cpu_other_user_pct: other_user_pct(a, b),
            psi_io_some_pct: psi(a.psi_io_us, b.psi_io_us),
            psi_cpu_some_pct: psi(a.psi_cpu_us, b.psi_cpu_us),
        })
    }
}

/// [`SchedDelta::cpu_other_user_pct`]: None when a counter is missing or went backwards. The
/// two counters are sampled ticks from different accounts, so the difference can dip a tick
/// or two below zero: it is floored at 0.
fn other_user_pct(a: &SchedMark, b: &SchedMark) -> Option<f64> {
    let (ca, cb) = (a.cpu.as_ref()?, b.cpu.as_ref()?);
    let all = share(ca, cb, |c| c.user + c.nice)?;
    let dt = cb.total().checked_sub(ca.total()).filter(|&d| d > 0)?;
    let own = b.own_utime?.checked_sub(a.own_utime?)? as f64 / dt as f64 * 100.0;
    Some((all - own).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  100 0 50 800 40 5 5 0 0 0\n\
                        cpu0 50 0 25 400 20 2 3 0 0 0\n\
                        intr 12345\nctxt 999\n";
    const PSI: &str = "some avg10=0.00 avg60=0.00 avg300=0.00 total=1500000\n\
                       full avg10=0.00 avg60=0.00 avg300=0.00 total=100\n";

    #[test]
    fn parsers_read_the_real_layouts() {
        let c = parse_proc_stat(STAT).unwrap();
        assert_eq!((c.user, c.idle, c.iowait, c.steal), (100, 800, 40, 0));
        assert_eq!(c.total(), 1000);
        assert_eq!(parse_proc_stat("cpu  1 2 3\n"), None);
        assert_eq!(parse_schedstat_delay("2345678 987654 321\n"), Some(987_654));
        assert_eq!(parse_schedstat_delay("12\n"), None);
        let stat = "4242 (a) b (c) R 1 4242 4242 0 -1 4194560 800 0 0 0 337 41 0 0 20 0 3 0 99\n";
        assert_eq!(parse_stat_utime(stat), Some(337));
        assert_eq!(parse_stat_utime("4242 (cut) R 1 2\n"), None);
        assert_eq!(parse_psi_some_total_us(PSI), Some(1_500_000));
        // /proc/pressure/cpu before 5.13 has no full line.
        assert_eq!(
            parse_psi_some_total_us("some avg10=1.00 avg60=0 avg300=0 total=7\n"),
            Some(7)
        );
    }

    #[test]
    fn between_derives_shares_and_new_threads() {
        let a = SchedMark {
            mono_ns: 1_000_000_000,
            tasks: vec![(10, 500), (11, 1000)],
            cpu: parse_proc_stat(STAT),
            own_utime: Some(20),
            psi_io_us: Some(1_000_000),
            psi_cpu_us: None,
        };
        let b = SchedMark {
            mono_ns: 3_000_000_000,
            // 11 exited, 12 is new, 10 waited 1500 ns more.
            tasks: vec![(10, 2000), (12, 300)],
            cpu: Some(CpuTimes {
                user: 150,
                system: 70,
                idle: 900,
                iowait: 60,
                irq: 5,
                softirq: 5,
                steal: 10,
                nice: 0,
            }),
            own_utime: Some(40),
            psi_io_us: Some(1_500_000),
            psi_cpu_us: Some(3),
        };
        let d = SchedMark::between(&a, &b).unwrap();
        assert_eq!(d.run_delay_ns, 1800);
        // Δtotal 200: busy Δ(user+system+steal) = 50+20+10 = 80 → 40 %.
        assert!((d.cpu_busy_pct.unwrap() - 40.0).abs() < 1e-9);
        assert!((d.cpu_iowait_pct.unwrap() - 10.0).abs() < 1e-9);
        assert!((d.cpu_steal_pct.unwrap() - 5.0).abs() < 1e-9);
        // user Δ50 of 200 (25 %), our own Δ20 (10 %): others 15 %.
        assert!((d.cpu_other_user_pct.unwrap() - 15.0).abs() < 1e-9);
        // 0.5 s stalled of 2 s.
        assert!((d.psi_io_some_pct.unwrap() - 25.0).abs() < 1e-9);
        assert_eq!(d.psi_cpu_some_pct, None);
        assert!(SchedMark::between(&b, &a).is_none());
    }

    #[test]
    fn avg_cpu_is_iostats() {
        let a = parse_proc_stat(STAT).unwrap();
        let b = CpuTimes {
            user: 150,
            nice: 10,
            system: 70,
            idle: 890,
            iowait: 60,
            irq: 5,
            softirq: 5,
            steal: 10,
        };
        let c = AvgCpu::between(&a, &b).unwrap();
        // Δtotal 200: user 50, nice 10, system 20, iowait 20, steal 10, idle 90.
        assert_eq!((c.user, c.nice, c.system), (25.0, 5.0, 10.0));
        assert_eq!((c.iowait, c.steal, c.idle), (10.0, 5.0, 45.0));
        assert_eq!(AvgCpu::between(&a, &a), None);
        assert_eq!(AvgCpu::between(&b, &a), None);
    }

    #[test]
    fn reads_a_proc_tree_through_the_root() {
        let d = tempfile::tempdir().unwrap();
        let root = Root {
            proc: d.path().to_path_buf(),
            sys: d.path().join("sys"),
        };
        for (tid, text) in [("100", "5 700 3\n"), ("101", "9 300 1\n")] {
            let t = d.path().join("self/task").join(tid);
            std::fs::create_dir_all(&t).unwrap();
            std::fs::write(t.join("schedstat"), text).unwrap();
        }
        std::fs::write(d.path().join("stat"), STAT).unwrap();
        std::fs::create_dir_all(d.path().join("pressure")).unwrap();
        std::fs::write(d.path().join("pressure/io"), PSI).unwrap();
        let m = SchedMark::read(&root);
        let mut tasks = m.tasks.clone();
        tasks.sort();
        assert_eq!(tasks, vec![(100, 700), (101, 300)]);
        assert_eq!(m.cpu.unwrap().total(), 1000);
        assert_eq!(m.psi_io_us, Some(1_500_000));
        assert_eq!(m.psi_cpu_us, None, "no pressure/cpu in the tree");
        // An empty tree: nothing, no error.
        let empty = SchedMark::read(&Root {
            proc: d.path().join("nothing"),
            sys: d.path().join("nothing"),
        });
        assert!(empty.tasks.is_empty() && empty.cpu.is_none());
    }
}
