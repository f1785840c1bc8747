//! Live per-request latency from the block layer (the optional BPF source, sys::bpf): the
//! histogram's bucket math (the layout is the C program's, constants in sys::bpf), cumulative
//! samples → interval deltas, quantiles, and per device and interval the percentiles per direction
//! with their coverage (completions the histogram saw ÷ diskstats' completions). diskstats stays
//! the authority for counts and means; the histogram gives the percentiles. Reads and writes also
//! per request-size class (the sizes read in the kernel, classed by model::SizeClass's edges):
//! each class's count, mean size, mean and percentiles, from its coarser histogram. Reads and
//! writes also split into queue and device time (issue 40), where the kernel stamps the issue.
//! Pure.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, load/, fsync/, import/.
//!
//! Resolution: below 1.024 µs the buckets are 128 ns wide; above, each power of two is split
//! into 8 equal sub-buckets, so a bucket is at most 1/8 of its lower bound wide. A quantile
//! interpolated linearly inside its bucket is within 12.5 % of the true value in the worst
//! case (all the bucket's requests at one edge), typically far less. Latencies of 2^29 units
//! (68.7 s) and more share the last bucket.

use crate::analysis::learned::SizeClass;
use crate::sys::bpf::{
    DevHists, RawClass, RawHist, RawSplit, CLASS_OPS, CLASS_SHIFT, MAX_LOG2, NBUCKETS, NCBUCKETS,
    NCLASSES, NOPS, SUB_BITS, UNIT_SHIFT,
};
use crate::sys::device::DevKind;

const SUB: u64 = 1 << SUB_BITS;

/// Short names of the operations in the C program's order (record lines, column prefixes).
pub const OP_CODES: [&str; NOPS] = ["r", "w", "d", "f"];
/// Short names of the size classes in the C program's order (record lines).
pub const CLASS_CODES: [&str; NCLASSES] = ["s", "m", "l"];
/// The size classes in the C program's order.
pub const CLASSES: [SizeClass; NCLASSES] = [SizeClass::Small, SizeClass::Medium, SizeClass::Large];

/// Coverage below this share of diskstats' completions is warned about.
pub const MIN_COVERAGE: f64 = 0.99;
/// The warning needs this many completions counted over the run: the histogram and
/// diskstats are read a moment apart, so an interval can trade the completions of that
/// moment with its neighbour (a 0.2 s interval under load showed 93 %, the next one more
/// than 100 %); over the run those cancel, and 1 % of 1000 is more than a moment holds.
pub const MIN_COMPLETIONS_TO_WARN: u64 = 1000;

/// The bucket of a latency in ns (the C program's `bucket_of`).
pub fn bucket_of(ns: u64) -> usize {
    let u = ns >> UNIT_SHIFT;
    if u < SUB {
        return u as usize;
    }
    if u >> MAX_LOG2 != 0 {
        return NBUCKETS - 1;
    }
    let b = 63 - u.leading_zeros();
    ((b - SUB_BITS + 1) as usize) * SUB as usize + ((u >> (b - SUB_BITS)) & (SUB - 1)) as usize
}

/// The bounds of bucket `i` in ns: [lo, hi).
pub fn bucket_bounds_ns(i: usize) -> (u64, u64) {
    let i = i as u64;
    let (lo, hi) = if i < SUB {
        (i, i + 1)
    } else {
        let g = i / SUB;
        let s = i % SUB;
        ((SUB + s) << (g - 1), (SUB + s + 1) << (g - 1))
    };
    (lo << UNIT_SHIFT, hi << UNIT_SHIFT)
}

/// The bounds of class-histogram bucket `i` in ns: two of the full histogram's buckets.
pub fn class_bucket_bounds_ns(i: usize) -> (u64, u64) {
    let k = 1 << CLASS_SHIFT;
    (bucket_bounds_ns(i * k).0, bucket_bounds_ns(i * k + k - 1).1)
}

/// The `q` quantile (0 < q ≤ 1) in ns of `counts` whose bucket `i` spans `bounds(i)`,
/// interpolated linearly inside its bucket.
fn quantile_of(counts: &[u64], q: f64, bounds: impl Fn(usize) -> (u64, u64)) -> Option<f64> {
    let n: u64 = counts.iter().sum();
    if n == 0 {
        return None;
    }
    let rank = q.clamp(0.0, 1.0) * n as f64;
    let mut below = 0u64;
    for (i, &c) in counts.iter().enumerate() {
        if c == 0 {
            continue;
        }
        if (below + c) as f64 >= rank {
            let (lo, hi) = bounds(i);
            let frac = ((rank - below as f64) / c as f64).clamp(0.0, 1.0);
            return Some(lo as f64 + frac * (hi - lo) as f64);
        }
        below += c;
    }
    Some(bounds(counts.len() - 1).0 as f64)
}

/// A cumulative histogram at power-of-two bounds, for Prometheus: `(le in seconds,
/// requests at or below it)` from 1.024 µs up to 2^29 units (68.7 s), the count and sum
/// being the caller's (+Inf = all). Eight times coarser than the buckets, so a scrape
/// holds 27 series per device and op instead of 216; a bound is exact to the 128 ns unit.
pub fn power_of_two_buckets(h: &RawHist) -> Vec<(f64, u64)> {
    let mut out = Vec::with_capacity(NBUCKETS / SUB as usize);
    let mut below = 0u64;
    for (i, &c) in h.buckets.iter().enumerate() {
        if i > 0 && i % SUB as usize == 0 {
            out.push((bucket_bounds_ns(i).0 as f64 / 1e9, below));
        }
        below = below.wrapping_add(c);
    }
    out.push((
        bucket_bounds_ns(NBUCKETS - 1).1 as f64 / 1e9,
        below - h.buckets[NBUCKETS - 1],
    ));
    out
}

/// One sample of the source: the cumulative histograms of every device it has seen, and
/// the completions it dropped for want of a device slot.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct BlkSample {
    pub dropped: u64,
    pub devs: Vec<DevHists>,
}

impl BlkSample {
    pub fn find(&self, major: u32, minor: u32) -> Option<&DevHists> {
        self.devs
            .iter()
            .find(|d| d.major == major && d.minor == minor)
    }
}

/// One interval's histogram of one device and operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hist {
    pub counts: Vec<u64>,
    pub sum_ns: u64,
}

impl Hist {
    /// `cur − prev`; None when any counter went backwards (never saturating, docs/design.md §3.1).
    pub fn between(prev: Option<&RawHist>, cur: Option<&RawHist>) -> Option<Hist> {
        let zero = RawHist {
            buckets: vec![0; NBUCKETS],
            sum_ns: 0,
        };
        let prev = prev.unwrap_or(&zero);
        let cur = cur.unwrap_or(&zero);
        let counts = cur
            .buckets
            .iter()
            .zip(&prev.buckets)
            .map(|(c, p)| c.checked_sub(*p))
            .collect::<Option<Vec<u64>>>()?;
        Some(Hist {
            counts,
            sum_ns: cur.sum_ns.checked_sub(prev.sum_ns)?,
        })
    }

    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The `q` quantile (0 < q ≤ 1) in ns, interpolated linearly inside its bucket.
    pub fn quantile_ns(&self, q: f64) -> Option<f64> {
        quantile_of(&self.counts, q, bucket_bounds_ns)
    }
}

/// One direction's latency in one interval (ms; None without completions).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct OpLatency {
    /// Completions the histogram saw.
    pub count: u64,
    /// diskstats' completions in the interval.
    pub diskstats_count: u64,
    /// The histogram's exact mean (the sum ÷ count).
    pub mean_ms: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

impl OpLatency {
    fn of(h: &Hist, diskstats_count: u64) -> OpLatency {
        let count = h.count();
        let ms = |ns: Option<f64>| ns.map(|v| v / 1e6);
        OpLatency {
            count,
            diskstats_count,
            mean_ms: (count > 0).then(|| h.sum_ns as f64 / count as f64 / 1e6),
            p50_ms: ms(h.quantile_ns(0.50)),
            p95_ms: ms(h.quantile_ns(0.95)),
            p99_ms: ms(h.quantile_ns(0.99)),
        }
    }
}

/// One direction's queue and device time in one interval (ms; None without split requests):
/// queue = issued to the driver − allocated (the scheduler, a full tag set, wbt), device =
/// completed − issued, from each request's own stamps. A request the kernel did not stamp at
/// issue (its queue has no blk-stat user: no wbt, io.latency, iocost) is `unsplit`: in the total
/// only. Same bucket resolution as the total (12.5 % at worst for a percentile); the means are
/// exact, and for split requests queue + device is the total exactly.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct OpSplit {
    /// Completions split into queue and device time.
    pub count: u64,
    /// Completions without the kernel's issue stamp.
    pub unsplit: u64,
    pub queue_mean_ms: Option<f64>,
    pub queue_p50_ms: Option<f64>,
    pub queue_p95_ms: Option<f64>,
    pub queue_p99_ms: Option<f64>,
    pub device_mean_ms: Option<f64>,
    pub device_p50_ms: Option<f64>,
    pub device_p95_ms: Option<f64>,
    pub device_p99_ms: Option<f64>,
    /// The queue's share of the split requests' latency (Σ queue ÷ Σ (queue + device)), in %.
    pub queue_share_pct: Option<f64>,
}

impl OpSplit {
    /// `cur − prev` of one op; None when a counter went backwards; Some(None) when the op
    /// completed nothing in the interval.
    fn between(prev: Option<&RawSplit>, cur: Option<&RawSplit>) -> Option<Option<OpSplit>> {
        let q = Hist::between(prev.map(|p| &p.queue), cur.map(|c| &c.queue))?;
        let d = Hist::between(prev.map(|p| &p.device), cur.map(|c| &c.device))?;
        let unsplit = cur
            .map_or(0, |c| c.unsplit)
            .checked_sub(prev.map_or(0, |p| p.unsplit))?;
        Some(OpSplit::of(&q, &d, unsplit))
    }

    /// One interval's queue and device histograms and unsplit count (None: no completion).
    pub fn of(q: &Hist, d: &Hist, unsplit: u64) -> Option<OpSplit> {
        let count = q.count();
        if count == 0 && unsplit == 0 {
            return None;
        }
        let ms = |ns: Option<f64>| ns.map(|v| v / 1e6);
        let mean = |sum: u64| (count > 0).then(|| sum as f64 / count as f64 / 1e6);
        let both = q.sum_ns + d.sum_ns;
        Some(OpSplit {
            count,
            unsplit,
            queue_mean_ms: mean(q.sum_ns),
            queue_p50_ms: ms(q.quantile_ns(0.50)),
            queue_p95_ms: ms(q.quantile_ns(0.95)),
            queue_p99_ms: ms(q.quantile_ns(0.99)),
            device_mean_ms: mean(d.sum_ns),
            device_p50_ms: ms(d.quantile_ns(0.50)),
            device_p95_ms: ms(d.quantile_ns(0.95)),
            device_p99_ms: ms(d.quantile_ns(0.99)),
            queue_share_pct: (count > 0 && both > 0).then(|| q.sum_ns as f64 / both as f64 * 100.0),
        })
    }

    /// The kernel stamped none of the interval's requests at issue: no split to give.
    pub fn unavailable(&self) -> bool {
        self.count == 0 && self.unsplit > 0
    }
}

/// The line that says a device's requests carry no issue stamp (once per device).
pub fn split_unavailable_line(device: &str) -> String {
    format!(
        "queue/device split unavailable on {device}: the kernel does not stamp issue time \
         (no wbt/iolatency on this queue); its latency is shown whole"
    )
}

/// One size class of one direction in one interval (the class histogram's difference).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ClassLatency {
    pub class: Option<SizeClass>,
    /// Completions of the class the source saw (and sized).
    pub count: u64,
    /// The class's mean request size in bytes.
    pub mean_bytes: Option<f64>,
    /// The exact mean (the sum ÷ count); the percentiles from 4 buckets per power of two
    /// (within 25 % at worst, like the learner's own histogram).
    pub mean_ms: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

impl ClassLatency {
    /// `cur − prev` of one class; None when a counter went backwards.
    fn between(class: SizeClass, prev: Option<&RawClass>, cur: Option<&RawClass>) -> Option<Self> {
        let zero = RawClass::default();
        let (prev, cur) = (prev.unwrap_or(&zero), cur.unwrap_or(&zero));
        let mut counts = [0u64; NCBUCKETS];
        for ((d, c), p) in counts.iter_mut().zip(&cur.buckets).zip(&prev.buckets) {
            *d = c.checked_sub(*p)?;
        }
        let sum_ns = cur.sum_ns.checked_sub(prev.sum_ns)?;
        let bytes = cur.bytes.checked_sub(prev.bytes)?;
        let count: u64 = counts.iter().sum();
        let q = |q: f64| quantile_of(&counts, q, class_bucket_bounds_ns).map(|v| v / 1e6);
        Some(ClassLatency {
            class: Some(class),
            count,
            mean_bytes: (count > 0).then(|| bytes as f64 / count as f64),
            mean_ms: (count > 0).then(|| sum_ns as f64 / count as f64 / 1e6),
            p50_ms: q(0.50),
            p95_ms: q(0.95),
            p99_ms: q(0.99),
        })
    }
}

/// One device's block-layer latency in one interval.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Measured {
    pub read: OpLatency,
    pub write: OpLatency,
    pub discard: OpLatency,
    pub flush: OpLatency,
    /// Completions seen ÷ diskstats' completions, in % (None when diskstats counted none).
    pub coverage_pct: Option<f64>,
    /// With a profile: the live read p95 ÷ the profile's baseline (concurrency 1) p95.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p95_vs_baseline_r: Option<f64>,
    /// The same for writes, against the write profile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub p95_vs_baseline_w: Option<f64>,
    /// The 3x-p95 rule (seed 001): some judged direction's p95 above 3x its baseline's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overloaded: Option<bool>,
    /// Reads by size class (small, medium, large), when the source sized any of them (not
    /// in recordings from before it did).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_classes: Option<Box<[ClassLatency; NCLASSES]>>,
    /// The same for writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_classes: Option<Box<[ClassLatency; NCLASSES]>>,
    /// Reads' queue and device time, when any read completed (not in recordings from before
    /// the source split them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_split: Option<OpSplit>,
    /// The same for writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_split: Option<OpSplit>,
}

impl Measured {
    pub fn op(&self, i: usize) -> &OpLatency {
        [&self.read, &self.write, &self.discard, &self.flush][i]
    }

    /// The size classes of reads (`write` false) or writes, when sized.
    pub fn classes(&self, write: bool) -> Option<&[ClassLatency; NCLASSES]> {
        if write {
            self.write_classes.as_deref()
        } else {
            self.read_classes.as_deref()
        }
    }

    /// Judge the interval's p95 against a profile's baseline p95 (ns) per direction: the
    /// ratios and the 3x-p95 rule's verdict (None when neither direction can be judged).
    pub fn judge(&mut self, read_base_p95_ns: Option<f64>, write_base_p95_ns: Option<f64>) {
        let ratio = |p95_ms: Option<f64>, base: Option<f64>| {
            Some(p95_ms? * 1e6 / base.filter(|b| *b > 0.0)?)
        };
        self.p95_vs_baseline_r = ratio(self.read.p95_ms, read_base_p95_ns);
        self.p95_vs_baseline_w = ratio(self.write.p95_ms, write_base_p95_ns);
        let judged = self.p95_vs_baseline_r.is_some() || self.p95_vs_baseline_w.is_some();
        self.overloaded = judged.then(|| self.over_p95_rule().next().is_some());
    }

    /// The directions whose p95 ÷ baseline p95 passes the 3x-p95 rule, with that ratio.
    pub fn over_p95_rule(&self) -> impl Iterator<Item = (&'static str, f64)> {
        [
            ("read", self.p95_vs_baseline_r),
            ("write", self.p95_vs_baseline_w),
        ]
        .into_iter()
        .filter_map(|(dir, r)| {
            r.filter(|r| *r > crate::analysis::OVERLOAD_P95_FACTOR)
                .map(|r| (dir, r))
        })
    }

    /// Reads' (`write` false) or writes' queue and device time.
    pub fn split(&self, write: bool) -> Option<&OpSplit> {
        if write {
            self.write_split.as_ref()
        } else {
            self.read_split.as_ref()
        }
    }

    /// Some direction completed requests and the kernel stamped none of them at issue.
    pub fn split_unavailable(&self) -> bool {
        let dirs = [self.read_split.as_ref(), self.write_split.as_ref()];
        dirs.iter().flatten().any(|s| s.unavailable())
            && !dirs.iter().flatten().any(|s| s.count > 0)
    }

    /// Completions the histogram saw and diskstats counted in the interval.
    pub fn seen_and_counted(&self) -> (u64, u64) {
        (0..NOPS).fold((0, 0), |(s, c), i| {
            (s + self.op(i).count, c + self.op(i).diskstats_count)
        })
    }
}

/// A device's coverage over the run so far (the per-interval figure trades a few completions
/// with its neighbour; the running totals don't), and whether it was warned about.
#[derive(Debug, Clone, Default)]
pub struct RunCoverage {
    seen: u64,
    counted: u64,
    warned: bool,
}

impl RunCoverage {
    /// Add an interval; the warning, once per device, when the source has seen less than
    /// [`MIN_COVERAGE`] of at least [`MIN_COMPLETIONS_TO_WARN`] completions diskstats counted.
    pub fn add(&mut self, m: &Measured, device: &str) -> Option<String> {
        let (s, c) = m.seen_and_counted();
        self.seen += s;
        self.counted += c;
        let pct = self.seen as f64 / self.counted.max(1) as f64 * 100.0;
        let low = self.counted >= MIN_COMPLETIONS_TO_WARN && pct < MIN_COVERAGE * 100.0;
        (low && !std::mem::replace(&mut self.warned, true)).then(|| {
            format!(
                "{device}: the block-latency source saw {pct:.1} % of the {} completions \
                 diskstats counted so far; its percentiles may be skewed (missed completions \
                 tend to be slow ones)",
                self.counted
            )
        })
    }
}

/// A device's block-layer latency in an interval, when the source is attached.
#[derive(Debug, Clone, PartialEq)]
pub enum DevLatency {
    Measured(Box<Measured>),
    /// dm, md, zram: bio-based, no requests to time (the disks beneath them have them).
    NoRequestQueue,
    /// A partition: its requests are timed with its whole disk's.
    SeeDisk,
}

impl DevLatency {
    pub fn measured(&self) -> Option<&Measured> {
        match self {
            DevLatency::Measured(m) => Some(m),
            _ => None,
        }
    }

    /// Why there are no percentiles (`no_request_queue`, `see_disk`), for JSON and CSV.
    pub fn none_reason(&self) -> Option<&'static str> {
        match self {
            DevLatency::Measured(_) => None,
            DevLatency::NoRequestQueue => Some("no_request_queue"),
            DevLatency::SeeDisk => Some("see_disk"),
        }
    }
}

/// diskstats' completions per operation in an interval, from its rates (counts ÷ interval).
pub fn diskstats_counts(r: &super::DiskRates) -> [u64; NOPS] {
    let n = |per_s: Option<f64>| per_s.map_or(0, |v| (v * r.interval_s).round() as u64);
    [n(Some(r.r_s)), n(Some(r.w_s)), n(r.d_s), n(r.f_s)]
}

/// A device's latency between two samples of the source. None when a counter went
/// backwards. A device missing from a sample has completed nothing since the attach.
pub fn device_latency(
    kind: Option<DevKind>,
    prev: &BlkSample,
    cur: &BlkSample,
    major: u32,
    minor: u32,
    diskstats: [u64; NOPS],
) -> Option<DevLatency> {
    match kind {
        Some(DevKind::Dm | DevKind::Md | DevKind::Zram) => return Some(DevLatency::NoRequestQueue),
        Some(DevKind::Partition) => return Some(DevLatency::SeeDisk),
        _ => {}
    }
    let (p, c) = (prev.find(major, minor), cur.find(major, minor));
    let mut ops: Vec<OpLatency> = Vec::with_capacity(NOPS);
    for (i, &ds) in diskstats.iter().enumerate() {
        let h = Hist::between(p.map(|d| &d.ops[i]), c.map(|d| &d.ops[i]))?;
        ops.push(OpLatency::of(&h, ds));
    }
    let seen: u64 = ops.iter().map(|o| o.count).sum();
    let total: u64 = diskstats.iter().sum();
    let mut classes: [Option<Box<[ClassLatency; NCLASSES]>>; CLASS_OPS] = [None, None];
    for (op, out) in classes.iter_mut().enumerate() {
        let mut row: [ClassLatency; NCLASSES] = Default::default();
        for (i, cl) in row.iter_mut().enumerate() {
            let (pr, cu) = (p.map(|d| &d.classes[op][i]), c.map(|d| &d.classes[op][i]));
            *cl = ClassLatency::between(CLASSES[i], pr, cu)?;
        }
        if row.iter().any(|c| c.count > 0) {
            *out = Some(Box::new(row));
        }
    }
    let [read_classes, write_classes] = classes;
    let split = |op: usize| OpSplit::between(p.map(|d| &d.split[op]), c.map(|d| &d.split[op]));
    let (read_split, write_split) = (split(0)?, split(1)?);
    let mut it = ops.into_iter();
    let mut next = || it.next().unwrap_or_default();
    Some(DevLatency::Measured(Box::new(Measured {
        read: next(),
        write: next(),
        discard: next(),
        flush: next(),
        coverage_pct: (total > 0).then(|| seen as f64 / total as f64 * 100.0),
        read_classes,
        write_classes,
        read_split,
        write_split,
        ..Measured::default()
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_hold_their_values() {
        let mut hi_before = 0;
        for i in 0..NBUCKETS {
            let (lo, hi) = bucket_bounds_ns(i);
            assert_eq!(lo, hi_before, "bucket {i}");
            assert!(hi > lo);
            assert_eq!(bucket_of(lo), i);
            assert_eq!(bucket_of(hi - 1), i);
            // At most 1/8 of the lower bound wide above the linear range.
            if i >= SUB as usize {
                assert!((hi - lo) * 8 <= lo, "bucket {i}: {lo}..{hi}");
            }
            hi_before = hi;
        }
        assert_eq!(bucket_of(u64::MAX), NBUCKETS - 1);
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(127), 0);
        assert_eq!(bucket_of(128), 1);
        // 1 ms = 7812.5 units: 2^12 .. 2^13, sub-bucket 7 (7680..8192).
        assert_eq!(bucket_bounds_ns(bucket_of(1_000_000)), (983_040, 1_048_576));
        // Tens of seconds are still resolved: 30 s is not in the last bucket.
        assert!(bucket_of(30_000_000_000) < NBUCKETS - 1);
    }

    #[test]
    fn prometheus_buckets_are_cumulative_at_powers_of_two() {
        let h = raw(&[500, 1_500, 1_500, 3_000_000, 100_000_000_000]);
        let b = power_of_two_buckets(&h);
        assert_eq!(b.len(), 27);
        assert_eq!(b[0], (1.024e-6, 1));
        assert_eq!(b[1], (2.048e-6, 3));
        assert!(b.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
        // 3 ms is at or below 4.194 ms; 100 s is beyond the last bound (only in +Inf).
        let at = |le: f64| b.iter().find(|x| x.0 >= le).unwrap().1;
        assert_eq!(at(0.004), 4);
        assert_eq!(b.last().unwrap().1, 4);
    }

    fn hist_of(values_ns: &[u64]) -> Hist {
        let mut counts = vec![0; NBUCKETS];
        for &v in values_ns {
            counts[bucket_of(v)] += 1;
        }
        Hist {
            counts,
            sum_ns: values_ns.iter().sum(),
        }
    }

    #[test]
    fn quantiles_are_within_the_documented_resolution() {
        // 1000 latencies spread 100 µs .. 10 ms geometrically.
        let vals: Vec<u64> = (0..1000)
            .map(|i| (100_000.0 * 100f64.powf(i as f64 / 999.0)) as u64)
            .collect();
        let h = hist_of(&vals);
        for q in [0.5, 0.95, 0.99] {
            let truth = vals[((q * 1000.0) as usize).min(999) - 1] as f64;
            let got = h.quantile_ns(q).unwrap();
            assert!((got / truth - 1.0).abs() <= 0.125, "q{q}: {got} vs {truth}");
        }
        assert_eq!(h.count(), 1000);
        assert_eq!(Hist::between(None, None).unwrap().quantile_ns(0.5), None);
        // One value: every quantile lies in its bucket.
        let one = hist_of(&[5_000_000]);
        let (lo, hi) = bucket_bounds_ns(bucket_of(5_000_000));
        let p = one.quantile_ns(0.99).unwrap();
        assert!(p >= lo as f64 && p <= hi as f64);
    }

    fn raw(values_ns: &[u64]) -> RawHist {
        let h = hist_of(values_ns);
        RawHist {
            buckets: h.counts,
            sum_ns: h.sum_ns,
        }
    }

    fn sample(ops: [RawHist; NOPS]) -> BlkSample {
        BlkSample {
            dropped: 0,
            devs: vec![DevHists {
                major: 7,
                minor: 3,
                ops,
                classes: Default::default(),
                split: Default::default(),
            }],
        }
    }

    #[test]
    fn size_classes_are_the_learners_and_their_buckets_pair_the_full_ones() {
        use crate::sys::bpf::{MEDIUM_MAX_BYTES, SMALL_MAX_BYTES};
        // The kernel's edges are model::SizeClass's, merges included.
        for (bytes, i) in [(4096, 0), (SMALL_MAX_BYTES, 0), (SMALL_MAX_BYTES + 512, 1)] {
            assert_eq!(SizeClass::of(bytes as f64), CLASSES[i], "{bytes}");
        }
        for (bytes, i) in [
            (65536, 1),
            (MEDIUM_MAX_BYTES, 1),
            (MEDIUM_MAX_BYTES + 512, 2),
        ] {
            assert_eq!(SizeClass::of(bytes as f64), CLASSES[i], "{bytes}");
        }
        for i in 0..NCBUCKETS {
            let (lo, hi) = class_bucket_bounds_ns(i);
            assert_eq!(bucket_of(lo) >> CLASS_SHIFT, i);
            assert_eq!(bucket_of(hi - 1) >> CLASS_SHIFT, i);
        }
        // One interval of a device: 10 reads of 4 KiB at 2 ms, 5 of 64 KiB at 4 ms.
        let class = |n: u64, ns: u64, bytes: u64| {
            let mut c = RawClass::default();
            c.buckets[bucket_of(ns) >> CLASS_SHIFT] = n;
            c.sum_ns = n * ns;
            c.bytes = n * bytes;
            c
        };
        let mut cur = sample(std::array::from_fn(|_| raw(&[])));
        cur.devs[0].classes[0][0] = class(10, 2_000_000, 4096);
        cur.devs[0].classes[0][1] = class(5, 4_000_000, 65536);
        let l = device_latency(None, &BlkSample::default(), &cur, 7, 3, [15, 0, 0, 0]).unwrap();
        let m = l.measured().unwrap();
        let r = m.classes(false).expect("read classes");
        assert_eq!((r[0].count, r[1].count, r[2].count), (10, 5, 0));
        assert_eq!(r[0].mean_bytes, Some(4096.0));
        assert_eq!(r[1].mean_ms, Some(4.0));
        assert_eq!(r[1].class, Some(SizeClass::Medium));
        let p95 = r[1].p95_ms.unwrap();
        assert!((p95 / 4.0 - 1.0).abs() <= 0.25, "{p95}");
        assert!(m.classes(true).is_none(), "no writes sized");
        // Backwards: no value.
        assert_eq!(
            device_latency(
                None,
                &cur,
                &sample(std::array::from_fn(|_| raw(&[]))),
                7,
                3,
                [0; 4]
            ),
            None
        );
    }

    #[test]
    fn queue_plus_device_is_the_total_littles_law() {
        // 2000 requests, as the program files them: queue 0..4 ms, device 0.2..1.2 ms, the
        // total their sum; 300 more without an issue stamp (total only).
        let mut total = Vec::new();
        let (mut q, mut d) = (Vec::new(), Vec::new());
        let mut x: u64 = 12345;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 33
        };
        for _ in 0..2000 {
            let (qn, dn) = (next() % 4_000_000, 200_000 + next() % 1_000_000);
            q.push(qn);
            d.push(dn);
            total.push(qn + dn);
        }
        let unsplit: Vec<u64> = (0..300).map(|_| 500_000 + next() % 100_000).collect();
        let mut cur = sample([raw(&[]), raw(&[]), raw(&[]), raw(&[])]);
        cur.devs[0].ops[0] = raw(&[total.clone(), unsplit.clone()].concat());
        cur.devs[0].split[0] = RawSplit {
            queue: raw(&q),
            device: raw(&d),
            unsplit: 300,
        };
        let l = device_latency(None, &BlkSample::default(), &cur, 7, 3, [2300, 0, 0, 0]).unwrap();
        let m = l.measured().unwrap();
        let s = m.split(false).expect("read split");
        assert_eq!((s.count, s.unsplit), (2000, 300));
        assert!(m.split(true).is_none(), "no writes: no split");
        assert!(!m.split_unavailable());
        // Little's law per stage: the means add up to the split requests' total mean, exactly
        // from the sums and to the buckets' resolution (12.5 %) from the buckets' midpoints.
        let split_total_ms = total.iter().sum::<u64>() as f64 / 2000.0 / 1e6;
        let (qm, dm) = (s.queue_mean_ms.unwrap(), s.device_mean_ms.unwrap());
        assert!(
            (qm + dm - split_total_ms).abs() < 1e-9,
            "{qm} + {dm} vs {split_total_ms}"
        );
        let mid_mean = |h: &RawHist| {
            let n: u64 = h.buckets.iter().sum();
            h.buckets
                .iter()
                .enumerate()
                .map(|(i, &c)| {
                    let (lo, hi) = bucket_bounds_ns(i);
                    c as f64 * (lo + hi) as f64 / 2.0
                })
                .sum::<f64>()
                / n as f64
                / 1e6
        };
        let sp = &cur.devs[0].split[0];
        let by_buckets = mid_mean(&sp.queue) + mid_mean(&sp.device);
        assert!(
            (by_buckets / split_total_ms - 1.0).abs() <= 0.125,
            "{by_buckets}"
        );
        // The share is the queue's part of the sums; the truth here is 2 ÷ (2 + 0.7).
        let share = s.queue_share_pct.unwrap();
        assert!((share - 2.0 / 2.7 * 100.0).abs() < 3.0, "{share}");
        // Percentiles within the resolution of the truth.
        q.sort_unstable();
        let p95 = q[1899] as f64 / 1e6;
        assert!((s.queue_p95_ms.unwrap() / p95 - 1.0).abs() <= 0.125);
        // A queue without issue stamps: nothing split, said so.
        let mut cur2 = cur.clone();
        cur2.devs[0].split[0] = RawSplit {
            unsplit: 2300,
            ..RawSplit::default()
        };
        let l = device_latency(None, &BlkSample::default(), &cur2, 7, 3, [2300, 0, 0, 0]).unwrap();
        let m = l.measured().unwrap();
        let s = m.split(false).unwrap();
        assert!(s.unavailable() && m.split_unavailable());
        assert_eq!((s.queue_mean_ms, s.queue_share_pct), (None, None));
        assert!(split_unavailable_line("loop3").contains("split unavailable on loop3"));
        // A counter going backwards: no value.
        assert_eq!(
            device_latency(None, &cur, &cur2, 7, 3, [0; 4]),
            None,
            "queue buckets went backwards"
        );
    }

    #[test]
    fn intervals_are_differences_with_coverage() {
        let empty = || raw(&[]);
        let prev = sample([raw(&[1_000_000]), empty(), empty(), empty()]);
        let cur = sample([
            raw(&[1_000_000, 2_000_000, 2_000_000]),
            raw(&[500_000]),
            empty(),
            empty(),
        ]);
        let l = device_latency(Some(DevKind::Loop), &prev, &cur, 7, 3, [2, 1, 0, 0]).unwrap();
        let m = l.measured().unwrap();
        assert_eq!(m.read.count, 2);
        assert_eq!(m.read.mean_ms, Some(2.0));
        assert_eq!(m.write.count, 1);
        assert_eq!(m.coverage_pct, Some(100.0));
        let mut j = m.clone();
        j.judge(Some(500_000.0), None);
        assert!(j.p95_vs_baseline_r.unwrap() > 3.0);
        assert_eq!(j.overloaded, Some(true));
        j.judge(None, None);
        assert_eq!(j.overloaded, None);
        assert_eq!(m.seen_and_counted(), (3, 3));
        // Counters going backwards: no value.
        assert_eq!(
            device_latency(Some(DevKind::Loop), &cur, &prev, 7, 3, [0; 4]),
            None
        );
        // A device first seen in this interval: its counts since the attach.
        let l = device_latency(None, &BlkSample::default(), &cur, 7, 3, [3, 1, 0, 0]).unwrap();
        assert_eq!(l.measured().unwrap().read.count, 3);
        // Not seen at all while diskstats counted 200: 0 % and a warning.
        let l = device_latency(None, &prev, &prev, 8, 0, [200, 0, 0, 0]).unwrap();
        let m = l.measured().unwrap();
        assert_eq!(m.coverage_pct, Some(0.0));
        assert_eq!(m.seen_and_counted(), (0, 200));
        // The warning looks at the run: not yet at 200 completions, then once.
        let mut run = RunCoverage::default();
        assert!(run.add(m, "sda").is_none());
        let many = Measured {
            read: OpLatency {
                count: 900,
                diskstats_count: 1000,
                ..OpLatency::default()
            },
            ..Measured::default()
        };
        assert!(run
            .add(&many, "sda")
            .unwrap()
            .contains("75.0 % of the 1200"));
        assert!(run.add(&many, "sda").is_none());
        // An interval short of completions followed by one with them to spare: no warning.
        let mut run = RunCoverage::default();
        let mut m = many.clone();
        m.read.diskstats_count = 500;
        m.read.count = 465;
        assert!(run.add(&m, "vda").is_none());
        m.read.count = 535;
        assert!(run.add(&m, "vda").is_none());
        assert_eq!(
            device_latency(Some(DevKind::Dm), &prev, &cur, 253, 0, [1; 4]),
            Some(DevLatency::NoRequestQueue)
        );
    }
}
