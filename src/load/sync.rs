//! The `sync` engine: N threads, each with exactly one pread/pwrite in flight (sysbench
//! `--file-io-mode=sync`), paced by pace.rs under `--rate-limit`. Owns its threads for the
//! length of a level.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/.

use super::pace::Pacer;
use super::windows::WindowClock;
use super::workload::{now_ns, random_buf, IoGen, Window};
use super::{run_workers, Engine, LevelCtl, LevelSpec, LevelStats};
use crate::error::Result;
use std::os::fd::RawFd;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;

/// Pread/pwrite threads on one open target. The file descriptor stays owned by the caller
/// (the target), which outlives the engine.
pub struct SyncEngine {
    fd: RawFd,
    size_bytes: u64,
    path: PathBuf,
    /// `--rate-limit`: requests per second over all threads (pace.rs); None: as fast as the
    /// device answers.
    rate_limit_iops: Option<f64>,
}

impl SyncEngine {
    pub fn new(fd: RawFd, size_bytes: u64, path: PathBuf) -> SyncEngine {
        SyncEngine {
            fd,
            size_bytes,
            path,
            rate_limit_iops: None,
        }
    }
}

impl Engine for SyncEngine {
    fn name(&self) -> &str {
        "sync"
    }

    fn limit_rate(&mut self, iops: f64) -> bool {
        self.rate_limit_iops = Some(iops);
        true
    }

    fn run_level(&mut self, spec: &LevelSpec, ctl: &LevelCtl) -> Result<LevelStats> {
        // One request in flight per thread: the level's concurrency is its thread count.
        let threads = spec.concurrency().max(1);
        let window = Window::starting_now(spec);
        let (fd, bs) = (self.fd, spec.block_size as usize);
        let pacer = self.rate_limit_iops.and_then(|r| Pacer::new(r, now_ns()));
        let pacer = pacer.as_ref();
        run_workers(
            "sync",
            spec,
            threads,
            self.size_bytes,
            &self.path,
            Some(256 * 1024),
            |gen, seed| {
                let r = worker(fd, bs, seed, gen, window, ctl, pacer);
                ctl.wait_release();
                r
            },
        )
    }
}

/// Completed I/Os a worker counts locally before adding them to the shared progress counter.
pub(crate) const PUBLISH_EVERY: u64 = 256;

/// One pread or pwrite of `bs` bytes at `io.offset`, the sync engine's request (shared with the
/// open loop, load/open/); a short transfer is an error naming the offset.
///
/// # Safety
/// `ptr` must point to `bs` writable bytes (aligned for O_DIRECT) that stay alive for the call;
/// `fd` must be open (the target outlives the engines).
#[inline]
pub(crate) unsafe fn transfer(
    fd: RawFd,
    ptr: *mut u8,
    bs: usize,
    io: super::workload::Io,
) -> std::io::Result<()> {
    // SAFETY: as the caller promises.
    let n = unsafe {
        if io.is_read {
            libc::pread(fd, ptr.cast(), bs, io.offset as libc::off_t)
        } else {
            libc::pwrite(fd, ptr.cast(), bs, io.offset as libc::off_t)
        }
    };
    if n == bs as isize {
        return Ok(());
    }
    Err(if n < 0 {
        std::io::Error::last_os_error()
    } else {
        std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("short transfer at offset {}: {n} of {bs} bytes", io.offset),
        )
    })
}

/// The hot loop: draw an offset, read the clock, one syscall, read the clock, record. Two clock
/// reads per I/O, no allocation, no lock, no print.
fn worker(
    fd: RawFd,
    bs: usize,
    seed: u64,
    mut gen: IoGen,
    window: Window,
    ctl: &LevelCtl,
    pacer: Option<&Pacer>,
) -> std::io::Result<LevelStats> {
    let mut st = LevelStats::new();
    let mut buf = random_buf(bs, seed);
    let ptr = buf.as_mut_ptr();
    let mut last_ns = 0u64;
    let mut counted = 0u64;
    // Progress is published in batches so 256 threads don't fight over one cache line.
    let mut unpublished = 0u64;
    let mut clock = WindowClock::new(
        window.measure_from_ns,
        window.end_ns - window.measure_from_ns,
    );
    loop {
        if ctl.stop.load(Relaxed) {
            st.interrupted = true;
            break;
        }
        if let Some(p) = pacer {
            p.wait();
        }
        let io = gen.next_io();
        let t0 = now_ns();
        // SAFETY: `ptr` points to `bs` bytes owned by `buf`, aligned to 4096, alive for the
        // whole loop.
        unsafe { transfer(fd, ptr, bs, io) }?;
        let t1 = now_ns();
        // Counted by completion time, as the kernel's counters are: the completions inside
        // [measure_from, end), whenever they were submitted.
        if t1 >= window.measure_from_ns && t1 < window.end_ns {
            counted += 1;
            last_ns = t1;
            st.count(clock.index(t1), t1 - t0, io.is_read, bs as u64);
            unpublished += 1;
            if unpublished == PUBLISH_EVERY {
                ctl.ops_done.fetch_add(unpublished, Relaxed);
                unpublished = 0;
            }
        }
        if t1 >= window.end_ns {
            break;
        }
    }
    ctl.ops_done.fetch_add(unpublished, Relaxed);
    st.elapsed_ns = super::workload::measured_ns(&window, counted, last_ns, st.interrupted);
    Ok(st)
}
