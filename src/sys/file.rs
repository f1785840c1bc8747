//! The per-file system calls std does not offer, and the one buffer aligned for O_DIRECT: statx's
//! direct-I/O alignment, posix_fadvise (page-cache drop), pwritev2(RWF_DSYNC), and `AlignedBuf`,
//! shared by load/ (the sweep engines, the target layout) and fsync/. Policy (what to refuse, what
//! to tell the user) stays with the callers.
//! Imports only: sys/, error, units.

use std::fs::File;
use std::os::fd::AsRawFd;

/// A zero-initialised heap buffer aligned for O_DIRECT (4096 covers every logical block size
/// Linux supports for direct I/O on common devices). Uniquely owned, like a `Vec<u8>`.
pub struct AlignedBuf {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

// SAFETY: the buffer is plain memory owned by this value; moving it to another thread is fine.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    pub const ALIGN: usize = 4096;

    pub fn new(len: usize) -> AlignedBuf {
        let layout =
            std::alloc::Layout::from_size_align(len.max(1), Self::ALIGN).expect("valid layout");
        // SAFETY: the layout has a non-zero size; a null result is handled below.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, layout }
    }

    pub fn len(&self) -> usize {
        self.layout.size()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for layout.size() bytes, initialised (alloc_zeroed) and uniquely
        // borrowed through &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.layout.size()) }
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: as above, shared borrow.
        unsafe { std::slice::from_raw_parts(self.ptr, self.layout.size()) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: ptr was allocated with exactly this layout and is freed once.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) }
    }
}

/// Direct-I/O offset alignment from statx(STATX_DIOALIGN) (Linux 6.1+), for files and block
/// devices alike; for block devices on older kernels, BLKSSZGET. None when neither answers.
pub fn dio_align(file: &File) -> Option<u32> {
    // The kernel's struct statx is 256 bytes; stx_dio_offset_align sits at byte 0x9c. Declared
    // by hand because libc's glibc struct lacks the 6.1 fields.
    #[repr(C, align(8))]
    struct RawStatx([u8; 256]);
    let mut raw = RawStatx([0; 256]);
    let empty = c"";
    // SAFETY: statx writes at most 256 bytes into `raw`; the path is a valid empty C string used
    // with AT_EMPTY_PATH on a valid fd.
    let r = unsafe {
        libc::syscall(
            libc::SYS_statx,
            file.as_raw_fd(),
            empty.as_ptr(),
            libc::AT_EMPTY_PATH,
            0x2000u32, // STATX_DIOALIGN
            raw.0.as_mut_ptr(),
        )
    };
    if r == 0 {
        let mask = u32::from_ne_bytes(raw.0[0..4].try_into().expect("4 bytes"));
        let align = u32::from_ne_bytes(raw.0[0x9c..0xa0].try_into().expect("4 bytes"));
        if mask & 0x2000 != 0 && align > 0 {
            return Some(align);
        }
    }
    let mut ssz: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one int; fails harmlessly (ENOTTY) on regular files.
    let r = unsafe { libc::ioctl(file.as_raw_fd(), 0x1268, &mut ssz) };
    (r == 0 && ssz > 0).then_some(ssz as u32)
}

/// Ask the kernel to drop the file's clean cached pages (POSIX_FADV_DONTNEED), so what follows
/// reads the device, not memory. Advice only: failure means reads may hit the cache.
pub fn drop_cache(file: &File) {
    // SAFETY: an advisory syscall on a valid fd; no memory is passed.
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
    }
}

/// fallocate(2) mode 0: give the file `len` bytes of real blocks (the free space is taken
/// now). EOPNOTSUPP where the filesystem cannot (ramfs); EINTR retried.
pub fn allocate(file: &File, len: u64) -> std::io::Result<()> {
    loop {
        // SAFETY: a plain syscall on a valid fd; no memory is passed.
        let r = unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, len as libc::off_t) };
        if r == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// fsync(2), or fdatasync(2) when `data_only`: one call, never retried (not even on EINTR),
/// because after a failed flush the kernel may have dropped the dirty pages and a later success
/// would prove nothing. (std's sync_all/sync_data retry EINTR.)
pub fn flush(file: &File, data_only: bool) -> std::io::Result<()> {
    // SAFETY: plain syscalls on a valid fd; no memory is passed.
    let rc = unsafe {
        if data_only {
            libc::fdatasync(file.as_raw_fd())
        } else {
            libc::fsync(file.as_raw_fd())
        }
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// pwritev2(…, RWF_DSYNC) of the whole buffer at `offset`: a per-write O_DSYNC (Linux 4.7).
/// EINTR is retried (nothing was written); a short write is an error, because finishing a
/// partial durable write would need a second one.
pub fn write_dsync_at(file: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    let iov = libc::iovec {
        iov_base: buf.as_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    loop {
        // SAFETY: one iovec pointing at a live buffer of iov_len bytes; the fd is open.
        let n = unsafe {
            libc::pwritev2(
                file.as_raw_fd(),
                &iov,
                1,
                offset as libc::off_t,
                libc::RWF_DSYNC,
            )
        };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n as usize != buf.len() {
            return Err(std::io::Error::other(format!(
                "short write: {n} of {} bytes",
                buf.len()
            )));
        }
        return Ok(());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_buffer_is_aligned_and_zeroed() {
        let mut b = AlignedBuf::new(8192);
        assert_eq!(b.as_mut_ptr() as usize % AlignedBuf::ALIGN, 0);
        assert_eq!(b.len(), 8192);
        assert!(b.as_slice().iter().all(|&x| x == 0));
    }

    #[test]
    fn dsync_write_lands() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&p)
            .unwrap();
        write_dsync_at(&f, b"abcd", 4).unwrap();
        flush(&f, true).unwrap();
        flush(&f, false).unwrap();
        drop_cache(&f);
        assert_eq!(std::fs::read(&p).unwrap(), b"\0\0\0\0abcd");
        assert!(dio_align(&f).map_or(true, |a| a >= 512));
    }
}
