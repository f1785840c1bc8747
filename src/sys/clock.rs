//! Clock reads: CLOCK_MONOTONIC for intervals (never the requested interval, DESIGN.md §4) and
//! CLOCK_REALTIME for timestamps. Integer nanoseconds.

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

/// Nanoseconds on the monotonic clock (arbitrary origin, never jumps).
pub fn monotonic_ns() -> u64 {
    let ts = read(libc::CLOCK_MONOTONIC);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds since the Unix epoch (wall clock; may jump).
pub fn wall_ns() -> i64 {
    let ts = read(libc::CLOCK_REALTIME);
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
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
