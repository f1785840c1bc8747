//! Filesystems: writing files iosat owns (through a temporary file in the same directory
//! renamed into place, so a reader or a crash never sees half a file; output files given by
//! -o/--html refused when they exist, never replaced without --force), and what a filesystem
//! says about itself (statfs: memory-backed or not; statvfs: free space). Must not import
//! anything above sys/.

use crate::error::{Error, Result};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Replace `path` with `bytes` atomically (temporary file + rename).
pub fn replace_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    let tmp = dir.join(format!(".{name}.iosat-tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| Error::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(path, e)
    })
}

/// statfs f_type of tmpfs and ramfs (linux/magic.h).
pub const TMPFS_MAGIC: i64 = 0x0102_1994;
pub const RAMFS_MAGIC: i64 = 0x8584_58f6;

/// "tmpfs"/"ramfs" when the filesystem holding the open `file` (a directory or a file) keeps
/// its data in memory, from fstatfs f_type; None otherwise or when fstatfs fails.
pub fn memory_fs(file: &File) -> Option<&'static str> {
    // SAFETY: statfs is plain old data; zeroed is a valid value to be overwritten.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid fd and a valid out pointer for the duration of the call.
    let r = unsafe { libc::fstatfs(file.as_raw_fd(), &mut st) };
    if r != 0 {
        return None;
    }
    match st.f_type as i64 {
        TMPFS_MAGIC => Some("tmpfs"),
        RAMFS_MAGIC => Some("ramfs"),
        _ => None,
    }
}

/// [`memory_fs`] of the filesystem holding `path`.
pub fn memory_fs_at(path: &Path) -> Option<&'static str> {
    memory_fs(&File::open(path).ok()?)
}

/// Bytes available to an unprivileged writer on the filesystem holding `dir` (statvfs
/// f_bavail × f_frsize); None when the filesystem reports no size at all (ramfs and other
/// memory filesystems report 0 blocks).
pub fn free_bytes(dir: &Path) -> Result<Option<u64>> {
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|_| {
        Error::io(
            dir,
            std::io::Error::new(std::io::ErrorKind::InvalidInput, "path contains a NUL byte"),
        )
    })?;
    // SAFETY: statvfs is plain old data; zeroed is a valid value to be overwritten.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid NUL-terminated path and a valid out pointer.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(Error::io(dir, std::io::Error::last_os_error()));
    }
    if st.f_blocks == 0 {
        return Ok(None);
    }
    Ok(Some(st.f_bavail as u64 * st.f_frsize as u64))
}

/// Write a file iosat creates: refuses to replace an existing file unless `force`, and
/// writes through a temporary file renamed into place, so a failed write never leaves half a
/// report where the user's file was.
pub fn write_new_file(path: &Path, bytes: &[u8], force: bool) -> Result<()> {
    if path.exists() && !force {
        return Err(Error::usage(
            "--output",
            path.display(),
            "names a file that exists; pass --force to replace it",
        ));
    }
    replace_file(path, bytes)
}

/// Refuse an output file (`flag` names it: `--html`, `-o`) that exists, before a run starts
/// (so a long run does not end in a refusal, and a user's file is never replaced).
pub fn check_new_file(flag: &str, path: &Path) -> Result<()> {
    if path.exists() {
        return Err(Error::usage(
            flag,
            path.display(),
            "names a file that exists; iosat never overwrites it (pick another name or remove it)",
        ));
    }
    Ok(())
}

/// `--html FILE`: see [`check_new_file`].
pub fn check_new_page(path: &Path) -> Result<()> {
    check_new_file("--html", path)
}

/// A file a run writes and rewrites (`--html FILE` after each level or interval, sweep's
/// `-o FILE`): the first write refuses an existing file; later writes replace what this run
/// wrote.
#[derive(Debug)]
pub struct PageFile {
    pub path: PathBuf,
    flag: &'static str,
    written: bool,
}

impl PageFile {
    /// The page of `--html FILE`.
    pub fn new(path: &Path) -> PageFile {
        PageFile::for_flag("--html", path)
    }

    /// The output file given by `flag`.
    pub fn for_flag(flag: &'static str, path: &Path) -> PageFile {
        PageFile {
            path: path.to_path_buf(),
            flag,
            written: false,
        }
    }

    pub fn write(&mut self, html: &str) -> Result<()> {
        if !self.written {
            check_new_file(self.flag, &self.path)?;
        }
        replace_file(&self.path, html.as_bytes())?;
        self.written = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_disk_directory_has_free_space_and_is_not_memory() {
        let d = std::env::current_dir().unwrap();
        let free = super::free_bytes(&d).unwrap();
        assert!(free.is_some_and(|f| f > 0));
        assert!(super::free_bytes(std::path::Path::new("/no/such/dir")).is_err());
        assert_eq!(
            super::memory_fs_at(std::path::Path::new("/no/such/dir")),
            None
        );
    }
}
