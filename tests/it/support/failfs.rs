//! A filesystem whose write-back fails where NFS and FUSE report it (issue 28, item 10): a FUSE
//! server inside the test binary keeps one flat directory of files in memory, and answers
//! fsync(2) or close(2) (FUSE's flush) of a file that was written with EIO, as a network
//! filesystem does when the data could not be stored. Creating, writing, reading, renaming and
//! removing work, so what a command leaves behind can be listed.
//!
//! [`FailFs::mount`] mounts it in a temporary directory; drop unmounts it and removes the
//! directory, also when a test panics. Without root or /dev/fuse it prints "skipped: ..." and
//! returns None. Only test code imports this module; it imports nothing of iosat's.

use fuser::{
    FileAttr, FileType, Filesystem, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty,
    ReplyEntry, ReplyOpen, ReplyWrite, Request, TimeOrNow,
};
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Where the write-back error shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailAt {
    /// fsync(2) of a written file fails with EIO.
    Fsync,
    /// fsync succeeds; close(2) of a written file fails with EIO (NFS's close-to-open).
    Close,
}

use super::fuse::ROOT_INO;
const TTL: Duration = Duration::from_secs(0);

struct File {
    ino: u64,
    data: Vec<u8>,
    /// Written since the last successful fsync or close.
    dirty: bool,
}

struct Server {
    fail: FailAt,
    files: BTreeMap<OsString, File>,
    next_ino: u64,
}

impl Server {
    fn by_ino(&mut self, ino: u64) -> Option<&mut File> {
        self.files.values_mut().find(|f| f.ino == ino)
    }
}

fn attr(ino: u64, size: u64) -> FileAttr {
    super::fuse::attr(ino, size, 0o644, SystemTime::now())
}

impl Filesystem for Server {
    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        match self.files.get(name) {
            Some(f) if parent == ROOT_INO => {
                reply.entry(&TTL, &attr(f.ino, f.data.len() as u64), 0)
            }
            _ => reply.error(libc::ENOENT),
        }
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        if ino == ROOT_INO {
            return reply.attr(&TTL, &attr(ROOT_INO, 0));
        }
        match self.by_ino(ino) {
            Some(f) => reply.attr(&TTL, &attr(ino, f.data.len() as u64)),
            None => reply.error(libc::ENOENT),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        if ino == ROOT_INO {
            return reply.attr(&TTL, &attr(ROOT_INO, 0));
        }
        match self.by_ino(ino) {
            Some(f) => {
                if let Some(s) = size {
                    f.data.resize(s as usize, 0);
                    f.dirty = true;
                }
                reply.attr(&TTL, &attr(ino, f.data.len() as u64))
            }
            None => reply.error(libc::ENOENT),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn create(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        if parent != ROOT_INO {
            return reply.error(libc::ENOENT);
        }
        if let Some(f) = self.files.get_mut(name) {
            if flags & libc::O_EXCL != 0 {
                return reply.error(libc::EEXIST);
            }
            if flags & libc::O_TRUNC != 0 {
                f.data.clear();
            }
            return reply.created(&TTL, &attr(f.ino, f.data.len() as u64), 0, 0, 0);
        }
        let ino = self.next_ino;
        self.next_ino += 1;
        self.files.insert(
            name.to_owned(),
            File {
                ino,
                data: Vec::new(),
                dirty: false,
            },
        );
        reply.created(&TTL, &attr(ino, 0), 0, 0, 0);
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, flags: i32, reply: ReplyOpen) {
        match self.by_ino(ino) {
            Some(f) => {
                if flags & libc::O_TRUNC != 0 {
                    f.data.clear();
                }
                reply.opened(0, 0)
            }
            None => reply.error(libc::ENOENT),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn read(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock: Option<u64>,
        reply: ReplyData,
    ) {
        match self.by_ino(ino) {
            Some(f) => {
                let a = (offset as usize).min(f.data.len());
                let b = (a + size as usize).min(f.data.len());
                reply.data(&f.data[a..b])
            }
            None => reply.error(libc::ENOENT),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn write(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock: Option<u64>,
        reply: ReplyWrite,
    ) {
        match self.by_ino(ino) {
            Some(f) => {
                let end = offset as usize + data.len();
                if f.data.len() < end {
                    f.data.resize(end, 0);
                }
                f.data[offset as usize..end].copy_from_slice(data);
                f.dirty = true;
                reply.written(data.len() as u32)
            }
            None => reply.error(libc::ENOENT),
        }
    }

    fn flush(&mut self, _req: &Request<'_>, ino: u64, _fh: u64, _lock: u64, reply: ReplyEmpty) {
        let fail = self.fail;
        match self.by_ino(ino) {
            Some(f) if f.dirty && fail == FailAt::Close => {
                f.dirty = false;
                reply.error(libc::EIO)
            }
            Some(f) => {
                f.dirty = false;
                reply.ok()
            }
            None => reply.ok(),
        }
    }

    fn fsync(&mut self, _req: &Request<'_>, ino: u64, _fh: u64, _ds: bool, reply: ReplyEmpty) {
        let fail = self.fail;
        match self.by_ino(ino) {
            Some(f) if f.dirty && fail == FailAt::Fsync => reply.error(libc::EIO),
            // Close keeps the error for close(2): NFS reports it there.
            _ => reply.ok(),
        }
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        if parent == ROOT_INO && self.files.remove(name).is_some() {
            reply.ok()
        } else {
            reply.error(libc::ENOENT)
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn rename(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        _flags: u32,
        reply: ReplyEmpty,
    ) {
        if parent != ROOT_INO || newparent != ROOT_INO {
            return reply.error(libc::EXDEV);
        }
        match self.files.remove(name) {
            Some(f) => {
                self.files.insert(newname.to_owned(), f);
                reply.ok()
            }
            None => reply.error(libc::ENOENT),
        }
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        if ino != ROOT_INO {
            return reply.error(libc::ENOTDIR);
        }
        let mut all = vec![
            (ROOT_INO, FileType::Directory, OsString::from(".")),
            (ROOT_INO, FileType::Directory, OsString::from("..")),
        ];
        all.extend(
            self.files
                .iter()
                .map(|(n, f)| (f.ino, FileType::RegularFile, n.clone())),
        );
        for (i, (ino, kind, name)) in all.into_iter().enumerate().skip(offset as usize) {
            if reply.add(ino, i as i64 + 1, kind, &name) {
                break;
            }
        }
        reply.ok();
    }
}

/// The mounted filesystem (unmounted on drop, its temporary directory removed).
pub struct FailFs {
    mount: super::fuse::Mount,
}

impl FailFs {
    /// Mount a new, empty one; None (after printing why) when this machine can't.
    pub fn mount(fail: FailAt) -> Option<FailFs> {
        let server = Server {
            fail,
            files: BTreeMap::new(),
            next_ino: ROOT_INO + 1,
        };
        let mount = super::fuse::Mount::new(server, "iosat-failfs")?;
        Some(FailFs { mount })
    }

    pub fn path(&self) -> &Path {
        self.mount.path()
    }

    /// The names in the directory now, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(self.mount.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}
