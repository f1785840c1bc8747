//! Every cgroup that holds the io controller, for per-cgroup attribution ("who loads a disk"):
//! the hierarchies (cgroup v2 with `io` in its `cgroup.controllers`, cgroup v1 `blkio`, found
//! through `<proc>/self/mountinfo` or the usual paths under `<sys>/fs/cgroup`), each cgroup
//! with its id (the inode number of its directory, which is the kernfs id the block layer's
//! `blkcg` carries), its path and a human name (systemd unit, Kubernetes pod and container,
//! docker container); per cgroup its raw I/O counters (`io.stat`, `io.pressure`, v1
//! `blkio.throttle.io_service{d,_bytes}`) and its settings (`io.max`, `io.latency`,
//! `io.weight`, `io.cost.qos`, `io.cost.model`, v1 `blkio.throttle.*_device` and weights),
//! and whether a measured rate sits at one of the limits along its path. Sources:
//! Documentation/admin-guide/cgroup-v2.rst ("IO", "IO Latency") and
//! cgroup-v1/blkio-controller.rst; what is read from where, per kernel: docs/cgroups.md.
//! Thin readers over pure parsers; `cgroup.rs` keeps this process's own limits.
//! Imports only: sys/, error, units.

use super::cgroup::ThrottleKind;
use super::Root;
use std::collections::{HashMap, VecDeque};
use std::os::unix::fs::{DirEntryExt, MetadataExt};
use std::path::{Path, PathBuf};

/// How deep below a hierarchy's root the walk goes. Kubernetes' deepest paths
/// (`/kubepods.slice/kubepods-burstable.slice/…-pod<uid>.slice/cri-containerd-<id>.scope`)
/// are 4 levels and systemd's user units 5; anything below 16 is cut and `Tree::cut` says so.
pub const MAX_DEPTH: usize = 16;

/// Which cgroup hierarchy a cgroup belongs to. A controller is bound to one hierarchy at a
/// time, so on a running kernel only one of them holds the io controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Hierarchy {
    V2,
    V1,
}

/// One cgroup of a hierarchy that holds the io controller.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Cgroup {
    /// The inode number of the cgroup's directory: on 64-bit kernels the kernfs node id, the
    /// `cgroup id` bpf_get_current_cgroup_id() and the request's blkcg give.
    pub id: u64,
    pub hierarchy: Hierarchy,
    /// Relative to the hierarchy's root: "/" for the root, "/system.slice/postgresql.service".
    pub path: String,
    /// A name for people, from the path: see [`name_of`].
    pub name: String,
    /// The directory itself (under the `--sys-root`).
    #[serde(skip)]
    pub dir: PathBuf,
    /// The hierarchy's root directory, where `io.cost.*` live.
    #[serde(skip)]
    pub base: PathBuf,
}

impl Cgroup {
    /// The cgroup's directory and every ancestor's, the cgroup first and the hierarchy's root
    /// last, each with its path.
    pub fn levels(&self) -> Vec<(String, PathBuf)> {
        let parts: Vec<&str> = self.path.split('/').filter(|p| !p.is_empty()).collect();
        (0..=parts.len())
            .rev()
            .map(|n| {
                let path = format!("/{}", parts[..n].join("/"));
                let dir = parts[..n].iter().fold(self.base.clone(), |p, x| p.join(x));
                (path, dir)
            })
            .collect()
    }
}

/// The cgroups found, at most the number asked for.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    /// Breadth first, each hierarchy's root first, so a cut keeps the upper levels.
    pub cgroups: Vec<Cgroup>,
    /// The walk stopped early: more cgroups than asked for, or deeper than [`MAX_DEPTH`].
    pub cut: bool,
    /// The hierarchies walked and their root directories.
    pub hierarchies: Vec<(Hierarchy, PathBuf)>,
    by_id: HashMap<u64, usize>,
}

impl Tree {
    /// The cgroup with this id. Ids are unique within a hierarchy; should two hierarchies with
    /// the io controller both be present (only a fixture can do that), the first walked wins.
    /// Before 5.5 a kernfs id carried the inode's generation in its upper 32 bits and the
    /// inode number in its lower 32 (`union kernfs_node_id`): such an id is looked up by its
    /// lower half when it matches no inode whole.
    pub fn by_id(&self, id: u64) -> Option<&Cgroup> {
        let at = self
            .by_id
            .get(&id)
            .or_else(|| (id >> 32 != 0).then(|| self.by_id.get(&(id & 0xffff_ffff)))?);
        at.map(|&i| &self.cgroups[i])
    }

    pub fn len(&self) -> usize {
        self.cgroups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cgroups.is_empty()
    }
}

/// A cgroup mount as `<proc>/self/mountinfo` (or `mounts`) lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupMount {
    pub hierarchy: Hierarchy,
    pub mount_point: String,
}

/// The cgroup2 mounts and the cgroup v1 mounts that carry `blkio`, from mountinfo lines
/// (`38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio`) or mounts lines
/// (`cgroup /sys/fs/cgroup/blkio cgroup rw,relatime,blkio 0 0`). Mount points keep the
/// kernel's octal escapes decoded (`\040` is a space).
pub fn parse_mounts(text: &str) -> Vec<CgroupMount> {
    let mut out = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (mount_point, fstype, opts) = if let Some(sep) = f.iter().position(|x| *x == "-") {
            // mountinfo: field 5 is the mount point, after " - ": fstype, source, super options.
            match (f.get(4), f.get(sep + 1), f.get(sep + 3)) {
                (Some(m), Some(t), o) => (*m, *t, o.copied().unwrap_or("")),
                _ => continue,
            }
        } else {
            match (f.get(1), f.get(2), f.get(3)) {
                (Some(m), Some(t), Some(o)) => (*m, *t, *o),
                _ => continue,
            }
        };
        let hierarchy = match fstype {
            "cgroup2" => Hierarchy::V2,
            "cgroup" if opts.split(',').any(|o| o == "blkio") => Hierarchy::V1,
            _ => continue,
        };
        out.push(CgroupMount {
            hierarchy,
            mount_point: unescape(mount_point),
        });
    }
    out
}

/// Undo the kernel's `\ooo` escapes of mount points (space, tab, newline, backslash).
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|o| o.iter().all(|c| (b'0'..=b'7').contains(c)));
        if let (b'\\', Some(o)) = (b[i], oct) {
            let v = o.iter().fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
            if let Ok(byte) = u8::try_from(v) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether a cgroup2 root lists the io controller in its `cgroup.controllers`.
fn v2_has_io(dir: &Path) -> bool {
    std::fs::read_to_string(dir.join("cgroup.controllers"))
        .map(|t| t.split_whitespace().any(|c| c == "io"))
        .unwrap_or(false)
}

/// A mount point as seen under the root: `/sys/...` moves under `root.sys`; a mount elsewhere
/// is used only when the root is the machine's own `/sys`.
fn under_root(root: &Root, mount_point: &str) -> Option<PathBuf> {
    let p = Path::new(mount_point);
    match p.strip_prefix("/sys") {
        Ok(rest) => Some(root.sys.join(rest)),
        Err(_) => (root.sys == Path::new("/sys")).then(|| p.to_path_buf()),
    }
}

/// The hierarchies that hold the io controller, v2 first: from `<proc>/self/mountinfo` (else
/// `<proc>/self/mounts`) when readable, else the usual places: `<sys>/fs/cgroup` and
/// `<sys>/fs/cgroup/unified` when their `cgroup.controllers` lists `io`, and
/// `<sys>/fs/cgroup/blkio` or a combined v1 mount such as `<sys>/fs/cgroup/blkio,cpu`.
pub fn hierarchies(root: &Root) -> Vec<(Hierarchy, PathBuf)> {
    let mounts = ["self/mountinfo", "self/mounts"]
        .iter()
        .find_map(|f| std::fs::read_to_string(root.proc.join(f)).ok())
        .map(|t| parse_mounts(&t))
        .unwrap_or_default();
    let mut found: Vec<(Hierarchy, PathBuf)> = mounts
        .iter()
        .filter_map(|m| Some((m.hierarchy, under_root(root, &m.mount_point)?)))
        .collect();
    if found.is_empty() {
        let fs = root.sys.join("fs/cgroup");
        found.push((Hierarchy::V2, fs.clone()));
        found.push((Hierarchy::V2, fs.join("unified")));
        found.push((Hierarchy::V1, fs.join("blkio")));
        if let Ok(rd) = std::fs::read_dir(&fs) {
            let mut combined: Vec<PathBuf> = rd
                .flatten()
                .filter(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n != "blkio" && n.split(',').any(|c| c == "blkio")
                })
                .map(|e| e.path())
                .collect();
            combined.sort();
            found.extend(combined.into_iter().map(|p| (Hierarchy::V1, p)));
        }
    }
    let mut out: Vec<(Hierarchy, PathBuf)> = Vec::new();
    let mut seen: Vec<PathBuf> = Vec::new();
    for (h, dir) in found {
        let usable = match h {
            Hierarchy::V2 => v2_has_io(&dir),
            Hierarchy::V1 => dir.is_dir(),
        };
        // /sys/fs/cgroup/blkio is often a symlink to the combined mount: one hierarchy.
        let key = std::fs::canonicalize(&dir).unwrap_or_else(|_| dir.clone());
        if usable && !seen.contains(&key) {
            seen.push(key);
            out.push((h, dir));
        }
    }
    out.sort_by_key(|(h, _)| *h as u8);
    out
}

/// Every cgroup of the hierarchies that hold the io controller, at most `max` of them and at
/// most [`MAX_DEPTH`] levels deep, breadth first (a cut keeps the upper levels). Directory
/// reads only: the inode number comes with each directory entry, so a rescan when an unknown
/// id appears costs one `getdents` per cgroup.
pub fn tree(root: &Root, max: usize) -> Tree {
    tree_to_depth(root, max, MAX_DEPTH)
}

/// [`tree`] with a depth of one's own (the exporter's depth flag): `max_depth` levels below
/// each hierarchy's root, 0 for the roots alone.
pub fn tree_to_depth(root: &Root, max: usize, max_depth: usize) -> Tree {
    let mut t = Tree {
        hierarchies: hierarchies(root),
        ..Tree::default()
    };
    for (h, base) in t.hierarchies.clone() {
        let Ok(meta) = std::fs::metadata(&base) else {
            continue;
        };
        let mut queue: VecDeque<(PathBuf, String, u64, usize)> = VecDeque::new();
        queue.push_back((base.clone(), "/".to_string(), meta.ino(), 0));
        while let Some((dir, path, id, depth)) = queue.pop_front() {
            if t.cgroups.len() >= max {
                t.cut = true;
                break;
            }
            if let Ok(rd) = std::fs::read_dir(&dir) {
                let mut children: Vec<(String, u64)> = rd
                    .flatten()
                    .filter(|e| e.file_type().map(|ft| ft.is_dir()).unwrap_or(false))
                    .map(|e| (e.file_name().to_string_lossy().into_owned(), e.ino()))
                    .collect();
                children.sort();
                if depth + 1 > max_depth {
                    t.cut |= !children.is_empty();
                } else {
                    for (name, ino) in children {
                        let child = if path == "/" {
                            format!("/{name}")
                        } else {
                            format!("{path}/{name}")
                        };
                        queue.push_back((dir.join(&name), child, ino, depth + 1));
                    }
                }
            }
            t.by_id.entry(id).or_insert(t.cgroups.len());
            t.cgroups.push(Cgroup {
                id,
                hierarchy: h,
                name: name_of(&path),
                path,
                dir,
                base: base.clone(),
            });
        }
    }
    t
}

/// The systemd unit suffixes a cgroup directory can carry.
const UNIT_SUFFIXES: [&str; 3] = [".service", ".scope", ".slice"];

/// A container runtime's scope or directory name: `docker-<id>.scope`,
/// `cri-containerd-<id>.scope`, `crio-<id>.scope`, `libpod-<id>.scope` (or without `.scope`):
/// (runtime, id).
fn container_of(part: &str) -> Option<(&'static str, &str)> {
    let stem = part.strip_suffix(".scope").unwrap_or(part);
    for (prefix, runtime) in [
        ("cri-containerd-", "containerd"),
        ("docker-", "docker"),
        ("crio-conmon-", "crio-conmon"),
        ("crio-", "crio"),
        ("libpod-conmon-", "podman-conmon"),
        ("libpod-", "podman"),
    ] {
        if let Some(id) = stem.strip_prefix(prefix) {
            if is_hex_id(id) {
                return Some((runtime, id));
            }
        }
    }
    None
}

/// A container id: 12 to 64 hex digits.
fn is_hex_id(s: &str) -> bool {
    (12..=64).contains(&s.len()) && s.bytes().all(|c| c.is_ascii_hexdigit())
}

/// The pod uid a path component names: `pod<uid>` (cgroupfs driver) or
/// `kubepods-<qos>-pod<uid_with_underscores>.slice` (systemd driver).
fn pod_of(part: &str) -> Option<String> {
    let stem = part.strip_suffix(".slice").unwrap_or(part);
    let (pre, uid) = stem.rsplit_once("pod")?;
    let ok_prefix = pre.is_empty() || (pre.starts_with("kubepods") && pre.ends_with('-'));
    let ok_uid = uid.len() >= 8
        && uid
            .bytes()
            .all(|c| c.is_ascii_hexdigit() || c == b'-' || c == b'_');
    (ok_prefix && ok_uid).then(|| uid.replace('_', "-"))
}

/// 12 characters of a container id, as `docker ps` shows it.
fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// A name for people from a cgroup's path: a Kubernetes pod and its container ("pod 1b2c3d4e…
/// / container 3f4e5d6a7b8c", the pod uid's first 8 characters and the container id's first
/// 12), a container outside Kubernetes ("docker 3f4e5d6a7b8c" from `/docker/<id>` or
/// `docker-<id>.scope`; "containerd …", "crio …", "podman …"), the systemd unit the path ends
/// in ("postgresql.service", "user@1000.service", "system.slice"), else the path itself.
pub fn name_of(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let Some(last) = parts.last() else {
        return "/".to_string();
    };
    let in_kube = parts.iter().any(|p| p.starts_with("kubepods"));
    if in_kube {
        if let Some(uid) = parts.iter().rev().find_map(|p| pod_of(p)) {
            let pod = format!("pod {}…", &uid[..8]);
            let pod_at = parts.iter().rposition(|p| pod_of(p).is_some());
            let below = pod_at.and_then(|i| parts.get(i + 1));
            return match below {
                Some(c) => {
                    let id = container_of(c)
                        .map(|(_, id)| id)
                        .or_else(|| is_hex_id(c).then_some(*c));
                    match id {
                        Some(id) => format!("{pod} / container {}", short(id)),
                        None => format!("{pod} / {c}"),
                    }
                }
                None => pod,
            };
        }
    }
    if let Some((runtime, id)) = container_of(last) {
        return format!("{runtime} {}", short(id));
    }
    if parts.len() >= 2 && parts[parts.len() - 2] == "docker" && is_hex_id(last) {
        return format!("docker {}", short(last));
    }
    if UNIT_SUFFIXES.iter().any(|s| last.ends_with(s)) {
        return last.to_string();
    }
    path.to_string()
}

/// `8:16` → (8, 16).
fn parse_dev(s: &str) -> Option<(u32, u32)> {
    let (a, b) = s.split_once(':')?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// One line's `key=value` pairs, in order.
type KeyValues<'a> = Vec<(&'a str, &'a str)>;

/// A nested-keyed file (`8:16 rbytes=1 wbytes=2`): per line the device and its key=value
/// pairs, in order. Lines whose first field is not `MAJ:MIN` are skipped.
fn parse_nested(text: &str) -> Vec<((u32, u32), KeyValues<'_>)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let dev = parse_dev(f.next()?)?;
            Some((dev, f.filter_map(|kv| kv.split_once('=')).collect()))
        })
        .collect()
}

/// iocost's per-cgroup figures in `io.stat` (blk-iocost.c `ioc_pd_stat`, from 5.4): present
/// only while iocost is enabled on the device; microseconds, cumulative.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct IoCostStat {
    /// `cost.vrate`, the root's line only: the device's current vrate in percent.
    pub vrate_pct: Option<f64>,
    pub usage_us: Option<u64>,
    /// `cost.wait`, `cost.indebt`, `cost.indelay`: only where the kernel prints them (with
    /// `blk_cgroup.blkcg_debug_stats=1` on the kernels that have that switch).
    pub wait_us: Option<u64>,
    pub indebt_us: Option<u64>,
    pub indelay_us: Option<u64>,
}

/// io.latency's figures in `io.stat` (blk-iolatency.c `iolatency_pd_stat`, from 4.19), where
/// the kernel prints them (with `blkcg_debug_stats` on kernels that have that switch).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct IoLatencyStat {
    /// The queue depth the group is allowed; None is `depth=max` (not clamped).
    pub depth: Option<u64>,
    /// Rotating disks: the moving average of latency (µs) and the window (ms).
    pub avg_lat_us: Option<u64>,
    pub win_ms: Option<u64>,
    /// Non-rotational devices: requests over the target and requests in the window.
    pub missed: Option<u64>,
    pub total: Option<u64>,
}

/// One device's raw cumulative counters for one cgroup.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct DevCounters {
    pub major: u32,
    pub minor: u32,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub read_ios: u64,
    pub write_ios: u64,
    /// From 4.19 (v2 `dbytes`/`dios`, v1 `Discard` lines); None where the kernel has none.
    pub discard_bytes: Option<u64>,
    pub discard_ios: Option<u64>,
    pub cost: Option<IoCostStat>,
    pub latency: Option<IoLatencyStat>,
}

/// One line of a PSI file: the share of time stalled (percent, averaged over 10, 60 and 300
/// s) and the total stall time (µs, cumulative).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct PressureLine {
    pub avg10: f64,
    pub avg60: f64,
    pub avg300: f64,
    pub total_us: u64,
}

/// `io.pressure` (Documentation/accounting/psi.rst): `some` is time at least one task of the
/// cgroup waited for I/O, `full` time all its non-idle tasks did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Pressure {
    pub some: PressureLine,
    pub full: Option<PressureLine>,
}

/// A cgroup's raw counters, per device, and its I/O pressure.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Counters {
    pub devices: Vec<DevCounters>,
    /// `io.pressure` (v2, from 4.20 with CONFIG_PSI). Always None for a v1 cgroup: PSI is a
    /// cgroup v2 feature and the blkio hierarchy has no such file.
    pub pressure: Option<Pressure>,
    /// The counters include the cgroup's descendants: always in v2 (`io.stat` is
    /// hierarchical), in v1 when the `_recursive` files exist.
    pub recursive: bool,
    /// The files the counters came from.
    pub files: Vec<String>,
}

impl Counters {
    pub fn device(&self, major: u32, minor: u32) -> Option<&DevCounters> {
        self.devices
            .iter()
            .find(|d| (d.major, d.minor) == (major, minor))
    }
}

/// v2 `io.stat`: `8:0 rbytes=90430464 wbytes=299008000 rios=8950 wios=1252 dbytes=50331648
/// dios=3021`, then where present iocost's `cost.*` and io.latency's `depth avg_lat win` (or
/// `missed total depth`). Unknown keys (`use_delay`, `delay_nsec`) are ignored.
pub fn parse_io_stat(text: &str) -> Vec<DevCounters> {
    parse_nested(text)
        .into_iter()
        .map(|((major, minor), kv)| {
            let mut d = DevCounters {
                major,
                minor,
                ..DevCounters::default()
            };
            let mut cost = IoCostStat::default();
            let mut lat = IoLatencyStat::default();
            let (mut has_cost, mut has_lat) = (false, false);
            for (k, v) in kv {
                let n = || v.parse::<u64>().ok();
                match k {
                    "rbytes" => d.read_bytes = n().unwrap_or(0),
                    "wbytes" => d.write_bytes = n().unwrap_or(0),
                    "rios" => d.read_ios = n().unwrap_or(0),
                    "wios" => d.write_ios = n().unwrap_or(0),
                    "dbytes" => d.discard_bytes = n(),
                    "dios" => d.discard_ios = n(),
                    "cost.vrate" => (cost.vrate_pct, has_cost) = (v.parse().ok(), true),
                    "cost.usage" => (cost.usage_us, has_cost) = (n(), true),
                    "cost.wait" => (cost.wait_us, has_cost) = (n(), true),
                    "cost.indebt" => (cost.indebt_us, has_cost) = (n(), true),
                    "cost.indelay" => (cost.indelay_us, has_cost) = (n(), true),
                    "depth" => (lat.depth, has_lat) = (n(), true),
                    "avg_lat" => (lat.avg_lat_us, has_lat) = (n(), true),
                    "win" => (lat.win_ms, has_lat) = (n(), true),
                    "missed" => (lat.missed, has_lat) = (n(), true),
                    "total" => (lat.total, has_lat) = (n(), true),
                    _ => {}
                }
            }
            d.cost = has_cost.then_some(cost);
            d.latency = has_lat.then_some(lat);
            d
        })
        .collect()
}

/// A PSI file: `some avg10=0.00 avg60=0.00 avg300=0.00 total=0` and (io has had it from the
/// start, 4.20) a `full` line. None when there is no `some` line.
pub fn parse_pressure(text: &str) -> Option<Pressure> {
    let line = |want: &str| {
        text.lines().find_map(|l| {
            let mut f = l.split_whitespace();
            if f.next()? != want {
                return None;
            }
            let mut p = PressureLine::default();
            for (k, v) in f.filter_map(|kv| kv.split_once('=')) {
                match k {
                    "avg10" => p.avg10 = v.parse().ok()?,
                    "avg60" => p.avg60 = v.parse().ok()?,
                    "avg300" => p.avg300 = v.parse().ok()?,
                    "total" => p.total_us = v.parse().ok()?,
                    _ => {}
                }
            }
            Some(p)
        })
    };
    Some(Pressure {
        some: line("some")?,
        full: line("full"),
    })
}

/// Read, write and discard of one device in a v1 rwstat file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RwStat {
    pub read: u64,
    pub write: u64,
    /// The `Discard` line, from 4.19.
    pub discard: Option<u64>,
}

/// A v1 rwstat file (`blkio.throttle.io_serviced`, `…io_service_bytes`, their `_recursive`
/// variants): `7:0 Read 3836139`, `Write`, `Sync`, `Async`, `Discard`, `Total` per device and a
/// last `Total N` line.
pub fn parse_v1_rwstat(text: &str) -> Vec<((u32, u32), RwStat)> {
    let mut out: Vec<((u32, u32), RwStat)> = Vec::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let [dev, op, n] = f[..] else { continue };
        let (Some(dev), Ok(n)) = (parse_dev(dev), n.parse::<u64>()) else {
            continue;
        };
        let i = match out.iter().position(|(d, _)| *d == dev) {
            Some(i) => i,
            None => {
                out.push((dev, RwStat::default()));
                out.len() - 1
            }
        };
        match op {
            "Read" => out[i].1.read = n,
            "Write" => out[i].1.write = n,
            "Discard" => out[i].1.discard = Some(n),
            _ => {}
        }
    }
    out
}

/// A cgroup's `io.pressure` alone (the per-tick reading of who loads a disk): None for a v1
/// cgroup (PSI is a cgroup v2 feature; a v1 directory has no such file, and one placed there
/// is not the kernel's), without the file (no PSI, `psi=0`) or when it does not parse.
pub fn read_pressure(cg: &Cgroup) -> Option<Pressure> {
    if cg.hierarchy != Hierarchy::V2 {
        return None;
    }
    parse_pressure(&std::fs::read_to_string(cg.dir.join("io.pressure")).ok()?)
}

/// A cgroup's raw counters per device and its `io.pressure` (v2; None in v1, where no such
/// file exists). Missing or unreadable files give no devices, never an error: a cgroup can
/// vanish between the walk and the read.
pub fn read_counters(_root: &Root, cg: &Cgroup) -> Counters {
    let read = |name: &str| {
        let p = cg.dir.join(name);
        std::fs::read_to_string(&p)
            .ok()
            .map(|t| (t, p.display().to_string()))
    };
    let mut c = Counters::default();
    match cg.hierarchy {
        Hierarchy::V2 => {
            if let Some((t, f)) = read("io.stat") {
                c.devices = parse_io_stat(&t);
                c.files.push(f);
            }
            c.recursive = true;
            if let Some((t, f)) = read("io.pressure") {
                c.pressure = parse_pressure(&t);
                c.files.push(f);
            }
        }
        Hierarchy::V1 => {
            let pick = |base: &str| match read(&format!("{base}_recursive")) {
                Some(x) => Some((x, true)),
                None => read(base).map(|x| (x, false)),
            };
            let ios = pick("blkio.throttle.io_serviced");
            let bytes = pick("blkio.throttle.io_service_bytes");
            c.recursive = ios.as_ref().is_some_and(|x| x.1) && bytes.as_ref().is_some_and(|x| x.1);
            let entry = |c: &mut Counters, dev: (u32, u32)| -> usize {
                match c.devices.iter().position(|d| (d.major, d.minor) == dev) {
                    Some(i) => i,
                    None => {
                        c.devices.push(DevCounters {
                            major: dev.0,
                            minor: dev.1,
                            ..DevCounters::default()
                        });
                        c.devices.len() - 1
                    }
                }
            };
            if let Some(((t, f), _)) = ios {
                for (dev, s) in parse_v1_rwstat(&t) {
                    let i = entry(&mut c, dev);
                    let d = &mut c.devices[i];
                    (d.read_ios, d.write_ios, d.discard_ios) = (s.read, s.write, s.discard);
                }
                c.files.push(f);
            }
            if let Some(((t, f), _)) = bytes {
                for (dev, s) in parse_v1_rwstat(&t) {
                    let i = entry(&mut c, dev);
                    let d = &mut c.devices[i];
                    (d.read_bytes, d.write_bytes, d.discard_bytes) = (s.read, s.write, s.discard);
                }
                c.files.push(f);
            }
        }
    }
    c
}

/// A throttle on one device: v2 `io.max` or v1 `blkio.throttle.*_device`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Limit {
    pub major: u32,
    pub minor: u32,
    pub kind: ThrottleKind,
    pub value: u64,
    /// The cgroup (path in its hierarchy) that sets it.
    pub cgroup: String,
    /// The file it came from.
    pub file: String,
}

impl Limit {
    /// "io.max riops=500" or "blkio.throttle.read_iops_device 500".
    pub fn setting(&self) -> String {
        let file = Path::new(&self.file)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        if file == "io.max" {
            format!("io.max {}={}", self.kind.io_max_key(), self.value)
        } else {
            format!("{file} {}", self.value)
        }
    }
}

/// An `io.latency` target (v2, from 4.19).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LatencyTarget {
    pub major: u32,
    pub minor: u32,
    pub target_us: u64,
    pub cgroup: String,
    pub file: String,
}

/// A proportional weight: the default (`dev` None) or one device's override.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Weight {
    pub dev: Option<(u32, u32)>,
    pub weight: u32,
    pub cgroup: String,
    pub file: String,
}

/// `io.cost.qos` of one device (root only, from 5.4).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CostQos {
    pub major: u32,
    pub minor: u32,
    pub enable: bool,
    /// "auto" or "user".
    pub ctrl: String,
    pub rpct: Option<f64>,
    pub rlat_us: Option<u64>,
    pub wpct: Option<f64>,
    pub wlat_us: Option<u64>,
    pub min_pct: Option<f64>,
    pub max_pct: Option<f64>,
    pub file: String,
}

/// `io.cost.model` of one device (root only, from 5.4): `ctrl`, `model` and the model's
/// parameters (`rbps`, `rseqiops`, `rrandiops`, `wbps`, `wseqiops`, `wrandiops` for
/// "linear").
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CostModel {
    pub major: u32,
    pub minor: u32,
    pub ctrl: String,
    pub model: String,
    pub params: Vec<(String, u64)>,
    pub file: String,
}

/// A cgroup's I/O settings (and, from [`read_settings_up`], its ancestors'), each with the
/// cgroup and file it came from.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Settings {
    pub limits: Vec<Limit>,
    pub latency: Vec<LatencyTarget>,
    pub weights: Vec<Weight>,
    pub cost_qos: Vec<CostQos>,
    pub cost_model: Vec<CostModel>,
}

impl Settings {
    fn extend(&mut self, o: Settings) {
        self.limits.extend(o.limits);
        self.latency.extend(o.latency);
        self.weights.extend(o.weights);
        self.cost_qos.extend(o.cost_qos);
        self.cost_model.extend(o.cost_model);
    }
}

/// Finite limits of an `io.max` file, every device: `8:16 rbps=2097152 wbps=max riops=max
/// wiops=120` gives rbps and wiops.
pub fn parse_io_max_all(text: &str) -> Vec<((u32, u32), ThrottleKind, u64)> {
    let mut out = Vec::new();
    for (dev, kv) in parse_nested(text) {
        for (k, v) in kv {
            let Some(kind) = ThrottleKind::of_io_max_key(k) else {
                continue;
            };
            if let Ok(n) = v.parse() {
                out.push((dev, kind, n));
            }
        }
    }
    out
}

/// A `MAJ:MIN value` per line file (v1 `blkio.throttle.*_device`, `blkio.weight_device`).
pub fn parse_dev_values(text: &str) -> Vec<((u32, u32), u64)> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            Some((parse_dev(f.next()?)?, f.next()?.parse().ok()?))
        })
        .collect()
}

/// `io.latency`: `8:16 target=75000` (µs) per device; `target=max` is no target.
pub fn parse_io_latency(text: &str) -> Vec<((u32, u32), u64)> {
    parse_nested(text)
        .into_iter()
        .filter_map(|(dev, kv)| {
            let v = kv.iter().find(|(k, _)| *k == "target")?.1;
            Some((dev, v.parse().ok()?))
        })
        .collect()
}

/// A weight file: v2 `io.weight` / `io.bfq.weight` (`default 100`, then `8:16 200` per
/// override) or v1 `blkio.weight` / `blkio.bfq.weight` (a bare `500`). (None, w) is the
/// default.
pub fn parse_weights(text: &str) -> Vec<(Option<(u32, u32)>, u32)> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            match f[..] {
                [w] => Some((None, w.parse().ok()?)),
                ["default", w] => Some((None, w.parse().ok()?)),
                [dev, w] => Some((Some(parse_dev(dev)?), w.parse().ok()?)),
                _ => None,
            }
        })
        .collect()
}

/// `io.cost.qos`: `8:16 enable=1 ctrl=auto rpct=95.00 rlat=75000 wpct=95.00 wlat=150000
/// min=50.00 max=150.00` per device.
pub fn parse_cost_qos(text: &str, file: &str) -> Vec<CostQos> {
    parse_nested(text)
        .into_iter()
        .map(|((major, minor), kv)| {
            let get = |k: &str| kv.iter().find(|(x, _)| *x == k).map(|(_, v)| *v);
            let f = |k: &str| get(k).and_then(|v| v.parse::<f64>().ok());
            let n = |k: &str| get(k).and_then(|v| v.parse::<u64>().ok());
            CostQos {
                major,
                minor,
                enable: get("enable") == Some("1"),
                ctrl: get("ctrl").unwrap_or("").to_string(),
                rpct: f("rpct"),
                rlat_us: n("rlat"),
                wpct: f("wpct"),
                wlat_us: n("wlat"),
                min_pct: f("min"),
                max_pct: f("max"),
                file: file.to_string(),
            }
        })
        .collect()
}

/// `io.cost.model`: `8:16 ctrl=auto model=linear rbps=… rseqiops=… rrandiops=… wbps=…
/// wseqiops=… wrandiops=…` per device.
pub fn parse_cost_model(text: &str, file: &str) -> Vec<CostModel> {
    parse_nested(text)
        .into_iter()
        .map(|((major, minor), kv)| {
            let get = |k: &str| kv.iter().find(|(x, _)| *x == k).map(|(_, v)| v.to_string());
            CostModel {
                major,
                minor,
                ctrl: get("ctrl").unwrap_or_default(),
                model: get("model").unwrap_or_default(),
                params: kv
                    .iter()
                    .filter(|(k, _)| *k != "ctrl" && *k != "model")
                    .filter_map(|(k, v)| Some((k.to_string(), v.parse().ok()?)))
                    .collect(),
                file: file.to_string(),
            }
        })
        .collect()
}

/// The v1 throttle files and the limit each sets (the same as this process's, sys::cgroup).
const V1_LIMIT_FILES: [(&str, ThrottleKind); 4] = super::cgroup::V1_FILES;

/// The settings in one cgroup directory.
fn settings_in(h: Hierarchy, dir: &Path, cgroup: &str) -> Settings {
    let mut s = Settings::default();
    let read = |name: &str| {
        let p = dir.join(name);
        std::fs::read_to_string(&p)
            .ok()
            .map(|t| (t, p.display().to_string()))
    };
    let weights = |s: &mut Settings, name: &str| {
        if let Some((t, file)) = read(name) {
            for (dev, weight) in parse_weights(&t) {
                s.weights.push(Weight {
                    dev,
                    weight,
                    cgroup: cgroup.to_string(),
                    file: file.clone(),
                });
            }
        }
    };
    match h {
        Hierarchy::V2 => {
            if let Some((t, file)) = read("io.max") {
                for ((major, minor), kind, value) in parse_io_max_all(&t) {
                    s.limits.push(Limit {
                        major,
                        minor,
                        kind,
                        value,
                        cgroup: cgroup.to_string(),
                        file: file.clone(),
                    });
                }
            }
            if let Some((t, file)) = read("io.latency") {
                for ((major, minor), target_us) in parse_io_latency(&t) {
                    s.latency.push(LatencyTarget {
                        major,
                        minor,
                        target_us,
                        cgroup: cgroup.to_string(),
                        file: file.clone(),
                    });
                }
            }
            weights(&mut s, "io.weight");
            weights(&mut s, "io.bfq.weight");
            if let Some((t, file)) = read("io.cost.qos") {
                s.cost_qos = parse_cost_qos(&t, &file);
            }
            if let Some((t, file)) = read("io.cost.model") {
                s.cost_model = parse_cost_model(&t, &file);
            }
        }
        Hierarchy::V1 => {
            for (name, kind) in V1_LIMIT_FILES {
                if let Some((t, file)) = read(name) {
                    for ((major, minor), value) in parse_dev_values(&t) {
                        s.limits.push(Limit {
                            major,
                            minor,
                            kind,
                            value,
                            cgroup: cgroup.to_string(),
                            file: file.clone(),
                        });
                    }
                }
            }
            for name in [
                "blkio.weight",
                "blkio.weight_device",
                "blkio.bfq.weight",
                "blkio.bfq.weight_device",
            ] {
                weights(&mut s, name);
            }
        }
    }
    s
}

/// The cgroup's own settings: throttles, io.latency target, weights (and, for a hierarchy's
/// root, `io.cost.qos` / `io.cost.model`). Missing files are settings not made.
pub fn read_settings(_root: &Root, cg: &Cgroup) -> Settings {
    settings_in(cg.hierarchy, &cg.dir, &cg.path)
}

/// The settings that bind the cgroup: its own and every ancestor's up to the hierarchy's root
/// (a limit on a parent binds the child), the cgroup's first; each keeps its cgroup and file.
pub fn read_settings_up(_root: &Root, cg: &Cgroup) -> Settings {
    let mut s = Settings::default();
    for (path, dir) in cg.levels() {
        s.extend(settings_in(cg.hierarchy, &dir, &path));
    }
    s
}

/// A limit a measured rate sits at.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Held {
    pub limit: Limit,
    /// The measured rate of the limit's kind (per second).
    pub measured: f64,
    /// measured ÷ limit.
    pub ratio: f64,
}

impl Held {
    /// "held by io.max riops=500 in /sys/fs/cgroup/x (measured 497/s)".
    pub fn text(&self) -> String {
        let dir = Path::new(&self.limit.file)
            .parent()
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        format!(
            "held by {} in {dir} (measured {:.0}/s)",
            self.limit.setting(),
            self.measured
        )
    }
}

/// How close below a limit a rate must come to count as held by it: 10 %. A throttled
/// cgroup's rate over an interval sits just under its limit (blk-throttle trims each slice),
/// or above it for a moment while a burst allowance drains.
pub const HELD_FRACTION: f64 = 0.9;

/// Whether the rates measured for a cgroup on device `dev` over an interval sit at one of the
/// limits in `s` (at or above [`HELD_FRACTION`] of it): give it [`read_settings_up`]'s
/// settings so that a parent's limit counts. The closest limit (highest measured ÷ limit)
/// wins; None when no limit is set on the device or every rate is well below its limit.
pub fn throttled(
    s: &Settings,
    dev: (u32, u32),
    read_iops: f64,
    write_iops: f64,
    read_bps: f64,
    write_bps: f64,
) -> Option<Held> {
    s.limits
        .iter()
        .filter(|l| (l.major, l.minor) == dev && l.value > 0)
        .filter_map(|l| {
            let measured = match l.kind {
                ThrottleKind::ReadIops => read_iops,
                ThrottleKind::WriteIops => write_iops,
                ThrottleKind::ReadBytesPerS => read_bps,
                ThrottleKind::WriteBytesPerS => write_bps,
            };
            let ratio = measured / l.value as f64;
            (ratio.is_finite() && ratio >= HELD_FRACTION).then(|| Held {
                limit: l.clone(),
                measured,
                ratio,
            })
        })
        .max_by(|a, b| {
            a.ratio
                .total_cmp(&b.ratio)
                .then(b.limit.value.cmp(&a.limit.value))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    // Documentation/admin-guide/cgroup-v2.rst, "IO Interface Files".
    const IO_STAT_DOC: &str =
        "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n\
        8:0 rbytes=90430464 wbytes=299008000 rios=8950 wios=1252 dbytes=50331648 dios=3021\n";
    const IO_MAX_DOC: &str = "8:16 rbps=2097152 wbps=max riops=max wiops=120\n";
    const IO_WEIGHT_DOC: &str = "default 100\n8:16 200\n8:0 50\n";
    const COST_QOS_DOC: &str =
        "8:16 enable=1 ctrl=auto rpct=95.00 rlat=75000 wpct=95.00 wlat=150000 min=50.00 max=150.00\n";
    const COST_MODEL: &str = "8:16 ctrl=auto model=linear rbps=174019176 rseqiops=41708 \
        rrandiops=370 wbps=178075866 wseqiops=42705 wrandiops=378\n";
    // This machine (6.18), /sys/fs/cgroup/unified/io.pressure and blkio's root.
    const PRESSURE_HERE: &str = "some avg10=22.90 avg60=12.56 avg300=31.19 total=1192106597\n\
        full avg10=9.31 avg60=9.15 avg300=27.37 total=833295662\n";
    const V1_SERVICED_HERE: &str = "7:0 Read 3836139\n7:0 Write 353815\n7:0 Sync 4189852\n\
        7:0 Async 145\n7:0 Discard 43\n7:0 Total 4189997\nTotal 4189997\n";
    const V1_BYTES_HERE: &str = "7:0 Read 20495338496\n7:0 Write 3424047104\n\
        7:0 Sync 25608526848\n7:0 Async 6427648\n7:0 Discard 1695568896\n\
        7:0 Total 25614954496\nTotal 25614954496\n";
    // cgroup-v1/blkio-controller.rst: before 4.19 no Discard line.
    const V1_SERVICED_OLD: &str =
        "8:16 Read 10\n8:16 Write 20\n8:16 Sync 30\n8:16 Async 0\n8:16 Total 30\nTotal 30\n";

    #[test]
    fn io_stat_of_the_docs_and_with_iocost_and_io_latency() {
        let d = parse_io_stat(IO_STAT_DOC);
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].major, d[0].minor), (8, 16));
        assert_eq!(
            (
                d[1].read_bytes,
                d[1].write_bytes,
                d[1].read_ios,
                d[1].write_ios
            ),
            (90430464, 299008000, 8950, 1252)
        );
        assert_eq!(
            (d[1].discard_bytes, d[1].discard_ios),
            (Some(50331648), Some(3021))
        );
        assert_eq!((d[0].cost.clone(), d[0].latency.clone()), (None, None));
        // Before 4.19: no discards.
        let old = parse_io_stat("8:0 rbytes=1 wbytes=2 rios=3 wios=4\n");
        assert_eq!((old[0].discard_bytes, old[0].discard_ios), (None, None));
        assert_eq!(old[0].write_ios, 4);
        // iocost (root line with vrate; debug fields) and io.latency on a rotating disk.
        let t = "8:0 rbytes=4096 wbytes=0 rios=1 wios=0 dbytes=0 dios=0 cost.vrate=135.71 \
                 cost.usage=1200 cost.wait=30 cost.indebt=4 cost.indelay=5 depth=max avg_lat=2350 win=100\n";
        let d = parse_io_stat(t);
        let cost = d[0].cost.clone().unwrap();
        assert_eq!(cost.vrate_pct, Some(135.71));
        assert_eq!(
            (cost.usage_us, cost.wait_us, cost.indebt_us, cost.indelay_us),
            (Some(1200), Some(30), Some(4), Some(5))
        );
        let lat = d[0].latency.clone().unwrap();
        assert_eq!(
            (lat.depth, lat.avg_lat_us, lat.win_ms),
            (None, Some(2350), Some(100))
        );
        // io.latency on an SSD, iocost without the debug fields.
        let d = parse_io_stat(
            "259:0 rbytes=0 wbytes=0 rios=0 wios=0 cost.usage=7 missed=3 total=40 depth=16\n",
        );
        let lat = d[0].latency.clone().unwrap();
        assert_eq!(
            (lat.missed, lat.total, lat.depth),
            (Some(3), Some(40), Some(16))
        );
        assert_eq!(d[0].cost.clone().unwrap().wait_us, None);
        assert!(parse_io_stat("").is_empty());
        assert!(parse_io_stat("garbage line\n").is_empty());
    }

    #[test]
    fn pressure_lines() {
        let p = parse_pressure(PRESSURE_HERE).unwrap();
        assert_eq!(p.some.avg10, 22.90);
        assert_eq!(p.some.total_us, 1192106597);
        let full = p.full.unwrap();
        assert_eq!(
            (full.avg60, full.avg300, full.total_us),
            (9.15, 27.37, 833295662)
        );
        let some_only = parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n").unwrap();
        assert_eq!(some_only.full, None);
        assert_eq!(parse_pressure(""), None);
    }

    #[test]
    fn v1_rwstat_with_and_without_discard() {
        let s = parse_v1_rwstat(V1_SERVICED_HERE);
        assert_eq!(
            s,
            vec![(
                (7, 0),
                RwStat {
                    read: 3836139,
                    write: 353815,
                    discard: Some(43)
                }
            )]
        );
        let b = parse_v1_rwstat(V1_BYTES_HERE);
        assert_eq!(b[0].1.read, 20495338496);
        let old = parse_v1_rwstat(V1_SERVICED_OLD);
        assert_eq!(
            old[0].1,
            RwStat {
                read: 10,
                write: 20,
                discard: None
            }
        );
        assert!(parse_v1_rwstat("Total 0\n").is_empty());
    }

    #[test]
    fn settings_files() {
        assert_eq!(
            parse_io_max_all(IO_MAX_DOC),
            vec![
                ((8, 16), ThrottleKind::ReadBytesPerS, 2097152),
                ((8, 16), ThrottleKind::WriteIops, 120)
            ]
        );
        assert_eq!(
            parse_io_max_all("8:16 rbps=max wbps=max riops=max wiops=max\n"),
            vec![]
        );
        assert_eq!(
            parse_weights(IO_WEIGHT_DOC),
            vec![(None, 100), (Some((8, 16)), 200), (Some((8, 0)), 50)]
        );
        // v1 blkio.weight and blkio.bfq.weight are a bare number.
        assert_eq!(parse_weights("500\n"), vec![(None, 500)]);
        assert_eq!(
            parse_dev_values("8:16 300\n7:3 200\n"),
            vec![((8, 16), 300), ((7, 3), 200)]
        );
        assert_eq!(
            parse_io_latency("8:16 target=75000\n8:0 target=max\n"),
            vec![((8, 16), 75000)]
        );
        let q = parse_cost_qos(COST_QOS_DOC, "/x/io.cost.qos");
        assert_eq!(q.len(), 1);
        assert!(q[0].enable);
        assert_eq!(q[0].ctrl, "auto");
        assert_eq!((q[0].rpct, q[0].rlat_us), (Some(95.0), Some(75000)));
        assert_eq!(
            (q[0].wlat_us, q[0].min_pct, q[0].max_pct),
            (Some(150000), Some(50.0), Some(150.0))
        );
        let m = parse_cost_model(COST_MODEL, "/x/io.cost.model");
        assert_eq!(
            (m[0].ctrl.as_str(), m[0].model.as_str()),
            ("auto", "linear")
        );
        assert_eq!(m[0].params.len(), 6);
        assert_eq!(m[0].params[2], ("rrandiops".to_string(), 370));
    }

    #[test]
    fn mounts_and_mountinfo() {
        // This machine's mountinfo (hybrid: v1 controllers and a cgroup2 at unified).
        let mi = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n\
            32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n\
            38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio\n\
            41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
        assert_eq!(
            parse_mounts(mi),
            vec![
                CgroupMount {
                    hierarchy: Hierarchy::V1,
                    mount_point: "/sys/fs/cgroup/blkio".into()
                },
                CgroupMount {
                    hierarchy: Hierarchy::V2,
                    mount_point: "/sys/fs/cgroup/unified".into()
                },
            ]
        );
        // Optional fields before " - ", a combined v1 mount, an escaped space; mounts format.
        let mi = "25 20 0:22 / /sys/fs/cgroup/blkio,cpu rw shared:9 - cgroup cgroup rw,cpu,blkio\n\
            26 20 0:23 / /mnt/my\\040cg rw - cgroup2 none rw,nsdelegate\n";
        let m = parse_mounts(mi);
        assert_eq!(m[0].mount_point, "/sys/fs/cgroup/blkio,cpu");
        assert_eq!(m[1].mount_point, "/mnt/my cg");
        let mounts =
            "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate 0 0\n\
            cgroup /sys/fs/cgroup/blkio cgroup rw,blkio 0 0\ncgroup /x cgroup rw,memory 0 0\n";
        let m = parse_mounts(mounts);
        assert_eq!(m.len(), 2);
        assert_eq!(
            (m[0].hierarchy, m[0].mount_point.as_str()),
            (Hierarchy::V2, "/sys/fs/cgroup")
        );
        assert_eq!(unescape("a\\134b\\011"), "a\\b\t");
        assert_eq!(unescape("end\\04"), "end\\04");
    }

    #[test]
    fn names_from_paths() {
        let cid = "3f4e5d6a7b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f80";
        let cases = [
            ("/", "/".to_string()),
            ("/system.slice/postgresql.service", "postgresql.service".to_string()),
            ("/user.slice/user-1000.slice/user@1000.service", "user@1000.service".to_string()),
            ("/system.slice", "system.slice".to_string()),
            ("/batch/job7", "/batch/job7".to_string()),
            (&format!("/docker/{cid}"), "docker 3f4e5d6a7b8c".to_string()),
            (&format!("/system.slice/docker-{cid}.scope"), "docker 3f4e5d6a7b8c".to_string()),
            (&format!("/machine.slice/libpod-{cid}.scope"), "podman 3f4e5d6a7b8c".to_string()),
            (
                &format!("/kubepods/burstable/pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901/{cid}"),
                "pod 1b2c3d4e… / container 3f4e5d6a7b8c".to_string(),
            ),
            (
                &format!(
                    "/kubepods.slice/kubepods-burstable.slice/\
                     kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice/\
                     cri-containerd-{cid}.scope"
                ),
                "pod 1b2c3d4e… / container 3f4e5d6a7b8c".to_string(),
            ),
            (
                &format!("/kubepods.slice/kubepods-pod1b2c3d4e_5f60.slice/crio-{cid}.scope"),
                "pod 1b2c3d4e… / container 3f4e5d6a7b8c".to_string(),
            ),
            (
                "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1b2c3d4e_5f60.slice",
                "pod 1b2c3d4e…".to_string(),
            ),
            ("/kubepods.slice/kubepods-besteffort.slice", "kubepods-besteffort.slice".to_string()),
            ("/kubepods", "/kubepods".to_string()),
        ];
        for (path, want) in cases {
            assert_eq!(name_of(path), want, "{path}");
        }
    }

    /// A tree of directories under `sys`, each given file written.
    fn write(dir: &Path, files: &[(&str, &str)]) {
        std::fs::create_dir_all(dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }

    fn fixture_root(d: &Path) -> Root {
        let root = Root {
            proc: d.join("proc"),
            sys: d.join("sys"),
        };
        std::fs::create_dir_all(root.proc.join("self")).unwrap();
        root
    }

    fn ino(p: &Path) -> u64 {
        std::fs::metadata(p).unwrap().ino()
    }

    #[test]
    fn a_v2_tree_its_counters_and_settings() {
        let d = tempfile::tempdir().unwrap();
        let root = fixture_root(d.path());
        let cg = root.sys.join("fs/cgroup");
        write(
            &cg,
            &[
                ("cgroup.controllers", "cpuset cpu io memory pids\n"),
                ("io.cost.qos", COST_QOS_DOC),
                ("io.cost.model", COST_MODEL),
            ],
        );
        let db = cg.join("system.slice/postgresql.service");
        write(&cg.join("system.slice"), &[("io.max", "8:16 riops=400\n")]);
        write(
            &db,
            &[
                ("io.stat", IO_STAT_DOC),
                ("io.pressure", PRESSURE_HERE),
                ("io.max", IO_MAX_DOC),
                ("io.latency", "8:16 target=75000\n"),
                ("io.weight", IO_WEIGHT_DOC),
            ],
        );
        std::fs::create_dir_all(cg.join("user.slice")).unwrap();
        let t = tree(&root, 100);
        assert_eq!(t.hierarchies, vec![(Hierarchy::V2, cg.clone())]);
        let paths: Vec<&str> = t.cgroups.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "/",
                "/system.slice",
                "/user.slice",
                "/system.slice/postgresql.service"
            ]
        );
        assert!(!t.cut);
        let c = t.by_id(ino(&db)).unwrap();
        assert_eq!(
            (c.hierarchy, c.name.as_str()),
            (Hierarchy::V2, "postgresql.service")
        );
        assert_eq!(t.by_id(ino(&cg)).unwrap().path, "/");
        assert!(t.by_id(u64::MAX - (1 << 33)).is_none());
        // A pre-5.5 id: the generation above the inode number.
        assert_eq!(t.by_id((7 << 32) | ino(&db)).unwrap().path, c.path);

        let n = read_counters(&root, c);
        assert!(n.recursive);
        assert_eq!(n.device(8, 0).unwrap().read_ios, 8950);
        assert_eq!(n.pressure.clone().unwrap().some.avg60, 12.56);
        // The per-tick reading: the cumulative totals, µs.
        let p = read_pressure(c).unwrap();
        assert_eq!(p.some.total_us, 1192106597);
        assert_eq!(p.full.unwrap().total_us, 833295662);
        // A v2 cgroup without the file (no PSI): none.
        let user = t.cgroups.iter().find(|c| c.path == "/user.slice").unwrap();
        assert_eq!(read_pressure(user), None);

        let own = read_settings(&root, c);
        assert_eq!(own.limits.len(), 2);
        assert!(own
            .limits
            .iter()
            .all(|l| l.cgroup == "/system.slice/postgresql.service"));
        assert_eq!(own.latency[0].target_us, 75000);
        assert_eq!(own.weights.len(), 3);
        assert!(own.weights[0]
            .file
            .ends_with("postgresql.service/io.weight"));
        assert!(own.cost_qos.is_empty());
        let up = read_settings_up(&root, c);
        assert_eq!(up.limits.len(), 3);
        let parent = up
            .limits
            .iter()
            .find(|l| l.cgroup == "/system.slice")
            .unwrap();
        assert_eq!((parent.kind, parent.value), (ThrottleKind::ReadIops, 400));
        assert_eq!(up.cost_qos.len(), 1);
        assert!(up.cost_qos[0].file.ends_with("fs/cgroup/io.cost.qos"));
        assert_eq!(up.cost_model[0].model, "linear");

        // The parent's riops=400 holds 390 read IOPS on 8:16; 300 is free; the 120 wiops of
        // the cgroup itself holds 125 writes/s (a burst above), the closer of two.
        let held = throttled(&up, (8, 16), 390.0, 0.0, 0.0, 0.0).unwrap();
        assert_eq!(held.limit.cgroup, "/system.slice");
        assert!(
            held.text().starts_with("held by io.max riops=400 in /"),
            "{}",
            held.text()
        );
        assert!(throttled(&up, (8, 16), 300.0, 0.0, 1e6, 0.0).is_none());
        let held = throttled(&up, (8, 16), 395.0, 125.0, 0.0, 0.0).unwrap();
        assert_eq!(
            (held.limit.kind, held.limit.value),
            (ThrottleKind::WriteIops, 120)
        );
        assert!(throttled(&up, (8, 0), 1e9, 1e9, 1e12, 1e12).is_none());
        assert!(throttled(&own, (8, 16), 395.0, 0.0, 0.0, 0.0).is_none());
    }

    #[test]
    fn a_hybrid_machine_walks_v1_blkio_only() {
        let d = tempfile::tempdir().unwrap();
        let root = fixture_root(d.path());
        let fs = root.sys.join("fs/cgroup");
        // unified without io (this machine: only hugetlb), v1 blkio with two cgroups.
        write(
            &fs.join("unified"),
            &[
                ("cgroup.controllers", "hugetlb\n"),
                ("io.pressure", PRESSURE_HERE),
            ],
        );
        let blk = fs.join("blkio");
        write(&blk, &[("blkio.throttle.io_serviced", V1_SERVICED_HERE)]);
        let job = blk.join("batch/job7");
        write(
            &job,
            &[
                ("blkio.throttle.io_serviced", V1_SERVICED_OLD),
                (
                    "blkio.throttle.io_serviced_recursive",
                    "8:16 Read 11\n8:16 Write 21\nTotal 32\n",
                ),
                (
                    "blkio.throttle.io_service_bytes",
                    "8:16 Read 40960\n8:16 Write 81920\n",
                ),
                ("blkio.throttle.read_iops_device", "8:16 100\n"),
                ("blkio.throttle.write_bps_device", "8:16 1048576\n"),
                ("blkio.weight", "500\n"),
                ("blkio.bfq.weight", "default 100\n"),
            ],
        );
        let t = tree(&root, 10);
        assert_eq!(t.hierarchies, vec![(Hierarchy::V1, blk.clone())]);
        assert_eq!(t.len(), 3);
        let c = t.by_id(ino(&job)).unwrap();
        assert_eq!(
            (c.hierarchy, c.path.as_str(), c.name.as_str()),
            (Hierarchy::V1, "/batch/job7", "/batch/job7")
        );
        let n = read_counters(&root, c);
        assert_eq!(n.pressure, None, "no io.pressure in v1");
        // Not even with a file of that name in the v1 directory.
        std::fs::write(job.join("io.pressure"), PRESSURE_HERE).unwrap();
        assert_eq!(read_pressure(c), None);
        // The recursive serviced file is there, the recursive bytes file is not: not recursive.
        assert!(!n.recursive);
        let dev = n.device(8, 16).unwrap();
        assert_eq!(
            (dev.read_ios, dev.write_ios, dev.discard_ios),
            (11, 21, None)
        );
        assert_eq!((dev.read_bytes, dev.write_bytes), (40960, 81920));
        assert_eq!(n.files.len(), 2);
        let s = read_settings(&root, c);
        assert_eq!(s.limits.len(), 2);
        assert_eq!(s.limits[0].setting(), "blkio.throttle.read_iops_device 100");
        assert_eq!(
            s.weights.iter().map(|w| w.weight).collect::<Vec<_>>(),
            [500, 100]
        );
        let held = throttled(&s, (8, 16), 0.0, 0.0, 0.0, 1_000_000.0).unwrap();
        assert_eq!(held.limit.kind, ThrottleKind::WriteBytesPerS);
        assert!(held
            .text()
            .contains("blkio.throttle.write_bps_device 1048576 in /"));
        let root_cg = t.by_id(ino(&blk)).unwrap();
        assert_eq!(
            read_counters(&root, root_cg)
                .device(7, 0)
                .unwrap()
                .discard_ios,
            Some(43)
        );
    }

    #[test]
    fn mountinfo_finds_a_combined_v1_mount_and_the_walk_is_bounded() {
        let d = tempfile::tempdir().unwrap();
        let root = fixture_root(d.path());
        std::fs::write(
            root.proc.join("self/mountinfo"),
            "25 20 0:22 / /sys/fs/cgroup/cpu,blkio rw shared:9 - cgroup cgroup rw,cpu,blkio\n\
             26 20 0:23 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n\
             27 20 0:24 / /elsewhere rw - cgroup cgroup rw,blkio\n",
        )
        .unwrap();
        let blk = root.sys.join("fs/cgroup/cpu,blkio");
        let mut deep = blk.clone();
        for i in 0..MAX_DEPTH + 3 {
            deep = deep.join(format!("d{i}"));
        }
        std::fs::create_dir_all(&deep).unwrap();
        for i in 0..5 {
            std::fs::create_dir_all(blk.join(format!("w{i}"))).unwrap();
        }
        // A mount outside /sys is not looked for under a fixture root.
        let t = tree(&root, 1000);
        assert_eq!(t.hierarchies, vec![(Hierarchy::V1, blk.clone())]);
        assert!(t.cut, "deeper than MAX_DEPTH");
        assert_eq!(t.len(), 1 + 5 + MAX_DEPTH);
        assert!(t
            .cgroups
            .iter()
            .all(|c| c.path.matches('/').count() <= MAX_DEPTH));
        let t = tree(&root, 4);
        assert!(t.cut);
        assert_eq!(t.len(), 4);
        // Breadth first: the root and its first children.
        assert_eq!(t.cgroups[0].path, "/");
        assert_eq!(t.cgroups[3].path, "/w1");
        assert!(tree(&root, 0).is_empty());
        let shallow = tree_to_depth(&root, 1000, 1);
        assert!(shallow.cut);
        assert_eq!(shallow.len(), 1 + 1 + 5, "the root, d0 and w0..w4");
        let roots = tree_to_depth(&root, 1000, 0);
        assert_eq!((roots.len(), roots.cut), (1, true));
        // No cgroup hierarchy at all: nothing, no error.
        let e = tempfile::tempdir().unwrap();
        assert!(tree(&fixture_root(e.path()), 10).is_empty());
    }

    #[test]
    fn levels_run_from_the_cgroup_to_the_root() {
        let c = Cgroup {
            id: 1,
            hierarchy: Hierarchy::V2,
            path: "/a/b".into(),
            name: "/a/b".into(),
            dir: PathBuf::from("/sys/fs/cgroup/a/b"),
            base: PathBuf::from("/sys/fs/cgroup"),
        };
        let l = c.levels();
        assert_eq!(l.len(), 3);
        assert_eq!(
            l[0],
            ("/a/b".to_string(), PathBuf::from("/sys/fs/cgroup/a/b"))
        );
        assert_eq!(l[2], ("/".to_string(), PathBuf::from("/sys/fs/cgroup")));
    }
}
