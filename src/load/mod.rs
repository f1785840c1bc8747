//! Load generation: WorkloadSpec → Engine (io_uring | sync threads | sim, chosen in engine.rs) →
//! LevelStats → LevelResult → SweepReport, levels driven by driver.rs with the next level planned
//! by plan.rs.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/.
//!
//! Every engine runs one level at a time behind the [`Engine`] trait; per-worker histograms
//! and per-sub-window counts (windows.rs) are merged into one [`LevelStats`] after the level
//! (no lock or shared histogram in the hot path, docs/design.md §3.9). disturb.rs turns what was
//! sampled around a level into its disturbance; trust.rs decides whether a result may become
//! a profile. open/ is the open loop (`--rate`): a schedule of intended starts
//! (schedule.rs) issued by a pool of threads or, on the uring engine, by one thread on a ring,
//! or offered to the sim's device in simulated time, with its own level driver.

use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, AtomicU64};

pub mod sim;

/// The access pattern of a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    RandRead,
    RandWrite,
    Read,
    Write,
    /// Random mixed: `read_pct` percent reads.
    RandRw {
        read_pct: u8,
    },
}

/// What one level asks of an engine.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelSpec {
    /// Worker threads (sync: one request in flight each).
    pub threads: u32,
    /// Requests each worker keeps in flight (1 for sync).
    pub queue_depth: u32,
    pub pattern: Pattern,
    /// Bytes per request.
    pub block_size: u64,
    /// Warm-up before measuring; its I/Os are not counted.
    pub ramp_ns: u64,
    /// Measured time.
    pub duration_ns: u64,
    /// Seed of the offset generator (and of the sim engine), so runs are repeatable.
    pub seed: u64,
}

impl LevelSpec {
    /// Requests kept in flight: threads × queue depth.
    pub fn concurrency(&self) -> u32 {
        self.threads * self.queue_depth
    }
}

/// Shared, lock-free control of a running level: Ctrl-C and live progress (relaxed atomics
/// read about once a second by the progress bar).
#[derive(Debug, Default)]
pub struct LevelCtl {
    /// Set on Ctrl-C: engines finish the I/Os in flight and return what they measured.
    pub stop: AtomicBool,
    /// Completed I/Os so far in this level (measured phase), for progress display.
    pub ops_done: AtomicU64,
    /// Set by the level driver before the level: workers that finished their window wait for
    /// `released` before they exit, so the driver reads their scheduler delay at the window's
    /// end while they still exist (an exited thread's schedstat is gone, and on a busy machine
    /// the driver can wake after the workers have finished).
    pub hold: AtomicBool,
    /// Set by the driver once it has read the window's end.
    pub released: AtomicBool,
}

/// The longest a worker waits for [`LevelCtl::released`]: a driver that never releases (it
/// failed) costs a level this much, never a hang.
pub const HOLD_LIMIT_NS: u64 = 2_000_000_000;

impl LevelCtl {
    /// Called by each worker after its window: with `hold` set, wait until the driver has read
    /// the window's end (or a stop, or [`HOLD_LIMIT_NS`]); otherwise return at once.
    pub fn wait_release(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        if !self.hold.load(Relaxed) {
            return;
        }
        let until = workload::now_ns() + HOLD_LIMIT_NS;
        while !self.released.load(Relaxed) && !self.stop.load(Relaxed) && workload::now_ns() < until
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}

/// What an engine measured in one level, merged over its workers.
#[derive(Debug, Clone)]
pub struct LevelStats {
    /// The measured interval (after ramp), monotonic nanoseconds (simulated for `sim`).
    pub elapsed_ns: u64,
    /// Completion latency of each read, submission to completion, integer nanoseconds.
    pub read_ns: Histogram<u64>,
    /// Same for writes.
    pub write_ns: Histogram<u64>,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// True when the level was cut short by `LevelCtl::stop`.
    pub interrupted: bool,
    /// The same completions per sub-window of the measured phase (windows.rs).
    pub windows: windows::SubWindows,
    /// The open loop's figures (open/result.rs): latency from the intended start, lateness; None for
    /// the closed-loop engines.
    pub open: Option<open::result::OpenStats>,
}

impl LevelStats {
    /// Empty stats with histograms able to hold 1 ns .. 1 hour at 3 significant digits.
    pub fn new() -> Self {
        let h = || Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds");
        LevelStats {
            elapsed_ns: 0,
            read_ns: h(),
            write_ns: h(),
            read_bytes: 0,
            write_bytes: 0,
            interrupted: false,
            windows: windows::SubWindows::default(),
            open: None,
        }
    }

    /// Count one completed request, `latency_ns` from its submission (at least 1 ns), in its
    /// sub-window `window` (windows::WindowClock::index of its completion), in the read or
    /// write histogram, and its bytes. Every engine counts its completions through this.
    #[inline]
    pub fn count(&mut self, window: usize, latency_ns: u64, is_read: bool, bytes: u64) {
        let latency_ns = latency_ns.max(1);
        self.windows.record(window, latency_ns);
        if is_read {
            self.read_ns.saturating_record(latency_ns);
            self.read_bytes += bytes;
        } else {
            self.write_ns.saturating_record(latency_ns);
            self.write_bytes += bytes;
        }
    }
}

impl Default for LevelStats {
    fn default() -> Self {
        Self::new()
    }
}

impl std::ops::AddAssign<&LevelStats> for LevelStats {
    /// Merge one worker's stats into the level's (after join). Elapsed is the longest worker's.
    fn add_assign(&mut self, other: &LevelStats) {
        self.elapsed_ns = self.elapsed_ns.max(other.elapsed_ns);
        self.read_ns.add(&other.read_ns).expect("same bounds");
        self.write_ns.add(&other.write_ns).expect("same bounds");
        self.read_bytes += other.read_bytes;
        self.write_bytes += other.write_bytes;
        self.interrupted |= other.interrupted;
        self.windows += &other.windows;
        match (&mut self.open, &other.open) {
            (Some(a), Some(b)) => *a += b,
            (None, Some(b)) => self.open = Some(b.clone()),
            _ => {}
        }
    }
}

/// A load generator. Construction binds it to its target (an open file or device, or nothing
/// for `sim`); `run_level` runs one level and returns what it measured.
pub trait Engine {
    /// Short name for reports: "sync", "uring", "sim".
    fn name(&self) -> &str;
    fn run_level(&mut self, spec: &LevelSpec, ctl: &LevelCtl) -> crate::error::Result<LevelStats>;
    /// Cap the requests every later level issues at `iops` per second (`--rate-limit`,
    /// pace.rs); false when this engine can't pace its requests.
    fn limit_rate(&mut self, _iops: f64) -> bool {
        false
    }
}

/// Run one level on `threads` scoped worker threads (named `iosat-<engine>-<w>`) and merge what
/// they measured. Each worker gets its share of the offsets and its own seed; `worker` is the
/// engine's hot loop. The first worker I/O error is reported against `path`.
pub(crate) fn run_workers<F>(
    engine: &str,
    spec: &LevelSpec,
    threads: u32,
    size_bytes: u64,
    path: &std::path::Path,
    stack_bytes: Option<usize>,
    worker: F,
) -> crate::error::Result<LevelStats>
where
    F: Fn(workload::IoGen, u64) -> std::io::Result<LevelStats> + Sync,
{
    let worker = &worker;
    let results: Vec<std::io::Result<LevelStats>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|w| {
                let gen = workload::IoGen::new(spec, size_bytes, w, threads);
                let seed = spec.seed ^ u64::from(w);
                let mut b = std::thread::Builder::new().name(format!("iosat-{engine}-{w}"));
                if let Some(n) = stack_bytes {
                    b = b.stack_size(n);
                }
                b.spawn_scoped(s, move || worker(gen, seed))
                    .expect("spawn worker thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("worker thread panicked"))
            .collect()
    });
    let mut total = LevelStats::new();
    for r in results {
        total += &r.map_err(|e| crate::error::Error::io(path, e))?;
    }
    Ok(total)
}

pub mod disturb;
pub mod driver;
pub mod engine;
pub mod open;
pub mod pace;
pub mod plan;
pub mod result;
pub mod schedule;
pub mod sync;
pub mod target;
pub mod trust;
pub mod uring;
pub mod windows;
pub mod workload;

#[cfg(test)]
mod ctl_tests {
    use super::*;
    use std::sync::atomic::Ordering::Relaxed;

    #[test]
    fn workers_wait_for_the_driver_only_when_held() {
        let ctl = LevelCtl::default();
        let t0 = workload::now_ns();
        ctl.wait_release();
        assert!(
            workload::now_ns() - t0 < HOLD_LIMIT_NS / 2,
            "no hold: no wait"
        );
        ctl.hold.store(true, Relaxed);
        std::thread::scope(|s| {
            let w = s.spawn(|| {
                ctl.wait_release();
                ctl.released.load(Relaxed)
            });
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(!w.is_finished(), "held until released");
            ctl.released.store(true, Relaxed);
            assert!(w.join().unwrap());
        });
        // A stop releases too.
        let ctl = LevelCtl::default();
        ctl.hold.store(true, Relaxed);
        ctl.stop.store(true, Relaxed);
        ctl.wait_release();
    }
}
