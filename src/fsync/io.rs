//! The raw I/O of the fsync experiment: test files iosat creates and always removes, an
//! aligned buffer for O_DIRECT, the timed write + sync calls, the Ctrl-C flag, free space.
//! Must not import anything outside fsync/, error and sys::signal.

use crate::error::{Error, Result};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::SyncCall;

/// Catch Ctrl-C (and SIGTERM, SIGHUP) so the loops stop, the files are removed and results
/// printed. No SA_RESTART: a blocked read returns EINTR.
pub fn install_sigint_handler() {
    crate::sys::signal::catch_stop_signals(false);
}

pub fn interrupted() -> bool {
    crate::sys::signal::stop_requested()
}

fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("path without NUL")
}

/// A heap buffer aligned for O_DIRECT (4096 covers every logical block size Linux uses).
pub struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the buffer is uniquely owned, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    pub const ALIGN: usize = 4096;

    pub fn new(len: usize) -> AlignedBuf {
        let layout = std::alloc::Layout::from_size_align(len.max(1), Self::ALIGN).unwrap();
        // SAFETY: layout has non-zero size; null is handled.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        AlignedBuf { ptr, len }
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for len initialised bytes for the life of self.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and &mut self guarantees uniqueness.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        let layout = std::alloc::Layout::from_size_align(self.len.max(1), Self::ALIGN).unwrap();
        // SAFETY: allocated in new() with this very layout.
        unsafe { std::alloc::dealloc(self.ptr, layout) }
    }
}

/// An open file descriptor with the timed write and sync calls; closed when dropped.
pub struct Handle {
    fd: libc::c_int,
    path: PathBuf,
}

/// Why opening a test file failed.
#[derive(Debug)]
pub enum OpenError {
    /// The filesystem refuses O_DIRECT (EINVAL from open, e.g. tmpfs).
    DirectRefused,
    Other(Error),
}

impl OpenError {
    pub fn into_error(self, path: &Path) -> Error {
        match self {
            OpenError::Other(e) => e,
            OpenError::DirectRefused => Error::io(
                path,
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "the filesystem refuses O_DIRECT (EINVAL on open)",
                ),
            ),
        }
    }
}

fn open_raw(path: &Path, flags: libc::c_int) -> std::result::Result<Handle, OpenError> {
    let c = cpath(path);
    // SAFETY: c is a valid NUL-terminated path; the fd is owned by the returned Handle.
    let fd = unsafe { libc::open(c.as_ptr(), flags | libc::O_CLOEXEC, 0o600 as libc::c_uint) };
    if fd < 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINVAL) && flags & libc::O_DIRECT != 0 {
            return Err(OpenError::DirectRefused);
        }
        return Err(OpenError::Other(Error::io(path, e)));
    }
    Ok(Handle {
        fd,
        path: path.to_path_buf(),
    })
}

impl Handle {
    fn err(&self, what: &str, e: std::io::Error) -> Error {
        Error::io(
            &self.path,
            std::io::Error::new(e.kind(), format!("{what}: {e}")),
        )
    }

    /// pwrite the whole buffer at `offset` (a short write is continued for the rest).
    pub fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        let mut done = 0usize;
        while done < buf.len() {
            // SAFETY: buf[done..] is valid for reads of its length; fd is open.
            let n = unsafe {
                libc::pwrite(
                    self.fd,
                    buf[done..].as_ptr().cast(),
                    buf.len() - done,
                    (offset + done as u64) as libc::off_t,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(self.err("write failed", e));
            }
            if n == 0 {
                return Err(self.err("write failed", std::io::Error::other("wrote 0 bytes")));
            }
            done += n as usize;
        }
        Ok(())
    }

    /// pwritev2(…, RWF_DSYNC): a per-write O_DSYNC (Linux 4.7).
    pub fn write_dsync_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        let iov = libc::iovec {
            iov_base: buf.as_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        loop {
            // SAFETY: one iovec pointing at a live buffer; fd is open.
            let n =
                unsafe { libc::pwritev2(self.fd, &iov, 1, offset as libc::off_t, libc::RWF_DSYNC) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(self.err("pwritev2(RWF_DSYNC) failed", e));
            }
            if n as usize != buf.len() {
                // Finishing a partial durable write would need a second one; report it instead.
                return Err(self.err(
                    "pwritev2(RWF_DSYNC) failed",
                    std::io::Error::other(format!("short write: {n} of {} bytes", buf.len())),
                ));
            }
            return Ok(());
        }
    }

    /// fsync or fdatasync. An error is fatal and never retried: after a failed fsync the
    /// kernel may have dropped the dirty pages, so a later success would prove nothing.
    pub fn sync(&self, call: SyncCall) -> Result<()> {
        // SAFETY: plain syscalls on an open fd.
        let (rc, name) = unsafe {
            match call {
                SyncCall::None => return Ok(()),
                SyncCall::Fsync => (libc::fsync(self.fd), "fsync"),
                SyncCall::Fdatasync => (libc::fdatasync(self.fd), "fdatasync"),
            }
        };
        if rc != 0 {
            let e = std::io::Error::last_os_error();
            return Err(self.err(&format!("{name} failed (fatal, not retried)"), e));
        }
        Ok(())
    }

    /// pread exactly buf.len() bytes at `offset`; Ok(false) at end of file.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<bool> {
        let mut done = 0usize;
        while done < buf.len() {
            // SAFETY: buf[done..] is valid for writes of its length; fd is open.
            let n = unsafe {
                libc::pread(
                    self.fd,
                    buf[done..].as_mut_ptr().cast(),
                    buf.len() - done,
                    (offset + done as u64) as libc::off_t,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(self.err("read-back failed", e));
            }
            if n == 0 {
                return Ok(false);
            }
            done += n as usize;
        }
        Ok(true)
    }

    pub fn size_bytes(&self) -> Result<u64> {
        // SAFETY: zeroed stat filled by the kernel.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::fstat(self.fd, &mut st) };
        if rc != 0 {
            return Err(self.err("fstat failed", std::io::Error::last_os_error()));
        }
        Ok(st.st_size as u64)
    }

    /// Ask the kernel to drop this file's clean cached pages so a read-back reaches the device.
    pub fn drop_cache(&self) {
        // SAFETY: advisory syscall on an open fd; failure only means reads may hit the cache.
        unsafe {
            libc::posix_fadvise(self.fd, 0, 0, libc::POSIX_FADV_DONTNEED);
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: fd was opened by us and is closed exactly once.
        unsafe {
            libc::close(self.fd);
        }
    }
}

/// A test file iosat created (O_CREAT|O_EXCL) and removes when dropped, on every exit path.
pub struct TestFile {
    pub path: PathBuf,
    /// A plain read-write descriptor (no O_DIRECT/O_SYNC): preallocation and read-back.
    pub base: Handle,
}

impl TestFile {
    /// Create a new, empty file; never opens an existing one.
    pub fn create(path: &Path) -> Result<TestFile> {
        let base = open_raw(path, libc::O_RDWR | libc::O_CREAT | libc::O_EXCL)
            .map_err(|e| e.into_error(path))?;
        Ok(TestFile {
            path: path.to_path_buf(),
            base,
        })
    }

    /// A second descriptor on the same file with a method's open flags.
    pub fn open_with(&self, extra_flags: libc::c_int) -> std::result::Result<Handle, OpenError> {
        open_raw(&self.path, libc::O_RDWR | extra_flags)
    }
}

impl Drop for TestFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Bytes available to an unprivileged writer on the filesystem holding `dir`; None when the
/// filesystem reports no size at all (ramfs and other memory filesystems report 0 blocks).
pub fn free_bytes(dir: &Path) -> Result<Option<u64>> {
    let c = cpath(dir);
    // SAFETY: zeroed statvfs filled by the kernel; c is a valid path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    if rc != 0 {
        return Err(Error::io(dir, std::io::Error::last_os_error()));
    }
    if st.f_blocks == 0 {
        return Ok(None);
    }
    Ok(Some(st.f_bavail as u64 * st.f_frsize as u64))
}

/// The filesystem type name of `dir` (from statfs f_type), for the tmpfs warning.
pub fn fs_magic(dir: &Path) -> Option<i64> {
    let c = cpath(dir);
    // SAFETY: zeroed statfs filled by the kernel.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statfs(c.as_ptr(), &mut st) };
    (rc == 0).then_some(st.f_type as i64)
}

pub const TMPFS_MAGIC: i64 = 0x0102_1994;
pub const RAMFS_MAGIC: i64 = 0x8584_58f6;

/// "tmpfs"/"ramfs" when `dir` is on a memory filesystem.
pub fn memory_fs(dir: &Path) -> Option<&'static str> {
    match fs_magic(dir)? {
        TMPFS_MAGIC => Some("tmpfs"),
        RAMFS_MAGIC => Some("ramfs"),
        _ => None,
    }
}
