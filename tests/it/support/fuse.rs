//! The skeleton both FUSE servers of the tests stand on ([`super::knowndev`], [`super::failfs`]):
//! whether a FUSE mount can be had here, the attributes of a flat directory's root and files,
//! and a mount in a temporary directory of its own that drop takes down, also when a test
//! panics (and when the run is interrupted: `reap`). Imports only: std, libc, fuser, tempfile, the
//! strict-mode skips of `util` and `reap`.

use fuser::{FileAttr, FileType, Filesystem, MountOption};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// The root directory's inode.
pub const ROOT_INO: u64 = 1;

/// Why a FUSE mount can't be had here (the test then skips), or None when it can.
fn why_not() -> Option<&'static str> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("a FUSE test device needs root (mount, losetup)");
    }
    if !Path::new("/dev/fuse").exists() {
        return Some("no /dev/fuse (modprobe fuse)");
    }
    None
}

/// Whether FUSE mounts can be had here; prints "skipped: ..." when not.
pub fn available() -> bool {
    match why_not() {
        // /dev/fuse missing after scripts/test.sh's `modprobe fuse` is the kernel's lack.
        Some(why) if why.contains("/dev/fuse") => {
            super::util::skip_lacking(why);
            false
        }
        Some(why) => {
            super::util::skip(why);
            false
        }
        None => true,
    }
}

/// The attributes of the root directory (`ROOT_INO`, size 0) or of a regular file of `size`
/// bytes with mode `perm`, owned by root, every time stamp `time`.
pub fn attr(ino: u64, size: u64, perm: u16, time: SystemTime) -> FileAttr {
    let root = ino == ROOT_INO;
    let size = if root { 0 } else { size };
    FileAttr {
        ino,
        size,
        blocks: size.div_ceil(512),
        atime: time,
        mtime: time,
        ctime: time,
        crtime: time,
        kind: if root {
            FileType::Directory
        } else {
            FileType::RegularFile
        },
        perm: if root { 0o755 } else { perm },
        nlink: if root { 2 } else { 1 },
        uid: 0,
        gid: 0,
        rdev: 0,
        blksize: 4096,
        flags: 0,
    }
}

/// A FUSE server mounted read-write on `mnt` in a temporary directory of its own. Drop
/// unmounts it (retrying for 5 s while it is busy, then detaching it lazily), which ends the
/// session thread's read of /dev/fuse, then removes the directory.
pub struct Mount {
    mountpoint: PathBuf,
    session: Option<fuser::BackgroundSession>,
    dir: tempfile::TempDir,
    /// The same undoing if the run is interrupted (support::reap).
    _reap: super::reap::Held,
}

impl Mount {
    /// Mount `fs` as filesystem `name`; None (after saying why) when this machine can't.
    pub fn new<F: Filesystem + Send + 'static>(fs: F, name: &str) -> Option<Mount> {
        if !available() {
            return None;
        }
        let dir = crate::util::tempdir().expect("temporary directory");
        let mountpoint = dir.path().join("mnt");
        std::fs::create_dir(&mountpoint).unwrap();
        let opts = [MountOption::FSName(name.into()), MountOption::RW];
        match fuser::spawn_mount2(fs, &mountpoint, &opts) {
            Ok(s) => {
                let d = dir.path().to_path_buf();
                let _reap = super::reap::on_interrupt("a FUSE mount", move || {
                    super::reap::unmount_under(&d);
                    super::reap::remove_dir(&d);
                });
                Some(Mount {
                    mountpoint,
                    session: Some(s),
                    dir,
                    _reap,
                })
            }
            Err(e) => {
                super::util::skip_lacking(&format!("FUSE mount failed: {e}"));
                None
            }
        }
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        &self.mountpoint
    }

    /// The temporary directory that holds the mount point, for the test's other mounts and
    /// files; removed with it.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let c = std::ffi::CString::new(self.mountpoint.as_os_str().as_encoded_bytes()).unwrap();
        let t0 = Instant::now();
        loop {
            // SAFETY: `c` is a NUL-terminated path that outlives the call.
            if unsafe { libc::umount2(c.as_ptr(), 0) } == 0 {
                break;
            }
            if t0.elapsed() > Duration::from_secs(5) {
                // Still busy: detach it lazily so the directory can go.
                // SAFETY: as above.
                unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Unmounted: the session thread's read of /dev/fuse ends and the server is dropped.
        drop(self.session.take());
    }
}
