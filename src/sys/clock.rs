//! Clock reads: CLOCK_MONOTONIC for intervals (never the requested interval, docs/design.md §4) and
//! CLOCK_REALTIME for timestamps. Integer nanoseconds.
//! Imports only: sys/, error, units.

#[inline]
fn read(clock: libc::clockid_t) -> libc::timespec {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call; both clock ids
    // used here exist on every Linux kernel, so the call cannot fail.
    unsafe {
        libc::clock_gettime(clock, &mut ts);
    }
    ts
}

/// Nanoseconds on the monotonic clock (arbitrary origin, never jumps). One vDSO call, no
/// syscall: cheap enough for the engines' hot loops (two reads per I/O).
#[inline]
pub fn monotonic_ns() -> u64 {
    let ts = read(libc::CLOCK_MONOTONIC);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds since the Unix epoch (wall clock; may jump).
pub fn wall_ns() -> i64 {
    let ts = read(libc::CLOCK_REALTIME);
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Sleep until `deadline_ns` on the monotonic clock, or until a signal arrives (a caught stop
/// signal must not wait out a long `-i`). Returns false when woken early by a signal.
pub fn sleep_until_ns(deadline_ns: u64) -> bool {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `ts` is a valid timespec; a null remainder is allowed with TIMER_ABSTIME.
    let rc = unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
    rc != libc::EINTR
}

/// Ask the kernel to wake this thread from timed sleeps as close to the deadline as it can
/// (timer slack of 1 ns instead of the default 50 µs; prctl(2) PR_SET_TIMERSLACK): an
/// open-loop generator's submissions are only as punctual as its wake-ups. Best effort.
pub fn precise_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument and affects only this thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn monotonic_does_not_go_back() {
        let a = super::monotonic_ns();
        let b = super::monotonic_ns();
        assert!(b >= a);
        assert!(super::wall_ns() > 1_500_000_000_000_000_000);
    }
}
