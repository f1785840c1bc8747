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

/// What iosat itself completed in a level, per direction, requests per second.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct OwnRate {
    pub r_s: f64,
    pub w_s: f64,
}

impl OwnRate {
    pub fn total(self) -> f64 {
        self.r_s + self.w_s
    }
}

/// `ios` and `own`: what iosat completed in the level. `other_iops` is the kernel's r/s +
/// w/s minus iosat's own IOPS, 0 when the kernel saw fewer (the page cache answered, or a
/// request was merged); it assumes the kernel counts one request per iosat I/O, which holds
/// for blocks up to the device's max_sectors_kb. The same per direction (`other_r_s`,
/// `other_w_s`), and what that traffic kept in flight by Little's law with the kernel's
/// r_await and w_await (the other requests wait as long as ours on the same device).
pub fn disturbance(
    sched: Option<&SchedDelta>,
    ios: u64,
    own: OwnRate,
    kernel: Option<&KernelView>,
    cut_by: Option<&str>,
) -> Option<Disturbance> {
    if sched.is_none() && kernel.is_none() && cut_by.is_none() {
        return None;
    }
    let own_iops = own.total();
    let floor = (OTHER_NOISE_SHARE * own_iops).max(1.0);
    let beyond = |seen: f64, ours: f64| {
        let other = seen - ours;
        if other < floor {
            0.0
        } else {
            other
        }
    };
    let other_iops = kernel.map(|k| beyond(k.ios_per_s().unwrap_or(0.0), own_iops));
    let other_r_s = kernel.and_then(|k| k.r_s).map(|r| beyond(r, own.r_s));
    let other_w_s = kernel.and_then(|k| k.w_s).map(|w| beyond(w, own.w_s));
    let other_in_flight = kernel.and_then(|k| {
        let part = |rate: Option<f64>, await_ms: Option<f64>| match (rate, await_ms) {
            (Some(x), _) if x <= 0.0 => Some(0.0),
            (Some(x), Some(a)) => Some(x * a / 1e3),
            (Some(_), None) => None,
            (None, _) => Some(0.0),
        };
        Some(part(other_r_s, k.r_await)? + part(other_w_s, k.w_await)?)
    });
    Some(Disturbance {
        cpu_wait_ns_per_io: sched
            .filter(|_| ios > 0)
            .map(|s| s.run_delay_ns as f64 / ios as f64),
        cpu_busy_pct: sched.and_then(|s| s.cpu_busy_pct),
        cpu_iowait_pct: sched.and_then(|s| s.cpu_iowait_pct),
        cpu_steal_pct: sched.and_then(|s| s.cpu_steal_pct),
        cpu_other_user_pct: sched.and_then(|s| s.cpu_other_user_pct),
        other_iops,
        other_r_s,
        other_w_s,
        other_in_flight,
        psi_io_some_pct: sched.and_then(|s| s.psi_io_some_pct),
        psi_cpu_some_pct: sched.and_then(|s| s.psi_cpu_some_pct),
        cut_by: cut_by.map(str::to_string),
        other_explains_rel: 0.0,
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
        let reads = |r_s| OwnRate { r_s, w_s: 0.0 };
        let d = disturbance(Some(&s), 100_000, reads(1000.0), Some(&k), None).unwrap();
        assert_eq!(d.cpu_wait_ns_per_io, Some(40.0));
        assert_eq!(d.cpu_busy_pct, Some(90.0));
        assert_eq!(d.other_iops, Some(500.0));
        assert_eq!(d.cut_by, None);
        // Within the sampling offset of ours: none.
        let near = KernelView {
            r_s: Some(100_500.0),
            ..Default::default()
        };
        let d = disturbance(Some(&s), 100, reads(100_000.0), Some(&near), None).unwrap();
        assert_eq!(d.other_iops, Some(0.0));
        // The kernel saw fewer than ours (page cache): no other traffic.
        let d = disturbance(None, 10, reads(2000.0), Some(&k), Some("SIGTERM")).unwrap();
        assert_eq!(d.other_iops, Some(0.0));
        assert_eq!(d.cpu_wait_ns_per_io, None);
        assert_eq!(d.cut_by.as_deref(), Some("SIGTERM"));
        assert_eq!(disturbance(None, 10, reads(1.0), None, None), None);
    }

    #[test]
    fn other_traffic_per_direction_and_in_flight() {
        // A read sweep at 1000 IOPS; the kernel saw 1400 reads/s and 120 writes/s, reads
        // waiting 0.5 ms and writes 2 ms: 400 r/s and 120 w/s of someone else's, keeping
        // 400 × 0.5 ms + 120 × 2 ms = 0.44 requests in flight.
        let k = KernelView {
            r_s: Some(1400.0),
            w_s: Some(120.0),
            r_await: Some(0.5),
            w_await: Some(2.0),
            ..Default::default()
        };
        let own = OwnRate {
            r_s: 1000.0,
            w_s: 0.0,
        };
        let d = disturbance(None, 1000, own, Some(&k), None).unwrap();
        assert_eq!(d.other_iops, Some(520.0));
        assert_eq!(d.other_r_s, Some(400.0));
        assert_eq!(d.other_w_s, Some(120.0));
        assert!((d.other_in_flight.unwrap() - 0.44).abs() < 1e-9, "{d:?}");
        // Unknown awaits with other traffic: its in-flight is unknown, not 0.
        let k = KernelView { r_await: None, ..k };
        let d = disturbance(None, 1000, own, Some(&k), None).unwrap();
        assert_eq!(d.other_in_flight, None);
        // No other traffic: none in flight, whatever the awaits.
        let quiet = KernelView {
            r_s: Some(1000.0),
            w_s: Some(0.0),
            ..Default::default()
        };
        let d = disturbance(None, 1000, own, Some(&quiet), None).unwrap();
        assert_eq!(d.other_in_flight, Some(0.0));
    }
}
