//! The open loop on io_uring (`sweep --rate` when the uring engine is chosen): one thread
//! submits each request of the schedule (schedule.rs) at its intended start on one ring set up
//! as the uring engine's (uring.rs [`SlotRing`]: registered file and buffers, O_DIRECT-aligned
//! slots), keeps at most `max_inflight` requests in flight, and reaps each completion as soon
//! as the kernel posts it. It records the threads' open loop's figures (threads.rs): latency from
//! the intended start and from submission, lateness, requests that found every slot busy; the
//! schedule, the window and the unsent count are generator.rs's.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/.
//!
//! How it waits: each turn submits what is due and then waits, in the same `io_uring_enter`
//! (GETEVENTS), for one completion or the next intended start, whichever comes first. The next
//! intended start is a timer on the ring (IORING_OP_TIMEOUT, absolute CLOCK_MONOTONIC), armed
//! once per intended start and kept while completions come and go, as each of the threads
//! arms one `clock_nanosleep` per request (a wait timeout, EXT_ARG, would arm a timer per wait:
//! on a VM each arming reprograms the timer device, an exit). A completion therefore ends the
//! wait at once and is stamped when it is reaped, never held back by a sleep until the next
//! arrival (fio's inline rate limiting calls `io_u_quiesce()` from `rate_ddir()` before each
//! rate sleep, reaping everything in flight first and then issuing what fell due in a burst);
//! and an arrival never waits for a completion. Both timers are hrtimers without slack
//! ([`WAKE_EARLY_NS`] for why there is no spin). The wait's own timeout is used only when the
//! timer pending is later than the wake needed (a stop check, every slot busy) or when
//! stopping. The pool bound is the threads' (spec.rs `pool_size`): a request due while every
//! slot is busy waits for a slot, counted as a pool wait, its lateness in its latency from the
//! intended start.

use super::result::OpenStats;
use super::spec::{LevelRun, Schedule};
use crate::error::Result;
use crate::load::uring::{abandon, SlotIo, SlotRing, Tuning};
use crate::load::windows::WindowClock;
use crate::load::workload::{now_ns, IoGen};
use crate::load::{run_workers, LevelCtl, LevelSpec, LevelStats};
use io_uring::{opcode, squeue, types, CompletionQueue, IoUring, Submitter};
use std::os::fd::RawFd;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How long before a request's intended start the generator wakes: none. A spin for the last
/// microseconds would make the one thread a busy loop (a core of its own, taken from the
/// device path on small machines), and under DEFER_TASKRUN no completion is posted while the
/// thread spins outside the kernel, so reaping would wait for the spin. Wake-up lateness is
/// measured per request (`behind`) instead; BENCHMARKS.md (2026-11-25) has its size.
pub const WAKE_EARLY_NS: u64 = 0;

/// The longest one wait lasts, so a stop (Ctrl-C) is seen within this time.
const STOP_CHECK_NS: u64 = 50_000_000;

/// Why the io_uring generator can't run on `fd` (the engine's probe, or a kernel without
/// EXT_ARG wait timeouts, 5.11+), or None when it can.
pub fn unsupported(fd: RawFd) -> Option<String> {
    if let Some(why) = crate::load::uring::probe(fd) {
        return Some(why);
    }
    match IoUring::new(2) {
        Ok(r) if r.params().is_feature_ext_arg() => None,
        Ok(_) => Some("io_uring lacks EXT_ARG wait timeouts (5.11+)".into()),
        Err(e) => Some(format!("io_uring unavailable ({e})")),
    }
}

/// Run one open-loop level of `schedule` on one ring with at most `max_inflight` requests in
/// flight. Returns the stats (with [`OpenStats`], `scheduled` and `unsent` left to the caller)
/// and how many of the schedule's requests were submitted or counted (the rest were never
/// sent).
pub(super) fn run_level(
    run: &LevelRun,
    tuning: &Tuning,
    ctl: &LevelCtl,
) -> Result<(LevelStats, usize)> {
    let taken = AtomicUsize::new(0);
    let bs = run.spec.block_size as usize;
    let one = LevelSpec {
        threads: 1,
        ..run.spec.clone()
    };
    let stats = run_workers(
        "open-uring",
        &one,
        1,
        run.size_bytes,
        run.path,
        None,
        |gen, seed| {
            let r = worker(
                run.fd,
                bs,
                run.max_inflight.max(1) as usize,
                tuning,
                seed,
                gen,
                run.schedule,
                ctl,
            )
            .map(|(st, next)| {
                taken.store(next, Ordering::Relaxed);
                st
            });
            ctl.wait_release();
            r
        },
    )?;
    Ok((stats, taken.load(Ordering::Relaxed)))
}

/// One request slot: when it was meant to start and when it went out.
#[derive(Clone, Copy, Default)]
struct Slot {
    intended_ns: u64,
    submitted_ns: u64,
    is_read: bool,
    /// Its intended start came while every slot was busy.
    waited: bool,
}

#[allow(clippy::too_many_arguments)]
fn worker(
    fd: RawFd,
    bs: usize,
    slots: usize,
    tuning: &Tuning,
    seed: u64,
    mut gen: IoGen,
    schedule: &Schedule,
    ctl: &LevelCtl,
) -> std::io::Result<(LevelStats, usize)> {
    crate::sys::clock::precise_timer_slack();
    let SlotRing { mut ring, bufs, io } = SlotRing::new(fd, bs, slots, 1, tuning, seed)?;
    let mut st = LevelStats::new();
    let mut open = OpenStats::new();
    let mark = super::result::GenWait::start(own_delay());
    let mut l = Loop {
        slots: vec![Slot::default(); slots],
        free: (0..slots as u32).rev().collect(),
        next: 0,
        in_flight: 0,
        waiting_upto: 0,
        counted: 0,
        last_ns: 0,
        unpublished: 0,
        timer: None,
    };
    let (submitter, mut sq, mut cq) = ring.split();
    let r = l.run(
        &submitter, &mut sq, &mut cq, &io, &mut gen, schedule, ctl, &mut st, &mut open,
    );
    drop((submitter, sq, cq));
    if let Err((e, in_flight)) = r {
        return Err(abandon(ring, bufs, in_flight, e));
    }
    ctl.ops_done.fetch_add(l.unpublished, Relaxed);
    mark.end(own_delay(), &mut open);
    st.interrupted = ctl.stop.load(Relaxed);
    st.elapsed_ns =
        crate::load::workload::measured_ns(&schedule.window, l.counted, l.last_ns, st.interrupted);
    st.open = Some(open);
    drop(ring);
    drop(bufs);
    Ok((st, l.next))
}

/// The generator's state between turns.
struct Loop {
    slots: Vec<Slot>,
    /// Slots with no request in flight.
    free: Vec<u32>,
    /// The schedule's next request to submit.
    next: usize,
    in_flight: usize,
    /// Requests of the schedule before this index were due while every slot was busy.
    waiting_upto: usize,
    counted: u64,
    last_ns: u64,
    unpublished: u64,
    /// When the pending timer (an IORING_OP_TIMEOUT) expires, if one is pending.
    timer: Option<u64>,
}

impl Loop {
    /// Turns until the window has ended (or a stop) and nothing is in flight. Err: the error
    /// and how many requests are still in flight.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &mut self,
        submitter: &Submitter<'_>,
        sq: &mut squeue::SubmissionQueue<'_>,
        cq: &mut CompletionQueue<'_>,
        io: &SlotIo,
        gen: &mut IoGen,
        schedule: &Schedule,
        ctl: &LevelCtl,
        st: &mut LevelStats,
        open: &mut OpenStats,
    ) -> std::result::Result<(), (std::io::Error, usize)> {
        let window = schedule.window;
        let mut clock = WindowClock::new(
            window.measure_from_ns,
            window.end_ns - window.measure_from_ns,
        );
        let mut stopping = false;
        loop {
            let now = now_ns();
            stopping = stopping || now >= window.end_ns || ctl.stop.load(Relaxed);
            if !stopping {
                self.submit_due(sq, io, gen, schedule, now);
            }
            if stopping && self.in_flight == 0 {
                return Ok(());
            }
            // The next intended start still to come (one already due waits for a slot, and a
            // completion, not a timer, lets it go).
            let next_due = schedule
                .starts
                .get(self.next)
                .map(|&at| schedule.origin_ns + at)
                .filter(|&t| t > now);
            let wake = next_wake(now, stopping, next_due, window.end_ns);
            // The timer for the next wake, armed once and kept while completions come and go
            // (a wait timeout would arm one per wait: a timer reprogrammed per completion).
            let at = timespec(wake);
            if !stopping && self.timer.is_none() {
                let e = opcode::Timeout::new(&at)
                    .flags(types::TimeoutFlags::ABS)
                    .build()
                    .user_data(TIMER_TAG);
                // SAFETY: the kernel reads `at` while this turn's enter submits the entry;
                // the ring has an entry beyond the slots' for the one timer.
                unsafe { sq.push(&e) }.expect("a submission entry for the timer");
                self.timer = Some(wake);
            }
            sq.sync();
            // Submit what is due and wait for one completion or the wake, whichever is first.
            let r = match self.timer {
                Some(t) if t <= wake => submitter.submit_and_wait(1),
                _ => {
                    // No timer, or a later one: the wait's own timeout ends it.
                    let rel = timespec(wake - now);
                    submitter.submit_with_args(1, &types::SubmitArgs::new().timespec(&rel))
                }
            };
            match r {
                Ok(_) => {}
                Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME | libc::EINTR)) => {}
                Err(e) => return Err((e, self.in_flight)),
            }
            let t_done = now_ns();
            // The kernel's consumption of the submitted entries becomes room for the next.
            sq.sync();
            cq.sync();
            let mut failed = None;
            for cqe in &mut *cq {
                if cqe.user_data() == TIMER_TAG {
                    // Expired (-ETIME): the next turn submits what fell due.
                    self.timer = None;
                    continue;
                }
                let i = cqe.user_data() as usize;
                self.in_flight -= 1;
                self.free.push(i as u32);
                let res = cqe.result();
                if res < 0 {
                    failed = Some(std::io::Error::from_raw_os_error(-res));
                    break;
                }
                if res as usize != io.bs {
                    failed = Some(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        format!("short transfer: {res} of {} bytes", io.bs),
                    ));
                    break;
                }
                // Counted by completion time, as the closed loop's levels and the kernel count.
                if t_done >= window.measure_from_ns && t_done < window.end_ns {
                    let s = self.slots[i];
                    let w = clock.index(t_done);
                    st.count(w, t_done - s.submitted_ns, s.is_read, io.bs as u64);
                    open.record(
                        w,
                        t_done - s.intended_ns,
                        s.submitted_ns - s.intended_ns,
                        s.waited,
                    );
                    self.counted += 1;
                    self.last_ns = t_done;
                    self.unpublished += 1;
                }
            }
            cq.sync();
            if let Some(e) = failed {
                return Err((e, self.in_flight));
            }
            if self.unpublished >= crate::load::sync::PUBLISH_EVERY {
                ctl.ops_done.fetch_add(self.unpublished, Relaxed);
                self.unpublished = 0;
            }
        }
    }

    /// Put every request whose intended start has come on the submission queue (submitted by
    /// the next enter), one per free slot, all stamped `now`; note those left waiting for a slot.
    fn submit_due(
        &mut self,
        sq: &mut squeue::SubmissionQueue<'_>,
        io: &SlotIo,
        gen: &mut IoGen,
        schedule: &Schedule,
        now: u64,
    ) {
        while let Some(&at) = schedule.starts.get(self.next) {
            let intended = schedule.origin_ns + at;
            if intended > now {
                return;
            }
            let Some(i) = self.free.pop() else {
                // Every slot is busy: the requests due by now wait for one.
                self.waiting_upto =
                    self.waiting_upto
                        .max(due_by(schedule.starts, schedule.origin_ns, now));
                return;
            };
            let req = gen.next_io();
            self.slots[i as usize] = Slot {
                intended_ns: intended,
                submitted_ns: now,
                is_read: req.is_read,
                waited: self.next < self.waiting_upto,
            };
            // SAFETY: slot i is free (its last completion was reaped), and the ring has an
            // entry for every slot.
            unsafe { io.push(sq, i as usize, req) };
            self.next += 1;
            self.in_flight += 1;
        }
    }
}

/// `user_data` of the generator's timer.
const TIMER_TAG: u64 = crate::load::uring::TAG_BASE;

/// A timespec of `ns` nanoseconds (absolute on CLOCK_MONOTONIC, or a length).
fn timespec(ns: u64) -> types::Timespec {
    types::Timespec::new()
        .sec(ns / 1_000_000_000)
        .nsec((ns % 1_000_000_000) as u32)
}

/// When the generator's wait ends: at the next intended start it can submit (`next_due`,
/// None when there is none or every slot is busy), at the window's end, and at least every
/// [`STOP_CHECK_NS`]; once stopping, only the last. Always after `now`.
fn next_wake(now: u64, stopping: bool, next_due: Option<u64>, end_ns: u64) -> u64 {
    let mut wake = now + STOP_CHECK_NS;
    if !stopping {
        wake = wake.min(end_ns);
        if let Some(d) = next_due {
            wake = wake.min(d.saturating_sub(WAKE_EARLY_NS));
        }
    }
    wake.max(now + 1)
}

/// How many of the schedule's `starts` (offsets from `origin_ns`, ascending) are due at `now`.
fn due_by(starts: &[u64], origin_ns: u64, now: u64) -> usize {
    starts.partition_point(|&t| origin_ns + t <= now)
}

/// The window a level's schedule runs in, for the tests.
/// This thread's scheduler run delay so far (sys::sched), for [`super::result::GenWait`].
fn own_delay() -> Option<u64> {
    crate::sys::sched::read_own_thread_delay(&crate::sys::Root::default())
}

#[cfg(test)]
fn test_window(now: u64, ramp: u64, dur: u64) -> crate::load::workload::Window {
    crate::load::workload::Window {
        measure_from_ns: now + ramp,
        end_ns: now + ramp + dur,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_ends_at_the_next_due_request_the_window_end_or_a_stop_check() {
        let now = 1_000_000_000;
        // The next request is due first.
        assert_eq!(
            next_wake(now, false, Some(now + 300_000), now + 1_000_000_000),
            now + 300_000
        );
        // Every slot busy (no next due): the window's end or the stop check.
        assert_eq!(
            next_wake(now, false, None, now + 2_000_000),
            now + 2_000_000
        );
        assert_eq!(
            next_wake(now, false, None, now + 10 * STOP_CHECK_NS),
            now + STOP_CHECK_NS
        );
        // Stopping: only the stop check; never before now.
        assert_eq!(
            next_wake(now, true, Some(now + 1), now),
            now + STOP_CHECK_NS
        );
        assert_eq!(next_wake(now, false, Some(now - 5), now + 100), now + 1);
    }

    #[test]
    fn requests_due_are_counted_up_to_now() {
        let s = [0, 10, 20, 30];
        assert_eq!(due_by(&s, 100, 99), 0);
        assert_eq!(due_by(&s, 100, 100), 1);
        assert_eq!(due_by(&s, 100, 125), 3);
        assert_eq!(due_by(&s, 100, 1_000), 4);
    }

    /// A 1 MiB file in a temporary directory, opened with O_DIRECT where the filesystem has
    /// it (so the reads are really in flight); None when io_uring can't run here.
    fn direct_file() -> Option<(tempfile::TempDir, std::path::PathBuf, std::fs::File)> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
        // On disk before the direct reads (a direct read of a dirty range first writes it).
        std::fs::File::open(&path).unwrap().sync_all().unwrap();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(&path)
            .or_else(|_| std::fs::File::open(&path))
            .unwrap();
        if let Some(why) = unsupported(std::os::fd::AsRawFd::as_raw_fd(&file)) {
            eprintln!("skipped: {why}");
            return None;
        }
        Some((dir, path, file))
    }

    fn spec(duration_ns: u64) -> LevelSpec {
        LevelSpec {
            threads: 4,
            queue_depth: 1,
            pattern: crate::load::Pattern::RandRead,
            block_size: 4096,
            ramp_ns: 50_000_000,
            duration_ns,
            seed: 9,
        }
    }

    /// A real level on a temporary file at a low rate: every request of the window is sent,
    /// and each completion is reaped when it comes, not at the next arrival (at 40/s the next
    /// arrival is 25 ms away on average; a read of the page cache or a disk takes far less).
    #[test]
    fn a_level_on_a_file_sends_its_schedule_and_reaps_without_waiting_for_arrivals() {
        let Some((_dir, path, file)) = direct_file() else {
            return;
        };
        let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
        let spec = spec(500_000_000);
        let span = spec.ramp_ns + spec.duration_ns;
        let starts =
            crate::load::schedule::intended_starts(40.0, span, Default::default(), 3).unwrap();
        let window = test_window(now_ns(), spec.ramp_ns, spec.duration_ns);
        let schedule = Schedule {
            starts: &starts,
            origin_ns: window.measure_from_ns - spec.ramp_ns,
            window,
        };
        let ctl = LevelCtl::default();
        let run = LevelRun {
            fd,
            size_bytes: 1 << 20,
            path: &path,
            spec: &spec,
            schedule: &schedule,
            max_inflight: 4,
        };
        let (st, taken) = run_level(&run, &Tuning::default(), &ctl).unwrap();
        let o = st.open.as_ref().unwrap();
        let in_window = crate::load::schedule::count_between(&starts, spec.ramp_ns, span);
        let ios = st.read_ns.len();
        assert!(taken >= starts.len() - 1, "{taken} of {}", starts.len());
        // Those due in the window, give or take one at each edge still in flight.
        assert!(
            ios + 2 >= in_window && ios <= in_window + 2,
            "{ios} vs {in_window}"
        );
        assert_eq!(o.intended.count, ios);
        assert_eq!(o.pool_waits, 0);
        let svc = st.read_ns.value_at_quantile(0.5);
        assert!(svc < 10_000_000, "median service {svc} ns: reaped late");
        // From the intended start is never shorter than from submission, request by request
        // (the median to HdrHistogram's 3 digits).
        assert!(o.intended.summary().mean as f64 >= st.read_ns.mean() - 1.0);
        assert!(o.intended.hist.value_at_quantile(0.5) as f64 >= 0.999 * svc as f64);
    }

    /// One slot against a rate no single request in flight can keep: the slot is refilled
    /// turn after turn (the submission queue's room comes back after each enter), the
    /// requests that found it busy are counted as waiting, and the level is not kept.
    #[test]
    fn a_pool_too_small_for_the_rate_is_reused_every_turn_and_counted() {
        use super::super::generator::{Generator, OpenEngine};
        use super::super::spec::OpenSpec;
        use crate::load::Engine;
        let Some((_dir, path, file)) = direct_file() else {
            return;
        };
        let spec = spec(200_000_000);
        let open = OpenSpec {
            rate_per_s: 200_000.0,
            arrivals: Default::default(),
            max_inflight: 1,
        };
        let mut e = OpenEngine::new(
            std::os::fd::AsRawFd::as_raw_fd(&file),
            1 << 20,
            path,
            open,
            Generator::Uring(Tuning::default()),
        );
        let st = e.run_level(&spec, &LevelCtl::default()).unwrap();
        let o = st.open.as_ref().unwrap();
        let ios = st.read_ns.len();
        // The slot was refilled turn after turn (a few tens of reads even while the disk is
        // busy writing back a build: 200 ms of reads at a few ms each).
        assert!(ios >= 10, "{ios} reads; late {:?}", o.late.summary());
        assert!(o.pool_waits > 0, "{ios} reads, none waited for the slot");
        assert!(o.scheduled > ios, "{} scheduled, {ios} done", o.scheduled);
        let r = super::super::result::OpenLevelResult::new(&spec, &open, &st, None, None).unwrap();
        assert!(!r.behind.kept, "{:?}", r.behind);
        assert!(r.behind.unsent > 0 || r.behind.pool_waits > 0);
    }
}
