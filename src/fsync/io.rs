//! The I/O of the fsync experiment: test files iosat creates and always removes, the timed write +
//! sync calls with their error policy (a failed fsync is fatal, never retried), the O_DIRECT
//! refusal, the Ctrl-C flag. The system calls themselves are std's or sys/'s (the aligned buffer,
//! pwritev2, fadvise); no `unsafe` here.
//! Imports only: fsync/, error, sys/.

use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::SyncCall;
pub use crate::sys::file::AlignedBuf;

/// Catch Ctrl-C (and SIGTERM, SIGHUP) so the loops stop, the files are removed and results
/// printed. No SA_RESTART: a blocked read returns EINTR.
pub fn install_sigint_handler() {
    crate::sys::signal::catch_stop_signals(false);
}

/// The warning for a test directory on a memory filesystem, or None.
pub fn memory_fs_warning(dir: &Path) -> Option<String> {
    crate::sys::fs::memory_fs_at(dir).map(|fs| {
        format!(
            "{} is on {fs}: memory, not a disk; fsync is a no-op there and the numbers say nothing about storage",
            dir.display()
        )
    })
}

pub fn interrupted() -> bool {
    crate::sys::signal::stop_requested()
}

/// An open file with the timed write and sync calls; closed when dropped.
pub struct Handle {
    file: File,
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

/// Open read-write with `extra_flags` (O_DIRECT, O_DSYNC, O_SYNC); `create` makes a new file
/// (O_CREAT|O_EXCL, mode 0600) and never opens an existing one. O_CLOEXEC always (std).
fn open_raw(
    path: &Path,
    extra_flags: libc::c_int,
    create: bool,
) -> std::result::Result<Handle, OpenError> {
    let mut opts = OpenOptions::new();
    opts.read(true)
        .write(true)
        .create_new(create)
        .mode(0o600)
        .custom_flags(extra_flags);
    match opts.open(path) {
        Ok(file) => Ok(Handle {
            file,
            path: path.to_path_buf(),
        }),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) && extra_flags & libc::O_DIRECT != 0 => {
            Err(OpenError::DirectRefused)
        }
        Err(e) => Err(OpenError::Other(Error::io(path, e))),
    }
}

impl Handle {
    fn err(&self, what: &str, e: std::io::Error) -> Error {
        Error::io(
            &self.path,
            std::io::Error::new(e.kind(), format!("{what}: {e}")),
        )
    }

    /// pwrite the whole buffer at `offset` (a short write is continued for the rest, EINTR
    /// retried).
    pub fn write_all_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        self.file
            .write_all_at(buf, offset)
            .map_err(|e| self.err("write failed", e))
    }

    /// pwritev2(…, RWF_DSYNC): a per-write O_DSYNC (Linux 4.7).
    pub fn write_dsync_at(&self, buf: &[u8], offset: u64) -> Result<()> {
        crate::sys::file::write_dsync_at(&self.file, buf, offset)
            .map_err(|e| self.err("pwritev2(RWF_DSYNC) failed", e))
    }

    /// fsync or fdatasync. An error is fatal and never retried: after a failed fsync the
    /// kernel may have dropped the dirty pages, so a later success would prove nothing.
    pub fn sync(&self, call: SyncCall) -> Result<()> {
        let (data_only, name) = match call {
            SyncCall::None => return Ok(()),
            SyncCall::Fsync => (false, "fsync"),
            SyncCall::Fdatasync => (true, "fdatasync"),
        };
        let r = crate::sys::file::flush(&self.file, data_only);
        r.map_err(|e| self.err(&format!("{name} failed (fatal, not retried)"), e))
    }

    /// pread exactly buf.len() bytes at `offset`; Ok(false) at end of file.
    pub fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> Result<bool> {
        match self.file.read_exact_at(buf, offset) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
            Err(e) => Err(self.err("read-back failed", e)),
        }
    }

    pub fn size_bytes(&self) -> Result<u64> {
        self.file
            .metadata()
            .map(|m| m.len())
            .map_err(|e| self.err("fstat failed", e))
    }

    /// Ask the kernel to drop this file's clean cached pages so a read-back reaches the device.
    pub fn drop_cache(&self) {
        crate::sys::file::drop_cache(&self.file);
    }
}

/// A test file iosat created (O_CREAT|O_EXCL|O_NOFOLLOW) and removes when dropped, on every
/// exit path, while the name still is that file (device and inode compared).
pub struct TestFile {
    pub path: PathBuf,
    /// A plain read-write descriptor (no O_DIRECT/O_SYNC): preallocation and read-back.
    pub base: Handle,
    owned: crate::sys::fs::OwnedFile,
    /// Device and inode of the file created, to tell a failed removal from a replaced name.
    dev_ino: (u64, u64),
}

impl Drop for TestFile {
    /// Removed by `owned`; when it could not be (an I/O error made the filesystem read-only:
    /// EROFS), one line names the file left behind, instead of silence until the next run.
    fn drop(&mut self) {
        use std::os::unix::fs::MetadataExt;
        if self.owned.remove() {
            return;
        }
        let still_ours =
            std::fs::symlink_metadata(&self.path).is_ok_and(|m| (m.dev(), m.ino()) == self.dev_ino);
        if !still_ours {
            return;
        }
        // Again, for the reason.
        if let Err(e) = std::fs::remove_file(&self.path) {
            crate::error::warn(format_args!(
                "could not remove the test file {}: {e}; remove it by hand (the next fsync run in \
                 that directory removes it too)",
                self.path.display()
            ));
        }
    }
}

impl TestFile {
    /// Create a new, empty file; never opens an existing one nor follows a symlink.
    pub fn create(path: &Path) -> Result<TestFile> {
        use std::os::unix::fs::MetadataExt;
        let (file, owned) =
            crate::sys::fs::OwnedFile::create_at(path, 0, 0o600).map_err(|e| Error::io(path, e))?;
        let m = file.metadata().map_err(|e| Error::io(path, e))?;
        Ok(TestFile {
            dev_ino: (m.dev(), m.ino()),
            path: path.to_path_buf(),
            base: Handle {
                file,
                path: path.to_path_buf(),
            },
            owned,
        })
    }

    /// A second descriptor on the same file with a method's open flags.
    /// Opened through /proc/self/fd, so it is this file even if the name was replaced.
    pub fn open_with(&self, extra_flags: libc::c_int) -> std::result::Result<Handle, OpenError> {
        use std::os::fd::AsRawFd;
        let fd_path = PathBuf::from(format!("/proc/self/fd/{}", self.base.file.as_raw_fd()));
        let mut h = open_raw(&fd_path, extra_flags, false)?;
        h.path = self.path.clone();
        Ok(h)
    }
}
