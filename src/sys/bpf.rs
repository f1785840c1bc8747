//! The optional block-latency source: loads the committed CO-RE object `bpf/iolat.bpf.o` (source
//! `bpf/iolat.bpf.c`, rebuilt by `scripts/build-bpf.sh`; embedded, so building iosat needs no
//! clang) with the `aya` crate, attaches it to the BTF-enabled tracepoint `block_io_done` (6.5+:
//! inside diskstats' own completion accounting) or, on older kernels, `block_rq_complete`, and
//! reads its per-CPU histograms as cumulative counters, per device and operation (the total, and
//! its queue and device time where the kernel stamps the issue) and, for reads
//! and writes, per request-size class (the size from `block_rq_complete`, see the C source). Dropping the [`BlockLatency`] detaches the
//! program and frees the maps. When the source can't be had ([`open`] returns the reason: no
//! capabilities, no BTF, lockdown, verifier, old kernel) the caller carries on with diskstats
//! alone. The bucket layout is the C program's ABI and is defined here; its math lives in
//! monitor::blklat.
//! Imports only: sys/, error, units.

use aya::maps::{HashMap as BpfHashMap, PerCpuArray};
use aya::programs::BtfTracePoint;
use aya::{Btf, Ebpf, EbpfLoader};
use std::fmt;
use std::path::Path;

/// Latencies are counted in units of 2^UNIT_SHIFT ns (128 ns) — `UNIT_SHIFT` in the C source.
pub const UNIT_SHIFT: u32 = 7;
/// log2 of the sub-buckets per power of two (8) — `SUB_BITS`.
pub const SUB_BITS: u32 = 3;
/// Units at and above 2^MAX_LOG2 (about 68.7 s) land in the last bucket — `MAX_LOG2`.
pub const MAX_LOG2: u32 = 29;
/// Buckets per histogram — `NBUCKETS`.
pub const NBUCKETS: usize = ((MAX_LOG2 - SUB_BITS + 1) as usize) << SUB_BITS;
/// Operations per device, in the order of the C program's OP_* (read, write, discard, flush).
pub const NOPS: usize = 4;

/// Request-size classes of reads and writes — `NCLASSES`: ≤ [`SMALL_MAX_BYTES`], ≤
/// [`MEDIUM_MAX_BYTES`], larger (model::SizeClass's edges; monitor::blklat checks them).
pub const NCLASSES: usize = 3;
/// Operations with size classes (read, write) — `CLASS_OPS`.
pub const CLASS_OPS: usize = 2;
/// A class histogram's bucket is the full one's >> CLASS_SHIFT (4 per power of two) —
/// `CLASS_SHIFT`.
pub const CLASS_SHIFT: u32 = 1;
/// Buckets per class histogram — `NCBUCKETS`.
pub const NCBUCKETS: usize = NBUCKETS >> CLASS_SHIFT;
/// The small class's largest request (8 KiB and its merges) — `SMALL_MAX_BYTES`.
pub const SMALL_MAX_BYTES: u64 = 10240;
/// The medium class's largest request (64 KiB and its merges) — `MEDIUM_MAX_BYTES`.
pub const MEDIUM_MAX_BYTES: u64 = 81920;
/// Operations counted per cgroup: read, write, discard — `CG_OPS`.
pub const CG_OPS: usize = 3;
/// A cgroup's histogram merges 2^CG_SHIFT buckets of [`RawHist`]'s (2 per power of two) —
/// `CG_SHIFT`.
pub const CG_SHIFT: u32 = 2;
/// Buckets of a cgroup's histogram — `NGBUCKETS`.
pub const NGBUCKETS: usize = NBUCKETS >> CG_SHIFT;

/// The compiled program, aligned for the ELF parser.
static OBJECT: &[u8] = aya::include_bytes_aligned!("../../bpf/iolat.bpf.o");

/// `struct hist` of the C program: the buckets and the exact sum of latencies in ns.
#[repr(C)]
#[derive(Clone, Copy)]
struct Hist {
    buckets: [u64; NBUCKETS],
    sum_ns: u64,
}

// SAFETY: plain old data (u64s only, repr(C), no padding), valid for any bit pattern.
unsafe impl aya::Pod for Hist {}

/// `struct class_hist` of the C program: coarser buckets, the sums of latency and bytes.
#[repr(C)]
#[derive(Clone, Copy)]
struct ClassHist {
    buckets: [u64; NCBUCKETS],
    sum_ns: u64,
    bytes: u64,
}

// SAFETY: as Hist's.
unsafe impl aya::Pod for ClassHist {}

/// `struct split_hist` of the C program: queue and device time of one device and op.
#[repr(C)]
#[derive(Clone, Copy)]
struct SplitHist {
    queue: [u64; NBUCKETS],
    device: [u64; NBUCKETS],
    queue_sum_ns: u64,
    device_sum_ns: u64,
    unsplit: u64,
}

// SAFETY: as Hist's.
unsafe impl aya::Pod for SplitHist {}

/// `struct cg_key` of the C program.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CgKey {
    cgroup: u64,
    slot: u32,
    op: u32,
}

// SAFETY: plain old data (repr(C), 16 bytes, no padding), valid for any bit pattern.
unsafe impl aya::Pod for CgKey {}

/// `struct cg_val` of the C program.
#[repr(C)]
#[derive(Clone, Copy)]
struct CgVal {
    ios: u64,
    bytes: u64,
    sum_ns: u64,
    queue_sum_ns: u64,
    device_sum_ns: u64,
    split_ios: u64,
    buckets: [u64; NGBUCKETS],
}

// SAFETY: as Hist's.
unsafe impl aya::Pod for CgVal {}

/// One cgroup's cumulative requests of one op on one device (summed over the CPUs), charged
/// through the request's own cgroup (its first bio's blkcg; see the C source).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawCgroup {
    /// The cgroup's kernfs id: the inode number of its directory (v2, or v1's blkio hierarchy).
    pub cgroup: u64,
    pub major: u32,
    pub minor: u32,
    /// 0 read, 1 write, 2 discard.
    pub op: usize,
    pub ios: u64,
    pub bytes: u64,
    /// Completion − start, summed.
    pub sum_ns: u64,
    /// Over the `split_ios` requests with an issue stamp: issue − start and completion − issue.
    pub queue_sum_ns: u64,
    pub device_sum_ns: u64,
    pub split_ios: u64,
    /// [`NGBUCKETS`] buckets, each 2^[`CG_SHIFT`] of [`RawHist`]'s.
    pub buckets: Vec<u64>,
}

/// One device's cumulative queue and device time of one operation (summed over the CPUs):
/// queue = issued to the driver − allocated, device = completed − issued, from the request's
/// own stamps; `unsplit` counts the requests without an issue stamp (the queue has no blk-stat
/// user: see the C source), which are in the total only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawSplit {
    pub queue: RawHist,
    pub device: RawHist,
    pub unsplit: u64,
}

impl Default for RawSplit {
    fn default() -> RawSplit {
        let zero = || RawHist {
            buckets: vec![0; NBUCKETS],
            sum_ns: 0,
        };
        RawSplit {
            queue: zero(),
            device: zero(),
            unsplit: 0,
        }
    }
}

/// One device's cumulative histogram of one operation and size class (summed over the CPUs):
/// [`NCBUCKETS`] buckets, each two of [`RawHist`]'s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawClass {
    pub buckets: Vec<u64>,
    pub sum_ns: u64,
    /// The requests' bytes.
    pub bytes: u64,
}

impl Default for RawClass {
    fn default() -> RawClass {
        RawClass {
            buckets: vec![0; NCBUCKETS],
            sum_ns: 0,
            bytes: 0,
        }
    }
}

/// One device's cumulative histogram of one operation (summed over the CPUs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawHist {
    pub buckets: Vec<u64>,
    pub sum_ns: u64,
}

/// One device's cumulative histograms, keyed by the kernel's device number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevHists {
    pub major: u32,
    pub minor: u32,
    /// Read, write, discard, flush.
    pub ops: [RawHist; NOPS],
    /// Reads', then writes' requests by size class (small, medium, large); a request whose
    /// size the program missed is in its op's histogram only.
    pub classes: [[RawClass; NCLASSES]; CLASS_OPS],
    /// Per op (read, write, discard, flush): its queue and device time.
    pub split: [RawSplit; NOPS],
}

/// Why there are no live latency percentiles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unavailable {
    /// `--no-bpf`.
    Disabled,
    /// Counters come from a fixture tree (`--proc-root`), not from this kernel.
    OtherRoot,
    /// Neither CAP_BPF + CAP_PERFMON nor CAP_SYS_ADMIN.
    NoCapabilities,
    /// No `<sys>/kernel/btf/vmlinux` (kernel built without CONFIG_DEBUG_INFO_BTF).
    NoBtf(std::path::PathBuf),
    /// Kernel lockdown in confidentiality mode forbids BPF reading kernel memory.
    Lockdown,
    /// The kernel refused the program or its maps (verifier, old kernel, memory limit).
    Refused(String),
}

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unavailable::Disabled => write!(f, "turned off by --no-bpf"),
            Unavailable::OtherRoot => write!(f, "the counters are not this kernel's (--proc-root)"),
            Unavailable::NoCapabilities => write!(
                f,
                "loading the block-latency BPF program needs CAP_BPF and CAP_PERFMON (or root)"
            ),
            Unavailable::NoBtf(p) => {
                write!(f, "the kernel has no BTF ({} is missing)", p.display())
            }
            Unavailable::Lockdown => {
                write!(f, "kernel lockdown (confidentiality) forbids BPF tracing")
            }
            Unavailable::Refused(why) => write!(f, "the kernel refused the BPF program: {why}"),
        }
    }
}

/// The attached program and its maps; detached when dropped.
pub struct BlockLatency {
    ebpf: Ebpf,
    /// Loaded counting per cgroup.
    by_cgroups: bool,
    /// Entries the per-cgroup map was given.
    cg_entries: u32,
    /// The "cgroup map full" line was said (once a run).
    warned_cg_full: bool,
    /// The "all slots taken" line was said (once a run).
    warned_dropped: bool,
    /// Calls of [`BlockLatency::tend`]: a tick.
    ticks: u64,
    /// cg_vals indices whose keys were removed, with the tick: zeroed and given back to the
    /// program a tick later, when no completion can still be adding to them (see the C source).
    cg_retired: Vec<(u64, u32)>,
}

/// Device slots the maps hold: a slot is taken at a device's first completion; completions
/// of devices beyond it are counted as dropped (they show as lost coverage). The slots of
/// devices gone from diskstats come back through [`BlockLatency::free_gone`].
pub const MAX_SLOTS: u32 = 64;

/// (cgroup, device, op) entries the per-cgroup map holds: 1,024, fewer on machines with many
/// CPUs (the map is per CPU and preallocated: at most 8 MiB in all).
pub fn cgroup_entries(cpus: usize) -> u32 {
    let per_entry = std::mem::size_of::<CgVal>() + std::mem::size_of::<CgKey>();
    let fit = (8 << 20) / (per_entry * cpus.max(1));
    fit.clamp(64, 1024) as u32
}

/// Capability bits (linux/capability.h).
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// The effective capability set of `/proc/self/status` ("CapEff:\t000001ffffffffff").
fn parse_cap_eff(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
}

/// May this process load and attach a tracing program?
fn capable(cap_eff: u64) -> bool {
    let has = |c: u32| cap_eff & (1u64 << c) != 0;
    (has(CAP_BPF) && has(CAP_PERFMON)) || has(CAP_SYS_ADMIN)
}

/// `/sys/kernel/security/lockdown` ("none integrity [confidentiality]"): confidentiality
/// blocks BPF reading kernel memory.
fn locked_down(lockdown: &str) -> bool {
    lockdown.contains("[confidentiality]")
}

/// One line from an aya error chain: its first line and, for a verifier log (long), the line
/// that says what was rejected.
fn reason(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut src = e.source();
    while let Some(s) = src {
        parts.push(s.to_string());
        src = s.source();
    }
    let joined = parts.join(": ");
    // A verifier log ends in statistics; the reason is the line before them.
    let noise = ["verification time", "stack depth", "processed ", ":"];
    let last = joined
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !noise.iter().any(|n| l.starts_with(n)))
        .unwrap_or("")
        .to_string();
    let first = joined.lines().next().unwrap_or("").trim().to_string();
    if last == first {
        first
    } else {
        format!("{first} … {last}")
    }
}

/// Load and attach the program, or say why not. `proc_is_live`: the counters iosat reads
/// are this kernel's (`/proc`, not a fixture tree); the kernel's BTF is read under `sys`.
pub fn open(proc_is_live: bool, sys: &Path) -> Result<BlockLatency, Unavailable> {
    open_with(proc_is_live, sys, false)
}

/// [`open`], counting per cgroup too when `cgroups` (`--cgroups`: the program's cgroup code is
/// dropped by the verifier otherwise).
pub fn open_with(
    proc_is_live: bool,
    sys: &Path,
    cgroups: bool,
) -> Result<BlockLatency, Unavailable> {
    if !proc_is_live {
        return Err(Unavailable::OtherRoot);
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if !parse_cap_eff(&status).is_some_and(capable) {
        return Err(Unavailable::NoCapabilities);
    }
    let btf_path = sys.join("kernel/btf/vmlinux");
    if !btf_path.exists() {
        return Err(Unavailable::NoBtf(btf_path));
    }
    let lockdown =
        std::fs::read_to_string(sys.join("kernel/security/lockdown")).unwrap_or_default();
    if locked_down(&lockdown) {
        return Err(Unavailable::Lockdown);
    }
    let btf = Btf::parse_file(&btf_path, aya::Endianness::default()).map_err(|e| refused(&e))?;
    let cpus = aya::util::nr_cpus().unwrap_or(1);
    let cg_entries = cgroup_entries(cpus);
    let mut ebpf = EbpfLoader::new()
        .btf(Some(&btf))
        .set_global("max_slots", &MAX_SLOTS, true)
        .set_global("by_cgroups", &u32::from(cgroups), true)
        .set_global("max_cg", &cg_entries, true)
        .set_max_entries("slots", MAX_SLOTS)
        .set_max_entries("free_slots", MAX_SLOTS)
        .set_max_entries("hists", MAX_SLOTS * NOPS as u32)
        .set_max_entries("class_hists", MAX_SLOTS * (CLASS_OPS * NCLASSES) as u32)
        .set_max_entries("split_hists", MAX_SLOTS * NOPS as u32)
        .set_max_entries("cg_index", cg_entries)
        .set_max_entries("cg_vals", cg_entries)
        .set_max_entries("cg_free", cg_entries)
        .load(OBJECT)
        .map_err(|e| refused(&e))?;
    // The hook next to diskstats' accounting where the kernel has it (its BTF names the
    // tracepoint); the older one else, or when the newer is refused.
    let mut last = None;
    for hook in [Hook::IoDone, Hook::RqComplete] {
        match attach_one(&mut ebpf, &btf, hook) {
            Ok(()) => {
                return Ok(BlockLatency {
                    ebpf,
                    by_cgroups: cgroups,
                    cg_entries,
                    warned_cg_full: false,
                    warned_dropped: false,
                    ticks: 0,
                    cg_retired: Vec::new(),
                })
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.expect("two hooks tried"))
}

/// The kernel's refusal of the program or its maps, in one line.
fn refused(e: &dyn std::error::Error) -> Unavailable {
    Unavailable::Refused(reason(e))
}

fn attach_one(ebpf: &mut Ebpf, btf: &Btf, hook: Hook) -> Result<(), Unavailable> {
    let (name, tracepoint) = hook.program();
    let prog: &mut BtfTracePoint = ebpf
        .program_mut(name)
        .ok_or_else(|| Unavailable::Refused(format!("{name} missing from the object")))?
        .try_into()
        .map_err(|e| refused(&e))?;
    prog.load(tracepoint, btf).map_err(|e| refused(&e))?;
    prog.attach().map_err(|e| refused(&e))?;
    if hook == Hook::IoDone {
        // The sizes, noted at block_rq_complete. Without them the first is detached and
        // the older hook (which has them) is tried.
        if let Err(e) = attach_size(ebpf, btf) {
            if let Some(Ok(p)) = ebpf.program_mut(name).map(<&mut BtfTracePoint>::try_from) {
                let _ = p.unload();
            }
            return Err(e);
        }
    }
    Ok(())
}

/// `iolat_size` on `block_rq_complete`: the request sizes for `iolat_done`.
fn attach_size(ebpf: &mut Ebpf, btf: &Btf) -> Result<(), Unavailable> {
    let size: &mut BtfTracePoint = ebpf
        .program_mut("iolat_size")
        .ok_or_else(|| Unavailable::Refused("iolat_size missing from the object".into()))?
        .try_into()
        .map_err(|e| refused(&e))?;
    size.load("block_rq_complete", btf)
        .map_err(|e| refused(&e))?;
    size.attach().map_err(|e| refused(&e))?;
    Ok(())
}

/// Where the program can be attached, in the order tried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hook {
    /// `block_io_done` (6.5+), in blk_account_io_done(): the latency diskstats sums.
    IoDone,
    /// `block_rq_complete` (5.5+), in blk_update_request(), before the bios' completion
    /// callbacks: a few µs per request short of diskstats' latency.
    RqComplete,
}

impl Hook {
    /// The C program and the tracepoint it attaches to.
    fn program(self) -> (&'static str, &'static str) {
        match self {
            Hook::IoDone => ("iolat_done", "block_io_done"),
            Hook::RqComplete => ("iolat_complete", "block_rq_complete"),
        }
    }
}

/// The source for the commands that read `root` (`stat`, `exporter`): None with `off`
/// (`--no-bpf`) or when the counters come from a fixture tree (`--proc-root`: not this
/// kernel's); Err with the one line that says why there are no live percentiles.
pub fn attach(root: &super::Root, off: bool) -> Result<Option<BlockLatency>, String> {
    attach_with(root, off, false)
}

/// [`attach`], counting per cgroup too when `cgroups`.
pub fn attach_with(
    root: &super::Root,
    off: bool,
    cgroups: bool,
) -> Result<Option<BlockLatency>, String> {
    if off {
        return Ok(None);
    }
    match open_with(root.proc == super::Root::default().proc, &root.sys, cgroups) {
        Ok(b) => Ok(Some(b)),
        Err(Unavailable::OtherRoot | Unavailable::Disabled) => Ok(None),
        Err(why) => Err(format!(
            "no live latency percentiles: {why}; carrying on with /proc/diskstats alone"
        )),
    }
}

impl BlockLatency {
    /// The cumulative histograms of every device that completed a request since the attach,
    /// sorted by device number, and the completions dropped for want of a slot.
    pub fn read(&self) -> Result<(Vec<DevHists>, u64), String> {
        let hists: PerCpuArray<_, Hist> = self
            .ebpf
            .map("hists")
            .ok_or("no hists map")?
            .try_into()
            .map_err(|e: aya::maps::MapError| e.to_string())?;
        let state: aya::maps::Array<_, u64> = self
            .ebpf
            .map("state")
            .ok_or("no state map")?
            .try_into()
            .map_err(|e: aya::maps::MapError| e.to_string())?;
        let classes: PerCpuArray<_, ClassHist> = self
            .ebpf
            .map("class_hists")
            .ok_or("no class_hists map")?
            .try_into()
            .map_err(|e: aya::maps::MapError| e.to_string())?;
        let dropped = state.get(&1, 0).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        for (dev, slot) in self.held()? {
            let mut ops: [RawHist; NOPS] = std::array::from_fn(|_| RawHist {
                buckets: vec![0; NBUCKETS],
                sum_ns: 0,
            });
            for (op, raw) in ops.iter_mut().enumerate() {
                let idx = slot * NOPS as u32 + op as u32;
                let per_cpu = hists.get(&idx, 0).map_err(|e| e.to_string())?;
                for h in per_cpu.iter() {
                    for (a, b) in raw.buckets.iter_mut().zip(h.buckets.iter()) {
                        *a = a.wrapping_add(*b);
                    }
                    raw.sum_ns = raw.sum_ns.wrapping_add(h.sum_ns);
                }
            }
            let mut by_class: [[RawClass; NCLASSES]; CLASS_OPS] = Default::default();
            for (op, row) in by_class.iter_mut().enumerate() {
                for (class, raw) in row.iter_mut().enumerate() {
                    let idx = ((slot as usize * CLASS_OPS + op) * NCLASSES + class) as u32;
                    for h in classes.get(&idx, 0).map_err(|e| e.to_string())?.iter() {
                        for (a, b) in raw.buckets.iter_mut().zip(h.buckets.iter()) {
                            *a = a.wrapping_add(*b);
                        }
                        raw.sum_ns = raw.sum_ns.wrapping_add(h.sum_ns);
                        raw.bytes = raw.bytes.wrapping_add(h.bytes);
                    }
                }
            }
            out.push(DevHists {
                major: dev >> 20,
                minor: dev & ((1 << 20) - 1),
                ops,
                classes: by_class,
                split: self.read_split(slot)?,
            });
        }
        out.sort_by_key(|d| (d.major, d.minor));
        Ok((out, dropped))
    }

    /// Was it loaded counting per cgroup?
    pub fn counts_cgroups(&self) -> bool {
        self.by_cgroups
    }

    /// Every cgroup's cumulative counters per device and op, sorted by (device, cgroup, op), and
    /// the completions not attributed because the map was full.
    pub fn read_cgroups(&self) -> Result<(Vec<RawCgroup>, u64), String> {
        let err = |e: aya::maps::MapError| e.to_string();
        let full = self.cgroups_unattributed()?;
        let index: BpfHashMap<_, CgKey, u32> = self
            .ebpf
            .map("cg_index")
            .ok_or("no cg_index map")?
            .try_into()
            .map_err(err)?;
        let vals: PerCpuArray<_, CgVal> = self
            .ebpf
            .map("cg_vals")
            .ok_or("no cg_vals map")?
            .try_into()
            .map_err(err)?;
        let slots: std::collections::HashMap<u32, u32> =
            self.held()?.into_iter().map(|(d, s)| (s, d)).collect();
        let mut out = Vec::new();
        for kv in index.iter() {
            // An entry removed between the keys' walk and its lookup is skipped.
            let Ok((k, idx)) = kv else { continue };
            let Some(&dev) = slots.get(&k.slot) else {
                continue;
            };
            let Ok(per_cpu) = vals.get(&idx, 0) else {
                continue;
            };
            let mut c = RawCgroup {
                cgroup: k.cgroup,
                major: dev >> 20,
                minor: dev & ((1 << 20) - 1),
                op: k.op as usize,
                ios: 0,
                bytes: 0,
                sum_ns: 0,
                queue_sum_ns: 0,
                device_sum_ns: 0,
                split_ios: 0,
                buckets: vec![0; NGBUCKETS],
            };
            for v in per_cpu.iter() {
                c.ios = c.ios.wrapping_add(v.ios);
                c.bytes = c.bytes.wrapping_add(v.bytes);
                c.sum_ns = c.sum_ns.wrapping_add(v.sum_ns);
                c.queue_sum_ns = c.queue_sum_ns.wrapping_add(v.queue_sum_ns);
                c.device_sum_ns = c.device_sum_ns.wrapping_add(v.device_sum_ns);
                c.split_ios = c.split_ios.wrapping_add(v.split_ios);
                for (a, b) in c.buckets.iter_mut().zip(v.buckets.iter()) {
                    *a = a.wrapping_add(*b);
                }
            }
            out.push(c);
        }
        out.sort_by_key(|c| (c.major, c.minor, c.cgroup, c.op));
        Ok((out, full))
    }

    /// Remove the per-cgroup entries of the cgroups in `gone` (removed from the hierarchy), so
    /// the map keeps room for the living.
    pub fn forget_cgroups(&mut self, gone: &std::collections::HashSet<u64>) -> Result<(), String> {
        if gone.is_empty() {
            return Ok(());
        }
        self.remove_cgroup_entries(|k| gone.contains(&k.cgroup))
    }

    /// Remove the keys `drop` selects; their indices are retired (see `cg_retired`) and the
    /// generation bumped, so no completion goes on using a cached index of theirs.
    fn remove_cgroup_entries(&mut self, drop: impl Fn(&CgKey) -> bool) -> Result<(), String> {
        let err = |e: aya::maps::MapError| e.to_string();
        let mut index: BpfHashMap<_, CgKey, u32> = self
            .ebpf
            .map_mut("cg_index")
            .ok_or("no cg_index map")?
            .try_into()
            .map_err(err)?;
        let keys: Vec<(CgKey, u32)> = index
            .iter()
            .filter_map(|kv| kv.ok())
            .filter(|(k, _)| drop(k))
            .collect();
        if keys.is_empty() {
            return Ok(());
        }
        for (k, idx) in keys {
            // Already gone (another reader) is fine; its index was retired then.
            if index.remove(&k).is_ok() {
                self.cg_retired.push((self.ticks, idx));
            }
        }
        self.bump_generation()
    }

    /// Every CPU's cached slots and cgroup indices are looked up again (state[4]): after a
    /// slot or cgroup key is removed, before its place can be given to another.
    fn bump_generation(&mut self) -> Result<(), String> {
        let err = |e: aya::maps::MapError| e.to_string();
        let mut state: aya::maps::Array<_, u64> = self
            .ebpf
            .map_mut("state")
            .ok_or("no state map")?
            .try_into()
            .map_err(err)?;
        let gen = state.get(&4, 0).map_err(err)?;
        state.set(4, gen.wrapping_add(1), 0).map_err(err)
    }

    /// Zero the indices retired before this tick and give them back to the program.
    fn release_retired(&mut self) -> Result<(), String> {
        let err = |e: aya::maps::MapError| e.to_string();
        let now = self.ticks;
        if !self.cg_retired.iter().any(|&(t, _)| t < now) {
            return Ok(());
        }
        let cpus = aya::util::nr_cpus().map_err(|(what, e)| format!("{what}: {e}"))?;
        let zero = CgVal {
            ios: 0,
            bytes: 0,
            sum_ns: 0,
            queue_sum_ns: 0,
            device_sum_ns: 0,
            split_ios: 0,
            buckets: [0; NGBUCKETS],
        };
        let (due, keep): (Vec<_>, Vec<_>) = self.cg_retired.iter().partition(|&&(t, _)| t < now);
        self.cg_retired = keep;
        for (_, idx) in due {
            let mut vals: PerCpuArray<_, CgVal> = self
                .ebpf
                .map_mut("cg_vals")
                .ok_or("no cg_vals map")?
                .try_into()
                .map_err(err)?;
            let values =
                aya::maps::PerCpuValues::try_from(vec![zero; cpus]).map_err(|e| e.to_string())?;
            vals.set(idx, values, 0).map_err(err)?;
            let mut free: aya::maps::Queue<_, u32> = self
                .ebpf
                .map_mut("cg_free")
                .ok_or("no cg_free map")?
                .try_into()
                .map_err(err)?;
            free.push(idx, 0).map_err(err)?;
        }
        Ok(())
    }

    /// A slot's cumulative queue and device time per op, summed over the CPUs.
    fn read_split(&self, slot: u32) -> Result<[RawSplit; NOPS], String> {
        let split: PerCpuArray<_, SplitHist> = self
            .ebpf
            .map("split_hists")
            .ok_or("no split_hists map")?
            .try_into()
            .map_err(|e: aya::maps::MapError| e.to_string())?;
        let mut out: [RawSplit; NOPS] = Default::default();
        for (op, raw) in out.iter_mut().enumerate() {
            let idx = slot * NOPS as u32 + op as u32;
            for h in split.get(&idx, 0).map_err(|e| e.to_string())?.iter() {
                let add = |into: &mut RawHist, b: &[u64], sum: u64| {
                    for (a, b) in into.buckets.iter_mut().zip(b) {
                        *a = a.wrapping_add(*b);
                    }
                    into.sum_ns = into.sum_ns.wrapping_add(sum);
                };
                add(&mut raw.queue, &h.queue, h.queue_sum_ns);
                add(&mut raw.device, &h.device, h.device_sum_ns);
                raw.unsplit = raw.unsplit.wrapping_add(h.unsplit);
            }
        }
        Ok(out)
    }

    /// (device number, slot) of every device holding a slot.
    fn held(&self) -> Result<Vec<(u32, u32)>, String> {
        let slots: BpfHashMap<_, u32, u32> = self
            .ebpf
            .map("slots")
            .ok_or("no slots map")?
            .try_into()
            .map_err(|e: aya::maps::MapError| e.to_string())?;
        slots
            .iter()
            .map(|kv| kv.map_err(|e| e.to_string()))
            .collect()
    }

    /// The slot `major:minor` holds, if any.
    pub fn slot_of(&self, major: u32, minor: u32) -> Result<Option<u32>, String> {
        let dev = major << 20 | minor;
        Ok(self
            .held()?
            .into_iter()
            .find(|&(d, _)| d == dev)
            .map(|(_, s)| s))
    }

    /// After each read of diskstats (stat, top, the exporter): the slots of devices gone from
    /// `present` come back (device churn: loop, dm, nbd), and completions dropped for want of
    /// a slot (`dropped`, from [`BlockLatency::read`]) are warned about once. The lines to say.
    pub fn tend(
        &mut self,
        present: &std::collections::HashSet<(u32, u32)>,
        dropped: u64,
    ) -> Vec<String> {
        let mut lines = Vec::new();
        self.ticks += 1;
        if let Err(e) = self.release_retired() {
            lines.push(format!(
                "block-latency per-cgroup entries of removed cgroups could not be freed: {e}"
            ));
        }
        if let Err(e) = self.free_gone(present) {
            lines.push(format!(
                "block-latency slots of removed devices could not be freed: {e}"
            ));
        }
        if let Ok(full) = self.cgroups_unattributed() {
            if full > 0 && !self.warned_cg_full {
                self.warned_cg_full = true;
                lines.push(format!(
                    "block latency: the per-cgroup map is full ({} cgroup, device and op \
                     entries); the requests of further cgroups are not attributed",
                    self.cg_entries
                ));
            }
        }
        if dropped > 0 && !self.warned_dropped {
            self.warned_dropped = true;
            lines.push(format!(
                "block latency: all {MAX_SLOTS} device slots are taken by devices still present; \
                 the completions of further devices are not in any histogram (counted in \
                 iosat_block_latency_dropped_completions_total)"
            ));
        }
        lines
    }

    /// Completions not attributed to their cgroup for want of room (state[2]).
    fn cgroups_unattributed(&self) -> Result<u64, String> {
        let state: aya::maps::Array<_, u64> = self
            .ebpf
            .map("state")
            .ok_or("no state map")?
            .try_into()
            .map_err(|e: aya::maps::MapError| e.to_string())?;
        state.get(&2, 0).map_err(|e| e.to_string())
    }

    /// Give back the slots of devices not in `present` (major, minor: the devices of the
    /// diskstats just read): each is unmapped, its histograms zeroed and the slot queued for
    /// the program to take before a new one. Returns the slots freed.
    pub fn free_gone(
        &mut self,
        present: &std::collections::HashSet<(u32, u32)>,
    ) -> Result<Vec<u32>, String> {
        let err = |e: aya::maps::MapError| e.to_string();
        let gone: Vec<(u32, u32)> = self
            .held()?
            .into_iter()
            .filter(|&(dev, _)| !present.contains(&(dev >> 20, dev & ((1 << 20) - 1))))
            .collect();
        if gone.is_empty() {
            return Ok(vec![]);
        }
        let cpus = aya::util::nr_cpus().map_err(|(what, e)| format!("{what}: {e}"))?;
        let zero = Hist {
            buckets: [0; NBUCKETS],
            sum_ns: 0,
        };
        let mut freed = Vec::new();
        for (dev, slot) in gone {
            // Unmapped first: a completion of the device can no longer find the slot.
            let mut slots: BpfHashMap<_, u32, u32> = self
                .ebpf
                .map_mut("slots")
                .ok_or("no slots map")?
                .try_into()
                .map_err(err)?;
            slots.remove(&dev).map_err(err)?;
            self.bump_generation()?;
            let mut hists: PerCpuArray<_, Hist> = self
                .ebpf
                .map_mut("hists")
                .ok_or("no hists map")?
                .try_into()
                .map_err(err)?;
            for op in 0..NOPS as u32 {
                let values = aya::maps::PerCpuValues::try_from(vec![zero; cpus])
                    .map_err(|e| e.to_string())?;
                hists.set(slot * NOPS as u32 + op, values, 0).map_err(err)?;
            }
            let mut classes: PerCpuArray<_, ClassHist> = self
                .ebpf
                .map_mut("class_hists")
                .ok_or("no class_hists map")?
                .try_into()
                .map_err(err)?;
            let zero_class = ClassHist {
                buckets: [0; NCBUCKETS],
                sum_ns: 0,
                bytes: 0,
            };
            let per_slot = (CLASS_OPS * NCLASSES) as u32;
            for i in 0..per_slot {
                let values = aya::maps::PerCpuValues::try_from(vec![zero_class; cpus])
                    .map_err(|e| e.to_string())?;
                classes.set(slot * per_slot + i, values, 0).map_err(err)?;
            }
            let mut split: PerCpuArray<_, SplitHist> = self
                .ebpf
                .map_mut("split_hists")
                .ok_or("no split_hists map")?
                .try_into()
                .map_err(err)?;
            let zero_split = SplitHist {
                queue: [0; NBUCKETS],
                device: [0; NBUCKETS],
                queue_sum_ns: 0,
                device_sum_ns: 0,
                unsplit: 0,
            };
            for op in 0..NOPS as u32 {
                let values = aya::maps::PerCpuValues::try_from(vec![zero_split; cpus])
                    .map_err(|e| e.to_string())?;
                split.set(slot * NOPS as u32 + op, values, 0).map_err(err)?;
            }
            // The slot's cgroup entries too, before a new device can take it.
            self.remove_cgroup_entries(|k| k.slot == slot)?;
            let mut free: aya::maps::Queue<_, u32> = self
                .ebpf
                .map_mut("free_slots")
                .ok_or("no free_slots map")?
                .try_into()
                .map_err(err)?;
            free.push(slot, 0).map_err(err)?;
            freed.push(slot);
        }
        Ok(freed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities() {
        let st = "Name:\tiosat\nCapEff:\t000001ffffffffff\n";
        assert_eq!(parse_cap_eff(st), Some(0x1ff_ffff_ffff));
        assert!(capable(0x1ff_ffff_ffff));
        assert!(!capable(0));
        assert!(capable(1 << CAP_SYS_ADMIN));
        assert!(capable((1 << CAP_BPF) | (1 << CAP_PERFMON)));
        assert!(!capable(1 << CAP_BPF));
        assert_eq!(parse_cap_eff("Name:\tx\n"), None);
    }

    #[test]
    fn a_verifier_log_gives_one_line_with_its_reason() {
        let log = std::io::Error::other(
            "the BPF_PROG_LOAD syscall failed. Verifier output: 0: R1=ctx() R10=fp0\n\
             166: (79) r1 = *(u64 *)(r2 +0)\n\
             R2 unbounded memory access, make sure to bounds check any such access\n\
             verification time 1711 usec\nstack depth 8\n\
             processed 74 insns (limit 1000000)\n",
        );
        let r = reason(&log);
        assert!(!r.contains('\n'), "{r}");
        assert!(r.starts_with("the BPF_PROG_LOAD syscall failed"), "{r}");
        assert!(
            r.ends_with("R2 unbounded memory access, make sure to bounds check any such access"),
            "{r}"
        );
        let why = Unavailable::Refused(r).to_string();
        assert!(why.starts_with("the kernel refused the BPF program: "));
        assert!(Unavailable::NoBtf("/sys/kernel/btf/vmlinux".into())
            .to_string()
            .contains("/sys/kernel/btf/vmlinux is missing"));
    }

    #[test]
    fn lockdown_modes() {
        assert!(!locked_down("[none] integrity confidentiality\n"));
        assert!(!locked_down("none [integrity] confidentiality\n"));
        assert!(locked_down("none integrity [confidentiality]\n"));
        assert!(!locked_down(""));
    }

    #[test]
    fn the_layout_matches_the_c_program() {
        let c = include_str!("../../bpf/iolat.bpf.c");
        let define = |name: &str| -> u32 {
            let l = c
                .lines()
                .find(|l| l.starts_with(&format!("#define {name} ")))
                .unwrap_or_else(|| panic!("no #define {name}"));
            l.split_whitespace().nth(2).unwrap().parse().unwrap()
        };
        assert_eq!(define("UNIT_SHIFT"), UNIT_SHIFT);
        assert_eq!(define("SUB_BITS"), SUB_BITS);
        assert_eq!(define("MAX_LOG2"), MAX_LOG2);
        assert_eq!(define("NOPS") as usize, NOPS);
        assert_eq!(std::mem::size_of::<Hist>(), (NBUCKETS + 1) * 8);
        assert_eq!(define("NCLASSES") as usize, NCLASSES);
        assert_eq!(define("CLASS_OPS") as usize, CLASS_OPS);
        assert_eq!(define("CLASS_SHIFT"), CLASS_SHIFT);
        assert_eq!(define("SMALL_MAX_BYTES") as u64, SMALL_MAX_BYTES);
        assert_eq!(define("MEDIUM_MAX_BYTES") as u64, MEDIUM_MAX_BYTES);
        assert_eq!(std::mem::size_of::<ClassHist>(), (NCBUCKETS + 2) * 8);
        assert_eq!(std::mem::size_of::<SplitHist>(), (2 * NBUCKETS + 3) * 8);
        assert_eq!(define("CG_OPS") as usize, CG_OPS);
        assert_eq!(define("CG_SHIFT"), CG_SHIFT);
        assert_eq!(std::mem::size_of::<CgVal>(), (NGBUCKETS + 6) * 8);
        assert_eq!(std::mem::size_of::<CgKey>(), 16);
        // A struct's `__u64` fields in the C source, in order.
        let u64_fields = |name: &str| -> Vec<&str> {
            c.split(&format!("struct {name} {{"))
                .nth(1)
                .and_then(|b| b.split("};").next())
                .unwrap_or_else(|| panic!("struct {name} in the C source"))
                .lines()
                .map(str::trim)
                .filter(|l| l.starts_with("__u64"))
                .collect()
        };
        assert_eq!(
            u64_fields("cg_val"),
            [
                "__u64 ios;",
                "__u64 bytes;",
                "__u64 sum_ns;",
                "__u64 queue_sum_ns;",
                "__u64 device_sum_ns;",
                "__u64 split_ios;",
                "__u64 buckets[NGBUCKETS];"
            ]
        );
        // A few CPUs get the whole map; many get fewer entries, never below 64.
        assert_eq!(cgroup_entries(2), 1024);
        assert!(cgroup_entries(256) < 1024);
        assert_eq!(cgroup_entries(100_000), 64);
        // The split's struct is the C one, field for field.
        assert_eq!(
            u64_fields("split_hist"),
            [
                "__u64 queue[NBUCKETS];",
                "__u64 device[NBUCKETS];",
                "__u64 queue_sum_ns;",
                "__u64 device_sum_ns;",
                "__u64 unsplit;"
            ]
        );
    }
}
