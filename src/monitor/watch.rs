//! One device watched around a measured window, for `sweep` (the kernel's view of each level) and
//! `fsync` (the flush counters of each case): the disk under a path (file → filesystem → partition
//! → whole disk; dm and md are their own disk) or a device node, found once, then its diskstats
//! line read before and after each window and turned into a [`DiskDelta`] by the same
//! `DiskDelta::between` every other command uses; with the block-latency source attached
//! ([`DeviceWatch::with_block_latency`]) a mark also holds the device's histograms, so a window has
//! the block layer's own percentiles.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, import/.

use super::blklat::{self, BlkSample, Measured};
use super::{DiskDelta, DiskRates, DiskSample};
use crate::error::Result;
use crate::sys::device::{self, BlockDev};
use crate::sys::diskstats::DiskStatLine;
use crate::sys::Root;
use std::path::Path;
use std::sync::Arc;

/// The device a window is measured on.
#[derive(Clone)]
pub struct DeviceWatch {
    pub root: Root,
    pub dev: BlockDev,
    /// The block-latency source, when attached.
    blk: Option<Arc<crate::sys::bpf::BlockLatency>>,
}

impl std::fmt::Debug for DeviceWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceWatch")
            .field("root", &self.root)
            .field("dev", &self.dev)
            .field("block_latency", &self.blk.is_some())
            .finish()
    }
}

/// One reading of the device's diskstats line with the monotonic time it was read at.
#[derive(Debug, Clone)]
pub struct Mark {
    pub mono_ns: u64,
    pub line: DiskStatLine,
    /// The block-latency source's histograms (of every device), read right after.
    pub blk: Option<BlkSample>,
}

impl DeviceWatch {
    /// The whole disk holding `path` (a file or a directory).
    pub fn for_path(root: &Root, path: &Path) -> Result<DeviceWatch> {
        Ok(DeviceWatch {
            root: root.clone(),
            dev: device::disk_for_path(root, path)?,
            blk: None,
        })
    }

    /// The device behind the block-device node `node` (itself, not its disk).
    pub fn for_node(root: &Root, node: &Path) -> Result<DeviceWatch> {
        Ok(DeviceWatch {
            root: root.clone(),
            dev: device::blockdev_for_node(root, node)?,
            blk: None,
        })
    }

    /// Also time the device's requests in the block layer (the BPF source) unless `off`;
    /// one line says why not when it can't be had. dm, md and zram have no requests to
    /// time: nothing is attached for them.
    pub fn with_block_latency(mut self, off: bool) -> DeviceWatch {
        use crate::sys::device::DevKind;
        let kind = device::kind(&self.root, &self.dev);
        if matches!(kind, Some(DevKind::Dm | DevKind::Md | DevKind::Zram)) {
            return self;
        }
        match crate::sys::bpf::attach(&self.root, off) {
            Ok(b) => self.blk = b.map(Arc::new),
            Err(line) => crate::error::warn(line),
        }
        self
    }

    /// Is the block-latency source attached?
    pub fn has_block_latency(&self) -> bool {
        self.blk.is_some()
    }

    /// The block layer's percentiles between two marks (None without the source, or when a
    /// counter went backwards).
    pub fn block_latency(&self, a: &Mark, b: &Mark) -> Option<Measured> {
        let d = self.delta(a, b)?;
        let counts = blklat::diskstats_counts(&DiskRates::from_delta(&d));
        let l = blklat::device_latency(
            None,
            a.blk.as_ref()?,
            b.blk.as_ref()?,
            self.dev.major,
            self.dev.minor,
            counts,
        )?;
        l.measured().cloned()
    }

    /// Read the device's counters now; None when it is not in diskstats (tmpfs, overlay,
    /// network filesystems) or the file can't be read.
    pub fn mark(&self) -> Option<Mark> {
        let s = DiskSample::take(&self.root).ok()?;
        let line = s.find(self.dev.major, self.dev.minor)?.clone();
        let blk = self.blk.as_ref().and_then(|b| {
            b.read()
                .ok()
                .map(|(devs, dropped)| BlkSample { dropped, devs })
        });
        Some(Mark {
            mono_ns: s.mono_ns,
            line,
            blk,
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
            blk: None,
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
