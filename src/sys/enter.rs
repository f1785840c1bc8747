//! `io_uring_enter(2)` for the uring engine's hot loop, issued inline where the loop runs.
//! Imports only: sys/, error, units.
//!
//! Why not the io-uring crate's `Submitter::submit_and_wait`: on the development VM (AMD EPYC,
//! kernel 6.18 with the SRSO "Safe RET" mitigation) a system call whose `syscall` instruction is
//! followed by the `ret` of a wrapper function (glibc's `syscall()`, or the crate's submit, with
//! or without its `direct-syscall` feature) cost about 220 ns more than the same call issued
//! inline in the caller's loop, most of it counted as kernel time (a minimal loop of 4 KiB
//! page-cache reads at depth 1, one `io_uring_enter` per read: 0.81-0.86 M IOPS through a
//! function, 0.96-1.06 M inline, alternating runs, 2026-11-22). fio and its t/io_uring issue
//! `io_uring_enter` inline for their hot path the same way (fio's `__do_syscall6`,
//! arch/arch-x86_64.h). Elsewhere than x86-64 the call goes through libc.
//!
//! The ring's fd is registered with the kernel (IORING_REGISTER_RING_FDS, 5.18+), so each enter
//! names it by index and the kernel skips the file lookup; without it, by its fd. [`Enter`]
//! registers it itself: the crate's `Submitter::register_ring_fd` keeps the index private, and
//! an inline enter must name it.

use std::os::fd::RawFd;

const IORING_ENTER_GETEVENTS: u32 = 1;
const IORING_ENTER_REGISTERED_RING: u32 = 1 << 4;
const IORING_REGISTER_RING_FDS: libc::c_long = 20;
const IORING_UNREGISTER_RING_FDS: libc::c_long = 21;

/// `struct io_uring_rsrc_update` (include/uapi/linux/io_uring.h).
#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

/// How a thread enters one ring: by its registered index, or by its fd.
pub struct Enter {
    fd: RawFd,
    registered: Option<u32>,
}

impl Enter {
    /// For the ring `ring_fd`, used by the calling thread only (a registered index belongs to
    /// the thread that registered it). Registers the ring's fd where the kernel can.
    pub fn new(ring_fd: RawFd) -> Enter {
        let mut up = RsrcUpdate {
            offset: u32::MAX, // any free slot; the kernel writes back which
            resv: 0,
            data: ring_fd as u64,
        };
        // SAFETY: `up` is a valid io_uring_rsrc_update for the duration of the call.
        let r = unsafe {
            libc::syscall(
                libc::SYS_io_uring_register,
                ring_fd as libc::c_long,
                IORING_REGISTER_RING_FDS,
                &mut up as *mut RsrcUpdate,
                1 as libc::c_long,
            )
        };
        Enter {
            fd: ring_fd,
            registered: (r == 1).then_some(up.offset),
        }
    }

    /// Whether enters name the ring by a registered index.
    pub fn is_registered(&self) -> bool {
        self.registered.is_some()
    }

    /// Submit `to_submit` published entries and, when `wait` > 0, wait until that many
    /// completions are posted (GETEVENTS, which also runs deferred completion work). `getevents`
    /// adds GETEVENTS to a call that does not wait (a CQ overflow to flush). Ok: how many
    /// entries the kernel consumed; Err: the errno, EINTR included.
    #[inline(always)]
    pub fn enter(&self, to_submit: u32, wait: u32, getevents: bool) -> std::io::Result<u32> {
        let (fd, mut flags) = match self.registered {
            Some(i) => (i as i64, IORING_ENTER_REGISTERED_RING),
            None => (self.fd as i64, 0),
        };
        if wait > 0 || getevents {
            flags |= IORING_ENTER_GETEVENTS;
        }
        // SAFETY: io_uring_enter with no argument pointer (NULL, size 0): the kernel reads only
        // the rings it owns, which the caller has published entries into.
        let ret = unsafe { raw_enter(fd, to_submit, wait, flags) };
        if ret < 0 {
            Err(std::io::Error::from_raw_os_error(-ret as i32))
        } else {
            Ok(ret as u32)
        }
    }
}

impl Drop for Enter {
    fn drop(&mut self) {
        if let Some(i) = self.registered {
            let mut up = RsrcUpdate {
                offset: i,
                resv: 0,
                data: 0,
            };
            // SAFETY: as in `new`; unregistering the slot this thread registered.
            unsafe {
                libc::syscall(
                    libc::SYS_io_uring_register,
                    self.fd as libc::c_long,
                    IORING_UNREGISTER_RING_FDS,
                    &mut up as *mut RsrcUpdate,
                    1 as libc::c_long,
                );
            }
        }
    }
}

/// The system call itself; returns the kernel's value (negative errno on failure).
///
/// # Safety
/// The caller's rings must be valid for the kernel to read (see [`Enter::enter`]).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn raw_enter(fd: i64, to_submit: u32, wait: u32, flags: u32) -> i64 {
    let ret: i64;
    // The x86-64 system-call convention: number in rax, arguments in rdi, rsi, rdx, r10, r8,
    // r9; the kernel clobbers rcx and r11.
    core::arch::asm!(
        "syscall",
        inlateout("rax") libc::SYS_io_uring_enter => ret,
        in("rdi") fd,
        in("rsi") to_submit as u64,
        in("rdx") wait as u64,
        in("r10") flags as u64,
        in("r8") 0u64,
        in("r9") 0u64,
        lateout("rcx") _,
        lateout("r11") _,
        options(nostack),
    );
    ret
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
unsafe fn raw_enter(fd: i64, to_submit: u32, wait: u32, flags: u32) -> i64 {
    let r = libc::syscall(
        libc::SYS_io_uring_enter,
        fd as libc::c_long,
        to_submit as libc::c_long,
        wait as libc::c_long,
        flags as libc::c_long,
        std::ptr::null::<libc::c_void>(),
        0 as libc::c_long,
    );
    if r < 0 {
        -(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO) as i64)
    } else {
        r as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use io_uring::{opcode, IoUring};
    use std::os::fd::AsRawFd;

    /// A NOP submitted and waited for through the registered index, then through the fd
    /// (after the registration is dropped): both post its completion.
    #[test]
    fn enter_submits_and_waits_by_index_and_by_fd() {
        let Ok(mut ring) = IoUring::new(4) else {
            eprintln!("skipped: no io_uring");
            return;
        };
        let fd = ring.as_raw_fd();
        for registered in [true, false] {
            let e = if registered {
                let e = Enter::new(fd);
                assert!(e.is_registered(), "5.18+ registers the ring fd");
                e
            } else {
                Enter {
                    fd,
                    registered: None,
                }
            };
            let nop = opcode::Nop::new().build().user_data(7);
            // SAFETY: a NOP references no memory.
            unsafe { ring.submission().push(&nop).unwrap() };
            assert_eq!(e.enter(1, 1, false).unwrap(), 1);
            let done: Vec<_> = ring.completion().map(|c| c.user_data()).collect();
            assert_eq!(done, [7], "registered={registered}");
        }
        // A bad fd comes back as its errno, not a panic.
        let bad = Enter {
            fd: -1,
            registered: None,
        };
        assert_eq!(
            bad.enter(0, 0, false).unwrap_err().raw_os_error(),
            Some(libc::EBADF)
        );
    }
}
