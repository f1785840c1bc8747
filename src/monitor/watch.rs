//! One device watched around a measured window, for `sweep` (the kernel's view of each level)
//! and `fsync` (the flush counters of each case): the disk under a path (file → filesystem →
//! partition → whole disk; dm and md are their own disk) or a device node, found once, then
//! its diskstats line read before and after each window and turned into a [`DiskDelta`] by
//! the same `DiskDelta::between` every other command uses. Must not import cmd/, cli/ or ui/.

use super::{DiskDelta, DiskSample};
use crate::error::Result;
use crate::sys::device::{self, BlockDev};
use crate::sys::diskstats::DiskStatLine;
use crate::sys::Root;
use std::path::Path;

/// The device a window is measured on.
#[derive(Debug, Clone)]
pub struct DeviceWatch {
    pub root: Root,
    pub dev: BlockDev,
}

/// One reading of the device's diskstats line with the monotonic time it was read at.
#[derive(Debug, Clone)]
pub struct Mark {
    pub mono_ns: u64,
    pub line: DiskStatLine,
}

impl DeviceWatch {
    /// The whole disk holding `path` (a file or a directory).
    pub fn for_path(root: &Root, path: &Path) -> Result<DeviceWatch> {
        Ok(DeviceWatch {
            root: root.clone(),
            dev: device::disk_for_path(root, path)?,
        })
    }

    /// The device behind the block-device node `node` (itself, not its disk).
    pub fn for_node(root: &Root, node: &Path) -> Result<DeviceWatch> {
        Ok(DeviceWatch {
            root: root.clone(),
            dev: device::blockdev_for_node(root, node)?,
        })
    }

    /// Read the device's counters now; None when it is not in diskstats (tmpfs, overlay,
    /// network filesystems) or the file can't be read.
    pub fn mark(&self) -> Option<Mark> {
        let s = DiskSample::take(&self.root).ok()?;
        let line = s.find(self.dev.major, self.dev.minor)?.clone();
        Some(Mark {
            mono_ns: s.mono_ns,
            line,
        })
    }

    /// The counters' change between two marks over their measured interval; None when a
    /// counter went backwards or no time passed. `DiskRates::from_delta` gives the rates.
    pub fn delta(&self, a: &Mark, b: &Mark) -> Option<DiskDelta> {
        let dt = b.mono_ns.checked_sub(a.mono_ns)?;
        DiskDelta::between(&a.line, &b.line, dt)
    }

    /// Close a window opened with [`mark`](Self::mark): the change from `start` to now.
    pub fn finish(&self, start: Option<Mark>) -> Option<DiskDelta> {
        let a = start?;
        let b = self.mark()?;
        self.delta(&a, &b)
    }

    /// The name people know the device by (dm/md names resolved).
    pub fn friendly_name(&self) -> String {
        device::friendly_name(&self.root, &self.dev)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::monitor::DiskRates;

    #[test]
    fn window_on_a_fixture_root_counts_what_moved() {
        let dir = tempfile::tempdir().unwrap();
        let proc = dir.path().join("proc");
        std::fs::create_dir_all(&proc).unwrap();
        let line = |reads: u64, flushes: u64| {
            format!(
                "   8       0 sda {reads} 0 {} 10 0 0 0 0 0 10 10 0 0 0 0 {flushes} 4\n",
                reads * 8
            )
        };
        std::fs::write(proc.join("diskstats"), line(100, 7)).unwrap();
        let w = DeviceWatch {
            root: Root {
                proc: proc.clone(),
                sys: dir.path().join("sys"),
            },
            dev: BlockDev {
                major: 8,
                minor: 0,
                name: "sda".into(),
            },
        };
        let a = w.mark().expect("sda is in the fixture");
        std::thread::sleep(std::time::Duration::from_millis(5));
        std::fs::write(proc.join("diskstats"), line(150, 9)).unwrap();
        let d = w.finish(Some(a)).expect("counters moved forward");
        assert_eq!((d.reads, d.flushes), (50, Some(2)));
        let r = DiskRates::from_delta(&d);
        let dt = r.interval_s;
        assert!(dt > 0.004, "{dt}");
        assert!((r.r_s * dt - 50.0).abs() < 1e-6, "{}", r.r_s * dt);
        assert!((r.f_s.unwrap() * dt - 2.0).abs() < 1e-6);
        // A device that is not in the file has no window.
        let gone = DeviceWatch {
            dev: BlockDev {
                major: 9,
                minor: 9,
                name: "x".into(),
            },
            ..w
        };
        assert!(gone.mark().is_none());
    }
}
