//! What a sweep runs against: a temporary file iosat lays out (and removes on every exit path),
//! a user's file (reads only), or a block device (reads only unless --destructive and every
//! safety check of DESIGN.md §5 passes). Owns opening, layout and the safety refusals; must not
//! import ui/, report/ or cmd/.

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
    /// Set when iosat created the file: removed on drop.
    created: Option<PathBuf>,
}

impl Drop for Target {
    fn drop(&mut self) {
        if let Some(p) = self.created.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Removes a half-laid-out file if layout fails or is interrupted.
struct RemoveOnDrop(Option<PathBuf>);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

fn target_err(value: &Path, reason: impl Into<String>) -> Error {
    Error::usage("TARGET", value.display(), reason)
}

/// Open (or lay out) the target. `stop` is polled during layout so Ctrl-C removes the file.
pub fn open(spec: &TargetSpec, stop: &AtomicBool) -> Result<Target> {
    let path = match &spec.path {
        Some(p) => p.clone(),
        None => std::env::current_dir().map_err(|e| Error::io(".", e))?,
    };
    let meta = match std::fs::metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Never create a file from a typo'd path (DESIGN.md §5).
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
    // A filesystem reporting no size (ramfs) has no room to promise.
    let free = crate::sys::fs::free_bytes(dir)?.unwrap_or(0);
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
        return Err(Error::Safety(format!(
            "{}: too little free space for a {} test file ({} free; iosat leaves a tenth of it and 64 MiB)",
            dir.display(),
            crate::units::human_bytes(size),
            crate::units::human_bytes(free)
        )));
    }
    let name = format!(
        ".iosat-sweep-{}-{}.tmp",
        std::process::id(),
        super::workload::now_ns() % 1_000_000_007
    );
    let path = dir.join(name);
    let mut opts = OpenOptions::new();
    opts.read(true).write(true).create_new(true).mode(0o600);
    if spec.direct {
        opts.custom_flags(libc::O_DIRECT);
    }
    let file = match opts.open(&path) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) && spec.direct => {
            let _ = std::fs::remove_file(&path);
            return Err(Error::usage(
                "--direct",
                "true",
                format!(
                    "is not supported by the filesystem of {}; use --direct false",
                    dir.display()
                ),
            ));
        }
        Err(e) => return Err(Error::io(&path, e)),
    };
    let guard = RemoveOnDrop(Some(path.clone()));
    let dio_align = dio_align(&file).unwrap_or(512);
    check_block_size(spec, dio_align, dir)?;
    let size = size / u64::from(dio_align.max(512)) * u64::from(dio_align.max(512));
    fill(&file, &path, size, stop)?;
    // Start the run cold: what layout wrote must not be served from the page cache.
    drop_cache(&file);
    let mut guard = guard;
    let created = guard.0.take();
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
        created,
    })
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
    let mut opts = OpenOptions::new();
    opts.read(true);
    if spec.direct {
        opts.custom_flags(libc::O_DIRECT);
    }
    let file = opts.open(path).map_err(|e| Error::io(path, e))?;
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
        created: None,
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
    if spec.destructive {
        let mut head = AlignedBuf::new(SIGNATURE_SCAN_BYTES);
        // One pread of the aligned buffer (O_DIRECT-safe); a tiny device returns less.
        let n = file
            .read_at(head.as_mut_slice(), 0)
            .map_err(|e| Error::io(path, e))?;
        if let Some(sig) = signature(&head.as_slice()[..n]) {
            return Err(Error::Safety(format!(
                "{} carries a {sig} signature; wipe it yourself (wipefs) if its data really is disposable",
                path.display()
            )));
        }
    }
    // A block device reports its size at SEEK_END.
    let size = (&file)
        .seek(SeekFrom::End(0))
        .map_err(|e| Error::io(path, e))?;
    Ok(Target {
        dio_align,
        file,
        path: path.to_path_buf(),
        kind: TargetKind::BlockDevice,
        size_bytes: size,
        writable: spec.destructive,
        direct: spec.direct,
        notes: Vec::new(),
        created: None,
    })
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
/// saying where it is mounted and who holds it (DESIGN.md §5). Reads the running kernel's /proc
/// and /sys, never the --proc-root/--sys-root fixture trees: a safety check must look at the
/// real system.
/// The O_EXCL open that follows stays as the second line of defence (it also refuses any claim
/// made between this check and the open).
fn check_not_in_use(path: &Path) -> Result<()> {
    let root = crate::sys::Root::default();
    let dev = crate::sys::device::blockdev_for_node(&root, path)?;
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
    if !held.is_empty() {
        uses.push(format!("held by {}", held.join(", ")));
    }
    uses
}

/// Bytes read from the start of a device to look for signatures (btrfs sits at 64 KiB).
pub const SIGNATURE_SCAN_BYTES: usize = 128 << 10;

/// The first filesystem, volume or partition-table signature found in the first bytes of a
/// device, after the magic numbers blkid uses. Pure.
pub fn signature(head: &[u8]) -> Option<&'static str> {
    let at = |off: usize, magic: &[u8]| head.get(off..off + magic.len()) == Some(magic);
    let checks: [(usize, &[u8], &str); 12] = [
        (1080, &[0x53, 0xef], "ext2/3/4"),
        (0, b"XFSB", "xfs"),
        (65600, b"_BHRfS_M", "btrfs"),
        (0, b"LUKS\xba\xbe", "LUKS"),
        (512, b"LABELONE", "LVM2"),
        (4086, b"SWAPSPACE2", "swap"),
        (4086, b"SWAP-SPACE", "swap"),
        (512, b"EFI PART", "GPT partition table"),
        (3, b"NTFS    ", "ntfs"),
        (82, b"FAT32   ", "vfat"),
        (54, b"FAT1", "vfat"),
        (4096, b"\x10\x20\xf5\xf2", "f2fs"),
    ];
    for (off, magic, name) in checks {
        if at(off, magic) {
            return Some(name);
        }
    }
    // An MBR: boot signature plus at least one non-empty partition entry.
    if at(510, &[0x55, 0xaa]) && (0..4).any(|i| head.get(446 + 16 * i + 4).is_some_and(|&t| t != 0))
    {
        return Some("MBR partition table");
    }
    // md RAID superblock 1.1/1.2 (at 0 or 4 KiB).
    if at(0, &[0xfc, 0x4e, 0x2b, 0xa9]) || at(4096, &[0xfc, 0x4e, 0x2b, 0xa9]) {
        return Some("md RAID");
    }
    None
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

    #[test]
    fn signatures_are_found() {
        let mut b = vec![0u8; SIGNATURE_SCAN_BYTES];
        assert_eq!(signature(&b), None);
        b[1080] = 0x53;
        b[1081] = 0xef;
        assert_eq!(signature(&b), Some("ext2/3/4"));
        let mut b = vec![0u8; SIGNATURE_SCAN_BYTES];
        b[4086..4096].copy_from_slice(b"SWAPSPACE2");
        assert_eq!(signature(&b), Some("swap"));
        let mut b = vec![0u8; SIGNATURE_SCAN_BYTES];
        b[510] = 0x55;
        b[511] = 0xaa;
        assert_eq!(
            signature(&b),
            None,
            "boot signature alone with no partitions"
        );
        b[446 + 4] = 0x83;
        assert_eq!(signature(&b), Some("MBR partition table"));
        // A short read (tiny device) must not panic.
        assert_eq!(signature(&[0u8; 10]), None);
    }
}
