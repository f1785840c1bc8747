//! The `uring` engine: io_uring, threads × queue depth, batched submission and reaping, registered
//! file, buffers and ring fd; the ring's set-up ([`RING_MODE`]) and submission batch
//! ([`SUBMIT_BATCH`]) as measured against fio. Owns its rings for the length of a level.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/.
//!
//! The hot loop is an explicit state machine over a fixed array of slots (docs/design.md §3.10,
//! after fio's t/io_uring.c): the slot index travels in `user_data`; nothing is allocated after the
//! ring is set up; the clock is read once before each submit and once after each wait, so an I/O
//! costs at most two clock reads (fewer when batches hold several); `io_uring_enter` is issued
//! inline in the loop ([`crate::sys::enter`]). [`Tuning`] varies the loop for experiments
//! (`$IOSAT_URING_TUNING`); a sweep's defaults are [`Tuning::default`].

use super::windows::WindowClock;
use super::workload::{now_ns, random_buf, IoGen, Window};
use super::{run_workers, Engine, LevelCtl, LevelSpec, LevelStats};
use crate::error::Result;
use io_uring::{opcode, squeue, types, IoUring};
use std::os::fd::RawFd;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;

/// Why io_uring can't be used here (kernel without it, `kernel.io_uring_disabled`, seccomp),
/// or None when a ring with a registered file and fixed-buffer reads and writes works.
pub fn probe(fd: RawFd) -> Option<String> {
    let ring = match IoUring::new(2) {
        Ok(r) => r,
        Err(e) => return Some(format!("io_uring unavailable ({e})")),
    };
    let mut p = io_uring::Probe::new();
    if let Err(e) = ring.submitter().register_probe(&mut p) {
        return Some(format!("io_uring probe failed ({e})"));
    }
    for (code, name) in [
        (opcode::ReadFixed::CODE, "READ_FIXED"),
        (opcode::WriteFixed::CODE, "WRITE_FIXED"),
    ] {
        if !p.is_supported(code) {
            return Some(format!("io_uring lacks {name}"));
        }
    }
    if let Err(e) = ring.submitter().register_files(&[fd]) {
        return Some(format!("io_uring can't register the file ({e})"));
    }
    None
}

pub struct UringEngine {
    fd: RawFd,
    size_bytes: u64,
    path: PathBuf,
    tuning: Tuning,
}

impl UringEngine {
    /// Call [`probe`] first; this assumes io_uring works.
    pub fn new(fd: RawFd, size_bytes: u64, path: PathBuf, tuning: Tuning) -> UringEngine {
        UringEngine {
            fd,
            size_bytes,
            path,
            tuning,
        }
    }
}

impl Engine for UringEngine {
    fn name(&self) -> &str {
        "uring"
    }

    fn run_level(&mut self, spec: &LevelSpec, ctl: &LevelCtl) -> Result<LevelStats> {
        let threads = spec.threads.max(1);
        let depth = spec.queue_depth.max(1);
        let window = Window::starting_now(spec);
        let (fd, bs, tuning) = (self.fd, spec.block_size as usize, self.tuning);
        run_workers(
            "uring",
            spec,
            threads,
            self.size_bytes,
            &self.path,
            None,
            |gen, seed| {
                let r = worker(fd, bs, depth, &tuning, seed, gen, window, ctl);
                ctl.wait_release();
                r
            },
        )
    }
}

/// How a worker's ring runs completion work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingMode {
    /// SINGLE_ISSUER + DEFER_TASKRUN (6.1+): completion work waits for our own next wait.
    DeferTaskrun,
    /// COOP_TASKRUN: completions are posted as they arrive, without an interrupt.
    CoopTaskrun,
}

/// The ring set-up at every depth: SINGLE_ISSUER + DEFER_TASKRUN, as fio 3.33 sets up its
/// rings (kernels without it get COOP_TASKRUN, then a plain ring).
///
/// Measured on the development VM (virtio disk, kernel 6.18), 4 KiB random direct reads, fio
/// and iosat interleaved in one run, 7 repeats of 3 s (`bench/uring_tuning.sh`, 19:32 UTC,
/// with [`SUBMIT_BATCH`] 4): at depth 16 DEFER_TASKRUN gave 1.002 of fio's IOPS against
/// COOP_TASKRUN's 0.964, at depth 64 1.046 against 1.004, at the same CPU per I/O. (An earlier
/// measurement that favoured COOP_TASKRUN from depth 8 was taken with every prepared request
/// submitted in one enter, whose cost hid this difference.)
pub const RING_MODE: RingMode = RingMode::DeferTaskrun;

/// At most this many requests go into one submitting `io_uring_enter`: the refills after a
/// reap are submitted in parts of 4, the last part with the wait.
///
/// Submitting a whole reaped batch at once (up to the depth) holds its first request back
/// until the kernel has prepared the last, and io_uring plugs batches of more than two, so the
/// device sees them together; fio submits each request on its own (its default
/// `iodepth_batch_submit=1`), at the cost of one system call per request. Measured as above
/// (19:20 UTC, 5 repeats, fio = 1): iosat with everything in one enter 0.867 of fio's IOPS at
/// depth 16 and 0.936 at 64; with parts of 1: 0.947 and 1.023 at 0.71-0.77x fio's CPU per
/// I/O; of 4: 0.992 and 0.976 at 0.55-0.61x; of 8: 1.011 and 1.002 at 0.54-0.65x. Four is
/// the smallest part that keeps CPU per I/O near 0.6x fio's. Depths up to 4 are unchanged.
/// When a part's requests complete inline (page-cache hits: their completions are posted
/// before the submit returns), the rest of the round goes in one enter, as before, and so do
/// the next rounds but every 32nd (`PROBE_EVERY`), which is split again to see whether they
/// still complete inline.
pub const SUBMIT_BATCH: u32 = 4;

/// While requests complete inline, one round in this many is submitted in parts again.
const PROBE_EVERY: u32 = 32;

/// The engine's loop parameters, for experiments against fio and t/io_uring
/// (`bench/uring_tuning.sh`): the defaults are what a sweep uses. Set through the environment
/// variable [`TUNING_ENV`] as comma-separated `key=value` pairs:
/// `submit_batch=N` (requests per `io_uring_enter` that submits; default [`SUBMIT_BATCH`];
/// fio's default is 1, t/io_uring submits every prepared one at once), `wait=N` (completions a
/// wait asks for before the queue is refilled; default 1, like fio; t/io_uring waits for its
/// batch), `mode=defer|coop` (the ring set-up at every depth; default [`RING_MODE`]),
/// `fixed_bufs=0|1` (registered buffers, READ_FIXED/WRITE_FIXED; default 1, like t/io_uring;
/// fio's `fixedbufs` is off by default) and `fixed_file=0|1` (the file by its registered index;
/// default 1, like t/io_uring; fio's `registerfiles` is off by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    pub submit_batch: u32,
    pub wait: u32,
    pub mode: RingMode,
    pub fixed_bufs: bool,
    pub fixed_file: bool,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            submit_batch: SUBMIT_BATCH,
            wait: 1,
            mode: RING_MODE,
            fixed_bufs: true,
            fixed_file: true,
        }
    }
}

/// The environment variable [`Tuning`] is read from.
pub const TUNING_ENV: &str = "IOSAT_URING_TUNING";

impl std::str::FromStr for Tuning {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Tuning, String> {
        let mut t = Tuning::default();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| format!("'{pair}' is not key=value"))?;
            let count = || {
                v.parse::<u32>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("{k} wants a positive whole number, not '{v}'"))
            };
            let flag = || match v {
                "0" => Ok(false),
                "1" => Ok(true),
                _ => Err(format!("{k} is 0 or 1, not '{v}'")),
            };
            match k {
                "submit_batch" => t.submit_batch = count()?,
                "wait" => t.wait = count()?,
                "mode" => {
                    t.mode = match v {
                        "defer" => RingMode::DeferTaskrun,
                        "coop" => RingMode::CoopTaskrun,
                        _ => return Err(format!("mode is defer or coop, not '{v}'")),
                    }
                }
                "fixed_bufs" => t.fixed_bufs = flag()?,
                "fixed_file" => t.fixed_file = flag()?,
                _ => {
                    return Err(format!(
                        "unknown key '{k}' (submit_batch, wait, mode, fixed_bufs, fixed_file)"
                    ))
                }
            }
        }
        Ok(t)
    }
}

/// The `key=value` form [`TUNING_ENV`] takes, every key given.
impl std::fmt::Display for Tuning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mode = match self.mode {
            RingMode::DeferTaskrun => "defer",
            RingMode::CoopTaskrun => "coop",
        };
        write!(
            f,
            "submit_batch={},wait={},mode={mode},fixed_bufs={},fixed_file={}",
            self.submit_batch,
            self.wait,
            u8::from(self.fixed_bufs),
            u8::from(self.fixed_file)
        )
    }
}

impl Tuning {
    /// From [`TUNING_ENV`]: the defaults when unset; Err names the variable and the value.
    pub fn from_env() -> Result<Tuning> {
        match std::env::var(TUNING_ENV) {
            Err(_) => Ok(Tuning::default()),
            Ok(text) => text.parse().map_err(|why: String| {
                crate::error::Error::usage(&format!("${TUNING_ENV}"), &text, why)
            }),
        }
    }
}

/// A ring for one submitting thread, set up as `tuning` says, without the submission queue's
/// index array (NO_SQARRAY, 6.6+: one memory read less per request, as t/io_uring sets up);
/// kernels that reject a flag get the ring without it, then COOP_TASKRUN, then a plain ring.
fn build_ring(entries: u32, tuning: &Tuning) -> std::io::Result<IoUring> {
    let with = |no_sqarray: bool| {
        let mut b = IoUring::builder();
        match tuning.mode {
            RingMode::DeferTaskrun => b.setup_single_issuer().setup_defer_taskrun(),
            RingMode::CoopTaskrun => b.setup_coop_taskrun(),
        };
        if no_sqarray {
            b.setup_no_sqarray();
        }
        b.build(entries)
    };
    with(true)
        .or_else(|_| with(false))
        .or_else(|_| IoUring::builder().setup_coop_taskrun().build(entries))
        .or_else(|_| IoUring::new(entries))
}

/// One request slot of the state machine.
#[derive(Clone, Copy, Default)]
struct Slot {
    /// Submission time (clock read just before the submit that carried it).
    t0_ns: u64,
    is_read: bool,
}

#[allow(clippy::too_many_arguments)]
fn worker(
    fd: RawFd,
    bs: usize,
    depth: u32,
    tuning: &Tuning,
    seed: u64,
    mut gen: IoGen,
    window: Window,
    ctl: &LevelCtl,
) -> std::io::Result<LevelStats> {
    let qd = depth as usize;
    let SlotRing {
        mut ring,
        bufs,
        io: slot_io,
    } = SlotRing::new(fd, bs, qd, 0, tuning, seed)?;

    let mut slots = vec![Slot::default(); qd];
    let mut st = LevelStats::new();
    let mut done = Done::default();
    match run(
        &mut ring,
        &mut slots,
        &mut st,
        &mut done,
        Requests {
            gen: &mut gen,
            slots: slot_io,
            submit_batch: tuning.submit_batch as usize,
            wait: tuning.wait as usize,
        },
        window,
        ctl,
    ) {
        Ok(()) => {}
        Err((e, in_flight)) => return Err(abandon(ring, bufs, in_flight, e)),
    }
    ctl.ops_done.fetch_add(done.unpublished, Relaxed);
    st.interrupted = ctl.stop.load(Relaxed);
    st.elapsed_ns =
        super::workload::measured_ns(&window, done.counted, done.last_ns, st.interrupted);
    drop(ring);
    drop(bufs);
    Ok(st)
}

/// What the loop counted.
#[derive(Default)]
struct Done {
    counted: u64,
    unpublished: u64,
    /// Time of the last counted completion.
    last_ns: u64,
}

/// How a slot's next request is made and submitted.
struct Requests<'a> {
    gen: &'a mut IoGen,
    slots: SlotIo,
    /// Requests per submitting enter ([`Tuning::submit_batch`]).
    submit_batch: usize,
    /// Completions a wait asks for ([`Tuning::wait`]), at most those in flight.
    wait: usize,
}

/// The hot loop, on the ring's two queues (one borrow for the whole level: a batch is pushed
/// with one tail update, completions are consumed with one head update), entering the kernel
/// inline through [`crate::sys::enter::Enter`]. Err: the error and how many requests are still
/// in flight.
fn run(
    ring: &mut IoUring,
    slots: &mut [Slot],
    st: &mut LevelStats,
    done: &mut Done,
    io: Requests,
    window: Window,
    ctl: &LevelCtl,
) -> Result<(), (std::io::Error, usize)> {
    use std::os::fd::AsRawFd;
    // Every enter names the ring by its registered index (5.18+), sparing the kernel a file
    // lookup per call, as t/io_uring does; without it, by its fd. Unregistered when `enter` is
    // dropped: the registration holds the ring open for as long as the thread lives. The
    // enters are issued inline in the loop ([`crate::sys::enter`]: through a wrapper function
    // each cost ~220 ns more on the development VM).
    let enter = crate::sys::enter::Enter::new(ring.as_raw_fd());
    let (_, mut sq, mut cq) = ring.split();
    reap_loop(&enter, &mut sq, &mut cq, slots, st, done, io, window, ctl)
}

#[allow(clippy::too_many_arguments)]
fn reap_loop(
    enter: &crate::sys::enter::Enter,
    sq: &mut squeue::SubmissionQueue<'_>,
    cq: &mut io_uring::CompletionQueue<'_>,
    slots: &mut [Slot],
    st: &mut LevelStats,
    done: &mut Done,
    mut io: Requests,
    window: Window,
    ctl: &LevelCtl,
) -> Result<(), (std::io::Error, usize)> {
    let qd = slots.len();
    let bs = io.slots.bs;
    // Slots prepared since the last submit, waiting for their submission timestamp.
    let mut fresh: Vec<u32> = Vec::with_capacity(qd);
    let mut in_flight = 0usize;
    let mut stopping = false;
    // Did the last probed round's first part complete inline ([`SUBMIT_BATCH`])?
    let mut inline = false;
    let mut rounds = 0u32;
    let mut clock = WindowClock::new(
        window.measure_from_ns,
        window.end_ns - window.measure_from_ns,
    );

    // Fill the queue.
    fresh.extend(0..qd as u32);
    loop {
        // Prepare the fresh slots and submit them, `submit_batch` per enter ([`SUBMIT_BATCH`]);
        // the last part goes with the wait. Each part's requests are stamped with one clock
        // read just before its submit.
        let mut start = 0usize;
        // While requests complete inline, a round goes in one enter; every PROBE_EVERY-th
        // round is split again to see whether they still do.
        rounds = rounds.wrapping_add(1);
        let probing = !inline || rounds % PROBE_EVERY == 0;
        let mut part = if probing { io.submit_batch } else { usize::MAX };
        loop {
            let end = fresh.len().min(start.saturating_add(part));
            let t_submit = if end > start { now_ns() } else { 0 };
            for &i in &fresh[start..end] {
                push_io(sq, slots, i as usize, &mut io);
                slots[i as usize].t0_ns = t_submit;
            }
            in_flight += end - start;
            start = end;
            if start >= fresh.len() {
                break;
            }
            sq.sync();
            match enter.enter(sq.len() as u32, 0, sq.cq_overflow()) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
                Err(e) => return Err((e, in_flight)),
            }
            // Completions already posted by a submit that did not wait were completed inline
            // (a page-cache hit; a device's completions wait for our next wait under
            // DEFER_TASKRUN): nothing is gained by dispatching early, so the rest of the
            // round goes in one enter.
            cq.sync();
            // (`!cq.is_empty()` would name ExactSizeIterator's unstable method.)
            #[allow(clippy::len_zero)]
            let completed_inline = cq.len() > 0;
            inline = completed_inline;
            if completed_inline {
                part = usize::MAX;
            }
        }
        fresh.clear();
        if in_flight == 0 {
            return Ok(());
        }
        // Publish the batch (one tail update) and submit it.
        sq.sync();
        match enter.enter(sq.len() as u32, io.wait.min(in_flight) as u32, false) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            Err(e) => return Err((e, in_flight)),
        }
        let t_done = now_ns();
        stopping = stopping || t_done >= window.end_ns || ctl.stop.load(Relaxed);
        // Counted by completion time, as the kernel's counters are: the completions inside
        // [measure_from, end), whenever they were submitted.
        let in_window = t_done >= window.measure_from_ns && t_done < window.end_ns;
        // Every completion of this wait shares its time, hence its sub-window.
        let sub_window = if in_window { clock.index(t_done) } else { 0 };
        // Reap every completion available; refill each finished slot unless stopping.
        cq.sync();
        let mut failed = None;
        for cqe in &mut *cq {
            let i = cqe.user_data() as usize;
            in_flight -= 1;
            let res = cqe.result();
            if res < 0 {
                failed = Some(std::io::Error::from_raw_os_error(-res));
                break;
            }
            if res as usize != bs {
                failed = Some(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("short transfer: {res} of {bs} bytes"),
                ));
                break;
            }
            let s = slots[i];
            if in_window {
                st.count(sub_window, t_done - s.t0_ns, s.is_read, bs as u64);
                done.counted += 1;
                done.unpublished += 1;
                done.last_ns = t_done;
            }
            if !stopping {
                fresh.push(i as u32);
            }
        }
        // The consumed completions' room goes back to the kernel now.
        cq.sync();
        if let Some(e) = failed {
            return Err((e, in_flight));
        }
        // The kernel's consumption of the last batch becomes room for the next.
        sq.sync();
        if done.unpublished >= super::sync::PUBLISH_EVERY {
            ctl.ops_done.fetch_add(done.unpublished, Relaxed);
            done.unpublished = 0;
        }
    }
}

/// The exit path on an error: the other requests may still be in flight, targeting `bufs`.
/// Cancel and reap them before the buffers are freed; whatever does not complete within the
/// drain's patience keeps its buffer forever (leaked, never reused), so the kernel never
/// writes into freed memory. Returns `err`.
pub(super) fn abandon(
    mut ring: IoUring,
    bufs: crate::sys::file::AlignedBuf,
    in_flight: usize,
    err: std::io::Error,
) -> std::io::Error {
    if drain(&mut ring, in_flight) > 0 {
        std::mem::forget(bufs);
    }
    drop(ring);
    err
}

/// `user_data` from here up marks requests that are not a slot's I/O (slots use 0..qd): the
/// drain's cancel, the open loop's timer (open/uring.rs).
pub(super) const TAG_BASE: u64 = u64::MAX - 255;

/// `user_data` of the cancel request.
const CANCEL_TAG: u64 = u64::MAX;

/// Cancel every request in flight (IORING_ASYNC_CANCEL_ANY, 5.19+; on older kernels the cancel
/// fails and the requests are waited for) and reap completions until `in_flight` are done or
/// nothing completes for a few seconds. Returns how many are still outstanding.
fn drain(ring: &mut IoUring, mut in_flight: usize) -> usize {
    let cancel = opcode::AsyncCancel2::new(types::CancelBuilder::any())
        .build()
        .user_data(CANCEL_TAG);
    // SAFETY: the cancel request references no memory.
    let _ = unsafe { ring.submission().push(&cancel) };
    let ts = types::Timespec::new().sec(1);
    let mut idle = 0;
    while in_flight > 0 && idle < 5 {
        let args = types::SubmitArgs::new().timespec(&ts);
        if let Err(e) = ring.submitter().submit_with_args(1, &args) {
            if e.raw_os_error() != Some(libc::EINTR) {
                idle += 1;
            }
        }
        let mut reaped = 0;
        for cqe in ring.completion() {
            if cqe.user_data() < TAG_BASE {
                reaped += 1;
            }
        }
        in_flight = in_flight.saturating_sub(reaped);
        if reaped == 0 {
            idle += 1;
        }
    }
    in_flight
}

/// Prepare slot `i`'s next request and put it on the submission queue (published by the next
/// `sq.sync()`, not yet submitted).
#[inline]
fn push_io(sq: &mut squeue::SubmissionQueue<'_>, slots: &mut [Slot], i: usize, io: &mut Requests) {
    let next = io.gen.next_io();
    slots[i].is_read = next.is_read;
    // SAFETY: slot i is not reused before its completion is reaped, and the ring has an entry
    // for every slot.
    unsafe { io.slots.push(sq, i, next) };
}

/// A ring for one submitting thread with one buffer per request slot, the file and the
/// buffers registered as [`Tuning`] says (both engines on io_uring: this one and the open
/// loop's, open/uring.rs). Fields drop in order: the ring before the buffers it targets.
pub(super) struct SlotRing {
    pub ring: IoUring,
    pub bufs: crate::sys::file::AlignedBuf,
    pub io: SlotIo,
}

impl SlotRing {
    /// A ring of at least `slots` + `extra` entries on `fd` (`extra` for requests that are no
    /// slot's I/O, tagged from [`TAG_BASE`]), `slots` buffers of `bs` bytes (aligned for
    /// O_DIRECT, filled from `seed` for writes), registered when the kernel allows.
    pub fn new(
        fd: RawFd,
        bs: usize,
        slots: usize,
        extra: usize,
        tuning: &Tuning,
        seed: u64,
    ) -> std::io::Result<SlotRing> {
        let ring = build_ring(((slots + extra) as u32).next_power_of_two(), tuning)?;
        ring.submitter().register_files(&[fd])?;
        let mut bufs = random_buf(bs * slots, seed);
        let base = bufs.as_mut_ptr();
        let iovecs: Vec<libc::iovec> = (0..slots)
            .map(|i| libc::iovec {
                // SAFETY: i * bs < bs * slots: inside the allocation.
                iov_base: unsafe { base.add(i * bs) }.cast(),
                iov_len: bs,
            })
            .collect();
        // SAFETY: the buffers live in `bufs`, which outlives the ring (the ring drops first,
        // and the exit paths reap or abandon every I/O before the buffers are freed).
        let fixed_bufs =
            tuning.fixed_bufs && unsafe { ring.submitter().register_buffers(&iovecs) }.is_ok();
        Ok(SlotRing {
            ring,
            bufs,
            io: SlotIo {
                base,
                bs,
                fixed_bufs,
                file: tuning.fixed_file.then_some(0).ok_or(fd),
            },
        })
    }
}

/// How a slot's request is built: its buffer, the file, registered or not.
pub(super) struct SlotIo {
    base: *mut u8,
    pub bs: usize,
    fixed_bufs: bool,
    /// The file: Ok(its registered index), Err(its fd) ([`Tuning::fixed_file`]).
    file: Result<u32, RawFd>,
}

impl SlotIo {
    /// Put slot `i`'s request `next` on the submission queue, `user_data` = `i` (published by
    /// the next `sq.sync()`, not yet submitted).
    ///
    /// # Safety
    /// Slot `i`'s buffer must not be in use by another request (the slot is not reused before
    /// its completion is reaped), and the queue must have room.
    #[inline]
    pub unsafe fn push(
        &self,
        sq: &mut squeue::SubmissionQueue<'_>,
        i: usize,
        next: super::workload::Io,
    ) {
        let bs = self.bs;
        // SAFETY: slot i's buffer is bytes [i*bs, (i+1)*bs) of the registered allocation.
        let buf = unsafe { self.base.add(i * bs) };
        // The opcodes take the file as one of two types (registered index or fd).
        macro_rules! request {
            ($file:expr) => {
                match (next.is_read, self.fixed_bufs) {
                    (true, true) => opcode::ReadFixed::new($file, buf, bs as u32, i as u16)
                        .offset(next.offset)
                        .build(),
                    (false, true) => opcode::WriteFixed::new($file, buf, bs as u32, i as u16)
                        .offset(next.offset)
                        .build(),
                    (true, false) => opcode::Read::new($file, buf, bs as u32)
                        .offset(next.offset)
                        .build(),
                    (false, false) => opcode::Write::new($file, buf, bs as u32)
                        .offset(next.offset)
                        .build(),
                }
            };
        }
        let entry: squeue::Entry = match self.file {
            Ok(index) => request!(types::Fixed(index)),
            Err(fd) => request!(types::Fd(fd)),
        };
        let entry = entry.user_data(i as u64);
        // SAFETY: the buffer stays valid and untouched until this slot's completion is reaped
        // (the caller's promise); so does the room in the queue.
        unsafe {
            sq.push(&entry)
                .expect("submission queue has room for every slot");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tuning_parses_its_keys_and_names_what_is_wrong() {
        assert_eq!("".parse::<Tuning>().unwrap(), Tuning::default());
        let t: Tuning = "submit_batch=1, wait=8,mode=coop".parse().unwrap();
        assert_eq!(t.submit_batch, 1);
        assert_eq!(t.wait, 8);
        assert_eq!(t.mode, RingMode::CoopTaskrun);
        assert_eq!(
            "mode=defer".parse::<Tuning>().unwrap().mode,
            RingMode::DeferTaskrun
        );
        assert_eq!(Tuning::default().submit_batch, SUBMIT_BATCH);
        // The note's form parses back to the same tuning.
        assert_eq!(
            t.to_string(),
            "submit_batch=1,wait=8,mode=coop,fixed_bufs=1,fixed_file=1"
        );
        let plain: Tuning = "fixed_bufs=0,fixed_file=0".parse().unwrap();
        assert!(!plain.fixed_bufs && !plain.fixed_file);
        assert_eq!(plain.to_string().parse::<Tuning>().unwrap(), plain);
        assert_eq!(t.to_string().parse::<Tuning>().unwrap(), t);
        for (bad, why) in [
            ("wait=0", "wait wants a positive whole number, not '0'"),
            ("submit_batch", "'submit_batch' is not key=value"),
            ("mode=poll", "mode is defer or coop, not 'poll'"),
            ("fixed_bufs=yes", "fixed_bufs is 0 or 1, not 'yes'"),
            (
                "depth=4",
                "unknown key 'depth' (submit_batch, wait, mode, fixed_bufs, fixed_file)",
            ),
        ] {
            assert_eq!(bad.parse::<Tuning>().unwrap_err(), why, "{bad}");
        }
    }

    /// Reads on an empty pipe stay in flight until cancelled: the exit path's drain must end
    /// them all, so the buffers they target can be freed.
    #[test]
    fn drain_cancels_and_reaps_requests_still_in_flight() {
        let Ok(mut ring) = IoUring::new(8) else {
            eprintln!("skipped: no io_uring");
            return;
        };
        let mut fds = [0; 2];
        // SAFETY: a valid out array of two fds.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let mut bufs = vec![0u8; 4 * 64];
        for i in 0..4 {
            let e = opcode::Read::new(types::Fd(fds[0]), bufs[i * 64..].as_mut_ptr(), 64)
                .build()
                .user_data(i as u64);
            // SAFETY: bufs outlives the requests: drain reaps them before it is dropped.
            unsafe { ring.submission().push(&e).unwrap() };
        }
        ring.submit().unwrap();
        assert_eq!(
            ring.completion().count(),
            0,
            "nothing completes on an empty pipe"
        );
        assert_eq!(drain(&mut ring, 4), 0);
        drop(ring);
        drop(bufs);
        // SAFETY: closing our own fds.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
    }
}
