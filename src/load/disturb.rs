//! A level's [`Disturbance`] from what was sampled around it: this process's scheduler delay and
//! the machine's CPU and pressure shares (sys::sched), the kernel's view of the disk against
//! iosat's own rate, and the signal that cut it short. Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/.

use super::result::KernelView;
use crate::analysis::evidence::Disturbance;
use crate::sys::sched::SchedDelta;

/// Other traffic below this share of iosat's own rate (or below one request per second) is
/// the offset between the kernel's interval and ours, not a second workload: both count
/// completions over the level's window, but the kernel is sampled by the driver thread when it
/// wakes at the window's ends (a few ms late on a busy machine, up to 1 % of a 0.5 s level).
pub const OTHER_NOISE_SHARE: f64 = 0.02;

/// `ios` and `own_iops`: what iosat completed in the level. `other_iops` is the kernel's r/s +
/// w/s minus iosat's own IOPS, 0 when the kernel saw fewer (the page cache answered, or a
/// request was merged); it assumes the kernel counts one request per iosat I/O, which holds
/// for blocks up to the device's max_sectors_kb.
pub fn disturbance(
    sched: Option<&SchedDelta>,
    ios: u64,
    own_iops: f64,
    kernel: Option<&KernelView>,
    cut_by: Option<&str>,
) -> Option<Disturbance> {
    if sched.is_none() && kernel.is_none() && cut_by.is_none() {
        return None;
    }
    let other_iops = kernel.map(|k| {
        let other = k.ios_per_s().unwrap_or(0.0) - own_iops;
        if other < (OTHER_NOISE_SHARE * own_iops).max(1.0) {
            0.0
        } else {
            other
        }
    });
    Some(Disturbance {
        cpu_wait_ns_per_io: sched
            .filter(|_| ios > 0)
            .map(|s| s.run_delay_ns as f64 / ios as f64),
        cpu_busy_pct: sched.and_then(|s| s.cpu_busy_pct),
        cpu_iowait_pct: sched.and_then(|s| s.cpu_iowait_pct),
        cpu_steal_pct: sched.and_then(|s| s.cpu_steal_pct),
        other_iops,
        psi_io_some_pct: sched.and_then(|s| s.psi_io_some_pct),
        psi_cpu_some_pct: sched.and_then(|s| s.psi_cpu_some_pct),
        cut_by: cut_by.map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_io_wait_and_other_traffic() {
        let s = SchedDelta {
            run_delay_ns: 4_000_000,
            cpu_busy_pct: Some(90.0),
            ..Default::default()
        };
        let k = KernelView {
            r_s: Some(1500.0),
            w_s: Some(0.0),
            ..Default::default()
        };
        let d = disturbance(Some(&s), 100_000, 1000.0, Some(&k), None).unwrap();
        assert_eq!(d.cpu_wait_ns_per_io, Some(40.0));
        assert_eq!(d.cpu_busy_pct, Some(90.0));
        assert_eq!(d.other_iops, Some(500.0));
        assert_eq!(d.cut_by, None);
        // Within the sampling offset of ours: none.
        let near = KernelView {
            r_s: Some(100_500.0),
            ..Default::default()
        };
        let d = disturbance(Some(&s), 100, 100_000.0, Some(&near), None).unwrap();
        assert_eq!(d.other_iops, Some(0.0));
        // The kernel saw fewer than ours (page cache): no other traffic.
        let d = disturbance(None, 10, 2000.0, Some(&k), Some("SIGTERM")).unwrap();
        assert_eq!(d.other_iops, Some(0.0));
        assert_eq!(d.cpu_wait_ns_per_io, None);
        assert_eq!(d.cut_by.as_deref(), Some("SIGTERM"));
        assert_eq!(disturbance(None, 10, 1.0, None, None), None);
    }
}
