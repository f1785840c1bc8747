//! What `iosat info` gathers about each device: the devices of /proc/diskstats (keyed by
//! major:minor, the same list `iosat stat` sees), their sysfs facts (through sys/), their profiles
//! (through profile::ProfileCache), the cgroup I/O limits on this process (through sys::cgroup),
//! and notes from what is known about the kernel's accounting (docs/design.md §4).
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, import/.

use super::select::{unknown_device, DeviceMeta, Selection};
use crate::error::Error;
use crate::profile::DeviceProfile;
use crate::profile::ProfileCache;
use crate::profile::ProfileLookup as ProfileLookupTrait;
use crate::sys::cgroup::{self, CgroupLimit};
use crate::sys::device::{self, BlockDev, DevKind, DeviceExtra, QueueInfo};
use crate::sys::ebs::{Counters, Identity};
use crate::sys::ebsdev;
use crate::sys::{diskstats, kernel_release, kernel_version, Root};

/// Everything `iosat info` says about one device.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceInfo {
    pub name: String,
    pub display_name: String,
    pub major: u32,
    pub minor: u32,
    pub kind: Option<DevKind>,
    #[serde(flatten)]
    pub queue: QueueInfo,
    #[serde(flatten)]
    pub extra: DeviceExtra,
    pub holders: Vec<String>,
    pub mountpoints: Vec<String>,
    /// Each mount with its filesystem and options (`mountpoints` in the same order).
    pub mounts: Vec<device::Mount>,
    pub partitions: Vec<String>,
    pub members: Vec<String>,
    /// The id a profile of this device is saved under (`iosat sweep --save-profile`).
    pub profile_id: Option<String>,
    /// The saved profile, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<DeviceProfile>,
    /// Where the profile was looked for and what matched (None: the device has no id).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile_lookup: Option<ProfileLookup>,
    /// Limits the kernel applies to this process's I/O on the device (cgroup io.max,
    /// blkio.throttle along its cgroup path).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<CgroupLimit>,
    pub notes: Vec<String>,
    /// What an AWS EBS volume or EC2 instance storage says of itself (log page 0xD0); absent
    /// on every other device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aws: Option<AwsInfo>,
}

/// An AWS EBS volume or EC2 instance storage: who it is and, when readable, its counters.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AwsInfo {
    /// From the controller (Identify Controller), else from sysfs; None when neither could
    /// be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identity: Option<Identity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counters: Option<Counters>,
    /// Why the counters were not read (one line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_read: Option<String>,
    /// What the read cost, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_us: Option<u64>,
}

/// The AWS statistics of a device: None (nothing opened, nothing read) unless sysfs shows
/// one of Amazon's models and the controller confirms it.
fn aws_info(root: &Root, dev: &BlockDev) -> Option<AwsInfo> {
    match ebsdev::Sampler::open(root, dev) {
        Ok(None) => None,
        Err(why) => Some(AwsInfo {
            identity: ebsdev::sysfs_identity(root, dev),
            counters: None,
            not_read: Some(why),
            read_us: None,
        }),
        Ok(Some(mut s)) => {
            let got = s.sample();
            let read_us = (s.cost().reads > 0).then(|| s.cost().last_us);
            let (counters, not_read) = match got {
                Ok(sample) => (Some(sample.counters), None),
                Err(ebsdev::NotRead::Off(m) | ebsdev::NotRead::Failed(m)) => (None, Some(m)),
                Err(ebsdev::NotRead::TooSoon) => (None, None),
            };
            // A reason the entry says is not warned of twice (a slow read's warning is).
            for w in s.take_warnings() {
                if not_read.as_deref() != Some(w.as_str()) {
                    crate::error::warn(w);
                }
            }
            Some(AwsInfo {
                identity: Some(s.identity().clone()),
                counters,
                not_read,
                read_us,
            })
        }
    }
}

/// Which profile ids `info` looked for, in which files of which directories, and which
/// matched: a profile copied under another name is then seen to be ignored, and why; a model
/// profile that does not match says how the device differs.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ProfileLookup {
    /// The own profile directory, where profiles are saved (None: none could be named).
    pub dir: Option<String>,
    /// Every directory searched, in order, with its role (own, old, shared).
    pub dirs: Vec<LookupDir>,
    /// The ids looked for, best first: the device's own, then the model profiles compared.
    pub ids: Vec<String>,
    /// The file names of the device's own id looked for in each directory, in order.
    pub files: Vec<String>,
    /// The id that matched, and its file.
    pub matched_id: Option<String>,
    pub matched_file: Option<String>,
    /// How it matched: "device" (its own id) or "model" (a model profile).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matched_by: Option<&'static str>,
    /// What judgements of the device name: "the model profile of '…', swept on HOST DAY".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judged_against: Option<String>,
    /// What a model profile must match of this device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_key: Option<crate::profile::ModelKey>,
    /// The model profiles compared that do not match, each with how the device differs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub model_misses: Vec<ModelMiss>,
    /// Why none matched (no directory, no such file, an unreadable file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
}

/// A directory of the profile search.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LookupDir {
    pub path: String,
    pub role: crate::profile::DirRole,
}

/// A model profile that does not judge the device, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ModelMiss {
    pub id: String,
    pub differences: Vec<String>,
}

/// Version of `info --json`. 2: the envelope (`kind` for `schema`, host, cpus, start).
pub const SCHEMA_VERSION: u32 = 2;

/// `iosat info`'s result: the envelope (its `kernel` the release under --proc-root) and the
/// devices.
#[derive(Debug, Clone, serde::Serialize)]
pub struct InfoReport {
    #[serde(flatten)]
    pub envelope: crate::envelope::Envelope,
    pub devices: Vec<DeviceInfo>,
}

/// Where the profile of the device of `id` was looked for and what matched; the profile
/// found into `profile`.
fn lookup(
    profiles: &mut ProfileCache,
    id: &str,
    profile: &mut Option<DeviceProfile>,
) -> ProfileLookup {
    let found = ProfileLookupTrait::by_id(profiles, id);
    let dirs = profiles.dirs().clone();
    let key = profiles.model_key(id).cloned();
    let models = profiles.model_profiles().to_vec();
    let mut l = ProfileLookup {
        dir: dirs.own().map(|p| p.display().to_string()),
        dirs: dirs
            .dirs
            .iter()
            .map(|(p, role)| LookupDir {
                path: p.display().to_string(),
                role: *role,
            })
            .collect(),
        files: crate::profile::files_for(id),
        ids: vec![id.to_string()],
        matched_id: None,
        matched_file: None,
        matched_by: None,
        judged_against: None,
        model_key: key.clone(),
        model_misses: Vec::new(),
        missing: None,
    };
    let own = found
        .as_ref()
        .is_ok_and(|f| f.profile.model_profile.is_none());
    if !own {
        // The model profiles were compared: name each, and why it does not match.
        for m in &models {
            if !l.ids.contains(&m.id) {
                l.ids.push(m.id.clone());
            }
            match &key {
                Some(k) if m.key == *k => {}
                Some(k) => l.model_misses.push(ModelMiss {
                    id: m.id.clone(),
                    differences: m.key.differences(k),
                }),
                None => l.model_misses.push(ModelMiss {
                    id: m.id.clone(),
                    differences: vec!["the device's model facts are unknown".into()],
                }),
            }
        }
    }
    match found {
        Ok(f) => {
            l.matched_id = Some(f.profile.id.clone());
            l.matched_by = Some(if own { "device" } else { "model" });
            l.judged_against = Some(f.profile.judged_against());
            l.matched_file = Some(f.path);
            *profile = Some((*f.profile).clone());
        }
        Err(why) => l.missing = Some(why),
    }
    l
}

/// Notes on where this device's numbers mislead, given the kernel version.
fn notes(d: &DeviceInfo, kernel: Option<(u32, u32)>) -> Vec<String> {
    let mut n = Vec::new();
    if let Some(v) = kernel {
        if ((5, 0)..(6, 10)).contains(&v) {
            n.push("%util comes from io_ticks, which kernels 5.0-6.9 sample per jiffy: it can over- or under-count".into());
        }
        if v < (5, 7) {
            n.push("kernel < 5.7: weighted time is not the sum of per-direction times, so r_conc + w_conc may differ from aqu-sz".into());
        }
        if v < (4, 18) {
            n.push("kernel < 4.18: no discard counters (d/s, dkB/s, d_await are undefined)".into());
        } else if v < (5, 5) {
            n.push("kernel < 5.5: no flush counters (f/s, f_await are undefined)".into());
        }
    }
    match d.kind {
        Some(DevKind::Dm) | Some(DevKind::Md) => n.push(
            "stacked device: its requests are split and queued on the members below; %util and aqu-sz here say nothing about the members' capacity".into(),
        ),
        Some(DevKind::Loop) => n.push(
            "loop device: I/O goes to a backing file, so the numbers describe that file's filesystem and page cache, not a disk".into(),
        ),
        Some(DevKind::Zram) | Some(DevKind::Ram) => {
            n.push("RAM-backed: latency is CPU and memory time, not a disk's".into())
        }
        _ => {}
    }
    match d.queue.rotational {
        Some(false) if !matches!(d.kind, Some(DevKind::Loop | DevKind::Zram | DevKind::Ram)) => n.push(
            "non-rotational: serves many requests at once, so %util near 100 does not mean saturated; compare latency against the concurrency-1 baseline (iosat sweep)".into(),
        ),
        Some(true) if d.kind == Some(DevKind::Disk) => n.push(
            "reports itself rotational: if it is one spinning disk, %util near 100 is close to saturation; virtual disks (virtio, cloud volumes) often report rotational whatever is behind them".into(),
        ),
        _ => {}
    }
    if d.queue.write_cache.as_deref() == Some("write back") {
        if d.queue.fua == Some(false) {
            n.push("volatile write cache without FUA: durable writes cost a full cache flush (see iosat fsync)".into());
        } else {
            n.push(
                "volatile write cache: only fsync/flush makes writes durable (see iosat fsync)"
                    .into(),
            );
        }
    }
    n
}

/// Every selected device of `<proc>/diskstats` with its sysfs facts, profile and notes.
/// Err when a pattern names no device.
pub fn gather(
    root: &Root,
    sel: &Selection,
    profiles: &mut ProfileCache,
) -> Result<InfoReport, Error> {
    let text = diskstats::read_text(root)?;
    let parsed = diskstats::parse(&text);
    for w in &parsed.warnings {
        crate::error::warn(w);
    }
    let release = kernel_release(root);
    let kernel = release.as_deref().and_then(kernel_version);
    let mut metas = Vec::new();
    for l in &parsed.lines {
        let dev = BlockDev {
            major: l.major,
            minor: l.minor,
            name: l.name.clone(),
        };
        let meta = DeviceMeta {
            kind: device::kind(root, &dev),
            display_name: device::friendly_name(root, &dev),
        };
        metas.push((dev, meta));
    }
    let all: Vec<(u32, &str, &DeviceMeta)> = metas
        .iter()
        .map(|(d, m)| (d.major, d.name.as_str(), m))
        .collect();
    if let Some(p) = sel.unmatched(&all) {
        return Err(unknown_device(p));
    }
    let mut out = Vec::new();
    for (dev, meta) in metas {
        if !sel.selects(dev.major, &dev.name, &meta) {
            continue;
        }
        let mut d = DeviceInfo {
            name: dev.name.clone(),
            display_name: meta.display_name.clone(),
            major: dev.major,
            minor: dev.minor,
            kind: meta.kind,
            queue: device::queue_info(root, &dev),
            extra: device::extra(root, &dev),
            holders: device::holders(root, &dev),
            mountpoints: device::mountpoints(root, &dev),
            mounts: device::mounts(root, &dev),
            partitions: device::partitions(root, &dev)
                .into_iter()
                .map(|p| p.name)
                .collect(),
            members: device::slaves(root, &dev),
            profile_id: profiles.device_id(&dev),
            profile: None,
            profile_lookup: None,
            limits: cgroup::limits(root, dev.major, dev.minor),
            notes: Vec::new(),
            aws: aws_info(root, &dev),
        };
        if let Some(id) = d.profile_id.clone() {
            d.profile_lookup = Some(lookup(profiles, &id, &mut d.profile));
        }
        for w in profiles.take_warnings() {
            crate::error::warn(w);
        }
        d.notes = notes(&d, kernel);
        out.push(d);
    }
    Ok(InfoReport {
        envelope: {
            let mut e = crate::envelope::Envelope::now("info", SCHEMA_VERSION);
            // The kernel whose devices are described (a copied /proc says its own).
            if let Some(r) = release {
                e.kernel = r;
            }
            e
        },
        devices: out,
    })
}
