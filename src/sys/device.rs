//! Block devices in sysfs: mapping a path or a device node to its disk, classification (whole disk,
//! partition, dm, md, loop, zram, ...), queue settings, holders, mount points. Devices are keyed by
//! major:minor (`<sys>/dev/block/M:m`), never by name patterns. Thin IO over small pure helpers.
//! Imports only: sys/, error, units.

use super::Root;
use crate::error::{Error, Result};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

/// A block device as the kernel names it (`dm-0`, `md0`, `nvme0n1p1`), keyed by major:minor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockDev {
    pub major: u32,
    pub minor: u32,
    pub name: String,
}

/// What sort of block device this is, from sysfs (and the fixed loop/ram majors of
/// include/uapi/linux/major.h), never from the name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DevKind {
    /// A physical (or paravirtual: virtio, xen) whole disk: has a `device` link.
    Disk,
    /// A partition of a disk (`partition` attribute present).
    Partition,
    /// Device mapper (LVM, dm-crypt, multipath): `dm/` present.
    Dm,
    /// Software RAID: `md/` present.
    Md,
    /// Loop device (major 7).
    Loop,
    /// Compressed RAM disk (`comp_algorithm` present).
    Zram,
    /// brd RAM disk (major 1).
    Ram,
    /// Any other virtual block device (nbd, ...): under /sys/devices/virtual.
    Virtual,
}

impl DevKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DevKind::Disk => "disk",
            DevKind::Partition => "partition",
            DevKind::Dm => "dm",
            DevKind::Md => "md",
            DevKind::Loop => "loop",
            DevKind::Zram => "zram",
            DevKind::Ram => "ram",
            DevKind::Virtual => "virtual",
        }
    }

    /// The inverse of [`DevKind::as_str`].
    pub fn parse(s: &str) -> Option<DevKind> {
        [
            DevKind::Disk,
            DevKind::Partition,
            DevKind::Dm,
            DevKind::Md,
            DevKind::Loop,
            DevKind::Zram,
            DevKind::Ram,
            DevKind::Virtual,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }
}

/// The sysfs directory of a block device: `<sys>/dev/block/M:m` resolved, else
/// `<sys>/class/block/<name>`. None when the device is not in sysfs (gone, or a bare fixture).
pub fn sysfs_dir(root: &Root, dev: &BlockDev) -> Option<PathBuf> {
    let by_num = root
        .sys
        .join("dev/block")
        .join(format!("{}:{}", dev.major, dev.minor));
    if let Ok(p) = std::fs::canonicalize(&by_num) {
        return Some(p);
    }
    if dev.name.is_empty() || dev.name.contains('/') {
        return None;
    }
    std::fs::canonicalize(root.sys.join("class/block").join(&dev.name))
        .or_else(|_| std::fs::canonicalize(root.sys.join("block").join(&dev.name)))
        .ok()
}

fn read_trim(p: &Path) -> Option<String> {
    std::fs::read_to_string(p)
        .ok()
        .map(|s| s.trim().to_string())
}

fn read_num<T: std::str::FromStr>(p: &Path) -> Option<T> {
    read_trim(p)?.parse().ok()
}

/// "M:m" as in sysfs `dev` files and mountinfo.
pub fn parse_dev_t(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.trim().split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

fn dev_of_dir(dir: &Path) -> Option<BlockDev> {
    let (major, minor) = parse_dev_t(&read_trim(&dir.join("dev"))?)?;
    let name = dir.file_name()?.to_string_lossy().into_owned();
    Some(BlockDev { major, minor, name })
}

/// Classify a device through sysfs. None when it is not in sysfs.
pub fn kind(root: &Root, dev: &BlockDev) -> Option<DevKind> {
    let dir = sysfs_dir(root, dev)?;
    Some(kind_of_dir(&dir, dev.major))
}

fn kind_of_dir(dir: &Path, major: u32) -> DevKind {
    if dir.join("partition").exists() {
        DevKind::Partition
    } else if dir.join("dm").is_dir() {
        DevKind::Dm
    } else if dir.join("md").is_dir() {
        DevKind::Md
    } else if major == 7 {
        DevKind::Loop
    } else if major == 1 {
        DevKind::Ram
    } else if dir.join("comp_algorithm").exists() {
        DevKind::Zram
    } else if dir.to_string_lossy().contains("/devices/virtual/") {
        DevKind::Virtual
    } else {
        DevKind::Disk
    }
}

/// The name users know a device by: the dm name (`vg0-root`) for device mapper, the array
/// name for md RAID (`data` for /dev/md/data → ../md127, the link mdadm/udev make from the
/// array's name; sysfs itself does not carry it), else the kernel name.
pub fn friendly_name(root: &Root, dev: &BlockDev) -> String {
    if let Some(dir) = sysfs_dir(root, dev) {
        if let Some(n) = read_trim(&dir.join("dm/name")).filter(|n| !n.is_empty()) {
            return n;
        }
        if dir.join("md").is_dir() {
            if let Some(n) = md_array_name(root, &dev.name) {
                return n;
            }
        }
    }
    dev.name.clone()
}

/// The `/dev/md/NAME` link that points at md device `kernel_name`, if any. The /dev looked
/// at is the one beside the sysfs root (`/sys` → `/dev`, a fixture's `x/sys` → `x/dev`).
fn md_array_name(root: &Root, kernel_name: &str) -> Option<String> {
    let md_dir = root.sys.parent()?.join("dev/md");
    dir_entries(&md_dir).into_iter().find(|n| {
        std::fs::read_link(md_dir.join(n))
            .ok()
            .and_then(|t| t.file_name().map(|f| f == kernel_name))
            .unwrap_or(false)
    })
}

/// The whole disk holding a partition, or the device itself when it is not a partition.
pub fn whole_disk(root: &Root, dev: &BlockDev) -> BlockDev {
    let Some(dir) = sysfs_dir(root, dev) else {
        return dev.clone();
    };
    if dir.join("partition").exists() {
        if let Some(parent) = dir.parent().and_then(dev_of_dir) {
            return parent;
        }
    }
    dev.clone()
}

fn from_dev_t(root: &Root, rdev: u64) -> Result<BlockDev> {
    let (major, minor) = (libc::major(rdev), libc::minor(rdev));
    let stub = BlockDev {
        major,
        minor,
        name: String::new(),
    };
    let dir = sysfs_dir(root, &stub).ok_or_else(|| {
        Error::io(
            root.sys.join(format!("dev/block/{major}:{minor}")),
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such block device in sysfs (a filesystem not backed by a block device?)",
            ),
        )
    })?;
    Ok(dev_of_dir(&dir).unwrap_or(BlockDev {
        major,
        minor,
        name: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    }))
}

/// The whole disk (or the dm/md device itself) holding the filesystem that `path` is on
/// (st_dev → /sys/dev/block/M:m → parent disk if it is a partition).
pub fn disk_for_path(root: &Root, path: &Path) -> Result<BlockDev> {
    let md = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
    let dev = from_dev_t(root, md.dev())?;
    Ok(whole_disk(root, &dev))
}

/// For a block device node given by the user (/dev/xxx): its BlockDev (st_rdev).
pub fn blockdev_for_node(root: &Root, node: &Path) -> Result<BlockDev> {
    let md = std::fs::metadata(node).map_err(|e| Error::io(node, e))?;
    if !md.file_type().is_block_device() {
        return Err(Error::usage(
            "DEVICE",
            node.display(),
            "is not a block device",
        ));
    }
    from_dev_t(root, md.rdev())
}

/// Queue and identity attributes that decide how to read a device's numbers.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct QueueInfo {
    pub rotational: Option<bool>,
    pub logical_block_size: Option<u32>,
    pub physical_block_size: Option<u32>,
    /// "write back" or "write through", as queue/write_cache says.
    pub write_cache: Option<String>,
    pub fua: Option<bool>,
    /// 0 = no discard support.
    pub discard_max_bytes: Option<u64>,
    /// The active scheduler (the bracketed one in queue/scheduler).
    pub scheduler: Option<String>,
    pub nr_requests: Option<u32>,
    pub model: Option<String>,
    /// Size of the device itself (a partition's own size).
    pub size_bytes: Option<u64>,
    /// What a buffered sequential reader gets ahead of it (queue/read_ahead_kb).
    pub read_ahead_kb: Option<u32>,
    /// The largest request the block layer sends (queue/max_sectors_kb), and the most the
    /// hardware takes (max_hw_sectors_kb): a larger application request is split.
    pub max_sectors_kb: Option<u32>,
    pub max_hw_sectors_kb: Option<u32>,
}

/// The active scheduler in a `queue/scheduler` line: "none [mq-deadline] kyber" → mq-deadline.
pub fn active_scheduler(s: &str) -> Option<String> {
    let s = s.trim();
    if let (Some(a), Some(b)) = (s.find('['), s.find(']')) {
        if a < b {
            return Some(s[a + 1..b].to_string());
        }
    }
    // Single-queue devices without a choice print just the name ("none").
    (!s.is_empty() && !s.contains(' ')).then(|| s.to_string())
}

/// The sysfs directory of the disk of the device at `dir`: a partition's parent, else `dir`.
fn disk_of(dir: &Path) -> PathBuf {
    match dir.parent() {
        Some(disk) if dir.join("partition").exists() => disk.to_path_buf(),
        _ => dir.to_path_buf(),
    }
}

/// Queue settings of a device; a partition reports its disk's queue (and its own size).
pub fn queue_info(root: &Root, dev: &BlockDev) -> QueueInfo {
    sysfs_dir(root, dev).map_or_else(QueueInfo::default, |dir| queue_info_in(&dir))
}

/// [`queue_info`] of the device whose sysfs directory is `dir` (from [`sysfs_dir`]): for a
/// caller that reads more of the device, so that the directory is resolved once.
pub fn queue_info_in(dir: &Path) -> QueueInfo {
    let disk_dir = disk_of(dir);
    let q = disk_dir.join("queue");
    QueueInfo {
        rotational: read_num::<u8>(&q.join("rotational")).map(|v| v != 0),
        logical_block_size: read_num(&q.join("logical_block_size")),
        physical_block_size: read_num(&q.join("physical_block_size")),
        write_cache: read_trim(&q.join("write_cache")),
        fua: read_num::<u8>(&q.join("fua")).map(|v| v != 0),
        discard_max_bytes: read_num(&q.join("discard_max_bytes")),
        scheduler: read_trim(&q.join("scheduler")).and_then(|s| active_scheduler(&s)),
        nr_requests: read_num(&q.join("nr_requests")),
        model: read_trim(&disk_dir.join("device/model")).filter(|m| !m.is_empty()),
        // `size` is in 512-byte sectors whatever the logical block size.
        size_bytes: read_num::<u64>(&dir.join("size")).map(|s| s * 512),
        read_ahead_kb: read_num(&q.join("read_ahead_kb")),
        max_sectors_kb: read_num(&q.join("max_sectors_kb")),
        max_hw_sectors_kb: read_num(&q.join("max_hw_sectors_kb")),
    }
}

fn dir_entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Whether the kernel marks the device read-only (`ro`: `blockdev --setro`, a write-protected
/// medium, a read-only loop device).
pub fn read_only(root: &Root, dev: &BlockDev) -> bool {
    sysfs_dir(root, dev).is_some_and(|d| read_num::<u8>(&d.join("ro")) == Some(1))
}

/// Kernel names of the devices stacked on this one (dm, md, bcache): `holders/`.
pub fn holders(root: &Root, dev: &BlockDev) -> Vec<String> {
    sysfs_dir(root, dev)
        .map(|d| dir_entries(&d.join("holders")))
        .unwrap_or_default()
}

/// Kernel names of the devices this one is built from (dm/md members): `slaves/`.
pub fn slaves(root: &Root, dev: &BlockDev) -> Vec<String> {
    sysfs_dir(root, dev)
        .map(|d| dir_entries(&d.join("slaves")))
        .unwrap_or_default()
}

/// Loop devices stacked on one of `devs` (major:minor): the kernel name of each loop device
/// whose `loop/backing_file` is a block device node with that number, and the number. A loop
/// device does not appear in its backing device's `holders/`, so this is looked up apart.
pub fn loops_backed_by(root: &Root, devs: &[(u32, u32)]) -> Vec<(String, (u32, u32))> {
    let block = root.sys.join("block");
    dir_entries(&block)
        .into_iter()
        .filter_map(|n| {
            let file = read_trim(&block.join(&n).join("loop/backing_file"))?;
            let file = file.strip_suffix(" (deleted)").unwrap_or(&file);
            let m = std::fs::metadata(file).ok()?;
            let num = (libc::major(m.rdev()), libc::minor(m.rdev()));
            (m.file_type().is_block_device() && devs.contains(&num)).then_some((n, num))
        })
        .collect()
}

/// The partitions of a whole disk (sub-directories carrying a `partition` attribute).
pub fn partitions(root: &Root, dev: &BlockDev) -> Vec<BlockDev> {
    let Some(dir) = sysfs_dir(root, dev) else {
        return Vec::new();
    };
    let mut v: Vec<BlockDev> = dir_entries(&dir)
        .into_iter()
        .map(|n| dir.join(n))
        .filter(|p| p.join("partition").exists())
        .filter_map(|p| dev_of_dir(&p))
        .collect();
    v.sort_by_key(|d| (d.major, d.minor));
    v
}

/// Device facts beyond the queue: SCSI queue depth, blk-mq hardware queues and their tags,
/// md level, dm target family, loop backing file.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct DeviceExtra {
    /// `device/queue_depth` (SCSI/SATA): commands the device itself accepts at once.
    pub queue_depth: Option<u32>,
    /// Number of blk-mq hardware queues (`mq/*`).
    pub hw_queues: Option<u32>,
    /// Tags (requests) per hardware queue (`mq/0/nr_tags`).
    pub hw_queue_tags: Option<u32>,
    /// `md/level` (raid1, raid10, ...).
    pub md_level: Option<String>,
    /// The dm uuid's prefix: LVM, CRYPT, mpath, ...
    pub dm_target: Option<String>,
    /// `loop/backing_file`.
    pub loop_backing_file: Option<String>,
}

/// The extra facts of a device (a partition reports its disk's queue facts).
pub fn extra(root: &Root, dev: &BlockDev) -> DeviceExtra {
    let Some(dir) = sysfs_dir(root, dev) else {
        return DeviceExtra::default();
    };
    let disk_dir = disk_of(&dir);
    let mq: Vec<String> = dir_entries(&disk_dir.join("mq"))
        .into_iter()
        .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    DeviceExtra {
        queue_depth: read_num(&disk_dir.join("device/queue_depth")),
        hw_queues: (!mq.is_empty()).then_some(mq.len() as u32),
        hw_queue_tags: mq
            .first()
            .and_then(|q| read_num(&disk_dir.join("mq").join(q).join("nr_tags"))),
        md_level: read_trim(&dir.join("md/level")).filter(|s| !s.is_empty()),
        dm_target: read_trim(&dir.join("dm/uuid"))
            .and_then(|u| u.split('-').next().map(str::to_string))
            .filter(|s| !s.is_empty()),
        loop_backing_file: read_trim(&dir.join("loop/backing_file")).filter(|s| !s.is_empty()),
    }
}

/// What tells one device from another created later under the same name (a loop or zram
/// device set up again, a disk replaced): the kernel's `diskseq` (5.15+, a new number for
/// every disk the kernel creates or whose media changes, renumbered at boot, so compared only
/// within one boot: `<proc>/sys/kernel/random/boot_id`), a loop device's backing file and its
/// inode (device:inode of the file now at that path), the wwid and serial.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub diskseq: Option<u64>,
    pub boot_id: Option<String>,
    pub backing_file: Option<String>,
    pub backing_inode: Option<String>,
    pub wwid: Option<String>,
    pub serial: Option<String>,
}

/// Thin IO: the device's [`Identity`] (a partition's is its disk's).
pub fn identity(root: &Root, dev: &BlockDev) -> Identity {
    match sysfs_dir(root, dev) {
        Some(dir) => identity_in(&dir, boot_id(root)),
        None => Identity::default(),
    }
}

/// This boot's id (`<proc>/sys/kernel/random/boot_id`), which an [`Identity`]'s `diskseq` is
/// compared within.
pub fn boot_id(root: &Root) -> Option<String> {
    read_trim(&root.proc.join("sys/kernel/random/boot_id")).filter(|s| !s.is_empty())
}

/// [`identity`] of the device whose sysfs directory is `dir`, in the boot `boot_id`.
pub fn identity_in(dir: &Path, boot_id: Option<String>) -> Identity {
    use std::os::unix::fs::MetadataExt;
    let disk = disk_of(dir);
    let backing_file = read_trim(&disk.join("loop/backing_file")).filter(|s| !s.is_empty());
    let backing_inode = backing_file
        .as_deref()
        .and_then(|f| std::fs::metadata(f).ok())
        .map(|m| format!("{}:{}", m.dev(), m.ino()));
    let nonempty = |p: &Path| read_trim(p).filter(|s| !s.is_empty());
    Identity {
        diskseq: read_num(&disk.join("diskseq")),
        boot_id,
        backing_file,
        backing_inode,
        wwid: nonempty(&disk.join("wwid")).or_else(|| nonempty(&disk.join("device/wwid"))),
        serial: nonempty(&disk.join("serial")).or_else(|| nonempty(&disk.join("device/serial"))),
    }
}

/// Undo the octal escapes (\040 for space, ...) of /proc/self/mountinfo.
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push((b[i + 1] - b'0') * 64 + (b[i + 2] - b'0') * 8 + (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Mount points per major:minor in a mountinfo text (pure).
pub fn parse_mountinfo(text: &str) -> Vec<((u32, u32), String)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_ascii_whitespace();
            let dev = parse_dev_t(f.nth(2)?)?;
            let mp = f.nth(1)?;
            Some((dev, unescape_mount(mp)))
        })
        .collect()
}

/// One mount of a device: where, which filesystem, and its options (the mount's own and the
/// filesystem's, as mountinfo gives them).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Mount {
    pub point: String,
    pub fstype: String,
    pub options: String,
}

/// Every mount in a mountinfo text with its device (pure): `id parent M:m root point opts
/// [optional...] - fstype source super-opts`.
pub fn parse_mounts(text: &str) -> Vec<((u32, u32), Mount)> {
    text.lines()
        .filter_map(|l| {
            let (head, tail) = l.split_once(" - ")?;
            let f: Vec<&str> = head.split_ascii_whitespace().collect();
            let dev = parse_dev_t(f.get(2)?)?;
            let mut t = tail.split_ascii_whitespace();
            let fstype = t.next()?.to_string();
            let sup = t.nth(1).unwrap_or("");
            let mut options: Vec<&str> = f.get(5)?.split(',').collect();
            for o in sup.split(',') {
                if !o.is_empty() && !options.contains(&o) {
                    options.push(o);
                }
            }
            let mount = Mount {
                point: unescape_mount(f.get(4)?),
                fstype,
                options: options.join(","),
            };
            Some((dev, mount))
        })
        .collect()
}

/// The mounts of the device and its partitions, from <proc>/self/mountinfo.
pub fn mounts(root: &Root, dev: &BlockDev) -> Vec<Mount> {
    let Ok(text) = std::fs::read_to_string(root.proc.join("self/mountinfo")) else {
        return Vec::new();
    };
    let mut keys = vec![(dev.major, dev.minor)];
    keys.extend(partitions(root, dev).iter().map(|p| (p.major, p.minor)));
    let mut v: Vec<Mount> = parse_mounts(&text)
        .into_iter()
        .filter(|(d, _)| keys.contains(d))
        .map(|(_, m)| m)
        .collect();
    v.dedup_by(|a, b| a.point == b.point);
    v
}

/// Where the device and its partitions are mounted, from <proc>/self/mountinfo.
pub fn mountpoints(root: &Root, dev: &BlockDev) -> Vec<String> {
    mounts(root, dev).into_iter().map(|m| m.point).collect()
}

/// The file names listed in a /proc/swaps text (pure): the first field of every line after
/// the header, unescaped like mountinfo.
pub fn parse_swaps(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_ascii_whitespace().next())
        .map(unescape_mount)
        .collect()
}

/// The names under which `dev` itself is active swap, from <proc>/swaps (each listed block
/// device's st_rdev compared with the device's major:minor; swap files are skipped).
pub fn swap_names(root: &Root, dev: &BlockDev) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(root.proc.join("swaps")) else {
        return Vec::new();
    };
    parse_swaps(&text)
        .into_iter()
        .filter(|name| {
            std::fs::metadata(name).is_ok_and(|m| {
                m.file_type().is_block_device()
                    && (libc::major(m.rdev()), libc::minor(m.rdev())) == (dev.major, dev.minor)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_picks_the_bracketed_one() {
        assert_eq!(
            active_scheduler("none [mq-deadline] kyber bfq \n").as_deref(),
            Some("mq-deadline")
        );
        assert_eq!(active_scheduler("none").as_deref(), Some("none"));
        assert_eq!(active_scheduler(""), None);
    }

    #[test]
    fn swaps_lists_file_names() {
        let t = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n/dev/zram1                              partition\t65532\t\t0\t\t-2\n/var/my\\040swap                           file\t\t1024\t\t0\t\t-3\n";
        assert_eq!(parse_swaps(t), ["/dev/zram1", "/var/my swap"]);
        assert!(parse_swaps("Filename\tType\tSize\tUsed\tPriority\n").is_empty());
    }

    #[test]
    fn mountinfo_is_keyed_by_dev_and_unescaped() {
        let t = "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n40 27 8:1 / /mnt/my\\040disk rw - xfs /dev/sda1 rw\n22 27 0:21 / /proc rw - proc proc rw\n";
        let m = parse_mountinfo(t);
        assert_eq!(m.len(), 3);
        assert_eq!(m[0], ((254, 0), "/".to_string()));
        assert_eq!(m[1], ((8, 1), "/mnt/my disk".to_string()));
        let full = parse_mounts(t);
        assert_eq!(full[0].1.fstype, "ext4");
        assert_eq!(full[0].1.options, "rw,relatime");
        assert_eq!(full[1].1.point, "/mnt/my disk");
        // Optional fields before the separator, super options after the source.
        let opt = "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 shared:2 - ext3 /dev/root rw,errors=continue\n";
        let m = parse_mounts(opt);
        assert_eq!(m[0].0, (98, 0));
        assert_eq!(m[0].1.fstype, "ext3");
        assert_eq!(m[0].1.options, "rw,noatime,errors=continue");
        assert!(parse_mounts("garbage without separator\n").is_empty());
    }

    #[test]
    fn dev_t_parses() {
        assert_eq!(parse_dev_t("259:12\n"), Some((259, 12)));
        assert_eq!(parse_dev_t("259"), None);
    }
}

#[cfg(test)]
mod fixture_tests {
    //! Against the fake sysfs tree in tests/fixtures/sysroot1 (sd + partitions, nvme +
    //! partitions, dm on an nvme partition, md on an sd partition, loop, zram).
    use super::*;

    fn root() -> Root {
        let base = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/sysroot1");
        Root {
            proc: PathBuf::from(base).join("proc"),
            sys: PathBuf::from(base).join("sys"),
        }
    }

    fn dev(major: u32, minor: u32, name: &str) -> BlockDev {
        BlockDev {
            major,
            minor,
            name: name.into(),
        }
    }

    #[test]
    fn classifies_by_sysfs_not_name() {
        let r = root();
        let k = |ma, mi| kind(&r, &dev(ma, mi, "")).unwrap();
        assert_eq!(k(8, 0), DevKind::Disk);
        assert_eq!(k(8, 1), DevKind::Partition);
        assert_eq!(k(259, 0), DevKind::Disk);
        assert_eq!(k(259, 2), DevKind::Partition);
        assert_eq!(k(253, 0), DevKind::Dm);
        assert_eq!(k(9, 0), DevKind::Md);
        assert_eq!(k(7, 0), DevKind::Loop);
        assert_eq!(k(252, 0), DevKind::Zram);
        assert_eq!(kind(&r, &dev(8, 16, "sdb")), None);
    }

    #[test]
    fn md_array_name_from_the_dev_md_link() {
        let t = tempfile::tempdir().unwrap();
        let sys = t.path().join("sys");
        let md = sys.join("devices/virtual/block/md127");
        std::fs::create_dir_all(md.join("md")).unwrap();
        std::fs::write(md.join("dev"), "9:127\n").unwrap();
        std::fs::create_dir_all(sys.join("dev/block")).unwrap();
        std::os::unix::fs::symlink(&md, sys.join("dev/block/9:127")).unwrap();
        let r = Root {
            proc: t.path().join("proc"),
            sys,
        };
        let d = dev(9, 127, "md127");
        assert_eq!(
            friendly_name(&r, &d),
            "md127",
            "no /dev/md link: kernel name"
        );
        std::fs::create_dir_all(t.path().join("dev/md")).unwrap();
        std::os::unix::fs::symlink("../md126", t.path().join("dev/md/other")).unwrap();
        std::os::unix::fs::symlink("../md127", t.path().join("dev/md/data")).unwrap();
        assert_eq!(friendly_name(&r, &d), "data");
        assert_eq!(kind(&r, &d), Some(DevKind::Md));
    }

    #[test]
    fn friendly_names_and_whole_disks() {
        let r = root();
        assert_eq!(friendly_name(&r, &dev(253, 0, "dm-0")), "vg0-root");
        assert_eq!(friendly_name(&r, &dev(9, 0, "md0")), "md0");
        assert_eq!(
            whole_disk(&r, &dev(259, 2, "nvme0n1p2")),
            dev(259, 0, "nvme0n1")
        );
        assert_eq!(whole_disk(&r, &dev(8, 0, "sda")), dev(8, 0, "sda"));
    }

    #[test]
    fn queue_info_of_disk_and_partition() {
        let r = root();
        let q = queue_info(&r, &dev(8, 0, "sda"));
        assert_eq!(q.rotational, Some(false));
        assert_eq!(q.scheduler.as_deref(), Some("mq-deadline"));
        assert_eq!(q.write_cache.as_deref(), Some("write back"));
        assert_eq!(q.fua, Some(true));
        assert_eq!(q.nr_requests, Some(64));
        assert_eq!(q.model.as_deref(), Some("Samsung SSD 860"));
        assert_eq!(q.size_bytes, Some(1953525168 * 512));
        let p = queue_info(&r, &dev(8, 1, "sda1"));
        assert_eq!(p.scheduler.as_deref(), Some("mq-deadline"));
        assert_eq!(p.model.as_deref(), Some("Samsung SSD 860"));
        assert_eq!(p.size_bytes, Some(1048576 * 512));
        let m = queue_info(&r, &dev(9, 0, "md0"));
        assert_eq!(m.rotational, Some(true));
        assert_eq!(m.physical_block_size, Some(4096));
        assert_eq!(m.discard_max_bytes, Some(0));
        assert_eq!(m.model, None);
        let z = queue_info(&r, &dev(252, 0, "zram0"));
        assert_eq!(z.scheduler, None);
        assert_eq!(z.logical_block_size, Some(4096));
        assert_eq!(queue_info(&r, &dev(8, 16, "sdb")), QueueInfo::default());
    }

    #[test]
    fn holders_slaves_partitions_mounts() {
        let r = root();
        assert_eq!(holders(&r, &dev(259, 2, "nvme0n1p2")), vec!["dm-0"]);
        assert_eq!(slaves(&r, &dev(253, 0, "dm-0")), vec!["nvme0n1p2"]);
        assert_eq!(slaves(&r, &dev(9, 0, "md0")), vec!["sda2"]);
        assert!(holders(&r, &dev(259, 0, "nvme0n1")).is_empty());
        let parts = partitions(&r, &dev(259, 0, "nvme0n1"));
        assert_eq!(
            parts,
            vec![dev(259, 1, "nvme0n1p1"), dev(259, 2, "nvme0n1p2")]
        );
        assert_eq!(mountpoints(&r, &dev(259, 0, "nvme0n1")), vec!["/boot/efi"]);
        let m = mounts(&r, &dev(253, 0, "dm-0"));
        assert_eq!(m.len(), 1, "{m:?}");
        assert_eq!(m[0].point, "/");
        assert!(!m[0].fstype.is_empty() && !m[0].options.is_empty(), "{m:?}");
        assert_eq!(mountpoints(&r, &dev(253, 0, "dm-0")), vec!["/"]);
        assert_eq!(mountpoints(&r, &dev(9, 0, "md0")), vec!["/srv/my data"]);
        assert!(mountpoints(&r, &dev(8, 0, "sda")).is_empty());
    }

    #[test]
    fn real_paths_and_nodes_map_to_their_disk() {
        // The live system: whatever holds the working directory is a block device or not; a
        // regular file is never a block device node.
        let r = Root::default();
        let err = blockdev_for_node(&r, Path::new("/proc/self/status")).unwrap_err();
        assert!(err.to_string().contains("not a block device"), "{err}");
        // "/" per mountinfo, mapped to its whole disk through sysfs, must be what st_dev
        // of "/" leads to (when "/" is on a block device at all, e.g. not overlayfs).
        let mi = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        let root_dev = parse_mountinfo(&mi)
            .into_iter()
            .rev()
            .find(|(_, m)| m == "/")
            .map(|(d, _)| d)
            .unwrap();
        let stub = BlockDev {
            major: root_dev.0,
            minor: root_dev.1,
            name: String::new(),
        };
        if let Some(dir) = sysfs_dir(&r, &stub) {
            let want = whole_disk(&r, &dev_of_dir(&dir).unwrap());
            assert_eq!(disk_for_path(&r, Path::new("/")).unwrap(), want);
            assert_ne!(kind(&r, &want), Some(DevKind::Partition));
        } else {
            assert!(disk_for_path(&r, Path::new("/")).is_err());
        }
    }
}
