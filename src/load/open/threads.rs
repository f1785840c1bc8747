//! The open loop's pool of threads (`sweep --rate` when the sweep runs the sync engine, or
//! io_uring can't run the open loop): each thread takes the next intended start of the level's
//! schedule (spec.rs), sleeps until it, submits one pread/pwrite (the sync engine's request,
//! sync.rs) and records its latency from the intended start and from submission and how late
//! it went out (result.rs). A request whose intended start comes while every thread is busy
//! is submitted late, counted as a pool wait.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/.

use super::result::OpenStats;
use super::spec::{LevelRun, Schedule, UNSENT_GRACE_NS};
use crate::error::Result;
use crate::load::workload::{now_ns, random_buf, IoGen};
use crate::load::{run_workers, LevelCtl, LevelStats};
use std::os::fd::RawFd;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;

/// Run one level of `schedule` on a pool of `max_inflight` threads; with how many of the
/// schedule's requests were taken (the rest were never sent).
pub fn run_level(run: &LevelRun, ctl: &LevelCtl) -> Result<(LevelStats, usize)> {
    let ticket = AtomicUsize::new(0);
    let bs = run.spec.block_size as usize;
    let pool = Pool {
        schedule: run.schedule,
        ticket: &ticket,
    };
    let total = run_workers(
        "open",
        run.spec,
        run.max_inflight.max(1),
        run.size_bytes,
        run.path,
        Some(256 * 1024),
        |gen, seed| {
            let r = worker(run.fd, bs, seed, gen, &pool, ctl);
            ctl.wait_release();
            r
        },
    )?;
    Ok((total, ticket.load(Relaxed)))
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
    let mark = super::result::GenWait::start(own_delay());
    let mut buf = random_buf(bs, seed);
    let ptr = buf.as_mut_ptr();
    let mut clock = crate::load::windows::WindowClock::new(
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
        unsafe { crate::load::sync::transfer(fd, ptr, bs, io) }?;
        let t_done = now_ns();
        // Counted by completion time, as the closed loop's levels and the kernel count.
        if t_done >= window.measure_from_ns && t_done < window.end_ns {
            let w = clock.index(t_done);
            st.count(w, t_done - t_sub, io.is_read, bs as u64);
            open.record(w, t_done - intended, t_sub - intended, waited_for_thread);
            counted += 1;
            last_ns = t_done;
            unpublished += 1;
            if unpublished == crate::load::sync::PUBLISH_EVERY {
                ctl.ops_done.fetch_add(unpublished, Relaxed);
                unpublished = 0;
            }
        }
    }
    ctl.ops_done.fetch_add(unpublished, Relaxed);
    mark.end(own_delay(), &mut open);
    st.elapsed_ns = crate::load::workload::measured_ns(&window, counted, last_ns, st.interrupted);
    st.open = Some(open);
    Ok(st)
}

/// This thread's scheduler run delay so far (sys::sched), for [`super::result::GenWait`].
fn own_delay() -> Option<u64> {
    crate::sys::sched::read_own_thread_delay(&crate::sys::Root::default())
}
