//! `--rate-limit`: a pacer that caps the requests a level adds to a device (a production disk's
//! gentle sweep). One shared slot clock: each request takes the next slot, `1/rate` after the
//! previous one, and its worker sleeps until the slot comes (a token bucket with a burst of
//! one, the generic cell rate algorithm). The pause falls before the request's clock starts, so
//! latency is still the device's, never the pacer's. Lock-free: one atomic add per request.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Slots further behind now than this are not made up for with a burst: an idle moment (a
/// slow request) does not let the next ones through back to back beyond this much credit.
pub const MAX_CREDIT_NS: u64 = 10_000_000;

/// The shared slot clock of one level.
#[derive(Debug)]
pub struct Pacer {
    interval_ns: u64,
    next_ns: AtomicU64,
}

impl Pacer {
    /// A pacer of `iops` requests per second from `now_ns` on (None when `iops` is not a
    /// positive number: no pacing).
    pub fn new(iops: f64, now_ns: u64) -> Option<Pacer> {
        (iops.is_finite() && iops > 0.0).then(|| Pacer {
            interval_ns: (1e9 / iops).round().max(1.0) as u64,
            next_ns: AtomicU64::new(now_ns),
        })
    }

    /// Take the next slot at `now_ns`: how long to wait before issuing the request (0: at
    /// once). Pure but for the shared clock.
    pub fn take(&self, now_ns: u64) -> u64 {
        // A clock left far behind (idle) restarts at the credit's edge.
        let floor = now_ns.saturating_sub(MAX_CREDIT_NS);
        let mut cur = self.next_ns.load(Relaxed);
        loop {
            let slot = cur.max(floor);
            match self
                .next_ns
                .compare_exchange_weak(cur, slot + self.interval_ns, Relaxed, Relaxed)
            {
                Ok(_) => return slot.saturating_sub(now_ns),
                Err(seen) => cur = seen,
            }
        }
    }

    /// Take the next slot and sleep until it comes.
    pub fn wait(&self) {
        let ns = self.take(super::workload::now_ns());
        if ns > 0 {
            std::thread::sleep(std::time::Duration::from_nanos(ns));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_one_interval_apart_and_idle_time_gives_little_credit() {
        let p = Pacer::new(1000.0, 0).unwrap();
        // Three requests at t = 0: the first at once, the others 1 ms and 2 ms later.
        assert_eq!([p.take(0), p.take(0), p.take(0)], [0, 1_000_000, 2_000_000]);
        // After an idle second only MAX_CREDIT_NS of slots may go at once: the one due now
        // and 10 ms of credit, 11 at 1000 IOPS.
        let t = 1_000_000_000;
        let at_once = (0..20).take_while(|_| p.take(t) == 0).count();
        assert_eq!(at_once, 11);
        assert_eq!(Pacer::new(0.0, 0).map(|_| ()), None);
        assert_eq!(Pacer::new(f64::NAN, 0).map(|_| ()), None);
    }

    #[test]
    fn threads_share_the_rate() {
        // 4 threads taking slots of a 2000-IOPS pacer for 100 ms: about 200 requests, never
        // more than the rate plus the credit allows.
        let start = crate::load::workload::now_ns();
        let p = Pacer::new(2000.0, start).unwrap();
        let until = start + 100_000_000;
        let done = std::sync::atomic::AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    while crate::load::workload::now_ns() < until {
                        p.wait();
                        done.fetch_add(1, Relaxed);
                    }
                });
            }
        });
        let n = done.load(Relaxed);
        assert!(n <= 200 + 4 + 20, "{n} requests in 100 ms at 2000 IOPS");
        assert!(n >= 150, "{n} requests in 100 ms at 2000 IOPS");
    }
}
