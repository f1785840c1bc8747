//! Model profiles: the key a device must match for a profile swept on another device of its
//! model to judge it ([`ModelKey`]: model, firmware, capacity, block sizes, rotational flag,
//! scheduler), the id a model profile is saved under, how a device differs from one, and a
//! model profile found in a directory ([`ModelProfile`]).
//! Imports only: profile/, sys/, units.

use super::ids::sanitize;
use crate::sys::device::{self, BlockDev};
use crate::sys::Root;
use std::path::PathBuf;

/// What a model profile holds of the device it was swept on, and a device must match in every
/// field (a field neither knows matches) for the profile to judge it: one sweep per model of
/// a fleet instead of one per volume.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ModelKey {
    pub model: Option<String>,
    pub firmware: Option<String>,
    pub size_bytes: Option<u64>,
    pub logical_block_size: Option<u32>,
    pub physical_block_size: Option<u32>,
    pub rotational: Option<bool>,
    pub scheduler: Option<String>,
}

impl ModelKey {
    /// Thin IO: the device's model key from sysfs (firmware: `device/firmware_rev`, NVMe, else
    /// `device/rev`, SCSI).
    pub fn read(root: &Root, dev: &BlockDev) -> ModelKey {
        let firmware = device::sysfs_dir(root, dev).and_then(|d| {
            ["device/firmware_rev", "device/rev"].iter().find_map(|f| {
                std::fs::read_to_string(d.join(f))
                    .ok()
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty())
            })
        });
        ModelKey::of(&device::queue_info(root, dev), firmware)
    }

    /// Pure: the key from a device's queue facts and firmware revision.
    pub fn of(q: &device::QueueInfo, firmware: Option<String>) -> ModelKey {
        ModelKey {
            model: q.model.clone(),
            firmware,
            size_bytes: q.size_bytes,
            logical_block_size: q.logical_block_size,
            physical_block_size: q.physical_block_size,
            rotational: q.rotational,
            scheduler: q.scheduler.clone(),
        }
    }

    /// How a model is named to people: its model and capacity ("Amazon Elastic Block Store
    /// 100 GiB").
    pub fn label(&self) -> String {
        // A model name comes from a device or a file: never a control character raw.
        let model = crate::units::printable(self.model.as_deref().unwrap_or("unnamed model"));
        match self.size_bytes {
            Some(b) if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{model} {} GiB", b >> 30),
            Some(b) if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{model} {} MiB", b >> 20),
            Some(b) => format!("{model} {}", crate::units::human_bytes(b)),
            None => model.to_string(),
        }
    }

    /// The id a model profile is saved under: `model-<model>-<size>-<hash of the whole key>`,
    /// so two firmwares or schedulers of one model keep two profiles.
    pub fn id(&self) -> String {
        // FNV-1a over the key's JSON: stable across builds and hosts (std's hasher is not).
        let json = serde_json::to_string(self).expect("a model key serialises");
        let hash = json.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        });
        let model = sanitize(self.model.as_deref().unwrap_or("unnamed"));
        let size = self.size_bytes.map(|b| format!("-{b}")).unwrap_or_default();
        format!("model-{model}{size}-{:08x}", hash as u32)
    }

    /// Pure: how `dev` differs from this key, in words (empty: it matches).
    pub fn differences(&self, dev: &ModelKey) -> Vec<String> {
        let mut out = Vec::new();
        let mut cmp = |what: &str, a: Option<String>, b: Option<String>| {
            if a != b {
                let s = |v: Option<String>| v.unwrap_or_else(|| "unknown".into());
                out.push(format!("{what} {} here, {} in the profile", s(b), s(a)));
            }
        };
        cmp("model", self.model.clone(), dev.model.clone());
        cmp("firmware", self.firmware.clone(), dev.firmware.clone());
        let n = |v: Option<u64>| v.map(|v| v.to_string());
        cmp("size", n(self.size_bytes), n(dev.size_bytes));
        let n32 = |v: Option<u32>| v.map(|v| v.to_string());
        cmp(
            "logical block size",
            n32(self.logical_block_size),
            n32(dev.logical_block_size),
        );
        cmp(
            "physical block size",
            n32(self.physical_block_size),
            n32(dev.physical_block_size),
        );
        let rot =
            |v: Option<bool>| v.map(|r| if r { "rotational" } else { "non-rotational" }.into());
        cmp("rotational", rot(self.rotational), rot(dev.rotational));
        cmp("scheduler", self.scheduler.clone(), dev.scheduler.clone());
        out
    }
}

/// A model profile of one of the directories: where, its id, what it matches.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelProfile {
    pub dir: PathBuf,
    pub id: String,
    pub key: ModelKey,
}
