//! A block device whose answers are known (issue 25): a FUSE server inside the test binary
//! serves one file, and a loop device with direct I/O over that file is a real block device in
//! /proc/diskstats and /sys/block whose units, service time, caps and flush time the test sets.
//!
//! The server: requests pass a token bucket first (an IOPS or bytes/s cap with an optional
//! burst, holding them before the units, below the block layer as a cloud volume's cap does),
//! then wait for one of U unit threads, each taking S per request (fixed, a uniform spread, or
//! bimodal like an SSD's garbage collection; seeded, so a device is the same every run). An
//! fsync (what the loop device turns a flush into) takes F in a unit. Written data is kept in
//! sparse 4 KiB blocks, so what is written reads back.
//!
//! Ground truth for a closed loop at concurrency c: latency S up to c = U, then c·S/U; IOPS
//! min(c, U)/S, or the cap; %util ~100 % from c = 1.
//!
//! Two more settings for the learner's cases (issue 37): a cost per KiB, so a request of b
//! bytes takes S + k·b/1024 (sizes a test mixes have their own truth, [`Spec::service_for`]),
//! and a step in service time ([`Step`]): from the spec's service to another after N requests
//! and/or when the test calls [`KnownDev::set_stepped`], and back on the same call.
//!
//! [`KnownDev::start`] mounts the server and attaches the loop device; drop detaches the loop
//! device, unmounts and removes the temporary directory, also when a test panics. Without
//! root or /dev/fuse it prints "skipped: ..." and returns None. Only test code imports this
//! module; it imports nothing of iosat's.

use fuser::{
    FileAttr, Filesystem, KernelConfig, ReplyAttr, ReplyData, ReplyEmpty, ReplyEntry, ReplyOpen,
    ReplyWrite, Request, TimeOrNow,
};
use std::collections::{HashMap, VecDeque};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How many known devices the test binary runs at once: `IOSAT_TEST_KNOWN_AT_ONCE`, 1 when
/// unset (a plain `cargo test` runs them one at a time). A known device's test is light: its
/// units sleep out the service time at SCHED_FIFO, and the CPU of the whole test (the FUSE
/// server, fio, iosat; a cgroup's cpuacct, each test run alone on 2026-12-02) was 4-16 % of a
/// core (the Prometheus alert test 4.9 s in 127 s, the bursty learning test 3.1 s in 38 s, the
/// open loop against fio 7.1 s in 43 s). scripts/test.sh runs those that learn from traffic
/// (its `known_lane`) five at a time in a phase of their own, where nothing heavy runs beside
/// them; those whose sweeps are checked against the truth stay one at a time.
fn at_once() -> usize {
    std::env::var("IOSAT_TEST_KNOWN_AT_ONCE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n >= 1)
        .unwrap_or(1)
}

/// The known devices running now, and their wake-up when one ends.
static RUNNING: Mutex<usize> = Mutex::new(0);
static ENDED: Condvar = Condvar::new();

/// One of the [`at_once`] places for a known device, given back on drop.
struct Place;

impl Place {
    /// Waits for a free place.
    fn take() -> Place {
        let most = at_once();
        let mut n = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        while *n >= most {
            n = ENDED.wait(n).unwrap_or_else(|e| e.into_inner());
        }
        *n += 1;
        Place
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut n = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        *n -= 1;
        ENDED.notify_one();
    }
}

/// How long one unit takes per request.
#[derive(Clone, Copy, Debug)]
pub enum Service {
    /// Always this long.
    Fixed(Duration),
    /// Uniform between the two.
    Uniform(Duration, Duration),
    /// `fast` usually; `slow` with probability `slow_per_mille`/1000 (garbage collection).
    Bimodal {
        fast: Duration,
        slow: Duration,
        slow_per_mille: u32,
    },
}

impl Service {
    /// The mean service time: the S of the ground truth.
    pub fn mean(&self) -> Duration {
        match *self {
            Service::Fixed(s) => s,
            Service::Uniform(a, b) => (a + b) / 2,
            Service::Bimodal {
                fast,
                slow,
                slow_per_mille: p,
            } => (fast * (1000 - p) + slow * p) / 1000,
        }
    }

    /// The standard deviation of one draw: a short level's mean of n draws is the mean within
    /// a few sd/√n, and a seeded device repeats its draws every run, so a test that ignored it
    /// would fail (or pass) every time on the same unlucky sequence.
    pub fn sd(&self) -> Duration {
        let var = match *self {
            Service::Fixed(_) => 0.0,
            Service::Uniform(a, b) => (b.saturating_sub(a).as_secs_f64()).powi(2) / 12.0,
            Service::Bimodal {
                fast,
                slow,
                slow_per_mille: p,
            } => {
                let p = f64::from(p) / 1000.0;
                (slow.saturating_sub(fast).as_secs_f64()).powi(2) * p * (1.0 - p)
            }
        };
        Duration::from_secs_f64(var.sqrt())
    }

    fn draw(&self, rng: &mut SplitMix) -> Duration {
        match *self {
            Service::Fixed(s) => s,
            Service::Uniform(a, b) => {
                let span = b.saturating_sub(a).as_nanos() as u64;
                a + Duration::from_nanos(if span == 0 { 0 } else { rng.next() % span })
            }
            Service::Bimodal {
                fast,
                slow,
                slow_per_mille,
            } => {
                if rng.next() % 1000 < u64::from(slow_per_mille) {
                    slow
                } else {
                    fast
                }
            }
        }
    }
}

/// What a token bucket in front of the units counts.
#[derive(Clone, Copy, Debug)]
pub enum Cap {
    /// Requests per second; `burst` requests may pass at the units' own speed first.
    Iops { per_s: f64, burst: f64 },
    /// Bytes per second; `burst` bytes may pass at the units' own speed first.
    Bytes { per_s: f64, burst: f64 },
}

/// A step in service time: the units take `to` instead of the spec's service once
/// `after_requests` reads and writes have been served (None: only when the test says so, with
/// [`KnownDev::set_stepped`]), until the test steps back. A write cliff, a failing disk, a
/// throttled volume.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub to: Service,
    pub after_requests: Option<u64>,
}

/// The device a test asks for.
#[derive(Clone, Debug)]
pub struct Spec {
    pub size_bytes: u64,
    pub units: usize,
    pub service: Service,
    /// Added to every read's and write's service per KiB of the request: S + k·size.
    pub per_kib: Duration,
    pub step: Option<Step>,
    pub cap: Option<Cap>,
    /// What an fsync of the backing file (a flush of the loop device) takes; None: at once.
    pub flush: Option<Duration>,
    pub seed: u64,
}

impl Spec {
    /// `units` units of a fixed `service` time, 64 MiB, no cap, flushes at once.
    pub fn new(units: usize, service: Duration) -> Spec {
        Spec {
            size_bytes: 64 << 20,
            units,
            service: Service::Fixed(service),
            per_kib: Duration::ZERO,
            step: None,
            cap: None,
            flush: None,
            seed: 1,
        }
    }

    pub fn service(mut self, s: Service) -> Spec {
        self.service = s;
        self
    }

    /// Service grows with size: S + `k` per KiB of the request.
    pub fn per_kib(mut self, k: Duration) -> Spec {
        self.per_kib = k;
        self
    }

    /// A step to `to` after `after_requests` requests (None: only on [`KnownDev::set_stepped`]).
    pub fn step(mut self, to: Service, after_requests: Option<u64>) -> Spec {
        self.step = Some(Step { to, after_requests });
        self
    }

    /// The mean service time of one request of `bs` bytes, before the step or after it: the S of
    /// the ground truth for that size.
    pub fn service_for(&self, bs: u64, stepped: bool) -> Duration {
        let s = match (stepped, self.step) {
            (true, Some(step)) => step.to.mean(),
            _ => self.service.mean(),
        };
        s + kib_cost(self.per_kib, bs)
    }

    pub fn cap(mut self, c: Cap) -> Spec {
        self.cap = Some(c);
        self
    }

    pub fn flush(mut self, f: Duration) -> Spec {
        self.flush = Some(f);
        self
    }

    /// The truth for a closed loop of `c` requests of `bs` bytes in flight, in IOPS: the units'
    /// min(c, U)/S, or the cap when that is lower (its sustained rate, past any burst).
    pub fn true_iops(&self, c: u32, bs: u64) -> f64 {
        let units = c.min(self.units as u32) as f64 / self.service_for(bs, false).as_secs_f64();
        match self.cap {
            None => units,
            Some(Cap::Iops { per_s, .. }) => units.min(per_s),
            Some(Cap::Bytes { per_s, .. }) => units.min(per_s / bs as f64),
        }
    }

    /// The concurrency from which the sustained IOPS stop growing: U, or cap × S when a cap is
    /// reached first.
    pub fn true_knee(&self, bs: u64) -> f64 {
        let s = self.service_for(bs, false).as_secs_f64();
        let top = self.true_iops(u32::MAX, bs);
        (top * s).min(self.units as f64)
    }
}

/// `k` per KiB of `bytes` (a fraction of a KiB costs its fraction).
fn kib_cost(k: Duration, bytes: u64) -> Duration {
    Duration::from_nanos((k.as_nanos() as u64).saturating_mul(bytes) / 1024)
}

/// Where a step stands, shared by the units and the test: whether the units are stepped, and how
/// many requests they have taken (the count that triggers a step after N).
#[derive(Default)]
struct StepState {
    stepped: AtomicBool,
    taken: AtomicU64,
}

impl StepState {
    /// Count one request and say whether it is served stepped. The step after N happens once,
    /// on the N-th request: a test that steps back stays back.
    fn take_one(&self, step: &Option<Step>) -> bool {
        let n = self.taken.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(Step {
            after_requests: Some(after),
            ..
        }) = step
        {
            if n == *after {
                self.stepped.store(true, Ordering::SeqCst);
            }
        }
        self.stepped.load(Ordering::SeqCst)
    }
}

/// splitmix64: a seeded generator, so a device draws the same service times every run. The same
/// eight lines as the sim engine's on purpose: the known device shares no code with iosat, whose
/// ideas of a device it is there to check.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

const BLOCK: u64 = 4096;
use super::fuse::ROOT_INO;
const DISK_INO: u64 = 2;
const DISK_NAME: &str = "disk";
const TTL: Duration = Duration::from_secs(3600);

/// Written data, in sparse 4 KiB blocks (a block never written reads as zeros).
#[derive(Default)]
struct Blocks(HashMap<u64, Box<[u8]>>);

impl Blocks {
    fn read(&self, off: u64, len: usize) -> Vec<u8> {
        let mut out = vec![0u8; len];
        let mut pos = 0usize;
        while pos < len {
            let at = off + pos as u64;
            let (blk, inner) = (at / BLOCK, (at % BLOCK) as usize);
            let n = (BLOCK as usize - inner).min(len - pos);
            if let Some(b) = self.0.get(&blk) {
                out[pos..pos + n].copy_from_slice(&b[inner..inner + n]);
            }
            pos += n;
        }
        out
    }

    fn write(&mut self, off: u64, data: &[u8]) {
        let mut pos = 0usize;
        while pos < data.len() {
            let at = off + pos as u64;
            let (blk, inner) = (at / BLOCK, (at % BLOCK) as usize);
            let n = (BLOCK as usize - inner).min(data.len() - pos);
            let b = self
                .0
                .entry(blk)
                .or_insert_with(|| vec![0u8; BLOCK as usize].into_boxed_slice());
            b[inner..inner + n].copy_from_slice(&data[pos..pos + n]);
            pos += n;
        }
    }
}

/// One request on its way to a unit; the reply goes back from the unit thread.
enum Job {
    Read {
        off: u64,
        len: usize,
        reply: ReplyData,
    },
    Write {
        off: u64,
        data: Vec<u8>,
        reply: ReplyWrite,
    },
    Fsync {
        reply: ReplyEmpty,
    },
}

impl Job {
    fn bytes(&self) -> u64 {
        match self {
            Job::Read { len, .. } => *len as u64,
            Job::Write { data, .. } => data.len() as u64,
            Job::Fsync { .. } => 0,
        }
    }
}

/// A token bucket: `per_s` tokens a second up to `capacity`, started full. Tokens are a
/// function of the time elapsed (not of sleeps), so a late wake-up loses none.
struct Bucket {
    per_s: f64,
    capacity: f64,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// Wait until `cost` tokens are there and take them. `backlog`: the request was already
    /// waiting when the last one was let through, so the time since then was spent waiting
    /// for tokens, not idle: what a late wake-up of this thread let accrue is owed to the
    /// waiting requests and kept (a host that steals the vCPU for milliseconds otherwise cut
    /// a 1,000 IOPS cap to 931-934 IOPS); only idle time is held to the capacity (the burst).
    fn take(&mut self, cost: f64, backlog: bool) {
        loop {
            let now = Instant::now();
            let accrued = self.tokens + now.duration_since(self.at).as_secs_f64() * self.per_s;
            self.tokens = if backlog {
                accrued
            } else {
                accrued.min(self.capacity)
            };
            self.at = now;
            if self.tokens >= cost {
                self.tokens -= cost;
                return;
            }
            std::thread::sleep(Duration::from_secs_f64((cost - self.tokens) / self.per_s));
        }
    }
}

/// The FUSE side: answers metadata at once and hands reads, writes and fsyncs to the gate (or
/// straight to the units when there is no cap).
struct Server {
    size_bytes: u64,
    queue: Sender<Job>,
    flush_at_once: bool,
}

fn attr(ino: u64, size: u64) -> FileAttr {
    super::fuse::attr(ino, size, 0o600, SystemTime::UNIX_EPOCH)
}

impl Filesystem for Server {
    fn init(&mut self, _req: &Request<'_>, config: &mut KernelConfig) -> Result<(), libc::c_int> {
        // This runs on the session thread, which reads every request from /dev/fuse.
        precise_sleeps();
        // A loop device with direct I/O submits async direct I/O; without FUSE_ASYNC_DIO the
        // kernel would do each request synchronously, one at a time. Those requests count as
        // FUSE "background" requests, limited by max_background (12 by default): raise it so
        // 256 requests in flight reach the units.
        config
            .add_capabilities(fuser::consts::FUSE_ASYNC_DIO)
            .map_err(|_| libc::ENOSYS)?;
        let _ = config.set_max_background(512);
        let _ = config.set_congestion_threshold(512);
        // One 4 KiB request is one FUSE request, and so is a 1 MiB one.
        let _ = config.set_max_write(1 << 20);
        Ok(())
    }

    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        if parent == ROOT_INO && name == DISK_NAME {
            reply.entry(&TTL, &attr(DISK_INO, self.size_bytes), 0);
        } else {
            reply.error(libc::ENOENT);
        }
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        match ino {
            ROOT_INO | DISK_INO => reply.attr(&TTL, &attr(ino, self.size_bytes)),
            _ => reply.error(libc::ENOENT),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        // The size is the device's: it never changes.
        if size.is_some_and(|s| s != self.size_bytes) {
            reply.error(libc::EPERM);
        } else {
            reply.attr(&TTL, &attr(ino, self.size_bytes));
        }
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, _flags: i32, reply: ReplyOpen) {
        if ino == DISK_INO {
            reply.opened(0, 0);
        } else {
            reply.error(libc::EISDIR);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn read(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        _fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock: Option<u64>,
        reply: ReplyData,
    ) {
        let off = offset as u64;
        let len = (size as u64).min(self.size_bytes.saturating_sub(off)) as usize;
        let _ = self.queue.send(Job::Read { off, len, reply });
    }

    #[allow(clippy::too_many_arguments)]
    fn write(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        _fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock: Option<u64>,
        reply: ReplyWrite,
    ) {
        let off = offset as u64;
        if off + data.len() as u64 > self.size_bytes {
            reply.error(libc::ENOSPC);
            return;
        }
        let data = data.to_vec();
        let _ = self.queue.send(Job::Write { off, data, reply });
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _lock: u64, reply: ReplyEmpty) {
        // close(2), not a device flush.
        reply.ok();
    }

    fn fsync(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        _fh: u64,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        if self.flush_at_once {
            reply.ok();
        } else {
            let _ = self.queue.send(Job::Fsync { reply });
        }
    }
}

/// Sleeps of this thread end within a microsecond of their time rather than the default 50 µs
/// timer slack, and its wake-ups run at once (real-time priority 1) rather than behind the
/// compilers of a busy 2-core machine: either would lengthen every service time. The device's
/// threads only sleep, copy a request and reply, so they cannot starve the machine.
pub fn precise_sleeps() {
    // SAFETY: PR_SET_TIMERSLACK takes a value and touches no memory of ours.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0) };
    let p = libc::sched_param { sched_priority: 1 };
    // SAFETY: `p` is a valid sched_param for the call's duration; 0 names this thread. Without
    // the privilege it fails and the thread keeps the normal policy.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) };
}

/// The units: U threads taking jobs from one queue, each job `service` (or the step's, plus the
/// per-KiB cost; or the flush time) long.
fn start_units(spec: &Spec, data: Arc<Mutex<Blocks>>, step: Arc<StepState>) -> Sender<Job> {
    let (tx, rx) = channel::<Job>();
    let rx = Arc::new(Mutex::new(rx));
    for u in 0..spec.units {
        let (rx, data, state) = (Arc::clone(&rx), Arc::clone(&data), Arc::clone(&step));
        let (service, per_kib, step) = (spec.service, spec.per_kib, spec.step);
        let flush = spec.flush.unwrap_or_default();
        let mut rng = SplitMix(spec.seed.wrapping_mul(1000).wrapping_add(u as u64));
        std::thread::spawn(move || loop {
            precise_sleeps();
            let job = match rx.lock().unwrap().recv() {
                Ok(j) => j,
                Err(_) => return, // the server is gone
            };
            let start = Instant::now();
            let took = match job {
                Job::Fsync { .. } => flush,
                _ => {
                    let s = match (state.take_one(&step), step) {
                        (true, Some(st)) => st.to.draw(&mut rng),
                        _ => service.draw(&mut rng),
                    };
                    s + kib_cost(per_kib, job.bytes())
                }
            };
            // The data moves at the start; the reply goes at the end of the service time.
            let done = match job {
                Job::Read { off, len, reply } => {
                    let bytes = data.lock().unwrap().read(off, len);
                    Box::new(move || reply.data(&bytes)) as Box<dyn FnOnce()>
                }
                Job::Write {
                    off,
                    data: d,
                    reply,
                } => {
                    data.lock().unwrap().write(off, &d);
                    Box::new(move || reply.written(d.len() as u32))
                }
                Job::Fsync { reply } => Box::new(move || reply.ok()),
            };
            if let Some(left) = took.checked_sub(start.elapsed()) {
                std::thread::sleep(left);
            }
            done();
        });
    }
    tx
}

/// The gate: one thread that passes jobs, in order, to the units as the bucket allows.
fn start_gate(cap: Cap, units: Sender<Job>) -> Sender<Job> {
    let (tx, rx) = channel::<Job>();
    let (per_s, burst, per_byte) = match cap {
        Cap::Iops { per_s, burst } => (per_s, burst, false),
        Cap::Bytes { per_s, burst } => (per_s, burst, true),
    };
    // Room for two requests besides the burst, so a late wake-up carries its tokens over.
    let slack = if per_byte { 2.0 * 65536.0 } else { 2.0 };
    let mut bucket = Bucket {
        per_s,
        capacity: burst + slack,
        tokens: burst + slack,
        at: Instant::now(),
    };
    std::thread::spawn(move || {
        precise_sleeps();
        let rx: Receiver<Job> = rx;
        let mut pending = VecDeque::new();
        while let Ok(job) = rx.recv() {
            pending.push_back(job);
            // The first job after an empty queue ends idle time; the ones after it waited.
            let mut backlog = false;
            while let Some(job) = pending.pop_front() {
                if !matches!(job, Job::Fsync { .. }) {
                    bucket.take(if per_byte { job.bytes() as f64 } else { 1.0 }, backlog);
                    backlog = true;
                }
                if units.send(job).is_err() {
                    return;
                }
                pending.extend(rx.try_iter());
            }
        }
    });
    tx
}

/// A known device: the FUSE mount, the loop device over its file, the temporary directory.
pub struct KnownDev {
    pub spec: Spec,
    /// `/dev/loopN`.
    pub path: String,
    /// The loop device's undoing if the run is interrupted (support::reap; the mount has its
    /// own, run after this one).
    _reap: Option<super::reap::Held>,
    /// The FUSE server's mount; taken down on drop after the loop device.
    mount: super::fuse::Mount,
    step: Arc<StepState>,
    /// Where [`KnownDev::mount_ext4`] mounted the device, unmounted on drop.
    ext4: Option<PathBuf>,
    /// Dropped last: the device is gone (loop detached, unmounted) before another starts.
    _place: Place,
}

/// Whether known devices can be had here (root, /dev/fuse); prints "skipped: ..." when not.
pub use super::fuse::available;

/// The device the fio comparisons use, four units of 2 ms, when fio and known devices can be
/// had here; None after saying why not.
pub fn four_units_of_2ms_and_fio() -> Option<KnownDev> {
    if !crate::util::have("fio", "--version") {
        crate::util::skip("fio is not installed");
        return None;
    }
    if !available() {
        return None;
    }
    KnownDev::start(Spec::new(4, Duration::from_millis(2)))
}

impl KnownDev {
    /// Mount the server and attach a loop device with direct I/O over its file; None (after
    /// printing why) when this machine can't.
    pub fn start(spec: Spec) -> Option<KnownDev> {
        if !available() {
            return None;
        }
        let place = Place::take();
        let data = Arc::new(Mutex::new(Blocks::default()));
        let step = Arc::new(StepState::default());
        let units = start_units(&spec, data, Arc::clone(&step));
        let queue = match spec.cap {
            Some(c) => start_gate(c, units),
            None => units,
        };
        let server = Server {
            size_bytes: spec.size_bytes,
            queue,
            flush_at_once: spec.flush.is_none(),
        };
        let mount = super::fuse::Mount::new(server, "iosat-knowndev")?;
        let mut dev = KnownDev {
            spec,
            path: String::new(),
            _reap: None,
            mount,
            step,
            ext4: None,
            _place: place,
        };
        let file = dev.mount.path().join(DISK_NAME);
        let out = Command::new("losetup")
            .args(["--direct-io=on", "--show", "-f"])
            .arg(&file)
            .output()
            .expect("run losetup");
        assert!(
            out.status.success(),
            "losetup --direct-io=on over {}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        dev.path = String::from_utf8(out.stdout).unwrap().trim().to_string();
        let p = dev.path.clone();
        dev._reap = Some(super::reap::on_interrupt("a known device", move || {
            // Its ext4 (mount_ext4) first, then the loop device itself.
            super::reap::unmount_from(&p);
            super::reap::detach_loop(&p);
        }));
        let dio = std::fs::read_to_string(format!("/sys/block/{}/loop/dio", dev.name()));
        assert_eq!(
            dio.as_deref().map(str::trim).ok(),
            Some("1"),
            "{}: direct I/O did not turn on, the page cache would answer",
            dev.path
        );
        // udev probes a new block device (blkid reads its first and last blocks): let it finish
        // before the test's requests share the units with it, and count requests from there.
        let _ = Command::new("udevadm")
            .args(["settle", "--timeout=5"])
            .status();
        dev.step.taken.store(0, Ordering::SeqCst);
        Some(dev)
    }

    /// Step the units to the spec's [`Step`] (true) or back to its service (false), from the
    /// next request a unit takes; a request in service keeps its time. Panics without a step in
    /// the spec: the test would measure a device it did not ask for.
    pub fn set_stepped(&self, stepped: bool) {
        assert!(
            self.spec.step.is_some(),
            "set_stepped on a device without a step"
        );
        self.step.stepped.store(stepped, Ordering::SeqCst);
    }

    /// Whether the units are stepped now (after N requests, or as the test set it).
    pub fn stepped(&self) -> bool {
        self.step.stepped.load(Ordering::SeqCst)
    }

    /// How many reads and writes the units have taken so far.
    pub fn requests_taken(&self) -> u64 {
        self.step.taken.load(Ordering::SeqCst)
    }

    /// `loopN`, as /proc/diskstats names it.
    pub fn name(&self) -> &str {
        self.path.trim_start_matches("/dev/")
    }

    /// The temporary directory of its FUSE mount (and of [`KnownDev::mount_ext4`]'s).
    pub fn dir(&self) -> &Path {
        self.mount.dir()
    }

    /// ext4 without a journal on the device, mounted with lazytime in the temporary directory
    /// until drop: an fdatasync of a file rewritten in place is then exactly its data write and
    /// one flush (without lazytime the new mtime puts the inode's table block on the file's
    /// list of buffers to write, one more write per commit).
    /// The inode tables are written by mkfs, not by a kernel thread after the mount whose
    /// writes would queue before the test's on the device's units.
    pub fn mount_ext4(&mut self) -> PathBuf {
        let st = Command::new("mkfs.ext4")
            .args(["-q", "-F", "-O", "^has_journal"])
            .args(["-E", "nodiscard,lazy_itable_init=0,lazy_journal_init=0"])
            .arg(&self.path)
            .status()
            .expect("run mkfs.ext4");
        assert!(st.success(), "mkfs.ext4 {}", self.path);
        let at = self.mount.dir().join("ext4");
        std::fs::create_dir(&at).unwrap();
        let st = Command::new("mount")
            .args(["-o", "lazytime"])
            .arg(&self.path)
            .arg(&at)
            .status()
            .expect("run mount");
        assert!(st.success(), "mount {} on {}", self.path, at.display());
        self.ext4 = Some(at.clone());
        at
    }
}

impl Drop for KnownDev {
    fn drop(&mut self) {
        if let Some(at) = self.ext4.take() {
            let _ = Command::new("umount").arg(&at).status();
        }
        if !self.path.is_empty() {
            let _ = Command::new("losetup").args(["-d", &self.path]).status();
            // The loop device lets go of its backing file asynchronously: until it has, the
            // mount is busy.
            let backing = format!("/sys/block/{}/loop/backing_file", self.name());
            let t0 = Instant::now();
            while Path::new(&backing).exists() && t0.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        // The mount goes next (a field): unmounted, the session thread's read of /dev/fuse
        // ends, the server drops its queue and the units and gate threads end with it.
    }
}

#[test]
fn blocks_read_back_what_was_written_across_block_edges() {
    let mut b = Blocks::default();
    assert_eq!(b.read(100, 8), vec![0; 8], "never written reads as zeros");
    let data: Vec<u8> = (0..9000u32).map(|i| (i % 251) as u8).collect();
    b.write(4000, &data);
    assert_eq!(b.read(4000, 9000), data);
    assert_eq!(b.read(3990, 12)[..10], [0; 10]);
    assert_eq!(b.0.len(), 4, "blocks 0..=3 touched, no more");
}

#[test]
fn the_truth_of_a_spec() {
    let ms = Duration::from_millis;
    let s = Spec::new(4, ms(2));
    assert_eq!(s.true_iops(1, 4096), 500.0);
    assert_eq!(s.true_iops(16, 4096), 2000.0);
    assert_eq!(s.true_knee(4096), 4.0);
    let capped = Spec::new(4, ms(2)).cap(Cap::Iops {
        per_s: 1000.0,
        burst: 0.0,
    });
    assert_eq!(capped.true_iops(16, 4096), 1000.0);
    assert_eq!(capped.true_knee(4096), 2.0);
    let bw = Spec::new(8, ms(8)).cap(Cap::Bytes {
        per_s: 4096.0 * 500.0,
        burst: 1e6,
    });
    assert_eq!(
        bw.true_iops(64, 4096),
        500.0,
        "the bandwidth over the request size"
    );
    assert_eq!(bw.true_iops(64, 8192), 250.0);
    assert_eq!(bw.true_knee(4096), 4.0);
    let bimodal = Service::Bimodal {
        fast: ms(1),
        slow: ms(11),
        slow_per_mille: 100,
    };
    assert_eq!(bimodal.mean(), ms(2));
    // 10 ms apart, one in ten: sd = 10 * sqrt(0.1 * 0.9) = 3 ms.
    assert!((bimodal.sd().as_secs_f64() * 1e3 - 3.0).abs() < 1e-9);
    assert_eq!(Service::Fixed(ms(2)).sd(), Duration::ZERO);
    let mut rng = SplitMix(7);
    let slow = (0..10_000)
        .filter(|_| bimodal.draw(&mut rng) == ms(11))
        .count();
    assert!((900..1100).contains(&slow), "{slow} slow of 10000");
    let spread = Service::Uniform(ms(6), ms(10));
    assert_eq!(spread.mean(), ms(8));
    let draws: Vec<Duration> = (0..1000).map(|_| spread.draw(&mut rng)).collect();
    assert!(draws.iter().all(|d| (ms(6)..ms(10)).contains(d)));
    let mean = draws.iter().sum::<Duration>() / 1000;
    assert!((ms(7)..ms(9)).contains(&mean), "{mean:?}");
}

#[test]
fn the_truth_of_a_per_kib_cost_and_a_step() {
    let ms = Duration::from_millis;
    let s = Spec::new(4, ms(2))
        .per_kib(Duration::from_micros(30))
        .step(Service::Fixed(ms(8)), Some(3));
    assert_eq!(s.service_for(4096, false), Duration::from_micros(2120));
    assert_eq!(s.service_for(65536, false), Duration::from_micros(3920));
    assert_eq!(s.service_for(4096, true), Duration::from_micros(8120));
    assert_eq!(s.service_for(512, false), Duration::from_micros(2015));
    assert_eq!(s.true_iops(1, 65536), 1.0 / 3.92e-3);
    let st = StepState::default();
    let taken: Vec<bool> = (0..5).map(|_| st.take_one(&s.step)).collect();
    assert_eq!(
        taken,
        [false, false, true, true, true],
        "stepped from the 3rd"
    );
    st.stepped.store(false, Ordering::SeqCst);
    assert!(!st.take_one(&s.step), "stepped back stays back");
    let by_call = StepState::default();
    let never = Some(Step {
        to: Service::Fixed(ms(8)),
        after_requests: None,
    });
    assert!((0..100).all(|_| !by_call.take_one(&never)));
}

/// The 10th percentile of the times of `n` O_DIRECT reads of `bs` bytes one at a time, in ms.
/// No read is shorter than the device's service (a unit sleeps no shorter); a read whose wake-up
/// waited behind a busy machine's compilers is several ms longer, so the low percentile is the
/// device's own time plus the path's overhead.
fn low_read_ms(path: &str, bs: usize, n: u32) -> f64 {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .unwrap();
    let mut raw = vec![0u8; bs + 4096];
    let off = raw.as_ptr().align_offset(4096);
    let buf = &mut raw[off..off + bs];
    let mut took: Vec<f64> = (0..n)
        .map(|i| {
            let t = Instant::now();
            f.read_at(buf, u64::from(i) * bs as u64).unwrap();
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    took.sort_by(f64::total_cmp);
    eprintln!("{bs} B: {took:.2?}");
    took[took.len() / 10]
}

#[test]
fn a_step_after_n_requests_and_on_call_and_a_per_kib_cost_answer_as_set() {
    let ms = Duration::from_millis;
    let spec = Spec::new(1, ms(2))
        .per_kib(Duration::from_micros(30))
        .step(Service::Fixed(ms(8)), Some(50));
    let Some(dev) = KnownDev::start(spec) else {
        return;
    };
    precise_sleeps();
    // Each is at least the set service and within the path's overhead of it (FUSE, the loop
    // device's worker; ~0.1-0.5 ms). This thread's wake-ups at real-time priority, as the units'.
    let near = |got: f64, set: Duration, what: &str| {
        let set = set.as_secs_f64() * 1e3;
        assert!(
            (set..set + 1.5).contains(&got),
            "{what}: {got:.3} ms against {set:.3} ms set"
        );
    };
    let at_4k = low_read_ms(&dev.path, 4096, 20);
    near(
        at_4k,
        dev.spec.service_for(4096, false),
        "4 KiB before the step",
    );
    let at_64k = low_read_ms(&dev.path, 65536, 20);
    near(
        at_64k,
        dev.spec.service_for(65536, false),
        "64 KiB before the step",
    );
    assert!(!dev.stepped(), "40 of 50 requests taken");
    low_read_ms(&dev.path, 4096, 10);
    assert!(dev.stepped(), "stepped on the 50th request");
    assert_eq!(dev.requests_taken(), 50);
    near(
        low_read_ms(&dev.path, 4096, 20),
        dev.spec.service_for(4096, true),
        "stepped",
    );
    dev.set_stepped(false);
    near(
        low_read_ms(&dev.path, 4096, 20),
        dev.spec.service_for(4096, false),
        "back",
    );
    dev.set_stepped(true);
    near(
        low_read_ms(&dev.path, 4096, 10),
        dev.spec.service_for(4096, true),
        "on call",
    );
}
