//! Device ids: what identifies a device across reboots and renames ([`Identity`]: wwid,
//! serial, model + size), read from sysfs, and the profile id made of it (sanitised to
//! `[A-Za-z0-9._-]`).
//! Imports only: sys/.

use crate::sys::device::{self, BlockDev};
use crate::sys::Root;
use std::path::Path;

/// What identifies a device across reboots and renames, best first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub wwid: Option<String>,
    pub serial: Option<String>,
    pub model: Option<String>,
    pub size_bytes: Option<u64>,
    /// The kernel name (last resort, not stable across reboots).
    pub name: String,
}

/// `s` with every character outside `[A-Za-z0-9._-]` made `_`: what a file name made of an
/// id or a device name may hold (profiles and learned state alike).
pub fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The id made of `s`: `[A-Za-z0-9._-]` only, runs of anything else one `_`, none at
/// either end.
pub(super) fn sanitize(s: &str) -> String {
    let mut out = file_safe(s.trim());
    while out.contains("__") {
        out = out.replace("__", "_");
    }
    out.trim_matches('_').to_string()
}

/// The profile id: wwid, else serial, else model + size, else name + size.
pub fn profile_id(id: &Identity) -> String {
    let nonempty = |s: &Option<String>| s.as_deref().map(sanitize).filter(|s| !s.is_empty());
    if let Some(w) = nonempty(&id.wwid) {
        return w;
    }
    if let Some(s) = nonempty(&id.serial) {
        return format!("serial-{s}");
    }
    let size = id.size_bytes.map(|b| format!("-{b}")).unwrap_or_default();
    match nonempty(&id.model) {
        Some(m) => format!("{m}{size}"),
        None => format!("{}{size}", sanitize(&id.name)),
    }
}

/// Thin IO: the identity attributes (`wwid`, `serial`, also under `device/`) of a block device
/// whose sysfs directory is `sysfs_dir` (from `sys::device::sysfs_dir`).
pub fn read_identity(
    sysfs_dir: &Path,
    name: &str,
    model: Option<String>,
    size_bytes: Option<u64>,
) -> Identity {
    let rd = |rel: &str| {
        std::fs::read_to_string(sysfs_dir.join(rel))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    Identity {
        wwid: rd("wwid").or_else(|| rd("device/wwid")),
        serial: rd("serial").or_else(|| rd("device/serial")),
        model,
        size_bytes,
        name: name.to_string(),
    }
}

/// The profile id of a block device from sysfs (None when it is not in sysfs).
pub fn device_id(root: &Root, dev: &BlockDev) -> Option<String> {
    let dir = device::sysfs_dir(root, dev)?;
    let q = device::queue_info(root, dev);
    Some(profile_id(&read_identity(
        &dir,
        &dev.name,
        q.model,
        q.size_bytes,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_precedence_and_sanitising() {
        let mut id = Identity {
            wwid: Some("eui.0025 3859 01a2/b".into()),
            serial: Some("S3X".into()),
            model: Some("Samsung SSD 970".into()),
            size_bytes: Some(1000),
            name: "nvme0n1".into(),
        };
        assert_eq!(profile_id(&id), "eui.0025_3859_01a2_b");
        id.wwid = None;
        assert_eq!(profile_id(&id), "serial-S3X");
        id.serial = Some("  ".into());
        assert_eq!(profile_id(&id), "Samsung_SSD_970-1000");
        id.model = None;
        assert_eq!(profile_id(&id), "nvme0n1-1000");
    }

    #[test]
    fn identity_from_a_sysfs_like_directory() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("device")).unwrap();
        std::fs::write(d.path().join("device/wwid"), "naa.5000c500a1b2c3d4\n").unwrap();
        std::fs::write(d.path().join("serial"), "\n").unwrap();
        let id = read_identity(d.path(), "sda", Some("ST4000".into()), Some(4));
        assert_eq!(id.wwid.as_deref(), Some("naa.5000c500a1b2c3d4"));
        assert_eq!(id.serial, None, "blank serial is no serial");
        assert_eq!(profile_id(&id), "naa.5000c500a1b2c3d4");
    }
}
