//! What a sweep runs against: a temporary file iosat lays out (and removes on every exit path), a
//! user's file (reads only), or a block device (reads only unless --destructive and every safety
//! check of docs/design.md §5 passes). Owns opening, layout and the safety refusals.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/.

use super::workload::{fill_random, Rng};
use crate::error::{Error, Result};
use crate::sys::file::{dio_align, drop_cache, AlignedBuf};
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom};
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// Largest default test file; smaller when free space is short (see [`default_size`]).
pub const DEFAULT_MAX_SIZE: u64 = 1 << 30;
/// Smallest file worth measuring.
pub const MIN_SIZE: u64 = 16 << 20;

/// What the user asked to run against, already validated syntactically.
#[derive(Debug, Clone, PartialEq)]
pub struct TargetSpec {
    /// None: a temporary file in the current directory.
    pub path: Option<PathBuf>,
    /// Size of a temporary file; None = [`default_size`].
    pub size_bytes: Option<u64>,
    /// The pattern writes.
    pub writes: bool,
    pub direct: bool,
    pub destructive: bool,
    /// `--overwrite-found`: what the user confirms may be destroyed on a device that is not
    /// blank (comma-separated libblkid TYPE names, or `data`).
    pub overwrite_found: Option<String>,
    pub allow_tmpfs: bool,
    /// Bytes per I/O (`--bs`): with direct I/O it must be a multiple of the target's logical
    /// block size, checked as soon as the target is open (before a test file is filled).
    pub block_size: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TargetKind {
    /// A file iosat laid out and will remove.
    TempFile,
    /// A user's existing file (read only).
    File,
    BlockDevice,
}

/// An open target. Dropping it removes the file when iosat created it.
#[derive(Debug)]
pub struct Target {
    pub file: File,
    pub path: PathBuf,
    pub kind: TargetKind,
    pub size_bytes: u64,
    /// Required alignment of offsets and lengths for direct I/O (the logical block size).
    pub dio_align: u32,
    pub writable: bool,
    pub direct: bool,
    /// Remarks for the user (page cache, tmpfs, ...), one line each.
    pub notes: Vec<String>,
    /// How long a laid-out file was let settle and why: for the sweep's notes (not a warning).
    pub settled: Option<String>,
    /// Set when iosat created the file under a name (no O_TMPFILE): removed on drop, while
    /// it still is iosat's file.
    _created: Option<crate::sys::fs::OwnedFile>,
}

/// Names of the test files laid out under a name: `.iosat-sweep-<pid>-<random>.tmp`.
pub const LEFTOVER_PREFIX: &str = ".iosat-sweep-";

/// The test file: unnamed (O_TMPFILE; `path` is then the directory) where the filesystem
/// supports it, so nothing survives a SIGKILL; else a new file with an unpredictable name.
fn create_test_file(
    spec: &TargetSpec,
    dir: &Path,
) -> Result<(File, PathBuf, Option<crate::sys::fs::OwnedFile>)> {
    use crate::sys::fs::{open_unnamed, OwnedFile};
    // O_NOATIME: a read need not stamp the inode (on buffered page-cache reads that was
    // 2-3 % of the kernel's time per I/O, measured with perf at depth 1).
    let flags = libc::O_NOATIME | if spec.direct { libc::O_DIRECT } else { 0 };
    let direct_refused = || {
        Error::usage(
            "--direct",
            "true",
            format!(
                "is not supported by the filesystem of {}; use --direct false",
                dir.display()
            ),
        )
    };
    match open_unnamed(dir, flags) {
        Ok(Some(f)) => return Ok((f, dir.to_path_buf(), None)),
        Ok(None) => {}
        // EINVAL with O_DIRECT: O_TMPFILE without it tells which of the two is refused.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) && spec.direct => {
            if let Ok(Some(_)) = open_unnamed(dir, 0) {
                return Err(direct_refused());
            }
        }
        Err(e) => return Err(Error::io(dir, e)),
    }
    match OwnedFile::create(dir, LEFTOVER_PREFIX, ".tmp", flags, 0o600) {
        Ok((f, owned)) => Ok((f, owned.path.clone(), Some(owned))),
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) && spec.direct => Err(direct_refused()),
        Err(e) => Err(Error::io(dir, e)),
    }
}

/// The refusal when a file of `size` does not fit (see [`fits`]).
fn no_room(dir: &Path, size: u64, free: u64, how: &str) -> Error {
    Error::Safety(format!(
        "{}: too little free space for a {} test file ({} {how}; iosat leaves a tenth of it and 64 MiB)",
        dir.display(),
        crate::units::human_bytes(size),
        crate::units::human_bytes(free)
    ))
}

/// Allocate the file's blocks before filling it, then judge the free space again with this
/// file counted: runs started together see each other's reservations, so they cannot each
/// pass the check and then fill the filesystem. Filesystems without fallocate (ramfs) skip
/// the reservation.
fn reserve(file: &File, dir: &Path, size: u64) -> Result<()> {
    match crate::sys::file::allocate(file, size) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => return Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
            return Err(Error::Safety(format!(
                "{}: too little free space for a {} test file (no room to allocate it)",
                dir.display(),
                crate::units::human_bytes(size)
            )))
        }
        Err(e) => return Err(Error::io(dir, e)),
    }
    let Some(free_now) = crate::sys::fs::free_bytes(dir)? else {
        return Ok(());
    };
    let free = free_now.saturating_add(size);
    if !fits(size, free) {
        let how = "free with it allocated, another run may be using the rest";
        return Err(no_room(dir, size, free_now, how));
    }
    Ok(())
}

fn target_err(value: &Path, reason: impl Into<String>) -> Error {
    Error::usage("TARGET", value.display(), reason)
}

/// Open (or lay out) the target and check it holds at least one block. `stop` is polled
/// during layout so Ctrl-C removes the file.
pub fn open(spec: &TargetSpec, stop: &AtomicBool) -> Result<Target> {
    let t = open_any(spec, stop)?;
    if t.size_bytes < spec.block_size {
        return Err(Error::usage(
            "TARGET",
            t.path.display(),
            format!("is smaller than one block of {} bytes", spec.block_size),
        ));
    }
    Ok(t)
}

/// Where a test file is laid out when the target is a directory (the current one when none
/// is given); None for a file or device target.
pub fn layout_dir(spec: &TargetSpec) -> Option<PathBuf> {
    match &spec.path {
        None => Some(PathBuf::from(".")),
        Some(p) if p.is_dir() => Some(p.clone()),
        Some(_) => None,
    }
}

fn open_any(spec: &TargetSpec, stop: &AtomicBool) -> Result<Target> {
    let path = match &spec.path {
        Some(p) => p.clone(),
        None => std::env::current_dir().map_err(|e| Error::io(".", e))?,
    };
    let meta = match std::fs::metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Never create a file from a typo'd path (docs/design.md §5).
            return Err(target_err(&path, "does not exist"));
        }
        Err(e) => return Err(Error::io(&path, e)),
    };
    let ft = meta.file_type();
    if ft.is_dir() {
        layout_temp_file(spec, &path, stop)
    } else if ft.is_file() {
        open_user_file(spec, &path, meta.len())
    } else if ft.is_block_device() {
        open_block_device(spec, &path)
    } else {
        Err(target_err(
            &path,
            "is neither a directory, a regular file nor a block device",
        ))
    }
}

/// Refuse memory-backed filesystems unless asked: they measure RAM, not a disk.
fn check_memory_fs(
    spec: &TargetSpec,
    file: &File,
    path: &Path,
    notes: &mut Vec<String>,
) -> Result<()> {
    let Some(name) = crate::sys::fs::memory_fs(file) else {
        return Ok(());
    };
    if !spec.allow_tmpfs {
        return Err(Error::usage(
            "TARGET",
            path.display(),
            format!(
                "is on {name}: that measures memory, not a disk; pass --allow-tmpfs to run anyway"
            ),
        ));
    }
    notes.push(format!(
        "{} is on {name}: these numbers are memory speed, not a disk's",
        path.display()
    ));
    Ok(())
}

/// The default size of a temporary file: a tenth of the free space, at most 1 GiB, rounded
/// down to whole MiB; None when that is below [`MIN_SIZE`].
pub fn default_size(free_bytes: u64) -> Option<u64> {
    let s = (free_bytes / 10).min(DEFAULT_MAX_SIZE) & !((1 << 20) - 1);
    (s >= MIN_SIZE).then_some(s)
}

/// True when a file of `size` may be laid out with `free` bytes available: it must leave at
/// least a tenth of the free space and 64 MiB for everyone else.
pub fn fits(size: u64, free: u64) -> bool {
    size.saturating_add(free / 10).saturating_add(64 << 20) <= free
}

fn layout_temp_file(spec: &TargetSpec, dir: &Path, stop: &AtomicBool) -> Result<Target> {
    let mut notes = Vec::new();
    let dir_handle = File::open(dir).map_err(|e| Error::io(dir, e))?;
    check_memory_fs(spec, &dir_handle, dir, &mut notes)?;
    drop(dir_handle);
    // A filesystem reporting no size (ramfs, allowed above) has no free space to judge: the
    // size asked for, else the smallest worth measuring, without a check.
    let Some(free) = crate::sys::fs::free_bytes(dir)? else {
        let size = spec.size_bytes.unwrap_or(MIN_SIZE);
        notes.push(format!(
            "{} reports no size (ramfs): free space not checked for the {} test file",
            dir.display(),
            crate::units::human_bytes(size)
        ));
        return lay_out(spec, dir, size, notes, stop);
    };
    let size = match spec.size_bytes {
        Some(s) => s,
        None => default_size(free).ok_or_else(|| {
            Error::Safety(format!(
                "{}: too little free space for a test file ({} free, need at least {} plus a margin)",
                dir.display(),
                crate::units::human_bytes(free),
                crate::units::human_bytes(MIN_SIZE * 10)
            ))
        })?,
    };
    if !fits(size, free) {
        return Err(no_room(dir, size, free, "free"));
    }
    lay_out(spec, dir, size, notes, stop)
}

/// Create, reserve and fill the test file of `size` bytes in `dir`.
fn lay_out(
    spec: &TargetSpec,
    dir: &Path,
    size: u64,
    mut notes: Vec<String>,
    stop: &AtomicBool,
) -> Result<Target> {
    let removed = crate::sys::fs::remove_dead_leftovers(dir, LEFTOVER_PREFIX);
    if !removed.is_empty() {
        notes.push(format!(
            "removed {} test file(s) that killed iosat runs left in {}: {}",
            removed.len(),
            dir.display(),
            removed.join(", ")
        ));
    }
    let (file, path, owned) = create_test_file(spec, dir)?;
    let dio_align = dio_align(&file).unwrap_or(512);
    check_block_size(spec, dio_align, dir)?;
    let size = size / u64::from(dio_align.max(512)) * u64::from(dio_align.max(512));
    reserve(&file, dir, size)?;
    fill(&file, &path, size, stop)?;
    // Start the run cold: what layout wrote must not be served from the page cache.
    drop_cache(&file);
    let settled = Some(settle(&path, size, stop)?);
    let _created = owned;
    if !spec.direct {
        notes.push(
            "buffered I/O (--direct false): reads may be served by the page cache, not the disk"
                .to_string(),
        );
    }
    Ok(Target {
        file,
        path,
        kind: TargetKind::TempFile,
        size_bytes: size,
        dio_align,
        writable: true,
        direct: spec.direct,
        notes,
        settled,
        _created,
    })
}

/// The settle after the layout lasts at least this long per GiB written (within
/// [`SETTLE_MIN_NS`] and [`SETTLE_MAX_NS`]) ...
pub const SETTLE_NS_PER_GIB: u64 = 1_000_000_000;
pub const SETTLE_MIN_NS: u64 = 500_000_000;
/// ... and until the disk has completed no write for this long ...
pub const SETTLE_QUIET_NS: u64 = 1_000_000_000;
/// ... but no longer than five times that floor (a disk other writers keep busy never goes
/// quiet), and never longer than this.
pub const SETTLE_MAX_NS: u64 = 10_000_000_000;

/// The least and the most the settle lasts after `size` bytes were written.
pub fn settle_bounds_ns(size: u64) -> (u64, u64) {
    let per = ((u128::from(size) * u128::from(SETTLE_NS_PER_GIB)) >> 30) as u64;
    let floor = per.clamp(SETTLE_MIN_NS, SETTLE_MAX_NS / 2);
    (floor, floor.saturating_mul(5).min(SETTLE_MAX_NS))
}

/// Is the settle within `bounds` over, `elapsed_ns` after it began, the disk quiet for
/// `quiet_ns` (None: the disk can't be watched)?
pub fn settled(elapsed_ns: u64, quiet_ns: Option<u64>, bounds: (u64, u64)) -> bool {
    elapsed_ns >= bounds.1
        || (elapsed_ns >= bounds.0 && quiet_ns.map_or(true, |q| q >= SETTLE_QUIET_NS))
}

/// Let the device settle after the layout, before the first level: fsync has returned, but
/// the writes may still be draining below this machine (a VM's host cache, a cloud volume's
/// replication, an SSD's write buffer) and the filesystem's journal commits a moment later;
/// a first level measured then reads slower than the device is. Waits [`settle_floor_ns`] and
/// until the disk under `path` has completed no write for [`SETTLE_QUIET_NS`] (other
/// writers keep it from being quiet: [`SETTLE_MAX_NS`] at most). Returns the note that says
/// how long and why.
fn settle(path: &Path, size: u64, stop: &AtomicBool) -> Result<String> {
    use crate::sys::clock::monotonic_ns;
    let root = crate::sys::Root::default();
    let disk = crate::sys::device::disk_for_path(&root, path).ok();
    let writes = || -> Option<(u64, u64)> {
        let d = disk.as_ref()?;
        let text = crate::sys::diskstats::read_text(&root).ok()?;
        let l = crate::sys::diskstats::parse(&text)
            .lines
            .into_iter()
            .find(|l| l.major == d.major && l.minor == d.minor)?;
        Some((l.writes, l.in_flight))
    };
    let bounds = settle_bounds_ns(size);
    let start = monotonic_ns();
    let mut last = writes();
    let mut quiet_from = start;
    loop {
        let now = monotonic_ns();
        let quiet = last.map(|_| now - quiet_from);
        if settled(now - start, quiet, bounds) {
            let why = match (&disk, quiet) {
                (Some(d), Some(q)) if q >= SETTLE_QUIET_NS => format!(
                    "and until {} had completed no write for {:.0} s",
                    d.name,
                    SETTLE_QUIET_NS as f64 / 1e9
                ),
                (Some(d), Some(_)) => format!(
                    "{} was still writing (another writer?) at the {:.1} s limit",
                    d.name,
                    bounds.1 as f64 / 1e9
                ),
                _ => "its disk could not be watched".to_string(),
            };
            return Ok(format!(
                "settled {:.1} s after laying out the {} test file before the first level \
                 ({:.0} s per GiB written, at least {:.1} s, {why}): writes still draining \
                 below the file system would slow the first level",
                (now - start) as f64 / 1e9,
                crate::units::human_bytes(size),
                SETTLE_NS_PER_GIB as f64 / 1e9,
                bounds.0 as f64 / 1e9,
            ));
        }
        if stop.load(Relaxed) {
            return Err(Error::Interrupted);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        let w = writes();
        if w != last || w.is_some_and(|(_, in_flight)| in_flight > 0) {
            quiet_from = monotonic_ns();
        }
        last = w;
    }
}

/// Write real data over the whole file (never sparse: holes read for free), 1 MiB at a time,
/// each chunk different, then make it durable.
fn fill(file: &File, path: &Path, size: u64, stop: &AtomicBool) -> Result<()> {
    const CHUNK: usize = 1 << 20;
    let mut buf = AlignedBuf::new(CHUNK);
    let mut rng = Rng::new(size ^ 0x105a7);
    let mut off = 0u64;
    while off < size {
        if stop.load(Relaxed) {
            return Err(Error::Interrupted);
        }
        let len = ((size - off) as usize).min(CHUNK);
        fill_random(&mut buf.as_mut_slice()[..len], &mut rng);
        // pwrite until done (EINTR retried, a zero write is WriteZero).
        file.write_all_at(&buf.as_slice()[..len], off)
            .map_err(|e| Error::io(path, e))?;
        off += len as u64;
    }
    file.sync_data().map_err(|e| Error::io(path, e))
}

fn open_user_file(spec: &TargetSpec, path: &Path, len: u64) -> Result<Target> {
    if spec.writes {
        return Err(Error::Safety(format!(
            "{}: iosat did not create this file, so it only reads it; use a read pattern, or give a directory to write to a file iosat lays out",
            path.display()
        )));
    }
    let open = |noatime: bool| {
        let mut opts = OpenOptions::new();
        opts.read(true);
        let mut flags = if spec.direct { libc::O_DIRECT } else { 0 };
        if noatime {
            flags |= libc::O_NOATIME;
        }
        opts.custom_flags(flags).open(path)
    };
    // Reading leaves the file's access time as it was (O_NOATIME), where the kernel lets us
    // (the owner, or CAP_FOWNER); else a plain open.
    let file = match open(true) {
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => open(false),
        r => r,
    }
    .map_err(|e| Error::io(path, e))?;
    let mut notes = Vec::new();
    check_memory_fs(spec, &file, path, &mut notes)?;
    let dio_align = dio_align(&file).unwrap_or(512);
    check_block_size(spec, dio_align, path)?;
    if let Ok(m) = file.metadata() {
        notes.extend(sparse_note(
            path,
            len,
            std::os::unix::fs::MetadataExt::blocks(&m),
        ));
    }
    if !spec.direct {
        notes.push(
            "buffered I/O (--direct false): reads may be served by the page cache, not the disk"
                .to_string(),
        );
    }
    Ok(Target {
        dio_align,
        file,
        path: path.to_path_buf(),
        kind: TargetKind::File,
        size_bytes: len,
        writable: false,
        direct: spec.direct,
        notes,
        settled: None,
        _created: None,
    })
}

/// A file with fewer blocks allocated than its size has holes, which the filesystem answers
/// with zeros without reading the disk. `blocks`: st_blocks, in 512-byte units (stat(2)).
pub fn sparse_note(path: &Path, len: u64, blocks: u64) -> Option<String> {
    let allocated = blocks.saturating_mul(512);
    (allocated < len).then(|| {
        format!(
            "{} is sparse ({} of {} allocated): reads of its holes never reach the disk",
            path.display(),
            crate::units::human_bytes(allocated),
            crate::units::human_bytes(len)
        )
    })
}

/// A buffered run whose working set (the target's size) fits in the memory the kernel could
/// use as page cache (`MemAvailable`) may be answered from that cache after the first pass.
pub fn working_set_note(
    size_bytes: u64,
    direct: bool,
    mem_available: Option<u64>,
) -> Option<String> {
    let avail = mem_available?;
    (!direct && size_bytes < avail).then(|| {
        format!(
            "the working set ({}) fits in free memory ({}): a buffered run measures the page cache once it is warm",
            crate::units::human_bytes(size_bytes),
            crate::units::human_bytes(avail)
        )
    })
}

fn open_block_device(spec: &TargetSpec, path: &Path) -> Result<Target> {
    if spec.writes && !spec.destructive {
        return Err(Error::Safety(format!(
            "{}: writing to a block device destroys its data; iosat only reads devices unless --destructive is given",
            path.display()
        )));
    }
    if spec.destructive {
        check_not_in_use(path)?;
    }
    let mut opts = OpenOptions::new();
    opts.read(true);
    let mut flags = 0;
    if spec.direct {
        flags |= libc::O_DIRECT;
    }
    if spec.destructive {
        // O_EXCL on a block device: the kernel refuses (EBUSY) when it is mounted, used as
        // swap, or claimed by dm/md/LVM, and keeps others from claiming it while we write.
        opts.write(true);
        flags |= libc::O_EXCL;
    }
    opts.custom_flags(flags);
    let file = match opts.open(path) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
            return Err(Error::Safety(format!(
                "{} is in use (mounted, swap, or held by dm/md/LVM): exclusive open failed",
                path.display()
            )));
        }
        Err(e) => return Err(Error::io(path, e)),
    };
    let dio_align = dio_align(&file).unwrap_or(512);
    check_block_size(spec, dio_align, path)?;
    // A block device reports its size at SEEK_END.
    let size = (&file)
        .seek(SeekFrom::End(0))
        .map_err(|e| Error::io(path, e))?;
    if spec.destructive {
        check_blank(spec, &file, path, size)?;
    }
    Ok(Target {
        dio_align,
        file,
        path: path.to_path_buf(),
        kind: TargetKind::BlockDevice,
        size_bytes: size,
        writable: spec.destructive,
        direct: spec.direct,
        notes: Vec::new(),
        settled: None,
        _created: None,
    })
}

/// Refuse a device that is not blank where signatures live (a signature blkid, wipefs or
/// iosat's own table knows, or any data at the start, the end or a usual superblock offset),
/// unless `--overwrite-found` names everything found (docs/design.md §5).
fn check_blank(spec: &TargetSpec, file: &File, path: &Path, size: u64) -> Result<()> {
    use crate::sys::probe;
    let found = probe::findings(file, size).map_err(|e| Error::io(path, e))?;
    if probe::all_confirmed(&found, spec.overwrite_found.as_deref()) {
        return Ok(());
    }
    let what: Vec<&str> = found.iter().map(|f| f.what.as_str()).collect();
    Err(Error::Safety(format!(
        "{} is not blank: {}; if its data really is disposable, pass --overwrite-found {} (or wipe it yourself: wipefs -a)",
        path.display(),
        what.join("; "),
        probe::keys(&found)
    )))
}

/// With direct I/O every request must be a multiple of the logical block size (the kernel
/// answers EINVAL otherwise): say so up front, naming the flag, the value and the target.
fn check_block_size(spec: &TargetSpec, dio_align: u32, path: &Path) -> Result<()> {
    if spec.direct && spec.block_size % u64::from(dio_align.max(1)) != 0 {
        return Err(Error::usage(
            "--bs",
            spec.block_size,
            format!(
                "must be a multiple of the logical block size of {} ({dio_align} bytes)",
                path.display()
            ),
        ));
    }
    Ok(())
}

/// Refuse, before opening it for writing, a device that is mounted or used as swap (itself or
/// any of its partitions) or held by a device stacked on it (dm, md, LVM, bcache: `holders/`),
/// saying where it is mounted and who holds it (docs/design.md §5). Reads the running kernel's /proc
/// and /sys, never the --proc-root/--sys-root fixture trees: a safety check must look at the
/// real system.
/// The O_EXCL open that follows stays as the second line of defence (it also refuses any claim
/// made between this check and the open).
fn check_not_in_use(path: &Path) -> Result<()> {
    let root = crate::sys::Root::default();
    let dev = crate::sys::device::blockdev_for_node(&root, path)?;
    if crate::sys::device::read_only(&root, &dev) {
        return Err(target_err(
            path,
            "is a read-only device (blockdev --getro says 1): it cannot be written; drop --destructive to read it",
        ));
    }
    let uses = uses_of(&root, &dev);
    if uses.is_empty() {
        return Ok(());
    }
    Err(Error::Safety(format!(
        "{} is in use: {}; iosat will not write to it",
        path.display(),
        uses.join("; ")
    )))
}

/// What makes `dev` unsafe to write, one phrase each: where it and each of its partitions are
/// mounted, which of them is swap, and which devices are stacked on it or on its partitions.
/// Empty when nothing is.
fn uses_of(root: &crate::sys::Root, dev: &crate::sys::device::BlockDev) -> Vec<String> {
    use crate::sys::device::{self, BlockDev};
    let parts = device::partitions(root, dev);
    let mut uses: Vec<String> = Vec::new();
    // mountpoints() of the whole device includes its partitions'; list each under its own name.
    let part_mounts: Vec<(String, Vec<String>)> = parts
        .iter()
        .map(|p| (p.name.clone(), device::mountpoints(root, p)))
        .collect();
    let own: Vec<String> = device::mountpoints(root, dev)
        .into_iter()
        .filter(|m| !part_mounts.iter().any(|(_, pm)| pm.contains(m)))
        .collect();
    if !own.is_empty() {
        uses.push(format!("mounted at {}", own.join(", ")));
    }
    for (name, mounts) in &part_mounts {
        if !mounts.is_empty() {
            uses.push(format!(
                "its partition {name} is mounted at {}",
                mounts.join(", ")
            ));
        }
    }
    for d in std::iter::once(dev).chain(parts.iter()) {
        if !device::swap_names(root, d).is_empty() {
            uses.push(if d == dev {
                "used as swap".to_string()
            } else {
                format!("its partition {} is used as swap", d.name)
            });
        }
    }
    let mut held: Vec<String> = Vec::new();
    for d in std::iter::once(dev).chain(parts.iter()) {
        for h in device::holders(root, d) {
            // Looked up by kernel name (the sysfs class/block link): dm devices get their dm name.
            let stub = BlockDev {
                major: 0,
                minor: 0,
                name: h.clone(),
            };
            let friendly = device::friendly_name(root, &stub);
            let who = if friendly == h {
                h
            } else {
                format!("{h} ({friendly})")
            };
            held.push(if d == dev {
                who
            } else {
                format!("{who} on {}", d.name)
            });
        }
    }
    let nums: Vec<(u32, u32)> = std::iter::once(dev)
        .chain(parts.iter())
        .map(|d| (d.major, d.minor))
        .collect();
    for (lo, num) in device::loops_backed_by(root, &nums) {
        held.push(match parts.iter().find(|p| (p.major, p.minor) == num) {
            Some(p) => format!("loop device {lo} on {}", p.name),
            None => format!("loop device {lo}"),
        });
    }
    if !held.is_empty() {
        uses.push(format!("held by {}", held.join(", ")));
    }
    uses
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_and_cache_sized_targets_are_named() {
        let p = Path::new("/x/f");
        let n = sparse_note(p, 1 << 30, 8).unwrap();
        assert!(
            n.starts_with("/x/f is sparse (4.0 KiB of 1.0 GiB allocated)"),
            "{n}"
        );
        assert_eq!(sparse_note(p, 4096, 8), None);
        let n = working_set_note(1 << 20, false, Some(1 << 30)).unwrap();
        assert!(n.contains("fits in free memory"), "{n}");
        assert_eq!(working_set_note(1 << 20, true, Some(1 << 30)), None);
        assert_eq!(working_set_note(1 << 31, false, Some(1 << 30)), None);
        assert_eq!(working_set_note(1, false, None), None);
    }

    #[test]
    fn the_settle_waits_per_gib_and_for_a_quiet_disk() {
        let s = 1_000_000_000u64;
        assert_eq!(settle_bounds_ns(16 << 20), (s / 2, 5 * s / 2));
        assert_eq!(settle_bounds_ns(1 << 30), (s, 5 * s));
        assert_eq!(settle_bounds_ns(3 << 30), (3 * s, SETTLE_MAX_NS));
        assert_eq!(
            settle_bounds_ns(1 << 40),
            (SETTLE_MAX_NS / 2, SETTLE_MAX_NS)
        );
        let b = (s, 5 * s);
        // The floor first, then the quiet second.
        assert!(!settled(s / 2, Some(5 * s), b));
        assert!(!settled(2 * s, Some(s / 2), b));
        assert!(settled(2 * s, Some(s), b));
        // A disk that can't be watched: the floor only; a busy one: the limit.
        assert!(settled(s, None, b));
        assert!(!settled(5 * s - 1, Some(0), b));
        assert!(settled(5 * s, Some(0), b));
    }

    /// A laid-out test file settles before the first level, and the notes say how long.
    #[test]
    fn the_layout_settles_and_says_so() {
        // Removed when the guard drops, whatever fails first.
        let guard = tempfile::Builder::new()
            .prefix("iosat-settle-")
            .tempdir()
            .unwrap();
        let dir = guard.path().to_path_buf();
        let spec = TargetSpec {
            path: Some(dir.clone()),
            size_bytes: Some(MIN_SIZE),
            writes: false,
            direct: false,
            destructive: false,
            overwrite_found: None,
            allow_tmpfs: true,
            block_size: 4096,
        };
        let t = open(&spec, &AtomicBool::new(false)).unwrap();
        let note = t.settled.as_deref().unwrap();
        assert!(note.starts_with("settled "), "{note}");
        assert!(note.contains("16.0 MiB test file"), "{note}");
        let secs = note["settled ".len()..].split(' ').next().unwrap();
        assert!(secs.parse::<f64>().is_ok(), "{note}");
    }

    #[test]
    fn default_size_scales_with_free_space() {
        assert_eq!(default_size(100 << 30), Some(1 << 30));
        assert_eq!(default_size(1 << 30), Some(102 << 20));
        assert_eq!(default_size(100 << 20), None);
    }

    #[test]
    fn fits_leaves_a_margin() {
        assert!(fits(1 << 30, 10 << 30));
        assert!(!fits(1 << 30, 1 << 30));
        assert!(!fits(u64::MAX, 1 << 40));
    }

    #[test]
    fn uses_name_mounts_partitions_and_holders() {
        // The fake tree of tests/fixtures/sysroot1: nvme0n1p1 mounted at /boot/efi, dm-0
        // (vg0-root, mounted at /) on nvme0n1p2, md0 (mounted at "/srv/my data") on sda2.
        use crate::sys::device::BlockDev;
        let base = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sysroot1");
        let root = crate::sys::Root {
            proc: PathBuf::from(base).join("proc"),
            sys: PathBuf::from(base).join("sys"),
        };
        let dev = |major, minor, name: &str| BlockDev {
            major,
            minor,
            name: name.into(),
        };
        assert_eq!(
            uses_of(&root, &dev(259, 0, "nvme0n1")),
            [
                "its partition nvme0n1p1 is mounted at /boot/efi",
                "held by dm-0 (vg0-root) on nvme0n1p2"
            ]
        );
        assert_eq!(
            uses_of(&root, &dev(259, 2, "nvme0n1p2")),
            ["held by dm-0 (vg0-root)"]
        );
        assert_eq!(uses_of(&root, &dev(253, 0, "dm-0")), ["mounted at /"]);
        assert_eq!(uses_of(&root, &dev(8, 0, "sda")), ["held by md0 on sda2"]);
        assert_eq!(
            uses_of(&root, &dev(9, 0, "md0")),
            ["mounted at /srv/my data"]
        );
        assert!(uses_of(&root, &dev(252, 0, "zram0")).is_empty());
    }
}
