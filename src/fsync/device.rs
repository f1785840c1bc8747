//! The device under the test directory and its flush counters around each measured run, through
//! monitor::watch (the same window sweep uses), never a diskstats parser of its own.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, load/.

use super::report::{BlockFlushes, FlushStats};
use crate::monitor::watch::{DeviceWatch, Mark};
use crate::monitor::DiskRates;
use crate::sys::{self, Root};
use std::path::Path;

/// What sysfs says about the disk holding the test directory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DiskFacts {
    pub name: String,
    pub major: u32,
    pub minor: u32,
    pub model: Option<String>,
    pub write_cache: Option<String>,
    pub fua: Option<bool>,
    pub rotational: Option<bool>,
    pub logical_block_size: Option<u32>,
}

/// Finds the device once, then reads its counters before and after each run.
pub struct Watch {
    watch: Option<DeviceWatch>,
    pub device: Option<DiskFacts>,
    /// Why the device or its counters are unknown, in words.
    pub note: Option<String>,
    /// Why the block-latency source (the device's own flush latency) is absent; None when
    /// it is attached.
    pub block_latency_absent: Option<String>,
}

impl Watch {
    /// `no_bpf`: do not attach the block-latency source.
    pub fn probe(root: &Root, dir: &Path, no_bpf: bool) -> Watch {
        let w = match DeviceWatch::for_path(root, dir) {
            Ok(w) => w,
            Err(e) => {
                return Watch {
                    watch: None,
                    device: None,
                    note: Some(format!(
                        "no block device found under {} ({e}): the device section and flush counters are unknown",
                        dir.display()
                    )),
                    block_latency_absent: Some("no block device to time".into()),
                }
            }
        };
        let q = sys::device::queue_info(root, &w.dev);
        let device = DiskFacts {
            name: w.dev.name.clone(),
            major: w.dev.major,
            minor: w.dev.minor,
            model: q.model,
            write_cache: q.write_cache,
            fua: q.fua,
            rotational: q.rotational,
            logical_block_size: q.logical_block_size,
        };
        let note = match w.mark() {
            None => Some(format!(
                "{} is not in {}/diskstats: its flush counters are unknown",
                w.dev.name,
                root.proc.display()
            )),
            Some(m) if m.line.flushes.is_none() => {
                Some("this kernel's diskstats has no flush counters (Linux 5.5+ has them)".into())
            }
            Some(_) => None,
        };
        let live = root.proc == Root::default().proc;
        let w = if live && !no_bpf {
            w.with_block_latency(false)
        } else {
            w
        };
        let block_latency_absent = if no_bpf {
            Some("turned off by --no-bpf".to_string())
        } else if !live {
            Some("the counters are not this kernel's (--proc-root)".into())
        } else if !w.has_block_latency() {
            Some("the block-latency BPF program is not attached (it needs root and a kernel with BTF; dm, md and zram have no requests to time)".into())
        } else {
            None
        };
        Watch {
            watch: Some(w),
            device: Some(device),
            note,
            block_latency_absent,
        }
    }
}

/// Counters around one run: take `window` before, `finish` after.
pub fn window(watch: &Watch) -> Option<Mark> {
    watch.watch.as_ref()?.mark()
}

pub fn finish(watch: &Watch, start: Option<Mark>) -> Option<FlushStats> {
    let w = watch.watch.as_ref()?;
    let a = start?;
    let b = w.mark()?;
    let d = w.delta(&a, &b)?;
    let r = DiskRates::from_delta(&d);
    let block_layer = w.block_latency(&a, &b).map(|m| BlockFlushes {
        flushes: m.flush.count,
        p50_ms: m.flush.p50_ms,
        p99_ms: m.flush.p99_ms,
    });
    Some(FlushStats {
        flushes: d.flushes?,
        f_s: r.f_s?,
        f_await_ms: r.f_await,
        flush_concurrency: r.flush_concurrency,
        interval_s: r.interval_s,
        block_layer,
    })
}
