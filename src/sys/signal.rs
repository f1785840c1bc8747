//! Stop signals — SIGINT (Ctrl-C), SIGTERM (kill, timeout) and SIGHUP (a closed terminal) — turned
//! into one flag that the long-running commands poll, so that they stop, remove the files they
//! created and print what they measured whichever way they are stopped; and SIGUSR1, a request
//! for a hindsight dump (monitor::hindsight), turned into another.
//! Imports only: sys/, error, units.

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static STOP: AtomicBool = AtomicBool::new(false);
/// The first stop signal that arrived (0: none).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_stop(sig: libc::c_int) {
    // Only atomic operations: async-signal-safe.
    let _ = SIGNAL.compare_exchange(0, sig, Ordering::Relaxed, Ordering::Relaxed);
    STOP.store(true, Ordering::Relaxed);
}

/// Catch the stop signals. `restart`: SA_RESTART, so that blocking calls in other threads
/// (pread, io_uring_enter) carry on instead of failing with EINTR; without it a blocked call
/// returns EINTR and the caller checks [`stop_requested`].
pub fn catch_stop_signals(restart: bool) {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: sigaction is plain old data, zeroed then filled as sigaction(2) expects; the
        // handler only stores to an atomic.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_stop as extern "C" fn(libc::c_int) as usize;
            sa.sa_flags = if restart { libc::SA_RESTART } else { 0 };
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

static DUMP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_dump(_: libc::c_int) {
    DUMP.store(true, Ordering::Relaxed);
}

/// Catch SIGUSR1 (whose default would end the process) as a request for a hindsight dump;
/// SA_RESTART, so that no blocking call fails for it.
pub fn catch_dump_signal() {
    // SAFETY: as in catch_stop_signals: a zeroed sigaction filled as sigaction(2) expects,
    // and a handler that only stores to an atomic.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_dump as extern "C" fn(libc::c_int) as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut());
    }
}

/// True once per SIGUSR1 received since the last call.
pub fn take_dump_request() -> bool {
    DUMP.swap(false, Ordering::Relaxed)
}

/// The flag itself, for code that takes an `&AtomicBool` to poll.
pub fn stop_flag() -> &'static AtomicBool {
    &STOP
}

/// True once a stop signal arrived.
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// The name of the first stop signal that arrived ("SIGINT", "SIGTERM", "SIGHUP"), if any.
pub fn stop_signal() -> Option<&'static str> {
    signal_name(SIGNAL.load(Ordering::Relaxed))
}

fn signal_name(sig: libc::c_int) -> Option<&'static str> {
    match sig {
        libc::SIGINT => Some("SIGINT"),
        libc::SIGTERM => Some("SIGTERM"),
        libc::SIGHUP => Some("SIGHUP"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_the_stop_signals() {
        assert_eq!(super::signal_name(libc::SIGTERM), Some("SIGTERM"));
        assert_eq!(super::signal_name(0), None);
    }
}
