//! Who is doing the I/O: per-process storage bytes per second between two reads of `/proc/<pid>/io`
//! (sys::procio), the busiest first. Pure.
//! Imports only: sys/, monitor/.

use crate::sys::procio::ProcIoSample;
use std::collections::HashMap;

/// One process over one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcRate {
    pub pid: u32,
    pub comm: String,
    /// Bytes per second the process had read from and written to storage.
    pub read_bps: f64,
    pub write_bps: f64,
}

/// The busiest processes of an interval.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ProcReport {
    pub top: Vec<ProcRate>,
    /// Processes whose counters could not be read (another user's, without root).
    pub denied: usize,
}

/// The previous read, to subtract from.
#[derive(Debug, Default)]
pub struct ProcTracker {
    prev: HashMap<u32, (u64, u64)>,
    prev_ns: u64,
}

impl ProcTracker {
    /// Feed a read taken at `mono_ns`; the `keep` busiest since the previous one (None on the
    /// first read). A pid seen for the first time has no rate yet.
    pub fn update(&mut self, s: &ProcIoSample, mono_ns: u64, keep: usize) -> Option<ProcReport> {
        let dt = mono_ns.saturating_sub(self.prev_ns) as f64 / 1e9;
        let first = self.prev_ns == 0 || dt <= 0.0;
        let mut top = Vec::new();
        let mut next = HashMap::with_capacity(s.procs.len());
        for p in &s.procs {
            if let Some(&(r0, w0)) = self.prev.get(&p.pid) {
                // A counter that went backwards is another process under a reused pid.
                if let (Some(r), Some(w)) =
                    (p.read_bytes.checked_sub(r0), p.write_bytes.checked_sub(w0))
                {
                    if r + w > 0 && !first {
                        top.push(ProcRate {
                            pid: p.pid,
                            comm: p.comm.clone(),
                            read_bps: r as f64 / dt,
                            write_bps: w as f64 / dt,
                        });
                    }
                }
            }
            next.insert(p.pid, (p.read_bytes, p.write_bytes));
        }
        self.prev = next;
        self.prev_ns = mono_ns;
        if first {
            return None;
        }
        top.sort_by(|a, b| {
            (b.read_bps + b.write_bps)
                .total_cmp(&(a.read_bps + a.write_bps))
                .then(a.pid.cmp(&b.pid))
        });
        top.truncate(keep);
        Some(ProcReport {
            top,
            denied: s.denied,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::procio::ProcIo;

    fn sample(v: &[(u32, u64, u64)], denied: usize) -> ProcIoSample {
        ProcIoSample {
            procs: v
                .iter()
                .map(|&(pid, r, w)| ProcIo {
                    pid,
                    comm: format!("p{pid}"),
                    read_bytes: r,
                    write_bytes: w,
                })
                .collect(),
            denied,
        }
    }

    #[test]
    fn rates_busiest_first() {
        let mut t = ProcTracker::default();
        assert_eq!(
            t.update(
                &sample(&[(1, 0, 0), (2, 0, 0), (3, 9, 9)], 0),
                1_000_000_000,
                10
            ),
            None
        );
        // 2 s later: pid 1 read 2 MB, pid 2 wrote 8 MB, pid 3 went backwards (reused), pid 4
        // is new: no rate.
        let r = t
            .update(
                &sample(
                    &[(1, 2_000_000, 0), (2, 0, 8_000_000), (3, 0, 0), (4, 5, 5)],
                    7,
                ),
                3_000_000_000,
                10,
            )
            .unwrap();
        assert_eq!(r.denied, 7);
        assert_eq!(r.top.len(), 2);
        assert_eq!((r.top[0].pid, r.top[0].write_bps), (2, 4_000_000.0));
        assert_eq!((r.top[1].pid, r.top[1].read_bps), (1, 1_000_000.0));
        let r = t
            .update(&sample(&[(1, 2_000_000, 0)], 0), 4_000_000_000, 1)
            .unwrap();
        assert!(r.top.is_empty(), "idle processes are left out");
    }
}
