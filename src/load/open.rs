//! The open-loop engine of `iosat sweep --rate`: requests issued on a precomputed schedule of
//! intended start times (schedule.rs) by a bounded pool of threads, each with one
//! pread/pwrite in flight (the sync engine's request, sync.rs) or, when the sweep runs the
//! uring engine, by one thread on a ring ([`Generator`], open_uring.rs); every latency timed
//! from the intended start (what a user waits) and from the submission (what the device
//! took), and how late each submission was. Also the open-loop level driver: one level per
//! offered rate, the kernel's view and progress as the closed loop's (driver.rs).
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/.
//!
//! The pool is the bound on requests in flight (`--max-inflight`): a request whose intended
//! start comes while every thread is busy is submitted late, and its lateness counts in its
//! latency from the intended start and in the level's `behind` figures; a request still
//! waiting for a thread when the level ends is never submitted and is counted as unsent. A
//! level with unsent requests, a lower achieved rate or late submissions did not get the rate
//! it was meant to offer, and says so (open_result.rs) rather than being judged as if it had.

use super::open_result::{OpenLevelResult, OpenStats};
use super::schedule::{count_between, intended_starts, Arrivals};
use super::workload::{now_ns, random_buf, IoGen, Window};
use super::{run_workers, Engine, LevelCtl, LevelSpec, LevelStats};
use crate::error::{Error, Result};
use std::os::fd::RawFd;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;

/// The requests an open-loop level may keep in flight when neither `--max-inflight` nor a
/// closed-loop knee says otherwise.
pub const DEFAULT_MAX_INFLIGHT: u32 = 64;

/// With a closed-loop pass, the pool is this many times its knee (at least
/// [`MIN_KNEE_POOL`]): past the knee, more requests in flight only queue, so four times it
/// keeps any schedule the device can keep, and a schedule it cannot keep shows as lateness
/// instead of an ever-growing pool.
pub const KNEE_POOL_FACTOR: u32 = 4;
/// The smallest pool a knee gives.
pub const MIN_KNEE_POOL: u32 = 16;

/// A request due this close to the level's end and not yet submitted when it ends is not
/// counted as unsent: a timer wake-up can take that long on a busy machine, and the requests
/// are still being offered at the rate (only the window closed).
pub const UNSENT_GRACE_NS: u64 = 5_000_000;

/// What one open-loop level asks for beyond its [`LevelSpec`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpenSpec {
    /// Requests per second offered.
    pub rate_per_s: f64,
    pub arrivals: Arrivals,
    /// Threads in the pool, hence the most requests in flight.
    pub max_inflight: u32,
}

/// Which generator runs the open loop: the pool of threads (one pread/pwrite each), or one
/// thread on io_uring (open_uring.rs). cmd/sweep.rs picks it from the engine the sweep chose
/// (load/engine.rs), so `--engine`, the default and the loop/zram rule decide both loops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generator {
    Threads,
    Uring(super::uring::Tuning),
}

impl Generator {
    /// For the report: "threads" or "io_uring".
    pub fn as_str(&self) -> &'static str {
        match self {
            Generator::Threads => "threads",
            Generator::Uring(_) => "io_uring",
        }
    }
}

/// The open loop's generator when the sweep's engine is `engine` (its name, after any
/// fallback): io_uring when that is the uring engine and the kernel has what the generator
/// needs ([`super::open_uring::unsupported`]), tuned as the engine is; else the threads, with
/// a note when io_uring was chosen but can't run the open loop.
pub fn generator_for(engine: &str, fd: RawFd) -> Result<(Generator, Option<String>)> {
    if engine != "uring" {
        return Ok((Generator::Threads, None));
    }
    let tuning = super::uring::Tuning::from_env()?;
    Ok(match super::open_uring::unsupported(fd) {
        None => (Generator::Uring(tuning), None),
        Some(why) => (
            Generator::Threads,
            Some(format!("{why}: the open loop runs on threads instead")),
        ),
    })
}

/// The open-loop generator on one open target (the fd stays the target's, which outlives
/// the engine). Implements [`Engine`] so the level driver's kernel view, scheduler counters
/// and progress serve it unchanged; `open` is set before each level.
pub struct OpenEngine {
    fd: RawFd,
    size_bytes: u64,
    path: PathBuf,
    pub open: OpenSpec,
    generator: Generator,
}

impl OpenEngine {
    pub fn new(
        fd: RawFd,
        size_bytes: u64,
        path: PathBuf,
        open: OpenSpec,
        generator: Generator,
    ) -> OpenEngine {
        OpenEngine {
            fd,
            size_bytes,
            path,
            open,
            generator,
        }
    }
}

impl Engine for OpenEngine {
    fn name(&self) -> &str {
        "open"
    }

    fn set_open(&mut self, open: OpenSpec) -> bool {
        self.open = open;
        true
    }

    fn run_level(&mut self, spec: &LevelSpec, ctl: &LevelCtl) -> Result<LevelStats> {
        let span_ns = spec.ramp_ns + spec.duration_ns;
        let starts = intended_starts(self.open.rate_per_s, span_ns, self.open.arrivals, spec.seed)
            .map_err(|why| Error::usage("--rate", self.open.rate_per_s, why))?;
        let window = Window::starting_now(spec);
        let schedule = Schedule {
            starts: &starts,
            origin_ns: window.measure_from_ns - spec.ramp_ns,
            window,
        };
        let (mut total, taken) = match &self.generator {
            Generator::Threads => self.threads(spec, &schedule, ctl)?,
            Generator::Uring(tuning) => super::open_uring::run_level(
                self.fd,
                self.size_bytes,
                &self.path,
                spec,
                &schedule,
                self.open.max_inflight,
                tuning,
                ctl,
            )?,
        };
        let open = total.open.get_or_insert_with(OpenStats::new);
        open.scheduled = count_between(&starts, spec.ramp_ns, span_ns);
        // Requests never taken: their intended start came while every thread (slot) was busy
        // until the level ended.
        let taken = taken.min(starts.len());
        open.unsent += starts[taken..]
            .iter()
            .filter(|&&t| t >= spec.ramp_ns && t + UNSENT_GRACE_NS < span_ns)
            .count() as u64;
        Ok(total)
    }
}

impl OpenEngine {
    /// The pool of threads; with how many tickets were taken.
    fn threads(
        &self,
        spec: &LevelSpec,
        schedule: &Schedule,
        ctl: &LevelCtl,
    ) -> Result<(LevelStats, usize)> {
        let ticket = AtomicUsize::new(0);
        let (fd, bs) = (self.fd, spec.block_size as usize);
        let pool = Pool {
            schedule,
            ticket: &ticket,
        };
        let total = run_workers(
            "open",
            spec,
            self.open.max_inflight.max(1),
            self.size_bytes,
            &self.path,
            Some(256 * 1024),
            |gen, seed| {
                let r = worker(fd, bs, seed, gen, &pool, ctl);
                ctl.wait_release();
                r
            },
        )?;
        Ok((total, ticket.load(Relaxed)))
    }
}

/// A level's schedule in time: the intended starts (offsets from `origin_ns`) and the window.
pub(super) struct Schedule<'a> {
    pub starts: &'a [u64],
    pub origin_ns: u64,
    pub window: Window,
}

/// What the pool's threads share: the schedule and the next ticket.
struct Pool<'a> {
    schedule: &'a Schedule<'a>,
    ticket: &'a AtomicUsize,
}

/// One thread of the pool: take the next intended start, sleep until it, submit, record the
/// three times. No allocation after set-up, no print; the only shared write is the ticket.
fn worker(
    fd: RawFd,
    bs: usize,
    seed: u64,
    mut gen: IoGen,
    pool: &Pool,
    ctl: &LevelCtl,
) -> std::io::Result<LevelStats> {
    crate::sys::clock::precise_timer_slack();
    let window = pool.schedule.window;
    let mut st = LevelStats::new();
    let mut open = OpenStats::new();
    let mut buf = random_buf(bs, seed);
    let ptr = buf.as_mut_ptr();
    let mut clock = super::windows::WindowClock::new(
        window.measure_from_ns,
        window.end_ns - window.measure_from_ns,
    );
    let (mut counted, mut last_ns, mut unpublished) = (0u64, 0u64, 0u64);
    loop {
        if ctl.stop.load(Relaxed) {
            st.interrupted = true;
            break;
        }
        let k = pool.ticket.fetch_add(1, Relaxed);
        let Some(&at) = pool.schedule.starts.get(k) else {
            break;
        };
        let intended = pool.schedule.origin_ns + at;
        // A thread that takes a ticket whose time has already come was busy when it came:
        // every thread of the pool had a request in flight.
        let waited_for_thread = now_ns() > intended;
        while now_ns() < intended && !ctl.stop.load(Relaxed) {
            crate::sys::clock::sleep_until_ns(intended);
        }
        let io = gen.next_io();
        let t_sub = now_ns();
        if t_sub >= window.end_ns || ctl.stop.load(Relaxed) {
            // Its time came while every thread was busy, and the level is over.
            if intended >= window.measure_from_ns && intended + UNSENT_GRACE_NS < window.end_ns {
                open.unsent += 1;
            }
            st.interrupted = ctl.stop.load(Relaxed);
            break;
        }
        // SAFETY: `ptr` points to `bs` bytes owned by `buf`, aligned for O_DIRECT, alive for
        // the whole loop; `fd` is the target's, open for the level.
        unsafe { super::sync::transfer(fd, ptr, bs, io) }?;
        let t_done = now_ns();
        // Counted by completion time, as the closed loop's levels and the kernel count.
        if t_done >= window.measure_from_ns && t_done < window.end_ns {
            let w = clock.index(t_done);
            st.count(w, t_done - t_sub, io.is_read, bs as u64);
            open.record(w, t_done - intended, t_sub - intended, waited_for_thread);
            counted += 1;
            last_ns = t_done;
            unpublished += 1;
            if unpublished == super::sync::PUBLISH_EVERY {
                ctl.ops_done.fetch_add(unpublished, Relaxed);
                unpublished = 0;
            }
        }
    }
    ctl.ops_done.fetch_add(unpublished, Relaxed);
    st.elapsed_ns = super::workload::measured_ns(&window, counted, last_ns, st.interrupted);
    st.open = Some(open);
    Ok(st)
}

/// The pool for a run: `--max-inflight` when given, else [`KNEE_POOL_FACTOR`] × the closed
/// loop's knee (at least [`MIN_KNEE_POOL`]) when a closed-loop pass found one, else
/// [`DEFAULT_MAX_INFLIGHT`]; and the sentence that says which, for the report's notes.
pub fn pool_size(asked: Option<u32>, knee: Option<u32>) -> (u32, String) {
    match (asked, knee) {
        (Some(n), _) => (
            n,
            format!("open loop: at most {n} requests in flight (--max-inflight)"),
        ),
        (None, Some(k)) => {
            let n = (k.saturating_mul(KNEE_POOL_FACTOR)).max(MIN_KNEE_POOL);
            (
                n,
                format!(
                    "open loop: at most {n} requests in flight ({KNEE_POOL_FACTOR}x the closed \
                     loop's knee of {k}; --max-inflight sets it)"
                ),
            )
        }
        (None, None) => (
            DEFAULT_MAX_INFLIGHT,
            format!(
                "open loop: at most {DEFAULT_MAX_INFLIGHT} requests in flight (the default; \
                 --max-inflight sets it)"
            ),
        ),
    }
}

/// The level spec of an open-loop level: one request per thread of the pool.
pub fn level_spec(plan: &super::driver::SweepPlan, open: &OpenSpec, idx: usize) -> LevelSpec {
    LevelSpec {
        threads: open.max_inflight.max(1),
        queue_depth: 1,
        pattern: plan.pattern,
        block_size: plan.block_size,
        ramp_ns: plan.ramp_ns,
        duration_ns: plan.duration_ns,
        seed: plan.seed.wrapping_add(0x6f70_656e).wrapping_add(idx as u64),
    }
}

/// Run one open-loop level on `engine` (an open-loop engine: this file's, open_sim.rs's; set
/// to `open`) with the closed loop's kernel view, scheduler counters and progress; None when
/// it completed no I/O.
pub fn measure(
    engine: &mut (dyn Engine + Send),
    plan: &super::driver::SweepPlan,
    open: OpenSpec,
    idx: usize,
    watch: Option<&crate::monitor::watch::DeviceWatch>,
    progress: &dyn super::driver::LevelProgress,
) -> Result<(Option<OpenLevelResult>, bool)> {
    let offers = engine.set_open(open);
    debug_assert!(offers, "{} runs no open loop", engine.name());
    let ls = level_spec(plan, &open, idx);
    let (stats, kernel, _sched) =
        super::driver::run_level(engine, &ls, watch, &plan.root, progress, idx)?;
    let cut = stats.interrupted || crate::sys::signal::stop_requested();
    Ok((OpenLevelResult::new(&ls, &open, &stats, kernel), cut))
}

/// Which rates an open-loop run offers.
#[derive(Debug, Clone, PartialEq)]
pub enum Rates {
    /// Requests per second, in the order given.
    List(Vec<f64>),
    /// [`AUTO_SHARES`] of the maximum a closed-loop pass measured first.
    Auto,
    /// `--target-p99`: searched level by level (analysis::open::search_next).
    Search,
}

/// `--rate auto`: these shares of the closed loop's maximum: two well below the knee, one
/// near it, the maximum itself and one beyond it (which must show as not kept).
pub const AUTO_SHARES: [f64; 5] = [0.25, 0.5, 0.8, 1.0, 1.2];

/// An open-loop run, validated (config/sweep.rs builds it).
#[derive(Debug, Clone, PartialEq)]
pub struct OpenPlan {
    pub rates: Rates,
    /// `--rate` as given, for the report.
    pub rates_text: String,
    pub arrivals: Arrivals,
    /// `--max-inflight`, when given ([`pool_size`]).
    pub max_inflight: Option<u32>,
    /// Run the closed-loop levels first (`--levels` given, `--rate auto`, a target).
    pub closed_first: bool,
    /// `--target-p99` / `--target`: the latency target the search is for.
    pub target: Option<crate::analysis::open::Target>,
}

impl OpenPlan {
    /// The rates to offer, given the closed loop's maximum when one was measured; empty for
    /// `auto` without one.
    pub fn rates(&self, closed_max_iops: Option<f64>) -> Vec<f64> {
        match (&self.rates, closed_max_iops) {
            (Rates::List(v), _) => v.clone(),
            (Rates::Auto, Some(m)) if m > 0.0 => AUTO_SHARES.iter().map(|s| s * m).collect(),
            (Rates::Auto | Rates::Search, _) => Vec::new(),
        }
    }
}
