//! The device under the test directory and its flush counters around each measured run,
//! through the sys/monitor core (sys::device, monitor::DiskSample/DiskDelta/DiskRates), never
//! a diskstats parser of its own. Must not import ui/.

use super::report::FlushStats;
use crate::monitor::{DiskDelta, DiskRates, DiskSample};
use crate::sys::{self, Root};
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

/// One reading of the device's counters (its diskstats line and the monotonic clock).
#[derive(Debug, Clone)]
pub struct Mark {
    mono_ns: u64,
    line: sys::diskstats::DiskStatLine,
}

/// Finds the device once, then reads its counters before and after each run.
pub struct Watch {
    root: Root,
    pub device: Option<DeviceInfo>,
    /// Why the device or its counters are unknown, in words.
    pub note: Option<String>,
}

impl Watch {
    pub fn probe(proc_root: &Path, sys_root: &Path, dir: &Path) -> Watch {
        let root = Root {
            proc: proc_root.to_path_buf(),
            sys: sys_root.to_path_buf(),
        };
        let dev = match sys::device::disk_for_path(&root, dir) {
            Ok(d) => d,
            Err(e) => {
                return Watch {
                    root,
                    device: None,
                    note: Some(format!(
                        "no block device found under {} ({e}): the device section and flush counters are unknown",
                        dir.display()
                    )),
                }
            }
        };
        let q = sys::device::queue_info(&root, &dev);
        let device = DeviceInfo {
            name: dev.name.clone(),
            major: dev.major,
            minor: dev.minor,
            model: q.model,
            write_cache: q.write_cache,
            fua: q.fua,
            rotational: q.rotational,
            logical_block_size: q.logical_block_size,
        };
        let mut w = Watch {
            root,
            device: Some(device),
            note: None,
        };
        match w.mark() {
            None => {
                w.note = Some(format!(
                    "{} is not in {}/diskstats: its flush counters are unknown",
                    dev.name,
                    w.root.proc.display()
                ))
            }
            Some(m) if m.line.flushes.is_none() => {
                w.note = Some(
                    "this kernel's diskstats has no flush counters (Linux 5.5+ has them)".into(),
                )
            }
            Some(_) => {}
        }
        w
    }

    pub fn mark(&self) -> Option<Mark> {
        let d = self.device.as_ref()?;
        let s = DiskSample::take(&self.root).ok()?;
        let line = s.find(d.major, d.minor)?.clone();
        Some(Mark {
            mono_ns: s.mono_ns,
            line,
        })
    }

    pub fn between(&self, a: &Mark, b: &Mark) -> Option<FlushStats> {
        let dt_ns = b.mono_ns.checked_sub(a.mono_ns)?;
        let d = DiskDelta::between(&a.line, &b.line, dt_ns)?;
        let flushes = d.flushes?;
        let r = DiskRates::from_delta(&d);
        Some(FlushStats {
            flushes,
            f_s: r.f_s?,
            f_await_ms: r.f_await,
            flush_concurrency: r.flush_concurrency,
            interval_s: r.interval_s,
        })
    }
}

/// Counters around one run: take `window` before, `finish` after.
pub fn window(watch: &Watch) -> Option<Mark> {
    watch.mark()
}

pub fn finish(watch: &Watch, start: Option<Mark>) -> Option<FlushStats> {
    let a = start?;
    let b = watch.mark()?;
    watch.between(&a, &b)
}
