//! The device under the test directory and its flush counters around each measured run,
//! through the sys/monitor core (never a diskstats parser of its own). Must not import ui/.

use super::report::FlushStats;
use std::path::Path;

/// What sysfs says about the disk holding the test directory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceInfo {
    pub name: String,
    pub major: u32,
    pub minor: u32,
    pub model: Option<String>,
    pub write_cache: Option<String>,
    pub fua: Option<bool>,
    pub rotational: Option<bool>,
    pub logical_block_size: Option<u32>,
}

/// One reading of the device's counters.
#[derive(Debug, Clone)]
pub struct Mark {
    _private: (),
}

/// Finds the device once, then reads its counters before and after each run.
pub struct Watch {
    pub device: Option<DeviceInfo>,
    /// Why the device or its counters are unknown, in words.
    pub note: Option<String>,
}

impl Watch {
    pub fn probe(_proc_root: &Path, _sys_root: &Path, _dir: &Path) -> Watch {
        Watch {
            device: None,
            note: Some("device lookup is not available in this build".into()),
        }
    }

    pub fn mark(&self) -> Option<Mark> {
        None
    }

    pub fn between(&self, _a: &Mark, _b: &Mark) -> Option<FlushStats> {
        None
    }
}

/// Counters around one run: take `start` before, `finish` after.
pub fn window(watch: &Watch) -> Option<Mark> {
    watch.mark()
}

pub fn finish(watch: &Watch, start: Option<Mark>) -> Option<FlushStats> {
    let a = start?;
    let b = watch.mark()?;
    watch.between(&a, &b)
}
