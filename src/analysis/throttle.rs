//! A hard throughput limit: IOPS flat within the noise from some level on while latency grows in
//! proportion to concurrency, and where the waiting requests sit (the kernel's aqu-sz against the
//! offered concurrency: above the block layer is a throttle on this process, in the device's queue
//! is the device or a cap below it), named after the kernel limit that matches it. Pure.
//! Imports only: analysis/.

use super::evidence::{IoLimit, LimitKind};
use super::text::fmt_iops;
use super::{Context, LevelPoint, AQU_SZ_MIN_SHARE, LINEAR_ELASTICITY};
use serde::{Deserialize, Serialize};

/// Levels count as flat when their sustained IOPS ([`sustained`]) lie within this fraction of
/// each other, or within the measured noise (twice the CV of the windows they come from) when
/// that is wider, so that noise widens the band instead of crossing a fixed edge (issue 25). A
/// token bucket paces to well under 1 %; 3 % leaves room for a real device's jitter.
pub const FLAT: f64 = 0.03;

/// Windows agreeing within this CV count as equally steady when the plateau's levels are
/// weighted (a healthy device's 1–9 %, issue 25): below it, a smaller CV is luck, not
/// evidence of a better level.
pub const STEADY_CV: f64 = 0.05;

/// A kernel limit matches the plateau when the measured rate in its direction lies within
/// this fraction of it (a throttle's rate over a level is exact to a few percent; the burst
/// it allows at the start lifts it a little).
pub const LIMIT_MATCH: f64 = 0.10;

/// The share of iosat's requests the kernel must have completed on the device for its queue
/// to speak about them (the sweep's own Little's-law check uses the same 80 %).
pub const KERNEL_SAW_SHARE: f64 = 0.8;

/// Where the requests held by the limit wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitPlace {
    /// The kernel's queue stays short while many requests are outstanding: they wait above
    /// the block layer (cgroup io.max / blkio throttle).
    AboveBlockLayer,
    /// The device's own queue holds them: the device, or a cap below the block layer (a cloud
    /// volume, a controller).
    DeviceQueue,
    /// No kernel view of the device (sim engine, imports without iostat).
    Unknown,
}

/// The plateau and what it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThroughputLimit {
    /// First and last level of the plateau.
    pub from_concurrency: u32,
    pub to_concurrency: u32,
    /// Mean sustained IOPS and bytes/s over the plateau ([`sustained`]).
    pub iops: f64,
    pub bytes_per_s: f64,
    /// How far apart the plateau's levels are, as a fraction.
    pub flat_within: f64,
    pub place: LimitPlace,
    /// The kernel's aqu-sz ÷ the offered concurrency over the plateau (beyond its first level).
    pub kernel_queue_share: Option<f64>,
    /// A level just before the plateau that measured more: the short burst throttles allow.
    pub burst_concurrency: Option<u32>,
    /// The kernel limit on this process that matches the plateau.
    pub io_limit: Option<IoLimit>,
}

/// A level's sustained IOPS and the CV of the windows it comes from: the second half of its
/// sub-windows when the level shows a burst ([`burst_of`]: a token bucket with burst credit
/// let its start run faster, which must neither lift the plateau nor widen its band), else the
/// whole level (eight windows estimate the noise better than four).
pub fn sustained(l: &LevelPoint) -> (f64, f64) {
    let cv = l.spread.as_ref().map_or(0.0, |s| s.iops_cv);
    match (burst_of(l), l.spread.as_ref().and_then(|s| s.iops_late_cv)) {
        (Some((_, late)), Some(late_cv)) => (late, late_cv),
        _ => (l.iops, cv),
    }
}

/// A level's first sub-window must run at least this much faster than its second half to
/// count as a burst...
///
/// Why 25 %: a healthy device's sub-windows scatter with a CV of 1–9 % (issue 25), and the
/// second half's own CV, from four windows, can come out well below the truth; a device whose
/// speed wanders ±8 % per window showed a first window 12 % above its second half. A burst
/// runs at the device's own rate against the cap's, commonly twice the cap or more (issue 25's
/// known device: 1875 IOPS of its own against a cap of 1000).
pub const BURST_MIN_GAIN: f64 = 0.25;

/// ...and faster by more than this many CVs of the second half's windows, so that a noisy
/// level needs a larger step still.
pub const BURST_NOISE_CVS: f64 = 4.0;

/// A level's first sub-window against its second half: `(first, late)` IOPS when the first
/// ran clearly faster ([`BURST_MIN_GAIN`], [`BURST_NOISE_CVS`]).
pub fn burst_of(l: &LevelPoint) -> Option<(f64, f64)> {
    let s = l.spread.as_ref()?;
    let (first, late, cv) = (s.iops_first?, s.iops_late?, s.iops_late_cv?);
    (late > 0.0 && first > late * (1.0 + BURST_MIN_GAIN.max(BURST_NOISE_CVS * cv)))
        .then_some((first, late))
}

/// The plateau over the top levels, if there is one (at least two levels, latency growing in
/// proportion to concurrency across it, and nothing measured above it except one burst level
/// just before it).
pub fn find(lv: &[LevelPoint], ctx: &Context) -> Option<ThroughputLimit> {
    if lv.len() < 2 {
        return None;
    }
    let mut lo = f64::INFINITY;
    let mut hi: f64 = 0.0;
    let mut from = lv.len();
    let mut tol = FLAT;
    for i in (0..lv.len()).rev() {
        let (x, cv) = sustained(&lv[i]);
        let t = tol.max(2.0 * cv);
        let (nlo, nhi) = (lo.min(x), hi.max(x));
        if nlo <= 0.0 || nhi / nlo - 1.0 > t {
            break;
        }
        (lo, hi, tol, from) = (nlo, nhi, t, i);
    }
    let top = lv.len() - 1;
    if top - from < 1 {
        return None;
    }
    let (a, b) = (&lv[from], &lv[top]);
    let e = (b.latency_ns.mean / a.latency_ns.mean).ln()
        / (f64::from(b.concurrency) / f64::from(a.concurrency)).ln();
    if e.is_nan() || e < LINEAR_ELASTICITY {
        return None;
    }
    // Nothing below the plateau measured more, but the level just before it (a burst).
    let mut burst = None;
    for (i, l) in lv[..from].iter().enumerate() {
        if l.iops > hi * (1.0 + tol) {
            if i + 1 == from {
                burst = Some(l.concurrency);
            } else {
                return None;
            }
        }
    }
    let plateau = &lv[from..];
    // The plateau's figure: its levels' sustained IOPS weighted by how steady each was
    // (inverse variance, CV floored at [`STEADY_CV`]), so that a level the machine disturbed
    // (its windows scattering, its IOPS low) does not drag the figure off the device's.
    let weight = |l: &LevelPoint| 1.0 / sustained(l).1.max(STEADY_CV).powi(2);
    let total: f64 = plateau.iter().map(weight).sum();
    let iops = plateau
        .iter()
        .map(|l| weight(l) * sustained(l).0)
        .sum::<f64>()
        / total;
    // Bytes per request as measured over each whole level, at the sustained rate.
    let bytes_per_s = plateau
        .iter()
        .map(|l| weight(l) * sustained(l).0 * l.bytes_per_s / l.iops.max(f64::MIN_POSITIVE))
        .sum::<f64>()
        / total;
    // The plateau's first level offers just enough to reach the limit; the queue shows where
    // the surplus waits on the levels beyond it.
    let shares: Vec<f64> = plateau[1..]
        .iter()
        .filter_map(|l| {
            l.kernel_aqu_sz
                .filter(|q| q.is_finite() && l.concurrency > 0)
                .map(|q| q / f64::from(l.concurrency))
        })
        .collect();
    let kernel_queue_share =
        (!shares.is_empty()).then(|| shares.iter().sum::<f64>() / shares.len() as f64);
    // A short kernel queue says "held above the block layer" only if the kernel saw our
    // requests at all: when it completed far fewer than we did, a cache answered them.
    let kernel_saw_ours = plateau[1..].iter().all(|l| {
        l.kernel_iops
            .map_or(true, |k| k >= KERNEL_SAW_SHARE * l.iops)
    });
    let place = match kernel_queue_share {
        None => LimitPlace::Unknown,
        Some(_) if !kernel_saw_ours => LimitPlace::Unknown,
        Some(s) if s < AQU_SZ_MIN_SHARE => LimitPlace::AboveBlockLayer,
        Some(_) => LimitPlace::DeviceQueue,
    };
    Some(ThroughputLimit {
        from_concurrency: a.concurrency,
        to_concurrency: b.concurrency,
        iops,
        bytes_per_s,
        flat_within: hi / lo - 1.0,
        place,
        kernel_queue_share,
        burst_concurrency: burst,
        io_limit: matching_limit(ctx, iops, bytes_per_s),
    })
}

/// The kernel limit whose figure the plateau reaches in its direction, the closest if several.
fn matching_limit(ctx: &Context, iops: f64, bytes_per_s: f64) -> Option<IoLimit> {
    ctx.limits
        .iter()
        .filter(|l| l.value > 0.0)
        .map(|l| {
            let (r, w) = ctx.read_share.map_or((1.0, 1.0), |r| (r, 1.0 - r));
            let measured = match l.kind {
                LimitKind::ReadIops => iops * r,
                LimitKind::WriteIops => iops * w,
                LimitKind::ReadBytesPerS => bytes_per_s * r,
                LimitKind::WriteBytesPerS => bytes_per_s * w,
            };
            (l, (measured / l.value - 1.0).abs())
        })
        .filter(|(_, err)| *err <= LIMIT_MATCH)
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(l, _)| l.clone())
}

/// A kernel limit in words: "at most 3000 read IOPS on vda: cgroup /sys/fs/cgroup/…/io.max".
pub fn limit_words(l: &IoLimit, device: Option<&str>) -> String {
    let what = match l.kind {
        LimitKind::ReadIops => format!("{} read IOPS", fmt_iops(l.value)),
        LimitKind::WriteIops => format!("{} write IOPS", fmt_iops(l.value)),
        LimitKind::ReadBytesPerS => format!("{:.1} MB/s of reads", l.value / 1e6),
        LimitKind::WriteBytesPerS => format!("{:.1} MB/s of writes", l.value / 1e6),
    };
    format!(
        "this process may do at most {what} on {}: cgroup {}",
        device.unwrap_or(&l.dev),
        l.source
    )
}

/// The limit in plain words: a kernel limit or a throttle above the block layer.
pub fn sentence(t: &ThroughputLimit, ctx: &Context) -> String {
    let mut s = format!(
        "Throughput is flat at about {} IOPS ({:.1} MB/s) from concurrency {} to {} (within \
         {:.0} %) while latency grows in proportion to concurrency: a hard limit.",
        fmt_iops(t.iops),
        t.bytes_per_s / 1e6,
        t.from_concurrency,
        t.to_concurrency,
        (t.flat_within * 100.0).max(1.0)
    );
    let q = t.kernel_queue_share.unwrap_or(0.0);
    match t.place {
        LimitPlace::AboveBlockLayer if ctx.limits.is_empty() => s.push_str(&format!(
            " The kernel's queue stays short (aqu-sz {:.0} % of the requests in flight): they \
             wait above the block layer, in this machine (a CPU, the load generator), and no \
             throttle is set on this process (its cgroup has no io.max or blkio limit): the \
             limit is the machine's, not the device's.",
            q * 100.0
        )),
        LimitPlace::AboveBlockLayer => s.push_str(&format!(
            " The kernel's queue stays short (aqu-sz {:.0} % of the requests in flight): they \
             wait above the block layer, held by a throttle on this process (cgroup io.max or \
             blkio), not by the device.",
            q * 100.0
        )),
        LimitPlace::DeviceQueue => s.push_str(&format!(
            " The device's own queue holds the requests (aqu-sz {:.0} % of those in flight): \
             the limit is the device's or below it (a cloud volume's cap, a controller).",
            q * 100.0
        )),
        LimitPlace::Unknown if ctx.simulated => {
            s.push_str(" The device is simulated: this is its own limit (or its configured cap).")
        }
        LimitPlace::Unknown => {}
    }
    if let Some(b) = t.burst_concurrency {
        s.push_str(&format!(
            " Concurrency {b} measured more just before: the short burst such limits allow."
        ));
    }
    if let Some(l) = &t.io_limit {
        s.push_str(&format!(
            " It matches the kernel's limit: {}.",
            limit_words(l, ctx.device)
        ));
    }
    s
}
