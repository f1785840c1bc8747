//! Which physical disk(s) a block device's requests end on: a whole disk is its own, a
//! partition its parent disk's (`/sys/class/block/X/partition` present: the parent is the
//! directory above), a dm or md device the physical disks beneath its members
//! (`/sys/class/block/X/slaves/`, followed down through partitions and further dm/md layers),
//! a loop device over a block device node (`loop/backing_file`) that device's.
//! The exporter labels each device with these so that alerts fire once per physical disk.
//! A pure resolver over a lookup of sysfs nodes ([`physical_disks`]) and a thin reader of one
//! node under a swappable root ([`read_node`], [`physical_disks_in`]).
//! Imports only: sys/.

use super::Root;
use std::path::Path;

/// What sysfs says of one block device that matters for stacking.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node {
    /// The whole disk a partition belongs to (None: not a partition).
    pub partition_of: Option<String>,
    /// The devices it is built from: dm, md, bcache members as in `slaves/`, and the block
    /// device a loop device reads and writes (which `slaves/` does not list).
    pub slaves: Vec<String>,
}

/// Deeper stacks than this are not followed (sysfs has no cycles; this bounds a corrupt or
/// fixture tree).
const MAX_DEPTH: usize = 16;

/// The physical disks under `name`, sorted and without repeats: `[name]` itself for a device
/// that is neither a partition nor built from others (or that `lookup` does not know).
pub fn physical_disks(name: &str, lookup: &mut dyn FnMut(&str) -> Option<Node>) -> Vec<String> {
    let mut out = Vec::new();
    walk(name, lookup, 0, &mut out);
    out.sort();
    out.dedup();
    out
}

fn walk(
    name: &str,
    lookup: &mut dyn FnMut(&str) -> Option<Node>,
    depth: usize,
    out: &mut Vec<String>,
) {
    let node = if depth < MAX_DEPTH {
        lookup(name).unwrap_or_default()
    } else {
        Node::default()
    };
    if let Some(parent) = node.partition_of {
        walk(&parent, lookup, depth + 1, out);
    } else if !node.slaves.is_empty() {
        for s in &node.slaves {
            walk(s, lookup, depth + 1, out);
        }
    } else {
        out.push(name.to_string());
    }
}

fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The node of kernel name `name` under `root` (`<sys>/class/block/<name>`, which lists
/// partitions as well as whole devices); None when sysfs has no such device.
pub fn read_node(root: &Root, name: &str) -> Option<Node> {
    let link = root.sys.join("class/block").join(name);
    let dir = std::fs::canonicalize(&link).ok()?;
    let partition_of = if dir.join("partition").exists() {
        dir.parent()
            .and_then(|p| p.file_name())
            .map(|n| n.to_string_lossy().into_owned())
    } else {
        None
    };
    let mut slaves = entries(&dir.join("slaves"));
    slaves.extend(loop_backing_device(root, &dir));
    Some(Node {
        partition_of,
        slaves,
    })
}

/// The kernel name of the block device a loop device (sysfs directory `dir`) is backed by,
/// when its backing file is a block device node rather than a regular file.
fn loop_backing_device(root: &Root, dir: &Path) -> Option<String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let file = std::fs::read_to_string(dir.join("loop/backing_file")).ok()?;
    let file = file.trim();
    let file = file.strip_suffix(" (deleted)").unwrap_or(file);
    let m = std::fs::metadata(file).ok()?;
    if !m.file_type().is_block_device() {
        return None;
    }
    let (major, minor) = (libc::major(m.rdev()), libc::minor(m.rdev()));
    let target = std::fs::canonicalize(root.sys.join(format!("dev/block/{major}:{minor}"))).ok()?;
    Some(target.file_name()?.to_string_lossy().into_owned())
}

/// [`physical_disks`] of `name` read from sysfs under `root`.
pub fn physical_disks_in(root: &Root, name: &str) -> Vec<String> {
    physical_disks(name, &mut |n| read_node(root, n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn tree() -> HashMap<&'static str, Node> {
        let part = |d: &str| Node {
            partition_of: Some(d.into()),
            slaves: vec![],
        };
        let built = |s: &[&str]| Node {
            partition_of: None,
            slaves: s.iter().map(|s| s.to_string()).collect(),
        };
        HashMap::from([
            ("sda", Node::default()),
            ("sda1", part("sda")),
            ("sda2", part("sda")),
            ("sdb", Node::default()),
            ("sdb1", part("sdb")),
            // RAID 1 over two partitions, LVM on the array, dm-crypt on the volume.
            ("md0", built(&["sda2", "sdb1"])),
            ("dm-0", built(&["md0"])),
            ("dm-1", built(&["dm-0"])),
            // A volume over a whole disk and a partition of the same disk.
            ("dm-2", built(&["sda", "sda1"])),
            // A loop of its own.
            ("loop0", Node::default()),
            // A corrupt tree that loops.
            ("dm-8", built(&["dm-9"])),
            ("dm-9", built(&["dm-8"])),
        ])
    }

    fn disks(name: &str) -> Vec<String> {
        let t = tree();
        physical_disks(name, &mut |n| t.get(n).cloned())
    }

    #[test]
    fn whole_disks_partitions_and_stacks_resolve_to_physical_disks() {
        assert_eq!(disks("sda"), ["sda"]);
        assert_eq!(disks("sda1"), ["sda"]);
        assert_eq!(disks("md0"), ["sda", "sdb"]);
        assert_eq!(disks("dm-1"), ["sda", "sdb"]);
        assert_eq!(disks("dm-2"), ["sda"]);
        assert_eq!(disks("loop0"), ["loop0"]);
        // Unknown to sysfs: itself.
        assert_eq!(disks("nbd0"), ["nbd0"]);
        // A cycle ends at the depth bound instead of recursing forever.
        assert_eq!(disks("dm-8"), ["dm-8"]);
    }

    #[test]
    fn the_exporter_fixture_tree_is_read() {
        let sys = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/exporter/root/sys");
        let root = Root {
            proc: sys.with_file_name("proc"),
            sys,
        };
        assert_eq!(
            read_node(&root, "sda2"),
            Some(Node {
                partition_of: Some("sda".into()),
                slaves: vec![]
            })
        );
        assert_eq!(physical_disks_in(&root, "nvme0n1"), ["nvme0n1"]);
        assert_eq!(physical_disks_in(&root, "nvme0n1p1"), ["nvme0n1"]);
        // dm-0 on nvme0n1p2, md0 on sda2.
        assert_eq!(physical_disks_in(&root, "dm-0"), ["nvme0n1"]);
        assert_eq!(physical_disks_in(&root, "md0"), ["sda"]);
        assert_eq!(physical_disks_in(&root, "loop0"), ["loop0"]);
        assert_eq!(read_node(&root, "nosuch"), None);
    }
}
