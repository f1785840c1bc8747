//! Whether a throughput plateau is a cap placed on the device, and on what evidence (issue 25).
//! A closed-loop sweep at one block size cannot tell a device's own limit from a cap placed
//! below the block layer: both hold throughput flat while latency grows in proportion to
//! concurrency, and a round figure is no evidence at all (a device of 4 units of 8 ms does
//! exactly 500 IOPS). A cap is claimed only on positive evidence:
//! - a limit the kernel applies to this process that the plateau matches (cgroup io.max,
//!   blkio throttle), or the requests measurably held above the block layer;
//! - a burst followed by the plateau: a level's first sub-window clearly faster than its
//!   second half, which settles on the plateau (a token bucket with burst credit);
//! - a second block size at which the plateau keeps its IOPS (an IOPS cap) or its bytes/s (a
//!   bandwidth cap), where a device's own limit would move with the request size.
//!
//! Pure.
//! Imports only: analysis/.

use super::throttle::{self, LimitPlace, ThroughputLimit};
use super::{Context, LevelPoint};
use crate::analysis::evidence::LimitKind;
use serde::{Deserialize, Serialize};

/// The second half of a burst level settles on the plateau when it lies within this fraction
/// of it (or within twice its own windows' CV, when that is wider).
pub const BURST_SETTLES: f64 = 0.05;

/// At two block sizes, a plateau keeps its IOPS (or bytes/s) when they agree within this
/// fraction: a cap paces to within a few percent, while a device's own limit moves with the
/// request size by far more between sizes at least [`BLOCK_SIZE_MIN_RATIO`] apart.
pub const BLOCK_SIZE_MATCH: f64 = 0.05;

/// Two runs count as different block sizes from this ratio of their bytes per request.
pub const BLOCK_SIZE_MIN_RATIO: f64 = 1.5;

/// What shows that a plateau is a cap rather than the device's own limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapEvidence {
    /// A limit the kernel applies to this process matches the plateau.
    KernelLimit,
    /// The kernel's queue stays short while many requests are outstanding: they are held
    /// above the block layer (a throttle whose limit was not readable).
    HeldAboveBlockLayer,
    /// A level ran above the plateau in its first sub-window, then settled on it.
    Burst,
    /// A second block size kept the plateau's IOPS or bytes/s.
    BlockSizes,
}

/// A burst seen in one level's sub-windows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BurstSeen {
    pub concurrency: u32,
    /// IOPS of the level's first sub-window(s), and of their second half.
    pub first_iops: f64,
    pub late_iops: f64,
}

/// A cap the evidence shows, with its figure and where the requests wait for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapFinding {
    pub evidence: CapEvidence,
    /// The cap's figure in IOPS, for a cap on requests (or one whose kind one block size
    /// can't tell: a burst).
    pub iops: Option<f64>,
    /// The cap's figure in bytes/s, for a cap on bandwidth.
    pub bytes_per_s: Option<f64>,
    /// First level of the plateau.
    pub from_concurrency: u32,
    /// Sustained IOPS and bytes/s over the plateau (a burst level's second half).
    pub plateau_iops: f64,
    pub plateau_bytes_per_s: f64,
    /// Below the block layer (the device's queue holds the requests), above it (the kernel's
    /// queue is short), or unknown (no kernel view).
    pub place: LimitPlace,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<BurstSeen>,
    /// The other block size's plateau (bytes per request, IOPS), for [`CapEvidence::BlockSizes`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other_block_size: Option<(f64, f64)>,
}

impl CapFinding {
    /// A cap placed on the device (shown by a burst or a second block size), rather than a
    /// limit on this process in the kernel.
    pub fn on_device(&self) -> bool {
        matches!(self.evidence, CapEvidence::Burst | CapEvidence::BlockSizes)
    }
}

/// Whether the plateau `t` over `lv` is a cap, and on what evidence; None when nothing tells
/// it from the device's own limit.
pub fn find(lv: &[LevelPoint], t: &ThroughputLimit, ctx: &Context) -> Option<CapFinding> {
    let from = lv
        .iter()
        .position(|l| l.concurrency == t.from_concurrency)?;
    let plateau = &lv[from..];
    let n = plateau.len() as f64;
    let plateau_iops = plateau
        .iter()
        .map(|l| throttle::sustained(l).0)
        .sum::<f64>()
        / n;
    let bytes_per_io = if t.iops > 0.0 {
        t.bytes_per_s / t.iops
    } else {
        0.0
    };
    let base = CapFinding {
        evidence: CapEvidence::KernelLimit,
        iops: None,
        bytes_per_s: None,
        from_concurrency: t.from_concurrency,
        plateau_iops,
        plateau_bytes_per_s: plateau_iops * bytes_per_io,
        place: t.place,
        burst: None,
        other_block_size: None,
    };
    if let Some(l) = &t.io_limit {
        let bw = matches!(l.kind, LimitKind::ReadBytesPerS | LimitKind::WriteBytesPerS);
        return Some(CapFinding {
            iops: (!bw).then_some(l.value),
            bytes_per_s: bw.then_some(l.value),
            ..base
        });
    }
    // Held above the block layer is a throttle's mark only when a throttle is set: without
    // one, the short kernel queue is the machine's time (a CPU wait), no cap.
    if t.place == LimitPlace::AboveBlockLayer && !ctx.limits.is_empty() {
        return Some(CapFinding {
            evidence: CapEvidence::HeldAboveBlockLayer,
            iops: Some(t.iops),
            ..base
        });
    }
    // A burst: a level where the plateau begins (the one just before it, its first, or the
    // next) ran faster in its first sub-window and settled on the plateau in its second half.
    // A bucket with burst credit fills while the load stays under the cap and empties where
    // the load first exceeds it: a faster first window higher up is noise, not a burst.
    let settles = |l: &LevelPoint, late: f64| {
        let cv = l
            .spread
            .as_ref()
            .and_then(|s| s.iops_late_cv)
            .unwrap_or(0.0);
        plateau_iops > 0.0 && (late / plateau_iops - 1.0).abs() <= BURST_SETTLES.max(2.0 * cv)
    };
    let near = &lv[from.saturating_sub(1)..(from + 2).min(lv.len())];
    let burst = near.iter().find_map(|l| {
        throttle::burst_of(l)
            .filter(|&(_, late)| settles(l, late))
            .map(|(first, late)| BurstSeen {
                concurrency: l.concurrency,
                first_iops: first,
                late_iops: late,
            })
    });
    if let Some(b) = burst {
        return Some(CapFinding {
            evidence: CapEvidence::Burst,
            iops: Some(plateau_iops),
            burst: Some(b),
            ..base
        });
    }
    let other = ctx.other_block_size?;
    let o = throttle::find(other, &Context::default())?;
    let (bs_a, bs_b) = (
        bytes_per_io,
        if o.iops > 0.0 {
            o.bytes_per_s / o.iops
        } else {
            0.0
        },
    );
    if bs_a <= 0.0 || bs_b <= 0.0 || bs_a.max(bs_b) / bs_a.min(bs_b) < BLOCK_SIZE_MIN_RATIO {
        return None;
    }
    let close = |a: f64, b: f64| b > 0.0 && (a / b - 1.0).abs() <= BLOCK_SIZE_MATCH;
    let found = CapFinding {
        evidence: CapEvidence::BlockSizes,
        other_block_size: Some((bs_b, o.iops)),
        ..base
    };
    if close(plateau_iops, o.iops) {
        Some(CapFinding {
            iops: Some(plateau_iops),
            ..found
        })
    } else if close(found.plateau_bytes_per_s, o.bytes_per_s) {
        Some(CapFinding {
            bytes_per_s: Some(found.plateau_bytes_per_s),
            ..found
        })
    } else {
        None
    }
}
